//! `benchledger run` end to end on the CLI, over a stand-in launch command
//! (a shell script that writes a Harbor trial tree): gates as observations,
//! render + the frozen validator + `case start`'s decide path, each result
//! ingested as its process exits, close, cleanup audit and seal; killed at
//! many points and rerun, every identity starts at most once.
//!
//! A build without the `aws` feature takes the daemon gates itself and
//! relies on the identity, quota, residue and cleanup observations an `aws`
//! build records (`BENCHLEDGER_AWS_GATES=recorded`): the test appends them.

use super::{Harness, Run, PRIVATE};
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::schema::events::Event;
#[cfg(not(feature = "aws"))]
use benchledger::schema::events::{CleanupAudited, GroupRef, MonitorSampled, Status};
use benchledger::testkit::examples::replace_line;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const L: &str = "short13-kimi-2026-11";
const PASS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
);

/// A daemon stand-in on 127.0.0.1 answering 200 to every request (health
/// and sentinels), for the life of the test process.
fn daemon() -> String {
    benchledger::testkit::http_server::daemon_stand_in()
}

/// Longest a test, or a stand-in it releases, waits for a condition, in
/// seconds.
pub(super) const AWAIT_SEC_MAX: u64 = 60;
/// Pause between two looks at an awaited condition, in milliseconds.
const AWAIT_POLL_MS: u64 = 20;
/// The launch timeout frozen where a stand-in waits for the test
/// (`await_file`), in seconds: past any such wait, so `run` never kills a
/// case the test is about to release (the test manifest's own is 4 s).
pub(super) const AWAITED_LAUNCH_TIMEOUT_SEC: u64 = 2 * AWAIT_SEC_MAX;

/// The default stand-in case's running time, as shell. Elapsed time on
/// purpose, not ordering: it models a case in flight, so the kill and
/// chaos tests land SIGKILLs while cases run and `run` watches a running
/// case. No test waits on it for an order of events; those use
/// `await_file`.
pub(super) const CASE_RUNS: &str = "sleep 0.3\n";

/// Polls `done` every `AWAIT_POLL_MS` until it holds; panics naming `what`
/// once `AWAIT_SEC_MAX` seconds have passed.
pub(super) fn await_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(AWAIT_SEC_MAX);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "waited {AWAIT_SEC_MAX} s for {what}, in vain"
        );
        std::thread::sleep(Duration::from_millis(AWAIT_POLL_MS));
    }
}

/// The stand-ins' shell function `await_file PATH`: returns once PATH
/// exists (the test creates it to let the stand-in go on); past
/// `AWAIT_SEC_MAX` seconds it says so on stderr and exits 97, so a stand-in
/// the test never releases ends rather than hangs.
pub(super) fn await_file_sh() -> String {
    let pause = Duration::from_millis(AWAIT_POLL_MS).as_secs_f64();
    format!(
        "await_file() {{\n  end=$(( $(date +%s) + {AWAIT_SEC_MAX} ))\n  while [ ! -e \"$1\" ]; do\n    if [ \"$(date +%s)\" -gt \"$end\" ]; then\n      echo \"await_file: $1 did not appear within {AWAIT_SEC_MAX} s\" >&2\n      exit 97\n    fi\n    sleep {pause}\n  done\n}}\n"
    )
}

/// Writes the launch stand-in (`$1` the trial name, `$2` the jobs
/// directory): `await_file` defined, `before` run (shell lines, each ending
/// in a newline), then the trial's result copied from the stash and renamed
/// into place.
pub(super) fn write_launch(h: &Harness, before: &str) {
    let root = h.path("").display().to_string();
    let root = root.trim_end_matches('/');
    std::fs::write(
        h.path("launch.sh"),
        format!(
            "#!/bin/sh\nset -e\n{}{before}d=\"$2/{L}-canary-1/$1\"\nmkdir -p \"$d\"\ncp \"{root}/stash/$1.json\" \"$d/result.json.tmp\"\nmv \"$d/result.json.tmp\" \"$d/result.json\"\n",
            await_file_sh()
        ),
    )
    .unwrap();
}

/// The example manifest with `cases` canary identities, the concurrency,
/// every path under the test dir, a validator and a launch stand-in that
/// writes the trial's result from the stash once it has run `CASE_RUNS`.
fn manifest(h: &Harness, cases: u32, concurrency: u32) -> String {
    write_launch(h, CASE_RUNS);
    // A plan that renders differently from v1 (an extra agent kwarg), as
    // every real plan does: BIND-1 must compare against the planned
    // rendering (it once rendered v1 and rejected every such case).
    benchledger::testkit::examples::run_manifest(
        &h.path(""),
        cases,
        concurrency,
        "timeout_sec = 4\n\n[launch.agent_kwargs]\nmax_turns = 7",
    )
    .unwrap()
}

pub(super) fn append(h: &Harness, events: Vec<Event>) {
    let l = Ledger::open(
        &h.ledger(),
        Duration::from_millis(benchledger::limits::LOCK_WAIT_MS_DEFAULT),
    )
    .unwrap();
    let drafts: Vec<Draft> = events
        .into_iter()
        .map(|event| Draft {
            actor: "aws-build".into(),
            event,
            idempotency_key: None,
        })
        .collect();
    l.append(&drafts, benchledger::schema::time::now_utc_ns())
        .unwrap();
}

#[cfg(not(feature = "aws"))]
/// A frozen lineage with canary-1 opened, the AWS observations recorded
/// and a result waiting in the stash for every identity.
pub(super) fn ready(cases: u32, concurrency: u32) -> (Harness, String) {
    ready_with(cases, concurrency, PRIVATE, true)
}

#[cfg(not(feature = "aws"))]
/// As `ready`, frozen with `private`; the AWS observations appended only
/// when `record_aws` (a build without `aws`).
fn ready_with(cases: u32, concurrency: u32, private: &str, record_aws: bool) -> (Harness, String) {
    ready_edited(cases, concurrency, private, record_aws, &|m| m.to_string())
}

/// As `ready`, with lines of the test manifest replaced first: `edits`
/// maps the start of a line to its replacement.
#[cfg_attr(feature = "aws", allow(dead_code))]
pub(super) fn ready_with_lines(
    cases: u32,
    concurrency: u32,
    edits: &[(&str, &str)],
) -> (Harness, String) {
    ready_edited(cases, concurrency, PRIVATE, true, &|m| {
        edits.iter().fold(m.to_string(), |m, (starts, with)| {
            replace_line(&m, starts, with)
        })
    })
}

pub(super) fn ready_edited(
    cases: u32,
    concurrency: u32,
    private: &str,
    record_aws: bool,
    edit: &dyn Fn(&str) -> String,
) -> (Harness, String) {
    let h = Harness::new();
    h.init();
    let public = edit(&manifest(&h, cases, concurrency));
    let frozen_run = h.freeze(&public, private);
    assert_eq!(frozen_run.code, 0, "{}", frozen_run.stderr);
    let frozen = benchledger::method::freeze::freeze(&public, "m", private, "p").unwrap();
    open_group(&h, &frozen, "canary-1");
    if record_aws {
        append(
            &h,
            benchledger::testkit::scenario::aws_observations(&frozen.v1_view(), "canary-1"),
        );
    }
    stage_canary(&h, &frozen, cases);
    (h, daemon())
}

