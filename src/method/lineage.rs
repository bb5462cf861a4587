//! What a lineage's frozen manifest and its replayed state say about its
//! groups: their case identities (CASE-8), their routes (LINEAGE-8) and
//! whether the groups before one are done (LINEAGE-2). Pure functions of a
//! [`LineageState`], shared by `decide` (which refuses on them) and
//! `verdict` (which reports them); neither of those is imported here.

use crate::error::Result;
use crate::method::projections::LineageState;
use crate::method::refuse;
use crate::schema::events::CaseRef;
use crate::schema::manifest::{is_non_evaluation, Tier};
use crate::schema::rule::Rule;

/// The original case identities a group's frozen manifest declares, in
/// manifest order: its canary identities for a non-evaluation group, every
/// task x trial otherwise (CASE-8).
pub fn group_identities(l: &LineageState, group: &str) -> Vec<CaseRef> {
    let c = &l.frozen.manifest.public.cases;
    let case = |task: &str, trial: &str| CaseRef {
        task: task.to_string(),
        trial: trial.to_string(),
        replacement: 0,
    };
    if is_non_evaluation(group) {
        c.canaries
            .iter()
            .filter(|k| k.group == group)
            .map(|k| case(&k.task, &k.trial))
            .collect()
    } else {
        c.tasks
            .iter()
            .flat_map(|t| c.trials.iter().map(move |tr| case(&t.name, tr)))
            .collect()
    }
}

/// How many identities `group_identities` gives, without building them.
pub fn identity_count(l: &LineageState, group: &str) -> u64 {
    let c = &l.frozen.manifest.public.cases;
    if is_non_evaluation(group) {
        c.canaries.iter().filter(|k| k.group == group).count() as u64
    } else {
        (c.tasks.len() as u64).saturating_mul(c.trials.len() as u64)
    }
}

/// Whether a case identity (any replacement) belongs to a group's frozen
/// manifest (CASE-8).
pub fn in_manifest(l: &LineageState, group: &str, case: &CaseRef) -> bool {
    let original = CaseRef {
        replacement: 0,
        ..case.clone()
    };
    group_identities(l, group).contains(&original)
}

/// The routes a group's requests may take: control resolves every request to
/// the strong route (LINEAGE-8); rounds and canaries use every tier, plus
/// the strong route's non-scoring sentinel (GATE-3).
pub fn group_routes(l: &LineageState, group: &str) -> Vec<Tier> {
    if group == "control" {
        vec![Tier::Strong]
    } else {
        l.frozen
            .manifest
            .public
            .routes
            .iter()
            .map(|r| r.tier)
            .collect()
    }
}

/// LINEAGE-2: every group listed before `group` is sealed; the previous
/// evaluation round is accepted, and for r2/r3 its feedback is recorded.
/// The refusal names the first group that is not done.
pub fn earlier_groups_done(l: &LineageState, group: &str) -> Result<()> {
    let names = l.frozen.manifest.public.group_names();
    let pos = names.iter().position(|n| *n == group).unwrap_or(0);
    for earlier in &names[..pos] {
        if *earlier == "control" && l.control_reused.is_some() {
            continue; // an accepted control with an equal key (LINEAGE-6)
        }
        let g = l.groups.get(*earlier);
        if g.is_none_or(|g| g.sealed.is_none()) {
            return Err(refuse(
                Rule::Lineage2,
                format!("group {earlier:?} comes before {group:?} and is not sealed"),
            ));
        }
        if !is_non_evaluation(earlier) && !g.is_some_and(|g| g.accepted()) {
            return Err(refuse(
                Rule::Lineage2,
                format!(
                "round {earlier:?} was not accepted; a rejected group stops the lineage (LINEAGE-5)"
            ),
            ));
        }
    }
    if group == "r2" || group == "r3" {
        let prev = if group == "r2" { "r1" } else { "r2" };
        if l.groups.get(prev).is_none_or(|g| g.feedback.is_none()) {
            return Err(refuse(
                Rule::Lineage2,
                format!("{group} starts only after feedback from accepted {prev} was recorded"),
            ));
        }
    }
    Ok(())
}
