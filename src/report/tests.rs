//! Unit tests of the report: every formula on hand-computed numbers, the
//! deterministic bootstrap, and the report built from the recorded short-13
//! lineage (with a hand-made control of 9/13 at $4.29).

use super::*;
use crate::error::Error;
use crate::method::projections::{RequestState, State, TraceObs, UsageObs};
use crate::schema::events::TraceStatus;
use crate::schema::manifest::RunClass;
use crate::schema::money::{bitrouter_charge, Buckets, Charge, Dec, Rates};

fn head() -> LedgerHead {
    LedgerHead {
        head_seq: 7,
        head_hash: "ab".repeat(32),
    }
}

fn dec(s: &str) -> Dec {
    Dec::parse(s).unwrap()
}

/// The recorded short-13 lineage (canary, control, r1, r2 all accepted),
/// built in memory from its scenario file.
fn short13() -> State {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/scenarios/short13-accepted.toml"
    ))
    .unwrap();
    let spec: crate::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
    crate::testkit::scenario::run(&spec).unwrap().0.state
}

const L: &str = "short13-kimi-2026-11";

#[test]
fn ratios_round_half_away_from_zero_at_two_places() {
    assert_eq!(ratio_text(1, 3, 2).unwrap(), "0.33");
    assert_eq!(ratio_text(2, 3, 2).unwrap(), "0.67");
    assert_eq!(ratio_text(-1, 3, 2).unwrap(), "-0.33");
    assert_eq!(ratio_text(1, 200, 2).unwrap(), "0.01"); // 0.005 -> 0.01
    assert_eq!(ratio_text(-1, 200, 2).unwrap(), "-0.01");
    assert_eq!(ratio_text(-1, 1000, 2).unwrap(), "0.00"); // never "-0.00"
    assert_eq!(ratio_text(7, 1, 0).unwrap(), "7");
    assert_eq!(ratio_text(1, 0, 2), None);
    assert_eq!(usd(4_290_000), "4.29");
    assert_eq!(usd(35_831), "0.035831");
    assert_eq!(usd(0), "0");
}

/// The issue's control: 9/13 passing; 1,200,000 uncached input, 300,000
/// cache-read and 40,000 output tokens at $3, $0.30 and $15 per million:
/// 3.60 + 0.09 + 0.60 = $4.29; cost per success 4.29 / 9 = 0.4766... shown
/// as $0.48, kept exact as 4290000 / 9000000.
#[test]
fn the_issue_control_costs_4_29_and_0_48_per_success() {
    // rule REPORT-1, REPORT-2, SETTLE-2
    let b = Buckets {
        uncached_input_tokens: 1_200_000,
        cache_read_tokens: 300_000,
        cache_write_tokens: 0,
        output_tokens: 40_000,
        reasoning_tokens: 0,
    };
    let rates = Rates {
        uncached_input: Some(dec("3")),
        cache_read: Some(dec("0.3")),
        cache_write: Some(dec("3.75")),
        output: Some(dec("15")),
    };
    assert_eq!(
        bitrouter_charge(&b, &rates),
        Charge::Computed {
            charge_micro_usd: 4_290_000
        }
    );
    assert_eq!(Money::new(4_290_000).usd, "4.29");
    let cps = cost_per_success(4_290_000, 9).unwrap();
    assert_eq!(
        (cps.num, cps.den, cps.text.as_str()),
        (4_290_000, 9_000_000, "0.48")
    );
    assert_eq!(score_pct(9, 13).unwrap().text, "69.23");
    assert_eq!(
        cost_per_success(4_290_000, 0),
        None,
        "no success, no cost per success"
    );
}

