//! A deterministic lineage builder: drives the real `decide` functions with
//! an injected clock and synthesizes the evidence the tools would ingest
//! (Harbor results, BitRouter traces, decisions, usage, receipts, cleanup).
//! Used by the replay-test generator (`tools/gen_replay.rs`), the verdict
//! tests and the benchmarks. Pure: the state is folded in memory; `write`
//! puts the records into a ledger.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::log::ledger::{Draft, Ledger};
use crate::method::projections::{At, State};
use crate::schema::events::*;
use crate::schema::manifest::{is_non_evaluation, Tier};
use crate::schema::money::{bitrouter_charge, Charge};

/// 2026-11-25T00:00:00Z in ns: the first event's clock.
pub const T0_UTC_NS: u64 = 1_795_564_800_000_000_000;
/// Each event advances the clock by this much.
pub const STEP_NS: u64 = 1_000_000_000;
/// The ledger id of generated ledgers.
pub const LEDGER_ID: [u8; 16] = *b"benchledger-gen1";

fn hex64(tag: &str) -> String {
    hex::encode(blake3::hash(tag.as_bytes()).as_bytes())
}

/// The three AWS gate observations of a group, passing, as `identity
/// prove`, `quota check` and `check residue` would record them against
/// this frozen manifest (GATE-1..3).
pub fn aws_observations(frozen: &ManifestFrozen, group: &str) -> Vec<Event> {
    let m = &frozen.manifest.public;
    vec![
        Event::IdentityChecked(IdentityChecked {
            lineage: frozen.lineage.clone(),
            selector: format!("profile:{}", m.aws.profile.clone().unwrap_or_default()),
            region: m.aws.region.clone(),
            endpoint_override: None,
            ambient_variables_ignored: vec![],
            account: Some(frozen.manifest.private.account.clone()),
            principal: Some(frozen.manifest.private.principal_arn.clone()),
            status: Status::Pass,
            error: None,
        }),
        Event::QuotaChecked(QuotaChecked {
            lineage: frozen.lineage.clone(),
            region: m.aws.region.clone(),
            quota_code: m.aws.quota_code.clone(),
            quota_vcpu: 64,
            used_vcpu: 0,
            available_vcpu: 64,
            required_vcpu: 10,
            status: Status::Pass,
            error: None,
        }),
        Event::CheckRecorded(CheckRecorded {
            lineage: frozen.lineage.clone(),
            group: Some(group.to_string()),
            check: CheckKind::Residue,
            target: m.tags.run_value.clone(),
            status: Status::Pass,
            details: BTreeMap::new(),
        }),
    ]
}

/// How a request is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptMode {
    /// No receipt: BitRouter computed the charge from configured prices.
    None,
    /// An authoritative computed receipt with the right charge.
    Computed,
    /// A receipt still pending.
    Pending,
    /// A computed receipt whose charge differs by `delta` micro-USD.
    Mismatch(u64),
}

/// One synthesized request.
#[derive(Debug, Clone)]
pub struct Req {
    /// The persisted request id.
    pub id: String,
    /// The tier it is routed to (control: always strong).
    pub tier: Tier,
    /// Whether to record a trace.
    pub trace: bool,
    /// Whether to record a usage row.
    pub usage: bool,
    /// Whether to record a decision (policy groups).
    pub decision: bool,
    /// Its receipt.
    pub receipt: ReceiptMode,
}

/// The builder.
pub struct World {
    /// The folded state (scanning for secrets).
    pub state: State,
    /// Every event with its time, actor and idempotency key, from seq 1.
    pub records: Vec<(u64, Event)>,
    /// The clock.
    pub now_ns: u64,
    /// The current lineage.
    pub lineage: String,
    /// Requests per case `case_requests` synthesizes (default 2).
    pub requests_per_case: usize,
    /// When each group's gates were last recorded.
    gates_at: BTreeMap<String, u64>,
}

