//! Names the report prints that are not one enum's `as_str`: a resolved
//! tier or `unresolved`, and the verdict rows the report sections read.

use crate::schema::manifest::Tier;
use crate::schema::verdict::VerdictRow;

/// The tier a request resolved to, or `unresolved`.
pub(crate) fn tier_or_unresolved(tier: Option<Tier>) -> String {
    tier.map_or("unresolved".to_string(), |tier| tier.as_str().to_string())
}

/// The join and settlement rows shown with the settlement audit (section
/// 8), in the verdict's order.
pub(crate) const JOIN_AND_SETTLEMENT_ROWS: [VerdictRow; 6] = [
    VerdictRow::Requests,
    VerdictRow::Decisions,
    VerdictRow::CostJoin,
    VerdictRow::RewardJoin,
    VerdictRow::Replay,
    VerdictRow::Settlement,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_and_settlement_rows_keep_the_verdicts_order() {
        let order: Vec<VerdictRow> = crate::method::verdict::ROWS
            .iter()
            .map(|(row, _)| *row)
            .filter(|row| JOIN_AND_SETTLEMENT_ROWS.contains(row))
            .collect();
        assert_eq!(order, JOIN_AND_SETTLEMENT_ROWS);
    }
}
