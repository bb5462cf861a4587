//! The simulator's invariants: after every step (concurrency, deadlines)
//! and at the end of a run (each identity started once, nothing started
//! after a failing gate or a hard stop, sealed verdicts final and
//! re-derived by `audit`, residue never hidden, the ledger verifies), and
//! between a run with controller faults and the same seed without.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::schema::events::{CheckKind, Event, InvalidReason, Status};
use crate::testkit::examples::{replace_line, with_canaries, EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};

use super::world::SEC;
use super::{Outcome, Sim};

/// How late past its deadline a launch may still live while a driver runs:
/// the appends of one step (each moves the simulated clock by 1 s).
const DEADLINE_SLACK_NS: u64 = 60 * SEC;

/// A broken promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The rule (or `planner`, `liveness`, `ledger`).
    pub rule: String,
    /// What happened.
    pub what: String,
    /// Records in the ledger when it was seen.
    pub records: u64,
    /// Simulated time, s after the first record.
    pub at_sec: u64,
}

impl Violation {
    /// A violation of `rule`.
    pub fn new(rule: &str, what: &str) -> Violation {
        Violation {
            rule: rule.into(),
            what: what.into(),
            records: 0,
            at_sec: 0,
        }
    }

    pub(super) fn at(mut self, records: u64, now_ns: u64) -> Violation {
        self.records = records;
        self.at_sec = now_ns.saturating_sub(crate::testkit::scenario::T0_UTC_NS) / SEC;
        self
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} (at record {}, t+{} s)",
            self.rule, self.what, self.records, self.at_sec
        )
    }
}

/// The manifest pair of a simulated lineage: the example (or, at scale,
/// its 89 x 5 public reproduction) at concurrency `c` with a canary of `c`
/// identities (GATE-9) and the launch timeout; with `central`, the driver
/// provisions the central host (`[central.launch]`, issue 30).
pub fn manifest(c: u32, timeout_sec: u64, scale: bool, central: bool) -> (String, String) {
    let base = if scale {
        crate::testkit::scenario::public_example()
    } else {
        EXAMPLE_MANIFEST.to_string()
    };
    let m = with_canaries(&base, c, c);
    let m = replace_line(
        &m,
        "timeout_sec = 7200",
        &format!("timeout_sec = {timeout_sec}"),
    );
    let m = if central {
        replace_line(
            &m,
            "daemon_host",
            "daemon_host = \"10.20.0.10\"\n\n[central.launch]\nsubnet_id = \"subnet-0sim\"\nsecurity_group_ids = [\"sg-0sim\"]\nready_timeout_sec = 300",
        )
    } else {
        m
    };
    (m, EXAMPLE_PRIVATE.to_string())
}

fn failing_gate(e: &Event) -> bool {
    match e {
        Event::IdentityChecked(x) => x.status != Status::Pass,
        Event::QuotaChecked(x) => x.status != Status::Pass,
        Event::CheckRecorded(x) => {
            x.status != Status::Pass
                && matches!(
                    x.check,
                    CheckKind::Residue
                        | CheckKind::DaemonHealth
                        | CheckKind::ProviderSentinel
                        | CheckKind::CentralHost
                )
        }
        _ => false,
    }
}

impl Sim {
    /// After every step: never more than c launches alive (CASE-7); no
    /// launch alive well past its deadline while a driver runs (RUN-4).
    pub(super) fn check_step(&mut self) {
        let now = self.w.now_ns;
        let alive: Vec<u32> = self
            .procs
            .values()
            .filter(|p| p.alive)
            .map(|p| p.pid)
            .collect();
        if alive.len() > self.concurrency as usize {
            self.violation(Violation::new(
                "CASE-7",
                &format!(
                    "{} launches alive at concurrency {}",
                    alive.len(),
                    self.concurrency
                ),
            ));
        }
        for pid in alive {
            // A dead or stalled controller kills nothing: the slack counts
            // from the deadline or from this driver's start, the later.
            let due = self
                .deadlines
                .get(&pid)
                .map(|d| (*d).max(self.driver_since_ns));
            if now > due.map_or(u64::MAX, |d| d + DEADLINE_SLACK_NS) {
                let name = self.procs[&pid].trial_name.clone();
                self.violation(Violation::new(
                    "RUN-4",
                    &format!("launch {name} (pid {pid}) lives past its deadline"),
                ));
                // Once is enough: the sim ends it.
                self.kill(pid);
            }
        }
    }

    /// At a seal: an accepted group leaves no live run-tagged sandbox
    /// (residue is never hidden, CLEAN-1).
    pub(super) fn check_seal(&mut self, status: &str) {
        let live = self.cloud.live().len();
        if status == "accepted" && live > 0 {
            self.violation(Violation::new(
                "CLEAN-1",
                &format!(
                    "{} sealed accepted with {live} live run-tagged sandbox(es)",
                    self.group
                ),
            ));
        }
    }