/// The same control end to end: the recorded short-13 state with control's
/// 26 requests replaced by one request of those buckets (priced by the
/// frozen claude-sonnet-4-5 record: 3 / 0.3 / 3.75 / 15) and one of its 10
/// passing cases turned to reward 0.
#[test]
fn a_report_of_a_9_of_13_control_at_4_29() {
    // rule REPORT-1, REPORT-2
    let mut state = short13();
    let l = state.lineages.get_mut(L).unwrap();
    let g = l.groups.get_mut("control").unwrap();
    g.requests.clear();
    g.requests.insert(
        "only".into(),
        RequestState {
            traces: smallvec::smallvec![(
                1000,
                TraceObs {
                    http_status: 200,
                    status: TraceStatus::Completed,
                    captured_at: "2026-11-20T01:00:00Z".into(),
                    protocol: crate::schema::events::Protocol::Messages,
                },
            )],
            usage: smallvec::smallvec![(
                1001,
                UsageObs {
                    provider_id: "anthropic".into(),
                    model_id: "claude-sonnet-4-5".into(),
                    buckets: crate::schema::events::TokenBuckets {
                        uncached_input_tokens: 1_200_000,
                        cache_read_tokens: 300_000,
                        cache_write_tokens: 0,
                        output_tokens: 40_000,
                        reasoning_tokens: 0,
                    },
                    final_charge_micro_usd: Some(4_290_000),
                    charge_status: crate::schema::events::ChargeStatus::Computed,
                    reconciliation_status:
                        crate::schema::events::ReconciliationStatus::NotApplicable,
                    usage_origin: crate::schema::events::UsageOrigin::ProviderReported,
                    status: Some("completed".into()),
                },
            )],
            receipts: smallvec::smallvec![],
            outcomes: smallvec::smallvec![],
        },
    );
    let passing = g
        .cases
        .values_mut()
        .find(|c| {
            c.result
                .as_ref()
                .and_then(|(_, r)| r.rewards.as_ref())
                .is_some_and(|m| m.get("reward").is_some_and(|v| v == "1"))
        })
        .unwrap();
    let (_, r) = passing.result.as_mut().unwrap();
    r.rewards
        .as_mut()
        .unwrap()
        .insert("reward".into(), "0".into());
    let rep = build(&state, Some(L), head()).unwrap();
    let c = rep.groups.iter().find(|g| g.group == "control").unwrap();
    assert_eq!((c.passed, c.total), (9, 13));
    assert_eq!(c.score_pct.as_ref().unwrap().text, "69.23");
    assert_eq!(c.requests, 1);
    assert_eq!(c.strong_requests, 1);
    // Control and the rounds are all notional now: one series.
    assert_eq!(rep.basis.kind, BasisKind::Series);
    assert_eq!(rep.basis.series.as_deref(), Some("notional"));
    assert_eq!(c.cost.as_ref().unwrap().usd, "4.29");
    let cps = c.cost_per_success.as_ref().unwrap();
    assert_eq!(
        (cps.num, cps.den, cps.text.as_str()),
        (4_290_000, 9_000_000, "0.48")
    );
    let md = render_markdown(&rep);
    assert!(
        md.contains("| control | accepted | 9/13 | 69.23% |"),
        "{md}"
    );
    assert!(md.contains("$4.29 | $0.48 |"), "{md}");
    // r1: 451750 micro-USD against 4290000: (451750 / 4290000 - 1) x 100 = -89.469...
    let r1 = rep.groups.iter().find(|g| g.group == "r1").unwrap();
    assert_eq!(r1.cost_delta_pct.as_ref().unwrap().text, "-89.47");
    // strong-call delta: 0 strong requests against 1.
    assert_eq!(r1.strong_call_delta_pct.as_ref().unwrap().text, "-100.00");
    // score delta: 10/13 - 9/13 = +7.69 pp.
    assert_eq!(r1.score_delta_pp.as_ref().unwrap().text, "7.69");
}

#[test]
fn cost_and_strong_call_deltas_follow_report_2() {
    // rule REPORT-2
    // The recorded short-13 numbers: control 1008949, r1 451750 micro-USD.
    let d = delta_pct(451_750, 1_008_949).unwrap();
    assert_eq!(
        (d.num, d.den, d.text.as_str()),
        (-55_719_900, 1_008_949, "-55.23")
    );
    assert_eq!(delta_pct(1_100_000, 1_000_000).unwrap().text, "10.00");
    assert_eq!(delta_pct(0, 26).unwrap().text, "-100.00");
    assert_eq!(delta_pct(5, 0), None, "no control cost, no delta");
    assert_eq!(score_delta_pp(9, 13, 10, 13).unwrap().text, "-7.69");
}

/// REPORT-3: three rounds against control 1,000,000: 1,200,000, 600,000,
/// 300,000. Steady state of r3: -70%; cumulative through r3: 2,100,000
/// against 3 x 1,000,000 = 3,000,000, -30%; through r2 1,800,000 against
/// 2,000,000, -10%; through r1 +20%.
#[test]
fn three_rounds_cumulate_against_k_times_control() {
    // rule REPORT-3
    let rows = lifecycle(
        (1_000_000, 10),
        &[(1_200_000, 12), (600_000, 9), (300_000, 10)],
    );
    let got: Vec<(u64, u64, u64, String)> = rows
        .iter()
        .map(|r| {
            (
                r.k,
                r.policy.micro_usd,
                r.control.micro_usd,
                r.delta_pct.as_ref().unwrap().text.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 1_200_000, 1_000_000, "20.00".to_string()),
            (2, 1_800_000, 2_000_000, "-10.00".to_string()),
            (3, 2_100_000, 3_000_000, "-30.00".to_string()),
        ]
    );
    assert_eq!(rows[2].control.usd, "3");
    assert_eq!(delta_pct(300_000, 1_000_000).unwrap().text, "-70.00");
    // The lifecycle's successes and cost per success: 31 against 3 x 10;
    // $2.10 / 31 = $0.0677..., control's $3 / 30 = $0.10.
    assert_eq!(
        (rows[2].successes, rows[2].control_successes),
        (31, 30),
        "REPORT-3"
    );
    assert_eq!(
        rows[2].cost_per_success.as_ref().unwrap().text,
        "0.07",
        "REPORT-3"
    );
    assert_eq!(
        rows[2].control_cost_per_success.as_ref().unwrap().text,
        "0.10",
        "REPORT-3"
    );
}

