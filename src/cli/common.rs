//! What the verbs share: printing, reading input files, the state `decide`
//! reads, deciding and appending under the writer lock, parsing group and
//! case names, file hashes, and exit codes of checks.

use crate::cli::out::outln;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::Cli;
use crate::error::{Error, ExitClass};
use crate::log::chain::Head;
use crate::log::ledger::{Appended, Draft, Ledger};
use crate::method::projections::{LineageState, State};
use crate::schema::events::{CaseRef, Event, GroupRef, Status};
use crate::schema::time::now_utc_ns;

/// A usage error found after parsing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadUsage(pub(crate) String);

/// `--json` alone.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn head_json(h: &Head) -> serde_json::Value {
    json!({ "head_seq": h.seq, "head_hash": hex::encode(h.hash) })
}

pub(crate) fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(crate::cli::out::Out);
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Says on stderr what an append did, before anything goes to stdout: a
/// reader who closed stdout (`| head`) still sees that records were written.
pub(crate) fn announce(done: &[Appended]) {
    if crate::cli::out::quiet() {
        return;
    }
    let written: Vec<&Appended> = done.iter().filter(|a| a.appended).collect();
    match (written.first(), written.last()) {
        (Some(first), Some(last)) if first.seq == last.seq => eprintln!(
            "benchledger: appended seq {} hash {}",
            first.seq,
            hex::encode(first.hash)
        ),
        (Some(first), Some(last)) => eprintln!(
            "benchledger: appended seqs {}..={} ({} records), head hash {}",
            first.seq,
            last.seq,
            written.len(),
            hex::encode(last.hash)
        ),
        _ => {
            if let Some(a) = done.first() {
                eprintln!(
                    "benchledger: already recorded at seq {} (nothing appended)",
                    a.seq
                );
            }
        }
    }
}

/// A whole text file of at most `TEXT_INPUT_FILE_BYTES_MAX` bytes (a
/// manifest, a key, a note): a regular file only, or stdin as `-`.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = read_input(path, crate::limits::TEXT_INPUT_FILE_BYTES_MAX)?;
    String::from_utf8(bytes).map_err(|_| Error::input(format!("{}: not utf-8", shown(path))).into())
}

/// Whether an input path is `-`: stdin.
pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// An input path as a message names it: `-` is `- (stdin)`.
pub(crate) fn shown(path: &Path) -> String {
    match is_stdin(path) {
        true => "- (stdin)".into(),
        false => path.display().to_string(),
    }
}

/// The bytes of an input file of at most `max` bytes (a `limits`
/// constant), or of stdin when `path` is `-`, within the same bound: more
/// is bad input (exit 2) naming the file or `- (stdin)`. A regular file
/// only (`error::read_regular`); stdin once per command (a second `-` is
/// bad usage: it would read nothing).
pub(crate) fn read_input(path: &Path, max: u64) -> anyhow::Result<Vec<u8>> {
    if !is_stdin(path) {
        return Ok(crate::error::read_regular(path, max)?);
    }
    let mut bytes = Vec::new();
    copy_stdin(&mut bytes, max)?;
    Ok(bytes)
}

/// stdin, once per command: a second `-` is bad usage (it would read
/// nothing).
fn take_stdin() -> anyhow::Result<std::io::StdinLock<'static>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);
    if STDIN_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(BadUsage(
            "- (stdin) given for two inputs of one command: stdin is read once".into(),
        )
        .into());
    }
    Ok(std::io::stdin().lock())
}

/// The refusal of stdin past `max` bytes: bad input (exit 2).
pub(crate) fn stdin_too_long(max: u64) -> anyhow::Error {
    Error::input(format!(
        "- (stdin): longer than the limit of {max} bytes for this input; nothing was kept"
    ))
    .into()
}

/// Copies stdin, once per command, into `to`: at most `max` bytes, more
/// refused (bad input naming `- (stdin)`).
fn copy_stdin(to: &mut impl Write, max: u64) -> anyhow::Result<()> {
    use std::io::Read;
    let mut stdin = take_stdin()?.take(max.saturating_add(1));
    let n = std::io::copy(&mut stdin, to).map_err(|e| Error::io("read - (stdin)", e))?;
    if n > max {
        return Err(stdin_too_long(max));
    }
    Ok(())
}

