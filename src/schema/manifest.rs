//! The stored manifest: the layout of every recorded ledger.
//!
//! These structs and enums are bincode-encoded, field by field in declaration
//! order, inside the `manifest_frozen.v1` payload (and `PriceRecord` inside
//! `price_snapshot_recorded.v1`); `manifest_blake3`, the lineage key and the
//! control key hash that encoding. A field change here (added, removed,
//! renamed, reordered or retyped; a variant inserted or reordered) changes
//! the bytes of every recorded ledger: it needs a new event kind version
//! (`manifest_frozen.v2`) with its own types, never an edit of these.
//! `tests::the_stored_layout_is_pinned` fails on any such change.
//!
//! The operator's TOML is read by its own input types in `method::freeze`,
//! which convert into these: a new optional TOML key cannot reach the stored
//! layout without a deliberate change here.
//!
//! Besides the types: pure helpers about stored values that other layers
//! need (group names, commitments and redacted forms of private values).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::schema::money::Dec;

/// The Terminal-Bench 2.x task count of a public reproduction (CLASS-1).
pub const PUBLIC_TASKS: usize = 89;
/// Trials per case of a public reproduction (CLASS-1).
pub const PUBLIC_TRIALS: usize = 5;
/// Task count bounds of a mechanism iteration (CLASS-1, corrected): a
/// predeclared slice of any size up to the whole set, one trial per case
/// (BitRouter's report 001 is 88 x 1).
pub const MECHANISM_TASKS_MIN: usize = 1;
pub use crate::limits::MECHANISM_TASKS_MAX;
// A mechanism iteration may take every public task, and no more.
const _: () = assert!(MECHANISM_TASKS_MAX == PUBLIC_TASKS);
/// Fewest trials per case of a replicated experiment (CLASS-1).
pub const REPLICATED_TRIALS_MIN: usize = 3;
/// The EC2 Standard On-Demand vCPU quota code (GATE-2).
pub const EC2_VCPU_QUOTA_CODE: &str = "L-1216C47A";
/// Group names of the evaluation rounds, in their only allowed order.
pub const EVALUATION_GROUPS: [&str; 4] = ["control", "r1", "r2", "r3"];

crate::schema::named::named_enum! {
    /// The run classes (CLASS-1).
    pub enum RunClass {
        /// A non-evaluation canary: canary identities only.
        Canary = "canary",
        /// A predeclared slice of any size up to all 89 tasks, one trial
        /// per case.
        MechanismIteration = "mechanism_iteration",
        /// >= 3 trials per case.
        ReplicatedExperiment = "replicated_experiment",
        /// All 89 tasks x exactly 5 trials.
        PublicReproduction = "public_reproduction",
    }
}

crate::schema::named::named_enum! {
    /// Whether the lineage tunes or is held out (LINEAGE-7).
    pub enum RunRole {
        /// Learning is allowed from these tasks.
        Tuning = "tuning",
        /// A frozen policy is evaluated; no learning.
        HeldOut = "held_out",
    }
}

crate::schema::named::named_enum! {
    /// Route tiers.
    pub enum Tier {
        /// The strong (control) route.
        Strong = "strong",
        /// The balanced route.
        Balanced = "balanced",
        /// The economy route.
        Economy = "economy",
    }
}

crate::schema::named::named_enum! {
    /// Wire protocols of a route.
    pub enum RouteProtocol {
        /// OpenAI-compatible (`/v1` api_base).
        Openai = "openai",
        /// Anthropic messages (no `/v1` suffix).
        Anthropic = "anthropic",
    }
}

crate::schema::named::named_enum! {
    /// Central host mode.
    pub enum CentralMode {
        /// Provision a new central host for this lineage.
        Provision = "provision",
        /// Reuse an existing central host (instance id required).
        Reuse = "reuse",
    }
}

crate::schema::named::named_enum! {
    /// Actual money or a list-price estimate (SETTLE-6).
    pub enum PriceBasis {
        /// What is really paid.
        Actual = "actual",
        /// A cited list price; never a cash-spend claim (CLASS-5).
        Notional = "notional",
    }
}

