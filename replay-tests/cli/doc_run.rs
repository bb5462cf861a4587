//! The documentation's commands, run (issue 33 item 7): the one place that
//! reads fenced blocks out of markdown, splits their command lines into
//! words and runs them through the real binary. `readme.rs` runs README.md's
//! worked example with it, `guides.rs` every command block of `docs/*.md`.
//!
//! A command block is a fenced block whose info string starts with
//! `console`. In it, a line `$ benchledger ...` is a command (a trailing
//! `\` continues it on the next line; `# exit N` after it is the exit code it
//! must end with, 0 otherwise; `> FILE` sends its stdout to FILE in the
//! run's directory); a line starting with `#` is a comment; any other line
//! is output of the command above it, compared with its stdout and then its
//! stderr when shown (64-hex-digit hashes and 32-hex-digit ledger ids masked,
//! trailing blanks ignored).
//! Attributes after `console` in the info string:
//! - `no-run="WHY"`: the block needs what a test does not have (AWS, a
//!   running BitRouter daemon, Harbor); each command is only parsed by the
//!   CLI's own clap tree (`Cli::try_parse_from`), so an unknown verb or flag
//!   still fails;
//! - `setup="example-keys"`: the example manifest's signer keys
//!   (`alice.key`, `bob.key`, derived by `testkit::examples::signer`) are
//!   written into the run's directory first.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use clap::Parser;

/// One fenced block: its language, its attributes, its lines and where it
/// starts (the 1-based line of the opening fence).
#[derive(Debug)]
pub struct Block {
    pub lang: String,
    pub attrs: BTreeMap<String, String>,
    pub line: usize,
    pub lines: Vec<String>,
}

/// The info string's words after the language: `key="a value"` or `key`.
fn attributes(info: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for word in words(info).into_iter().skip(1) {
        match word.split_once('=') {
            Some((k, v)) => out.insert(k.to_string(), v.to_string()),
            None => out.insert(word, String::new()),
        };
    }
    out
}

/// Every fenced block of a markdown text, in order.
pub fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in md.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (fence, open.take()) {
            (Some(_), Some(block)) => out.push(block),
            (Some(info), None) => {
                open = Some(Block {
                    lang: info.split_whitespace().next().unwrap_or("").to_string(),
                    attrs: attributes(info),
                    line: n + 1,
                    lines: Vec::new(),
                })
            }
            (None, Some(mut block)) => {
                block.lines.push(line.to_string());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// A shell word split of one command line: blanks separate words, double
/// and single quotes group them, a word starting with `#` starts a comment.
pub fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (c, quote) {
            ('"' | '\'', None) => (quote, any) = (Some(c), true),
            (c, Some(q)) if c == q => quote = None,
            (' ', None) => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            ('#', None) if !any => break,
            (c, _) => (word.push(c), any = true).1,
        }
    }
    assert!(quote.is_none(), "an unterminated quote in {line:?}");
    if any {
        out.push(word);
    }
    out
}