#[test]
fn tolerances_are_exact() {
    // 9/13 vs 10/13 is -7.6923 pp: within 7.7, not within 7.69.
    assert!(quality_within(9, 13, 10, 13, dec("7.7")));
    assert!(!quality_within(9, 13, 10, 13, dec("7.69")));
    assert!(quality_within(10, 13, 10, 13, dec("0")));
    assert!(quality_within(11, 13, 10, 13, dec("0")));
    // Cost: at most the tolerance.
    assert!(cost_within(1_000_000, 1_000_000, dec("0")));
    assert!(!cost_within(1_000_001, 1_000_000, dec("0")));
    assert!(cost_within(1_050_000, 1_000_000, dec("5")));
    assert!(!cost_within(1_050_001, 1_000_000, dec("5")));
    assert!(cost_within(700_000, 1_000_000, dec("-30")));
    assert!(!cost_within(700_001, 1_000_000, dec("-30")));
}

#[test]
fn splitmix64_matches_the_reference_and_the_bootstrap_is_deterministic() {
    // rule REPORT-4
    // The reference outputs of SplitMix64 seeded with 0.
    let mut g = SplitMix64::new(0);
    assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    let mut g = SplitMix64::new(42);
    for _ in 0..10_000 {
        assert!(g.below(7) < 7);
    }
    let deltas: Vec<i64> = (0..60).map(|i| [1, 0, 0, -1, 0, 1][i % 6]).collect();
    let a = bootstrap_interval(&deltas, 20261120, 2000).unwrap();
    let b = bootstrap_interval(&deltas, 20261120, 2000).unwrap();
    assert_eq!(a, b, "same seed, same interval");
    // mean = 10 / 60 = +16.67 pp; the interval contains it.
    let lo = a.lower_pp.num as f64 / a.lower_pp.den as f64;
    let hi = a.upper_pp.num as f64 / a.upper_pp.den as f64;
    assert!(lo <= 16.67 && 16.66 <= hi && lo < hi, "{a:?}");
    assert_eq!((a.seed, a.resamples, a.pairs), (20261120, 2000, 60));
    // Every pair equal: the interval is a point.
    let same = bootstrap_interval(&[1, 1, 1], 1, 100).unwrap();
    assert_eq!(
        (same.lower_pp.text.as_str(), same.upper_pp.text.as_str()),
        ("100.00", "100.00")
    );
    assert_eq!(bootstrap_interval(&[], 1, 100), None);
    assert_eq!(bootstrap_interval(&[1], 1, 0), None);
    // The percentile indices: B = 2000 -> sorted[50] and sorted[1949].
    let sums = bootstrap_sums(&deltas, 20261120, 2000).unwrap();
    assert_eq!((a.lower_pp.num, a.lower_pp.den), (sums.lower * 100, 60));
    assert_eq!((a.upper_pp.num, a.upper_pp.den), (sums.upper * 100, 60));
}

