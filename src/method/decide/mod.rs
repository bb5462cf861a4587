//! Decisions: a command and the current state in, the events to append or a
//! refusal naming the rule out. Pure: no I/O, no clock; the CLI gathers the
//! facts and passes them in, and appends the result under the writer lock.

use crate::error::{Error, Result};
use crate::method::projections::{CaseStatus, LineageState, Observation, State};
use crate::schema::events::{
    CaseRef, CaseStarted, CheckKind, Event, GroupClosed, GroupOpened, GroupRef, ManifestFrozen,
    ManifestSignedOff, RefusalClass, SignOffRole, Status,
};
use crate::schema::manifest::{is_non_evaluation, Tier};
use crate::schema::rule::Rule;

/// Longest sign-off name, in bytes.
pub const SIGN_OFF_NAME_BYTES_MAX: usize = 128;

fn refuse(rule: Rule, message: impl Into<String>) -> Error {
    Error::Refused {
        rule,
        message: message.into(),
    }
}

/// `manifest freeze`: appends the frozen manifest unless its lineage label
/// was frozen before (FREEZE-3) or it reuses any run-scoped path, port,
/// database, tag or job name of an earlier lineage (FREEZE-4).
pub fn freeze(state: &State, frozen: ManifestFrozen) -> Result<Vec<Event>> {
    if let Some(l) = state.lineages.get(&frozen.lineage) {
        return Err(refuse(
            Rule::Freeze3,
            format!(
            "lineage {:?} was frozen at seq {}; a changed input is a new lineage, never an edit",
            frozen.lineage, l.frozen_seq
        ),
        ));
    }
    for (key, field) in frozen.manifest.public.run_scoped_claims() {
        if let Some((lineage, first)) = state.claims.get(&key) {
            return Err(refuse(Rule::Freeze4, format!(
                "{field} ({key}) was already used by lineage {lineage:?} ({first}); every run-scoped path, port, database, tag and job name must be new"
            )));
        }
    }
    Ok(vec![Event::ManifestFrozen(frozen)])
}

/// `manifest sign-off`: records an operator or reviewer sign-off, once per
/// role, by two distinct names (FREEZE-7).
pub fn sign_off(
    state: &State,
    lineage: Option<&str>,
    role: SignOffRole,
    name: &str,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    let name = name.trim();
    if name.is_empty() || name.len() > SIGN_OFF_NAME_BYTES_MAX || name.chars().any(char::is_control)
    {
        return Err(Error::input(format!(
            "--name must be 1 to {SIGN_OFF_NAME_BYTES_MAX} printable bytes"
        )));
    }
    if let Some((who, seq)) = l.sign_offs.get(&role) {
        return Err(refuse(
            Rule::Freeze7,
            format!(
                "lineage {:?} was already signed off as {role:?} by {who:?} at seq {seq}",
                l.frozen.lineage
            ),
        ));
    }
    let other = match role {
        SignOffRole::Operator => SignOffRole::Reviewer,
        SignOffRole::Reviewer => SignOffRole::Operator,
    };
    if l.sign_offs.get(&other).is_some_and(|(who, _)| who == name) {
        return Err(refuse(Rule::Freeze7, format!("operator and reviewer must be two distinct names; {name:?} already signed off as {other:?}")));
    }
    Ok(vec![Event::ManifestSignedOff(ManifestSignedOff {
        lineage: l.frozen.lineage.clone(),
        manifest_blake3: l.frozen.manifest_blake3.clone(),
        role,
        name: name.to_string(),
    })])
}

/// The facts `group open` records: what the operator started the group's
/// daemon with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOpen {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The group name.
    pub group: String,
    /// SHA-256 of the daemon binary started, hex.
    pub binary_sha256: String,
    /// SHA-256 of its config, hex.
    pub config_sha256: String,
    /// Its ports.
    pub ports: Vec<u16>,
    /// Its database path.
    pub db_path: String,
    /// Its output directory.
    pub out_dir: String,
}