/// The public manifest as stored: what `manifest.toml` says, after
/// `method::freeze` read and validated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Must be 1.
    pub manifest_version: u16,
    /// The lineage label: new per lineage, no credential, account id or secret.
    pub lineage: String,
    pub benchmark: Benchmark,
    /// Run class, role and hypothesis.
    pub run: Run,
    /// Ordered tasks, trial identities and canary identities.
    pub cases: Cases,
    /// Ordered groups: canary/preflight groups, then control, r1, r2 [, r3].
    pub groups: Vec<Group>,
    /// The AWS selector and region (private values live in the private file).
    pub aws: Aws,
    /// The central BitRouter host.
    pub central: Central,
    /// The sandbox shape.
    pub sandbox: Sandbox,
    /// Resource tag keys and values.
    pub tags: Tags,
    /// Pinned software.
    pub software: Software,
    /// Harbor and Terminus 2 settings.
    pub harbor: Harbor,
    /// One route per tier.
    pub routes: Vec<Route>,
    /// One price record per provider/model/credential class and period.
    pub prices: Vec<PriceRecord>,
    /// Concurrency, timeouts, settlement and stop limits.
    pub limits: Limits,
    /// Everything FREEZE-8 adds.
    pub method: Method,
}

/// Benchmark identity (FREEZE-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Benchmark {
    /// `terminal-bench`.
    pub name: String,
    /// `2.1`.
    pub version: String,
    /// The dataset's git repository.
    pub dataset_repo: String,
    /// The dataset revision (a commit).
    pub dataset_revision: String,
}

/// Class, role and the stated hypothesis (CLASS-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub class: RunClass,
    /// Tuning or held-out.
    pub role: RunRole,
    /// The hypothesis the report states.
    pub hypothesis: String,
}

/// One task with its content hash.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Task {
    pub name: String,
    /// SHA-256 of the task's content (Harbor's `task_checksum`), hex.
    pub content_sha256: String,
}

/// A non-evaluation canary identity (GATE-5, GATE-8).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CanaryCase {
    /// The canary group it belongs to.
    pub group: String,
    /// A task outside the scored list.
    pub task: String,
    pub trial: String,
    /// SHA-256 of the task's content, hex.
    pub content_sha256: String,
}

/// The case identities (FREEZE-1, CASE-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cases {
    /// Trial identities, e.g. `["t1"]` or `["t1", "t2", "t3", "t4", "t5"]`.
    pub trials: Vec<String>,
    /// Ordered scored tasks.
    pub tasks: Vec<Task>,
    /// Non-evaluation canary identities.
    pub canaries: Vec<CanaryCase>,
}

/// One group with its run-scoped resources (FREEZE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// `control`, `r1`, `r2`, `r3`, or a non-evaluation `canary-*` /
    /// `preflight-*` name.
    pub name: String,
    /// The daemon's ports for this group.
    pub ports: Vec<u16>,
    /// The daemon's database (r1..r3 share the policy database).
    pub db_path: String,
    /// The group's output directory.
    pub out_dir: String,
    pub daemon_log: String,
    /// Trace JSONL path.
    pub trace_path: String,
    /// Decision JSONL path.
    pub decision_path: String,
    /// Outcome JSONL path.
    pub outcome_path: String,
    /// Harbor job name.
    pub job_name: String,
}

/// The AWS identity selector (GATE-1): exactly one of `profile`,
/// `assume_role` (the role ARN lives in the private file) or
/// `instance_profile`. Never the ambient default chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aws {
    /// A named profile (never `default`).
    pub profile: Option<String>,
    /// Assume the private manifest's role ARN.
    pub assume_role: bool,
    /// Use the instance profile of the host.
    pub instance_profile: bool,
    pub region: String,
    /// Must be `L-1216C47A`.
    pub quota_code: String,
    /// vCPUs kept free beyond the batch's need.
    pub quota_headroom_vcpu: u64,
}

/// The central BitRouter host (FREEZE-1, FREEZE-8, CLEAN-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Central {
    /// Provision or reuse.
    pub mode: CentralMode,
    /// The host's AMI.
    pub ami: String,
    pub instance_type: String,
    pub vcpu: u64,
    /// Its role tag value.
    pub role_tag_value: String,
    /// Its instance id (required for `reuse`; the only resource cleanup may exclude).
    pub instance_id: Option<String>,
    /// The daemon's address as sandboxes reach it (host or IP).
    pub daemon_host: String,
}

