//! `ingest harbor | traces | decisions | usage | receipts | outcomes`: the
//! evidence files as Harbor and BitRouter write them, one event per row,
//! bound to a group (`crate::evidence` parses; `decide` binds; this appends).
//!
//! A file is one atomic append: rows are parsed, checked, encoded and linked
//! as they stream (only encoded records are held, never the file), and the
//! batch, closed by the file's own `artifact_recorded`, is written in one
//! transaction. Any bad row appends nothing. Each row's idempotency key is
//! `<kind>:<file blake3>:<line>`, so ingesting the same file again appends
//! nothing, while a changed file's rows are new evidence (a duplicate
//! request id is then the verdict's to reject, JOIN-1). A Harbor result's
//! key is its trial, so a changed result for a recorded trial is refused
//! (LEDGER-2, exit 3).

use crate::cli::out::outln;
use std::collections::BTreeSet;
use std::io::{BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::cli::common::*;
use crate::cli::Cli;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::error::Error;
use crate::evidence::{bitrouter, harbor, Progress};
use crate::log::ledger::{Appended, Batch, Draft, Ledger};
use crate::method::decide::OfferedFile;
use crate::schema::events::{ArtifactRecorded, CredentialFound, Event, GroupRef};
use crate::schema::time::now_utc_ns;

/// Rows between progress reports on a terminal.
pub const PROGRESS_EVERY_ROWS: u64 = 10_000;

/// `ingest` verbs. GROUP is `LINEAGE/GROUP`, or `GROUP` when the ledger
/// holds one lineage; it must be in the lineage's target list and not sealed.
#[derive(Debug, Subcommand)]
pub enum IngestCommand {
    /// A Harbor 0.25 jobs directory or job directory: every trial's
    /// `result.json` against the ledger case it belongs to (by the trial
    /// name `case start` rendered), and the job's `result.json`, `lock.json`
    /// and `config.json` as artifacts. Trial directories without
    /// `result.json` are reported, never invented.
    Harbor(HarborArgs),
    /// BitRouter rows of one kind from a JSON Lines file (receipts also from
    /// a single `.json` document).
    #[command(name = "traces")]
    Traces(RowsArgs),
    /// Policy decision rows.
    Decisions(RowsArgs),
    /// Usage rows: all four buckets required (SETTLE-1), charge recomputed.
    Usage(RowsArgs),
    /// Settlement receipts.
    Receipts(RowsArgs),
    /// Benchmark outcome rows.
    Outcomes(OutcomeArgs),
}

/// Arguments of `ingest harbor`.
#[derive(Debug, Args)]
pub struct HarborArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// A Harbor jobs directory or one job directory.
    pub dir: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of a BitRouter row ingest.
#[derive(Debug, Args)]
pub struct RowsArgs {
    /// The group: `LINEAGE/GROUP`, or `GROUP` when the ledger holds one lineage.
    pub group: String,
    /// The BitRouter evidence file: JSON Lines, one row of this kind per line.
    pub file: PathBuf,
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// How strictly outcome rows are read.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutcomeMode {
    /// `request_id` required: outcomes that join (JOIN-1).
    Strict,
    /// Rows without `request_id` accepted, for analysis only (JOIN-4).
    Analytical,
}

/// Arguments of `ingest outcomes`.
#[derive(Debug, Args)]
pub struct OutcomeArgs {
    /// The group and file.
    #[command(flatten)]
    pub rows: RowsArgs,
    /// `strict` (default) or `analytical`.
    #[arg(long, value_enum, default_value = "strict")]
    pub mode: OutcomeMode,
}

/// An evidence file's size and BLAKE3: a regular file of at most
/// `INGEST_FILE_BYTES_MAX` bytes (a FIFO or a device is refused at once).
fn file_facts(path: &Path) -> anyhow::Result<(u64, String)> {
    use std::io::Read;
    let max = crate::limits::INGEST_FILE_BYTES_MAX;
    let (file, _) = crate::error::open_regular(path, max)?;
    let mut h = blake3::Hasher::new();
    let bytes = std::io::copy(&mut BufReader::new(file.take(max + 1)), &mut h)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    if bytes > max {
        return Err(Error::input(format!(
            "{}: grew past the limit of {max} bytes while being read",
            path.display()
        ))
        .into());
    }
    Ok((bytes, h.finalize().to_hex().to_string()))
}

/// Opens an evidence file again to read its rows: still a regular file
/// within `INGEST_FILE_BYTES_MAX` (it may have been swapped since
/// `file_facts`; the rows' own bounds and the hash check do the rest).
fn open_evidence(path: &Path) -> crate::Result<std::fs::File> {
    Ok(crate::error::open_regular(path, crate::limits::INGEST_FILE_BYTES_MAX)?.0)
}

/// Rows of one file.
pub(crate) struct Summary {
    /// Rows read.
    pub(crate) rows: u64,
    /// Rows appended (the rest were recorded before).
    pub(crate) appended: u64,
    /// The first appended seq.
    pub(crate) first_seq: Option<u64>,
    /// The last appended seq.
    pub(crate) last_seq: Option<u64>,
}

fn summarize(done: &[Appended]) -> Summary {
    let new: Vec<&Appended> = done.iter().filter(|a| a.appended).collect();
    Summary {
        rows: done.len() as u64,
        appended: new.len() as u64,
        first_seq: new.first().map(|a| a.seq),
        last_seq: new.last().map(|a| a.seq),
    }
}

/// Runs an `ingest` verb.
pub fn run_ingest(cli: &Cli, cmd: &IngestCommand, wait: Duration) -> anyhow::Result<ExitCode> {
    match cmd {
        IngestCommand::Harbor(a) => ingest_harbor(cli, a, wait),
        IngestCommand::Traces(a) => ingest_kind(cli, a, wait, "traces"),
        IngestCommand::Decisions(a) => ingest_kind(cli, a, wait, "decisions"),
        IngestCommand::Usage(a) => ingest_kind(cli, a, wait, "usage"),
        IngestCommand::Receipts(a) => ingest_kind(cli, a, wait, "receipts"),
        IngestCommand::Outcomes(a) => match a.mode {
            OutcomeMode::Strict => ingest_kind(cli, &a.rows, wait, "outcomes"),
            OutcomeMode::Analytical => ingest_rows(cli, &a.rows, wait, "outcomes", |l, g| {
                bitrouter::parse_outcome_analytical(l, g).map(Event::OutcomeRecorded)
            }),
        },
    }
}

/// The credential shapes of one JSON Lines row, as `credential_found.v1`
/// events (BIND-8): field prefixed with the line, value never kept.
fn row_leaks(g: &GroupRef, source: &str, file_blake3: &str, n: u64, line: &[u8]) -> Vec<Event> {
    let text = String::from_utf8_lossy(line);
    crate::evidence::credential_findings(&text)
        .into_iter()
        .map(|leak| {
            Event::CredentialFound(CredentialFound {
                group: g.clone(),
                file: source.to_string(),
                file_blake3: file_blake3.to_string(),
                field: format!("line {n}: {}", leak.field),
                shape: leak.shape.to_string(),
                redacted: leak.redacted,
            })
        })
        .collect()
}

/// The same bytes under another path: the rows are already there (their
/// keys follow the content), the artifact would differ.
fn same_content_elsewhere(e: Error, source: &str, file_blake3: &str, group: &str) -> Error {
    e.refusal_in_context(|message| {
        format!(
            "{source}: a file with the same content (blake3 {}) was already ingested into {group} under another path; nothing was appended ({message})",
            &file_blake3[..32]
        )
    })
}

fn ingest_kind(
    cli: &Cli,
    a: &RowsArgs,
    wait: Duration,
    kind: &'static str,
) -> anyhow::Result<ExitCode> {
    let parse = row_parser(kind).expect("every strict kind has a parser");
    ingest_rows(cli, a, wait, kind, parse)
}

fn ingest_rows(
    cli: &Cli,
    a: &RowsArgs,
    wait: Duration,
    kind: &'static str,
    parse: fn(&[u8], &GroupRef) -> crate::evidence::FieldResult<Event>,
) -> anyhow::Result<ExitCode> {
    let tty = std::io::stderr().is_terminal();
    let t0 = Instant::now();
    let r = ingest_file(cli, wait, &a.group, &a.file, kind, parse, tty)?;
    let secs = t0.elapsed().as_secs_f64();
    report_rows(a.json, kind, &r.source, &r.blake3, &r.summary, secs)?;
    Ok(ExitCode::SUCCESS)
}

/// One ingested file.
pub(crate) struct Ingested {
    /// The file as given.
    pub(crate) source: String,
    pub(crate) blake3: String,
    /// Rows read and appended.
    pub(crate) summary: Summary,
}

/// Parses one row of a BitRouter evidence file into its event.
pub(crate) type RowParser = fn(&[u8], &GroupRef) -> crate::evidence::FieldResult<Event>;

/// The row parser of each BitRouter kind (`ingest traces | ...`; outcomes
/// strict).
pub(crate) fn row_parser(kind: &str) -> Option<RowParser> {
    let p: RowParser = match kind {
        "traces" => |l, g| bitrouter::parse_trace(l, g).map(Event::RequestTraced),
        "decisions" => |l, g| bitrouter::parse_decision(l, g).map(Event::PolicyDecisionRecorded),
        "usage" => |l, g| bitrouter::parse_usage(l, g).map(|u| Event::UsageRecorded(Box::new(u))),
        "receipts" => |l, g| bitrouter::parse_receipt(l, g).map(Event::ReceiptRecorded),
        "outcomes" => |l, g| bitrouter::parse_outcome(l, g).map(Event::OutcomeRecorded),
        _ => return None,
    };
    Some(p)
}

/// `ingest KIND GROUP FILE` without the printing: the file's rows, their
/// credential findings (BIND-8) and its artifact in one atomic append
/// (progress on stderr when `tty`).
pub(crate) fn ingest_file(
    cli: &Cli,
    wait: Duration,
    group_spec: &str,
    file: &Path,
    kind: &'static str,
    parse: RowParser,
    tty: bool,
) -> anyhow::Result<Ingested> {
    let (lineage, group) = parse_group(group_spec);
    let source = file.display().to_string();
    // `-`: stdin, spooled within the file's bound (recorded as `-`).
    let input = InputFile::open(file, crate::limits::INGEST_FILE_BYTES_MAX)?;
    let file = input.path();
    let (bytes, file_blake3) = file_facts(file)?;
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    let g = crate::method::decide::evidence_group(&state, lineage.as_deref(), &group)?;
    drop(state);
    let offered = OfferedFile {
        role: format!("bitrouter_{kind}"),
        path: source.clone(),
        case: None,
        bytes,
        blake3: file_blake3.clone(),
    };
    let rows = RowFile {
        path: file,
        source: &source,
        blake3: &file_blake3,
        bytes,
        kind,
        actor: &cli.actor,
    };
    let summary = append_row_file(&ledger, &g, &rows, parse, tty)
        .map_err(|e| keep_refused(cli, &ledger, None, &g, Some(&offered), e))?;
    Ok(Ingested {
        source,
        blake3: file_blake3,
        summary,
    })
}

/// BIND-12: when `e` is a rule's refusal of the evidence file `offered`,
/// appends the one record of it the method asks for (never its content)
/// and says so; returns `e` either way, so the verb still exits 3. `state`
/// is the state the refusal was decided on, folded again when not given.
fn keep_refused(
    cli: &Cli,
    ledger: &Ledger,
    state: Option<&crate::method::projections::State>,
    g: &GroupRef,
    offered: Option<&OfferedFile>,
    e: anyhow::Error,
) -> anyhow::Error {
    let (Some(offered), Some(refusal)) =
        (offered, e.chain().find_map(|c| c.downcast_ref::<Error>()))
    else {
        return e;
    };
    if !refusal.is_refused() {
        return e;
    }
    let folded;
    let state = match state {
        Some(s) => s,
        None => match decide_state(ledger) {
            Ok(s) => {
                folded = s;
                &folded
            }
            Err(fold) => {
                eprintln!(
                    "benchledger: the refusal of {} could not be recorded: {fold:#}",
                    offered.path
                );
                return e;
            }
        },
    };
    let Some((event, key)) = crate::method::decide::evidence_refused(state, g, offered, refusal)
    else {
        return e;
    };
    let draft = Draft {
        actor: cli.actor.clone(),
        event,
        idempotency_key: Some(key),
    };
    match ledger.append(&[draft], now_utc_ns()) {
        Ok(done) => {
            announce(&done);
            let how = if done[0].appended {
                "kept"
            } else {
                "already kept"
            };
            eprintln!(
                "benchledger: the refused file {} is {how} at seq {} (its path, size, BLAKE3 and the refusal; nothing of its content) (BIND-12)",
                offered.path,
                done[0].seq,
            );
        }
        Err(not) => eprintln!(
            "benchledger: the refusal of {} could not be recorded (BIND-12): {not}",
            offered.path,
        ),
    }
    e
}

/// The rows of one evidence file, their credential findings (BIND-8) and
/// the file's artifact, appended in one batch.
fn append_row_file(
    ledger: &Ledger,
    g: &GroupRef,
    rows: &RowFile<'_>,
    parse: RowParser,
    tty: bool,
) -> anyhow::Result<Summary> {
    let (file, source, file_blake3, kind, bytes) =
        (rows.path, rows.source, rows.blake3, rows.kind, rows.bytes);
    let now = now_utc_ns();
    let mut batch = ledger.batch(now)?;
    let draft = |event: Event, key: String| Draft {
        actor: rows.actor.to_string(),
        event,
        idempotency_key: Some(key),
    };
    let key_prefix = format!("{kind}:{}", &file_blake3[..32]);
    let mut leaks = 0u64;
    let single_document = kind == "receipts"
        && bitrouter::ReceiptFileForm::of_path(file) == bitrouter::ReceiptFileForm::Document;
    if single_document {
        let file = open_evidence(file)?;
        let r = bitrouter::read_receipt_document(&mut BufReader::new(file), source, g)?;
        batch.push(draft(Event::ReceiptRecorded(r), format!("{key_prefix}:1")))?;
    } else {
        leaks = push_rows(&mut batch, rows, g, parse, tty)?;
    }
    let artifact = Event::ArtifactRecorded(ArtifactRecorded {
        group: Some(g.clone()),
        role: format!("bitrouter_{kind}"),
        path: source.to_string(),
        bytes,
        blake3: file_blake3.to_string(),
    });
    batch
        .push(draft(
            artifact,
            format!("artifact:{kind}:{}:{}", g.group, &file_blake3[..32]),
        ))
        .map_err(|e| same_content_elsewhere(e, source, file_blake3, &g.group))?;
    let mut done = batch.commit()?;
    announce(&done);
    done.pop(); // the artifact
    if leaks > 0 {
        eprintln!(
            "benchledger: {leaks} credential shapes found in {source}; group {} leaked them and its secrets row fails (BIND-8)",
            g.group,
        );
    }
    Ok(summarize(&done))
}

/// A JSON Lines evidence file being ingested.
struct RowFile<'a> {
    path: &'a Path,
    source: &'a str,
    blake3: &'a str,
    bytes: u64,
    kind: &'static str,
    actor: &'a str,
}