/// Gates are re-recorded before a start when older than this (the example
/// manifest's freshness window is 1800 s).
pub const GATES_REFRESH_NS: u64 = 1_200 * 1_000_000_000;

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// An empty world (seq 0 is the genesis `write` adds).
    pub fn new() -> World {
        World {
            state: State::scanning(),
            records: Vec::new(),
            now_ns: T0_UTC_NS,
            lineage: String::new(),
            requests_per_case: 2,
            gates_at: BTreeMap::new(),
        }
    }

    /// Appends events as if accepted: folds them at the next seqs.
    pub fn push(&mut self, events: Vec<Event>) {
        for e in events {
            self.now_ns += STEP_NS;
            let seq = self.records.len() as u64 + 1;
            self.state.apply(
                At {
                    seq,
                    utc_ns: self.now_ns,
                },
                &e,
            );
            self.records.push((self.now_ns, e));
        }
    }

    /// Runs a decision against the state; appends its events or returns
    /// the refusal with nothing appended.
    pub fn decide(
        &mut self,
        f: impl FnOnce(&State, u64) -> Result<Vec<Event>>,
    ) -> Result<Vec<Event>> {
        let events = f(&self.state, self.now_ns + STEP_NS)?;
        self.push(events.clone());
        Ok(events)
    }

    /// Lets time pass.
    pub fn advance_sec(&mut self, secs: u64) {
        self.now_ns += secs * 1_000_000_000;
    }

    fn lineage_state(&self) -> &crate::method::projections::LineageState {
        &self.state.lineages[&self.lineage]
    }

    fn gref(&self, group: &str) -> GroupRef {
        GroupRef {
            lineage: self.lineage.clone(),
            group: group.to_string(),
        }
    }

    /// Freezes a manifest pair and signs it off with the example keys
    /// (operator `alice`, reviewer `bob`).
    pub fn freeze(&mut self, public: &str, private: &str) -> Result<()> {
        let frozen = crate::method::freeze::freeze(
            public,
            "manifest.toml",
            private,
            "manifest.private.toml",
        )?;
        self.lineage = frozen.lineage.clone();
        self.decide(|s, _| crate::method::decide::freeze(s, frozen))?;
        let l = self.lineage.clone();
        for (role, who) in [
            (SignOffRole::Operator, "alice"),
            (SignOffRole::Reviewer, "bob"),
        ] {
            self.decide(|s, _| {
                let key = crate::testkit::examples::signer(who);
                let signed = crate::method::trust::sign_sign_off(s.lineage(Some(&l))?, role, &key)
                    .map_err(crate::error::Error::input)?;
                crate::method::decide::sign_off_signed(s, signed)
            })?;
        }
        Ok(())
    }

    fn check(&self, kind: CheckKind, group: Option<&str>, target: &str) -> Event {
        Event::CheckRecorded(CheckRecorded {
            lineage: self.lineage.clone(),
            group: group.map(Into::into),
            check: kind,
            target: target.into(),
            status: Status::Pass,
            details: BTreeMap::new(),
        })
    }

    /// Records every pre-batch gate of `group`, passing (GATE-1..3).
    pub fn gates(&mut self, group: &str) {
        let m = self.lineage_state().frozen.manifest.public.clone();
        let mut v = aws_observations(&self.lineage_state().frozen, group);
        v.push(self.check(
            CheckKind::DaemonHealth,
            Some(group),
            &format!(
                    "http://{}:{}/health",
                    m.central.daemon_host,
                    m.groups
                        .iter()
                        .find(|g| g.name == group)
                        .map_or(0, |g| g.ports[0])
                ),
        ));
        for t in crate::method::lineage::group_routes(self.lineage_state(), group) {
            if let Some(r) = m.route(t) {
                v.push(self.check(CheckKind::ProviderSentinel, None, &r.gate_target));
            }
        }
        self.push(v);
        self.gates_at.insert(group.to_string(), self.now_ns);
    }

    /// Opens a group with the frozen daemon values (GATE-4), then records
    /// its pre-batch gates.
    pub fn open(&mut self, group: &str) -> Result<()> {
        let m = self.lineage_state().frozen.manifest.public.clone();
        let g = m
            .groups
            .iter()
            .find(|g| g.name == group)
            .ok_or_else(|| Error::input(format!("no group {group}")))?;
        let cmd = crate::method::decide::GroupOpen {
            lineage: Some(self.lineage.clone()),
            group: group.to_string(),
            binary_sha256: m.software.bitrouter_binary_sha256.clone(),
            config_sha256: m
                .software
                .bitrouter_config_sha256
                .get(group)
                .cloned()
                .unwrap_or_default(),
            ports: g.ports.clone(),
            db_path: g.db_path.clone(),
            out_dir: g.out_dir.clone(),
        };
        self.decide(|s, _| crate::method::decide::group_open(s, cmd))?;
        self.gates(group);
        Ok(())
    }

    /// Validates and starts a case; `config_override` launches a different
    /// (validated) config than the frozen rendering.
    pub fn start(
        &mut self,
        group: &str,
        case: &CaseRef,
        config_override: Option<&str>,
    ) -> Result<()> {
        let m = self.lineage_state().frozen.manifest.public.clone();
        let rendered = crate::method::trial_config::render(&m, group, case)?;
        let hash = config_override.map_or(rendered.blake3.clone(), hex64);
        if self
            .gates_at
            .get(group)
            .is_none_or(|t| self.now_ns.saturating_sub(*t) > GATES_REFRESH_NS)
        {
            self.gates(group);
        }
        let v = self.check(CheckKind::ConfigValidated, None, &hash);
        self.push(vec![v]);
        let cmd = crate::method::decide::CaseStart {
            lineage: Some(self.lineage.clone()),
            group: group.to_string(),
            case: case.clone(),
            trial_name: crate::schema::names::trial_name(&case.task, group, case),
            trial_config_blake3: hash,
            command: vec!["harbor".into(), "trial".into(), "start".into()],
            now_utc_ns: 0,
        };
        self.decide(|s, now| {
            crate::method::decide::case_start(
                s,
                crate::method::decide::CaseStart {
                    now_utc_ns: now,
                    ..cmd
                },
            )
        })?;
        Ok(())
    }

    /// Records a Harbor TrialResult for a started case.
    pub fn result(
        &mut self,
        group: &str,
        case: &CaseRef,
        reward: Option<&str>,
        exception: Option<&str>,
    ) {
        let name = crate::schema::names::trial_name(&case.task, group, case);
        let e = Event::TrialResultRecorded(TrialResultRecorded {
            group: self.gref(group),
            case: case.clone(),
            trial_name: name.clone(),
            attempt_id: crate::method::trial_config::session_id(&self.lineage, group, case),
            task_name: case.task.clone(),
            task_id: HarborTaskId {
                git_url: None,
                git_commit_id: None,
                path: Some(case.task.clone()),
                org: None,
                name: None,
                git_ref: None,
            },
            source: None,
            task_checksum: hex64(&case.task),
            agent: "terminus-2@2.0.0".into(),
            model: None,
            rewards: reward.map(|r| {
                [("reward".to_string(), r.to_string())]
                    .into_iter()
                    .collect()
            }),
            exception_type: exception.map(Into::into),
            exception_message_blake3: exception.map(hex64),
            started_at: None,
            finished_at: None,
            n_input_tokens: None,
            n_cache_tokens: None,
            n_output_tokens: None,
            config_blake3: hex64(&format!("config {name}")),
            result_path: format!("jobs/{name}/result.json"),
            result_blake3: hex64(&format!("{}/{name}/{reward:?}/{exception:?}", self.lineage)),
        });
        self.push(vec![e]);
    }

    /// Records a request's evidence as the ingest verbs would.
    pub fn request(&mut self, group: &str, r: &Req) {
        let m = self.lineage_state().frozen.manifest.public.clone();
        let tier = if group == "control" {
            Tier::Strong
        } else {
            r.tier
        };
        let route = m
            .route(tier)
            .expect("the example routes every tier")
            .clone();
        let gref = self.gref(group);
        let n = blake3::hash(r.id.as_bytes()).as_bytes()[0] as u64;
        let cached = route.provider != "ambient" || route.model.contains("kimi");
        let buckets = TokenBuckets {
            uncached_input_tokens: 1_000 + 37 * n,
            cache_read_tokens: if cached { 20_000 + 101 * n } else { 0 },
            cache_write_tokens: 0,
            output_tokens: 200 + 3 * n,
            reasoning_tokens: 0,
        };
        let price = m
            .prices
            .iter()
            .find(|p| p.provider == route.provider && p.model == route.model)
            .expect("the example prices every route");
        let rates = crate::schema::money::Rates {
            uncached_input: Some(price.uncached_input),
            cache_read: price.cache_read,
            cache_write: price.cache_write,
            output: Some(price.output),
        };
        let mb = crate::schema::money::Buckets {
            uncached_input_tokens: buckets.uncached_input_tokens,
            cache_read_tokens: buckets.cache_read_tokens,
            cache_write_tokens: buckets.cache_write_tokens,
            output_tokens: buckets.output_tokens,
            reasoning_tokens: buckets.reasoning_tokens,
        };
        let charge = match bitrouter_charge(&mb, &rates) {
            Charge::Computed { charge_micro_usd } => charge_micro_usd,
            other => panic!("the example prices price every synthesized request: {other:?}"),
        };
        let line = |kind: &str| hex64(&format!("{kind} {} {group} {}", self.lineage, r.id));
        let mut v = Vec::new();
        if r.trace {
            v.push(Event::RequestTraced(RequestTraced {
                group: gref.clone(),
                request_id: r.id.clone(),
                captured_at: "2026-11-20T00:10:00Z".into(),
                harness: Harness::Terminus2,
                protocol: if route.protocol == crate::schema::manifest::RouteProtocol::Anthropic {
                    Protocol::Messages
                } else {
                    Protocol::ChatCompletions
                },
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                http_status: 200,
                status: TraceStatus::Completed,
                line_blake3: line("trace"),
            }));
        }
        if r.decision && (group != "control" || m.method.control_emits_decisions) {
            v.push(Event::PolicyDecisionRecorded(PolicyDecisionRecorded {
                group: gref.clone(),
                request_id: Some(r.id.clone()),
                ingress_request_id_sha256: None,
                captured_at: Some("2026-11-20T00:10:00Z".into()),
                input_model: "@auto".into(),
                policy: Some("auto".into()),
                reason: "static_table".into(),
                baseline_tier: Some("strong".into()),
                selected_tier: Some(crate::method::verdict::tier_name(tier).into()),
                selected_model: Some(format!("bitrouter:{}", route.model)),
                pinned: false,
                locked: false,
                trialed: false,
                line_blake3: line("decision"),
            }));
        }
        if r.usage {
            v.push(Event::UsageRecorded(UsageRecorded {
                group: gref.clone(),
                request_id: r.id.clone(),
                provider_id: route.provider.clone(),
                model_id: route.model.clone(),
                prompt_tokens: buckets.uncached_input_tokens
                    + buckets.cache_read_tokens
                    + buckets.cache_write_tokens,
                completion_tokens: buckets.output_tokens + buckets.reasoning_tokens,
                buckets,
                final_charge_micro_usd: Some(charge),
                charge_status: ChargeStatus::Computed,
                reconciliation_status: if r.receipt == ReceiptMode::None {
                    ReconciliationStatus::NotApplicable
                } else {
                    ReconciliationStatus::Computed
                },
                usage_origin: if r.receipt == ReceiptMode::None {
                    UsageOrigin::ProviderReported
                } else {
                    UsageOrigin::AuthoritativeReceipt
                },
                status: Some("completed".into()),
                error_code: None,
                rates: Some(rates),
                pricing_source: Some(PricingSource::Configured),
                pricing_version: Some(format!("sha256:{}", hex64("prices"))),
                recomputed_charge_micro_usd: Some(charge),
                recompute_matches: Some(true),
                line_blake3: line("usage"),
            }));
        }
        let receipt = |state: ReceiptState, c: Option<u64>| {
            Event::ReceiptRecorded(ReceiptRecorded {
                group: gref.clone(),
                request_id: r.id.clone(),
                state,
                provider_id: Some(route.provider.clone()),
                model_id: Some(route.model.clone()),
                buckets,
                final_charge_micro_usd: c,
                source_blake3: line("receipt"),
            })
        };
        match r.receipt {
            ReceiptMode::None => {}
            ReceiptMode::Computed => v.push(receipt(ReceiptState::Computed, Some(charge))),
            ReceiptMode::Pending => v.push(receipt(ReceiptState::Pending, None)),
            ReceiptMode::Mismatch(d) => v.push(receipt(ReceiptState::Computed, Some(charge + d))),
        }
        self.push(v);
    }

    /// The default requests of a case: two, on the balanced and economy
    /// tiers (control: strong), each traced, decided, used and (strong)
    /// settled by a computed receipt.
    pub fn case_requests(&self, group: &str, case: &CaseRef) -> Vec<Req> {
        let base = format!("{group}-{}-{}-{}", case.task, case.trial, case.replacement);
        (1..=self.requests_per_case)
            .map(|k| {
                (
                    k,
                    if k % 2 == 1 {
                        Tier::Balanced
                    } else {
                        Tier::Economy
                    },
                )
            })
            .map(|(k, tier)| Req {
                id: format!("{base}-{k}"),
                tier,
                trace: true,
                usage: true,
                decision: true,
                receipt: if group == "control" {
                    ReceiptMode::Computed
                } else {
                    ReceiptMode::None
                },
            })
            .collect()
    }

    /// Records sanitized 403 evidence of a started case.
    pub fn refusal(
        &mut self,
        group: &str,
        case: &CaseRef,
        class: RefusalClass,
        tag: &str,
    ) -> Result<()> {
        let g = self.gref(group);
        let c = case.clone();
        let h = hex64(tag);
        self.decide(|s, _| {
            crate::method::decide::security_refusal(s, &g, &c, class, 403, None, h)
        })?;
        Ok(())
    }

    /// Closes a group, samples the monitor, and audits cleanup.
    pub fn finish(&mut self, group: &str, peak: u64, found: Vec<FoundResource>) -> Result<()> {
        let l = self.lineage.clone();
        let gref = self.gref(group);
        self.push(vec![Event::MonitorSampled(MonitorSampled {
            group: gref.clone(),
            sandbox_count: peak,
            instance_ids: (0..peak)
                .map(|i| format!("i-{:017x}", 0xabc00 + i))
                .collect(),
        })]);
        self.decide(|s, _| crate::method::decide::group_close(s, Some(&l), group))?;
        let m = self.lineage_state().frozen.manifest.public.clone();
        let central = m.central.instance_id.as_deref();
        let pass = found.iter().all(|f| Some(f.id.as_str()) == central);
        self.push(vec![Event::CleanupAudited(CleanupAudited {
            group: gref,
            region: m.aws.region.clone(),
            identity: "arn:aws:sts::***:assumed-role/bench-operator/***".into(),
            filters: vec![format!("tag:{}={}", m.tags.run_key, m.tags.run_value)],
            tracked_instance_ids: vec![],
            found,
            excluded_central_instance_id: m.central.instance_id.clone(),
            status: if pass { Status::Pass } else { Status::Fail },
            error: None,
        })]);
        Ok(())
    }

    /// Seals a group.
    pub fn seal(&mut self, group: &str) -> Result<Vec<Event>> {
        let l = self.lineage.clone();
        self.decide(|s, now| crate::method::decide::seal(s, Some(&l), group, now))
    }

    /// Records feedback after an accepted r1/r2.
    pub fn feedback(&mut self, group: &str) -> Result<()> {
        let l = self.lineage.clone();
        let (b, a) = (
            hex64(&format!("{l} {group} before")),
            hex64(&format!("{l} {group} after")),
        );
        self.decide(|s, _| crate::method::decide::feedback(s, Some(&l), group, &b, &a))?;
        Ok(())
    }

    /// Whether a group is a scored evaluation group.
    pub fn scored(group: &str) -> bool {
        !is_non_evaluation(group)
    }

    /// Writes the records into a new ledger in `dir` in batches of
    /// `batch` records (each batch at the time of its last record): fast,
    /// for large generated ledgers.
    pub fn write_batched(&self, dir: &Path, batch: usize) -> Result<Ledger> {
        let (ledger, _) = Ledger::create(
            dir,
            Duration::from_secs(5),
            LEDGER_ID,
            "benchledger-gen",
            T0_UTC_NS,
        )?;
        for chunk in self.records.chunks(batch.max(1)) {
            let t = chunk.last().map_or(T0_UTC_NS, |(t, _)| *t);
            let mut b = ledger.batch(t)?;
            for (_, e) in chunk {
                b.push(Draft {
                    actor: "benchledger-gen".into(),
                    event: e.clone(),
                    idempotency_key: None,
                })?;
            }
            b.commit()?;
        }
        Ok(ledger)
    }

    /// Writes the records into a new ledger in `dir` (fixed ledger id, each
    /// record at its own time).
    pub fn write(&self, dir: &Path) -> Result<Ledger> {
        let (ledger, _) = Ledger::create(
            dir,
            Duration::from_secs(5),
            LEDGER_ID,
            "benchledger-gen",
            T0_UTC_NS,
        )?;
        for (t, e) in &self.records {
            ledger.append(
                &[Draft {
                    actor: "benchledger-gen".into(),
                    event: e.clone(),
                    idempotency_key: None,
                }],
                *t,
            )?;
        }
        Ok(ledger)
    }
}

