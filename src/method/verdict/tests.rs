//! Given events (built by `scenario::World` through the real decisions) /
//! when a verdict, settlement, join or decision / then rows, states or a
//! refusal. No store.

use super::*;
use crate::error::Error;
use crate::method::projections::{At, ReceiptObs, RequestState, TraceObs, UsageObs};
use crate::schema::events::{
    CaseRef, ChargeStatus, Event, FoundResource, GroupRef, ReceiptState, ReconciliationStatus,
    RefusalClass, TokenBuckets, TraceStatus, UsageOrigin,
};
use crate::schema::manifest::ManifestFile;
use crate::testkit::scenario::{self, ReceiptMode, Req, World, EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};
use sha2::Digest;

const L: &str = "short13-kimi-2026-11";

fn rule<T: std::fmt::Debug>(r: crate::error::Result<T>) -> &'static str {
    match r {
        Err(Error::Refused { rule, .. }) => rule.as_str(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn spec(toml_text: &str) -> scenario::Scenario {
    toml::from_str(toml_text).unwrap()
}

/// A world where `groups` ran clean (the example manifest, optionally
/// edited).
fn ran(groups: &[&str], edits: &[(&str, &str)]) -> World {
    let g: Vec<String> = groups.iter().map(|g| format!("{g:?}")).collect();
    let e: Vec<String> = edits
        .iter()
        .map(|(a, b)| format!("[{a:?}, {b:?}]"))
        .collect();
    let text = format!(
        "description = \"t\"\n[[lineages]]\ngroups = [{}]\nedits = [{}]\n",
        g.join(", "),
        e.join(", ")
    );
    scenario::run(&spec(&text)).unwrap().0
}

fn lineage(w: &World) -> &crate::method::projections::LineageState {
    &w.state.lineages[L]
}

fn verdict_of(w: &World, group: &str) -> Verdict {
    group_verdict(&w.state, lineage(w), group)
}

fn row(v: &Verdict, gate: VerdictRow) -> &GateRow {
    v.rows.iter().find(|r| r.gate == gate.as_str()).unwrap()
}

fn manifest() -> ManifestFile {
    crate::testkit::examples::frozen().manifest.public
}

fn usage(provider: &str, model: &str, b: TokenBuckets, charge: Option<u64>) -> UsageObs {
    UsageObs {
        provider_id: provider.into(),
        model_id: model.into(),
        buckets: b,
        final_charge_micro_usd: charge,
        charge_status: ChargeStatus::Computed,
        reconciliation_status: ReconciliationStatus::NotApplicable,
        usage_origin: UsageOrigin::ProviderReported,
        status: Some("completed".into()),
    }
}

fn trace(date: &str) -> TraceObs {
    TraceObs {
        http_status: 200,
        status: TraceStatus::Completed,
        captured_at: format!("{date}T10:00:00Z").into(),
        protocol: crate::schema::events::Protocol::Messages,
    }
}

fn buckets(u: u64, cr: u64, cw: u64, o: u64) -> TokenBuckets {
    TokenBuckets {
        uncached_input_tokens: u,
        cache_read_tokens: cr,
        cache_write_tokens: cw,
        output_tokens: o,
        reasoning_tokens: 0,
    }
}

fn strong_request(b: TokenBuckets, charge: Option<u64>) -> RequestState {
    RequestState {
        traces: smallvec::smallvec![(1, trace("2026-11-20"))],
        usage: smallvec::smallvec![(2, usage("anthropic", "claude-sonnet-4-5", b, charge))],
        ..RequestState::default()
    }
}

// --- Settlement ----------------------------------------------------------

#[test]
fn the_charge_is_recomputed_in_decimal_from_the_frozen_snapshot() {
    // rule SETTLE-2: 1,200,000 uncached, 300,000 cache-read and 40,000 output
    // tokens at $3, $0.30 and $15 per million are exactly $4.29.
    let r = strong_request(buckets(1_200_000, 300_000, 0, 40_000), Some(4_290_000));
    let s = settle_request(&manifest(), "r", &r);
    assert_eq!(s.recomputed_micro_usd, Some(4_290_000));
    assert_eq!(
        (s.state, s.charge_micro_usd),
        (SettlementState::Computed, Some(4_290_000))
    );
    assert_eq!(s.tier, Some(Tier::Strong));
}

#[test]
fn missing_usage_is_never_zero() {
    // rule SETTLE-1
    let r = RequestState {
        traces: smallvec::smallvec![(1, trace("2026-11-20"))],
        ..RequestState::default()
    };
    let s = settle_request(&manifest(), "r", &r);
    assert_eq!(
        (s.state, s.series, s.charge_micro_usd),
        (SettlementState::Unknown, Series::Incomplete, None)
    );
    assert!(s.reason.unwrap().contains("SETTLE-1"));
}

#[test]
fn a_missing_cache_price_is_unknown_unless_the_fallback_is_declared() {
    // rule SETTLE-3: the economy route has no cache price.
    let r = RequestState {
        traces: smallvec::smallvec![(1, trace("2026-11-20"))],
        usage: smallvec::smallvec![(
            2,
            usage(
                "ambient",
                "qwen/qwen3-coder-30b",
                buckets(1000, 500, 0, 100),
                Some(380),
            ),
        )],
        ..RequestState::default()
    };
    let s = settle_request(&manifest(), "r", &r);
    assert_eq!(s.state, SettlementState::Unknown);
    assert!(
        s.reason
            .as_deref()
            .unwrap()
            .contains("missing_cache_read_rate"),
        "{s:?}"
    );
    let mut m = manifest();
    m.prices
        .iter_mut()
        .for_each(|p| p.cache_price_fallback = true);
    // (1000 + 500) x 0.2 + 100 x 0.8 = 380: the base input price, same route.
    let s = settle_request(&m, "r", &r);
    assert_eq!(
        (s.state, s.charge_micro_usd),
        (SettlementState::Computed, Some(380))
    );
}

#[test]
fn a_receipt_on_an_unpriced_route_is_not_settlement_evidence() {
    // rule SETTLE-3, SETTLE-5: the economy route has no cache price and no
    // fallback; 1,000 cache-read tokens cannot be cross-checked, so a
    // computed receipt settles nothing, as the same request without it.
    let mut r = RequestState {
        traces: smallvec::smallvec![(1, trace("2026-11-20"))],
        usage: smallvec::smallvec![(
            2,
            usage(
                "ambient",
                "qwen/qwen3-coder-30b",
                buckets(100, 1000, 0, 100),
                Some(380),
            ),
        )],
        ..RequestState::default()
    };
    let without = settle_request(&manifest(), "r", &r);
    assert_eq!(
        without.state,
        SettlementState::Unknown,
        "SETTLE-3: {without:?}"
    );
    r.receipts.push((
        3,
        ReceiptObs {
            state: ReceiptState::Computed,
            final_charge_micro_usd: Some(380),
        },
    ));
    let with = settle_request(&manifest(), "r", &r);
    assert_eq!(
        (with.state, with.charge_micro_usd),
        (SettlementState::Unknown, None),
        "SETTLE-5: a receipt the frozen prices cannot check is not settlement evidence: {with:?}"
    );
    let reason = with.reason.unwrap();
    assert!(
        reason.starts_with("authoritative_pricing_not_found") && reason.contains("SETTLE-3"),
        "SETTLE-5: {reason}"
    );
}

#[test]
fn the_price_record_must_cover_the_request_date() {
    // rule SETTLE-8: the example prices start 2026-11-01.
    let mut r = strong_request(buckets(10, 0, 0, 0), Some(30));
    r.traces[0].1 = trace("2026-10-31");
    let s = settle_request(&manifest(), "r", &r);
    assert_eq!(s.state, SettlementState::Unknown);
    assert!(s.reason.unwrap().contains("SETTLE-8"));
}

#[test]
fn receipts_settle_computed_not_charged_pending_or_unknown() {
    // rule SETTLE-4
    let m = manifest();
    let with = |state, c| {
        let mut r = strong_request(buckets(10, 0, 0, 0), Some(30));
        r.receipts.push((
            3,
            ReceiptObs {
                state,
                final_charge_micro_usd: c,
            },
        ));
        settle_request(&m, "r", &r)
    };
    assert_eq!(
        with(ReceiptState::Computed, Some(30)).state,
        SettlementState::Computed,
        "SETTLE-4: a computed receipt"
    );
    assert_eq!(
        with(ReceiptState::Computed, Some(30)).series,
        Series::Actual
    );
    let nc = with(ReceiptState::NotCharged, None);
    assert_eq!(
        (nc.state, nc.charge_micro_usd),
        (SettlementState::NotCharged, Some(0))
    );
    assert_eq!(
        with(ReceiptState::Pending, None).state,
        SettlementState::Pending
    );
    assert_eq!(
        with(ReceiptState::Unknown, None).state,
        SettlementState::Unknown
    );
    assert!(SettlementState::Computed.accepted() && SettlementState::NotCharged.accepted());
    assert!(!SettlementState::Pending.accepted() && !SettlementState::Unknown.accepted());
}

#[test]
fn a_receipt_that_differs_from_the_frozen_prices_is_a_mismatch_never_an_epsilon() {
    // rule SETTLE-5: 10 x $3/M = 30 micro-USD; a receipt of 31 is unknown.
    let mut r = strong_request(buckets(10, 0, 0, 0), Some(30));
    r.receipts.push((
        3,
        ReceiptObs {
            state: ReceiptState::Computed,
            final_charge_micro_usd: Some(31),
        },
    ));
    let s = settle_request(&manifest(), "r", &r);
    assert_eq!(
        (s.state, s.charge_micro_usd),
        (SettlementState::Unknown, None)
    );
    assert!(s
        .reason
        .unwrap()
        .starts_with("authoritative_charge_mismatch"));
    // The latest receipt is authoritative: a later correct one settles it.
    r.receipts.push((
        4,
        ReceiptObs {
            state: ReceiptState::Computed,
            final_charge_micro_usd: Some(30),
        },
    ));
    assert_eq!(
        settle_request(&manifest(), "r", &r).state,
        SettlementState::Computed
    );
}

#[test]
fn cost_series_are_labelled_and_never_summed() {
    // rule SETTLE-6
    let mut m = manifest();
    let mut g = GroupState::default();
    g.requests
        .insert("a".into(), strong_request(buckets(10, 0, 0, 0), Some(30)));
    let mut receipted = strong_request(buckets(20, 0, 0, 0), Some(60));
    receipted.receipts.push((
        3,
        ReceiptObs {
            state: ReceiptState::Computed,
            final_charge_micro_usd: Some(60),
        },
    ));
    g.requests.insert("b".into(), receipted);
    g.requests.insert(
        "c".into(),
        RequestState {
            traces: smallvec::smallvec![(5, trace("2026-11-20"))],
            ..Default::default()
        },
    );
    let s = settlement(&m, &g);
    assert_eq!(
        s.series_micro_usd.get(&Series::Notional),
        Some(&30),
        "SETTLE-6: its own series"
    );
    assert_eq!(
        s.series_micro_usd.get(&Series::Actual),
        Some(&60),
        "SETTLE-6: its own series"
    );
    assert_eq!(
        s.series_micro_usd.get(&Series::Incomplete),
        None,
        "incomplete has no amount"
    );
    assert_eq!(s.states.get(&SettlementState::Unknown), Some(&1));
    // A subscription credential is a counterfactual, its own series.
    m.routes[0].credential_class = "subscription".into();
    m.prices[0].credential_class = "subscription".into();
    let s = settlement(&m, &g);
    assert_eq!(
        s.series_micro_usd.get(&Series::SubscriptionCounterfactual),
        Some(&30)
    );
}

#[test]
fn a_postprocessing_price_snapshot_changes_no_frozen_settlement() {
    // rule SETTLE-7, FREEZE-3: repricing is new events over archived usage;
    // the verdict keeps settling with the frozen snapshot.
    let mut w = ran(&["canary-1"], &[]);
    let before = verdict_of(&w, "canary-1");
    let mut prices = manifest().prices;
    prices
        .iter_mut()
        .for_each(|p| p.output = crate::schema::money::Dec::from(99u64));
    w.push(vec![Event::PriceSnapshotRecorded(
        crate::schema::events::PriceSnapshotRecorded {
            lineage: L.into(),
            reason: "repricing".into(),
            prices,
        },
    )]);
    assert_eq!(
        verdict_of(&w, "canary-1").settlement,
        before.settlement,
        "SETTLE-7: repricing leaves the frozen settlement"
    );
}

// --- Joins ---------------------------------------------------------------

fn policy_group(reqs: &[(&str, bool, bool, bool)]) -> GroupState {
    let mut g = GroupState::default();
    for (i, (id, t, u, d)) in reqs.iter().enumerate() {
        let r = g.requests.entry((*id).into()).or_default();
        if *t {
            r.traces.push((i as u64 * 10, trace("2026-11-20")));
        }
        if *u {
            r.usage.push((
                i as u64 * 10 + 1,
                usage(
                    "ambient",
                    "qwen/qwen3-coder-30b",
                    buckets(10, 0, 0, 1),
                    None,
                ),
            ));
        }
        if *d {
            g.decisions.push((
                i as u64 * 10 + 2,
                crate::method::projections::DecisionObs {
                    request_id: Some((*id).into()),
                    commitment: None,
                    reason: "static_table".into(),
                    selected_tier: Some("economy".into()),
                    selected_model: Some("bitrouter:qwen/qwen3-coder-30b".into()),
                },
            ));
        }
    }
    g
}

#[test]
fn policy_groups_need_t_equal_u_equal_d_and_extra_rows_reject() {
    // rule JOIN-1
    let m = manifest();
    let ok = joins(
        &m,
        "r1",
        &policy_group(&[("a", true, true, true), ("b", true, true, true)]),
    );
    assert!(
        ok.missing_usage.is_empty() && ok.missing_decisions.is_empty() && ok.duplicates.is_empty()
    );
    let j = joins(
        &m,
        "r1",
        &policy_group(&[("a", true, true, false), ("b", false, true, true)]),
    );
    assert_eq!(j.missing_decisions, vec!["a".to_string()]);
    assert_eq!(j.extra_usage, vec!["b".to_string()]);
    assert_eq!(j.extra_decisions, vec!["b".to_string()]);
    // Control's frozen schema emits no decisions: D is not required.
    assert!(!joins(&m, "control", &policy_group(&[("a", true, true, false)])).decisions_required);
}

#[test]
fn the_join_key_is_the_persisted_request_id_alone() {
    // rule JOIN-2: same time, same session, different ids: never joined.
    let j = joins(
        &manifest(),
        "r1",
        &policy_group(&[("a", true, false, true), ("a2", false, true, false)]),
    );
    assert_eq!(
        (j.missing_usage, j.extra_usage),
        (vec!["a".to_string()], vec!["a2".to_string()]),
        "JOIN-2: joined by the persisted request id alone"
    );
}

#[test]
fn decisions_join_by_ingress_commitment_when_every_decision_carries_one() {
    // rule JOIN-2, JOIN-4 (bitrouter-formats section 3)
    let mut g = policy_group(&[
        ("trace-1", true, true, false),
        ("trace-2", true, true, false),
    ]);
    for (i, id) in ["trace-1", "trace-2"].into_iter().enumerate() {
        g.decisions.push((
            100 + i as u64,
            crate::method::projections::DecisionObs {
                request_id: Some(format!("opaque-{i}").into()),
                commitment: Some(crate::method::projections::Commitment::parse(
                    &ingress_commitment(id),
                )),
                reason: "static_table".into(),
                selected_tier: Some("economy".into()),
                selected_model: Some("qwen/qwen3-coder-30b".into()),
            },
        ));
    }
    let j = joins(&manifest(), "r1", &g);
    assert_eq!(j.decision_key, DecisionKey::Commitment);
    assert!(
        j.missing_decisions.is_empty() && j.extra_decisions.is_empty(),
        "{j:?}"
    );
    // Not every decision carries the commitment: request ids are compared,
    // and opaque invocation ids join nothing.
    g.decisions[0].1.commitment = None;
    let j = joins(&manifest(), "r1", &g);
    assert_eq!(j.decision_key, DecisionKey::RequestId);
    assert_eq!(
        j.extra_decisions,
        vec!["opaque-0".to_string(), "opaque-1".to_string()]
    );
    // One decision with only the commitment and one with only an id: the
    // forms are mixed, which is weak attribution, a hard stop.
    g.decisions[1].1.request_id = None;
    let j = joins(&manifest(), "r1", &g);
    assert_eq!(j.decision_key, DecisionKey::Mixed);
    assert_eq!(j.weak_attribution.len(), 2);
}

#[test]
fn an_extra_decision_by_commitment_is_named_by_its_request_id() {
    // rule JOIN-1: the real daemon's decisions carry only the commitment (and
    // an opaque invocation id); an extra one is named by the request id of
    // the usage row it commits to, never only as `sha256:...`.
    let mut g = policy_group(&[
        ("trace-1", true, true, false),
        ("no-trace", false, true, false),
    ]);
    for (i, id) in ["trace-1", "no-trace", "nowhere"].into_iter().enumerate() {
        g.decisions.push((
            100 + i as u64,
            crate::method::projections::DecisionObs {
                request_id: Some(format!("opaque-{i}").into()),
                commitment: Some(crate::method::projections::Commitment::parse(
                    &ingress_commitment(id),
                )),
                reason: "static_table".into(),
                selected_tier: Some("economy".into()),
                selected_model: Some("qwen/qwen3-coder-30b".into()),
            },
        ));
    }
    let j = joins(&manifest(), "r1", &g);
    assert_eq!(j.decision_key, DecisionKey::Commitment);
    assert_eq!(
        j.extra_decisions,
        vec![
            "no-trace".to_string(),
            format!("sha256:{}", ingress_commitment("nowhere"))
        ],
        "JOIN-1: the id where a record names it, the commitment where none does"
    );
}

#[test]
fn a_commitment_keeps_hex_as_bytes_and_anything_else_as_text() {
    // rule JOIN-2: the projection keeps 64 hex digits as 32 bytes (any case,
    // with or without the tag) and other text as recorded, lowercased.
    use crate::method::projections::Commitment;
    let h = ingress_commitment("req-001");
    let tagged = format!("sha256:{}", h.to_uppercase());
    assert!(matches!(Commitment::parse(&tagged), Commitment::Sha256(_)));
    assert_eq!(Commitment::parse(&tagged).hex(), h);
    assert_eq!(Commitment::parse(&h), Commitment::parse(&tagged));
    for odd in ["sha256:XYZ", "", &h[..63], &format!("{h}0")] {
        let c = Commitment::parse(odd);
        assert!(matches!(c, Commitment::Other(_)), "{odd:?}");
        assert_eq!(
            c.hex(),
            odd.strip_prefix("sha256:")
                .unwrap_or(odd)
                .to_ascii_lowercase()
        );
    }
}

#[test]
fn the_commitment_is_bitrouters_domain_separated_sha256() {
    // rule JOIN-2: sha256("bitrouter.ingress-request-id.v1\0" + id).
    let mut h = sha2::Sha256::new();
    h.update(b"bitrouter.ingress-request-id.v1\0req-001");
    assert_eq!(ingress_commitment("req-001"), hex::encode(h.finalize()));
    assert_eq!(ingress_commitment("req-001").len(), 64);
}

#[test]
fn task_scoped_rewards_join_by_case_never_onto_requests() {
    // rule JOIN-3
    let mut w = ran(&["canary-1"], &[]);
    w.state = crate::method::projections::State::scanning();
    let records = std::mem::take(&mut w.records);
    // Replay without the seal, then add task outcomes before sealing.
    let cut = records
        .iter()
        .position(|(_, e)| matches!(e, Event::GroupSealed(_)))
        .unwrap();
    w.push(records[..cut].iter().map(|(_, e)| e.clone()).collect());
    let gref = GroupRef {
        lineage: L.into(),
        group: "canary-1".into(),
    };
    let outcome = |trial: &str| {
        Event::OutcomeRecorded(crate::schema::events::OutcomeRecorded {
            group: gref.clone(),
            request_id: None,
            session_key: "s".into(),
            task_id: "terminal-bench/hello-world".into(),
            reward: "1".into(),
            failed_reason: None,
            trial_name: Some(trial.into()),
            line_blake3: "0".repeat(64),
        })
    };
    w.push(vec![outcome("hello-world__canary-1-c1")]);
    let v = verdict_of(&w, "canary-1");
    assert!(
        row(&v, VerdictRow::RewardJoin).holds,
        "{:?}",
        row(&v, VerdictRow::RewardJoin)
    );
    assert!(
        !v.joins.outcomes_supplied,
        "a task outcome is not a request outcome"
    );
    w.push(vec![outcome("hello-world__abc123")]);
    let v = verdict_of(&w, "canary-1");
    assert!(!row(&v, VerdictRow::RewardJoin).holds);
    assert_eq!(v.status, VerdictStatus::RejectedJoin);
}

#[test]
fn a_decision_without_request_id_or_commitment_is_weak_attribution() {
    // rule JOIN-4
    let mut g = policy_group(&[("a", true, true, true)]);
    g.decisions[0].1.request_id = None;
    let j = joins(&manifest(), "r1", &g);
    assert_eq!(j.weak_attribution, vec![2], "JOIN-4: weak attribution");
}

// --- Cleanup -------------------------------------------------------------

fn with_cleanup(found: Vec<FoundResource>, central: Option<&str>, peak: u64) -> Verdict {
    let text = match central {
        Some(id) => EXAMPLE_MANIFEST.replace(
            "role_tag_value = \"bitrouter-central\"",
            &format!("role_tag_value = \"bitrouter-central\"\ninstance_id = \"{id}\""),
        ),
        None => EXAMPLE_MANIFEST.to_string(),
    };
    let mut w = World::new();
    w.freeze(&text, EXAMPLE_PRIVATE).unwrap();
    w.open("canary-1").unwrap();
    let case = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    w.start("canary-1", &case, None).unwrap();
    for r in w.case_requests("canary-1", &case) {
        w.request("canary-1", &r);
    }
    w.result("canary-1", &case, Some("1"), None);
    w.finish("canary-1", peak, found).unwrap();
    verdict_of(&w, "canary-1")
}

#[test]
fn a_trial_config_file_edited_after_launch_invalidates_the_case() {
    // rule BIND-11: the trial's own config.json is compared like the
    // embedded TrialConfig; another model and a direct api_base in it make
    // the case terminal_invalid and fail the manifest row.
    let mut w = World::new();
    w.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
    w.open("canary-1").unwrap();
    let case = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    w.start("canary-1", &case, None).unwrap();
    let shape = crate::testkit::scenario::ResultShape {
        own_config: true,
        ..Default::default()
    };
    w.result_with("canary-1", &case, Some("1"), None, &shape);
    let status = crate::method::binding::case_status(lineage(&w), "canary-1", &case);
    assert_eq!(
        status,
        crate::method::projections::CaseStatus::TerminalInvalid,
        "BIND-11: the case does not count"
    );
    let v = verdict_of(&w, "canary-1");
    let manifest = row(&v, VerdictRow::Manifest);
    assert!(
        !manifest.holds
            && manifest.evidence.contains("config.json")
            && manifest.evidence.contains("agent.model_name"),
        "BIND-11: the manifest row names the file and the field: {manifest:?}"
    );
    // The same result with an untouched config.json binds.
    let mut w2 = World::new();
    w2.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
    w2.open("canary-1").unwrap();
    w2.start("canary-1", &case, None).unwrap();
    w2.result("canary-1", &case, Some("1"), None);
    assert_eq!(
        crate::method::binding::case_status(lineage(&w2), "canary-1", &case),
        crate::method::projections::CaseStatus::TerminalValid
    );
}

#[test]
fn a_second_different_result_for_a_bound_trial_invalidates_the_case() {
    // rule BIND-11, BIND-2: kept, and the case no longer counts.
    let mut w = World::new();
    w.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
    w.open("canary-1").unwrap();
    let case = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    w.start("canary-1", &case, None).unwrap();
    w.result("canary-1", &case, Some("1"), None);
    let status = |w: &World| crate::method::binding::judge(lineage(w), "canary-1", &case);
    assert_eq!(
        status(&w).status,
        crate::method::projections::CaseStatus::TerminalValid,
        "BIND-2: a bound result with its reward"
    );
    let (_, first) = lineage(&w).groups["canary-1"].cases[&case]
        .result
        .clone()
        .unwrap();
    let mut second = first.clone();
    second.rewards = Some([("reward".to_string(), "0".to_string())].into());
    second.result_blake3 = "ab".repeat(32);
    w.push(vec![Event::TrialResultRecordedV2(Box::new(second))]);
    let judged = status(&w);
    assert_eq!(
        judged.status,
        crate::method::projections::CaseStatus::TerminalInvalid,
        "BIND-11: a second, different result leaves no result to trust"
    );
    assert!(
        judged
            .why_invalid
            .iter()
            .any(|w| w.contains("second, different result") && w.contains("BIND-11")),
        "BIND-11: {judged:?}"
    );
}

/// A canary case with a bound result, and the facts of that result with
/// `edit` applied (BIND-11).
fn with_facts(edit: impl Fn(&mut crate::schema::events::TrialFactsRecorded)) -> World {
    let mut w = World::new();
    w.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
    w.open("canary-1").unwrap();
    let case = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    w.start("canary-1", &case, None).unwrap();
    w.result("canary-1", &case, Some("1"), None);
    let (_, r) = lineage(&w).groups["canary-1"].cases[&case]
        .result
        .clone()
        .unwrap();
    let mut facts = crate::schema::events::TrialFactsRecorded {
        group: r.group.clone(),
        case: case.clone(),
        trial_name: r.trial_name.clone(),
        result_blake3: r.result_blake3.clone(),
        times: [
            ("started_at", r.started_at.clone().unwrap()),
            ("finished_at", r.finished_at.clone().unwrap()),
            ("agent_execution.started_at", r.started_at.clone().unwrap()),
            ("exception_info.occurred_at", r.finished_at.clone().unwrap()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        n_attempts: Some(1),
        trials_for_case: 1,
    };
    edit(&mut facts);
    w.push(vec![Event::TrialFactsRecorded(facts)]);
    w
}

#[test]
fn every_timestamp_of_a_result_lies_in_the_launch_window() {
    // rule BIND-11: a phase or exception time 90 days early is not this
    // launch's, though the top-level times are.
    let c1 = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    let judged = |w: &World| crate::method::binding::judge(lineage(w), "canary-1", &c1);
    let ok = with_facts(|_| {});
    assert_eq!(
        judged(&ok).status,
        crate::method::projections::CaseStatus::TerminalValid
    );
    for path in ["agent_execution.started_at", "exception_info.occurred_at"] {
        let w = with_facts(|f| {
            let t = crate::schema::time::parse_rfc3339_ns(&f.times[path]).unwrap();
            let early = t - 90 * 86_400 * 1_000_000_000;
            f.times.insert(
                path.into(),
                crate::schema::time::rfc3339_utc_ns(early as u64),
            );
        });
        let j = judged(&w);
        assert_eq!(
            j.status,
            crate::method::projections::CaseStatus::TerminalInvalid,
            "BIND-11: {path} 90 days early invalidates the case"
        );
        let v = verdict_of(&w, "canary-1");
        let row = row(&v, VerdictRow::TrialResult);
        assert!(
            !row.holds && row.evidence.contains(path),
            "BIND-11: the trial result row names {path}: {row:?}"
        );
    }
}

#[test]
fn a_job_of_more_than_one_attempt_never_binds() {
    // rule BIND-11: n_attempts 2, or two trials for one case, fails the
    // manifest row.
    let c1 = CaseRef {
        task: "hello-world".into(),
        trial: "c1".into(),
        replacement: 0,
    };
    for w in [
        with_facts(|f| f.n_attempts = Some(2)),
        with_facts(|f| f.trials_for_case = 2),
    ] {
        let j = crate::method::binding::judge(lineage(&w), "canary-1", &c1);
        assert_eq!(
            j.status,
            crate::method::projections::CaseStatus::TerminalInvalid,
            "BIND-11: {j:?}"
        );
        let v = verdict_of(&w, "canary-1");
        let manifest = row(&v, VerdictRow::Manifest);
        assert!(
            !manifest.holds && manifest.evidence.contains("one attempt per case"),
            "BIND-11: the manifest row names the attempts: {manifest:?}"
        );
    }
}

fn found(resource: &str, id: &str) -> FoundResource {
    FoundResource {
        resource: resource.into(),
        id: id.into(),
        state: "running".into(),
        found_by: "tag".into(),
    }
}

#[test]
fn cleanup_needs_zero_residue_and_a_peak_within_concurrency() {
    // rule CLEAN-1, CLEAN-2
    assert!(row(&with_cleanup(vec![], None, 1), VerdictRow::Cleanup).holds);
    let v = with_cleanup(vec![found("network-interface", "eni-0abc")], None, 1);
    assert_eq!(v.status, VerdictStatus::RejectedCleanup);
    assert!(row(&v, VerdictRow::Cleanup).evidence.contains("eni-0abc"));
    assert!(!row(&with_cleanup(vec![], None, 2), VerdictRow::Cleanup).holds);
}

#[test]
fn the_central_host_is_excluded_only_by_the_manifests_instance_id() {
    // rule CLEAN-2
    let central = "i-0c0ffee0c0ffee000";
    assert!(
        row(
            &with_cleanup(vec![found("instance", central)], Some(central), 1),
            VerdictRow::Cleanup
        )
        .holds
    );
    assert!(
        !row(
            &with_cleanup(vec![found("instance", central)], None, 1),
            VerdictRow::Cleanup
        )
        .holds
    );
    assert!(
        !row(
            &with_cleanup(vec![found("instance", "i-0other")], Some(central), 1),
            VerdictRow::Cleanup
        )
        .holds
    );
}

#[test]
fn a_failed_or_early_audit_is_not_cleanup_evidence() {
    // rule CLEAN-3, CASE-9
    let mut w = ran(&["canary-1"], &[]);
    let l = lineage(&w).clone();
    let mut g = l.groups["canary-1"].clone();
    let (at, mut a) = g.cleanup.clone().unwrap();
    a.status = crate::schema::events::Status::Fail;
    g.cleanup = Some((at, a.clone()));
    assert!(!cleanup(&l, &g).holds());
    a.status = crate::schema::events::Status::Pass;
    g.cleanup = Some((
        At {
            seq: g.closed.unwrap().seq - 1,
            utc_ns: 0,
        },
        a,
    ));
    assert!(!cleanup(&l, &g).holds(), "an audit before the close");
    g.monitor_peak = None;
    assert!(!cleanup(&l, &g).holds());
    w.records.clear();
}

// --- The verdict ---------------------------------------------------------

#[test]
fn the_status_is_the_first_failing_row_in_precedence_order() {
    // rule VERDICT-1
    use VerdictRow::*;
    let rows = |failing: &[VerdictRow]| -> Vec<GateRow> {
        ROWS.iter()
            .map(|(row, _)| GateRow {
                gate: row.as_str().to_string(),
                holds: !failing.contains(row),
                evidence: String::new(),
            })
            .collect()
    };
    assert_eq!(status_of(&rows(&[])), VerdictStatus::Accepted, "VERDICT-1");
    assert_eq!(
        status_of(&rows(&[Cleanup, Settlement, Replay])),
        VerdictStatus::RejectedJoin,
        "VERDICT-1: the first failing row in precedence order"
    );
    assert_eq!(
        status_of(&rows(&[Cleanup, Runtime, Secrets])),
        VerdictStatus::RejectedManifest
    );
    assert_eq!(
        status_of(&rows(&[Settlement, Cleanup])),
        VerdictStatus::RejectedSettlement
    );
    assert_eq!(
        status_of(&rows(&[SafetyLimit, Cleanup])),
        VerdictStatus::RejectedCleanup
    );
    assert_eq!(
        status_of(&rows(&[SafetyLimit])),
        VerdictStatus::RejectedSafetyLimit
    );
    assert_eq!(
        status_of(&rows(&[Attempts, Decisions])),
        VerdictStatus::RejectedRuntime
    );
    // Every row of method.md section 10 is computed, in order.
    let v = verdict_of(&ran(&["canary-1"], &[]), "canary-1");
    let names: Vec<&str> = v.rows.iter().map(|r| r.gate.as_str()).collect();
    assert_eq!(
        names,
        ROWS.iter().map(|(row, _)| row.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(v.status, VerdictStatus::Accepted);
}

#[test]
fn the_row_table_is_every_row_in_declaration_order_and_the_display_text_is_as_stored() {
    // rule VERDICT-1: ROWS, VerdictRow::ALL and the row functions agree.
    let table: Vec<VerdictRow> = ROWS.iter().map(|(row, _)| *row).collect();
    assert_eq!(table, VerdictRow::ALL);
    assert_eq!(rows::ALL.len(), ROWS.len());
    let names: Vec<&str> = VerdictRow::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "manifest",
            "secrets",
            "attempts",
            "trial result",
            "runtime",
            "requests",
            "decisions",
            "cost join",
            "reward join",
            "replay",
            "settlement",
            "cleanup",
            "safety limit",
        ]
    );
    let statuses: Vec<&str> = VerdictStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "accepted",
            "rejected_manifest",
            "rejected_runtime",
            "rejected_join",
            "rejected_settlement",
            "rejected_cleanup",
            "rejected_safety_limit",
        ]
    );
}

#[test]
fn the_projection_enums_keep_their_serde_names() {
    crate::schema::named::assert_serde_names(SettlementState::ALL, SettlementState::as_str);
    crate::schema::named::assert_serde_names(Series::ALL, Series::as_str);
    crate::schema::named::assert_serde_names(DecisionKey::ALL, DecisionKey::as_str);
    assert_eq!(SettlementState::NotCharged.as_str(), "not_charged");
    assert_eq!(
        Series::SubscriptionCounterfactual.as_str(),
        "subscription_counterfactual"
    );
}

#[test]
fn every_failing_row_is_listed_not_only_the_first() {
    // rule VERDICT-1
    let v = with_cleanup(vec![found("volume", "vol-1")], None, 3);
    assert_eq!(v.failing().len(), 1);
    assert!(row(&v, VerdictRow::Cleanup)
        .evidence
        .contains("peak 3 > concurrency 1"));
    assert!(row(&v, VerdictRow::Cleanup).evidence.contains("vol-1"));
}

#[test]
fn a_group_with_a_case_not_started_fails_attempts() {
    // rule VERDICT-1 (attempts), CASE-9
    let mut w = World::new();
    w.freeze(EXAMPLE_MANIFEST, EXAMPLE_PRIVATE).unwrap();
    w.open("canary-1").unwrap();
    let v = verdict_of(&w, "canary-1");
    assert!(!row(&v, VerdictRow::Attempts).holds);
    assert!(row(&v, VerdictRow::Attempts)
        .evidence
        .contains("never started: hello-world/c1"));
    assert_eq!(v.status, VerdictStatus::RejectedRuntime);
}

#[test]
fn a_credential_in_imported_evidence_fails_the_secrets_row() {
    // rule VERDICT-1 (secrets), FREEZE-2: the append path refuses it, so it
    // can only arrive around the guard (e.g. a hand-edited import).
    let mut w = ran(&["canary-1"], &[]);
    let key = format!("AKIA{}", "ABCDEFGHIJKLMNOP");
    w.push(vec![Event::ArtifactRecorded(
        crate::schema::events::ArtifactRecorded {
            group: Some(GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            }),
            role: "log".into(),
            path: format!("/tmp/{key}"),
            bytes: 1,
            blake3: "0".repeat(64),
        },
    )]);
    let v = verdict_of(&w, "canary-1");
    assert!(
        !row(&v, VerdictRow::Secrets).holds,
        "{:?}",
        row(&v, VerdictRow::Secrets)
    );
    assert_eq!(v.status, VerdictStatus::RejectedManifest);
    assert!(
        !row(&v, VerdictRow::Secrets).evidence.contains(&key),
        "the value is never echoed"
    );
}

#[test]
fn a_leaked_credential_is_named_by_its_shape_in_plain_words() {
    // rule BIND-8; issue 29 item 17: never "quotes a api_key_assignment" in
    // a new verdict, while a verdict sealed as version 2 is derived as
    // version 2 words it (audit compares word for word).
    let mut w = ran(&["canary-1"], &[]);
    w.push(vec![Event::CredentialFound(
        crate::schema::events::CredentialFound {
            group: GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            },
            file: "jobs/j/t/result.json".into(),
            file_blake3: "0".repeat(64),
            field: "config.agent.kwargs.api_key".into(),
            shape: "api_key_assignment".into(),
            redacted: "<redacted: 40 bytes>".into(),
        },
    )]);
    let v = verdict_of(&w, "canary-1");
    let secrets = row(&v, VerdictRow::Secrets);
    assert!(!secrets.holds, "BIND-8: {secrets:?}");
    assert!(
        secrets
            .evidence
            .contains("quotes a credential of shape api_key_assignment")
            && !secrets.evidence.contains("a api_key"),
        "BIND-8: the finding reads as English: {}",
        secrets.evidence
    );
    let as_v2 = crate::method::verdict::group_verdict_as(&w.state, lineage(&w), "canary-1", 2);
    let old = row(&as_v2, VerdictRow::Secrets);
    assert!(
        old.evidence.contains("quotes a api_key_assignment (") && !old.holds,
        "BIND-8: version 2 keeps the wording its seals attest: {}",
        old.evidence
    );
    assert_eq!(as_v2.projection_version, 2);
}