/// Pushes every row of `f` and its credential findings (BIND-8) into
/// `batch`, with progress on stderr when `tty`; returns the findings count.
fn push_rows(
    batch: &mut Batch<'_>,
    f: &RowFile<'_>,
    g: &GroupRef,
    parse: RowParser,
    tty: bool,
) -> crate::Result<u64> {
    let file = open_evidence(f.path)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut report = |rows: u64, read: u64| {
        if tty {
            let pct = (read * 100).checked_div(f.bytes).unwrap_or(100);
            eprint!(
                "\ringest {}: {rows} rows, {pct}% of {}   ",
                f.kind, f.source
            );
            let _ = std::io::stderr().flush();
        }
    };
    let progress = Progress {
        every_rows: PROGRESS_EVERY_ROWS,
        report: &mut report,
    };
    let key_prefix = format!("{}:{}", f.kind, &f.blake3[..32]);
    let draft = |event: Event, key: String| Draft {
        actor: f.actor.to_string(),
        event,
        idempotency_key: Some(key),
    };
    let mut leaks = 0u64;
    let mut push = |n: u64, line: &[u8]| -> crate::Result<()> {
        let event = parse(line, g).map_err(|e| e.at_line(f.source, n))?;
        // BIND-8: a credential anywhere in the row, stored or not.
        for (i, found) in row_leaks(g, f.source, f.blake3, n, line)
            .into_iter()
            .enumerate()
        {
            leaks += 1;
            let key = format!("credential:{key_prefix}:{n}:{i}");
            push_row(batch, draft(found, key), f.source, n)?;
        }
        push_row(
            batch,
            draft(event, format!("{key_prefix}:{n}")),
            f.source,
            n,
        )
    };
    crate::evidence::for_each_jsonl_row_with_progress(
        &mut reader,
        f.source,
        Some(progress),
        &mut push,
    )?;
    if tty {
        eprintln!();
    }
    Ok(leaks)
}

