//! The request ids behind a failing join row, for every place the row is
//! shown (`gate`, `replay`, the report). The verdict's `requests` row
//! counts the differences of the request-id sets ("T != U (missing usage
//! 0, extra usage 1)"), and that text is what a seal stores, so it stays
//! as it is; the ids come from the verdict's joins projection, which lists
//! every one of them.

use crate::method::verdict::{Joins, VerdictRow};
use crate::schema::events::GateRow;

use super::model::{JoinDifference, OffendingIds};

/// At most this many ids of one difference are named where a failing join
/// row is shown to a person (the markdown, the terminal); the count of the
/// rest follows. The JSON forms list every id.
pub const JOIN_IDS_SHOWN: usize = 12;

/// The ids behind the counts of a failing `requests` row: each difference
/// that row counts, under the same conditions (JOIN-1). Empty for a row
/// that holds and for every other row (they name their ids themselves).
pub fn offending_ids(joins: &Joins, row: &GateRow) -> Vec<OffendingIds> {
    if row.holds || row.gate != VerdictRow::Requests.as_str() {
        return Vec::new();
    }
    let mut sets: Vec<(JoinDifference, &Vec<String>)> = Vec::new();
    if !joins.missing_usage.is_empty() || !joins.extra_usage.is_empty() {
        sets.push((JoinDifference::MissingUsage, &joins.missing_usage));
        sets.push((JoinDifference::ExtraUsage, &joins.extra_usage));
    }
    if joins.decisions_required
        && (!joins.missing_decisions.is_empty() || !joins.extra_decisions.is_empty())
    {
        sets.push((JoinDifference::MissingDecisions, &joins.missing_decisions));
        sets.push((JoinDifference::ExtraDecisions, &joins.extra_decisions));
    }
    if joins.outcomes_supplied
        && (!joins.missing_outcomes.is_empty() || !joins.extra_outcomes.is_empty())
    {
        sets.push((JoinDifference::MissingOutcomes, &joins.missing_outcomes));
        sets.push((JoinDifference::ExtraOutcomes, &joins.extra_outcomes));
    }
    sets.into_iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(set, ids)| OffendingIds {
            set,
            ids: ids.clone(),
        })
        .collect()
}

/// `extra usage: a, b; missing decisions: c, d, +3 more`: at most
/// [`JOIN_IDS_SHOWN`] ids of each difference, then how many more.
pub fn ids_text(ids: &[OffendingIds]) -> String {
    ids.iter()
        .map(|offending| {
            let mut named: Vec<&str> = offending
                .ids
                .iter()
                .take(JOIN_IDS_SHOWN)
                .map(String::as_str)
                .collect();
            let more = offending.ids.len().saturating_sub(JOIN_IDS_SHOWN);
            let more_text = format!("+{more} more");
            if more > 0 {
                named.push(&more_text);
            }
            format!("{}: {}", offending.set.words(), named.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(gate: VerdictRow) -> GateRow {
        GateRow {
            gate: gate.as_str().into(),
            holds: false,
            evidence: "T != U (missing usage 0, extra usage 1)".into(),
        }
    }

    /// rule JOIN-1: the extra usage id of a failing requests row is named,
    /// and a long list is bounded with the count of the rest.
    #[test]
    fn a_failing_requests_row_names_its_ids_bounded() {
        // rule JOIN-1
        let joins = Joins {
            extra_usage: vec!["req-extra".into()],
            decisions_required: true,
            missing_decisions: (0..15).map(|index| format!("d{index:02}")).collect(),
            ..Joins::default()
        };
        let ids = offending_ids(&joins, &failing(VerdictRow::Requests));
        let sets: Vec<JoinDifference> = ids.iter().map(|offending| offending.set).collect();
        assert_eq!(
            sets,
            [JoinDifference::ExtraUsage, JoinDifference::MissingDecisions]
        );
        assert_eq!(ids[1].ids.len(), 15, "the model keeps every id");
        let text = ids_text(&ids);
        assert!(
            text.starts_with("extra usage: req-extra; missing decisions: d00, d01,"),
            "{text}"
        );
        assert!(text.ends_with("d11, +3 more"), "{text}");
        // Other rows and holding rows get nothing.
        assert!(offending_ids(&joins, &failing(VerdictRow::CostJoin)).is_empty());
        let mut holds = failing(VerdictRow::Requests);
        holds.holds = true;
        assert!(offending_ids(&joins, &holds).is_empty());
    }

    /// Decisions are not counted where the schema emits none (control),
    /// and outcomes only where they were supplied: as the row counts them.
    #[test]
    fn only_the_differences_the_row_counts_are_listed() {
        // rule JOIN-1
        let joins = Joins {
            extra_decisions: vec!["stray".into()],
            missing_outcomes: vec!["no-outcome".into()],
            ..Joins::default()
        };
        assert!(offending_ids(&joins, &failing(VerdictRow::Requests)).is_empty());
    }
}
