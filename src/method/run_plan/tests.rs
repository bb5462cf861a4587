//! Given a ledger / when `run` asks for its next step / then the step.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::schema::events::{
    CaseLaunched, CheckKind, CheckRecorded, GroupRef, MonitorSampled, ProcessRef, QuotaChecked,
    Status,
};
use crate::schema::manifest::Tier;
use crate::testkit::examples::{EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};
use crate::testkit::scenario::{ReceiptMode, Req, World};

const L: &str = "short13-kimi-2026-11";

fn canary() -> GroupRef {
    GroupRef {
        lineage: L.into(),
        group: "canary-1".into(),
    }
}

fn trial(name: &str) -> CaseRef {
    CaseRef {
        trial: name.into(),
        ..c1()
    }
}

/// The example manifest with canaries c1..c3 at concurrency 2.
fn three_at_two() -> String {
    EXAMPLE_MANIFEST
        .replace(
            "canaries = [\n",
            "canaries = [\n  { group = \"canary-1\", task = \"hello-world\", trial = \"c2\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n  { group = \"canary-1\", task = \"hello-world\", trial = \"c3\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n",
        )
        .replace("concurrency = 1", "concurrency = 2")
}

fn c1() -> CaseRef {
    CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    }
}

/// What the CLI would gather: nothing on disk, nothing running.
struct Given {
    world: World,
    trial_dirs: BTreeSet<String>,
    results: BTreeSet<String>,
    running: BTreeSet<CaseRef>,
    history: RunHistory,
    stop_launching: bool,
    terminate: bool,
    evidence_gathered: bool,
    audit_failed_here: bool,
    last_poll: Option<u64>,
    receipts_collected: bool,
    aws_recorded: bool,
    launches: BTreeMap<CaseRef, LaunchSeen>,
}

impl Given {
    fn frozen(manifest: &str) -> Given {
        let mut world = World::new();
        world.freeze(manifest, EXAMPLE_PRIVATE).unwrap();
        Given {
            world,
            trial_dirs: BTreeSet::new(),
            results: BTreeSet::new(),
            running: BTreeSet::new(),
            history: RunHistory::new(GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            }),
            stop_launching: false,
            terminate: false,
            evidence_gathered: false,
            audit_failed_here: false,
            last_poll: None,
            receipts_collected: false,
            aws_recorded: false,
            launches: BTreeMap::new(),
        }
    }

    /// The example lineage with canary-1 opened.
    fn opened() -> Given {
        let mut g = Given::frozen(EXAMPLE_MANIFEST);
        g.world.open("canary-1").unwrap();
        g
    }

    fn plan(&self) -> RunPlan {
        let facts = Facts {
            now_utc_ns: self.world.now_ns,
            trial_dirs: &self.trial_dirs,
            results: &self.results,
            running_here: &self.running,
            history: &self.history,
            stop_launching: self.stop_launching,
            terminate: self.terminate,
            evidence_gathered: self.evidence_gathered,
            audit_failed_here: self.audit_failed_here,
            last_poll_utc_ns: self.last_poll,
            receipts_collected: self.receipts_collected,
            aws_recorded: self.aws_recorded,
            launches: &self.launches,
        };
        next_step(&self.world.state, None, "canary-1", &facts).unwrap()
    }

    fn next(&self) -> Step {
        self.plan().next
    }

    /// Folds the world's records into the history, as the CLI does.
    fn fold_history(&mut self) {
        let mut h = RunHistory::new(self.history.group.clone().unwrap());
        for (i, (_, e)) in self.world.records.iter().enumerate() {
            h.apply(i as u64 + 1, e);
        }
        self.history = h;
    }

    /// canary-1 opened, gated, its one case started, its result in and a
    /// monitor sample after it (RUN-5).
    fn case_done() -> Given {
        let mut g = Given::opened();
        g.world.start("canary-1", &c1(), None).unwrap();
        g.world.result("canary-1", &c1(), Some("1"), None);
        g.sampled(0);
        g
    }

    /// A cleanup monitor sample of canary-1 counting `n` sandboxes.
    fn sampled(&mut self, n: u64) {
        self.world.push(vec![Event::MonitorSampled(MonitorSampled {
            group: canary(),
            sandbox_count: n,
            instance_ids: (0..n).map(|i| format!("i-{i}")).collect(),
        })]);
    }

    /// The launch of `case` recorded with pid `pid` (RUN-3).
    fn launched(&mut self, case: &CaseRef, pid: u32) -> u64 {
        let deadline = self.world.now_ns + 7_200_000_000_000;
        self.world.push(vec![Event::CaseLaunched(CaseLaunched {
            group: canary(),
            case: case.clone(),
            process: ProcessRef {
                host: "controller".into(),
                boot_id: "boot".into(),
                pid,
                start_ticks: 99,
            },
            deadline_utc_ns: deadline,
        })]);
        deadline
    }

    /// canary-1 done and closed.
    fn closed() -> Given {
        let mut g = Given::case_done();
        g.world
            .decide(|s, _| crate::method::decide::group_close(s, Some(L), "canary-1"))
            .unwrap();
        g.fold_history();
        g
    }
}

