//! The CLI, end to end: one hermetic temp-dir harness, the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use benchledger::log::chain::DamageKind;
use benchledger::log::ledger::Ledger;
use benchledger::log::store::{DamageTree, Store};
use serde_json::{json, Value};

#[path = "argv_fuzz.rs"]
mod argv_fuzz;
#[path = "auditor.rs"]
mod auditor;
#[path = "bad_input_run.rs"]
mod bad_input_run;
#[path = "bad_inputs.rs"]
mod bad_inputs;
#[path = "chaos.rs"]
mod chaos;
#[path = "checkpoint.rs"]
mod checkpoint;
#[path = "doc_run.rs"]
mod doc_run;

#[path = "conventions.rs"]
mod conventions;
#[path = "docs.rs"]
mod docs;
// The driver's tests take the daemon gates themselves and append the AWS
// observations an `aws` build records: they are compiled for a build
// without `aws` (the `moto` module of run.rs drives an `aws` build).
#[cfg(not(feature = "aws"))]
#[path = "driver.rs"]
mod driver;
// The walk expects the AWS verbs of a build without `aws` (exit 4).
#[cfg(not(feature = "aws"))]
#[path = "exit_walk.rs"]
mod exit_walk;
#[path = "expect.rs"]
mod expect;
#[path = "fail_closed.rs"]
mod fail_closed;
#[path = "guides.rs"]
mod guides;
#[path = "harbor_trees.rs"]
mod harbor_trees;
#[path = "pipes.rs"]
mod pipes;
#[path = "read_only.rs"]
mod read_only;
#[path = "readme.rs"]
mod readme;
#[path = "reliability.rs"]
mod reliability;
#[path = "report.rs"]
mod report;
#[path = "run.rs"]
mod run;
#[path = "tiles.rs"]
mod tiles;
#[path = "transparency.rs"]
mod transparency;
#[path = "witness.rs"]
mod witness;

/// A number from the environment (a test's size or seed), or `default`.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A temp dir with a ledger path inside; every command runs with a clean
/// environment for the variables the CLI reads.
struct Harness {
    tmp: tempfile::TempDir,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not json ({e}): {}", self.stdout))
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Harness {
    fn new() -> Harness {
        Harness {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn ledger(&self) -> PathBuf {
        self.tmp.path().join("ledger")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchledger"));
        c.current_dir(self.tmp.path())
            .env_remove("BENCHLEDGER_DIR")
            .env_remove("BENCHLEDGER_ACTOR")
            .env_remove("RUST_LOG")
            // A build without `aws` relies on the AWS observations the
            // tests append, as on those an `aws` build records.
            .env("BENCHLEDGER_AWS_GATES", "recorded")
            // The auditor's memory (TRUST-7) of this test, never the
            // real configuration directory.
            .env("BENCHLEDGER_AUDITOR_STATE", self.auditor_state())
            .arg("--ledger")
            .arg(self.ledger());
        c
    }

    /// The auditor state file every command of this harness uses.
    fn auditor_state(&self) -> PathBuf {
        self.tmp.path().join("auditor-state.json")
    }

    fn run(&self, args: &[&str]) -> Run {
        self.cmd().args(args).output().unwrap().into()
    }

    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "{args:?} failed: {}", r.stderr);
        r
    }

    fn init(&self) -> Run {
        self.ok(&["init", "--json"])
    }

    fn head_bytes(&self) -> String {
        self.ok(&["head", "--json"]).stdout
    }
}

/// Whether process `pid` has `file` open (its `/proc/PID/fd` links).
fn has_open(pid: u32, file: &Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == file))
        })
        .unwrap_or(false)
}

/// SIGINT to the one process `pid` this test started.
fn sigint(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -INT {pid}");
}