fn not_stopped(l: &LineageState) -> Result<()> {
    if let Some((at, stop)) = &l.stopped {
        return Err(refuse(
            Rule::Verdict3,
            format!(
                "lineage {:?} was stopped at seq {} (rule {}: {}); it launches nothing more",
                l.frozen.lineage, at.seq, stop.rule, stop.reason
            ),
        ));
    }
    Ok(())
}

fn manifest_group<'a>(
    l: &'a LineageState,
    group: &str,
) -> Result<&'a crate::schema::manifest::Group> {
    l.frozen
        .manifest
        .public
        .groups
        .iter()
        .find(|g| g.name == group)
        .ok_or_else(|| {
            refuse(
                Rule::Lineage1,
                format!(
                    "group {group:?} is not in the frozen target list {:?} of lineage {:?}",
                    l.frozen.manifest.public.group_names(),
                    l.frozen.lineage
                ),
            )
        })
}

/// LINEAGE-2: every group listed before `group` is sealed; the previous
/// evaluation round is accepted, and for r2/r3 its feedback is recorded.
pub(crate) fn earlier_groups_done(l: &LineageState, group: &str) -> Result<()> {
    let names = l.frozen.manifest.public.group_names();
    let pos = names.iter().position(|n| *n == group).unwrap_or(0);
    for earlier in &names[..pos] {
        if *earlier == "control" && l.control_reused.is_some() {
            continue; // an accepted control with an equal key (LINEAGE-6)
        }
        let g = l.groups.get(*earlier);
        if !g.is_some_and(|g| g.sealed.is_some()) {
            return Err(refuse(
                Rule::Lineage2,
                format!("group {earlier:?} comes before {group:?} and is not sealed"),
            ));
        }
        if !is_non_evaluation(earlier) && !g.is_some_and(|g| g.accepted()) {
            return Err(refuse(
                Rule::Lineage2,
                format!(
                "round {earlier:?} was not accepted; a rejected group stops the lineage (LINEAGE-5)"
            ),
            ));
        }
    }
    if group == "r2" || group == "r3" {
        let prev = if group == "r2" { "r1" } else { "r2" };
        if !l.groups.get(prev).is_some_and(|g| g.feedback.is_some()) {
            return Err(refuse(
                Rule::Lineage2,
                format!("{group} starts only after feedback from accepted {prev} was recorded"),
            ));
        }
    }
    Ok(())
}

/// GATE-5: the accepted canary groups of a lineage; at least one is required
/// before scored work.
fn accepted_canary(
    l: &LineageState,
) -> Result<Vec<(&String, &crate::method::projections::GroupState)>> {
    let canaries: Vec<_> = l
        .groups
        .iter()
        .filter(|(n, g)| n.starts_with("canary") && g.accepted())
        .collect();
    if canaries.is_empty() {
        return Err(refuse(
            Rule::Gate5,
            "an accepted canary is required before scored work",
        ));
    }
    Ok(canaries)
}

