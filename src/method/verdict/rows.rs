//! The gate rows of method.md section 10, one function each, in the order
//! of [`ALL`] (which is [`super::ROWS`] order). Each reads the shared
//! [`RowContext`] and returns its row: whether it holds and the evidence
//! behind it (seqs, ids, counts; at most [`super::EVIDENCE_IDS_MAX`] ids).

use crate::method::binding::job_retries;
use crate::method::projections::{GroupState, LineageState, State};
use crate::method::verdict::cases::CaseTally;
use crate::method::verdict::cleanup::Cleanup;
use crate::method::verdict::joins::Joins;
use crate::method::verdict::planes::Planes;
use crate::method::verdict::settlement::{lineage_spend, Settlement, SettlementState};
use crate::method::verdict::{name_some, names_model, tier_name};
use crate::schema::events::GroupRef;
use crate::schema::events::{CaseRef, GateRow};
use crate::schema::manifest::{is_non_evaluation, ManifestFile, Tier};
use crate::schema::money::Dec;
use crate::schema::rule::Rule;
use crate::schema::verdict::VerdictRow;

/// What every row reads: the replayed state, the group, and the projections
/// the verdict computes once (cases, joins, settlement, cleanup).
pub(super) struct RowContext<'a> {
    /// The replayed state (the secrets row reads its findings).
    pub state: &'a State,
    /// The group's lineage.
    pub lineage: &'a LineageState,
    /// Its frozen public manifest.
    pub manifest: &'a ManifestFile,
    pub group: &'a str,
    /// The group's replayed state (empty when it was never opened).
    pub group_state: &'a GroupState,
    /// The group's predeclared identities (N).
    pub identities: &'a [CaseRef],
    /// Its cases, tallied.
    pub cases: &'a CaseTally,
    pub joins: &'a Joins,
    pub settlement: &'a Settlement,
    /// Its cleanup evidence.
    pub cleanup: &'a Cleanup,
    /// Its reliability and semantic planes.
    pub planes: &'a Planes,
    /// The projection version the rows are worded as (see
    /// `PROJECTION_VERSION`).
    pub version: u32,
}

/// True for a canary group (GATE-5, BIND-4).
fn is_canary(group: &str) -> bool {
    group == "canary" || group.starts_with("canary-")
}