#[test]
fn a_control_request_off_the_strong_route_fails_replay() {
    // rule LINEAGE-8
    let mut w = ran(&["canary-1"], &[]);
    w.open("control").unwrap();
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    w.start("control", &case, None).unwrap();
    // A policy group's economy request recorded under control by mistake.
    let gref = GroupRef {
        lineage: L.into(),
        group: "control".into(),
    };
    w.push(vec![Event::UsageRecorded(Box::new(
        crate::schema::events::UsageRecorded {
            group: gref,
            request_id: "x".into(),
            provider_id: "ambient".into(),
            model_id: "qwen/qwen3-coder-30b".into(),
            prompt_tokens: 1,
            completion_tokens: 0,
            buckets: buckets(1, 0, 0, 0),
            final_charge_micro_usd: None,
            charge_status: ChargeStatus::Unknown,
            reconciliation_status: ReconciliationStatus::NotApplicable,
            usage_origin: UsageOrigin::ProviderReported,
            status: None,
            error_code: None,
            rates: None,
            pricing_source: None,
            pricing_version: None,
            recomputed_charge_micro_usd: None,
            recompute_matches: None,
            line_blake3: "0".repeat(64),
        },
    ))]);
    let v = verdict_of(&w, "control");
    assert!(!row(&v, VerdictRow::Replay).holds);
    assert!(row(&v, VerdictRow::Replay)
        .evidence
        .contains("ambient:qwen/qwen3-coder-30b"));
}

