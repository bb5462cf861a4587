//! The steps after a group's close in the simulated world: the BitRouter
//! evidence (traces, decisions, usage with receipts, some pending), the
//! usage export (which may hang past its deadline), receipt polls, the
//! cleanup audit and termination.

use crate::method::run_plan::{poll_file_name, EvidenceKind, RECONCILE_ROLE};
use crate::schema::events::*;
use crate::testkit::scenario::{ReceiptMode, Req};

use super::driver::{Driver, End, Interrupted};
use super::world::{chance, SEC};
use super::Sim;

type Act<T = ()> = Result<T, Interrupted>;

impl Sim {
    fn artifact(&self, role: &str, path: String) -> Event {
        Event::ArtifactRecorded(ArtifactRecorded {
            group: Some(self.gref()),
            role: role.into(),
            blake3: hex::encode(blake3::hash(path.as_bytes()).as_bytes()),
            path,
            bytes: 1,
        })
    }

    /// The requests the daemon served for the group: those of every case
    /// that ran to a result, with receipts pending at the drawn rate.
    fn served_requests(&mut self) -> Vec<Req> {
        let l = self.lineage();
        let cases: Vec<CaseRef> = l.groups[&self.group]
            .cases
            .iter()
            .filter(|(_, c)| c.result.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let mut reqs = Vec::new();
        for case in cases {
            for mut r in self.w.case_requests(&self.group, &case) {
                if self.keyed(&format!("pending {}", r.id), self.rates.pending) {
                    self.faults.pending_receipts += 1;
                    r.receipt = ReceiptMode::Pending;
                    self.pending.insert(r.id.clone());
                }
                reqs.push(r);
            }
        }
        reqs
    }

    /// `run`'s evidence step: the usage export (killed at its deadline when
    /// it hangs, RUN-4), then each evidence file ingested; ingest is
    /// idempotent, so a rerun after a crash records nothing twice.
    pub(super) fn gather_evidence(&mut self, d: &mut Driver) -> Act<Option<End>> {
        d.evidence_gathered = true;
        let m = self.lineage().frozen.manifest.public.clone();
        let attempt = self
            .w
            .records
            .iter()
            .filter(|(_, e)| matches!(e, Event::CommandKilled(k) if k.role == CommandRole::UsageExport && k.group.group == self.group))
            .count();
        let hangs = self.keyed(
            &format!("export {} {attempt}", self.group),
            self.rates.export_hang,
        );
        if !self.exported && hangs {
            self.faults.export_hangs += 1;
            let grace_ns = m.limits.settlement_grace_sec * SEC;
            self.w.now_ns += grace_ns;
            let killed = Event::CommandKilled(CommandKilled {
                group: self.gref(),
                case: None,
                role: CommandRole::UsageExport,
                argv: vec!["sim-usage-export".into()],
                pgid: 0,
                signal: 9,
                deadline_ms: grace_ns / 1_000_000,
                ran_ms: grace_ns / 1_000_000,
            });
            self.append(d, vec![killed])?;
            return Ok(Some(End::Exited(
                "the usage export was killed at its deadline".into(),
            )));
        }
        self.exported = true;
        if !self.evidence_recorded {
            let reqs = self.served_requests();
            for r in &reqs {
                if let Some(by) = self.fenced(d) {
                    return Err(Interrupted(End::Exited(format!("fenced by {by}"))));
                }
                self.w.request(&self.group.clone(), r);
            }
            self.evidence_recorded = true;
        }
        for kind in EvidenceKind::ALL {
            if d.history.evidence_after_close.contains(&kind) {
                continue;
            }
            let path = format!("/sim/{}/{}.jsonl", self.group, kind.name());
            let a = self.artifact(&format!("bitrouter_{}", kind.name()), path);
            self.append(d, vec![a])?;
        }
        Ok(None)
    }

    /// One receipt poll of each pending request (SETTLE-8); a settled one's
    /// receipt is ingested.
    pub(super) fn poll(&mut self, d: &mut Driver, ids: &[String]) -> Act {
        for id in ids {
            let attempt = d.history.polls_of(id) + 1;
            let path = format!("/sim/receipts/{}", poll_file_name(id, attempt));
            let a = self.artifact(RECONCILE_ROLE, path);
            self.append(d, vec![a])?;
            self.settle_maybe(d, id, &format!("poll {attempt}"))?;
        }
        d.last_poll_utc_ns = Some(self.w.now_ns);
        d.receipts_collected = true;
        Ok(())
    }

    /// The last export after the attempt budget: receipts it carries.
    pub(super) fn collect(&mut self, d: &mut Driver, ids: &[String]) -> Act {
        for id in ids {
            self.settle_maybe(d, id, "collect")?;
        }
        Ok(())
    }

    fn settle_maybe(&mut self, d: &Driver, id: &str, when: &str) -> Act {
        if self.keyed(&format!("still pending {id} {when}"), self.rates.pending) {
            self.faults.pending_receipts += 1;
            return Ok(());
        }
        if let Some(by) = self.fenced(d) {
            return Err(Interrupted(End::Exited(format!("fenced by {by}"))));
        }
        let tier = self
            .served_tier(id)
            .unwrap_or(crate::schema::manifest::Tier::Strong);
        self.pending.remove(id);
        self.w.request(
            &self.group.clone(),
            &Req {
                id: id.to_string(),
                tier,
                trace: false,
                usage: false,
                decision: false,
                receipt: ReceiptMode::Computed,
                tokens: None,
                reason: None,
            },
        );
        Ok(())
    }

    fn served_tier(&self, id: &str) -> Option<crate::schema::manifest::Tier> {
        let l = self.lineage();
        let g = l.groups.get(&self.group)?;
        g.cases
            .keys()
            .flat_map(|c| self.w.case_requests(&self.group, c))
            .find(|r| r.id == id)
            .map(|r| r.tier)
    }

    /// The exact-tag cleanup audit (CLEAN-1): every live run-tagged sandbox
    /// found; an AWS error is recorded as the audit's error.
    pub(super) fn audit(&mut self, d: &mut Driver) -> Act {
        let m = self.lineage().frozen.manifest.public.clone();
        let outcome = if chance(&mut self.g_world, self.rates.aws_error) {
            self.faults.aws_errors += 1;
            d.audit_failed_here = true;
            Err(crate::gates::rules::AwsError(
                "RequestLimitExceeded (sim)".into(),
            ))
        } else {
            Ok(self
                .cloud
                .live()
                .iter()
                .map(|s| FoundResource {
                    resource: "instance".into(),
                    id: s.id.clone(),
                    state: "running".into(),
                    found_by: "tag".into(),
                })
                .collect())
        };
        let a = crate::gates::rules::audit_observation(
            self.gref(),
            &m,
            m.central.instance_id.clone(),
            &m.aws.region,
            "arn:aws:sts::***:assumed-role/bench-operator/***",
            &Default::default(),
            &outcome,
        );
        self.append(d, vec![Event::CleanupAudited(a)])
    }

    /// Terminates what the latest audit proved is the run's.
    pub(super) fn terminate_residue(&mut self, d: &mut Driver) -> Act {
        let l = self.lineage();
        let m = l.frozen.manifest.public.clone();
        let Some((at, audit)) = l.groups[&self.group].cleanup.clone() else {
            return Ok(());
        };
        let plan =
            crate::gates::rules::termination_plan(&audit.found, m.central.instance_id.as_deref());
        for r in plan {
            self.cloud.terminate(&r.id);
            let e = Event::ResidueTerminated(ResidueTerminated {
                group: self.gref(),
                resource: r,
                audit_seq: at.seq,
                action: "TerminateInstances".into(),
                answer: "ok: shutting-down".into(),
            });
            self.append(d, vec![e])?;
        }
        Ok(())
    }
}
