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
            // The frozen GATE-2 formula, the central host's vCPU included
            // while it is to be provisioned (BIND-6 re-judges these numbers).
            required_vcpu: u64::from(m.limits.concurrency)
                .saturating_mul(m.sandbox.vcpu)
                .saturating_add(m.aws.quota_headroom_vcpu)
                .saturating_add(
                    if m.central.mode == crate::schema::manifest::CentralMode::Provision {
                        m.central.vcpu
                    } else {
                        0
                    },
                ),
            status: Status::Pass,
            error: None,
        }),
        Event::CheckRecorded(CheckRecorded {
            lineage: frozen.lineage.clone(),
            group: Some(group.to_string()),
            check: CheckKind::Residue,
            target: m.tags.run_value.clone(),
            status: Status::Pass,
            details: details(&[("sandbox_count", "0"), ("instance_ids", "")]),
        }),
    ]
}

/// A details map from pairs.
pub fn details(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What a synthesized TrialResult says besides its reward and exception
/// (the evidence-binding faults of BIND-1 and BIND-2).
#[derive(Debug, Clone, Default)]
pub struct ResultShape {
    /// A task checksum other than the frozen one.
    pub other_checksum: bool,
    /// An embedded TrialConfig whose content is not the launched one.
    pub other_config: bool,
    /// Timestamps 90 days before the case started.
    pub early: bool,
    /// Rewards under other keys than the frozen one.
    pub other_reward_keys: bool,
    /// The trial's own config.json edited after launch (another model, a
    /// direct api_base) while the embedded TrialConfig is the launched one.
    pub own_config: bool,
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
    pub receipt: ReceiptMode,
    /// `[prompt, output]` tokens, every prompt token uncached (default:
    /// synthesized from the id).
    pub tokens: Option<[u64; 2]>,
    /// Its decision's reason (default `static_table`).
    pub reason: Option<String>,
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
        let numbers: &[(&str, &str)] = match kind {
            CheckKind::DaemonHealth | CheckKind::ProviderSentinel => {
                &[("http_status", "200"), ("latency_ms", "40")]
            }
            _ => &[],
        };
        Event::CheckRecorded(CheckRecorded {
            lineage: self.lineage.clone(),
            group: group.map(Into::into),
            check: kind,
            target: target.into(),
            status: Status::Pass,
            details: details(numbers),
        })
    }

    /// A passing validation of the config `hash` by the lineage's frozen
    /// validator (GATE-7, BIND-7); `frozen: false` records one by another
    /// program.
    pub fn validation(&self, hash: &str, frozen: bool) -> Event {
        let l = self.lineage_state();
        let mut d = details(&[("exit_code", "0"), ("timed_out", "false")]);
        if let (true, Some(plan)) = (frozen, &l.plan) {
            let v = &plan.binding.validator;
            d.insert("program_blake3".into(), v.program_blake3.clone());
            d.insert("validator".into(), v.program.clone());
            d.insert("harbor_version".into(), v.harbor_version.clone());
        }
        Event::CheckRecorded(CheckRecorded {
            lineage: self.lineage.clone(),
            group: None,
            check: CheckKind::ConfigValidated,
            target: hash.into(),
            status: Status::Pass,
            details: d,
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
        let cmd = self.group_open_command(group);
        self.decide(|s, _| crate::method::decide::group_open(s, cmd))?;
        self.gates(group);
        Ok(())
    }

    /// `group open`'s command with the frozen daemon values (GATE-4); an
    /// unknown group gets empty values (decide refuses it).
    pub fn group_open_command(&self, group: &str) -> crate::method::decide::GroupOpen {
        let m = &self.lineage_state().frozen.manifest.public;
        let g = m.groups.iter().find(|g| g.name == group);
        crate::method::decide::GroupOpen {
            lineage: Some(self.lineage.clone()),
            group: group.to_string(),
            binary_sha256: m.software.bitrouter_binary_sha256.clone(),
            config_sha256: m
                .software
                .bitrouter_config_sha256
                .get(group)
                .cloned()
                .unwrap_or_default(),
            ports: g.map(|g| g.ports.clone()).unwrap_or_default(),
            db_path: g.map(|g| g.db_path.clone()).unwrap_or_default(),
            out_dir: g.map(|g| g.out_dir.clone()).unwrap_or_default(),
        }
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
        let v = self.validation(&hash, true);
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

    /// Records a Harbor TrialResult for a started case, bound to its launch:
    /// the frozen task checksum, the launched config's content, timestamps
    /// inside the launch window (BIND-1).
    pub fn result(
        &mut self,
        group: &str,
        case: &CaseRef,
        reward: Option<&str>,
        exception: Option<&str>,
    ) {
        self.result_with(group, case, reward, exception, &ResultShape::default());
    }

    /// The content digest of the config case `case` launched: the frozen
    /// rendering's, or (for a config other than the rendering) a digest of
    /// nothing benchledger rendered.
    fn launched_content(&self, group: &str, case: &CaseRef) -> String {
        let l = self.lineage_state();
        let m = &l.frozen.manifest.public;
        let launched = l.groups[group].cases[case]
            .started
            .as_ref()
            .map(|(_, s)| s.trial_config_blake3.clone())
            .unwrap_or_default();
        match crate::method::trial_config::render(m, group, case) {
            Ok(r) if r.blake3 == launched => {
                crate::schema::trial_content::content_blake3(&r.config)
            }
            _ => hex64(&format!("content of {launched}")),
        }
    }

    /// [`World::result`] with the faults of `shape`.
    pub fn result_with(
        &mut self,
        group: &str,
        case: &CaseRef,
        reward: Option<&str>,
        exception: Option<&str>,
        shape: &ResultShape,
    ) {
        let name = crate::schema::names::trial_name(&case.task, group, case);
        let l = self.lineage_state();
        let m = &l.frozen.manifest.public;
        let frozen_checksum = crate::method::binding::frozen_task_checksum(m, group, &case.task)
            .unwrap_or_default()
            .to_string();
        let started_ns = l.groups[group].cases[case]
            .started
            .as_ref()
            .map_or(self.now_ns, |(at, _)| at.utc_ns);
        let early_ns = if shape.early {
            90 * 86_400 * 1_000_000_000
        } else {
            0
        };
        let (from, to) = (
            started_ns - early_ns,
            self.now_ns.max(started_ns) - early_ns,
        );
        let mut content = self.launched_content(group, case);
        if shape.other_config {
            content = hex64(&format!("another model, no api_base: {content}"));
        }
        let e = Event::TrialResultRecordedV2(Box::new(TrialResultRecordedV2 {
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
            task_checksum: if shape.other_checksum {
                hex64(&format!("another version of {}", case.task))
            } else {
                frozen_checksum
            },
            agent: "terminus-2@2.0.0".into(),
            model: None,
            rewards: reward.map(|r| {
                let keys: &[&str] = if shape.other_reward_keys {
                    &["passed_tests", "total_tests"]
                } else {
                    &["reward"]
                };
                keys.iter()
                    .map(|k| (k.to_string(), r.to_string()))
                    .collect()
            }),
            exception_type: exception.map(Into::into),
            exception_message_blake3: exception.map(hex64),
            started_at: Some(crate::schema::time::rfc3339_utc_ns(from)),
            finished_at: Some(crate::schema::time::rfc3339_utc_ns(to)),
            n_input_tokens: None,
            n_cache_tokens: None,
            n_output_tokens: None,
            config_blake3: hex64(&format!("config {name}")),
            config_content_blake3: content,
            config_differences: if shape.other_config {
                vec!["agent.kwargs.api_base".into(), "agent.model_name".into()]
            } else if shape.own_config {
                ["agent.kwargs.api_base", "agent.model_name"]
                    .iter()
                    .map(|d| {
                        format!(
                            "{}{d}",
                            crate::schema::trial_content::OWN_CONFIG_FILE_PREFIX
                        )
                    })
                    .collect()
            } else {
                vec![]
            },
            reward_files: vec![],
            result_path: format!("jobs/{name}/result.json"),
            result_blake3: hex64(&format!("{}/{name}/{reward:?}/{exception:?}", self.lineage)),
        }));
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
        let buckets = match r.tokens {
            Some([input, output]) => TokenBuckets {
                uncached_input_tokens: input,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: output,
                reasoning_tokens: 0,
            },
            None => TokenBuckets {
                uncached_input_tokens: 1_000 + 37 * n,
                cache_read_tokens: if cached { 20_000 + 101 * n } else { 0 },
                cache_write_tokens: 0,
                output_tokens: 200 + 3 * n,
                reasoning_tokens: 0,
            },
        };
        let reason = r.reason.as_deref().unwrap_or("static_table");
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
                reason: reason.into(),
                baseline_tier: Some("strong".into()),
                selected_tier: Some(crate::method::verdict::tier_name(tier).into()),
                selected_model: Some(format!("bitrouter:{}", route.model)),
                pinned: false,
                locked: reason == "exploration_locked",
                trialed: reason == "exploration_trial",
                line_blake3: line("decision"),
            }));
        }
        if r.usage {
            v.push(Event::UsageRecorded(Box::new(UsageRecorded {
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
            })));
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
                // Control's requests and a canary's first are settled by an
                // authoritative receipt (a canary proves the path, BIND-4).
                receipt: if group == "control" || (group.starts_with("canary") && k == 1) {
                    ReceiptMode::Computed
                } else {
                    ReceiptMode::None
                },
                tokens: None,
                reason: None,
            })
            .collect()
    }

    /// A weak request the provider answered 429 (traced `failed`, a
    /// zero-usage row reconciled against a `not_charged` receipt, as
    /// BitRouter writes it), then the strong fallback that completed, and a
    /// request-scoped outcome with reward 1.0 for every traced request of the
    /// group, the 429 included, as harbor-outcomes copied them (BIND-5).
    pub fn outcome_after_429(&mut self, group: &str, case: &CaseRef) {
        let base = format!("{group}-{}-{}-fallback", case.task, case.trial);
        let weak = format!("{base}-429");
        let gref = self.gref(group);
        let m = self.lineage_state().frozen.manifest.public.clone();
        let route = m
            .route(Tier::Economy)
            .expect("the example routes every tier")
            .clone();
        let lineage = self.lineage.clone();
        let line = |kind: &str, id: &str| hex64(&format!("{kind} {lineage} {group} {id}"));
        let zero = TokenBuckets {
            uncached_input_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 0,
            reasoning_tokens: 0,
        };
        let mut v = vec![Event::RequestTraced(RequestTraced {
            group: gref.clone(),
            request_id: weak.clone(),
            captured_at: "2026-11-20T00:10:00Z".into(),
            harness: Harness::Terminus2,
            protocol: Protocol::ChatCompletions,
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            http_status: 429,
            status: TraceStatus::Failed,
            line_blake3: line("trace", &weak),
        })];
        v.push(Event::PolicyDecisionRecorded(PolicyDecisionRecorded {
            group: gref.clone(),
            request_id: Some(weak.clone()),
            ingress_request_id_sha256: None,
            captured_at: Some("2026-11-20T00:10:00Z".into()),
            input_model: "@auto".into(),
            policy: Some("auto".into()),
            reason: "static_table".into(),
            baseline_tier: Some("strong".into()),
            selected_tier: Some("economy".into()),
            selected_model: Some(format!("bitrouter:{}", route.model)),
            pinned: false,
            locked: false,
            trialed: false,
            line_blake3: line("decision", &weak),
        }));
        v.push(Event::UsageRecorded(Box::new(UsageRecorded {
            group: gref.clone(),
            request_id: weak.clone(),
            provider_id: route.provider.clone(),
            model_id: route.model.clone(),
            prompt_tokens: 0,
            completion_tokens: 0,
            buckets: zero,
            final_charge_micro_usd: None,
            charge_status: ChargeStatus::NotCharged,
            reconciliation_status: ReconciliationStatus::NotCharged,
            usage_origin: UsageOrigin::AuthoritativeReceipt,
            status: Some("failed".into()),
            error_code: Some("upstream_rate_limited".into()),
            rates: None,
            pricing_source: None,
            pricing_version: None,
            recomputed_charge_micro_usd: None,
            recompute_matches: None,
            line_blake3: line("usage", &weak),
        })));
        v.push(Event::ReceiptRecorded(ReceiptRecorded {
            group: gref.clone(),
            request_id: weak.clone(),
            state: ReceiptState::NotCharged,
            provider_id: Some(route.provider.clone()),
            model_id: Some(route.model.clone()),
            buckets: zero,
            final_charge_micro_usd: None,
            source_blake3: line("receipt", &weak),
        }));
        self.push(v);
        self.request(
            group,
            &Req {
                id: format!("{base}-strong"),
                tier: Tier::Strong,
                trace: true,
                usage: true,
                decision: true,
                receipt: ReceiptMode::Computed,
                tokens: None,
                reason: None,
            },
        );
        let traced: Vec<String> = self.lineage_state().groups[group]
            .requests
            .iter()
            .filter(|(_, r)| !r.traces.is_empty())
            .map(|(id, _)| id.to_string())
            .collect();
        let outcomes = traced
            .iter()
            .map(|id| {
                Event::OutcomeRecorded(OutcomeRecorded {
                    group: gref.clone(),
                    request_id: Some(id.clone()),
                    session_key: crate::schema::names::trial_name(&case.task, group, case),
                    task_id: format!("terminal-bench/{}", case.task),
                    reward: "1.0".into(),
                    failed_reason: None,
                    trial_name: Some(crate::schema::names::trial_name(&case.task, group, case)),
                    line_blake3: line("outcome", id),
                })
            })
            .collect();
        self.push(outcomes);
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
#[derive(Debug, Clone, Default, serde::Deserialize)]
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
    /// A public manifest file, relative to the scenario file, instead of
    /// the example's (`edits` still apply); read by `Scenario::load`.
    #[serde(default)]
    pub manifest: Option<String>,
    /// Its private companion, likewise.
    #[serde(default)]
    pub private: Option<String>,
    /// Groups rebuilt from published figures instead of synthesized
    /// requests and rewards.
    #[serde(default)]
    pub figures: Vec<crate::testkit::figures::Figures>,
    /// The text of `manifest` and `private`, once loaded.
    #[serde(skip)]
    pub manifest_text: Option<(String, String)>,
}

