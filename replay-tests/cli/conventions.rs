//! CLI conventions (issue 33 item 8): `-` reads stdin wherever a file is
//! read, within the file's bound; every append is announced once.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Harness, Run, MANIFEST, PRIVATE};

/// Runs `args` with `input` on stdin (written from a thread: a verb that
/// stops reading early closes the pipe, which is not an error here).
fn run_stdin(h: &Harness, args: &[&str], input: Vec<u8>) -> Run {
    let mut child = h
        .cmd()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out.into()
}

/// The recorded accepted lineage, a signed checkpoint `cp.note` of it and
/// alice's verifier key: (note path, verifier key).
fn accepted(h: &Harness) -> (String, String) {
    let note = super::docs::accepted_with_checkpoint(h);
    let vkey = benchledger::testkit::examples::signer("alice")
        .verifier()
        .encode();
    (note, vkey)
}

/// The same command with the file at `at` replaced by `-` and given on
/// stdin: the same exit code and stdout.
fn same_through_stdin(h: &Harness, args: &[&str], at: usize) -> (Run, Run) {
    let by_file = h.run(args);
    let bytes = std::fs::read(args[at]).unwrap();
    let mut dashed = args.to_vec();
    dashed[at] = "-";
    let by_stdin = run_stdin(h, &dashed, bytes);
    assert_eq!(
        (by_stdin.code, &by_stdin.stdout),
        (by_file.code, &by_file.stdout),
        "{dashed:?} on stdin differs from {args:?}: {}",
        by_stdin.stderr
    );
    (by_file, by_stdin)
}

#[test]
fn dash_reads_stdin_as_the_file_would_be_read() {
    let h = Harness::new();
    let (note, vkey) = accepted(&h);
    // A signed note: checkpoint verify (the auditor's memory aside: the
    // first run remembers the size the second finds), prove inclusion,
    // prove consistency.
    let verify = |note: &str, input: Option<Vec<u8>>| {
        let args = ["checkpoint", "verify", "--vkey", &vkey, note, "--json"];
        let r = match input {
            Some(bytes) => run_stdin(&h, &args, bytes),
            None => h.run(&args),
        };
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let mut v = r.json();
        assert_eq!(v["ok"], true);
        v.as_object_mut().unwrap().remove("auditor");
        v
    };
    let by_file = verify(&note, None);
    let by_stdin = verify("-", Some(std::fs::read(&note).unwrap()));
    assert_eq!(by_stdin, by_file);
    let (r, _) = same_through_stdin(
        &h,
        &["prove", "inclusion", "--checkpoint", &note, "3", "--json"],
        3,
    );
    assert!(r.json()["hashes"].is_array(), "{}", r.stderr);
    same_through_stdin(&h, &["prove", "consistency", &note, &note], 3);
    // expect: the expectation file, and the ledger as an export.
    let wrong = h.path("wrong.toml");
    std::fs::write(&wrong, "[groups.control]\nstatus = \"rejected_join\"\n").unwrap();
    let export = h.path("ledger.jsonl");
    h.ok(&["export", "--jsonl", "-o", export.to_str().unwrap()]);
    let ledger = h.ledger().display().to_string();
    let differences = |r: &Run| {
        assert_eq!(r.code, 1, "a wrong expectation: {}", r.stderr);
        r.json()["differences"].clone()
    };
    let by_file = h.run(&["expect", &ledger, wrong.to_str().unwrap(), "--json"]);
    let text = std::fs::read(&wrong).unwrap();
    let by_stdin = run_stdin(&h, &["expect", &ledger, "-", "--json"], text.clone());
    assert_eq!(differences(&by_stdin), differences(&by_file));
    assert!(!differences(&by_file).as_array().unwrap().is_empty());
    assert_eq!(by_stdin.json()["expect"], "- (stdin)");
    let from_export = run_stdin(
        &h,
        &["expect", "-", wrong.to_str().unwrap(), "--json"],
        std::fs::read(&export).unwrap(),
    );
    assert_eq!(differences(&from_export), differences(&by_file));
    // manifest freeze: the manifest on stdin freezes the same lineage.
    let summary = |r: &Run| {
        let v = r.json();
        assert_eq!(r.code, 0, "{}", r.stderr);
        [
            "lineage",
            "manifest_blake3",
            "task_manifest_blake3",
            "lineage_key",
            "control_key",
        ]
        .map(|k| v[k].clone())
    };
    let a = Harness::new();
    a.init();
    let by_file = a.freeze(MANIFEST, PRIVATE);
    let b = Harness::new();
    b.init();
    let (_, p) = b.manifest_files("m", MANIFEST, PRIVATE);
    let by_stdin = run_stdin(
        &b,
        &["manifest", "freeze", "-", "--private", &p, "--json"],
        MANIFEST.as_bytes().to_vec(),
    );
    assert_eq!(summary(&by_stdin), summary(&by_file));
    assert!(summary(&by_file)[1].is_string());
    // ingest: the same rows appended, the file's BLAKE3 the same; the
    // artifact's path is `-`.
    let traces = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter/traces.jsonl"
    );
    let rows = |h: &Harness, file: &str, input: Option<Vec<u8>>| {
        let args = ["ingest", "traces", "r1", file, "--json"];
        let r = match input {
            Some(bytes) => run_stdin(h, &args, bytes),
            None => h.run(&args),
        };
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let v = r.json();
        (
            v["rows"].clone(),
            v["appended"].clone(),
            v["file_blake3"].clone(),
        )
    };
    a.open_directly("r1");
    b.open_directly("r1");
    let by_file = rows(&a, traces, None);
    let by_stdin = rows(&b, "-", Some(std::fs::read(traces).unwrap()));
    assert_eq!(by_stdin, by_file);
    assert_eq!(by_file.1, 6, "{by_file:?}");
    assert!(by_file.2.is_string(), "{by_file:?}");
    let log = b.ok(&["log", "--kind", "artifact_recorded"]).stdout;
    assert!(log.contains("\"path\":\"-\""), "{log}");
}