#[test]
fn a_decision_off_the_frozen_route_table_fails_replay() {
    // rule VERDICT-1 (replay)
    let mut g = policy_group(&[("a", true, true, true)]);
    g.decisions[0].1.selected_model = Some("bitrouter:some/other-model".into());
    let mut l = ran(&["canary-1"], &[]).state.lineages[L].clone();
    l.groups.insert("r1".into(), g);
    let v = group_verdict(&crate::method::projections::State::default(), &l, "r1");
    assert!(!row(&v, VerdictRow::Replay).holds);
    assert!(row(&v, VerdictRow::Replay)
        .evidence
        .contains("some/other-model"));
}

// --- The security-policy skip (CASE-6) -----------------------------------

fn skip_world(second_class: RefusalClass, same_evidence: bool) -> World {
    let mut w = ran(&["canary-1", "control"], &[]);
    w.open("r1").unwrap();
    let orig = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    w.start("r1", &orig, None).unwrap();
    w.refusal("r1", &orig, RefusalClass::ProviderPolicyRefusal, "a")
        .unwrap();
    w.result("r1", &orig, None, Some("ProviderPolicyRefusal"));
    let r01 = CaseRef {
        replacement: 1,
        ..orig.clone()
    };
    w.start("r1", &r01, None).unwrap();
    w.refusal(
        "r1",
        &r01,
        second_class,
        if same_evidence { "a" } else { "b" },
    )
    .unwrap();
    w.result("r1", &r01, None, Some("ProviderPolicyRefusal"));
    w
}

