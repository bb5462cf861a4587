//! The manifest files as the operator writes them: TOML input types, apart
//! from the stored types of `crate::schema::manifest`.
//!
//! Every input struct refuses unknown keys (`deny_unknown_fields`) and has
//! a conversion into its stored counterpart that names each field (a
//! destructuring `let`), so a key added here does not compile until the
//! conversion says where it goes, and the stored layout changes only by an
//! edit of `schema::manifest` (which needs a new event kind version). The
//! private file has no stored form: only its commitments are stored.
//!
//! The enums (`RunClass`, `Tier`, ...) are shared with the stored form:
//! they are domain values every layer uses, and their TOML names are their
//! serde names.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::schema::manifest::{
    Aws, Benchmark, CanaryCase, Cases, Central, CentralLaunch, CentralMode, Group, Harbor, Limits,
    ManifestFile, Method, PriceBasis, PriceRecord, Route, RouteProtocol, Run, RunClass, RunRole,
    Sandbox, Software, SourceRepo, Tags, Task, Tier,
};
use crate::schema::money::Dec;

/// The public manifest as the operator writes it (`manifest.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestToml {
    /// Must be 1.
    pub manifest_version: u16,
    /// The lineage label: new per lineage, no credential, account id or secret.
    pub lineage: String,
    pub benchmark: BenchmarkToml,
    /// Run class, role and hypothesis.
    pub run: RunToml,
    /// Ordered tasks, trial identities and canary identities.
    pub cases: CasesToml,
    /// Ordered groups: canary/preflight groups, then control, r1, r2 [, r3].
    pub groups: Vec<GroupToml>,
    /// The AWS selector and region (private values live in the private file).
    pub aws: AwsToml,
    /// The central BitRouter host.
    pub central: CentralToml,
    /// The sandbox shape.
    pub sandbox: SandboxToml,
    /// Resource tag keys and values.
    pub tags: TagsToml,
    /// Pinned software.
    pub software: SoftwareToml,
    /// Harbor and Terminus 2 settings.
    pub harbor: HarborToml,
    /// One route per tier.
    pub routes: Vec<RouteToml>,
    /// One price record per provider/model/credential class and period.
    pub prices: Vec<PriceRecordToml>,
    /// Concurrency, timeouts, settlement and stop limits.
    pub limits: LimitsToml,
    /// Everything FREEZE-8 adds.
    pub method: MethodToml,
    /// v2: evidence binding (BIND-1, BIND-2, BIND-7).
    #[serde(default)]
    pub binding: Option<super::plan::BindingToml>,
    /// v2: how `run` launches a case.
    #[serde(default)]
    pub launch: Option<super::plan::LaunchToml>,
    /// v2: how `run` gathers BitRouter's evidence.
    #[serde(default)]
    pub evidence: Option<super::plan::EvidenceToml>,
    /// v2: the allowed signers (TRUST-3).
    #[serde(default)]
    pub signers: Option<super::plan::SignersToml>,
    /// The witnesses and quorum (TRUST-6; frozen in `manifest_frozen.v3`).
    #[serde(default)]
    pub witnessing: Option<super::plan::WitnessingToml>,
}

/// Benchmark identity (FREEZE-1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunToml {
    pub class: RunClass,
    /// Tuning or held-out.
    pub role: RunRole,
    /// The hypothesis the report states.
    pub hypothesis: String,
}

/// One task with its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskToml {
    pub name: String,
    /// SHA-256 of the task's content (Harbor's `task_checksum`), hex.
    pub content_sha256: String,
}

/// A non-evaluation canary identity (GATE-5, GATE-8).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryCaseToml {
    /// The canary group it belongs to.
    pub group: String,
    /// A task outside the scored list.
    pub task: String,
    pub trial: String,
    /// SHA-256 of the task's content, hex.
    pub content_sha256: String,
}

