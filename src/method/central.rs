//! The central BitRouter host (FREEZE-8, GATE-2, GATE-3, CLEAN-2,
//! VERDICT-3): what `central up`, `central down` and `run` do with it,
//! decided from the replayed lineage and what EC2 answered, never from the
//! clock or the world directly.
//!
//! - provision mode with `[central.launch]` (`manifest_frozen.v3`): `central
//!   up` launches it once; a rerun adopts the host its exact run and role
//!   tags find (a launch whose observation was lost to a kill), never a
//!   second; once observed, its vCPUs are in the region's use and no longer
//!   added to the quota gate's need (GATE-2); `central down` terminates it
//!   and audits by the same tags to zero.
//! - reuse mode: the frozen instance id is checked (exists, running, the
//!   frozen role tag, AMI and type) before the first group and before every
//!   wave; it is never launched or terminated.
//! - provision mode without `[central.launch]` (every v2 lineage): the host
//!   is the operator's to provision, as before; nothing here applies.

use std::collections::BTreeMap;

use crate::method::projections::{LineageState, Observation};
use crate::schema::central::{keys, CentralAction, CentralInstance};
use crate::schema::events::{CheckKind, CheckRecorded, LineageStopped, Status};
use crate::schema::manifest::{CentralMode, ManifestFile};
use crate::schema::rule::Rule;

/// The target of a `central_host` check that found no host.
pub const NO_HOST: &str = "none";

/// Whether this lineage manages its central host: reuse mode, or provision
/// mode with a frozen launch.
pub fn managed(l: &LineageState) -> bool {
    match l.frozen.manifest.public.central.mode {
        CentralMode::Reuse => true,
        CentralMode::Provision => l.central_launch.is_some(),
    }
}

/// The latest observation of `kind` (lineage-wide) with its target.
fn latest(l: &LineageState, kind: CheckKind) -> Option<(&str, &Observation)> {
    l.gates
        .checks
        .iter()
        .filter(|(k, _)| k.kind == kind && k.group.is_none())
        .map(|(k, o)| (k.target.as_str(), o))
        .max_by_key(|(_, o)| o.at.seq)
}

/// The latest `central_host` observation, with its target.
pub fn latest_check(l: &LineageState) -> Option<(&str, &Observation)> {
    latest(l, CheckKind::CentralHost)
}

/// The seq of a passing `central_teardown`, once the host is gone.
pub fn torn_down(l: &LineageState) -> Option<u64> {
    latest(l, CheckKind::CentralTeardown)
        .filter(|(_, o)| o.status == Status::Pass && o.refuted.is_none())
        .map(|(_, o)| o.at.seq)
}

/// The provisioned host this lineage recorded: the first passing
/// `central_host` observation's target and seq (a later one of another id
/// is a mismatch, never a replacement).
pub fn recorded_host(l: &LineageState) -> Option<(String, u64)> {
    if l.frozen.manifest.public.central.mode != CentralMode::Provision {
        return None;
    }
    l.gates
        .checks
        .iter()
        .filter(|(k, o)| {
            k.kind == CheckKind::CentralHost
                && k.group.is_none()
                && k.target != NO_HOST
                && o.status == Status::Pass
                && o.refuted.is_none()
        })
        .min_by_key(|(_, o)| o.at.seq)
        .map(|(k, o)| (k.target.clone(), o.at.seq))
}

/// GATE-2: whether the central host's vCPUs are still to be provisioned
/// (added to a quota check's need): provision mode and no observation of
/// the launched host recorded at or before `seq` (`None`: now).
pub fn still_to_come(l: &LineageState, seq: Option<u64>) -> bool {
    if l.frozen.manifest.public.central.mode != CentralMode::Provision {
        return false;
    }
    match recorded_host(l) {
        None => true,
        Some((_, at)) => seq.is_some_and(|s| s < at),
    }
}

/// CLEAN-2: the one instance a cleanup audit may exclude: the frozen id
/// (reuse), else the provisioned one this lineage recorded (torn down or
/// not: a verdict sealed while it ran never changes).
pub fn excluded_id(l: &LineageState) -> Option<String> {
    let m = &l.frozen.manifest.public;
    m.central
        .instance_id
        .clone()
        .or_else(|| recorded_host(l).map(|(id, _)| id))
}

