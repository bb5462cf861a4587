//! The command line: parse, gather facts (clock, randomness, files), call
//! the library, print data on stdout and logs on stderr, map errors to exit
//! codes. No business rule lives here.

mod audit;
mod auditor;
#[cfg(feature = "aws")]
mod aws;
mod case;
mod central;
mod check;
mod cleanup;
mod common;
mod control;
mod docs;
mod expect;
mod export;
mod feedback;
mod gate;
mod group;
mod identity;
mod ingest;
mod interrupt;
mod lineage;
mod log;
mod manifest;
mod out;
#[cfg(feature = "parquet")]
mod parquet;
mod proc;
mod progress;
mod quota;
mod receipts;
mod replay;
mod report;
mod resume;
mod run;
mod run_state;
mod tiles;
mod tlog;
mod trust;
mod witness;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::cli::common::BadUsage;
use crate::error::{Error, ExitClass};
use crate::limits::{LOCK_WAIT_MS_DEFAULT, LOCK_WAIT_MS_MAX};

const AFTER_HELP: &str = "\
Exit codes:
  0  done, or the check holds
  1  a check ran and does not hold (verify found damage)
  2  bad input or usage; nothing appended
  3  refused by a rule of the method (the message names the rule id); nothing appended
     except the record of a refused evidence file (BIND-12)
  4  environment failure (I/O, lock wait timed out); nothing appended
130  interrupted by Ctrl-C (a verb with temporary files removes them at the first and ends at the second)

Data goes to stdout (one JSON document with --json); logs go to stderr (RUST_LOG=info for more).
Every file or directory a verb writes is -o/--out; every file it reads may be `-` for stdin.";

/// The user-facing cargo features this build was compiled with, in
/// `--version`'s order (`testkit` is test support, never a user's).
pub fn build_features() -> Vec<&'static str> {
    [
        ("aws", cfg!(feature = "aws")),
        ("parquet", cfg!(feature = "parquet")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

/// `--version`: the version, the source commit (`tools/build.rs`: `+dirty` for
/// uncommitted changes, `unknown` outside a checkout) and the cargo
/// features compiled in (a verb a build lacks exits 4 and names its
/// feature).
fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let features = build_features();
        let features = match features.is_empty() {
            true => "none".to_string(),
            false => features.join(", "),
        };
        format!(
            "{} (commit {}, features: {features})",
            env!("CARGO_PKG_VERSION"),
            env!("BENCHLEDGER_COMMIT")
        )
    })
}