/// `group open`: records the group's daemon start, refused unless every
/// value equals the frozen manifest (GATE-4, FREEZE-4), the group was never
/// opened, and it is next in the lineage's order (LINEAGE-1, LINEAGE-2).
pub fn group_open(state: &State, cmd: GroupOpen) -> Result<Vec<Event>> {
    let l = state.lineage(cmd.lineage.as_deref())?;
    not_stopped(l)?;
    let g = manifest_group(l, &cmd.group)?;
    if let (Some((at, r)), "control") = (&l.control_reused, cmd.group.as_str()) {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "lineage {:?} reuses control {}/{} (seq {}); control is never rerun",
                l.frozen.lineage, r.control.lineage, r.control.group, at.seq
            ),
        ));
    }
    if let Some((at, _)) = l.groups.get(&cmd.group).and_then(|g| g.opened.as_ref()) {
        return Err(refuse(
            Rule::Freeze4,
            format!(
                "group {:?} was opened at seq {}; a group's daemon starts once",
                cmd.group, at.seq
            ),
        ));
    }
    let sw = &l.frozen.manifest.public.software;
    if cmd.binary_sha256 != sw.bitrouter_binary_sha256 {
        return Err(refuse(
            Rule::Gate4,
            format!(
            "daemon binary sha256 {} is not the frozen {}; nothing is hot-swapped inside a lineage",
            cmd.binary_sha256, sw.bitrouter_binary_sha256
        ),
        ));
    }
    let frozen_config = sw
        .bitrouter_config_sha256
        .get(&cmd.group)
        .map(String::as_str)
        .unwrap_or("");
    if cmd.config_sha256 != frozen_config {
        return Err(refuse(
            Rule::Gate4,
            format!(
                "daemon config sha256 {} is not the frozen {frozen_config}",
                cmd.config_sha256
            ),
        ));
    }
    for (what, got, want) in [
        (
            "ports",
            format!("{:?}", cmd.ports),
            format!("{:?}", g.ports),
        ),
        ("db path", cmd.db_path.clone(), g.db_path.clone()),
        ("output directory", cmd.out_dir.clone(), g.out_dir.clone()),
    ] {
        if got != want {
            return Err(refuse(
                Rule::Freeze4,
                format!(
                    "{what} {got} differ from the frozen {want} of group {:?}",
                    cmd.group
                ),
            ));
        }
    }
    earlier_groups_done(l, &cmd.group)?;
    if !is_non_evaluation(&cmd.group) {
        accepted_canary(l)?;
    }
    Ok(vec![Event::GroupOpened(GroupOpened {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: cmd.group,
        },
        binary_sha256: cmd.binary_sha256,
        config_sha256: cmd.config_sha256,
        ports: cmd.ports,
        db_path: cmd.db_path,
        out_dir: cmd.out_dir,
    })])
}

/// `group close`: no more launches for an open group.
pub fn group_close(state: &State, lineage: Option<&str>, group: &str) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let g = l.groups.get(group);
    if !g.is_some_and(|g| g.opened.is_some()) {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was never opened"),
        ));
    }
    if let Some(at) = g.and_then(|g| g.closed) {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was closed at seq {}", at.seq),
        ));
    }
    Ok(vec![Event::GroupClosed(GroupClosed {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        },
    })])
}

/// The facts `case start` decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseStart {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The group name.
    pub group: String,
    /// The case identity.
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

/// The routes a group's requests may take: control resolves every request to
/// the strong route (LINEAGE-8); rounds and canaries use every tier, plus
/// the strong route's non-scoring sentinel (GATE-3).
pub fn group_routes(l: &LineageState, group: &str) -> Vec<Tier> {
    if group == "control" {
        vec![Tier::Strong]
    } else {
        l.frozen
            .manifest
            .public
            .routes
            .iter()
            .map(|r| r.tier)
            .collect()
    }
}

/// The gate observations `case start` requires, as (rule, description,
/// the latest matching observation).
fn required_gates<'a>(
    l: &'a LineageState,
    group: &str,
    config_blake3: &str,
) -> Vec<(Rule, String, Option<&'a Observation>)> {
    let latest = |kind: CheckKind, group: Option<&str>, target: Option<&str>| {
        l.gates
            .checks
            .iter()
            .filter(|((k, g, t), _)| {
                *k == kind
                    && group.is_none_or(|w| g.as_deref() == Some(w))
                    && target.is_none_or(|w| t == w)
            })
            .map(|(_, o)| o)
            .max_by_key(|o| o.at.seq)
    };
    let mut out = vec![
        (
            Rule::Gate1,
            "the STS identity proof".to_string(),
            l.gates.identity.as_ref(),
        ),
        (
            Rule::Gate2,
            "the vCPU quota check".to_string(),
            l.gates.quota.as_ref(),
        ),
        (
            Rule::Gate3,
            format!("the residue check of group {group}"),
            latest(CheckKind::Residue, Some(group), None),
        ),
        (
            Rule::Gate3,
            format!("the daemon health check of group {group}"),
            latest(CheckKind::DaemonHealth, Some(group), None),
        ),
    ];
    for tier in group_routes(l, group) {
        if let Some(r) = l.frozen.manifest.public.route(tier) {
            out.push((
                Rule::Gate3,
                format!("the provider sentinel of {}", r.gate_target),
                latest(CheckKind::ProviderSentinel, None, Some(&r.gate_target)),
            ));
        }
    }
    out.push((
        Rule::Gate7,
        format!("the validation of TrialConfig {config_blake3}"),
        latest(CheckKind::ConfigValidated, None, Some(config_blake3)),
    ));
    out
}