/// Pushes one row; a refusal (a credential-shaped value, an idempotency
/// conflict) names the file and line.
fn push_row(batch: &mut Batch<'_>, d: Draft, source: &str, line: u64) -> crate::Result<()> {
    batch.push(d).map(|_| ()).map_err(|e| match e {
        Error::Input(m) => Error::Input(format!("{source}: line {line}: {m}")),
        other => other.refusal_in_context(|m| format!("{source}: line {line}: {m}")),
    })
}

fn report_rows(
    as_json: bool,
    kind: &str,
    source: &str,
    blake3: &str,
    s: &Summary,
    secs: f64,
) -> anyhow::Result<()> {
    if as_json {
        print_json(&json!({
            "kind": kind, "file": source, "file_blake3": blake3, "rows": s.rows, "appended": s.appended,
            "already_recorded": s.rows - s.appended, "first_seq": s.first_seq, "last_seq": s.last_seq,
        }))
    } else {
        let range = match (s.first_seq, s.last_seq) {
            (Some(a), Some(b)) => format!(" at seqs {a}..={b}"),
            _ => String::new(),
        };
        outln!("ingested {} {kind} rows from {source}: {} appended{range}, {} already recorded ({:.1} s)", s.rows, s.appended, s.rows - s.appended, secs)?;
        Ok(())
    }
}

