//! What `benchledger run` does next, as a pure function of the replayed
//! state and the facts the CLI gathered (the Harbor trial directories on
//! disk, the processes it is waiting for, the clock): which gates are not
//! good for the next batch (GATE-1..3), which identities may launch
//! (CASE-4), how many at once (CASE-7), when to close the group (CASE-9),
//! which evidence to gather and which receipts to poll (SETTLE-8), when to
//! audit, terminate and seal (CLEAN-1..3, VERDICT-4), and when a hard stop
//! ends launching (VERDICT-3).
//!
//! A worker pool within the gates (RUN-1): a slot freed by a finished case
//! is refilled as soon as the gates of that wave were observed after the
//! lineage's last start and pass (the residue gate counts only run-tagged
//! sandboxes no started case of the group owns); no wave waits for a whole
//! earlier wave. A started case whose launch was recorded (RUN-3) is
//! adopted while its process lives and invalidated as a controller crash as
//! soon as it is gone; an adopted launch past its deadline is killed with
//! its process group (RUN-4). After each case's exit, a cleanup monitor
//! sample is taken before anything else moves on (RUN-5), however quickly
//! the case ended.
//!
//! The executor (`cli::run`) asks for the next step, does exactly that one
//! step through the verbs' own functions (every result appended to the
//! ledger), and asks again; the ledger is its only memory, so a rerun after
//! a kill continues where the log says.

mod gates;
mod history;
pub mod launch_gate;
#[cfg(test)]
mod tests;

pub use gates::{gate_lines, gates_of, last_start_seq, GateId, GateLine, GateState};
pub use history::{poll_file_name, poll_key, EvidenceKind, RunHistory, RECONCILE_ROLE};

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::method::lineage::earlier_groups_done;
use crate::method::projections::{CaseStatus, GroupState, LineageState, State};
use crate::method::verdict::{self, SettlementState};
use crate::schema::events::{CaseRef, Event, InvalidReason, LineageStopped};
use crate::schema::names::trial_name;
use crate::schema::plan::Plan;
use crate::schema::rule::Rule;

/// The facts `run` gathered for one decision.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// Now, ns since the epoch (UTC).
    pub now_utc_ns: u64,
    /// Harbor trial directory names under the frozen jobs directory: an
    /// identity with one never launches (CASE-4).
    pub trial_dirs: &'a BTreeSet<String>,
    /// The trial directories that hold a `result.json`.
    pub results: &'a BTreeSet<String>,
    /// Cases whose launched process this run is waiting for.
    pub running_here: &'a BTreeSet<CaseRef>,
    /// The group's history beyond the state.
    pub history: &'a RunHistory,
    /// The operator asked to stop launching (Ctrl-C).
    pub stop_launching: bool,
    /// Terminate what the cleanup audit proves is the run's (`--terminate`).
    pub terminate: bool,
    /// This run already gathered the group's evidence.
    pub evidence_gathered: bool,
    /// This run already tried a cleanup audit that could not run.
    pub audit_failed_here: bool,
    /// When this run last polled receipts, ns since the epoch.
    pub last_poll_utc_ns: Option<u64>,
    /// Whether this process has exported the usage rows and ingested the
    /// receipts they carry since it started (a receipt an earlier,
    /// killed process's attempt fetched is collected once the budget is
    /// spent, without a new attempt).
    pub receipts_collected: bool,
    /// A build without the AWS gates relies on the identity, quota and
    /// residue observations an `aws` build recorded: they count while
    /// passing and fresh, not once per batch (`BENCHLEDGER_AWS_GATES=recorded`).
    pub aws_recorded: bool,
    /// Where the recorded launch of each started case not run here stands
    /// (RUN-3), as this machine sees it.
    pub launches: &'a BTreeMap<CaseRef, LaunchSeen>,
}

/// A recorded launch (`case_launched`) as the driver's machine sees it
/// (RUN-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchSeen {
    /// The same process (pid, start time, boot) lives: adopt it.
    Alive,
    /// It is gone: the case is a controller crash at once.
    Gone,
    /// It ran on another machine: wait for its deadline.
    Elsewhere,
}