// ---------------------------------------------------------------------------
// Scenario files (replay-tests/scenarios/*.toml)
// ---------------------------------------------------------------------------

/// A scenario file: one or more lineages run in order into one ledger.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What it shows, in a sentence.
    pub description: String,
    /// The lineages, in order.
    pub lineages: Vec<LineageSpec>,
}

/// One lineage of a scenario: the example manifest with text edits.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineageSpec {
    /// `[from, to]` text replacements applied to both example manifests
    /// (e.g. a new lineage label), in order.
    #[serde(default)]
    pub edits: Vec<[String; 2]>,
    /// The groups to run, in order (default: every target group).
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    /// `LINEAGE/control` to reuse instead of running control.
    #[serde(default)]
    pub reuse_control: Option<String>,
    /// The rule a reuse must be refused with, if it must be refused.
    #[serde(default)]
    pub reuse_refused: Option<String>,
    /// Faults injected into groups.
    #[serde(default)]
    pub faults: Vec<Fault>,
}

/// A fault injected into one group.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The group.
    pub group: String,
    /// What goes wrong (see `FAULT_KINDS`).
    pub kind: String,
    /// The case (`TASK/TRIAL`), where the kind needs one (default: the
    /// group's first identity).
    #[serde(default)]
    pub case: Option<String>,
}