/// BIND-9: the level `ingest harbor` was given, refused when it holds no
/// trial result (naming the levels it takes).
fn harbor_tree(dir: &Path) -> anyhow::Result<harbor::HarborTree> {
    let shown = dir.display();
    let tree = harbor::walk_jobs(dir)?;
    if let Some(t) = tree.unmapped().first() {
        return Err(Error::input(format!(
            "{}: trial directory {:?} does not follow benchledger's trial names (<task>__<group>-<trial>); it was not launched by `case start`",
            t.path, t.name
        ))
        .into());
    }
    let results = tree.trials().filter(|t| !t.is_incomplete()).count();
    let below = match tree.level {
        harbor::Level::Unknown | harbor::Level::Empty if results == 0 => {
            harbor::jobs_root_below(dir)?
        }
        _ => None,
    };
    crate::method::decide::harbor_tree_results(&crate::method::decide::OfferedTree {
        shown: &shown.to_string(),
        what: tree.level.as_str(),
        results,
        incomplete: tree.incomplete().len(),
        below: below.as_deref(),
    })?;
    Ok(tree)
}

/// What one ingest of a Harbor tree pushed.
#[derive(Default)]
struct HarborPushed {
    results: u64,
    recorded: Vec<serde_json::Value>,
    leaks: Vec<serde_json::Value>,
}

