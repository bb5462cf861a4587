//! Builds realistic ledgers through the library's append API: frozen
//! manifests (from `ledger-schema/examples/manifest.toml`), sign-offs, gate
//! checks, group opens, rendered and validated configs, case starts and
//! exits, Harbor trial results, BitRouter traces/decisions/usage/receipts/
//! outcomes for every request, monitor samples, cleanup audits, seals and
//! feedback: every record passes the same guard, encoding and chain as an
//! operator's would.
//!
//! Scales (events per scored case ~83, as in a public reproduction):
//! - `15k`:  1 replicated experiment, 15 tasks x 3 trials x 4 groups;
//! - `150k`: 1 public reproduction, 89 tasks x 5 trials x 4 groups;
//! - `1.5m`: 10 public reproductions (distinct labels, ports, paths).
//!
//! The last lineage is left mid-run: its r3 is open and its last
//! `OPEN_CASES` identities were never started, so `case start` has work.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use benchledger::log::ledger::{Draft, Ledger};
use benchledger::schema::events::*;
use benchledger::schema::money::{Dec, Rates};

const EXAMPLE_MANIFEST: &str = include_str!("../../ledger-schema/examples/manifest.toml");
const EXAMPLE_PRIVATE: &str = include_str!("../../ledger-schema/examples/manifest.private.toml");
const EXAMPLE_LABEL: &str = "short13-kimi-2026-11";

/// Requests per case (each: trace, usage, receipt, and a decision outside
/// control).
pub const REQUESTS_PER_CASE: usize = 20;
/// Cases started between two gate re-checks (= the frozen concurrency).
pub const CONCURRENCY: usize = 8;
/// Identities of the last lineage's r3 left unstarted.
pub const OPEN_CASES: usize = 40;
/// Start of the simulated clock (2026-11-02T00:00:00Z).
pub const T0_NS: u64 = 1_793_577_600_000_000_000;
const ACTOR: &str = "operator:alice";

/// One scale of generated ledger.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Name used in reports and directory names.
    pub name: &'static str,
    /// Lineages.
    pub lineages: usize,
    /// `run.class` of each lineage.
    pub class: &'static str,
    /// Tasks per lineage.
    pub tasks: usize,
    /// Trials per task.
    pub trials: usize,
}

/// The three scales of the issue.
pub const SCALES: [Scale; 3] = [
    Scale {
        name: "15k",
        lineages: 1,
        class: "replicated_experiment",
        tasks: 15,
        trials: 3,
    },
    Scale {
        name: "150k",
        lineages: 1,
        class: "public_reproduction",
        tasks: 89,
        trials: 5,
    },
    Scale {
        name: "1.5m",
        lineages: 10,
        class: "public_reproduction",
        tasks: 89,
        trials: 5,
    },
];

/// A tiny scale for smoke runs (`cargo test` runs the bench binary once).
pub const SMOKE: Scale = Scale {
    name: "smoke",
    lineages: 1,
    class: "mechanism_iteration",
    tasks: 8,
    trials: 1,
};

/// Looks a scale up by name.
pub fn scale(name: &str) -> Option<Scale> {
    SCALES
        .iter()
        .chain([&SMOKE])
        .find(|s| s.name == name)
        .copied()
}

fn hex64(tag: &str) -> String {
    hex::encode(blake3::hash(tag.as_bytes()).as_bytes())
}

/// Task names: the example's 13, then synthetic ones.
fn task_names(n: usize) -> Vec<String> {
    let base = [
        "fix-git",
        "regex-log",
        "cancel-async-tasks",
        "crack-7z-hash",
        "git-multibranch",
        "log-summary-date-ranges",
        "openssl-selfsigned-cert",
        "sqlite-with-gcov",
        "polyglot-c-py",
        "heterogeneous-dates",
        "modernize-fortran-build",
        "password-recovery",
        "build-cython-ext",
    ];
    (0..n)
        .map(|i| match base.get(i) {
            Some(b) => b.to_string(),
            None => format!("tb-task-{i:03}"),
        })
        .collect()
}