/// A started case that no process of this run is waiting for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Orphan {
    pub case: CaseRef,
    /// Its Harbor trial name.
    pub trial_name: String,
    /// Why it is terminal_invalid when it has no result (CASE-3).
    pub reason: InvalidReason,
}

/// The one thing to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The group's daemon start is not recorded (GATE-4): `group open`, or
    /// `run --daemon-binary --daemon-config`.
    OpenGroup,
    /// Take these gates before the next batch, in this order (GATE-1..3).
    TakeGates {
        /// Every gate whose latest observation is not fresh.
        gates: Vec<GateId>,
    },
    /// A gate failed before the batch, or the spend limit was crossed:
    /// record the hard stop (VERDICT-3) and wind down.
    Stop {
        /// The rule that stops the lineage.
        rule: Rule,
        reason: String,
        /// The observation that failed.
        evidence_seq: Option<u64>,
    },
    /// Render, validate and start these identities, then launch each one.
    Launch {
        /// The identities, at most the free concurrency.
        cases: Vec<CaseRef>,
    },
    /// Ingest the Harbor results on disk of these started cases.
    IngestResults {
        /// Started cases whose Harbor result is on disk.
        cases: Vec<CaseRef>,
    },
    /// Started cases without a result and without a process to wait for,
    /// past their launch timeout: terminal_invalid on a listing of their
    /// trial directory (CASE-3, CASE-8; never relaunched, CASE-2).
    Invalidate {
        /// The cases and why.
        orphans: Vec<Orphan>,
    },
    /// Kill an adopted launch past its deadline with its whole process
    /// group, and record the kill (RUN-4).
    KillLaunch {
        case: CaseRef,
        /// Its process group (its recorded pid).
        pgid: u32,
    },
    /// Take one cleanup monitor sample: a case exited after the latest one
    /// (RUN-5, CLEAN-2).
    Sample,
    /// Wait for launched processes or for a result until `until_utc_ns`.
    Wait {
        /// The cases waited for.
        cases: Vec<CaseRef>,
        /// The latest time worth waiting until, if bounded.
        until_utc_ns: Option<u64>,
    },
    /// Launching stopped on the operator's request and nothing runs.
    Paused,
    /// End launches (CASE-9).
    Close,
    /// Ingest the group's BitRouter evidence from its frozen paths.
    GatherEvidence,
    /// Poll the receipts of these pending requests once each (SETTLE-8).
    PollReceipts {
        /// Pending requests with polls left in the frozen budget.
        request_ids: Vec<String>,
    },
    /// The attempt budget is spent: export the usage rows once more and
    /// ingest the receipts they carry for these pending requests, with no
    /// new attempt (SETTLE-8).
    CollectReceipts {
        /// Every request still pending.
        request_ids: Vec<String>,
    },
    /// Nothing to do before `until_utc_ns` (the next poll, or the end of the
    /// settlement grace while requests are pending).
    WaitUntil {
        /// The next poll or the end of the grace, whichever comes first.
        until_utc_ns: u64,
        /// For the operator: how many requests are pending and what is awaited.
        why: String,
    },
    /// The exact-tag cleanup audit (CLEAN-1).
    Audit,
    /// Terminate what the audit at `audit_seq` proved is the run's.
    Terminate {
        /// The audit acted on.
        audit_seq: u64,
    },
    /// Attest the verdict (VERDICT-4).
    Seal,
    /// The group is sealed.
    Done {
        /// The sealed `VerdictStatus` as written (`accepted`, `rejected_join`, ...).
        status: String,
    },
    /// Nothing can be done now; the operator must act.
    Blocked {
        /// What to do.
        reason: String,
    },
}

/// Case counts of the group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CaseCounts {
    /// Identities of the group (CASE-8).
    pub total: u64,
    /// Terminal.
    pub done: u64,
    /// Started, not terminal.
    pub running: u64,
    /// Not started.
    pub left: u64,
}