/// Pushes the credential findings of one ingested file (BIND-8).
fn push_leaks(
    batch: &mut Batch<'_>,
    actor: &str,
    g: &GroupRef,
    file: &str,
    bytes: &[u8],
    out: &mut HarborPushed,
) -> crate::Result<()> {
    let text = String::from_utf8_lossy(bytes);
    let file_blake3 = crate::evidence::blake3_hex(bytes);
    for leak in crate::evidence::credential_findings(&text) {
        out.leaks
            .push(json!({ "file": file, "field": leak.field, "shape": leak.shape }));
        let key = format!(
            "credential:{}:{}:{}",
            g.group,
            &file_blake3[..32],
            &crate::evidence::blake3_hex(leak.field.as_bytes())[..16]
        );
        batch.push(Draft {
            actor: actor.to_string(),
            event: Event::CredentialFound(CredentialFound {
                group: g.clone(),
                file: file.to_string(),
                file_blake3: file_blake3.clone(),
                field: leak.field,
                shape: leak.shape.to_string(),
                redacted: leak.redacted,
            }),
            idempotency_key: Some(key),
        })?;
    }
    Ok(())
}

/// The job-level files of a job: artifacts, their facts (retries, Harbor
/// version; BIND-1, BIND-7) and their credential findings (BIND-8).
fn push_job(
    batch: &mut Batch<'_>,
    actor: &str,
    g: &GroupRef,
    job: &harbor::HarborJob,
    out: &mut HarborPushed,
    offered: &mut Option<OfferedFile>,
) -> anyhow::Result<()> {
    let draft = |event: Event, key: String| Draft {
        actor: actor.to_string(),
        event,
        idempotency_key: Some(key),
    };
    for art in &job.artifacts {
        *offered = Some(offer(art, None));
        let key = format!("artifact:{}:{}:{}", art.role, g.group, &art.blake3[..32]);
        batch.push(draft(
            Event::ArtifactRecorded(art.to_event(Some(g.clone()))),
            key,
        ))?;
        let bytes = crate::error::read_regular(
            Path::new(&art.path),
            crate::evidence::HARBOR_RESULT_BYTES_MAX as u64,
        )?;
        push_leaks(batch, actor, g, &art.path, &bytes, out)?;
    }
    if let Some(facts) = harbor::job_facts(job)? {
        let hashes: String = job.artifacts.iter().map(|a| a.blake3.as_str()).collect();
        let key = format!(
            "harbor-job:{}/{}/{}",
            g.group,
            &crate::evidence::blake3_hex(job.name.as_bytes())[..16],
            &crate::evidence::blake3_hex(hashes.as_bytes())[..32]
        );
        batch.push(draft(
            Event::HarborJobRecorded(facts.to_event(g.clone())),
            key,
        ))?;
    }
    Ok(())
}