/// How `central up` launches a provisioned central host
/// (`manifest_frozen.v3`): the network it is launched into and how long it
/// may take to reach `running` (FREEZE-1, FREEZE-8). Its AMI, type, vCPU
/// and role tag are [`Central`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CentralLaunch {
    /// The subnet it is launched into.
    pub subnet_id: String,
    /// Its security groups, in the order given.
    pub security_group_ids: Vec<String>,
    /// Longest wait for the launched host to be `running`, in seconds.
    pub ready_timeout_sec: u64,
}

/// `[witnessing]` (TRUST-6): the witnesses a lineage's checkpoints are
/// sent to with the C2SP tlog-witness protocol, and how many of them must
/// cosign a checkpoint before a seal it covers counts
/// (`manifest_frozen.v3`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witnessing {
    /// k: distinct frozen witnesses that must cosign a covering checkpoint.
    pub quorum: u32,
    /// The witnesses, in the order given; names unique.
    pub witnesses: Vec<Witness>,
}

/// One frozen witness (TRUST-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    /// Its name in the manifest (a label; what events and the report say).
    pub name: String,
    /// Its C2SP cosignature/v1 verifier key (also in `[signers].witnesses`).
    pub key: String,
    /// Its http:// submission prefix; the endpoint is `{url}/add-checkpoint`.
    pub url: String,
}

/// A task left out before the freeze (CLASS-1: e.g. its provider failed in
/// preflight): not in the task list, named by the report as excluded
/// before the run (`manifest_frozen.v3`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedTask {
    /// The task's name.
    pub task: String,
    /// Why it was left out.
    pub reason: String,
}

/// The sandbox shape (FREEZE-6: AMI, type, region and network).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    pub ami: String,
    pub instance_type: String,
    /// vCPUs per sandbox.
    pub vcpu: u64,
    /// Network shape (subnet/security-group/egress description).
    pub network: String,
}

/// Resource tags (CLEAN-1): exact keys and the run's values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tags {
    /// The run tag key.
    pub run_key: String,
    /// The run tag value (new per lineage).
    pub run_value: String,
    /// The role tag key.
    pub role_key: String,
    pub sandbox_role_value: String,
    /// The case tag key.
    pub case_key: String,
    /// The trial tag key.
    pub trial_key: String,
}

/// One pinned source tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRepo {
    /// A short name (`bitrouter`, `harbor`).
    pub name: String,
    pub repo: String,
    pub commit: String,
    /// SHA-256 of an applied patch, if any.
    pub patch_sha256: Option<String>,
}

/// Pinned software (FREEZE-1, GATE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Software {
    /// Source trees.
    pub sources: Vec<SourceRepo>,
    /// SHA-256 of the BitRouter binary.
    pub bitrouter_binary_sha256: String,
    /// Its ELF architecture (`x86_64`, `aarch64`).
    pub bitrouter_arch: String,
    /// SHA-256 of each group's daemon config, by group name.
    pub bitrouter_config_sha256: BTreeMap<String, String>,
    /// Harbor's version (`0.25.0`).
    pub harbor_version: String,
    /// Terminus 2's version (`2.0.0`).
    pub terminus_version: String,
}

/// Harbor and Terminus 2 settings (FREEZE-1, CASE-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Harbor {
    /// Harbor's own retry count: must be 0 (CASE-5).
    pub retries: u32,
    /// The agent name (`terminus-2`).
    pub agent: String,
    /// The non-secret local key the daemon accepts (`agent.kwargs.llm_kwargs.api_key`).
    pub local_api_key: String,
    /// The jobs directory.
    pub jobs_dir: String,
    /// Agent timeout, seconds.
    pub agent_timeout_sec: u64,
    /// Verifier timeout, seconds.
    pub verifier_timeout_sec: u64,
    /// Typed terminal exceptions accepted as `terminal_valid` when the
    /// verifier ran (CASE-3), e.g. `AgentTimeoutError`.
    pub accepted_exceptions: Vec<String>,
    /// The model name rounds and canaries request from the daemon, whose
    /// policy resolves it (`@auto`); control requests the strong route's model.
    pub policy_model: String,
    /// The protocol rounds and canaries speak to the daemon.
    pub policy_protocol: RouteProtocol,
}