/// The plan: every gate's state, the case counts, spend and the next step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPlan {
    /// `LINEAGE/GROUP`.
    pub group: String,
    /// The frozen concurrency.
    pub concurrency: u32,
    /// The gates of the next batch.
    pub gates: Vec<GateLine>,
    pub cases: CaseCounts,
    /// The lineage's spend so far, micro-USD (actual and notional series).
    pub spend_micro_usd: u64,
    /// The frozen spend stop limit, micro-USD.
    pub spend_limit_micro_usd: u64,
    /// What to do next.
    pub next: Step,
}

/// The lineage's frozen plan (manifest v2): `run` needs it.
pub fn plan_of(l: &LineageState) -> Result<&Plan> {
    l.plan.as_ref().ok_or_else(|| {
        Error::input(format!(
            "lineage {:?} was frozen as manifest v1, which has no [launch] and [evidence]: `run` needs a lineage frozen with manifest_version = 2",
            l.frozen.lineage
        ))
    })
}

/// RUN-2 with RUN-4: how long `step` may block on frozen command
/// deadlines (the usage export; one receipt poll per request, one after
/// another), in seconds. A driver's lease must outlast it, so the driver
/// extends its lease by this much before the step: a hung export killed at
/// a settlement grace longer than the lease does not let a second driver
/// take over a live one. Every other step blocks for less than the lease's
/// margin (an AWS operation, a sentinel or health exchange: at most a
/// minute each, the lease renewed between them).
pub fn lease_cover_sec(l: &LineageState, step: &Step) -> u64 {
    let grace = l.frozen.manifest.public.limits.settlement_grace_sec;
    let commands = match step {
        Step::GatherEvidence => 1,
        Step::PollReceipts { request_ids } => request_ids.len() as u64,
        _ => 0,
    };
    grace.saturating_mul(commands)
}

/// The lineage's spend so far over the actual and notional series (the
/// safety limit's figure, SETTLE-6): the groups' kept spend, O(groups).
pub fn lineage_spend(l: &LineageState) -> u64 {
    l.groups
        .values()
        .map(|g| g.spend.total_micro_usd())
        .fold(0u64, u64::saturating_add)
}

fn counts(l: &LineageState, group: &str, g: Option<&GroupState>) -> CaseCounts {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let mut out = CaseCounts {
        total: crate::method::lineage::identity_count(l, group),
        ..CaseCounts::default()
    };
    // Only recorded cases can have started (CASE-8 keeps them to the frozen
    // identities; replacements, CASE-6, are extra identities): a walk over
    // what the log holds, not over every identity.
    for (k, c) in g.iter().flat_map(|g| g.cases.iter()) {
        out.total += u64::from(k.replacement > 0);
        match c.status(accepted) {
            CaseStatus::NotStarted => {}
            CaseStatus::Started => out.running += 1,
            _ => out.done += 1,
        }
    }
    out.left = out.total.saturating_sub(out.running + out.done);
    out
}

/// The slots a wave may fill now (RUN-1, CASE-7): the frozen concurrency
/// less the lineage's started, non-terminal cases, at least 1 (the quota
/// gate of a wave is for one sandbox at the least).
pub fn free_slots(l: &LineageState) -> u32 {
    let m = &l.frozen.manifest.public;
    let accepted = &m.harbor.accepted_exceptions;
    let running: usize = l.groups.values().map(|g| g.running(accepted)).sum();
    let running = u32::try_from(running).unwrap_or(u32::MAX);
    m.limits.concurrency.saturating_sub(running).max(1)
}

/// The Harbor trial names of the group's started, non-terminal cases: the
/// sandboxes tagged with them are theirs, not residue (RUN-1, GATE-3).
pub fn running_trials(l: &LineageState, group: &str) -> BTreeSet<String> {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    l.groups
        .get(group)
        .iter()
        .flat_map(|g| g.cases.iter())
        .filter(|(_, c)| c.status(accepted) == CaseStatus::Started)
        .map(|(case, _)| trial_name(&case.task, group, case))
        .collect()
}