/// A job's attempt counts (BIND-11): its config's `n_attempts` and how
/// many of its trial directories map to each case identity.
struct JobAttempts {
    n_attempts: Option<u64>,
    trials_for: std::collections::BTreeMap<crate::schema::events::CaseRef, u64>,
}

impl JobAttempts {
    fn of(job: &harbor::HarborJob) -> crate::Result<JobAttempts> {
        let mut trials_for = std::collections::BTreeMap::new();
        for (_, _, case) in job.trials.iter().filter_map(|t| t.case.as_ref()) {
            *trials_for.entry(case.clone()).or_insert(0) += 1;
        }
        Ok(JobAttempts {
            n_attempts: harbor::job_n_attempts(job)?,
            trials_for,
        })
    }
}

/// What a trial's result says besides its record: every timestamp and the
/// job's attempt counts, in the same batch (BIND-11).
fn push_trial_facts(
    batch: &mut Batch<'_>,
    actor: &str,
    g: &GroupRef,
    t: &harbor::TrialDir,
    attempts: &JobAttempts,
) -> anyhow::Result<()> {
    let (Some((_, trial_group, case)), Some(result)) = (&t.case, &t.result) else {
        return Ok(());
    };
    if *trial_group != g.group {
        return Ok(());
    }
    let bytes = crate::error::read_regular(
        Path::new(&result.path),
        crate::evidence::HARBOR_RESULT_BYTES_MAX as u64,
    )?;
    let result_blake3 = crate::evidence::blake3_hex(&bytes);
    let event = Event::TrialFactsRecorded(crate::schema::events::TrialFactsRecorded {
        group: g.clone(),
        case: case.clone(),
        trial_name: t.name.clone(),
        times: harbor::result_times(&bytes, &result.path)?,
        n_attempts: attempts.n_attempts,
        trials_for_case: attempts.trials_for.get(case).copied().unwrap_or(1),
        result_blake3: result_blake3.clone(),
    });
    let key = format!(
        "harbor-trial-facts:{}/{}/{}/{}",
        g.lineage,
        g.group,
        t.name,
        &result_blake3[..32]
    );
    batch.push(Draft {
        actor: actor.to_string(),
        event,
        idempotency_key: Some(key),
    })?;
    Ok(())
}

/// The credential findings (BIND-8) of a trial's `result.json` and reward
/// files, each read within its bound.
fn push_trial_leaks(
    batch: &mut Batch<'_>,
    actor: &str,
    g: &GroupRef,
    t: &harbor::TrialDir,
    reward_files: &[crate::schema::events::RewardFile],
    out: &mut HarborPushed,
) -> anyhow::Result<()> {
    if let Some(result) = &t.result {
        let bytes = crate::error::read_regular(
            Path::new(&result.path),
            crate::evidence::HARBOR_RESULT_BYTES_MAX as u64,
        )?;
        push_leaks(batch, actor, g, &result.path, &bytes, out)?;
    }
    for f in reward_files {
        let bytes = crate::error::read_regular(
            Path::new(&f.path),
            crate::evidence::harbor::HARBOR_REWARD_FILE_BYTES_MAX as u64,
        )?;
        push_leaks(batch, actor, g, &f.path, &bytes, out)?;
    }
    Ok(())
}

/// The idempotency key of a trial's result: a second, different result for
/// a trial already bound is kept under a key of its own (BIND-11); the
/// method then judges the case invalid.
fn result_key(
    state: &crate::method::projections::State,
    g: &GroupRef,
    case: &crate::schema::events::CaseRef,
    t: &harbor::TrialDir,
    result_blake3: &str,
) -> anyhow::Result<String> {
    let bound = state
        .lineage(Some(&g.lineage))?
        .groups
        .get(&g.group)
        .and_then(|x| x.cases.get(case))
        .and_then(|c| c.result.as_ref())
        .map(|(_, r)| r.result_blake3.clone());
    let mut key = format!("harbor-trial:{}/{}/{}", g.lineage, g.group, t.name);
    if bound.is_some_and(|b| b != result_blake3) {
        key.push_str(&format!("/second:{}", &result_blake3[..32]));
        eprintln!(
            "benchledger: {}: a different result.json for trial {:?} than the one recorded; it is kept, and the case does not count (BIND-11)",
            t.path,
            t.name,
        );
    }
    Ok(key)
}

