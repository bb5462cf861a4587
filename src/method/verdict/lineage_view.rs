//! The lineage projection (LINEAGE-1..5): each target group's progress, the
//! group that may open next, the feedback allowed now, and whether the
//! lineage is complete or stopped.

use serde::Serialize;

use crate::method::lineage::earlier_groups_done;
use crate::method::projections::{GroupState, LineageState, State};
use crate::method::verdict::group_verdict;
use crate::schema::verdict::VerdictStatus;

/// One target group of a lineage as the log has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupLine {
    pub group: String,
    /// Seq of its daemon start.
    pub opened_seq: Option<u64>,
    /// Seq of its close.
    pub closed_seq: Option<u64>,
    /// Seq and status of its attested verdict.
    pub sealed: Option<(u64, String)>,
    /// Seq of the feedback applied from it.
    pub feedback_seq: Option<u64>,
    /// The verdict the log gives now (for an unsealed group: what a seal
    /// would attest if nothing more arrived).
    pub status_now: String,
}

impl GroupLine {
    /// Whether its attested verdict is `accepted`.
    fn sealed_accepted(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|(_, status)| VerdictStatus::Accepted.is(status))
    }
}

/// A lineage's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineageView {
    pub lineage: String,
    /// Its target groups in order.
    pub groups: Vec<GroupLine>,
    /// The group that may open next, if any (LINEAGE-1, LINEAGE-2).
    pub next_group: Option<String>,
    /// Groups whose feedback may be recorded now (LINEAGE-3).
    pub feedback_allowed: Vec<String>,
    /// Complete: every target accepted, and r2 feedback recorded when the
    /// lineage ends at r2 (LINEAGE-4).
    pub complete: bool,
    /// The hard stop, if any: (seq, rule, reason).
    pub stopped: Option<(u64, String, String)>,
    /// The control compared against: `lineage/control` and how.
    pub control: Option<String>,
}

/// One target group's line: its seqs, and its status now (attested, or
/// derived when unsealed).
fn group_line(state: &State, l: &LineageState, name: &str) -> GroupLine {
    let g: Option<&GroupState> = l.groups.get(name);
    let sealed = g
        .and_then(|g| g.sealed.as_ref())
        .map(|(at, s)| (at.seq, s.status.clone()));
    let reused = name == "control" && l.control_reused.is_some();
    let status_now = match &sealed {
        Some((_, s)) => s.clone(),
        None if reused => "reused".to_string(),
        None if g.is_none() => "not_opened".to_string(),
        None => group_verdict(state, l, name).status.into(),
    };
    GroupLine {
        group: name.to_string(),
        opened_seq: g.and_then(|g| g.opened.as_ref()).map(|(at, _)| at.seq),
        closed_seq: g.and_then(|g| g.closed).map(|at| at.seq),
        sealed,
        feedback_seq: g.and_then(|g| g.feedback.as_ref()).map(|(at, _)| at.seq),
        status_now,
    }
}

/// The lineage projection.
pub fn lineage_view(state: &State, l: &LineageState) -> LineageView {
    let names = l.frozen.manifest.public.group_names();
    let reused = l.control_reused.as_ref();
    let groups: Vec<GroupLine> = names.iter().map(|n| group_line(state, l, n)).collect();
    let next_group = groups
        .iter()
        .find(|line| {
            line.opened_seq.is_none()
                && l.stopped.is_none()
                && !(line.group == "control" && reused.is_some())
                && earlier_groups_done(l, &line.group).is_ok()
        })
        .map(|line| line.group.clone());
    let feedback_allowed = groups
        .iter()
        .filter(|line| {
            (line.group == "r1" || line.group == "r2")
                && line.feedback_seq.is_none()
                && line.sealed_accepted()
        })
        .map(|line| line.group.clone())
        .collect();
    let all_accepted = groups
        .iter()
        .all(|line| line.sealed_accepted() || (line.group == "control" && reused.is_some()));
    let last = names.last().copied().unwrap_or("");
    let feedback_done = last != "r2"
        || groups
            .iter()
            .any(|line| line.group == "r2" && line.feedback_seq.is_some());
    LineageView {
        lineage: l.frozen.lineage.clone(),
        groups,
        next_group,
        feedback_allowed,
        complete: all_accepted && feedback_done && l.stopped.is_none(),
        stopped: l
            .stopped
            .as_ref()
            .map(|(at, s)| (at.seq, s.rule.clone(), s.reason.clone())),
        control: match reused {
            Some((at, r)) => Some(format!(
                "{}/{} reused at seq {} (key {})",
                r.control.lineage, r.control.group, at.seq, r.control_key
            )),
            None if names.contains(&"control") => {
                Some(format!("{}/control (own)", l.frozen.lineage))
            }
            None => None,
        },
    }
}