/// The hard stop `run` records (VERDICT-3): nothing when the lineage is
/// already stopped.
pub fn hard_stop(
    l: &LineageState,
    rule: Rule,
    reason: &str,
    evidence_seq: Option<u64>,
) -> Vec<Event> {
    if l.stopped.is_some() {
        return Vec::new();
    }
    vec![Event::LineageStopped(LineageStopped {
        lineage: l.frozen.lineage.clone(),
        rule: rule.into(),
        reason: reason.to_string(),
        evidence_seq,
    })]
}

/// What `run` does next for `group`, and every gate's state.
pub fn next_step(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    f: &Facts<'_>,
) -> Result<RunPlan> {
    let l = state.lineage(lineage)?;
    let m = &l.frozen.manifest.public;
    let plan = plan_of(l)?;
    if !m.group_names().contains(&group) {
        return Err(Error::Refused {
            rule: Rule::Lineage1,
            message: format!(
                "group {} is not in the frozen target list {:?} of lineage {:?}",
                crate::schema::secrets::echo_name(group),
                m.group_names(),
                l.frozen.lineage
            ),
        });
    }
    let g = l.groups.get(group);
    let next = step(state, l, plan, group, f)?;
    Ok(RunPlan {
        group: format!("{}/{group}", l.frozen.lineage),
        concurrency: m.limits.concurrency,
        gates: gate_lines(l, group, f.now_utc_ns, f.aws_recorded),
        cases: counts(l, group, g),
        spend_micro_usd: lineage_spend(l),
        spend_limit_micro_usd: m.limits.spend_stop_micro_usd,
        next,
    })
}

fn step(state: &State, l: &LineageState, plan: &Plan, group: &str, f: &Facts<'_>) -> Result<Step> {
    let g = l.groups.get(group);
    if let Some((_, s)) = g.and_then(|g| g.sealed.as_ref()) {
        return Ok(Step::Done {
            status: s.status.clone(),
        });
    }
    let Some(g) = g.filter(|g| g.opened.is_some()) else {
        if let Some((at, s)) = &l.stopped {
            return Ok(Step::Blocked {
                reason: format!(
                    "lineage {:?} was stopped at seq {} ({}: {}) before {group} opened; nothing runs",
                    l.frozen.lineage, at.seq, s.rule, s.reason
                ),
            });
        }
        earlier_groups_done(l, group)?;
        return Ok(Step::OpenGroup);
    };
    if let Some(s) = started_cases_step(l, plan, group, g, f) {
        let refill = matches!(s, Step::Wait { .. })
            && g.closed.is_none()
            && !f.stop_launching
            && l.stopped.is_none();
        if refill && !refill_blocked(l, group, f) {
            // RUN-1: a freed slot is refilled while the others still run;
            // only the gates, a launch or a hard stop take the place of the
            // wait.
            let next = launch_step(state, l, group, f)?;
            if matches!(
                next,
                Step::TakeGates { .. } | Step::Launch { .. } | Step::Stop { .. }
            ) {
                return Ok(next);
            }
        }
        return Ok(s);
    }
    if needs_sample(g, f) {
        return Ok(Step::Sample);
    }
    if f.stop_launching {
        return Ok(Step::Paused);
    }
    if g.closed.is_none() {
        return launch_step(state, l, group, f);
    }
    Ok(after_close_step(l, plan, g, f))
}

/// RUN-5: a case's process exit, invalidation or result is recorded after
/// the group's latest monitor sample. A build relying on recorded AWS
/// observations cannot sample (an `aws` build's `cleanup monitor` does).
fn needs_sample(g: &GroupState, f: &Facts<'_>) -> bool {
    if f.aws_recorded {
        return false;
    }
    let last_end = g
        .cases
        .values()
        .filter_map(|c| {
            let ends = [
                c.exited.map(|at| at.seq),
                c.invalidated.as_ref().map(|(at, _)| at.seq),
                c.result.as_ref().map(|(at, _)| at.seq),
            ];
            ends.into_iter().flatten().min()
        })
        .max();
    last_end.is_some_and(|end| g.monitor_last_seq.is_none_or(|s| s < end))
}

/// What the started, non-terminal cases of a group need.
#[derive(Default)]
struct StartedCases {
    ingest: Vec<CaseRef>,
    orphans: Vec<Orphan>,
    kill: Option<(CaseRef, u32)>,
    waiting: Vec<CaseRef>,
    until: Option<u64>,
}

