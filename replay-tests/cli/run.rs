//! `benchledger run` end to end on the CLI, over a stand-in launch command
//! (a shell script that writes a Harbor trial tree): gates as observations,
//! render + the frozen validator + `case start`'s decide path, each result
//! ingested as its process exits, close, cleanup audit and seal; killed at
//! many points and rerun, every identity starts at most once.
//!
//! A build without the `aws` feature takes the daemon gates itself and
//! relies on the identity, quota, residue and cleanup observations an `aws`
//! build records (`BENCHLEDGER_AWS_GATES=recorded`): the test appends them.

use super::{Harness, Run, MANIFEST, PRIVATE};
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::schema::events::{CleanupAudited, Event, GroupRef, Status};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::net::TcpListener;
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "{\"id\":\"x\",\"ok\":true}";
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-bitrouter-request-id: sentinel-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(reply.as_bytes());
        }
    });
    url
}

fn replace_line(m: &str, starts: &str, with: &str) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in m.lines() {
        if !done && line.starts_with(starts) {
            out.push_str(with);
            done = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    assert!(done, "no line starts with {starts:?}");
    out
}

/// The example manifest with `cases` canary identities, the concurrency,
/// every path under the test dir, a validator and a launch stand-in.
fn manifest(h: &Harness, cases: u32, concurrency: u32) -> String {
    let root = h.path("").display().to_string();
    let root = root.trim_end_matches('/');
    let canaries: String = (1..=cases)
        .map(|i| format!("  {{ group = \"canary-1\", task = \"hello-world\", trial = \"c{i}\", content_sha256 = \"{}\" }},\n", "ab".repeat(32)))
        .collect();
    let start = MANIFEST.find("canaries = [\n").unwrap() + "canaries = [\n".len();
    let end = start + MANIFEST[start..].find("]\n").unwrap();
    let mut m = MANIFEST.to_string();
    m.replace_range(start..end, &canaries);
    let m = m
        .replacen(
            "concurrency = 1",
            &format!("concurrency = {concurrency}"),
            1,
        )
        .replace("/srv/bench/", &format!("{root}/srv/"));
    let validator = h.path("validate.sh");
    std::fs::write(&validator, "#!/bin/sh\ntest -s \"$1\"\n").unwrap();
    let launch = h.path("launch.sh");
    std::fs::write(
        &launch,
        format!(
            "#!/bin/sh\nset -e\nsleep 0.3\nd=\"$2/standin/$1\"\nmkdir -p \"$d\"\ncp \"{root}/stash/$1.json\" \"$d/result.json.tmp\"\nmv \"$d/result.json.tmp\" \"$d/result.json\"\n"
        ),
    )
    .unwrap();
    let b3 = blake3::hash(&std::fs::read(&validator).unwrap()).to_hex();
    let m = replace_line(
        &m,
        "command = [\"tools/.venv-harbor",
        &format!(
            "command = [\"sh\", \"{}\", \"{{config}}\"]",
            validator.display()
        ),
    );
    let m = replace_line(
        &m,
        "program = ",
        &format!("program = \"{}\"", validator.display()),
    );
    let m = replace_line(
        &m,
        "program_blake3 = ",
        &format!("program_blake3 = \"{b3}\""),
    );
    let m = replace_line(
        &m,
        "command = [\"harbor\"",
        &format!(
            "command = [\"sh\", \"{}\", \"{{trial_name}}\", \"{{jobs_dir}}\", \"{{config}}\"]",
            launch.display()
        ),
    );
    let m = replace_line(&m, "timeout_sec = 7200", "timeout_sec = 4");
    replace_line(
        &m,
        "usage_export = ",
        "usage_export = [\"true\", \"{out}\"]",
    )
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

/// A frozen lineage with canary-1 opened, the AWS observations recorded
/// and a result waiting in the stash for every identity.
pub(super) fn ready(cases: u32, concurrency: u32) -> (Harness, String) {
    ready_with(cases, concurrency, PRIVATE, true)
}

/// As `ready`, frozen with `private`; the AWS observations appended only
/// when `record_aws` (a build without `aws`).
fn ready_with(cases: u32, concurrency: u32, private: &str, record_aws: bool) -> (Harness, String) {
    let h = Harness::new();
    h.init();
    let public = manifest(&h, cases, concurrency);
    let frozen_run = h.freeze(&public, private);
    assert_eq!(frozen_run.code, 0, "{}", frozen_run.stderr);
    let frozen = benchledger::method::freeze::freeze(&public, "m", private, "p").unwrap();
    let m = &frozen.manifest.public;
    let g = m.groups.iter().find(|g| g.name == "canary-1").unwrap();
    let ports: Vec<String> = g.ports.iter().map(|p| p.to_string()).collect();
    h.ok(&[
        "group",
        "open",
        "canary-1",
        "--binary-sha256",
        &m.software.bitrouter_binary_sha256,
        "--config-sha256",
        &m.software.bitrouter_config_sha256["canary-1"],
        "--ports",
        &ports.join(","),
        "--db",
        &g.db_path,
        "--out",
        &g.out_dir,
    ]);
    if record_aws {
        append(
            &h,
            benchledger::testkit::scenario::aws_observations(&frozen.v1_view(), "canary-1"),
        );
    }
    std::fs::create_dir_all(h.path("stash")).unwrap();
    for i in 1..=cases {
        let name = format!("hello-world__canary-1-c{i}");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(PASS).unwrap()).unwrap();
        v["trial_name"] = json!(name);
        v["task_name"] = json!("hello-world");
        std::fs::write(
            h.path(&format!("stash/{name}.json")),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
        .unwrap();
    }
    (h, daemon())
}

pub(super) fn run_cmd(h: &Harness, url: &str, extra: &[&str]) -> std::process::Command {
    let mut c = h.cmd();
    c.args(["run", "canary-1", "--daemon-url", url, "--poll-ms", "20"])
        .args(extra);
    c
}

pub(super) fn records(h: &Harness, kind: &str) -> Vec<Value> {
    h.ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == kind)
        .collect()
}

/// The cleanup audit an `aws` build records after the close: nothing left.
pub(super) fn audit_clean(h: &Harness) {
    append(
        h,
        vec![Event::CleanupAudited(CleanupAudited {
            group: GroupRef {
                lineage: L.into(),
                group: "canary-1".into(),
            },
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
fn run_without_the_aws_build_or_its_recorded_gates_says_so_and_appends_nothing() {
    // rule GATE-1, rule GATE-6
    if cfg!(feature = "aws") {
        return;
    }
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
fn run_takes_a_group_from_its_gates_to_a_sealed_verdict() {
    // rule GATE-3, rule GATE-7, rule BIND-7, rule CASE-4, rule CASE-7, rule CASE-9, rule VERDICT-4
    if cfg!(feature = "aws") {
        return; // moto::moto_run_* take this path against moto
    }
    let (h, url) = ready(3, 2);
    let plan = h
        .ok(&["run", "canary-1", "--plan", "--json", "--daemon-url", &url])
        .json();
    assert_eq!(plan["cases"]["left"], 3);
    assert_eq!(plan["next"]["step"], "take_gates");
    let r: Run = run_cmd(&h, &url, &[]).output().unwrap().into();
    if cfg!(not(feature = "aws")) {
        // The cleanup audit needs AWS: an `aws` build records it.
        assert_eq!(r.code, 4, "{}", r.stderr);
        assert!(r.stderr.contains("cleanup audit"), "{}", r.stderr);
        assert_eq!(records(&h, "trial_result_recorded.v2").len(), 3);
        assert_eq!(records(&h, "case_process_exited.v1").len(), 3);
        assert_eq!(records(&h, "group_closed.v1").len(), 1);
        audit_clean(&h);
    }
    let r: Run = run_cmd(&h, &url, &[]).output().unwrap().into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("sealed"), "{}", r.stdout);
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

/// One ledger of 4 cases under concurrency 2, `run` SIGKILLed at pseudo-
/// random points until it ends on its own; then sealed. Returns the kills.
fn kill_round(seed: &mut u64) -> usize {
    let (h, url) = ready(4, 2);
    let mut kills = 0;
    let mut code = None;
    for _ in 0..40 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let after = Duration::from_millis(20 + (*seed >> 33) % 500);
        let child = run_cmd(&h, &url, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        match kill_after(child, after) {
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
    let r: Run = run_cmd(&h, &url, &[]).output().unwrap().into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(records(&h, "group_sealed.v1").len(), 1);
    let s = starts(&h);
    assert!(s.values().all(|n| *n == 1), "{s:?}");
    assert_eq!(s.len(), 4, "{s:?}");
    h.ok(&["verify"]);
    kills
}

#[test]
fn run_killed_at_many_points_and_rerun_starts_every_identity_at_most_once_and_seals() {
    // rule CASE-2, rule CASE-3, rule CASE-4
    if cfg!(feature = "aws") {
        return;
    }
    // At least 20 kill points (BENCHLEDGER_RUN_KILLS=200 by hand).
    let want: usize = std::env::var("BENCHLEDGER_RUN_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut seed: u64 = std::env::var("BENCHLEDGER_RUN_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(17);
    let mut kills = 0;
    while kills < want {
        kills += kill_round(&mut seed);
    }
}

/// The AWS verbs and `run` against the moto server (tools/moto/test-aws.sh
/// starts it and exports BENCHLEDGER_AWS_ENDPOINT_URL).
#[cfg(feature = "aws")]
mod moto {
    use super::*;

    /// moto's caller identity.
    const MOTO_PRINCIPAL: &str = "arn:aws:sts::123456789012:user/moto";

    fn private(principal: &str) -> String {
        PRIVATE.replace("arn:aws:iam::123456789012:role/benchmark-runner", principal)
    }

    /// A ledger on moto: the profile's credentials under the test's HOME.
    fn on_moto(cases: u32, principal: &str) -> (Harness, String, String) {
        assert!(
            std::env::var("BENCHLEDGER_AWS_ENDPOINT_URL").is_ok(),
            "moto tests need BENCHLEDGER_AWS_ENDPOINT_URL: run tools/moto/test-aws.sh"
        );
        let text = private(principal);
        let (h, url) = ready_with(cases, 1, &text, false);
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
        let (h, url, p) = on_moto(2, MOTO_PRINCIPAL);
        let r = aws_run(&h, &url, &p);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(records(&h, "group_sealed.v1").len(), 1);
        // Identity and quota before each of the two batches.
        assert!(records(&h, "identity_checked.v1").len() >= 2);
        assert!(records(&h, "quota_checked.v1").len() >= 2);
        assert_eq!(starts(&h).len(), 2);
        assert!(starts(&h).values().all(|n| *n == 1));
    }
}
