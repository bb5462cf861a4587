//! The group verdict and the projections it reads: settlement (SETTLE),
//! joins (JOIN), cleanup (CLEAN), attempts and the security-policy skip
//! (CASE-3, CASE-6), and the gate rows with their status precedence
//! (VERDICT-1). Pure functions of a replayed [`LineageState`]: no I/O, no
//! clock, no env. `group seal` attests what [`group_verdict`] returns and
//! `audit` re-derives it from the log.
//!
//! - `settlement`: each request settled (SETTLE-1..8), the series totals.
//! - `joins`: the request-id sets T, U, D, R and their differences (JOIN).
//! - `cleanup`: the cleanup audit and monitor peak (CLEAN).
//! - `skip`: the security-policy skip (CASE-6).
//! - `cases`: every case identity and the case rows' lists.
//! - `planes`: the reliability and semantic planes (PLANE-1, BIND-5).
//! - `rows`: one function per gate row, over a shared context.
//! - `lineage_view`, `control`, `intersection`: the lineage's progress, the
//!   control artifact and catalog, a round's intersection with its control.

mod cases;
mod cleanup;
mod control;
mod intersection;
mod joins;
mod lineage_view;
mod planes;
mod rows;
mod settlement;
mod skip;

use serde::Serialize;

pub use crate::schema::verdict::{VerdictRow, VerdictStatus};
pub use cases::CaseLine;
pub use cleanup::{cleanup, Cleanup};
pub use control::{control_artifact_blake3, control_catalog, CatalogEntry};
pub use intersection::{intersection, Intersection};
pub use joins::{ingress_commitment, joins, DecisionKey, Joins, INGRESS_COMMITMENT_TAG};
pub use lineage_view::{lineage_view, GroupLine, LineageView};
pub use planes::{
    classify, planes, PlaneKey, Planes, ReliabilityLine, SemanticLine, TraceOutcome, Withheld,
};
pub use settlement::{
    request_rates, settle_request, settlement, RequestSettlement, Series, Settlement,
    SettlementState,
};
pub use skip::Skip;

use crate::method::lineage::group_identities;
use crate::method::projections::{GroupState, LineageState, State};
use crate::schema::events::{CaseRef, GateRow, GroupRef};
use crate::schema::manifest::Tier;

pub use crate::limits::EVIDENCE_IDS_MAX;

/// The gate rows of method.md section 10, in the order they are shown, each
/// with the status its failure maps to (VERDICT-1).
pub const ROWS: [(VerdictRow, VerdictStatus); 13] = [
    (VerdictRow::Manifest, VerdictStatus::RejectedManifest),
    (VerdictRow::Secrets, VerdictStatus::RejectedManifest),
    (VerdictRow::Attempts, VerdictStatus::RejectedRuntime),
    (VerdictRow::TrialResult, VerdictStatus::RejectedRuntime),
    (VerdictRow::Runtime, VerdictStatus::RejectedRuntime),
    (VerdictRow::Requests, VerdictStatus::RejectedJoin),
    (VerdictRow::Decisions, VerdictStatus::RejectedJoin),
    (VerdictRow::CostJoin, VerdictStatus::RejectedJoin),
    (VerdictRow::RewardJoin, VerdictStatus::RejectedJoin),
    (VerdictRow::Replay, VerdictStatus::RejectedJoin),
    (VerdictRow::Settlement, VerdictStatus::RejectedSettlement),
    (VerdictRow::Cleanup, VerdictStatus::RejectedCleanup),
    (VerdictRow::SafetyLimit, VerdictStatus::RejectedSafetyLimit),
];

/// A group's verdict with everything behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub group: GroupRef,
    /// The terminal status (VERDICT-1).
    pub status: VerdictStatus,
    /// Every gate row, in [`ROWS`] order.
    pub rows: Vec<GateRow>,
    /// Validated security-policy skips (CASE-6).
    pub skipped_security_policy: Vec<Skip>,
    /// Every case identity of the group's manifest plus any started outside it.
    pub cases: Vec<CaseLine>,
    /// Passed trials (reward 1) over the group's N identities (REPORT-1).
    pub passed: u64,
    /// N: the group's predeclared identities.
    pub total: u64,
    pub settlement: Settlement,
    pub joins: Joins,
    pub cleanup: Cleanup,
    /// The reliability and semantic planes (PLANE-1, BIND-5).
    pub planes: Planes,
    /// The projection version that computed it.
    pub projection_version: u32,
    /// Evidence files offered to the group and refused by a rule, in log
    /// order (BIND-12).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused_files: Vec<RefusedFile>,
}

/// An evidence file a rule refused, as the verdict shows it (BIND-12):
/// what was offered and why it did not count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedFile {
    /// Seq of its `evidence_refused.v1`.
    pub seq: u64,
    /// What it was offered as.
    pub role: String,
    /// Its path as given.
    pub path: String,
    /// The case it was offered for, if a trial's.
    pub case: Option<CaseRef>,
    pub bytes: u64,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
    /// The rule that refused it.
    pub rule: String,
    pub reason: String,
}

