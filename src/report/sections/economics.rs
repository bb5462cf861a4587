//! Section 10: steady-state and cumulative economics (REPORT-3). The
//! cumulative rows stop at the first round that is not comparable: a
//! cheap late round does not erase the cost of earlier ones.

use super::{row_of, Ctx};
use crate::report::model::{CumulativeRow, Economics, GroupRow, SteadyRow};
use crate::report::numbers::{lifecycle, Money};

/// Section 10 from the section-5 rows.
pub(super) fn economics(ctx: &Ctx<'_>, rows: &[GroupRow]) -> Economics {
    let control_cost = ctx.control_cost();
    let control_passed = rows
        .iter()
        .find(|row| row.group == super::CONTROL)
        .map_or(0, |row| row.passed);
    let mut steady = Vec::new();
    let mut cumulative = Vec::new();
    let mut round_costs: Vec<(u64, u64)> = Vec::new();
    let mut broken: Option<String> = None;
    for round in ctx.rounds() {
        let row = row_of(rows, &round.name);
        steady.push(SteadyRow {
            round: round.name.clone(),
            cost: row.cost.clone(),
            control: control_cost.map(Money::new),
            delta_pct: row.cost_delta_pct.clone(),
            note: row.not_comparable.clone(),
        });
        if broken.is_none() {
            match (row.comparable, row.cost.as_ref()) {
                (true, Some(cost)) => round_costs.push((cost.micro_usd, row.passed)),
                _ => {
                    broken = Some(format!(
                        "{} is not comparable: {}",
                        round.name,
                        row.not_comparable.as_deref().unwrap_or("no cost")
                    ))
                }
            }
        }
        let through = lifecycle((control_cost.unwrap_or(0), control_passed), &round_costs);
        cumulative.push(CumulativeRow {
            through: round.name.clone(),
            row: if broken.is_none() {
                through.last().cloned()
            } else {
                None
            },
            note: broken.clone(),
        });
    }
    Economics {
        basis: ctx.basis.label.clone(),
        steady,
        cumulative,
    }
}