#[test]
fn times_parse_and_print() {
    assert_eq!(parse_rfc3339_ns("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_rfc3339_ns("2026-11-30T00:53:20.123456789Z"),
        Some(1_796_000_000_123_456_789)
    );
    assert_eq!(
        parse_rfc3339_ns("2026-11-30T01:53:20.123456789+01:00"),
        Some(1_796_000_000_123_456_789)
    );
    assert_eq!(
        parse_rfc3339_ns("2000-02-29T00:00:00.5Z"),
        Some(951_782_400_500_000_000)
    );
    assert_eq!(parse_rfc3339_ns("not a time"), None);
    // Calendar-checked since schema::time: no February 31st, no hour 24.
    assert_eq!(parse_rfc3339_ns("2026-02-31T00:00:00Z"), None);
    assert_eq!(parse_rfc3339_ns("2026-11-30T24:00:00Z"), None);
    assert_eq!(duration_text(90_061 * 1_000_000_000), "1d 1h 1m 1s");
    assert_eq!(duration_text(59 * 1_000_000_000), "59s");
    assert_eq!(duration_text(-61 * 1_000_000_000), "-1m 1s");
}

#[test]
fn decision_reasons_map_to_the_report_5_categories() {
    // rule REPORT-5
    for (reason, name) in [
        ("static_table", "static_route"),
        ("exploration_trial", "exploration"),
        ("exploration_locked", "learned_replacement"),
        ("adequacy_pin", "escalation"),
        ("progress_guard", "escalation"),
        ("reliability_circuit_open", "fallback"),
        ("reliability_half_open_probe", "fallback"),
        ("tool_guardrail", "other"),
        ("no_match", "other"),
    ] {
        assert_eq!(category(reason).as_str(), name, "{reason}");
    }
}

/// A served model that differs from the selected one is a fallback whatever
/// the reason (bitrouter-formats section 3).
#[test]
fn a_served_model_other_than_the_selected_one_is_a_fallback() {
    // rule REPORT-5
    let mut state = short13();
    let l = state.lineages.get_mut(L).unwrap();
    let g = l.groups.get_mut("r1").unwrap();
    let (_, r) = g.requests.iter_mut().next().unwrap();
    r.usage[0].1.model_id = "qwen/qwen3-coder-30b".into();
    r.usage[0].1.provider_id = "ambient".into();
    let rep = build(&state, Some(L), head()).unwrap();
    let d = rep.decisions.iter().find(|d| d.group == "r1").unwrap();
    let first_selected_kimi = d.fallback_model_mismatch;
    assert!(first_selected_kimi <= 1);
    assert_eq!(
        d.by_category
            .get(Category::Fallback.as_str())
            .copied()
            .unwrap_or(0),
        first_selected_kimi
    );
}

#[test]
fn the_short13_report_has_every_section_and_numbers_from_its_json() {
    // rule REPORT-6, CLASS-2
    let state = short13();
    let rep = build(&state, None, head()).unwrap();
    let md = render_markdown(&rep);
    let mut at = 0;
    for (i, title) in [
        "Hypothesis, class, allowed claim, tolerances",
        "Tuning / held-out role",
        "The frozen tuple, hashes and topology",
        "Control resolution and case intersection",
        "Control and every predeclared round",
        "Paired per-case deltas",
        "Decisions by tier and reason",
        "Four-bucket settlement and join audit",
        "Runtime, provider, retry, concurrency and cleanup evidence",
        "Steady-state and cumulative economics",
        "Failures, limitations and the control-to-policy time gap",
        "Go/no-go and artifact checksums",
    ]
    .iter()
    .enumerate()
    {
        let h = format!("## {}. {title}", i + 1);
        let pos = md[at..]
            .find(&h)
            .unwrap_or_else(|| panic!("{h} missing or out of order"));
        at += pos;
    }
    // Control actual, rounds notional: compared on the frozen-price basis.
    assert_eq!(rep.basis.kind, BasisKind::FrozenPrices);
    let names: Vec<&str> = rep.groups.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["control", "r1", "r2"]);
    for g in &rep.groups {
        assert!(g.accepted);
        let s = g.score_pct.as_ref().unwrap();
        assert_eq!(s.text, "76.92");
        assert!(md.contains(&format!("| {}/{} | {}% |", g.passed, g.total, s.text)));
        assert!(md.contains(&format!("${}", g.cost.as_ref().unwrap().usd_cents)));
    }
    let r1 = &rep.groups[1];
    assert_eq!(r1.cost_delta_pct.as_ref().unwrap().text, "-55.23");
    assert!(md.contains("-55.23%"));
    let cum = &rep.economics.cumulative[1];
    let row = cum.row.as_ref().unwrap();
    assert_eq!((row.k, row.control.micro_usd), (2, 2 * 1_008_949));
    assert_eq!(row.policy.micro_usd, 451_750 + 465_473);
    assert_eq!(row.delta_pct.as_ref().unwrap().text, "-54.55");
    assert!(rep.claim.allowed_claim.contains("never a public score"));
    assert!(rep
        .claim
        .refused_claims
        .iter()
        .any(|c| c.contains("cash-spend")));
    assert_eq!(rep.go_no_go.decision, Decision::Go);
    // The go/no-go line says what it checks: one-sided (REPORT-2).
    assert!(
        rep.go_no_go
            .line
            .contains("no more than 7.7 points below control"),
        "REPORT-2: {}",
        rep.go_no_go.line
    );
    // An empty table says "none" and why, never a bare header (REPORT-6).
    assert!(
        md.contains("| none: no request completed, joined exactly by request id"),
        "REPORT-6"
    );
    assert!(md.contains(CHART_FILE));
    let svg = render_svg(&rep);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("control 76.92%"));
}