/// A fault injected into one group.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub group: String,
    /// What goes wrong (see `FAULT_KINDS`).
    pub kind: String,
    /// The case (`TASK/TRIAL`), where the kind needs one (default: the
    /// group's first identity).
    #[serde(default)]
    pub case: Option<String>,
}

impl Scenario {
    /// Reads a scenario file and the manifest files its lineages name
    /// (relative to it).
    pub fn load(path: &Path) -> Result<Scenario> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| Error::input(format!("{}: {e}", p.display())))
        };
        let mut spec: Scenario = toml::from_str(&read(path)?)
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for ls in &mut spec.lineages {
            ls.manifest_text = match (&ls.manifest, &ls.private) {
                (None, None) => None,
                (Some(public), Some(private)) => {
                    Some((read(&dir.join(public))?, read(&dir.join(private))?))
                }
                _ => {
                    return Err(Error::input(format!(
                        "{}: a lineage names both manifest and private, or neither",
                        path.display()
                    )))
                }
            };
        }
        Ok(spec)
    }
}

/// Every fault kind a scenario may name.
pub const FAULT_KINDS: [&str; 24] = [
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
    // Evidence binding (BIND-1..8).
    "checksum_mismatch",
    "other_config",
    "early_timestamps",
    "harbor_retries",
    "multi_key_reward",
    "no_requests",
    "outcome_after_429",
    "credential_leak",
    "quota_formula",
    "unfrozen_validator",
    "no_authoritative_receipt",
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
        let (mut public, mut private) = match (&ls.manifest, &ls.manifest_text) {
            (None, _) => (EXAMPLE_MANIFEST.to_string(), EXAMPLE_PRIVATE.to_string()),
            (Some(_), Some((public, private))) => (public.clone(), private.clone()),
            (Some(m), None) => {
                return Err(Error::input(format!(
                    "manifest {m:?} is not loaded: read the scenario with Scenario::load"
                )))
            }
        };
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
        if !run_group(w, ls, group, log)? {
            break;
        }
    }
    Ok(())
}

