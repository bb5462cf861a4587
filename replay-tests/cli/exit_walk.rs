//! The exit-code walk (issue 29): every verb of the clap tree, down each of
//! its refusal paths (bad usage, an unknown lineage or group, a missing
//! file, a rule's refusal, the environment), with the exit class each path
//! must give checked against the exit-code table of docs/reference.md, and the head
//! checked unchanged wherever that table says nothing is appended. A verb
//! without an entry here fails the walk.
//!
//! The ledger is the recorded corpus's accepted lineage (every group
//! sealed), so a rule refuses what a finished lineage no longer takes; the
//! environment fails by a writer lock this test holds (`--lock-timeout 0`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use benchledger::log::ledger::Ledger;

use super::{has_open, sigint, Harness, Run, MANIFEST, PRIVATE};

/// A refusal path (a way down a verb), and the class of docs/reference.md's
/// table it must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Way {
    /// A check ran and holds (0).
    Holds,
    /// A check ran and does not hold (1).
    DoesNotHold,
    /// Bad usage: a flag, a value, a count clap or the verb refuses (2).
    Usage,
    /// A lineage the ledger never froze (2: a name that resolves to nothing).
    UnknownLineage,
    /// A file that is not there (2).
    MissingFile,
    /// A group outside the frozen target list (3: LINEAGE-1, every verb).
    UnknownGroup,
    /// A rule of the method or the ledger refuses (3).
    Rule,
    /// The environment fails: a writer lock held elsewhere, a feature this
    /// build lacks (4).
    Environment,
}

use Way::*;

impl Way {
    fn exit(self) -> i32 {
        match self {
            Holds => 0,
            DoesNotHold => 1,
            Usage | UnknownLineage | MissingFile => 2,
            UnknownGroup | Rule => 3,
            Environment => 4,
        }
    }
}

/// Every leaf verb with the paths walked. Placeholders: `{missing}` (a
/// path that does not exist), `{alice}`, `{carol}` (key files: alice the
/// manifest's operator, carol listed nowhere), `{m}`, `{p}` (the example
/// manifest pair), `{ev}` (an evidence file), `{note}` (a signed checkpoint
/// of this ledger), `{vkey}` (alice's verifier key), `{fix}` (the
/// BitRouter fixtures), `{secret}` (a credential shape), `{empty}` (an
/// empty directory), `{man}` (a directory for man pages), `{ledger}` (the
/// ledger), `{expect}`, `{wrong}` (expectation files it meets and does not
/// meet), `{h64}` (64 hex
/// digits). `Environment` lines run with
/// the writer lock held by this test and `--lock-timeout 0`.
/// One path down a verb: the way and the command line.
type Step = (Way, &'static [&'static str]);