#[test]
fn a_validated_skip_needs_two_refusals_of_the_same_class_with_own_evidence() {
    // rule CASE-6
    let v = verdict_of(
        &skip_world(RefusalClass::ProviderPolicyRefusal, false),
        "r1",
    );
    assert_eq!(v.skipped_security_policy.len(), 1);
    assert_eq!(v.skipped_security_policy[0].evidence_blake3.len(), 2);
    assert!(!row(&v, VerdictRow::Runtime)
        .evidence
        .contains("invalid security-policy skip"));
    let v = verdict_of(
        &skip_world(RefusalClass::NetworkSecurityPolicyDenied, false),
        "r1",
    );
    assert!(v.skipped_security_policy.is_empty());
    assert!(
        row(&v, VerdictRow::Runtime)
            .evidence
            .contains("evidence classes differ"),
        "{:?}",
        row(&v, VerdictRow::Runtime)
    );
    let v = verdict_of(&skip_world(RefusalClass::ProviderPolicyRefusal, true), "r1");
    assert!(row(&v, VerdictRow::Runtime)
        .evidence
        .contains("same evidence"));
}

#[test]
fn a_skip_with_a_valid_trial_result_is_not_a_skip() {
    // rule CASE-6: an attempt that produced a valid TrialResult.
    let mut w = skip_world(RefusalClass::ProviderPolicyRefusal, false);
    let l = w.state.lineages.get_mut(L).unwrap();
    let r01 = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 1,
    };
    let c = l.groups.get_mut("r1").unwrap().cases.get_mut(&r01).unwrap();
    c.result.as_mut().unwrap().1.rewards = Some(
        [("reward".to_string(), "1".to_string())]
            .into_iter()
            .collect(),
    );
    c.result.as_mut().unwrap().1.exception_type = None;
    let v = verdict_of(&w, "r1");
    assert!(v.skipped_security_policy.is_empty());
    w.records.clear();
}

