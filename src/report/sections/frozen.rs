//! Section 3: the frozen tuple (benchmark, groups, trials, routes,
//! prices), pinned software, topology, limits, hashes and sign-offs.

use super::Ctx;
use crate::method::projections::{LineageState, SignOff};
use crate::report::model::{ControlResolution, Fact, Frozen, PriceLine, RouteLine, SignOffLine};
use crate::report::numbers::cents;
use crate::schema::manifest::ManifestFile;

/// Section 3, with the frozen hashes (shared with the checksums).
pub(super) fn frozen(ctx: &Ctx<'_>, hashes: Vec<Fact>) -> Frozen {
    let manifest = ctx.manifest;
    let benchmark = &manifest.benchmark;
    Frozen {
        benchmark: format!("{} {}", benchmark.name, benchmark.version),
        dataset: format!(
            "{} @ {}",
            benchmark.dataset_repo, benchmark.dataset_revision
        ),
        groups: manifest
            .group_names()
            .iter()
            .map(|name| name.to_string())
            .collect(),
        trials: manifest.cases.trials.clone(),
        excluded_before_run: ctx
            .lineage
            .excluded_tasks
            .iter()
            .map(|e| Fact::new(e.task.clone(), e.reason.clone()))
            .collect(),
        routes: routes(manifest),
        prices: prices(manifest),
        software: software(manifest),
        topology: [topology(manifest), central_observed(ctx.lineage)].concat(),
        limits: limits(manifest),
        hashes,
        sign_offs: ctx
            .lineage
            .sign_offs
            .iter()
            .map(|(role, SignOff { name, seq })| SignOffLine {
                role: role.as_str().into(),
                name: name.clone(),
                seq: *seq,
            })
            .collect(),
        frozen_seq: ctx.lineage.frozen_seq,
    }
}

/// The frozen hashes and keys, and the control's artifact checksum when
/// it is registered.
pub(super) fn hashes(ctx: &Ctx<'_>, control: &ControlResolution) -> Vec<Fact> {
    let frozen = &ctx.lineage.frozen;
    let mut hashes = vec![
        Fact::new("manifest_blake3", frozen.manifest_blake3.clone()),
        Fact::new(
            "manifest source file blake3",
            frozen.source_file_blake3.clone(),
        ),
        Fact::new("task_manifest_blake3", frozen.task_manifest_blake3.clone()),
        Fact::new("lineage_key", frozen.lineage_key.clone()),
        Fact::new("control_key", frozen.control_key.clone()),
    ];
    if let Some(artifact) = &control.artifact_blake3 {
        hashes.push(Fact::new("control artifact blake3", artifact.clone()));
    }
    hashes
}

fn routes(manifest: &ManifestFile) -> Vec<RouteLine> {
    manifest
        .routes
        .iter()
        .map(|route| RouteLine {
            tier: route.tier.as_str().into(),
            provider: route.provider.clone(),
            model: route.model.clone(),
            protocol: route.protocol.as_str().into(),
            credential_class: route.credential_class.clone(),
        })
        .collect()
}

fn prices(manifest: &ManifestFile) -> Vec<PriceLine> {
    manifest
        .prices
        .iter()
        .map(|price| PriceLine {
            route: format!("{}:{}", price.provider, price.model),
            credential_class: price.credential_class.clone(),
            basis: price.basis.as_str().into(),
            uncached_input: price.uncached_input.canonical(),
            cache_read: price.cache_read.map(|rate| rate.canonical()),
            cache_write: price.cache_write.map(|rate| rate.canonical()),
            output: price.output.canonical(),
            source: price.source.clone(),
            effective: format!(
                "from {}{}",
                price.effective_from,
                price
                    .effective_to
                    .as_deref()
                    .map_or(String::new(), |to| format!(" until {to}"))
            ),
        })
        .collect()
}

