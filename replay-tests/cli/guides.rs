//! Every command the guides in `docs/` show, run (issue 33 item 7): each
//! `console` block of `docs/*.md` runs in a fresh directory through the real
//! binary, its shown output compared as the README's is; a block marked
//! `no-run="WHY"` (it needs AWS, a running daemon or Harbor) is parsed
//! command by command with the CLI's clap tree instead. The rules of the
//! blocks are in `doc_run.rs`.

use std::path::{Path, PathBuf};

use super::doc_run::{self, Block};

/// Fewer commands than this in `docs/` means the blocks were not found.
const DOC_COMMANDS_MIN: usize = 40;

/// Languages of a block holding shell commands: only `console` is run, so
/// the others are refused in `docs/`.
const SHELL_LANGS: [&str; 4] = ["sh", "shell", "bash", "zsh"];

fn doc_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files
}

/// The `console` blocks of every file of `docs/`, with the file's name.
fn console_blocks() -> Vec<(String, Block)> {
    let mut out = Vec::new();
    for path in doc_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for block in doc_run::blocks(&text) {
            assert!(
                !SHELL_LANGS.contains(&block.lang.as_str()),
                "docs/{name}:{}: a `{}` block; write commands as a `console` block \
                 (`$ benchledger ...`) so the doc test runs them",
                block.line,
                block.lang
            );
            if block.lang == "console" {
                out.push((name.clone(), block));
            }
        }
    }
    out
}

/// Runs (or, for `no-run`, parses) one block; returns its command count.
fn check_block(name: &str, block: &Block) -> usize {
    let what = format!("docs/{name}:{}", block.line);
    let steps = doc_run::steps(&block.lines);
    assert!(
        !steps.is_empty(),
        "{what}: a console block without a command"
    );
    for key in block.attrs.keys() {
        assert!(
            key == "no-run" || key == "setup",
            "{what}: unknown attribute {key:?}"
        );
    }
    for step in &steps {
        if let Err(e) = doc_run::parses(step) {
            panic!("{what}: the CLI does not accept a documented command: {e}");
        }
    }
    match block.attrs.get("no-run") {
        Some(why) => {
            assert!(
                why.split_whitespace().count() >= 2,
                "{what}: `no-run` says why the block cannot run here"
            );
            assert!(
                steps.iter().all(|s| s.shown.is_empty()),
                "{what}: a block that does not run shows no output to compare"
            );
        }
        None => {
            let dir = tempfile::tempdir().unwrap();
            doc_run::set_up(
                block.attrs.get("setup").map_or("", String::as_str),
                dir.path(),
            );
            for step in &steps {
                doc_run::run_step(step, dir.path(), &what);
            }
        }
    }
    steps.len()
}

#[test]
fn every_command_the_guides_show_runs_or_parses() {
    let blocks = console_blocks();
    let mut commands = 0;
    let mut ran = Vec::new();
    for (name, block) in &blocks {
        commands += check_block(name, block);
        if !block.attrs.contains_key("no-run") {
            ran.push(name.as_str());
        }
    }
    assert!(
        commands >= DOC_COMMANDS_MIN,
        "only {commands} commands in docs/"
    );
    for guide in ["operator.md", "auditor.md"] {
        assert!(
            ran.contains(&guide),
            "docs/{guide}: no block runs against a real ledger"
        );
    }
}

#[test]
fn a_wrong_flag_in_a_block_fails_both_ways() {
    // The check itself: a flag the CLI does not have fails the parse a
    // `no-run` block gets and the run every other block gets.
    let block = doc_run::blocks(
        "```console\n$ benchledger --ledger l init --no-such-flag\n$ benchledger --ledger l head\n```\n",
    )
    .remove(0);
    let steps = doc_run::steps(&block.lines);
    let err = doc_run::parses(&steps[0]).unwrap_err();
    assert!(err.contains("--no-such-flag"), "{err}");
    assert!(doc_run::parses(&steps[1]).is_ok());
    let dir = tempfile::tempdir().unwrap();
    let ran = std::panic::catch_unwind(|| doc_run::run_step(&steps[0], dir.path(), "planted"));
    assert!(ran.is_err(), "the unknown flag must fail the run (exit 2)");
    assert!(!dir.path().join("l").exists(), "nothing was created");
}
