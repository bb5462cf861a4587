//! Whether a gate observation's pass/fail flag agrees with its own recorded
//! numbers (BIND-6). An observation counts from its facts, not from its
//! flag: the append guard refuses one whose flag its numbers contradict
//! (`flag_contradiction`), and `case start` re-judges every observation it
//! relies on against the frozen manifest (`method::observations`).
//!
//! Only what the record itself says is compared here (no manifest, no
//! state): a pass needs the numbers that earn it; a quota's available vCPUs
//! must be its quota minus its use, and its flag must be `available >=
//! required`.

use std::collections::BTreeMap;

use crate::schema::events::{
    CheckKind, CheckRecorded, CleanupAudited, Event, IdentityChecked, QuotaChecked, Status,
};

/// Why `event`'s flag contradicts its own numbers, or `None` when it does
/// not (and for every kind that is not a gate observation).
pub fn flag_contradiction(event: &Event) -> Option<String> {
    match event {
        Event::IdentityChecked(e) => identity(e),
        Event::QuotaChecked(e) => quota(e),
        Event::CheckRecorded(e) => check(e),
        Event::CleanupAudited(e) => cleanup(e),
        _ => None,
    }
}

fn identity(e: &IdentityChecked) -> Option<String> {
    if e.status != Status::Pass {
        return None;
    }
    if e.account.is_none() || e.principal.is_none() {
        return Some(
            "the identity proof says pass without the account and principal STS answered"
                .to_string(),
        );
    }
    e.error
        .as_ref()
        .map(|_| "the identity proof says pass and records an error".to_string())
}

/// The quota's flag from its numbers: fail on an error, else `available >=
/// required`.
pub fn quota_status(e: &QuotaChecked) -> Status {
    if e.error.is_none() && e.available_vcpu >= e.required_vcpu {
        Status::Pass
    } else {
        Status::Fail
    }
}

fn quota(e: &QuotaChecked) -> Option<String> {
    let available = e.quota_vcpu.saturating_sub(e.used_vcpu);
    if e.error.is_none() && e.available_vcpu != available {
        return Some(format!(
            "the quota check records {} vCPUs available, but its quota {} minus its use {} is {available}",
            e.available_vcpu, e.quota_vcpu, e.used_vcpu
        ));
    }
    let derived = quota_status(e);
    (derived != e.status).then(|| {
        format!(
            "the quota check says {} with {} vCPUs available against {} required",
            e.status.as_str(),
            e.available_vcpu,
            e.required_vcpu
        )
    })
}

/// A detail parsed as an integer, when present.
fn number(details: &BTreeMap<String, String>, key: &str) -> Option<Result<i64, String>> {
    details.get(key).map(|v| {
        v.parse::<i64>()
            .map_err(|_| format!("its {key} {v:?} is not a number"))
    })
}

fn check(e: &CheckRecorded) -> Option<String> {
    if e.status != Status::Pass {
        return None;
    }
    let what = format!("the {} check of {}", e.check.as_str(), e.target);
    let d = &e.details;
    if d.contains_key("error") {
        return Some(format!("{what} says pass and records an error"));
    }
    let problem = match e.check {
        CheckKind::DaemonHealth | CheckKind::ProviderSentinel | CheckKind::NetworkReachability => {
            match number(d, "http_status") {
                Some(Ok(s)) if !(200..300).contains(&s) => Some(format!("its http_status is {s}")),
                Some(Err(why)) => Some(why),
                _ => None,
            }
        }
        CheckKind::Residue => match number(d, "sandbox_count") {
            Some(Ok(n)) if n != 0 => Some(format!("it counted {n} live sandboxes")),
            Some(Err(why)) => Some(why),
            _ => None,
        },
        CheckKind::ConfigValidated => config_validated(d),
        CheckKind::BinaryHash => binary(d),
        CheckKind::CentralHost => d
            .get(crate::schema::central::keys::MISMATCHES)
            .map(|m| format!("it records differences from the frozen host: {m}")),
        CheckKind::CentralTeardown => match number(d, crate::schema::central::keys::LIVE_COUNT) {
            Some(Ok(0)) => None,
            Some(Ok(n)) => Some(format!("it counted {n} live central hosts")),
            Some(Err(why)) => Some(why),
            None => Some("it records no live_count".into()),
        },
        CheckKind::Canary | CheckKind::SourceHash => None,
    };
    problem.map(|p| format!("{what} says pass, but {p}"))
}

fn config_validated(d: &BTreeMap<String, String>) -> Option<String> {
    if d.get("timed_out").map(String::as_str) == Some("true") {
        return Some("the validation timed out".into());
    }
    if let Some(s) = d.get("signal") {
        return Some(format!("the validation was killed by signal {s}"));
    }
    match number(d, "exit_code") {
        Some(Ok(c)) if c != 0 => Some(format!("the validation exited {c}")),
        Some(Err(why)) => Some(why),
        _ => None,
    }
}