fn software(manifest: &ManifestFile) -> Vec<Fact> {
    let software = &manifest.software;
    let mut facts = vec![
        Fact::new(
            "BitRouter binary sha256",
            software.bitrouter_binary_sha256.clone(),
        ),
        Fact::new("BitRouter architecture", software.bitrouter_arch.clone()),
        Fact::new("Harbor", software.harbor_version.clone()),
        Fact::new(
            format!("agent {}", manifest.harbor.agent),
            software.terminus_version.clone(),
        ),
    ];
    for (group, sha256) in &software.bitrouter_config_sha256 {
        facts.push(Fact::new(
            format!("BitRouter config sha256 ({group})"),
            sha256.clone(),
        ));
    }
    for source in &software.sources {
        facts.push(Fact::new(
            format!("source {}", source.name),
            format!("{} @ {}", source.repo, source.commit),
        ));
    }
    facts
}

/// Where the central host was observed (issue 30): the latest
/// `central_host` observation (instance id, AMI, type, state, address, the
/// seq and action) and the teardown, or that none was recorded.
fn central_observed(l: &LineageState) -> Vec<Fact> {
    use crate::schema::central::keys;
    use crate::schema::events::CheckKind;
    if !crate::method::central::managed(l) {
        // Provisioned by the operator (no [central.launch] frozen): nothing
        // of it is observed by benchledger beyond the frozen fact above.
        return Vec::new();
    }
    let detail = |e: &crate::schema::events::CheckRecorded, k: &str| {
        e.details.get(k).cloned().unwrap_or_else(|| "-".into())
    };
    let mut out = vec![Fact::new(
        "central host observed",
        match l.central_seen.get(&CheckKind::CentralHost) {
            None => "never (no central_host observation recorded)".to_string(),
            Some((at, e)) => format!(
                "{} {} {} {} at {} ({}, {}) at seq {}: {}",
                e.target,
                detail(e, keys::AMI),
                detail(e, keys::INSTANCE_TYPE),
                detail(e, keys::STATE),
                detail(e, keys::PRIVATE_IP),
                detail(e, keys::ACTION),
                detail(e, keys::REGION),
                at.seq,
                e.status.as_str()
            ),
        },
    )];
    if let Some((at, e)) = l.central_seen.get(&CheckKind::CentralTeardown) {
        out.push(Fact::new(
            "central host torn down",
            format!(
                "{} at seq {}: {} live left, {}",
                e.target,
                at.seq,
                detail(e, keys::LIVE_COUNT),
                e.status.as_str()
            ),
        ));
    }
    out
}

fn topology(manifest: &ManifestFile) -> Vec<Fact> {
    let sandbox = &manifest.sandbox;
    let central = &manifest.central;
    vec![
        Fact::new("region", manifest.aws.region.clone()),
        Fact::new(
            "sandbox",
            format!(
                "{} {} ({} vCPU), network {}",
                sandbox.ami, sandbox.instance_type, sandbox.vcpu, sandbox.network
            ),
        ),
        Fact::new(
            "central BitRouter host",
            format!(
                "{} {} {} ({} vCPU){}",
                central.mode.as_str(),
                central.ami,
                central.instance_type,
                central.vcpu,
                central
                    .instance_id
                    .as_ref()
                    .map_or_else(String::new, |id| format!(", instance {id}"))
            ),
        ),
        Fact::new(
            "policy model requested by rounds",
            manifest.harbor.policy_model.clone(),
        ),
    ]
}

fn limits(manifest: &ManifestFile) -> Vec<Fact> {
    let limits = &manifest.limits;
    let harbor = &manifest.harbor;
    vec![
        Fact::new("concurrency", limits.concurrency.to_string()),
        Fact::new("Harbor retries", harbor.retries.to_string()),
        Fact::new("agent timeout", format!("{} s", harbor.agent_timeout_sec)),
        Fact::new(
            "verifier timeout",
            format!("{} s", harbor.verifier_timeout_sec),
        ),
        Fact::new(
            "settlement grace",
            format!("{} s", limits.settlement_grace_sec),
        ),
        Fact::new(
            "reconciliation attempts",
            limits.reconciliation_attempts.to_string(),
        ),
        Fact::new(
            "spend stop",
            format!("${}", cents(limits.spend_stop_micro_usd)),
        ),
        Fact::new(
            "severe-quality stop",
            format!("{}%", limits.severe_quality_stop_pct.canonical()),
        ),
        Fact::new(
            "security-policy skip",
            if manifest.method.security_skip_enabled {
                "enabled"
            } else {
                "disabled"
            },
        ),
    ]
}