/// The case identities (FREEZE-1, CASE-8).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CasesToml {
    /// Trial identities, e.g. `["t1"]` or `["t1", "t2", "t3", "t4", "t5"]`.
    pub trials: Vec<String>,
    /// Ordered scored tasks.
    pub tasks: Vec<TaskToml>,
    /// Non-evaluation canary identities.
    #[serde(default)]
    pub canaries: Vec<CanaryCaseToml>,
    /// Tasks left out before the freeze (`[[cases.excluded]]`; CLASS-1).
    #[serde(default)]
    pub excluded: Vec<ExcludedTaskToml>,
}

/// `[[cases.excluded]]`: one task left out before the freeze and why.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExcludedTaskToml {
    /// The task's name.
    pub task: String,
    /// Why it was left out (e.g. its provider failed in preflight).
    pub reason: String,
}

/// One group with its run-scoped resources (FREEZE-4).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsToml {
    /// A named profile (never `default`).
    pub profile: Option<String>,
    /// Assume the private manifest's role ARN.
    #[serde(default)]
    pub assume_role: bool,
    /// Use the instance profile of the host.
    #[serde(default)]
    pub instance_profile: bool,
    pub region: String,
    /// Must be `L-1216C47A`.
    pub quota_code: String,
    /// vCPUs kept free beyond the batch's need.
    pub quota_headroom_vcpu: u64,
}

/// The central BitRouter host (FREEZE-1, FREEZE-8, CLEAN-2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CentralToml {
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
    /// How `central up` launches it (provision mode; `manifest_frozen.v3`).
    #[serde(default)]
    pub launch: Option<CentralLaunchToml>,
}

/// `[central.launch]`: the network a provisioned central host is launched
/// into and how long it may take to be `running`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CentralLaunchToml {
    pub subnet_id: String,
    pub security_group_ids: Vec<String>,
    /// Longest wait for `running`, in seconds.
    pub ready_timeout_sec: u64,
}

impl From<CentralLaunchToml> for CentralLaunch {
    fn from(input: CentralLaunchToml) -> Self {
        let CentralLaunchToml {
            subnet_id,
            security_group_ids,
            ready_timeout_sec,
        } = input;
        CentralLaunch {
            subnet_id,
            security_group_ids,
            ready_timeout_sec,
        }
    }
}

/// The sandbox shape (FREEZE-6: AMI, type, region and network).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxToml {
    pub ami: String,
    pub instance_type: String,
    /// vCPUs per sandbox.
    pub vcpu: u64,
    /// Network shape (subnet/security-group/egress description).
    pub network: String,
}

/// Resource tags (CLEAN-1): exact keys and the run's values.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagsToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRepoToml {
    /// A short name (`bitrouter`, `harbor`).
    pub name: String,
    pub repo: String,
    pub commit: String,
    /// SHA-256 of an applied patch, if any.
    pub patch_sha256: Option<String>,
}

