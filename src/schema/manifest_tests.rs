//! The stored manifest's layout, pinned, and the helpers about stored values.

use super::*;

/// BLAKE3 of the canonical encoding of [`populated`], hex.
const POPULATED_BINCODE_BLAKE3: &str =
    "c18c8ac7a93ae75dac2b969f12f66fbb5bf5ee33ab6131e80a654fa929407448";
/// Length of that encoding, in bytes.
const POPULATED_BINCODE_BYTES: usize = 2944;
/// BLAKE3 of the JSON of [`populated`] (hex): the published field names.
const POPULATED_JSON_BLAKE3: &str =
    "d4497579a866a84408f2f3d8dba348dc6c43af5671b63d54102bd632ecc4f7cb";

const CHANGED: &str = "the stored manifest layout changed. These types are the bytes of \
    every recorded manifest_frozen.v1 (and price_snapshot_recorded.v1) payload: a field \
    change needs a new event kind version (manifest_frozen.v2) with its own types, never an \
    edit of the v1 types. A new TOML key belongs to method::freeze's input types";

fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("a test decimal")
}

fn sealed(value: &str) -> Committed {
    Committed {
        commitment: format!("{value}-commitment"),
        redacted: format!("{value}-redacted"),
    }
}

fn group(name: &str, port: u16) -> Group {
    Group {
        name: name.into(),
        ports: vec![port, port + 1],
        db_path: format!("/{name}/db"),
        out_dir: format!("/{name}/out"),
        daemon_log: format!("/{name}/daemon.log"),
        trace_path: format!("/{name}/trace.jsonl"),
        decision_path: format!("/{name}/decision.jsonl"),
        outcome_path: format!("/{name}/outcome.jsonl"),
        job_name: format!("job-{name}"),
    }
}

fn price(tier: &str, basis: PriceBasis) -> PriceRecord {
    PriceRecord {
        provider: format!("{tier}-provider"),
        model: format!("{tier}-model"),
        credential_class: "api_key".into(),
        currency: "USD".into(),
        uncached_input: dec("0.84"),
        cache_read: Some(dec("0.084")),
        cache_write: Some(dec("1.05")),
        output: dec("3.99"),
        cache_price_fallback: true,
        basis,
        source: "https://example.com/prices".into(),
        effective_from: "2026-11-01".into(),
        effective_to: Some("2026-12-01".into()),
    }
}

fn route(tier: Tier, protocol: RouteProtocol) -> Route {
    Route {
        tier,
        provider: format!("{tier:?}-provider"),
        model: format!("{tier:?}-model"),
        protocol,
        credential_class: "api_key".into(),
        gate_target: format!("claude-code:{tier:?}"),
    }
}

/// A stored manifest with every field set: every `Option` is `Some`, every
/// list and map has entries, enums take more than their first variant. A
/// struct literal, so a new field does not compile until it is added here.
fn populated() -> Manifest {
    let public = ManifestFile {
        manifest_version: 1,
        lineage: "layout-lineage".into(),
        benchmark: Benchmark {
            name: "terminal-bench".into(),
            version: "2.1".into(),
            dataset_repo: "https://example.com/dataset.git".into(),
            dataset_revision: "0123456789abcdef".into(),
        },
        run: Run {
            class: RunClass::ReplicatedExperiment,
            role: RunRole::HeldOut,
            hypothesis: "the router saves money".into(),
        },
        cases: Cases {
            trials: vec!["t1".into(), "t2".into(), "t3".into()],
            tasks: vec![
                Task {
                    name: "fix-git".into(),
                    content_sha256: "a".repeat(64),
                },
                Task {
                    name: "regex-log".into(),
                    content_sha256: "b".repeat(64),
                },
            ],
            canaries: vec![CanaryCase {
                group: "canary-1".into(),
                task: "hello-world".into(),
                trial: "c1".into(),
                content_sha256: "c".repeat(64),
            }],
        },
        groups: vec![
            group("canary-1", 18700),
            group("control", 18710),
            group("r1", 18720),
        ],
        aws: Aws {
            profile: Some("bench-operator".into()),
            assume_role: true,
            instance_profile: true,
            region: "us-east-1".into(),
            quota_code: EC2_VCPU_QUOTA_CODE.into(),
            quota_headroom_vcpu: 8,
        },
        central: Central {
            mode: CentralMode::Reuse,
            ami: "ami-central".into(),
            instance_type: "m7i.large".into(),
            vcpu: 2,
            role_tag_value: "central".into(),
            instance_id: Some("i-0123456789abcdef0".into()),
            daemon_host: "10.0.0.5".into(),
        },
        sandbox: Sandbox {
            ami: "ami-sandbox".into(),
            instance_type: "m7i.xlarge".into(),
            vcpu: 4,
            network: "subnet-1/sg-1/egress-all".into(),
        },
        tags: Tags {
            run_key: "bench:run".into(),
            run_value: "layout-lineage".into(),
            role_key: "bench:role".into(),
            sandbox_role_value: "sandbox".into(),
            case_key: "bench:case".into(),
            trial_key: "bench:trial".into(),
        },
        software: Software {
            sources: vec![SourceRepo {
                name: "bitrouter".into(),
                repo: "https://example.com/bitrouter.git".into(),
                commit: "003f99ee".into(),
                patch_sha256: Some("d".repeat(64)),
            }],
            bitrouter_binary_sha256: "e".repeat(64),
            bitrouter_arch: "aarch64".into(),
            bitrouter_config_sha256: [("control".to_string(), "f".repeat(64))]
                .into_iter()
                .collect(),
            harbor_version: "0.25.0".into(),
            terminus_version: "2.0.0".into(),
        },
        harbor: Harbor {
            retries: 0,
            agent: "terminus-2".into(),
            local_api_key: "local-key".into(),
            jobs_dir: "/jobs".into(),
            agent_timeout_sec: 3600,
            verifier_timeout_sec: 600,
            accepted_exceptions: vec!["AgentTimeoutError".into()],
            policy_model: "@auto".into(),
            policy_protocol: RouteProtocol::Anthropic,
        },
        routes: vec![
            route(Tier::Strong, RouteProtocol::Anthropic),
            route(Tier::Economy, RouteProtocol::Openai),
        ],
        prices: vec![
            price("strong", PriceBasis::Actual),
            price("economy", PriceBasis::Notional),
        ],
        limits: Limits {
            concurrency: 4,
            settlement_grace_sec: 300,
            reconciliation_attempts: 3,
            gate_freshness_sec: 900,
            spend_stop_micro_usd: 50_000_000,
            severe_quality_stop_pct: dec("12.5"),
        },
        method: Method {
            security_skip_enabled: true,
            quality_tolerance_pct: dec("2"),
            cost_tolerance_pct: dec("-5.5"),
            tuning_tasks: vec!["fix-git".into()],
            held_out_tasks: vec!["regex-log".into()],
            control_emits_decisions: true,
            interval_method: "percentile_bootstrap".into(),
            interval_seed: 42,
            interval_resamples: 10_000,
        },
    };
    let private = PrivateCommitments {
        account: sealed("account"),
        principal_arn: sealed("principal"),
        role_arn: Some(sealed("role")),
        secret_locations: [
            (Tier::Strong, sealed("strong")),
            (Tier::Balanced, sealed("balanced")),
        ]
        .into_iter()
        .collect(),
    };
    Manifest { public, private }
}