const WALK: &[(&str, &[Step])] = &[
    ("init", &[(Usage, &["init"]), (Environment, &["init"])]),
    (
        "verify",
        &[
            (Holds, &["verify"]),
            (MissingFile, &["verify", "--against", "{missing}"]),
            (Environment, &["verify"]),
        ],
    ),
    ("head", &[(Holds, &["head"]), (Environment, &["head"])]),
    ("key generate", &[(Usage, &["key", "generate", "bad name"])]),
    (
        "checkpoint sign",
        &[
            (MissingFile, &["checkpoint", "sign", "--key", "{missing}"]),
            (Rule, &["checkpoint", "sign", "--key", "{carol}"]),
            (Environment, &["checkpoint", "sign", "--key", "{alice}"]),
        ],
    ),
    (
        "checkpoint show",
        &[
            (Usage, &["checkpoint", "show", "NaN"]),
            (Environment, &["checkpoint", "show"]),
        ],
    ),
    (
        "checkpoint verify",
        &[
            (
                MissingFile,
                &["checkpoint", "verify", "--vkey", "{vkey}", "{missing}"],
            ),
            (
                Environment,
                &["checkpoint", "verify", "--vkey", "{vkey}", "{note}"],
            ),
        ],
    ),
    (
        "checkpoint witness",
        &[
            // the recorded lineage freezes no [witnessing] (TRUST-6)
            (Usage, &["checkpoint", "witness"]),
            (UnknownLineage, &["checkpoint", "witness", "nope"]),
            (Environment, &["checkpoint", "witness"]),
        ],
    ),
    (
        "prove inclusion",
        &[
            (
                MissingFile,
                &["prove", "inclusion", "--checkpoint", "{missing}", "3"],
            ),
            (
                Usage,
                &["prove", "inclusion", "--checkpoint", "{note}", "999999"],
            ),
            (
                Environment,
                &["prove", "inclusion", "--checkpoint", "{note}", "3"],
            ),
        ],
    ),
    (
        "prove consistency",
        &[
            (
                MissingFile,
                &["prove", "consistency", "{missing}", "{note}"],
            ),
            (Environment, &["prove", "consistency", "{note}", "{note}"]),
        ],
    ),
    (
        "log",
        &[
            (Usage, &["log", "--from", "5", "--to", "2"]),
            (Usage, &["log", "--kind", "no_such_kind.v1"]),
            (Holds, &["log", "--kind", "group_sealed"]),
            (Environment, &["log"]),
            (Environment, &["log", "--kind", "operator_noted.v1"]),
        ],
    ),
    (
        "export",
        &[
            (Usage, &["export"]),
            (Usage, &["export", "--redacted"]),
            (Environment, &["export", "--jsonl"]),
        ],
    ),
    // import writes a new ledger elsewhere: its paths are walked in
    // `import_and_an_interrupt_walk_the_rest_of_the_table`.
    ("import", &[]),
    (
        "note",
        &[
            (Usage, &["note", ""]),
            (Rule, &["note", "{secret}"]),
            (Environment, &["note", "x"]),
        ],
    ),
    (
        "manifest freeze",
        &[
            (
                MissingFile,
                &["manifest", "freeze", "{missing}", "--private", "{p}"],
            ),
            (Rule, &["manifest", "freeze", "{m}", "--private", "{p}"]),
            (
                Environment,
                &["manifest", "freeze", "{m}", "--private", "{p}"],
            ),
        ],
    ),
    (
        "manifest sign-off",
        &[
            (
                MissingFile,
                &[
                    "manifest",
                    "sign-off",
                    "--role",
                    "operator",
                    "--key",
                    "{missing}",
                ],
            ),
            (
                Rule,
                &[
                    "manifest", "sign-off", "--role", "operator", "--key", "{alice}",
                ],
            ),
            (
                Environment,
                &[
                    "manifest", "sign-off", "--role", "operator", "--key", "{alice}",
                ],
            ),
        ],
    ),
    (
        "manifest show",
        &[
            (UnknownLineage, &["manifest", "show", "nope"]),
            (Environment, &["manifest", "show"]),
        ],
    ),
    (
        "group open",
        &[
            (
                UnknownGroup,
                &[
                    "group",
                    "open",
                    "r9",
                    "--binary-sha256",
                    "{h64}",
                    "--config-sha256",
                    "{h64}",
                    "--ports",
                    "1",
                    "--db",
                    "d",
                    "--out",
                    "o",
                ],
            ),
            (
                Rule,
                &[
                    "group",
                    "open",
                    "r2",
                    "--binary-sha256",
                    "{h64}",
                    "--config-sha256",
                    "{h64}",
                    "--ports",
                    "1",
                    "--db",
                    "d",
                    "--out",
                    "o",
                ],
            ),
            (
                Environment,
                &[
                    "group",
                    "open",
                    "r2",
                    "--binary-sha256",
                    "{h64}",
                    "--config-sha256",
                    "{h64}",
                    "--ports",
                    "1",
                    "--db",
                    "d",
                    "--out",
                    "o",
                ],
            ),
        ],
    ),
    (
        "group close",
        &[
            (UnknownGroup, &["group", "close", "r9"]),
            (Rule, &["group", "close", "r2"]),
            (Environment, &["group", "close", "r2"]),
        ],
    ),
    (
        "group seal",
        &[
            (UnknownGroup, &["group", "seal", "r9"]),
            (Rule, &["group", "seal", "r2"]),
            (Environment, &["group", "seal", "r2"]),
        ],
    ),
    (
        "case render-config",
        &[
            (Usage, &["case", "render-config", "r2", "not-a-case"]),
            (UnknownGroup, &["case", "render-config", "r9", "fix-git/t1"]),
            (Environment, &["case", "render-config", "r2", "fix-git/t1"]),
        ],
    ),
    (
        "case start",
        &[
            (UnknownGroup, &["case", "start", "r9", "fix-git/t1"]),
            (Rule, &["case", "start", "r2", "fix-git/t1"]),
            (Environment, &["case", "start", "r2", "fix-git/t1"]),
        ],
    ),
    (
        "case refusal",
        &[
            (
                MissingFile,
                &[
                    "case",
                    "refusal",
                    "r2",
                    "fix-git/t1",
                    "--class",
                    "provider_policy_refusal",
                    "--http-status",
                    "403",
                    "--evidence",
                    "{missing}",
                ],
            ),
            (
                UnknownGroup,
                &[
                    "case",
                    "refusal",
                    "r9",
                    "fix-git/t1",
                    "--class",
                    "provider_policy_refusal",
                    "--http-status",
                    "403",
                    "--evidence",
                    "{ev}",
                ],
            ),
            (
                Rule,
                &[
                    "case",
                    "refusal",
                    "r2",
                    "fix-git/t1",
                    "--class",
                    "provider_policy_refusal",
                    "--http-status",
                    "403",
                    "--evidence",
                    "{ev}",
                ],
            ),
            (
                Environment,
                &[
                    "case",
                    "refusal",
                    "r2",
                    "fix-git/t1",
                    "--class",
                    "provider_policy_refusal",
                    "--http-status",
                    "403",
                    "--evidence",
                    "{ev}",
                ],
            ),
        ],
    ),
    (
        "case invalidate",
        &[
            (
                MissingFile,
                &[
                    "case",
                    "invalidate",
                    "r2",
                    "fix-git/t1",
                    "--reason",
                    "controller_crash",
                    "--evidence",
                    "{missing}",
                ],
            ),
            (
                UnknownGroup,
                &[
                    "case",
                    "invalidate",
                    "r9",
                    "fix-git/t1",
                    "--reason",
                    "controller_crash",
                    "--evidence",
                    "{ev}",
                ],
            ),
            (
                Rule,
                &[
                    "case",
                    "invalidate",
                    "r2",
                    "fix-git/t1",
                    "--reason",
                    "controller_crash",
                    "--evidence",
                    "{ev}",
                ],
            ),
            (
                Environment,
                &[
                    "case",
                    "invalidate",
                    "r2",
                    "fix-git/t1",
                    "--reason",
                    "controller_crash",
                    "--evidence",
                    "{ev}",
                ],
            ),
        ],
    ),
    (
        "resume",
        &[
            (UnknownGroup, &["resume", "r9"]),
            (MissingFile, &["resume", "r2", "--harbor-jobs", "{missing}"]),
            (Environment, &["resume", "r2"]),
        ],
    ),
    (
        "ingest harbor",
        &[
            (MissingFile, &["ingest", "harbor", "r2", "{missing}"]),
            (Rule, &["ingest", "harbor", "r2", "{empty}"]),
        ],
    ),
    (
        "ingest traces",
        &[
            (MissingFile, &["ingest", "traces", "r2", "{missing}"]),
            (
                UnknownGroup,
                &["ingest", "traces", "r9", "{fix}/traces.jsonl"],
            ),
            (Rule, &["ingest", "traces", "r2", "{fix}/traces.jsonl"]),
            (
                Environment,
                &["ingest", "traces", "r2", "{fix}/traces.jsonl"],
            ),
        ],
    ),
    (
        "ingest decisions",
        &[
            (MissingFile, &["ingest", "decisions", "r2", "{missing}"]),
            (
                UnknownGroup,
                &["ingest", "decisions", "r9", "{fix}/decisions.jsonl"],
            ),
            (
                Rule,
                &["ingest", "decisions", "r2", "{fix}/decisions.jsonl"],
            ),
            (
                Environment,
                &["ingest", "decisions", "r2", "{fix}/decisions.jsonl"],
            ),
        ],
    ),
    (
        "ingest usage",
        &[
            (MissingFile, &["ingest", "usage", "r2", "{missing}"]),
            (
                UnknownGroup,
                &["ingest", "usage", "r9", "{fix}/usage.jsonl"],
            ),
            (Rule, &["ingest", "usage", "r2", "{fix}/usage.jsonl"]),
            (Environment, &["ingest", "usage", "r2", "{fix}/usage.jsonl"]),
        ],
    ),
    (
        "ingest receipts",
        &[
            (MissingFile, &["ingest", "receipts", "r2", "{missing}"]),
            (
                UnknownGroup,
                &["ingest", "receipts", "r9", "{fix}/receipts.jsonl"],
            ),
            (Rule, &["ingest", "receipts", "r2", "{fix}/receipts.jsonl"]),
            (
                Environment,
                &["ingest", "receipts", "r2", "{fix}/receipts.jsonl"],
            ),
        ],
    ),
    (
        "ingest outcomes",
        &[
            (MissingFile, &["ingest", "outcomes", "r2", "{missing}"]),
            (
                UnknownGroup,
                &["ingest", "outcomes", "r9", "{fix}/outcomes.jsonl"],
            ),
            (Rule, &["ingest", "outcomes", "r2", "{fix}/outcomes.jsonl"]),
            (
                Environment,
                &["ingest", "outcomes", "r2", "{fix}/outcomes.jsonl"],
            ),
        ],
    ),
    // The AWS verbs in a build without `aws`: the environment (a feature
    // this build lacks), exit 4 like every verb a build lacks.
    (
        "identity prove",
        &[
            (Usage, &["identity", "prove"]),
            (Environment, &["identity", "prove", "--private", "{p}"]),
        ],
    ),
    ("quota check", &[(Environment, &["quota", "check"])]),
    ("central up", &[(Environment, &["central", "up"])]),
    ("central down", &[(Environment, &["central", "down"])]),
    (
        "cleanup audit",
        &[(Environment, &["cleanup", "audit", "r2"])],
    ),
    (
        "cleanup monitor",
        &[(Environment, &["cleanup", "monitor", "r2"])],
    ),
    (
        "cleanup terminate",
        &[(Environment, &["cleanup", "terminate", "r2"])],
    ),
    (
        "check residue",
        &[
            (Usage, &["check", "residue"]),
            (Environment, &["check", "residue", "--group", "r2"]),
        ],
    ),
    (
        "check daemon-health",
        &[
            (
                UnknownGroup,
                &[
                    "check",
                    "daemon-health",
                    "--group",
                    "r9",
                    "--url",
                    "http://127.0.0.1:9/health",
                ],
            ),
            (
                Usage,
                &[
                    "check",
                    "daemon-health",
                    "--group",
                    "r2",
                    "--url",
                    "ftp://x",
                ],
            ),
            (
                DoesNotHold,
                &[
                    "check",
                    "daemon-health",
                    "--group",
                    "r2",
                    "--probe",
                    "--url",
                    "http://127.0.0.1:9/health",
                ],
            ),
            (
                Environment,
                &[
                    "check",
                    "daemon-health",
                    "--group",
                    "r2",
                    "--probe",
                    "--url",
                    "http://127.0.0.1:9/health",
                ],
            ),
        ],
    ),
    (
        "check sentinel",
        &[
            (Usage, &["check", "sentinel", "--route", "strong"]),
            (
                UnknownGroup,
                &["check", "sentinel", "--route", "strong", "--group", "r9"],
            ),
            (
                Environment,
                &[
                    "check",
                    "sentinel",
                    "--route",
                    "strong",
                    "--url",
                    "http://127.0.0.1:9/",
                ],
            ),
        ],
    ),
    (
        "check binary",
        &[
            (MissingFile, &["check", "binary", "--path", "{missing}"]),
            (Environment, &["check", "binary", "--path", "{ev}"]),
        ],
    ),
    (
        "check config",
        &[
            (MissingFile, &["check", "config", "--config", "{missing}"]),
            (Environment, &["check", "config", "--config", "{ev}"]),
        ],
    ),
    (
        "gate",
        &[
            (Holds, &["gate", "control"]),
            (UnknownGroup, &["gate", "r9"]),
            (UnknownLineage, &["gate", "nope/r2"]),
            (Environment, &["gate", "r2"]),
        ],
    ),
    (
        "replay",
        &[
            (Holds, &["replay", "--json"]),
            (Usage, &["replay", "--at", "999999"]),
            (Environment, &["replay"]),
        ],
    ),
    ("audit", &[(Holds, &["audit"]), (Environment, &["audit"])]),
    (
        "feedback record",
        &[
            (
                UnknownGroup,
                &[
                    "feedback", "record", "r9", "--before", "{h64}", "--after", "{h64}",
                ],
            ),
            (
                Usage,
                &[
                    "feedback", "record", "r2", "--before", "x", "--after", "{h64}",
                ],
            ),
            (
                Rule,
                &[
                    "feedback", "record", "r2", "--before", "{h64}", "--after", "{h64}",
                ],
            ),
            (
                Environment,
                &[
                    "feedback", "record", "r2", "--before", "{h64}", "--after", "{h64}",
                ],
            ),
        ],
    ),
    (
        "control reuse",
        &[
            (
                UnknownLineage,
                &[
                    "control",
                    "reuse",
                    "nope",
                    "--control",
                    "short13-kimi-2026-11/control",
                ],
            ),
            (
                Rule,
                &[
                    "control",
                    "reuse",
                    "short13-kimi-2026-11",
                    "--control",
                    "short13-kimi-2026-11/control",
                ],
            ),
            (
                Environment,
                &[
                    "control",
                    "reuse",
                    "short13-kimi-2026-11",
                    "--control",
                    "short13-kimi-2026-11/control",
                ],
            ),
        ],
    ),
    (
        "control list",
        &[
            (Holds, &["control", "list"]),
            (Environment, &["control", "list"]),
        ],
    ),
    (
        "lineage stop",
        &[
            (
                UnknownLineage,
                &["lineage", "stop", "nope", "--reason", "x"],
            ),
            (Usage, &["lineage", "stop", "--reason", ""]),
            (Environment, &["lineage", "stop", "--reason", "x"]),
        ],
    ),
    (
        "lineage show",
        &[
            (UnknownLineage, &["lineage", "show", "nope"]),
            (Environment, &["lineage", "show"]),
        ],
    ),
    (
        "report show",
        &[
            (UnknownLineage, &["report", "show", "nope"]),
            (Environment, &["report", "show"]),
        ],
    ),
    (
        "report registry",
        &[
            (Rule, &["report", "registry"]),
            (Environment, &["report", "registry"]),
        ],
    ),
    (
        "report",
        &[
            (UnknownLineage, &["report", "nope"]),
            (Environment, &["report"]),
        ],
    ),
    (
        "run",
        &[
            (UnknownGroup, &["run", "r9", "--plan"]),
            (UnknownLineage, &["run", "r2", "nope", "--plan"]),
            (Environment, &["run", "r2", "--plan"]),
        ],
    ),
    (
        "expect",
        &[
            (Holds, &["expect", "{ledger}", "{expect}"]),
            (DoesNotHold, &["expect", "{ledger}", "{wrong}"]),
            (MissingFile, &["expect", "{ledger}", "{missing}"]),
            (Usage, &["expect", "{ledger}", "{ev}"]),
            (Usage, &["expect", "{ledger}"]),
            (Environment, &["expect", "{ledger}", "{expect}"]),
        ],
    ),
    // Neither reads the ledger: a held writer lock does not stop them.
    (
        "completions",
        &[
            (Holds, &["completions", "bash"]),
            (Usage, &["completions", "tcsh"]),
        ],
    ),
    (
        "man",
        &[
            (Holds, &["man"]),
            (Holds, &["man", "-o", "{man}"]),
            (Usage, &["man", "-o", "{ev}"]),
            (Usage, &["man", "-o", "{ev}/man"]),
        ],
    ),
];

