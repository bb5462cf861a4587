//! Gate observations judged from their facts, not from their flags
//! (BIND-6): when an observation is folded, its recorded numbers are
//! compared with what its gate needs under the lineage's frozen manifest
//! (the identity's commitments, the GATE-2 quota formula with the frozen
//! headroom, the residue count, the health and sentinel status, the binary's
//! hash), and a config validation counts only when the frozen validator ran
//! it (BIND-7). `case start` refuses a pass that its numbers refute.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::method::projections::LineageState;
use crate::schema::events::{
    CheckKind, CheckRecorded, Event, IdentityChecked, QuotaChecked, Status,
};
use crate::schema::manifest::CentralMode;
use crate::schema::rule::Rule;

/// Why an observation's numbers do not earn the pass it records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refutation {
    /// The rule the pass fails: BIND-6 (its numbers), BIND-7 (not the
    /// frozen validator).
    pub rule: Rule,
    /// What the numbers say.
    pub why: String,
}

fn refuted(rule: Rule, why: impl Into<String>) -> Option<Refutation> {
    Some(Refutation {
        rule,
        why: why.into(),
    })
}

/// Why the numbers of a gate observation that records a pass do not earn
/// it under lineage `l`'s frozen manifest; `None` when they do, for a
/// failed observation, and for every other kind of event.
pub fn refute(l: &LineageState, event: &Event) -> Option<Refutation> {
    let passed = match event {
        Event::IdentityChecked(e) => e.status == Status::Pass,
        Event::QuotaChecked(e) => e.status == Status::Pass,
        Event::CheckRecorded(e) => e.status == Status::Pass,
        _ => false,
    };
    if !passed {
        return None;
    }
    if let Some(why) = crate::schema::observation::flag_contradiction(event) {
        return refuted(Rule::Bind6, why);
    }
    match event {
        Event::IdentityChecked(e) => identity(l, e),
        Event::QuotaChecked(e) => quota(l, e),
        Event::CheckRecorded(e) => check(l, e),
        _ => None,
    }
}

/// GATE-1: the account and principal STS answered are the frozen ones.
fn identity(l: &LineageState, e: &IdentityChecked) -> Option<Refutation> {
    let private = &l.frozen.manifest.private;
    let same = |got: &Option<crate::schema::manifest::Committed>,
                want: &crate::schema::manifest::Committed| {
        got.as_ref()
            .is_some_and(|g| g.commitment == want.commitment)
    };
    if !same(&e.account, &private.account) {
        return refuted(
            Rule::Bind6,
            "the account STS answered is not the frozen account",
        );
    }
    if !same(&e.principal, &private.principal_arn) {
        return refuted(
            Rule::Bind6,
            "the principal STS answered is not the frozen principal",
        );
    }
    None
}

/// GATE-2 and RUN-1: available (quota - use) covers the frozen formula for
/// one wave: slots to fill x sandbox vCPU + headroom, + the central host's
/// vCPU while it is still to be provisioned, with 1 <= slots <= the frozen
/// concurrency (so the recorded requirement is one of those values; the
/// run's own live sandboxes are already in the regional use).
fn quota(l: &LineageState, e: &QuotaChecked) -> Option<Refutation> {
    let m = &l.frozen.manifest.public;
    let mut allowed = Vec::new();
    for slots in 1..=u64::from(m.limits.concurrency) {
        let base = slots
            .saturating_mul(m.sandbox.vcpu)
            .saturating_add(m.aws.quota_headroom_vcpu);
        allowed.push(base);
        if m.central.mode == CentralMode::Provision {
            allowed.push(base.saturating_add(m.central.vcpu));
        }
    }
    if !allowed.contains(&e.required_vcpu) {
        return refuted(
            Rule::Bind6,
            format!(
                "it records {} vCPUs required, but the frozen GATE-2 formula gives {}",
                e.required_vcpu,
                allowed
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        );
    }
    let available = e.quota_vcpu.saturating_sub(e.used_vcpu);
    (available < e.required_vcpu).then(|| Refutation {
        rule: Rule::Bind6,
        why: format!(
            "quota {} - use {} leaves {available} vCPUs available, fewer than the {} required",
            e.quota_vcpu, e.used_vcpu, e.required_vcpu
        ),
    })
}

/// A detail as an integer; `Err` says it is missing or not one.
fn detail_number(details: &BTreeMap<String, String>, key: &str) -> Result<i64, String> {
    match details.get(key) {
        None => Err(format!("it records no {key}")),
        Some(v) => v
            .parse()
            .map_err(|_| format!("its {key} {v:?} is not a number")),
    }
}

fn check(l: &LineageState, e: &CheckRecorded) -> Option<Refutation> {
    let d = &e.details;
    let why = match e.check {
        CheckKind::Residue => match detail_number(d, "sandbox_count") {
            Ok(0) => None,
            Ok(n) => Some(format!("it counted {n} live run-tagged sandboxes")),
            Err(why) => Some(why),
        },
        CheckKind::DaemonHealth | CheckKind::ProviderSentinel | CheckKind::NetworkReachability => {
            match detail_number(d, "http_status") {
                Ok(s) if (200..300).contains(&s) => None,
                Ok(s) => Some(format!("its http_status is {s}")),
                Err(why) => Some(why),
            }
        }
        CheckKind::BinaryHash => {
            let sw = &l.frozen.manifest.public.software;
            if d.get("sha256") != Some(&sw.bitrouter_binary_sha256) {
                Some("its sha256 is not the frozen software.bitrouter_binary_sha256".to_string())
            } else if d.get("arch") != Some(&sw.bitrouter_arch) {
                Some("its architecture is not the frozen software.bitrouter_arch".to_string())
            } else {
                None
            }
        }
        CheckKind::ConfigValidated => return config_validated(l, d),
        CheckKind::CentralHost => crate::method::central::refutation(l, e),
        CheckKind::CentralTeardown => match detail_number(d, "live_count") {
            Ok(0) => None,
            Ok(n) => Some(format!("it found {n} live central hosts")),
            Err(why) => Some(why),
        },
        CheckKind::Canary | CheckKind::SourceHash => None,
    };
    why.map(|why| Refutation {
        rule: Rule::Bind6,
        why,
    })
}

/// GATE-7, BIND-7: the frozen validator ran (its program's BLAKE3 matched)
/// and exited 0 within its bound.
fn config_validated(l: &LineageState, d: &BTreeMap<String, String>) -> Option<Refutation> {
    let Some(plan) = &l.plan else {
        return refuted(
            Rule::Bind7,
            "the lineage was frozen as v1, without a frozen validator",
        );
    };
    let validator = &plan.binding.validator;
    if d.get("program_blake3") != Some(&validator.program_blake3) {
        return refuted(
            Rule::Bind7,
            format!(
                "it was not validated by the frozen validator (program_blake3 {} expected)",
                validator.program_blake3
            ),
        );
    }
    match detail_number(d, "exit_code") {
        Ok(0) => None,
        Ok(c) => refuted(Rule::Bind6, format!("the validation exited {c}")),
        Err(why) => refuted(Rule::Bind6, why),
    }
}
