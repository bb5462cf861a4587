//! The CLI's own documentation, generated from its clap tree so it cannot
//! drift from the verbs: shell completions (`completions SHELL`,
//! clap_complete) and man pages (`man [-o DIR]`, clap_mangen). Neither
//! reads a ledger.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory};

use crate::cli::out::{outln, Out};
use crate::cli::Cli;
use crate::error::{Error, Result};

/// The program's name in completions and man pages.
const PROGRAM: &str = "benchledger";

/// Arguments of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the completions are for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Arguments of `man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per verb into DIR (created if missing):
    /// `benchledger.1`, `benchledger-log.1`, `benchledger-checkpoint-sign.1`,
    /// ...; their paths are printed. Without it, or with `-`,
    /// `benchledger.1` goes to stdout.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `completions SHELL`: the completion script on stdout.
pub(crate) fn run_completions(a: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), PROGRAM, &mut script);
    Out.write_all(&script)?;
    Out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `man [-o DIR]`: `benchledger.1` on stdout, or a page per verb in DIR.
pub(crate) fn run_man(a: &ManArgs) -> anyhow::Result<ExitCode> {
    // Built once, so every subcommand knows its full name
    // (`benchledger-checkpoint-sign`); no page for clap's `help`.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    match a.out.as_deref() {
        Some(dir) if dir.as_os_str() != "-" => {
            prepare_dir(dir)?;
            let mut written = Vec::new();
            write_pages(&cmd, dir, &mut written)?;
            for path in written {
                outln!("{}", path.display())?;
            }
        }
        _ => {
            Out.write_all(&page(&cmd)?)?;
            Out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The roff text of `cmd`'s page.
fn page(cmd: &clap::Command) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .source(format!("{PROGRAM} {}", env!("CARGO_PKG_VERSION")))
        .render(&mut text)
        .map_err(|e| Error::io(format!("render the man page of {}", cmd.get_name()), e))?;
    Ok(text)
}

/// Writes the page of `cmd` and of every visible subcommand below it into
/// `dir`, adding each path to `written`.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page(cmd)?)
        .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// `man -o DIR`: DIR exists as a directory or is created; an empty name or
/// a file in the way is bad input, a refused creation the environment.
fn prepare_dir(dir: &Path) -> Result<()> {
    if dir.as_os_str().is_empty() {
        return Err(Error::input(
            "man -o: an empty directory name; give a directory, or - for stdout",
        ));
    }
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::input(format!(
            "man -o {}: exists and is not a directory",
            dir.display()
        ))),
        Err(_) => std::fs::create_dir_all(dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotADirectory | std::io::ErrorKind::AlreadyExists => {
                Error::input(format!(
                    "man -o {}: cannot create it: {e} (a part of the path is a file)",
                    dir.display()
                ))
            }
            _ => Error::io(format!("create {}", dir.display()), e),
        }),
    }
}