/// The exit-code table of docs/reference.md: code -> whether it says nothing is
/// appended, and the exception it names.
fn readme_table() -> BTreeMap<i32, String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md")).unwrap();
    let table = readme
        .split("### Exit codes")
        .nth(1)
        .expect("docs/reference.md has an exit-code section");
    table
        .lines()
        .skip_while(|l| !l.starts_with("| exit"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].parse().expect("an exit code"),
                cells[2].to_string(),
            )
        })
        .collect()
}

/// Whether docs/reference.md says a refusal of exit `code` appends nothing, and
/// whether it names BIND-12's record as the one exception.
fn nothing_appended(table: &BTreeMap<i32, String>, code: i32) -> (bool, bool) {
    let text = &table[&code];
    (text.contains("nothing appended"), text.contains("BIND-12"))
}

struct World {
    h: Harness,
    values: BTreeMap<&'static str, String>,
}

impl World {
    fn new() -> World {
        let h = Harness::new();
        let export = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/replay-tests/ledgers/short13-accepted.jsonl"
        );
        h.ok(&["import", "--jsonl", export]);
        let alice = h.example_key("alice");
        let carol = h.example_key("carol");
        let note = h.path("cp.note").display().to_string();
        h.ok(&["checkpoint", "sign", "--key", &alice, "--out", &note]);
        let (m, p) = h.manifest_files("m", MANIFEST, PRIVATE);
        let ev = h.path("evidence.txt");
        std::fs::write(&ev, "HTTP/1.1 403 Forbidden\n").unwrap();
        let empty = h.path("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let expect = h.path("expect.toml");
        std::fs::write(&expect, "[groups.control]\nstatus = \"accepted\"\n").unwrap();
        let wrong = h.path("wrong.toml");
        std::fs::write(&wrong, "[groups.control]\nstatus = \"rejected_join\"\n").unwrap();
        let vkey = benchledger::testkit::examples::signer("alice")
            .verifier()
            .encode();
        let values = [
            ("{missing}", h.path("missing.file").display().to_string()),
            ("{alice}", alice),
            ("{carol}", carol),
            ("{m}", m),
            ("{p}", p),
            ("{ev}", ev.display().to_string()),
            ("{note}", note),
            ("{vkey}", vkey),
            ("{empty}", empty.display().to_string()),
            ("{man}", h.path("man").display().to_string()),
            ("{ledger}", h.ledger().display().to_string()),
            ("{expect}", expect.display().to_string()),
            ("{wrong}", wrong.display().to_string()),
            (
                "{fix}",
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/replay-tests/fixtures/bitrouter"
                )
                .to_string(),
            ),
            // split so this file holds no literal a secret scanner flags
            (
                "{secret}",
                format!("{}{}", "sk-ant-api03-", "Q".repeat(40) + "9x"),
            ),
            ("{h64}", "ab".repeat(32)),
        ]
        .into_iter()
        .collect();
        World { h, values }
    }

    fn filled(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|a| {
                self.values
                    .iter()
                    .fold(a.to_string(), |s, (k, v)| s.replace(k, v))
            })
            .collect()
    }
}