/// Hashes and ledger ids (random at `init`) masked, trailing blanks
/// dropped, the checkout's path removed.
pub fn normal(text: &str, root: &str) -> String {
    text.replace(root, "")
        .lines()
        .map(|l| {
            l.split(' ')
                .map(|w| match w.len() {
                    64 if w.chars().all(|c| c.is_ascii_hexdigit()) => "<hash>",
                    32 if w.chars().all(|c| c.is_ascii_hexdigit()) => "<ledger id>",
                    _ => w,
                })
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One command of a block: its text, the words after `benchledger`, the
/// exit code it must end with, where its stdout goes and the output shown.
#[derive(Debug)]
pub struct Step {
    pub cmd: String,
    pub args: Vec<String>,
    pub exit: i32,
    pub stdout_to: Option<String>,
    pub shown: Vec<String>,
}

/// `# exit N` in the comment after a command.
fn expected_exit(cmd: &str) -> i32 {
    let Some((_, comment)) = cmd.split_once(" # ") else {
        return 0;
    };
    match comment.trim().strip_prefix("exit ") {
        Some(rest) => rest
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("`# exit N` without a number: {cmd}")),
        None => 0,
    }
}

/// A command line's step: `benchledger` first, `> FILE` taken out.
fn step(cmd: String) -> Step {
    let mut argv = words(&cmd);
    assert_eq!(
        argv.first().map(String::as_str),
        Some("benchledger"),
        "a documented command runs benchledger: {cmd}"
    );
    argv.remove(0);
    let mut stdout_to = None;
    if let Some(at) = argv.iter().position(|w| w == ">") {
        assert_eq!(at + 2, argv.len(), "`> FILE` ends the command: {cmd}");
        stdout_to = argv.pop();
        argv.pop();
    }
    Step {
        exit: expected_exit(&cmd),
        cmd,
        args: argv,
        stdout_to,
        shown: Vec::new(),
    }
}

/// The commands of a `console` block with the output shown under each.
pub fn steps(lines: &[String]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut continued: Option<String> = None;
    for line in lines {
        if let Some(head) = continued.take() {
            let joined = format!("{head} {}", line.trim());
            match joined.strip_suffix('\\') {
                Some(more) => continued = Some(more.trim_end().to_string()),
                None => out.push(step(joined)),
            }
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            match cmd.trim_end().strip_suffix('\\') {
                Some(head) => continued = Some(head.trim_end().to_string()),
                None => out.push(step(cmd.to_string())),
            }
        } else if !line.starts_with('#') {
            out.last_mut()
                .unwrap_or_else(|| panic!("output before any command: {line:?}"))
                .shown
                .push(line.clone());
        }
    }
    assert!(continued.is_none(), "a `\\` continues past the block's end");
    out
}

/// Parses a step with the binary's own clap tree, as `main` does: an unknown
/// verb or flag, a missing value or a value clap refuses is an error.
pub fn parses(step: &Step) -> Result<(), String> {
    let argv = std::iter::once("benchledger".to_string()).chain(step.args.iter().cloned());
    benchledger::cli::Cli::try_parse_from(argv)
        .map(drop)
        .map_err(|e| format!("{}: {}", step.cmd, e.render()))
}

/// The repository-relative paths a command names, pointed at this checkout.
fn rooted(arg: &str, root: &str) -> String {
    for dir in ["replay-tests/", "ledger-schema/"] {
        if let Some(rest) = arg.strip_prefix(dir) {
            return format!("{root}/{dir}{rest}");
        }
    }
    arg.to_string()
}

/// Writes what a block's `setup` attribute names into `dir`.
pub fn set_up(setup: &str, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    match setup {
        "" => {}
        "example-keys" => {
            for who in ["alice", "bob"] {
                let path = dir.join(format!("{who}.key"));
                let key = benchledger::testkit::examples::signer(who);
                std::fs::write(&path, format!("{}\n", key.encode())).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
        other => panic!("unknown setup {other:?}"),
    }
}

/// Runs one step in `dir` with the real binary and checks its exit code and
/// the output shown; `what` names it in a failure.
pub fn run_step(step: &Step, dir: &Path, what: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let args: Vec<String> = step.args.iter().map(|a| rooted(a, root)).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_benchledger"))
        .args(&args)
        .current_dir(dir)
        .env_remove("BENCHLEDGER_DIR")
        .env_remove("BENCHLEDGER_ACTOR")
        .env_remove("RUST_LOG")
        .env("BENCHLEDGER_AUDITOR_STATE", dir.join("auditor.json"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(step.exit),
        "{what}: `{}` must exit {}: {}",
        step.cmd,
        step.exit,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let got = match &step.stdout_to {
        Some(file) => {
            std::fs::write(dir.join(file), stdout.as_bytes()).unwrap();
            String::from_utf8_lossy(&out.stderr).into_owned()
        }
        None => format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
    };
    if !step.shown.is_empty() {
        let prefix = format!("{root}/");
        assert_eq!(
            normal(&got, &prefix),
            normal(&step.shown.join("\n"), &prefix),
            "{what}: the output of `{}`",
            step.cmd
        );
    }
}