/// A row function.
pub(super) type RowFn = fn(&RowContext<'_>) -> GateRow;

/// Every row function, in [`super::ROWS`] order.
pub(super) const ALL: [RowFn; 13] = [
    manifest,
    secrets,
    attempts,
    trial_result,
    runtime,
    requests,
    decisions,
    cost_join,
    reward_join,
    replay,
    settlement,
    cleanup,
    safety_limit,
];

fn row(name: VerdictRow, holds: bool, evidence: String) -> GateRow {
    GateRow {
        gate: name.into(),
        holds,
        evidence,
    }
}

/// A row that holds when `problems` is empty; its evidence is `ok_text`
/// then, else the problems joined by `; `.
fn row_of_problems(name: VerdictRow, problems: Vec<String>, ok_text: String) -> GateRow {
    if problems.is_empty() {
        row(name, true, ok_text)
    } else {
        row(name, false, problems.join("; "))
    }
}

/// manifest: the launched configuration equals the frozen one (GATE-4,
/// GATE-7): the daemon start, and every launched TrialConfig.
fn manifest(ctx: &RowContext<'_>) -> GateRow {
    let m = ctx.manifest;
    let mut bad = Vec::new();
    match &ctx.group_state.opened {
        None => bad.push("no daemon start recorded".to_string()),
        Some((at, opened)) => {
            let software = &m.software;
            let frozen_group = m.groups.iter().find(|x| x.name == ctx.group);
            if opened.binary_sha256 != software.bitrouter_binary_sha256 {
                bad.push(format!("binary sha256 at seq {}", at.seq));
            }
            if Some(&opened.config_sha256) != software.bitrouter_config_sha256.get(ctx.group) {
                bad.push(format!("config sha256 at seq {}", at.seq));
            }
            if frozen_group.is_none_or(|fg| {
                fg.ports != opened.ports
                    || fg.db_path != opened.db_path
                    || fg.out_dir != opened.out_dir
            }) {
                bad.push(format!("ports/paths at seq {}", at.seq));
            }
        }
    }
    let mut launched = 0;
    for (case, c) in &ctx.group_state.cases {
        let Some((at, started)) = &c.started else {
            continue;
        };
        launched += 1;
        match crate::method::trial_config::render_frozen(ctx.lineage, ctx.group, case) {
            Ok(rendered) if rendered.blake3 == started.trial_config_blake3 => {}
            Ok(_) => bad.push(format!(
                "{} launched TrialConfig {} at seq {}, not the frozen rendering",
                case.label(),
                &started.trial_config_blake3[..started.trial_config_blake3.len().min(16)],
                at.seq
            )),
            Err(e) => bad.push(format!("{}: {e}", case.label())),
        }
    }
    bad.extend(job_problems(ctx));
    bad.extend(
        ctx.cases
            .manifest_mismatches
            .iter()
            .map(|m| format!("{} {m}", Rule::Bind1)),
    );
    let text = if bad.is_empty() {
        format!("daemon start and {launched} TrialConfigs equal the frozen manifest")
    } else {
        name_some(&bad)
    };
    row(VerdictRow::Manifest, bad.is_empty(), text)
}

/// The Harbor jobs of the group against the frozen manifest: retries stay 0
/// (CASE-5, BIND-1) and the lock's Harbor version is the frozen one (BIND-7).
fn job_problems(ctx: &RowContext<'_>) -> Vec<String> {
    let frozen = &ctx.manifest.software.harbor_version;
    let mut bad = Vec::new();
    for (at, j) in &ctx.group_state.jobs {
        let retries = job_retries(j);
        if !retries.is_empty() {
            bad.push(format!(
                "{} job {} (seq {}) shows Harbor retries, which must stay 0 ({}): {}",
                Rule::Bind1,
                j.job_name,
                at.seq,
                Rule::Case5,
                retries.join(", ")
            ));
        }
        if let Some(v) = j.harbor_version.as_ref().filter(|v| *v != frozen) {
            bad.push(format!(
                "{} job {} (seq {}) ran Harbor {v}, the lineage froze Harbor {frozen}",
                Rule::Bind7,
                j.job_name,
                at.seq
            ));
        }
    }
    bad
}

/// secrets: no credential anywhere in the group's evidence (the fold's
/// findings; a replay that did not scan does not hold).
fn secrets(ctx: &RowContext<'_>) -> GateRow {
    let key = GroupRef {
        lineage: ctx.lineage.frozen.lineage.clone(),
        group: ctx.group.to_string(),
    };
    let found = ctx
        .state
        .secret_findings
        .get(&key)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut named: Vec<String> = found
        .iter()
        .map(|f| format!("seq {} {} ({})", f.seq, f.field, f.shape))
        .collect();
    // Version 2 wrote "quotes a <shape>", which sealed verdicts attest.
    let quotes = if ctx.version >= 3 {
        "quotes a credential of shape"
    } else {
        "quotes a"
    };
    named.extend(ctx.group_state.leaks.iter().map(|(at, f)| {
        format!(
            "{} seq {}: {} field {} {quotes} {} ({})",
            Rule::Bind8,
            at.seq,
            f.file,
            f.field,
            f.shape,
            f.redacted
        )
    }));
    // A file refused for a credential-shaped value (FREEZE-2) leaked it as
    // much as one recorded with its findings (BIND-8, BIND-12).
    named.extend(
        ctx.group_state
            .refused_files
            .iter()
            .filter(|(_, f)| f.rule == Rule::Freeze2.as_str())
            .map(|(at, f)| {
                format!(
                    "{} seq {}: {} was refused for a credential shape ({})",
                    Rule::Bind12,
                    at.seq,
                    f.path,
                    Rule::Freeze2
                )
            }),
    );
    let text = if !named.is_empty() {
        name_some(&named)
    } else if ctx.state.scan_secrets {
        "no credential shape in the group's evidence".to_string()
    } else {
        "not scanned".to_string()
    };
    row(
        VerdictRow::Secrets,
        named.is_empty() && ctx.state.scan_secrets,
        text,
    )
}

/// attempts: every identity started, once, and none outside the manifest.
fn attempts(ctx: &RowContext<'_>) -> GateRow {
    let cases = ctx.cases;
    let mut bad = Vec::new();
    if !cases.missing.is_empty() {
        bad.push(format!("never started: {}", name_some(&cases.missing)));
    }
    if !cases.started_twice.is_empty() {
        bad.push(format!(
            "started more than once: {}",
            name_some(&cases.started_twice)
        ));
    }
    if !cases.foreign.is_empty() {
        bad.push(format!(
            "not identities of the manifest: {}",
            name_some(&cases.foreign)
        ));
    }
    let ok_text = format!(
        "{} identities: {} terminal_valid + {} validated skips cover the manifest",
        ctx.identities.len(),
        cases.valid,
        cases.skips.len()
    );
    row_of_problems(VerdictRow::Attempts, bad, ok_text)
}

/// trial result: no case has more than one TrialResult, every result lies
/// in its launch window (BIND-1), and a canary has a terminal_valid case
/// (BIND-4).
fn trial_result(ctx: &RowContext<'_>) -> GateRow {
    let cases = ctx.cases;
    let mut bad = Vec::new();
    if !cases.multi_results.is_empty() {
        bad.push(format!(
            "more than one TrialResult: {}",
            name_some(&cases.multi_results)
        ));
    }
    if !cases.window_mismatches.is_empty() {
        bad.push(format!(
            "{} outside the launch window: {}",
            Rule::Bind1,
            name_some(&cases.window_mismatches)
        ));
    }
    if is_canary(ctx.group) && cases.valid == 0 {
        bad.push(format!(
            "{}: a canary proves the path only with a terminal_valid case (a complete TrialResult and reward); it has none",
            Rule::Bind4
        ));
    }
    let ok_text = format!(
        "{} accepted cases with exactly one TrialResult; none valid for {} skips",
        cases.valid,
        cases.skips.len()
    );
    row_of_problems(VerdictRow::TrialResult, bad, ok_text)
}

/// runtime: every non-skipped started case is terminal_valid, and every
/// attempted skip is valid (CASE-6).
fn runtime(ctx: &RowContext<'_>) -> GateRow {
    let cases = ctx.cases;
    let mut bad = Vec::new();
    if !cases.not_terminal.is_empty() {
        bad.push(format!("not terminal: {}", name_some(&cases.not_terminal)));
    }
    if !cases.invalid.is_empty() {
        bad.push(format!("terminal_invalid: {}", name_some(&cases.invalid)));
    }
    if !cases.bad_skips.is_empty() {
        bad.push(format!(
            "invalid security-policy skip: {}",
            name_some(&cases.bad_skips)
        ));
    }
    let ok_text = "every non-skipped started case is terminal_valid".to_string();
    row_of_problems(VerdictRow::Runtime, bad, ok_text)
}

/// requests: T = U (= D when decisions are required, = R when outcomes
/// were supplied), each id once, no weak attribution (JOIN-1, JOIN-4).
fn requests(ctx: &RowContext<'_>) -> GateRow {
    let j = ctx.joins;
    let mut bad = Vec::new();
    for (set, ids) in &j.duplicates {
        bad.push(format!("duplicate {set} ids: {}", name_some(ids)));
    }
    if !j.missing_usage.is_empty() || !j.extra_usage.is_empty() {
        bad.push(format!(
            "T != U (missing usage {}, extra usage {})",
            j.missing_usage.len(),
            j.extra_usage.len()
        ));
    }
    if j.decisions_required && (!j.missing_decisions.is_empty() || !j.extra_decisions.is_empty()) {
        bad.push(format!(
            "T != D (missing {}, extra {})",
            j.missing_decisions.len(),
            j.extra_decisions.len()
        ));
    }
    if !j.decisions_required && !j.extra_decisions.is_empty() {
        bad.push(format!(
            "decisions for unknown requests: {}",
            name_some(&j.extra_decisions)
        ));
    }
    if j.outcomes_supplied && (!j.missing_outcomes.is_empty() || !j.extra_outcomes.is_empty()) {
        bad.push(format!(
            "T != R (missing {}, extra {})",
            j.missing_outcomes.len(),
            j.extra_outcomes.len()
        ));
    }
    bad.extend(empty_or_unproven_requests(ctx));
    if !j.weak_attribution.is_empty() {
        bad.push(format!(
            "weak attribution (JOIN-4) at seqs {}",
            name_some(&j.weak_attribution)
        ));
    }
    let decisions = if j.decisions_required {
        format!(" = |D| = {}", j.decisions)
    } else {
        String::new()
    };
    let outcomes = if j.outcomes_supplied {
        format!(" = |R| = {}", j.outcomes)
    } else {
        String::new()
    };
    let ok_text = format!(
        "|T| = |U| = {}{decisions}{outcomes}, each id once",
        j.traces
    );
    row_of_problems(VerdictRow::Requests, bad, ok_text)
}

/// BIND-4: started cases with no request at all (an empty set is not
/// agreement), and a canary without one request traced, decided, settled
/// `computed` from an authoritative charge and joined by request id.
fn empty_or_unproven_requests(ctx: &RowContext<'_>) -> Option<String> {
    let g = ctx.group_state;
    let started = g.cases.values().filter(|c| c.started.is_some()).count();
    if ctx.joins.traces == 0 && started > 0 {
        return Some(format!(
            "{}: no request recorded for {started} started cases; an empty set is not agreement",
            Rule::Bind4
        ));
    }
    if !is_canary(ctx.group) {
        return None;
    }
    let j = ctx.joins;
    let proven = ctx.settlement.requests.iter().any(|s| {
        let r = g.requests.get(s.request_id.as_str());
        let decided = !j.decisions_required
            || j.decision_of
                .get(&s.request_id)
                .is_some_and(|d| d.len() == 1);
        r.is_some_and(|r| r.traces.len() == 1 && r.usage.len() == 1)
            && decided
            && s.state == SettlementState::Computed
            && s.receipt_micro_usd.is_some()
    });
    (!proven).then(|| {
        format!(
            "{}: a canary proves the path only with a request traced, decided, settled computed from an authoritative charge and joined by request id; it has none",
            Rule::Bind4
        )
    })
}

/// decisions: one decision per request, when the group's schema emits
/// decisions.
fn decisions(ctx: &RowContext<'_>) -> GateRow {
    let j = ctx.joins;
    let multi: Vec<&String> = j
        .decision_of
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| k)
        .collect();
    let ok = !j.decisions_required
        || (j.missing_decisions.is_empty() && multi.is_empty() && j.weak_attribution.is_empty());
    let text = if !j.decisions_required {
        "the frozen control schema emits no decisions".to_string()
    } else if ok {
        format!(
            "one decision per request ({} by {})",
            j.decisions, j.decision_key
        )
    } else {
        format!(
            "without a decision: {}; more than one: {}",
            name_some(&j.missing_decisions),
            name_some(&multi)
        )
    };
    row(VerdictRow::Decisions, ok, text)
}

