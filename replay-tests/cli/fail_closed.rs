//! Issue 29, "fail closed at every boundary, round two": each shape that got
//! through, fed to the binary as a new user or an adversary would.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{Harness, Run};

/// A fabricated AWS secret access key (40 base64 bytes), split so this file
/// holds no literal a secret scanner flags.
fn fake_aws_secret() -> String {
    format!("{}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKE1")
}

#[test]
fn a_lone_aws_secret_in_a_note_is_refused_like_its_assignment() {
    // rule BIND-8, FREEZE-2
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let secret = fake_aws_secret();
    assert_eq!(secret.len(), 40);
    for text in [
        format!("AWS_SECRET_ACCESS_KEY={secret}"),
        format!("secret={secret}"),
        format!("Traceback: signing with secret {secret} for s3"),
    ] {
        let r = h.run(&["note", &text]);
        assert_eq!(
            r.code, 3,
            "BIND-8: a lone AWS secret is refused at append: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("aws_secret_access_key") && !r.stderr.contains(&secret),
            "BIND-8: the shape is named, the value never echoed: {}",
            r.stderr
        );
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

/// Runs the binary and waits at most `secs`; a process still running then
/// is killed and the test fails (a read that waits on a FIFO or a device).
fn run_within(h: &Harness, args: &[&str], secs: u64) -> Run {
    let mut child = h
        .cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {secs} s: an unbounded or blocking read");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO made in the harness and a character device, each with the words
/// a refusal uses for it; the FIFO first, so that without the bound a test
/// run never reaches the device's unbounded read.
fn fifo_and_device(h: &Harness) -> [(String, &'static str); 2] {
    let fifo = h.path("pipe");
    mkfifo(&fifo);
    [
        (fifo.display().to_string(), "a FIFO"),
        ("/dev/zero".to_string(), "a character device"),
    ]
}

#[test]
fn a_device_or_a_fifo_is_refused_at_once_as_every_input_file() {
    // Issue 29 item 12: every file read has a named bound and only regular
    // files are read; nothing is appended.
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let fifo = h.path("pipe");
    mkfifo(&fifo);
    let fifo = fifo.display().to_string();
    let private = h.path("private.toml").display().to_string();
    std::fs::write(&private, "").unwrap();
    for input in ["/dev/zero", fifo.as_str()] {
        let kind = if input == "/dev/zero" {
            "a character device"
        } else {
            "a FIFO"
        };
        for args in [
            vec!["manifest", "freeze", input, "--private", &private],
            vec!["checkpoint", "sign", "--key", input],
            vec!["ingest", "traces", "g1", input],
            vec!["ingest", "usage", "g1", input],
        ] {
            let r = run_within(&h, &args, 10);
            assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains(kind) && r.stderr.contains("not a regular file"),
                "{args:?} names the file and what it is: {}",
                r.stderr
            );
        }
        let other = Harness::new();
        let r = run_within(&other, &["import", "--jsonl", input], 10);
        assert_eq!(r.code, 2, "import {input}: {}", r.stderr);
        assert!(r.stderr.contains(kind), "{}", r.stderr);
        assert!(!other.ledger().exists(), "a refused import leaves nothing");
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn check_binary_and_check_config_refuse_a_fifo_or_a_device_at_once() {
    // Issue 29 item 12, found by the bad-input run: `check binary --path`
    // (GATE-4) hashed a FIFO or /dev/zero forever, `check config --config`
    // (GATE-7) waited on a FIFO and read /dev/zero into memory until the
    // kernel killed it. Both read only a regular file within their bound.
    let h = super::bad_inputs::setup("frozen");
    let before = h.head_bytes();
    for (input, kind) in fifo_and_device(&h) {
        let input = input.as_str();
        for args in [
            vec!["check", "binary", "--path", input],
            vec!["check", "config", "--config", input],
        ] {
            let r = run_within(&h, &args, 10);
            assert_eq!(r.code, 2, "GATE-4, GATE-7: {args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains(input) && r.stderr.contains(kind),
                "{args:?} names the file and what it is: {}",
                r.stderr
            );
        }
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn the_frozen_validator_program_as_a_fifo_or_a_device_is_refused_at_once() {
    // Issue 29 item 12 (left from the bad-input run): `check config` hashed
    // the frozen validator program (BIND-7) with an unbounded read of
    // whatever the path held; a FIFO there blocked it for good.
    let h = super::cases::ready_harness(1);
    let cfg = h.path("c3.json");
    let cfg = cfg.to_str().unwrap();
    h.ok(&[
        "case",
        "render-config",
        "canary-1",
        "hello-world/c3",
        "-o",
        cfg,
    ]);
    h.stand_in_validator(0);
    let program = h.path("tools/harbor/validate_trial_config.py");
    std::fs::remove_file(&program).unwrap();
    mkfifo(&program);
    let before = h.head_bytes();
    let r = run_within(&h, &["check", "config", "--config", cfg], 10);
    assert_eq!(r.code, 3, "BIND-7: {}", r.stderr);
    assert!(
        r.stderr.contains("BIND-7")
            && r.stderr.contains("a FIFO")
            && r.stderr.contains("validate_trial_config.py"),
        "names the rule, the program and what it is: {}",
        r.stderr
    );
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn run_checks_the_private_manifest_it_is_given_even_to_plan() {
    // Issue 29 (left from the bad-input run): `run --plan --private FILE`
    // never read FILE, so a device, a FIFO or another lineage's private
    // manifest passed unremarked. It is read within its bound and checked
    // against the frozen commitments first (FREEZE-2), in every build.
    let h = super::bad_inputs::setup("frozen");
    let before = h.head_bytes();
    for (input, kind) in fifo_and_device(&h) {
        let input = input.as_str();
        let r = run_within(&h, &["run", "canary-1", "--plan", "--private", input], 10);
        assert_eq!(r.code, 2, "{input}: {}", r.stderr);
        assert!(r.stderr.contains(kind), "{input}: {}", r.stderr);
    }
    let other = h.path("other.private.toml");
    std::fs::write(&other, "commitment_key = \"00\"\n").unwrap();
    let other = other.display().to_string();
    let r = run_within(&h, &["run", "canary-1", "--plan", "--private", &other], 10);
    assert_ne!(r.code, 0, "another private manifest: {}", r.stderr);
    assert!(
        r.stderr.contains("other.private.toml"),
        "names the file: {}",
        r.stderr
    );
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn an_unknown_lineage_or_group_never_echoes_part_of_a_secret() {
    // Issue 29 items 6 and 17 (left from the bad-input run): `group close
    // secret=<40-char AWS secret>` split the argument at its first `/` and
    // echoed the first 20 characters as an unknown lineage: too short for
    // the credential scanner, still a leak. An unknown name that is not a
    // plain one is described by its length only.
    let h = super::bad_inputs::setup("frozen");
    let before = h.head_bytes();
    let secret = ["wJalrXUtnFEMI", "K7MDENG", "bPxRfiCYEXAMPLEKEY"].join("/");
    for spec in [format!("secret={secret}"), format!("lin/{secret}")] {
        for args in [
            vec!["group", "close", spec.as_str()],
            vec!["run", spec.as_str(), "--plan"],
            vec!["gate", spec.as_str()],
        ] {
            let r = h.run(&args);
            assert!(matches!(r.code, 2 | 3), "{args:?}: {}", r.stderr);
            for part in secret.split('/') {
                assert!(
                    !r.stderr.contains(part) && !r.stdout.contains(part),
                    "{args:?} echoes {part:?}: {}",
                    r.stderr
                );
            }
            if spec.starts_with("secret=") {
                assert!(r.stderr.contains("redacted"), "{args:?}: {}", r.stderr);
            }
        }
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn an_error_naming_a_path_with_escape_codes_shows_them_inert() {
    // rule BIND-10, found by the bad-input run: an error message quoting a
    // path (a missing file, a key, a manifest) wrote its escape codes and
    // carriage returns to the terminal raw.
    let h = super::bad_inputs::setup("frozen");
    let before = h.head_bytes();
    let dir = h.path("").display().to_string();
    let dir = dir.trim_end_matches('/');
    for (args, shown) in [
        (
            vec![
                "ingest".to_string(),
                "usage".into(),
                "r1".into(),
                format!("{dir}/\u{1b}[2J.jsonl"),
            ],
            "\\u{001b}[2J.jsonl",
        ),
        (
            vec![
                "checkpoint".to_string(),
                "sign".into(),
                "--key".into(),
                format!("{dir}/k\r.key"),
            ],
            "k\\r.key",
        ),
    ] {
        let r = h.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            !r.stderr.contains('\u{1b}') && !r.stderr.contains('\r'),
            "BIND-10: no escape code or carriage return reaches the terminal raw: {:?}",
            r.stderr
        );
        assert!(
            r.stderr.contains(shown),
            "BIND-10: the path is shown escaped: {:?}",
            r.stderr
        );
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}

#[test]
fn a_text_input_is_read_up_to_its_bound_and_refused_past_it() {
    // Issue 29 item 12: TEXT_INPUT_FILE_BYTES_MAX at the bound and one past.
    let max = benchledger::limits::TEXT_INPUT_FILE_BYTES_MAX;
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let sized = |name: &str, len: u64| {
        let p = h.path(name);
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p.display().to_string()
    };
    let (at, past) = (sized("at.key", max), sized("past.key", max + 1));
    let r = run_within(&h, &["checkpoint", "sign", "--key", &at], 30);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        !r.stderr.contains("longer than the limit"),
        "a file at the bound is read (and then is no key): {}",
        r.stderr
    );
    let r = run_within(&h, &["checkpoint", "sign", "--key", &past], 30);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("longer than the limit of {max} bytes")),
        "{}",
        r.stderr
    );
    assert_eq!(h.head_bytes(), before);
}

/// The export line of a genesis that declares `format_version`, built as a
/// newer tool would write it: the record re-encoded and its link re-hashed.
fn genesis_line_declaring(genesis_line: &str, format_version: u16) -> String {
    use benchledger::log::export::ExportLine;
    use benchledger::log::record::Record;
    use benchledger::schema::events::Event;
    let mut line: ExportLine = serde_json::from_str(genesis_line).unwrap();
    let decoded = Record::decode(&hex::decode(&line.record_hex).unwrap()).unwrap();
    let Event::LedgerCreated(mut g) = decoded.event else {
        panic!("line 1 is the genesis")
    };
    g.format_version = format_version;
    let event = Event::LedgerCreated(g);
    let mut record = decoded.record;
    record.payload = benchledger::log::codec::encode_payload(&event).unwrap();
    let bytes = record.encode().unwrap();
    let hash = benchledger::log::chain::link_hash(&[0; 32], 0, &bytes);
    line.record_hex = hex::encode(&bytes);
    line.hash = hex::encode(hash);
    line.payload = event.payload_json();
    let trailer =
        benchledger::log::export::trailer_line(&benchledger::log::chain::Head { seq: 0, hash });
    format!("{}\n{trailer}", serde_json::to_string(&line).unwrap())
}

#[test]
fn an_export_of_a_newer_format_is_refused_naming_both_versions() {
    // Issue 29 item 14: a genesis declaring format_version 2 is not this
    // build's format.
    let h = Harness::new();
    h.init();
    let export = h.ok(&["export", "--jsonl"]).stdout;
    let first = export.lines().next().unwrap();
    for (version, accepted) in [(1u16, true), (2, false)] {
        let file = h.path(&format!("v{version}.jsonl"));
        std::fs::write(
            &file,
            format!("{}\n", genesis_line_declaring(first, version)),
        )
        .unwrap();
        let other = Harness::new();
        let r = other.run(&["import", "--jsonl", &file.display().to_string()]);
        if accepted {
            assert_eq!(r.code, 0, "this build's own format imports: {}", r.stderr);
            continue;
        }
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("format_version 2") && r.stderr.contains("reads format 1"),
            "the refusal names both versions: {}",
            r.stderr
        );
        assert!(!other.ledger().exists(), "a refused import leaves nothing");
    }
}

#[test]
fn a_cut_export_is_refused_and_imports_only_when_stated_as_untrailed() {
    // Issue 29 item 15: "a byte-identical copy, or a refusal".
    let h = Harness::new();
    h.init();
    for i in 0..20 {
        h.ok(&["note", &format!("n{i}")]);
    }
    let export = h.ok(&["export", "--jsonl"]).stdout;
    let lines: Vec<&str> = export.lines().collect();
    assert_eq!(lines.len(), 22, "21 records and the trailer");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(lines[21]).unwrap(),
        serde_json::json!({
            "trailer": "benchledger export end",
            "records": 21,
            "head_seq": 20,
            "head_hash": h.ok(&["head", "--json"]).json()["head_hash"],
        }),
        "the trailer names the record count and the head"
    );
    let import = |name: &str, text: String, extra: &[&str]| {
        let file = h.path(name);
        std::fs::write(&file, text).unwrap();
        let other = Harness::new();
        let mut args = vec!["import", "--jsonl", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let r = other.run(&args);
        (r, other)
    };
    let cut = format!("{}\n", lines[..12].join("\n"));
    let (r, other) = import("cut.jsonl", cut.clone(), &[]);
    assert_eq!(r.code, 2, "a cut export is refused: {}", r.stderr);
    assert!(
        r.stderr.contains("no trailer") && r.stderr.contains("--untrailed"),
        "{}",
        r.stderr
    );
    assert!(!other.ledger().exists(), "a refused import leaves nothing");
    let mut lied = lines.clone();
    let short_trailer = lines[21].replace("\"records\":21", "\"records\":12");
    lied[21] = &short_trailer;
    for (name, text) in [
        ("lying.jsonl", format!("{}\n", lied.join("\n"))),
        (
            "cut-trailed.jsonl",
            format!("{}\n{}\n", lines[..12].join("\n"), lines[21]),
        ),
        ("after.jsonl", format!("{export}{}\n", lines[5])),
    ] {
        let (r, other) = import(name, text, &["--untrailed"]);
        assert_eq!(
            r.code, 2,
            "{name}: a trailer is checked even with --untrailed: {}",
            r.stderr
        );
        assert!(r.stderr.contains("trailer"), "{name}: {}", r.stderr);
        assert!(!other.ledger().exists());
    }
    // An export from before trailers imports when stated as such, saying so.
    let (r, other) = import("old.jsonl", cut, &["--untrailed"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("not checked"), "{}", r.stderr);
    assert_eq!(other.ok(&["head", "--json"]).json()["head_seq"], 11);
    // The whole export is the byte-identical copy.
    let (r, other) = import("whole.jsonl", export.clone(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(other.ok(&["export", "--jsonl"]).stdout, export);
}

/// The temporary names (`.{name}.{tag}-...`) beside `target`.
fn leftovers(target: &Path) -> Vec<String> {
    let name = target.file_name().unwrap().to_string_lossy().to_string();
    std::fs::read_dir(target.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|f| f.starts_with(&format!(".{name}.")))
        .collect()
}

/// An import reading the export from a pipe, started but not yet fed its
/// last lines: returns the child once its staging ledger exists.
fn slow_import(h: &Harness, head: &str) -> std::process::Child {
    let mut child = h
        .cmd()
        .args(["import", "--jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(head.as_bytes())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !leftovers(&h.ledger())
        .iter()
        .any(|f| f.contains(".importing-"))
    {
        assert!(Instant::now() < deadline, "no staging ledger appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Waits at most 20 s for `child` to end on its own.
fn wait_for(mut child: std::process::Child) -> Run {
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

pub(super) fn an_export(records: usize) -> String {
    let h = Harness::new();
    h.init();
    for i in 1..records {
        h.ok(&["note", &format!("n{i}")]);
    }
    h.ok(&["export", "--jsonl"]).stdout
}

#[test]
fn an_interrupted_import_removes_its_staging_ledger() {
    // Issue 29 item 16: temporary names are cleaned on interrupt.
    let export = an_export(6);
    let lines: Vec<&str> = export.lines().collect();
    let h = Harness::new();
    let mut child = slow_import(&h, &format!("{}\n", lines[..3].join("\n")));
    let pid = child.id().to_string();
    let ok = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    std::thread::sleep(Duration::from_millis(300)); // the handler has run
                                                    // The rest arrives after the signal (if the import still reads): it
                                                    // must stop, not finish.
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(format!("{}\n", lines[3..].join("\n")).as_bytes());
    let r = wait_for(child);
    drop(stdin);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("interrupted"), "{}", r.stderr);
    assert_eq!(
        leftovers(&h.ledger()),
        Vec::<String>::new(),
        "the staging ledger is removed on interrupt"
    );
    assert!(!h.ledger().exists());
}

#[test]
fn a_second_import_into_the_same_target_keeps_nothing_and_says_why() {
    // Issue 29 item 16: two imports into one directory.
    let export = an_export(6);
    let lines: Vec<&str> = export.lines().collect();
    let h = Harness::new();
    let mut slow = slow_import(&h, &format!("{}\n", lines[..3].join("\n")));
    let file = h.path("e.jsonl");
    std::fs::write(&file, &export).unwrap();
    h.ok(&["import", "--jsonl", file.to_str().unwrap()]);
    use std::io::Write;
    let mut stdin = slow.stdin.take().unwrap();
    stdin
        .write_all(format!("{}\n", lines[3..].join("\n")).as_bytes())
        .unwrap();
    drop(stdin);
    let r = wait_for(slow);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("filled by another process"),
        "{}",
        r.stderr
    );
    assert_eq!(leftovers(&h.ledger()), Vec::<String>::new());
    h.ok(&["verify"]);
    assert_eq!(h.ok(&["export", "--jsonl"]).stdout, export);
}

#[test]
fn export_never_touches_another_file_and_leftovers_of_a_dead_process_go() {
    // Issue 29 item 16: unique temporary names, cleaned at the next start.
    let h = Harness::new();
    h.init();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let unrelated = h.path("a.partial");
    std::fs::write(&unrelated, "someone else's file").unwrap();
    let stale_export = h.path(&format!(".a.jsonl.partial-{dead}-00112233445566ff"));
    std::fs::write(&stale_export, "left by a killed export").unwrap();
    let out = h.path("a.jsonl");
    h.ok(&["export", "--jsonl", "-o", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&unrelated).unwrap(),
        "someone else's file",
        "export -o a.jsonl never writes a.partial"
    );
    assert!(
        !stale_export.exists(),
        "a dead export's partial file is removed"
    );
    assert_eq!(leftovers(&out), Vec::<String>::new());
    let copy = Harness::new();
    let stale_import = copy.path(&format!(".ledger.importing-{dead}-00112233445566ff"));
    std::fs::create_dir_all(stale_import.join("sled")).unwrap();
    copy.ok(&["import", "--jsonl", out.to_str().unwrap()]);
    assert!(
        !stale_import.exists(),
        "a dead import's staging ledger is removed"
    );
    assert_eq!(leftovers(&copy.ledger()), Vec::<String>::new());
}

#[test]
fn evidence_text_cannot_rewrite_a_verdict_row_on_any_human_output() {
    // rule BIND-10: a request id holding a carriage return, escape codes and
    // a bidi override is shown escaped in gate, replay and the report.
    let h = Harness::new();
    h.init();
    assert_eq!(
        h.freeze(super::MANIFEST, super::PRIVATE).code,
        0,
        "the example manifest freezes"
    );
    h.open_directly("r1");
    let evil = "x\r\u{1b}[2K  requests      holds  every id joins\u{202e}";
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter/traces.jsonl"
    ))
    .unwrap();
    let mut lines: Vec<String> = fixture.lines().map(String::from).collect();
    let mut row: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    row["id"] = evil.into();
    lines[0] = serde_json::to_string(&row).unwrap();
    let traces = h.path("traces.jsonl");
    std::fs::write(&traces, lines.join("\n") + "\n").unwrap();
    h.ok(&["ingest", "traces", "r1", traces.to_str().unwrap()]);
    let raw =
        |text: &str| text.contains('\r') || text.contains('\u{1b}') || text.contains('\u{202e}');
    let gate = h.run(&["gate", "r1"]);
    assert_eq!(gate.code, 1, "{}", gate.stderr);
    let replay = h.ok(&["replay"]);
    let report = h.ok(&["report"]);
    let out = h.path("report-out");
    h.ok(&["report", "show", "--out", out.to_str().unwrap()]);
    let report_md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for (what, text) in [
        ("gate", &gate.stdout),
        ("replay", &replay.stdout),
        ("report", &report.stdout),
        ("report.md", &report_md),
    ] {
        assert!(
            !raw(text),
            "BIND-10: {what} shows no raw carriage return, escape or bidi override"
        );
        assert!(
            text.contains("x\\r\\u{001b}[2K"),
            "BIND-10: {what} names the id, escaped"
        );
    }
    assert!(
        gate.stdout
            .lines()
            .any(|l| l.starts_with("  requests") && l.contains("FAILS")),
        "BIND-10: the requests row still reads FAILS: {}",
        gate.stdout
    );
    // The stored bytes stay exact.
    assert!(h.ok(&["log"]).stdout.contains("x\\r\\u001b[2K"));
}

/// Appends, as an older build could, a checkpoint of the whole log signed
/// by `key_file`; returns its seq.
fn append_checkpoint_signed_by(h: &Harness, key_file: &str) -> u64 {
    use benchledger::log::tlog::{sign_note, Checkpoint, SignerKey};
    use benchledger::schema::events::{CheckpointRecorded, Event};
    let key = SignerKey::parse(std::fs::read_to_string(h.path(key_file)).unwrap().trim()).unwrap();
    let (origin, size, root) = {
        let ledger =
            benchledger::log::ledger::Ledger::open(&h.ledger(), Duration::from_secs(10)).unwrap();
        let derived = benchledger::log::tree::derive(&ledger).unwrap();
        let made = (derived.origin.clone(), derived.size(), derived.root());
        derived.discard();
        made
    };
    let checkpoint = Checkpoint::new(&origin, size, root).unwrap();
    let note = sign_note(&checkpoint.body(), &[&key]).unwrap();
    super::cases::append(
        h,
        vec![Event::CheckpointRecorded(CheckpointRecorded {
            origin,
            tree_size: size,
            root: hex::encode(root),
            note: Some(note),
            signer: Some(key.verifier().encode()),
            sealed: None,
        })],
    );
    h.ok(&["head", "--json"]).json()["head_seq"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_checkpoint_signer_the_manifest_does_not_list_never_counts() {
    // rule TRUST-5
    let h = Harness::new();
    h.init();
    assert_eq!(h.freeze(super::MANIFEST, super::PRIVATE).code, 0);
    let alice = h.example_key("alice"); // the example manifest's operator
    h.ok(&["key", "generate", "mallory"]);
    let before = h.head_bytes();
    let r = h.run(&["checkpoint", "sign", "--key", "mallory.key"]);
    assert_eq!(
        r.code, 3,
        "TRUST-5: checkpoint sign refuses an unlisted key: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("TRUST-5") && r.stderr.contains("mallory"),
        "{}",
        r.stderr
    );
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
    h.ok(&["checkpoint", "sign", "--key", &alice]);
    let listed = h.ok(&["head", "--json"]).json()["head_seq"]
        .as_u64()
        .unwrap();
    h.ok(&["verify"]);
    let forged = append_checkpoint_signed_by(&h, "mallory.key");
    let v = h.run(&["verify"]);
    assert_eq!(
        v.code, 1,
        "TRUST-5: verify fails on an unlisted signer: {}",
        v.stdout
    );
    assert!(
        format!("{}{}", v.stdout, v.stderr).contains(&format!("seq {forged}"))
            && format!("{}{}", v.stdout, v.stderr).contains("TRUST-5"),
        "{} {}",
        v.stdout,
        v.stderr
    );
    let show = h.ok(&["checkpoint", "show", "--json"]).json();
    assert_eq!(
        show["seq"].as_u64(),
        Some(listed),
        "TRUST-5: checkpoint show presents the listed operator's checkpoint, not mallory's"
    );
    for args in [
        vec!["report", "--format", "json"],
        vec!["export", "--redacted", "-o", "bundle"],
    ] {
        let r = h.run(&args);
        assert!(
            r.code != 0 && !r.stdout.contains("mallory"),
            "TRUST-5: {args:?} never presents mallory's checkpoint: {} {}",
            r.code,
            r.stderr
        );
        assert!(r.stderr.contains("TRUST-5"), "{args:?}: {}", r.stderr);
    }
    assert!(!h.path("bundle").exists());
}

#[test]
fn init_on_a_regular_file_is_bad_input_not_the_environment() {
    // Issue 29 item 17: exit 2 (bad input), naming the path.
    let h = Harness::new();
    std::fs::write(h.path("plain"), "not a directory\n").unwrap();
    for ledger in [h.path("plain"), h.path("plain/ledger")] {
        let r: Run = h.cmd_at(&ledger).arg("init").output().unwrap().into();
        assert_eq!(r.code, 2, "{}: {}", ledger.display(), r.stderr);
        assert!(
            r.stderr.contains(&h.path("plain").display().to_string()),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(h.path("plain")).unwrap(),
        "not a directory\n"
    );
}

#[test]
fn verify_json_on_store_damage_is_one_json_document() {
    // Issue 29 item 17: the store cannot be opened; --json still answers.
    let h = Harness::new();
    h.init();
    for i in 0..3 {
        h.ok(&["note", &format!("n{i}")]);
    }
    let conf = h.ledger().join("sled").join("conf");
    let mut b = std::fs::read(&conf).unwrap();
    b[15] ^= 0x01; // a digit of the segment size
    std::fs::write(&conf, &b).unwrap();
    let v = h.run(&["verify", "--json"]);
    assert_eq!(v.code, 1, "{}", v.stderr);
    let doc = v.json();
    assert_eq!(doc["ok"], false, "{doc}");
    assert_eq!(doc["damage"], "storage_unreadable", "{doc}");
    assert!(doc["detail"].as_str().unwrap().contains("damage"), "{doc}");
}

#[test]
fn a_piped_stderr_gets_no_colour_codes() {
    // Issue 29 item 17: ANSI colour only on a terminal.
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    h.init();
    std::fs::set_permissions(h.ledger(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r: Run = h
        .cmd()
        .env("RUST_LOG", "info")
        .arg("head")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("expected 0700"),
        "the warning is logged: {}",
        r.stderr
    );
    assert!(
        !r.stderr.contains('\u{1b}'),
        "no escape codes on a pipe: {:?}",
        r.stderr
    );
}

#[test]
fn an_unknown_group_is_the_same_refusal_on_every_verb() {
    // rule LINEAGE-1; issue 29 item 17: gate exited 2, ingest 3.
    let h = Harness::new();
    h.init();
    assert_eq!(h.freeze(super::MANIFEST, super::PRIVATE).code, 0);
    let traces = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter/traces.jsonl"
    );
    let before = h.head_bytes();
    for args in [
        vec!["gate", "r9"],
        vec!["ingest", "traces", "r9", traces],
        vec!["group", "close", "r9"],
    ] {
        let r = h.run(&args);
        assert_eq!(r.code, 3, "LINEAGE-1: {args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("LINEAGE-1") && r.stderr.contains("not in the frozen target list"),
            "LINEAGE-1: {args:?}: {}",
            r.stderr
        );
    }
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn an_untrusted_note_is_not_called_ledger_damage() {
    // Issue 29 item 17: the ledger is whole; the note is what fails.
    let h = Harness::new();
    h.init();
    h.ok(&["note", "n1"]);
    h.ok(&["key", "generate", "stranger"]);
    let note = h.path("cp.note");
    h.ok(&[
        "checkpoint",
        "sign",
        "--key",
        "stranger.key",
        "-o",
        note.to_str().unwrap(),
    ]);
    let r = h.run(&[
        "prove",
        "inclusion",
        "1",
        "--checkpoint",
        note.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no key trusted here"), "{}", r.stderr);
    assert!(!r.stderr.contains("ledger damage"), "{}", r.stderr);
    h.ok(&["verify"]);
}

#[test]
fn the_registry_refusal_cites_its_rule_once() {
    // rule REPORT-7, CLASS-2; issue 29 item 17: "(CLASS-2) (CLASS-2)".
    let h = Harness::new();
    h.init();
    assert_eq!(h.freeze(super::MANIFEST, super::PRIVATE).code, 0);
    let r = h.run(&["report", "registry"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.stderr.matches("(CLASS-2)").count(), 1, "{}", r.stderr);
}

#[test]
fn a_result_json_that_does_not_parse_or_is_a_link_is_named_as_such() {
    // rule BIND-9; issue 29 item 17: never "a directory holding no trial
    // result" for a result.json that is there.
    let h = Harness::new();
    h.init();
    let pass = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
    ))
    .unwrap();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for (name, text) in [
        ("bom", format!("\u{feff}{pass}")),
        (
            "duplicate",
            "{\"trial_name\": \"a\", \"trial_name\": \"b\"}".to_string(),
        ),
        ("deep", format!("{{\"trial_name\": {deep}}}")),
    ] {
        let dir = h.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("result.json"), &text).unwrap();
        let r = h.run(&["ingest", "harbor", "r1", dir.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("{name}/result.json")) && !r.stderr.contains("holding no"),
            "BIND-9: {name}: the parse error names the file: {}",
            r.stderr
        );
    }
    let linked = h.path("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(linked.join("trial.log"), "").unwrap();
    std::fs::write(h.path("elsewhere.json"), &pass).unwrap();
    std::os::unix::fs::symlink(h.path("elsewhere.json"), linked.join("result.json")).unwrap();
    let r = h.run(&["ingest", "harbor", "r1", linked.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("linked/result.json") && r.stderr.contains("symbolic link"),
        "BIND-9: a symlinked result.json is called a symbolic link: {}",
        r.stderr
    );
}

#[test]
fn resume_reads_the_frozen_jobs_directory_and_refuses_another() {
    // rule BIND-9, CASE-4
    let h = Harness::new();
    h.init();
    let jobs = h.path("jobs");
    let manifest = super::MANIFEST.replace(
        "jobs_dir = \"/srv/bench/short13-kimi-2026-11/jobs\"",
        &format!("jobs_dir = \"{}\"", jobs.display()),
    );
    assert_ne!(manifest, super::MANIFEST);
    assert_eq!(h.freeze(&manifest, super::PRIVATE).code, 0);
    std::fs::create_dir_all(
        jobs.join("short13-kimi-2026-11-canary-1")
            .join("hello-world__canary-1-c1"),
    )
    .unwrap();
    let empty = h.path("any-empty-dir");
    std::fs::create_dir_all(&empty).unwrap();
    let before = h.head_bytes();
    let r = h.run(&[
        "resume",
        "canary-1",
        "--harbor-jobs",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 3, "BIND-9: another path is refused: {}", r.stderr);
    assert!(
        r.stderr.contains("BIND-9") && r.stderr.contains(&jobs.display().to_string()),
        "BIND-9: the refusal names the frozen directory: {}",
        r.stderr
    );
    for args in [
        vec!["resume", "canary-1", "--json"],
        vec![
            "resume",
            "canary-1",
            "--harbor-jobs",
            jobs.to_str().unwrap(),
            "--json",
        ],
    ] {
        let j = h.ok(&args).json();
        assert!(
            !j["launchable"].as_array().unwrap().iter().any(|c| c == "hello-world/c1"),
            "CASE-4: {args:?}: a case with a trial directory in the frozen jobs directory never launches: {j}"
        );
    }
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn ingest_compares_the_trials_own_config_file_with_the_launch() {
    // rule BIND-11: the file is hashed and compared, its differences
    // recorded under `config.json: `.
    let h = super::cases::ready_harness(1);
    h.ok(&["case", "start", "canary-1", "hello-world/c1"]);
    let cfg = h.path("c1.json");
    h.ok(&[
        "case",
        "render-config",
        "canary-1",
        "hello-world/c1",
        "-o",
        cfg.to_str().unwrap(),
    ]);
    let launched: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let trial = h.path("jobs/short13-kimi-2026-11-canary-1/hello-world__canary-1-c1");
    std::fs::create_dir_all(&trial).unwrap();
    let mut result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
        ))
        .unwrap(),
    )
    .unwrap();
    result["trial_name"] = "hello-world__canary-1-c1".into();
    result["task_name"] = "hello-world".into();
    result["config"] = launched.clone();
    std::fs::write(
        trial.join("result.json"),
        serde_json::to_vec(&result).unwrap(),
    )
    .unwrap();
    let mut edited = launched;
    edited["agent"]["model_name"] = "openai/gpt-5".into();
    std::fs::write(
        trial.join("config.json"),
        serde_json::to_vec(&edited).unwrap(),
    )
    .unwrap();
    h.ok(&["ingest", "harbor", "canary-1", trial.to_str().unwrap()]);
    let log = h.ok(&["log"]).stdout;
    let recorded = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kind"] == "trial_result_recorded.v2")
        .expect("the result is recorded");
    let differences = recorded["payload"]["config_differences"]
        .as_array()
        .unwrap();
    assert_eq!(
        differences,
        &vec![serde_json::Value::from("config.json: agent.model_name")],
        "BIND-11: the embedded config is the launched one; the file's edit is recorded"
    );
}

#[test]
fn ingest_records_every_timestamp_and_the_jobs_attempt_counts() {
    // rule BIND-11: what the verdict checks is recorded with the result.
    let h = super::cases::ready_harness(1);
    h.ok(&["case", "start", "canary-1", "hello-world/c1"]);
    let job = h.path("jobs/short13-job");
    let trial = job.join("hello-world__canary-1-c1");
    std::fs::create_dir_all(&trial).unwrap();
    let mut result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
        ))
        .unwrap(),
    )
    .unwrap();
    result["trial_name"] = "hello-world__canary-1-c1".into();
    result["task_name"] = "hello-world".into();
    std::fs::write(
        trial.join("result.json"),
        serde_json::to_vec(&result).unwrap(),
    )
    .unwrap();
    std::fs::write(job.join("config.json"), "{\"n_attempts\": 2}").unwrap();
    h.ok(&["ingest", "harbor", "canary-1", job.to_str().unwrap()]);
    let facts = h
        .ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kind"] == "trial_facts_recorded.v1")
        .expect("BIND-11: the result's facts are recorded");
    let p = &facts["payload"];
    assert_eq!(p["n_attempts"], 2, "BIND-11: {p}");
    assert_eq!(p["trials_for_case"], 1, "BIND-11: {p}");
    for path in [
        "agent_execution.started_at",
        "verifier.finished_at",
        "started_at",
    ] {
        assert!(
            p["times"][path].is_string(),
            "BIND-11: {path} recorded: {p}"
        );
    }
    assert!(
        p["times"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| !k.starts_with("config.")),
        "the embedded TrialConfig is not a time source: {p}"
    );
    // Again: nothing more.
    let before = h.head_bytes();
    h.ok(&["ingest", "harbor", "canary-1", job.to_str().unwrap()]);
    assert_eq!(h.head_bytes(), before);
}

#[test]
fn messages_name_values_as_the_ledger_writes_them_never_rust_types() {
    // rule FREEZE-7; issue 29 item 17: "signed off as Operator".
    let h = Harness::new();
    h.init();
    assert_eq!(h.freeze(super::MANIFEST, super::PRIVATE).code, 0);
    let alice = h.example_key("alice");
    h.ok(&[
        "manifest", "sign-off", "--role", "operator", "--key", &alice,
    ]);
    let r = h.run(&[
        "manifest", "sign-off", "--role", "operator", "--key", &alice,
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("signed off as operator") && !r.stderr.contains("Operator"),
        "FREEZE-7: the role as the ledger names it: {}",
        r.stderr
    );
}

/// A Harbor jobs directory `name` holding one job with trial directory
/// `trial_name`, whose result.json is the pass fixture naming that trial
/// of task `task_name`.
fn one_trial_tree(h: &Harness, name: &str, trial_name: &str, task_name: &str) -> String {
    let pass = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&pass).unwrap();
    v["trial_name"] = serde_json::json!(trial_name);
    v["task_name"] = serde_json::json!(task_name);
    let trial = h.path(name).join("job").join(trial_name);
    std::fs::create_dir_all(&trial).unwrap();
    std::fs::write(
        trial.join("result.json"),
        serde_json::to_vec_pretty(&v).unwrap(),
    )
    .unwrap();
    h.path(name).display().to_string()
}

#[test]
fn a_refused_evidence_file_is_kept_with_its_rule_and_shown() {
    // rule BIND-12 (issue 29 item 5): each kind of evidence a rule refuses
    // is kept as one record (path, size, BLAKE3, rule, reason; nothing of
    // its content), the verb still exits 3, the same offer again is kept
    // once, `verify` passes, and gate, replay and the report name it.
    use super::reliability::{fixture, row_with, KINDS};
    let h = super::cases::ready_harness(1);
    h.ok(&["case", "start", "canary-1", "hello-world/c1"]);
    let secret = format!("{}{}", "sk-ant-api03-", "Z".repeat(40) + "7q");
    for kind in KINDS {
        let path = h.path(&format!("refused-{kind}.jsonl"));
        let text = row_with(kind, &secret) + &fixture(kind);
        std::fs::write(&path, &text).unwrap();
        let p = path.to_str().unwrap();
        let kept = h.refused_kept(&["ingest", kind, "canary-1", p], "FREEZE-2", "FREEZE-2");
        assert_eq!(
            (
                kept["role"].as_str(),
                kept["path"].as_str(),
                kept["bytes"].as_u64(),
                kept["blake3"].as_str(),
            ),
            (
                Some(format!("bitrouter_{kind}").as_str()),
                Some(p),
                Some(text.len() as u64),
                Some(benchledger::evidence::blake3_hex(text.as_bytes()).as_str()),
            ),
            "BIND-12: {kind}: path, size and BLAKE3 of the bytes read"
        );
        assert!(
            !kept.to_string().contains(&secret),
            "BIND-12: {kind}: nothing of its content"
        );
        // The same bytes under the same path, refused the same way: kept
        // once (the record's idempotency key), still exit 3.
        let before = h.head_bytes();
        let again = h.run(&["ingest", kind, "canary-1", p]);
        assert_eq!(again.code, 3, "BIND-12: {}", again.stderr);
        assert!(
            again.stderr.contains("already kept at seq"),
            "BIND-12: {}",
            again.stderr
        );
        assert_eq!(
            h.head_bytes(),
            before,
            "BIND-12: the same offer is kept once"
        );
    }
    // A trial result naming another task than its directory (CASE-8),
    // offered for the started case: kept, the case named with it.
    let other = one_trial_tree(&h, "jobs-other", "hello-world__canary-1-c1", "fix-git");
    let kept = h.refused_kept(
        &["ingest", "harbor", "canary-1", &other],
        "CASE-8",
        "CASE-8",
    );
    assert_eq!(
        (kept["role"].as_str(), kept["case"]["trial"].as_str()),
        (Some("harbor_trial_result"), Some("c1")),
        "BIND-12: a trial's result is kept for its case"
    );
    assert!(
        !kept["reason"].as_str().unwrap().contains("fix-git"),
        "BIND-12: the reason names no value of the file: {kept}"
    );
    // A result for an identity never started (GATE-6).
    let foreign = one_trial_tree(
        &h,
        "jobs-foreign",
        "hello-world__canary-1-c3",
        "hello-world",
    );
    h.refused_kept(
        &["ingest", "harbor", "canary-1", &foreign],
        "GATE-6",
        "GATE-6",
    );
    // Shown: the case is not silently `started`, every refused file is
    // listed, and the file refused for a credential shape fails the
    // secrets row (BIND-8).
    let gate = h.run(&["gate", "canary-1"]);
    assert_eq!(gate.code, 1, "{}", gate.stderr);
    let replay = h.ok(&["replay"]).stdout;
    let report = h.ok(&["report"]).stdout;
    for (verb, out) in [("gate", &gate.stdout), ("replay", &replay)] {
        assert!(
            out.contains("hello-world/c1 (its result was refused: ")
                && out.contains("jobs-other/job/hello-world__canary-1-c1/result.json"),
            "BIND-12: {verb} names the case with its refused result: {out}"
        );
        assert_eq!(
            out.matches("refused evidence file ").count(),
            KINDS.len() + 2,
            "BIND-12: {verb} lists every refused file: {out}"
        );
        assert!(
            out.lines()
                .any(|l| l.contains("secrets") && l.contains("FAILS") && l.contains("BIND-12")),
            "BIND-12, BIND-8: {verb}: a file refused for a credential fails the secrets row: {out}"
        );
    }
    assert!(
        report.contains("Evidence files refused by a rule")
            && report.contains("refused-usage.jsonl (bitrouter_usage")
            && report.contains("CASE-8")
            && report.contains("GATE-6"),
        "BIND-12: the report lists the refused files: {report}"
    );
    assert!(!report.contains(&secret) && !replay.contains(&secret));
    assert_eq!(h.ok(&["verify", "--json"]).json()["ok"], true, "BIND-12");
}

#[test]
fn messages_read_as_english_and_name_values_as_the_ledger_writes_them() {
    // Issue 29 item 17 (the rest): never "a empty directory", never a Rust
    // variant name such as `DaemonHealth`.
    let h = super::cases::ready_harness(1);
    let empty = h.path("empty-jobs");
    std::fs::create_dir_all(&empty).unwrap();
    let r = h.run(&["ingest", "harbor", "canary-1", empty.to_str().unwrap()]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("is an empty directory holding no trial result"),
        "BIND-9: {}",
        r.stderr
    );
    let r = h.run(&[
        "check",
        "daemon-health",
        "--group",
        "canary-1",
        "--probe",
        "--url",
        "http://127.0.0.1:9/health",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("daemon_health probe of http://127.0.0.1:9/health does not hold"),
        "RUN-6: {}",
        r.stdout
    );
}