/// The head witness's bytes: they change with every acknowledged append.
fn stamp(h: &Harness) -> Option<Vec<u8>> {
    Ledger::head_stamp(&h.ledger())
}

#[test]
fn every_verb_s_refusal_paths_exit_as_the_readme_table_says() {
    let table = readme_table();
    assert_eq!(
        table.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 130],
        "the exit-code table of docs/reference.md"
    );
    let w = World::new();
    let leaves = super::argv_fuzz::leaf_verbs();
    for verb in &leaves {
        assert!(
            WALK.iter().any(|(v, _)| v == verb),
            "verb {verb:?} has no entry in the exit-code walk"
        );
    }
    for (verb, _) in WALK {
        assert!(leaves.iter().any(|v| v == verb), "{verb:?} is no verb");
    }
    let mut failures = Vec::new();
    let mut by_path: BTreeMap<Way, usize> = BTreeMap::new();
    let mut check = |verb: &str, path: Way, args: Vec<String>, lock: bool| {
        let before = stamp(&w.h);
        let held = lock.then(|| Ledger::open(&w.h.ledger(), Duration::from_secs(30)).unwrap());
        let mut cmd = w.h.cmd();
        if lock {
            cmd.args(["--lock-timeout", "0"]);
        }
        let r: Run = cmd
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .into();
        drop(held);
        let after = stamp(&w.h);
        let want = path.exit();
        let mut problems = Vec::new();
        if r.code != want {
            problems.push(format!("exit {} (the {path:?} path is {want})", r.code));
        }
        if !table.contains_key(&r.code) {
            problems.push(format!(
                "exit {} is not in the table of docs/reference.md",
                r.code
            ));
        }
        if r.stderr.contains("panicked at") {
            problems.push("panicked".into());
        }
        let (nothing, except_bind_12) = table
            .get(&r.code)
            .map_or((false, false), |_| nothing_appended(&table, r.code));
        if nothing && before != after && !except_bind_12 {
            problems.push("appended, where the table says nothing is".into());
        }
        if r.code == 3 && before != after {
            problems
                .push("a rule refused and the head moved (no evidence file was kept here)".into());
        }
        *by_path.entry(path).or_default() += 1;
        if !problems.is_empty() {
            failures.push(format!(
                "{verb} {args:?}: {}\n    stderr: {}",
                problems.join("; "),
                r.stderr.trim()
            ));
        }
    };
    for (verb, paths) in WALK {
        // Bad usage on every verb: an option none has.
        let mut usage: Vec<String> = verb.split(' ').map(String::from).collect();
        usage.push("--no-such-option".into());
        check(verb, Usage, usage, false);
        for (path, args) in *paths {
            check(verb, *path, w.filled(args), *path == Environment);
        }
    }
    println!(
        "exit-code walk: {} verbs; paths walked {by_path:?}",
        WALK.len()
    );
    assert!(
        failures.is_empty(),
        "{} refusal paths disagree with the table of docs/reference.md:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(w.h.ok(&["verify", "--json"]).json()["ok"], true);
}

