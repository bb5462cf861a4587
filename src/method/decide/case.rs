//! `case start` and `resume` (GATE-1..9, CASE-2, CASE-4, CASE-6..9,
//! FREEZE-7): whether one case identity may launch now.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::method::decide::group::accepted_canaries;
use crate::method::decide::{manifest_group, not_stopped, refuse};
use crate::method::lineage::{earlier_groups_done, group_identities, group_routes, in_manifest};
use crate::method::projections::{CaseStatus, GroupState, LineageState, Observation, State};
use crate::schema::events::{
    CaseRef, CaseStarted, CheckKind, Event, GroupRef, RefusalClass, Status,
};
use crate::schema::manifest::is_non_evaluation;
use crate::schema::rule::Rule;

/// The facts `case start` decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseStart {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    pub group: String,
    pub case: CaseRef,
    /// The Harbor trial name its rendered config uses.
    pub trial_name: String,
    /// BLAKE3 of the TrialConfig to launch, hex.
    pub trial_config_blake3: String,
    /// The command to launch after `started` is durable, if any.
    pub command: Vec<String>,
    /// Now, as the CLI read it, ns since the epoch (UTC).
    pub now_utc_ns: u64,
}

/// A gate observation `case start` requires.
struct RequiredGate<'a> {
    /// The rule that requires it.
    rule: Rule,
    /// What it is, for the refusal.
    what: String,
    /// The latest matching observation, if any.
    latest: Option<&'a Observation>,
}

/// The gate observations `case start` requires: identity, quota, the
/// group's residue and daemon health, a sentinel per route, and the
/// validation of the TrialConfig to launch.
fn required_gates<'a>(
    l: &'a LineageState,
    group: &str,
    config_blake3: &str,
) -> Vec<RequiredGate<'a>> {
    let latest = |kind: CheckKind, group: Option<&str>, target: Option<&str>| {
        l.gates.latest_check(kind, group, target)
    };
    let gate = |rule: Rule, what: String, latest: Option<&'a Observation>| RequiredGate {
        rule,
        what,
        latest,
    };
    let mut out = vec![
        gate(
            Rule::Gate1,
            "the STS identity proof".to_string(),
            l.gates.identity.as_ref(),
        ),
        gate(
            Rule::Gate2,
            "the vCPU quota check".to_string(),
            l.gates.quota.as_ref(),
        ),
        gate(
            Rule::Gate3,
            format!("the residue check of group {group}"),
            latest(CheckKind::Residue, Some(group), None),
        ),
        gate(
            Rule::Gate3,
            format!("the daemon health check of group {group}"),
            latest(CheckKind::DaemonHealth, Some(group), None),
        ),
    ];
    if crate::method::central::managed(l) {
        out.push(gate(
            Rule::Freeze8,
            "the central host observation".to_string(),
            crate::method::central::latest_check(l).map(|(_, o)| o),
        ));
    }
    for tier in group_routes(l, group) {
        if let Some(r) = l.frozen.manifest.public.route(tier) {
            out.push(gate(
                Rule::Gate3,
                format!("the provider sentinel of {}", r.gate_target),
                latest(CheckKind::ProviderSentinel, None, Some(&r.gate_target)),
            ));
        }
    }
    out.push(gate(
        Rule::Gate7,
        format!("the validation of TrialConfig {config_blake3}"),
        latest(CheckKind::ConfigValidated, None, Some(config_blake3)),
    ));
    out
}

/// One identity as `resume` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeRow {
    pub case: CaseRef,
    /// Why it may not launch; `None` when it may.
    pub blocked: Option<String>,
}

/// `resume` (CASE-4): an identity may launch only when it is `not_started`
/// in the ledger AND has no Harbor trial directory (`harbor_trial_dirs`,
/// gathered by the caller): a missing result never means "not started".
pub fn resume(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    harbor_trial_dirs: &BTreeSet<String>,
) -> Result<Vec<ResumeRow>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let g = l.groups.get(group);
    Ok(group_identities(l, group)
        .into_iter()
        .map(|case| {
            let cs = g.and_then(|g| g.cases.get(&case));
            let name = crate::schema::names::trial_name(&case.task, group, &case);
            let blocked = match crate::method::binding::case_status(l, group, &case) {
                CaseStatus::NotStarted if harbor_trial_dirs.contains(&name) => Some(format!(
                    "a Harbor trial directory {name} exists: a missing result never means not started"
                )),
                CaseStatus::NotStarted => None,
                other => {
                    let seq = cs.and_then(|c| c.started.as_ref()).map_or(0, |(at, _)| at.seq);
                    Some(format!("{other} at seq {seq}"))
                }
            };
            ResumeRow { case, blocked }
        })
        .collect())
}