/// A reader of at most `max` bytes for a verb that streams its input
/// (`import --jsonl -`): a read past the bound fails and `past` is set, so
/// the verb refuses with `stdin_too_long` (bad input), not an I/O error.
pub(crate) struct Within<R> {
    inner: R,
    left: u64,
    past: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R: std::io::Read> Within<R> {
    /// `inner` within `max` bytes; `past` is set once more was there.
    pub(crate) fn new(
        inner: R,
        max: u64,
        past: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Within<R> {
        Within {
            inner,
            left: max,
            past,
        }
    }
}

/// stdin within `max` bytes, once per command (`Within`).
pub(crate) fn stdin_within(
    max: u64,
    past: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<std::io::BufReader<Within<std::io::StdinLock<'static>>>> {
    Ok(std::io::BufReader::new(Within::new(
        take_stdin()?,
        max,
        past,
    )))
}

impl<R: std::io::Read> std::io::Read for Within<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the bound: end of input, or one byte too many.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.past.store(true, std::sync::atomic::Ordering::SeqCst);
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "- (stdin): past its limit",
            ));
        }
        let cap = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..cap])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// An input file the verb reads by path (streamed, hashed, read twice):
/// the file itself, or stdin as `-` spooled within `max` bytes into a
/// private temporary file, removed on drop.
pub(crate) struct InputFile {
    path: std::path::PathBuf,
    spooled: bool,
}

