//! The test vectors of `ledger-schema/vectors/`: a deterministic chain with
//! one record of every kind, and must-fail cases, generated from this code
//! and committed. A test fails when the committed files drift from what the
//! code produces (`cargo run --example gen-vectors` rewrites them).

use serde::Serialize;

use crate::log::chain::{DamageKind, Hash, Sealed, Verified, Walker, ZERO_HASH};
use crate::log::record::{Record, FORMAT_VERSION};
use crate::schema::events::Event;

/// File name of the valid chain (an export, one line per record).
pub const CHAIN_FILE: &str = "chain.jsonl";
/// File name of the must-fail cases.
pub const MUST_FAIL_FILE: &str = "must-fail.jsonl";

/// Fixed instant of the first vector record (2026-03-01T12:00:00Z), in ns.
const T0_UTC_NS: u64 = 1_772_366_400_000_000_000;

/// The example manifests of `ledger-schema/examples/`.
use crate::testkit::examples::{EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};

fn hex64(tag: &str) -> String {
    hex::encode(blake3::hash(tag.as_bytes()).as_bytes())
}

/// One example event of every kind, in vocabulary order, each with an
/// optional idempotency key. After the older kinds come the example
/// operator's signed sign-off (key `alice` of `testkit::examples::signer`,
/// derivable by anyone), a checkpoint of every record before it, signed by
/// the same key, one event of each driver kind (RUN-2..4), then the later
/// kinds in vocabulary order (BIND-11, BIND-12).
pub fn example_events() -> Vec<(Event, Option<String>)> {
    use crate::schema::events::SignOffRole;
    let mut events = events_before_trust();
    let Some(frozen) = events.iter().rev().find_map(|(event, _)| match event {
        Event::ManifestFrozenV2(frozen) => Some(frozen.clone()),
        _ => None,
    }) else {
        unreachable!("the older kinds include the v2 manifest")
    };
    let alice = crate::testkit::examples::signer("alice");
    let signed = crate::method::trust::sign_manifest(
        &frozen.lineage,
        &frozen.manifest_blake3,
        SignOffRole::Operator,
        &alice,
    )
    .expect("the example key signs");
    events.push((Event::ManifestSignedOffV2(signed), None));
    let checkpoint = checkpoint_of(&events, &alice);
    events.push((Event::CheckpointRecorded(checkpoint.clone()), None));
    events.extend(driver_events(&frozen.lineage));
    events.push((
        Event::TrialFactsRecorded(crate::schema::events::TrialFactsRecorded {
            group: crate::schema::events::GroupRef {
                lineage: frozen.lineage.clone(),
                group: "control".into(),
            },
            case: crate::schema::events::CaseRef {
                task: "fix-git".into(),
                trial: "t1".into(),
                replacement: 0,
            },
            trial_name: "fix-git__control-t1".into(),
            result_blake3: hex64("result"),
            times: [
                ("agent_execution.started_at", "2026-11-20T10:00:05Z"),
                ("finished_at", "2026-11-20T10:04:00Z"),
                ("started_at", "2026-11-20T10:00:00Z"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            n_attempts: Some(1),
            trials_for_case: 1,
        }),
        Some("harbor-trial-facts:example".into()),
    ));
    events.push((
        Event::EvidenceRefused(crate::schema::events::EvidenceRefused {
            group: crate::schema::events::GroupRef {
                lineage: frozen.lineage.clone(),
                group: "control".into(),
            },
            case: Some(crate::schema::events::CaseRef {
                task: "fix-git".into(),
                trial: "t2".into(),
                replacement: 0,
            }),
            role: "harbor_trial_result".into(),
            path: "jobs/control/fix-git__control-t2/result.json".into(),
            bytes: 4096,
            blake3: hex64("refused result"),
            rule: "CASE-8".into(),
            reason: "jobs/control/fix-git__control-t2: result.json names another trial or task than its directory, trial \"fix-git__control-t2\" of task \"fix-git\"; a result binds only to its own case".into(),
        }),
        Some("evidence-refused:example".into()),
    ));
    // A lineage that freezes how its central host is launched (v3).
    let mut v3 = (*frozen).clone();
    v3.lineage = format!("{}-central", frozen.lineage);
    v3.manifest.public.lineage = v3.lineage.clone();
    events.push((
        Event::ManifestFrozenV3(Box::new(crate::schema::events::ManifestFrozenV3::join(
            v3,
            Some(crate::schema::manifest::CentralLaunch {
                subnet_id: "subnet-0123456789abcdef0".into(),
                security_group_ids: vec!["sg-0123456789abcdef0".into()],
                ready_timeout_sec: 600,
            }),
            vec![crate::schema::manifest::ExcludedTask {
                task: "sqlite-db-truncate".into(),
                reason: "its provider answered 502 in preflight".into(),
            }],
            Some(crate::schema::manifest::Witnessing {
                quorum: 1,
                witnesses: vec![crate::schema::manifest::Witness {
                    name: "w1".into(),
                    key: example_witness().verifier().encode(),
                    url: "http://witness.example:8080/w1".into(),
                }],
            }),
        ))),
        None,
    ));
    events.extend(witness_events(&frozen.lineage, &checkpoint));
    events
}

/// The example witness key `witness.example/w1` (TEST-ONLY, derivable by
/// anyone).
fn example_witness() -> crate::log::tlog::SignerKey {
    let seed = blake3::derive_key("benchledger example witness key", b"witness.example/w1");
    crate::log::tlog::SignerKey::from_seed(
        "witness.example/w1",
        crate::log::tlog::KeyKind::CosignatureV1,
        seed,
    )
    .expect("the example witness name is a valid key name")
}

/// A cosignature of `checkpoint` by the example witness and a witness that
/// refused it (TRUST-6).
fn witness_events(
    lineage: &str,
    checkpoint: &crate::schema::events::CheckpointRecorded,
) -> Vec<(Event, Option<String>)> {
    use crate::schema::events::{CheckpointCosigned, CheckpointWitnessFailed};
    let root: crate::log::tlog::Hash = hex::decode(&checkpoint.root)
        .expect("hex")
        .try_into()
        .expect("32 bytes");
    let body = crate::log::tlog::Checkpoint::new(&checkpoint.origin, checkpoint.tree_size, root)
        .expect("the example checkpoint is valid")
        .body();
    let cosigned_at = T0_UTC_NS / 1_000_000_000 + 3_600;
    let line = crate::log::tlog::cosign(&body, &example_witness(), cosigned_at)
        .expect("the example witness cosigns")
        .line();
    vec![
        (
            Event::CheckpointCosigned(CheckpointCosigned {
                lineage: format!("{lineage}-central"),
                witness: "w1".into(),
                tree_size: checkpoint.tree_size,
                root: checkpoint.root.clone(),
                signature: line,
                cosigned_at,
            }),
            None,
        ),
        (
            Event::CheckpointWitnessFailed(CheckpointWitnessFailed {
                lineage: format!("{lineage}-central"),
                witness: "w1".into(),
                tree_size: checkpoint.tree_size,
                root: checkpoint.root.clone(),
                http_status: Some(409),
                message: "the witness has cosigned size 90 of this log, larger than this checkpoint's 45: it refuses a rolled-back tree".into(),
            }),
            None,
        ),
    ]
}

/// One example of each driver kind (RUN-2..4), after the checkpoint.
fn driver_events(lineage: &str) -> Vec<(Event, Option<String>)> {
    use crate::schema::events::*;
    let group = GroupRef {
        lineage: lineage.to_string(),
        group: "control".into(),
    };
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    let process = |pid: u32| ProcessRef {
        host: "controller-1".into(),
        boot_id: "0f6c2a54-4a4e-4f7e-9d0e-7f1b1c2d3e4f".into(),
        pid,
        start_ticks: 123_456,
    };
    vec![
        (
            Event::CaseLaunched(CaseLaunched {
                group: group.clone(),
                case: case.clone(),
                process: process(4242),
                deadline_utc_ns: 1_795_000_000_000_000_000,
            }),
            None,
        ),
        (
            Event::CommandKilled(CommandKilled {
                group: group.clone(),
                case: Some(case),
                role: CommandRole::Launch,
                argv: vec!["harbor".into(), "trial".into(), "start".into()],
                pgid: 4242,
                signal: 9,
                deadline_ms: 7_200_000,
                ran_ms: 7_200_013,
            }),
            None,
        ),
        (
            Event::RunLeased(RunLeased {
                group,
                holder: "5f0e3b1c9a8d7e6f5a4b3c2d1e0f9a8b".into(),
                process: process(4100),
                expires_utc_ns: 1_795_000_060_000_000_000,
                taken_from: None,
            }),
            None,
        ),
    ]
}

/// The checkpoint of the chain of `events`, signed by `key`.
fn checkpoint_of(
    events: &[(Event, Option<String>)],
    key: &crate::log::tlog::SignerKey,
) -> crate::schema::events::CheckpointRecorded {
    let mut tree = crate::log::tlog::MemoryNodes::new();
    let mut prev = ZERO_HASH;
    for (seq, (event, k)) in events.iter().enumerate() {
        let seq = seq as u64;
        let sealed = Sealed::new(
            prev,
            seq,
            record(seq, event, k.clone())
                .encode()
                .expect("vector records are within the limit"),
        );
        prev = sealed.hash;
        tree.append_leaf_hash(crate::log::tlog::record_leaf_hash(seq, &sealed.hash))
            .expect("the example tree is small");
    }
    let Event::LedgerCreated(genesis) = &events[0].0 else {
        unreachable!("the chain starts with genesis")
    };
    let origin = crate::log::tree::origin_of(&genesis.ledger_id);
    let body = crate::log::tlog::Checkpoint::new(&origin, tree.size(), tree.root())
        .expect("the example origin is valid");
    crate::schema::events::CheckpointRecorded {
        note: Some(crate::log::tlog::sign_note(&body.body(), &[key]).expect("example note signs")),
        signer: Some(key.verifier().encode()),
        origin,
        tree_size: tree.size(),
        root: hex::encode(tree.root()),
        sealed: None,
    }
}

/// One example event of every kind before signed sign-offs and checkpoints.
fn events_before_trust() -> Vec<(Event, Option<String>)> {
    use crate::schema::events::*;
    use crate::schema::money::{Dec, Rates};
    use std::collections::BTreeMap;
    let frozen = crate::method::freeze::freeze(
        EXAMPLE_MANIFEST,
        "manifest.toml",
        EXAMPLE_PRIVATE,
        "manifest.private.toml",
    )
    .expect("the example manifest freezes");
    let lineage = frozen.lineage.clone();
    let group = GroupRef {
        lineage: lineage.clone(),
        group: "control".into(),
    };
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    let buckets = TokenBuckets {
        uncached_input_tokens: 1972,
        cache_read_tokens: 32832,
        cache_write_tokens: 0,
        output_tokens: 485,
        reasoning_tokens: 1,
    };
    let dec = |s: &str| Dec::parse(s).expect("example decimal");
    let found = FoundResource {
        resource: "volume".into(),
        id: "vol-0abc1234def567890".into(),
        state: "available".into(),
        found_by: "run_tag".into(),
    };
    let details = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    vec![
        (
            Event::LedgerCreated(LedgerCreated {
                ledger_id: "000102030405060708090a0b0c0d0e0f".into(),
                format_version: FORMAT_VERSION,
                tool_version: "benchledger 0.1.0".into(),
            }),
            None,
        ),
        (
            Event::OperatorNoted(OperatorNoted {
                lineage: Some(lineage.clone()),
                text: "gates rechecked after lunch".into(),
            }),
            Some("note-1".into()),
        ),
        // A `manifest_frozen.v1` payload as ledgers recorded before v2 hold
        // it (the lineage's v1 fields; decoding still accepts it).
        (Event::ManifestFrozen(Box::new(frozen.v1_view())), None),
        (
            Event::ManifestSignedOff(ManifestSignedOff {
                lineage: lineage.clone(),
                manifest_blake3: frozen.manifest_blake3.clone(),
                role: SignOffRole::Reviewer,
                name: "bob".into(),
            }),
            None,
        ),
        (
            Event::IdentityChecked(IdentityChecked {
                lineage: lineage.clone(),
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
        ),
        (
            Event::QuotaChecked(QuotaChecked {
                lineage: lineage.clone(),
                region: "us-east-1".into(),
                quota_code: "L-1216C47A".into(),
                quota_vcpu: 64,
                used_vcpu: 4,
                available_vcpu: 60,
                required_vcpu: 10,
                status: Status::Pass,
                error: None,
            }),
            None,
        ),
        (
            Event::CheckRecorded(CheckRecorded {
                lineage: lineage.clone(),
                group: Some("control".into()),
                check: CheckKind::ProviderSentinel,
                target: "anthropic:claude-sonnet-4-5".into(),
                status: Status::Pass,
                details: details(&[
                    ("http_status", "200"),
                    ("latency_ms", "812"),
                    ("request_id", "sentinel-0001"),
                ]),
            }),
            None,
        ),
        (
            Event::GroupOpened(GroupOpened {
                group: group.clone(),
                binary_sha256: frozen
                    .manifest
                    .public
                    .software
                    .bitrouter_binary_sha256
                    .clone(),
                config_sha256: frozen.manifest.public.software.bitrouter_config_sha256["control"]
                    .clone(),
                ports: vec![18711],
                db_path: "/srv/bench/short13-kimi-2026-11/control/metering.db".into(),
                out_dir: "/srv/bench/short13-kimi-2026-11/control/out".into(),
            }),
            None,
        ),
        (
            Event::CaseStarted(CaseStarted {
                group: group.clone(),
                case: case.clone(),
                trial_name: "fix-git__control-t1".into(),
                trial_config_blake3: hex64("trial-config"),
                gate_seqs: vec![4, 5, 6],
                command: vec![
                    "harbor".into(),
                    "trial".into(),
                    "start".into(),
                    "-c".into(),
                    "fix-git__control-t1.json".into(),
                ],
            }),
            Some("case-start:short13-kimi-2026-11/control/fix-git/t1".into()),
        ),
        (
            Event::CaseProcessExited(CaseProcessExited {
                group: group.clone(),
                case: case.clone(),
                exit_code: Some(0),
                signal: None,
                duration_ms: 612_345,
                log_path: "/srv/bench/short13-kimi-2026-11/control/out/fix-git__control-t1.log"
                    .into(),
                log_blake3: hex64("log"),
            }),
            None,
        ),
        (
            Event::TrialResultRecorded(Box::new(TrialResultRecorded {
                group: group.clone(),
                case: case.clone(),
                trial_name: "fix-git__control-t1".into(),
                attempt_id: "4f3c2b1a-0d9e-4c8b-9a7f-6e5d4c3b2a19".into(),
                task_name: "fix-git".into(),
                task_id: HarborTaskId {
                    git_url: Some("https://github.com/laude-institute/terminal-bench-2.git".into()),
                    git_commit_id: Some("69671fbaac6d67a7ef0dfec016cc38a64ef7a77c".into()),
                    path: Some("fix-git".into()),
                    org: None,
                    name: None,
                    git_ref: None,
                },
                source: Some("terminal-bench".into()),
                task_checksum: hex64("task"),
                agent: "terminus-2@2.0.0".into(),
                model: Some("claude-sonnet-4-5".into()),
                rewards: Some(
                    [("reward".to_string(), "1.0".to_string())]
                        .into_iter()
                        .collect(),
                ),
                exception_type: None,
                exception_message_blake3: None,
                started_at: Some("2026-03-01T12:00:05Z".into()),
                finished_at: Some("2026-03-01T12:10:17Z".into()),
                n_input_tokens: Some(48213),
                n_cache_tokens: Some(30112),
                n_output_tokens: Some(3921),
                config_blake3: hex64("config"),
                result_path: "jobs/short13-kimi-2026-11-control/fix-git__control-t1/result.json"
                    .into(),
                result_blake3: hex64("result"),
            })),
            None,
        ),
        (
            Event::ArtifactRecorded(ArtifactRecorded {
                group: Some(group.clone()),
                role: "harbor_job_result".into(),
                path: "jobs/short13-kimi-2026-11-control/result.json".into(),
                bytes: 1234,
                blake3: hex64("job-result"),
            }),
            None,
        ),
        (
            Event::RequestTraced(RequestTraced {
                group: group.clone(),
                request_id: "real-agent-trace-6f1c2d3e-0001".into(),
                captured_at: "2026-03-01T12:00:07.123Z".into(),
                harness: Harness::Terminus2,
                protocol: Protocol::Messages,
                method: "POST".into(),
                path: "/v1/messages".into(),
                http_status: 200,
                status: TraceStatus::Completed,
                line_blake3: hex64("trace"),
            }),
            None,
        ),
        (
            Event::PolicyDecisionRecorded(PolicyDecisionRecorded {
                group: group.clone(),
                request_id: Some("real-agent-trace-6f1c2d3e-0001".into()),
                ingress_request_id_sha256: None,
                captured_at: Some("2026-03-01T12:00:07.1+00:00".into()),
                input_model: "@auto".into(),
                policy: Some("auto".into()),
                reason: "static_table".into(),
                baseline_tier: Some("strong".into()),
                selected_tier: Some("strong".into()),
                selected_model: Some("anthropic:claude-sonnet-4-5".into()),
                pinned: false,
                locked: false,
                trialed: false,
                line_blake3: hex64("decision"),
            }),
            None,
        ),
        (
            Event::UsageRecorded(Box::new(UsageRecorded {
                group: group.clone(),
                request_id: "real-agent-trace-6f1c2d3e-0001".into(),
                provider_id: "ambient".into(),
                model_id: "moonshotai/kimi-k2.7-code".into(),
                prompt_tokens: 34804,
                completion_tokens: 486,
                buckets,
                final_charge_micro_usd: Some(31175),
                charge_status: ChargeStatus::Computed,
                reconciliation_status: ReconciliationStatus::Computed,
                usage_origin: UsageOrigin::AuthoritativeReceipt,
                status: Some("completed".into()),
                error_code: None,
                rates: Some(Rates {
                    uncached_input: Some(dec("0.84")),
                    cache_read: Some(dec("0.84")),
                    cache_write: Some(dec("0.84")),
                    output: Some(dec("3.99")),
                }),
                pricing_source: Some(PricingSource::Override),
                pricing_version: Some(format!("sha256:{}", hex64("pricing"))),
                recomputed_charge_micro_usd: Some(31175),
                recompute_matches: Some(true),
                line_blake3: hex64("usage"),
            })),
            None,
        ),
        (
            Event::ReceiptRecorded(ReceiptRecorded {
                group: group.clone(),
                request_id: "real-agent-trace-6f1c2d3e-0001".into(),
                state: ReceiptState::Computed,
                provider_id: Some("ambient".into()),
                model_id: Some("moonshotai/kimi-k2.7-code".into()),
                buckets,
                final_charge_micro_usd: Some(31175),
                source_blake3: hex64("receipt"),
            }),
            None,
        ),
        (
            Event::OutcomeRecorded(OutcomeRecorded {
                group: group.clone(),
                request_id: Some("real-agent-trace-6f1c2d3e-0001".into()),
                session_key: "fix-git__control-t1".into(),
                task_id: "terminal-bench/fix-git".into(),
                reward: "1.0".into(),
                failed_reason: None,
                trial_name: Some("fix-git__control-t1".into()),
                line_blake3: hex64("outcome"),
            }),
            None,
        ),
        (
            Event::SecurityRefusalRecorded(SecurityRefusalRecorded {
                group: group.clone(),
                case: CaseRef {
                    task: "password-recovery".into(),
                    trial: "t1".into(),
                    replacement: 0,
                },
                class: RefusalClass::ProviderPolicyRefusal,
                http_status: 403,
                request_id: Some("real-agent-trace-9a8b7c6d-0003".into()),
                evidence_blake3: hex64("refusal"),
            }),
            None,
        ),
        (
            Event::CleanupAudited(CleanupAudited {
                group: group.clone(),
                region: "us-east-1".into(),
                identity: "arn:aws:iam::********9012:role/…".into(),
                filters: vec![
                    "tag:benchledger:run=short13-kimi-2026-11".into(),
                    "tag:benchledger:role=sandbox".into(),
                ],
                tracked_instance_ids: vec!["i-0123456789abcdef0".into()],
                found: vec![found.clone()],
                excluded_central_instance_id: None,
                status: Status::Fail,
                error: None,
            }),
            None,
        ),
        (
            Event::MonitorSampled(MonitorSampled {
                group: group.clone(),
                sandbox_count: 1,
                instance_ids: vec!["i-0123456789abcdef0".into()],
            }),
            None,
        ),
        (
            Event::ResidueTerminated(ResidueTerminated {
                group: group.clone(),
                resource: found,
                audit_seq: 18,
                action: "DeleteVolume".into(),
                answer: "ok".into(),
            }),
            None,
        ),
        (
            Event::GroupClosed(GroupClosed {
                group: group.clone(),
            }),
            None,
        ),
        (
            Event::GroupSealed(GroupSealed {
                group: group.clone(),
                status: crate::schema::verdict::VerdictStatus::Accepted.into(),
                rows: vec![GateRow {
                    gate: crate::schema::verdict::VerdictRow::Manifest.into(),
                    holds: true,
                    evidence: "seq 7: config hash equals the frozen one".into(),
                }],
                skipped_security_policy: vec![],
                projection_version: crate::method::projections::PROJECTION_VERSION,
            }),
            None,
        ),
        (
            Event::FeedbackApplied(FeedbackApplied {
                group: GroupRef {
                    lineage: lineage.clone(),
                    group: "r1".into(),
                },
                policy_snapshot_before: hex64("before"),
                policy_snapshot_after: hex64("after"),
            }),
            None,
        ),
        (
            Event::ControlRegistered(ControlRegistered {
                group: group.clone(),
                control_key: frozen.control_key.clone(),
                artifact_blake3: hex64("control-artifact"),
            }),
            None,
        ),
        (
            Event::ControlReused(ControlReused {
                lineage: lineage.clone(),
                control: group.clone(),
                control_key: frozen.control_key.clone(),
                artifact_blake3: hex64("control-artifact"),
            }),
            None,
        ),
        (
            Event::PriceSnapshotRecorded(PriceSnapshotRecorded {
                lineage: lineage.clone(),
                reason: "provider corrected its cache-read price".into(),
                prices: frozen.manifest.public.prices.clone(),
            }),
            None,
        ),
        (
            Event::LineageStopped(LineageStopped {
                lineage,
                rule: crate::schema::rule::Rule::Verdict3.into(),
                reason: "r1 rejected_join: duplicate request id".into(),
                evidence_seq: Some(24),
            }),
            None,
        ),
        (
            Event::CaseInvalidated(CaseInvalidated {
                group: group.clone(),
                case: case.clone(),
                reason: InvalidReason::ControllerCrash,
                evidence_path:
                    "/srv/bench/short13-kimi-2026-11/control/jobs/fix-git__control-t1.listing"
                        .into(),
                evidence_blake3: hex64("listing"),
            }),
            Some("case-invalidated:short13-kimi-2026-11/control/fix-git/t1".into()),
        ),
        (frozen.clone().into_event(), None),
        (
            Event::TrialResultRecordedV2(Box::new(trial_result_v2(&group, &case))),
            None,
        ),
        (
            Event::HarborJobRecorded(HarborJobRecorded {
                group: group.clone(),
                job_name: "short13-kimi-2026-11-control".into(),
                path: "jobs/short13-kimi-2026-11-control".into(),
                trial_names: vec!["fix-git__control-t1".into()],
                config_blake3: Some(hex64("job-config")),
                config_max_retries: Some(0),
                lock_blake3: Some(hex64("job-lock")),
                lock_max_retries: Some(0),
                harbor_version: Some("0.25.0".into()),
                result_blake3: Some(hex64("job-result")),
                n_retries: Some(0),
            }),
            None,
        ),
        (
            Event::CredentialFound(CredentialFound {
                group,
                file: "jobs/short13-kimi-2026-11-control/fix-git__control-t1/result.json".into(),
                file_blake3: hex64("result"),
                field: "exception_info.exception_message".into(),
                shape: "openai_project_key".into(),
                redacted: "openai_project_key (56 chars)".into(),
            }),
            None,
        ),
    ]
}

/// The `trial_result_recorded.v2` example: the v1 example's fields with a
/// content digest and one reward file (BIND-1, BIND-2).
fn trial_result_v2(
    group: &crate::schema::events::GroupRef,
    case: &crate::schema::events::CaseRef,
) -> crate::schema::events::TrialResultRecordedV2 {
    use crate::schema::events::*;
    TrialResultRecordedV2 {
        group: group.clone(),
        case: case.clone(),
        trial_name: "fix-git__control-t1".into(),
        attempt_id: "4f3c2b1a-0d9e-4c8b-9a7f-6e5d4c3b2a19".into(),
        task_name: "fix-git".into(),
        task_id: HarborTaskId {
            git_url: Some("https://github.com/laude-institute/terminal-bench-2.git".into()),
            git_commit_id: Some("69671fbaac6d67a7ef0dfec016cc38a64ef7a77c".into()),
            path: Some("fix-git".into()),
            org: None,
            name: None,
            git_ref: None,
        },
        source: Some("terminal-bench".into()),
        task_checksum: hex64("task"),
        agent: "terminus-2@2.0.0".into(),
        model: Some("claude-sonnet-4-5".into()),
        rewards: Some(
            [("reward".to_string(), "1.0".to_string())]
                .into_iter()
                .collect(),
        ),
        exception_type: None,
        exception_message_blake3: None,
        started_at: Some("2026-03-01T12:00:05Z".into()),
        finished_at: Some("2026-03-01T12:10:17Z".into()),
        n_input_tokens: Some(48213),
        n_cache_tokens: Some(30112),
        n_output_tokens: Some(3921),
        config_blake3: hex64("config"),
        config_content_blake3: hex64("config-content"),
        config_differences: vec![],
        reward_files: vec![RewardFile {
            path: "jobs/short13-kimi-2026-11-control/fix-git__control-t1/verifier/reward.txt"
                .into(),
            blake3: hex64("reward"),
            rewards: Some(
                [("reward".to_string(), "1.0".to_string())]
                    .into_iter()
                    .collect(),
            ),
            problem: None,
        }],
        result_path: "jobs/short13-kimi-2026-11-control/fix-git__control-t1/result.json".into(),
        result_blake3: hex64("result"),
    }
}

fn record(seq: u64, event: &Event, key: Option<String>) -> Record {
    Record {
        format: FORMAT_VERSION,
        seq,
        recorded_at_utc_ns: T0_UTC_NS + seq * 1_000_000_000,
        actor: if seq == 0 {
            "operator:init".into()
        } else {
            "operator:alice".into()
        },
        kind: event.kind().into(),
        idempotency_key: key,
        payload: crate::log::codec::encode_payload(event).expect("example events encode"),
    }
}

/// The valid vector chain, verified.
pub fn chain() -> Vec<Verified> {
    let mut walker = Walker::from_genesis();
    let mut prev = ZERO_HASH;
    let mut out = Vec::new();
    for (seq, (event, key)) in example_events().into_iter().enumerate() {
        let seq = seq as u64;
        let sealed = Sealed::new(
            prev,
            seq,
            record(seq, &event, key)
                .encode()
                .expect("vector records are within the limit"),
        );
        prev = sealed.hash;
        out.push(
            walker
                .step(&seq.to_be_bytes(), &sealed.value())
                .expect("vector chain verifies"),
        );
    }
    out
}

/// The valid chain as export lines.
pub fn chain_jsonl() -> String {
    chain()
        .iter()
        .map(|v| crate::log::export::line(v) + "\n")
        .collect()
}

/// One must-fail case: a stored (key, value) that a walker expecting
/// `walk_seq` after `walk_prev_hash` must reject with `expect` at `expect_seq`.
#[derive(Debug, Serialize)]
pub struct MustFail {
    /// What is wrong, in a few words.
    pub name: &'static str,
    /// The seq the walker expects next.
    pub walk_seq: u64,
    /// The hash the walker holds as predecessor (hex).
    pub walk_prev_hash: String,
    /// The stored key (seq, big-endian, hex).
    pub key_hex: String,
    /// The stored value: prev || hash || record bytes (hex).
    pub value_hex: String,
    /// The damage kind a verifier must report.
    pub expect: DamageKind,
    /// The seq it must report.
    pub expect_seq: u64,
}

fn case(
    name: &'static str,
    walk_seq: u64,
    walk_prev: Hash,
    key: u64,
    value: Vec<u8>,
    expect: DamageKind,
    expect_seq: u64,
) -> MustFail {
    MustFail {
        name,
        walk_seq,
        walk_prev_hash: hex::encode(walk_prev),
        key_hex: hex::encode(key.to_be_bytes()),
        value_hex: hex::encode(value),
        expect,
        expect_seq,
    }
}

/// The must-fail cases, built from the valid chain.
pub fn must_fail() -> Vec<MustFail> {
    let c = chain();
    let g = &c[0];
    let n = &c[1];
    let note_record = n.decoded.record.clone();
    let resealed = |r: &Record| {
        Sealed::new(
            g.hash,
            1,
            r.encode().expect("vector records are within the limit"),
        )
        .value()
    };
    let plain = Sealed {
        seq: 1,
        prev: g.hash,
        hash: n.hash,
        bytes: note_record
            .encode()
            .expect("vector records are within the limit"),
    }
    .value();
    let mut out = Vec::new();

    let mut v = plain.clone();
    let last = v.len() - 1;
    v[last] ^= 0x01;
    out.push(case(
        "flipped byte in the record bytes",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut v = plain.clone();
    v[40] ^= 0x80;
    out.push(case(
        "flipped byte in the stored hash",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut v = plain.clone();
    v[3] ^= 0x10;
    out.push(case(
        "flipped byte in the stored prev hash",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut bytes = note_record
        .encode()
        .expect("vector records are within the limit");
    bytes.push(0);
    out.push(case(
        "a trailing byte after the record (hash recomputed)",
        1,
        g.hash,
        1,
        Sealed::new(g.hash, 1, bytes).value(),
        DamageKind::NonCanonical,
        1,
    ));

    let mut r = note_record.clone();
    r.payload.push(0);
    out.push(case(
        "a trailing byte after the payload (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::NonCanonical,
        1,
    ));

    let mut r = note_record.clone();
    r.format = FORMAT_VERSION + 1;
    out.push(case(
        "an unknown format version (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Undecodable,
        1,
    ));

    let mut r = note_record.clone();
    r.kind = "unknown_kind.v1".into();
    out.push(case(
        "an unknown kind (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Undecodable,
        1,
    ));

    let mut bytes = note_record
        .encode()
        .expect("vector records are within the limit");
    // The actor string starts after format (2), seq (8), time (8) and its
    // length (8): make its first byte invalid utf-8.
    bytes[26] = 0xff;
    out.push(case(
        "invalid utf-8 in the actor (hash recomputed)",
        1,
        g.hash,
        1,
        Sealed::new(g.hash, 1, bytes).value(),
        DamageKind::Undecodable,
        1,
    ));

    out.push(case(
        "record 1 stored under seq 2",
        2,
        n.hash,
        2,
        plain.clone(),
        DamageKind::Reordered,
        2,
    ));

    let mut r = note_record.clone();
    r.seq = 5;
    out.push(case(
        "a record whose own seq is not its key (hash over the key)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Reordered,
        1,
    ));

    out.push(case(
        "a value shorter than its link prefix",
        1,
        g.hash,
        1,
        plain[..63].to_vec(),
        DamageKind::TruncatedRecord,
        1,
    ));

    out.push(case(
        "seq 1 missing (next stored is 2)",
        1,
        g.hash,
        2,
        plain.clone(),
        DamageKind::Gap,
        1,
    ));

    let mut r = note_record.clone();
    r.seq = 0;
    out.push(case(
        "seq 0 is not a genesis record",
        0,
        ZERO_HASH,
        0,
        Sealed::new(
            ZERO_HASH,
            0,
            r.encode().expect("vector records are within the limit"),
        )
        .value(),
        DamageKind::BadGenesis,
        0,
    ));

    let mut r = g.decoded.record.clone();
    r.seq = 1;
    out.push(case(
        "a genesis record after seq 0",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::BadGenesis,
        1,
    ));

    let mut r = note_record.clone();
    r.actor = "operator:mallory".into();
    let rewritten = Sealed::new(
        g.hash,
        1,
        r.encode().expect("vector records are within the limit"),
    );
    // The walker holds the rewritten record's hash; the successor committed
    // to the original one.
    let successor = Sealed::new(n.hash, 2, {
        let mut s = note_record.clone();
        s.seq = 2;
        s.idempotency_key = None;
        s.encode().expect("vector records are within the limit")
    });
    out.push(case(
        "record 1 rewritten with a recomputed hash; record 2 still links to the original",
        2,
        rewritten.hash,
        2,
        successor.value(),
        DamageKind::Rewritten,
        1,
    ));
    out
}

/// The must-fail cases as JSON lines.
pub fn must_fail_jsonl() -> String {
    must_fail()
        .iter()
        .map(|c| serde_json::to_string(c).expect("cases serialize") + "\n")
        .collect()
}

/// Runs one must-fail case through a walker; returns the damage found.
pub fn run_case(c: &MustFail) -> Option<crate::log::chain::Damage> {
    let mut prev = [0u8; 32];
    hex::decode_to_slice(&c.walk_prev_hash, &mut prev).ok()?;
    let mut w = if c.walk_seq == 0 {
        Walker::from_genesis()
    } else {
        Walker::after(c.walk_seq - 1, prev)
    };
    let key = hex::decode(&c.key_hex).ok()?;
    let value = hex::decode(&c.value_hex).ok()?;
    w.step(&key, &value).err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_an_example() {
        let kinds: Vec<&str> = example_events().iter().map(|(e, _)| e.kind()).collect();
        assert_eq!(kinds, Event::KINDS);
    }

    #[test]
    fn every_must_fail_case_fails_as_declared() {
        for c in must_fail() {
            let d = run_case(&c).unwrap_or_else(|| panic!("{}: walker accepted it", c.name));
            assert_eq!((d.kind, d.seq), (c.expect, c.expect_seq), "{}: {d}", c.name);
        }
    }
}
