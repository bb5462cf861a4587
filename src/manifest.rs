//! The manifest an operator writes (TOML), its validation, and the frozen
//! form the ledger stores (FREEZE-1..8, CLASS-1..5).
//!
//! Two files: the public manifest (`manifest.toml`) and a private one
//! (`manifest.private.toml`) with the values that must not be published
//! (account id, principal ARN, role ARN, where each secret lives) and a
//! commitment key. The ledger stores the public manifest plus keyed-BLAKE3
//! commitments and redacted forms of the private values, so a ledger can be
//! published and a holder of the private file can still check every value.
//!
//! Everything here is pure: the CLI reads the files and passes their text in.

use std::collections::{BTreeMap, BTreeSet};
#[allow(unused_imports)]
use crate::error::{Error, Result};

use serde::{Deserialize, Serialize};


use crate::events::Committed;
use crate::money::Dec;

/// The manifest format version this build reads.
pub const MANIFEST_VERSION: u16 = 1;
/// Largest manifest file (public or private), in bytes.
pub const MANIFEST_FILE_BYTES_MAX: usize = 1024 * 1024;
/// Most tasks one lineage may declare.
pub const TASKS_MAX: usize = 1_000;
/// Most trial identities per task.
pub const TRIALS_MAX: usize = 100;
/// Most groups one lineage may declare (evaluation and non-evaluation).
pub const GROUPS_MAX: usize = 16;
/// Longest label (lineage, group, task, trial, tag value), in bytes.
pub const LABEL_BYTES_MAX: usize = 128;
/// The Terminal-Bench 2.x task count of a public reproduction (CLASS-1).
pub const PUBLIC_TASKS: usize = 89;
/// Trials per case of a public reproduction (CLASS-1).
pub const PUBLIC_TRIALS: usize = 5;
/// Task count bounds of a mechanism iteration (CLASS-1).
pub const MECHANISM_TASKS_MIN: usize = 8;
/// Upper bound of a mechanism iteration's tasks.
pub const MECHANISM_TASKS_MAX: usize = 20;
/// Fewest trials per case of a replicated experiment (CLASS-1).
pub const REPLICATED_TRIALS_MIN: usize = 3;
/// The EC2 Standard On-Demand vCPU quota code (GATE-2).
pub const EC2_VCPU_QUOTA_CODE: &str = "L-1216C47A";

/// The run classes (CLASS-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunClass {
    /// A non-evaluation canary: canary identities only.
    Canary,
    /// 8-20 predeclared tasks, one trial per case.
    MechanismIteration,
    /// >= 3 trials per case.
    ReplicatedExperiment,
    /// All 89 tasks x exactly 5 trials.
    PublicReproduction,
}

/// Whether the lineage tunes or is held out (LINEAGE-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunRole {
    /// Learning is allowed from these tasks.
    Tuning,
    /// A frozen policy is evaluated; no learning.
    HeldOut,
}

/// Route tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The strong (control) route.
    Strong,
    /// The balanced route.
    Balanced,
    /// The economy route.
    Economy,
}

/// Wire protocols of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteProtocol {
    /// OpenAI-compatible (`/v1` api_base).
    Openai,
    /// Anthropic messages (no `/v1` suffix).
    Anthropic,
}

/// Central host mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CentralMode {
    /// Provision a new central host for this lineage.
    Provision,
    /// Reuse an existing central host (instance id required).
    Reuse,
}

/// Actual money or a list-price estimate (SETTLE-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceBasis {
    /// What is really paid.
    Actual,
    /// A cited list price; never a cash-spend claim (CLASS-5).
    Notional,
}

/// The public manifest, as written in `manifest.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Must be 1.
    pub manifest_version: u16,
    /// The lineage label: new per lineage, no credential, account id or secret.
    pub lineage: String,
    /// Benchmark identity.
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The run class.
    pub class: RunClass,
    /// Tuning or held-out.
    pub role: RunRole,
    /// The hypothesis the report states.
    pub hypothesis: String,
}

/// One task with its content hash.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// The task name.
    pub name: String,
    /// SHA-256 of the task's content (Harbor's `task_checksum`), hex.
    pub content_sha256: String,
}

/// A non-evaluation canary identity (GATE-5, GATE-8).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryCase {
    /// The canary group it belongs to.
    pub group: String,
    /// A task outside the scored list.
    pub task: String,
    /// Its trial identity.
    pub trial: String,
    /// SHA-256 of the task's content, hex.
    pub content_sha256: String,
}