/// Whether a case identity belongs to a group's frozen manifest (CASE-8).
/// The original case identities a group's frozen manifest declares, in
/// manifest order: its canary identities for a non-evaluation group, every
/// task x trial otherwise (CASE-8).
pub fn group_identities(l: &LineageState, group: &str) -> Vec<CaseRef> {
    let c = &l.frozen.manifest.public.cases;
    let case = |task: &str, trial: &str| CaseRef {
        task: task.to_string(),
        trial: trial.to_string(),
        replacement: 0,
    };
    if is_non_evaluation(group) {
        c.canaries
            .iter()
            .filter(|k| k.group == group)
            .map(|k| case(&k.task, &k.trial))
            .collect()
    } else {
        c.tasks
            .iter()
            .flat_map(|t| c.trials.iter().map(move |tr| case(&t.name, tr)))
            .collect()
    }
}

/// Whether a case identity (any replacement) belongs to a group's frozen
/// manifest (CASE-8).
fn in_manifest(l: &LineageState, group: &str, case: &CaseRef) -> bool {
    let original = CaseRef {
        replacement: 0,
        ..case.clone()
    };
    group_identities(l, group).contains(&original)
}

/// One identity as `resume` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeRow {
    /// The case identity.
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
    harbor_trial_dirs: &std::collections::BTreeSet<String>,
) -> Result<Vec<ResumeRow>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let g = l.groups.get(group);
    Ok(group_identities(l, group)
        .into_iter()
        .map(|case| {
            let cs = g.and_then(|g| g.cases.get(&case));
            let name = crate::schema::names::trial_name(&case.task, group, &case);
            let blocked = match cs.map_or(CaseStatus::NotStarted, |c| c.status(accepted)) {
                CaseStatus::NotStarted if harbor_trial_dirs.contains(&name) => Some(format!(
                    "a Harbor trial directory {name} exists: a missing result never means not started"
                )),
                CaseStatus::NotStarted => None,
                other => {
                    let seq = cs.and_then(|c| c.started.as_ref()).map_or(0, |(at, _)| at.seq);
                    let status = serde_json::to_value(other).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                    Some(format!("{status} at seq {seq}"))
                }
            };
            ResumeRow { case, blocked }
        })
        .collect())
}