/// Every fault kind a scenario may name.
pub const FAULT_KINDS: [&str; 13] = [
    "invalid_result",
    "crash_no_result",
    "pending_receipt",
    "charge_mismatch",
    "duplicate_request_id",
    "extra_usage",
    "stray_volume",
    "monitor_peak",
    "config_mismatch",
    "low_scores",
    "skip_valid",
    "skip_invalid",
    "untraced_usage",
];

/// What a scenario run produced besides the records: each refused step
/// with its rule (the generator prints them; the replay tests re-check).
#[derive(Debug, Clone, Default)]
pub struct RunLog {
    /// `(step, rule)` of every refusal met.
    pub refusals: Vec<(String, String)>,
}

fn refused_rule(e: &Error) -> Option<&'static str> {
    match e {
        Error::Refused { rule, .. } => Some(rule.as_str()),
        _ => None,
    }
}

/// The example manifest turned into a public reproduction: 89 tasks x 5
/// trials (CLASS-1), for scale tests and benchmarks.
pub fn public_example() -> String {
    let start = EXAMPLE_MANIFEST
        .find("tasks = [\n")
        .expect("the example lists tasks");
    let end = start
        + EXAMPLE_MANIFEST[start..]
            .find("]\n")
            .expect("the list ends");
    let tasks: String = (0..89)
        .map(|i| {
            format!(
                "  {{ name = \"task-{i:02}\", content_sha256 = \"{}\" }},\n",
                hex64(&format!("task {i}"))
            )
        })
        .collect();
    let mut m = EXAMPLE_MANIFEST.to_string();
    m.replace_range(start..end + 2, &format!("tasks = [\n{tasks}]\n"));
    m.replace(
        "class = \"mechanism_iteration\"",
        "class = \"public_reproduction\"",
    )
    .replace(
        "trials = [\"t1\"]",
        "trials = [\"t1\", \"t2\", \"t3\", \"t4\", \"t5\"]",
    )
    // A stop limit a 445-case run at list prices stays under.
    .replace(
        "spend_stop_micro_usd = 50000000 ",
        "spend_stop_micro_usd = 5000000000 ",
    )
}

