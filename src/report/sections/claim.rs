//! Sections 1 and 2: the hypothesis, class, allowed and refused claims and
//! tolerances (CLASS-2, CLASS-5), and the tuning/held-out role (LINEAGE-7).

use crate::schema::manifest::{ManifestFile, RunClass, RunRole};

use super::basis::CostBasis;
use super::Ctx;
use crate::method::verdict::Series;
use crate::report::model::{Category, Claim, DecisionCounts, GroupRow, Role, RoundCheck};

/// Section 1, with the claims the report refuses.
pub(super) fn claim(ctx: &Ctx<'_>, refused_claims: Vec<String>) -> Claim {
    let manifest = ctx.manifest;
    let method = &manifest.method;
    Claim {
        hypothesis: manifest.run.hypothesis.clone(),
        run_class: manifest.run.class.as_str().into(),
        tasks: manifest.cases.tasks.len() as u64,
        trials_per_task: manifest.cases.trials.len() as u64,
        cases_per_group: ctx.cases_per_group,
        allowed_claim: allowed_claim(manifest),
        score_name: score_name(manifest.run.class).into(),
        claim_scope: claim_scope(manifest),
        refused_claims,
        quality_tolerance_pp: method.quality_tolerance_pct.canonical(),
        cost_tolerance_pct: method.cost_tolerance_pct.canonical(),
        interval_method: method.interval_method.clone(),
        interval_seed: method.interval_seed,
        interval_resamples: method.interval_resamples,
    }
}

/// What the run class allows the report to claim (CLASS-2).
pub(crate) fn allowed_claim(manifest: &ManifestFile) -> String {
    let tasks = manifest.cases.tasks.len();
    let trials = manifest.cases.trials.len();
    match manifest.run.class {
        RunClass::Canary => "canary (non-evaluation): the path works end to end; nothing about quality or cost (CLASS-2)".into(),
        RunClass::MechanismIteration => format!(
            "mechanism iteration ({tasks} predeclared tasks x {trials} trial): evidence that the routing mechanism works on these tasks, never a public score (CLASS-2)"
        ),
        RunClass::ReplicatedExperiment => format!(
            "replicated experiment ({tasks} tasks x {trials} trials): paired per-case deltas with the predeclared 95% interval on these tasks; not a reproducible Terminal-Bench result, which only the full 89 x 5 run is (CLASS-2)"
        ),
        RunClass::PublicReproduction => format!(
            "public reproduction ({tasks} tasks x {trials} trials): a reproducible Terminal-Bench {} result; the official score is over N = {} with skips as 0 (CLASS-2, REPORT-1)",
            manifest.benchmark.version,
            tasks * trials
        ),
    }
}

/// What `passed / N x 100` is called in a report of this class: the
/// "official score" only where the class yields a public, reproducible
/// result (CLASS-2); elsewhere the same number over the same official
/// denominator (REPORT-1) is the "score over N".
pub(crate) fn score_name(class: RunClass) -> &'static str {
    match class {
        RunClass::PublicReproduction => "official score",
        _ => "score over N",
    }
}

/// What every claim of the report, the go/no-go line first, speaks for:
/// the class's allowed claim in a few words (CLASS-2), so no line of the
/// report says more or less than section 1.
pub(crate) fn claim_scope(manifest: &ManifestFile) -> String {
    let tasks = manifest.cases.tasks.len();
    let trials = manifest.cases.trials.len();
    match manifest.run.class {
        RunClass::Canary => "as a canary: the path works end to end; no quality or cost claim".into(),
        RunClass::MechanismIteration => "as mechanism evidence on these tasks, not a public score".into(),
        RunClass::ReplicatedExperiment => format!(
            "as a replicated experiment on these {tasks} tasks x {trials} trials: paired per-case deltas with the predeclared 95% interval, not a reproducible Terminal-Bench result"
        ),
        RunClass::PublicReproduction => format!(
            "as a reproducible Terminal-Bench {} result over N = {}",
            manifest.benchmark.version,
            tasks * trials
        ),
    }
}

/// Section 2.
pub(super) fn role(ctx: &Ctx<'_>) -> Role {
    let manifest = ctx.manifest;
    Role {
        role: manifest.run.role.as_str().into(),
        tuning_tasks: manifest.method.tuning_tasks.clone(),
        held_out_tasks: manifest.method.held_out_tasks.clone(),
        note: match manifest.run.role {
            RunRole::Tuning => "the policy learns from these tasks between rounds; the rounds are never held-out generalization (CLASS-2, LINEAGE-7)".into(),
            RunRole::HeldOut => "a frozen policy evaluated without learning; no held-out reward is applied (LINEAGE-7)".into(),
        },
    }
}