/// The security-policy skip's precondition for `replacement-01` (CASE-6):
/// the original identity ended terminal-invalid without a valid TrialResult
/// and has 403 evidence in one of the two skip classes.
fn original_refused(l: &LineageState, group: &str, case: &CaseRef) -> Result<RefusalClass> {
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let original = CaseRef {
        replacement: 0,
        ..case.clone()
    };
    let c = l.groups.get(group).and_then(|g| g.cases.get(&original));
    let status = c.map_or(CaseStatus::NotStarted, |c| c.status(accepted));
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

/// `case start`: appends `case_started` only when every rule holds; the
/// command is launched only after that append is durable (GATE-6).
pub fn case_start(state: &State, cmd: CaseStart) -> Result<Vec<Event>> {
    let l = state.lineage(cmd.lineage.as_deref())?;
    let m = &l.frozen.manifest.public;
    not_stopped(l)?;
    manifest_group(l, &cmd.group)?;
    let scored = !is_non_evaluation(&cmd.group);
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
    if !g.is_some_and(|g| g.opened.is_some()) {
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
    earlier_groups_done(l, &cmd.group)?;
    // The identity (CASE-8, CASE-6, CASE-2).
    if !in_manifest(l, &cmd.group, &cmd.case) {
        return Err(refuse(
            Rule::Case8,
            format!(
                "{}/{} is not a case identity of group {:?} in the frozen manifest",
                cmd.case.task, cmd.case.trial, cmd.group
            ),
        ));
    }
    match cmd.case.replacement {
        0 => {}
        1 => {
            if !m.method.security_skip_enabled {
                return Err(refuse(Rule::Case6, "the frozen manifest does not enable the security-policy skip, so no replacement-01"));
            }
            original_refused(l, &cmd.group, &cmd.case)?;
        }
        n => {
            return Err(refuse(
                Rule::Case6,
                format!("there is never a third attempt: replacement-{n:02} is refused"),
            ));
        }
    }
    if let Some((at, _)) = g
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
    // Gates, fresh before now (GATE-1..3, GATE-6, GATE-7).
    let window_ns = m.limits.gate_freshness_sec.saturating_mul(1_000_000_000);
    let mut gate_seqs = Vec::new();
    for (rule, what, obs) in required_gates(l, &cmd.group, &cmd.trial_config_blake3) {
        let Some(o) = obs else {
            return Err(refuse(rule, format!("{what} was never recorded; a failed or missing gate leaves the case not_started")));
        };
        if o.status != Status::Pass {
            return Err(refuse(rule, format!("{what} failed at seq {}", o.at.seq)));
        }
        if o.at.utc_ns > cmd.now_utc_ns || cmd.now_utc_ns - o.at.utc_ns > window_ns {
            return Err(refuse(
                rule,
                format!(
                    "{what} at seq {} is older than the frozen freshness window of {} s",
                    o.at.seq, m.limits.gate_freshness_sec
                ),
            ));
        }
        gate_seqs.push(o.at.seq);
    }
    // Concurrency (CASE-7): started, not terminal, across the lineage.
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
    // Canaries first (GATE-5), and at the lineage's concurrency (GATE-9).
    if scored {
        let canaries = accepted_canary(l)?;
        let c = m.limits.concurrency as u64;
        if c > 1
            && !canaries
                .iter()
                .any(|(_, g)| g.monitor_peak == Some(c) && g.cases.len() as u64 >= c)
        {
            return Err(refuse(Rule::Gate9, format!(
                "concurrency {c} needs an accepted multi-case canary that ran at exactly {c} with an observed peak of {c}"
            )));
        }
    }
    gate_seqs.sort_unstable();
    gate_seqs.dedup();
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

/// The group evidence binds to: a group of a frozen lineage's target list
/// (LINEAGE-1) that is not sealed (VERDICT-4: after the seal no evidence for
/// the group is accepted).
pub fn evidence_group(state: &State, lineage: Option<&str>, group: &str) -> Result<GroupRef> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    if let Some((at, s)) = l.groups.get(group).and_then(|g| g.sealed.as_ref()) {
        return Err(refuse(Rule::Verdict4, format!(
            "group {group:?} was sealed {} at seq {}; a sealed verdict is final and takes no more evidence",
            s.status, at.seq
        )));
    }
    Ok(GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.to_string(),
    })
}

/// A Harbor TrialResult binds to a case of the group that was started
/// through the ledger: a result for an identity never started means it was
/// launched outside the gates (GATE-6, CASE-8).
pub fn trial_result_case(state: &State, group: &GroupRef, case: &CaseRef) -> Result<()> {
    let l = state.lineage(Some(&group.lineage))?;
    if !in_manifest(l, &group.group, case) {
        return Err(refuse(
            Rule::Case8,
            format!(
                "a result for {}/{} which is not a case identity of group {:?}",
                case.task, case.trial, group.group
            ),
        ));
    }
    let started = l
        .groups
        .get(&group.group)
        .and_then(|g| g.cases.get(case))
        .and_then(|c| c.started.as_ref());
    if started.is_none() {
        return Err(refuse(
            Rule::Gate6,
            format!(
                "a result for {}/{} of group {:?}, which was never started through the ledger",
                case.task, case.trial, group.group
            ),
        ));
    }
    Ok(())
}

fn started_case<'a>(
    state: &'a State,
    group: &GroupRef,
    case: &CaseRef,
) -> Result<(&'a LineageState, &'a crate::method::projections::CaseState)> {
    let l = state.lineage(Some(&group.lineage))?;
    let c = l
        .groups
        .get(&group.group)
        .and_then(|g| g.cases.get(case))
        .filter(|c| c.started.is_some())
        .ok_or_else(|| {
            refuse(
                Rule::Case8,
                format!(
                    "{} of group {:?} was never started; evidence binds only to started cases",
                    case.label(),
                    group.group
                ),
            )
        })?;
    Ok((l, c))
}