#[test]
fn the_stored_layout_is_pinned() {
    let manifest = populated();
    let bytes = crate::log::codec::encode(&manifest).expect("the stored manifest encodes");
    let json = serde_json::to_string(&manifest).expect("the stored manifest serializes");
    let found = (
        hex::encode(blake3::hash(&bytes).as_bytes()),
        bytes.len(),
        hex::encode(blake3::hash(json.as_bytes()).as_bytes()),
    );
    let pinned = (
        POPULATED_BINCODE_BLAKE3.to_string(),
        POPULATED_BINCODE_BYTES,
        POPULATED_JSON_BLAKE3.to_string(),
    );
    assert_eq!(found, pinned, "{CHANGED}");
    // The encoding is canonical: it decodes to the same value.
    assert_eq!(
        crate::log::codec::decode_canonical::<Manifest>(&bytes).as_ref(),
        Ok(&manifest),
        "{CHANGED}"
    );
}

#[test]
fn commitments_depend_on_key_field_and_value() {
    let k1 = [1u8; 32];
    let k2 = [2u8; 32];
    let a = commit(&k1, "aws.account", "123456789012");
    assert_ne!(a, commit(&k2, "aws.account", "123456789012"));
    assert_ne!(a, commit(&k1, "aws.principal_arn", "123456789012"));
    assert_ne!(a, commit(&k1, "aws.account", "123456789013"));
}

#[test]
fn redaction_keeps_the_shape_and_the_last_four_digits() {
    assert_eq!(redact_account("123456789012"), "********9012");
    assert_eq!(
        redact_arn("arn:aws:iam::123456789012:role/benchmark-runner"),
        "arn:aws:iam::********9012:role/…"
    );
    assert_eq!(redact_arn("not-an-arn"), "arn:…");
    assert_eq!(redact_location("env:ANTHROPIC_BENCH_KEY"), "env:…");
    assert_eq!(redact_location("file:/run/secrets/key"), "file:…");
    assert_eq!(redact_location("nowhere"), "…");
}

#[test]
fn commitment_keys_are_64_hex_digits_and_not_zero() {
    assert_eq!(commitment_key(&"01".repeat(32), "p").unwrap(), [1u8; 32]);
    let short = commitment_key("0102", "p").unwrap_err().to_string();
    assert!(
        short.contains("p: field commitment_key: must be 64 hex digits"),
        "{short}"
    );
    let zero = commitment_key(&"00".repeat(32), "p")
        .unwrap_err()
        .to_string();
    assert!(zero.contains("must not be all zeros"), "{zero}");
}

#[test]
fn non_evaluation_groups_are_canary_and_preflight_names() {
    for name in ["canary", "canary-1", "preflight", "preflight-aws"] {
        assert!(is_non_evaluation(name), "{name}");
    }
    for name in EVALUATION_GROUPS.iter().chain(&["canaryx", "pre-flight"]) {
        assert!(!is_non_evaluation(name), "{name}");
    }
}