/// Pinned software (FREEZE-1, GATE-4).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoftwareToml {
    /// Source trees.
    pub sources: Vec<SourceRepoToml>,
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarborToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceRecordToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsToml {
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodToml {
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
pub struct PrivateToml {
    /// Must equal the public file's lineage.
    pub lineage: String,
    /// 32 bytes, hex: the key of every commitment.
    pub commitment_key: String,
    pub aws: PrivateAwsToml,
    /// Where each tier's secret lives (`env:NAME`, `file:/path`), never the value.
    pub secret_locations: BTreeMap<Tier, String>,
}

/// `[aws]` of the private manifest: values committed to (hashed) in the public one, never
/// published.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateAwsToml {
    /// The 12-digit account id.
    pub account: String,
    /// The principal ARN STS must answer.
    pub principal_arn: String,
    /// The role to assume when the selector is `assume_role`.
    pub role_arn: Option<String>,
}

// ---------------------------------------------------------------------------
// Input -> stored form: one field at a time, nothing dropped or invented
// ---------------------------------------------------------------------------

impl ManifestToml {
    /// The stored manifest and the v2 sections, every field named.
    pub fn split(
        mut self,
    ) -> (
        ManifestFile,
        super::plan::PlanToml,
        Option<CentralLaunchToml>,
        Vec<ExcludedTaskToml>,
        Option<super::plan::WitnessingToml>,
    ) {
        let central_launch = self.central.launch.take();
        let excluded = std::mem::take(&mut self.cases.excluded);
        let ManifestToml {
            manifest_version,
            lineage,
            benchmark,
            run,
            cases,
            groups,
            aws,
            central,
            sandbox,
            tags,
            software,
            harbor,
            routes,
            prices,
            limits,
            method,
            binding,
            launch,
            evidence,
            signers,
            witnessing,
        } = self;
        let file = ManifestFile {
            manifest_version,
            lineage,
            benchmark: Benchmark::from(benchmark),
            run: Run::from(run),
            cases: Cases::from(cases),
            groups: groups.into_iter().map(Group::from).collect(),
            aws: Aws::from(aws),
            central: Central::from(central),
            sandbox: Sandbox::from(sandbox),
            tags: Tags::from(tags),
            software: Software::from(software),
            harbor: Harbor::from(harbor),
            routes: routes.into_iter().map(Route::from).collect(),
            prices: prices.into_iter().map(PriceRecord::from).collect(),
            limits: Limits::from(limits),
            method: Method::from(method),
        };
        let plan = super::plan::PlanToml {
            binding,
            launch,
            evidence,
            signers,
        };
        (file, plan, central_launch, excluded, witnessing)
    }
}

impl From<BenchmarkToml> for Benchmark {
    fn from(input: BenchmarkToml) -> Self {
        let BenchmarkToml {
            name,
            version,
            dataset_repo,
            dataset_revision,
        } = input;
        Benchmark {
            name,
            version,
            dataset_repo,
            dataset_revision,
        }
    }
}

impl From<RunToml> for Run {
    fn from(input: RunToml) -> Self {
        let RunToml {
            class,
            role,
            hypothesis,
        } = input;
        Run {
            class,
            role,
            hypothesis,
        }
    }
}

impl From<TaskToml> for Task {
    fn from(input: TaskToml) -> Self {
        let TaskToml {
            name,
            content_sha256,
        } = input;
        Task {
            name,
            content_sha256,
        }
    }
}

impl From<CanaryCaseToml> for CanaryCase {
    fn from(input: CanaryCaseToml) -> Self {
        let CanaryCaseToml {
            group,
            task,
            trial,
            content_sha256,
        } = input;
        CanaryCase {
            group,
            task,
            trial,
            content_sha256,
        }
    }
}

impl From<CasesToml> for Cases {
    fn from(input: CasesToml) -> Self {
        let CasesToml {
            trials,
            tasks,
            canaries,
            excluded: _,
        } = input;
        Cases {
            trials,
            tasks: tasks.into_iter().map(Task::from).collect(),
            canaries: canaries.into_iter().map(CanaryCase::from).collect(),
        }
    }
}

impl From<GroupToml> for Group {
    fn from(input: GroupToml) -> Self {
        let GroupToml {
            name,
            ports,
            db_path,
            out_dir,
            daemon_log,
            trace_path,
            decision_path,
            outcome_path,
            job_name,
        } = input;
        Group {
            name,
            ports,
            db_path,
            out_dir,
            daemon_log,
            trace_path,
            decision_path,
            outcome_path,
            job_name,
        }
    }
}

impl From<AwsToml> for Aws {
    fn from(input: AwsToml) -> Self {
        let AwsToml {
            profile,
            assume_role,
            instance_profile,
            region,
            quota_code,
            quota_headroom_vcpu,
        } = input;
        Aws {
            profile,
            assume_role,
            instance_profile,
            region,
            quota_code,
            quota_headroom_vcpu,
        }
    }
}

impl From<CentralToml> for Central {
    fn from(input: CentralToml) -> Self {
        let CentralToml {
            mode,
            ami,
            instance_type,
            vcpu,
            role_tag_value,
            instance_id,
            daemon_host,
            launch: _,
        } = input;
        Central {
            mode,
            ami,
            instance_type,
            vcpu,
            role_tag_value,
            instance_id,
            daemon_host,
        }
    }
}

impl From<SandboxToml> for Sandbox {
    fn from(input: SandboxToml) -> Self {
        let SandboxToml {
            ami,
            instance_type,
            vcpu,
            network,
        } = input;
        Sandbox {
            ami,
            instance_type,
            vcpu,
            network,
        }
    }
}

impl From<TagsToml> for Tags {
    fn from(input: TagsToml) -> Self {
        let TagsToml {
            run_key,
            run_value,
            role_key,
            sandbox_role_value,
            case_key,
            trial_key,
        } = input;
        Tags {
            run_key,
            run_value,
            role_key,
            sandbox_role_value,
            case_key,
            trial_key,
        }
    }
}

impl From<SourceRepoToml> for SourceRepo {
    fn from(input: SourceRepoToml) -> Self {
        let SourceRepoToml {
            name,
            repo,
            commit,
            patch_sha256,
        } = input;
        SourceRepo {
            name,
            repo,
            commit,
            patch_sha256,
        }
    }
}

impl From<SoftwareToml> for Software {
    fn from(input: SoftwareToml) -> Self {
        let SoftwareToml {
            sources,
            bitrouter_binary_sha256,
            bitrouter_arch,
            bitrouter_config_sha256,
            harbor_version,
            terminus_version,
        } = input;
        Software {
            sources: sources.into_iter().map(SourceRepo::from).collect(),
            bitrouter_binary_sha256,
            bitrouter_arch,
            bitrouter_config_sha256,
            harbor_version,
            terminus_version,
        }
    }
}

impl From<HarborToml> for Harbor {
    fn from(input: HarborToml) -> Self {
        let HarborToml {
            retries,
            agent,
            local_api_key,
            jobs_dir,
            agent_timeout_sec,
            verifier_timeout_sec,
            accepted_exceptions,
            policy_model,
            policy_protocol,
        } = input;
        Harbor {
            retries,
            agent,
            local_api_key,
            jobs_dir,
            agent_timeout_sec,
            verifier_timeout_sec,
            accepted_exceptions,
            policy_model,
            policy_protocol,
        }
    }
}

impl From<RouteToml> for Route {
    fn from(input: RouteToml) -> Self {
        let RouteToml {
            tier,
            provider,
            model,
            protocol,
            credential_class,
            gate_target,
        } = input;
        Route {
            tier,
            provider,
            model,
            protocol,
            credential_class,
            gate_target,
        }
    }
}

impl From<PriceRecordToml> for PriceRecord {
    fn from(input: PriceRecordToml) -> Self {
        let PriceRecordToml {
            provider,
            model,
            credential_class,
            currency,
            uncached_input,
            cache_read,
            cache_write,
            output,
            cache_price_fallback,
            basis,
            source,
            effective_from,
            effective_to,
        } = input;
        PriceRecord {
            provider,
            model,
            credential_class,
            currency,
            uncached_input,
            cache_read,
            cache_write,
            output,
            cache_price_fallback,
            basis,
            source,
            effective_from,
            effective_to,
        }
    }
}

impl From<LimitsToml> for Limits {
    fn from(input: LimitsToml) -> Self {
        let LimitsToml {
            concurrency,
            settlement_grace_sec,
            reconciliation_attempts,
            gate_freshness_sec,
            spend_stop_micro_usd,
            severe_quality_stop_pct,
        } = input;
        Limits {
            concurrency,
            settlement_grace_sec,
            reconciliation_attempts,
            gate_freshness_sec,
            spend_stop_micro_usd,
            severe_quality_stop_pct,
        }
    }
}

impl From<MethodToml> for Method {
    fn from(input: MethodToml) -> Self {
        let MethodToml {
            security_skip_enabled,
            quality_tolerance_pct,
            cost_tolerance_pct,
            tuning_tasks,
            held_out_tasks,
            control_emits_decisions,
            interval_method,
            interval_seed,
            interval_resamples,
        } = input;
        Method {
            security_skip_enabled,
            quality_tolerance_pct,
            cost_tolerance_pct,
            tuning_tasks,
            held_out_tasks,
            control_emits_decisions,
            interval_method,
            interval_seed,
            interval_resamples,
        }
    }
}