/// `case refusal`: sanitized HTTP 403 evidence for a started case, in one of
/// the two skip classes (CASE-6). Other statuses are never skip evidence:
/// a 401/403 outside the classes stops the group (CASE-5), and 429, 5xx or a
/// timeout never qualify.
pub fn security_refusal(
    state: &State,
    group: &GroupRef,
    case: &CaseRef,
    class: RefusalClass,
    http_status: u16,
    request_id: Option<String>,
    evidence_blake3: String,
) -> Result<Vec<Event>> {
    evidence_group(state, Some(&group.lineage), &group.group)?;
    started_case(state, group, case)?;
    if http_status != 403 {
        return Err(refuse(
            Rule::Case6,
            format!("only HTTP 403 evidence can support a security-policy skip; got {http_status}"),
        ));
    }
    Ok(vec![Event::SecurityRefusalRecorded(
        crate::schema::events::SecurityRefusalRecorded {
            group: group.clone(),
            case: case.clone(),
            class,
            http_status,
            request_id,
            evidence_blake3,
        },
    )])
}

/// `case invalidate`: a started case without a TrialResult becomes
/// `terminal_invalid` on cited evidence (CASE-3, CASE-8); it stays consumed
/// and is never relaunched (CASE-2).
pub fn case_invalidate(
    state: &State,
    group: &GroupRef,
    case: &CaseRef,
    reason: crate::schema::events::InvalidReason,
    evidence_path: String,
    evidence_blake3: String,
) -> Result<Vec<Event>> {
    evidence_group(state, Some(&group.lineage), &group.group)?;
    let (_, c) = started_case(state, group, case)?;
    if let Some((at, _)) = &c.result {
        return Err(refuse(
            Rule::Case3,
            format!(
                "{} has a TrialResult at seq {}; its state follows from that result",
                case.label(),
                at.seq
            ),
        ));
    }
    if let Some((at, _)) = &c.invalidated {
        return Err(refuse(
            Rule::Case1,
            format!(
                "{} was made terminal_invalid at seq {}",
                case.label(),
                at.seq
            ),
        ));
    }
    Ok(vec![Event::CaseInvalidated(
        crate::schema::events::CaseInvalidated {
            group: group.clone(),
            case: case.clone(),
            reason,
            evidence_path,
            evidence_blake3,
        },
    )])
}

