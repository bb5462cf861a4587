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

use crate::error::{Error, Result};
#[allow(unused_imports)]
use crate::schema::rule::Rule;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::schema::events::Committed;
use crate::schema::money::Dec;

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
    /// The model name rounds and canaries request from the daemon, whose
    /// policy resolves it (`@auto`); control requests the strong route's model.
    pub policy_model: String,
    /// The protocol rounds and canaries speak to the daemon.
    pub policy_protocol: RouteProtocol,
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

// ---------------------------------------------------------------------------
// Reading and validating
// ---------------------------------------------------------------------------

/// Group names of the evaluation rounds, in their only allowed order.
pub const EVALUATION_GROUPS: [&str; 4] = ["control", "r1", "r2", "r3"];

/// Whether a group name is a non-evaluation group (`canary`, `canary-*`,
/// `preflight`, `preflight-*`).
pub fn is_non_evaluation(name: &str) -> bool {
    ["canary", "preflight"]
        .iter()
        .any(|p| name == *p || name.strip_prefix(p).is_some_and(|r| r.starts_with('-')))
}

/// A manifest that passed every check, with its derived hashes and keys:
/// the payload `manifest freeze` appends.
pub type Frozen = crate::schema::events::ManifestFrozen;

fn input(source: &str, field: &str, problem: impl std::fmt::Display) -> Error {
    Error::input(format!("{source}: field {field}: {problem}"))
}

fn refused(rule: Rule, source: &str, field: &str, problem: impl std::fmt::Display) -> Error {
    Error::Refused {
        rule,
        message: format!("{source}: field {field}: {problem}"),
    }
}

fn check_label(source: &str, field: &str, v: &str) -> Result<()> {
    if v.is_empty() || v.len() > LABEL_BYTES_MAX {
        return Err(input(
            source,
            field,
            format!("must be 1 to {LABEL_BYTES_MAX} bytes, got {}", v.len()),
        ));
    }
    if let Some(c) = v
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return Err(input(
            source,
            field,
            format!("{v:?} contains {c:?}; labels use letters, digits, '.', '_' and '-'"),
        ));
    }
    Ok(())
}

fn check_hex(source: &str, field: &str, v: &str, bytes: usize) -> Result<()> {
    if v.len() != bytes * 2
        || !v
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(input(
            source,
            field,
            format!("must be {} lowercase hex digits, got {v:?}", bytes * 2),
        ));
    }
    Ok(())
}

fn check_nonempty(source: &str, field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() {
        return Err(input(source, field, "must not be empty"));
    }
    Ok(())
}

fn check_date(source: &str, field: &str, v: &str) -> Result<()> {
    let b = v.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&v[5..7].parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&v[8..10].parse::<u32>().unwrap_or(0));
    if !ok {
        return Err(input(
            source,
            field,
            format!("must be a date YYYY-MM-DD, got {v:?}"),
        ));
    }
    Ok(())
}

fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, source: &str) -> Result<T> {
    if text.len() > MANIFEST_FILE_BYTES_MAX {
        return Err(Error::input(format!(
            "{source}: {} bytes, over the limit of {MANIFEST_FILE_BYTES_MAX}",
            text.len()
        )));
    }
    toml::from_str(text).map_err(|e| {
        // toml's message names the line, column and key; keep it on one line.
        let msg = e
            .to_string()
            .replace('\n', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        Error::input(crate::schema::secrets::withhold(&format!(
            "{source}: {msg}"
        )))
    })
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

/// Validates both files and computes everything `manifest freeze` records.
/// Format problems are input errors (exit 2); violations of the method are
/// refusals naming the rule (exit 3). Pure: the caller reads the files.
pub fn freeze(
    public_text: &str,
    public_source: &str,
    private_text: &str,
    private_source: &str,
) -> Result<Frozen> {
    let m: ManifestFile = parse_toml(public_text, public_source)?;
    let p: PrivateFile = parse_toml(private_text, private_source)?;
    validate(&m, public_source)?;
    let private = commit_private(&m, &p, private_source)?;
    // FREEZE-4: no label, name or path of the public manifest may carry a
    // private value.
    let public_json = serde_json::to_string(&m).map_err(|e| Error::input(e.to_string()))?;
    for (what, v) in [
        ("account id", &p.aws.account),
        ("principal arn", &p.aws.principal_arn),
    ] {
        if public_json.contains(v.as_str()) {
            return Err(refused(Rule::Freeze4, public_source, "(any)", format!("the public manifest contains the private {what}; labels and names carry no account id")));
        }
    }
    let manifest = Manifest { public: m, private };
    Ok(Frozen {
        lineage: manifest.public.lineage.clone(),
        manifest_blake3: hex::encode(
            blake3::hash(
                &crate::log::codec::encode(&manifest).map_err(|e| Error::input(e.to_string()))?,
            )
            .as_bytes(),
        ),
        source_file_blake3: hex::encode(blake3::hash(public_text.as_bytes()).as_bytes()),
        task_manifest_blake3: task_manifest_blake3(&manifest.public),
        lineage_key: lineage_key(&manifest.public),
        control_key: control_key(&manifest.public),
        manifest,
    })
}

fn derive(context: &str, value: &impl Serialize) -> String {
    // Manifest parts are plain structs: encoding cannot fail.
    let bytes = crate::log::codec::encode(value).expect("manifest parts encode");
    hex::encode(blake3::derive_key(context, &bytes))
}

/// BLAKE3 over the ordered tasks with content hashes, the trial identities
/// and the canary identities (FREEZE-1, CLASS-3).
pub fn task_manifest_blake3(m: &ManifestFile) -> String {
    derive(
        "benchledger v1 task manifest",
        &(&m.cases.trials, &m.cases.tasks, &m.cases.canaries),
    )
}

/// The lineage key (FREEZE-5): benchmark + task/trial manifest + Harbor and
/// Terminus config + every route + BitRouter software + sandbox shape +
/// policy-state lineage (the shared policy database) + prices + limits +
/// ordered target groups.
pub fn lineage_key(m: &ManifestFile) -> String {
    let policy_db: Vec<&str> = m
        .groups
        .iter()
        .filter(|g| g.name.starts_with('r'))
        .map(|g| g.db_path.as_str())
        .collect();
    derive(
        "benchledger v1 lineage key",
        &(
            &m.benchmark,
            task_manifest_blake3(m),
            &m.harbor,
            &m.software,
            &m.routes,
            (&m.sandbox, &m.aws.region),
            policy_db,
            &m.prices,
            &m.limits,
            m.group_names(),
        ),
    )
}

/// The control key (FREEZE-6): benchmark + exact case identities + Harbor
/// and Terminus config + the strong route + sandbox shape (AMI, type,
/// region, network). It leaves out the policy software, so many policy
/// revisions reuse one control.
pub fn control_key(m: &ManifestFile) -> String {
    // The Harbor/Terminus config without its run-scoped jobs directory:
    // FREEZE-4 makes that path new per lineage, so keeping it would make
    // every control key unique and reuse (LINEAGE-6) impossible.
    let harbor = Harbor {
        jobs_dir: String::new(),
        ..m.harbor.clone()
    };
    derive(
        "benchledger v1 control key",
        &(
            &m.benchmark,
            (&m.cases.trials, &m.cases.tasks),
            &harbor,
            &m.software.harbor_version,
            &m.software.terminus_version,
            m.route(Tier::Strong),
            (
                &m.sandbox.ami,
                &m.sandbox.instance_type,
                &m.sandbox.network,
                &m.aws.region,
            ),
        ),
    )
}

fn validate(m: &ManifestFile, src: &str) -> Result<()> {
    if m.manifest_version != MANIFEST_VERSION {
        return Err(input(
            src,
            "manifest_version",
            format!("must be {MANIFEST_VERSION}, got {}", m.manifest_version),
        ));
    }
    check_label(src, "lineage", &m.lineage)?;
    for (f, v) in [
        ("benchmark.name", &m.benchmark.name),
        ("benchmark.version", &m.benchmark.version),
        ("benchmark.dataset_repo", &m.benchmark.dataset_repo),
        ("benchmark.dataset_revision", &m.benchmark.dataset_revision),
        ("run.hypothesis", &m.run.hypothesis),
    ] {
        check_nonempty(src, f, v)?;
    }
    validate_cases(m, src)?;
    validate_groups(m, src)?;
    validate_aws(m, src)?;
    validate_software(m, src)?;
    validate_routes_and_prices(m, src)?;
    validate_limits_and_method(m, src)?;
    Ok(())
}

fn validate_cases(m: &ManifestFile, src: &str) -> Result<()> {
    let c = &m.cases;
    if c.tasks.len() > TASKS_MAX {
        return Err(input(
            src,
            "cases.tasks",
            format!("at most {TASKS_MAX} tasks, got {}", c.tasks.len()),
        ));
    }
    if c.trials.is_empty() || c.trials.len() > TRIALS_MAX {
        return Err(input(
            src,
            "cases.trials",
            format!(
                "must list 1 to {TRIALS_MAX} trial identities, got {}",
                c.trials.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, t) in c.trials.iter().enumerate() {
        check_label(src, &format!("cases.trials[{i}]"), t)?;
        if !seen.insert(t) {
            return Err(input(
                src,
                &format!("cases.trials[{i}]"),
                format!("trial {t:?} is listed twice"),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, t) in c.tasks.iter().enumerate() {
        check_label(src, &format!("cases.tasks[{i}].name"), &t.name)?;
        check_hex(
            src,
            &format!("cases.tasks[{i}].content_sha256"),
            &t.content_sha256,
            32,
        )?;
        if !names.insert(t.name.as_str()) {
            return Err(input(
                src,
                &format!("cases.tasks[{i}].name"),
                format!("task {:?} is listed twice", t.name),
            ));
        }
    }
    let mut canaries = BTreeSet::new();
    for (i, k) in c.canaries.iter().enumerate() {
        let f = |n: &str| format!("cases.canaries[{i}].{n}");
        check_label(src, &f("task"), &k.task)?;
        check_label(src, &f("trial"), &k.trial)?;
        check_hex(src, &f("content_sha256"), &k.content_sha256, 32)?;
        if names.contains(k.task.as_str()) {
            return Err(refused(Rule::Gate8, src, &f("task"), format!("canary task {:?} is a scored task; canaries use tasks outside the scored manifest", k.task)));
        }
        if !is_non_evaluation(&k.group) || !m.groups.iter().any(|g| g.name == k.group) {
            return Err(input(
                src,
                &f("group"),
                format!(
                    "{:?} is not a canary/preflight group of this manifest",
                    k.group
                ),
            ));
        }
        if !canaries.insert((&k.group, &k.task, &k.trial)) {
            return Err(input(
                src,
                &f("trial"),
                "this canary identity is listed twice",
            ));
        }
    }
    let (tasks, trials) = (c.tasks.len(), c.trials.len());
    let class_problem = match m.run.class {
        RunClass::Canary if tasks != 0 || c.canaries.is_empty() => {
            Some(format!("a canary lineage has no scored tasks and at least one canary identity; got {tasks} tasks and {} canaries", c.canaries.len()))
        }
        RunClass::MechanismIteration if !(MECHANISM_TASKS_MIN..=MECHANISM_TASKS_MAX).contains(&tasks) || trials != 1 => Some(format!(
            "a mechanism iteration has {MECHANISM_TASKS_MIN} to {MECHANISM_TASKS_MAX} tasks with exactly 1 trial each; got {tasks} tasks x {trials} trials"
        )),
        RunClass::ReplicatedExperiment if tasks == 0 || trials < REPLICATED_TRIALS_MIN => Some(format!(
            "a replicated experiment has at least {REPLICATED_TRIALS_MIN} trials per case; got {tasks} tasks x {trials} trials"
        )),
        RunClass::PublicReproduction if tasks != PUBLIC_TASKS || trials != PUBLIC_TRIALS => Some(format!(
            "a public reproduction needs all {PUBLIC_TASKS} tasks x exactly {PUBLIC_TRIALS} trials; got {tasks} tasks x {trials} trials"
        )),
        _ => None,
    };
    if let Some(p) = class_problem {
        return Err(refused(Rule::Class1, src, "run.class", p));
    }
    Ok(())
}

fn validate_groups(m: &ManifestFile, src: &str) -> Result<()> {
    if m.groups.is_empty() || m.groups.len() > GROUPS_MAX {
        return Err(input(
            src,
            "groups",
            format!("must list 1 to {GROUPS_MAX} groups, got {}", m.groups.len()),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, g) in m.groups.iter().enumerate() {
        let f = |n: &str| format!("groups[{i}].{n}");
        check_label(src, &f("name"), &g.name)?;
        if !names.insert(g.name.as_str()) {
            return Err(input(
                src,
                &f("name"),
                format!("group {:?} is listed twice", g.name),
            ));
        }
        if !is_non_evaluation(&g.name) && !EVALUATION_GROUPS.contains(&g.name.as_str()) {
            return Err(refused(Rule::Lineage1, src, &f("name"), format!(
                "{:?} is neither an evaluation group (control, r1, r2, r3) nor a canary-*/preflight-* group", g.name)));
        }
        if g.ports.is_empty() || g.ports.contains(&0) {
            return Err(input(
                src,
                &f("ports"),
                "must list at least one non-zero port",
            ));
        }
        for (n, v) in [
            ("db_path", &g.db_path),
            ("out_dir", &g.out_dir),
            ("daemon_log", &g.daemon_log),
            ("trace_path", &g.trace_path),
            ("decision_path", &g.decision_path),
            ("outcome_path", &g.outcome_path),
        ] {
            check_nonempty(src, &f(n), v)?;
        }
        check_label(src, &f("job_name"), &g.job_name)?;
    }
    let eval = m.evaluation_groups();
    let ok = match m.run.class {
        RunClass::Canary => eval.is_empty(),
        _ => eval == EVALUATION_GROUPS[..3] || eval == EVALUATION_GROUPS[..],
    };
    if !ok {
        let want = if m.run.class == RunClass::Canary {
            "no evaluation groups"
        } else {
            "control, r1, r2 or control, r1, r2, r3, in that order"
        };
        return Err(refused(
            Rule::Lineage1,
            src,
            "groups",
            format!("the evaluation groups are {eval:?}; a lineage targets {want}"),
        ));
    }
    // FREEZE-4 inside the lineage: every group's resources are its own; only
    // r1..r3 share the policy database (LINEAGE-8).
    let mut claims: BTreeMap<String, String> = BTreeMap::new();
    let policy_dbs: BTreeSet<&str> = m
        .groups
        .iter()
        .filter(|g| g.name.starts_with('r'))
        .map(|g| g.db_path.as_str())
        .collect();
    if policy_dbs.len() > 1 {
        return Err(refused(
            Rule::Lineage8,
            src,
            "groups",
            "r1..r3 must share one policy database path (db_path)",
        ));
    }
    let is_round = |name: &str| name.starts_with('r') && EVALUATION_GROUPS.contains(&name);
    let mut own: Vec<(String, String)> = Vec::new();
    for (i, g) in m.groups.iter().enumerate() {
        own.extend(
            g.ports
                .iter()
                .enumerate()
                .map(|(j, p)| (format!("port {p}"), format!("groups[{i}].ports[{j}]"))),
        );
        for (n, v) in [
            ("out_dir", &g.out_dir),
            ("daemon_log", &g.daemon_log),
            ("trace_path", &g.trace_path),
            ("decision_path", &g.decision_path),
            ("outcome_path", &g.outcome_path),
            ("db_path", &g.db_path),
        ] {
            // The one shared thing: r1..r3's policy database, claimed once below.
            if !(n == "db_path" && is_round(&g.name)) {
                own.push((format!("path {v}"), format!("groups[{i}].{n}")));
            }
        }
        own.push((
            format!("job name {}", g.job_name),
            format!("groups[{i}].job_name"),
        ));
    }
    if let Some((i, g)) = m.groups.iter().enumerate().find(|(_, g)| is_round(&g.name)) {
        own.push((
            format!("path {}", g.db_path),
            format!("groups[{i}].db_path"),
        ));
    }
    for (k, field) in own {
        if let Some(first) = claims.insert(k.clone(), field.clone()) {
            return Err(refused(
                Rule::Freeze4,
                src,
                &field,
                format!("{k} is already used by {first}; every group needs its own"),
            ));
        }
    }
    Ok(())
}

fn validate_aws(m: &ManifestFile, src: &str) -> Result<()> {
    let a = &m.aws;
    let selectors = usize::from(a.profile.is_some())
        + usize::from(a.assume_role)
        + usize::from(a.instance_profile);
    if selectors != 1 {
        return Err(refused(Rule::Gate1, src, "aws", format!(
            "exactly one explicit identity selector (profile, assume_role or instance_profile) is required, got {selectors}")));
    }
    if let Some(p) = &a.profile {
        if p.is_empty() || p == "default" {
            return Err(refused(Rule::Gate1, src, "aws.profile", "a named profile other than \"default\" is required; the ambient default is never used"));
        }
        check_label(src, "aws.profile", p)?;
    }
    check_label(src, "aws.region", &a.region)?;
    if a.quota_code != EC2_VCPU_QUOTA_CODE {
        return Err(input(
            src,
            "aws.quota_code",
            format!(
                "must be {EC2_VCPU_QUOTA_CODE} (Standard On-Demand vCPUs), got {:?}",
                a.quota_code
            ),
        ));
    }
    let c = &m.central;
    if c.mode == CentralMode::Reuse && c.instance_id.is_none() {
        return Err(input(
            src,
            "central.instance_id",
            "a reused central host needs its instance id",
        ));
    }
    for (f, v) in [
        ("central.ami", &c.ami),
        ("central.instance_type", &c.instance_type),
        ("central.role_tag_value", &c.role_tag_value),
        ("central.daemon_host", &c.daemon_host),
        ("sandbox.ami", &m.sandbox.ami),
        ("sandbox.instance_type", &m.sandbox.instance_type),
        ("sandbox.network", &m.sandbox.network),
    ] {
        check_nonempty(src, f, v)?;
    }
    if c.vcpu == 0 || m.sandbox.vcpu == 0 {
        return Err(input(src, "sandbox.vcpu", "vcpu counts must be at least 1"));
    }
    let t = &m.tags;
    for (f, v) in [
        ("tags.run_key", &t.run_key),
        ("tags.run_value", &t.run_value),
        ("tags.role_key", &t.role_key),
        ("tags.sandbox_role_value", &t.sandbox_role_value),
        ("tags.case_key", &t.case_key),
        ("tags.trial_key", &t.trial_key),
    ] {
        check_nonempty(src, f, v)?;
    }
    Ok(())
}

fn validate_software(m: &ManifestFile, src: &str) -> Result<()> {
    let s = &m.software;
    check_hex(
        src,
        "software.bitrouter_binary_sha256",
        &s.bitrouter_binary_sha256,
        32,
    )?;
    if !["x86_64", "aarch64"].contains(&s.bitrouter_arch.as_str()) {
        return Err(input(
            src,
            "software.bitrouter_arch",
            format!("must be x86_64 or aarch64, got {:?}", s.bitrouter_arch),
        ));
    }
    for g in &m.groups {
        let Some(h) = s.bitrouter_config_sha256.get(&g.name) else {
            return Err(input(
                src,
                "software.bitrouter_config_sha256",
                format!("no config hash for group {:?}", g.name),
            ));
        };
        check_hex(
            src,
            &format!("software.bitrouter_config_sha256.{}", g.name),
            h,
            32,
        )?;
    }
    for (i, r) in s.sources.iter().enumerate() {
        check_label(src, &format!("software.sources[{i}].name"), &r.name)?;
        check_nonempty(src, &format!("software.sources[{i}].repo"), &r.repo)?;
        if r.commit.len() < 7 || !r.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(input(
                src,
                &format!("software.sources[{i}].commit"),
                format!("must be a git commit (hex), got {:?}", r.commit),
            ));
        }
        if let Some(p) = &r.patch_sha256 {
            check_hex(src, &format!("software.sources[{i}].patch_sha256"), p, 32)?;
        }
    }
    let h = &m.harbor;
    if h.retries != 0 {
        return Err(refused(Rule::Case5, src, "harbor.retries", format!(
            "Harbor's own retries must stay 0 (a Harbor retry reruns a started identity), got {}", h.retries)));
    }
    for (f, v) in [
        ("harbor.agent", &h.agent),
        ("harbor.local_api_key", &h.local_api_key),
        ("harbor.jobs_dir", &h.jobs_dir),
        ("software.harbor_version", &s.harbor_version),
        ("software.terminus_version", &s.terminus_version),
    ] {
        check_nonempty(src, f, v)?;
    }
    if h.agent_timeout_sec == 0 || h.verifier_timeout_sec == 0 {
        return Err(input(
            src,
            "harbor.agent_timeout_sec",
            "timeouts must be at least 1 second",
        ));
    }
    Ok(())
}

fn validate_routes_and_prices(m: &ManifestFile, src: &str) -> Result<()> {
    let mut tiers = BTreeSet::new();
    for (i, r) in m.routes.iter().enumerate() {
        if !tiers.insert(r.tier) {
            return Err(input(
                src,
                &format!("routes[{i}].tier"),
                format!("tier {:?} has two routes", r.tier),
            ));
        }
        for (n, v) in [
            ("provider", &r.provider),
            ("model", &r.model),
            ("credential_class", &r.credential_class),
            ("gate_target", &r.gate_target),
        ] {
            check_nonempty(src, &format!("routes[{i}].{n}"), v)?;
        }
    }
    if m.route(Tier::Strong).is_none() {
        return Err(input(
            src,
            "routes",
            "a strong route is required (control resolves every request to it)",
        ));
    }
    for (i, p) in m.prices.iter().enumerate() {
        let f = |n: &str| format!("prices[{i}].{n}");
        if p.currency != "USD" {
            return Err(input(
                src,
                &f("currency"),
                format!("must be USD, got {:?}", p.currency),
            ));
        }
        for (n, v) in [
            ("uncached_input", Some(p.uncached_input)),
            ("cache_read", p.cache_read),
            ("cache_write", p.cache_write),
            ("output", Some(p.output)),
        ] {
            if v.is_some_and(|d| d.is_negative()) {
                return Err(refused(
                    Rule::Settle3,
                    src,
                    &f(n),
                    "a rate is never negative",
                ));
            }
        }
        check_nonempty(src, &f("source"), &p.source)?;
        check_date(src, &f("effective_from"), &p.effective_from)?;
        if let Some(to) = &p.effective_to {
            check_date(src, &f("effective_to"), to)?;
            if to <= &p.effective_from {
                return Err(input(
                    src,
                    &f("effective_to"),
                    "must be after effective_from",
                ));
            }
        }
    }
    for (i, r) in m.routes.iter().enumerate() {
        let covered = m.prices.iter().any(|p| {
            p.provider == r.provider
                && p.model == r.model
                && p.credential_class == r.credential_class
        });
        if !covered {
            return Err(refused(
                Rule::Freeze8,
                src,
                &format!("routes[{i}]"),
                format!(
                    "no price record for {}/{} ({}); every route needs one",
                    r.provider, r.model, r.credential_class
                ),
            ));
        }
    }
    Ok(())
}

fn validate_limits_and_method(m: &ManifestFile, src: &str) -> Result<()> {
    let l = &m.limits;
    if l.concurrency == 0 {
        return Err(input(src, "limits.concurrency", "must be at least 1"));
    }
    if l.gate_freshness_sec == 0 {
        return Err(input(
            src,
            "limits.gate_freshness_sec",
            "must be at least 1 second",
        ));
    }
    if l.reconciliation_attempts == 0 {
        return Err(input(
            src,
            "limits.reconciliation_attempts",
            "must be at least 1",
        ));
    }
    let tasks: BTreeSet<&str> = m.cases.tasks.iter().map(|t| t.name.as_str()).collect();
    let me = &m.method;
    for (f, list) in [
        ("method.tuning_tasks", &me.tuning_tasks),
        ("method.held_out_tasks", &me.held_out_tasks),
    ] {
        for (i, t) in list.iter().enumerate() {
            if !tasks.contains(t.as_str()) {
                return Err(input(
                    src,
                    &format!("{f}[{i}]"),
                    format!("{t:?} is not a task of cases.tasks"),
                ));
            }
        }
    }
    if let Some(t) = me
        .tuning_tasks
        .iter()
        .find(|t| me.held_out_tasks.contains(t))
    {
        return Err(refused(
            Rule::Lineage7,
            src,
            "method.held_out_tasks",
            format!("{t:?} is both a tuning and a held-out task"),
        ));
    }
    check_nonempty(src, "method.interval_method", &me.interval_method)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Private values: commitments and redaction
// ---------------------------------------------------------------------------

/// Parses a 32-byte hex commitment key.
pub fn commitment_key(hex_key: &str, source: &str) -> Result<[u8; 32]> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(hex_key, &mut key)
        .map_err(|_| input(source, "commitment_key", "must be 64 hex digits"))?;
    if key == [0u8; 32] {
        return Err(input(
            source,
            "commitment_key",
            "must not be all zeros; generate 32 random bytes",
        ));
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

fn committed(key: &[u8; 32], field: &str, value: &str, redacted: String) -> Committed {
    Committed {
        commitment: commit(key, field, value),
        redacted,
    }
}

fn commit_private(m: &ManifestFile, p: &PrivateFile, src: &str) -> Result<PrivateCommitments> {
    if p.lineage != m.lineage {
        return Err(input(
            src,
            "lineage",
            crate::schema::secrets::withhold(&format!(
                "{:?} is not the public manifest's lineage {:?}",
                p.lineage, m.lineage
            )),
        ));
    }
    let key = commitment_key(&p.commitment_key, src)?;
    if p.aws.account.len() != 12 || !p.aws.account.bytes().all(|b| b.is_ascii_digit()) {
        return Err(input(
            src,
            "aws.account",
            "must be a 12-digit AWS account id",
        ));
    }
    for (f, arn) in [
        ("aws.principal_arn", Some(&p.aws.principal_arn)),
        ("aws.role_arn", p.aws.role_arn.as_ref()),
    ] {
        if let Some(arn) = arn {
            if !arn.starts_with("arn:aws") || arn.split(':').nth(4) != Some(p.aws.account.as_str())
            {
                return Err(input(src, f, "must be an ARN in the manifest's account"));
            }
        }
    }
    if m.aws.assume_role != p.aws.role_arn.is_some() {
        return Err(input(
            src,
            "aws.role_arn",
            "is required exactly when the public manifest selects assume_role",
        ));
    }
    let mut secret_locations = BTreeMap::new();
    for r in &m.routes {
        let Some(loc) = p.secret_locations.get(&r.tier) else {
            return Err(input(
                src,
                "secret_locations",
                format!("no location for the {:?} route's secret", r.tier),
            ));
        };
        let ok = loc.strip_prefix("env:").is_some_and(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        }) || loc
            .strip_prefix("file:")
            .is_some_and(|p| p.starts_with('/'));
        if !ok || crate::schema::secrets::scan(loc).is_some() {
            return Err(refused(Rule::Freeze2, src, &format!("secret_locations.{:?}", r.tier), "must say where the secret lives (env:NAME or file:/absolute/path), never the secret itself"));
        }
        secret_locations.insert(
            r.tier,
            committed(
                &key,
                &format!("secret_location.{:?}", r.tier),
                loc,
                redact_location(loc),
            ),
        );
    }
    Ok(PrivateCommitments {
        account: committed(
            &key,
            "aws.account",
            &p.aws.account,
            redact_account(&p.aws.account),
        ),
        principal_arn: committed(
            &key,
            "aws.principal_arn",
            &p.aws.principal_arn,
            redact_arn(&p.aws.principal_arn),
        ),
        role_arn: p
            .aws
            .role_arn
            .as_ref()
            .map(|r| committed(&key, "aws.role_arn", r, redact_arn(r))),
        secret_locations,
    })
}

/// Checks every commitment of a frozen manifest against a private file.
/// Returns the fields checked, or the first that differs.
pub fn check_private(frozen: &Manifest, private_text: &str, source: &str) -> Result<Vec<String>> {
    let p: PrivateFile = parse_toml(private_text, source)?;
    let again = commit_private(&frozen.public, &p, source)?;
    let mut checked = vec!["aws.account".to_string(), "aws.principal_arn".to_string()];
    let pairs = [
        ("aws.account", &frozen.private.account, &again.account),
        (
            "aws.principal_arn",
            &frozen.private.principal_arn,
            &again.principal_arn,
        ),
    ];
    for (f, a, b) in pairs {
        if a != b {
            return Err(Error::Refused {
                rule: Rule::Freeze2,
                message: format!("{source}: field {f}: does not match the frozen commitment"),
            });
        }
    }
    if frozen.private.role_arn != again.role_arn {
        return Err(Error::Refused {
            rule: Rule::Freeze2,
            message: format!("{source}: field aws.role_arn: does not match the frozen commitment"),
        });
    }
    if frozen.private.role_arn.is_some() {
        checked.push("aws.role_arn".into());
    }
    for (tier, c) in &frozen.private.secret_locations {
        if again.secret_locations.get(tier) != Some(c) {
            return Err(Error::Refused { rule: Rule::Freeze2, message: format!("{source}: field secret_locations.{tier:?}: does not match the frozen commitment") });
        }
        checked.push(format!(
            "secret_locations.{}",
            format!("{tier:?}").to_lowercase()
        ));
    }
    Ok(checked)
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

#[cfg(test)]
#[path = "manifest_tests.rs"]
pub(crate) mod tests;
