//! Section 6: paired per-case deltas of every round against its control on
//! the exact intersection, with the frozen bootstrap interval for
//! replicated runs (REPORT-4). q = 1 when the case passed, else 0.

use std::collections::BTreeMap;

use super::{excluded_of, Ctx, GroupEval};
use crate::report::bootstrap::{bootstrap_interval, Interval};
use crate::report::lookup::case_passed;
use crate::report::model::{PairLine, Paired};
use crate::report::numbers::Ratio;

/// q per original case identity (`task/trial`) of a group.
fn outcomes(group: &GroupEval<'_>) -> BTreeMap<String, u8> {
    group
        .verdict
        .as_ref()
        .map_or_else(BTreeMap::new, |verdict| {
            verdict
                .cases
                .iter()
                .filter(|case| case.case.replacement == 0)
                .map(|case| (case.case.label(), u8::from(case_passed(case))))
                .collect()
        })
}

/// The interval of a round's deltas, or why there is none.
struct IntervalOutcome {
    interval: Option<Interval>,
    note: String,
}

fn interval_of(ctx: &Ctx<'_>, deltas: &[i64], usable: bool) -> IntervalOutcome {
    let method = &ctx.manifest.method;
    let none = |note: String| IntervalOutcome {
        interval: None,
        note,
    };
    if !ctx.replicated() {
        return none(format!(
            "{} trial per case: no interval; the deltas are mechanism evidence and requests are not samples (REPORT-4)",
            ctx.manifest.cases.trials.len()
        ));
    }
    if !usable {
        return none("no interval: the round or its control is not accepted (VERDICT-2)".into());
    }
    if method.interval_resamples == 0 {
        return none("no interval: the manifest froze 0 resamples".into());
    }
    match bootstrap_interval(deltas, method.interval_seed, method.interval_resamples) {
        Some(interval) => IntervalOutcome {
            note: format!(
                "95% percentile bootstrap over {} case pairs, seed {}, {} resamples (frozen method: {})",
                interval.pairs, interval.seed, interval.resamples, method.interval_method
            ),
            interval: Some(interval),
        },
        None => none("no interval: no case pairs".into()),
    }
}

/// Section 6: one entry per round with an intersection, in target order.
pub(super) fn paired(ctx: &Ctx<'_>) -> Vec<Paired> {
    let control_outcomes = ctx.control().map(outcomes).unwrap_or_default();
    let mut paired = Vec::new();
    for round in ctx.rounds() {
        let Some(intersection) = ctx.intersections.get(&round.name) else {
            continue;
        };
        let round_outcomes = outcomes(round);
        let cases: Vec<PairLine> = intersection
            .included
            .iter()
            .map(|case| {
                let control_q = control_outcomes.get(case).copied().unwrap_or(0);
                let round_q = round_outcomes.get(case).copied().unwrap_or(0);
                PairLine {
                    case: case.clone(),
                    control_q,
                    round_q,
                    delta: round_q as i8 - control_q as i8,
                }
            })
            .collect();
        let deltas: Vec<i64> = cases.iter().map(|pair| i64::from(pair.delta)).collect();
        let delta_sum: i128 = deltas.iter().map(|delta| i128::from(*delta)).sum();
        let usable = round.accepted() && ctx.accepted_control().is_some();
        let interval = interval_of(ctx, &deltas, usable);
        paired.push(Paired {
            round: round.name.clone(),
            diagnostics_only: !usable,
            pairs: cases.len() as u64,
            improved: cases.iter().filter(|pair| pair.delta > 0).count() as u64,
            worsened: cases.iter().filter(|pair| pair.delta < 0).count() as u64,
            unchanged: cases.iter().filter(|pair| pair.delta == 0).count() as u64,
            mean_delta_pp: Ratio::new(delta_sum * 100, deltas.len() as i128, 2),
            interval: interval.interval,
            interval_note: interval.note,
            cases,
            excluded: excluded_of(intersection),
        });
    }
    paired
}
