//! The bad-input run of issue 29 (by hand: `bash tools/badinput-run.sh`;
//! ignored in `cargo test`): the bad-input corpus (`bad-inputs.toml`) plus
//! every shape issue 29 names, generated here (`/dev/zero` and a FIFO as
//! every file a verb reads, symbolic links, BOMs, duplicate keys, deep
//! nesting, escape codes, lone AWS secrets, truncated and newer-format
//! exports, files past their bound, Harbor trees that bind to nothing), fed
//! to the binary under `/usr/bin/time`. Per input it records the exit code,
//! whether the message names the file and the line or field, `verify` and
//! the head before and after, what was appended, a panic, a credential shape
//! or a raw control character on stdout or stderr, and the peak RSS; it
//! writes one JSON line per input to `$BADINPUT_OUT` (default
//! `badinput.jsonl` in the temp dir), prints the figures as markdown, and
//! fails on any input that panicked, echoed a credential, reached the
//! terminal raw, appended on a refusal (other than BIND-12's one record of a
//! refused evidence file) or left the ledger unverifiable.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchledger::log::ledger::Ledger;
use serde_json::{json, Value};

use super::bad_inputs::{self, Case, FileSpec};
use super::{Harness, Run};

/// Seconds one input may run before its process group is killed (a read
/// that blocks on a FIFO, an unbounded read of `/dev/zero`); the input then
/// fails the run.
const INPUT_SECS_MAX: u64 = 120;

/// What to make in the temp dir besides files.
#[derive(Clone)]
enum Prep {
    /// A FIFO at the path.
    Fifo(String),
    /// A symbolic link (link, target).
    Link(String, String),
    /// A sparse file of this many bytes.
    Sparse(String, u64),
    /// A directory.
    Dir(String),
}

/// One bad input.
struct Input {
    name: String,
    setup: String,
    /// Inputs with one key share one harness (in order); the key defaults
    /// to the setup's name.
    key: Option<String>,
    args: Vec<String>,
    files: Vec<FileSpec>,
    prep: Vec<Prep>,
    /// Exit codes this input may give (the table of docs/reference.md: 2 bad input,
    /// 3 a rule, 4 the environment, 1 a check that does not hold).
    exits: Vec<i32>,
    /// A known bug of the corpus (its exit is then not held against it).
    xfail: bool,
    ledger: Option<String>,
}

impl Input {
    fn new(name: impl Into<String>, setup: &str, args: Vec<String>, exits: &[i32]) -> Input {
        Input {
            name: name.into(),
            setup: setup.into(),
            key: None,
            args,
            files: Vec::new(),
            prep: Vec::new(),
            exits: exits.to_vec(),
            xfail: false,
            ledger: None,
        }
    }

    /// An input in a harness of its own (or shared with the inputs of `key`).
    fn alone(mut self, key: &str) -> Input {
        self.key = Some(key.into());
        self
    }

    fn file(mut self, path: &str, text: String) -> Input {
        self.files.push(text_file(path, text));
        self
    }

    fn prep(mut self, p: Prep) -> Input {
        self.prep.push(p);
        self
    }