/// The public and private manifest TOML of lineage `i` at `scale`.
pub fn manifest_texts(scale: &Scale, i: usize) -> (String, String, String) {
    let label = format!(
        "{}-{}-l{i:02}",
        scale.class.replace('_', "-"),
        scale.name.replace('.', "p")
    );
    let mut m = EXAMPLE_MANIFEST.replace(EXAMPLE_LABEL, &label);
    m = m.replace(
        "class = \"mechanism_iteration\"",
        &format!("class = \"{}\"", scale.class),
    );
    let trials: Vec<String> = (1..=scale.trials).map(|t| format!("\"t{t}\"")).collect();
    m = m.replace(
        "trials = [\"t1\"]",
        &format!("trials = [{}]", trials.join(", ")),
    );
    let start = m.find("tasks = [\n").expect("tasks");
    let end = start + m[start..].find("]\n").expect("end of tasks") + 2;
    let tasks: String = task_names(scale.tasks)
        .iter()
        .map(|t| {
            format!(
                "  {{ name = \"{t}\", content_sha256 = \"{}\" }},\n",
                hex64(t)
            )
        })
        .collect();
    m.replace_range(start..end, &format!("tasks = [\n{tasks}]\n"));
    let start = m.find("canaries = [\n").expect("canaries");
    let end = start + m[start..].find("]\n").expect("end of canaries") + 2;
    let canaries: String = (1..=CONCURRENCY)
        .map(|c| {
            format!(
                "  {{ group = \"canary-1\", task = \"hello-world\", trial = \"c{c}\", content_sha256 = \"{}\" }},\n",
                hex64("hello-world")
            )
        })
        .collect();
    m.replace_range(start..end, &format!("canaries = [\n{canaries}]\n"));
    // An r3 group after r2 (rounds share the policy database, LINEAGE-8).
    let r2 = m.find("[[groups]]\nname = \"r2\"").expect("r2");
    let r2_end = r2 + m[r2..].find("\n\n").expect("end of r2") + 2;
    let r3 = m[r2..r2_end]
        .replace("\"r2\"", "\"r3\"")
        .replace("/r2/", "/r3/")
        .replace("-r2\"", "-r3\"");
    m.insert_str(r2_end, &r3);
    m = m.replace(
        "r2 = \"92b88cde",
        &format!(
            "r3 = \"{}\"\nr2 = \"92b88cde",
            hex64(&format!("{label}-r3-config"))
        ),
    );
    // Ports unique per lineage (FREEZE-4); r3 (a copy of r2) comes last.
    let base = 20_000 + 100 * i;
    for (old, k) in [
        ("18701", 0),
        ("18711", 1),
        ("18721", 2),
        ("18731", 3),
        ("18731", 4),
    ] {
        m = m.replacen(
            &format!("ports = [{old}]"),
            &format!("ports = [{}]", base + 10 * k),
            1,
        );
    }
    m = m.replace("concurrency = 1", &format!("concurrency = {CONCURRENCY}"));
    let p = EXAMPLE_PRIVATE.replace(EXAMPLE_LABEL, &label);
    (label, m, p)
}

fn gref(lineage: &str, group: &str) -> GroupRef {
    GroupRef {
        lineage: lineage.into(),
        group: group.into(),
    }
}

/// Appends drafts in blocks, one durable commit per block, with a
/// simulated clock.
pub struct Writer<'a> {
    ledger: &'a Ledger,
    drafts: Vec<Draft>,
    /// The simulated clock, ns.
    pub clock: u64,
    /// Records appended so far (genesis excluded).
    pub appended: u64,
}

impl<'a> Writer<'a> {
    /// A writer on `ledger`, its clock at `clock`.
    pub fn new(ledger: &'a Ledger, clock: u64) -> Self {
        Writer {
            ledger,
            drafts: Vec::new(),
            clock,
            appended: 0,
        }
    }

    /// Queues one event.
    pub fn push(&mut self, event: Event, key: Option<String>) {
        self.drafts.push(Draft {
            actor: ACTOR.into(),
            event,
            idempotency_key: key,
        });
    }

    /// Commits the queued events (one durable append), advancing the clock.
    pub fn commit(&mut self) {
        if self.drafts.is_empty() {
            return;
        }
        let done = self
            .ledger
            .append(&self.drafts, self.clock)
            .expect("generated append");
        self.appended += done.iter().filter(|a| a.appended).count() as u64;
        self.drafts.clear();
        self.clock += 5_000_000_000;
    }
}