/// `group seal`: attests the group's verdict, final from then on
/// (VERDICT-4). Refused unless the group was opened and closed, every
/// started case is terminal, a cleanup audit follows the close, and no
/// request is pending while the settlement grace runs (CASE-9, SETTLE-8).
/// A sealed accepted control enters the control catalog (LINEAGE-6); a
/// rejected evaluation group stops the lineage (LINEAGE-5, VERDICT-3).
/// `state` must come from a scanning replay (the secrets row).
pub fn seal(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    now_utc_ns: u64,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let gref = evidence_group(state, Some(&l.frozen.lineage), group)?;
    let m = &l.frozen.manifest.public;
    let g = l.groups.get(group);
    let Some(g) = g.filter(|g| g.opened.is_some()) else {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was never opened"),
        ));
    };
    let Some(closed) = g.closed else {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} is not closed: close it (`group close`) before the verdict"),
        ));
    };
    let running: Vec<String> = g
        .cases
        .iter()
        .filter(|(_, c)| c.status(&m.harbor.accepted_exceptions) == CaseStatus::Started)
        .map(|(k, _)| k.label())
        .collect();
    if !running.is_empty() {
        return Err(refuse(
            Rule::Case9,
            format!(
                "every started case must be terminal before the verdict; still started: {}",
                crate::method::verdict::name_some(&running)
            ),
        ));
    }
    if !g
        .cleanup
        .as_ref()
        .is_some_and(|(at, _)| at.seq > closed.seq)
    {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} has no cleanup audit after it closed (run `cleanup audit`)"),
        ));
    }
    let grace_ns = m.limits.settlement_grace_sec.saturating_mul(1_000_000_000);
    let in_grace = now_utc_ns < closed.utc_ns.saturating_add(grace_ns);
    let settlement = crate::method::verdict::settlement(m, g);
    let pending: Vec<&str> = settlement
        .requests
        .iter()
        .filter(|r| r.state == crate::method::verdict::SettlementState::Pending)
        .map(|r| r.request_id.as_str())
        .collect();
    if in_grace && !pending.is_empty() {
        return Err(refuse(
            Rule::Settle8,
            format!(
                "{} requests are pending and the settlement grace of {} s after the close (seq {}) has not elapsed: {}",
                pending.len(),
                m.limits.settlement_grace_sec,
                closed.seq,
                crate::method::verdict::name_some(&pending)
            ),
        ));
    }
    let v = crate::method::verdict::group_verdict(state, l, group);
    let mut out = vec![Event::GroupSealed(crate::schema::events::GroupSealed {
        group: gref.clone(),
        status: v.status.clone(),
        rows: v.rows.clone(),
        skipped_security_policy: v.skipped_cases(),
        projection_version: v.projection_version,
    })];
    if group == "control" && v.status == crate::method::verdict::ACCEPTED {
        out.push(Event::ControlRegistered(
            crate::schema::events::ControlRegistered {
                group: gref.clone(),
                control_key: l.frozen.control_key.clone(),
                artifact_blake3: crate::method::verdict::control_artifact_blake3(l, group),
            },
        ));
    }
    if v.status != crate::method::verdict::ACCEPTED
        && !is_non_evaluation(group)
        && l.stopped.is_none()
    {
        let failing: Vec<&str> = v.failing().iter().map(|r| r.gate.as_str()).collect();
        out.push(Event::LineageStopped(
            crate::schema::events::LineageStopped {
                lineage: l.frozen.lineage.clone(),
                rule: Rule::Lineage5.into(),
                reason: format!(
                    "{group} sealed {}: failing rows {}",
                    v.status,
                    failing.join(", ")
                ),
                evidence_seq: None,
            },
        ));
    }
    Ok(out)
}

