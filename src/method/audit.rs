//! The auditor's projections over a verified log: `audit` re-derives every
//! sealed verdict from the state just before its seal and compares it row by
//! row; `replay_document` is every projection as one JSON document; the
//! cleanup history lists a group's audits, samples and terminations.

use serde_json::json;

use crate::log::ledger::Ledger;
use crate::method::projections::{At, State};
use crate::method::verdict::{self};
use std::collections::BTreeSet;

use crate::schema::events::{CleanupAudited, Event, GroupRef, GroupSealed};

/// One sealed verdict compared with its re-derivation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditLine {
    pub group: GroupRef,
    /// Seq of the seal.
    pub seq: u64,
    /// The attested status.
    pub attested: String,
    /// The re-derived status.
    pub derived: String,
    /// Rows whose holds/evidence differ, and other differences.
    pub differences: Vec<String>,
}

/// The verdict of `s`'s group derived from `state` (the log before the
/// seal) as the projection version `s` attests, where this build derives
/// that version, and every difference from what `s` attests.
fn sealed_differences(
    state: &State,
    l: &crate::method::projections::LineageState,
    s: &crate::schema::events::GroupSealed,
) -> (String, Vec<String>) {
    use crate::method::projections::{PROJECTION_VERSION, PROJECTION_VERSION_OLDEST};
    let mut diffs = Vec::new();
    let attested = s.projection_version;
    let known = (PROJECTION_VERSION_OLDEST..=PROJECTION_VERSION).contains(&attested);
    let version = if known { attested } else { PROJECTION_VERSION };
    let d = verdict::group_verdict_as(state, l, &s.group.group, version);
    if !known {
        diffs.push(format!(
            "projection version: attested {attested}, this build derives {PROJECTION_VERSION_OLDEST}..={PROJECTION_VERSION}"
        ));
    }
    for row in &d.rows {
        match s.rows.iter().find(|x| x.gate == row.gate) {
            None => diffs.push(format!(
                "row {:?} missing from the attested verdict",
                row.gate
            )),
            Some(x) if x.holds != row.holds => diffs.push(format!(
                "row {:?}: attested {}, derived {}",
                row.gate,
                if x.holds { "holds" } else { "fails" },
                if row.holds { "holds" } else { "fails" }
            )),
            Some(x) if x.evidence != row.evidence => diffs.push(format!(
                "row {:?} evidence: attested {:?}, derived {:?}",
                row.gate, x.evidence, row.evidence
            )),
            Some(_) => {}
        }
    }
    for x in &s.rows {
        if !d.rows.iter().any(|row| row.gate == x.gate) {
            diffs.push(format!(
                "attested row {:?} is not a row of this build",
                x.gate
            ));
        }
    }
    if d.skipped_cases() != s.skipped_security_policy {
        diffs.push("skipped_security_policy differs".to_string());
    }
    if !d.status.is(&s.status) {
        diffs.push(format!(
            "status: attested {}, derived {}",
            s.status, d.status
        ));
    }
    (d.status.into(), diffs)
}

/// Re-derives every sealed verdict from the log: for each `group_sealed` at
/// seq s, the verdict of the state through s - 1 (what `group seal` saw
/// under the lock) is compared with the attested one, row by row; and every
/// registered control artifact is re-derived at its seq.
pub fn audit(ledger: &Ledger) -> crate::Result<Vec<AuditLine>> {
    let mut a = Auditor::default();
    for v in ledger.records()? {
        let v = v?;
        let r = &v.decoded.record;
        a.record(
            At {
                seq: r.seq,
                utc_ns: r.recorded_at_utc_ns,
            },
            &v.decoded.event,
        );
    }
    Ok(a.lines)
}

/// [`audit`] one record at a time, for callers that hold the records
/// (the driver's simulator re-derives every seal of its in-memory log).
#[derive(Debug)]
pub struct Auditor {
    state: State,
    /// The lines so far.
    pub lines: Vec<AuditLine>,
}

impl Default for Auditor {
    /// An auditor at the log's start, its fold scanning for secrets as
    /// `group seal`'s does.
    fn default() -> Auditor {
        Auditor {
            state: State::scanning(),
            lines: Vec::new(),
        }
    }
}

impl Auditor {
    /// Audits the next record (records in seq order, from seq 1).
    pub fn record(&mut self, at: At, event: &Event) {
        match event {
            Event::GroupSealed(s) => {
                let line = self.sealed(at.seq, s);
                self.lines.push(line);
            }
            Event::ControlRegistered(c) => {
                if let Some(l) = self.state.lineages.get(&c.group.lineage) {
                    let art = verdict::control_artifact_blake3(l, &c.group.group);
                    if art != c.artifact_blake3 {
                        self.lines.push(AuditLine {
                            group: c.group.clone(),
                            seq: at.seq,
                            attested: c.artifact_blake3.clone(),
                            derived: art,
                            differences: vec!["control artifact checksum differs".into()],
                        });
                    }
                }
            }
            _ => {}
        }
        self.state.apply(at, event);
    }

    /// The seal at `seq` against the verdict of the state through seq - 1.
    fn sealed(&self, seq: u64, s: &GroupSealed) -> AuditLine {
        let (derived, differences) = match self.state.lineages.get(&s.group.lineage) {
            None => (
                String::new(),
                vec!["sealed for a lineage that was never frozen".to_string()],
            ),
            Some(l) => sealed_differences(&self.state, l, s),
        };
        AuditLine {
            group: s.group.clone(),
            seq,
            attested: s.status.clone(),
            derived,
            differences,
        }
    }
}

