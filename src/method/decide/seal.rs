//! `group seal` (VERDICT-1..4, CASE-9, SETTLE-8, LINEAGE-5, LINEAGE-6,
//! TRUST-1, TRUST-3): the decision that attests the group's verdict, what
//! follows from it, and the checkpoint of the log that ends it.

use crate::error::Result;
use crate::log::tlog::{sign_note, Checkpoint, SignerKey, VerifierKey};
use crate::method::decide::evidence::unsealed_group;
use crate::method::decide::{manifest_group, refuse};
use crate::method::projections::{At, CaseStatus, GroupState, LineageState, State};
use crate::method::verdict::{self, SettlementState, Verdict, VerdictStatus};
use crate::schema::events::{
    CheckpointRecorded, ControlRegistered, Event, GroupRef, GroupSealed, LineageStopped,
};
use crate::schema::manifest::is_non_evaluation;
use crate::schema::rule::Rule;

/// A group that may be sealed, and when it closed.
struct Closed<'a> {
    /// The group's replayed state.
    group: &'a GroupState,
    /// Its close.
    at: At,
}

/// CASE-9: the group was opened and closed, every started case is
/// terminal, and a cleanup audit follows the close.
fn ready_to_seal<'a>(l: &'a LineageState, group: &str) -> Result<Closed<'a>> {
    let m = &l.frozen.manifest.public;
    let Some(g) = l.groups.get(group).filter(|g| g.opened.is_some()) else {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} was never opened"),
        ));
    };
    let Some(closed) = g.closed else {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} is not closed: close it (`group close`) before the verdict"),
        ));
    };
    let running: Vec<String> = g
        .cases
        .iter()
        .filter(|(_, c)| c.status(&m.harbor.accepted_exceptions) == CaseStatus::Started)
        .map(|(k, _)| k.label())
        .collect();
    if !running.is_empty() {
        return Err(refuse(
            Rule::Case9,
            format!(
                "every started case must be terminal before the verdict; still started: {}",
                verdict::name_some(&running)
            ),
        ));
    }
    if g.cleanup
        .as_ref()
        .is_none_or(|(at, _)| at.seq <= closed.seq)
    {
        return Err(refuse(
            Rule::Case9,
            format!("group {group:?} has no cleanup audit after it closed (run `cleanup audit`)"),
        ));
    }
    Ok(Closed {
        group: g,
        at: closed,
    })
}

/// SETTLE-8: no request is pending while the settlement grace after the
/// close runs.
fn settlement_grace_over(l: &LineageState, closed: &Closed<'_>, now_utc_ns: u64) -> Result<()> {
    let m = &l.frozen.manifest.public;
    let (g, closed) = (closed.group, closed.at);
    let grace_ns = m.limits.settlement_grace_sec.saturating_mul(1_000_000_000);
    let in_grace = now_utc_ns < closed.utc_ns.saturating_add(grace_ns);
    let settlement = verdict::settlement(m, g);
    let pending: Vec<&str> = settlement
        .requests
        .iter()
        .filter(|r| r.state == SettlementState::Pending)
        .map(|r| r.request_id.as_str())
        .collect();
    if in_grace && !pending.is_empty() {
        return Err(refuse(
            Rule::Settle8,
            format!(
                "{} requests are pending and the settlement grace of {} s after the close (seq {}) has not elapsed: {}",
                pending.len(),
                m.limits.settlement_grace_sec,
                closed.seq,
                verdict::name_some(&pending)
            ),
        ));
    }
    Ok(())
}