/// The case identities (FREEZE-1, CASE-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cases {
    /// Trial identities, e.g. `["t1"]` or `["t1", "t2", "t3", "t4", "t5"]`.
    pub trials: Vec<String>,
    /// Ordered scored tasks.
    pub tasks: Vec<Task>,
    /// Non-evaluation canary identities.
    #[serde(default)]
    pub canaries: Vec<CanaryCase>,
}

/// One group with its run-scoped resources (FREEZE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The daemon log.
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
#[serde(deny_unknown_fields)]
pub struct Aws {
    /// A named profile (never `default`).
    pub profile: Option<String>,
    /// Assume the private manifest's role ARN.
    #[serde(default)]
    pub assume_role: bool,
    /// Use the instance profile of the host.
    #[serde(default)]
    pub instance_profile: bool,
    /// The region.
    pub region: String,
    /// Must be `L-1216C47A`.
    pub quota_code: String,
    /// vCPUs kept free beyond the batch's need.
    pub quota_headroom_vcpu: u64,
}

/// The central BitRouter host (FREEZE-1, FREEZE-8, CLEAN-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Central {
    /// Provision or reuse.
    pub mode: CentralMode,
    /// The host's AMI.
    pub ami: String,
    /// Instance type.
    pub instance_type: String,
    /// Its vCPUs.
    pub vcpu: u64,
    /// Its role tag value.
    pub role_tag_value: String,
    /// Its instance id (required for `reuse`; the only resource cleanup may exclude).
    pub instance_id: Option<String>,
    /// The daemon's address as sandboxes reach it (host or IP).
    pub daemon_host: String,
}

/// The sandbox shape (FREEZE-6: AMI, type, region and network).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sandbox {
    /// AMI.
    pub ami: String,
    /// Instance type.
    pub instance_type: String,
    /// vCPUs per sandbox.
    pub vcpu: u64,
    /// Network shape (subnet/security-group/egress description).
    pub network: String,
}

/// Resource tags (CLEAN-1): exact keys and the run's values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tags {
    /// The run tag key.
    pub run_key: String,
    /// The run tag value (new per lineage).
    pub run_value: String,
    /// The role tag key.
    pub role_key: String,
    /// The sandbox role value.
    pub sandbox_role_value: String,
    /// The case tag key.
    pub case_key: String,
    /// The trial tag key.
    pub trial_key: String,
}

/// One pinned source tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRepo {
    /// A short name (`bitrouter`, `harbor`).
    pub name: String,
    /// The repository.
    pub repo: String,
    /// The commit.
    pub commit: String,
    /// SHA-256 of an applied patch, if any.
    pub patch_sha256: Option<String>,
}

/// Pinned software (FREEZE-1, GATE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
}

/// One route (FREEZE-1, PLANE-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Its tier.
    pub tier: Tier,
    /// Provider id.
    pub provider: String,
    /// Model id.
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
#[serde(deny_unknown_fields)]
pub struct PriceRecord {
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Credential class.
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct Method {
    /// Whether the security-policy skip (CASE-6) is enabled.
    pub security_skip_enabled: bool,
    /// Quality tolerance vs control, percentage points.
    pub quality_tolerance_pct: Dec,
    /// Cost tolerance vs control, percent.
    pub cost_tolerance_pct: Dec,
    /// Tasks learning may use (LINEAGE-7); empty means all for tuning.
    #[serde(default)]
    pub tuning_tasks: Vec<String>,
    /// Tasks held out from learning.
    #[serde(default)]
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

/// The private manifest (never stored; only its commitments are).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateFile {
    /// Must equal the public file's lineage.
    pub lineage: String,
    /// 32 bytes, hex: the key of every commitment.
    pub commitment_key: String,
    /// Private AWS values.
    pub aws: PrivateAws,
    /// Where each tier's secret lives (`env:NAME`, `file:/path`), never the value.
    pub secret_locations: BTreeMap<Tier, String>,
}

/// Private AWS values.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateAws {
    /// The 12-digit account id.
    pub account: String,
    /// The principal ARN STS must answer.
    pub principal_arn: String,
    /// The role to assume when the selector is `assume_role`.
    pub role_arn: Option<String>,
}

/// The commitments of the private values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateCommitments {
    /// The account id.
    pub account: Committed,
    /// The principal ARN.
    pub principal_arn: Committed,
    /// The role ARN, if any.
    pub role_arn: Option<Committed>,
    /// Where each tier's secret lives.
    pub secret_locations: BTreeMap<Tier, Committed>,
}

/// The frozen manifest as stored: the public file and the private commitments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The public manifest.
    pub public: ManifestFile,
    /// Commitments to the private values.
    pub private: PrivateCommitments,
}
