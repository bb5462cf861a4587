//! TRUST-8 through the CLI: `export --tiles`, `verify --tiles DIR|URL` and
//! `prove inclusion --format tlog-proof`. With `$BENCHLEDGER_TLOG_LIVE_DIR`
//! set, `a_tiles_export_reads_back_and_a_flipped_byte_fails_naming_the_file`
//! leaves its export there for the independent verifier
//! (`tools/tlog-verify/check.sh`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchledger::log::ledger::{Draft, Ledger};
use benchledger::log::tlog::tlog_proof::from_tlog_proof;
use benchledger::log::tlog::VerifierKey;
use benchledger::schema::events::{Event, OperatorNoted};

use super::{Harness, Run};

/// A ledger of `records` records (genesis and notes), written through the
/// library in chunks (fast), and a note key `op`.
fn ledger_of(records: u64) -> Harness {
    let h = Harness::new();
    let (ledger, _) =
        Ledger::create(&h.ledger(), Duration::from_secs(5), [7; 16], "ci", 1).unwrap();
    let mut left = records - 1;
    let mut n = 0u64;
    while left > 0 {
        let chunk = left.min(50_000);
        let drafts: Vec<Draft> = (0..chunk)
            .map(|i| Draft {
                actor: "ci".into(),
                event: Event::OperatorNoted(OperatorNoted {
                    lineage: None,
                    text: format!("note {}", n + i),
                }),
                idempotency_key: None,
            })
            .collect();
        ledger.append(&drafts, 2).unwrap();
        n += chunk;
        left -= chunk;
    }
    drop(ledger);
    let vkey = h.ok(&["key", "generate", "op"]).stdout;
    std::fs::write(h.path("op.vkey"), vkey).unwrap();
    h
}

fn export(h: &Harness, dir: &str) -> Run {
    h.ok(&["export", "--tiles", "-o", dir, "--key", "op.key", "--json"])
}

fn verify(h: &Harness, dir: &Path) -> Run {
    h.run(&[
        "verify",
        "--tiles",
        dir.to_str().unwrap(),
        "--vkey",
        "@op.vkey",
        "--json",
    ])
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let at = at.min(b.len() - 1);
    b[at] ^= 0x01;
    std::fs::write(path, b).unwrap();
}

