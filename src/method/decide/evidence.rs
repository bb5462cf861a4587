//! What evidence binds to: a group that is not sealed (VERDICT-4), a case
//! started through the ledger (GATE-6, CASE-8); and the two verbs that
//! record case evidence, `case refusal` (CASE-6) and `case invalidate`
//! (CASE-3).

use crate::error::Result;
use crate::method::decide::{manifest_group, refuse};
use crate::method::lineage::in_manifest;
use crate::method::projections::{CaseState, State};
use crate::schema::events::{
    CaseInvalidated, CaseRef, Event, GroupRef, InvalidReason, RefusalClass, SecurityRefusalRecorded,
};
use crate::schema::rule::Rule;

/// A group of a frozen lineage's target list (LINEAGE-1) that is not
/// sealed (VERDICT-4: after the seal no evidence for the group is accepted).
pub(super) fn unsealed_group(
    state: &State,
    lineage: Option<&str>,
    group: &str,
) -> Result<GroupRef> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    if let Some((at, s)) = l.groups.get(group).and_then(|g| g.sealed.as_ref()) {
        return Err(refuse(Rule::Verdict4, format!(
            "group {group:?} was sealed {} at seq {}; a sealed verdict is final and takes no more evidence",
            s.status, at.seq
        )));
    }
    Ok(GroupRef {
        lineage: l.frozen.lineage.clone(),
        group: group.to_string(),
    })
}

/// The group evidence binds to: a group of a frozen lineage's target list
/// (LINEAGE-1) that is not sealed (VERDICT-4) and whose daemon start is
/// recorded (GATE-4): evidence of a group that never ran its daemon, e.g.
/// after the lineage stopped before it, belongs to no launch.
pub fn evidence_group(state: &State, lineage: Option<&str>, group: &str) -> Result<GroupRef> {
    let g = unsealed_group(state, lineage, group)?;
    let l = state.lineage(Some(&g.lineage))?;
    if l.groups.get(group).is_none_or(|x| x.opened.is_none()) {
        let stopped = l.stopped.as_ref().map_or(String::new(), |(at, s)| {
            format!(
                "; the lineage was stopped at seq {} ({}), so it never will",
                at.seq, s.rule
            )
        });
        return Err(refuse(
            Rule::Gate4,
            format!(
                "group {group:?} has no recorded daemon start (`group open`): evidence binds only to a group whose daemon ran{stopped}"
            ),
        ));
    }
    Ok(g)
}

/// A Harbor TrialResult binds to a case of the group that was started
/// through the ledger: a result for an identity never started means it was
/// launched outside the gates (GATE-6, CASE-8).
pub fn trial_result_case(state: &State, group: &GroupRef, case: &CaseRef) -> Result<()> {
    let l = state.lineage(Some(&group.lineage))?;
    if !in_manifest(l, &group.group, case) {
        return Err(refuse(
            Rule::Case8,
            format!(
                "a result for {}/{} which is not a case identity of group {:?}",
                case.task, case.trial, group.group
            ),
        ));
    }
    let started = l
        .groups
        .get(&group.group)
        .and_then(|g| g.cases.get(case))
        .and_then(|c| c.started.as_ref());
    if started.is_none() {
        return Err(refuse(
            Rule::Gate6,
            format!(
                "a result for {}/{} of group {:?}, which was never started through the ledger",
                case.task, case.trial, group.group
            ),
        ));
    }
    Ok(())
}

/// The replayed state of a started case (CASE-8).
fn started_case<'a>(state: &'a State, group: &GroupRef, case: &CaseRef) -> Result<&'a CaseState> {
    let l = state.lineage(Some(&group.lineage))?;
    l.groups
        .get(&group.group)
        .and_then(|g| g.cases.get(case))
        .filter(|c| c.started.is_some())
        .ok_or_else(|| {
            refuse(
                Rule::Case8,
                format!(
                    "{} of group {:?} was never started; evidence binds only to started cases",
                    case.label(),
                    group.group
                ),
            )
        })
}

