//! BitRouter's report 001 as published (issue 31): the recorded ledger
//! `replay-tests/ledgers/report-001.jsonl` (88 tasks x 1 trial, a mechanism
//! iteration, one task excluded before the run) imports, replays and
//! reports every figure 001 published, checked against
//! `replay-tests/scenarios/report-001.published.toml`, which was written by
//! hand from 001's text: money to the cent, percentages to two places,
//! counts exactly. A figure 001 derived (a share, a difference) is derived
//! here from the report's own numbers with the report's rounding.

use benchledger::method::projections::replay_scanning;
use benchledger::report::{self, cents, LedgerHead, Ratio};
use serde_json::Value;

use super::corpus::import;
use super::{read, root};

const LEDGER: &str = "report-001";

fn expected() -> toml::Value {
    let path = root().join("replay-tests/scenarios/report-001.published.toml");
    toml::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The report's JSON form, as `report --format json` prints it.
fn report_json() -> Value {
    let (_t, ledger) = import(LEDGER);
    let state = replay_scanning(&ledger).unwrap();
    let h = ledger.head().unwrap();
    let head = LedgerHead {
        head_seq: h.seq,
        head_hash: hex::encode(h.hash),
    };
    serde_json::to_value(report::build(&state, None, head).unwrap()).unwrap()
}

fn find<'a>(list: &'a Value, key: &str, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|v| v[key] == name)
        .unwrap_or_else(|| panic!("no {key} = {name} in {list}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn s(v: &toml::Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not text: {v}"))
}

fn n(v: &toml::Value) -> u64 {
    v.as_integer().unwrap_or_else(|| panic!("not a count: {v}")) as u64
}

/// `num / den x 100` to two places, half away from zero (REPORT-2's rule).
fn pct(num: i128, den: i128) -> String {
    Ratio::new(num * 100, den, 2).unwrap().text
}

/// A group's requests and tokens, from its section-8 route rows.
struct Usage {
    requests: u64,
    strong: u64,
    weak: u64,
    input: u64,
    output: u64,
}

fn usage(report: &Value, group: &str) -> Usage {
    let audit = find(&report["settlement"], "group", group);
    let mut out = Usage {
        requests: 0,
        strong: 0,
        weak: 0,
        input: 0,
        output: 0,
    };
    for route in audit["routes"].as_array().unwrap() {
        let requests = u(&route["requests"]);
        out.requests += requests;
        match route["route"].as_str().unwrap() {
            "openai-codex:gpt-5.5" => out.strong += requests,
            "bitrouter:moonshotai/kimi-k2.7-code" => out.weak += requests,
            other => panic!("{group}: a route 001 did not have: {other}"),
        }
        out.input += u(&route["uncached_input_tokens"])
            + u(&route["cache_read_tokens"])
            + u(&route["cache_write_tokens"]);
        out.output += u(&route["output_tokens"]) + u(&route["reasoning_tokens"]);
    }
    out
}

/// 001's Results table, row by row: passed, score, requests, GPT-5.5 and
/// Kimi calls, Kimi share, input/output/total tokens, cost, cost vs
/// control, cost per success.
fn check_results_table(report: &Value, want: &toml::Value) {
    for (group, w) in want["groups"].as_table().unwrap() {
        let row = find(&report["groups"], "group", group);
        let got = usage(report, group);
        let at = |what: &str| format!("REPORT-1/2: 001's {group} {what}");
        assert_eq!(row["status"], "accepted", "{}", at("status"));
        assert_eq!(u(&row["passed"]), n(&w["passed"]), "{}", at("passed"));
        assert_eq!(u(&row["total"]), 88, "{}", at("N"));
        assert_eq!(
            row["score_pct"]["text"],
            s(&w["score_pct"]),
            "{}",
            at("score")
        );
        assert_eq!(u(&row["requests"]), n(&w["requests"]), "{}", at("requests"));
        assert_eq!(
            got.requests,
            n(&w["requests"]),
            "{}",
            at("requests settled")
        );
        assert_eq!(
            u(&row["strong_requests"]),
            n(&w["gpt55_calls"]),
            "{}",
            at("GPT-5.5 calls")
        );
        assert_eq!(
            got.strong,
            n(&w["gpt55_calls"]),
            "{}",
            at("GPT-5.5 route rows")
        );
        assert_eq!(got.weak, n(&w["kimi_calls"]), "{}", at("Kimi calls"));
        let share = pct(i128::from(got.weak), i128::from(got.requests));
        assert_eq!(share, s(&w["kimi_share_pct"]), "{}", at("Kimi share"));
        assert_eq!(got.input, n(&w["input_tokens"]), "{}", at("input tokens"));
        assert_eq!(
            got.output,
            n(&w["output_tokens"]),
            "{}",
            at("output tokens")
        );
        assert_eq!(
            got.input + got.output,
            n(&w["total_tokens"]),
            "{}",
            at("total tokens")
        );
        assert_eq!(row["cost"]["usd_cents"], s(&w["cost"]), "{}", at("cost"));
        assert_eq!(
            row["cost_per_success"]["text"],
            s(&w["cost_per_success"]),
            "{}",
            at("cost per success")
        );
        match w.get("cost_vs_control_pct") {
            Some(delta) => {
                assert_eq!(
                    row["cost_delta_pct"]["text"],
                    s(delta),
                    "{}",
                    at("cost vs control")
                );
                let steady = find(&report["economics"]["steady"], "round", group);
                assert_eq!(
                    steady["delta_pct"]["text"],
                    s(delta),
                    "{}",
                    at("steady state")
                );
            }
            None => assert_eq!(group, "control", "only control has no delta"),
        }
    }
}