#[test]
fn stdin_past_the_file_bound_is_refused_naming_it() {
    let max = benchledger::limits::TEXT_INPUT_FILE_BYTES_MAX as usize;
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let (_, p) = h.manifest_files("m", MANIFEST, PRIVATE);
    // The bound itself is read (and refused as a manifest, not by size);
    // one byte more is refused by size, before anything is parsed.
    let mut at_bound = MANIFEST.as_bytes().to_vec();
    at_bound.resize(max, b'\n');
    let r = run_stdin(
        &h,
        &["manifest", "freeze", "-", "--private", &p],
        at_bound.clone(),
    );
    assert!(
        !r.stderr.contains(&format!("limit of {max} bytes")),
        "{}",
        r.stderr
    );
    at_bound.push(b'\n');
    let r = run_stdin(&h, &["manifest", "freeze", "-", "--private", &p], at_bound);
    assert_eq!(r.code, 2, "the documented bad-input exit: {}", r.stderr);
    assert!(
        r.stderr.contains("- (stdin)") && r.stderr.contains(&format!("limit of {max} bytes")),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(h.head_bytes(), before, "nothing appended");
    // An expectation file likewise; and `-` twice in one command.
    let r = run_stdin(
        &h,
        &["expect", h.ledger().to_str().unwrap(), "-"],
        vec![b'#'; max + 1],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("- (stdin)"), "{}", r.stderr);
    let r = run_stdin(
        &h,
        &["manifest", "freeze", "-", "--private", "-"],
        MANIFEST.as_bytes().to_vec(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("stdin is read once"), "{}", r.stderr);
    assert_eq!(h.head_bytes(), before, "nothing appended");
}

/// Lines that announce an append (`benchledger: appended ...`) in both
/// streams of a run.
fn announcements(r: &Run) -> Vec<String> {
    r.stdout
        .lines()
        .chain(r.stderr.lines())
        .filter(|l| l.contains("appended seq") || l.contains("already recorded at seq"))
        .map(String::from)
        .collect()
}

#[test]
fn every_append_is_announced_once_and_not_with_quiet() {
    let run = |h: &Harness, quiet: bool, args: &[&str]| -> Run {
        let mut all = Vec::new();
        if quiet {
            all.push("-q");
        }
        all.extend_from_slice(args);
        let r = h.run(&all);
        assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
        r
    };
    for quiet in [false, true] {
        let h = Harness::new();
        let want = usize::from(!quiet);
        let mut appending: Vec<Vec<String>> = vec![
            vec!["init".into()],
            vec!["note".into(), "one".into()],
            vec!["note".into(), "two".into(), "--json".into()],
        ];
        let (m, p) = h.manifest_files("m", MANIFEST, PRIVATE);
        appending.push(vec![
            "manifest".into(),
            "freeze".into(),
            m,
            "--private".into(),
            p,
        ]);
        let alice = h.example_key("alice");
        let bob = h.example_key("bob");
        for (role, key) in [("operator", &alice), ("reviewer", &bob)] {
            appending.push(
                ["manifest", "sign-off", "--role", role, "--key", key]
                    .map(String::from)
                    .to_vec(),
            );
        }
        appending.push(
            ["checkpoint", "sign", "--key", &alice, "-o", "cp.note"]
                .map(String::from)
                .to_vec(),
        );
        // Evidence of a group whose daemon ran (recorded directly before
        // the run, below), and the group's close.
        let traces = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/fixtures/bitrouter/traces.jsonl"
        );
        appending.push(
            ["ingest", "traces", "r1", traces]
                .map(String::from)
                .to_vec(),
        );
        appending.push(["group", "close", "r1"].map(String::from).to_vec());
        // export --tiles --key appends the checkpoint it publishes (it
        // once announced it twice).
        appending.push(
            ["export", "--tiles", "-o", "tiles", "--key", &alice]
                .map(String::from)
                .to_vec(),
        );
        appending.push(
            ["lineage", "stop", "--reason", "done"]
                .map(String::from)
                .to_vec(),
        );
        for args in &appending {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if args[0] == "ingest" {
                h.open_directly("r1");
            }
            let before = h.ledger().exists().then(|| h.head_bytes());
            let r = run(&h, quiet, &args);
            assert_ne!(
                before.as_deref(),
                Some(h.head_bytes().as_str()),
                "{args:?} appended nothing"
            );
            let said = announcements(&r);
            assert_eq!(
                said.len(),
                want,
                "{args:?} (quiet {quiet}): announced {said:?}\nstdout: {}\nstderr: {}",
                r.stdout,
                r.stderr
            );
        }
        // A repeat of an idempotent note: "already recorded", once.
        let keyed = ["note", "three", "--idempotency-key", "k3"];
        run(&h, quiet, &keyed);
        let r = run(&h, quiet, &keyed);
        assert_eq!(announcements(&r).len(), want, "{}", r.stderr);
        let log: Vec<Value> = h.ok(&["log", "--json"]).json().as_array().unwrap().clone();
        assert!(log.len() >= appending.len());
    }
}

#[test]
fn ctrl_c_while_stdin_is_spooled_removes_the_spool_and_exits_130() {
    use std::time::{Duration, Instant};
    let h = Harness::new();
    let tmp = h.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = h
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["ingest", "traces", "r1", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Some bytes, and stdin left open: the verb is spooling.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"partial\": ").unwrap();
    stdin.flush().unwrap();
    let spooled = |tmp: &std::path::Path| std::fs::read_dir(tmp).unwrap().count();
    let deadline = Instant::now() + Duration::from_secs(30);
    while spooled(&tmp) == 0 && Instant::now() < deadline {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the verb ended before spooling"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(spooled(&tmp), 1, "the spool file appears in TMPDIR");
    super::sigint(child.id());
    let ended = super::ends_within(&mut child, Duration::from_secs(30));
    drop(stdin);
    assert!(ended, "Ctrl-C ends the verb while it spools stdin");
    let out = super::finish(child, Duration::from_secs(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("the spooled stdin was removed"), "{stderr}");
    assert_eq!(spooled(&tmp), 0, "Ctrl-C leaves no spool behind");
}

#[test]
fn a_verb_started_with_sigint_ignored_keeps_ignoring_it() {
    // A background job (`cmd &` in a script, `nohup`) starts with SIGINT
    // ignored: the terminal's Ctrl-C must not end it; SIGTERM still does.
    use std::time::{Duration, Instant};
    let h = Harness::new();
    h.init();
    let held =
        benchledger::log::ledger::Ledger::open(&h.ledger(), Duration::from_secs(30)).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("trap '' INT; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_benchledger"))
        .args([
            "--ledger",
            h.ledger().to_str().unwrap(),
            "--lock-timeout",
            "120",
        ])
        .args(["note", "in the background"])
        .env("BENCHLEDGER_AUDITOR_STATE", h.auditor_state())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = h.ledger().join("benchledger.lock");
    let pid = child.id();
    let waiting = |pid: u32| super::has_open(pid, &lock);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !waiting(pid) && Instant::now() < deadline {
        assert!(child.try_wait().unwrap().is_none(), "ended before the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(waiting(pid), "the verb waits at the writer lock");
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success(), "kill {sig} {pid}");
    };
    signal("-INT");
    // Still waiting a while after an ignored SIGINT (a condition with a
    // deadline: it must not end within it).
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        assert!(
            child.try_wait().unwrap().is_none(),
            "an ignored SIGINT ended the verb"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    signal("-TERM");
    let out = super::finish(child, Duration::from_secs(30));
    drop(held);
    assert_eq!(
        out.status.code(),
        Some(130),
        "SIGTERM still ends it with 130"
    );
}
