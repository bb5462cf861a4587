//! Verbs on the log itself: `init`, `verify`, `head`, `log`, `import`,
//! `note`.

use crate::cli::interrupt::Interruptible;
use crate::cli::out::outln;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::common::*;
use crate::cli::progress::{CountingReader, Progress};
use crate::cli::Cli;
use crate::error::{Error, ExitClass};
use crate::limits::NOTE_TEXT_BYTES_MAX;
use crate::log::ledger::VerifyReport;
use crate::log::ledger::{Draft, Ledger};
use crate::schema::events::Event;
use crate::schema::events::OperatorNoted;
use crate::schema::time::now_utc_ns;
use crate::schema::time::rfc3339_utc_ns;
use std::collections::BTreeSet;
use std::io::{BufWriter, Write};

/// Arguments of `log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// First seq to print.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Last seq to print (inclusive); default the head.
    #[arg(long)]
    pub to: Option<u64>,
    /// Only records of this event kind (repeatable: any of them): a kind
    /// as printed (`operator_noted.v1`), or its name without the version
    /// (`manifest_frozen`: every version). An unknown kind is bad usage
    /// (exit 2) listing the known ones.
    #[arg(long, value_name = "KIND")]
    pub kind: Vec<String>,
    /// Print one JSON document on stdout: an array of the same record
    /// objects (without it, one object per line: JSON lines).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `verify`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("trusting").multiple(true).args(["against", "tiles"])))]