// --- Lineage (LINEAGE-1..9) ----------------------------------------------

#[test]
fn a_lineage_ending_at_r2_is_complete_only_after_r2_feedback() {
    // rule LINEAGE-4, LINEAGE-3
    let text = "description = \"t\"\n[[lineages]]\n";
    let (w, _) = scenario::run(&spec(text)).unwrap();
    let view = lineage_view(&w.state, lineage(&w));
    assert!(view.complete, "LINEAGE-4: {view:?}");
    // The same log without r2's feedback is not complete.
    let mut w2 = World::new();
    let cut = w.records.len() - 1;
    assert!(matches!(w.records[cut].1, Event::FeedbackApplied(_)));
    w2.push(w.records[..cut].iter().map(|(_, e)| e.clone()).collect());
    w2.lineage = L.into();
    let view = lineage_view(&w2.state, lineage(&w2));
    assert!(!view.complete, "LINEAGE-4: r2's feedback not yet recorded");
    assert_eq!(view.feedback_allowed, vec!["r2".to_string()]);
}

#[test]
fn feedback_only_once_after_an_accepted_r1_or_r2() {
    // rule LINEAGE-3
    let mut w = ran(&["canary-1", "control", "r1"], &[]);
    assert_eq!(rule(w.feedback("r1")), "LINEAGE-3", "once");
    assert_eq!(rule(w.feedback("control")), "LINEAGE-3", "never to control");
    assert_eq!(rule(w.feedback("canary-1")), "LINEAGE-3");
    assert_eq!(rule(w.feedback("r2")), "LINEAGE-3", "r2 is not sealed");
    let bad = crate::method::decide::feedback(&w.state, Some(L), "r1", "nothex", &"a".repeat(64));
    assert!(matches!(bad, Err(Error::Input(_))), "{bad:?}");
}