impl InputFile {
    /// `path`, or stdin spooled when it is `-`.
    pub(crate) fn open(path: &Path, max: u64) -> anyhow::Result<InputFile> {
        if !is_stdin(path) {
            return Ok(InputFile {
                path: path.to_path_buf(),
                spooled: false,
            });
        }
        let target = std::env::temp_dir().join("benchledger-stdin");
        crate::log::staging::remove_stale(&target, "input");
        let spool = crate::log::staging::temp_beside(&target, "input")?;
        let file = InputFile {
            path: spool,
            spooled: true,
        };
        // Ctrl-C while stdin is spooled or the verb reads it: the spool goes
        // and the verb ends (exit 130); a second signal leaves it to the
        // next verb that spools stdin.
        crate::cli::interrupt::remove_on_interrupt(file.path.clone(), "spooled stdin");
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file.path)
                .map_err(|e| Error::io(format!("spool stdin to {}", file.path.display()), e))?;
            copy_stdin(&mut f, max)?;
        }
        Ok(file)
    }

    /// Where to read it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for InputFile {
    fn drop(&mut self) {
        if self.spooled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The state `decide` reads: `projections::replay` through the projection
/// checkpoint (checkpoint.rs), which folds only the log's tail when a valid
/// checkpoint exists. Failing to write a checkpoint is a warning.
pub(crate) fn decide_state(ledger: &Ledger) -> anyhow::Result<crate::method::projections::State> {
    let r =
        crate::method::checkpointed::decide_state(ledger, crate::log::checkpoint::Policy::DEFAULT)?;
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
    decide: impl FnOnce(&crate::method::projections::State) -> crate::Result<Vec<Event>>,
) -> anyhow::Result<Vec<crate::log::ledger::Appended>> {
    let state = decide_state(ledger)?;
    append_events(ledger, actor, now_ns, decide(&state)?)
}

/// Appends `events` by `actor` in one atomic batch (no idempotency keys).
pub(crate) fn append_events(
    ledger: &Ledger,
    actor: &str,
    now_ns: u64,
    events: Vec<Event>,
) -> anyhow::Result<Vec<crate::log::ledger::Appended>> {
    let drafts: Vec<Draft> = events
        .into_iter()
        .map(|event| Draft {
            actor: actor.to_string(),
            event,
            idempotency_key: None,
        })
        .collect();
    let done = ledger.append(&drafts, now_ns)?;
    announce(&done);
    Ok(done)
}

/// Splits `LINEAGE/GROUP` or `GROUP`.
pub fn parse_group(s: &str) -> (Option<String>, String) {
    match s.split_once('/') {
        Some((l, g)) => (Some(l.to_string()), g.to_string()),
        None => (None, s.to_string()),
    }
}

/// Parses `TASK/TRIAL` or `TASK/TRIAL/replacement-NN`.
pub(crate) fn parse_case(s: &str) -> Result<CaseRef, BadUsage> {
    let parts: Vec<&str> = s.split('/').collect();
    let bad = || {
        BadUsage(format!(
            "case {s:?} is not TASK/TRIAL or TASK/TRIAL/replacement-01"
        ))
    };
    let (task, trial, replacement) = match parts.as_slice() {
        [task, trial] => (task, trial, 0),
        [task, trial, rep] => {
            let n = rep
                .strip_prefix("replacement-")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(bad)?;
            (task, trial, n)
        }
        _ => return Err(bad()),
    };
    if task.is_empty() || trial.is_empty() {
        return Err(bad());
    }
    Ok(CaseRef {
        task: task.to_string(),
        trial: trial.to_string(),
        replacement,
    })
}

/// The size and BLAKE3 of a regular file of at most
/// `HASHED_FILE_BYTES_MAX` bytes, streamed.
pub(crate) fn blake3_file(path: &Path) -> anyhow::Result<(u64, String)> {
    Ok(crate::error::blake3_regular(
        path,
        crate::limits::HASHED_FILE_BYTES_MAX,
    )?)
}

pub(crate) fn hash_file(path: impl AsRef<Path>) -> anyhow::Result<(String, String)> {
    let path = path.as_ref();
    let bytes = crate::error::read_regular(path, crate::limits::SCANNED_FILE_BYTES_MAX)?;
    if let Ok(text) = std::str::from_utf8(&bytes) {
        crate::method::freeze::secrets::sanitized(&path.display().to_string(), text)?;
    }
    Ok((
        path.display().to_string(),
        hex::encode(blake3::hash(&bytes).as_bytes()),
    ))
}

pub(crate) fn group_ref(state: &State, spec: &str) -> anyhow::Result<GroupRef> {
    let (lineage, group) = parse_group(spec);
    let l = state.lineage(lineage.as_deref())?;
    Ok(GroupRef {
        lineage: l.frozen.lineage.clone(),
        group,
    })
}

pub(crate) fn report_appended(
    done: &[crate::log::ledger::Appended],
    as_json: bool,
    what: &str,
) -> anyhow::Result<()> {
    if as_json {
        print_json(&json!({
            "seqs": done.iter().map(|d| d.seq).collect::<Vec<_>>(),
            "head_hash": done.last().map(|d| hex::encode(d.hash)),
        }))?;
    } else {
        let seqs: Vec<String> = done.iter().map(|d| d.seq.to_string()).collect();
        outln!("{what} at seq {}", seqs.join(", "))?;
    }
    Ok(())
}

pub(crate) fn exit(status: Status) -> ExitCode {
    match status {
        Status::Pass => ExitCode::SUCCESS,
        Status::Fail => ExitCode::from(ExitClass::CheckFailed.code()),
    }
}

/// Opens the ledger in `dir` for a verb that only reads it: in place under
/// the writer lock where this process may write the directory, else a
/// private copy in the temporary directory (`$TMPDIR`), removed on return
/// and on Ctrl-C (`log::read_copy`). Nothing is appended through it.
pub(crate) fn open_reading(dir: &Path, wait: Duration) -> anyhow::Result<Ledger> {
    let ledger = Ledger::open_read(dir, wait, &std::env::temp_dir())?;
    if let Some(copy) = ledger.read_copy() {
        crate::cli::interrupt::remove_on_interrupt(copy.to_path_buf(), "private read copy");
    }
    Ok(ledger)
}

/// The lineage's state, read under the lock; the lock is released on return.
pub(crate) fn lineage_state(
    cli: &Cli,
    wait: Duration,
    lineage: Option<&str>,
) -> anyhow::Result<LineageState> {
    let ledger = open_reading(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    Ok(state.lineage(lineage)?.clone())
}

/// LINEAGE-1: the same refusal of an unknown group as every verb's (exit
/// 3).
pub(crate) fn require_group(l: &LineageState, group: &str) -> anyhow::Result<()> {
    Ok(crate::method::decide::target_group(l, group)?)
}

/// Appends events in one atomic batch under the writer lock.
pub(crate) fn append(
    cli: &Cli,
    wait: Duration,
    events: Vec<Event>,
) -> anyhow::Result<Vec<Appended>> {
    let ledger = Ledger::open(&cli.ledger, wait)?;
    crate::cli::common::append_events(&ledger, &cli.actor, now_utc_ns(), events)
}

/// A `--json` flag alone.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A verb that needs a cargo feature this build was made without (Parquet):
/// an environment failure (exit 4), like a missing AWS build, nothing
/// appended or written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
#[cfg_attr(feature = "parquet", allow(dead_code))]
pub(crate) struct MissingFeature(pub(crate) String);

/// A verb that needs the AWS gates in a build without them: an environment
/// failure (exit 4), nothing appended.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
#[cfg_attr(feature = "aws", allow(dead_code))]
pub(crate) struct NeedsAws(pub(crate) String);

/// How to get a build with the AWS gates.
#[cfg_attr(feature = "aws", allow(dead_code))]
pub(crate) const AWS_BUILD_HINT: &str = "build benchledger with the `aws` feature: `cargo build --release` (aws is a default feature) or `cargo install --path . --features aws`; nothing was appended";

/// Set to `recorded` to let a build without the `aws` feature open groups
/// and start cases on the identity, quota and residue observations an `aws`
/// build recorded in the same ledger (`case start` still refuses without
/// them, GATE-6).
#[cfg_attr(feature = "aws", allow(dead_code))]
pub(crate) const AWS_GATES_VAR: &str = "BENCHLEDGER_AWS_GATES";

#[cfg(not(feature = "aws"))]
pub(crate) fn no_aws(verb: &str) -> anyhow::Error {
    NeedsAws(format!(
        "`{verb}` calls AWS and this build has no AWS support: {AWS_BUILD_HINT}"
    ))
    .into()
}

/// `group open` and `case start` need the AWS gates (GATE-1..3): in a build
/// without them they say so at once (exit 4, nothing appended), unless
/// `BENCHLEDGER_AWS_GATES=recorded` says an `aws` build records them.
#[cfg(not(feature = "aws"))]
pub(crate) fn require_aws_gates(verb: &str) -> anyhow::Result<()> {
    if std::env::var(AWS_GATES_VAR).is_ok_and(|v| v == "recorded") {
        return Ok(());
    }
    Err(NeedsAws(format!(
        "`{verb}` needs the AWS gates (identity, quota, residue and cleanup: GATE-1..3, CLEAN-1), which this build cannot take: {AWS_BUILD_HINT}. To rely on observations an `aws` build records in this ledger, set {AWS_GATES_VAR}=recorded"
    ))
    .into())
}

/// `group open` and `case start` need the AWS gates: this build has them.
#[cfg(feature = "aws")]
pub(crate) fn require_aws_gates(_verb: &str) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn within_reads_up_to_its_bound_and_fails_one_byte_past_it() {
        let read = |input: &[u8], max: u64| {
            let past = Arc::new(AtomicBool::new(false));
            let mut r = std::io::BufReader::with_capacity(3, Within::new(input, max, past.clone()));
            let mut got = Vec::new();
            let result = r.read_to_end(&mut got);
            (result.is_ok(), got.len(), past.load(Ordering::SeqCst))
        };
        assert_eq!(read(b"0123456789", 10), (true, 10, false));
        assert_eq!(read(b"", 0), (true, 0, false));
        assert_eq!(read(b"0123456789", 11), (true, 10, false));
        let (ok, _, past) = read(b"0123456789a", 10);
        assert!(!ok && past, "one byte past the bound fails and says so");
        let (ok, _, past) = read(b"x", 0);
        assert!(!ok && past);
    }
}