/// Whether `child` ends within `wait` (polled; it is not reaped beyond
/// `try_wait`).
fn ends_within(child: &mut std::process::Child, wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to `wait` for `child` (the test's own) to end, kills it by its
/// pid if it has not, and returns its output.
fn finish(mut child: std::process::Child, wait: Duration) -> Output {
    if !ends_within(&mut child, wait) {
        child.kill().unwrap();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn version_names_the_features_and_a_missing_one_says_so_in_help_and_exits_4() {
    let h = Harness::new();
    let features: Vec<&str> = [
        ("aws", cfg!(feature = "aws")),
        ("parquet", cfg!(feature = "parquet")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let listed = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    let v = h.ok(&["--version"]);
    let commit = env!("BENCHLEDGER_COMMIT");
    assert_eq!(
        v.stdout.trim(),
        format!(
            "benchledger {} (commit {commit}, features: {listed})",
            env!("CARGO_PKG_VERSION")
        )
    );
    // The commit of this checkout (the tests run in one), as git names it.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    if head.is_empty() {
        // Built outside a git checkout (a source archive).
        assert_eq!(commit, "unknown");
    } else {
        assert!(
            head.len() == 12 && commit.trim_end_matches("+dirty") == head,
            "--version names the commit built: {commit} vs HEAD {head}"
        );
    }
    let help = h.ok(&["export", "--help"]).stdout;
    h.init();
    let before = h.head_bytes();
    let r = h.run(&["export", "--parquet", "-o", "out"]);
    if cfg!(feature = "parquet") {
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!help.contains("Not in this build"), "{help}");
    } else {
        // A verb this build lacks: exit 4 naming the feature, nothing
        // written, and its help says so (not "on by default").
        assert_eq!(r.code, 4, "{}", r.stderr);
        assert!(r.stderr.contains("cargo feature `parquet`"), "{}", r.stderr);
        assert!(!h.path("out").exists());
        assert!(help.contains("Not in this build"), "{help}");
        assert!(!help.contains("on by default"), "{help}");
    }
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn help_names_every_verb_and_the_exit_codes() {
    let h = Harness::new();
    let r = h.ok(&["--help"]);
    for verb in ["init", "verify", "head", "log", "export", "import", "note"] {
        assert!(r.stdout.contains(verb), "--help lacks {verb}");
        let v = h.ok(&[verb, "--help"]);
        assert!(
            v.stdout.contains("Usage: benchledger"),
            "{verb} --help: {}",
            v.stdout
        );
    }
    assert!(r.stdout.contains("Exit codes"));
    assert!(r.stdout.contains("refused by a rule"));
}

#[test]
fn init_creates_an_owner_only_ledger_that_verifies() {
    let h = Harness::new();
    let j = h.init().json();
    assert_eq!(j["head_seq"], 0);
    assert_eq!(j["ledger_id"].as_str().unwrap().len(), 32);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(h.ledger()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let v = h.ok(&["verify", "--json"]).json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["records"], 1);
    assert_eq!(v["head_hash"], j["head_hash"]);
}

#[test]
fn init_twice_is_bad_input_and_changes_nothing() {
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let r = h.run(&["init"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("already holds a ledger"));
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn head_json_has_exactly_seq_and_hash() {
    let h = Harness::new();
    h.init();
    h.ok(&["note", "one"]);
    let j = h.ok(&["head", "--json"]).json();
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["head_hash", "head_seq"]);
    assert_eq!(j["head_seq"], 1);
    assert_eq!(j["head_hash"].as_str().unwrap().len(), 64);
}

#[test]
fn verbs_on_a_missing_ledger_exit_2() {
    let h = Harness::new();
    for verb in [
        &["verify"][..],
        &["head"],
        &["log"],
        &["note", "x"],
        &["export", "--jsonl"],
    ] {
        let r = h.run(verb);
        assert_eq!(r.code, 2, "{verb:?}: {}", r.stderr);
        assert!(r.stderr.contains("no ledger at"), "{}", r.stderr);
    }
}

#[test]
fn usage_errors_exit_2() {
    let h = Harness::new();
    h.init();
    assert_eq!(h.run(&["frobnicate"]).code, 2);
    assert_eq!(h.run(&["log", "--from", "3", "--to", "1"]).code, 2);
    assert_eq!(h.run(&["log", "--from", "9"]).code, 2);
    assert_eq!(h.run(&["--lock-timeout", "-1", "head"]).code, 2);
    assert_eq!(h.run(&["note", ""]).code, 2);
    assert_eq!(
        h.run(&["note", "x", "--idempotency-key", "has space"]).code,
        2
    );
}

#[test]
fn note_appends_and_log_prints_decoded_jsonl() {
    let h = Harness::new();
    h.init();
    let a = h.ok(&["note", "first", "--json"]).json();
    assert_eq!(
        (a["seq"].as_u64(), a["appended"].as_bool()),
        (Some(1), Some(true))
    );
    h.ok(&["note", "second"]);
    let log = h.ok(&["log"]).stdout;
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["kind"], "ledger_created.v1");
    assert_eq!(lines[2]["payload"]["text"], "second");
    assert!(lines[2]["recorded_at"].as_str().unwrap().ends_with('Z'));
    let ranged = h.ok(&["log", "--from", "1", "--to", "1"]).stdout;
    assert_eq!(ranged.lines().count(), 1);
    assert!(ranged.contains("\"first\""));
}

#[test]
fn idempotent_note_and_conflicting_key() {
    // rule LEDGER-2
    let h = Harness::new();
    h.init();
    let a = h
        .ok(&["note", "x", "--idempotency-key", "k-1", "--json"])
        .json();
    let b = h
        .ok(&["note", "x", "--idempotency-key", "k-1", "--json"])
        .json();
    assert_eq!(a["seq"], b["seq"]);
    assert_eq!(b["appended"], false);
    let before = h.head_bytes();
    let r = h.run(&["note", "y", "--idempotency-key", "k-1"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("LEDGER-2"));
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn a_credential_in_a_note_is_refused_unechoed() {
    // rule FREEZE-2
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let secret = format!("{}{}", "ghp_", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5");
    let r = h.run(&["note", &format!("token is {secret}")]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("FREEZE-2") && r.stderr.contains("field text"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(&secret) && !r.stdout.contains(&secret));
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn lock_wait_times_out_with_exit_4_and_head_intact() {
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let held = Ledger::open(&h.ledger(), Duration::from_secs(5)).unwrap();
    let r = h.run(&["--lock-timeout", "0.3", "note", "blocked"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stderr.contains("is locked by another process"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&h.ledger().display().to_string()),
        "names the ledger"
    );
    assert!(r.stderr.contains("ms"), "names the wait");
    drop(held);
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn concurrent_appenders_all_succeed_within_the_lock_wait() {
    let h = Harness::new();
    h.init();
    let children: Vec<_> = (0..6)
        .map(|i| {
            h.cmd()
                .args([
                    "--lock-timeout",
                    "30",
                    "note",
                    &format!("writer {i}"),
                    "--json",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut seqs: Vec<u64> = children
        .into_iter()
        .map(|c| {
            let r: Run = c.wait_with_output().unwrap().into();
            assert_eq!(r.code, 0, "{}", r.stderr);
            r.json()["seq"].as_u64().unwrap()
        })
        .collect();
    seqs.sort();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(h.ok(&["verify", "--json"]).json()["records"], 7);
}

#[test]
fn export_import_round_trip_through_the_cli() {
    let h = Harness::new();
    h.init();
    for i in 0..5 {
        h.ok(&["note", &format!("n{i}")]);
    }
    let export = h.path("e.jsonl");
    h.ok(&["export", "--jsonl", "-o", export.to_str().unwrap()]);
    let stdout_export = h.ok(&["export", "--jsonl"]).stdout;
    assert_eq!(std::fs::read_to_string(&export).unwrap(), stdout_export);
    let copy = h.path("copy");
    let r = h
        .cmd_at(&copy)
        .args(["import", "--jsonl", export.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let r: Run = r.into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.json(),
        serde_json::from_str::<Value>(&h.head_bytes()).unwrap()
    );
    let again: Run = h
        .cmd_at(&copy)
        .args(["export", "--jsonl"])
        .output()
        .unwrap()
        .into();
    assert_eq!(again.stdout, stdout_export);
}

#[test]
fn tampered_import_exits_2_and_creates_nothing() {
    let h = Harness::new();
    h.init();
    h.ok(&["note", "original text"]);
    let text = h
        .ok(&["export", "--jsonl"])
        .stdout
        .replace("original text", "forged text");
    let bad = h.path("bad.jsonl");
    std::fs::write(&bad, text).unwrap();
    let copy = h.path("copy");
    let r: Run = h
        .cmd_at(&copy)
        .args(["import", "--jsonl", bad.to_str().unwrap()])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("line 2"), "names the line: {}", r.stderr);
    assert!(!copy.exists());
    // Into an existing ledger: refused too.
    let good = h.path("good.jsonl");
    h.ok(&["export", "--jsonl", "-o", good.to_str().unwrap()]);
    let r = h.run(&["import", "--jsonl", good.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not empty"), "{}", r.stderr);
}

#[test]
fn verify_reports_damage_with_exit_1_and_the_first_bad_seq() {
    let h = Harness::new();
    h.init();
    for i in 0..6 {
        h.ok(&["note", &format!("n{i}")]);
    }
    {
        let l = Ledger::open(&h.ledger(), Duration::from_secs(5)).unwrap();
        let mut v = l.store().value(4).unwrap().unwrap();
        let n = v.len();
        v[n - 2] ^= 0x20;
        l.store()
            .damage_put(DamageTree::Records, &4u64.to_be_bytes(), &v)
            .unwrap();
    }
    let r = h.run(&["verify", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["ok"], false);
    assert_eq!(j["first_bad_seq"], 4);
    assert_eq!(
        j["damage"],
        serde_json::to_value(DamageKind::BadHash).unwrap()
    );
    assert_eq!(j["records"], 4);
    let human = h.run(&["verify"]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.contains("first bad seq 4"), "{}", human.stdout);
    // Appends and reads refuse a damaged ledger rather than extend it.
    let r = h.run(&["log"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
}

#[test]
fn a_world_readable_ledger_dir_is_warned_about() {
    let h = Harness::new();
    h.init();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(h.ledger(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = h.ok(&["head"]);
    assert!(r.stderr.contains("expected 0700"), "{}", r.stderr);
}

impl Harness {
    /// Puts the example manifest's frozen GATE-7 validator where its
    /// relative command finds it (BIND-7): the real
    /// `tools/harbor/validate_trial_config.py` (so its BLAKE3 is the frozen
    /// one) and, as the interpreter `tools/.venv-harbor/bin/python`, a
    /// stand-in that prints and exits `exit_code` (no Harbor venv in tests).
    fn stand_in_validator(&self, exit_code: i32) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let program = self.path("tools/harbor/validate_trial_config.py");
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::copy(dir.join("tools/harbor/validate_trial_config.py"), &program).unwrap();
        let python = self.path("tools/.venv-harbor/bin/python");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(
            &python,
            format!("#!/bin/sh\necho \"validated $2\"\nexit {exit_code}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Records the daemon start of `group` of the example manifest directly
    /// (a `group_opened.v1`): evidence binds only to a group whose daemon
    /// ran (GATE-4, issue 16 item 14).
    fn open_directly(&self, group: &str) {
        let frozen = benchledger::method::freeze::freeze(MANIFEST, "m", PRIVATE, "p").unwrap();
        let m = &frozen.manifest.public;
        let g = m.groups.iter().find(|g| g.name == group).unwrap();
        let opened = benchledger::schema::events::Event::GroupOpened(
            benchledger::schema::events::GroupOpened {
                group: benchledger::schema::events::GroupRef {
                    lineage: frozen.lineage.clone(),
                    group: group.into(),
                },
                binary_sha256: m.software.bitrouter_binary_sha256.clone(),
                config_sha256: m.software.bitrouter_config_sha256[group].clone(),
                ports: g.ports.clone(),
                db_path: g.db_path.clone(),
                out_dir: g.out_dir.clone(),
            },
        );
        cases::append(self, vec![opened]);
    }
}

impl Harness {
    fn cmd_at(&self, ledger: &Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchledger"));
        c.current_dir(self.tmp.path())
            .env_remove("BENCHLEDGER_DIR")
            .env_remove("RUST_LOG")
            .env("BENCHLEDGER_AUDITOR_STATE", self.auditor_state())
            .arg("--ledger")
            .arg(ledger);
        c
    }
}

// --- manifest verbs --------------------------------------------------------

use benchledger::testkit::examples::{EXAMPLE_MANIFEST as MANIFEST, EXAMPLE_PRIVATE as PRIVATE};

impl Harness {
    /// Writes a (possibly edited) example manifest pair; returns their paths.
    fn manifest_files(&self, name: &str, public: &str, private: &str) -> (String, String) {
        let p = self.path(&format!("{name}.toml"));
        let q = self.path(&format!("{name}.private.toml"));
        std::fs::write(&p, public).unwrap();
        std::fs::write(&q, private).unwrap();
        (p.display().to_string(), q.display().to_string())
    }

    /// Writes the example signer key `who` (`alice` is the example
    /// manifest's operator, `bob` its reviewer; anyone can derive them) as
    /// `<who>.key`, mode 0600; returns its path.
    fn example_key(&self, who: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(&format!("{who}.key"));
        let key = benchledger::testkit::examples::signer(who);
        std::fs::write(&path, format!("{}\n", key.encode())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path.display().to_string()
    }

    /// Signs the example lineage off with the example keys.
    fn sign_off(&self) {
        let (alice, bob) = (self.example_key("alice"), self.example_key("bob"));
        self.ok(&[
            "manifest", "sign-off", "--role", "operator", "--key", &alice,
        ]);
        self.ok(&["manifest", "sign-off", "--role", "reviewer", "--key", &bob]);
    }

    fn freeze(&self, public: &str, private: &str) -> Run {
        let (p, q) = self.manifest_files("m", public, private);
        self.run(&["manifest", "freeze", &p, "--private", &q, "--json"])
    }

    /// Runs a command that must be refused (or bad input) and asserts the
    /// head did not move.
    fn refused(&self, args: &[&str], code: i32, needle: &str) -> Run {
        let before = self.head_bytes();
        let r = self.run(args);
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(needle),
            "{args:?}: expected {needle:?} in {}",
            r.stderr
        );
        assert_eq!(self.head_bytes(), before, "{args:?} moved the head");
        r
    }

    /// Runs an ingest that a rule refuses for its evidence file (exit 3,
    /// `needle` in the message) and asserts the refusal appended exactly
    /// the one `evidence_refused.v1` BIND-12 keeps, citing `rule`, and that
    /// the ledger verifies; returns that record's payload.
    fn refused_kept(&self, args: &[&str], needle: &str, rule: &str) -> Value {
        let before: Value = serde_json::from_str(&self.head_bytes()).unwrap();
        let r = self.run(args);
        assert_eq!(r.code, 3, "BIND-12: still refused, {args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(needle) && r.stderr.contains("BIND-12"),
            "{args:?}: expected {needle:?} and the kept record in {}",
            r.stderr
        );
        let from = before["head_seq"].as_u64().unwrap() + 1;
        let log: Vec<Value> = self
            .ok(&["log", "--from", &from.to_string()])
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            log.len(),
            1,
            "BIND-12: {args:?} appends one record, nothing else: {log:?}"
        );
        assert_eq!(
            (log[0]["kind"].as_str(), log[0]["payload"]["rule"].as_str()),
            (Some("evidence_refused.v1"), Some(rule)),
            "BIND-12: {args:?}"
        );
        assert_eq!(self.ok(&["verify", "--json"]).json()["ok"], true);
        log[0]["payload"].clone()
    }
}

#[test]
fn manifest_freeze_sign_off_and_show_redacted() {
    let h = Harness::new();
    h.init();
    let r = h.freeze(MANIFEST, PRIVATE);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["lineage"], "short13-kimi-2026-11");
    assert_eq!(j["seq"], 1);
    for k in [
        "manifest_blake3",
        "task_manifest_blake3",
        "lineage_key",
        "control_key",
    ] {
        assert_eq!(j[k].as_str().unwrap().len(), 64, "{k}");
    }
    // rule FREEZE-7, rule TRUST-3
    let (alice, bob) = (h.example_key("alice"), h.example_key("bob"));
    h.refused(
        &[
            "manifest", "sign-off", "--role", "operator", "--name", "alice",
        ],
        3,
        "TRUST-3",
    );
    h.ok(&[
        "manifest", "sign-off", "--role", "operator", "--key", &alice,
    ]);
    h.refused(
        &[
            "manifest", "sign-off", "--role", "reviewer", "--key", &alice,
        ],
        3,
        "TRUST-3",
    );
    h.refused(
        &[
            "manifest", "sign-off", "--role", "operator", "--key", &alice,
        ],
        3,
        "FREEZE-7",
    );
    h.ok(&["manifest", "sign-off", "--role", "reviewer", "--key", &bob]);
    let shown = h.ok(&["manifest", "show", "--redacted"]).stdout;
    assert!(
        shown.contains("********9012") && shown.contains("lineage = \"short13-kimi-2026-11\""),
        "{shown}"
    );
    for private in [
        "123456789012",
        "benchmark-runner",
        "ANTHROPIC_BENCH_KEY",
        "/run/secrets",
        "commitment",
    ] {
        assert!(!shown.contains(private), "redacted view shows {private:?}");
    }
    let full = h
        .ok(&["manifest", "show", "short13-kimi-2026-11", "--json"])
        .json();
    assert_eq!(
        full["manifest"]["private"]["account"]["commitment"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    // A holder of the private file can check every commitment.
    let (_, q) = h.manifest_files("check", MANIFEST, PRIVATE);
    let r = h.ok(&["manifest", "show", "--private", &q]);
    assert!(
        r.stderr.contains("all 5 private values match"),
        "{}",
        r.stderr
    );
    let (_, wrong) = h.manifest_files(
        "wrong",
        MANIFEST,
        &PRIVATE.replace("env:ANTHROPIC_BENCH_KEY", "env:OTHER_KEY"),
    );
    let r = h.run(&["manifest", "show", "--private", &wrong]);
    assert_eq!(r.code, 3, "{}", r.stderr);
}

#[test]
fn manifest_refusals_leave_the_head_identical() {
    let h = Harness::new();
    h.init();
    let cases: Vec<(String, &str, i32, &str)> = vec![
        (
            MANIFEST.replacen("retries = 0 ", "retries = 2 ", 1),
            "retries",
            3,
            "CASE-5",
        ),
        (
            MANIFEST.replacen("trials = [\"t1\"]", "trials = [\"t1\", \"t2\"]", 1),
            "trials",
            3,
            "CLASS-1",
        ),
        (
            MANIFEST.replacen("name = \"r2\"", "name = \"r3\"", 1),
            "groups",
            3,
            "LINEAGE-1",
        ),
        (
            MANIFEST.replacen("ports = [18721]", "ports = [18711]", 1),
            "ports",
            3,
            "FREEZE-4",
        ),
        (
            MANIFEST.replacen("vcpu = 2", "vcpu = \"two\"", 1),
            "toml type",
            2,
            "invalid type: string \"two\", expected u64",
        ),
        (
            MANIFEST.replacen("[limits]", "[limits", 1),
            "toml syntax",
            2,
            "line",
        ),
        (
            MANIFEST.replacen("manifest_version = 2", "manifest_version = 7", 1),
            "version",
            2,
            "field manifest_version",
        ),
    ];
    for (public, what, code, needle) in cases {
        let (p, q) = h.manifest_files(what, &public, PRIVATE);
        h.refused(&["manifest", "freeze", &p, "--private", &q], code, needle);
    }
    let (p, _) = h.manifest_files("ok", MANIFEST, PRIVATE);
    h.refused(
        &[
            "manifest",
            "freeze",
            &p,
            "--private",
            "/nonexistent/private.toml",
        ],
        2,
        "cannot read",
    );
    // A credential in any string is refused by the guard, naming the field.
    let secret = format!("{}{}", "sk-ant-api03-", "Q".repeat(40) + "9x");
    let with_secret = MANIFEST.replacen("hypothesis = \"", &format!("hypothesis = \"{secret} "), 1);
    let (p, q) = h.manifest_files("secret", &with_secret, PRIVATE);
    let r = h.refused(&["manifest", "freeze", &p, "--private", &q], 3, "FREEZE-2");
    assert!(
        r.stderr.contains("run.hypothesis") && !r.stderr.contains(&secret),
        "{}",
        r.stderr
    );
    // And re-freezing a frozen lineage is refused.
    assert_eq!(h.freeze(MANIFEST, PRIVATE).code, 0);
    let (p, q) = h.manifest_files("again", MANIFEST, PRIVATE);
    h.refused(&["manifest", "freeze", &p, "--private", &q], 3, "FREEZE-3");
}

#[test]
fn sign_off_without_a_frozen_lineage_is_bad_input() {
    let h = Harness::new();
    h.init();
    h.refused(
        &[
            "manifest", "sign-off", "--role", "operator", "--name", "alice",
        ],
        2,
        "no frozen lineage",
    );
}

// --- groups, cases, resume --------------------------------------------------

mod cases {
    use super::Harness;
    use super::*;
    use benchledger::log::ledger::Draft;
    use benchledger::schema::events::*;
    use std::collections::BTreeMap;

    const L: &str = "short13-kimi-2026-11";

    /// The example manifest with eight canary identities in canary-1 and
    /// the given concurrency.
    fn manifest(concurrency: u32) -> String {
        let canaries: String = (1..=8)
            .map(|i| format!("  {{ group = \"canary-1\", task = \"hello-world\", trial = \"c{i}\", content_sha256 = \"{}\" }},\n", "ab".repeat(32)))
            .collect();
        let start = MANIFEST.find("canaries = [\n").unwrap() + "canaries = [\n".len();
        let end = start + MANIFEST[start..].find("]\n").unwrap();
        let mut m = MANIFEST.to_string();
        m.replace_range(start..end, &canaries);
        m.replacen(
            "concurrency = 1",
            &format!("concurrency = {concurrency}"),
            1,
        )
    }

    pub(super) fn append(h: &Harness, events: Vec<Event>) {
        let l = Ledger::open(&h.ledger(), Duration::from_secs(10)).unwrap();
        let drafts: Vec<Draft> = events
            .into_iter()
            .map(|event| Draft {
                actor: "test".into(),
                event,
                idempotency_key: None,
            })
            .collect();
        l.append(&drafts, benchledger::schema::time::now_utc_ns())
            .unwrap();
    }

    /// A passing check with the numbers that earn it (BIND-6).
    fn check(kind: CheckKind, group: Option<&str>, target: &str) -> Event {
        let mut details = BTreeMap::new();
        match kind {
            CheckKind::Residue => {
                details.insert("sandbox_count".to_string(), "0".to_string());
            }
            CheckKind::DaemonHealth | CheckKind::ProviderSentinel => {
                details.insert("http_status".to_string(), "200".to_string());
            }
            _ => {}
        }
        Event::CheckRecorded(CheckRecorded {
            lineage: L.into(),
            group: group.map(Into::into),
            check: kind,
            target: target.into(),
            status: Status::Pass,
            details,
        })
    }

    /// A ledger with the manifest frozen, canary-1 opened through the CLI,
    /// and every gate of canary-1 recorded passing (as observations).
    pub(super) fn ready_harness(concurrency: u32) -> Harness {
        ready(concurrency)
    }

    fn ready(concurrency: u32) -> Harness {
        let h = Harness::new();
        h.init();
        assert_eq!(h.freeze(&manifest(concurrency), PRIVATE).code, 0);
        let frozen =
            benchledger::method::freeze::freeze(&manifest(concurrency), "m", PRIVATE, "p").unwrap();
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
        let required = u64::from(m.limits.concurrency) * m.sandbox.vcpu + m.aws.quota_headroom_vcpu;
        let mut gates = vec![
            Event::IdentityChecked(IdentityChecked {
                lineage: L.into(),
                selector: "profile:bench-operator".into(),
                region: "us-east-1".into(),
                endpoint_override: None,
                ambient_variables_ignored: vec![],
                account: Some(frozen.manifest.private.account.clone()),
                principal: Some(frozen.manifest.private.principal_arn.clone()),
                status: Status::Pass,
                error: None,
            }),
            // BIND-6: the numbers earn the pass (the frozen GATE-2 formula)
            Event::QuotaChecked(QuotaChecked {
                lineage: L.into(),
                region: "us-east-1".into(),
                quota_code: "L-1216C47A".into(),
                quota_vcpu: required + 64,
                used_vcpu: 0,
                available_vcpu: required + 64,
                required_vcpu: required,
                status: Status::Pass,
                error: None,
            }),
            check(CheckKind::Residue, Some("canary-1"), "run-tag"),
            check(CheckKind::DaemonHealth, Some("canary-1"), "health"),
        ];
        for r in &m.routes {
            gates.push(check(CheckKind::ProviderSentinel, None, &r.gate_target));
        }
        for i in 1..=8 {
            let c = CaseRef {
                task: "hello-world".into(),
                trial: format!("c{i}"),
                replacement: 0,
            };
            let rendered = benchledger::method::trial_config::render(m, "canary-1", &c).unwrap();
            // BIND-7: validated by the frozen validator
            let mut validated = check(CheckKind::ConfigValidated, None, &rendered.blake3);
            if let Event::CheckRecorded(c) = &mut validated {
                let v = &frozen.plan.binding.validator;
                c.details
                    .insert("program_blake3".into(), v.program_blake3.clone());
                c.details.insert("exit_code".into(), "0".into());
            }
            gates.push(validated);
        }
        append(&h, gates);
        h
    }

    fn started_cases(h: &Harness) -> Vec<Value> {
        h.ok(&["log"])
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "case_started.v1")
            .collect()
    }

    fn race(h: &Harness, cases: &[String]) -> Vec<Run> {
        let children: Vec<_> = cases
            .iter()
            .map(|c| {
                h.cmd()
                    .args([
                        "--lock-timeout",
                        "60",
                        "case",
                        "start",
                        "canary-1",
                        c,
                        "--json",
                    ])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap().into())
            .collect()
    }

    #[test]
    fn evidence_binds_only_where_a_launch_can_be_bind_9() {
        // Issue 16 items 12-14 through the CLI. rule GATE-4, BIND-9,
        // CASE-6, CASE-8, LINEAGE-1.
        let h = ready(1);
        let fix = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/fixtures/bitrouter"
        );
        // item 14: r1's daemon start was never recorded: no evidence binds.
        h.refused(
            &["ingest", "usage", "r1", &format!("{fix}/usage.jsonl")],
            3,
            "GATE-4",
        );
        // item 13: render-config only for identities that can ever start.
        let out = h.path("x.json");
        let out = out.to_str().unwrap();
        for (case, rule) in [
            ("hello-world/c1/replacement-02", "CASE-6"),
            ("hello-world/c99", "CASE-8"),
        ] {
            h.refused(
                &["case", "render-config", "canary-1", case, "-o", out],
                3,
                rule,
            );
        }
        h.refused(
            &["case", "render-config", "r9", "hello-world/c1", "-o", out],
            3,
            "LINEAGE-1",
        );
        // item 12: a job directory without any result is refused, naming
        // the level it was given and the levels it takes.
        let job = h.path("jobs/short13-kimi-2026-11-canary-1");
        std::fs::create_dir_all(job.join("hello-world__canary-1-c1").join("agent")).unwrap();
        std::fs::write(job.join("job.log"), "").unwrap();
        let r = h.refused(
            &["ingest", "harbor", "canary-1", job.to_str().unwrap()],
            3,
            "BIND-9",
        );
        assert!(
            r.stderr
                .contains("is a job directory holding no trial result"),
            "{}",
            r.stderr
        );
        // the trial directory itself: its `agent/` is never taken for a trial
        let trial = job.join("hello-world__canary-1-c1");
        let r = h.refused(
            &["ingest", "harbor", "canary-1", trial.to_str().unwrap()],
            3,
            "BIND-9",
        );
        assert!(r.stderr.contains("is a trial directory"), "{}", r.stderr);
        // resume one level too high: refused, naming the level expected.
        let r = h.refused(
            &[
                "resume",
                "canary-1",
                "--harbor-jobs",
                h.path("").to_str().unwrap(),
            ],
            3,
            "BIND-9",
        );
        assert!(r.stderr.contains("jobs directory"), "{}", r.stderr);
    }

    #[test]
    fn eight_processes_racing_one_case_start_it_exactly_once() {
        // rule CASE-2
        let h = ready(1);
        let runs = race(&h, &vec!["hello-world/c1".to_string(); 8]);
        let ok: Vec<&Run> = runs.iter().filter(|r| r.code == 0).collect();
        assert_eq!(
            ok.len(),
            1,
            "{:?}",
            runs.iter()
                .map(|r| (&r.code, &r.stderr))
                .collect::<Vec<_>>()
        );
        for r in runs.iter().filter(|r| r.code != 0) {
            assert_eq!(r.code, 3, "{}", r.stderr);
            assert!(
                r.stderr.contains("CASE-2") || r.stderr.contains("LEDGER-2"),
                "{}",
                r.stderr
            );
        }
        assert_eq!(started_cases(&h).len(), 1);
        assert_eq!(h.ok(&["verify", "--json"]).json()["ok"], true);
    }

    #[test]
    fn eight_cases_under_concurrency_three_never_run_more_than_three() {
        // rule CASE-7
        let h = ready(3);
        let cases: Vec<String> = (1..=8).map(|i| format!("hello-world/c{i}")).collect();
        let runs = race(&h, &cases);
        assert_eq!(runs.iter().filter(|r| r.code == 0).count(), 3);
        for r in runs.iter().filter(|r| r.code != 0) {
            assert_eq!(r.code, 3, "{}", r.stderr);
            assert!(r.stderr.contains("CASE-7"), "{}", r.stderr);
        }
        // At every seq, started-and-not-terminal <= 3 (no results exist).
        let started = started_cases(&h);
        assert_eq!(started.len(), 3);
    }

    #[test]
    fn a_started_case_runs_its_command_and_records_the_exit() {
        let h = ready(1);
        let log = h.path("c1.log");
        let r = h.ok(&[
            "case",
            "start",
            "canary-1",
            "hello-world/c1",
            "--log",
            log.to_str().unwrap(),
            "--json",
            "--",
            "sh",
            "-c",
            "echo region=$AWS_REGION profile=$AWS_PROFILE key=${AWS_ACCESS_KEY_ID:-none}; exit 7",
        ]);
        let j = r.json();
        assert_eq!(j["exit_code"], 7);
        assert!(j["exited_seq"].as_u64().unwrap() > j["started_seq"].as_u64().unwrap());
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.trim(),
            "region=us-east-1 profile=bench-operator key=none",
            "the frozen selector, never ambient keys"
        );
        let exited: Vec<Value> = h
            .ok(&["log"])
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "case_process_exited.v1")
            .collect();
        assert_eq!(exited.len(), 1);
        assert_eq!(
            exited[0]["payload"]["log_blake3"],
            hex::encode(blake3::hash(text.as_bytes()).as_bytes())
        );
        // The case stays consumed whatever the command did.
        h.refused(
            &["case", "start", "canary-1", "hello-world/c1"],
            3,
            "CASE-2",
        );
    }

    #[test]
    fn killing_the_cli_while_its_command_runs_leaves_the_case_started_and_unlaunchable() {
        // rule CASE-2, rule CASE-4
        let h = ready(1);
        let mut child = h
            .cmd()
            .env("AWS_ACCESS_KEY_ID", "ignored")
            .args([
                "case",
                "start",
                "canary-1",
                "hello-world/c1",
                "--log",
                h.path("k.log").to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &format!("echo $$ > {}; exec sleep 30", h.path("k.pid").display()),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until `started` is durable, then SIGKILL the CLI.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(l) = Ledger::open(&h.ledger(), Duration::from_millis(100)) {
                let n = l
                    .records()
                    .unwrap()
                    .filter(|v| v.as_ref().unwrap().decoded.record.kind == "case_started.v1")
                    .count();
                drop(l);
                if n == 1 {
                    break;
                }
            }
            assert!(std::time::Instant::now() < deadline, "case never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // End the command this test started (its own process group), by pid.
        if let Ok(pid) = std::fs::read_to_string(h.path("k.pid")) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", pid.trim())])
                .status();
        }
        assert_eq!(h.ok(&["verify", "--json"]).json()["ok"], true);
        assert_eq!(started_cases(&h).len(), 1);
        let r = h.ok(&["resume", "canary-1", "--json"]).json();
        let launchable: Vec<&str> = r["launchable"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(!launchable.contains(&"hello-world/c1"), "{launchable:?}");
        assert_eq!(launchable.len(), 7);
        let blocked = &r["not_launchable"][0];
        assert_eq!(blocked["case"], "hello-world/c1");
        assert!(
            blocked["reason"]
                .as_str()
                .unwrap()
                .starts_with("started at seq"),
            "{blocked}"
        );
        h.refused(
            &["case", "start", "canary-1", "hello-world/c1"],
            3,
            "CASE-2",
        );
    }

    #[test]
    fn resume_never_lists_an_identity_with_a_harbor_trial_directory() {
        // rule CASE-4
        let h = ready(1);
        let jobs = h.path("jobs");
        std::fs::create_dir_all(
            jobs.join("short13-kimi-2026-11-canary-1")
                .join("hello-world__canary-1-c2"),
        )
        .unwrap();
        let before = h.head_bytes();
        let r = h
            .ok(&[
                "resume",
                "canary-1",
                "--harbor-jobs",
                jobs.to_str().unwrap(),
                "--json",
            ])
            .json();
        let launchable = r["launchable"].as_array().unwrap();
        assert_eq!(launchable.len(), 7);
        assert!(!launchable.iter().any(|c| c == "hello-world/c2"));
        assert!(r["not_launchable"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("Harbor trial directory"));
        assert_eq!(
            h.head_bytes(),
            before,
            "POST-1: a recovery step launches no case and rewrites nothing"
        );
    }

    #[test]
    fn case_and_group_usage_errors() {
        let h = ready(1);
        h.refused(
            &["case", "start", "canary-1", "hello-world"],
            2,
            "TASK/TRIAL",
        );
        h.refused(
            &["case", "start", "canary-1", "hello-world/c1/replacement-xx"],
            2,
            "TASK/TRIAL",
        );
        h.refused(&["case", "start", "r9", "hello-world/c1"], 3, "LINEAGE-1");
        h.refused(
            &["case", "start", "canary-1", "hello-world/c9"],
            3,
            "CASE-8",
        );
        h.refused(
            &["case", "start", "canary-1", "hello-world/c1/replacement-02"],
            3,
            "CASE-6",
        );
        h.refused(&["case", "start", "control", "fix-git/t1"], 3, "FREEZE-7");
        h.refused(
            &[
                "group",
                "open",
                "canary-1",
                "--binary-sha256",
                "x",
                "--config-sha256",
                "y",
                "--ports",
                "1",
                "--db",
                "d",
                "--out",
                "o",
            ],
            3,
            "FREEZE-4",
        );
        h.refused(&["group", "close", "r1"], 3, "CASE-9");
        h.ok(&["group", "close", "canary-1"]);
        h.refused(
            &["case", "start", "canary-1", "hello-world/c1"],
            3,
            "CASE-9",
        );
    }

    #[test]
    fn render_config_writes_and_records_the_hash() {
        let h = ready(1);
        let out = h.path("c1.json");
        let j = h
            .ok(&[
                "case",
                "render-config",
                "canary-1",
                "hello-world/c1",
                "-o",
                out.to_str().unwrap(),
                "--json",
            ])
            .json();
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(j["blake3"], hex::encode(blake3::hash(&bytes).as_bytes()));
        let cfg: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(cfg["trial_name"], "hello-world__canary-1-c1");
        // The rendered config is the validated one, so a start with it passes GATE-7...
        h.ok(&[
            "case",
            "start",
            "canary-1",
            "hello-world/c1",
            "--config",
            out.to_str().unwrap(),
        ]);
        // ...and any other bytes do not.
        let other = h.path("other.json");
        std::fs::write(&other, [bytes.as_slice(), b" "].concat()).unwrap();
        h.refused(
            &[
                "case",
                "start",
                "canary-1",
                "hello-world/c2",
                "--config",
                other.to_str().unwrap(),
            ],
            3,
            "GATE-7",
        );
    }
}

// --- ingest ------------------------------------------------------------------

mod ingest {
    use super::Harness;
    use super::*;

    const FIX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter"
    );
    const PASS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
    );

    fn fixture(kind: &str) -> String {
        std::fs::read_to_string(format!("{FIX}/{kind}.jsonl")).unwrap()
    }

    /// The fixture with its first row edited.
    fn first_row_edited(kind: &str, edit: impl Fn(&mut serde_json::Map<String, Value>)) -> String {
        let text = fixture(kind);
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let mut v: Value = serde_json::from_str(&lines[0]).unwrap();
        edit(v.as_object_mut().unwrap());
        lines[0] = serde_json::to_string(&v).unwrap();
        lines.join("\n") + "\n"
    }

    fn frozen() -> Harness {
        let h = Harness::new();
        h.init();
        assert_eq!(h.freeze(MANIFEST, PRIVATE).code, 0);
        h.open_directly("r1");
        h
    }

    #[test]
    fn every_kind_ingests_once_and_again_appends_nothing() {
        let h = frozen();
        for kind in ["traces", "decisions", "usage", "receipts", "outcomes"] {
            let path = format!("{FIX}/{kind}.jsonl");
            let j = h.ok(&["ingest", kind, "r1", &path, "--json"]).json();
            assert_eq!(
                (j["rows"].as_u64(), j["appended"].as_u64()),
                (Some(6), Some(6)),
                "{kind}"
            );
            let before = h.head_bytes();
            let again = h.ok(&["ingest", kind, "r1", &path, "--json"]).json();
            assert_eq!(
                again["appended"], 0,
                "{kind}: re-ingesting the same file appends nothing"
            );
            assert_eq!(h.head_bytes(), before);
        }
        // Each file is recorded as an artifact with its BLAKE3.
        let log = h.ok(&["log"]).stdout;
        assert_eq!(log.matches("\"bitrouter_usage\"").count(), 1);
        assert!(
            log.contains("\"recompute_matches\":true"),
            "the kimi row recomputes to its charge"
        );
        assert_eq!(h.ok(&["verify", "--json"]).json()["ok"], true);
    }

    #[test]
    fn the_same_content_under_another_path_is_refused_naming_both() {
        // rule LEDGER-2: the rows' keys follow the content, the artifact
        // names the path; a copy is refused with exit 3, nothing appended.
        let h = frozen();
        let path = format!("{FIX}/usage.jsonl");
        h.ok(&["ingest", "usage", "r1", &path]);
        let copy = h.path("copy-of-usage.jsonl");
        std::fs::copy(&path, &copy).unwrap();
        let before = h.head_bytes();
        let r = h.run(&["ingest", "usage", "r1", copy.to_str().unwrap()]);
        assert_eq!(r.code, 3, "{}", r.stderr);
        assert!(
            r.stderr
                .contains("copy-of-usage.jsonl: a file with the same content")
                && r.stderr
                    .contains("under another path; nothing was appended")
                && r.stderr.contains("LEDGER-2"),
            "{}",
            r.stderr
        );
        assert_eq!(h.head_bytes(), before);
    }

    #[test]
    fn malformed_files_exit_2_naming_file_line_and_field_and_append_nothing() {
        let h = frozen();
        let remove = |k: &'static str| {
            move |m: &mut serde_json::Map<String, Value>| {
                m.remove(k);
            }
        };
        let set = |k: &'static str, v: Value| {
            move |m: &mut serde_json::Map<String, Value>| {
                m.insert(k.to_string(), v.clone());
            }
        };
        let nested = |a: &'static str, b: &'static str, v: Value| {
            move |m: &mut serde_json::Map<String, Value>| {
                m.get_mut(a)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .insert(b.to_string(), v.clone());
            }
        };
        let cases: Vec<(&str, String, &str)> = vec![
            // traces
            (
                "traces",
                first_row_edited("traces", remove("id")),
                "line 1: field id",
            ),
            (
                "traces",
                first_row_edited("traces", set("harness", json!("robot"))),
                "field harness",
            ),
            (
                "traces",
                first_row_edited("traces", set("protocol", json!(7))),
                "field protocol",
            ),
            (
                "traces",
                first_row_edited("traces", nested("outcome", "http_status", json!("200"))),
                "field outcome.http_status",
            ),
            (
                "traces",
                first_row_edited("traces", nested("outcome", "status", json!("done"))),
                "field outcome.status",
            ),
            (
                "traces",
                fixture("traces").replacen('\n', "\n\n", 1),
                "line 2",
            ),
            ("traces", fixture("traces")[..40].to_string(), "line 1"),
            // decisions
            (
                "decisions",
                first_row_edited("decisions", set("reason", json!("guesswork"))),
                "field reason",
            ),
            (
                "decisions",
                first_row_edited("decisions", set("pinned", json!("yes"))),
                "field pinned",
            ),
            (
                "decisions",
                first_row_edited(
                    "decisions",
                    set("ingress_request_id_sha256", json!("sha256:xyz")),
                ),
                "field ingress_request_id_sha256",
            ),
            (
                "decisions",
                first_row_edited("decisions", remove("input_model")),
                "field input_model",
            ),
            (
                "decisions",
                first_row_edited("decisions", remove("locked")),
                "field locked",
            ),
            // usage (SETTLE-1: missing is never zero)
            (
                "usage",
                first_row_edited("usage", remove("cache_read_tokens")),
                "cache_read_tokens",
            ),
            (
                "usage",
                first_row_edited("usage", remove("uncached_input_tokens")),
                "uncached_input_tokens",
            ),
            (
                "usage",
                first_row_edited("usage", remove("reasoning_tokens")),
                "reasoning_tokens",
            ),
            (
                "usage",
                first_row_edited("usage", |m| {
                    let p = m["prompt_tokens"].as_u64().unwrap();
                    m.insert("prompt_tokens".into(), json!(p + 1));
                }),
                "prompt",
            ),
            (
                "usage",
                first_row_edited("usage", |m| {
                    let p = m["completion_tokens"].as_u64().unwrap();
                    m.insert("completion_tokens".into(), json!(p + 1));
                }),
                "completion",
            ),
            (
                "usage",
                first_row_edited("usage", set("charge_status", json!("maybe"))),
                "field charge_status",
            ),
            (
                "usage",
                first_row_edited("usage", set("output_tokens", json!(-5))),
                "field output_tokens",
            ),
            (
                "usage",
                first_row_edited("usage", set("output_tokens", json!(1e30))),
                "field output_tokens",
            ),
            (
                "usage",
                first_row_edited("usage", remove("request_id")),
                "request_id",
            ),
            (
                "usage",
                first_row_edited("usage", set("usage_origin", json!("guessed"))),
                "field usage_origin",
            ),
            // receipts
            (
                "receipts",
                first_row_edited("receipts", set("state", json!("done"))),
                "field state",
            ),
            (
                "receipts",
                first_row_edited("receipts", remove("final_charge_micro_usd")),
                "final_charge_micro_usd",
            ),
            (
                "receipts",
                first_row_edited("receipts", set("final_charge_micro_usd", json!(-1))),
                "final_charge_micro_usd",
            ),
            (
                "receipts",
                first_row_edited("receipts", |m| {
                    m.get_mut("usage")
                        .unwrap()
                        .as_object_mut()
                        .unwrap()
                        .remove("cache_write_tokens");
                }),
                "cache_write_tokens",
            ),
            // outcomes
            (
                "outcomes",
                first_row_edited("outcomes", set("reward", json!("1"))),
                "field reward",
            ),
            (
                "outcomes",
                first_row_edited("outcomes", remove("task_id")),
                "field task_id",
            ),
            (
                "outcomes",
                // without its trial's name too: a row naming its trial is
                // a task-scoped outcome (JOIN-3)
                first_row_edited("outcomes", |m: &mut serde_json::Map<String, Value>| {
                    m.remove("request_id");
                    m.remove("trial_name");
                }),
                "request_id",
            ),
            (
                "outcomes",
                "{\"request_id\": \"x\",\n".to_string(),
                "line 1",
            ),
            // any kind
            (
                "usage",
                String::from_utf8_lossy(b"\xff\xfe not utf-8\n").into_owned() + "\u{fffd}",
                "line 1",
            ),
        ];
        assert!(cases.len() >= 30);
        for (i, (kind, text, needle)) in cases.iter().enumerate() {
            let path = h.path(&format!("bad-{i}.jsonl"));
            std::fs::write(&path, text).unwrap();
            let r = h.refused(&["ingest", kind, "r1", path.to_str().unwrap()], 2, needle);
            assert!(
                r.stderr.contains(&path.display().to_string()),
                "case {i}: the message names the file: {}",
                r.stderr
            );
        }
        h.refused(
            &["ingest", "usage", "r1", "/nonexistent/usage.jsonl"],
            2,
            "cannot read",
        );
        h.refused(
            &["ingest", "usage", "r1", "/work/../nonexistent"],
            2,
            "cannot read",
        );
    }

    #[test]
    fn a_credential_in_a_row_is_refused_unechoed() {
        // rule FREEZE-2
        let h = frozen();
        let secret = format!("{}{}", "sk-ant-api03-", "Z".repeat(40) + "7q");
        let text = first_row_edited("outcomes", |m| {
            m.insert("failed_reason".into(), json!(format!("auth {secret}")));
        });
        let path = h.path("secret.jsonl");
        std::fs::write(&path, text).unwrap();
        let kept = h.refused_kept(
            &["ingest", "outcomes", "r1", path.to_str().unwrap()],
            "FREEZE-2",
            "FREEZE-2",
        );
        let log = h.ok(&["log"]).stdout;
        assert!(
            !log.contains(&secret) && !kept.to_string().contains(&secret),
            "BIND-12: nothing of the refused file's content is kept"
        );
    }

    #[test]
    fn evidence_binds_only_to_a_targeted_unsealed_group() {
        // rule LINEAGE-1
        let h = frozen();
        let path = format!("{FIX}/usage.jsonl");
        h.refused(&["ingest", "usage", "r3", &path], 3, "LINEAGE-1");
        h.refused(
            &["ingest", "usage", "nope/r1", &path],
            2,
            "no frozen lineage",
        );
    }

    /// A Harbor jobs dir with one trial named for `case start`.
    fn harbor_tree(
        h: &Harness,
        name: &str,
        trial_name: &str,
        edit: impl Fn(&mut Value),
    ) -> PathBuf {
        let job = h.path(name).join("short13-job");
        let dir = job.join(trial_name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(PASS).unwrap()).unwrap();
        v["trial_name"] = json!(trial_name);
        v["task_name"] = json!(trial_name.split("__").next().unwrap());
        edit(&mut v);
        std::fs::write(
            dir.join("result.json"),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
        .unwrap();
        std::fs::create_dir_all(job.join("still-running__canary-1-c2")).unwrap();
        h.path(name)
    }

    #[test]
    fn harbor_results_bind_to_started_cases_once() {
        // rule CASE-3, rule GATE-6, rule LEDGER-2
        let h = super::cases::ready_harness(1);
        h.ok(&["case", "start", "canary-1", "hello-world/c1"]);
        let jobs = harbor_tree(&h, "jobs", "hello-world__canary-1-c1", |_| {});
        let j = h
            .ok(&[
                "ingest",
                "harbor",
                "canary-1",
                jobs.to_str().unwrap(),
                "--json",
            ])
            .json();
        assert_eq!(j["results"], 1);
        assert_eq!(j["incomplete"][0], "still-running__canary-1-c2");
        let before = h.head_bytes();
        let again = h
            .ok(&[
                "ingest",
                "harbor",
                "canary-1",
                jobs.to_str().unwrap(),
                "--json",
            ])
            .json();
        assert_eq!(again["appended"], 0);
        assert_eq!(h.head_bytes(), before);
        // A changed result for the recorded trial: kept, and the case no
        // longer counts (BIND-11); again, nothing more is appended.
        let changed = harbor_tree(&h, "jobs2", "hello-world__canary-1-c1", |v| {
            v["verifier_result"]["rewards"]["reward"] = json!(0.0)
        });
        let before = h.head_bytes();
        let r = h.ok(&["ingest", "harbor", "canary-1", changed.to_str().unwrap()]);
        assert!(r.stderr.contains("BIND-11"), "{}", r.stderr);
        assert_ne!(h.head_bytes(), before, "BIND-11: the second result is kept");
        let again = h
            .ok(&[
                "ingest",
                "harbor",
                "canary-1",
                changed.to_str().unwrap(),
                "--json",
            ])
            .json();
        assert_eq!(again["appended"], 0);
        // A result for a case never started through the ledger.
        let foreign = harbor_tree(&h, "jobs3", "hello-world__canary-1-c3", |_| {});
        h.refused_kept(
            &["ingest", "harbor", "canary-1", foreign.to_str().unwrap()],
            "GATE-6",
            "GATE-6",
        );
        // Harbor's own default names do not map to a case.
        let unmapped = harbor_tree(&h, "jobs4", "hello-world__Xk3pQ9a", |_| {});
        h.refused(
            &["ingest", "harbor", "canary-1", unmapped.to_str().unwrap()],
            2,
            "trial names",
        );
        // A malformed result.json.
        let broken = harbor_tree(&h, "jobs5", "hello-world__canary-1-c1", |v| {
            v.as_object_mut().unwrap().remove("task_checksum");
        });
        h.refused(
            &["ingest", "harbor", "canary-1", broken.to_str().unwrap()],
            2,
            "task_checksum",
        );
    }
}

// --- gates the tool observes (loopback only) ----------------------------------

mod checks {
    use super::Harness;
    use super::*;
    use std::io::{Read, Write as _};
    use std::net::TcpListener;

    /// A one-shot-per-connection HTTP server on 127.0.0.1 answering `status`.
    pub(super) fn server(status: u16, body: &'static str) -> (String, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            // Serve a bounded number of connections, then stop.
            for stream in listener.incoming().take(4) {
                let Ok(mut s) = stream else { break };
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nx-bitrouter-request-id: sentinel-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes());
            }
        });
        (url, handle)
    }

    fn checks_in_log(h: &Harness) -> Vec<Value> {
        h.ok(&["log"])
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "check_recorded.v1")
            .collect()
    }

    #[test]
    fn daemon_health_is_recorded_pass_or_fail() {
        // rule GATE-3
        let h = super::cases::ready_harness(1);
        let before = checks_in_log(&h).len();
        let (url, _srv) = server(200, "{\"ok\":true}");
        let r = h.run(&[
            "check",
            "daemon-health",
            "--group",
            "canary-1",
            "--url",
            &format!("{url}/health"),
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        // A closed port: the check ran and does not hold (exit 1), and is still recorded.
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let r = h.run(&[
            "check",
            "daemon-health",
            "--group",
            "canary-1",
            "--url",
            &format!("http://{closed}/health"),
        ]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let checks = checks_in_log(&h);
        assert_eq!(checks.len(), before + 2);
        let last_two: Vec<&str> = checks[before..]
            .iter()
            .map(|c| c["payload"]["status"].as_str().unwrap())
            .collect();
        assert_eq!(last_two, ["pass", "fail"]);
        assert_eq!(checks[before]["payload"]["check"], "daemon_health");
    }

    #[test]
    fn a_validated_config_is_what_case_start_accepts() {
        // rule GATE-7
        let h = super::cases::ready_harness(1);
        let cfg = h.path("c2.json");
        h.ok(&[
            "case",
            "render-config",
            "canary-1",
            "hello-world/c2",
            "-o",
            cfg.to_str().unwrap(),
        ]);
        let mut edited = std::fs::read(&cfg).unwrap();
        edited.extend_from_slice(b"\n");
        let other = h.path("c2-edited.json");
        std::fs::write(&other, &edited).unwrap();
        // A failing validator is recorded and exits 1; the config stays unvalidated.
        h.stand_in_validator(3);
        let r = h.run(&["check", "config", "--config", other.to_str().unwrap()]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        h.refused(
            &[
                "case",
                "start",
                "canary-1",
                "hello-world/c2",
                "--config",
                other.to_str().unwrap(),
            ],
            3,
            "GATE-7",
        );
        // A passing validator makes exactly those bytes launchable.
        h.stand_in_validator(0);
        h.ok(&["check", "config", "--config", other.to_str().unwrap()]);
        h.ok(&[
            "case",
            "start",
            "canary-1",
            "hello-world/c2",
            "--config",
            other.to_str().unwrap(),
        ]);
    }

    #[test]
    fn check_config_runs_only_the_frozen_validator_bind_7() {
        // rule BIND-7 (issue 16 item 10): `check config -- true` no longer
        // satisfies GATE-7; only the frozen validator, its program's BLAKE3
        // matched, runs.
        let h = super::cases::ready_harness(1);
        let cfg = h.path("c3.json");
        h.ok(&[
            "case",
            "render-config",
            "canary-1",
            "hello-world/c3",
            "-o",
            cfg.to_str().unwrap(),
        ]);
        let before = h.head_bytes();
        // No frozen validator program present: refused, nothing recorded.
        h.refused(
            &["check", "config", "--config", cfg.to_str().unwrap()],
            3,
            "BIND-7",
        );
        h.stand_in_validator(0);
        // Another command than the frozen one: refused, nothing ran.
        h.refused(
            &[
                "check",
                "config",
                "--config",
                cfg.to_str().unwrap(),
                "--",
                "true",
            ],
            3,
            "BIND-7",
        );
        assert_eq!(h.head_bytes(), before);
        // A validator program with other bytes: refused.
        let program = h.path("tools/harbor/validate_trial_config.py");
        std::fs::write(&program, "print('ok')\n").unwrap();
        h.refused(
            &["check", "config", "--config", cfg.to_str().unwrap()],
            3,
            "BIND-7",
        );
        assert_eq!(h.head_bytes(), before);
        // The frozen validator: recorded with its program's BLAKE3.
        h.stand_in_validator(0);
        h.ok(&["check", "config", "--config", cfg.to_str().unwrap()]);
        let log = h.ok(&["log"]).stdout;
        assert!(log.contains("\"program_blake3\""), "{log}");
    }

    #[test]
    fn a_429_on_one_exact_target_never_marks_its_siblings() {
        // rule PLANE-2, rule GATE-3
        let h = super::cases::ready_harness(1);
        let (limited, _a) = server(429, "{\"error\":\"rate limited\"}");
        let (fine, _b) = server(200, "{\"id\":\"chatcmpl-1\",\"choices\":[]}");
        let r = h.run(&["check", "sentinel", "--route", "strong", "--url", &limited]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let r = h.run(&["check", "sentinel", "--route", "balanced", "--url", &fine]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let checks = checks_in_log(&h);
        let last = &checks[checks.len() - 2..];
        assert_eq!(last[0]["payload"]["target"], "anthropic:claude-sonnet-4-5");
        assert_eq!(last[0]["payload"]["status"], "fail");
        assert_eq!(
            last[1]["payload"]["target"],
            "ambient:moonshotai/kimi-k2.7-code"
        );
        assert_eq!(last[1]["payload"]["status"], "pass");
        // The canary needs every route: only the limited target blocks it.
        let r = h.refused(
            &["case", "start", "canary-1", "hello-world/c1"],
            3,
            "GATE-3",
        );
        assert!(
            r.stderr.contains("anthropic:claude-sonnet-4-5"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("kimi"), "{}", r.stderr);
    }
}

/// Verdicts through the CLI: `gate`, `replay`, `audit`, `group seal`,
/// `case refusal | invalidate`, `feedback record`, `control`, `lineage`.
mod verdicts {
    use super::Harness;
    use super::*;
    use benchledger::schema::events::*;

    const L: &str = "short13-kimi-2026-11";

    /// A harness holding a committed replay-test ledger.
    fn recorded(name: &str) -> Harness {
        let h = Harness::new();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("replay-tests/ledgers/{name}.jsonl"));
        h.ok(&["import", "--jsonl", src.to_str().unwrap()]);
        h
    }

    use super::cases::append;

    /// The README's worked session, command for command: freeze, sign off,
    /// record the gates, start a case with a stand-in command that leaves a
    /// Harbor trial directory, ingest its result, resume. Identity, quota and
    /// residue need the `aws` feature and are appended here as recorded
    /// observations (tools/moto/test-aws.sh runs those verbs against moto).
    #[test]
    fn the_readme_worked_session_runs_from_freeze_to_resume() {
        // rule FREEZE-7, GATE-6, CASE-2, CASE-3, CASE-4
        let h = Harness::new();
        h.init();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let m = dir.join("ledger-schema/examples/manifest.toml");
        let p = dir.join("ledger-schema/examples/manifest.private.toml");
        h.ok(&[
            "manifest",
            "freeze",
            m.to_str().unwrap(),
            "--private",
            p.to_str().unwrap(),
        ]);
        h.sign_off();
        let frozen = benchledger::method::freeze::freeze(MANIFEST, "m", PRIVATE, "p").unwrap();
        let fm = &frozen.manifest.public;
        let g = fm.groups.iter().find(|g| g.name == "canary-1").unwrap();
        h.ok(&[
            "group",
            "open",
            "canary-1",
            "--binary-sha256",
            &fm.software.bitrouter_binary_sha256,
            "--config-sha256",
            &fm.software.bitrouter_config_sha256["canary-1"],
            "--ports",
            &g.ports[0].to_string(),
            "--db",
            &g.db_path,
            "--out",
            &g.out_dir,
        ]);
        // Gates (GATE-1..3, GATE-7).
        append(
            &h,
            benchledger::testkit::scenario::aws_observations(&frozen.v1_view(), "canary-1"),
        );
        let (url, _srv) = super::checks::server(200, "{\"ok\":true}");
        h.ok(&[
            "check",
            "daemon-health",
            "--group",
            "canary-1",
            "--url",
            &format!("{url}/health"),
        ]);
        for route in ["strong", "balanced", "economy"] {
            let (url, _s) = super::checks::server(200, "{\"id\":\"x\"}");
            h.ok(&[
                "check", "sentinel", "--route", route, "--group", "canary-1", "--url", &url,
            ]);
        }
        let cfg = h.path("c1.json");
        h.ok(&[
            "case",
            "render-config",
            "canary-1",
            "hello-world/c1",
            "-o",
            cfg.to_str().unwrap(),
        ]);
        // BIND-7: the frozen validator runs, not a command of the caller's
        h.stand_in_validator(0);
        h.ok(&["check", "config", "--config", cfg.to_str().unwrap()]);
        // Start with a stand-in for `harbor trial start`: it leaves the
        // trial directory and result.json Harbor would.
        // The result binds to this launch (BIND-1): the frozen task
        // checksum, the launched config embedded, timestamps of now.
        let trial = h.path("jobs/short13-kimi-2026-11-canary-1/hello-world__canary-1-c1");
        let pass = dir.join("../shared/fixtures/harbor-0.25.0/trial-result.pass.json");
        let mut result: Value =
            serde_json::from_str(&std::fs::read_to_string(&pass).unwrap()).unwrap();
        let now =
            benchledger::schema::time::rfc3339_utc_ns(benchledger::schema::time::now_utc_ns());
        let checksum =
            benchledger::method::binding::frozen_task_checksum(fm, "canary-1", "hello-world")
                .unwrap();
        result["trial_name"] = json!("hello-world__canary-1-c1");
        result["task_name"] = json!("hello-world");
        result["task_checksum"] = json!(checksum);
        result["config"] = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
        result["started_at"] = json!(now);
        result["finished_at"] = json!(now);
        // every phase of this launch too (BIND-11)
        for phase in [
            "environment_setup",
            "agent_setup",
            "agent_execution",
            "verifier",
        ] {
            if result[phase].is_object() {
                result[phase]["started_at"] = json!(now);
                result[phase]["finished_at"] = json!(now);
            }
        }
        let prepared = h.path("prepared-result.json");
        std::fs::write(&prepared, serde_json::to_vec_pretty(&result).unwrap()).unwrap();
        let script = format!(
            "mkdir -p {t} && cp {p} {t}/result.json",
            t = trial.display(),
            p = prepared.display()
        );
        let started = h
            .ok(&[
                "case",
                "start",
                "canary-1",
                "hello-world/c1",
                "--config",
                cfg.to_str().unwrap(),
                "--json",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .json();
        assert_eq!(started["exit_code"], 0, "{started}");
        let jobs = h.path("jobs");
        let ing = h
            .ok(&[
                "ingest",
                "harbor",
                "canary-1",
                jobs.to_str().unwrap(),
                "--json",
            ])
            .json();
        assert_eq!(ing["results"], 1, "{ing}");
        // A result.json naming another task is never this case's evidence.
        let other = h.path("other/job-1/hello-world__canary-1-c1");
        std::fs::create_dir_all(&other).unwrap();
        let text = std::fs::read_to_string(trial.join("result.json")).unwrap();
        std::fs::write(
            other.join("result.json"),
            text.replace(
                "\"task_name\": \"hello-world\"",
                "\"task_name\": \"fix-git\"",
            ),
        )
        .unwrap();
        h.refused_kept(
            &[
                "ingest",
                "harbor",
                "canary-1",
                h.path("other").to_str().unwrap(),
            ],
            "CASE-8",
            "CASE-8",
        );
        let resume = h
            .ok(&[
                "resume",
                "canary-1",
                "--harbor-jobs",
                h.path("jobs").to_str().unwrap(),
                "--json",
            ])
            .json();
        let text = resume.to_string();
        assert!(text.contains("terminal_valid"), "{text}");
        let again = h.run(&[
            "case",
            "start",
            "canary-1",
            "hello-world/c1",
            "--config",
            cfg.to_str().unwrap(),
        ]);
        assert_eq!(again.code, 3, "{}", again.stderr);
        assert!(again.stderr.contains("CASE-2"), "{}", again.stderr);
    }

    #[test]
    fn gate_replay_audit_and_lineage_show_on_a_recorded_lineage() {
        // rule VERDICT-1, VERDICT-4, LINEAGE-4
        let h = recorded("short13-accepted");
        let g = h.ok(&["gate", "control", "--json"]).json();
        assert_eq!(g["status"], "accepted");
        assert_eq!(g["rows"].as_array().unwrap().len(), 13);
        assert_eq!(g["sealed"]["status"], "accepted");
        let human = h.ok(&["gate", &format!("{L}/r1")]).stdout;
        assert!(human.contains("settlement    holds"), "{human}");
        let r = h.ok(&["replay", "--json"]).json();
        assert_eq!(r["lineages"][0]["lineage"]["complete"], true);
        assert_eq!(r["controls"].as_array().unwrap().len(), 1);
        let at = h.ok(&["replay", "--at", "100", "--json"]).json();
        assert_eq!(at["head_seq"], 100);
        assert_eq!(at["lineages"][0]["lineage"]["complete"], false);
        let a = h.ok(&["audit", "--json"]).json();
        assert_eq!(
            (a["ok"].clone(), a["sealed"].clone(), a["differing"].clone()),
            (json!(true), json!(4), json!(0))
        );
        let show = h.ok(&["lineage", "show", "--json"]).json();
        assert_eq!(show["complete"], true);
        assert_eq!(show["next_group"], Value::Null);
        assert_eq!(
            h.ok(&["control", "list", "--json"]).json()["controls"][0]["group"]["group"],
            "control"
        );
        let past = h.run(&["replay", "--at", "99999"]);
        assert_eq!(past.code, 2, "{}", past.stderr);
    }

    #[test]
    fn gate_exits_1_for_a_rejected_group_and_names_the_row() {
        // rule VERDICT-1, JOIN-1
        let h = recorded("rejected-join-duplicate-id");
        let r = h.run(&["gate", "control"]);
        assert_eq!(r.code, 1);
        assert!(r.stdout.contains("rejected_join"), "{}", r.stdout);
        assert!(r.stdout.contains("requests      FAILS"), "{}", r.stdout);
        // an unknown group is the LINEAGE-1 refusal, as on every verb
        let unknown = h.run(&["gate", "r9"]);
        assert_eq!(unknown.code, 3, "{}", unknown.stderr);
    }

    #[test]
    fn audit_exits_1_naming_group_and_row_when_a_verdict_does_not_re_derive() {
        // rule VERDICT-4
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("replay-tests/scenarios/rejected-cleanup-stray-volume.toml"),
        )
        .unwrap();
        let spec: benchledger::testkit::scenario::Scenario = toml::from_str(&text).unwrap();
        let (mut world, _) = benchledger::testkit::scenario::run(&spec).unwrap();
        for (_, e) in &mut world.records {
            if let Event::GroupSealed(s) = e {
                if s.group.group == "control" {
                    s.rows.iter_mut().for_each(|r| r.holds = true);
                    s.status = "accepted".into();
                }
            }
        }
        let h = Harness::new();
        drop(world.write(&h.ledger()).unwrap());
        h.ok(&["verify"]);
        let r = h.run(&["audit"]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stdout.contains(&format!("{L}/control")), "{}", r.stdout);
        assert!(
            r.stdout
                .contains("row \"cleanup\": attested holds, derived fails"),
            "{}",
            r.stdout
        );
    }

    #[test]
    fn refusal_invalidate_and_seal_of_a_canary_through_the_cli() {
        // rule CASE-6, CASE-3, CASE-1, CASE-9, VERDICT-4
        let h = cases::ready_harness(1);
        h.refused(&["group", "seal", "canary-1"], 3, "CASE-9");
        h.ok(&["case", "start", "canary-1", "hello-world/c1", "--", "true"]);
        let ev = h.path("403.txt");
        std::fs::write(&ev, "HTTP/1.1 403 Forbidden\n{\"error\":\"policy\"}\n").unwrap();
        let evs = ev.to_str().unwrap();
        let args = |status: &'static str| -> Vec<String> {
            [
                "case",
                "refusal",
                "canary-1",
                "hello-world/c1",
                "--class",
                "provider_policy_refusal",
                "--http-status",
                status,
                "--evidence",
                evs,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        };
        let a429 = args("429");
        h.refused(
            &a429.iter().map(String::as_str).collect::<Vec<_>>(),
            3,
            "CASE-6",
        );
        let a403 = args("403");
        h.ok(&a403.iter().map(String::as_str).collect::<Vec<_>>());
        let secret = h.path("secret.txt");
        std::fs::write(&secret, format!("key AKIA{}\n", "ABCDEFGHIJKLMNOP")).unwrap();
        let r = h.refused(
            &[
                "case",
                "invalidate",
                "canary-1",
                "hello-world/c1",
                "--reason",
                "controller_crash",
                "--evidence",
                secret.to_str().unwrap(),
            ],
            3,
            "FREEZE-2",
        );
        assert!(
            !r.stderr.contains("ABCDEFGHIJKLMNOP"),
            "the value is never echoed"
        );
        let listing = h.path("listing.txt");
        std::fs::write(
            &listing,
            "hello-world__canary-1-c1/\n  config.json\n  (no result.json)\n",
        )
        .unwrap();
        let inv = [
            "case",
            "invalidate",
            "canary-1",
            "hello-world/c1",
            "--reason",
            "controller_crash",
            "--evidence",
            listing.to_str().unwrap(),
        ];
        h.ok(&inv);
        h.refused(&inv, 3, "CASE-1");
        let resume = h.ok(&["resume", "canary-1", "--json"]).json();
        assert!(resume.to_string().contains("terminal_invalid"), "{resume}");
        h.ok(&["group", "close", "canary-1"]);
        h.refused(&["group", "seal", "canary-1"], 3, "cleanup audit");
        let gref = GroupRef {
            lineage: L.into(),
            group: "canary-1".into(),
        };
        append(
            &h,
            vec![
                Event::MonitorSampled(MonitorSampled {
                    group: gref.clone(),
                    sandbox_count: 1,
                    instance_ids: vec!["i-0abc".into()],
                }),
                Event::CleanupAudited(CleanupAudited {
                    group: gref,
                    region: "us-east-1".into(),
                    identity: "arn:aws:sts::***:assumed-role/x/***".into(),
                    filters: vec![],
                    tracked_instance_ids: vec![],
                    found: vec![],
                    excluded_central_instance_id: None,
                    status: Status::Pass,
                    error: None,
                }),
            ],
        );
        let s = h.ok(&["group", "seal", "canary-1", "--json"]).json();
        assert_eq!(s["status"], "rejected_runtime");
        assert!(s["failing_rows"]
            .as_array()
            .unwrap()
            .contains(&json!("runtime")));
        h.refused(&["group", "seal", "canary-1"], 3, "VERDICT-4");
        h.refused(
            &a403.iter().map(String::as_str).collect::<Vec<_>>(),
            3,
            "VERDICT-4",
        );
        assert_eq!(h.run(&["gate", "canary-1"]).code, 1);
        h.ok(&["audit"]);
    }

    #[test]
    fn feedback_control_reuse_and_lineage_stop_refusals_leave_the_head() {
        // rule LINEAGE-3, LINEAGE-6, VERDICT-3
        let h = recorded("short13-accepted");
        let (b, a) = ("a".repeat(64), "b".repeat(64));
        h.refused(
            &["feedback", "record", "r1", "--before", &b, "--after", &a],
            3,
            "LINEAGE-3",
        );
        h.refused(
            &["feedback", "record", "r2", "--before", "xyz", "--after", &a],
            2,
            "--before",
        );
        h.ok(&["lineage", "stop", "--reason", "provider incident"]);
        let show = h.ok(&["lineage", "show", "--json"]).json();
        assert_eq!(show["stopped"][1], "VERDICT-3");
        h.refused(&["lineage", "stop", "--reason", "again"], 3, "VERDICT-3");
        let h = recorded("control-reuse");
        h.refused(
            &[
                "control",
                "reuse",
                "short13-kimi-2027-01",
                "--control",
                "short13-kimi-2026-11/control",
            ],
            3,
            "LINEAGE-6",
        );
        h.refused(
            &[
                "control",
                "reuse",
                "short13-kimi-2026-12",
                "--control",
                "short13-kimi-2026-11/control",
            ],
            3,
            "already reuses",
        );
    }
}
