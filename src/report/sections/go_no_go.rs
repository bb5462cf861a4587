//! Section 12: the go/no-go line from the per-round checks, and the
//! artifact and ledger checksums.

use super::{row_of, Ctx};
use crate::report::bootstrap::Interval;
use crate::report::model::{
    Checksums, Decision, Economics, Fact, GoNoGo, GroupRow, LedgerHead, Paired, RoundCheck,
    SealedLine,
};
use crate::report::numbers::{cost_within, not_below_tolerance, score_delta_pp, Ratio};
use crate::schema::money::Dec;

/// The go/no-go checks of every round, in round order.
pub(super) fn round_checks(
    ctx: &Ctx<'_>,
    rows: &[GroupRow],
    economics: &Economics,
    paired: &[Paired],
) -> Vec<RoundCheck> {
    let method = &ctx.manifest.method;
    let control_verdict = ctx.control().and_then(|control| control.verdict.as_ref());
    let control_cost = ctx.control_cost();
    ctx.rounds()
        .map(|round| {
            let row = row_of(rows, &round.name);
            let quality = (round.accepted() && ctx.accepted_control().is_some()).then(|| {
                let delta = score_delta_pp(
                    row.passed,
                    row.total,
                    control_verdict.map_or(0, |verdict| verdict.passed),
                    control_verdict.map_or(ctx.cases_per_group, |verdict| verdict.total),
                );
                let interval = paired
                    .iter()
                    .find(|p| p.round == round.name)
                    .and_then(|p| p.interval.as_ref());
                quality_check(
                    delta.as_ref(),
                    ctx.replicated().then_some(interval),
                    method.quality_tolerance_pct,
                )
            });
            let cumulative = economics
                .cumulative
                .iter()
                .find(|cumulative| cumulative.through == round.name)
                .and_then(|cumulative| cumulative.row.as_ref());
            RoundCheck {
                round: round.name.clone(),
                comparable: row.comparable,
                quality_within: quality.as_ref().map(|(ok, _)| *ok),
                quality_on: quality.map(|(_, on)| on),
                cost_within: row.comparable.then(|| {
                    cost_within(
                        row.cost.as_ref().map_or(0, |cost| cost.micro_usd),
                        control_cost.unwrap_or(0),
                        method.cost_tolerance_pct,
                    )
                }),
                cumulative_cost_within: cumulative.map(|cumulative| {
                    cost_within(
                        cumulative.policy.micro_usd,
                        cumulative.control.micro_usd,
                        method.cost_tolerance_pct,
                    )
                }),
            }
        })
        .collect()
}

/// A round's quality check (REPORT-2, REPORT-4): no more than `tolerance`
/// points below control, one-sided (a round above control passes). On a
/// replicated run (`replicated` is `Some`) by the lower end of the round's
/// 95% paired interval, which must exist; else by the official score
/// delta. Whether it holds, and the figure compared.
pub(crate) fn quality_check(
    delta: Option<&Ratio>,
    replicated: Option<Option<&Interval>>,
    tolerance: Dec,
) -> (bool, String) {
    match (replicated, delta) {
        (Some(Some(i)), _) => (
            not_below_tolerance(&i.lower_pp, tolerance),
            format!(
                "the lower end of the 95% paired interval [{}, {}] pp",
                i.lower_pp.text, i.upper_pp.text
            ),
        ),
        (Some(None), _) => (
            false,
            "no 95% paired interval for a replicated run (REPORT-4)".into(),
        ),
        (None, Some(d)) => (
            not_below_tolerance(d, tolerance),
            format!("the score delta {} pp", d.text),
        ),
        (None, None) => (false, "no score delta".into()),
    }
}

/// CLASS-4's refusal of a replicated claim whose trials share one policy
/// database.
pub(super) fn class_4_refusal(ctx: &Ctx<'_>, db: &str) -> String {
    format!(
        "the {} trials of each round share one policy database ({db}): this lineage replicates trials, not whole clean lineages each with its own fresh policy database, so it is no replicated experiment (CLASS-4)",
        ctx.manifest.cases.trials.len()
    )
}

/// Why the decision is not GO: open or rejected groups, a stop, and the
/// failing checks (the cost checks of the last round only).
fn reasons(ctx: &Ctx<'_>, rows: &[GroupRow], checks: &[RoundCheck]) -> Vec<String> {
    let mut reasons = Vec::new();
    if ctx.rounds().next().is_none() {
        reasons.push("no predeclared policy round".to_string());
    }
    for group in ctx.evaluation_groups().filter(|group| !group.accepted()) {
        reasons.push(format!("{} is {}", group.name, group.status()));
    }
    if let Some(db) = ctx.shared_policy_db() {
        reasons.push(class_4_refusal(ctx, db));
    }
    if let Some((at, stopped)) = &ctx.lineage.stopped {
        reasons.push(format!(
            "the lineage stopped at seq {} ({}): {}",
            at.seq, stopped.rule, stopped.reason
        ));
    }
    for (index, check) in checks.iter().enumerate() {
        let last = index + 1 == checks.len();
        if !check.comparable && check.quality_within.is_some() {
            reasons.push(format!(
                "{} is not comparable: {}",
                check.round,
                row_of(rows, &check.round)
                    .not_comparable
                    .clone()
                    .unwrap_or_default()
            ));
        }
        if check.quality_within == Some(false) {
            reasons.push(format!(
                "{}: quality more than the tolerance below control ({})",
                check.round,
                check.quality_on.as_deref().unwrap_or("no figure")
            ));
        }
        if last && check.cost_within == Some(false) {
            reasons.push(format!(
                "{}: steady-state cost delta above the tolerance",
                check.round
            ));
        }
        if last && check.cumulative_cost_within == Some(false) {
            reasons.push(format!(
                "{}: cumulative cost delta above the tolerance",
                check.round
            ));
        }
    }
    reasons
}