#[test]
fn a_held_out_lineage_applies_no_reward() {
    // rule LINEAGE-7
    let mut w = ran(
        &["canary-1", "control"],
        &[("role = \"tuning\"", "role = \"held_out\"")],
    );
    w.open("r1").unwrap();
    assert_eq!(rule(w.feedback("r1")), "LINEAGE-7");
}

#[test]
fn an_accepted_but_worse_round_does_not_stop_the_lineage() {
    // rule LINEAGE-5: r1 scores 10/13 like control, a cost that differs
    // does not matter; only integrity failures stop a lineage.
    let w = ran(&["canary-1", "control", "r1"], &[]);
    let view = lineage_view(&w.state, lineage(&w));
    assert_eq!(view.stopped, None);
    assert_eq!(view.next_group.as_deref(), Some("r2"));
}

#[test]
fn a_rejected_round_stops_the_lineage_in_its_seal_a_rejected_canary_does_not() {
    // rule LINEAGE-5, VERDICT-3, GATE-8
    let text = "description = \"t\"\n[[lineages]]\ngroups = [\"canary-1\", \"control\"]\nfaults = [{ group = \"control\", kind = \"stray_volume\" }]\n";
    let (w, _) = scenario::run(&spec(text)).unwrap();
    let stop = lineage(&w).stopped.as_ref().unwrap();
    assert_eq!(stop.1.rule, "LINEAGE-5");
    assert!(stop
        .1
        .reason
        .contains(VerdictStatus::RejectedCleanup.as_str()));
    let text = "description = \"t\"\n[[lineages]]\ngroups = [\"canary-1\"]\nfaults = [{ group = \"canary-1\", kind = \"stray_volume\" }]\n";
    let (w, _) = scenario::run(&spec(text)).unwrap();
    assert!(lineage(&w).stopped.is_none());
    assert_eq!(
        lineage(&w).groups["canary-1"]
            .sealed
            .as_ref()
            .unwrap()
            .1
            .status,
        VerdictStatus::RejectedCleanup.as_str()
    );
}

