//! The command line: parse, gather facts (clock, randomness, files), call
//! the library, print data on stdout and logs on stderr, map errors to exit
//! codes. No business rule lives here.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::chain::Head;
use crate::error::{Error, ExitClass};
use crate::events::{Event, OperatorNoted};
use crate::ledger::{Draft, Ledger, VerifyReport};
use crate::limits::{LOCK_WAIT_MS_DEFAULT, LOCK_WAIT_MS_MAX, NOTE_TEXT_BYTES_MAX};
use crate::timefmt::{now_utc_ns, rfc3339_utc_ns};

const AFTER_HELP: &str = "\
Exit codes:
  0  done, or the check holds
  1  a check ran and does not hold (verify found damage)
  2  bad input or usage; nothing appended
  3  refused by a rule of the method (the message names the rule id); nothing appended
  4  environment failure (I/O, lock wait timed out); nothing appended

Data goes to stdout (one JSON document with --json); logs go to stderr (RUST_LOG=info for more).";

/// benchledger: a fail-closed, hash-chained evidence ledger for LLM-router
/// benchmark runs. Operators append every action and observation; auditors
/// verify the chain and re-derive every verdict from it.
#[derive(Debug, Parser)]
#[command(name = "benchledger", version, after_help = AFTER_HELP)]
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
    Init(JsonFlag),
    /// Recompute every hash link from seq 0 and compare with the stored head.
    ///
    /// Reports the first bad seq and the kind of damage: bad_hash, rewritten,
    /// gap, reordered, undecodable, non_canonical, truncated_record,
    /// bad_genesis, head_mismatch, head_missing, torn_tail, truncated,
    /// index_mismatch. Exit 1 on any damage.
    Verify(JsonFlag),
    /// Print the head: the seq and hash of the last acknowledged record.
    Head(JsonFlag),
    /// Print records as JSON lines: seq, hash, kind, recorded_at, actor,
    /// decoded payload.
    Log(LogArgs),
    /// Write every record with its raw bytes (hex) and hash, one JSON line
    /// each: enough for an independent verifier, and the input of `import`.
    Export(ExportArgs),
    /// Rebuild a ledger from an export into a new ledger directory (--ledger).
    ///
    /// Refuses a non-empty target and any line that does not verify byte for
    /// byte; nothing is left behind when it refuses.
    Import(ImportArgs),
    /// Append an operator note (free text; changes no projection).
    Note(NoteArgs),
    /// Freeze, sign off and show a lineage's manifest.
    #[command(subcommand)]
    Manifest(ManifestCommand),
    /// Open (daemon started) and close (no more launches) a group.
    #[command(subcommand)]
    Group(GroupCommand),
    /// Render a case's Harbor TrialConfig, or start a case through every gate.
    #[command(subcommand)]
    Case(CaseCommand),
    /// List the case identities of a group that may launch: not started in
    /// the ledger AND absent from the Harbor jobs directory (CASE-4).
    Resume(ResumeArgs),
    /// Record evidence files exactly as Harbor and BitRouter write them.
    #[command(subcommand)]
    Ingest(crate::cli_ingest::IngestCommand),
    /// Prove the AWS identity through the manifest's one explicit selector
    /// (GATE-1; needs the `aws` feature).
    #[command(subcommand)]
    Identity(crate::cli_checks::IdentityCommand),
    /// The EC2 vCPU quota gate (GATE-2; needs the `aws` feature).
    #[command(subcommand)]
    Quota(crate::cli_checks::QuotaCommand),
    /// Exact-tag residue audit, monitor and termination (CLEAN-1..3; needs
    /// the `aws` feature).
    #[command(subcommand)]
    Cleanup(crate::cli_checks::CleanupCommand),
    /// Gate observations: daemon health, provider sentinels, binary hash,
    /// config validation (GATE-3, GATE-4, GATE-7) and residue (AWS).
    #[command(subcommand)]
    Check(crate::cli_checks::CheckCommand),
    /// The verdict table of a group as the log gives it now: every gate row
    /// with its evidence and the status (VERDICT-1). Exit 1 unless accepted.
    Gate(crate::cli_verdicts::GateArgs),
    /// Every projection (lineages, verdicts, settlement, joins, cleanup,
    /// control catalog) as of any seq.
    Replay(crate::cli_verdicts::ReplayArgs),
    /// Re-derive every sealed verdict from the log and compare it with the
    /// attested one; exit 1 on any difference, naming group and row.
    Audit(JsonFlag),
    /// Record reward feedback after an accepted r1/r2 (LINEAGE-3).
    #[command(subcommand)]
    Feedback(crate::cli_verdicts::FeedbackCommand),
    /// The control catalog and control reuse (LINEAGE-6, LINEAGE-9).
    #[command(subcommand)]
    Control(crate::cli_verdicts::ControlCommand),
    /// Show or stop a lineage (LINEAGE-1..5, VERDICT-3).
    #[command(subcommand)]
    Lineage(crate::cli_verdicts::LineageCommand),
    /// The report of a lineage (`report [show] LINEAGE [--format md|json]
    /// [--out DIR]`) and its registry entry (`report registry LINEAGE`).
    Report(crate::cli_report::ReportArgs),
}