    /// The end of a run: the checks over the whole ledger, and the outcome.
    pub(super) fn finish(mut self, mut out: Outcome) -> Outcome {
        self.check_records();
        self.check_sealed();
        self.check_spend();
        self.check_ledger();
        let l = self.lineage();
        let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
        for (group, g) in &l.groups {
            for (case, c) in &g.cases {
                let key = format!("{group} {}", case.label());
                let status = c.status(accepted);
                out.cases.insert(key.clone(), format!("{status:?}"));
                if c.invalidated
                    .as_ref()
                    .is_some_and(|(_, i)| i.reason == InvalidReason::ControllerCrash)
                {
                    out.crash_invalidated.insert(key);
                }
            }
        }
        out.crash_invalidated.extend(self.crossed.iter().cloned());
        out.stopped = l
            .stopped
            .as_ref()
            .map(|(_, s)| format!("{}: {}", s.rule, s.reason));
        out.steps = self.steps;
        out.central = match (
            l.central_launch.is_some(),
            crate::method::central::torn_down(l),
        ) {
            (false, _) => "none".into(),
            (true, down) => format!(
                "{} observation(s), {}",
                self.w
                    .records
                    .iter()
                    .filter(|(_, e)| {
                        matches!(e, Event::CheckRecorded(c) if c.check == CheckKind::CentralHost)
                    })
                    .count(),
                down.map_or("not torn down".into(), |s| format!("torn down at seq {s}"))
            ),
        };
        out.drivers = self.drivers;
        out.records = self.w.records.len() as u64;
        out.starts = self.starts_done;
        out.simulated_sec = self
            .w
            .now_ns
            .saturating_sub(crate::testkit::scenario::T0_UTC_NS)
            / SEC;
        for (group, s) in &self.sealed {
            let rows = s
                .rows
                .iter()
                .filter(|r| !r.holds)
                .map(|r| format!("{}: {}", r.gate, r.evidence));
            out.failing.insert(group.clone(), rows.collect());
        }
        out.faults = self.faults;
        out.ends = self.ends;
        out.violations = self.violations;
        out
    }

    /// Each identity started at most once and spawned at most once
    /// (CASE-2); nothing started after a failing gate or a hard stop
    /// (VERDICT-3, RUN-6).
    fn check_records(&mut self) {
        let mut starts: BTreeMap<String, u32> = BTreeMap::new();
        let mut stopped_by: Option<String> = None;
        let mut found = Vec::new();
        for (i, (_, e)) in self.w.records.iter().enumerate() {
            if failing_gate(e) && stopped_by.is_none() {
                stopped_by = Some(format!("the failing gate at record {}", i + 1));
            }
            if let Event::LineageStopped(s) = e {
                stopped_by.get_or_insert(format!("the hard stop {} at record {}", s.rule, i + 1));
            }
            if let Event::CaseStarted(s) = e {
                let n = starts
                    .entry(format!("{} {}", s.group.group, s.case.label()))
                    .or_default();
                *n += 1;
                if *n > 1 {
                    found.push(Violation::new(
                        "CASE-2",
                        &format!("{} {} started twice", s.group.group, s.case.label()),
                    ));
                }
                if let Some(by) = &stopped_by {
                    found.push(Violation::new(
                        "VERDICT-3",
                        &format!("{} {} started after {by}", s.group.group, s.case.label()),
                    ));
                }
            }
        }
        found.extend(sample_after_each_end(&self.w.records));
        for (name, pids) in &self.spawned {
            if pids.len() > 1 {
                found.push(Violation::new(
                    "CASE-2",
                    &format!("{name} launched {} times", pids.len()),
                ));
            }
        }
        for v in found {
            self.violation(v);
        }
    }

    /// A sealed verdict never changes (VERDICT-4): the verdict the whole
    /// ledger derives is the sealed one.
    fn check_sealed(&mut self) {
        let l = self.lineage();
        let mut found = Vec::new();
        for (group, s) in &self.sealed {
            let v = crate::method::verdict::group_verdict(&self.w.state, l, group);
            let rows: Vec<(String, bool)> =
                v.rows.iter().map(|r| (r.gate.clone(), r.holds)).collect();
            let sealed: Vec<(String, bool)> =
                s.rows.iter().map(|r| (r.gate.clone(), r.holds)).collect();
            if !v.status.is(&s.status) || rows != sealed {
                found.push(Violation::new(
                    "VERDICT-4",
                    &format!(
                        "{group} sealed {} but the ledger now derives {}",
                        s.status, v.status
                    ),
                ));
            }
        }
        for v in found {
            self.violation(v);
        }
    }

