//! TRUST-7 through the CLI: `verify --against` and `checkpoint verify`
//! remember, per origin, the largest checkpoint they accepted (the state
//! file the harness names with `BENCHLEDGER_AUDITOR_STATE`, never the real
//! configuration directory), and refuse a rollback or a fork with exit 1.

use std::path::{Path, PathBuf};

use benchledger::limits::AUDITOR_STATE_BYTES_MAX;
use benchledger::method::auditor::AuditorState;
use serde_json::Value;

use super::{Harness, Run};

/// A ledger of genesis and `notes` notes, and a note key `op`
/// (`op.key`, `op.vkey`).
fn ledger(notes: usize) -> Harness {
    let h = Harness::new();
    h.init();
    add_notes(&h, &h.ledger(), "note", notes);
    let vkey = h.ok(&["key", "generate", "op"]).stdout;
    std::fs::write(h.path("op.vkey"), vkey).unwrap();
    h
}

fn on(h: &Harness, dir: &Path, args: &[&str]) -> Run {
    h.cmd_at(dir).args(args).output().unwrap().into()
}

fn add_notes(h: &Harness, dir: &Path, tag: &str, n: usize) {
    for i in 0..n {
        let r = on(h, dir, &["note", &format!("{tag} {i}")]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
}

/// Signs a checkpoint of the ledger in `dir` into `out`; its tree size.
fn sign(h: &Harness, dir: &Path, out: &str) -> u64 {
    let r = on(
        h,
        dir,
        &["checkpoint", "sign", "--key", "op.key", "--json", "-o", out],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json()["tree_size"].as_u64().unwrap()
}

/// A copy of the ledger as it is now, imported into `name`.
fn copy(h: &Harness, name: &str) -> PathBuf {
    let export = h.path(&format!("{name}.jsonl"));
    h.ok(&["export", "--jsonl", "-o", export.to_str().unwrap()]);
    let dir = h.path(name);
    let r = on(h, &dir, &["import", "--jsonl", export.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    dir
}

fn state(h: &Harness) -> AuditorState {
    let text = std::fs::read_to_string(h.auditor_state()).unwrap();
    AuditorState::parse(&text).unwrap()
}

fn remembered_size(h: &Harness) -> u64 {
    let s = state(h);
    assert_eq!(s.len(), 1, "one origin");
    let origin = h.ok(&["checkpoint", "show", "--json"]).json()["note"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    s.get(&origin).unwrap().size
}

fn against(h: &Harness, dir: &Path, note: &str) -> Run {
    on(
        h,
        dir,
        &["verify", "--against", note, "--vkey", "@op.vkey", "--json"],
    )
}

#[test]
fn an_extension_is_accepted_and_the_memory_advances() {
    let h = ledger(3);
    let led = h.ledger();
    assert_eq!(sign(&h, &led, "c1.note"), 4);
    add_notes(&h, &led, "more", 5);
    assert_eq!(sign(&h, &led, "c2.note"), 10);
    assert!(!h.auditor_state().exists());
    // Nothing remembered: the first checkpoint is accepted and remembered.
    let j = against(&h, &led, "c1.note").json();
    assert_eq!(j["ok"], true);
    let a = &j["against"][0]["auditor"];
    assert_eq!(a["judgement"], "first");
    assert_eq!(a["remembered_size"], Value::Null);
    assert_eq!(j["auditor_state"]["updated"], true);
    assert_eq!(
        j["auditor_state"]["file"],
        h.auditor_state().display().to_string()
    );
    assert_eq!(
        remembered_size(&h),
        4,
        "TRUST-7: the accepted checkpoint is remembered"
    );
    // A larger one, consistent with it (the proof from size 4 is computed
    // from this ledger): accepted, and the memory moves to it.
    let j = h
        .ok(&[
            "checkpoint",
            "verify",
            "c2.note",
            "--vkey",
            "@op.vkey",
            "--json",
        ])
        .json();
    assert_eq!(
        j["auditor"]["judgement"], "extends",
        "TRUST-7: an extension is accepted"
    );
    assert_eq!(j["auditor"]["remembered_size"], 4);
    assert_eq!(j["auditor"]["updated"], true);
    assert_eq!(
        remembered_size(&h),
        10,
        "TRUST-7: the memory advances to the larger checkpoint"
    );
    // The same one again: accepted, the file is not rewritten.
    let before = std::fs::read(h.auditor_state()).unwrap();
    let text = h
        .ok(&["checkpoint", "verify", "c2.note", "--vkey", "@op.vkey"])
        .stdout;
    assert!(
        text.contains("auditor (TRUST-7): the checkpoint remembered"),
        "{text}"
    );
    assert!(text.contains("unchanged"), "{text}");
    assert_eq!(std::fs::read(h.auditor_state()).unwrap(), before);
}

#[test]
fn a_rollback_to_an_older_copy_is_refused_and_nothing_is_reset() {
    let h = ledger(3);
    let led = h.ledger();
    assert_eq!(sign(&h, &led, "c1.note"), 4);
    // The copy an adversary keeps: the ledger as it was at c1.
    let old = copy(&h, "old");
    add_notes(&h, &led, "more", 5);
    assert_eq!(sign(&h, &led, "c2.note"), 10);
    // The auditor has seen the larger ledger.
    h.ok(&["verify", "--against", "c2.note", "--vkey", "@op.vkey"]);
    assert_eq!(remembered_size(&h), 10);
    let before = std::fs::read(h.auditor_state()).unwrap();
    // The older copy extends c1 and verifies on its own, but c1 is smaller
    // than what was accepted: a rollback.
    let r = on(
        &h,
        &old,
        &["verify", "--against", "c1.note", "--vkey", "@op.vkey"],
    );
    assert_eq!(r.code, 1, "TRUST-7: a rollback exits 1: {}", r.stdout);
    assert!(
        r.stdout.contains("rollback (TRUST-7)") && r.stdout.contains("size 10"),
        "TRUST-7: the refusal says rollback and names the remembered size: {}",
        r.stdout
    );
    let j = against(&h, &old, "c1.note");
    assert_eq!(j.code, 1);
    let j = j.json();
    assert_eq!(j["ok"], false);
    assert_eq!(
        j["against"][0]["extends"], true,
        "the copy itself extends c1"
    );
    assert_eq!(j["against"][0]["auditor"]["judgement"], "rollback");
    assert_eq!(j["auditor_state"]["updated"], false);
    let r = on(
        &h,
        &old,
        &["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("rollback (TRUST-7)"), "{}", r.stderr);
    assert_eq!(
        std::fs::read(h.auditor_state()).unwrap(),
        before,
        "TRUST-7: a refused checkpoint changes nothing"
    );
    // The refusal is the memory's: with another state file (a new
    // auditor) the old copy verifies against c1.
    let fresh = h.path("fresh-auditor.json");
    let r = on(
        &h,
        &old,
        &[
            "verify",
            "--against",
            "c1.note",
            "--vkey",
            "@op.vkey",
            "--state",
            fresh.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn two_checkpoints_of_one_size_with_different_roots_are_a_fork() {
    let h = ledger(3);
    // Two copies of one ledger (one origin) that part after seq 3, each
    // signed by the log key at the same size.
    let a = copy(&h, "a");
    let b = copy(&h, "b");
    add_notes(&h, &a, "history a", 2);
    add_notes(&h, &b, "history b", 2);
    assert_eq!(sign(&h, &a, "a.note"), 6);
    assert_eq!(sign(&h, &b, "b.note"), 6);
    let r = against(&h, &a, "a.note");
    assert_eq!(r.code, 0, "{}", r.stdout);
    let before = std::fs::read(h.auditor_state()).unwrap();
    // Same size, another root: a fork, on both verbs.
    let r = on(
        &h,
        &b,
        &["verify", "--against", "b.note", "--vkey", "@op.vkey"],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("fork (TRUST-7)") && r.stdout.contains("two checkpoints of size 6"),
        "TRUST-7: two checkpoints of one size with different roots are a fork: {}",
        r.stdout
    );
    let r = on(
        &h,
        &b,
        &[
            "checkpoint",
            "verify",
            "b.note",
            "--vkey",
            "@op.vkey",
            "--json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("fork (TRUST-7)"), "{}", r.stderr);
    // A larger checkpoint of the other history: the consistency proof
    // from the remembered size, computed from that ledger, does not lead
    // from the remembered root. Also a fork.
    add_notes(&h, &b, "later b", 2);
    assert_eq!(sign(&h, &b, "b2.note"), 9);
    let j = against(&h, &b, "b2.note");
    assert_eq!(j.code, 1, "{}", j.stdout);
    let a = &j.json()["against"][0]["auditor"];
    assert_eq!(
        a["judgement"], "fork",
        "TRUST-7: a larger checkpoint not consistent with the remembered one is a fork"
    );
    assert!(
        a["refusal"]
            .as_str()
            .unwrap()
            .contains("consistency proof from size 6 to 9"),
        "{a}"
    );
    assert_eq!(std::fs::read(h.auditor_state()).unwrap(), before);
}

#[test]
fn a_corrupt_state_file_is_refused_naming_it_and_never_reset() {
    let h = ledger(3);
    let led = h.ledger();
    sign(&h, &led, "c1.note");
    let file = h.auditor_state();
    let shown = file.display().to_string();
    for bad in [
        "not json\n".to_string(),
        "{\"format\": \"benchledger auditor state v1\"}\n".to_string(),
        "{\"format\": \"benchledger auditor state v1\", \"origins\": {\"x\": {\"tree_size\": 1, \"root\": \"00\", \"note\": \"\"}}}\n".to_string(),
    ] {
        std::fs::write(&file, &bad).unwrap();
        for args in [
            &["verify", "--against", "c1.note", "--vkey", "@op.vkey"][..],
            &["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"][..],
        ] {
            let r = h.run(args);
            assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains(&shown) && r.stderr.contains("never reset"),
                "TRUST-7: a corrupt state file is refused naming it: {}",
                r.stderr
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), bad, "never reset");
        }
    }
}

#[test]
fn the_state_file_is_read_up_to_its_bound_and_not_past_it() {
    let h = ledger(3);
    let led = h.ledger();
    sign(&h, &led, "c1.note");
    h.ok(&["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"]);
    let good = std::fs::read_to_string(h.auditor_state()).unwrap();
    let max = AUDITOR_STATE_BYTES_MAX as usize;
    // JSON allows trailing white space: a valid state of exactly the bound.
    let at = format!("{good}{}", " ".repeat(max - good.len()));
    assert_eq!(at.len(), max);
    std::fs::write(h.auditor_state(), &at).unwrap();
    h.ok(&["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"]);
    std::fs::write(h.auditor_state(), format!("{at} ")).unwrap();
    let r = h.run(&["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&h.auditor_state().display().to_string())
            && r.stderr.contains(&max.to_string()),
        "a state file past AUDITOR_STATE_BYTES_MAX is refused naming it and the bound: {}",
        r.stderr
    );
}

#[test]
fn the_state_file_lives_in_the_configuration_directory_unless_named() {
    let h = ledger(3);
    let led = h.ledger();
    sign(&h, &led, "c1.note");
    let run = |envs: &[(&str, &Path)], extra: &[&str]| -> Run {
        let mut c = h.cmd();
        c.env_remove("BENCHLEDGER_AUDITOR_STATE")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HOME");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.args(["checkpoint", "verify", "c1.note", "--vkey", "@op.vkey"])
            .args(extra)
            .output()
            .unwrap()
            .into()
    };
    let (xdg, home) = (h.path("xdg"), h.path("home"));
    let r = run(&[("XDG_CONFIG_HOME", &xdg), ("HOME", &home)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        xdg.join("benchledger/auditor-state.json").is_file(),
        "XDG_CONFIG_HOME first"
    );
    let r = run(&[("HOME", &home)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        home.join(".config/benchledger/auditor-state.json")
            .is_file(),
        "then ~/.config"
    );
    let named = h.path("named.json");
    let r = run(
        &[
            ("HOME", &home),
            ("BENCHLEDGER_AUDITOR_STATE", &h.path("env.json")),
        ],
        &["--state", named.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        named.is_file() && !h.path("env.json").exists(),
        "--state wins"
    );
    let r = run(&[], &[]);
    assert_eq!(r.code, 2, "no HOME, no XDG_CONFIG_HOME: {}", r.stderr);
    assert!(r.stderr.contains("--state"), "{}", r.stderr);
}