/// One trial's `result.json`, bound to its started case (GATE-6, CASE-8),
/// with its content compared with the case's launched config (BIND-1), its
/// reward files (BIND-2) and its credential findings (BIND-8).
fn push_trial(
    batch: &mut Batch<'_>,
    actor: &str,
    state: &crate::method::projections::State,
    g: &GroupRef,
    t: &harbor::TrialDir,
    out: &mut HarborPushed,
) -> anyhow::Result<()> {
    let Some((task, trial_group, case)) = &t.case else {
        return Ok(());
    };
    if *trial_group != g.group {
        return Err(Error::input(format!(
            "{}: trial {:?} belongs to group {trial_group:?}, not {:?}",
            t.path, t.name, g.group
        ))
        .into());
    }
    debug_assert_eq!(*task, case.task);
    crate::method::decide::trial_result_case(state, g, case)?;
    let parsed = harbor::read_trial_result(t)?;
    // The result must be the directory's own trial of this case's task
    // (CASE-8): never evidence of another identity.
    if let Err(e) = crate::method::decide::result_names_its_case(
        &t.path,
        &t.name,
        &parsed.trial_name,
        &parsed.task_name,
        case,
    ) {
        // What the file says goes to the operator only: the refusal, which
        // BIND-12 records, names no value of the file.
        eprintln!(
            "benchledger: {}: result.json names trial {:?} of task {:?}",
            t.path,
            crate::schema::strings::inert(&parsed.trial_name),
            crate::schema::strings::inert(&parsed.task_name)
        );
        return Err(e.into());
    }
    let l = state.lineage(Some(&g.lineage))?;
    // The embedded TrialConfig and the trial's own config.json, each
    // compared with the frozen rendering (BIND-1, BIND-11).
    let own_file = harbor::read_trial_config_file(t)?;
    let differences = crate::method::trial_config::render_frozen(l, &g.group, case)
        .map(|r| {
            let mut d = crate::schema::trial_content::differences(&r.config, &parsed.config);
            if let Some(file) = &own_file {
                d.extend(crate::schema::trial_content::own_config_differences(
                    &r.config,
                    file.as_ref().map_err(String::as_str),
                ));
            }
            d
        })
        .unwrap_or_default();
    let reward_files = harbor::read_reward_files(t)?;
    push_trial_leaks(batch, actor, g, t, &reward_files, out)?;
    let key = result_key(state, g, case, t, &parsed.result_blake3)?;
    let event = Event::TrialResultRecordedV2(Box::new(parsed.into_event_v2(
        g.clone(),
        case.clone(),
        differences,
        reward_files,
    )));
    let done = batch
        .push(Draft {
            actor: actor.to_string(),
            event,
            idempotency_key: Some(key),
        })
        .map_err(|e| {
            e.refusal_in_context(|message| {
                format!(
                    "{}: a different result.json was already recorded for trial {:?} ({message})",
                    t.path, t.name
                )
            })
        })?;
    out.results += 1;
    out.recorded
        .push(json!({ "trial": t.name, "seq": done.seq, "appended": done.appended }));
    Ok(())
}

/// A Harbor file as offered for a case (or the job): what the record of
/// its refusal keeps (BIND-12).
fn offer(
    file: &harbor::FileArtifact,
    case: Option<&crate::schema::events::CaseRef>,
) -> OfferedFile {
    OfferedFile {
        role: file.role.to_string(),
        path: file.path.clone(),
        case: case.cloned(),
        bytes: file.bytes,
        blake3: file.blake3.clone(),
    }
}

/// Every job's files and every complete trial of `tree` into `batch`;
/// `offered` names the file being read when a refusal comes.
fn push_tree(
    batch: &mut Batch<'_>,
    cli: &Cli,
    state: &crate::method::projections::State,
    g: &GroupRef,
    tree: &harbor::HarborTree,
    pushed: &mut HarborPushed,
    offered: &mut Option<OfferedFile>,
) -> anyhow::Result<()> {
    for job in &tree.jobs {
        push_job(batch, &cli.actor, g, job, pushed, offered)?;
        let attempts = JobAttempts::of(job)?;
        for t in job.trials.iter().filter(|t| !t.is_incomplete()) {
            *offered = t
                .result
                .as_ref()
                .map(|r| offer(r, t.case.as_ref().map(|(_, _, case)| case)));
            push_trial(batch, &cli.actor, state, g, t, pushed)?;
            push_trial_facts(batch, &cli.actor, g, t, &attempts)?;
        }
    }
    Ok(())
}