impl StartedCases {
    fn wait_until(&mut self, case: &CaseRef, deadline: u64) {
        self.waiting.push(case.clone());
        self.until = Some(self.until.map_or(deadline, |u| u.min(deadline)));
    }
}

/// Started cases that are not terminal: ingest a result on disk, wait for
/// a process (ours or an adopted one, RUN-3) or a result, kill an adopted
/// launch past its deadline (RUN-4), or invalidate a case whose launch is
/// gone, or whose deadline passed with nothing to wait for (CASE-3).
fn started_cases_step(
    l: &LineageState,
    plan: &Plan,
    group: &str,
    g: &GroupState,
    f: &Facts<'_>,
) -> Option<Step> {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let timeout_ns = plan.launch.timeout_sec.saturating_mul(1_000_000_000);
    let mut s = StartedCases::default();
    for (case, c) in g
        .cases
        .iter()
        .filter(|(_, c)| c.status(accepted) == CaseStatus::Started)
    {
        let name = trial_name(&case.task, group, case);
        let orphan = |reason| Orphan {
            case: case.clone(),
            trial_name: name.clone(),
            reason,
        };
        if c.exited.is_some() && !f.running_here.contains(case) {
            // Its end is recorded (by the driver that ran it, which ingests
            // a result present at the exit first, or at the kill of an
            // adopted launch) and no result was: a result.json written
            // later does not count, however soon (CASE-3, RUN-5).
            s.orphans.push(orphan(InvalidReason::MissingVerifierResult));
            continue;
        }
        if f.results.contains(&name) {
            s.ingest.push(case.clone());
            continue;
        }
        if f.running_here.contains(case) {
            s.waiting.push(case.clone());
            continue;
        }
        let started_ns = c.started.as_ref().map_or(0, |(at, _)| at.utc_ns);
        let deadline = c
            .launched
            .as_ref()
            .map_or(started_ns.saturating_add(timeout_ns), |(_, e)| {
                e.deadline_utc_ns
            });
        let seen = c
            .launched
            .as_ref()
            .and_then(|_| f.launches.get(case).copied());
        match seen {
            Some(LaunchSeen::Alive) if f.now_utc_ns >= deadline => {
                let pgid = c.launched.as_ref().map_or(0, |(_, e)| e.process.pid);
                s.kill.get_or_insert((case.clone(), pgid));
            }
            Some(LaunchSeen::Alive) => s.wait_until(case, deadline),
            Some(LaunchSeen::Gone) => s.orphans.push(orphan(InvalidReason::ControllerCrash)),
            _ if f.now_utc_ns >= deadline => s.orphans.push(orphan(InvalidReason::ControllerCrash)),
            _ => s.wait_until(case, deadline),
        }
    }
    // A terminal case whose launched process still runs here is waited for
    // too: it holds its slot until the process ends (CASE-7).
    for case in f.running_here {
        let ended = g
            .cases
            .get(case)
            .is_some_and(|c| c.status(accepted) != CaseStatus::Started);
        if ended {
            s.waiting.push(case.clone());
        }
    }
    if !s.ingest.is_empty() {
        return Some(Step::IngestResults { cases: s.ingest });
    }
    if !s.orphans.is_empty() {
        return Some(Step::Invalidate { orphans: s.orphans });
    }
    if let Some((case, pgid)) = s.kill {
        return Some(Step::KillLaunch { case, pgid });
    }
    if needs_sample(g, f) {
        return Some(Step::Sample);
    }
    if !s.waiting.is_empty() {
        return Some(Step::Wait {
            cases: s.waiting,
            until_utc_ns: s.until,
        });
    }
    None
}

/// While cases run, whether `launch_step` could only say wait: no slot is
/// free and the spend is under its stop, so it would close, block or wait
/// (all of which keep the wait). Cheap: the walk over every identity that
/// `launch_step` begins with is not needed on a tick that cannot launch.
fn refill_blocked(l: &LineageState, group: &str, f: &Facts<'_>) -> bool {
    let m = &l.frozen.manifest.public;
    let spend_stop = lineage_spend(l) > m.limits.spend_stop_micro_usd;
    !spend_stop && launch_slots(l, group, f).1 == 0
}