/// The identities of `group` that may launch now (CASE-4): `resume`'s
/// launchable rows without their reasons, one lookup each (`run` asks
/// before every wave; `resume` judges every started case's binding for its
/// message).
pub fn launchable(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    harbor_trial_dirs: &BTreeSet<String>,
) -> Result<Vec<CaseRef>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let g = l.groups.get(group);
    Ok(group_identities(l, group)
        .into_iter()
        .filter(|case| {
            let started = g
                .and_then(|g| g.cases.get(case))
                .is_some_and(|c| c.started.is_some());
            !started
                && !harbor_trial_dirs
                    .contains(&crate::schema::names::trial_name(&case.task, group, case))
        })
        .collect())
}

/// The security-policy skip's precondition for `replacement-01` (CASE-6):
/// the original identity ended terminal-invalid without a valid TrialResult
/// and has 403 evidence in one of the two skip classes.
fn original_refused(l: &LineageState, group: &str, case: &CaseRef) -> Result<RefusalClass> {
    let original = CaseRef {
        replacement: 0,
        ..case.clone()
    };
    let c = l.groups.get(group).and_then(|g| g.cases.get(&original));
    let status = crate::method::binding::case_status(l, group, &original);
    if status != CaseStatus::TerminalInvalid {
        return Err(refuse(Rule::Case6, format!("replacement-01 of {}/{} needs the original to have ended terminal_invalid; it is {status:?}", case.task, case.trial)));
    }
    let evidence = c.and_then(|c| c.refusals.iter().find(|(_, r)| r.http_status == 403));
    match evidence {
        Some((_, r)) => Ok(r.class),
        None => Err(refuse(Rule::Case6, format!(
            "replacement-01 of {}/{} needs sanitized HTTP 403 evidence of the original's refusal", case.task, case.trial
        ))),
    }
}

/// FREEZE-7, GATE-4, CASE-9: a scored case needs both sign-offs, and the
/// group must be open and not closed.
fn group_launches(l: &LineageState, cmd: &CaseStart, scored: bool) -> Result<()> {
    if scored && !l.signed_off() {
        return Err(refuse(
            Rule::Freeze7,
            format!(
                "lineage {:?} needs operator and reviewer sign-off before a scored case starts",
                l.frozen.lineage
            ),
        ));
    }
    let g = l.groups.get(&cmd.group);
    if g.is_none_or(|g| g.opened.is_none()) {
        return Err(refuse(
            Rule::Gate4,
            format!(
                "group {:?} has no recorded daemon start (run `group open`)",
                cmd.group
            ),
        ));
    }
    if let Some(at) = g.and_then(|g| g.closed) {
        return Err(refuse(
            Rule::Case9,
            format!(
                "group {:?} was closed at seq {}: no more launches",
                cmd.group, at.seq
            ),
        ));
    }
    Ok(())
}

/// Whether `case` of `group` can ever start (LINEAGE-1, CASE-8, CASE-6): a
/// targeted group, an identity of its frozen manifest, the original or a
/// replacement-01 the frozen manifest permits, never a third attempt.
fn identity_can_start(l: &LineageState, group: &str, case: &CaseRef) -> Result<()> {
    manifest_group(l, group)?;
    if !in_manifest(l, group, case) {
        return Err(refuse(
            Rule::Case8,
            format!(
                "{}/{} is not a case identity of group {group:?} in the frozen manifest",
                case.task, case.trial
            ),
        ));
    }
    match case.replacement {
        0 => Ok(()),
        1 if l.frozen.manifest.public.method.security_skip_enabled => Ok(()),
        1 => Err(refuse(
            Rule::Case6,
            "the frozen manifest does not enable the security-policy skip, so no replacement-01",
        )),
        n => Err(refuse(
            Rule::Case6,
            format!("there is never a third attempt: replacement-{n:02} is refused"),
        )),
    }
}

/// `case render-config`: a config is rendered only for an identity that can
/// ever start (LINEAGE-1, CASE-8, CASE-6), in a lineage that was not
/// stopped (VERDICT-3).
pub fn render_identity(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    case: &CaseRef,
) -> Result<()> {
    let l = state.lineage(lineage)?;
    not_stopped(l)?;
    identity_can_start(l, group, case)
}

/// The identity (CASE-8, CASE-6, CASE-2): of the manifest, an original or a
/// permitted replacement-01, and never started before.
fn identity_launches(l: &LineageState, cmd: &CaseStart) -> Result<()> {
    identity_can_start(l, &cmd.group, &cmd.case)?;
    if cmd.case.replacement == 1 {
        original_refused(l, &cmd.group, &cmd.case)?;
    }
    if let Some((at, _)) = l
        .groups
        .get(&cmd.group)
        .and_then(|g| g.cases.get(&cmd.case))
        .and_then(|c| c.started.as_ref())
    {
        return Err(refuse(
            Rule::Case2,
            format!(
                "{}/{} was started at seq {}; a started identity is consumed forever",
                cmd.case.task, cmd.case.trial, at.seq
            ),
        ));
    }
    Ok(())
}