pub struct VerifyArgs {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// A signed checkpoint note this ledger must extend (repeatable).
    #[arg(long, value_name = "NOTE")]
    pub against: Vec<PathBuf>,
    /// A log key trusted to sign the --against notes or the --tiles
    /// checkpoint (the text, or @FILE; repeatable); default the frozen
    /// operator keys.
    #[arg(long, value_name = "VKEY", requires = "trusting")]
    pub vkey: Vec<String>,
    /// Verify a C2SP tlog-tiles log (`export --tiles`) in a directory or at
    /// an http:// prefix instead of the ledger: its checkpoint's signature,
    /// every hash tile and entry bundle against the checkpoint's root, and
    /// every record (decoded, chain-linked) against its entry (TRUST-8).
    /// Exit 1 naming the first file that does not hold.
    #[arg(long, value_name = "DIR|URL", conflicts_with = "against")]
    pub tiles: Option<String>,
    /// With --against or --tiles: the auditor's state file (TRUST-7), the
    /// largest checkpoint accepted per origin. Default
    /// `$XDG_CONFIG_HOME/benchledger/auditor-state.json` (else
    /// `~/.config/benchledger/auditor-state.json`).
    #[arg(long, value_name = "FILE", env = crate::cli::auditor::STATE_ENV)]
    pub state: Option<PathBuf>,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The export file to read (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub jsonl: PathBuf,
    /// Import an export written before exports ended with a trailer line
    /// (record count and head). Without the trailer nothing shows that the
    /// file is whole: a cut file imports as a shorter ledger. A trailer
    /// that is present is still checked.
    #[arg(long)]
    pub untrailed: bool,
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

/// What `verify` found beyond the chain: the tree's checkpoint records and
/// node cache, and each `--against` note.
#[derive(Default)]
struct TreeFindings {
    tree: Option<crate::cli::trust::TreeReport>,
    against: Vec<crate::cli::trust::Against>,
    /// The auditor's state file and whether this run wrote it (TRUST-7).
    auditor_state: Option<(PathBuf, bool)>,
}

impl TreeFindings {
    fn ok(&self) -> bool {
        self.tree.as_ref().is_none_or(|t| t.ok()) && self.against.iter().all(|a| a.ok())
    }

    /// Adds the findings to the JSON document; nothing when there are none,
    /// so a ledger without checkpoints prints what it always printed.
    fn extend_json(&self, doc: &mut serde_json::Value) {
        if let Some(t) = &self.tree {
            doc["transparency"] = t.json();
        }
        if !self.against.is_empty() {
            doc["against"] = self.against.iter().map(|a| a.json()).collect();
        }
        if let Some((file, updated)) = &self.auditor_state {
            doc["auditor_state"] = json!({
                "file": file.display().to_string(),
                "updated": updated,
            });
        }
        if !self.ok() {
            doc["ok"] = json!(false);
        }
    }

    fn print(&self) -> anyhow::Result<()> {
        for line in self.tree.iter().flat_map(|t| t.lines()) {
            outln!("{line}")?;
        }
        for a in &self.against {
            outln!("{}", a.line())?;
            if let Some(j) = &a.auditor {
                outln!("{}", j.line())?;
            }
        }
        if let Some((file, updated)) = &self.auditor_state {
            outln!("{}", crate::cli::auditor::committed_line(file, *updated))?;
        }
        Ok(())
    }
}

fn print_verify(
    r: &VerifyReport,
    ckpt: Option<&crate::log::checkpoint::Check>,
    findings: &TreeFindings,
    as_json: bool,
) -> anyhow::Result<()> {
    use crate::log::checkpoint::{Check, CHECKPOINT_FILE};
    if as_json {
        let d = r.damage.as_ref();
        let ckpt = ckpt.map(|c| match c {
            Check::Absent => json!({ "state": "absent" }),
            Check::Ignored { why } => json!({ "state": "ignored", "why": why }),
            Check::Matches { seq } => json!({ "state": "matches", "seq": seq }),
            Check::Differs { seq } => json!({ "state": "differs", "seq": seq }),
        });
        let ok = r.ok() && !matches!(ckpt_state(ckpt.as_ref()), Some("differs"));
        let mut doc = json!({
            "ok": ok,
            "records": r.records,
            "head_seq": r.head.map(|h| h.seq),
            "head_hash": r.head.map(|h| hex::encode(h.hash)),
            "first_bad_seq": d.map(|d| d.seq),
            "damage": d.map(|d| d.kind),
            "detail": d.map(|d| d.detail.clone()),
            "checkpoint": ckpt,
        });
        findings.extend_json(&mut doc);
        return print_json(&doc);
    }
    match (&r.damage, r.head) {
        (None, Some(h)) => outln!(
            "ok: {} records verify; head seq {} hash {}",
            r.records,
            h.seq,
            hex::encode(h.hash)
        )?,
        (Some(d), _) => outln!("damaged: first bad seq {}: {}: {}", d.seq, d.kind, d.detail)?,
        (None, None) => unreachable!("a report without damage has a head"),
    }
    match ckpt {
        Some(Check::Matches { seq }) => {
            outln!("checkpoint: the projection checkpoint at seq {seq} equals the replay of the log")?
        }
        Some(Check::Ignored { why }) => {
            outln!("checkpoint: {CHECKPOINT_FILE} is ignored: {why}")?
        }
        Some(Check::Differs { seq }) => outln!(
            "damaged: the projection checkpoint at seq {seq} differs from the replay of the log; deciding verbs would trust it: delete {CHECKPOINT_FILE} (the log itself verifies)"
        )?,
        Some(Check::Absent) | None => {}
    }
    findings.print()
}

fn ckpt_state(v: Option<&serde_json::Value>) -> Option<&str> {
    v.and_then(|v| v.get("state")).and_then(|s| s.as_str())
}

/// `init`: the genesis record with a random ledger id.
pub(crate) fn run_init(cli: &Cli, a: &JsonFlag, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| Error::io("read randomness for the ledger id", e))?;
    let (_, genesis) = Ledger::create(dir, wait, id, &cli.actor, now_utc_ns())?;
    if !crate::cli::out::quiet() {
        eprintln!(
            "benchledger: appended seq {} hash {} (genesis)",
            genesis.seq,
            hex::encode(genesis.hash)
        );
    }
    if a.json {
        print_json(&json!({
            "dir": dir.display().to_string(),
            "ledger_id": hex::encode(id),
            "head_seq": genesis.seq,
            "head_hash": hex::encode(genesis.hash),
        }))?;
    } else {
        outln!("created ledger {} in {}", hex::encode(id), dir.display())?;
        outln!(
            "head seq {} hash {}",
            genesis.seq,
            hex::encode(genesis.hash)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `verify`: every link from seq 0, then the projection checkpoint, then
/// the Merkle tree (every checkpoint record, the node cache, and each
/// `--against` note).
pub(crate) fn run_verify(cli: &Cli, a: &VerifyArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    if let Some(tiles) = &a.tiles {
        return crate::cli::tiles::run_verify_tiles(
            tiles,
            &a.vkey,
            a.state.as_deref(),
            wait,
            a.json,
        );
    }
    match verify_ledger(cli, a, wait) {
        // Damage the store itself reports (it cannot be opened or read) is
        // still a verify result: with --json, one JSON document says so.
        Err(e) if a.json && is_damage(&e) => {
            print_json(&json!({
                "ok": false,
                "records": null,
                "head_seq": null,
                "head_hash": null,
                "first_bad_seq": null,
                "damage": "storage_unreadable",
                "detail": crate::schema::secrets::withhold(&format!("{e:#}")),
            }))?;
            Ok(ExitCode::from(ExitClass::CheckFailed.code()))
        }
        other => other,
    }
}

/// Whether an error is ledger damage (exit 1).
fn is_damage(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Damage(_))))
}

fn verify_ledger(cli: &Cli, a: &VerifyArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    let ledger = crate::cli::common::open_reading(dir, wait)?;
    let verifying = Progress::spinner("verify", "checking every link from seq 0");
    let report = ledger.verify()?;
    verifying.finish();
    // Paired check of the derived cache: a present checkpoint must
    // equal the replay of the (verified) log at its seq.
    let ckpt = if report.ok() {
        Some(crate::method::checkpointed::check(&ledger)?)
    } else {
        None
    };
    let mut memory = None;
    let mut findings = if report.ok() {
        let (tree, against, held) =
            crate::cli::trust::verify_tree(&ledger, &a.against, &a.vkey, a.state.as_deref(), wait)?;
        memory = held;
        TreeFindings {
            tree,
            against,
            auditor_state: None,
        }
    } else if !a.against.is_empty() {
        return Err(Error::Damage(
            "the ledger does not verify, so it extends no checkpoint; run verify".into(),
        )
        .into());
    } else {
        TreeFindings::default()
    };
    let ckpt_ok = !matches!(ckpt, Some(crate::log::checkpoint::Check::Differs { .. }));
    if let Some(memory) = memory {
        // TRUST-7: the memory moves only when the whole verify holds.
        let path = memory.path().to_path_buf();
        let written = if report.ok() && ckpt_ok && findings.ok() {
            let judged: Vec<_> = findings
                .against
                .iter()
                .filter_map(|a| a.auditor.as_ref())
                .collect();
            memory.commit(&judged)?
        } else {
            false
        };
        findings.auditor_state = Some((path, written));
    }
    print_verify(&report, ckpt.as_ref(), &findings, a.json)?;
    Ok(if report.ok() && ckpt_ok && findings.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ExitClass::CheckFailed.code())
    })
}

