//! `expect LEDGER EXPECT.toml`: a recorded ledger (a ledger directory, or
//! an export file imported into a private temporary ledger) checked
//! against a hand-written expectation file (`method::expect`); every
//! difference printed as `expected ... / got ...`, exit 1 on any.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::print_json;
use crate::cli::out::outln;
use crate::method::expect;

/// Arguments of `expect`.
#[derive(Debug, Args)]
pub struct ExpectArgs {
    /// The ledger: a ledger directory, or an export file (`export -o`;
    /// `-` for stdin), imported into a private temporary ledger first.
    #[arg(value_name = "LEDGER")]
    pub ledger: PathBuf,
    /// The expectation file (TOML; see the README's "Expectations"; `-`
    /// for stdin).
    #[arg(value_name = "EXPECT")]
    pub expect: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A temporary ledger directory removed when dropped.
struct TempLedger(PathBuf);

impl Drop for TempLedger {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The ledger to check: opened for reading, or imported from an export.
fn observed(path: &Path, wait: Duration) -> anyhow::Result<expect::Observed> {
    if path.is_dir() {
        let ledger = crate::cli::common::open_reading(path, wait)?;
        return Ok(expect::observe(&ledger)?);
    }
    let target = std::env::temp_dir().join("benchledger-expect");
    // What an earlier `expect` killed before its drop left, once its
    // process is gone (the staging names' own rule).
    crate::log::staging::remove_stale(&target, "ledger");
    let dir = TempLedger(crate::log::staging::temp_beside(&target, "ledger")?);
    // `-`: an export on stdin, spooled within the import's bound.
    let input = crate::cli::common::InputFile::open(path, crate::limits::IMPORT_FILE_BYTES_MAX)?;
    let ledger = crate::log::export::import_file(input.path(), &dir.0, wait)?;
    let got = expect::observe(&ledger)?;
    drop(ledger);
    Ok(got)
}

/// `expect`: the ledger at `a.ledger` against the file `a.expect`; exit 1 when they differ.
pub fn run_expect(a: &ExpectArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let text = crate::cli::common::read_input(&a.expect, crate::limits::TEXT_INPUT_FILE_BYTES_MAX)?;
    let source = crate::cli::common::shown(&a.expect);
    let text = String::from_utf8(text)
        .map_err(|_| crate::error::Error::input(format!("{source}: not UTF-8")))?;
    let want = expect::parse(&text, &source)?;
    let got = observed(&a.ledger, wait)?;
    let differences = expect::check(&got, &want)?;
    if a.json {
        print_json(&json!({
            "ledger": a.ledger.display().to_string(),
            "expect": source,
            "ok": differences.is_empty(),
            "differences": differences.iter().map(|d| json!({
                "at": d.at, "expected": d.expected, "got": d.got,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        for d in &differences {
            outln!("{}", crate::schema::strings::inert(&d.to_string()))?;
        }
        let n = differences.len();
        outln!(
            "{}: {}",
            crate::schema::strings::inert(&source),
            if n == 0 {
                "every expectation holds".to_string()
            } else {
                format!("{n} difference(s)")
            }
        )?;
    }
    Ok(if differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