    /// The spend the fold kept as evidence arrived is the spend a fresh
    /// settlement of each group gives (SETTLE-6; RUN-7's incremental fold).
    fn check_spend(&mut self) {
        let l = self.lineage();
        let m = &l.frozen.manifest.public;
        let off: Vec<String> = l
            .groups
            .iter()
            .filter(|(_, g)| !g.spend.matches_settlement(m, g))
            .map(|(name, g)| format!("{name} kept {} micro-USD", g.spend.total_micro_usd()))
            .collect();
        for o in off {
            self.violation(Violation::new(
                "SETTLE-6",
                &format!("{o}, not what a fresh settlement gives"),
            ));
        }
    }

    /// `audit` re-derives every sealed verdict from the records at their
    /// own times, and the records written to a ledger verify link by link.
    fn check_ledger(&mut self) {
        let mut auditor = crate::method::audit::Auditor::default();
        for (i, (t, e)) in self.w.records.iter().enumerate() {
            let at = crate::method::projections::At {
                seq: i as u64 + 1,
                utc_ns: *t,
            };
            auditor.record(at, e);
        }
        let diffs: Vec<String> = auditor
            .lines
            .into_iter()
            .flat_map(|a| {
                a.differences
                    .into_iter()
                    .map(move |d| format!("{}: {d}", a.group.group))
            })
            .collect();
        for d in diffs {
            self.violation(Violation::new("VERDICT-4", &format!("audit: {d}")));
        }
        if !self.verify_ledger {
            return;
        }
        let verified = (|| -> crate::Result<()> {
            let dir = tempfile::tempdir().map_err(|e| crate::error::Error::io("a temp dir", e))?;
            self.w.write_batched(dir.path(), 4_096)?.verify()?;
            Ok(())
        })();
        if let Err(e) = verified {
            self.violation(Violation::new(
                "ledger",
                &format!("the ledger does not verify: {e}"),
            ));
        }
    }
}

/// RUN-5, CLEAN-2: a monitor sample after the last case's end (its exit,
/// result or invalidation) and before the group's close, however quickly
/// the case ended.
fn sample_after_each_end(records: &[(u64, Event)]) -> Vec<Violation> {
    let mut last_end: BTreeMap<&str, usize> = BTreeMap::new();
    let mut last_sample: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, (_, e)) in records.iter().enumerate() {
        match e {
            Event::CaseProcessExited(x) => {
                last_end.insert(&x.group.group, i);
            }
            Event::CaseInvalidated(x) => {
                last_end.insert(&x.group.group, i);
            }
            Event::TrialResultRecordedV2(x) => {
                last_end.insert(&x.group.group, i);
            }
            Event::MonitorSampled(x) => {
                last_sample.insert(&x.group.group, i);
            }
            Event::GroupClosed(x) => {
                let g = x.group.group.as_str();
                if last_end.get(g) > last_sample.get(g) {
                    out.push(Violation::new(
                        "RUN-5",
                        &format!("{g} closed with no monitor sample after its last case ended"),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// The run with controller faults against the same seed without: a case
/// (and a group) may differ only where the faulted run invalidated a case
/// as a controller crash, or where either run recorded a hard stop or was
/// blocked (the method names both, VERDICT-3 and CASE-3).
pub fn compare(a: &Outcome, b: &Outcome) -> Vec<Violation> {
    let mut out = Vec::new();
    // A failing gate is drawn per observation: the two runs take different
    // numbers of them, so a gate's hard stop is theirs alone. A stop the
    // verdicts cause (LINEAGE-5) is compared like the verdicts.
    let gate_stop = |o: &Outcome| o.stopped.as_ref().is_some_and(|s| s.starts_with("GATE-"));
    if gate_stop(a) || gate_stop(b) {
        return out;
    }
    let blocked = |o: &Outcome| {
        o.groups
            .values()
            .any(|s| s.starts_with("blocked") || s == "stuck")
    };
    if blocked(a) || blocked(b) {
        return out;
    }
    let crashed_group = |g: &str| {
        a.crash_invalidated
            .iter()
            .any(|k| k.split(' ').next() == Some(g))
    };
    // Groups in lineage order (the example's names sort in it); the first
    // difference is reported, not what follows from it.
    for (group, sa) in &a.groups {
        let sb = b.groups.get(group).map_or("not run", String::as_str);
        for (key, ca) in a
            .cases
            .iter()
            .filter(|(k, _)| k.split(' ').next() == Some(group.as_str()))
        {
            match b.cases.get(key) {
                Some(cb) if ca != cb && !a.crash_invalidated.contains(key) => {
                    out.push(Violation::new(
                        "RUN-5",
                        &format!("{key} is {ca} with controller faults and {cb} without"),
                    ))
                }
                None if !crashed_group(group) => out.push(Violation::new(
                    "RUN-5",
                    &format!("{key} ({ca}) ran only with controller faults"),
                )),
                _ => {}
            }
        }
        if sa != sb && !crashed_group(group) {
            out.push(Violation::new(
                "RUN-5",
                &format!("{group} sealed {sa} with controller faults and {sb} without"),
            ));
        }
        if !out.is_empty() || sa != sb {
            break;
        }
    }
    out
}