fn fault<'a>(ls: &'a LineageSpec, group: &str, kind: &str) -> Option<&'a Fault> {
    ls.faults
        .iter()
        .find(|f| f.group == group && f.kind == kind)
}

/// The case a fault of `kind` in `group` names (default: the group's first
/// identity), if the scenario injects one.
fn picked(ls: &LineageSpec, group: &str, ids: &[CaseRef], kind: &str) -> Option<CaseRef> {
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
}

/// Starts a case; a refusal is logged and returns `false` (the run of the
/// group stops there).
fn start_logged(
    w: &mut World,
    group: &str,
    case: &CaseRef,
    config: Option<&str>,
    log: &mut RunLog,
) -> Result<bool> {
    match w.start(group, case, config) {
        Ok(()) => Ok(true),
        Err(e) => match refused_rule(&e) {
            Some(rule) => {
                log.refusals.push((
                    format!("case start {}/{group} {}", w.lineage, case.label()),
                    rule.to_string(),
                ));
                Ok(false)
            }
            None => Err(e),
        },
    }
}

/// BIND-6 and BIND-7 before the group's first start: an observation whose
/// flag its numbers (or its validator) do not earn is recorded, the start is
/// refused citing the rule, then a sound observation is recorded.
fn unsound_gates(
    w: &mut World,
    ls: &LineageSpec,
    group: &str,
    case: &CaseRef,
    log: &mut RunLog,
) -> Result<()> {
    let quota = fault(ls, group, "quota_formula").is_some();
    let validator = fault(ls, group, "unfrozen_validator").is_some();
    if !quota && !validator {
        return Ok(());
    }
    w.gates(group);
    let m = w.lineage_state().frozen.manifest.public.clone();
    let hash = crate::method::trial_config::render(&m, group, case)?.blake3;
    if quota {
        // Consistent with itself (64 available >= 2), not with the frozen
        // formula (1 x 2 vCPU + 4 headroom, + 4 while the central host is
        // still to be provisioned).
        w.push(vec![Event::QuotaChecked(QuotaChecked {
            lineage: w.lineage.clone(),
            region: m.aws.region.clone(),
            quota_code: m.aws.quota_code.clone(),
            quota_vcpu: 64,
            used_vcpu: 0,
            available_vcpu: 64,
            required_vcpu: 2,
            status: Status::Pass,
            error: None,
        })]);
    }
    let v = w.validation(&hash, !validator);
    w.push(vec![v]);
    let cmd = crate::method::decide::CaseStart {
        lineage: Some(w.lineage.clone()),
        group: group.to_string(),
        case: case.clone(),
        trial_name: crate::schema::names::trial_name(&case.task, group, case),
        trial_config_blake3: hash,
        command: vec![],
        now_utc_ns: 0,
    };
    match w.decide(|s, now| {
        crate::method::decide::case_start(
            s,
            crate::method::decide::CaseStart {
                now_utc_ns: now,
                ..cmd
            },
        )
    }) {
        Err(e) if refused_rule(&e).is_some() => {
            log.refusals.push((
                format!("case start {}/{group} {}", w.lineage, case.label()),
                refused_rule(&e).unwrap_or_default().to_string(),
            ));
            // Sound observations, then the run goes on.
            w.gates(group);
            Ok(())
        }
        other => Err(Error::input(format!(
            "expected a refusal of the unsound gates of {group}, got {other:?}"
        ))),
    }
}