/// `group` verbs. GROUP is `LINEAGE/GROUP`, or `GROUP` when the ledger holds
/// one lineage.
#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Record the group's daemon start; refused unless binary, config,
    /// ports and paths equal the frozen manifest (GATE-4, FREEZE-4) and the
    /// group is next in the lineage's order (LINEAGE-1, LINEAGE-2).
    Open(GroupOpenArgs),
    /// End launches for an open group (CASE-9).
    Close(GroupArg),
    /// Attest the group's verdict, final from then on (VERDICT-4): refused
    /// while a case is not terminal, before a cleanup audit after the close,
    /// or while requests are pending inside the settlement grace (CASE-9,
    /// SETTLE-8).
    Seal(GroupArg),
}

/// Arguments of `group open`.
#[derive(Debug, Args)]
pub struct GroupOpenArgs {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// SHA-256 of the daemon binary started.
    #[arg(long)]
    pub binary_sha256: String,
    /// SHA-256 of the daemon config.
    #[arg(long)]
    pub config_sha256: String,
    /// The daemon's ports, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub ports: Vec<u16>,
    /// The daemon's database path.
    #[arg(long)]
    pub db: String,
    /// The group's output directory.
    #[arg(long)]
    pub out: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A group argument alone.
#[derive(Debug, Args)]
pub struct GroupArg {
    /// The group (`LINEAGE/GROUP` or `GROUP`).
    pub group: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `case` verbs. CASE is `TASK/TRIAL`, or `TASK/TRIAL/replacement-01`.
#[derive(Debug, Subcommand)]
pub enum CaseCommand {
    /// Write the one-case Harbor TrialConfig (Terminus 2, EC2, daemon
    /// api_base, tags) rendered from the frozen manifest, and record its hash.
    RenderConfig(RenderArgs),
    /// Start a case: in one locked decide-and-append, refuse (exit 3, rule
    /// named, nothing appended) unless every rule holds; then, after
    /// `case_started` is durable, run CMD and record how it exited.
    Start(CaseStartArgs),
    /// Record sanitized HTTP 403 evidence of a started case in one of the
    /// two security-policy skip classes (CASE-6).
    Refusal(crate::cli_verdicts::RefusalArgs),
    /// Make a started case without a TrialResult terminal_invalid on cited
    /// Harbor or process evidence (CASE-3, CASE-8); it is never relaunched.
    Invalidate(crate::cli_verdicts::InvalidateArgs),
}

/// Arguments of `case render-config`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// Where to write it (default: stdout, nothing recorded).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print one JSON document on stdout (path and hash).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `case start`.
#[derive(Debug, Args)]
pub struct CaseStartArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The case (`TASK/TRIAL[/replacement-01]`).
    pub case: String,
    /// The TrialConfig to launch (its BLAKE3 must equal a validated one,
    /// GATE-7); default: the config rendered from the frozen manifest.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the command's output goes (default `<group out_dir>/<trial name>.log`).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// The command to run after `case_started` is durable, e.g.
    /// `harbor trial start -c CONFIG`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Arguments of `resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// A Harbor jobs directory: identities with a trial directory there are
    /// never launchable, whatever the ledger says.
    #[arg(long, value_name = "DIR")]
    pub harbor_jobs: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `manifest` verbs.
#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Validate a manifest and its private companion, compute the task
    /// manifest hash, the lineage key and the control key, and freeze it.
    ///
    /// Refused (exit 3, rule named): a lineage label already frozen
    /// (FREEZE-3); a path, port, database, tag or job name used before
    /// (FREEZE-4); task/trial counts that do not fit the class (CLASS-1);
    /// Harbor retries > 0 (CASE-5); target groups other than
    /// control+r1+r2[+r3] (LINEAGE-1). Only commitments and redacted forms
    /// of the private values are stored.
    Freeze(FreezeArgs),
    /// Record the operator's or the reviewer's sign-off (FREEZE-7); both,
    /// by two distinct names, are required before any scored case starts.
    SignOff(SignOffArgs),
    /// Print a frozen manifest as the ledger has it (TOML; --json for JSON).
    Show(ShowArgs),
}

/// Arguments of `manifest freeze`.
#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// The public manifest (TOML).
    pub file: PathBuf,
    /// The private manifest (TOML): account, principal, secret locations,
    /// commitment key. Never stored.
    #[arg(long, value_name = "FILE")]
    pub private: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `manifest sign-off`.
#[derive(Debug, Args)]
pub struct SignOffArgs {
    /// The lineage (optional when the ledger holds one).
    #[arg(long)]
    pub lineage: Option<String>,
    /// Who signs off.
    #[arg(long, value_enum)]
    pub role: RoleArg,
    /// The person's name.
    #[arg(long)]
    pub name: String,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Sign-off roles on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RoleArg {
    /// The operator.
    Operator,
    /// The reviewer.
    Reviewer,
}

/// Arguments of `manifest show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The lineage (optional when the ledger holds one).
    pub lineage: Option<String>,
    /// The publication view: private values only in redacted form, no
    /// commitments.
    #[arg(long)]
    pub redacted: bool,
    /// Check every commitment against this private manifest.
    #[arg(long, value_name = "FILE")]
    pub private: Option<PathBuf>,
    /// Print JSON instead of TOML.
    #[arg(long)]
    pub json: bool,
}

/// `--json` alone.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// First seq to print.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Last seq to print (inclusive); default the head.
    #[arg(long)]
    pub to: Option<u64>,
}