/// The example manifest pair of `ledger-schema/examples/`.
pub use crate::testkit::examples::EXAMPLE_MANIFEST;
/// Its private companion.
pub use crate::testkit::examples::EXAMPLE_PRIVATE;

/// Runs a scenario into a world.
pub fn run(spec: &Scenario) -> Result<(World, RunLog)> {
    let mut w = World::new();
    let mut log = RunLog::default();
    for ls in &spec.lineages {
        for f in &ls.faults {
            if !FAULT_KINDS.contains(&f.kind.as_str()) {
                return Err(Error::input(format!(
                    "unknown fault kind {:?}; known: {FAULT_KINDS:?}",
                    f.kind
                )));
            }
        }
        let (mut public, mut private) = (EXAMPLE_MANIFEST.to_string(), EXAMPLE_PRIVATE.to_string());
        for [from, to] in &ls.edits {
            if !public.contains(from.as_str()) && !private.contains(from.as_str()) {
                return Err(Error::input(format!(
                    "edit {from:?} matches nothing in the example manifests"
                )));
            }
            public = public.replace(from.as_str(), to);
            private = private.replace(from.as_str(), to);
        }
        w.freeze(&public, &private)?;
        let lineage = w.lineage.clone();
        let mut reused = false;
        if let Some(c) = &ls.reuse_control {
            let (cl, cg) = c.split_once('/').ok_or_else(|| {
                Error::input(format!("reuse_control {c:?} is not LINEAGE/control"))
            })?;
            let control = GroupRef {
                lineage: cl.into(),
                group: cg.into(),
            };
            let l = lineage.clone();
            match (
                w.decide(|s, _| crate::method::decide::control_reuse(s, &l, &control)),
                &ls.reuse_refused,
            ) {
                (Ok(_), None) => reused = true,
                (Err(e), Some(rule)) if refused_rule(&e) == Some(rule.as_str()) => {
                    log.refusals
                        .push((format!("control reuse {lineage} <- {c}"), rule.clone()));
                }
                (r, want) => {
                    return Err(Error::input(format!(
                        "control reuse of {c}: expected refusal {want:?}, got {r:?}"
                    )))
                }
            }
        }
        run_groups_logged(&mut w, ls, reused, &mut log)?;
    }
    Ok((w, log))
}

