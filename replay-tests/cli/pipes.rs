//! A reader that closes stdout early (`benchledger gate ... | head`) is the
//! reader's choice: every verb that writes to stdout finishes without a
//! panic and with the exit code it has when stdout stays open; an appending
//! verb says on stderr what it appended before anything goes to stdout, and
//! the append is there.

use std::path::Path;
use std::process::Stdio;

use super::{Harness, Run, MANIFEST, PRIVATE};

const LINEAGE: &str = "short13-kimi-2026-11";

/// Runs `args` with stdout a pipe whose reading end is closed before the
/// command writes anything.
fn run_with_closed_stdout(h: &Harness, args: &[&str]) -> Run {
    let mut child = h
        .cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap().into()
}

pub(super) fn recorded_harness() -> Harness {
    recorded()
}

fn recorded() -> Harness {
    let h = Harness::new();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests/ledgers/short13-accepted.jsonl");
    h.ok(&["import", "--jsonl", src.to_str().unwrap()]);
    h
}

/// The same exit code as with stdout open, and no panic.
fn same_code_as_open(h: &Harness, args: &[&str]) {
    let open = h.run(args);
    let closed = run_with_closed_stdout(h, args);
    assert!(
        !closed.stderr.contains("panicked"),
        "{args:?} panicked on a closed pipe: {}",
        closed.stderr
    );
    assert_ne!(closed.code, 101, "{args:?}: {}", closed.stderr);
    assert_eq!(
        closed.code, open.code,
        "{args:?}: exit {} with stdout closed, {} with it open; stderr: {}",
        closed.code, open.code, closed.stderr
    );
}

#[test]
fn reading_verbs_keep_their_exit_code_when_the_reader_closes_stdout() {
    let h = recorded();
    let gate = format!("{LINEAGE}/r1");
    let verbs: Vec<Vec<&str>> = vec![
        vec!["verify"],
        vec!["verify", "--json"],
        vec!["head"],
        vec!["log"],
        vec!["log", "--from", "3"],
        vec!["export", "--jsonl"],
        vec!["replay"],
        vec!["replay", "--json"],
        vec!["replay", "--at", "30"],
        vec!["gate", &gate],
        vec!["gate", &gate, "--json"],
        vec!["audit"],
        vec!["audit", "--json"],
        vec!["report", "show", LINEAGE],
        vec!["report", "show", LINEAGE, "--format", "json"],
        vec!["lineage", "show", LINEAGE],
        vec!["control", "list"],
        vec!["manifest", "show", LINEAGE],
        vec!["manifest", "show", LINEAGE, "--json"],
        vec!["resume", &gate],
    ];
    for args in &verbs {
        same_code_as_open(&h, args);
    }
}

#[test]
fn a_failing_gate_keeps_exit_1_when_the_reader_closes_stdout() {
    let h = Harness::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("replay-tests/ledgers/rejected-join-duplicate-id.jsonl");
    h.ok(&["import", "--jsonl", src.to_str().unwrap()]);
    let state = h.ok(&["replay", "--json"]).json();
    let lineage = state["lineages"][0]["lineage"]["lineage"]
        .as_str()
        .unwrap()
        .to_string();
    let gate = format!("{lineage}/control");
    let closed = run_with_closed_stdout(&h, &["gate", &gate]);
    assert_eq!(closed.code, 1, "{}", closed.stderr);
    assert!(!closed.stderr.contains("panicked"));
}

/// An appending verb: the record is durable and announced on stderr even
/// though nobody read stdout, and a retry is not refused for a record the
/// operator could not see (the FREEZE-3 trap).
#[test]
fn appending_verbs_announce_the_append_on_stderr_and_keep_it() {
    let h = Harness::new();
    let init = run_with_closed_stdout(&h, &["init", "--json"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(init.stderr.contains("appended seq 0"), "{}", init.stderr);

    let note = run_with_closed_stdout(&h, &["note", "gates rechecked", "--idempotency-key", "n1"]);
    assert_eq!(note.code, 0, "{}", note.stderr);
    assert!(note.stderr.contains("appended seq 1"), "{}", note.stderr);
    let again = run_with_closed_stdout(&h, &["note", "gates rechecked", "--idempotency-key", "n1"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.contains("already recorded at seq 1"),
        "{}",
        again.stderr
    );

    let (p, q) = h.manifest_files("m", MANIFEST, PRIVATE);
    let freeze = run_with_closed_stdout(&h, &["manifest", "freeze", &p, "--private", &q]);
    assert_eq!(freeze.code, 0, "{}", freeze.stderr);
    assert!(
        freeze.stderr.contains("appended seq 2"),
        "{}",
        freeze.stderr
    );
    let head = h.ok(&["head", "--json"]).json();
    assert_eq!(head["head_seq"], 2, "the freeze is in the ledger");

    let alice = h.example_key("alice");
    let sign = run_with_closed_stdout(
        &h,
        &[
            "manifest", "sign-off", "--role", "operator", "--key", &alice,
        ],
    );
    assert_eq!(sign.code, 0, "{}", sign.stderr);
    assert!(sign.stderr.contains("appended seq 3"), "{}", sign.stderr);
    h.ok(&["verify"]);
}

/// `-q/--quiet` (issue 33 item 8): an append is not announced and nothing
/// else of a success reaches stderr; the record is still written, stdout
/// still carries the data, and an error still prints with its exit code.
#[test]
fn quiet_appends_without_a_word_on_stderr_but_errors_still_print() {
    let h = Harness::new();
    let init = h.run(&["-q", "init", "--json"]);
    assert_eq!(
        (init.code, init.stderr.as_str()),
        (0, ""),
        "{}",
        init.stderr
    );
    assert!(init.stdout.contains("\"head_seq\""), "{}", init.stdout);
    let note = h.run(&["note", "--quiet", "gates rechecked"]);
    assert_eq!((note.code, note.stderr.as_str()), (0, ""));
    assert_eq!(h.ok(&["head", "--json"]).json()["head_seq"], 1, "written");
    let loud = h.run(&["note", "again"]);
    assert!(loud.stderr.contains("appended seq 2"), "{}", loud.stderr);
    let bad = h.run(&["-q", "verify", "--against", "/no/such.note"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.starts_with("error: "), "{}", bad.stderr);
}