#[test]
fn import_and_an_interrupt_walk_the_rest_of_the_table() {
    // `import` (a new ledger elsewhere) and 130 (a second Ctrl-C): nothing
    // is left where the table says nothing is appended.
    let table = readme_table();
    let h = Harness::new();
    let target = h.ledger();
    for (args, want) in [
        (vec!["import", "--no-such-option"], 2),
        (vec!["import", "--jsonl", "missing.jsonl"], 2),
    ] {
        let r = h.run(&args);
        assert_eq!(r.code, want, "{args:?}: {}", r.stderr);
        assert!(
            nothing_appended(&table, want).0 && !target.exists(),
            "{args:?} left a ledger"
        );
    }
    // Two Ctrl-C while an import waits for its input: exit 130, no ledger.
    let mut child = h
        .cmd()
        .args(["import", "--jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let export = super::fail_closed::an_export(3);
    let first = export.lines().next().unwrap().to_string() + "\n";
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(first.as_bytes())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let staging = |p: &Path| {
        std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".importing-"))
    };
    while !staging(&target) {
        assert!(Instant::now() < deadline, "no staging ledger appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let it reach the read of its next line (a signal during the staging
    // ledger's creation interrupts that instead: exit 4).
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..2 {
        let ok = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "a second Ctrl-C ends the verb at once: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.contains_key(&130) && nothing_appended(&table, 130).0);
    assert!(!target.exists(), "130: nothing appended, no ledger");
}

/// Leaf verbs that never wait for this ledger's writer lock, so no test
/// can hold them there, each with its reason. Every other verb is held
/// there and interrupted.
const NEVER_WAIT: &[(&str, &str)] = &[
    ("key generate", "writes a key file; opens no ledger"),
    (
        "import",
        "builds a new ledger in an empty directory; held instead on its stdin (`-`) in import_and_an_interrupt_walk_the_rest_of_the_table",
    ),
    ("completions", "prints a script; opens no ledger"),
    ("man", "prints or writes man pages; opens no ledger"),
    ("identity prove", NO_AWS),
    ("quota check", NO_AWS),
    ("central up", NO_AWS),
    ("central down", NO_AWS),
    ("cleanup audit", NO_AWS),
    ("cleanup monitor", NO_AWS),
    ("cleanup terminate", NO_AWS),
    ("check residue", NO_AWS),
];

const NO_AWS: &str = "this build has no `aws` feature: refused with exit 4 before any ledger is opened (the walk is compiled for that build)";

/// Command lines that reach the writer lock, for the verbs whose walk
/// above has no `Environment` path.
const HELD_AT_THE_LOCK: &[(&str, &[&str])] = &[(
    "ingest harbor",
    &["ingest", "harbor", "control", "{harbor}"],
)];

/// Runs `args` with the writer lock held by this test, waits until the
/// verb has the lock file open (it waits for the lock), sends one SIGINT
/// (a second when the verb is still running 10 s later) and returns its
/// exit code, stderr and whether a second was sent, or what went wrong.
fn interrupted_at_the_lock(
    w: &World,
    args: &[String],
) -> Result<(Option<i32>, String, bool), String> {
    let lock_file = w.h.ledger().join("benchledger.lock");
    let held = Ledger::open(&w.h.ledger(), Duration::from_secs(30)).unwrap();
    let mut child =
        w.h.cmd()
            .args(["--lock-timeout", "120"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    let waiting = loop {
        if has_open(pid, &lock_file) {
            break Ok(());
        }
        if let Some(status) = child.try_wait().unwrap() {
            break Err(format!("ended before waiting for the lock: {status}"));
        }
        if Instant::now() > deadline {
            break Err("did not open the lock file within 30 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // One SIGINT: a verb with nothing to undo ends at once. A verb that
    // took the signals over (TAKES_SIGNALS) cleans up at the first and
    // ends at the second.
    let mut second = false;
    if waiting.is_ok() {
        sigint(pid);
        if !super::ends_within(&mut child, Duration::from_secs(10)) {
            second = true;
            sigint(pid);
        }
    }
    let out = super::finish(child, Duration::from_secs(30));
    drop(held);
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    waiting.map_err(|why| format!("{why}; stderr: {stderr}"))?;
    Ok((out.status.code(), stderr, second))
}

/// The verbs that take the signals over before they wait for the lock
/// (they have temporary files or children to clean up): only these may
/// need a second Ctrl-C.
const TAKES_SIGNALS: &[&str] = &["import", "export", "run"];

#[test]
fn ctrl_c_ends_every_verb_waiting_for_the_ledger_with_130() {
    let table = readme_table();
    assert!(nothing_appended(&table, 130).0);
    let mut w = World::new();
    // A Harbor job holding one trial result: `ingest harbor` reads the
    // tree, then waits for the lock.
    let trial = w.h.path("harbor/job/hello-world__control-c1");
    std::fs::create_dir_all(&trial).unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/fixtures/harbor-0.25.0/trial-result.pass.json"
        ),
        trial.join("result.json"),
    )
    .unwrap();
    let harbor = w.h.path("harbor").display().to_string();
    w.values.insert("{harbor}", harbor);
    let mut failures = Vec::new();
    let mut held = 0;
    for verb in super::argv_fuzz::leaf_verbs() {
        let never = NEVER_WAIT.iter().find(|(v, _)| *v == verb);
        let args = WALK
            .iter()
            .find(|(v, _)| *v == verb)
            .and_then(|(_, steps)| steps.iter().find(|(way, _)| *way == Environment))
            .map(|(_, args)| *args)
            .or_else(|| {
                HELD_AT_THE_LOCK
                    .iter()
                    .find(|(v, _)| *v == verb)
                    .map(|(_, a)| *a)
            });
        let Some(args) = args.filter(|_| never.is_none()) else {
            if never.is_none() {
                failures.push(format!(
                    "{verb}: no command line reaches the lock (add one to HELD_AT_THE_LOCK or a reason to NEVER_WAIT)"
                ));
            }
            continue;
        };
        let before = stamp(&w.h);
        match interrupted_at_the_lock(&w, &w.filled(args)) {
            Ok((Some(130), _, true)) if !TAKES_SIGNALS.contains(&verb.as_str()) => failures.push(
                format!("{verb}: still running after the first Ctrl-C; it has nothing to undo"),
            ),
            Ok((Some(130), _, _)) if stamp(&w.h) == before => held += 1,
            Ok((Some(130), _, _)) => failures.push(format!("{verb}: exit 130, but the head moved")),
            Ok((code, stderr, _)) => {
                failures.push(format!("{verb} {args:?}: exit {code:?}, not 130: {stderr}"))
            }
            Err(why) => failures.push(format!("{verb} {args:?}: {why}")),
        }
    }
    // A verb that cannot wait does not: its reason still holds.
    for (verb, why) in NEVER_WAIT {
        assert!(!why.is_empty());
        assert!(
            super::argv_fuzz::leaf_verbs().iter().any(|v| v == verb),
            "NEVER_WAIT names {verb:?}, no leaf verb"
        );
    }
    println!("130 walk: {held} verbs held at the lock and interrupted");
    assert!(
        failures.is_empty(),
        "{} verbs did not end with 130 on Ctrl-C at the lock (the first, or the second for a verb that cleans up):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(held >= 40, "only {held} verbs held");
}