    fn harness_key(&self) -> String {
        self.key.clone().unwrap_or_else(|| self.setup.clone())
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn text_file(path: &str, text: String) -> FileSpec {
    FileSpec {
        path: path.into(),
        text: Some(text),
        from: None,
        hex: None,
        replace: Vec::new(),
        first_row: None,
        truncate: None,
    }
}

/// A fabricated AWS secret access key (40 base64 bytes), split so this file
/// holds no literal a secret scanner flags.
fn aws_secret() -> String {
    format!("{}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKE1")
}

fn fixture(kind: &str) -> String {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter/"
    );
    std::fs::read_to_string(format!("{dir}{kind}.jsonl")).unwrap()
}

const KINDS: [&str; 5] = ["traces", "decisions", "usage", "receipts", "outcomes"];

/// Every file argument of every verb, with the setup it needs and the
/// verb's other arguments (`{f}` is the file).
const FILE_ARGS: &[(&str, &[&str])] = &[
    ("empty", &["manifest", "freeze", "{f}", "--private", "{f}"]),
    (
        "frozen",
        &["manifest", "sign-off", "--role", "reviewer", "--key", "{f}"],
    ),
    (
        "frozen",
        &[
            "manifest", "sign-off", "--role", "reviewer", "--note", "{f}",
        ],
    ),
    ("frozen", &["manifest", "show", "--private", "{f}"]),
    ("frozen", &["checkpoint", "sign", "--key", "{f}"]),
    (
        "frozen",
        &["checkpoint", "verify", "--vkey", "{vkey}", "{f}"],
    ),
    (
        "frozen",
        &["prove", "inclusion", "--checkpoint", "{f}", "1"],
    ),
    ("frozen", &["prove", "consistency", "{f}", "{f}"]),
    ("frozen", &["verify", "--against", "{f}"]),
    ("none", &["import", "--jsonl", "{f}"]),
    ("frozen", &["ingest", "traces", "r1", "{f}"]),
    ("frozen", &["ingest", "decisions", "r1", "{f}"]),
    ("frozen", &["ingest", "usage", "r1", "{f}"]),
    ("frozen", &["ingest", "receipts", "r1", "{f}"]),
    ("frozen", &["ingest", "outcomes", "r1", "{f}"]),
    (
        "ready",
        &[
            "case",
            "refusal",
            "canary-1",
            "hello-world/c1",
            "--class",
            "provider_policy_refusal",
            "--http-status",
            "403",
            "--evidence",
            "{f}",
        ],
    ),
    (
        "ready",
        &[
            "case",
            "invalidate",
            "canary-1",
            "hello-world/c1",
            "--reason",
            "controller_crash",
            "--evidence",
            "{f}",
        ],
    ),
    (
        "ready",
        &[
            "case",
            "start",
            "canary-1",
            "hello-world/c2",
            "--config",
            "{f}",
        ],
    ),
    ("frozen", &["check", "binary", "--path", "{f}"]),
    ("frozen", &["check", "config", "--config", "{f}"]),
    ("frozen", &["identity", "prove", "--private", "{f}"]),
    ("frozen", &["run", "r1", "--plan", "--private", "{f}"]),
];

/// The verb of an argument list: its first two words when the first has
/// subcommands (`ingest traces`), else the first.
fn leaf_verb(args: &[String]) -> String {
    let first = bad_inputs::verb_of(args);
    let nested = [
        "manifest",
        "group",
        "case",
        "ingest",
        "check",
        "checkpoint",
        "prove",
        "key",
        "lineage",
        "control",
        "feedback",
        "report",
        "identity",
        "quota",
        "cleanup",
    ];
    let next = args
        .iter()
        .skip_while(|a| **a != first)
        .nth(1)
        .filter(|n| !n.starts_with('-') && nested.contains(&first.as_str()));
    match next {
        Some(n) if n.chars().all(|c| c.is_ascii_lowercase() || c == '-') => format!("{first} {n}"),
        _ => first,
    }
}

/// The named bound of the file a verb reads (`src/limits.rs`).
fn bound_of(args: &[&str]) -> (&'static str, u64) {
    use benchledger::limits as l;
    match (args[0], args[1]) {
        ("import", _) => ("IMPORT_FILE_BYTES_MAX", l::IMPORT_FILE_BYTES_MAX),
        ("ingest", _) => ("INGEST_FILE_BYTES_MAX", l::INGEST_FILE_BYTES_MAX),
        ("case", "refusal" | "invalidate") => ("SCANNED_FILE_BYTES_MAX", l::SCANNED_FILE_BYTES_MAX),
        ("case", "start") | ("check", "binary") => {
            ("HASHED_FILE_BYTES_MAX", l::HASHED_FILE_BYTES_MAX)
        }
        ("check", "config") => (
            "CONFIG_FILE_BYTES_MAX",
            benchledger::gates::checks::CONFIG_FILE_BYTES_MAX as u64,
        ),
        _ => ("TEXT_INPUT_FILE_BYTES_MAX", l::TEXT_INPUT_FILE_BYTES_MAX),
    }
}

/// `/dev/zero`, a FIFO, a directory, a dangling link and a (sparse) file
/// one byte past its named bound as every file a verb reads: refused at
/// once, naming the file (exit 2; a verb the build lacks, `identity prove`
/// without `aws`: 4). `run --plan` reads no `--private` (it changes
/// nothing and needs no key), so it may also exit 0.
fn device_inputs() -> Vec<Input> {
    let vkey = benchledger::testkit::examples::signer("alice")
        .verifier()
        .encode();
    let with_file = |args: &[&str], f: &str| -> Vec<String> {
        args.iter()
            .map(|a| a.replace("{f}", f).replace("{vkey}", &vkey))
            .collect()
    };
    let mut out = Vec::new();
    for (setup, args) in FILE_ARGS {
        let verb = args
            .join(" ")
            .replace("{f}", "FILE")
            .replace("{vkey}", "VKEY");
        let (bound, max) = bound_of(args);
        let exits: &[i32] = if args[0] == "run" {
            &[0, 2, 4]
        } else {
            &[2, 4]
        };
        out.push(Input::new(
            format!("/dev/zero as {verb}"),
            setup,
            with_file(args, "/dev/zero"),
            exits,
        ));
        out.push(
            Input::new(
                format!("a FIFO as {verb}"),
                setup,
                with_file(args, "{tmp}/in.fifo"),
                exits,
            )
            .prep(Prep::Fifo("in.fifo".into())),
        );
        out.push(
            Input::new(
                format!("a directory as {verb}"),
                setup,
                with_file(args, "{tmp}/a-dir"),
                exits,
            )
            .prep(Prep::Dir("a-dir".into())),
        );
        out.push(
            Input::new(
                format!("a dangling symlink as {verb}"),
                setup,
                with_file(args, "{tmp}/dangling"),
                exits,
            )
            .prep(Prep::Link("dangling".into(), "nowhere".into())),
        );
        out.push(
            Input::new(
                format!("one byte past {bound} as {verb}"),
                setup,
                with_file(args, "{tmp}/big.txt"),
                exits,
            )
            .prep(Prep::Sparse("big.txt".into(), max + 1)),
        );
    }
    out
}

/// Broken JSON Lines of every BitRouter kind: a BOM, a repeated key,
/// nesting past the bound, a cut line, escape codes in a key, a line past
/// the record bound; and a lone AWS secret in a field the payload keeps,
/// refused by the guard.
fn bitrouter_inputs() -> Vec<Input> {
    let mut out = Vec::new();
    let deep = format!("{{\"id\": {}{}}}\n", "[".repeat(10_000), "]".repeat(10_000));
    let long = format!(
        "{{\"id\": \"{}\"}}\n",
        "x".repeat(benchledger::limits::RECORD_BYTES_MAX + 1)
    );
    for kind in KINDS {
        let all = fixture(kind);
        let first = all.lines().next().unwrap().to_string();
        let row: Value = serde_json::from_str(&first).unwrap();
        let key = row.as_object().unwrap().keys().next().unwrap().clone();
        for (shape, text) in [
            ("a BOM", format!("\u{feff}{all}")),
            (
                "a repeated key",
                format!("{{\"{key}\": \"dup\", {}\n", &first[1..]),
            ),
            ("deep nesting", deep.clone()),
            ("a cut line", first[..first.len() / 2].to_string()),
            (
                "an escape code in a key",
                first.replacen('"', "\"\u{1b}[2J\u{202e}", 1) + "\n",
            ),
            ("a CR in a key", first.replacen('"', "\"\r", 1) + "\n"),
            ("a line past the record bound", long.clone()),
            ("a JSON array, not lines", format!("[{first}]\n")),
            ("an empty file", String::new()),
        ] {
            // An empty export is a file of no rows, kept as an artifact.
            let exits: &[i32] = if text.is_empty() { &[0, 2] } else { &[2] };
            let args = strings(&["ingest", kind, "r1", "{tmp}/bad.jsonl"]);
            out.push(
                Input::new(format!("ingest {kind}: {shape}"), "frozen", args, exits)
                    .file("bad.jsonl", text),
            );
        }
        let mut bytes = b"\xff\xfe\n".to_vec();
        bytes.extend_from_slice(all.as_bytes());
        let args = strings(&["ingest", kind, "r1", "{tmp}/bad.jsonl"]);
        let mut utf8 = Input::new(
            format!("ingest {kind}: invalid UTF-8"),
            "frozen",
            args,
            &[2],
        );
        utf8.files.push(FileSpec {
            hex: Some(hex::encode(bytes)),
            text: None,
            ..text_file("bad.jsonl", String::new())
        });
        out.push(utf8);
        let row = super::reliability::row_with(kind, &format!("secret={}", aws_secret()));
        let args = strings(&["ingest", kind, "r1", "{tmp}/secret.jsonl"]);
        out.push(
            Input::new(
                format!("ingest {kind}: a lone AWS secret"),
                "frozen",
                args,
                &[3],
            )
            .file("secret.jsonl", row + &all),
        );
    }
    out
}

/// The Harbor fixture's passing result, named for case c1 of canary-1.
fn harbor_result(trial: &str, edit: impl Fn(&mut Value)) -> String {
    let pass = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
    );
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(pass).unwrap()).unwrap();
    v["trial_name"] = json!(trial);
    v["task_name"] = json!(trial.split("__").next().unwrap());
    edit(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

const TRIAL: &str = "hello-world__canary-1-c1";

/// Harbor trees, each in a ledger of its own where case c1 was started: a
/// result.json with a BOM, a repeated key, deep nesting, cut, a symbolic
/// link, a directory; trees binding to nothing; a lone AWS secret and
/// escape codes in an exception.
fn harbor_inputs() -> Vec<Input> {
    let named = harbor_result(TRIAL, |_| {});
    let result = format!("jobs/job/{TRIAL}/result.json");
    let args = strings(&["ingest", "harbor", "canary-1", "{tmp}/jobs"]);
    let exception = |msg: String| {
        harbor_result(TRIAL, move |v| {
            let at = v["started_at"].clone();
            v["exception_info"] = json!({"exception_type": "ClientError",
                "exception_message": msg.clone(), "exception_traceback": msg.clone(),
                "occurred_at": at});
        })
    };
    let mut out = Vec::new();
    for (shape, exits, path, text) in [
        ("a BOM", &[2][..], &result, format!("\u{feff}{named}")),
        (
            "a repeated key",
            &[2],
            &result,
            named.replacen('{', "{\"trial_name\": \"x\", ", 1),
        ),
        (
            "deep nesting",
            &[2],
            &result,
            format!(
                "{{\"trial_name\": {}{}}}",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
        ),
        (
            "a cut file",
            &[2],
            &result,
            named[..named.len() / 2].to_string(),
        ),
        ("an empty file", &[2], &result, String::new()),
        (
            "another task (CASE-8, kept)",
            &[3],
            &result,
            harbor_result(TRIAL, |v| v["task_name"] = json!("fix-git")),
        ),
        (
            "a case never started (GATE-6, kept)",
            &[3],
            &"jobs/job/hello-world__canary-1-c5/result.json".to_string(),
            harbor_result("hello-world__canary-1-c5", |_| {}),
        ),
        (
            "Harbor's own trial name, binding to nothing",
            &[2],
            &"jobs/job/hello-world__Xk3pQ9a/result.json".to_string(),
            harbor_result("hello-world__Xk3pQ9a", |_| {}),
        ),
        (
            "an unknown group's trial name",
            &[2, 3],
            &"jobs/job/hello-world__nope-9-c1/result.json".to_string(),
            harbor_result("hello-world__nope-9-c1", |_| {}),
        ),
        (
            "only a trial.log",
            &[2, 3],
            &format!("jobs/job/{TRIAL}/trial.log"),
            String::new(),
        ),
        (
            "a lone AWS secret in an exception",
            &[0, 3],
            &result,
            exception(format!("signing with secret {}", aws_secret())),
        ),
        (
            "escape codes in an exception",
            &[0, 2, 3],
            &result,
            exception("\u{1b}]0;owned\u{7}\r\u{1b}[2K holds".into()),
        ),
    ] {
        out.push(
            Input::new(
                format!("ingest harbor: {shape}"),
                "ready",
                args.clone(),
                exits,
            )
            .alone(&format!("harbor {shape}"))
            .file(path, text),
        );
    }
    out.extend(harbor_path_inputs(&named, &result, &args));
    out
}

/// Harbor paths that are not what they seem: a symlinked result.json, a
/// result.json that is a directory, an empty jobs directory, a symlinked
/// jobs directory (followed: only the files in it must be real).
fn harbor_path_inputs(named: &str, result: &str, args: &[String]) -> Vec<Input> {
    let (named, result, args) = (named.to_string(), result.to_string(), args.to_vec());
    let mut out = Vec::new();
    out.push(
        Input::new(
            "ingest harbor: a symlinked result.json",
            "ready",
            args.clone(),
            &[2],
        )
        .alone("harbor link")
        .file("elsewhere.json", named.clone())
        .file(&format!("jobs/job/{TRIAL}/trial.log"), String::new())
        .prep(Prep::Link(result.clone(), "elsewhere.json".into())),
    );
    out.push(
        Input::new(
            "ingest harbor: result.json is a directory",
            "ready",
            args.clone(),
            &[2, 3],
        )
        .alone("harbor dir")
        .prep(Prep::Dir(result.clone())),
    );
    out.push(
        Input::new(
            "ingest harbor: an empty jobs directory",
            "ready",
            args.clone(),
            &[2, 3],
        )
        .alone("harbor empty")
        .prep(Prep::Dir("jobs".into())),
    );
    out.push(
        Input::new(
            "ingest harbor: a symlinked jobs directory",
            "ready",
            args,
            &[0, 2],
        )
        .alone("harbor linked dir")
        .file(&format!("real/job/{TRIAL}/result.json"), named)
        .prep(Prep::Link("jobs".into(), "real".into())),
    );
    out
}

/// Lone AWS secrets in arguments that would be stored (BIND-8, FREEZE-2).
fn secret_argument_inputs() -> Vec<Input> {
    let s = aws_secret();
    let cases: Vec<(&str, Vec<String>, &[i32])> = vec![
        (
            "a note: secret=",
            vec!["note".into(), format!("secret={s}")],
            &[3],
        ),
        (
            "a note: signing with secret",
            vec!["note".into(), format!("signing with secret {s} now")],
            &[3],
        ),
        (
            // Forty base64 characters with no context are any digest
            // (the scanner needs a keyword or an assignment): may append.
            "a note: the secret alone",
            vec!["note".into(), s.clone()],
            &[0, 3],
        ),
        (
            "a note: AWS_SECRET_ACCESS_KEY=",
            vec!["note".into(), format!("AWS_SECRET_ACCESS_KEY={s}")],
            &[3],
        ),
        (
            "an actor holding a secret",
            vec![
                "--actor".into(),
                format!("secret={s}"),
                "note".into(),
                "x".into(),
            ],
            &[2, 3],
        ),
        (
            "an idempotency key holding a secret",
            vec![
                "note".into(),
                "x".into(),
                "--idempotency-key".into(),
                format!("secret={s}"),
            ],
            &[2, 3],
        ),
        (
            "lineage stop with a secret reason",
            vec![
                "lineage".into(),
                "stop".into(),
                "--reason".into(),
                format!("secret={s}"),
            ],
            &[2, 3],
        ),
        (
            "case invalidate with a secret reason",
            vec![
                "case".into(),
                "invalidate".into(),
                "r1".into(),
                "hello-world/c1".into(),
                "--reason".into(),
                format!("secret={s}"),
                "--evidence".into(),
                "{tmp}/missing.log".into(),
            ],
            &[2, 3],
        ),
        (
            "group close with a secret group name",
            vec!["group".into(), "close".into(), format!("secret={s}")],
            &[2, 3],
        ),
    ];
    cases
        .into_iter()
        .map(|(what, args, exits)| Input::new(what, "frozen", args, exits))
        .collect()
}

/// Escape codes, carriage returns and bidirectional overrides in
/// arguments: never on the terminal raw (BIND-10).
fn escape_argument_inputs() -> Vec<Input> {
    let cases: Vec<(&str, Vec<&str>, &[i32])> = vec![
        (
            "a group name with escape codes",
            vec!["gate", "\u{1b}[2Jr1\r"],
            &[2, 3],
        ),
        (
            "a group name with a bidi override",
            vec!["ingest", "traces", "r\u{202e}1", "{tmp}/missing.jsonl"],
            &[2, 3],
        ),
        (
            "a case label with escape codes",
            vec!["case", "start", "r1", "\u{1b}]0;x\u{7}/t1"],
            &[2, 3],
        ),
        (
            "a lineage with escape codes",
            vec!["lineage", "show", "\u{1b}[31mred"],
            &[2, 3],
        ),
        (
            "a report of a lineage with a CR",
            vec!["report", "show", "ex\rample"],
            &[2, 3],
        ),
        (
            "a path with escape codes",
            vec!["ingest", "usage", "r1", "{tmp}/\u{1b}[2J.jsonl"],
            &[2],
        ),
        (
            "a ledger path with escape codes",
            vec!["--ledger", "{tmp}/\u{1b}[2Jl", "head"],
            &[2],
        ),
        (
            "an actor with escape codes",
            vec!["--actor", "\u{1b}[2Jop", "note", "x"],
            &[2],
        ),
        (
            "an idempotency key with a CR",
            vec!["note", "x", "--idempotency-key", "k\rk"],
            &[0, 2],
        ),
        (
            "a note of control characters",
            vec!["note", "\u{1b}[2J\u{1b}[H\r\u{202e}"],
            &[0, 2],
        ),
        (
            "a manifest path with escape codes",
            vec![
                "manifest",
                "freeze",
                "{tmp}/\u{1b}[2Jm.toml",
                "--private",
                "{tmp}/p",
            ],
            &[2],
        ),
        (
            "a key path with a CR",
            vec!["checkpoint", "sign", "--key", "{tmp}/k\r.key"],
            &[2],
        ),
        (
            "a replay seq with escape codes",
            vec!["replay", "--at", "\u{1b}[2J"],
            &[2],
        ),
        (
            "a log bound with escape codes",
            vec!["log", "--from", "1\u{1b}[2J"],
            &[2],
        ),
        (
            "a check url with escape codes",
            vec!["check", "daemon-health", "r1", "--url", "http://\u{1b}[2J/"],
            &[2, 3],
        ),
    ];
    cases
        .into_iter()
        .map(|(what, args, exits)| Input::new(what, "frozen", strings(&args), exits))
        .collect()
}

/// Every verb that takes a group, given one the manifest does not list:
/// the LINEAGE-1 refusal, exit 3, on every verb alike (issue 29 item 17).
fn unknown_group_inputs() -> Vec<Input> {
    let verbs: Vec<Vec<&str>> = vec![
        vec!["gate", "nope-9"],
        vec!["run", "nope-9", "--plan"],
        vec!["resume", "nope-9"],
        vec!["ingest", "harbor", "nope-9", "{tmp}/a-dir"],
        vec!["ingest", "traces", "nope-9", "{fix}/traces.jsonl"],
        vec!["ingest", "decisions", "nope-9", "{fix}/decisions.jsonl"],
        vec!["ingest", "usage", "nope-9", "{fix}/usage.jsonl"],
        vec!["ingest", "receipts", "nope-9", "{fix}/receipts.jsonl"],
        vec!["ingest", "outcomes", "nope-9", "{fix}/outcomes.jsonl"],
        vec!["case", "start", "nope-9", "hello-world/c1"],
        vec!["case", "render-config", "nope-9", "hello-world/c1"],
        vec!["group", "close", "nope-9"],
        vec!["group", "seal", "nope-9"],
        vec![
            "check",
            "daemon-health",
            "--group",
            "nope-9",
            "--url",
            "http://127.0.0.1:9/",
        ],
        vec![
            "check",
            "sentinel",
            "--group",
            "nope-9",
            "--route",
            "strong",
            "--url",
            "http://127.0.0.1:9/",
        ],
    ];
    verbs
        .into_iter()
        .map(|args| {
            let name = format!("an unknown group: {}", leaf_verb(&strings(&args)));
            Input::new(name, "frozen", strings(&args), &[3]).prep(Prep::Dir("a-dir".into()))
        })
        .collect()
}

/// Evidence whose text holds escape codes and carriage returns, ingested
/// (or refused), then shown by every verb that prints evidence: the codes
/// stay inert (BIND-10). One ledger, in order.
fn display_inputs() -> Vec<Input> {
    let hostile = "x\r\u{1b}[2K\u{1b}[32mholds\u{1b}[0m\u{1b}]0;t\u{7}";
    let mut out = Vec::new();
    for kind in KINDS {
        let file = format!("hostile-{kind}.jsonl");
        let args = strings(&["ingest", kind, "r1", &format!("{{tmp}}/{file}")]);
        out.push(
            Input::new(
                format!("ingest {kind}: escape codes in a value"),
                "frozen",
                args,
                &[0, 2, 3],
            )
            .alone("display")
            .file(&file, super::reliability::row_with(kind, hostile)),
        );
    }
    for (verb, exits) in [
        (vec!["gate", "r1"], &[1][..]),
        (vec!["gate", "r1", "--json"], &[1]),
        (vec!["replay"], &[0]),
        (vec!["lineage", "show"], &[0]),
        (vec!["report", "show"], &[0, 3]),
        (vec!["report", "show", "--format", "json"], &[0, 3]),
        (vec!["log", "--from", "1"], &[0]),
        (vec!["audit"], &[0]),
        (vec!["resume", "r1"], &[0, 3]),
        (vec!["run", "r1", "--plan"], &[0, 1, 3]),
    ] {
        let name = format!("{} after hostile evidence", verb.join(" "));
        out.push(Input::new(name, "frozen", strings(&verb), exits).alone("display"));
    }
    out
}

/// A small export edited into each shape `import` must refuse: cut, of a
/// newer format, a trailer that lies, a line after the trailer, a BOM, a
/// repeated key, deep nesting, a line past its bound.
fn export_inputs() -> Vec<Input> {
    let h = Harness::new();
    h.init();
    for i in 0..5 {
        h.ok(&["note", &format!("n{i}")]);
    }
    let export = h.ok(&["export", "--jsonl"]).stdout;
    let lines: Vec<&str> = export.lines().collect();
    let n = lines.len();
    let body = lines[..n - 1].join("\n") + "\n";
    let trailer = lines[n - 1];
    let mut genesis: Value = serde_json::from_str(lines[0]).unwrap();
    genesis["payload"]["format_version"] = json!(2);
    let newer = std::iter::once(genesis.to_string())
        .chain(lines[1..].iter().map(|l| l.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let mut counted: Value = serde_json::from_str(trailer).unwrap();
    let more = counted
        .as_object_mut()
        .unwrap()
        .iter_mut()
        .find(|(_, v)| v.as_u64() == Some(6));
    let lying = more
        .map(|(_, v)| *v = json!(7))
        .map(|_| format!("{body}{counted}\n"));
    let long = format!(
        "{{\"seq\":\"{}\"}}\n",
        "x".repeat(benchledger::limits::EXPORT_LINE_BYTES_MAX)
    );
    let mut shapes = vec![
        ("cut in half", lines[..3].join("\n") + "\n"),
        ("cut mid-line", export[..export.len() - 40].to_string()),
        ("without its trailer", body.clone()),
        (
            "with a line after its trailer",
            format!("{export}{}\n", lines[1]),
        ),
        ("of format version 2", newer),
        ("with a BOM", format!("\u{feff}{export}")),
        (
            "with a repeated key",
            format!(
                "{{\"seq\":0,{}\n{}\n",
                &lines[0][1..],
                lines[1..].join("\n")
            ),
        ),
        (
            "nested past the bound",
            format!("{}{}\n{trailer}\n", "[".repeat(10_000), "]".repeat(10_000)),
        ),
        ("with a line past its bound", format!("{long}{trailer}\n")),
        ("with a CR in its trailer", format!("{body}{}\r\n", trailer)),
        (
            "with records swapped",
            format!(
                "{}\n{}\n{}\n{}\n",
                lines[0],
                lines[2],
                lines[1],
                lines[3..].join("\n")
            ),
        ),
        ("empty", String::new()),
    ];
    shapes.extend(lying.map(|l| ("whose trailer counts one more record", l)));
    shapes
        .into_iter()
        .map(|(shape, text)| {
            let args = strings(&["import", "--jsonl", "{tmp}/bad-export.jsonl"]);
            Input::new(format!("import: an export {shape}"), "none", args, &[2])
                .file("bad-export.jsonl", text)
        })
        .collect()
}

/// The corpus of `bad-inputs.toml`, as inputs.
fn corpus_inputs() -> Vec<Input> {
    let text = std::fs::read_to_string(bad_inputs::CORPUS).unwrap();
    let corpus: bad_inputs::Corpus = toml::from_str(&text).unwrap();
    corpus
        .case
        .into_iter()
        .map(|c: Case| Input {
            name: c.name,
            setup: c.setup,
            key: None,
            args: c.args,
            files: c.file,
            prep: Vec::new(),
            exits: vec![c.exit],
            xfail: c.xfail.is_some(),
            ledger: c.ledger,
        })
        .collect()
}

/// The corpus, then every generated input, grouped by the harness they run
/// in (in order within a group).
fn all_inputs() -> (usize, Vec<Input>) {
    let mut inputs = corpus_inputs();
    let corpus = inputs.len();
    inputs.extend(device_inputs());
    inputs.extend(bitrouter_inputs());
    inputs.extend(harbor_inputs());
    inputs.extend(secret_argument_inputs());
    inputs.extend(escape_argument_inputs());
    inputs.extend(unknown_group_inputs());
    inputs.extend(display_inputs());
    inputs.extend(export_inputs());
    (corpus, inputs)
}

fn prepare(h: &Harness, p: &Prep) {
    match p {
        Prep::Fifo(rel) => {
            let path = h.path(rel);
            if !path.exists() {
                let ok = Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "mkfifo {}", path.display());
            }
        }
        Prep::Link(link, target) => {
            let link = h.path(link);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(h.path(target), link).unwrap();
        }
        Prep::Sparse(rel, len) => {
            let f = std::fs::File::create(h.path(rel)).unwrap();
            f.set_len(*len).unwrap();
        }
        Prep::Dir(rel) => std::fs::create_dir_all(h.path(rel)).unwrap(),
    }
}

/// One run of the binary under `/usr/bin/time`, in a process group of its
/// own that is killed (by its id) past `INPUT_SECS_MAX`.
struct Timed {
    run: Run,
    rss_kib: u64,
    secs: f64,
    timed_out: bool,
}

fn timed(h: &Harness, ledger: &Path, args: &[String]) -> Timed {
    let (rss, out, err) = (
        h.path("rss.txt"),
        h.path("stdout.txt"),
        h.path("stderr.txt"),
    );
    let t0 = Instant::now();
    let mut child = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(env!("CARGO_BIN_EXE_benchledger"))
        .arg("--ledger")
        .arg(ledger)
        .args(args)
        .current_dir(h.path(""))
        .env_remove("BENCHLEDGER_DIR")
        .env_remove("BENCHLEDGER_ACTOR")
        .env_remove("RUST_LOG")
        .env("BENCHLEDGER_AWS_GATES", "recorded")
        // never the real configuration directory (TRUST-7's memory)
        .env("BENCHLEDGER_AUDITOR_STATE", h.auditor_state())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .expect("/usr/bin/time runs (GNU time)");
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !timed_out && t0.elapsed() > Duration::from_secs(INPUT_SECS_MAX) {
            let group = i32::try_from(child.id()).unwrap();
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            timed_out = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let secs = t0.elapsed().as_secs_f64();
    let rss_kib = std::fs::read_to_string(&rss)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(0);
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    // GNU time writes "Command exited with non-zero status N" into -o's
    // file, not stderr; the exit code is its child's.
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: read(&out),
        stderr: read(&err),
    };
    Timed {
        run,
        rss_kib,
        secs,
        timed_out,
    }
}

/// What `verify --json` and `head --json` say of the harness's ledger.
#[derive(Clone, Debug, PartialEq)]
struct LedgerState {
    verifies: bool,
    head_seq: Option<u64>,
    head_hash: Option<String>,
    /// `head --json` as printed (exit code and stdout).
    head: (i32, String),
}

fn ledger_state(h: &Harness) -> Option<LedgerState> {
    if !Ledger::exists(&h.ledger()) {
        return None;
    }
    let r = h.run(&["verify", "--json"]);
    let j: Value = serde_json::from_str(r.stdout.trim()).unwrap_or(Value::Null);
    let head = h.run(&["head", "--json"]);
    Some(LedgerState {
        verifies: r.code == 0 && j["ok"] == true,
        head_seq: j["head_seq"].as_u64(),
        head_hash: j["head_hash"].as_str().map(String::from),
        head: (head.code, head.stdout.trim().to_string()),
    })
}

/// The kinds of the records past `seq`.
fn appended_kinds(h: &Harness, seq: u64) -> Vec<String> {
    h.run(&["log", "--from", &(seq + 1).to_string()])
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// Whether `text` holds a character that redraws a terminal: an escape,
/// a carriage return, a bell, a backspace, a bidirectional override.
fn raw_control(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c, '\u{1b}' | '\r' | '\u{7}' | '\u{8}' | '\u{9b}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

/// The file names among the arguments (for "the message names the file").
fn file_names(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| a.contains('/') && !a.starts_with("--") && !a.contains("://"))
        .filter_map(|a| {
            Path::new(a)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
        })
        .filter(|n| !n.chars().any(char::is_control))
        .collect()
}

/// What one input did.
struct Outcome {
    line: Value,
    verb: String,
    code: i32,
    rss_kib: u64,
    names_file: Option<bool>,
    names_where: bool,
    kept: bool,
    problems: Vec<String>,
}

/// Runs one input in `h` (its files written first) and judges it.
fn run_input(h: &Harness, i: &Input) -> Outcome {
    for f in &i.files {
        bad_inputs::write_file(h, f);
    }
    for p in &i.prep {
        prepare(h, p);
    }
    let args: Vec<String> = i.args.iter().map(|a| bad_inputs::expand(h, a)).collect();
    let ledger = i
        .ledger
        .as_ref()
        .map_or(h.ledger(), |l| PathBuf::from(bad_inputs::expand(h, l)));
    let before = ledger_state(h);
    // Run once: bug 8 of tools/RELIABILITY.md (sled's own lock held a
    // moment after another process let go) is fixed at its cause, so an
    // input that hits it again is reported, not retried.
    let t = timed(h, &ledger, &args);
    let after = ledger_state(h);
    let moved = before.as_ref().map(|b| &b.head) != after.as_ref().map(|a| &a.head);
    let appended = match (&before, moved) {
        (Some(b), true) => appended_kinds(h, b.head_seq.unwrap_or(0)),
        (None, true) if i.ledger.is_none() => vec!["a new ledger".into()],
        _ => Vec::new(),
    };
    let r = &t.run;
    let files = file_names(&args);
    let names_file =
        (!files.is_empty()).then(|| files.iter().any(|f| r.stderr.contains(f.as_str())));
    let names_where = ["line ", "field ", "key ", "column "]
        .iter()
        .any(|w| r.stderr.contains(w));
    let kept = r.code == 3 && appended == ["evidence_refused.v1"];
    let problems = judge(i, &t, &before, &after, moved && !kept, &appended);
    let line = json!({
        "name": i.name, "setup": i.setup, "args": args, "exit": r.code, "expected": i.exits,
        "names_file": names_file, "names_line_or_field": names_where,
        "verify_before": before.as_ref().map(|b| b.verifies),
        "verify_after": after.as_ref().map(|a| a.verifies),
        "head_before": before.as_ref().map(|b| json!({"seq": b.head_seq, "hash": b.head_hash})),
        "head_after": after.as_ref().map(|a| json!({"seq": a.head_seq, "hash": a.head_hash})),
        "appended": appended, "rss_kib": t.rss_kib, "secs": (t.secs * 1000.0).round() / 1000.0,
        "message": r.stderr.lines().find(|l| l.starts_with("error")).or(r.stderr.lines().last()).unwrap_or(""),
        "problems": problems,
    });
    Outcome {
        line,
        verb: leaf_verb(&args),
        code: r.code,
        rss_kib: t.rss_kib,
        names_file,
        names_where,
        kept,
        problems,
    }
}

/// The rules of the run: no panic, no credential or raw control character
/// on the output, nothing appended on a refusal (but BIND-12's record), the
/// ledger still verifies, the exit code is the table's.
fn judge(
    i: &Input,
    t: &Timed,
    before: &Option<LedgerState>,
    after: &Option<LedgerState>,
    appended_other: bool,
    appended: &[String],
) -> Vec<String> {
    let r = &t.run;
    let output = format!("{}\n{}", r.stdout, r.stderr);
    let mut problems = Vec::new();
    if t.timed_out {
        problems.push(format!("still running after {INPUT_SECS_MAX} s: killed"));
    }
    if r.stderr.contains("panicked at") || r.code == 101 {
        problems.push("panicked".to_string());
    }
    if let Some(f) = benchledger::schema::secrets::scan(&output) {
        problems.push(format!("a credential of shape {} on the output", f.shape));
    }
    if raw_control(&output) {
        problems.push("a raw control character on the output".into());
    }
    if r.code != 0 && r.code != 1 && appended_other {
        problems.push(format!(
            "appended {appended:?} on a refusal (exit {})",
            r.code
        ));
    }
    let damaged = i.setup.starts_with("damaged");
    if !damaged && before.is_some() && after.as_ref().is_some_and(|a| !a.verifies) {
        problems.push("the ledger no longer verifies".into());
    }
    if i.setup == "none" && before.is_none() && after.is_some() && i.ledger.is_none() && r.code != 0
    {
        problems.push("a refused command left a ledger behind".into());
    }
    if !i.exits.contains(&r.code) && !i.xfail {
        problems.push(format!("exit {} (expected one of {:?})", r.code, i.exits));
    }
    problems
}

/// `k: v, ...` of a count map.
fn counts<K: std::fmt::Display>(m: &BTreeMap<K, usize>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The run's figures.
#[derive(Default)]
struct Tally {
    inputs: usize,
    by_exit: BTreeMap<i32, usize>,
    by_verb: BTreeMap<String, usize>,
    names_file: (usize, usize),
    names_where: (usize, usize),
    kept: usize,
    rss: Vec<(u64, String)>,
    failures: Vec<String>,
}

impl Tally {
    fn add(&mut self, i: &Input, o: &Outcome) {
        self.inputs += 1;
        *self.by_exit.entry(o.code).or_default() += 1;
        *self.by_verb.entry(o.verb.clone()).or_default() += 1;
        if let Some(named) = o.names_file {
            self.names_file.1 += 1;
            self.names_file.0 += usize::from(named);
        }
        if o.code == 2 {
            self.names_where.1 += 1;
            self.names_where.0 += usize::from(o.names_where);
        }
        self.kept += usize::from(o.kept);
        self.rss.push((o.rss_kib, i.name.clone()));
        if !o.problems.is_empty() {
            self.failures.push(format!(
                "[{}] {}: {}\n    {}\n    {}",
                i.setup,
                i.name,
                o.problems.join("; "),
                o.line["args"],
                o.line["message"]
            ));
        }
    }

    /// The figures as markdown, for tools/RELIABILITY.md.
    fn markdown(&mut self, corpus: usize, wall: Duration, out: &Path) -> String {
        self.rss.sort();
        let (max, max_name) = self.rss.last().cloned().unwrap_or_default();
        let median = self.rss.get(self.rss.len() / 2).map_or(0, |r| r.0);

        format!(
            "| figure | value |\n| --- | --- |\n\
             | inputs | {} ({corpus} of the corpus, {} generated) |\n\
             | leaf verbs | {} |\n\
             | by exit code | {} |\n\
             | message names the file (inputs naming one) | {} of {} |\n\
             | message names a line, field or key (exit 2) | {} of {} |\n\
             | appended on a refusal | {} BIND-12 records of refused evidence files, nothing else |\n\
             | peak RSS | median {median} KiB, max {max} KiB ({max_name}) |\n\
             | wall time | {:.0} s |\n\
             | failed inputs | {} |\n\nby verb: {}\n\nper input: {}\n",
            self.inputs,
            self.inputs - corpus,
            self.by_verb.len(),
            counts(&self.by_exit),
            self.names_file.0,
            self.names_file.1,
            self.names_where.0,
            self.names_where.1,
            self.kept,
            wall.as_secs_f64(),
            self.failures.len(),
            counts(&self.by_verb),
            out.display()
        )
    }
}

#[test]
#[ignore = "by hand: bash tools/badinput-run.sh OUT.jsonl (several minutes)"]
fn the_bad_input_run_of_issue_29() {
    let t0 = Instant::now();
    let (corpus, inputs) = all_inputs();
    let mut groups: BTreeMap<String, Vec<&Input>> = BTreeMap::new();
    let mut names = BTreeSet::new();
    for i in &inputs {
        assert!(
            names.insert(i.name.as_str()),
            "two inputs named {:?}",
            i.name
        );
        groups.entry(i.harness_key()).or_default().push(i);
    }
    let out_path = std::env::var("BADINPUT_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir().join("badinput.jsonl"));
    let mut file = std::fs::File::create(&out_path).unwrap();
    let mut tally = Tally::default();
    for list in groups.values() {
        let h = bad_inputs::setup(&list[0].setup);
        for i in list {
            let o = run_input(&h, i);
            std::io::Write::write_all(&mut file, format!("{}\n", o.line).as_bytes()).unwrap();
            eprintln!(
                "{:>4} exit {:>3} {:>7.2} s  {}",
                tally.inputs + 1,
                o.code,
                o.line["secs"],
                i.name
            );
            tally.add(i, &o);
            if i.setup == "none" && i.ledger.is_none() && h.ledger().exists() {
                std::fs::remove_dir_all(h.ledger()).unwrap();
            }
        }
    }
    println!("{}", tally.markdown(corpus, t0.elapsed(), &out_path));
    assert!(tally.inputs >= 200, "{} inputs", tally.inputs);
    assert!(
        tally.failures.is_empty(),
        "{} of {} inputs failed:\n{}",
        tally.failures.len(),
        tally.inputs,
        tally.failures.join("\n")
    );
}