/// The requests of one case, with the request faults of the group's first
/// case applied.
fn requests_of(w: &World, ls: &LineageSpec, group: &str, case: &CaseRef, first: bool) -> Vec<Req> {
    if fault(ls, group, "no_requests").is_some() {
        return Vec::new();
    }
    let mut reqs = w.case_requests(group, case);
    if !first {
        return reqs;
    }
    if fault(ls, group, "pending_receipt").is_some() {
        reqs[0].receipt = ReceiptMode::Pending;
    }
    if fault(ls, group, "charge_mismatch").is_some() {
        reqs[0].receipt = ReceiptMode::Mismatch(1);
    }
    if fault(ls, group, "no_authoritative_receipt").is_some() {
        for r in &mut reqs {
            r.receipt = ReceiptMode::None;
        }
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
    reqs
}

/// The security-policy skip of `case` (CASE-6): the original and its
/// replacement-01 each refused with 403 evidence; `valid` when both classes
/// agree.
fn skip_attempts(
    w: &mut World,
    ls: &LineageSpec,
    group: &str,
    case: &CaseRef,
    valid: bool,
) -> Result<()> {
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
    for r in requests_of(w, ls, group, &r01, false) {
        w.request(group, &r);
    }
    let class = if valid {
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
    Ok(())
}

/// The end of one case: its result (or its invalidation, or its skip), with
/// the result faults of the group.
fn end_case(
    w: &mut World,
    ls: &LineageSpec,
    group: &str,
    ids: &[CaseRef],
    (i, passes): (usize, Option<bool>),
) -> Result<()> {
    let case = &ids[i];
    let pick = |kind: &str| picked(ls, group, ids, kind);
    let low = fault(ls, group, "low_scores").is_some();
    // Default outcome: every fourth identity fails its verifier.
    let reward = match passes {
        Some(true) => "1",
        Some(false) => "0",
        None if low || i % 4 == 3 => "0",
        None => "1",
    };
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
            crate::method::decide::case_invalidate(s, &g, &c, InvalidReason::ControllerCrash, p, h)
        })?;
    } else if let Some(kind) = ["skip_valid", "skip_invalid"]
        .into_iter()
        .find(|k| pick(k).as_ref() == Some(case))
    {
        skip_attempts(w, ls, group, case, kind == "skip_valid")?;
    } else {
        let shape = ResultShape {
            other_checksum: pick("checksum_mismatch").as_ref() == Some(case),
            other_config: pick("other_config").as_ref() == Some(case),
            early: pick("early_timestamps").as_ref() == Some(case),
            other_reward_keys: pick("multi_key_reward").as_ref() == Some(case),
            own_config: false,
        };
        w.result_with(group, case, Some(reward), None, &shape);
    }
    Ok(())
}