/// Section 12: the decision, its one line and the rule applied.
pub(super) fn go_no_go(ctx: &Ctx<'_>, rows: &[GroupRow], checks: Vec<RoundCheck>) -> GoNoGo {
    let quality_tolerance = ctx.manifest.method.quality_tolerance_pct.canonical();
    let cost_tolerance = ctx.manifest.method.cost_tolerance_pct.canonical();
    let score_name = super::claim::score_name(ctx.manifest.run.class);
    let rule = format!(
        "GO only when every predeclared round is sealed accepted and comparable with an accepted control (same identities, one cost basis), every round's {score_name} is no more than {quality_tolerance} points below control's (on a replicated run, the lower end of the round's 95% paired interval, REPORT-4), and the last round's cost delta and the cumulative cost delta through it are each at most {cost_tolerance}% (REPORT-2, REPORT-3, CLASS-5)",
    );
    let reasons = reasons(ctx, rows, &checks);
    let any_rejected =
        ctx.evaluation_groups().any(|group| group.rejected()) || ctx.lineage.stopped.is_some();
    let any_open = ctx.evaluation_groups().any(|group| group.sealed.is_none());
    let decision = if reasons.is_empty() {
        Decision::Go
    } else if any_open && !any_rejected {
        Decision::Undecided
    } else {
        Decision::NoGo
    };
    let scope = format!(" ({})", super::claim::claim_scope(ctx.manifest));
    let line = match decision {
        Decision::Go => format!(
            "GO{scope}: every round accepted and comparable, quality no more than {quality_tolerance} points below control, steady-state and cumulative cost within {cost_tolerance}%",
        ),
        other => format!("{other}{scope}: {}", reasons.join("; ")),
    };
    GoNoGo {
        decision,
        line,
        rule,
        rounds: checks,
        reasons,
    }
}

/// Section 12: the frozen hashes and keys, and every sealed verdict.
pub(super) fn checksums(ctx: &Ctx<'_>, hashes: Vec<Fact>, head: LedgerHead) -> Checksums {
    Checksums {
        ledger: head,
        hashes,
        sealed: ctx
            .groups
            .iter()
            .filter_map(|group| {
                let seal = group.sealed.as_ref()?;
                Some(SealedLine {
                    group: group.name.clone(),
                    seq: seal.at.seq,
                    status: seal.status.clone(),
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp(hundredths: i128) -> Ratio {
        Ratio::new(hundredths, 100, 2).unwrap()
    }

    fn interval(lower: i128, upper: i128) -> Interval {
        Interval {
            method: "bootstrap over case pairs".into(),
            seed: 7,
            resamples: 1000,
            pairs: 39,
            lower_pp: pp(lower),
            upper_pp: pp(upper),
        }
    }

    #[test]
    fn a_round_above_control_is_not_below_the_tolerance() {
        let tol: Dec = "1.2".parse().unwrap();
        let (ok, on) = quality_check(Some(&pp(568)), None, tol);
        // rule REPORT-2: one-sided, as the line now says
        assert!(ok, "REPORT-2: {on}");
        assert_eq!(on, "the score delta 5.68 pp");
        assert!(
            quality_check(Some(&pp(-120)), None, tol).0,
            "REPORT-2: at the bound"
        );
        assert!(
            !quality_check(Some(&pp(-121)), None, tol).0,
            "REPORT-2: past it"
        );
    }

    #[test]
    fn a_replicated_round_is_checked_on_its_interval_not_its_mean() {
        let tol: Dec = "1.2".parse().unwrap();
        // r2 of issue 31: the mean is within, the interval crosses -1.2 pp.
        let crossing = interval(-265, 0);
        let (ok, on) = quality_check(Some(&pp(-100)), Some(Some(&crossing)), tol);
        assert!(!ok, "REPORT-4: the interval's lower end decides: {on}");
        assert_eq!(
            on,
            "the lower end of the 95% paired interval [-2.65, 0.00] pp"
        );
        let inside = interval(-120, 150);
        assert!(
            quality_check(Some(&pp(-100)), Some(Some(&inside)), tol).0,
            "REPORT-4"
        );
        let (ok, on) = quality_check(Some(&pp(0)), Some(None), tol);
        assert!(!ok, "REPORT-4: a replicated run needs its interval: {on}");
    }
}