/// Whether `h` is 64 lowercase hex digits (an optional `sha256:` or
/// `blake3:` prefix allowed).
fn is_digest(h: &str) -> bool {
    let h = h
        .strip_prefix("sha256:")
        .or_else(|| h.strip_prefix("blake3:"))
        .unwrap_or(h);
    h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `feedback record`: reward feedback applied once after an accepted r1 or
/// r2 of a policy lineage, with the policy snapshots before and after
/// (LINEAGE-3, VERDICT-2).
pub fn feedback(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    before: &str,
    after: &str,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    for (flag, h) in [("--before", before), ("--after", after)] {
        if !is_digest(h) {
            return Err(Error::input(format!(
                "{flag} must be a policy snapshot digest: 64 lowercase hex digits (optionally sha256: or blake3:), got {h:?}"
            )));
        }
    }
    if l.frozen.manifest.public.run.role == crate::schema::manifest::RunRole::HeldOut {
        return Err(refuse(
            Rule::Lineage7,
            format!(
                "lineage {:?} is a held-out run: its policy is frozen and no held-out reward is applied",
                l.frozen.lineage
            ),
        ));
    }
    if group != "r1" && group != "r2" {
        return Err(refuse(
            Rule::Lineage3,
            format!("feedback is allowed only after accepted r1 and r2, never from {group:?}"),
        ));
    }
    let g = l.groups.get(group);
    match g.and_then(|g| g.sealed.as_ref()) {
        None => {
            return Err(refuse(
                Rule::Lineage3,
                format!("{group} is not sealed; feedback comes only from an accepted verdict"),
            ))
        }
        Some((at, s)) if s.status != crate::method::verdict::ACCEPTED => {
            return Err(refuse(
                Rule::Verdict2,
                format!(
                    "{group} was sealed {} at seq {}; a rejected group never drives feedback",
                    s.status, at.seq
                ),
            ))
        }
        Some(_) => {}
    }
    if let Some((at, _)) = g.and_then(|g| g.feedback.as_ref()) {
        return Err(refuse(
            Rule::Lineage3,
            format!(
                "feedback from {group} was recorded at seq {}; it is applied once",
                at.seq
            ),
        ));
    }
    Ok(vec![Event::FeedbackApplied(
        crate::schema::events::FeedbackApplied {
            group: GroupRef {
                lineage: l.frozen.lineage.clone(),
                group: group.to_string(),
            },
            policy_snapshot_before: before.to_string(),
            policy_snapshot_after: after.to_string(),
        },
    )])
}

/// `control reuse`: lineage `lineage` compares against an accepted control
/// of another lineage instead of launching one, only when the control keys
/// are equal and the control's artifact checksum re-derives from the log
/// (LINEAGE-6, LINEAGE-9, FREEZE-6).
pub fn control_reuse(state: &State, lineage: &str, control: &GroupRef) -> Result<Vec<Event>> {
    let l = state.lineage(Some(lineage))?;
    not_stopped(l)?;
    if !l.frozen.manifest.public.group_names().contains(&"control") {
        return Err(refuse(
            Rule::Lineage1,
            format!("lineage {lineage:?} targets no control group"),
        ));
    }
    if let Some((at, r)) = &l.control_reused {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "lineage {lineage:?} already reuses {}/{} (seq {})",
                r.control.lineage, r.control.group, at.seq
            ),
        ));
    }
    if let Some((at, _)) = l.groups.get("control").and_then(|g| g.opened.as_ref()) {
        return Err(refuse(
            Rule::Lineage6,
            format!("lineage {lineage:?} opened its own control at seq {}; control is never mixed or rerun", at.seq),
        ));
    }
    if control.group != "control" || control.lineage == lineage {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "{}/{} is not another lineage's control group",
                control.lineage, control.group
            ),
        ));
    }
    let source = state.lineage(Some(&control.lineage))?;
    let registered = state
        .controls
        .get(&source.frozen.control_key)
        .and_then(|v| v.iter().find(|(_, r)| r.group == *control));
    let Some((reg_at, reg)) = registered else {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "{}/control is not an accepted control in the catalog",
                control.lineage
            ),
        ));
    };
    if source.frozen.control_key != l.frozen.control_key {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "control key {} of {} differs from {} of {lineage:?}: reuse needs the exact key",
                source.frozen.control_key, control.lineage, l.frozen.control_key
            ),
        ));
    }
    let artifact = crate::method::verdict::control_artifact_blake3(source, "control");
    if artifact != reg.artifact_blake3 {
        return Err(refuse(
            Rule::Lineage9,
            format!(
                "the control artifact re-derived from the log is {artifact}, not the {} registered at seq {}",
                reg.artifact_blake3, reg_at.seq
            ),
        ));
    }
    Ok(vec![Event::ControlReused(
        crate::schema::events::ControlReused {
            lineage: lineage.to_string(),
            control: control.clone(),
            control_key: reg.control_key.clone(),
            artifact_blake3: artifact,
        },
    )])
}

/// `lineage stop`: an operator's hard stop (VERDICT-3); evidence is kept and
/// cleanup still runs.
pub fn lineage_stop(state: &State, lineage: Option<&str>, reason: &str) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    not_stopped(l)?;
    let reason = reason.trim();
    if reason.is_empty() || reason.len() > crate::limits::NOTE_TEXT_BYTES_MAX {
        return Err(Error::input(format!(
            "--reason must be 1 to {} bytes",
            crate::limits::NOTE_TEXT_BYTES_MAX
        )));
    }
    Ok(vec![Event::LineageStopped(
        crate::schema::events::LineageStopped {
            lineage: l.frozen.lineage.clone(),
            rule: Rule::Verdict3.into(),
            reason: reason.to_string(),
            evidence_seq: None,
        },
    )])
}

#[cfg(test)]
mod tests;