/// BIND-1 retries, BIND-5 outcomes after a 429, BIND-8 leaks: evidence of
/// the group's first case recorded after it.
fn binding_evidence(w: &mut World, ls: &LineageSpec, group: &str, ids: &[CaseRef]) {
    let name = crate::schema::names::trial_name(&ids[0].task, group, &ids[0]);
    let gref = w.gref(group);
    if fault(ls, group, "harbor_retries").is_some() {
        w.push(vec![Event::HarborJobRecorded(HarborJobRecorded {
            group: gref.clone(),
            job_name: format!("{}-job", w.lineage),
            path: format!("jobs/{}-job", w.lineage),
            trial_names: vec![name.clone()],
            config_blake3: Some(hex64("job config")),
            config_max_retries: Some(1),
            lock_blake3: Some(hex64("job lock")),
            lock_max_retries: Some(1),
            harbor_version: Some("0.25.0".into()),
            result_blake3: Some(hex64("job result")),
            n_retries: Some(1),
        })]);
    }
    if fault(ls, group, "credential_leak").is_some() {
        w.push(vec![Event::CredentialFound(CredentialFound {
            group: gref,
            file: format!("jobs/{name}/result.json"),
            file_blake3: hex64("a result quoting a key"),
            field: "exception_info.exception_message".into(),
            shape: "openai_project_key".into(),
            redacted: "<redacted: 95 bytes, 95 chars, looks like openai_project_key at byte 29>"
                .into(),
        })]);
    }
    if fault(ls, group, "outcome_after_429").is_some() {
        w.outcome_after_429(group, &ids[0]);
    }
}