/// The claims this report refuses, and why (CLASS-2, CLASS-5, VERDICT-2):
/// by class, role and basis, for every rejected group and every round
/// (`checks` in round order), then the lineage-wide ones.
pub(super) fn refused_claims(
    ctx: &Ctx<'_>,
    rows: &[GroupRow],
    decisions: &[DecisionCounts],
    checks: &[RoundCheck],
) -> Vec<String> {
    let mut refused = refused_by_class_role_and_basis(ctx);
    for group in ctx.evaluation_groups().filter(|group| group.rejected()) {
        refused.push(format!(
            "any quality or cost claim from {} ({}): diagnostics only (VERDICT-2)",
            group.name,
            group.status()
        ));
    }
    for check in checks {
        let row = super::row_of(rows, &check.round);
        let decisions = decisions.iter().find(|counts| counts.group == row.group);
        refused.extend(refused_for_round(ctx, row, check, decisions));
    }
    if ctx
        .lineage
        .groups
        .values()
        .any(|group| group.feedback.is_some())
    {
        refused.push("learning from a production reward source: feedback came from benchmark verifier rewards, so this is reward-supervised policy optimization (CLASS-5)".to_string());
    }
    refused.push("anything from local Docker, direct probes or fixtures (CLASS-5)".to_string());
    refused
}

fn refused_by_class_role_and_basis(ctx: &Ctx<'_>) -> Vec<String> {
    let mut refused = Vec::new();
    match ctx.manifest.run.class {
        RunClass::PublicReproduction => {}
        RunClass::ReplicatedExperiment => {
            refused.push(
                "a reproducible Terminal-Bench result: only the full 89 x 5 run is one (CLASS-2)"
                    .to_string(),
            );
            if let Some(db) = ctx.shared_policy_db() {
                refused.push(format!(
                    "a replicated experiment: {}",
                    super::go_no_go::class_4_refusal(ctx, db)
                ));
            }
        }
        RunClass::MechanismIteration => refused
            .push("a public score: one trial per case is mechanism evidence (CLASS-2)".to_string()),
        RunClass::Canary => refused.push(
            "any quality or cost claim: a canary shows only that the path works (CLASS-2)"
                .to_string(),
        ),
    }
    match ctx.manifest.run.role {
        RunRole::Tuning => {
            refused.push("held-out generalization: these are tuning rounds (CLASS-2)".to_string())
        }
        RunRole::HeldOut => {
            refused.push("broad production performance from a held-out run (CLASS-5)".to_string())
        }
    }
    match ctx.cost_basis {
        CostBasis::Series(Series::Actual) => {}
        CostBasis::None => refused.push(format!(
            "any routing-economics claim: {} (CLASS-5, SETTLE-6)",
            ctx.basis.note.trim_end_matches('.')
        )),
        _ => refused.push(format!(
            "a cash-spend claim: costs are compared on {} (CLASS-5)",
            ctx.basis.label
        )),
    }
    refused
}

/// A round's refused claims: economics without a cost, success outside the
/// quality tolerance, savings that are only fallbacks.
fn refused_for_round(
    ctx: &Ctx<'_>,
    row: &GroupRow,
    check: &RoundCheck,
    decisions: Option<&DecisionCounts>,
) -> Vec<String> {
    let mut refused = Vec::new();
    if row.accepted && row.cost.is_none() {
        refused.push(format!(
            "a routing-economics claim for {}: no cost on the basis (CLASS-5)",
            row.group
        ));
    }
    if check.quality_within == Some(false) {
        refused.push(format!(
            "success for {}: its score is more than the predeclared quality tolerance of {} points below control's (CLASS-5)",
            row.group,
            ctx.manifest.method.quality_tolerance_pct.canonical()
        ));
    }
    if let (true, Some(decisions)) = (row.comparable, decisions) {
        let non_strong = row.requests.saturating_sub(row.strong_requests);
        let fallbacks = decisions
            .by_category
            .get(Category::Fallback.as_str())
            .copied()
            .unwrap_or(0);
        let cheaper = row
            .cost_delta_pct
            .as_ref()
            .is_some_and(|delta| delta.num < 0);
        if cheaper && non_strong > 0 && fallbacks >= non_strong {
            refused.push(format!(
                "learned savings for {}: every non-strong request is a fallback, which is reliability (CLASS-5)",
                row.group
            ));
        }
    }
    refused
}
