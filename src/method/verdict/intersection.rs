//! The exact case intersection of a round with its control (LINEAGE-9,
//! REPORT-4).

use serde::Serialize;

use crate::method::lineage::group_identities;
use crate::method::projections::{CaseStatus, LineageState, State};
use crate::schema::events::CaseRef;

/// The exact case intersection of a round with its control (LINEAGE-9,
/// REPORT-4): identities terminal-valid in both, and every excluded one
/// with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intersection {
    /// `task/trial` identities valid in both groups.
    pub included: Vec<String>,
    /// Excluded identities and why.
    pub excluded: Vec<(String, String)>,
}

/// The status of case `id` of `group` in lineage `lineage`; `not_started`
/// when the lineage or group is not in the ledger.
fn case_status(lineage: Option<&LineageState>, group: &str, id: &CaseRef) -> CaseStatus {
    lineage.map_or(CaseStatus::NotStarted, |l| {
        crate::method::binding::case_status(l, group, id)
    })
}

/// Computes the intersection of `round` (in `l`) with the control it
/// compares to (its own or the reused one).
pub fn intersection(state: &State, l: &LineageState, round: &str) -> Intersection {
    let (control_lineage, control_group) = match &l.control_reused {
        Some((_, r)) => (
            state.lineages.get(&r.control.lineage),
            r.control.group.as_str(),
        ),
        None => (Some(l), "control"),
    };
    let mut out = Intersection {
        included: Vec::new(),
        excluded: Vec::new(),
    };
    for id in group_identities(l, round) {
        let in_round = case_status(Some(l), round, &id);
        let in_control = case_status(control_lineage, control_group, &id);
        let name = id.label();
        if in_control != CaseStatus::TerminalValid {
            out.excluded
                .push((name, format!("control {}", in_control.as_str())));
        } else if in_round != CaseStatus::TerminalValid {
            out.excluded
                .push((name, format!("{round} {}", in_round.as_str())));
        } else {
            out.included.push(name);
        }
    }
    out
}
