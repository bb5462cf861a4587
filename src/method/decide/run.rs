//! The driver's lease on a group (RUN-2): one `run` drives a group at a
//! time. A lease is taken, renewed and released as `run_leased` records; a
//! second driver is refused while the lease is live, unless the CLI proved
//! the holder's process gone on this machine; once taken over, the old
//! holder's appends are refused (fencing, [`fenced_by`]).

use crate::error::Result;
use crate::method::projections::State;
use crate::schema::events::{Event, GroupRef, ProcessRef, RunLeased};
use crate::schema::rule::Rule;

use super::{manifest_group, refuse};

/// A driver asking for (or renewing) its lease.
#[derive(Debug, Clone)]
pub struct LeaseRequest<'a> {
    /// The lineage label, when the ledger holds several.
    pub lineage: Option<&'a str>,
    pub group: &'a str,
    /// The driver's random id.
    pub holder: &'a str,
    /// The driver's process.
    pub process: ProcessRef,
    /// Now, ns since the epoch.
    pub now_utc_ns: u64,
    /// How long the lease lasts, ns; 0 releases it.
    pub lasts_ns: u64,
    /// The CLI proved the current holder's process gone (same host and
    /// boot, its pid absent or another process).
    pub holder_gone: bool,
}

/// Takes, renews or (with `lasts_ns` 0) releases the lease of a group.
pub fn run_lease(state: &State, r: LeaseRequest<'_>) -> Result<Vec<Event>> {
    let l = state.lineage(r.lineage)?;
    manifest_group(l, r.group)?;
    let current = l.groups.get(r.group).and_then(|g| g.lease.as_ref());
    let mut taken_from = None;
    if let Some((at, lease)) = current.filter(|(_, lease)| lease.holder != r.holder) {
        let live = lease.expires_utc_ns > r.now_utc_ns && lease.expires_utc_ns > at.utc_ns;
        if r.lasts_ns == 0 {
            return Err(refuse(
                Rule::Run2,
                format!(
                    "{} is driven by holder {}, not {}: this driver's lease was taken over",
                    r.group, lease.holder, r.holder
                ),
            ));
        }
        if live && !r.holder_gone {
            let p = &lease.process;
            return Err(refuse(
                Rule::Run2,
                format!(
                    "{} is driven by another `run` (holder {}, pid {} on host {:?}) whose lease, renewed at seq {}, is live for {} s more; wait for it to end, or for the lease to expire",
                    r.group,
                    lease.holder,
                    p.pid,
                    p.host,
                    at.seq,
                    (lease.expires_utc_ns - r.now_utc_ns).div_ceil(1_000_000_000)
                ),
            ));
        }
        // A lease not released (live, expired or its holder gone) is
        // taken over; a released one is simply free.
        if lease.expires_utc_ns > at.utc_ns {
            taken_from = Some(lease.holder.clone());
        }
    }
    Ok(vec![Event::RunLeased(RunLeased {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: r.group.to_string(),
        },
        holder: r.holder.to_string(),
        process: r.process,
        expires_utc_ns: r.now_utc_ns.saturating_add(r.lasts_ns),
        taken_from,
    })])
}

/// The holder that took `group`'s lease over from `holder`, if `event` is
/// such a takeover (RUN-2: every later append of `holder` is refused).
pub fn fenced_by<'e>(event: &'e Event, group: &GroupRef, holder: &str) -> Option<&'e str> {
    match event {
        Event::RunLeased(e) if &e.group == group && e.holder != holder => Some(&e.holder),
        _ => None,
    }
}

/// The refusal of an append by a driver whose lease was taken over.
pub fn fenced(group: &GroupRef, holder: &str, by: &str, seq: u64) -> crate::error::Error {
    refuse(
        Rule::Run2,
        format!(
            "{}/{}: this driver (holder {holder}) lost its lease to holder {by} at seq {seq}; it appends nothing more",
            group.lineage, group.group
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::examples::{EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};
    use crate::testkit::scenario::World;

    fn process(pid: u32) -> ProcessRef {
        ProcessRef {
            host: "h".into(),
            boot_id: "b".into(),
            pid,
            start_ticks: 7,
        }
    }

    fn ask<'a>(holder: &'a str, now: u64, gone: bool) -> LeaseRequest<'a> {
        LeaseRequest {
            lineage: None,
            group: "canary-1",
            holder,
            process: process(if holder == "a" { 10 } else { 20 }),
            now_utc_ns: now,
            lasts_ns: 60_000_000_000,
            holder_gone: gone,
        }
    }

    fn rule_of(e: &crate::error::Error) -> Option<Rule> {
        match e {
            crate::error::Error::Refused { rule, .. } => Some(*rule),
            _ => None,
        }
    }

    fn world() -> World {
        let mut w = World::new();
        w.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
        w
    }

    #[test]
    fn a_second_driver_is_refused_while_the_lease_lives_and_takes_over_after() {
        let mut w = world();
        let now = w.now_ns;
        w.decide(|s, _| run_lease(s, ask("a", now, false))).unwrap();
        let refused = run_lease(&w.state, ask("b", now + 1_000_000_000, false)).unwrap_err();
        assert_eq!(
            rule_of(&refused),
            Some(Rule::Run2),
            "RUN-2: a live lease refuses: {refused}"
        );
        // The holder renews its own lease.
        assert!(run_lease(&w.state, ask("a", now + 2_000_000_000, false)).is_ok());
        // Past the expiry a second driver takes over, naming whom from.
        let events = run_lease(&w.state, ask("b", now + 61_000_000_000, false)).unwrap();
        let Event::RunLeased(e) = &events[0] else {
            panic!()
        };
        assert_eq!(
            e.taken_from.as_deref(),
            Some("a"),
            "RUN-2: taken over after expiry"
        );
    }

    #[test]
    fn a_holder_proven_gone_is_taken_over_at_once_and_then_fenced() {
        let mut w = world();
        let now = w.now_ns;
        w.decide(|s, _| run_lease(s, ask("a", now, false))).unwrap();
        w.decide(|s, _| run_lease(s, ask("b", now + 1, true)))
            .unwrap();
        let g = &w.state.lineage(None).unwrap().groups["canary-1"];
        assert_eq!(
            g.lease.as_ref().unwrap().1.holder,
            "b",
            "RUN-2: a dead holder's lease is taken"
        );
        // The old holder can neither renew nor release it.
        let renew = run_lease(&w.state, ask("a", now + 2, false)).unwrap_err();
        assert_eq!(
            rule_of(&renew),
            Some(Rule::Run2),
            "RUN-2: the old holder is fenced"
        );
        let release = run_lease(
            &w.state,
            LeaseRequest {
                lasts_ns: 0,
                ..ask("a", now + 3, false)
            },
        );
        assert_eq!(rule_of(&release.unwrap_err()), Some(Rule::Run2));
        let takeover = w.records.last().unwrap().1.clone();
        let group = GroupRef {
            lineage: w.state.lineage(None).unwrap().frozen.lineage.clone(),
            group: "canary-1".into(),
        };
        assert_eq!(
            fenced_by(&takeover, &group, "a"),
            Some("b"),
            "RUN-2: fencing sees the takeover"
        );
        assert_eq!(fenced_by(&takeover, &group, "b"), None);
    }
}