#[test]
fn a_mechanism_lineage_gets_no_registry_entry() {
    // rule REPORT-7, CLASS-2
    let state = short13();
    let e = registry(&state, None, None, head(), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Refused {
                rule: crate::schema::rule::Rule::Report7,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("mechanism_iteration"), "{e}");
}

/// A public-reproduction lineage (the class changed in memory: the entry
/// depends on the class, the seal and the evidence only).
#[test]
fn a_public_lineage_gets_an_entry_with_unprovable_metrics_omitted() {
    // rule REPORT-7
    let mut state = short13();
    state
        .lineages
        .get_mut(L)
        .unwrap()
        .frozen
        .manifest
        .public
        .run
        .class = RunClass::PublicReproduction;
    let r = registry(&state, None, None, head(), Some("https://example.org/r")).unwrap();
    assert_eq!(r.group, "r2");
    assert_eq!(r.accuracy.text, "76.92");
    // The basis is notional (frozen prices): no cost per task.
    assert_eq!(r.cost_per_task, None);
    // The recorded TrialResults carry their spans inside the launch window
    // (BIND-1): 6 s each.
    assert_eq!(
        r.time_per_task.as_ref().map(|t| t.text.as_str()),
        Some("0.10")
    );
    let y = render_registry_yaml(&r);
    assert!(
        y.contains("terminal_bench_2_1:\n  accuracy: 76.92\n"),
        "{y}"
    );
    assert!(!y.contains("\n  cost_per_task:"), "{y}");
    assert!(y.contains("\n  time_per_task: 0.10\n"), "{y}");
    assert!(y.contains("  source_url: \"https://example.org/r\""), "{y}");
    assert!(y.contains("  as_of: \"2026-11-"), "{y}");
    // A group that is not accepted is refused.
    state
        .lineages
        .get_mut(L)
        .unwrap()
        .groups
        .get_mut("r2")
        .unwrap()
        .sealed
        .as_mut()
        .unwrap()
        .1
        .status = "rejected_join".into();
    let e = registry(&state, None, None, head(), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Refused {
                rule: crate::schema::rule::Rule::Report7,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn time_per_task_is_the_mean_trial_span_in_minutes() {
    // rule REPORT-7
    let mut state = short13();
    let l = state.lineages.get_mut(L).unwrap();
    l.frozen.manifest.public.run.class = RunClass::PublicReproduction;
    for (i, c) in l
        .groups
        .get_mut("r2")
        .unwrap()
        .cases
        .values_mut()
        .enumerate()
    {
        let (_, r) = c.result.as_mut().unwrap();
        // Spans inside the launch window (BIND-1: the result's record plus
        // the frozen clock skew of 300 s): 4 minutes for the first case, 2
        // for the others: (4 + 12 x 2) / 13 = 2.1538...
        let from = crate::schema::time::parse_rfc3339_ns(r.started_at.as_deref().unwrap()).unwrap();
        let span_min: i128 = if i == 0 { 4 } else { 2 };
        let to = u64::try_from(from + span_min * 60 * 1_000_000_000).unwrap();
        r.finished_at = Some(crate::schema::time::rfc3339_utc_ns(to));
    }
    let r = registry(&state, None, None, head(), None).unwrap();
    assert_eq!(r.time_per_task.as_ref().unwrap().text, "2.15");
}

#[test]
fn tables_have_a_row_per_request_and_per_case() {
    let state = short13();
    let (requests, cases) = tables(&state);
    // canary 2 + control 26 + r1 26 + r2 26 requests; 1 + 13 x 3 cases.
    assert_eq!(requests.len(), 80);
    assert_eq!(cases.len(), 40);
    let csv = to_csv(&requests);
    assert_eq!(csv.lines().count(), 81);
    assert!(csv.starts_with("lineage,group,group_status,request_id,"));
    assert_eq!(to_csv(&cases).lines().count(), 41);
}

/// A replicated lineage (>= 3 trials) gets the bootstrap interval with the
/// frozen seed and resample count; the pairs are the exact intersection.
/// (The short-13 state with two trial identities added in memory: only t1
/// was run, so t2 and t3 are excluded and the 13 t1 pairs remain.)
#[test]
fn a_replicated_lineage_gets_the_frozen_bootstrap_interval() {
    // rule REPORT-4
    let mut state = short13();
    let m = &mut state.lineages.get_mut(L).unwrap().frozen.manifest.public;
    m.cases.trials = vec!["t1".into(), "t2".into(), "t3".into()];
    m.method.interval_seed = 7;
    m.method.interval_resamples = 1000;
    let rep = build(&state, Some(L), head()).unwrap();
    let p = &rep.paired[0];
    assert_eq!(
        (p.round.as_str(), p.pairs, p.excluded.len()),
        ("r1", 13, 26)
    );
    assert!(
        p.excluded[0].why.contains("not_started"),
        "{:?}",
        p.excluded[0]
    );
    let iv = p.interval.as_ref().unwrap();
    assert_eq!((iv.seed, iv.resamples, iv.pairs), (7, 1000, 13));
    assert_eq!(
        (iv.lower_pp.text.as_str(), iv.upper_pp.text.as_str()),
        ("0.00", "0.00")
    );
    let md = render_markdown(&rep);
    assert!(
        md.contains("95% interval of the mean delta: [0.00, 0.00] pp"),
        "{md}"
    );
    // Not the same identities: no cost claim.
    assert!(!rep.groups[1].comparable);
}

/// The money rule: every amount of the markdown is to the cent (two
/// decimals), the JSON keeps exact micro-USD, and a footnote names the
/// exact amounts where rounding hides a difference (issue 21).
#[test]
fn the_markdown_shows_cents_and_footnotes_hidden_differences() {
    let state = short13();
    let rep = build(&state, None, head()).unwrap();
    let md = render_markdown(&rep);
    let r1 = &rep.groups[1];
    let cost = r1.cost.as_ref().unwrap();
    assert_eq!(
        (cost.micro_usd, cost.usd.as_str(), cost.usd_cents.as_str()),
        (451_750, "0.45175", "0.45")
    );
    // Every `$` amount in the markdown has exactly two decimals.
    for (index, _) in md.match_indices('$') {
        let amount: String = md[index + 1..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let footnoted = md[..index]
            .rsplit('\n')
            .next()
            .is_some_and(|line| line.starts_with("Rounded to the cent"));
        if amount.is_empty() || footnoted {
            continue;
        }
        let decimals = amount.split_once('.').map_or(0, |(_, d)| d.len());
        let line = md[index..].lines().next().unwrap();
        assert_eq!(decimals, 2, "${amount} in {line}");
    }
    // r1 and r2 cost per success: $0.045175 and $0.0465473, both $0.05.
    assert!(
        md.contains(
            "$0.05 stands for r1 cost per success $0.045175, r2 cost per success $0.046547"
        ),
        "{md}"
    );
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["groups"][1]["cost"]["micro_usd"], 451_750);
}

/// The cache-read sensitivity: control (strong only, frozen-price basis)
/// at 0% is every prompt token at $3/M plus output at $15/M, an upper
/// bound of every share; the rounds' economy route has no cache-read price,
/// so their shares above 0% are not priced (SETTLE-3), and the canary's
/// own notional series has a row too.
#[test]
fn every_notional_amount_has_a_cache_read_sensitivity() {
    // rule SETTLE-6, SETTLE-3, CLASS-5
    let state = short13();
    let rep = build(&state, None, head()).unwrap();
    let sensitivity = &rep.cache_sensitivity;
    assert_eq!(sensitivity.shares_pct, [0, 25, 50, 75, 90, 100]);
    let groups: Vec<(&str, SensitivitySource)> = sensitivity
        .rows
        .iter()
        .map(|row| (row.group.as_str(), row.source))
        .collect();
    assert_eq!(
        groups,
        [
            ("canary-1", SensitivitySource::NotionalSeries),
            ("control", SensitivitySource::FrozenPriceBasis),
            ("r1", SensitivitySource::FrozenPriceBasis),
            ("r2", SensitivitySource::FrozenPriceBasis),
        ]
    );
    let control = &sensitivity.rows[1];
    // 164,417 uncached + 897,841 cache read prompt tokens; 16,423 output.
    assert_eq!(control.prompt_tokens, 164_417 + 897_841);
    assert_eq!(control.observed.micro_usd, 1_008_949);
    let zero = control.costs[0].cost.as_ref().unwrap().micro_usd;
    // (164,417 + 897,841) x 3 + 16,423 x 15 = 3,186,774 + 246,345.
    assert_eq!(zero, 3_433_119);
    let all_read = control.costs[5].cost.as_ref().unwrap().micro_usd;
    // 1,062,258 x 0.3 = 318,677.4 -> + 246,345 = 565,022.4 -> 565,022.
    assert_eq!(all_read, 565_022);
    assert!(control.zero_cache_upper_bound);
    assert!(control
        .costs
        .windows(2)
        .all(|pair| pair[0].cost.as_ref().unwrap().micro_usd
            >= pair[1].cost.as_ref().unwrap().micro_usd));
    assert!(zero >= control.observed.micro_usd);
    let r1 = &sensitivity.rows[2];
    assert!(r1.costs[0].cost.is_some());
    assert!(r1.costs[1..].iter().all(|share| share.cost.is_none()));
    assert!(
        r1.notes[0].contains("qwen/qwen3-coder-30b has no cache-read price"),
        "{:?}",
        r1.notes
    );
    let md = render_markdown(&rep);
    assert!(md.contains("### Cache-read sensitivity of the notional amounts"));
    assert!(
        md.contains("A what-if of notional amounts: never cash spent"),
        "CLASS-5: no cash-spend claim from notional costs"
    );
    assert!(
        md.contains("| 0% cache reads (imputed upper bound) | 25% |"),
        "{md}"
    );
    assert!(md.contains("| control | cost on the frozen-price basis | 26 | 1062258 | 897841 (84.52%) | $1.01 | $3.43 |"), "{md}");
}

/// A failing `requests` row shows the request ids behind its counts in
/// the report (section 8 and the diagnostics), from the joins projection.
#[test]
fn a_failing_join_row_lists_its_request_ids_in_the_report() {
    // rule JOIN-1
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/scenarios/rejected-join-extra-usage.toml"
    ))
    .unwrap();
    let spec: crate::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
    let state = crate::testkit::scenario::run(&spec).unwrap().0.state;
    let rep = build(&state, None, head()).unwrap();
    let md = render_markdown(&rep);
    let expected =
        "T != U (missing usage 0, extra usage 1); extra usage: control-fix-git-t1-0-1-extra";
    assert!(
        md.contains(&format!("- requests FAILS: {expected}")),
        "{md}"
    );
    assert!(
        md.contains(&format!("  - requests FAILS: {expected}")),
        "{md}"
    );
    let json = serde_json::to_value(&rep).unwrap();
    let audit = json["settlement"]
        .as_array()
        .unwrap()
        .iter()
        .find(|audit| audit["group"] == "control")
        .unwrap();
    let row = audit["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["gate"] == "requests")
        .unwrap();
    assert_eq!(
        row["ids"],
        serde_json::json!([{ "set": "extra_usage", "ids": ["control-fix-git-t1-0-1-extra"] }])
    );
}

/// Class-aware wording for every run class (CLASS-2, CLASS-5): the
/// go/no-go line speaks for exactly the class's claim, the score is
/// "official" only for a public reproduction, and no line of the report
/// makes a claim another class owns (a replicated experiment is not
/// "mechanism evidence"; a public reproduction is not "not a public score").
#[test]
fn every_run_class_words_its_claims_as_its_class_allows() {
    // rule CLASS-2, CLASS-5
    for class in RunClass::ALL {
        let mut state = short13();
        let m = &mut state.lineages.get_mut(L).unwrap().frozen.manifest.public;
        m.run.class = *class;
        let trials = match class {
            RunClass::ReplicatedExperiment => 3,
            RunClass::PublicReproduction => 5,
            _ => 1,
        };
        m.cases.trials = (1..=trials).map(|trial| format!("t{trial}")).collect();
        m.method.interval_resamples = 100;
        if trials > 1 {
            m.method.interval_method = "95% percentile bootstrap over case pairs".into();
        }
        let rep = build(&state, Some(L), head()).unwrap();
        let md = render_markdown(&rep);
        let scope = &rep.claim.claim_scope;
        assert!(
            rep.go_no_go.line.contains(&format!("({scope})")),
            "{class:?}: {}",
            rep.go_no_go.line
        );
        assert!(md.contains(&format!("is made {scope}")), "{class:?}");
        let (must, never): (&[&str], &[&str]) = match class {
            RunClass::Canary => (
                &["as a canary", "no quality or cost claim", "score over N"],
                &[
                    "official score",
                    "mechanism evidence on these tasks",
                    "reproducible Terminal-Bench 2.1 result over",
                ],
            ),
            RunClass::MechanismIteration => (
                &[
                    "as mechanism evidence on these tasks, not a public score",
                    "score over N",
                ],
                &[
                    "official score",
                    "as a replicated experiment",
                    "reproducible Terminal-Bench 2.1 result over",
                ],
            ),
            RunClass::ReplicatedExperiment => (
                &[
                    "as a replicated experiment on these 13 tasks x 3 trials",
                    "not a reproducible Terminal-Bench result",
                    "score over N",
                ],
                &[
                    "official score",
                    "mechanism evidence",
                    "not a public score",
                    "reproducible Terminal-Bench 2.1 result over",
                ],
            ),
            RunClass::PublicReproduction => (
                &[
                    "as a reproducible Terminal-Bench 2.1 result over N = 65",
                    "official score",
                ],
                &["not a public score", "mechanism evidence", "score over N |"],
            ),
        };
        for phrase in must {
            assert!(md.contains(phrase), "{class:?}: {phrase:?} missing");
        }
        for phrase in never {
            let line = md.lines().find(|line| line.contains(phrase));
            assert!(line.is_none(), "{class:?}: {phrase:?} in {line:?}");
        }
        assert!(render_svg(&rep).contains(&format!("{} (%)", rep.claim.score_name)));
    }
}

#[test]
fn section_3_names_the_central_host_and_where_it_was_observed() {
    use crate::method::projections::At;
    use crate::schema::central::{CentralAction, CentralInstance};
    let mut state = short13();
    let head_seq = state.head_seq.unwrap();
    let md = render_markdown(&build(&state, None, head()).unwrap());
    assert!(
        !md.contains("central host observed"),
        "an operator-provisioned host is not observed"
    );
    let l = state.lineages.get_mut(L).unwrap();
    l.central_launch = Some(crate::schema::manifest::CentralLaunch {
        subnet_id: "subnet-0a".into(),
        security_group_ids: vec!["sg-0a".into()],
        ready_timeout_sec: 60,
    });
    let m = l.frozen.manifest.public.clone();
    let host = CentralInstance {
        id: "i-0c0ffee".into(),
        ami: m.central.ami.clone(),
        instance_type: m.central.instance_type.clone(),
        state: "running".into(),
        tags: [
            (m.tags.run_key.clone(), m.tags.run_value.clone()),
            (m.tags.role_key.clone(), m.central.role_tag_value.clone()),
        ]
        .into(),
        private_ip: Some("10.20.0.10".into()),
        ..CentralInstance::default()
    };
    let seen = crate::method::central::observation(
        &m,
        CentralAction::Launched,
        "i-0c0ffee",
        Ok(Some(&host)),
        "us-east-1",
    );
    let l = state.lineage(None).unwrap().clone();
    let down = crate::method::central::teardown(
        &l,
        "i-0c0ffee",
        "i-0c0ffee: ok: shutting-down",
        Ok(0),
        "us-east-1",
    );
    state.apply(
        At {
            seq: head_seq + 1,
            utc_ns: u64::MAX - 1,
        },
        &crate::schema::events::Event::CheckRecorded(seen),
    );
    state.apply(
        At {
            seq: head_seq + 2,
            utc_ns: u64::MAX,
        },
        &crate::schema::events::Event::CheckRecorded(down),
    );
    let md = render_markdown(&build(&state, None, head()).unwrap());
    let want = format!(
        "i-0c0ffee {} {} running at 10.20.0.10 (launched, us-east-1) at seq {}: pass",
        m.central.ami,
        m.central.instance_type,
        head_seq + 1
    );
    assert!(
        md.contains(&want),
        "section 3 names the observed host: {want}\n{md}"
    );
    assert!(
        md.contains(&format!(
            "i-0c0ffee at seq {}: 0 live left, pass",
            head_seq + 2
        )),
        "{md}"
    );
}

#[path = "chart_tests.rs"]
mod chart;

/// CLASS-4 (issue 31 item 3): one lineage's trials share each round's one
/// policy database, so a replicated lineage is never a replicated
/// experiment: its go/no-go is not GO and its claim refuses it, naming the
/// rule and the database; a one-trial lineage is not judged by it.
#[test]
fn a_replicated_lineage_sharing_one_policy_database_is_refused_by_class_4() {
    let state = short13();
    let one_trial = build(&state, Some(L), head()).unwrap();
    assert!(
        !one_trial
            .go_no_go
            .reasons
            .iter()
            .any(|r| r.contains("CLASS-4")),
        "CLASS-4 judges replicated lineages only: {:?}",
        one_trial.go_no_go.reasons
    );
    let mut state = short13();
    let m = &mut state.lineages.get_mut(L).unwrap().frozen.manifest.public;
    m.cases.trials = vec!["t1".into(), "t2".into(), "t3".into()];
    m.run.class = RunClass::ReplicatedExperiment;
    let db = m
        .groups
        .iter()
        .find(|g| g.name == "r1")
        .unwrap()
        .db_path
        .clone();
    let rep = build(&state, Some(L), head()).unwrap();
    assert_ne!(rep.go_no_go.decision, model::Decision::Go, "CLASS-4");
    let reason = rep
        .go_no_go
        .reasons
        .iter()
        .find(|r| r.contains("CLASS-4"))
        .unwrap_or_else(|| panic!("CLASS-4 named: {:?}", rep.go_no_go.reasons));
    assert!(
        reason.contains(&db) && reason.contains("3 trials"),
        "CLASS-4: {reason}"
    );
    assert!(
        rep.claim
            .refused_claims
            .iter()
            .any(|c| c.starts_with("a replicated experiment:") && c.contains("CLASS-4")),
        "CLASS-4: the claim refuses it: {:?}",
        rep.claim.refused_claims
    );
}

/// CLASS-1 (issue 31 item 1): the report names a task left out before the
/// freeze as excluded before the run, with its reason, in section 3 and
/// the JSON form; a lineage without one prints no such line.
#[test]
fn a_task_excluded_before_the_run_is_named_by_the_report() {
    let state = short13();
    let rep = build(&state, Some(L), head()).unwrap();
    assert!(rep.frozen.excluded_before_run.is_empty());
    assert!(!render_markdown(&rep).contains("Excluded before the run"));
    let mut state = short13();
    state.lineages.get_mut(L).unwrap().excluded_tasks =
        vec![crate::schema::manifest::ExcludedTask {
            task: "sqlite-db-truncate".into(),
            reason: "its provider answered 502 in preflight".into(),
        }];
    let rep = build(&state, Some(L), head()).unwrap();
    let md = render_markdown(&rep);
    assert!(
        md.contains("- Excluded before the run, not in the task list (CLASS-1): sqlite-db-truncate (its provider answered 502 in preflight)"),
        "CLASS-1: {md}"
    );
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(
        json["frozen"]["excluded_before_run"][0][0], "sqlite-db-truncate",
        "CLASS-1"
    );
}