/// The slots in use (every group's started, non-terminal cases, plus this
/// driver's launches whose case already ended: CASE-7) and those free.
fn launch_slots(l: &LineageState, group: &str, f: &Facts<'_>) -> (usize, usize) {
    let m = &l.frozen.manifest.public;
    let accepted = &m.harbor.accepted_exceptions;
    // A case whose result is in while its launched process still runs
    // (Harbor tearing its sandbox down, the outcome row being written)
    // keeps its slot until the process ends (CASE-7, CLEAN-2).
    let g = l.groups.get(group);
    let lingering = f
        .running_here
        .iter()
        .filter(|c| {
            g.and_then(|g| g.cases.get(*c))
                .is_some_and(|c| c.status(accepted) != CaseStatus::Started)
        })
        .count();
    let running: usize = l
        .groups
        .values()
        .map(|g| g.running(accepted))
        .sum::<usize>()
        + lingering;
    (
        running,
        (m.limits.concurrency as usize).saturating_sub(running),
    )
}

/// Before the close: a hard stop winds down; otherwise the next batch's
/// gates, then its launches.
fn launch_step(state: &State, l: &LineageState, group: &str, f: &Facts<'_>) -> Result<Step> {
    let m = &l.frozen.manifest.public;
    if l.stopped.is_some() {
        return Ok(Step::Close);
    }
    let launchable =
        crate::method::decide::launchable(state, Some(&l.frozen.lineage), group, f.trial_dirs)?;
    if launchable.is_empty() {
        return Ok(Step::Close);
    }
    // GATE-5, GATE-9: scored work needs the canary's proof; without it no
    // gate is worth taking (nothing could start).
    if !crate::schema::manifest::is_non_evaluation(group) {
        if let Err(e) = crate::method::decide::scored_work_allowed(l) {
            return Ok(Step::Blocked {
                reason: e.to_string(),
            });
        }
    }
    let spend = lineage_spend(l);
    if spend > m.limits.spend_stop_micro_usd {
        return Ok(Step::Stop {
            rule: Rule::Verdict3,
            reason: format!(
                "lineage spend {spend} micro-USD crossed the stop limit {}",
                m.limits.spend_stop_micro_usd
            ),
            evidence_seq: None,
        });
    }
    let (running, free) = launch_slots(l, group, f);
    if free == 0 {
        return Ok(Step::Blocked {
            reason: format!(
                "{running} launched case(s) have not ended; the frozen concurrency is {} (CASE-7)",
                m.limits.concurrency
            ),
        });
    }
    let lines = gate_lines(l, group, f.now_utc_ns, f.aws_recorded);
    if let Some((line, seq)) = lines.iter().find_map(|x| match x.state {
        GateState::Failed { seq } => Some((x, seq)),
        _ => None,
    }) {
        return Ok(Step::Stop {
            rule: line.rule,
            reason: format!(
                "the {} gate ({}) failed before a batch of {group} at seq {seq}",
                line.gate.name(),
                line.target
            ),
            evidence_seq: Some(seq),
        });
    }
    let need: Vec<GateId> = lines
        .iter()
        .filter(|x| !matches!(x.state, GateState::Fresh { .. }))
        .map(|x| x.gate)
        .collect();
    if !need.is_empty() {
        return Ok(Step::TakeGates { gates: need });
    }
    let covered = quota_slots(l);
    if covered == 0 {
        return Ok(Step::Blocked {
            reason: format!(
                "the quota observation covers no sandbox: {} vCPUs available, less the headroom and a central host still to be provisioned (GATE-2)",
                l.gates.quota_available_vcpu
            ),
        });
    }
    let cases: Vec<CaseRef> = launchable.into_iter().take(free.min(covered)).collect();
    // CASE-7: a wave never takes the group past the frozen concurrency.
    assert!(running + cases.len() <= m.limits.concurrency as usize);
    Ok(Step::Launch { cases })
}