/// benchledger: a fail-closed, hash-chained evidence ledger for LLM-router
/// benchmark runs. Operators append every action and observation; auditors
/// verify the chain and re-derive every verdict from it.
#[derive(Debug, Parser)]
#[command(name = "benchledger", version = version_text(), after_help = AFTER_HELP)]
pub struct Cli {
    /// The ledger directory.
    #[arg(
        long,
        global = true,
        env = "BENCHLEDGER_DIR",
        default_value = "ledger",
        value_name = "DIR"
    )]
    pub ledger: PathBuf,

    /// Seconds to wait for another process's writer lock before giving up
    /// with exit 4.
    #[arg(long, global = true, value_name = "SECS", default_value_t = LOCK_WAIT_MS_DEFAULT as f64 / 1000.0)]
    pub lock_timeout: f64,

    /// Print no append announcements, progress or warnings on stderr;
    /// errors, a refusal's reason and everything on stdout still print.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Who is appending (recorded in every record this command writes).
    #[arg(
        long,
        global = true,
        env = "BENCHLEDGER_ACTOR",
        default_value = "operator"
    )]
    pub actor: String,

    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new ledger (writes the genesis record with a random ledger id).
    Init(common::JsonFlag),
    /// Recompute every hash link from seq 0 and compare with the stored head.
    ///
    /// Reports the first bad seq and the kind of damage: bad_hash, rewritten,
    /// gap, reordered, undecodable, non_canonical, truncated_record,
    /// bad_genesis, head_mismatch, head_missing, torn_tail, truncated,
    /// index_mismatch. Exit 1 on any damage.
    ///
    /// With --against NOTE: also that this ledger extends that signed
    /// checkpoint (its root at the checkpoint's size is the checkpoint's);
    /// exit 1 otherwise, naming the sizes between which the histories
    /// diverge.
    Verify(log::VerifyArgs),
    /// Print the head: the seq and hash of the last acknowledged record.
    Head(common::JsonFlag),
    /// Signer keys for sign-offs and checkpoints (C2SP note keys).
    #[command(subcommand)]
    Key(tlog::KeyCommand),
    /// Signed checkpoints of the ledger's Merkle tree (TRUST-1).
    #[command(subcommand)]
    Checkpoint(tlog::CheckpointCommand),
    /// Inclusion and consistency proofs against signed checkpoints
    /// (TRUST-2).
    #[command(subcommand)]
    Prove(tlog::ProveCommand),
    /// Print records as JSON lines (with --json one JSON array): seq, hash,
    /// kind, recorded_at, actor, decoded payload.
    Log(log::LogArgs),
    /// Write every record with its raw bytes (hex) and hash, one JSON line
    /// each: enough for an independent verifier, and the input of `import`.
    Export(export::ExportArgs),
    /// Rebuild a ledger from an export into a new ledger directory (--ledger).
    ///
    /// Refuses a non-empty target and any line that does not verify byte for
    /// byte; nothing is left behind when it refuses.
    Import(log::ImportArgs),
    /// Append an operator note (free text; changes no projection).
    Note(log::NoteArgs),
    /// Freeze, sign off and show a lineage's manifest.
    #[command(subcommand)]
    Manifest(manifest::ManifestCommand),
    /// Open (daemon started) and close (no more launches) a group.
    #[command(subcommand)]
    Group(group::GroupCommand),
    /// Render a case's Harbor TrialConfig, or start a case through every gate.
    #[command(subcommand)]
    Case(case::CaseCommand),
    /// List the case identities of a group that may launch: not started in
    /// the ledger AND absent from the Harbor jobs directory (CASE-4).
    Resume(resume::ResumeArgs),
    /// Record evidence files exactly as Harbor and BitRouter write them.
    #[command(subcommand)]
    Ingest(ingest::IngestCommand),
    /// Prove the AWS identity through the manifest's one explicit selector
    /// (GATE-1; needs the `aws` feature).
    #[command(subcommand)]
    Identity(identity::IdentityCommand),
    /// The EC2 vCPU quota gate (GATE-2; needs the `aws` feature).
    #[command(subcommand)]
    Quota(quota::QuotaCommand),
    /// Exact-tag residue audit, monitor and termination (CLEAN-1..3; needs
    /// the `aws` feature).
    #[command(subcommand)]
    Cleanup(cleanup::CleanupCommand),
    /// The central BitRouter host: provisioned once or the reused one
    /// checked, and torn down (FREEZE-8, GATE-2, CLEAN-1..3; needs the `aws`
    /// feature).
    #[command(subcommand)]
    Central(central::CentralCommand),
    /// Gate observations: daemon health, provider sentinels, binary hash,
    /// config validation (GATE-3, GATE-4, GATE-7) and residue (AWS).
    #[command(
        subcommand,
        after_help = "Every check is recorded, pass or fail, and a recorded failing gate before a wave is a hard stop of the whole lineage (VERDICT-3, RUN-6): a health check of a daemon not yet up stops the lineage for good. To look without recording, pass --probe (daemon-health, sentinel, residue): it prints what it sees and appends nothing."
    )]
    Check(check::CheckCommand),
    /// The verdict table of a group as the log gives it now: every gate row
    /// with its evidence and the status (VERDICT-1). Exit 1 unless accepted.
    Gate(gate::GateArgs),
    /// Every projection (lineages, verdicts, settlement, joins, cleanup,
    /// control catalog) as of any seq.
    Replay(replay::ReplayArgs),
    /// Re-derive every sealed verdict from the log and compare it with the
    /// attested one; exit 1 on any difference, naming group and row.
    Audit(common::JsonFlag),
    /// Record reward feedback after an accepted r1/r2 (LINEAGE-3).
    #[command(subcommand)]
    Feedback(feedback::FeedbackCommand),
    /// The control catalog and control reuse (LINEAGE-6, LINEAGE-9).
    #[command(subcommand)]
    Control(control::ControlCommand),
    /// Show or stop a lineage (LINEAGE-1..5, VERDICT-3).
    #[command(subcommand)]
    Lineage(lineage::LineageCommand),
    /// The report of a lineage (`report [show] LINEAGE [--format md|json]
    /// [--json] [-o DIR]`) and its registry entry (`report registry
    /// LINEAGE`).
    Report(report::ReportArgs),
    /// Drive a group through its gates, launches, evidence, cleanup and
    /// seal (`run GROUP [LINEAGE]`; `--plan` changes nothing); resumable.
    Run(run::RunArgs),
    /// Check a recorded ledger (a directory or an export) against a
    /// hand-written expectation file; each difference as `expected ... /
    /// got ...`, exit 1 on any.
    Expect(expect::ExpectArgs),
    /// Print shell completions for every verb and option, generated from
    /// this CLI (`completions bash > /etc/bash_completion.d/benchledger`).
    Completions(docs::CompletionsArgs),
    /// Man pages generated from this CLI: `benchledger.1` on stdout, or
    /// with `-o DIR` one page per verb written into DIR.
    Man(docs::ManArgs),
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let text = e.render().to_string();
            match crate::schema::secrets::scan(&text) {
                // clap quotes the offending argument: never echo a credential.
                Some(found) => eprintln!(
                    "error: invalid arguments; the message is withheld because it would echo a value that looks like a credential ({}). Run with --help for the usage.",
                    found.shape
                ),
                None => {
                    let _ = e.print();
                }
            }
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(ExitClass::BadInput.code()),
            };
        }
    };
    crate::cli::interrupt::install_default();
    crate::cli::out::set_quiet(cli.quiet);
    let level = if cli.quiet { "error" } else { "warn" };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| level.into()),
        )
        .with_target(false)
        // colour only on a terminal: a piped or redirected stderr gets text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let class = classify(&e);
            eprintln!(
                "error: {}",
                inert_lines(&crate::schema::secrets::withhold(&format!("{e:#}")))
            );
            ExitCode::from(class.code())
        }
    }
}