/// One route (FREEZE-1, PLANE-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub tier: Tier,
    pub provider: String,
    pub model: String,
    /// Wire protocol.
    pub protocol: RouteProtocol,
    /// Credential class (`api_key`, `subscription`).
    pub credential_class: String,
    /// The exact provider-gate target (`claude-code:<model>`), PLANE-2.
    pub gate_target: String,
}

/// One price record (FREEZE-8, SETTLE-2, SETTLE-3, SETTLE-8). Rates are
/// decimal micro-USD per token (= USD per million tokens), written as strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceRecord {
    pub provider: String,
    pub model: String,
    pub credential_class: String,
    /// `USD`.
    pub currency: String,
    /// Uncached input rate.
    pub uncached_input: Dec,
    /// Cache read rate, if the route has one.
    pub cache_read: Option<Dec>,
    /// Cache write rate, if the route has one.
    pub cache_write: Option<Dec>,
    /// Output rate (reasoning is billed at it).
    pub output: Dec,
    /// Whether a missing cache price falls back to the base input price (SETTLE-3).
    pub cache_price_fallback: bool,
    /// Actual or notional.
    pub basis: PriceBasis,
    /// Where the price comes from (URL, contract).
    pub source: String,
    /// Effective from (YYYY-MM-DD, inclusive).
    pub effective_from: String,
    /// Effective until (YYYY-MM-DD, exclusive), if bounded.
    pub effective_to: Option<String>,
}

/// Limits (FREEZE-1, CASE-7, SETTLE-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Cases started but not terminal, at most (CASE-7).
    pub concurrency: u32,
    /// Settlement grace after a group's last case, seconds.
    pub settlement_grace_sec: u64,
    /// Reconciliation attempts allowed.
    pub reconciliation_attempts: u32,
    /// How old a gate observation may be at `case start`, seconds.
    pub gate_freshness_sec: u64,
    /// Stop the lineage past this spend, micro-USD.
    pub spend_stop_micro_usd: u64,
    /// Stop the lineage when a round's score falls below this percent.
    pub severe_quality_stop_pct: Dec,
}

/// Everything FREEZE-8 adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Method {
    /// Whether the security-policy skip (CASE-6) is enabled.
    pub security_skip_enabled: bool,
    /// Quality tolerance vs control, percentage points.
    pub quality_tolerance_pct: Dec,
    /// Cost tolerance vs control, percent.
    pub cost_tolerance_pct: Dec,
    /// Tasks learning may use (LINEAGE-7); empty means all for tuning.
    pub tuning_tasks: Vec<String>,
    /// Tasks held out from learning.
    pub held_out_tasks: Vec<String>,
    /// Whether the control schema emits policy decisions (JOIN-1).
    pub control_emits_decisions: bool,
    /// The interval method of replicated runs (REPORT-4).
    pub interval_method: String,
    /// Bootstrap seed (REPORT-4).
    pub interval_seed: u64,
    /// Bootstrap resamples (REPORT-4).
    pub interval_resamples: u32,
}

/// A private value as the ledger keeps it: a keyed BLAKE3 commitment (key in
/// the private manifest) and a redacted form. Also stored inside
/// `identity_checked.v1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// `keyed_blake3(commitment_key, "benchledger commitment v1" || 0 || field || 0 || value)`, hex.
    pub commitment: String,
    /// A redacted form safe to publish, e.g. `****5678`.
    pub redacted: String,
}

/// The commitments of the private values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateCommitments {
    pub account: Committed,
    pub principal_arn: Committed,
    /// The role ARN, if any.
    pub role_arn: Option<Committed>,
    /// Where each tier's secret lives.
    pub secret_locations: BTreeMap<Tier, Committed>,
}

/// The frozen manifest as stored: the public manifest and the private commitments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub public: ManifestFile,
    /// Commitments to the private values.
    pub private: PrivateCommitments,
}

// ---------------------------------------------------------------------------
// Pure helpers about stored values
// ---------------------------------------------------------------------------

/// Whether a group name is a non-evaluation group (`canary`, `canary-*`,
/// `preflight`, `preflight-*`).
pub fn is_non_evaluation(name: &str) -> bool {
    ["canary", "preflight"]
        .iter()
        .any(|p| name == *p || name.strip_prefix(p).is_some_and(|r| r.starts_with('-')))
}

