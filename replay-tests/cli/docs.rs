//! The CLI's conventions (issue 33 item 8): shell completions and man pages
//! generated from the clap tree, and `log --kind`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use clap::CommandFactory;
use serde_json::Value;

use super::{Harness, MANIFEST, PRIVATE};

/// Every visible subcommand path below the top (`["checkpoint", "sign"]`),
/// inner nodes included: each has a man page.
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, at: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = at.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&benchledger::cli::Cli::command(), &[], &mut out);
    out
}

/// The top-level verbs.
fn verbs() -> Vec<String> {
    benchledger::cli::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect()
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_verb() {
    let h = Harness::new();
    let verbs = verbs();
    assert!(verbs.len() >= 25, "only {} verbs: {verbs:?}", verbs.len());
    for shell in ["bash", "zsh", "fish"] {
        let r = h.ok(&["completions", shell]);
        assert!(!r.stdout.trim().is_empty(), "{shell}: empty completions");
        assert!(r.stdout.contains("benchledger"), "{shell}: {}", r.stdout);
        for verb in &verbs {
            assert!(
                r.stdout.contains(verb.as_str()),
                "{shell} completions lack the verb {verb:?}"
            );
        }
        // Options and nested verbs come from the same tree (fish names a
        // long option `-l NAME`).
        let long = |name: &str| match shell {
            "fish" => format!("-l {name}"),
            _ => format!("--{name}"),
        };
        for word in [long("kind"), long("lock-timeout"), "inclusion".into()] {
            assert!(
                r.stdout.contains(&word),
                "{shell} completions lack {word:?}"
            );
        }
        assert!(r.stderr.is_empty(), "{shell}: {}", r.stderr);
    }
    // The bash script parses as bash.
    let script = h.path("benchledger.bash");
    std::fs::write(&script, h.ok(&["completions", "bash"]).stdout).unwrap();
    let parsed = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    // An unknown shell is bad usage (exit 2) naming the shells there are.
    let r = h.run(&["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("bash") && r.stderr.contains("fish"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
    assert!(!h.ledger().exists(), "completions never touch a ledger");
}

/// The `.TH` line of a page: its title and section.
fn title_of(page: &str) -> Option<(String, String)> {
    let line = page.lines().find(|l| l.starts_with(".TH "))?;
    let mut words = line[4..].split_whitespace();
    Some((words.next()?.to_string(), words.next()?.to_string()))
}

/// A small roff check: every control line is a request or man(7) macro
/// clap_mangen writes, `.TH` comes before any section and once, and every
/// escape names a known form.
fn roff_problems(page: &str) -> Vec<String> {
    const KNOWN: [&str; 14] = [
        "TH", "SH", "SS", "TP", "PP", "LP", "IP", "RS", "RE", "B", "I", "br", "ie", "el",
    ];
    let mut problems = Vec::new();
    let mut titled = 0;
    for (n, line) in page.lines().enumerate() {
        let Some(control) = line.strip_prefix('.').or_else(|| line.strip_prefix('\'')) else {
            continue;
        };
        let name: String = control
            .trim_start()
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '\\')
            .collect();
        if name.is_empty() || name.starts_with('\\') {
            continue; // a comment or an empty request
        }
        if !KNOWN.contains(&name.as_str()) {
            problems.push(format!("line {}: unknown request .{name}", n + 1));
        }
        if name == "TH" {
            titled += 1;
        }
        if name == "SH" && titled == 0 {
            problems.push(format!("line {}: a section before .TH", n + 1));
        }
    }
    if titled != 1 {
        problems.push(format!("{titled} .TH lines"));
    }
    problems
}

#[test]
fn man_writes_a_page_per_verb_that_roff_reads() {
    let h = Harness::new();
    let dir = h.path("man/pages");
    let r = h.ok(&["man", "-o", dir.to_str().unwrap()]);
    let mut want: BTreeSet<String> = command_paths()
        .iter()
        .map(|p| format!("benchledger-{}.1", p.join("-")))
        .collect();
    want.insert("benchledger.1".into());
    let got: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(got, want, "one page per verb, no other file");
    let printed: BTreeSet<String> = r.stdout.lines().map(String::from).collect();
    let written: BTreeSet<String> = want
        .iter()
        .map(|n| dir.join(n).display().to_string())
        .collect();
    assert_eq!(printed, written, "the paths written are printed");
    for path in command_paths() {
        let name = format!("benchledger-{}", path.join("-"));
        let page = std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
        // roff writes a hyphen as `\-`.
        let page = page.replace("\\-", "-");
        assert_eq!(
            title_of(&page),
            Some((name.clone(), "1".into())),
            "{name}: its .TH line"
        );
        let problems = roff_problems(&page);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        // The NAME section names the page, the synopsis the verb's words.
        let section = page.split(".SH NAME").nth(1).unwrap_or("");
        assert!(
            section.trim_start().starts_with(&name),
            "{name}: NAME {section:.80}"
        );
        let synopsis = page.split(".SH SYNOPSIS").nth(1).unwrap_or("");
        let words = format!("benchledger {}", path.join(" "));
        assert!(
            synopsis
                .trim_start()
                .starts_with(&format!("\\fB{words}\\fR")),
            "{name}: the synopsis does not start with {words:?}: {synopsis:.120}"
        );
        assert!(
            page.contains(&format!("\"benchledger {}\"", env!("CARGO_PKG_VERSION"))),
            "{name}: the .TH line names the program and its version"
        );
    }
    let log = std::fs::read_to_string(dir.join("benchledger-log.1")).unwrap();
    assert!(log.contains("kind"), "log's page lists --kind");
    // man(1) itself formats every page without a warning.
    for name in &want {
        let out = man_l(&dir.join(name));
        assert!(
            out.status.success(),
            "man -l {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "man -l {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Bold and underline as overstrikes (`N\x08N`) left out.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\x08' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "man -l {name}: {text:.200}"
        );
    }
    // Without -o: the top page on stdout, naming every verb.
    let top = h.ok(&["man"]).stdout;
    assert_eq!(title_of(&top), Some(("benchledger".into(), "1".into())));
    assert!(roff_problems(&top).is_empty(), "{:?}", roff_problems(&top));
    for verb in verbs() {
        assert!(top.contains(&verb), "benchledger.1 lacks {verb:?}");
    }
    assert_eq!(h.ok(&["man", "-o", "-"]).stdout, top);
    assert!(!h.ledger().exists(), "man never touches a ledger");
}

/// `man -l PATH`, formatted as plain text for a pipe.
fn man_l(path: &Path) -> std::process::Output {
    Command::new("man")
        .arg("-l")
        .arg(path)
        .env("MANWIDTH", "80")
        .env("MAN_DISABLE_SECCOMP", "1")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .expect("man(1) is needed to check the man pages (Debian: man-db)")
}

#[test]
fn man_refuses_a_file_where_its_directory_goes() {
    let h = Harness::new();
    let file = h.path("a-file");
    std::fs::write(&file, "x").unwrap();
    for out in [file.clone(), file.join("below"), "".into()] {
        let r = h.run(&["man", "-o", out.to_str().unwrap()]);
        assert_eq!(r.code, 2, "man -o {out:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

fn kinds_of(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn log_kind_filters_by_event_kind_and_refuses_an_unknown_one() {
    let h = Harness::new();
    h.init();
    h.ok(&["note", "one"]);
    assert_eq!(h.freeze(MANIFEST, PRIVATE).code, 0);
    h.ok(&["note", "two"]);
    let all = kinds_of(&h.ok(&["log"]).stdout);
    let frozen = all
        .iter()
        .find(|k| k.starts_with("manifest_frozen."))
        .unwrap()
        .clone();
    // An exact kind.
    let notes = h.ok(&["log", "--kind", "operator_noted.v1"]);
    assert_eq!(
        kinds_of(&notes.stdout),
        ["operator_noted.v1", "operator_noted.v1"]
    );
    let texts: Vec<Value> = notes
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["payload"]["text"].clone())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    // A name without its version: every version.
    assert_eq!(
        kinds_of(&h.ok(&["log", "--kind", "manifest_frozen"]).stdout),
        [frozen]
    );
    // Repeated: either kind, in log order; with --from and --to.
    let both = kinds_of(
        &h.ok(&[
            "log",
            "--kind",
            "ledger_created.v1",
            "--kind",
            "operator_noted",
        ])
        .stdout,
    );
    assert_eq!(
        both,
        [
            "ledger_created.v1",
            "operator_noted.v1",
            "operator_noted.v1"
        ]
    );
    let last = all.len() - 1;
    let tail = h.ok(&[
        "log",
        "--kind",
        "operator_noted",
        "--from",
        "2",
        "--to",
        &last.to_string(),
    ]);
    assert_eq!(kinds_of(&tail.stdout), ["operator_noted.v1"]);
    // A known kind the ledger does not hold: nothing, exit 0.
    let none = h.ok(&["log", "--kind", "group_sealed.v1"]);
    assert!(none.stdout.is_empty(), "{}", none.stdout);
    // An unknown kind: bad usage (exit 2), the known kinds listed, nothing
    // printed or appended; checked before any ledger is opened.
    let before = h.head_bytes();
    for bad in ["operator_noted.v9", "nope", "", "OPERATOR_NOTED.V1"] {
        let r = h.run(&["log", "--kind", bad]);
        assert_eq!(r.code, 2, "--kind {bad:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        for known in benchledger::schema::events::Event::KINDS {
            assert!(
                r.stderr.contains(known),
                "--kind {bad:?}: {known} not listed: {}",
                r.stderr
            );
        }
    }
    assert_eq!(h.head_bytes(), before);
    let elsewhere = Harness::new();
    let r = elsewhere.run(&["log", "--kind", "nope"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!elsewhere.ledger().exists());
}

/// Every leaf verb (a subcommand without subcommands), by its words
/// (`"prove inclusion"`), with its clap command.
fn leaf_commands() -> Vec<(String, clap::Command)> {
    fn walk(cmd: &clap::Command, at: &[&str], out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = at.to_vec();
            path.push(sub.get_name());
            if sub.has_subcommands() {
                walk(sub, &path, out);
            } else {
                out.push((path.join(" "), sub.clone()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&benchledger::cli::Cli::command(), &[], &mut out);
    out
}

/// The verbs that print no data, so take no `--json`, each with its
/// reason. Nothing else may lack `--json`.
const NO_JSON: &[(&str, &str)] = &[
    (
        "completions",
        "prints a shell script for the shell to source, not data",
    ),
    ("man", "prints or writes roff man pages, not data"),
];

#[test]
fn every_verb_that_prints_data_takes_json() {
    let leaves = leaf_commands();
    assert!(leaves.len() >= 50, "only {} leaf verbs", leaves.len());
    let mut lacking = Vec::new();
    for (verb, cmd) in &leaves {
        let json = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some("json") && !a.is_global_set());
        let exempt = NO_JSON.iter().find(|(v, _)| v == verb);
        match (json, exempt) {
            (Some(a), None) => assert!(
                matches!(a.get_action(), clap::ArgAction::SetTrue) && a.get_short().is_none(),
                "{verb}: --json is a flag without a value or a short form"
            ),
            (None, None) => lacking.push(verb.clone()),
            (Some(_), Some(_)) => panic!("{verb} takes --json: drop it from NO_JSON"),
            (None, Some((_, why))) => assert!(!why.trim().is_empty(), "{verb}: no reason"),
        }
    }
    assert!(
        lacking.is_empty(),
        "verbs that print data without --json (add it, or an entry with its reason to NO_JSON): {lacking:?}"
    );
    for (verb, _) in NO_JSON {
        assert!(
            leaves.iter().any(|(v, _)| v == verb),
            "NO_JSON names {verb:?}, which is no leaf verb"
        );
    }
}

/// The recorded accepted lineage imported, and a checkpoint of it signed
/// into `cp.note`; returns the note's path.
pub(super) fn accepted_with_checkpoint(h: &Harness) -> String {
    let export = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/ledgers/short13-accepted.jsonl"
    );
    h.ok(&["import", "--jsonl", export]);
    let alice = h.example_key("alice");
    let note = h.path("cp.note").display().to_string();
    h.ok(&["checkpoint", "sign", "--key", &alice, "-o", &note]);
    note
}

#[test]
fn json_on_log_report_and_prove_means_what_their_other_forms_print() {
    let h = Harness::new();
    let note = accepted_with_checkpoint(&h);
    // log --json: one array of the objects `log` prints one per line.
    let lines: Vec<Value> = h
        .ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 10);
    let array = h.ok(&["log", "--json"]).json();
    assert_eq!(array, Value::Array(lines.clone()));
    let sealed = h.ok(&["log", "--json", "--kind", "group_sealed"]).json();
    let want: Vec<Value> = lines
        .iter()
        .filter(|r| r["kind"].as_str().unwrap().starts_with("group_sealed."))
        .cloned()
        .collect();
    assert!(!want.is_empty());
    assert_eq!(sealed, Value::Array(want));
    let absent = benchledger::schema::events::Event::KINDS
        .iter()
        .find(|k| !lines.iter().any(|r| r["kind"] == **k))
        .unwrap();
    assert_eq!(
        h.ok(&["log", "--json", "--kind", absent]).json(),
        json_empty()
    );
    // report --json is report --format json; with -o it lists the files.
    let formatted = h.ok(&["report", "--format", "json"]).stdout;
    assert_eq!(h.ok(&["report", "--json"]).stdout, formatted);
    assert_eq!(h.ok(&["report", "show", "--json"]).stdout, formatted);
    assert_eq!(
        h.ok(&["report", "--json", "--format", "json"]).stdout,
        formatted
    );
    let r = h.run(&["report", "--json", "--format", "md"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    let dir = h.path("rep");
    let files = h
        .ok(&["report", "--json", "-o", dir.to_str().unwrap()])
        .json();
    let files: Vec<String> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        assert!(Path::new(f).is_file(), "{f}");
    }
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let printed: Value = serde_json::from_str(&formatted).unwrap();
    assert!(written == printed, "report.json is not what --json prints");
    // prove: --json is the JSON proof, and refused with another format.
    let inclusion = ["prove", "inclusion", "--checkpoint", &note, "3"];
    let plain = h.ok(&inclusion).stdout;
    let mut with = inclusion.to_vec();
    with.push("--json");
    assert_eq!(h.ok(&with).stdout, plain);
    assert!(h.ok(&with).json()["hashes"].is_array(), "{plain}");
    with.extend(["--format", "tlog-proof"]);
    let r = h.run(&with);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stdout.is_empty() && r.stderr.contains("--json"),
        "{}",
        r.stderr
    );
    let consistency = ["prove", "consistency", &note, &note];
    let plain = h.ok(&consistency).stdout;
    let mut with = consistency.to_vec();
    with.push("--json");
    assert_eq!(h.ok(&with).stdout, plain);
    assert!(h.ok(&with).json().is_object());
}

fn json_empty() -> Value {
    Value::Array(Vec::new())
}

/// Arguments whose help speaks of writing but that are no output of the
/// verb, each with its reason.
const NOT_AN_OUTPUT: &[(&str, &str, &str)] = &[
    (
        "verify",
        "state",
        "the auditor's state file (TRUST-7): read first, then rewritten in place",
    ),
    (
        "checkpoint verify",
        "state",
        "the auditor's state file (TRUST-7): read first, then rewritten in place",
    ),
];

/// Ids an output path would take if it were not spelled `-o/--out`.
const OTHER_OUTPUT_IDS: &[&str] = &[
    "output",
    "output_dir",
    "output_file",
    "out_dir",
    "out_file",
    "outdir",
    "dest",
    "destination",
    "dir",
    "bundle",
];

/// Whether an argument's help says it names something the verb writes.
fn speaks_of_writing(a: &clap::Arg) -> bool {
    let help = [a.get_help(), a.get_long_help()]
        .into_iter()
        .flatten()
        .map(|h| h.to_string().to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    [
        "write",
        "written",
        "output",
        "into this",
        "instead of stdout",
    ]
    .iter()
    .any(|w| help.contains(w))
}

#[test]
fn every_output_path_is_dash_o_out() {
    let mut problems = Vec::new();
    let mut outs = Vec::new();
    for (verb, cmd) in leaf_commands() {
        for a in cmd.get_arguments().filter(|a| !a.is_global_set()) {
            let id = a.get_id().as_str();
            let takes_value = a.get_action().takes_values();
            if id == "out" {
                outs.push(verb.clone());
                if a.get_long() != Some("out") || a.get_short() != Some('o') || !takes_value {
                    problems.push(format!("{verb}: --out is not `-o/--out PATH`"));
                }
                // The help of every output says so: what finds an output
                // spelled otherwise below.
                if !speaks_of_writing(a) {
                    problems.push(format!("{verb}: --out's help does not say it is written"));
                }
                continue;
            }
            if OTHER_OUTPUT_IDS.contains(&id) && takes_value && a.get_long().is_some() {
                problems.push(format!("{verb}: an output named --{id}: spell it -o/--out"));
            }
            if a.get_short() == Some('o') {
                problems.push(format!("{verb}: -o is --{id}, not --out"));
            }
            let exempt = NOT_AN_OUTPUT.iter().any(|(v, i, _)| *v == verb && *i == id);
            if takes_value && speaks_of_writing(a) && !exempt && a.get_long() != Some("out") {
                problems.push(format!(
                    "{verb}: --{id} names what the verb writes: spell it -o/--out (or list it in NOT_AN_OUTPUT with a reason)"
                ));
            }
        }
    }
    for (verb, id, why) in NOT_AN_OUTPUT {
        let found = leaf_commands()
            .into_iter()
            .any(|(v, c)| v == *verb && c.get_arguments().any(|a| a.get_id() == *id));
        assert!(
            found && !why.is_empty(),
            "NOT_AN_OUTPUT: {verb} --{id} is not there"
        );
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The verbs that write a file or directory all spell it -o/--out.
    for verb in [
        "key generate",
        "checkpoint sign",
        "checkpoint show",
        "prove inclusion",
        "prove consistency",
        "export",
        "case render-config",
        "case start",
        "report show",
        "man",
    ] {
        assert!(outs.iter().any(|v| v == verb), "{verb} has no -o/--out");
    }
}

#[test]
fn export_writes_its_directories_only_where_dash_o_says() {
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    for form in ["--redacted", "--parquet", "--tiles"] {
        let r = h.run(&["export", form]);
        assert_eq!(r.code, 2, "export {form}: {}", r.stderr);
        assert!(
            r.stderr.contains("-o DIR") && r.stderr.contains(form),
            "export {form}: {}",
            r.stderr
        );
        assert!(r.stdout.is_empty());
        // The older spelling (the directory as the flag's value) is bad
        // usage too, and writes nothing.
        let r = h.run(&["export", form, "old-dir"]);
        assert_eq!(r.code, 2, "export {form} old-dir: {}", r.stderr);
        assert!(!h.path("old-dir").exists());
    }
    assert_eq!(h.head_bytes(), before);
    // --jsonl -o FILE is the same bytes as stdout.
    let file = h.path("e.jsonl");
    h.ok(&["export", "--jsonl", "-o", file.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        h.ok(&["export", "--jsonl"]).stdout
    );
}
