//! Decisions: a command and the current state in, the events to append or a
//! refusal naming the rule out. Pure: no I/O, no clock; the CLI gathers the
//! facts and passes them in, and appends the result under the writer lock.
//!
//! One file per verb family: `freeze` (freeze, sign-off), `group` (open,
//! close), `case` (start, resume), `evidence` (what binds to a group or a
//! started case: results, refusals, invalidations), `seal`, and `lineage`
//! (feedback, control reuse, the stop). `decide` may call the verdict (the
//! seal attests it); the verdict never calls `decide`.

mod case;
mod evidence;
mod freeze;
mod group;
mod lineage;
mod offered;
mod run;
mod seal;

pub use case::{
    case_start, launchable, render_identity, resume, scored_work_allowed, CaseStart, ResumeRow,
};
pub use evidence::{
    case_invalidate, evidence_group, evidence_refused, security_refusal, trial_result_case,
    OfferedFile,
};
pub use freeze::{
    freeze, sign_off, sign_off_by, sign_off_signed, SignedBy, SIGN_OFF_NAME_BYTES_MAX,
};
pub use group::{group_close, group_open, GroupOpen};
pub use lineage::{control_reuse, feedback, lineage_stop};
pub use offered::{
    harbor_tree_results, result_names_its_case, resume_given_is_frozen, resume_jobs_dir,
    OfferedJobsDir, OfferedTree,
};
pub use run::{fenced, fenced_by, run_lease, LeaseRequest};
pub use seal::{run_signer, seal, seal_checkpoint, seal_signer};

use crate::error::Result;
use crate::method::projections::LineageState;
use crate::schema::manifest::Group;
use crate::schema::rule::Rule;

use crate::method::refuse;

/// VERDICT-3: a stopped lineage launches nothing more.
fn not_stopped(l: &LineageState) -> Result<()> {
    if let Some((at, stop)) = &l.stopped {
        return Err(refuse(
            Rule::Verdict3,
            format!(
                "lineage {:?} was stopped at seq {} (rule {}: {}); it launches nothing more",
                l.frozen.lineage, at.seq, stop.rule, stop.reason
            ),
        ));
    }
    Ok(())
}

/// LINEAGE-1: `group` is in the lineage's frozen target list; the one
/// refusal of an unknown group, whichever verb names it (exit 3).
pub fn target_group(l: &LineageState, group: &str) -> Result<()> {
    manifest_group(l, group).map(|_| ())
}

/// LINEAGE-1: `group` is in the lineage's frozen target list.
fn manifest_group<'a>(l: &'a LineageState, group: &str) -> Result<&'a Group> {
    l.frozen
        .manifest
        .public
        .groups
        .iter()
        .find(|g| g.name == group)
        .ok_or_else(|| {
            refuse(
                Rule::Lineage1,
                format!(
                    "group {} is not in the frozen target list {:?} of lineage {:?}",
                    crate::schema::secrets::echo_name(group),
                    l.frozen.manifest.public.group_names(),
                    l.frozen.lineage
                ),
            )
        })
}

#[cfg(test)]
mod tests;