#[test]
fn rounds_only_in_the_frozen_target_list() {
    // rule LINEAGE-1
    let w = ran(&["canary-1", "control"], &[]);
    let m = manifest();
    let g = m.groups.iter().find(|g| g.name == "r2").unwrap();
    let cmd = crate::method::decide::GroupOpen {
        lineage: None,
        group: "r3".into(),
        binary_sha256: m.software.bitrouter_binary_sha256.clone(),
        config_sha256: String::new(),
        ports: g.ports.clone(),
        db_path: g.db_path.clone(),
        out_dir: g.out_dir.clone(),
    };
    assert_eq!(
        rule(crate::method::decide::group_open(&w.state, cmd)),
        "LINEAGE-1"
    );
}

#[test]
fn a_reused_control_is_never_rerun_and_its_artifact_must_re_derive() {
    // rule LINEAGE-6, LINEAGE-9
    let text = r#"description = "t"
[[lineages]]
groups = ["canary-1", "control"]
[[lineages]]
edits = [["short13-kimi-2026-11", "short13-kimi-2026-12"], ["= [187", "= [197"]]
groups = ["canary-1"]
reuse_control = "short13-kimi-2026-11/control"
"#;
    let (mut w, _) = scenario::run(&spec(text)).unwrap();
    assert_eq!(rule(w.open("control")), "LINEAGE-6");
    let view = lineage_view(&w.state, &w.state.lineages["short13-kimi-2026-12"]);
    assert_eq!(view.next_group.as_deref(), Some("r1"));
    // A catalog entry whose artifact does not re-derive is refused.
    let text = "description = \"t\"\n[[lineages]]\ngroups = [\"canary-1\", \"control\"]\n";
    let (mut a, _) = scenario::run(&spec(text)).unwrap();
    for (_, e) in &mut a.records {
        if let Event::ControlRegistered(c) = e {
            c.artifact_blake3 = "0".repeat(64);
        }
    }
    let mut w = World::new();
    w.push(a.records.iter().map(|(_, e)| e.clone()).collect());
    w.freeze(
        &EXAMPLE_MANIFEST
            .replace(L, "short13-kimi-2026-12")
            .replace("= [187", "= [197"),
        &EXAMPLE_PRIVATE.replace(L, "short13-kimi-2026-12"),
    )
    .unwrap();
    let control = GroupRef {
        lineage: L.into(),
        group: "control".into(),
    };
    let r = crate::method::decide::control_reuse(&w.state, "short13-kimi-2026-12", &control);
    assert_eq!(rule(r), "LINEAGE-9");
}