/// Every gate a group's case start needs, passing (GATE-1..3), plus two
/// monitor samples.
pub fn gates(w: &mut Writer, frozen: &ManifestFrozen, group: &str, peak: u64) {
    let l = &frozen.lineage;
    let m = &frozen.manifest.public;
    w.push(
        Event::IdentityChecked(IdentityChecked {
            lineage: l.clone(),
            selector: "profile:bench-operator".into(),
            region: "us-east-1".into(),
            endpoint_override: None,
            ambient_variables_ignored: vec!["AWS_ACCESS_KEY_ID".into()],
            account: Some(frozen.manifest.private.account.clone()),
            principal: Some(frozen.manifest.private.principal_arn.clone()),
            status: Status::Pass,
            error: None,
        }),
        None,
    );
    w.push(
        Event::QuotaChecked(QuotaChecked {
            lineage: l.clone(),
            region: "us-east-1".into(),
            quota_code: "L-1216C47A".into(),
            quota_vcpu: 256,
            used_vcpu: 20,
            available_vcpu: 236,
            required_vcpu: 24,
            status: Status::Pass,
            error: None,
        }),
        None,
    );
    let check = |kind, group: Option<&str>, target: &str, details: &[(&str, &str)]| {
        Event::CheckRecorded(CheckRecorded {
            lineage: l.clone(),
            group: group.map(Into::into),
            check: kind,
            target: target.into(),
            status: Status::Pass,
            details: details
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    };
    w.push(
        check(
            CheckKind::Residue,
            Some(group),
            "run-tag",
            &[("sandbox_count", "0"), ("instance_ids", "")],
        ),
        None,
    );
    w.push(
        check(
            CheckKind::DaemonHealth,
            Some(group),
            "http://10.20.0.10/health",
            &[("http_status", "200"), ("latency_ms", "3")],
        ),
        None,
    );
    let routes: Vec<_> = if group == "control" {
        m.routes
            .iter()
            .filter(|r| r.tier == benchledger::schema::manifest::Tier::Strong)
            .collect()
    } else {
        m.routes.iter().collect()
    };
    for r in routes {
        w.push(
            check(
                CheckKind::ProviderSentinel,
                None,
                &r.gate_target,
                &[
                    ("http_status", "200"),
                    ("latency_ms", "812"),
                    ("request_id", "sentinel-0001"),
                ],
            ),
            None,
        );
    }
    for n in [peak, peak] {
        w.push(
            Event::MonitorSampled(MonitorSampled {
                group: gref(l, group),
                sandbox_count: n,
                instance_ids: (0..n).map(|k| format!("i-0{k:016x}")).collect(),
            }),
            None,
        );
    }
}

/// A realistic usage row (the shape `ingest usage` records).
pub fn usage_row(g: &GroupRef, request_id: &str, n: u64) -> Event {
    let buckets = TokenBuckets {
        uncached_input_tokens: 1972 + n % 997,
        cache_read_tokens: 32832 + n % 4093,
        cache_write_tokens: n % 3,
        output_tokens: 485 + n % 211,
        reasoning_tokens: n % 17,
    };
    let dec = |s: &str| Dec::parse(s).expect("decimal");
    Event::UsageRecorded(Box::new(UsageRecorded {
        group: g.clone(),
        request_id: request_id.into(),
        provider_id: "ambient".into(),
        model_id: "moonshotai/kimi-k2.7-code".into(),
        prompt_tokens: buckets.uncached_input_tokens
            + buckets.cache_read_tokens
            + buckets.cache_write_tokens,
        completion_tokens: buckets.output_tokens + buckets.reasoning_tokens,
        buckets,
        final_charge_micro_usd: Some(31175 + n % 1000),
        charge_status: ChargeStatus::Computed,
        reconciliation_status: ReconciliationStatus::Computed,
        usage_origin: UsageOrigin::ProviderReported,
        status: Some("completed".into()),
        error_code: None,
        rates: Some(Rates {
            uncached_input: Some(dec("0.84")),
            cache_read: Some(dec("0.84")),
            cache_write: Some(dec("0.84")),
            output: Some(dec("3.99")),
        }),
        pricing_source: Some(PricingSource::Configured),
        pricing_version: Some(format!("sha256:{}", hex64("pricing"))),
        recomputed_charge_micro_usd: Some(31175 + n % 1000),
        recompute_matches: Some(true),
        line_blake3: hex64(&format!("usage-{request_id}-{n}")),
    }))
}

/// The idempotency key `ingest` gives row `line` of a file.
pub fn row_key(kind: &str, file_tag: &str, line: u64) -> String {
    format!("{kind}:{}:{line}", &hex64(file_tag)[..32])
}

fn trial_result(
    g: &GroupRef,
    case: &CaseRef,
    trial_name: &str,
    config_blake3: &str,
    n: u64,
) -> Event {
    let reward = if n.is_multiple_of(3) { "0.0" } else { "1.0" };
    Event::TrialResultRecorded(Box::new(TrialResultRecorded {
        group: g.clone(),
        case: case.clone(),
        trial_name: trial_name.into(),
        attempt_id: {
            let x = hex64(&format!("attempt-{}-{trial_name}", g.lineage));
            format!(
                "{}-{}-{}-{}-{}",
                &x[..8],
                &x[8..12],
                &x[12..16],
                &x[16..20],
                &x[20..32]
            )
        },
        task_name: case.task.clone(),
        task_id: HarborTaskId {
            git_url: Some("https://github.com/laude-institute/terminal-bench-2.git".into()),
            git_commit_id: Some("69671fbaac6d67a7ef0dfec016cc38a64ef7a77c".into()),
            path: Some(case.task.clone()),
            org: None,
            name: None,
            git_ref: None,
        },
        source: Some("terminal-bench".into()),
        task_checksum: hex64(&case.task),
        agent: "terminus-2@2.0.0".into(),
        model: Some("claude-sonnet-4-5".into()),
        rewards: Some(
            [("reward".to_string(), reward.to_string())]
                .into_iter()
                .collect(),
        ),
        exception_type: None,
        exception_message_blake3: None,
        started_at: Some("2026-11-02T12:00:05Z".into()),
        finished_at: Some("2026-11-02T12:10:17Z".into()),
        n_input_tokens: Some(48213 + n),
        n_cache_tokens: Some(30112),
        n_output_tokens: Some(3921),
        config_blake3: config_blake3.into(),
        result_path: format!("jobs/{}-{}/{trial_name}/result.json", g.lineage, g.group),
        result_blake3: hex64(&format!("result-{}-{trial_name}", g.lineage)),
    }))
}

/// Records `cases` of `group`: gates every `CONCURRENCY` cases, rendered and
/// validated configs, starts, exits, then the block's Harbor results and
/// BitRouter rows as one ingest each.
fn run_cases(
    w: &mut Writer,
    frozen: &ManifestFrozen,
    plan: &benchledger::schema::plan::Plan,
    group: &str,
    cases: &[CaseRef],
    counter: &mut u64,
) {
    let l = frozen.lineage.clone();
    let g = gref(&l, group);
    let m = &frozen.manifest.public;
    for block in cases.chunks(CONCURRENCY) {
        gates(w, frozen, group, block.len() as u64);
        let mut starts = Vec::new();
        for case in block {
            let r = benchledger::method::trial_config::render(m, group, case).expect("render");
            let name = benchledger::schema::names::trial_name(&case.task, group, case);
            w.push(
                Event::ArtifactRecorded(ArtifactRecorded {
                    group: Some(g.clone()),
                    role: "trial_config".into(),
                    path: format!("configs/{name}.json"),
                    bytes: r.bytes.len() as u64,
                    blake3: r.blake3.clone(),
                }),
                None,
            );
            w.push(
                Event::CheckRecorded(CheckRecorded {
                    lineage: l.clone(),
                    group: Some(group.into()),
                    check: CheckKind::ConfigValidated,
                    target: r.blake3.clone(),
                    status: Status::Pass,
                    details: validated_details(plan),
                }),
                None,
            );
            w.push(
                Event::CaseStarted(CaseStarted {
                    group: g.clone(),
                    case: case.clone(),
                    trial_name: name.clone(),
                    trial_config_blake3: r.blake3.clone(),
                    gate_seqs: vec![1, 2, 3, 4, 5, 6, 7, 8],
                    command: vec![
                        "harbor".into(),
                        "trial".into(),
                        "start".into(),
                        "-c".into(),
                        format!("configs/{name}.json"),
                    ],
                }),
                Some(format!(
                    "case-start:{l}/{group}/{}/{}",
                    case.task, case.trial
                )),
            );
            starts.push((case.clone(), name, r.blake3));
        }
        w.commit();
        for (case, name, _) in &starts {
            w.push(
                Event::CaseProcessExited(CaseProcessExited {
                    group: g.clone(),
                    case: case.clone(),
                    exit_code: Some(0),
                    signal: None,
                    duration_ms: 612_345,
                    log_path: format!("/srv/bench/{l}/{group}/out/{name}.log"),
                    log_blake3: hex64(&format!("log-{l}-{name}")),
                }),
                None,
            );
        }
        w.commit();
        // ingest harbor: every trial result of the block + the job artifact
        for (case, name, cfg) in &starts {
            *counter += 1;
            w.push(
                trial_result(&g, case, name, cfg, *counter),
                Some(format!("harbor-trial:{l}/{group}/{name}")),
            );
        }
        w.push(
            Event::ArtifactRecorded(ArtifactRecorded {
                group: Some(g.clone()),
                role: "harbor_job_result".into(),
                path: format!("jobs/{l}-{group}/result.json"),
                bytes: 4321,
                blake3: hex64(&format!("job-{l}-{group}-{counter}")),
            }),
            None,
        );
        w.commit();
        // ingest traces / decisions / usage / receipts / outcomes: one file each
        let block_no = *counter;
        let file = |kind: &str| format!("{l}/{group}/{kind}/{block_no}");
        let request =
            |case: &CaseRef, k: usize| format!("req-{}-{}-{}-{k:03}", group, case.task, case.trial);
        let kinds: &[&str] = if group == "control" {
            &["traces", "usage", "receipts", "outcomes"]
        } else {
            &["traces", "decisions", "usage", "receipts", "outcomes"]
        };
        for kind in kinds {
            let tag = file(kind);
            let mut line = 0u64;
            for (case, name, _) in &starts {
                let rows = if *kind == "outcomes" {
                    1
                } else {
                    REQUESTS_PER_CASE
                };
                for k in 0..rows {
                    line += 1;
                    *counter += 1;
                    let n = *counter;
                    let rid = request(
                        case,
                        if *kind == "outcomes" {
                            REQUESTS_PER_CASE - 1
                        } else {
                            k
                        },
                    );
                    let event = match *kind {
                        "traces" => Event::RequestTraced(RequestTraced {
                            group: g.clone(),
                            request_id: rid,
                            captured_at: "2026-11-02T12:00:07.123Z".into(),
                            harness: Harness::Terminus2,
                            protocol: Protocol::ChatCompletions,
                            method: "POST".into(),
                            path: "/v1/chat/completions".into(),
                            http_status: 200,
                            status: TraceStatus::Completed,
                            line_blake3: hex64(&format!("{tag}-{line}")),
                        }),
                        "decisions" => Event::PolicyDecisionRecorded(PolicyDecisionRecorded {
                            group: g.clone(),
                            request_id: Some(rid),
                            ingress_request_id_sha256: None,
                            captured_at: Some("2026-11-02T12:00:07.1+00:00".into()),
                            input_model: "@auto".into(),
                            policy: Some("auto".into()),
                            reason: "static_table".into(),
                            baseline_tier: Some("strong".into()),
                            selected_tier: Some(
                                if n.is_multiple_of(2) {
                                    "economy"
                                } else {
                                    "strong"
                                }
                                .into(),
                            ),
                            selected_model: Some("ambient:qwen/qwen3-coder-30b".into()),
                            pinned: false,
                            locked: false,
                            trialed: false,
                            line_blake3: hex64(&format!("{tag}-{line}")),
                        }),
                        "usage" => usage_row(&g, &rid, n),
                        "receipts" => Event::ReceiptRecorded(ReceiptRecorded {
                            group: g.clone(),
                            request_id: rid,
                            state: ReceiptState::Computed,
                            provider_id: Some("ambient".into()),
                            model_id: Some("moonshotai/kimi-k2.7-code".into()),
                            buckets: TokenBuckets {
                                uncached_input_tokens: 1972,
                                cache_read_tokens: 32832,
                                cache_write_tokens: 0,
                                output_tokens: 485,
                                reasoning_tokens: 1,
                            },
                            final_charge_micro_usd: Some(31175),
                            source_blake3: hex64(&format!("{tag}-{line}")),
                        }),
                        _ => Event::OutcomeRecorded(OutcomeRecorded {
                            group: g.clone(),
                            request_id: Some(rid),
                            session_key: name.clone(),
                            task_id: format!("terminal-bench/{}", case.task),
                            reward: if n.is_multiple_of(3) {
                                "0.0".into()
                            } else {
                                "1.0".into()
                            },
                            failed_reason: None,
                            trial_name: Some(name.clone()),
                            line_blake3: hex64(&format!("{tag}-{line}")),
                        }),
                    };
                    w.push(event, Some(row_key(kind, &tag, line)));
                }
            }
            w.push(
                Event::ArtifactRecorded(ArtifactRecorded {
                    group: Some(g.clone()),
                    role: format!("bitrouter_{kind}"),
                    path: format!("/srv/bench/{l}/{group}/{kind}.jsonl"),
                    bytes: 512 * line,
                    blake3: hex64(&tag),
                }),
                Some(format!("artifact:{kind}:{group}:{}", &hex64(&tag)[..32])),
            );
            w.commit();
        }
    }
}

fn seal(w: &mut Writer, l: &str, group: &str, n_cases: usize) {
    let g = gref(l, group);
    w.push(Event::GroupClosed(GroupClosed { group: g.clone() }), None);
    w.push(
        Event::CleanupAudited(CleanupAudited {
            group: g.clone(),
            region: "us-east-1".into(),
            identity: "arn:aws:iam::********9012:role/…".into(),
            filters: vec![
                format!("tag:benchledger:run={l}"),
                "tag:benchledger:role=sandbox".into(),
            ],
            tracked_instance_ids: (0..n_cases.min(64))
                .map(|k| format!("i-0{k:016x}"))
                .collect(),
            found: vec![],
            excluded_central_instance_id: None,
            status: Status::Pass,
            error: None,
        }),
        None,
    );
    w.push(
        Event::GroupSealed(GroupSealed {
            group: g,
            status: "accepted".into(),
            rows: [
                "manifest",
                "attempts",
                "trial_result",
                "join",
                "settlement",
                "cleanup",
            ]
            .iter()
            .map(|r| GateRow {
                gate: r.to_string(),
                holds: true,
                evidence: format!("{r}: every row holds ({n_cases} cases)"),
            })
            .collect(),
            skipped_security_policy: vec![],
            projection_version: benchledger::method::projections::PROJECTION_VERSION,
        }),
        None,
    );
    w.commit();
}

/// What the generator left for `case start`: the lineage label, group and
/// the identities not started yet.
#[derive(Debug, Clone)]
pub struct OpenWork {
    /// The lineage label.
    pub lineage: String,
    /// The open group.
    pub group: String,
    /// Identities never started.
    pub cases: Vec<CaseRef>,
}

/// Generates a ledger at `dir` (which must not exist) at `scale`.
pub fn generate(dir: &Path, scale: &Scale) -> (u64, OpenWork) {
    let (ledger, _) = Ledger::create(
        dir,
        Duration::from_secs(5),
        [42; 16],
        "operator:init",
        T0_NS,
    )
    .expect("create");
    let mut w = Writer::new(&ledger, T0_NS + 1_000_000_000);
    let mut counter = 0u64;
    let mut open = None;
    for i in 0..scale.lineages {
        let last = i + 1 == scale.lineages;
        let (label, public, private) = manifest_texts(scale, i);
        let frozen = benchledger::method::freeze::freeze(
            &public,
            "manifest.toml",
            &private,
            "manifest.private.toml",
        )
        .unwrap_or_else(|e| panic!("generated manifest {label} does not freeze: {e}"));
        w.push(frozen.clone().into_event(), None);
        w.commit();
        for (role, name) in [
            (SignOffRole::Operator, "alice"),
            (SignOffRole::Reviewer, "bob"),
        ] {
            let signed = benchledger::method::trust::sign_manifest(
                &label,
                &frozen.manifest_blake3,
                role,
                &benchledger::testkit::examples::signer(name),
            )
            .expect("the example keys sign");
            w.push(Event::ManifestSignedOffV2(signed), None);
            w.commit();
        }
        let m = frozen.manifest.public.clone();
        for group in m.group_names() {
            let sw = &m.software;
            let gm = m.groups.iter().find(|g| g.name == group).expect("group");
            w.push(
                Event::GroupOpened(GroupOpened {
                    group: gref(&label, group),
                    binary_sha256: sw.bitrouter_binary_sha256.clone(),
                    config_sha256: sw.bitrouter_config_sha256[group].clone(),
                    ports: gm.ports.clone(),
                    db_path: gm.db_path.clone(),
                    out_dir: gm.out_dir.clone(),
                }),
                None,
            );
            w.commit();
            let mut cases: Vec<CaseRef> = if group.starts_with("canary") {
                m.cases
                    .canaries
                    .iter()
                    .map(|c| CaseRef {
                        task: c.task.clone(),
                        trial: c.trial.clone(),
                        replacement: 0,
                    })
                    .collect()
            } else {
                m.cases
                    .tasks
                    .iter()
                    .flat_map(|t| {
                        m.cases.trials.iter().map(move |tr| CaseRef {
                            task: t.name.clone(),
                            trial: tr.clone(),
                            replacement: 0,
                        })
                    })
                    .collect()
            };
            let is_last_group = group == "r3";
            if last && is_last_group {
                let keep = cases.len().saturating_sub(OPEN_CASES.min(cases.len() - 1));
                let rest = cases.split_off(keep);
                open = Some(OpenWork {
                    lineage: label.clone(),
                    group: group.to_string(),
                    cases: rest,
                });
            }
            run_cases(
                &mut w,
                &frozen.v1_view(),
                &frozen.plan,
                group,
                &cases,
                &mut counter,
            );
            if last && is_last_group {
                break;
            }
            seal(&mut w, &label, group, cases.len());
            if group == "r1" || group == "r2" {
                w.push(
                    Event::FeedbackApplied(FeedbackApplied {
                        group: gref(&label, group),
                        policy_snapshot_before: hex64(&format!("{label}-{group}-before")),
                        policy_snapshot_after: hex64(&format!("{label}-{group}-after")),
                    }),
                    None,
                );
                w.commit();
            }
            if group == "control" {
                w.push(
                    Event::ControlRegistered(ControlRegistered {
                        group: gref(&label, group),
                        control_key: frozen.control_key.clone(),
                        artifact_blake3: hex64(&format!("{label}-control-artifact")),
                    }),
                    None,
                );
                w.commit();
            }
        }
    }
    let head = ledger.head().expect("head");
    (head.seq + 1, open.expect("open work"))
}

/// The details of a passing validation by the lineage's frozen validator
/// (GATE-7, BIND-7: `case start` re-judges them from these facts).
pub fn validated_details(plan: &benchledger::schema::plan::Plan) -> BTreeMap<String, String> {
    let v = &plan.binding.validator;
    [
        ("exit_code", "0"),
        ("timed_out", "false"),
        ("program_blake3", v.program_blake3.as_str()),
        ("validator", v.program.as_str()),
        ("harbor_version", v.harbor_version.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Fresh passing gates for `group` of the lineage, stamped `now`, plus a
/// validation of `config_blake3` (what `case start` checks, GATE-1..3, 7).
pub fn fresh_gates(
    ledger: &Ledger,
    frozen: &ManifestFrozen,
    plan: &benchledger::schema::plan::Plan,
    group: &str,
    config_blake3: &str,
    now: u64,
) {
    let mut w = Writer::new(ledger, now);
    gates(&mut w, frozen, group, 0);
    w.push(
        Event::CheckRecorded(CheckRecorded {
            lineage: frozen.lineage.clone(),
            group: Some(group.into()),
            check: CheckKind::ConfigValidated,
            target: config_blake3.into(),
            status: Status::Pass,
            details: validated_details(plan),
        }),
        None,
    );
    w.commit();
}

/// A passing Harbor result for a started case (so CASE-7 has room again).
pub fn finish_case(ledger: &Ledger, lineage: &str, group: &str, case: &CaseRef, now: u64) {
    let g = gref(lineage, group);
    let name = benchledger::schema::names::trial_name(&case.task, group, case);
    let mut w = Writer::new(ledger, now);
    w.push(
        trial_result(&g, case, &name, "c", now),
        Some(format!("harbor-trial:{lineage}/{group}/{name}")),
    );
    w.commit();
}