/// A copy of the export at `dir` with one byte of `file` flipped.
fn flipped_copy(h: &Harness, dir: &Path, file: &str, at: usize, name: &str) -> PathBuf {
    let copy = h.path(name);
    for f in files_under(dir) {
        let to = copy.join(&f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(dir.join(&f), &to).unwrap();
    }
    flip(&copy.join(file), at);
    copy
}

#[test]
fn tiles_of_partial_and_full_tiles_round_trip() {
    // rule TRUST-8: sizes around the tile width (256).
    let cases: [(u64, &[&str]); 4] = [
        (
            1,
            &[
                "checkpoint",
                "records/000.p/1",
                "tile/0/000.p/1",
                "tile/entries/000.p/1",
            ],
        ),
        (
            255,
            &[
                "checkpoint",
                "records/000.p/255",
                "tile/0/000.p/255",
                "tile/entries/000.p/255",
            ],
        ),
        (
            256,
            &[
                "checkpoint",
                "records/000",
                "tile/0/000",
                "tile/1/000.p/1",
                "tile/entries/000",
            ],
        ),
        (
            257,
            &[
                "checkpoint",
                "records/000",
                "records/001.p/1",
                "tile/0/000",
                "tile/0/001.p/1",
                "tile/1/000.p/1",
                "tile/entries/000",
                "tile/entries/001.p/1",
            ],
        ),
    ];
    for (records, want) in cases {
        let h = ledger_of(records);
        let j = export(&h, "T").json();
        assert_eq!(j["tree_size"], records, "TRUST-8: --key signs every record");
        let dir = h.path("T");
        assert_eq!(
            files_under(&dir),
            want,
            "TRUST-8: the C2SP tiles of size {records}"
        );
        let v = verify(&h, &dir);
        assert_eq!(v.code, 0, "TRUST-8: size {records}: {}", v.stderr);
        let v = v.json();
        assert_eq!(
            (v["ok"].clone(), v["records"].clone()),
            (true.into(), records.into())
        );
        // The checkpoint is the one the ledger signed and records.
        let shown = h.ok(&["checkpoint", "show"]).stdout;
        assert_eq!(
            std::fs::read_to_string(dir.join("checkpoint")).unwrap(),
            shown,
            "TRUST-8"
        );
    }
}

#[test]
fn tiles_of_65537_records_have_three_levels_and_read_back() {
    // rule TRUST-8: 65536 + 1 leaves: 256 full level-0 tiles, a full level-1
    // tile, and partial tiles at levels 0 and 2.
    let h = ledger_of(65_537);
    export(&h, "T");
    let dir = h.path("T");
    let files = files_under(&dir);
    for f in [
        "tile/0/255",
        "tile/0/256.p/1",
        "tile/1/000",
        "tile/2/000.p/1",
        "tile/entries/256.p/1",
        "records/256.p/1",
    ] {
        assert!(
            files.contains(&f.to_string()),
            "TRUST-8: {f} in {}",
            files.len()
        );
    }
    assert!(
        !files.iter().any(|f| f.starts_with("tile/1/001")),
        "TRUST-8: no empty tile"
    );
    assert_eq!(files.len(), 1 + 3 * 257 + 2, "{files:?}");
    let v = verify(&h, &dir);
    assert_eq!(v.code, 0, "TRUST-8: {}", v.stderr);
    // A level-1 full tile flipped: named, exit 1.
    let bad = flipped_copy(&h, &dir, "tile/1/000", 4000, "B");
    let r = verify(&h, &bad);
    assert_eq!(r.code, 1, "TRUST-8: {}", r.stderr);
    assert!(r.stderr.contains("tile/1/000"), "TRUST-8: {}", r.stderr);
}

#[test]
fn a_tiles_export_reads_back_and_a_flipped_byte_fails_naming_the_file() {
    // rule TRUST-8: 600 records: two full level-0 tiles, a partial one of
    // width 88, a partial level-1 tile of width 2.
    let h = ledger_of(600);
    export(&h, "T");
    let dir = h.path("T");
    let v = verify(&h, &dir);
    assert_eq!(v.code, 0, "TRUST-8: {}", v.stderr);
    let flips = [
        ("tile/0/000", 100),
        ("tile/0/001", 8000),
        ("tile/0/002.p/88", 7),
        ("tile/1/000.p/2", 40),
        ("tile/entries/000", 500),
        ("tile/entries/002.p/88", 3000),
        ("records/001", 900),
        ("records/002.p/88", 2000),
    ];
    for (i, (file, at)) in flips.iter().enumerate() {
        let bad = flipped_copy(&h, &dir, file, *at, &format!("bad{i}"));
        let r = verify(&h, &bad);
        assert_eq!(
            r.code, 1,
            "TRUST-8: a flipped byte in {file} fails: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(file),
            "TRUST-8: the message names {file}: {}",
            r.stderr
        );
    }
    // A flipped checkpoint, a missing bundle.
    let bad = flipped_copy(&h, &dir, "checkpoint", 60, "badc");
    assert_eq!(verify(&h, &bad).code, 1, "TRUST-8");
    let gone = flipped_copy(&h, &dir, "tile/entries/001", 0, "gone");
    std::fs::remove_file(gone.join("tile/entries/001")).unwrap();
    let r = verify(&h, &gone);
    assert_eq!(r.code, 1, "TRUST-8: {}", r.stderr);
    assert!(r.stderr.contains("tile/entries/001"), "{}", r.stderr);
    // Another key does not vouch for it; a notes-only ledger lists no
    // operator key, so without --vkey nothing checks the signature.
    let other = h.ok(&["key", "generate", "other"]).stdout;
    let r = h.run(&[
        "verify",
        "--tiles",
        dir.to_str().unwrap(),
        "--vkey",
        other.trim(),
    ]);
    assert_eq!(r.code, 1, "TRUST-8: {}", r.stderr);
    let r = h.run(&["verify", "--tiles", dir.to_str().unwrap()]);
    assert_eq!(r.code, 1, "TRUST-8: {}", r.stderr);
    assert!(r.stderr.contains("pass --vkey"), "{}", r.stderr);
    if let Some(live) = std::env::var_os("BENCHLEDGER_TLOG_LIVE_DIR") {
        let live = PathBuf::from(live);
        std::fs::create_dir_all(&live).unwrap();
        std::fs::copy(h.path("op.vkey"), live.join("tiles-op.vkey")).unwrap();
        let out = live.join("tiles");
        let _ = std::fs::remove_dir_all(&out);
        for f in files_under(&dir) {
            std::fs::create_dir_all(out.join(&f).parent().unwrap()).unwrap();
            std::fs::copy(dir.join(&f), out.join(&f)).unwrap();
        }
    }
}

#[test]
fn verify_tiles_reads_an_http_prefix() {
    // rule TRUST-8: the tiles as static files behind a web server.
    let h = ledger_of(300);
    export(&h, "T");
    let dir = h.path("T");
    let root = dir.clone();
    let server = benchledger::testkit::http_server::Server::start(move |req| {
        let rel = req.path.trim_start_matches("/log/");
        match std::fs::read(root.join(rel)) {
            Ok(b) if !rel.contains("..") => {
                benchledger::testkit::http_server::response(200, &[], &b)
            }
            _ => benchledger::testkit::http_server::response(404, &[], b"no"),
        }
    });
    let url = format!("{}/log/", server.url());
    let r = h.run(&["verify", "--tiles", &url, "--vkey", "@op.vkey", "--json"]);
    assert_eq!(r.code, 0, "TRUST-8: {}", r.stderr);
    assert_eq!(r.json()["records"], 300);
    let r = h.run(&[
        "verify",
        "--tiles",
        &format!("{}/none/", server.url()),
        "--vkey",
        "@op.vkey",
    ]);
    assert_eq!(
        r.code, 1,
        "TRUST-8: a log that serves nothing: {}",
        r.stderr
    );
    let r = h.run(&[
        "verify",
        "--tiles",
        "https://example.invalid/log",
        "--vkey",
        "@op.vkey",
    ]);
    assert_eq!(r.code, 2, "no TLS in this client: {}", r.stderr);
}

#[test]
fn export_tiles_needs_a_signed_checkpoint_and_never_rewrites_a_full_tile() {
    // rule TRUST-8
    let h = ledger_of(300);
    let r = h.run(&["export", "--tiles", "-o", "T"]);
    assert_eq!(
        r.code, 2,
        "TRUST-8: nothing unsigned is published: {}",
        r.stderr
    );
    assert!(r.stderr.contains("--key FILE"), "{}", r.stderr);
    assert!(!h.path("T").exists());
    export(&h, "T");
    // Again, after more records: the full tiles are kept, the edge and the
    // checkpoint move on.
    h.ok(&["note", "later"]);
    let j = export(&h, "T").json();
    assert_eq!(j["tree_size"], 302);
    assert!(j["files_kept"].as_u64().unwrap() >= 3, "{j}");
    assert_eq!(verify(&h, &h.path("T")).code, 0, "TRUST-8");
    // A full tile that differs is never replaced.
    flip(&h.path("T/tile/0/000"), 5);
    let r = h.run(&["export", "--tiles", "-o", "T"]);
    assert_eq!(r.code, 2, "TRUST-8: {}", r.stderr);
    assert!(r.stderr.contains("tile/0/000"), "{}", r.stderr);
    // Not a tiles directory.
    std::fs::create_dir(h.path("other")).unwrap();
    std::fs::write(h.path("other/x"), "x").unwrap();
    let r = h.run(&["export", "--tiles", "-o", "other"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn a_tlog_proof_parses_back_and_verifies_with_the_key_alone() {
    // rule TRUST-8
    let h = ledger_of(20);
    h.ok(&["checkpoint", "sign", "--key", "op.key", "-o", "c.note"]);
    let key =
        VerifierKey::parse(std::fs::read_to_string(h.path("op.vkey")).unwrap().trim()).unwrap();
    for seq in ["0", "7", "19"] {
        let text = h
            .ok(&[
                "prove",
                "inclusion",
                seq,
                "--checkpoint",
                "c.note",
                "--vkey",
                "@op.vkey",
                "--format",
                "tlog-proof",
            ])
            .stdout;
        assert!(text.starts_with("c2sp.org/tlog-proof@v1\nextra "), "{text}");
        let proof = from_tlog_proof(&text).unwrap();
        let checked = proof.verify(&key, &[]).unwrap();
        assert_eq!(
            (proof.leaf_index().to_string(), checked.checkpoint.size()),
            (seq.to_string(), 20),
            "TRUST-8"
        );
    }
    let r = h.run(&[
        "prove",
        "consistency",
        "c.note",
        "c.note",
        "--format",
        "tlog-proof",
    ]);
    assert_eq!(
        r.code, 2,
        "tlog-proof has no consistency form: {}",
        r.stderr
    );
}

/// `export --tiles --key` appends a signed checkpoint first, as `checkpoint
/// sign` does: that one append is announced once on stderr, never twice and
/// never on stdout (issue 33 item 8).
#[test]
fn export_tiles_with_a_key_announces_its_one_append_once() {
    let h = ledger_of(3);
    let r = h.ok(&["export", "--tiles", "-o", "t", "--key", "op.key"]);
    assert_eq!(
        r.stderr.matches("appended seq").count(),
        1,
        "one append, one announcement: {}",
        r.stderr
    );
    assert!(!r.stdout.contains("appended"), "{}", r.stdout);
}

#[test]
fn verify_tiles_remembers_the_largest_checkpoint_and_refuses_a_rollback() {
    // rule TRUST-7 over a published tiles log: the auditor's memory is the
    // same as for `verify --against`.
    let h = ledger_of(300);
    export(&h, "old");
    h.ok(&["note", "more"]);
    h.ok(&["note", "and more"]);
    export(&h, "new");
    let state = std::fs::read(h.auditor_state()).ok();
    assert!(
        state.is_none(),
        "TRUST-7: nothing remembered before a verify"
    );
    let first = verify(&h, &h.path("old"));
    assert_eq!(first.code, 0, "{}", first.stderr);
    let doc: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(doc["auditor"]["judgement"], "first", "TRUST-7: {doc}");
    assert_eq!(doc["auditor_state"]["updated"], true, "TRUST-7: {doc}");
    let newer = verify(&h, &h.path("new"));
    assert_eq!(newer.code, 0, "{}", newer.stderr);
    let doc: serde_json::Value = serde_json::from_str(&newer.stdout).unwrap();
    assert_eq!(
        doc["auditor"]["judgement"], "extends",
        "TRUST-7: a larger checkpoint extends the remembered one by a proof from the tiles' records: {doc}"
    );
    let remembered = std::fs::read(h.auditor_state()).unwrap();
    let back = verify(&h, &h.path("old"));
    assert_eq!(back.code, 1, "TRUST-7: a rollback exits 1: {}", back.stderr);
    assert!(back.stderr.contains("rollback"), "TRUST-7: {}", back.stderr);
    assert_eq!(
        std::fs::read(h.auditor_state()).unwrap(),
        remembered,
        "TRUST-7: a refused checkpoint leaves the memory as it was"
    );
    let text = h
        .ok(&["verify", "--tiles", "new", "--vkey", "@op.vkey"])
        .stdout;
    assert!(
        text.contains("auditor (TRUST-7): the checkpoint remembered"),
        "{text}"
    );
}

#[test]
fn verify_tiles_refuses_a_fork_of_the_remembered_checkpoint() {
    // rule TRUST-7: two logs of one origin (one ledger id), the same size
    // and other roots: the second is a fork and the memory keeps the first.
    let (a, b) = (ledger_of(300), ledger_of(300));
    a.ok(&["note", "the one history"]);
    b.ok(&["note", "another history"]);
    export(&a, "site");
    export(&b, "site");
    let first = verify(&a, &a.path("site"));
    assert_eq!(first.code, 0, "{}", first.stderr);
    let remembered = std::fs::read(a.auditor_state()).unwrap();
    let state = a.auditor_state().display().to_string();
    let fork = b.run(&[
        "verify", "--tiles", "site", "--vkey", "@op.vkey", "--state", &state,
    ]);
    assert_eq!(fork.code, 1, "TRUST-7: a fork exits 1: {}", fork.stderr);
    assert!(fork.stderr.contains("fork"), "TRUST-7: {}", fork.stderr);
    assert_eq!(
        std::fs::read(a.auditor_state()).unwrap(),
        remembered,
        "TRUST-7: a fork leaves the memory as it was"
    );
}