/// cost join: each trace matches exactly one usage row, and their outcomes
/// agree.
fn cost_join(ctx: &RowContext<'_>) -> GateRow {
    let j = ctx.joins;
    let usage_duplicates = j.duplicates.get("usage").map_or(0, Vec::len);
    let mut bad = Vec::new();
    if !j.missing_usage.is_empty() {
        bad.push(format!(
            "traces without usage: {}",
            name_some(&j.missing_usage)
        ));
    }
    if !j.extra_usage.is_empty() {
        bad.push(format!(
            "usage without a trace: {}",
            name_some(&j.extra_usage)
        ));
    }
    if usage_duplicates > 0 {
        bad.push(format!("{usage_duplicates} ids with several usage rows"));
    }
    if !j.outcome_disagreements.is_empty() {
        bad.push(format!(
            "trace and usage outcomes disagree: {}",
            name_some(&j.outcome_disagreements)
        ));
    }
    let ok_text = format!("each of {} traces matches exactly one usage row", j.traces);
    row_of_problems(VerdictRow::CostJoin, bad, ok_text)
}

/// reward join: request outcomes one-to-one with traces, task outcomes by
/// case (JOIN-3). Without request-scoped outcomes their lists are empty.
fn reward_join(ctx: &RowContext<'_>) -> GateRow {
    let j = ctx.joins;
    let outcome_duplicates = j.duplicates.get("outcomes").map_or(0, Vec::len);
    let mut bad = Vec::new();
    if !j.missing_outcomes.is_empty() {
        bad.push(format!(
            "traces without an outcome: {}",
            name_some(&j.missing_outcomes)
        ));
    }
    if !j.extra_outcomes.is_empty() {
        bad.push(format!(
            "outcomes without a trace: {}",
            name_some(&j.extra_outcomes)
        ));
    }
    if outcome_duplicates > 0 {
        bad.push(format!("{outcome_duplicates} ids with several outcomes"));
    }
    if !j.unmatched_task_outcomes.is_empty() {
        bad.push(format!(
            "task outcomes matching no case: {}",
            name_some(&j.unmatched_task_outcomes)
        ));
    }
    if !ctx.planes.outcomes_on_incomplete.is_empty() {
        bad.push(format!(
            "{}, {}: outcomes joined to requests that did not complete carry no semantic credit: {}",
            Rule::Bind5,
            Rule::Plane1,
            name_some(&ctx.planes.outcomes_on_incomplete)
        ));
    }
    let ok_text = format!(
        "{} request outcomes one-to-one with traces; {} task outcomes join by case",
        j.outcomes,
        ctx.group_state.task_outcomes.len()
    );
    row_of_problems(VerdictRow::RewardJoin, bad, ok_text)
}