fn ingest_harbor(cli: &Cli, a: &HarborArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let h = ingest_harbor_dir(cli, wait, &a.group, &a.dir)?;
    if a.json {
        print_json(&json!({
            "level": h.level, "results": h.results, "appended": h.appended,
            "trials": h.trials, "incomplete": h.incomplete, "credential_findings": h.leaks,
        }))?;
    } else {
        outln!(
            "given {}: {}",
            crate::schema::strings::with_article(h.level.as_str()),
            a.dir.display()
        )?;
        outln!(
            "ingested {} trial results from {}: {} records appended",
            h.results,
            a.dir.display(),
            h.appended
        )?;
        for i in &h.incomplete {
            outln!("  incomplete (no result.json: still running or lost): {i}")?;
        }
        for l in &h.leaks {
            outln!(
                "  credential shape: {} field {} ({})",
                l["file"].as_str().unwrap_or(""),
                l["field"].as_str().unwrap_or(""),
                l["shape"].as_str().unwrap_or("")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `ingest harbor` recorded from one directory.
pub(crate) struct HarborIngested {
    /// The level the directory was (trial, job or jobs directory; BIND-9).
    pub(crate) level: harbor::Level,
    /// Trial results read.
    pub(crate) results: u64,
    /// Records appended.
    pub(crate) appended: usize,
    /// Per trial: name, seq, whether appended.
    pub(crate) trials: Vec<serde_json::Value>,
    /// Trial directories without a result.
    pub(crate) incomplete: Vec<String>,
    /// Credential shapes found (BIND-8): file, field, shape.
    pub(crate) leaks: Vec<serde_json::Value>,
}

/// `ingest harbor GROUP DIR` without the printing: every complete trial's
/// result, the job artifacts and facts and every credential finding, in one
/// atomic append.
pub(crate) fn ingest_harbor_dir(
    cli: &Cli,
    wait: Duration,
    group_spec: &str,
    dir: &Path,
) -> anyhow::Result<HarborIngested> {
    ingest_harbor_trials(cli, wait, group_spec, dir, None)
}

/// As [`ingest_harbor_dir`], the trials named in `only` alone when given
/// (`run`: the results of the launches it saw end with one).
pub(crate) fn ingest_harbor_trials(
    cli: &Cli,
    wait: Duration,
    group_spec: &str,
    dir: &Path,
    only: Option<&BTreeSet<String>>,
) -> anyhow::Result<HarborIngested> {
    let (lineage, group) = parse_group(group_spec);
    let mut tree = harbor_tree(dir)?;
    if let Some(names) = only {
        for job in &mut tree.jobs {
            job.trials.retain(|t| names.contains(&t.name));
        }
    }
    let ledger = Ledger::open(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    let g = crate::method::decide::evidence_group(&state, lineage.as_deref(), &group)?;
    let mut batch = ledger.batch(now_utc_ns())?;
    let mut pushed = HarborPushed::default();
    // The file being read, for the record of its refusal (BIND-12).
    let mut offered = None;
    let committed = match push_tree(
        &mut batch,
        cli,
        &state,
        &g,
        &tree,
        &mut pushed,
        &mut offered,
    ) {
        Ok(()) => batch.commit().map_err(anyhow::Error::from),
        Err(e) => {
            drop(batch);
            Err(e)
        }
    };
    let done =
        committed.map_err(|e| keep_refused(cli, &ledger, Some(&state), &g, offered.as_ref(), e))?;
    let incomplete: Vec<String> = tree.incomplete().iter().map(|t| t.name.clone()).collect();
    announce(&done);
    if !pushed.leaks.is_empty() {
        eprintln!(
            "benchledger: {} credential shapes found in the ingested files; group {} leaked them and its secrets row fails (BIND-8)",
            pushed.leaks.len(),
            g.group,
        );
    }
    Ok(HarborIngested {
        level: tree.level,
        results: pushed.results,
        appended: done.iter().filter(|a| a.appended).count(),
        trials: pushed.recorded,
        incomplete,
        leaks: pushed.leaks,
    })
}