#[test]
fn r1_runs_on_the_shared_policy_database_and_control_on_its_own() {
    // rule LINEAGE-8: the frozen paths are what group open checks.
    let m = manifest();
    let db = |g: &str| {
        m.groups
            .iter()
            .find(|x| x.name == g)
            .unwrap()
            .db_path
            .clone()
    };
    assert_eq!(db("r1"), db("r2"));
    assert_ne!(db("control"), db("r1"));
}

// --- Seal (CASE-9, SETTLE-8, VERDICT-4) -----------------------------------

#[test]
fn seal_follows_the_per_group_order() {
    // rule CASE-9
    let mut w = ran(&["canary-1", "control"], &[]);
    w.open("r1").unwrap();
    assert_eq!(rule(w.seal("r1")), "CASE-9", "not closed");
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    w.start("r1", &case, None).unwrap();
    w.decide(|s, _| crate::method::decide::group_close(s, Some(L), "r1"))
        .unwrap();
    assert_eq!(rule(w.seal("r1")), "CASE-9", "a case is still started");
    w.result("r1", &case, Some("1"), None);
    assert_eq!(
        rule(w.seal("r1")),
        "CASE-9",
        "no cleanup audit after the close"
    );
}

#[test]
fn pending_rows_wait_for_the_grace_then_reject() {
    // rule SETTLE-8, SETTLE-4
    let mut w = ran(&["canary-1"], &[]);
    w.open("control").unwrap();
    let ids = crate::method::lineage::group_identities(lineage(&w), "control");
    for (i, case) in ids.iter().enumerate() {
        w.start("control", case, None).unwrap();
        let mut reqs = w.case_requests("control", case);
        if i == 0 {
            reqs[0].receipt = ReceiptMode::Pending;
        }
        for r in reqs {
            w.request("control", &r);
        }
        w.result("control", case, Some("1"), None);
    }
    w.finish("control", 1, vec![]).unwrap();
    assert_eq!(rule(w.seal("control")), "SETTLE-8");
    w.advance_sec(900);
    let sealed = w.seal("control").unwrap();
    let Event::GroupSealed(s) = &sealed[0] else {
        panic!()
    };
    assert_eq!(s.status, VerdictStatus::RejectedSettlement.as_str());
    assert_eq!(
        rule(w.seal("control")),
        "VERDICT-4",
        "a sealed verdict is final"
    );
    // After the seal no evidence is accepted for the group.
    let r = Req {
        id: "late".into(),
        tier: Tier::Strong,
        trace: true,
        usage: true,
        decision: false,
        receipt: ReceiptMode::None,
        tokens: None,
        reason: None,
    };
    let refused = crate::method::decide::evidence_group(&w.state, Some(L), "control");
    assert_eq!(rule(refused), "VERDICT-4");
    let _ = r;
}

#[test]
fn an_accepted_control_enters_the_catalog_by_its_key() {
    // rule LINEAGE-6, FREEZE-6
    let w = ran(&["canary-1", "control"], &[]);
    let cat = control_catalog(&w.state);
    assert_eq!(cat.len(), 1);
    assert_eq!(
        cat[0].control_key,
        lineage(&w).frozen.control_key,
        "FREEZE-6: registered by its control key"
    );
    assert_eq!(
        cat[0].artifact_blake3,
        control_artifact_blake3(lineage(&w), "control")
    );
}

#[test]
fn the_comparison_uses_the_exact_case_intersection() {
    // rule LINEAGE-9, REPORT-4
    let text = "description = \"t\"\n[[lineages]]\ngroups = [\"canary-1\", \"control\", \"r1\"]\nfaults = [{ group = \"r1\", kind = \"skip_valid\", case = \"regex-log/t1\" }]\n";
    let (w, _) = scenario::run(&spec(text)).unwrap();
    let cmp = intersection(&w.state, lineage(&w), "r1");
    assert_eq!(cmp.included.len(), 12);
    assert_eq!(
        cmp.excluded,
        vec![(
            "regex-log/t1".to_string(),
            "r1 terminal_invalid".to_string()
        )]
    );
}

// --- Refusal and invalidation evidence ------------------------------------

#[test]
fn only_403_evidence_of_a_started_case_is_recorded() {
    // rule CASE-6, CASE-8
    let mut w = ran(&["canary-1", "control"], &[]);
    w.open("r1").unwrap();
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    let g = GroupRef {
        lineage: L.into(),
        group: "r1".into(),
    };
    let rec = |s: &crate::method::projections::State, status| {
        crate::method::decide::security_refusal(
            s,
            &g,
            &case,
            RefusalClass::ProviderPolicyRefusal,
            status,
            None,
            "0".repeat(64),
        )
    };
    assert_eq!(rule(rec(&w.state, 403)), "CASE-8", "not started");
    w.start("r1", &case, None).unwrap();
    assert_eq!(rule(rec(&w.state, 429)), "CASE-6");
    assert_eq!(rule(rec(&w.state, 401)), "CASE-6");
    assert_eq!(rec(&w.state, 403).unwrap().len(), 1);
}

#[test]
fn invalidation_needs_a_started_case_without_a_result() {
    // rule CASE-3, CASE-1, CASE-8
    let mut w = ran(&["canary-1", "control"], &[]);
    w.open("r1").unwrap();
    let case = CaseRef {
        task: "fix-git".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    let g = GroupRef {
        lineage: L.into(),
        group: "r1".into(),
    };
    let inv = |s: &crate::method::projections::State| {
        crate::method::decide::case_invalidate(
            s,
            &g,
            &case,
            crate::schema::events::InvalidReason::ControllerCrash,
            "x".into(),
            "0".repeat(64),
        )
    };
    assert_eq!(rule(inv(&w.state)), "CASE-8");
    w.start("r1", &case, None).unwrap();
    let e = inv(&w.state).unwrap();
    w.push(e);
    assert_eq!(rule(inv(&w.state)), "CASE-1", "once");
    let c = &lineage(&w).groups["r1"].cases[&case];
    assert_eq!(
        c.status(&[]),
        crate::method::projections::CaseStatus::TerminalInvalid
    );
    let case2 = CaseRef {
        task: "regex-log".into(),
        trial: "t1".into(),
        replacement: 0,
    };
    w.start("r1", &case2, None).unwrap();
    w.result("r1", &case2, Some("1"), None);
    let g2 = g.clone();
    let r = crate::method::decide::case_invalidate(
        &w.state,
        &g2,
        &case2,
        crate::schema::events::InvalidReason::CorruptOutput,
        "x".into(),
        "0".repeat(64),
    );
    assert_eq!(rule(r), "CASE-3");
}

#[test]
fn an_operator_stop_is_recorded_once_and_launches_nothing() {
    // rule VERDICT-3
    let mut w = ran(&["canary-1"], &[]);
    let e = crate::method::decide::lineage_stop(&w.state, Some(L), "provider incident").unwrap();
    w.push(e);
    assert_eq!(
        rule(crate::method::decide::lineage_stop(
            &w.state,
            Some(L),
            "again"
        )),
        "VERDICT-3"
    );
    assert_eq!(rule(w.open("control")), "VERDICT-3");
    assert!(matches!(
        crate::method::decide::lineage_stop(&w.state, Some(L), " "),
        Err(Error::Refused { .. } | Error::Input(_))
    ));
}