/// replay: the frozen route table reconstructs every decision; control
/// resolves every request to the strong route (LINEAGE-8).
fn replay(ctx: &RowContext<'_>) -> GateRow {
    if ctx.group == "control" {
        let bad = control_off_strong_route(ctx);
        let text = if bad.is_empty() {
            "every control request resolved to the frozen strong route".to_string()
        } else {
            name_some(&bad)
        };
        return row(VerdictRow::Replay, bad.is_empty(), text);
    }
    let bad = decisions_off_route_table(ctx);
    let text = if bad.is_empty() {
        "every decision agrees with the frozen route table".to_string()
    } else {
        name_some(&bad)
    };
    row(VerdictRow::Replay, bad.is_empty(), text)
}

/// Control requests served by anything but the frozen strong route.
fn control_off_strong_route(ctx: &RowContext<'_>) -> Vec<String> {
    let strong = ctx.manifest.route(Tier::Strong);
    let mut bad = Vec::new();
    for (id, r) in &ctx.group_state.requests {
        if let Some((_, u)) = r.usage.first() {
            if strong.is_none_or(|s| s.provider != u.provider_id || s.model != u.model_id) {
                bad.push(format!("{id} served by {}:{}", u.provider_id, u.model_id));
            }
        }
    }
    bad
}

