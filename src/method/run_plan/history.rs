//! What `run` needs from the log beyond the replayed state: which evidence
//! files of a group were recorded after its close, how many receipt polls
//! each request has had (SETTLE-8), and which cleanup audits were already
//! acted on by a termination. A pure fold, fed by the caller from the
//! verified log, so a rerun after a kill continues from the ledger alone.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::schema::events::{Event, GroupRef};

/// The artifact role of one receipt poll's output (SETTLE-8).
pub const RECONCILE_ROLE: &str = "bitrouter_reconcile";

/// The evidence files `run` gathers after a group's last case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// The daemon's trace file (the group's frozen `trace_path`).
    Traces,
    /// The policy decision file (`decision_path`).
    Decisions,
    /// The benchmark outcome file (`outcome_path`).
    Outcomes,
    /// The usage rows `plan.evidence.usage_export` writes.
    Usage,
}

impl EvidenceKind {
    /// Every kind, in the order `run` ingests them.
    pub const ALL: [EvidenceKind; 4] = [
        EvidenceKind::Traces,
        EvidenceKind::Decisions,
        EvidenceKind::Outcomes,
        EvidenceKind::Usage,
    ];

    /// The name `ingest` uses for it (and its artifact role, `bitrouter_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            EvidenceKind::Traces => "traces",
            EvidenceKind::Decisions => "decisions",
            EvidenceKind::Outcomes => "outcomes",
            EvidenceKind::Usage => "usage",
        }
    }

    fn of_role(role: &str) -> Option<EvidenceKind> {
        let name = role.strip_prefix("bitrouter_")?;
        EvidenceKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The file-name key of a request's receipt polls: the request id is
/// untrusted text, so files are named by a hash of it.
pub fn poll_key(request_id: &str) -> String {
    hex::encode(&blake3::hash(request_id.as_bytes()).as_bytes()[..8])
}

/// The file name of poll `attempt` (1-based) of a request.
pub fn poll_file_name(request_id: &str, attempt: u32) -> String {
    format!("{}.attempt-{attempt:03}.json", poll_key(request_id))
}

/// A group's `run` history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunHistory {
    pub group: Option<GroupRef>,
    /// Seq of its close, if closed.
    pub closed_seq: Option<u64>,
    /// Evidence kinds whose file was recorded after the close.
    pub evidence_after_close: BTreeSet<EvidenceKind>,
    /// Receipt polls recorded, by `poll_key`.
    pub polls: BTreeMap<String, u32>,
    /// Seqs of the cleanup audits a termination acted on.
    pub terminated_audits: BTreeSet<u64>,
}

impl RunHistory {
    /// An empty history of `group`.
    pub fn new(group: GroupRef) -> RunHistory {
        RunHistory {
            group: Some(group),
            ..RunHistory::default()
        }
    }

    /// Receipt polls recorded for a request.
    pub fn polls_of(&self, request_id: &str) -> u32 {
        self.polls.get(&poll_key(request_id)).copied().unwrap_or(0)
    }

    /// Folds one verified record.
    pub fn apply(&mut self, seq: u64, event: &Event) {
        let Some(group) = &self.group else { return };
        match event {
            Event::GroupClosed(c) if &c.group == group => self.closed_seq = Some(seq),
            Event::ArtifactRecorded(a) if a.group.as_ref() == Some(group) => {
                if a.role == RECONCILE_ROLE {
                    let name = a.path.rsplit('/').next().unwrap_or_default();
                    if let Some((key, _)) = name.split_once(".attempt-") {
                        *self.polls.entry(key.to_string()).or_default() += 1;
                    }
                } else if let (Some(kind), Some(_)) =
                    (EvidenceKind::of_role(&a.role), self.closed_seq)
                {
                    self.evidence_after_close.insert(kind);
                }
            }
            Event::ResidueTerminated(t) if &t.group == group => {
                self.terminated_audits.insert(t.audit_seq);
            }
            _ => {}
        }
    }
}
