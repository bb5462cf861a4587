//! Issue 16 through the CLI on trial trees written by Harbor 0.25.0's own
//! models (`tools/harbor/trial_trees.py`): for each evidence shape, a case
//! is rendered, validated and started through the ledger, Harbor's models
//! write the trial directory its launch would leave, and `ingest harbor`
//! takes it; the verdict then says what BIND-1, BIND-2, BIND-8 and CASE-3
//! say of it.
//!
//! Needs the Harbor venv (`tools/harbor/setup.sh` prints its python):
//! `BENCHLEDGER_HARBOR_PY=<python> cargo test --no-default-features --test
//! cli harbor_trees -- --ignored`. `tools/test-all.sh` runs it so.

use serde_json::Value;

use super::cases::ready_harness;
use super::Harness;

const CASE: &str = "hello-world/c1";
/// The frozen content hash of the canary task in the test manifest.
fn frozen_checksum() -> String {
    "ab".repeat(32)
}

/// What the verdict must say of one shape's case.
struct Expect {
    shape: &'static str,
    status: &'static str,
    /// A phrase the case's `why_invalid` must contain (none for a valid case).
    why: Option<&'static str>,
    /// A gate row that must fail, and a phrase its evidence must contain.
    failing: Option<(&'static str, &'static str)>,
    reward: Reward,
}

/// What the case's reward must be.
enum Reward {
    /// This decimal text.
    Is(&'static str),
    /// None: no number under the frozen key (BIND-2).
    Null,
    /// Kept as evidence of an invalid case, not asserted.
    Any,
}

const EXPECT: &[Expect] = &[
    Expect {
        shape: "pass",
        status: "terminal_valid",
        why: None,
        failing: None,
        reward: Reward::Is("1"),
    },
    // item 1
    Expect {
        shape: "checksum-mismatch",
        status: "terminal_invalid",
        why: Some("task_checksum"),
        failing: Some(("manifest", "task checksum")),
        reward: Reward::Any,
    },
    // item 2
    Expect {
        shape: "other-model",
        status: "terminal_invalid",
        why: Some("config"),
        failing: Some(("manifest", "agent.kwargs.api_base")),
        reward: Reward::Any,
    },
    // item 6
    Expect {
        shape: "early-timestamps",
        status: "terminal_invalid",
        why: Some("window"),
        failing: Some(("trial result", "window")),
        reward: Reward::Any,
    },
    // item 4
    Expect {
        shape: "job-retries",
        status: "terminal_invalid",
        why: Some("retr"),
        failing: Some(("manifest", "retr")),
        reward: Reward::Any,
    },
    // item 5
    Expect {
        shape: "multi-key-reward",
        status: "terminal_invalid",
        why: Some("reward"),
        failing: None,
        reward: Reward::Null,
    },
    Expect {
        shape: "integer-reward",
        status: "terminal_valid",
        why: None,
        failing: None,
        reward: Reward::Is("1"),
    },
    // item 3: exceptions outside the allowlist never become valid
    Expect {
        shape: "cancelled",
        status: "terminal_invalid",
        why: Some("CancelledError"),
        failing: None,
        reward: Reward::Any,
    },
    Expect {
        shape: "nonzero-exit-with-reward",
        status: "terminal_invalid",
        why: Some("NonZeroAgentExitCodeError"),
        failing: None,
        reward: Reward::Any,
    },
    Expect {
        shape: "null-agent-result",
        status: "terminal_invalid",
        why: Some("RuntimeError"),
        failing: None,
        reward: Reward::Any,
    },
    // item 11
    Expect {
        shape: "credential-in-exception",
        status: "terminal_invalid",
        why: None,
        failing: Some(("secrets", "BIND-8")),
        reward: Reward::Any,
    },
];

fn harbor_python() -> String {
    std::env::var("BENCHLEDGER_HARBOR_PY").unwrap_or_else(|_| {
        panic!("set BENCHLEDGER_HARBOR_PY to the python of tools/harbor/setup.sh's venv")
    })
}

/// Start the case through the ledger and have Harbor's models write the
/// trial tree of `shape` for it; returns the jobs directory.
fn launch(h: &Harness, python: &str, shape: &str) -> std::path::PathBuf {
    let rendered = h.path("rendered.json");
    h.ok(&[
        "case",
        "render-config",
        "canary-1",
        CASE,
        "-o",
        rendered.to_str().unwrap(),
    ]);
    h.ok(&["case", "start", "canary-1", CASE]);
    let now = benchledger::schema::time::now_utc_ns();
    let started_at = benchledger::schema::time::rfc3339_utc_ns(now + 1_000_000_000);
    let jobs = h.path("jobs");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/harbor/trial_trees.py");
    let out = std::process::Command::new(python)
        .args([script, "write", "--config"])
        .arg(&rendered)
        .args(["--checksum", &frozen_checksum(), "--started-at"])
        .arg(&started_at)
        .args(["--shape", shape, "--jobs"])
        .arg(&jobs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shape}: trial_trees.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    jobs
}

fn case_of(h: &Harness) -> Value {
    let replay = h.ok(&["replay", "--json"]).json();
    let verdicts = replay["lineages"][0]["verdicts"]
        .as_array()
        .unwrap()
        .clone();
    let canary = verdicts
        .into_iter()
        .find(|v| v["group"] == "canary-1")
        .expect("a verdict for canary-1");
    canary["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"]["trial"] == "c1")
        .cloned()
        .expect("case c1 in the verdict")
}