impl RefusedFile {
    /// The refused files of a group, in log order.
    pub fn of(group_state: &GroupState) -> Vec<RefusedFile> {
        group_state
            .refused_files
            .iter()
            .map(|(at, f)| RefusedFile {
                seq: at.seq,
                role: f.role.clone(),
                path: f.path.clone(),
                case: f.case.clone(),
                bytes: f.bytes,
                blake3: f.blake3.clone(),
                rule: f.rule.clone(),
                reason: f.reason.clone(),
            })
            .collect()
    }

    /// One line: path, what it was offered as, seq, rule and reason.
    pub fn line(&self) -> String {
        let case = self
            .case
            .as_ref()
            .map_or(String::new(), |c| format!(" for {}", c.label()));
        format!(
            "{} ({}{case}, {} bytes, blake3 {}; seq {}): {}: {}",
            self.path,
            self.role,
            self.bytes,
            &self.blake3[..self.blake3.len().min(16)],
            self.seq,
            self.rule,
            self.reason
        )
    }
}

impl Verdict {
    /// The failing rows.
    pub fn failing(&self) -> Vec<&GateRow> {
        self.rows.iter().filter(|r| !r.holds).collect()
    }

    /// The skipped original identities, as sealed.
    pub fn skipped_cases(&self) -> Vec<CaseRef> {
        self.skipped_security_policy
            .iter()
            .map(|s| s.case.clone())
            .collect()
    }
}

/// The verdict of `group` of lineage `l` as of the state's seq: every gate
/// row of method.md section 10 with its evidence, and the status from the
/// first failing row in VERDICT-1's precedence. The secrets row reads the
/// fold's findings for this group (see [`State::secret_findings`]).
pub fn group_verdict(state: &State, l: &LineageState, group: &str) -> Verdict {
    group_verdict_as(
        state,
        l,
        group,
        crate::method::projections::PROJECTION_VERSION,
    )
}

/// [`group_verdict`] as projection `version` words it (one of
/// `PROJECTION_VERSION_OLDEST..=PROJECTION_VERSION`): what `audit`
/// compares a sealed verdict with, as the version it attests.
pub fn group_verdict_as(state: &State, l: &LineageState, group: &str, version: u32) -> Verdict {
    let manifest = &l.frozen.manifest.public;
    let empty = GroupState::default();
    let group_state = l.groups.get(group).unwrap_or(&empty);
    let identities = group_identities(l, group);
    let cases = cases::CaseTally::of(l, group, group_state, &identities);
    let joins = joins(manifest, group, group_state);
    let settlement = settlement(manifest, group_state);
    let cleanup = cleanup(l, group_state);
    let planes = planes(manifest, group_state, &joins, &settlement);
    let context = rows::RowContext {
        state,
        lineage: l,
        manifest,
        group,
        group_state,
        identities: &identities,
        cases: &cases,
        joins: &joins,
        settlement: &settlement,
        cleanup: &cleanup,
        planes: &planes,
        version,
    };
    let rows: Vec<GateRow> = rows::ALL.iter().map(|row| row(&context)).collect();
    // Paired with the row table: exactly its rows, in its order.
    assert!(
        rows.iter()
            .map(|r| r.gate.as_str())
            .eq(ROWS.iter().map(|(row, _)| row.as_str())),
        "the verdict's rows are not the row table's"
    );
    Verdict {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        },
        status: status_of(&rows),
        rows,
        skipped_security_policy: cases.skips,
        cases: cases.lines,
        passed: cases.passed,
        total: identities.len() as u64,
        settlement,
        joins,
        cleanup,
        planes,
        projection_version: version,
        refused_files: RefusedFile::of(group_state),
    }
}

/// VERDICT-1: the status of the first failing row in precedence order, or
/// `accepted` when every row holds.
pub fn status_of(rows: &[GateRow]) -> VerdictStatus {
    for (row, status) in ROWS {
        if rows.iter().any(|r| r.gate == row.as_str() && !r.holds) {
            return status;
        }
    }
    VerdictStatus::Accepted
}

/// Names at most [`EVIDENCE_IDS_MAX`] items, then how many more.
pub fn name_some<T: std::fmt::Display>(items: &[T]) -> String {
    let mut s: Vec<String> = items
        .iter()
        .take(EVIDENCE_IDS_MAX)
        .map(|i| i.to_string())
        .collect();
    if items.len() > EVIDENCE_IDS_MAX {
        s.push(format!("+{} more", items.len() - EVIDENCE_IDS_MAX));
    }
    s.join(", ")
}

/// Whether `selected` names `model` (`model` or `<provider>:<model>`).
pub fn names_model(selected: &str, model: &str) -> bool {
    selected == model || selected.split_once(':').is_some_and(|(_, m)| m == model)
}

/// The tier's name as decisions write it.
pub fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Strong => "strong",
        Tier::Balanced => "balanced",
        Tier::Economy => "economy",
    }
}

#[cfg(test)]
mod tests;