/// `group open GROUP ...` with the frozen daemon start of `group`.
fn open_group(h: &Harness, frozen: &benchledger::schema::events::ManifestFrozenV2, group: &str) {
    let args = open_args(frozen, group);
    h.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

fn open_args(frozen: &benchledger::schema::events::ManifestFrozenV2, group: &str) -> Vec<String> {
    let m = &frozen.manifest.public;
    let g = m.groups.iter().find(|g| g.name == group).unwrap();
    let ports: Vec<String> = g.ports.iter().map(|p| p.to_string()).collect();
    [
        "group",
        "open",
        group,
        "--binary-sha256",
        &m.software.bitrouter_binary_sha256,
        "--config-sha256",
        &m.software.bitrouter_config_sha256[group],
        "--ports",
        &ports.join(","),
        "--db",
        &g.db_path,
        "--out",
        &g.out_dir,
    ]
    .map(String::from)
    .to_vec()
}

/// What the stand-in launch and BitRouter leave for canary-1: a Harbor
/// result per identity in the stash, the group's evidence in its output
/// directory, and its settlement receipt ingested.
fn stage_canary(h: &Harness, frozen: &benchledger::schema::events::ManifestFrozenV2, cases: u32) {
    stage_canary_with(h, frozen, cases, true);
}

/// As `stage_canary`; without `receipt` the usage row is still `pending`
/// and no receipt is ingested (`run` polls for it).
fn stage_canary_with(
    h: &Harness,
    frozen: &benchledger::schema::events::ManifestFrozenV2,
    cases: u32,
    receipt: bool,
) {
    let m = &frozen.manifest.public;
    let g = m.groups.iter().find(|g| g.name == "canary-1").unwrap();
    std::fs::create_dir_all(h.path("stash")).unwrap();
    // Each result binds to its launch (BIND-1): the frozen task checksum,
    // the launched TrialConfig embedded, times inside the launch window
    // (the frozen clock skew is 300 s).
    let now = benchledger::schema::time::now_utc_ns();
    for i in 1..=cases {
        let name = format!("hello-world__canary-1-c{i}");
        let case = benchledger::schema::events::CaseRef {
            task: "hello-world".into(),
            trial: format!("c{i}"),
            replacement: 0,
        };
        let rendered = benchledger::method::trial_config::render_planned(
            m,
            Some(&frozen.plan),
            "canary-1",
            &case,
        )
        .unwrap();
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(PASS).unwrap()).unwrap();
        v["trial_name"] = json!(name);
        v["task_name"] = json!("hello-world");
        v["task_checksum"] = json!("ab".repeat(32));
        v["config"] = rendered.config;
        v["started_at"] = json!(benchledger::schema::time::rfc3339_utc_ns(now));
        v["finished_at"] = json!(benchledger::schema::time::rfc3339_utc_ns(
            now + 1_000_000_000
        ));
        for phase in [
            "environment_setup",
            "agent_setup",
            "agent_execution",
            "verifier",
        ] {
            if v[phase].is_object() {
                v[phase]["started_at"] = v["started_at"].clone();
                v[phase]["finished_at"] = v["finished_at"].clone();
            }
        }
        std::fs::write(
            h.path(&format!("stash/{name}.json")),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
        .unwrap();
    }
    write_evidence(g);
    if !receipt {
        let usage = format!("{}/usage.jsonl", g.out_dir);
        let settled = std::fs::read_to_string(&usage).unwrap();
        std::fs::write(h.path("usage-settled.jsonl"), &settled).unwrap();
        let mut row: Value = serde_json::from_str(settled.trim()).unwrap();
        row["reconciliation_status"] = json!("pending");
        row["reconciliation_attempts"] = json!(0);
        row["authoritative_receipt"] = json!({});
        let pending = format!("{}\n", serde_json::to_string(&row).unwrap());
        std::fs::write(&usage, &pending).unwrap();
        std::fs::write(h.path("usage-pending.jsonl"), &pending).unwrap();
        return;
    }
    // Its settlement receipt, ingested before `run` (the polls are tested
    // in `run_polls_receipts_...`).
    h.ok(&[
        "ingest",
        "receipts",
        "canary-1",
        &format!("{}/receipts.jsonl", g.out_dir),
    ]);
}

/// The group's BitRouter evidence where `run` gathers it (the frozen
/// `trace_path`, `decision_path`, `outcome_path`, and `{out_dir}/usage.jsonl`
/// with receipts beside it): one completed request of the example rows
/// (replay-tests/fixtures/bitrouter), traced, decided, settled `computed`
/// from its authoritative receipt and with its outcome, joined by request
/// id (the canary's BIND-4 proof of the path).
fn write_evidence(g: &benchledger::schema::manifest::Group) {
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter"
    );
    for kind in ["traces", "decisions", "usage", "outcomes", "receipts"] {
        let to = match kind {
            "traces" => g.trace_path.clone(),
            "decisions" => g.decision_path.clone(),
            "outcomes" => g.outcome_path.clone(),
            _ => format!("{}/{kind}.jsonl", g.out_dir),
        };
        std::fs::create_dir_all(std::path::Path::new(&to).parent().unwrap()).unwrap();
        // Inside the frozen prices' effective period (from 2026-11-01).
        let text = std::fs::read_to_string(format!("{fixtures}/{kind}.jsonl"))
            .unwrap()
            .replace("2026-08-20T", "2026-11-20T");
        let mut row: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        if kind == "outcomes" {
            row["session_key"] = json!("hello-world__canary-1-c1");
            row["trial_name"] = json!("hello-world__canary-1-c1");
            row["task_id"] = json!("terminal-bench/hello-world");
        }
        std::fs::write(&to, format!("{}\n", serde_json::to_string(&row).unwrap())).unwrap();
    }
}

pub(super) fn run_cmd(h: &Harness, url: &str, extra: &[&str]) -> std::process::Command {
    let mut c = h.cmd();
    c.args(["run", "canary-1", "--daemon-url", url, "--poll-ms", "20"])
        .args(extra);
    c
}

#[cfg(not(feature = "aws"))]
/// `run canary-1` once, to its exit.
pub(super) fn run_once(h: &Harness, url: &str, extra: &[&str]) -> Run {
    run_cmd(h, url, extra).output().unwrap().into()
}

pub(super) fn records(h: &Harness, kind: &str) -> Vec<Value> {
    h.ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == kind)
        .collect()
}

#[cfg(not(feature = "aws"))]
/// What an `aws` build records: a monitor sample while the cases ran (one
/// sandbox) and, after the close, the cleanup audit: nothing left.
pub(super) fn audit_clean(h: &Harness) {
    let group = GroupRef {
        lineage: L.into(),
        group: "canary-1".into(),
    };
    append(
        h,
        vec![Event::MonitorSampled(MonitorSampled {
            group: group.clone(),
            sandbox_count: 1,
            instance_ids: vec!["i-0standin".into()],
        })],
    );
    append(
        h,
        vec![Event::CleanupAudited(CleanupAudited {
            group,
            region: "us-east-1".into(),
            identity: "arn:aws:sts::***:assumed-role/bench-operator/***".into(),
            filters: vec!["tag:benchledger-run=short13-kimi-2026-11".into()],
            tracked_instance_ids: vec![],
            found: vec![],
            excluded_central_instance_id: None,
            status: Status::Pass,
            error: None,
        })],
    );
}

