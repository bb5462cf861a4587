//! The lineage-level verbs: `feedback record` (LINEAGE-3, LINEAGE-7,
//! VERDICT-2), `control reuse` (LINEAGE-6, LINEAGE-9) and `lineage stop`
//! (VERDICT-3).

use crate::error::{Error, Result};
use crate::method::decide::{manifest_group, not_stopped, refuse};
use crate::method::projections::{LineageState, State};
use crate::method::verdict::{self, VerdictStatus};
use crate::schema::events::{ControlReused, Event, FeedbackApplied, GroupRef, LineageStopped};
use crate::schema::manifest::RunRole;
use crate::schema::rule::Rule;

/// Whether `h` is 64 lowercase hex digits (an optional `sha256:` or
/// `blake3:` prefix allowed).
fn is_digest(h: &str) -> bool {
    let h = h
        .strip_prefix("sha256:")
        .or_else(|| h.strip_prefix("blake3:"))
        .unwrap_or(h);
    h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `feedback record`: reward feedback applied once after an accepted r1 or
/// r2 of a policy lineage, with the policy snapshots before and after
/// (LINEAGE-3, VERDICT-2).
pub fn feedback(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    before: &str,
    after: &str,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    for (flag, h) in [("--before", before), ("--after", after)] {
        if !is_digest(h) {
            return Err(Error::input(format!(
                "{flag} must be a policy snapshot digest: 64 lowercase hex digits (optionally sha256: or blake3:), got {h:?}"
            )));
        }
    }
    if l.frozen.manifest.public.run.role == RunRole::HeldOut {
        return Err(refuse(
            Rule::Lineage7,
            format!(
                "lineage {:?} is a held-out run: its policy is frozen and no held-out reward is applied",
                l.frozen.lineage
            ),
        ));
    }
    if group != "r1" && group != "r2" {
        return Err(refuse(
            Rule::Lineage3,
            format!("feedback is allowed only after accepted r1 and r2, never from {group:?}"),
        ));
    }
    let g = l.groups.get(group);
    match g.and_then(|g| g.sealed.as_ref()) {
        None => {
            return Err(refuse(
                Rule::Lineage3,
                format!("{group} is not sealed; feedback comes only from an accepted verdict"),
            ))
        }
        Some((at, s)) if !VerdictStatus::Accepted.is(&s.status) => {
            return Err(refuse(
                Rule::Verdict2,
                format!(
                    "{group} was sealed {} at seq {}; a rejected group never drives feedback",
                    s.status, at.seq
                ),
            ))
        }
        Some(_) => {}
    }
    if let Some((at, _)) = g.and_then(|g| g.feedback.as_ref()) {
        return Err(refuse(
            Rule::Lineage3,
            format!(
                "feedback from {group} was recorded at seq {}; it is applied once",
                at.seq
            ),
        ));
    }
    Ok(vec![Event::FeedbackApplied(FeedbackApplied {
        group: GroupRef {
            lineage: l.frozen.lineage.clone(),
            group: group.to_string(),
        },
        policy_snapshot_before: before.to_string(),
        policy_snapshot_after: after.to_string(),
    })])
}

/// LINEAGE-1, LINEAGE-6: lineage `l` targets a control, has neither reused
/// one nor opened its own, and `control` is another lineage's control group.
fn may_reuse(l: &LineageState, control: &GroupRef) -> Result<()> {
    let lineage = l.frozen.lineage.as_str();
    if !l.frozen.manifest.public.group_names().contains(&"control") {
        return Err(refuse(
            Rule::Lineage1,
            format!("lineage {lineage:?} targets no control group"),
        ));
    }
    if let Some((at, r)) = &l.control_reused {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "lineage {lineage:?} already reuses {}/{} (seq {})",
                r.control.lineage, r.control.group, at.seq
            ),
        ));
    }
    if let Some((at, _)) = l.groups.get("control").and_then(|g| g.opened.as_ref()) {
        return Err(refuse(
            Rule::Lineage6,
            format!("lineage {lineage:?} opened its own control at seq {}; control is never mixed or rerun", at.seq),
        ));
    }
    if control.group != "control" || control.lineage == lineage {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "{}/{} is not another lineage's control group",
                control.lineage, control.group
            ),
        ));
    }
    Ok(())
}

/// `control reuse`: lineage `lineage` compares against an accepted control
/// of another lineage instead of launching one, only when the control keys
/// are equal and the control's artifact checksum re-derives from the log
/// (LINEAGE-6, LINEAGE-9, FREEZE-6).
pub fn control_reuse(state: &State, lineage: &str, control: &GroupRef) -> Result<Vec<Event>> {
    let l = state.lineage(Some(lineage))?;
    not_stopped(l)?;
    may_reuse(l, control)?;
    let source = state.lineage(Some(&control.lineage))?;
    let registered = state
        .controls
        .get(&source.frozen.control_key)
        .and_then(|v| v.iter().find(|(_, r)| r.group == *control));
    let Some((reg_at, reg)) = registered else {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "{}/control is not an accepted control in the catalog",
                control.lineage
            ),
        ));
    };
    if source.frozen.control_key != l.frozen.control_key {
        return Err(refuse(
            Rule::Lineage6,
            format!(
                "control key {} of {} differs from {} of {lineage:?}: reuse needs the exact key",
                source.frozen.control_key, control.lineage, l.frozen.control_key
            ),
        ));
    }
    let artifact = verdict::control_artifact_blake3(source, "control");
    if artifact != reg.artifact_blake3 {
        return Err(refuse(
            Rule::Lineage9,
            format!(
                "the control artifact re-derived from the log is {artifact}, not the {} registered at seq {}",
                reg.artifact_blake3, reg_at.seq
            ),
        ));
    }
    Ok(vec![Event::ControlReused(ControlReused {
        lineage: lineage.to_string(),
        control: control.clone(),
        control_key: reg.control_key.clone(),
        artifact_blake3: artifact,
    })])
}

/// `lineage stop`: an operator's hard stop (VERDICT-3); evidence is kept and
/// cleanup still runs.
pub fn lineage_stop(state: &State, lineage: Option<&str>, reason: &str) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    not_stopped(l)?;
    let reason = reason.trim();
    if reason.is_empty() || reason.len() > crate::limits::NOTE_TEXT_BYTES_MAX {
        return Err(Error::input(format!(
            "--reason must be 1 to {} bytes",
            crate::limits::NOTE_TEXT_BYTES_MAX
        )));
    }
    Ok(vec![Event::LineageStopped(LineageStopped {
        lineage: l.frozen.lineage.clone(),
        rule: Rule::Verdict3.into(),
        reason: reason.to_string(),
        evidence_seq: None,
    })])
}