/// Runs the groups of `ls` (default: every target group) on the world's
/// current, frozen lineage, stopping at the first refused group open.
pub fn run_groups(w: &mut World, ls: &LineageSpec) -> Result<RunLog> {
    let mut log = RunLog::default();
    run_groups_logged(w, ls, false, &mut log)?;
    Ok(log)
}

fn run_groups_logged(
    w: &mut World,
    ls: &LineageSpec,
    reused: bool,
    log: &mut RunLog,
) -> Result<()> {
    let lineage = w.lineage.clone();
    let names: Vec<String> = match &ls.groups {
        Some(g) => g.clone(),
        None => w
            .lineage_state()
            .frozen
            .manifest
            .public
            .group_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    for group in &names {
        if group == "control" && reused {
            continue;
        }
        if let Err(e) = w.open(group) {
            match refused_rule(&e) {
                Some(rule) => {
                    log.refusals
                        .push((format!("group open {lineage}/{group}"), rule.to_string()));
                    break;
                }
                None => return Err(e),
            }
        }
        run_group(w, ls, group)?;
    }
    Ok(())
}

fn fault<'a>(ls: &'a LineageSpec, group: &str, kind: &str) -> Option<&'a Fault> {
    ls.faults
        .iter()
        .find(|f| f.group == group && f.kind == kind)
}

