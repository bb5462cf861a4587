//! What a gate's recorded outcome decides beyond its row: the hard stop a
//! failed identity proof records (GATE-1), the start a rejected config
//! refuses (GATE-7), the validator a lineage must have frozen and run
//! (BIND-7), and the audit a termination needs (CLEAN-1). The CLI records
//! the observation and passes it in; these decide.

use crate::error::Result;
use crate::method::projections::LineageState;
use crate::method::refuse;
use crate::schema::events::{CheckRecorded, CleanupAudited, LineageStopped, Status};
use crate::schema::plan::Validator;
use crate::schema::rule::Rule;

/// GATE-1: an STS identity that differs from the frozen manifest stops a
/// lineage not yet stopped, citing the `identity_checked` record at
/// `checked_seq`; `error` says what differs (fields, never values).
pub fn identity_stop(
    l: &LineageState,
    status: Status,
    error: Option<&str>,
    checked_seq: u64,
) -> Option<LineageStopped> {
    if status != Status::Fail || l.stopped.is_some() {
        return None;
    }
    Some(LineageStopped {
        lineage: l.frozen.lineage.clone(),
        rule: Rule::Gate1.into(),
        reason: format!(
            "the STS identity differs from the frozen manifest: {}",
            error.unwrap_or("")
        ),
        evidence_seq: Some(checked_seq),
    })
}

/// GATE-7: a config the frozen validator rejected (the observation
/// recorded at `seq`) starts no case.
pub fn config_validated(obs: &CheckRecorded, config: &str, seq: u64) -> Result<()> {
    if obs.status == Status::Pass {
        return Ok(());
    }
    Err(refuse(
        Rule::Gate7,
        format!(
            "the frozen validator rejected {config} (recorded at seq {seq}); the case is not started"
        ),
    ))
}

/// BIND-7: the lineage's frozen validator; a lineage frozen as v1 has none
/// and validates nothing.
pub fn frozen_validator(l: &LineageState) -> Result<&Validator> {
    match &l.plan {
        Some(plan) => Ok(&plan.binding.validator),
        None => Err(refuse(
            Rule::Bind7,
            format!(
                "lineage {:?} was frozen as v1, without a frozen validator: freeze a manifest_version 2 lineage",
                l.frozen.lineage
            ),
        )),
    }
}

/// BIND-7: `check config` runs only the frozen validator command; a
/// command given (`expected`, not empty) must be it.
pub fn validator_command(expected: &[String], frozen: &[String]) -> Result<()> {
    if expected.is_empty() || expected == frozen {
        return Ok(());
    }
    Err(refuse(
        Rule::Bind7,
        format!(
            "check config runs only the frozen validator command {frozen:?}, not {expected:?}; nothing ran"
        ),
    ))
}

/// CLEAN-1: the latest cleanup audit of `lineage/group`, refused when
/// there is none or it could not run: only what an audit proved the run's
/// is terminated.
pub fn usable_audit(
    latest: Option<(u64, CleanupAudited)>,
    lineage: &str,
    group: &str,
) -> Result<(u64, CleanupAudited)> {
    let Some((audit_seq, audit)) = latest else {
        return Err(refuse(
            Rule::Clean1,
            format!(
                "no cleanup audit of {lineage}/{group} in the ledger: only resources an audit proved the run's are terminated; run cleanup audit first"
            ),
        ));
    };
    if let Some(e) = &audit.error {
        return Err(refuse(
            Rule::Clean1,
            format!(
                "the latest audit of {lineage}/{group} (seq {audit_seq}) could not run ({e}); run cleanup audit again"
            ),
        ));
    }
    Ok((audit_seq, audit))
}