/// The seq of the first record of `kind` for trial `trial` of canary-1.
pub(super) fn seq_of(h: &Harness, kind: &str, trial: &str) -> u64 {
    records(h, kind)
        .iter()
        .find(|r| r["payload"]["case"]["trial"] == trial)
        .map(|r| r["seq"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no {kind} of {trial}"))
}

/// How many times each identity started.
pub(super) fn starts(h: &Harness) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in records(h, "case_started.v1") {
        let p = &r["payload"];
        let key = format!("{}/{}", p["case"]["task"], p["case"]["trial"]);
        *out.entry(key).or_default() += 1;
    }
    out
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_without_the_aws_build_or_its_recorded_gates_says_so_and_appends_nothing() {
    // rule GATE-1, rule GATE-6
    let (h, url) = ready(1, 1);
    let before = h.head_bytes();
    let r: Run = run_cmd(&h, &url, &[])
        .env_remove("BENCHLEDGER_AWS_GATES")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("`aws` feature"), "{}", r.stderr);
    assert_eq!(h.head_bytes(), before);
    let r: Run = h
        .cmd()
        .env_remove("BENCHLEDGER_AWS_GATES")
        .args(["case", "start", "canary-1", "hello-world/c1"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert_eq!(h.head_bytes(), before);
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_takes_a_group_from_its_gates_to_a_sealed_verdict() {
    // rule GATE-3, rule GATE-7, rule BIND-7, rule CASE-4, rule CASE-7, rule CASE-9, rule VERDICT-4
    let (h, url) = ready(3, 2);
    // Another group's finished trial in its own job directory: never this
    // group's evidence (run reads only canary-1's job directory).
    let other = h.path(&format!("srv/{L}/jobs/{L}-control/hello-world__control-t1"));
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(PASS, other.join("result.json")).unwrap();
    let plan = h
        .ok(&["run", "canary-1", "--plan", "--json", "--daemon-url", &url])
        .json();
    assert_eq!(plan["cases"]["left"], 3);
    assert_eq!(plan["next"]["step"], "take_gates");
    let r = run_once(&h, &url, &[]);
    // The cleanup audit needs AWS: an `aws` build records it.
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("cleanup audit"), "{}", r.stderr);
    assert_eq!(records(&h, "trial_result_recorded.v2").len(), 3);
    assert_eq!(records(&h, "case_process_exited.v1").len(), 3);
    assert_eq!(records(&h, "group_closed.v1").len(), 1);
    audit_clean(&h);
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("sealed: accepted"), "{}", r.stdout);
    assert_eq!(records(&h, "group_sealed.v1").len(), 1);
    assert!(starts(&h).values().all(|n| *n == 1), "{:?}", starts(&h));
    assert_eq!(starts(&h).len(), 3);
    // The daemon gates were observed before each batch.
    assert!(records(&h, "check_recorded.v1").len() >= 2 * 5);
    let again = h
        .ok(&["run", "canary-1", "--plan", "--json", "--daemon-url", &url])
        .json();
    assert_eq!(again["next"]["step"], "done");
}

#[cfg(not(feature = "aws"))]
/// A canary whose one request is still `pending` after the close, with
/// stand-ins for BitRouter's `reconcile-metering` (counts its attempts) and
/// `metering-usage` (the row carries its authoritative receipt once
/// `settles_after` attempts ran), the budget `attempts` and the grace
/// `grace_sec`.
pub(super) fn polling(settles_after: u32, attempts: u32, grace_sec: u32) -> (Harness, String) {
    let h = Harness::new();
    h.init();
    let root = h.path("").display().to_string();
    let root = root.trim_end_matches('/');
    std::fs::write(
        h.path("reconcile.sh"),
        format!("#!/bin/sh\nn=$(cat {root}/polls 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > {root}/polls\necho \"attempt $n for $1\"\n"),
    )
    .unwrap();
    std::fs::write(
        h.path("export.sh"),
        format!("#!/bin/sh\necho \"$2\" > {root}/since\nn=$(cat {root}/polls 2>/dev/null || echo 0)\nif [ \"$n\" -ge {settles_after} ]; then cp {root}/usage-settled.jsonl \"$1\"; else cp {root}/usage-pending.jsonl \"$1\"; fi\n"),
    )
    .unwrap();
    let public = manifest(&h, 1, 1);
    let public = replace_line(
        &public,
        "usage_export = ",
        &format!("usage_export = [\"sh\", \"{root}/export.sh\", \"{{out}}\", \"{{opened_at}}\"]"),
    );
    let public = replace_line(
        &public,
        "reconcile = ",
        &format!("reconcile = [\"sh\", \"{root}/reconcile.sh\", \"{{request_id}}\"]"),
    );
    let public = replace_line(&public, "receipt_poll_sec = ", "receipt_poll_sec = 1");
    let public = replace_line(
        &public,
        "reconciliation_attempts = ",
        &format!("reconciliation_attempts = {attempts}"),
    );
    let public = replace_line(
        &public,
        "settlement_grace_sec = ",
        &format!("settlement_grace_sec = {grace_sec}"),
    );
    let frozen_run = h.freeze(&public, PRIVATE);
    assert_eq!(frozen_run.code, 0, "{}", frozen_run.stderr);
    let frozen = benchledger::method::freeze::freeze(&public, "m", PRIVATE, "p").unwrap();
    open_group(&h, &frozen, "canary-1");
    append(
        &h,
        benchledger::testkit::scenario::aws_observations(&frozen.v1_view(), "canary-1"),
    );
    stage_canary_with(&h, &frozen, 1, false);
    (h, daemon())
}

#[cfg(not(feature = "aws"))]
fn reconcile_attempts(h: &Harness) -> usize {
    records(h, "artifact_recorded.v1")
        .iter()
        .filter(|r| r["payload"]["role"] == "bitrouter_reconcile")
        .count()
}

#[cfg(not(feature = "aws"))]
/// `run` until it seals (the cleanup audit an `aws` build records is
/// appended when it asks for it); the last run's outcome.
fn run_until_sealed(h: &Harness, url: &str) -> Run {
    let r = run_once(h, url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    audit_clean(h);
    run_once(h, url, &[])
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_polls_receipts_within_the_budget_and_settles_from_the_receipt() {
    // rule SETTLE-8, rule SETTLE-4, rule BIND-4
    let (h, url) = polling(2, 12, 900);
    let r = run_until_sealed(&h, &url);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().next(), Some("canary-1 sealed: accepted"));
    // then the verdict table, as `gate` prints it
    assert!(r.stdout.contains("\n  requests      holds"), "{}", r.stdout);
    // Two attempts, each recorded with its output; the receipt the second
    // left in the usage export ingested as a receipt.
    assert_eq!(reconcile_attempts(&h), 2);
    assert_eq!(records(&h, "receipt_recorded.v1").len(), 1);
    let out = std::fs::read_dir(h.path("srv/short13-kimi-2026-11/canary-1/out/receipt-polls"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".attempt-"))
        .count();
    // Each attempt's argv (recorded before it ran) and its output.
    assert_eq!(out, 4);
    let outputs = records(&h, "artifact_recorded.v1")
        .iter()
        .filter(|r| r["payload"]["role"] == "bitrouter_reconcile_output")
        .count();
    assert_eq!(outputs, 2);
    // The usage export scanned from the group's open, whole seconds
    // (`{opened_at}`; JOIN-2: a window bounds a scan).
    let opened = records(&h, "group_opened.v1")[0]["recorded_at_utc_ns"]
        .as_u64()
        .unwrap();
    let since = std::fs::read_to_string(h.path("since")).unwrap();
    assert_eq!(
        since.trim_end(),
        benchledger::schema::time::rfc3339_utc_sec(opened)
    );
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_signs_the_seal_with_a_frozen_operator_key_and_refuses_another_up_front() {
    // rule TRUST-1, rule TRUST-3
    let (h, url) = ready(1, 1);
    let (alice, bob) = (h.example_key("alice"), h.example_key("bob"));
    let before = h.head_bytes();
    let r = run_once(&h, &url, &["--key", &bob]);
    assert_eq!(
        r.code, 3,
        "bob is the reviewer, not an operator: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("TRUST-3") && r.stderr.contains("--key"),
        "{}",
        r.stderr
    );
    assert_eq!(h.head_bytes(), before, "nothing ran");
    let r = run_once(&h, &url, &["--key", &alice]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    audit_clean(&h);
    let r = run_once(&h, &url, &["--key", &alice]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cps = records(&h, "checkpoint_recorded.v1");
    let sealed = cps
        .iter()
        .find(|c| !c["payload"]["sealed"].is_null())
        .expect("the seal's checkpoint");
    assert!(
        sealed["payload"]["signer"]
            .as_str()
            .unwrap()
            .starts_with("alice+"),
        "{sealed}"
    );
    assert!(sealed["payload"]["note"]
        .as_str()
        .unwrap()
        .contains("\n— alice "));
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_sends_the_sentinels_through_the_sentinel_url_and_health_to_the_daemon() {
    // rule GATE-3: sentinel request ids never enter a group's sets, so the
    // sentinels can go through another daemon (the preflight one).
    let (h, url) = ready(1, 1);
    let preflight = daemon();
    let r = run_once(&h, &url, &["--sentinel-url", &preflight]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    let checks = records(&h, "check_recorded.v1");
    let text = |r: &Value| r.to_string();
    let sentinels: Vec<_> = checks
        .iter()
        .filter(|r| text(r).contains("provider_sentinel"))
        .collect();
    let health: Vec<_> = checks
        .iter()
        .filter(|r| text(r).contains("daemon_health"))
        .collect();
    assert!(!sentinels.is_empty() && !health.is_empty(), "{checks:?}");
    assert!(sentinels
        .iter()
        .all(|r| text(r).contains(&preflight) && !text(r).contains(&url)));
    assert!(health.iter().all(|r| text(r).contains(&url)));
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_stops_polling_at_the_attempt_budget_and_the_group_is_not_accepted() {
    // rule SETTLE-8, rule SETTLE-4
    // The receipt would come on the 5th attempt; the budget is 2 and the
    // grace 6 s: 2 attempts, then the grace ends with the request pending.
    let (h, url) = polling(5, 2, 6);
    let r = run_until_sealed(&h, &url);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(reconcile_attempts(&h), 2);
    assert!(records(&h, "receipt_recorded.v1").is_empty());
    // The settlement row fails on the pending request (and so does the
    // canary's BIND-4 requests row, which VERDICT-1 ranks first).
    let sealed = records(&h, "group_sealed.v1");
    let rows = sealed[0]["payload"]["rows"].as_array().unwrap();
    let settlement = rows.iter().find(|r| r["gate"] == "settlement").unwrap();
    assert_eq!(settlement["holds"], false, "{settlement}");
    assert!(
        settlement["evidence"].as_str().unwrap().contains("Pending"),
        "{settlement}"
    );
    assert_ne!(sealed[0]["payload"]["status"], "accepted");
    // Rerun after the seal: nothing more is polled.
    let again = run_once(&h, &url, &[]);
    assert_eq!(reconcile_attempts(&h), 2, "{}", again.stderr);
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_killed_while_polling_never_exceeds_the_attempt_budget() {
    // rule SETTLE-8, rule CASE-4
    let mut seed: u64 = 20_261_202;
    for round in 0..3 {
        // The receipt comes with the 3rd attempt; the budget is 3.
        let (h, url) = polling(3, 3, 8);
        for _ in 0..12 {
            let after = kill_delay(&mut seed, 1500);
            if killed_after(run_cmd(&h, &url, &[]), after).is_some() {
                break;
            }
        }
        let r = run_until_sealed(&h, &url);
        let recorded = reconcile_attempts(&h);
        let ran: usize =
            std::fs::read_to_string(h.path("polls")).map_or(0, |t| t.trim().parse().unwrap());
        // Every attempt that ran was recorded first; a kill can only
        // leave a recorded attempt that never ran.
        assert!(recorded <= 3, "round {round}: {recorded} attempts recorded");
        assert!(
            ran <= recorded,
            "round {round}: {ran} ran, {recorded} recorded"
        );
        let status = records(&h, "group_sealed.v1")[0]["payload"]["status"].clone();
        // Accepted exactly when the receipt came (unless a kill fell
        // between the case's start and its launch: rejected_runtime).
        if records(&h, "case_invalidated.v1").is_empty() {
            assert_eq!(
                status == "accepted",
                ran >= 3,
                "round {round}: {status} after {ran} polls"
            );
        }
        assert_eq!(r.code == 0, status == "accepted", "{}", r.stderr);
        h.ok(&["verify"]);
    }
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_kills_a_launch_past_the_frozen_timeout_and_records_its_exit() {
    // rule CASE-3, rule CASE-8
    let (h, url) = ready(1, 1);
    // The launch hangs; the frozen launch.timeout_sec of the test manifest
    // is 4 s. Elapsed time on purpose: the case must outlive its deadline.
    std::fs::write(h.path("launch.sh"), "#!/bin/sh\nexec sleep 120\n").unwrap();
    let t0 = Instant::now();
    let r = run_until_sealed(&h, &url);
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(r.code, 1, "{}", r.stderr);
    let exits = records(&h, "case_process_exited.v1");
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!(exits[0]["payload"]["signal"], 9, "{exits:?}");
    let sealed = records(&h, "group_sealed.v1");
    assert_eq!(
        sealed[0]["payload"]["status"], "rejected_runtime",
        "{sealed:?}"
    );
}

#[test]
#[cfg(not(feature = "aws"))]
fn ctrl_c_stops_launching_waits_for_the_running_case_and_says_to_run_again() {
    // rule CASE-4, rule CASE-3
    let (h, url) = ready_with_lines(
        2,
        1,
        &[(
            "timeout_sec = 4",
            &format!("timeout_sec = {AWAITED_LAUNCH_TIMEOUT_SEC}"),
        )],
    );
    // Each case says it runs, then ends only once the test releases it.
    let (running, release) = (h.path("running"), h.path("release"));
    write_launch(
        &h,
        &format!(
            ": > '{}'\nawait_file '{}'\n",
            running.display(),
            release.display()
        ),
    );
    let child = run_cmd(&h, &url, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    await_until("the first case's process to run", || running.exists());
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // The case ends only after `run` took the signal (it is no longer
    // pending), so its end cannot overtake the interrupt.
    await_until("`run` to take SIGINT", || {
        !signal_pending(child.id(), SIGINT)
    });
    std::fs::write(&release, "").unwrap();
    let r: Run = child.wait_with_output().unwrap().into();
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("was interrupted"), "{}", r.stderr);
    // The running case ended, its exit and result recorded; nothing more
    // was launched.
    assert_eq!(starts(&h).len(), 1, "{:?}", starts(&h));
    assert_eq!(records(&h, "case_process_exited.v1").len(), 1);
    assert_eq!(records(&h, "trial_result_recorded.v2").len(), 1);
    // Run again: it continues with the other identity.
    let r = run_once(&h, &url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    assert_eq!(starts(&h).len(), 2, "{:?}", starts(&h));
    assert!(starts(&h).values().all(|n| *n == 1));
}

/// SIGINT's number (signal(7), the same on every Linux architecture).
#[cfg(not(feature = "aws"))]
const SIGINT: u32 = 2;

/// Whether signal `sig` is pending for process `pid`, for the process or
/// any of its threads (`ShdPnd` and each thread's `SigPnd` in /proc): once
/// it is not, a thread has taken it and runs the handler.
#[cfg(not(feature = "aws"))]
fn signal_pending(pid: u32, sig: u32) -> bool {
    let bit = 1u64 << (sig - 1);
    let pending = |status: &str, field: &str| {
        status
            .lines()
            .filter_map(|l| l.strip_prefix(field))
            .any(|mask| u64::from_str_radix(mask.trim(), 16).unwrap() & bit != 0)
    };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false; // gone: nothing pending
    };
    tasks.filter_map(Result::ok).any(|t| {
        std::fs::read_to_string(t.path().join("status"))
            .is_ok_and(|s| pending(&s, "ShdPnd:") || pending(&s, "SigPnd:"))
    })
}

#[test]
#[cfg(not(feature = "aws"))]
fn the_readme_walk_runs_as_written() {
    // rule FREEZE-7, rule GATE-5, rule LINEAGE-2, rule LINEAGE-3, rule VERDICT-4
    // README "Driving a group with `run`", command for command on the
    // recorded-gates path (the AWS observations appended as an `aws` build
    // records them).
    let h = Harness::new();
    h.init();
    let public = manifest(&h, 1, 1);
    let (p, q) = h.manifest_files("walk", &public, PRIVATE);
    h.ok(&["manifest", "freeze", &p, "--private", &q]);
    h.sign_off();
    let frozen = benchledger::method::freeze::freeze(&public, "m", PRIVATE, "p").unwrap();
    open_group(&h, &frozen, "canary-1");
    append(
        &h,
        benchledger::testkit::scenario::aws_observations(&frozen.v1_view(), "canary-1"),
    );
    stage_canary(&h, &frozen, 1);
    let url = daemon();
    let plan = h
        .ok(&["run", "canary-1", "--plan", "--daemon-url", &url])
        .stdout;
    assert!(plan.contains("next: "), "{plan}");
    let walk = |group: &str| -> Run {
        h.cmd()
            .args(["run", group, "--private", &q, "--daemon-url", &url])
            .output()
            .unwrap()
            .into()
    };
    let r = walk("canary-1");
    // The cleanup audit is the `aws` build's: recorded, then run again.
    assert_eq!(r.code, 4, "{}", r.stderr);
    audit_clean(&h);
    let r = walk("canary-1");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().next(), Some("canary-1 sealed: accepted"));
    // then the verdict table, as `gate` prints it
    assert!(r.stdout.contains("\n  requests      holds"), "{}", r.stdout);
    // control opens only after the accepted canary (GATE-5, LINEAGE-2).
    open_group(&h, &frozen, "control");
    let plan = h
        .ok(&["run", "control", "--plan", "--json", "--daemon-url", &url])
        .json();
    assert_eq!(plan["next"]["step"], "take_gates", "{plan}");
    assert!(plan["cases"]["left"].as_u64().unwrap() > 0, "{plan}");
    // The walk's feedback line parses; before an accepted r1 it is refused.
    let (before, after) = ("a".repeat(64), "b".repeat(64));
    h.refused(
        &[
            "feedback", "record", "r1", "--before", &before, "--after", &after,
        ],
        3,
        "LINEAGE-3",
    );
    let out = h.path("report");
    let r = h.run(&["report", "show", L, "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(out.join("report.md").is_file());
}

/// One step of the kill tests' generator (an LCG over `seed`): a delay of
/// 20 ms plus up to `spread_ms`.
pub(super) fn kill_delay(seed: &mut u64, spread_ms: u64) -> Duration {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    Duration::from_millis(20 + (*seed >> 33) % spread_ms)
}

/// Spawns `cmd` with its output discarded and SIGKILLs it after `after`;
/// its exit code when it ended first.
pub(super) fn killed_after(mut cmd: std::process::Command, after: Duration) -> Option<i32> {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after(child, after)
}

/// Polls `child` until `after` has passed, then SIGKILLs it. Elapsed time
/// on purpose: the kill tests kill at pseudo-random points in time.
pub(super) fn kill_after(mut child: Child, after: Duration) -> Option<i32> {
    let t0 = Instant::now();
    while t0.elapsed() < after {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

#[cfg(not(feature = "aws"))]
/// What one kill round ended with.
struct KillRound {
    kills: usize,
    accepted: bool,
    /// Cases a kill left without a result: `terminal_invalid` (CASE-3).
    invalidated: usize,
}

#[cfg(not(feature = "aws"))]
/// One ledger of 4 cases under concurrency 2, `run` SIGKILLed at pseudo-
/// random points until it ends on its own; then sealed.
fn kill_round(seed: &mut u64) -> KillRound {
    let (h, url) = ready(4, 2);
    let mut kills = 0;
    let mut code = None;
    for _ in 0..40 {
        let after = kill_delay(seed, 500);
        match killed_after(run_cmd(&h, &url, &[]), after) {
            None => kills += 1,
            Some(c) => {
                code = Some(c);
                break;
            }
        }
        assert!(starts(&h).values().all(|n| *n == 1), "{:?}", starts(&h));
    }
    let code = match code {
        Some(c) => c,
        None => run_cmd(&h, &url, &[])
            .output()
            .unwrap()
            .status
            .code()
            .unwrap(),
    };
    // The cleanup audit needs AWS: an `aws` build records it.
    assert_eq!(code, 4);
    audit_clean(&h);
    let r = run_once(&h, &url, &[]);
    let sealed = records(&h, "group_sealed.v1");
    assert_eq!(sealed.len(), 1);
    let status = sealed[0]["payload"]["status"].as_str().unwrap().to_string();
    let invalidated = records(&h, "case_invalidated.v1").len();
    // Every start carries its launch record in the same append (RUN-3): no
    // kill left a started case whose launch no record names.
    let launched: BTreeMap<u64, Value> = records(&h, "case_launched.v1")
        .into_iter()
        .map(|r| (r["seq"].as_u64().unwrap(), r))
        .collect();
    for st in records(&h, "case_started.v1") {
        let next = st["seq"].as_u64().unwrap() + 1;
        let l = launched.get(&next);
        assert_eq!(
            l.map(|l| (&l["recorded_at_utc_ns"], &l["payload"]["case"])),
            Some((&st["recorded_at_utc_ns"], &st["payload"]["case"])),
            "RUN-3: case_started at {} without its case_launched",
            next - 1
        );
    }
    // A kill before the start's append leaves nothing started (its gate
    // exits having run nothing); after it, a recorded launch the rerun
    // adopts, opening its gate if the kill came first (RUN-3). Every case
    // counts: the group seals accepted, as uninterrupted.
    assert_eq!(invalidated, 0, "RUN-3: {}", r.stderr);
    assert_eq!((r.code, status.as_str()), (0, "accepted"), "{}", r.stderr);
    let s = starts(&h);
    assert!(s.values().all(|n| *n == 1), "{s:?}");
    assert_eq!(s.len(), 4, "{s:?}");
    h.ok(&["verify"]);
    KillRound {
        kills,
        accepted: invalidated == 0,
        invalidated,
    }
}

#[test]
#[cfg(not(feature = "aws"))]
fn run_killed_at_many_points_and_rerun_starts_every_identity_at_most_once_and_seals() {
    // rule CASE-2, rule CASE-3, rule CASE-4
    // At least 20 kill points (BENCHLEDGER_RUN_KILLS=200 by hand).
    let want: usize = super::env_number("BENCHLEDGER_RUN_KILLS", 20);
    let mut seed: u64 = super::env_number("BENCHLEDGER_RUN_KILL_SEED", 17);
    let first_seed = seed;
    let t0 = Instant::now();
    let (mut kills, mut rounds, mut accepted, mut invalidated) = (0, 0, 0, 0);
    while kills < want {
        let round = kill_round(&mut seed);
        kills += round.kills;
        rounds += 1;
        accepted += usize::from(round.accepted);
        invalidated += round.invalidated;
    }
    // The figures for tools/RELIABILITY.md (`-- --nocapture`).
    eprintln!(
        "run kill-and-rerun: {kills} kills, seed {first_seed}, {rounds} groups sealed ({accepted} accepted, {} rejected_runtime), {} identities each started exactly once ({invalidated} left terminal_invalid by a kill), {:.1} s",
        rounds - accepted,
        rounds * 4,
        t0.elapsed().as_secs_f64()
    );
}

/// The AWS verbs and `run` against the moto server (tools/moto/test-aws.sh
/// starts it and exports BENCHLEDGER_AWS_ENDPOINT_URL).
#[cfg(feature = "aws")]
mod moto {
    use super::*;

    #[path = "central.rs"]
    mod central;
    use std::io::{Read, Write as _};

    /// moto's caller identity.
    const MOTO_PRINCIPAL: &str = "arn:aws:sts::123456789012:user/moto";

    /// Every test here shares one moto server and one run tag: the tests
    /// that change what the others would observe (the vCPU quota, a stray
    /// run-tagged volume) hold this lock alone, the others together.
    static MOTO: std::sync::RwLock<()> = std::sync::RwLock::new(());

    fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
        MOTO.read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
        MOTO.write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn endpoint() -> String {
        std::env::var("BENCHLEDGER_AWS_ENDPOINT_URL")
            .expect("moto tests need BENCHLEDGER_AWS_ENDPOINT_URL: run tools/moto/test-aws.sh")
    }

    /// One HTTP/1.1 request to the moto server: the response body.
    fn moto_http(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
        let url = endpoint();
        let host = url.trim_start_matches("http://").trim_end_matches('/');
        let mut s = std::net::TcpStream::connect(host).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
            "{method} {path}: {out}"
        );
        body.to_string()
    }

    /// An EC2 Query API call (moto reads the service and region from the
    /// credential scope and does not check the signature).
    fn ec2(params: &str) -> String {
        moto_http(
            "POST",
            "/",
            &[
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=benchledger-test-key/20261202/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0",
                ),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &format!("Version=2016-11-15&{params}"),
        )
    }

    /// moto's vCPU quota (L-1216C47A) set to a value for the life of the
    /// guard, then put back.
    struct VcpuQuota(f64);

    const QUOTA_PATH: &str = "/_benchledger/quotas/ec2/L-1216C47A";

    impl VcpuQuota {
        fn set(value: f64) -> VcpuQuota {
            let list: Value =
                serde_json::from_str(&moto_http("GET", "/_benchledger/quotas", &[], "")).unwrap();
            let before = list
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["QuotaCode"] == "L-1216C47A")
                .and_then(|q| q["Value"].as_f64())
                .unwrap_or(64.0);
            moto_http(
                "PUT",
                QUOTA_PATH,
                &[],
                &json!({ "value": value }).to_string(),
            );
            VcpuQuota(before)
        }
    }

    impl Drop for VcpuQuota {
        fn drop(&mut self) {
            moto_http(
                "PUT",
                QUOTA_PATH,
                &[],
                &json!({ "value": self.0 }).to_string(),
            );
        }
    }

    /// Volumes whose ids a test wrote to a file, deleted when it ends.
    struct StrayVolumes(std::path::PathBuf);

    impl StrayVolumes {
        fn ids(&self) -> Vec<String> {
            let text = std::fs::read_to_string(&self.0).unwrap_or_default();
            text.split("<volumeId>")
                .skip(1)
                .filter_map(|t| t.split_once("</volumeId>").map(|(id, _)| id.to_string()))
                .collect()
        }
    }

    impl Drop for StrayVolumes {
        fn drop(&mut self) {
            for id in self.ids() {
                ec2(&format!("Action=DeleteVolume&VolumeId={id}"));
            }
        }
    }

    fn private(principal: &str) -> String {
        PRIVATE.replace("arn:aws:iam::123456789012:role/benchmark-runner", principal)
    }

    /// A ledger on moto: the profile's credentials under the test's HOME.
    fn on_moto(cases: u32, principal: &str) -> (Harness, String, String) {
        on_moto_at(cases, 1, principal)
    }

    /// As `on_moto`, at `concurrency`.
    fn on_moto_at(cases: u32, concurrency: u32, principal: &str) -> (Harness, String, String) {
        on_moto_edited(cases, concurrency, principal, &|m| m.to_string())
    }

    /// As `on_moto_at`, with the test manifest edited first.
    fn on_moto_edited(
        cases: u32,
        concurrency: u32,
        principal: &str,
        edit: &dyn Fn(&str) -> String,
    ) -> (Harness, String, String) {
        assert!(
            std::env::var("BENCHLEDGER_AWS_ENDPOINT_URL").is_ok(),
            "moto tests need BENCHLEDGER_AWS_ENDPOINT_URL: run tools/moto/test-aws.sh"
        );
        let text = private(principal);
        let (h, url) = ready_edited(cases, concurrency, &text, false, edit);
        let aws = h.path(".aws");
        std::fs::create_dir_all(&aws).unwrap();
        std::fs::write(
            aws.join("credentials"),
            "[bench-operator]\naws_access_key_id = benchledger-test-key\naws_secret_access_key = benchledger-test-secret\n",
        )
        .unwrap();
        std::fs::write(
            aws.join("config"),
            "[profile bench-operator]\nregion = us-east-1\n",
        )
        .unwrap();
        let p = h.path("moto.private.toml");
        std::fs::write(&p, &text).unwrap();
        (h, url, p.display().to_string())
    }

    fn aws(h: &Harness, args: &[&str]) -> Run {
        h.cmd()
            .env("HOME", h.path(""))
            .env_remove("AWS_CONFIG_FILE")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .args(args)
            .output()
            .unwrap()
            .into()
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_every_aws_verb_runs_end_to_end_through_the_cli() {
        // rule GATE-1, rule GATE-2, rule GATE-3, rule CLEAN-1
        let _moto = shared();
        let (h, _, p) = on_moto(1, MOTO_PRINCIPAL);
        for args in [
            vec!["identity", "prove", "--private", &p, "--json"],
            vec!["quota", "check", "--private", &p, "--json"],
            vec![
                "check",
                "residue",
                "--group",
                "canary-1",
                "--private",
                &p,
                "--json",
            ],
            vec![
                "cleanup",
                "monitor",
                "canary-1",
                "--max-samples",
                "1",
                "--interval",
                "0.1",
                "--private",
                &p,
                "--json",
            ],
            vec!["cleanup", "audit", "canary-1", "--private", &p, "--json"],
        ] {
            let r = aws(&h, &args);
            assert_eq!(r.code, 0, "{args:?}: {}\n{}", r.stderr, r.stdout);
        }
        assert_eq!(records(&h, "identity_checked.v1").len(), 1);
        assert_eq!(records(&h, "quota_checked.v1").len(), 1);
        assert_eq!(records(&h, "cleanup_audited.v1").len(), 1);
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_a_mismatched_identity_stops_the_lineage_before_any_quota_call() {
        // rule GATE-1, rule VERDICT-3
        let _moto = shared();
        let (h, url, p) = on_moto(1, "arn:aws:iam::123456789012:role/someone-else");
        let r = aws(&h, &["identity", "prove", "--private", &p]);
        assert_ne!(r.code, 0, "{}", r.stdout);
        assert_eq!(records(&h, "lineage_stopped.v1").len(), 1);
        let before = h.head_bytes();
        let r = aws(&h, &["quota", "check", "--private", &p]);
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(r.stderr.contains("GATE-1"), "{}", r.stderr);
        assert_eq!(h.head_bytes(), before);
        assert!(records(&h, "quota_checked.v1").is_empty());
        // `run` starts nothing on a stopped lineage.
        let r: Run = aws_run(&h, &url, &p);
        assert!(records(&h, "case_started.v1").is_empty(), "{}", r.stderr);
    }

    fn aws_run(h: &Harness, url: &str, p: &str) -> Run {
        run_cmd(h, url, &["--private", p])
            .env("HOME", h.path(""))
            .env_remove("AWS_CONFIG_FILE")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .output()
            .unwrap()
            .into()
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_run_takes_a_canary_from_its_first_gate_to_a_sealed_group() {
        // rule GATE-1, rule GATE-2, rule GATE-3, rule CASE-9, rule CLEAN-1, rule VERDICT-4
        let _moto = shared();
        let (h, url, p) = on_moto(2, MOTO_PRINCIPAL);
        let r = aws_run(&h, &url, &p);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(records(&h, "group_sealed.v1").len(), 1);
        // Identity and quota before each of the two batches.
        assert!(records(&h, "identity_checked.v1").len() >= 2);
        assert!(records(&h, "quota_checked.v1").len() >= 2);
        assert_eq!(starts(&h).len(), 2);
        assert!(starts(&h).values().all(|n| *n == 1));
        // The sandboxes were sampled while the cases ran (CLEAN-2), and the
        // canary proves the path: accepted.
        assert!(!records(&h, "monitor_sampled.v1").is_empty());
        assert_eq!(sealed_status(&h), "accepted");
    }

    /// The chaos run on moto (issue 20): `run` with the real AWS gates
    /// (STS, Service Quotas, EC2 on the moto server) SIGKILLed at random
    /// points while four processes append and read, as in `chaos.rs`;
    /// every ledger seals as the uninterrupted run does (`accepted`), or
    /// `rejected_runtime` where a kill fell between a start and its launch.
    /// `BENCHLEDGER_MOTO_CHAOS_KILLS` (default 10), `BENCHLEDGER_CHAOS_SEED`.
    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_chaos_run_killed_under_load_seals_as_the_uninterrupted_run() {
        // rule CASE-2, rule CASE-4, rule GATE-1, rule GATE-2, rule CLEAN-1
        let _moto = shared();
        let want: usize = crate::env_number("BENCHLEDGER_MOTO_CHAOS_KILLS", 10);
        let mut seed: u64 = crate::env_number("BENCHLEDGER_CHAOS_SEED", 20_261_202);
        eprintln!("moto chaos: {want} kills, BENCHLEDGER_CHAOS_SEED={seed}");
        let t0 = Instant::now();
        let (h, url, p) = on_moto(3, MOTO_PRINCIPAL);
        let r = aws_run(&h, &url, &p);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let uninterrupted = super::super::chaos::verdict(&h);
        assert_eq!(uninterrupted.0, "accepted", "{uninterrupted:?}");
        let (mut kills, mut rounds, mut invalidated_rounds) = (0, 0, 0);
        while kills < want {
            let (h, url, p) = on_moto(3, MOTO_PRINCIPAL);
            let spawn = |h: &Harness| {
                let mut c = run_cmd(h, &url, &["--private", &p]);
                c.env("HOME", h.path(""))
                    .env_remove("AWS_CONFIG_FILE")
                    .env_remove("AWS_SHARED_CREDENTIALS_FILE");
                c
            };
            let finish = |h: &Harness| {
                let r = aws_run(h, &url, &p);
                assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
            };
            let round = super::super::chaos::chaos_ledger(
                std::sync::Arc::new(h),
                3,
                &spawn,
                &finish,
                &mut seed,
                want - kills,
            );
            invalidated_rounds += usize::from(round.check(&uninterrupted, rounds));
            kills += round.kills;
            rounds += 1;
        }
        eprintln!(
            "moto chaos: {kills} kills in {rounds} ledgers: {} with the uninterrupted verdict, {invalidated_rounds} rejected_runtime, {:.0} s",
            rounds - invalidated_rounds,
            t0.elapsed().as_secs_f64()
        );
    }

    fn sealed_status(h: &Harness) -> String {
        let sealed = records(h, "group_sealed.v1");
        assert_eq!(sealed.len(), 1, "{sealed:?}");
        sealed[0]["payload"]["status"].as_str().unwrap().to_string()
    }

    /// The verdict as a reader compares it: the status and each row's gate
    /// and whether it holds (the evidence names seqs, which differ).
    fn verdict_rows(h: &Harness) -> String {
        let sealed = records(h, "group_sealed.v1");
        assert_eq!(sealed.len(), 1, "{sealed:?}");
        let p = &sealed[0]["payload"];
        let rows: Vec<String> = p["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}={}", r["gate"], r["holds"]))
            .collect();
        format!("{} {}", p["status"], rows.join(" "))
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_a_fast_canary_seals_the_same_verdict_20_times() {
        let _moto = shared();
        let mut verdicts = std::collections::BTreeSet::new();
        for round in 0..20 {
            let (h, url, p) = on_moto(1, MOTO_PRINCIPAL);
            // The launch ends at once, faster than any poll of `run`.
            write_launch(&h, "");
            let r = aws_run(&h, &url, &p);
            assert_eq!(r.code, 0, "round {round}: {}", r.stderr);
            let exited = records(&h, "case_process_exited.v1")[0]["seq"]
                .as_u64()
                .unwrap();
            let sampled: Vec<u64> = records(&h, "monitor_sampled.v1")
                .iter()
                .map(|r| r["seq"].as_u64().unwrap())
                .collect();
            assert!(
                sampled.iter().any(|s| *s > exited),
                "RUN-5: a monitor sample after the exit, round {round}: {sampled:?} vs {exited}"
            );
            verdicts.insert(verdict_rows(&h));
        }
        assert_eq!(
            verdicts.len(),
            1,
            "RUN-5: one verdict for 20 runs: {verdicts:#?}"
        );
        assert!(
            verdicts.iter().all(|v| v.starts_with("\"accepted\"")),
            "{verdicts:?}"
        );
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_a_quota_shortfall_refuses_the_batch_and_starts_no_case() {
        // rule GATE-2, rule BIND-6, rule VERDICT-3, rule CASE-4
        let _moto = exclusive();
        // required = concurrency 1 x sandbox 2 + headroom 4 + central 4 = 10 vCPU.
        let _quota = VcpuQuota::set(4.0);
        let (h, url, p) = on_moto(2, MOTO_PRINCIPAL);
        let r = aws_run(&h, &url, &p);
        assert_eq!(r.code, 1, "{}\n{}", r.stderr, r.stdout);
        assert!(r.stderr.contains("GATE-2"), "{}", r.stderr);
        // The observation is appended as a fail, with its numbers.
        let q = records(&h, "quota_checked.v1");
        assert_eq!(q.len(), 1, "{q:?}");
        let q = &q[0]["payload"];
        assert_eq!(q["status"], "fail", "{q}");
        assert_eq!(q["quota_vcpu"], 4, "{q}");
        assert!(
            q["available_vcpu"].as_i64().unwrap() < q["required_vcpu"].as_i64().unwrap(),
            "{q}"
        );
        // No case started: every identity stays not_started (CASE-4).
        assert!(records(&h, "case_started.v1").is_empty());
        assert!(records(&h, "case_process_exited.v1").is_empty());
        let gate: Value =
            serde_json::from_str(&h.run(&["gate", "canary-1", "--json"]).stdout).unwrap();
        let cases = gate["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 2, "{gate}");
        for c in cases {
            assert_eq!(c["status"], "not_started", "{c}");
            assert_eq!(c["starts"], 0, "{c}");
        }
        // The stop names the quota observation (VERDICT-3).
        let stops = records(&h, "lineage_stopped.v1");
        assert_eq!(stops.len(), 1, "{stops:?}");
        assert_eq!(stops[0]["payload"]["rule"], "GATE-2", "{stops:?}");
        // A rerun launches nothing either.
        let r = aws_run(&h, &url, &p);
        assert_ne!(r.code, 0, "{}", r.stderr);
        assert!(records(&h, "case_started.v1").is_empty());
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_a_slot_is_refilled_while_a_running_cases_sandbox_lives() {
        let _moto = exclusive();
        let timeout = format!("timeout_sec = {AWAITED_LAUNCH_TIMEOUT_SEC}");
        let (h, url, p) = on_moto_edited(3, 2, MOTO_PRINCIPAL, &|m| {
            replace_line(m, "timeout_sec = 4", &timeout)
        });
        // Each launch runs its trial in a run-tagged sandbox carrying its
        // trial tag (as Harbor's environment does) and terminates it before
        // the result appears; c1's lives until c3, the slot's refill, has
        // started (c3's launch says so), the others' end at once.
        let refilled = h.path("refilled");
        let call = format!(
            "curl -sf -X POST '{}/' -H 'Authorization: AWS4-HMAC-SHA256 Credential=benchledger-test-key/20261203/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0' -H 'Content-Type: application/x-www-form-urlencoded' --data",
            endpoint()
        );
        let sandbox = format!(
            "id=$({call} \"Version=2016-11-15&Action=RunInstances&ImageId=ami-0fedcba9876543210&InstanceType=m5.large&MinCount=1&MaxCount=1&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=benchledger%3Arun&TagSpecification.1.Tag.1.Value={L}&TagSpecification.1.Tag.2.Key=benchledger%3Arole&TagSpecification.1.Tag.2.Value=sandbox&TagSpecification.1.Tag.3.Key=benchledger%3Atrial&TagSpecification.1.Tag.3.Value=$1\" | sed -n 's:.*<instanceId>\\(i-[0-9a-f]*\\)</instanceId>.*:\\1:p' | head -n 1)\ntest -n \"$id\"\ncase \"$1\" in *-c1) await_file '{r}' ;; *-c3) : > '{r}' ;; esac\n{call} \"Version=2016-11-15&Action=TerminateInstances&InstanceId.1=$id\" > /dev/null\n",
            r = refilled.display()
        );
        write_launch(&h, &sandbox);
        let r = aws_run(&h, &url, &p);
        // No gate of a refill wave stopped the lineage: every residue gate
        // passed while the other case's sandbox lived (VERDICT-3).
        assert!(records(&h, "lineage_stopped.v1").is_empty(), "{}", r.stderr);
        let residue: Vec<Value> = records(&h, "check_recorded.v1")
            .into_iter()
            .filter(|r| r["payload"]["check"] == "residue")
            .collect();
        assert!(residue.len() >= 2, "a residue gate per wave: {residue:?}");
        assert!(
            residue.iter().all(|r| r["payload"]["status"] == "pass"),
            "{residue:?}"
        );
        let seq_of = |kind: &str, trial: &str| seq_of(&h, kind, trial);
        let c1_exit = seq_of("case_process_exited.v1", "c1");
        let refilled = ["c2", "c3"].iter().any(|t| {
            seq_of("case_started.v1", t) > seq_of("case_started.v1", "c1") + 2
                && seq_of("case_started.v1", t) < c1_exit
        });
        assert!(
            refilled,
            "RUN-1: a slot was refilled while c1's sandbox lived"
        );
        // The refill's residue gate saw c1's live sandbox as c1's, not as
        // residue (RUN-1, GATE-3).
        let owned = records(&h, "check_recorded.v1")
            .iter()
            .filter(|r| r["payload"]["check"] == "residue")
            .any(|r| r["payload"]["details"]["owned_count"] != "0");
        assert!(
            owned,
            "RUN-1: a residue gate counted a running case's sandbox as its own"
        );
        // The cases ran and count; moto keeps each terminated instance's
        // network interface `in-use`, which the exact-tag audit then finds
        // (CLEAN-1), so the group seals rejected_cleanup here.
        assert_eq!(records(&h, "trial_result_recorded.v2").len(), 3);
        assert_eq!(sealed_status(&h), "rejected_cleanup", "{}", r.stderr);
    }

    #[test]
    #[ignore = "needs the moto server: tools/moto/test-aws.sh"]
    fn moto_a_stray_run_tagged_volume_rejects_the_group_on_cleanup() {
        // rule CLEAN-1, rule CLEAN-2, rule CLEAN-3, rule VERDICT-3
        let _moto = exclusive();
        let (h, url, p) = on_moto(1, MOTO_PRINCIPAL);
        let stray = StrayVolumes(h.path("stray-volume.xml"));
        // The case's process leaves a volume behind with the run's exact
        // tags (run tag and sandbox role tag), after the gates were taken.
        let create = format!(
            "curl -sf -X POST '{}/' -H 'Authorization: AWS4-HMAC-SHA256 Credential=benchledger-test-key/20261202/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0' -H 'Content-Type: application/x-www-form-urlencoded' --data 'Version=2016-11-15&Action=CreateVolume&AvailabilityZone=us-east-1a&Size=8&TagSpecification.1.ResourceType=volume&TagSpecification.1.Tag.1.Key=benchledger%3Arun&TagSpecification.1.Tag.1.Value={L}&TagSpecification.1.Tag.2.Key=benchledger%3Arole&TagSpecification.1.Tag.2.Value=sandbox' > '{}'\n",
            endpoint(),
            stray.0.display()
        );
        write_launch(&h, &format!("{create}{CASE_RUNS}"));
        let r = aws_run(&h, &url, &p);
        let ids = stray.ids();
        assert_eq!(ids.len(), 1, "{}", r.stderr);
        assert_eq!(r.code, 1, "{}\n{}", r.stderr, r.stdout);
        // The case ran and its result counts; only the cleanup fails.
        assert_eq!(records(&h, "trial_result_recorded.v2").len(), 1);
        let audits = records(&h, "cleanup_audited.v1");
        let last = &audits.last().unwrap()["payload"];
        assert_eq!(last["status"], "fail", "{last}");
        assert!(last["found"].to_string().contains(&ids[0]), "{last}");
        assert_eq!(sealed_status(&h), "rejected_cleanup");
        assert!(r.stderr.contains("rejected_cleanup"), "{}", r.stderr);
    }
}