/// Every projection as one JSON document.
pub fn replay_document(state: &State) -> serde_json::Value {
    let lineages: Vec<serde_json::Value> = state
        .lineages
        .values()
        .map(|l| {
            let view = verdict::lineage_view(state, l);
            let verdicts: Vec<serde_json::Value> = l
                .frozen
                .manifest
                .public
                .group_names()
                .into_iter()
                .filter(|g| l.groups.contains_key(*g))
                .map(|g| {
                    let v = verdict::group_verdict(state, l, g);
                    json!({
                        "group": g,
                        "status": v.status,
                        "sealed": l.groups.get(g).and_then(|x| x.sealed.as_ref()).map(|(at, s)| json!({"seq": at.seq, "status": s.status})),
                        "passed": v.passed,
                        "total": v.total,
                        "rows": v.rows,
                        "skipped_security_policy": v.skipped_security_policy,
                        "cases": v.cases,
                        "settlement_states": v.settlement.states.iter().map(|(k, n)| (k.as_str(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                        "series_micro_usd": v.settlement.series_micro_usd.iter().map(|(k, n)| (k.as_str(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                        "joins": v.joins,
                        "cleanup": v.cleanup,
                        "planes": v.planes,
                    })
                })
                .collect();
            json!({ "lineage": view, "verdicts": verdicts })
        })
        .collect();
    json!({
        "head_seq": state.head_seq,
        "projection_version": crate::method::projections::PROJECTION_VERSION,
        "lineages": lineages,
        "controls": verdict::control_catalog(state),
    })
}

/// What the ledger says about a group's cleanup: the instance ids it
/// tracked (run-tagged instances found by earlier audits and monitor
/// samples, the excluded central host left out) and its latest audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanupHistory {
    /// Instance ids seen for the group.
    pub tracked: BTreeSet<String>,
    /// The latest `cleanup_audited` of the group, with its seq.
    pub latest_audit: Option<(u64, CleanupAudited)>,
}

/// Reads a group's cleanup history from the verified log.
pub fn cleanup_history(ledger: &Ledger, group: &GroupRef) -> crate::Result<CleanupHistory> {
    let mut h = CleanupHistory::default();
    for v in ledger.records()? {
        let v = v?;
        match &v.decoded.event {
            Event::CleanupAudited(a) if &a.group == group => {
                let central = a.excluded_central_instance_id.as_deref();
                h.tracked.extend(
                    a.found
                        .iter()
                        .filter(|r| r.resource == "instance" && Some(r.id.as_str()) != central)
                        .map(|r| r.id.clone()),
                );
                h.latest_audit = Some((v.decoded.record.seq, a.clone()));
            }
            Event::MonitorSampled(s) if &s.group == group => {
                h.tracked.extend(s.instance_ids.iter().cloned());
            }
            _ => {}
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::log::ledger::Draft;
    use crate::schema::events::{FoundResource, MonitorSampled, Status};

    fn found(resource: &str, id: &str) -> FoundResource {
        FoundResource {
            resource: resource.into(),
            id: id.into(),
            state: "running".into(),
            found_by: "run_tag".into(),
        }
    }

    fn audited(group: &GroupRef, found: Vec<FoundResource>, central: Option<&str>) -> Event {
        Event::CleanupAudited(CleanupAudited {
            group: group.clone(),
            region: "us-east-1".into(),
            identity: "arn:…".into(),
            filters: vec![],
            tracked_instance_ids: vec![],
            found,
            excluded_central_instance_id: central.map(str::to_string),
            status: Status::Fail,
            error: None,
        })
    }

    // rule CLEAN-1: the tracked ids are the run's instances found by earlier
    // audits and monitor samples of the same group (never the central host).
    #[test]
    fn cleanup_history_tracks_instances_of_the_group_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger");
        let (ledger, _) = Ledger::create(&path, Duration::from_secs(5), [1; 16], "t", 1).unwrap();
        let g = GroupRef {
            lineage: "l".into(),
            group: "r1".into(),
        };
        let other = GroupRef {
            lineage: "l".into(),
            group: "r2".into(),
        };
        let events = vec![
            audited(
                &g,
                vec![
                    found("instance", "i-a"),
                    found("volume", "vol-1"),
                    found("instance", "i-central"),
                ],
                Some("i-central"),
            ),
            Event::MonitorSampled(MonitorSampled {
                group: g.clone(),
                sandbox_count: 1,
                instance_ids: vec!["i-b".into()],
            }),
            Event::MonitorSampled(MonitorSampled {
                group: other.clone(),
                sandbox_count: 1,
                instance_ids: vec!["i-x".into()],
            }),
            audited(&other, vec![found("instance", "i-y")], None),
            audited(&g, vec![], Some("i-central")),
        ];
        let drafts: Vec<Draft> = events
            .into_iter()
            .map(|event| Draft {
                actor: "t".into(),
                event,
                idempotency_key: None,
            })
            .collect();
        let done = ledger.append(&drafts, 2).unwrap();
        let h = cleanup_history(&ledger, &g).unwrap();
        assert_eq!(h.tracked, ["i-a".to_string(), "i-b".to_string()].into());
        let (seq, latest) = h.latest_audit.unwrap();
        assert_eq!(seq, done[4].seq);
        assert!(latest.found.is_empty());
        let none = cleanup_history(
            &ledger,
            &GroupRef {
                lineage: "l".into(),
                group: "control".into(),
            },
        )
        .unwrap();
        assert_eq!(none, CleanupHistory::default());
    }
}