/// Runs one opened group through its cases, close, cleanup and seal.
/// Returns `false` when a case start was refused (logged) and the run stops.
fn run_group(w: &mut World, ls: &LineageSpec, group: &str, log: &mut RunLog) -> Result<bool> {
    let ids = crate::method::lineage::group_identities(w.lineage_state(), group);
    let plan = match ls.figures.iter().find(|f| f.group == group) {
        Some(f) => Some(crate::testkit::figures::plan(f, &ids)?),
        None => None,
    };
    unsound_gates(w, ls, group, &ids[0], log)?;
    for (i, case) in ids.iter().enumerate() {
        let config = (picked(ls, group, &ids, "config_mismatch").as_ref() == Some(case))
            .then_some("a config other than the frozen rendering");
        if !start_logged(w, group, case, config, log)? {
            return Ok(false);
        }
        let requests = match &plan {
            Some(p) => p.requests[i].clone(),
            None => requests_of(w, ls, group, case, i == 0),
        };
        for r in &requests {
            w.request(group, r);
        }
        end_case(w, ls, group, &ids, (i, plan.as_ref().map(|p| p.passes[i])))?;
    }
    binding_evidence(w, ls, group, &ids);
    // The monitor saw the frozen concurrency reached (GATE-9's canary
    // needs it), or one more under the fault.
    let concurrency = u64::from(w.lineage_state().frozen.manifest.public.limits.concurrency);
    let peak = if fault(ls, group, "monitor_peak").is_some() {
        concurrency + 1
    } else {
        concurrency
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
    Ok(true)
}