impl ManifestFile {
    /// Group names in order.
    pub fn group_names(&self) -> Vec<&str> {
        self.groups.iter().map(|g| g.name.as_str()).collect()
    }

    /// The evaluation groups in order (`control`, `r1`, ...).
    pub fn evaluation_groups(&self) -> Vec<&str> {
        self.group_names()
            .into_iter()
            .filter(|g| !is_non_evaluation(g))
            .collect()
    }

    /// The route of a tier.
    pub fn route(&self, tier: Tier) -> Option<&Route> {
        self.routes.iter().find(|r| r.tier == tier)
    }

    /// Every run-scoped resource that must be new (FREEZE-4), as
    /// (claim key, field path). The policy database shared by r1..r3 is
    /// claimed once.
    pub fn run_scoped_claims(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |key: String, field: String| {
            if !out.iter().any(|(k, _)| *k == key) {
                out.push((key, field));
            }
        };
        push(format!("lineage:{}", self.lineage), "lineage".into());
        push(
            format!("tag:{}={}", self.tags.run_key, self.tags.run_value),
            "tags.run_value".into(),
        );
        for (i, g) in self.groups.iter().enumerate() {
            for (j, p) in g.ports.iter().enumerate() {
                push(format!("port:{p}"), format!("groups[{i}].ports[{j}]"));
            }
            for (name, v) in [
                ("db_path", &g.db_path),
                ("out_dir", &g.out_dir),
                ("daemon_log", &g.daemon_log),
                ("trace_path", &g.trace_path),
                ("decision_path", &g.decision_path),
                ("outcome_path", &g.outcome_path),
            ] {
                push(format!("path:{v}"), format!("groups[{i}].{name}"));
            }
            push(
                format!("job:{}", g.job_name),
                format!("groups[{i}].job_name"),
            );
        }
        out
    }
}

impl Manifest {
    /// The publication view: the public manifest and the redacted forms of
    /// the private values, without commitments.
    pub fn redacted_json(&self) -> serde_json::Value {
        let p = &self.private;
        serde_json::json!({
            "public": self.public,
            "private": {
                "account": p.account.redacted,
                "principal_arn": p.principal_arn.redacted,
                "role_arn": p.role_arn.as_ref().map(|r| r.redacted.clone()),
                "secret_locations": p.secret_locations.iter().map(|(t, c)| (format!("{t:?}").to_lowercase(), c.redacted.clone())).collect::<BTreeMap<_, _>>(),
            }
        })
    }
}

/// Parses a 32-byte hex commitment key (`commitment_key` of the private
/// manifest at `source`).
pub fn commitment_key(hex_key: &str, source: &str) -> Result<[u8; 32]> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(hex_key, &mut key).map_err(|_| {
        Error::input(format!(
            "{source}: field commitment_key: must be 64 hex digits"
        ))
    })?;
    if key == [0u8; 32] {
        return Err(Error::input(format!(
            "{source}: field commitment_key: must not be all zeros; generate 32 random bytes"
        )));
    }
    Ok(key)
}

/// `keyed_blake3(key, "benchledger commitment v1" || 0 || field || 0 || value)`, hex.
pub fn commit(key: &[u8; 32], field: &str, value: &str) -> String {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"benchledger commitment v1\0");
    h.update(field.as_bytes());
    h.update(b"\0");
    h.update(value.as_bytes());
    hex::encode(h.finalize().as_bytes())
}

/// Masks all but the last four characters of an account id.
pub fn redact_account(account: &str) -> String {
    let keep = account.len().saturating_sub(4);
    format!("{}{}", "*".repeat(keep), &account[keep..])
}

/// `arn:aws:iam::123456789012:role/x` -> `arn:aws:iam::********9012:role/…`.
pub fn redact_arn(arn: &str) -> String {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    if parts.len() != 6 {
        return "arn:…".into();
    }
    let kind = parts[5].split('/').next().unwrap_or("");
    format!(
        "{}:{}:{}:{}:{}:{kind}/…",
        parts[0],
        parts[1],
        parts[2],
        parts[3],
        redact_account(parts[4])
    )
}

/// `env:NAME` -> `env:…`; `file:/path` -> `file:…`.
pub fn redact_location(loc: &str) -> String {
    match loc.split_once(':') {
        Some((kind, _)) => format!("{kind}:…"),
        None => "…".into(),
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
