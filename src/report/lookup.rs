//! What the report reads from a group's verdict in more than one place
//! (the sections and the tables): a request's decision and its REPORT-5
//! category, and whether a case passed.

use crate::method::projections::{CaseStatus, DecisionObs, GroupState};
use crate::method::verdict::{self, CaseLine, RequestSettlement, Verdict};
use crate::schema::money::Dec;

use super::model::{category, Category};

/// The policy decision joined to a request (the first, by the verdict's
/// decision key), if any.
pub(crate) fn decision_for<'a>(
    verdict: &Verdict,
    group: &'a GroupState,
    request: &RequestSettlement,
) -> Option<&'a DecisionObs> {
    verdict
        .joins
        .decision_of
        .get(&request.request_id)
        .and_then(|indexes| indexes.first())
        .and_then(|index| group.decisions.get(*index))
        .map(|(_seq, decision)| decision)
}

/// Whether the request was served by a model other than the one the
/// decision selected (a fallback whatever the reason).
pub(crate) fn served_other_model(decision: &DecisionObs, request: &RequestSettlement) -> bool {
    match (&decision.selected_model, &request.provider_model) {
        (Some(selected), Some((_provider, model))) => !verdict::names_model(selected, model),
        _ => false,
    }
}

/// The REPORT-5 category of a request: `no_decision` without a decision,
/// `fallback` when another model served it, else its reason's category.
pub(crate) fn request_category(
    decision: Option<&DecisionObs>,
    request: &RequestSettlement,
) -> Category {
    match decision {
        None => Category::NoDecision,
        Some(decision) if served_other_model(decision, request) => Category::Fallback,
        Some(decision) => category(&decision.reason),
    }
}

/// Whether a case line passed: terminal-valid original with reward 1.
pub(crate) fn case_passed(case: &CaseLine) -> bool {
    case.case.replacement == 0
        && case.status == CaseStatus::TerminalValid
        && case
            .reward
            .as_deref()
            .and_then(|reward| Dec::parse(reward).ok())
            .is_some_and(|reward| reward == Dec::from(1u64))
}