/// `case refusal`: sanitized HTTP 403 evidence for a started case, in one of
/// the two skip classes (CASE-6). Other statuses are never skip evidence:
/// a 401/403 outside the classes stops the group (CASE-5), and 429, 5xx or a
/// timeout never qualify.
pub fn security_refusal(
    state: &State,
    group: &GroupRef,
    case: &CaseRef,
    class: RefusalClass,
    http_status: u16,
    request_id: Option<String>,
    evidence_blake3: String,
) -> Result<Vec<Event>> {
    evidence_group(state, Some(&group.lineage), &group.group)?;
    started_case(state, group, case)?;
    if http_status != 403 {
        return Err(refuse(
            Rule::Case6,
            format!("only HTTP 403 evidence can support a security-policy skip; got {http_status}"),
        ));
    }
    Ok(vec![Event::SecurityRefusalRecorded(
        SecurityRefusalRecorded {
            group: group.clone(),
            case: case.clone(),
            class,
            http_status,
            request_id,
            evidence_blake3,
        },
    )])
}

/// `case invalidate`: a started case without a TrialResult becomes
/// `terminal_invalid` on cited evidence (CASE-3, CASE-8); it stays consumed
/// and is never relaunched (CASE-2).
pub fn case_invalidate(
    state: &State,
    group: &GroupRef,
    case: &CaseRef,
    reason: InvalidReason,
    evidence_path: String,
    evidence_blake3: String,
) -> Result<Vec<Event>> {
    evidence_group(state, Some(&group.lineage), &group.group)?;
    let c = started_case(state, group, case)?;
    if let Some((at, _)) = &c.result {
        return Err(refuse(
            Rule::Case3,
            format!(
                "{} has a TrialResult at seq {}; its state follows from that result",
                case.label(),
                at.seq
            ),
        ));
    }
    if let Some((at, _)) = &c.invalidated {
        return Err(refuse(
            Rule::Case1,
            format!(
                "{} was made terminal_invalid at seq {}",
                case.label(),
                at.seq
            ),
        ));
    }
    Ok(vec![Event::CaseInvalidated(CaseInvalidated {
        group: group.clone(),
        case: case.clone(),
        reason,
        evidence_path,
        evidence_blake3,
    })])
}

/// An evidence file as an ingest offered it: what the record of its
/// refusal keeps (BIND-12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedFile {
    /// What it was offered as (an `artifact_recorded.v1` role).
    pub role: String,
    /// Its path as given.
    pub path: String,
    /// The case it was offered for, when it is a trial's file.
    pub case: Option<CaseRef>,
    /// Its size as read.
    pub bytes: u64,
    /// BLAKE3 of the bytes read, hex.
    pub blake3: String,
}

/// `reason` cut to `EVIDENCE_REFUSAL_REASON_BYTES_MAX` at a character
/// boundary, marked when cut.
fn bounded_reason(reason: &str) -> String {
    const CUT: &str = " [cut]";
    let max = crate::limits::EVIDENCE_REFUSAL_REASON_BYTES_MAX;
    if reason.len() <= max {
        return reason.to_string();
    }
    let mut end = max - CUT.len();
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &reason[..end])
}

/// BIND-12: the record of an evidence file `group` was offered and a rule
/// of the method refused, with its idempotency key; `None` when nothing is
/// to be recorded: a failure that is not a rule's refusal (bad input, the
/// environment), a ledger rule (LEDGER-*: an idempotency conflict means the
/// content is already recorded), or a group that takes no evidence (not a
/// target, never opened, sealed: VERDICT-4). The same offer refused the
/// same way again has the same key, so it is recorded once.
pub fn evidence_refused(
    state: &State,
    group: &GroupRef,
    file: &OfferedFile,
    refusal: &crate::error::Error,
) -> Option<(Event, String)> {
    let crate::error::Error::Refused { rule, message } = refusal else {
        return None;
    };
    if matches!(rule, Rule::Ledger1 | Rule::Ledger2 | Rule::Ledger3)
        || evidence_group(state, Some(&group.lineage), &group.group).is_err()
    {
        return None;
    }
    let event = crate::schema::events::EvidenceRefused {
        group: group.clone(),
        case: file.case.clone(),
        role: file.role.clone(),
        path: file.path.clone(),
        bytes: file.bytes,
        blake3: file.blake3.clone(),
        rule: rule.as_str().to_string(),
        reason: bounded_reason(message),
    };
    let mut h = blake3::Hasher::new();
    for part in [
        &event.group.lineage,
        &event.group.group,
        &event.role,
        &event.path,
        &event.blake3,
        &event.rule,
        &event.reason,
    ] {
        h.update(&(part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    let key = format!("evidence-refused:{}", h.finalize().to_hex());
    Some((Event::EvidenceRefused(event), key))
}