/// Whether `run` tears the provisioned host down now: the lineage launches
/// its own host, it is not torn down yet, and either the manifest's last
/// group is sealed or the lineage stopped (a hard stop still tears down
/// what it provisioned, VERDICT-3).
pub fn teardown_due(l: &LineageState) -> bool {
    let m = &l.frozen.manifest.public;
    let last_sealed = m
        .groups
        .last()
        .and_then(|g| l.groups.get(&g.name))
        .is_some_and(|g| g.sealed.is_some());
    m.central.mode == CentralMode::Provision
        && l.central_launch.is_some()
        && torn_down(l).is_none()
        && (last_sealed || l.stopped.is_some())
}

/// What `central up` does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Up {
    /// Observe this host again (the frozen or the recorded one).
    Check(String),
    /// Adopt the one host the exact tags found.
    Adopt(String),
    /// Launch the host.
    Launch,
}

/// Decides `central up` from the lineage and the live (not terminated)
/// instances carrying the run tag and the central role tag. Refused when
/// the lineage does not manage its host, was torn down or stopped, or the
/// tags find more than one host.
pub fn up(l: &LineageState, tagged: &[CentralInstance]) -> Result<Up, (Rule, String)> {
    let m = &l.frozen.manifest.public;
    if let Some((at, _)) = &l.stopped {
        return Err((
            Rule::Verdict3,
            format!(
                "the lineage was stopped at seq {}; nothing is launched",
                at.seq
            ),
        ));
    }
    if let Some(id) = &m.central.instance_id {
        return Ok(Up::Check(id.clone()));
    }
    if l.central_launch.is_none() {
        return Err((
            Rule::Freeze8,
            "the manifest freezes no [central.launch]: this lineage's central host is provisioned by the operator, not by benchledger".into(),
        ));
    }
    if let Some(seq) = torn_down(l) {
        return Err((
            Rule::Freeze8,
            format!("the central host was torn down at seq {seq}; a lineage provisions it once"),
        ));
    }
    if let Some((id, _)) = recorded_host(l) {
        return Ok(Up::Check(id));
    }
    match tagged {
        [] => Ok(Up::Launch),
        [one] => Ok(Up::Adopt(one.id.clone())),
        many => Err((
            Rule::Verdict3,
            format!(
                "{} live instances carry this run's tag and the central role tag ({}); exactly one central host may",
                many.len(),
                many.iter().map(|i| i.id.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// VERDICT-3: an observed central host that differs from the frozen one
/// (not a failed query, `env_error`) stops a lineage not yet stopped; the
/// stop cites the observation's mismatches.
pub fn mismatch_stop(
    l: &LineageState,
    obs: &CheckRecorded,
    env_error: bool,
) -> Option<LineageStopped> {
    let mismatches = obs.details.get(keys::MISMATCHES)?;
    if env_error || l.stopped.is_some() {
        return None;
    }
    Some(LineageStopped {
        lineage: l.frozen.lineage.clone(),
        rule: Rule::Verdict3.into(),
        reason: format!("the central host differs from the frozen one: {mismatches}"),
        evidence_seq: None,
    })
}

/// Whether `central down` has a host to tear down: `Ok(false)` for a
/// reused host or one already torn down; refused (FREEZE-8) when the
/// manifest freezes no launch, the host being the operator's.
pub fn down(l: &LineageState) -> Result<bool, (Rule, String)> {
    if l.frozen.manifest.public.central.mode == CentralMode::Reuse || torn_down(l).is_some() {
        return Ok(false);
    }
    if l.central_launch.is_none() {
        return Err((
            Rule::Freeze8,
            "the manifest freezes no [central.launch]: this lineage's central host is the operator's to tear down".into(),
        ));
    }
    Ok(true)
}

/// Each way `seen` differs from the frozen central host: its state
/// (`running`), role tag, run tag (provision), id (reuse, or the recorded
/// provisioned id), AMI, type and private address (the sandboxes' daemon
/// address, where that is an IP address).
pub fn mismatches(m: &ManifestFile, expected_id: &str, seen: &CentralInstance) -> Vec<String> {
    let c = &m.central;
    let mut out = Vec::new();
    let mut differs = |what: &str, got: &str, want: &str| {
        if got != want {
            out.push(format!("{what} {got:?}, frozen {want:?}"));
        }
    };
    differs("instance id", &seen.id, expected_id);
    differs("state", &seen.state, "running");
    differs("AMI", &seen.ami, &c.ami);
    differs("instance type", &seen.instance_type, &c.instance_type);
    let tag = |k: &str| seen.tags.get(k).map(String::as_str).unwrap_or("(none)");
    differs("role tag", tag(&m.tags.role_key), &c.role_tag_value);
    if c.mode == CentralMode::Provision {
        differs("run tag", tag(&m.tags.run_key), &m.tags.run_value);
    }
    if let Some(address) = crate::schema::central::sandbox_address(&m.central.daemon_host) {
        let got = seen.private_ip.as_deref().unwrap_or("(none)");
        // Compared as addresses: "10.0.0.1" and "10.00.0.1" never both parse.
        if got.parse::<std::net::IpAddr>().ok() != Some(address) {
            out.push(format!(
                "private address {got:?}, but every sandbox is given the frozen daemon_host {address} (GATE-3)"
            ));
        }
    }
    out
}

/// The `central_host` check recording what `action` observed: pass only
/// when the host was found and nothing differs from the frozen one.
pub fn observation(
    m: &ManifestFile,
    action: CentralAction,
    expected_id: &str,
    seen: Result<Option<&CentralInstance>, String>,
    region: &str,
) -> CheckRecorded {
    let mut details = BTreeMap::from([
        (keys::ACTION.to_string(), action.as_str().to_string()),
        (keys::REGION.to_string(), region.to_string()),
    ]);
    let (target, problems) = match seen {
        Ok(Some(i)) => {
            details.extend(i.details(&m.tags.run_key, &m.tags.role_key));
            (i.id.clone(), mismatches(m, expected_id, i))
        }
        Ok(None) => (
            NO_HOST.to_string(),
            vec![format!("no instance {expected_id} was found")],
        ),
        Err(e) => {
            details.insert(keys::ERROR.to_string(), e);
            (NO_HOST.to_string(), vec!["the query did not answer".into()])
        }
    };
    if !problems.is_empty() {
        details.insert(keys::MISMATCHES.to_string(), problems.join("; "));
    }
    CheckRecorded {
        lineage: m.lineage.clone(),
        group: None,
        check: CheckKind::CentralHost,
        target,
        status: if problems.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        details,
    }
}

/// The `central_teardown` check: pass only when TerminateInstances
/// answered and the exact-tag query finds no live central host.
pub fn teardown(
    l: &LineageState,
    id: &str,
    terminate: &str,
    live: Result<usize, String>,
    region: &str,
) -> CheckRecorded {
    let mut details = BTreeMap::from([
        (keys::REGION.to_string(), region.to_string()),
        (keys::TERMINATE.to_string(), terminate.to_string()),
    ]);
    let status = match live {
        Ok(n) => {
            details.insert(keys::LIVE_COUNT.to_string(), n.to_string());
            if n == 0 {
                Status::Pass
            } else {
                Status::Fail
            }
        }
        Err(e) => {
            details.insert(keys::ERROR.to_string(), e);
            Status::Fail
        }
    };
    CheckRecorded {
        lineage: l.frozen.lineage.clone(),
        group: None,
        check: CheckKind::CentralTeardown,
        target: id.to_string(),
        status,
        details,
    }
}

/// BIND-6: why a passing `central_host` check's own details do not earn
/// the pass against the frozen manifest (`None` when they do).
pub fn refutation(l: &LineageState, e: &CheckRecorded) -> Option<String> {
    let d = &e.details;
    let seen = CentralInstance {
        id: e.target.clone(),
        ami: d.get(keys::AMI).cloned().unwrap_or_default(),
        instance_type: d.get(keys::INSTANCE_TYPE).cloned().unwrap_or_default(),
        state: d.get(keys::STATE).cloned().unwrap_or_default(),
        tags: [
            (keys::ROLE_TAG, &l.frozen.manifest.public.tags.role_key),
            (keys::RUN_TAG, &l.frozen.manifest.public.tags.run_key),
        ]
        .into_iter()
        .filter_map(|(k, tag)| d.get(k).map(|v| (tag.clone(), v.clone())))
        .collect(),
        private_ip: d.get(keys::PRIVATE_IP).cloned(),
        ..CentralInstance::default()
    };
    let expected = match (
        &l.frozen.manifest.public.central.instance_id,
        recorded_host(l),
    ) {
        (Some(id), _) => id.clone(),
        (None, Some((id, _))) => id,
        (None, None) => e.target.clone(),
    };
    let problems = mismatches(&l.frozen.manifest.public, &expected, &seen);
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
#[path = "central_tests.rs"]
mod tests;