/// Arguments of `export`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "redacted", "parquet"])))]
pub struct ExportArgs {
    /// Export as JSON lines.
    #[arg(long)]
    pub jsonl: bool,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE", requires = "jsonl")]
    pub out: Option<PathBuf>,
    /// The publication bundle into a new directory: redacted manifests, the
    /// ledger export, the reports, request/case tables, a secret scan of
    /// every file and SHA-256 + BLAKE3 checksums (refused, exit 3, when the
    /// scan finds a credential shape).
    #[arg(long, value_name = "DIR")]
    pub redacted: Option<PathBuf>,
    /// Request-level and case-level tables as Parquet into a new directory
    /// (needs the `parquet` cargo feature).
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The export file to read (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub jsonl: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `note`.
#[derive(Debug, Args)]
pub struct NoteArgs {
    /// The note text.
    pub text: String,
    /// Append at most once: the same key with the same text returns the
    /// original seq; with another text it is refused (exit 3).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let text = e.render().to_string();
            match crate::secrets::scan(&text) {
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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_target(false)
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let class = classify(&e);
            eprintln!("error: {}", crate::secrets::withhold(&format!("{e:#}")));
            ExitCode::from(class.code())
        }
    }
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

/// A usage error found after parsing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadUsage(pub(crate) String);

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

fn head_json(h: &Head) -> serde_json::Value {
    json!({ "head_seq": h.seq, "head_hash": hex::encode(h.hash) })
}

pub(crate) fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let wait = lock_wait(&cli)?;
    let dir = cli.ledger.clone();
    match &cli.command {
        Command::Manifest(m) => run_manifest(&cli, m, wait),
        Command::Group(g) => crate::cli_cases::run_group(&cli, g, wait),
        Command::Case(c) => crate::cli_cases::run_case(&cli, c, wait),
        Command::Resume(r) => crate::cli_cases::run_resume(&cli, r, wait),
        Command::Ingest(i) => crate::cli_ingest::run_ingest(&cli, i, wait),
        Command::Identity(c) => crate::cli_checks::run_identity(&cli, c, wait),
        Command::Quota(c) => crate::cli_checks::run_quota(&cli, c, wait),
        Command::Cleanup(c) => crate::cli_checks::run_cleanup(&cli, c, wait),
        Command::Check(c) => crate::cli_checks::run_check(&cli, c, wait),
        Command::Gate(a) => crate::cli_verdicts::run_gate(&cli, a, wait),
        Command::Replay(a) => crate::cli_verdicts::run_replay(&cli, a, wait),
        Command::Audit(a) => crate::cli_verdicts::run_audit(&cli, a.json, wait),
        Command::Feedback(c) => crate::cli_verdicts::run_feedback(&cli, c, wait),
        Command::Control(c) => crate::cli_verdicts::run_control(&cli, c, wait),
        Command::Lineage(c) => crate::cli_verdicts::run_lineage(&cli, c, wait),
        Command::Report(a) => crate::cli_report::run_report(&cli, a, wait),
        Command::Init(a) => {
            let mut id = [0u8; 16];
            getrandom::fill(&mut id)
                .map_err(|e| Error::io("read randomness for the ledger id", e))?;
            let (_, genesis) = Ledger::create(&dir, wait, id, &cli.actor, now_utc_ns())?;
            if a.json {
                print_json(&json!({
                    "dir": dir.display().to_string(),
                    "ledger_id": hex::encode(id),
                    "head_seq": genesis.seq,
                    "head_hash": hex::encode(genesis.hash),
                }))?;
            } else {
                println!("created ledger {} in {}", hex::encode(id), dir.display());
                println!(
                    "head seq {} hash {}",
                    genesis.seq,
                    hex::encode(genesis.hash)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify(a) => {
            let ledger = Ledger::open(&dir, wait)?;
            let report = ledger.verify()?;
            // Paired check of the derived cache: a present checkpoint must
            // equal the replay of the (verified) log at its seq.
            let ckpt = if report.ok() {
                Some(crate::checkpoint::check(&ledger)?)
            } else {
                None
            };
            print_verify(&report, ckpt.as_ref(), a.json)?;
            let ckpt_ok = !matches!(ckpt, Some(crate::checkpoint::Check::Differs { .. }));
            Ok(if report.ok() && ckpt_ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(ExitClass::CheckFailed.code())
            })
        }
        Command::Head(a) => {
            let ledger = Ledger::open(&dir, wait)?;
            let head = ledger.head()?;
            if a.json {
                print_json(&head_json(&head))?;
            } else {
                println!("seq {} hash {}", head.seq, hex::encode(head.hash));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Log(a) => {
            if a.to.is_some_and(|to| to < a.from) {
                return Err(BadUsage(format!(
                    "--to {} is before --from {}",
                    a.to.unwrap_or(0),
                    a.from
                ))
                .into());
            }
            let ledger = Ledger::open(&dir, wait)?;
            let head = ledger.head()?;
            if a.from > head.seq {
                return Err(
                    BadUsage(format!("--from {} is past the head {}", a.from, head.seq)).into(),
                );
            }
            let to = a.to.unwrap_or(head.seq).min(head.seq);
            let mut out = BufWriter::new(std::io::stdout().lock());
            for v in ledger.records_from(a.from)? {
                let v = v?;
                let r = &v.decoded.record;
                if r.seq > to {
                    break;
                }
                let line = json!({
                    "seq": r.seq,
                    "hash": hex::encode(v.hash),
                    "kind": r.kind,
                    "recorded_at": rfc3339_utc_ns(r.recorded_at_utc_ns),
                    "recorded_at_utc_ns": r.recorded_at_utc_ns,
                    "actor": r.actor,
                    "idempotency_key": r.idempotency_key,
                    "payload": v.decoded.event.payload_json(),
                });
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(a) => {
            if let Some(d) = &a.redacted {
                return crate::cli_report::run_export_redacted(&cli, d, wait);
            }
            if let Some(d) = &a.parquet {
                return crate::cli_report::run_export_parquet(&cli, d, wait);
            }
            let ledger = Ledger::open(&dir, wait)?;
            let head = match &a.out {
                Some(path) => {
                    let tmp = path.with_extension("partial");
                    let file = std::fs::File::create(&tmp)
                        .with_context(|| format!("create {}", tmp.display()))?;
                    let mut w = BufWriter::new(file);
                    let head = crate::export::export_jsonl(&ledger, &mut w)?;
                    w.into_inner()
                        .map_err(|e| e.into_error())
                        .and_then(|f| f.sync_all())
                        .with_context(|| format!("write {}", tmp.display()))?;
                    std::fs::rename(&tmp, path)
                        .with_context(|| format!("rename to {}", path.display()))?;
                    head
                }
                None => crate::export::export_jsonl(
                    &ledger,
                    &mut BufWriter::new(std::io::stdout().lock()),
                )?,
            };
            tracing::info!(
                "exported records 0..={} (head {})",
                head.seq,
                hex::encode(head.hash)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Import(a) => {
            let source = a.jsonl.display().to_string();
            let head = if a.jsonl.as_os_str() == "-" {
                crate::export::import_jsonl(&mut std::io::stdin().lock(), "stdin", &dir, wait)?
            } else {
                let file = std::fs::File::open(&a.jsonl)
                    .map_err(|e| Error::input(format!("cannot read {source}: {e}")))?;
                crate::export::import_jsonl(
                    &mut std::io::BufReader::new(file),
                    &source,
                    &dir,
                    wait,
                )?
            };
            if a.json {
                print_json(&head_json(&head))?;
            } else {
                println!(
                    "imported {} records into {}; head seq {} hash {}",
                    head.seq + 1,
                    dir.display(),
                    head.seq,
                    hex::encode(head.hash)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Note(a) => {
            if a.text.is_empty() || a.text.len() > NOTE_TEXT_BYTES_MAX {
                return Err(BadUsage(format!(
                    "a note must be 1 to {NOTE_TEXT_BYTES_MAX} bytes, got {}",
                    a.text.len()
                ))
                .into());
            }
            let ledger = Ledger::open(&dir, wait)?;
            let draft = Draft {
                actor: cli.actor.clone(),
                event: Event::OperatorNoted(OperatorNoted {
                    lineage: None,
                    text: a.text.clone(),
                }),
                idempotency_key: a.idempotency_key.clone(),
            };
            let done = ledger.append(&[draft], now_utc_ns())?[0];
            if a.json {
                print_json(
                    &json!({ "seq": done.seq, "hash": hex::encode(done.hash), "appended": done.appended }),
                )?;
            } else if done.appended {
                println!("appended seq {} hash {}", done.seq, hex::encode(done.hash));
            } else {
                println!(
                    "already recorded at seq {} hash {}",
                    done.seq,
                    hex::encode(done.hash)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(crate) fn read_text(path: &PathBuf) -> anyhow::Result<String> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::input(format!("{}: not utf-8", path.display())).into())
}

/// The state `decide` reads: `projections::replay` through the projection
/// checkpoint (checkpoint.rs), which folds only the log's tail when a valid
/// checkpoint exists. Failing to write a checkpoint is a warning.
pub(crate) fn decide_state(ledger: &Ledger) -> anyhow::Result<crate::projections::State> {
    let r = crate::checkpoint::replay(ledger, crate::checkpoint::Policy::DEFAULT)?;
    if let Some(Err(e)) = &r.written {
        eprintln!("benchledger: warning: projection checkpoint not written ({e}); later commands replay from genesis");
    }
    Ok(r.state)
}

/// Decides against the replayed state and appends, all under the writer
/// lock held by `ledger`.
pub(crate) fn decide_and_append(
    ledger: &Ledger,
    actor: &str,
    now_ns: u64,
    decide: impl FnOnce(&crate::projections::State) -> crate::Result<Vec<Event>>,
) -> anyhow::Result<Vec<crate::ledger::Appended>> {
    let state = decide_state(ledger)?;
    append_events(ledger, actor, now_ns, decide(&state)?)
}

/// Appends `events` by `actor` in one atomic batch (no idempotency keys).
pub(crate) fn append_events(
    ledger: &Ledger,
    actor: &str,
    now_ns: u64,
    events: Vec<Event>,
) -> anyhow::Result<Vec<crate::ledger::Appended>> {
    let drafts: Vec<Draft> = events
        .into_iter()
        .map(|event| Draft {
            actor: actor.to_string(),
            event,
            idempotency_key: None,
        })
        .collect();
    Ok(ledger.append(&drafts, now_ns)?)
}

fn run_manifest(cli: &Cli, cmd: &ManifestCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    match cmd {
        ManifestCommand::Freeze(a) => {
            let public = read_text(&a.file)?;
            let private = read_text(&a.private)?;
            let frozen = crate::manifest::freeze(
                &public,
                &a.file.display().to_string(),
                &private,
                &a.private.display().to_string(),
            )?;
            let summary = json!({
                "lineage": frozen.lineage,
                "manifest_blake3": frozen.manifest_blake3,
                "task_manifest_blake3": frozen.task_manifest_blake3,
                "lineage_key": frozen.lineage_key,
                "control_key": frozen.control_key,
            });
            let ledger = Ledger::open(dir, wait)?;
            let done = decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                crate::decide::freeze(s, frozen)
            })?;
            let mut summary = summary;
            summary["seq"] = json!(done[0].seq);
            if a.json {
                print_json(&summary)?;
            } else {
                println!(
                    "froze lineage {} at seq {}",
                    summary["lineage"].as_str().unwrap_or(""),
                    done[0].seq
                );
                for k in [
                    "manifest_blake3",
                    "task_manifest_blake3",
                    "lineage_key",
                    "control_key",
                ] {
                    println!("  {k:<21} {}", summary[k].as_str().unwrap_or(""));
                }
                println!("next: manifest sign-off --role operator --name NAME, then --role reviewer --name OTHER");
            }
            Ok(ExitCode::SUCCESS)
        }
        ManifestCommand::SignOff(a) => {
            let role = match a.role {
                RoleArg::Operator => crate::events::SignOffRole::Operator,
                RoleArg::Reviewer => crate::events::SignOffRole::Reviewer,
            };
            let ledger = Ledger::open(dir, wait)?;
            let done = decide_and_append(&ledger, &cli.actor, now_utc_ns(), |s| {
                crate::decide::sign_off(s, a.lineage.as_deref(), role, &a.name)
            })?;
            if a.json {
                print_json(&json!({ "seq": done[0].seq, "hash": hex::encode(done[0].hash) }))?;
            } else {
                println!("signed off as {role:?} at seq {}", done[0].seq);
            }
            Ok(ExitCode::SUCCESS)
        }
        ManifestCommand::Show(a) => {
            let ledger = Ledger::open(dir, wait)?;
            let state = decide_state(&ledger)?;
            let l = state.lineage(a.lineage.as_deref())?;
            if let Some(p) = &a.private {
                let checked = crate::manifest::check_private(
                    &l.frozen.manifest,
                    &read_text(p)?,
                    &p.display().to_string(),
                )?;
                eprintln!(
                    "all {} private values match their commitments: {}",
                    checked.len(),
                    checked.join(", ")
                );
            }
            let value = if a.redacted {
                l.frozen.manifest.redacted_json()
            } else {
                serde_json::to_value(&l.frozen)?
            };
            if a.json {
                print_json(&value)?;
            } else {
                print!(
                    "{}",
                    toml::to_string(&without_nulls(value))
                        .map_err(|e| Error::io("render toml", e))?
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// TOML has no null: drop absent optional fields before rendering.
fn without_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(without_nulls).collect())
        }
        other => other,
    }
}

fn print_verify(
    r: &VerifyReport,
    ckpt: Option<&crate::checkpoint::Check>,
    as_json: bool,
) -> anyhow::Result<()> {
    use crate::checkpoint::{Check, CHECKPOINT_FILE};
    if as_json {
        let d = r.damage.as_ref();
        let ckpt = ckpt.map(|c| match c {
            Check::Absent => json!({ "state": "absent" }),
            Check::Ignored { why } => json!({ "state": "ignored", "why": why }),
            Check::Matches { seq } => json!({ "state": "matches", "seq": seq }),
            Check::Differs { seq } => json!({ "state": "differs", "seq": seq }),
        });
        let ok = r.ok() && !matches!(ckpt_state(ckpt.as_ref()), Some("differs"));
        return print_json(&json!({
            "ok": ok,
            "records": r.records,
            "head_seq": r.head.map(|h| h.seq),
            "head_hash": r.head.map(|h| hex::encode(h.hash)),
            "first_bad_seq": d.map(|d| d.seq),
            "damage": d.map(|d| d.kind),
            "detail": d.map(|d| d.detail.clone()),
            "checkpoint": ckpt,
        }));
    }
    match (&r.damage, r.head) {
        (None, Some(h)) => println!(
            "ok: {} records verify; head seq {} hash {}",
            r.records,
            h.seq,
            hex::encode(h.hash)
        ),
        (Some(d), _) => println!("damaged: first bad seq {}: {}: {}", d.seq, d.kind, d.detail),
        (None, None) => unreachable!("a report without damage has a head"),
    }
    match ckpt {
        Some(Check::Matches { seq }) => {
            println!("checkpoint: the projection checkpoint at seq {seq} equals the replay of the log")
        }
        Some(Check::Ignored { why }) => {
            println!("checkpoint: {CHECKPOINT_FILE} is ignored: {why}")
        }
        Some(Check::Differs { seq }) => println!(
            "damaged: the projection checkpoint at seq {seq} differs from the replay of the log; deciding verbs would trust it: delete {CHECKPOINT_FILE} (the log itself verifies)"
        ),
        Some(Check::Absent) | None => {}
    }
    Ok(())
}

fn ckpt_state(v: Option<&serde_json::Value>) -> Option<&str> {
    v.and_then(|v| v.get("state")).and_then(|s| s.as_str())
}
