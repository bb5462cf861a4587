//! Section 5: control and every predeclared round with its official and
//! runnable-only scores (REPORT-1), its cost on the basis and, for a round
//! comparable with its control, the deltas of REPORT-2; and the chart's
//! points.

use crate::method::projections::CaseStatus;

use super::{Ctx, GroupEval, CONTROL};
use crate::report::model::{ChartMarker, ChartPoint, GroupRow, Runnable};
use crate::report::numbers::{cost_per_success, delta_pct, score_delta_pp, score_pct, Money};

/// Section 5: one row per evaluation group, in target order.
pub(super) fn group_rows(ctx: &Ctx<'_>) -> Vec<GroupRow> {
    ctx.evaluation_groups()
        .map(|group| {
            let mut row = group_row(ctx, group);
            if group.name != CONTROL {
                compare_with_control(ctx, group, &mut row);
            }
            row
        })
        .collect()
}

/// A group's own numbers (no comparison yet).
fn group_row(ctx: &Ctx<'_>, group: &GroupEval<'_>) -> GroupRow {
    let verdict = group.verdict.as_ref();
    let summary = ctx.costs.get(&group.name);
    let passed = verdict.map_or(0, |verdict| verdict.passed);
    let total = verdict.map_or(ctx.cases_per_group, |verdict| verdict.total);
    let accepted_cases = verdict.map_or(0, |verdict| {
        verdict
            .cases
            .iter()
            .filter(|case| case.case.replacement == 0 && case.status == CaseStatus::TerminalValid)
            .count() as u64
    });
    let cost = if group.accepted() {
        ctx.cost_on_basis(group)
    } else {
        None
    };
    GroupRow {
        group: group.name.clone(),
        source: group.source(),
        status: group.status(),
        sealed_seq: group.sealed.as_ref().map(|seal| seal.at.seq),
        accepted: group.accepted(),
        diagnostics_only: !group.accepted(),
        passed,
        total,
        score_pct: verdict.and_then(|_| score_pct(passed, total)),
        runnable: Runnable {
            accepted_cases,
            skipped: verdict.map_or(0, |verdict| verdict.skipped_security_policy.len() as u64),
            score_pct: score_pct(passed, accepted_cases),
        },
        requests: summary.map_or(0, |summary| summary.requests),
        strong_requests: summary.map_or(0, |summary| summary.strong),
        cost: cost.map(Money::new),
        cost_per_success: cost.and_then(|cost| cost_per_success(cost, passed)),
        comparable: false,
        not_comparable: None,
        score_delta_pp: None,
        cost_delta_pct: None,
        strong_call_delta_pct: None,
    }
}

/// Fills a round's comparison with its control: the score delta whenever
/// both are accepted, the cost and strong-call deltas only when comparable
/// (REPORT-2, REPORT-4).
fn compare_with_control(ctx: &Ctx<'_>, round: &GroupEval<'_>, row: &mut GroupRow) {
    let cost = row.cost.as_ref().map(|cost| cost.micro_usd);
    let why = not_comparable(ctx, round, cost);
    if let Some(control) = ctx.accepted_control() {
        if round.accepted() {
            let control_verdict = control.verdict.as_ref();
            row.score_delta_pp = score_delta_pp(
                row.passed,
                row.total,
                control_verdict.map_or(0, |verdict| verdict.passed),
                control_verdict.map_or(ctx.cases_per_group, |verdict| verdict.total),
            );
        }
    }
    row.comparable = why.is_none();
    row.not_comparable = why;
    if row.comparable {
        row.cost_delta_pct = delta_pct(cost.unwrap_or(0), ctx.control_cost().unwrap_or(0));
        let control_summary = ctx
            .control()
            .and_then(|control| ctx.costs.get(&control.name));
        if let Some(control_summary) = control_summary {
            row.strong_call_delta_pct = delta_pct(row.strong_requests, control_summary.strong);
        }
    }
}

/// Why a round is not comparable with its control, or `None` when it is.
fn not_comparable(ctx: &Ctx<'_>, round: &GroupEval<'_>, cost: Option<u64>) -> Option<String> {
    let control_cost = ctx.control_cost();
    match ctx.control() {
        None => Some("no control".to_string()),
        Some(control) if !control.accepted() => Some(format!("control is {}", control.status())),
        Some(_) if !round.accepted() => Some(format!("{} is {}", round.name, round.status())),
        Some(_) => {
            let excluded = ctx
                .intersections
                .get(&round.name)
                .map_or(0, |intersection| intersection.excluded.len());
            if excluded > 0 {
                Some(format!(
                    "{excluded} {} not valid in both groups: not the same identities (REPORT-2, REPORT-4)",
                    if excluded == 1 { "identity is" } else { "identities are" }
                ))
            } else if cost.is_none() || control_cost.is_none() {
                Some(format!("no cost on the basis ({})", ctx.basis.label))
            } else if control_cost == Some(0) {
                Some("control cost is zero".to_string())
            } else {
                None
            }
        }
    }
}

/// The chart's points: every evaluation group with a verdict, its
/// official score and its cost on the basis (a diagnostic amount for a
/// group that is not accepted).
pub(super) fn chart_points(ctx: &Ctx<'_>) -> Vec<ChartPoint> {
    ctx.evaluation_groups()
        .filter_map(|group| {
            let verdict = group.verdict.as_ref()?;
            Some(ChartPoint {
                group: group.name.clone(),
                marker: if group.accepted() {
                    ChartMarker::Accepted
                } else if group.rejected() {
                    ChartMarker::Rejected
                } else {
                    ChartMarker::Unsealed
                },
                score_pct: score_pct(verdict.passed, verdict.total),
                cost: ctx.cost_on_basis(group).map(Money::new),
            })
        })
        .collect()
}