fn check(h: &Harness, e: &Expect) {
    let case = case_of(h);
    assert_eq!(case["status"], e.status, "{}: {case}", e.shape);
    assert_eq!(case["results"], 1, "{}: {case}", e.shape);
    let why = case["why_invalid"].to_string();
    if let Some(phrase) = e.why {
        assert!(why.contains(phrase), "{}: why_invalid {why}", e.shape);
    }
    match e.reward {
        Reward::Is(r) => assert_eq!(case["reward"], r, "{}: {case}", e.shape),
        Reward::Null => assert!(case["reward"].is_null(), "{}: {case}", e.shape),
        Reward::Any => {}
    }
    let gate = h.run(&["gate", "canary-1"]);
    if let Some((row, phrase)) = e.failing {
        let line = gate
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(row) && l.contains("FAILS"))
            .unwrap_or_else(|| panic!("{}: no failing {row} row:\n{}", e.shape, gate.stdout));
        assert!(line.contains(phrase), "{}: {line}", e.shape);
    }
}

/// Issue 16 items 1-6 and 11 on trees Harbor's own models wrote, each
/// ingested through the CLI. rule BIND-1, BIND-2, BIND-3, BIND-8, CASE-3,
/// CASE-5.
#[test]
#[ignore = "needs Harbor 0.25.0's venv: BENCHLEDGER_HARBOR_PY (tools/test-all.sh sets it)"]
fn harbor_trees_every_shape_binds_or_fails_as_the_bind_rules_say() {
    let python = harbor_python();
    for e in EXPECT {
        let h = ready_harness(1);
        let jobs = launch(&h, &python, e.shape);
        let before = h.head_bytes();
        let r = h.run(&["ingest", "harbor", "canary-1", jobs.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}: ingest failed: {}", e.shape, r.stderr);
        assert_ne!(h.head_bytes(), before, "{}: nothing appended", e.shape);
        check(&h, e);
        if e.shape == "credential-in-exception" {
            let log = h.ok(&["log"]).stdout;
            let finding = log
                .lines()
                .find(|l| l.contains("credential_found.v1"))
                .expect("a credential_found record");
            assert!(finding.contains("result.json"), "{finding}");
            assert!(
                !log.contains("Tq7Wm2Xr9Lk4Hs6Vd1Pz3Ny8Bc5Fg0Jt"),
                "the key itself was stored"
            );
        }
    }
}