/// The cost accounting correction: control and r2 at equal cache-read
/// shares, and r2's delta at each.
fn check_equal_cache_share(report: &Value, want: &toml::Value) {
    let w = &want["equal_cache_share"];
    let shares: Vec<u64> = w["shares_pct"].as_array().unwrap().iter().map(n).collect();
    let sensitivity = &report["cache_sensitivity"];
    let listed: Vec<u64> = sensitivity["shares_pct"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(listed, shares, "REPORT-2: 001's shares");
    for (group, key) in [("control", "control"), ("r2", "r2")] {
        let row = find(&sensitivity["rows"], "group", group);
        assert_eq!(row["source"], "frozen_price_basis", "{group}");
        let got: Vec<&str> = row["costs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cost"]["usd_cents"].as_str().unwrap())
            .collect();
        let want: Vec<&str> = w[key].as_array().unwrap().iter().map(s).collect();
        assert_eq!(
            got, want,
            "SETTLE-2: 001's {group} at equal cache-read shares"
        );
    }
    let r2 = find(&sensitivity["equal_share_deltas"], "round", "r2");
    let got: Vec<&str> = r2["at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["delta_pct"]["text"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = w["r2_vs_control_pct"]
        .as_array()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert_eq!(
        got, want,
        "REPORT-2: 001's r2 vs control at equal cache-read shares (28.62%-32.80%)"
    );
}

/// The complete policy lifecycle, r1-r3 against three controls.
fn check_lifecycle(report: &Value, want: &toml::Value) {
    let w = &want["lifecycle"];
    let through = find(&report["economics"]["cumulative"], "through", "r3");
    let row = &through["row"];
    assert_eq!(u(&row["k"]), 3);
    assert_eq!(
        row["policy"]["usd_cents"],
        s(&w["rounds_cost"]),
        "REPORT-3: C_policy(1..3)"
    );
    assert_eq!(
        row["control"]["usd_cents"],
        s(&w["counterfactual_cost"]),
        "REPORT-3: 3 x C_control"
    );
    assert_eq!(
        row["delta_pct"]["text"],
        s(&w["delta_pct"]),
        "REPORT-3: the lifecycle delta"
    );
    assert_eq!(
        u(&row["successes"]),
        n(&w["rounds_successes"]),
        "REPORT-3: successes"
    );
    assert_eq!(
        u(&row["control_successes"]),
        n(&w["counterfactual_successes"]),
        "REPORT-3"
    );
    assert_eq!(
        row["cost_per_success"]["text"],
        s(&w["rounds_cost_per_success"]),
        "REPORT-3"
    );
    assert_eq!(
        row["control_cost_per_success"]["text"],
        s(&w["control_cost_per_success"]),
        "REPORT-3"
    );
}

/// What r2 demonstrated, against control: its Kimi calls by reason, and
/// the differences 001 printed (derived here from the report's numbers).
fn check_r2_against_control(report: &Value, want: &toml::Value) {
    let w = &want["r2_vs_control"];
    let decisions = find(&report["decisions"], "group", "r2");
    let reasons = &decisions["by_reason"];
    assert_eq!(
        u(&reasons["exploration_locked"]),
        n(&w["kimi_calls_from_locks"]),
        "REPORT-5"
    );
    assert_eq!(
        u(&reasons["exploration_trial"]),
        n(&w["kimi_calls_from_exploration"]),
        "REPORT-5"
    );
    let (c, r2) = (usage(report, "control"), usage(report, "r2"));
    let less = |a: u64, b: u64| i128::from(b) - i128::from(a);
    assert_eq!(
        c.strong - r2.strong,
        n(&w["strong_calls_fewer"]),
        "strong calls"
    );
    let row = find(&report["groups"], "group", "r2");
    assert_eq!(
        row["strong_call_delta_pct"]["text"],
        s(&w["strong_calls_pct"]),
        "REPORT-2"
    );
    assert_eq!(c.requests - r2.requests, n(&w["calls_fewer"]), "calls");
    assert_eq!(
        pct(less(c.requests, r2.requests), c.requests.into()),
        s(&w["calls_pct"])
    );
    let (ct, rt) = (c.input + c.output, r2.input + r2.output);
    assert_eq!(ct - rt, n(&w["tokens_fewer"]), "tokens");
    assert_eq!(pct(less(ct, rt), ct.into()), s(&w["tokens_pct"]), "tokens");
    let control = find(&report["groups"], "group", "control");
    let fewer = u(&control["cost"]["micro_usd"]) - u(&row["cost"]["micro_usd"]);
    assert_eq!(
        cents(fewer),
        s(&w["cost_fewer"]),
        "REPORT-2: zero-cache cost fell by"
    );
    assert_eq!(
        row["score_delta_pp"]["text"],
        s(&w["score_pp"]),
        "REPORT-1: score delta"
    );
}

/// The evolution finding and evidence integrity counts, and the frozen
/// shape (88 x 1, the dropped task named).
fn check_evidence(report: &Value, want: &toml::Value) {
    let w = &want["rounds"];
    let r1 = find(&report["decisions"], "group", "r1");
    assert_eq!(
        u(&r1["by_reason"]["exploration_trial"]),
        n(&w["r1_kimi_trials"]),
        "REPORT-5"
    );
    let r3 = find(&report["decisions"], "group", "r3");
    let locked = u(&r3["by_reason"]["exploration_locked"]);
    assert_eq!(locked, n(&w["r3_kimi_calls_from_locks"]), "REPORT-5");
    let groups = ["control", "r1", "r2", "r3"];
    let traces: u64 = groups
        .iter()
        .map(|g| {
            let sets = &find(&report["settlement"], "group", g)["sets"];
            let t = sets
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p[0] == "T")
                .unwrap();
            u(&t[1])
        })
        .sum();
    assert_eq!(
        traces,
        n(&w["request_traces"]),
        "JOIN-1: traces of the accepted groups"
    );
    let outcomes: u64 = groups
        .iter()
        .map(|g| u(&find(&report["groups"], "group", g)["total"]))
        .sum();
    assert_eq!(
        outcomes,
        n(&w["benchmark_outcomes"]),
        "CASE: one outcome per case"
    );
    let frozen = &report["frozen"];
    assert_eq!(
        frozen["trials"],
        serde_json::json!(["t1"]),
        "CLASS-1: one trial per case"
    );
    let excluded = frozen["excluded_before_run"].as_array().unwrap();
    assert_eq!(
        excluded.len(),
        1,
        "CLASS-1: one task dropped before the run"
    );
    assert_eq!(excluded[0][0], s(&want["excluded_before_run"]), "CLASS-1");
    assert_eq!(
        report["claim"]["run_class"], "mechanism_iteration",
        "CLASS-1"
    );
    assert_eq!(
        u(&report["claim"]["cases_per_group"]),
        88,
        "CLASS-1: 88 x 1"
    );
}

/// Every figure report 001 published, from the recorded ledger.
#[test]
fn report_001_as_published_to_the_cent() {
    // rule CLASS-1, REPORT-1, REPORT-2, REPORT-3, REPORT-5
    let want = expected();
    let report = report_json();
    assert_eq!(n(&want["tasks"]) * n(&want["trials_per_task"]), 88);
    check_results_table(&report, &want);
    check_equal_cache_share(&report, &want);
    check_lifecycle(&report, &want);
    check_r2_against_control(&report, &want);
    check_evidence(&report, &want);
}