#[test]
fn an_unopened_group_asks_for_its_daemon_start() {
    // rule GATE-4
    let g = Given::frozen(EXAMPLE_MANIFEST);
    assert_eq!(g.next(), Step::OpenGroup);
}

#[test]
fn a_scored_group_before_its_canary_is_refused() {
    // rule LINEAGE-2
    let g = Given::frozen(EXAMPLE_MANIFEST);
    let facts_dirs = BTreeSet::new();
    let history = RunHistory::default();
    let f = Facts {
        now_utc_ns: g.world.now_ns,
        trial_dirs: &facts_dirs,
        results: &facts_dirs,
        running_here: &BTreeSet::new(),
        history: &history,
        stop_launching: false,
        terminate: false,
        evidence_gathered: false,
        audit_failed_here: false,
        last_poll_utc_ns: None,
        receipts_collected: false,
        aws_recorded: false,
        launches: &BTreeMap::new(),
    };
    let e = next_step(&g.world.state, None, "control", &f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Refused {
                rule: Rule::Lineage2,
                ..
            }
        ),
        "{e}"
    );
    let e = next_step(&g.world.state, None, "r9", &f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Refused {
                rule: Rule::Lineage1,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_v1_lineage_has_no_plan_to_run() {
    let mut w = World::new();
    let frozen = crate::testkit::examples::frozen();
    w.push(vec![Event::ManifestFrozen(Box::new(frozen.v1_view()))]);
    let l = w.state.lineage(None).unwrap();
    let e = plan_of(l).unwrap_err();
    assert!(e.to_string().contains("manifest_version = 2"), "{e}");
}

#[test]
fn every_gate_of_the_batch_is_taken_identity_first() {
    // rule GATE-1, GATE-2, GATE-3
    let mut g = Given::opened();
    g.world.advance_sec(4_000); // the gates `open` recorded are stale now
    let Step::TakeGates { gates } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(
        gates,
        vec![
            GateId::Identity,
            GateId::Quota,
            GateId::Residue,
            GateId::DaemonHealth,
            GateId::Sentinel(Tier::Strong),
            GateId::Sentinel(Tier::Balanced),
            GateId::Sentinel(Tier::Economy),
        ]
    );
    assert!(g
        .plan()
        .gates
        .iter()
        .all(|x| matches!(x.state, GateState::Stale { .. })));
}

#[test]
fn fresh_gates_launch_up_to_the_concurrency() {
    // rule CASE-7, GATE-6
    let g = Given::opened();
    assert!(g
        .plan()
        .gates
        .iter()
        .all(|x| matches!(x.state, GateState::Fresh { .. })));
    assert_eq!(g.next(), Step::Launch { cases: vec![c1()] });
    let manifest = EXAMPLE_MANIFEST
        .replace(
            "canaries = [\n",
            "canaries = [\n  { group = \"canary-1\", task = \"hello-world\", trial = \"c2\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n  { group = \"canary-1\", task = \"hello-world\", trial = \"c3\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n",
        )
        .replace("concurrency = 1", "concurrency = 2");
    let mut g = Given::frozen(&manifest);
    g.world.open("canary-1").unwrap();
    let Step::Launch { cases } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(cases.len(), 2, "{cases:?}");
}

#[test]
fn every_batch_takes_its_gates_again() {
    // rule GATE-2, GATE-3: checked immediately before every batch
    let manifest = EXAMPLE_MANIFEST.replace(
        "canaries = [\n",
        "canaries = [\n  { group = \"canary-1\", task = \"hello-world\", trial = \"c2\", content_sha256 = \"f4fceaf0b943cec699335755c38caa916a9223b7058fa70f6a0dfaebf2d0a393\" },\n",
    );
    let mut g = Given::frozen(&manifest);
    g.world.open("canary-1").unwrap();
    let first = g.world.state.lineage(None).unwrap().clone();
    let c2 = CaseRef {
        trial: "c2".into(),
        ..c1()
    };
    g.world.start("canary-1", &c2, None).unwrap();
    g.world.result("canary-1", &c2, Some("1"), None);
    g.sampled(0);
    let lines = g.plan().gates;
    assert!(
        lines
            .iter()
            .all(|x| matches!(x.state, GateState::BeforeBatch { .. })),
        "{lines:?}"
    );
    assert!(matches!(g.next(), Step::TakeGates { gates } if gates.len() == 7));
    assert_eq!(last_start_seq(&first), None);
    // A build relying on recorded AWS observations takes only the gates it
    // can take itself again; the AWS ones count while passing and fresh.
    g.aws_recorded = true;
    let lines = g.plan().gates;
    assert!(
        lines
            .iter()
            .filter(|x| x.gate.calls_aws())
            .all(|x| matches!(x.state, GateState::Fresh { .. })),
        "{lines:?}"
    );
    assert!(
        matches!(g.next(), Step::TakeGates { gates } if gates.len() == 4 && gates.iter().all(|x| !x.calls_aws()))
    );
}

#[test]
fn a_failed_gate_before_a_batch_is_a_hard_stop() {
    // rule VERDICT-3, GATE-2, GATE-6
    let mut g = Given::opened();
    g.world.push(vec![Event::QuotaChecked(QuotaChecked {
        lineage: L.into(),
        region: "us-east-1".into(),
        quota_code: "L-1216C47A".into(),
        quota_vcpu: 4,
        used_vcpu: 4,
        available_vcpu: 0,
        required_vcpu: 10,
        status: Status::Fail,
        error: None,
    })]);
    let failed_seq = g.world.records.len() as u64;
    let Step::Stop {
        rule,
        evidence_seq,
        reason,
    } = g.next()
    else {
        panic!("{:?}", g.next())
    };
    assert_eq!((rule, evidence_seq), (Rule::Gate2, Some(failed_seq)));
    assert!(reason.contains("quota"), "{reason}");
    let l = g.world.state.lineage(None).unwrap();
    let stop = hard_stop(l, rule, &reason, evidence_seq);
    g.world.push(stop);
    // Stopped: no launch, the group winds down; a second stop adds nothing.
    assert_eq!(g.next(), Step::Close);
    let l = g.world.state.lineage(None).unwrap();
    assert!(hard_stop(l, Rule::Gate3, "again", None).is_empty());
}

#[test]
fn a_failed_sentinel_names_its_exact_target() {
    // rule PLANE-2, GATE-3
    let mut g = Given::opened();
    g.world.push(vec![Event::CheckRecorded(CheckRecorded {
        lineage: L.into(),
        group: None,
        check: CheckKind::ProviderSentinel,
        target: "ambient:qwen/qwen3-coder-30b".into(),
        status: Status::Fail,
        details: Default::default(),
    })]);
    let Step::Stop { rule, reason, .. } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(rule, Rule::Gate3);
    assert!(reason.contains("ambient:qwen/qwen3-coder-30b"), "{reason}");
}

#[test]
fn the_spend_limit_stops_the_lineage_before_a_batch() {
    // rule VERDICT-3
    let manifest = EXAMPLE_MANIFEST.replace(
        "spend_stop_micro_usd = 50000000",
        "spend_stop_micro_usd = 1",
    );
    let mut g = Given::frozen(&manifest);
    g.world.open("canary-1").unwrap();
    let reqs = g.world.case_requests("canary-1", &c1());
    g.world.request("canary-1", &reqs[0]);
    let plan = g.plan();
    assert!(plan.spend_micro_usd > 1);
    assert!(
        matches!(
            plan.next,
            Step::Stop {
                rule: Rule::Verdict3,
                ..
            }
        ),
        "{:?}",
        plan.next
    );
}

#[test]
fn a_started_case_is_waited_for_and_never_relaunched() {
    // rule CASE-2, CASE-4
    let mut g = Given::opened();
    g.world.start("canary-1", &c1(), None).unwrap();
    g.running.insert(c1());
    assert_eq!(
        g.next(),
        Step::Wait {
            cases: vec![c1()],
            until_utc_ns: None
        }
    );
    // After a kill: no process here, the launch timeout bounds the wait.
    g.running.clear();
    let Step::Wait { until_utc_ns, .. } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert!(until_utc_ns.unwrap() > g.world.now_ns);
    assert_eq!(g.plan().cases.running, 1);
}

#[test]
fn a_result_on_disk_is_ingested_and_an_orphan_past_its_timeout_is_invalidated() {
    // rule CASE-3, CASE-8
    let mut g = Given::opened();
    g.world.start("canary-1", &c1(), None).unwrap();
    g.results.insert("hello-world__canary-1-c1".into());
    assert_eq!(g.next(), Step::IngestResults { cases: vec![c1()] });
    g.results.clear();
    g.world.advance_sec(7_201);
    let Step::Invalidate { orphans } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(orphans[0].reason, InvalidReason::ControllerCrash);
    assert_eq!(orphans[0].trial_name, "hello-world__canary-1-c1");
}

#[test]
fn an_identity_with_a_harbor_directory_never_launches() {
    // rule CASE-4
    let mut g = Given::opened();
    g.trial_dirs.insert("hello-world__canary-1-c1".into());
    assert_eq!(g.next(), Step::Close);
}

#[test]
fn ctrl_c_pauses_once_nothing_runs() {
    let mut g = Given::opened();
    g.stop_launching = true;
    assert_eq!(g.next(), Step::Paused);
    g.world.start("canary-1", &c1(), None).unwrap();
    g.running.insert(c1());
    assert!(matches!(g.next(), Step::Wait { .. }));
}

#[test]
fn the_last_case_closes_the_group_then_evidence_audit_and_seal() {
    // rule CASE-9, CLEAN-1, VERDICT-4
    let g = Given::case_done();
    assert_eq!(g.next(), Step::Close);
    let mut g = Given::closed();
    assert_eq!(g.next(), Step::GatherEvidence);
    g.evidence_gathered = true;
    assert_eq!(g.next(), Step::Audit);
    g.world.push(vec![audit(None, vec![])]);
    assert_eq!(g.next(), Step::Seal);
}

#[test]
fn a_failed_audit_is_retried_once_then_blocks() {
    // rule CLEAN-3
    let mut g = Given::closed();
    g.evidence_gathered = true;
    g.world
        .push(vec![audit(Some("STS: connection refused"), vec![])]);
    assert_eq!(g.next(), Step::Audit);
    g.audit_failed_here = true;
    assert!(matches!(g.next(), Step::Blocked { reason } if reason.contains("could not run")));
}

fn audit(error: Option<&str>, found: Vec<crate::schema::events::FoundResource>) -> Event {
    Event::CleanupAudited(crate::schema::events::CleanupAudited {
        group: GroupRef {
            lineage: L.into(),
            group: "canary-1".into(),
        },
        region: "us-east-1".into(),
        identity: "arn:…".into(),
        filters: vec![],
        tracked_instance_ids: vec![],
        status: if found.is_empty() && error.is_none() {
            Status::Pass
        } else {
            Status::Fail
        },
        found,
        excluded_central_instance_id: None,
        error: error.map(Into::into),
    })
}

#[test]
fn residue_is_terminated_only_with_terminate_and_once_per_audit() {
    // rule CLEAN-1, CLEAN-2
    let mut g = Given::closed();
    g.evidence_gathered = true;
    let stray = crate::schema::events::FoundResource {
        resource: "volume".into(),
        id: "vol-1".into(),
        state: "available".into(),
        found_by: "run_tag".into(),
    };
    g.world.push(vec![audit(None, vec![stray.clone()])]);
    let audit_seq = g.world.records.len() as u64;
    assert_eq!(
        g.next(),
        Step::Seal,
        "without --terminate the residue is sealed as found"
    );
    g.terminate = true;
    assert_eq!(g.next(), Step::Terminate { audit_seq });
    g.world.push(vec![Event::ResidueTerminated(
        crate::schema::events::ResidueTerminated {
            group: g.history.group.clone().unwrap(),
            resource: stray,
            audit_seq,
            action: "DeleteVolume".into(),
            answer: "ok: deleted".into(),
        },
    )]);
    g.fold_history();
    assert_eq!(g.next(), Step::Seal);
}

#[test]
fn pending_receipts_are_polled_within_the_budget_and_the_grace() {
    // rule SETTLE-8
    let mut g = Given::case_done();
    let id = "canary-1-req-1".to_string();
    g.world.request(
        "canary-1",
        &Req {
            id: id.clone(),
            tier: Tier::Strong,
            trace: true,
            usage: true,
            decision: true,
            receipt: ReceiptMode::Pending,
            tokens: None,
            reason: None,
        },
    );
    g.world
        .decide(|s, _| crate::method::decide::group_close(s, Some(L), "canary-1"))
        .unwrap();
    g.fold_history();
    g.evidence_gathered = true;
    assert_eq!(
        g.next(),
        Step::PollReceipts {
            request_ids: vec![id.clone()]
        }
    );
    // Polled just now: wait for the frozen poll interval.
    g.last_poll = Some(g.world.now_ns);
    assert!(
        matches!(g.next(), Step::WaitUntil { until_utc_ns, .. } if until_utc_ns == g.world.now_ns + 30_000_000_000)
    );
    // Every attempt of the budget spent: wait for the grace to end.
    g.last_poll = None;
    g.history.polls.insert(poll_key(&id), 12);
    // First (a process that has not looked yet, e.g. after a kill between
    // an attempt and the ingest of its receipt): collect once, no attempt.
    assert_eq!(
        g.next(),
        Step::CollectReceipts {
            request_ids: vec![id.clone()]
        }
    );
    g.receipts_collected = true;
    assert!(matches!(g.next(), Step::WaitUntil { why, .. } if why.contains("budget")));
    // The grace is over: audit and seal (pending rejects the group).
    g.world.advance_sec(901);
    assert_eq!(g.next(), Step::Audit);
}

#[test]
fn a_sealed_group_is_done() {
    let mut g = Given::closed();
    g.world.push(vec![
        Event::MonitorSampled(crate::schema::events::MonitorSampled {
            group: g.history.group.clone().unwrap(),
            sandbox_count: 1,
            instance_ids: vec!["i-1".into()],
        }),
        audit(None, vec![]),
    ]);
    // Whatever the seal attested (this canary has no settled request, so
    // BIND-4 rejects it), a sealed group is done with that status.
    let sealed = g.world.seal("canary-1").unwrap();
    let Some(Event::GroupSealed(verdict)) = sealed.first() else {
        panic!("a seal starts with its verdict: {sealed:?}")
    };
    let attested = verdict.status.clone();
    assert!(matches!(g.next(), Step::Done { status } if status == attested));
}

#[test]
fn the_history_counts_evidence_after_the_close_polls_and_terminations() {
    let group = GroupRef {
        lineage: L.into(),
        group: "canary-1".into(),
    };
    let artifact = |role: &str, path: &str| {
        Event::ArtifactRecorded(crate::schema::events::ArtifactRecorded {
            group: Some(group.clone()),
            role: role.into(),
            path: path.into(),
            bytes: 1,
            blake3: "ab".repeat(32),
        })
    };
    let mut h = RunHistory::new(group.clone());
    h.apply(1, &artifact("bitrouter_traces", "/t.jsonl"));
    h.apply(
        2,
        &Event::GroupClosed(crate::schema::events::GroupClosed {
            group: group.clone(),
        }),
    );
    h.apply(3, &artifact("bitrouter_usage", "/u.jsonl"));
    let poll = poll_file_name("req-1", 1);
    assert_eq!(poll, format!("{}.attempt-001.json", poll_key("req-1")));
    h.apply(
        4,
        &artifact(RECONCILE_ROLE, &format!("/out/reconcile/{poll}")),
    );
    h.apply(
        5,
        &artifact(
            RECONCILE_ROLE,
            &format!("/out/reconcile/{}", poll_file_name("req-1", 2)),
        ),
    );
    assert_eq!(h.closed_seq, Some(2));
    assert_eq!(h.evidence_after_close, [EvidenceKind::Usage].into());
    assert_eq!(h.polls_of("req-1"), 2);
    assert_eq!(h.polls_of("req-2"), 0);
    // Another group's records change nothing.
    let mut other = RunHistory::new(GroupRef {
        lineage: L.into(),
        group: "control".into(),
    });
    other.apply(
        4,
        &artifact(RECONCILE_ROLE, &format!("/out/reconcile/{poll}")),
    );
    assert_eq!(other, RunHistory::new(other.group.clone().unwrap()));
}

#[test]
fn a_freed_slot_is_refilled_while_the_other_cases_run() {
    let mut g = Given::frozen(&three_at_two());
    g.world.open("canary-1").unwrap();
    let Step::Launch { cases } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(cases.len(), 2, "{cases:?}");
    let (a, b) = (cases[0].clone(), cases[1].clone());
    let third = [c1(), trial("c2"), trial("c3")]
        .into_iter()
        .find(|c| *c != a && *c != b)
        .unwrap();
    g.world.start("canary-1", &a, None).unwrap();
    g.world.start("canary-1", &b, None).unwrap();
    g.running.extend([a.clone(), b.clone()]);
    assert!(matches!(g.next(), Step::Wait { .. }), "both slots are busy");
    // `a` ends; `b` still runs.
    g.running.remove(&a);
    g.world.result("canary-1", &a, Some("1"), None);
    assert_eq!(g.next(), Step::Sample, "RUN-5: a sample after the end");
    g.sampled(1);
    // RUN-1: the freed slot is refilled without waiting for `b`: the
    // wave's gates first (observed after the last start), then the launch.
    assert!(
        matches!(g.next(), Step::TakeGates { .. }),
        "RUN-1: {:?}",
        g.next()
    );
    g.world.gates("canary-1");
    assert_eq!(
        g.next(),
        Step::Launch {
            cases: vec![third.clone()]
        },
        "RUN-1: one slot freed, one launch, while the other case runs"
    );
    // CASE-7: with both slots busy again nothing more launches.
    g.world.start("canary-1", &third, None).unwrap();
    g.running.insert(third);
    g.world.gates("canary-1");
    assert!(matches!(g.next(), Step::Wait { .. }), "CASE-7");
}

#[test]
fn a_wave_launches_no_more_sandboxes_than_the_quota_covers() {
    let mut g = Given::frozen(&three_at_two());
    g.world.open("canary-1").unwrap();
    // headroom 4 + central 4 (provision) + one m5.large sandbox of 2 vCPU.
    g.world.push(vec![Event::QuotaChecked(QuotaChecked {
        lineage: L.into(),
        region: "us-east-1".into(),
        quota_code: "L-1216C47A".into(),
        quota_vcpu: 10,
        used_vcpu: 0,
        available_vcpu: 10,
        required_vcpu: 10,
        status: Status::Pass,
        error: None,
    })]);
    let Step::Launch { cases } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(
        cases.len(),
        1,
        "RUN-1: the wave takes what the quota observation covers: {cases:?}"
    );
}

#[test]
fn a_recorded_launch_that_is_gone_is_a_controller_crash_at_once() {
    let mut g = Given::opened();
    g.world.start("canary-1", &c1(), None).unwrap();
    let deadline = g.launched(&c1(), 4242);
    // No process here (a rerun after a kill), the launch proven gone: no
    // wait for the 7,200 s timeout.
    g.launches.insert(c1(), LaunchSeen::Gone);
    let Step::Invalidate { orphans } = g.next() else {
        panic!("{:?}", g.next())
    };
    assert_eq!(orphans[0].reason, InvalidReason::ControllerCrash, "RUN-3");
    // Alive: adopted and waited for until its recorded deadline, never
    // relaunched.
    g.launches.insert(c1(), LaunchSeen::Alive);
    assert_eq!(
        g.next(),
        Step::Wait {
            cases: vec![c1()],
            until_utc_ns: Some(deadline)
        },
        "RUN-3: a live launch is adopted"
    );
    // Past its deadline the adopted launch's group is killed (RUN-4).
    g.world.advance_sec(7_201);
    assert_eq!(
        g.next(),
        Step::KillLaunch {
            case: c1(),
            pgid: 4242
        },
        "RUN-4"
    );
    // On another machine nothing can be told before the deadline.
    g.launches.insert(c1(), LaunchSeen::Elsewhere);
    assert!(matches!(g.next(), Step::Invalidate { .. }));
}

#[test]
fn a_monitor_sample_follows_every_case_end_however_fast() {
    let mut g = Given::opened();
    g.world.start("canary-1", &c1(), None).unwrap();
    g.world.result("canary-1", &c1(), Some("1"), None);
    // RUN-5: the case ended before any sample (its process was reaped
    // before a poll): the sample is still taken, before the close.
    assert_eq!(g.next(), Step::Sample, "RUN-5");
    g.sampled(0);
    assert_eq!(
        g.next(),
        Step::Close,
        "RUN-5: one sample after the end is enough"
    );
    // A build relying on recorded observations cannot sample.
    let mut r = Given::opened();
    r.world.start("canary-1", &c1(), None).unwrap();
    r.world.result("canary-1", &c1(), Some("1"), None);
    r.aws_recorded = true;
    assert_eq!(r.next(), Step::Close);
}

#[test]
fn a_case_whose_result_is_in_keeps_its_slot_while_its_process_runs() {
    let mut g = Given::frozen(&three_at_two());
    g.world.open("canary-1").unwrap();
    let Step::Launch { cases } = g.next() else {
        panic!("{:?}", g.next())
    };
    for c in &cases {
        g.world.start("canary-1", c, None).unwrap();
        g.running.insert(c.clone());
    }
    // The first case's result is ingested while its launch still runs.
    g.world.result("canary-1", &cases[0], Some("1"), None);
    g.sampled(2);
    g.world.gates("canary-1");
    assert!(
        matches!(g.next(), Step::Wait { cases: waited, .. } if waited.len() == 2),
        "CASE-7: no launch while both launched processes run: {:?}",
        g.next()
    );
    // Once its process ended, the slot is refilled (RUN-1).
    g.running.remove(&cases[0]);
    assert!(
        matches!(g.next(), Step::Launch { cases } if cases.len() == 1),
        "RUN-1: {:?}",
        g.next()
    );
}

#[test]
fn the_lease_covers_a_steps_command_deadlines() {
    let g = Given::frozen(EXAMPLE_MANIFEST);
    let l = &g.world.state.lineages[L];
    let grace = l.frozen.manifest.public.limits.settlement_grace_sec;
    // The example's grace (900 s) outlasts the lease: a hung export would
    // let a second driver take over a live one (found by the simulator,
    // seed 1406).
    assert!(grace > crate::limits::RUN_LEASE_SEC, "RUN-2: {grace}");
    assert_eq!(lease_cover_sec(l, &Step::GatherEvidence), grace, "RUN-2");
    let polls = Step::PollReceipts {
        request_ids: vec!["a".into(), "b".into(), "c".into()],
    };
    assert_eq!(lease_cover_sec(l, &polls), 3 * grace, "RUN-2, RUN-4");
    assert_eq!(lease_cover_sec(l, &Step::Sample), 0, "RUN-2");
    assert_eq!(lease_cover_sec(l, &Step::Close), 0, "RUN-2");
}