/// An error message for the terminal: it may quote a path or a value the
/// user or the evidence gave, so each line holding a control character, an
/// escape or a bidirectional override is made inert (BIND-10); the lines
/// themselves stay lines, and a line without one is left as it is.
fn inert_lines(message: &str) -> String {
    use crate::schema::strings::{inert, is_display_control};
    message
        .split('\n')
        .map(|line| {
            if line.chars().any(is_display_control) {
                inert(line)
            } else {
                std::borrow::Cow::Borrowed(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A reader that closed stdout early (`| head`) is not an error of ours.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The exit class of an error: that of the library error inside it, if any.
fn classify(e: &anyhow::Error) -> ExitClass {
    e.chain()
        .find_map(|c| c.downcast_ref::<Error>().map(Error::class))
        .or_else(|| {
            e.chain()
                .find_map(|c| c.downcast_ref::<BadUsage>().map(|_| ExitClass::BadInput))
        })
        .unwrap_or(ExitClass::Environment)
}

fn lock_wait(cli: &Cli) -> anyhow::Result<Duration> {
    let secs = cli.lock_timeout;
    let max = LOCK_WAIT_MS_MAX as f64 / 1000.0;
    if !(0.0..=max).contains(&secs) {
        return Err(BadUsage(format!(
            "--lock-timeout must be between 0 and {max} seconds, got {secs}"
        ))
        .into());
    }
    Ok(Duration::from_secs_f64(secs))
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let wait = lock_wait(&cli)?;
    let cli = &cli;
    match &cli.command {
        Command::Init(a) => log::run_init(cli, a, wait),
        Command::Verify(a) => log::run_verify(cli, a, wait),
        Command::Head(a) => log::run_head(cli, a, wait),
        Command::Key(k) => tlog::run_key(k),
        Command::Checkpoint(c) => tlog::run_checkpoint(cli, c, wait),
        Command::Prove(p) => tlog::run_prove(cli, p, wait),
        Command::Log(a) => log::run_log(cli, a, wait),
        Command::Export(a) => export::run_export(cli, a, wait),
        Command::Import(a) => log::run_import(cli, a, wait),
        Command::Note(a) => log::run_note(cli, a, wait),
        Command::Manifest(m) => manifest::run_manifest(cli, m, wait),
        Command::Group(g) => group::run_group(cli, g, wait),
        Command::Case(c) => case::run_case(cli, c, wait),
        Command::Resume(r) => resume::run_resume(cli, r, wait),
        Command::Ingest(i) => ingest::run_ingest(cli, i, wait),
        Command::Identity(c) => identity::run_identity(cli, c, wait),
        Command::Quota(c) => quota::run_quota(cli, c, wait),
        Command::Cleanup(c) => cleanup::run_cleanup(cli, c, wait),
        Command::Central(c) => central::run_central(cli, c, wait),
        Command::Check(c) => check::run_check(cli, c, wait),
        Command::Gate(a) => gate::run_gate(cli, a, wait),
        Command::Replay(a) => replay::run_replay(cli, a, wait),
        Command::Audit(a) => audit::run_audit(cli, a.json, wait),
        Command::Feedback(c) => feedback::run_feedback(cli, c, wait),
        Command::Control(c) => control::run_control(cli, c, wait),
        Command::Lineage(c) => lineage::run_lineage(cli, c, wait),
        Command::Report(a) => report::run_report(cli, a, wait),
        Command::Run(a) => run::run_run(cli, a, wait),
        Command::Expect(a) => expect::run_expect(a, wait),
        Command::Completions(a) => docs::run_completions(a),
        Command::Man(a) => docs::run_man(a),
    }
}