fn run_group(w: &mut World, ls: &LineageSpec, group: &str) -> Result<()> {
    let ids = crate::method::lineage::group_identities(w.lineage_state(), group);
    let pick = |kind: &str| -> Option<CaseRef> {
        let f = fault(ls, group, kind)?;
        Some(match &f.case {
            None => ids[0].clone(),
            Some(c) => {
                let (t, tr) = c.split_once('/').unwrap_or((c, "t1"));
                CaseRef {
                    task: t.into(),
                    trial: tr.into(),
                    replacement: 0,
                }
            }
        })
    };
    let low = fault(ls, group, "low_scores").is_some();
    for (i, case) in ids.iter().enumerate() {
        let config = (pick("config_mismatch").as_ref() == Some(case))
            .then_some("a config other than the frozen rendering");
        w.start(group, case, config)?;
        let mut reqs = w.case_requests(group, case);
        if i == 0 {
            if fault(ls, group, "pending_receipt").is_some() {
                reqs[0].receipt = ReceiptMode::Pending;
            }
            if fault(ls, group, "charge_mismatch").is_some() {
                reqs[0].receipt = ReceiptMode::Mismatch(1);
            }
            if fault(ls, group, "duplicate_request_id").is_some() {
                reqs[1].id = reqs[0].id.clone();
                reqs[1].tier = reqs[0].tier;
            }
            if fault(ls, group, "extra_usage").is_some() {
                let mut extra = reqs[0].clone();
                extra.id = format!("{}-extra", extra.id);
                extra.trace = false;
                extra.decision = false;
                reqs.push(extra);
            }
            if fault(ls, group, "untraced_usage").is_some() {
                reqs[1].usage = false;
            }
        }
        for r in &reqs {
            w.request(group, r);
        }
        // Default outcome: every fourth identity fails its verifier.
        let reward = if low || i % 4 == 3 { "0" } else { "1" };
        if pick("invalid_result").as_ref() == Some(case) {
            w.result(group, case, None, Some("RuntimeError"));
        } else if pick("crash_no_result").as_ref() == Some(case) {
            let g = w.gref(group);
            let c = case.clone();
            let (p, h) = (
                format!(
                    "jobs/{}.listing",
                    crate::schema::names::trial_name(&case.task, group, case)
                ),
                hex64("listing without result.json"),
            );
            w.decide(|s, _| {
                crate::method::decide::case_invalidate(
                    s,
                    &g,
                    &c,
                    InvalidReason::ControllerCrash,
                    p,
                    h,
                )
            })?;
        } else if let Some(kind) = ["skip_valid", "skip_invalid"]
            .into_iter()
            .find(|k| pick(k).as_ref() == Some(case))
        {
            w.refusal(
                group,
                case,
                RefusalClass::ProviderPolicyRefusal,
                &format!("403 original {}", case.task),
            )?;
            w.result(group, case, None, Some("ProviderPolicyRefusal"));
            let r01 = CaseRef {
                replacement: 1,
                ..case.clone()
            };
            w.start(group, &r01, None)?;
            for r in w.case_requests(group, &r01) {
                w.request(group, &r);
            }
            let class = if kind == "skip_valid" {
                RefusalClass::ProviderPolicyRefusal
            } else {
                RefusalClass::NetworkSecurityPolicyDenied
            };
            w.refusal(
                group,
                &r01,
                class,
                &format!("403 replacement {}", case.task),
            )?;
            w.result(group, &r01, None, Some("ProviderPolicyRefusal"));
        } else {
            w.result(group, case, Some(reward), None);
        }
    }
    let peak = if fault(ls, group, "monitor_peak").is_some() {
        2
    } else {
        1
    };
    let found = if fault(ls, group, "stray_volume").is_some() {
        vec![FoundResource {
            resource: "volume".into(),
            id: "vol-0a1b2c3d4e5f60718".into(),
            state: "available".into(),
            found_by: "tag".into(),
        }]
    } else {
        vec![]
    };
    w.finish(group, peak, found)?;
    if fault(ls, group, "pending_receipt").is_some() {
        // Inside the grace the seal is refused (SETTLE-8); after it, the
        // pending request rejects the group (SETTLE-4).
        match w.seal(group) {
            Err(e) if refused_rule(&e) == Some("SETTLE-8") => {}
            other => {
                return Err(Error::input(format!(
                    "expected a SETTLE-8 refusal inside the grace, got {other:?}"
                )))
            }
        }
        let grace = w
            .lineage_state()
            .frozen
            .manifest
            .public
            .limits
            .settlement_grace_sec;
        w.advance_sec(grace + 1);
    }
    let sealed = w.seal(group)?;
    let accepted = matches!(sealed.first(), Some(Event::GroupSealed(s)) if crate::method::verdict::VerdictStatus::Accepted.is(&s.status));
    if accepted && (group == "r1" || group == "r2") {
        w.feedback(group)?;
    }
    Ok(())
}