fn binary(d: &BTreeMap<String, String>) -> Option<String> {
    for (got, want) in [("sha256", "expected_sha256"), ("arch", "expected_arch")] {
        if let (Some(g), Some(w)) = (d.get(got), d.get(want)) {
            if g != w {
                return Some(format!("its {got} {g} is not the expected {w}"));
            }
        }
    }
    None
}

fn cleanup(e: &CleanupAudited) -> Option<String> {
    if e.status != Status::Pass {
        return None;
    }
    if e.error.is_some() {
        return Some("the cleanup audit says pass and records an error".to_string());
    }
    let central = e.excluded_central_instance_id.as_deref();
    let residue: Vec<&str> = e
        .found
        .iter()
        .filter(|f| !f.is_central(central))
        .map(|f| f.id.as_str())
        .collect();
    (!residue.is_empty()).then(|| {
        format!(
            "the cleanup audit says pass, but it found {} resources of the run ({})",
            residue.len(),
            residue.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::events::FoundResource;

    fn quota_obs(quota: u64, used: u64, available: u64, required: u64, status: Status) -> Event {
        Event::QuotaChecked(QuotaChecked {
            lineage: "l".into(),
            region: "us-east-1".into(),
            quota_code: "L-1216C47A".into(),
            quota_vcpu: quota,
            used_vcpu: used,
            available_vcpu: available,
            required_vcpu: required,
            status,
            error: None,
        })
    }

    // rule BIND-6: a pass with 11 vCPUs available against 12 required
    // contradicts its numbers; so does an available that is not quota - used.
    #[test]
    fn a_quota_flag_must_follow_its_numbers() {
        assert_eq!(
            flag_contradiction(&quota_obs(64, 53, 11, 12, Status::Pass)).unwrap(),
            "the quota check says pass with 11 vCPUs available against 12 required"
        );
        assert_eq!(
            flag_contradiction(&quota_obs(64, 53, 11, 12, Status::Fail)),
            None
        );
        assert_eq!(
            flag_contradiction(&quota_obs(64, 4, 60, 10, Status::Pass)),
            None
        );
        assert!(flag_contradiction(&quota_obs(64, 4, 64, 10, Status::Pass))
            .unwrap()
            .contains("minus its use 4 is 60"));
        assert!(flag_contradiction(&quota_obs(64, 4, 60, 10, Status::Fail))
            .unwrap()
            .contains("says fail"));
    }

    fn check(kind: CheckKind, details: &[(&str, &str)]) -> Event {
        Event::CheckRecorded(CheckRecorded {
            lineage: "l".into(),
            group: None,
            check: kind,
            target: "t".into(),
            status: Status::Pass,
            details: details
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    }

    // rule BIND-6
    #[test]
    fn a_pass_needs_the_numbers_that_earn_it() {
        let bad = [
            check(CheckKind::DaemonHealth, &[("http_status", "503")]),
            check(CheckKind::ProviderSentinel, &[("http_status", "429")]),
            check(CheckKind::Residue, &[("sandbox_count", "2")]),
            check(CheckKind::ConfigValidated, &[("exit_code", "1")]),
            check(CheckKind::ConfigValidated, &[("timed_out", "true")]),
            check(
                CheckKind::BinaryHash,
                &[("sha256", "aa"), ("expected_sha256", "bb")],
            ),
            check(CheckKind::Residue, &[("error", "no answer")]),
        ];
        for e in &bad {
            assert!(flag_contradiction(e).is_some(), "{e:?}");
        }
        let good = [
            check(CheckKind::DaemonHealth, &[("http_status", "200")]),
            check(CheckKind::Residue, &[("sandbox_count", "0")]),
            check(CheckKind::ConfigValidated, &[("exit_code", "0")]),
            check(CheckKind::SourceHash, &[]),
        ];
        for e in &good {
            assert_eq!(flag_contradiction(e), None, "{e:?}");
        }
        let identity = Event::IdentityChecked(IdentityChecked {
            lineage: "l".into(),
            selector: "profile:p".into(),
            region: "r".into(),
            endpoint_override: None,
            ambient_variables_ignored: vec![],
            account: None,
            principal: None,
            status: Status::Pass,
            error: None,
        });
        assert!(flag_contradiction(&identity).is_some());
        let audit = Event::CleanupAudited(CleanupAudited {
            group: crate::schema::events::GroupRef {
                lineage: "l".into(),
                group: "g".into(),
            },
            region: "r".into(),
            identity: "i".into(),
            filters: vec![],
            tracked_instance_ids: vec![],
            found: vec![FoundResource {
                resource: "volume".into(),
                id: "vol-1".into(),
                state: "available".into(),
                found_by: "run_tag".into(),
            }],
            excluded_central_instance_id: None,
            status: Status::Pass,
            error: None,
        });
        assert!(flag_contradiction(&audit).unwrap().contains("vol-1"));
    }
}