/// Traced requests whose (first) decision the frozen route table does not
/// reconstruct: no decision, an unknown tier, or another model.
fn decisions_off_route_table(ctx: &RowContext<'_>) -> Vec<String> {
    let j = ctx.joins;
    let g = ctx.group_state;
    let mut bad = Vec::new();
    for (id, _) in g.requests.iter().filter(|(_, r)| !r.traces.is_empty()) {
        let Some(indices) = j.decision_of.get(id.as_str()) else {
            if j.decisions_required {
                bad.push(format!("{id}: no decision to reconstruct"));
            }
            continue;
        };
        let d = &g.decisions[indices[0]].1;
        let route = d
            .selected_tier
            .as_deref()
            .and_then(|t| ctx.manifest.routes.iter().find(|r| tier_name(r.tier) == t));
        match (route, d.selected_model.as_deref()) {
            (Some(r), Some(selected)) if names_model(selected, &r.model) => {}
            (Some(r), selected) => bad.push(format!(
                "{id}: tier {} is frozen to {} but the decision selected {:?}",
                tier_name(r.tier),
                r.model,
                selected
            )),
            (None, _) => bad.push(format!(
                "{id}: selected tier {:?} is not a frozen tier",
                d.selected_tier
            )),
        }
    }
    bad
}