/// How many sandboxes the latest quota observation covers (RUN-1): the
/// vCPUs it found available, less the frozen headroom and, while the
/// central host was still to be provisioned when the quota was observed,
/// its vCPU (GATE-2: a host provisioned outside benchledger is always
/// counted, a wave never relies on it being live), over one sandbox's vCPU.
fn quota_slots(l: &LineageState) -> usize {
    let m = &l.frozen.manifest.public;
    let quota_seq = l.gates.quota.as_ref().map(|o| o.at.seq);
    let central = if crate::method::central::still_to_come(l, quota_seq) {
        m.central.vcpu
    } else {
        0
    };
    let spare = l
        .gates
        .quota_available_vcpu
        .saturating_sub(m.aws.quota_headroom_vcpu)
        .saturating_sub(central);
    usize::try_from(spare / m.sandbox.vcpu.max(1)).unwrap_or(usize::MAX)
}

/// After the close: evidence, receipts within the grace and budget, the
/// cleanup audit (and termination), the seal.
fn after_close_step(l: &LineageState, plan: &Plan, g: &GroupState, f: &Facts<'_>) -> Step {
    let m = &l.frozen.manifest.public;
    let closed = g
        .closed
        .expect("after_close_step is called on a closed group");
    let all_recorded = EvidenceKind::ALL
        .iter()
        .all(|k| f.history.evidence_after_close.contains(k));
    if !f.evidence_gathered && !all_recorded {
        return Step::GatherEvidence;
    }
    let grace_end = closed
        .utc_ns
        .saturating_add(m.limits.settlement_grace_sec.saturating_mul(1_000_000_000));
    let pending: Vec<String> = verdict::settlement(m, g)
        .requests
        .into_iter()
        .filter(|r| r.state == SettlementState::Pending)
        .map(|r| r.request_id)
        .collect();
    if !pending.is_empty() && f.now_utc_ns < grace_end {
        let budget = m.limits.reconciliation_attempts;
        let pollable: Vec<String> = pending
            .iter()
            .filter(|id| f.history.polls_of(id) < budget)
            .cloned()
            .collect();
        if !plan.evidence.reconcile.is_empty() && pollable.is_empty() && !f.receipts_collected {
            return Step::CollectReceipts {
                request_ids: pending,
            };
        }
        if plan.evidence.reconcile.is_empty() || pollable.is_empty() {
            return Step::WaitUntil {
                until_utc_ns: grace_end,
                why: format!(
                    "{} request(s) pending and {}; the settlement grace ends then (SETTLE-8)",
                    pending.len(),
                    if plan.evidence.reconcile.is_empty() {
                        "the plan has no reconcile command"
                    } else {
                        "every poll of the budget is spent"
                    }
                ),
            };
        }
        let next_poll = f.last_poll_utc_ns.map(|t| {
            t.saturating_add(plan.evidence.receipt_poll_sec.saturating_mul(1_000_000_000))
        });
        if let Some(t) = next_poll.filter(|t| *t > f.now_utc_ns) {
            return Step::WaitUntil {
                until_utc_ns: t.min(grace_end),
                why: format!(
                    "{} request(s) pending: the next receipt poll",
                    pollable.len()
                ),
            };
        }
        return Step::PollReceipts {
            request_ids: pollable,
        };
    }
    cleanup_step(g, closed.seq, f)
}

fn cleanup_step(g: &GroupState, closed_seq: u64, f: &Facts<'_>) -> Step {
    let audit = g.cleanup.as_ref().filter(|(at, _)| at.seq > closed_seq);
    let Some((at, a)) = audit else {
        return Step::Audit;
    };
    if let Some(e) = &a.error {
        if f.audit_failed_here {
            return Step::Blocked {
                reason: format!(
                    "the cleanup audit at seq {} could not run ({e}); fix the AWS access and run again",
                    at.seq
                ),
            };
        }
        return Step::Audit;
    }
    let residue = a.status != crate::schema::events::Status::Pass;
    if residue && f.terminate && !f.history.terminated_audits.contains(&at.seq) {
        return Step::Terminate { audit_seq: at.seq };
    }
    Step::Seal
}