/// What a sealed verdict entails: an accepted control enters the catalog
/// (LINEAGE-6); a rejected evaluation group stops the lineage (LINEAGE-5,
/// VERDICT-3).
fn consequences(l: &LineageState, gref: &GroupRef, v: &Verdict) -> Vec<Event> {
    let group = gref.group.as_str();
    let mut out = Vec::new();
    if group == "control" && v.status == VerdictStatus::Accepted {
        out.push(Event::ControlRegistered(ControlRegistered {
            group: gref.clone(),
            control_key: l.frozen.control_key.clone(),
            artifact_blake3: verdict::control_artifact_blake3(l, group),
        }));
    }
    if v.status != VerdictStatus::Accepted && !is_non_evaluation(group) && l.stopped.is_none() {
        let failing: Vec<&str> = v.failing().iter().map(|r| r.gate.as_str()).collect();
        out.push(Event::LineageStopped(LineageStopped {
            lineage: l.frozen.lineage.clone(),
            rule: Rule::Lineage5.into(),
            reason: format!(
                "{group} sealed {}: failing rows {}",
                v.status,
                failing.join(", ")
            ),
            evidence_seq: None,
        }));
    }
    out
}

/// `group seal`: attests the group's verdict, final from then on
/// (VERDICT-4). Refused unless the group was opened and closed, every
/// started case is terminal, a cleanup audit follows the close, and no
/// request is pending while the settlement grace runs (CASE-9, SETTLE-8).
/// A sealed accepted control enters the control catalog (LINEAGE-6); a
/// rejected evaluation group stops the lineage (LINEAGE-5, VERDICT-3).
/// `state` must come from a scanning replay (the secrets row).
pub fn seal(
    state: &State,
    lineage: Option<&str>,
    group: &str,
    now_utc_ns: u64,
) -> Result<Vec<Event>> {
    let l = state.lineage(lineage)?;
    manifest_group(l, group)?;
    let gref = unsealed_group(state, Some(&l.frozen.lineage), group)?;
    let closed = ready_to_seal(l, group)?;
    settlement_grace_over(l, &closed, now_utc_ns)?;
    let v = verdict::group_verdict(state, l, group);
    let mut out = vec![Event::GroupSealed(GroupSealed {
        group: gref.clone(),
        status: v.status.into(),
        rows: v.rows.clone(),
        skipped_security_policy: v.skipped_cases(),
        projection_version: v.projection_version,
    })];
    out.extend(consequences(l, &gref, &v));
    Ok(out)
}

/// TRUST-3: a seal's checkpoint is signed only with one of the lineage's
/// frozen operator keys.
pub fn seal_signer(state: &State, lineage: Option<&str>, signer: &SignerKey) -> Result<()> {
    let l = state.lineage(lineage)?;
    crate::method::trust::check_seal_signer(l, &signer.verifier())
        .map_err(|why| refuse(Rule::Trust3, format!("{why}; nothing was appended")))
}

/// TRUST-3 for `run --key`, on the first replay before anything runs (not
/// at the seal hours later): the key the seal will be signed with must be
/// one of the lineage's frozen operator keys.
pub fn run_signer(state: &State, lineage: Option<&str>, key: &VerifierKey) -> Result<()> {
    let l = state.lineage(lineage)?;
    crate::method::trust::check_seal_signer(l, key)
        .map_err(|why| refuse(Rule::Trust3, format!("--key: {why}; nothing was run")))
}

/// TRUST-1: the checkpoint record a seal appends after its events: the
/// checkpoint of every record before it (`checkpoint`, computed from the
/// log), signed with `signer` when given (checked by [`seal_signer`]).
pub fn seal_checkpoint(
    sealed: &GroupRef,
    checkpoint: &Checkpoint,
    signer: Option<&SignerKey>,
) -> Result<Event> {
    let signed = signer
        .map(|key| sign_note(&checkpoint.body(), &[key]).map(|note| (note, key)))
        .transpose()
        .map_err(|e| crate::error::Error::input(format!("cannot sign the checkpoint: {e}")))?;
    Ok(Event::CheckpointRecorded(CheckpointRecorded {
        origin: checkpoint.origin().to_string(),
        tree_size: checkpoint.size(),
        root: hex::encode(checkpoint.root()),
        note: signed.as_ref().map(|(note, _)| note.clone()),
        signer: signed.map(|(_, key)| key.verifier().encode()),
        sealed: Some(sealed.clone()),
    }))
}