/// settlement: every request is computed or not_charged (SETTLE-4).
fn settlement(ctx: &RowContext<'_>) -> GateRow {
    let s = ctx.settlement;
    let bad: Vec<String> = s
        .requests
        .iter()
        .filter(|r| !r.state.accepted())
        .map(|r| {
            format!(
                "{} {:?}: {}",
                r.request_id,
                r.state,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    let text = if bad.is_empty() {
        format!("{} requests computed or not_charged", s.requests.len())
    } else {
        name_some(&bad)
    };
    row(VerdictRow::Settlement, bad.is_empty(), text)
}

/// cleanup: an audit after the close found zero residue, and the monitor's
/// peak stayed within the frozen concurrency (CLEAN-2, CASE-9).
fn cleanup(ctx: &RowContext<'_>) -> GateRow {
    let c = ctx.cleanup;
    if c.holds() {
        let text = format!(
            "audit at seq {} found zero residue; peak {} <= concurrency {}",
            c.audit_seq.unwrap_or(0),
            c.monitor_peak.unwrap_or(0),
            c.concurrency
        );
        return row(VerdictRow::Cleanup, true, text);
    }
    let mut bad = Vec::new();
    match c.audit_seq {
        None => bad.push("no cleanup audit recorded".to_string()),
        Some(seq) => {
            if !c.after_close {
                bad.push(format!(
                    "audit at seq {seq} is not after the group closed (CASE-9)"
                ));
            }
            if !c.audit_pass {
                bad.push(format!("audit at seq {seq} failed"));
            }
            if !c.residue.is_empty() {
                bad.push(format!("residue: {}", name_some(&c.residue)));
            }
        }
    }
    match c.monitor_peak {
        None => bad.push("no monitor sample recorded".into()),
        Some(peak) if peak > c.concurrency => {
            bad.push(format!("peak {peak} > concurrency {}", c.concurrency))
        }
        Some(_) => {}
    }
    row(VerdictRow::Cleanup, false, bad.join("; "))
}

/// safety limit: the lineage's spend through this group is within the stop
/// limit, and a scored round's score is not below the severe-quality stop
/// (VERDICT-3).
fn safety_limit(ctx: &RowContext<'_>) -> GateRow {
    let limits = &ctx.manifest.limits;
    let spend = lineage_spend(ctx.lineage, ctx.group);
    let mut bad = Vec::new();
    if spend > limits.spend_stop_micro_usd {
        bad.push(format!(
            "lineage spend {spend} micro-USD crossed the stop limit {}",
            limits.spend_stop_micro_usd
        ));
    }
    let total = ctx.identities.len() as u64;
    let passed = ctx.cases.passed;
    if !is_non_evaluation(ctx.group) && ctx.group != "control" && total > 0 {
        // passed/total*100 < stop  <=>  passed*100 < stop*total (exact).
        let score_x100 = Dec::from(passed.saturating_mul(100));
        let below = limits
            .severe_quality_stop_pct
            .checked_mul(Dec::from(total))
            .is_ok_and(|limit| score_x100 < limit);
        if below {
            bad.push(format!(
                "score {passed}/{total} is below the severe-quality stop of {}%",
                limits.severe_quality_stop_pct.canonical()
            ));
        }
    }
    let ok_text = format!(
        "lineage spend {spend} micro-USD within {}",
        limits.spend_stop_micro_usd
    );
    row_of_problems(VerdictRow::SafetyLimit, bad, ok_text)
}