pub(crate) fn run_head(cli: &Cli, a: &JsonFlag, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    let ledger = crate::cli::common::open_reading(dir, wait)?;
    let head = ledger.head()?;
    if a.json {
        print_json(&head_json(&head))?;
    } else {
        outln!("seq {} hash {}", head.seq, hex::encode(head.hash))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `log --from --to`: records as JSON lines.
/// The kinds `log --kind` selects (`None`: every kind): each one given
/// exactly, or every version of a name given without its `.vN`. An unknown
/// one is bad usage naming every known kind.
fn kinds_selected(given: &[String]) -> anyhow::Result<Option<BTreeSet<&'static str>>> {
    if given.is_empty() {
        return Ok(None);
    }
    let mut selected = BTreeSet::new();
    for want in given {
        let before = selected.len();
        selected.extend(Event::KINDS.iter().copied().filter(|known| {
            *known == want || known.rsplit_once('.').map(|(name, _)| name) == Some(want.as_str())
        }));
        if selected.len() == before {
            return Err(BadUsage(format!(
                "--kind {want:?} is no event kind; the known kinds (a name without its .vN takes every version): {}",
                Event::KINDS.join(", ")
            ))
            .into());
        }
    }
    Ok(Some(selected))
}

pub(crate) fn run_log(cli: &Cli, a: &LogArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    if a.to.is_some_and(|to| to < a.from) {
        return Err(BadUsage(format!(
            "--to {} is before --from {}",
            a.to.unwrap_or(0),
            a.from
        ))
        .into());
    }
    let kinds = kinds_selected(&a.kind)?;
    let ledger = crate::cli::common::open_reading(dir, wait)?;
    let head = ledger.head()?;
    if a.from > head.seq {
        return Err(BadUsage(format!("--from {} is past the head {}", a.from, head.seq)).into());
    }
    let to = a.to.unwrap_or(head.seq).min(head.seq);
    let mut out = BufWriter::new(crate::cli::out::Out);
    // JSON lines, or with --json one array of the same objects, streamed.
    let (open, sep, close): (&[u8], &[u8], &[u8]) = match a.json {
        true => (b"[", b",\n", b"]\n"),
        false => (b"", b"", b""),
    };
    out.write_all(open)?;
    let mut first = true;
    for v in ledger.records_from(a.from)? {
        let v = v?;
        let r = &v.decoded.record;
        if r.seq > to || crate::cli::out::closed() {
            break;
        }
        if kinds.as_ref().is_some_and(|k| !k.contains(r.kind.as_str())) {
            continue;
        }
        if !first {
            out.write_all(sep)?;
        }
        first = false;
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
        if !a.json {
            writeln!(out)?;
        }
    }
    out.write_all(close)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `import --jsonl`: a byte-identical copy, or a refusal naming the line.
pub(crate) fn run_import(cli: &Cli, a: &ImportArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    let source = a.jsonl.display().to_string();
    let rule = if a.untrailed {
        eprintln!("benchledger: warning: --untrailed: the export's completeness is not checked; a cut file imports as a shorter ledger");
        crate::log::export::TrailerRule::Optional
    } else {
        crate::log::export::TrailerRule::Required
    };
    // Ctrl-C ends the read, and the import removes its staging ledger.
    let interrupt = crate::cli::interrupt::Interrupt::install();
    let head = if is_stdin(&a.jsonl) {
        // stdin within the bound of an export file.
        let max = crate::limits::IMPORT_FILE_BYTES_MAX;
        let past = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let progress = Progress::bytes("import", None);
        let stdin = Interruptible::new(stdin_within(max, past.clone())?, &interrupt);
        let mut input = CountingReader::new(stdin, &progress);
        let imported = crate::log::export::import_jsonl(&mut input, "stdin", dir, wait, rule);
        if past.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(stdin_too_long(max));
        }
        imported?
    } else {
        let (file, size) =
            crate::error::open_regular(&a.jsonl, crate::limits::IMPORT_FILE_BYTES_MAX)?;
        let size = Some(size);
        let progress = Progress::bytes("import", size);
        let file = Interruptible::new(std::io::BufReader::new(file), &interrupt);
        let mut input = CountingReader::new(file, &progress);
        crate::log::export::import_jsonl(&mut input, &source, dir, wait, rule)?
    };
    if a.json {
        print_json(&head_json(&head))?;
    } else {
        outln!(
            "imported {} records into {}; head seq {} hash {}",
            head.seq + 1,
            dir.display(),
            head.seq,
            hex::encode(head.hash)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `note`: an operator note.
pub(crate) fn run_note(cli: &Cli, a: &NoteArgs, wait: Duration) -> anyhow::Result<ExitCode> {
    let dir = &cli.ledger;
    if a.text.is_empty() || a.text.len() > NOTE_TEXT_BYTES_MAX {
        return Err(BadUsage(format!(
            "a note must be 1 to {NOTE_TEXT_BYTES_MAX} bytes, got {}",
            a.text.len()
        ))
        .into());
    }
    let ledger = Ledger::open(dir, wait)?;
    let draft = Draft {
        actor: cli.actor.clone(),
        event: Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: a.text.clone(),
        }),
        idempotency_key: a.idempotency_key.clone(),
    };
    let done = ledger.append(&[draft], now_utc_ns())?;
    announce(&done);
    let done = done[0];
    // The append is announced once, on stderr (`announce`); stdout carries
    // only the JSON document when asked for.
    if a.json {
        print_json(
            &json!({ "seq": done.seq, "hash": hex::encode(done.hash), "appended": done.appended }),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