/// Gates, fresh before now (GATE-1..3, GATE-6, GATE-7): every required
/// observation passed within the frozen freshness window, and its recorded
/// numbers earn the pass (BIND-6; a validation by the frozen validator,
/// BIND-7). Returns their seqs, sorted and distinct.
fn fresh_gate_seqs(l: &LineageState, cmd: &CaseStart) -> Result<Vec<u64>> {
    let freshness_sec = l.frozen.manifest.public.limits.gate_freshness_sec;
    let window_ns = freshness_sec.saturating_mul(1_000_000_000);
    let mut gate_seqs = Vec::new();
    for gate in required_gates(l, &cmd.group, &cmd.trial_config_blake3) {
        let (rule, what) = (gate.rule, gate.what);
        let Some(o) = gate.latest else {
            return Err(refuse(rule, format!("{what} was never recorded; a failed or missing gate leaves the case not_started")));
        };
        if o.status != Status::Pass {
            return Err(refuse(rule, format!("{what} failed at seq {}", o.at.seq)));
        }
        if let Some(r) = &o.refuted {
            return Err(refuse(
                r.rule,
                format!(
                    "{what} at seq {} says pass ({rule}), but it counts from its facts: {}",
                    o.at.seq, r.why
                ),
            ));
        }
        if o.at.utc_ns > cmd.now_utc_ns || cmd.now_utc_ns - o.at.utc_ns > window_ns {
            return Err(refuse(
                rule,
                format!(
                    "{what} at seq {} is older than the frozen freshness window of {freshness_sec} s",
                    o.at.seq
                ),
            ));
        }
        gate_seqs.push(o.at.seq);
    }
    gate_seqs.sort_unstable();
    gate_seqs.dedup();
    Ok(gate_seqs)
}

/// Concurrency (CASE-7): fewer cases started and not terminal across the
/// lineage than the frozen concurrency; for scored work, an accepted canary
/// first (GATE-5) that ran at the lineage's concurrency (GATE-9).
fn capacity_allows(l: &LineageState, scored: bool) -> Result<()> {
    let m = &l.frozen.manifest.public;
    let accepted = &m.harbor.accepted_exceptions;
    let running: usize = l.groups.values().map(|g| g.running(accepted)).sum();
    if running >= m.limits.concurrency as usize {
        return Err(refuse(
            Rule::Case7,
            format!(
                "{running} cases are started and not terminal; the frozen concurrency is {}",
                m.limits.concurrency
            ),
        ));
    }
    if scored {
        scored_work_allowed(l)?;
    }
    Ok(())
}

/// Scored work may start: an accepted canary first (GATE-5) that ran at
/// the lineage's concurrency with that peak observed (GATE-9). `run`'s
/// planner asks this before it takes a scored wave's gates.
pub fn scored_work_allowed(l: &LineageState) -> Result<()> {
    let m = &l.frozen.manifest.public;
    let canaries = accepted_canaries(l)?;
    let concurrency = m.limits.concurrency as u64;
    let ran_at_concurrency = |g: &&GroupState| {
        g.monitor_peak == Some(concurrency) && g.cases.len() as u64 >= concurrency
    };
    if concurrency > 1 && !canaries.iter().any(ran_at_concurrency) {
        return Err(refuse(Rule::Gate9, format!(
            "concurrency {concurrency} needs an accepted multi-case canary that ran at exactly {concurrency} with an observed peak of {concurrency}"
        )));
    }
    Ok(())
}

/// `case start`: appends `case_started` only when every rule holds; the
/// command is launched only after that append is durable (GATE-6).
pub fn case_start(state: &State, cmd: CaseStart) -> Result<Vec<Event>> {
    let l = state.lineage(cmd.lineage.as_deref())?;
    not_stopped(l)?;
    manifest_group(l, &cmd.group)?;
    let scored = !is_non_evaluation(&cmd.group);
    group_launches(l, &cmd, scored)?;
    earlier_groups_done(l, &cmd.group)?;
    identity_launches(l, &cmd)?;
    let gate_seqs = fresh_gate_seqs(l, &cmd)?;
    capacity_allows(l, scored)?;
    Ok(vec![Event::CaseStarted(CaseStarted {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: cmd.group,
        },
        case: cmd.case,
        trial_name: cmd.trial_name,
        trial_config_blake3: cmd.trial_config_blake3,
        gate_seqs,
        command: cmd.command,
    })])
}
