//! `export --jsonl` and `import --jsonl`: the ledger as canonical JSON lines.
//!
//! One line per record, fields in this order: seq, prev_hash, hash, kind,
//! recorded_at_utc_ns, actor, idempotency_key, payload (decoded, for
//! reading and diffing) and record_hex (the exact stored bytes, for an
//! independent verifier). Every line is a pure function of the record's
//! stored value, so an export is canonical: `import` regenerates each line
//! from its bytes and refuses any line that differs, any broken link, and
//! any file that does not end at a verifying head.
//!
//! An `export --jsonl` file ends with one trailer line (`Trailer`): the
//! number of records before it and the head they end at. `import` refuses a
//! file without a valid trailer, so a cut export is a refusal, never a
//! shorter ledger; an export written before trailers imports only with
//! `TrailerRule::Optional` (`import --untrailed`), stated as such.

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::limits::EXPORT_LINE_BYTES_MAX;
use crate::log::chain::{Head, Sealed, Verified, Walker};
use crate::log::ledger::Ledger;

/// Records per transaction while importing.
const IMPORT_CHUNK_RECORDS: usize = 10_000;

/// One exported record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportLine {
    pub seq: u64,
    /// Hash of the predecessor, hex.
    pub prev_hash: String,
    /// The record's link hash, hex.
    pub hash: String,
    /// The event kind.
    pub kind: String,
    /// When it was recorded, ns since the epoch (UTC).
    pub recorded_at_utc_ns: u64,
    /// Who appended it.
    pub actor: String,
    /// The client's idempotency key.
    pub idempotency_key: Option<String>,
    /// The decoded payload.
    pub payload: serde_json::Value,
    /// The exact record bytes, hex.
    pub record_hex: String,
}

/// The value of a trailer's `trailer` field: what the line is.
pub const TRAILER_MARK: &str = "benchledger export end";

/// The last line of an `export --jsonl` file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trailer {
    /// Always `TRAILER_MARK`.
    pub trailer: String,
    /// Records before this line (the head's seq + 1).
    pub records: u64,
    /// The last record's seq.
    pub head_seq: u64,
    /// The last record's link hash, hex.
    pub head_hash: String,
}

/// Whether an import needs a trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrailerRule {
    /// The file must end with a valid trailer (`import`'s default).
    Required,
    /// A trailer, where present, must be valid; a file without one (an
    /// export written before trailers, or a record-only corpus) imports,
    /// and a cut file then imports as a shorter ledger.
    Optional,
}

/// The canonical trailer line of an export ending at `head` (no newline).
pub fn trailer_line(head: &Head) -> String {
    let t = Trailer {
        trailer: TRAILER_MARK.to_string(),
        records: head.seq + 1,
        head_seq: head.seq,
        head_hash: hex::encode(head.hash),
    };
    serde_json::to_string(&t).expect("a trailer serializes")
}

/// The canonical export line of a verified record (without newline).
pub fn line(v: &Verified) -> String {
    let r = &v.decoded.record;
    let l = ExportLine {
        seq: r.seq,
        prev_hash: hex::encode(v.prev),
        hash: hex::encode(v.hash),
        kind: r.kind.clone(),
        recorded_at_utc_ns: r.recorded_at_utc_ns,
        actor: r.actor.clone(),
        idempotency_key: r.idempotency_key.clone(),
        payload: v.decoded.event.payload_json(),
        // A verified record was read within RECORD_BYTES_MAX and is canonical,
        // so it re-encodes to the same bytes.
        record_hex: hex::encode(r.encode().expect("a verified record re-encodes")),
    };
    serde_json::to_string(&l).expect("export lines serialize")
}

/// Writes every record as one JSON line (no trailer: the record lines of
/// the contract vectors and the recorded corpus). Returns the head exported.
pub fn export_jsonl(ledger: &Ledger, out: &mut dyn Write) -> Result<Head> {
    let head = ledger.head()?;
    for v in ledger.records()? {
        let v = v?;
        writeln!(out, "{}", line(&v)).map_err(|e| Error::io("write export", e))?;
    }
    out.flush().map_err(|e| Error::io("write export", e))?;
    Ok(head)
}

/// An `export --jsonl` file: every record as one JSON line, then the
/// trailer naming how many there were and the head they end at.
pub fn export_jsonl_trailed(ledger: &Ledger, out: &mut dyn Write) -> Result<Head> {
    let head = export_jsonl(ledger, out)?;
    writeln!(out, "{}", trailer_line(&head)).map_err(|e| Error::io("write export", e))?;
    out.flush().map_err(|e| Error::io("write export", e))?;
    Ok(head)
}

fn decode_hash(s: &str, what: &str, lineno: u64) -> Result<[u8; 32]> {
    let mut h = [0u8; 32];
    hex::decode_to_slice(s, &mut h)
        .map_err(|_| Error::input(format!("line {lineno}: field {what}: not 64 hex digits")))?;
    Ok(h)
}

/// Reads one line of at most `EXPORT_LINE_BYTES_MAX` bytes; `None` at EOF.
fn read_bounded_line(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    lineno: u64,
    source: &str,
) -> Result<Option<()>> {
    buf.clear();
    let n = std::io::Read::take(&mut *r, EXPORT_LINE_BYTES_MAX as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| Error::io(format!("read {source}"), e))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if n > EXPORT_LINE_BYTES_MAX {
        return Err(Error::input(format!(
            "{source}: line {lineno}: longer than {EXPORT_LINE_BYTES_MAX} bytes"
        )));
    }
    Ok(Some(()))
}

/// Imports an export file (canonical JSONL ending with its trailer) into
/// the new ledger directory `dir`, every line verified, and opens it: what
/// `import --jsonl FILE` does, for a library caller (`benchledger::expect`
/// on a recorded export).
pub fn import_file(export: &Path, dir: &Path, lock_wait: Duration) -> Result<Ledger> {
    let (file, _) = crate::error::open_regular(export, crate::limits::IMPORT_FILE_BYTES_MAX)?;
    let mut input = std::io::BufReader::new(file);
    let source = export.display().to_string();
    import_jsonl(&mut input, &source, dir, lock_wait, TrailerRule::Required)?;
    Ledger::open(dir, lock_wait)
}

/// Rebuilds a ledger from an export into `dir`, which must not exist or be
/// an empty directory. The ledger is built beside `dir` and renamed into
/// place only after every line verified, so a refused import leaves nothing.
/// Returns the imported head.
pub fn import_jsonl(
    input: &mut dyn BufRead,
    source: &str,
    dir: &Path,
    lock_wait: Duration,
    trailer: TrailerRule,
) -> Result<Head> {
    check_target_empty(dir)?;
    // What an import killed before it could clean up left (issue 29).
    crate::log::staging::remove_stale(dir, STAGING_TAG);
    let staging = crate::log::staging::temp_beside(dir, STAGING_TAG)?;
    let result = build(input, source, &staging, lock_wait, trailer)
        .and_then(|head| move_into_place(&staging, dir).map(|()| head));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

/// The tag of an import's staging directory (`.{target}.importing-...`).
pub const STAGING_TAG: &str = "importing";

fn check_target_empty(dir: &Path) -> Result<()> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| Error::io(format!("read {}", dir.display()), e))?
            .next()
            .is_none();
        if !empty {
            return Err(Error::input(format!(
                "import target {} exists and is not empty",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Renames a built staging ledger onto `dir` (absent or empty). Another
/// process that filled `dir` meanwhile (a second import) is bad input:
/// nothing of this import is kept.
fn move_into_place(staging: &Path, dir: &Path) -> Result<()> {
    let filled = || {
        Error::input(format!(
            "import target {} was filled by another process while this import ran; nothing of this import was kept",
            dir.display()
        ))
    };
    if dir.exists() {
        check_target_empty(dir).map_err(|_| filled())?;
        match std::fs::remove_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => return Err(filled()),
            Err(e) => return Err(Error::io(format!("remove empty {}", dir.display()), e)),
        }
    }
    std::fs::rename(staging, dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => filled(),
        _ => Error::io(
            format!("rename {} to {}", staging.display(), dir.display()),
            e,
        ),
    })
}

/// Checks a trailer line against the records read before it.
fn check_trailer(text: &str, head: Option<Head>, source: &str, lineno: u64) -> Result<()> {
    let at = |msg: String| Error::input(format!("{source}: line {lineno}: trailer: {msg}"));
    let t: Trailer =
        serde_json::from_str(text).map_err(|e| at(format!("not an export trailer: {e}")))?;
    let head = head.ok_or_else(|| at("no records before it".into()))?;
    if text != trailer_line(&head) {
        return Err(at(format!(
            "says {} records ending at seq {} hash {}, but the file holds {} ending at seq {} hash {} (a cut or edited export)",
            t.records,
            t.head_seq,
            t.head_hash,
            head.seq + 1,
            head.seq,
            hex::encode(head.hash)
        )));
    }
    Ok(())
}

fn build(
    input: &mut dyn BufRead,
    source: &str,
    staging: &Path,
    lock_wait: Duration,
    trailer: TrailerRule,
) -> Result<Head> {
    let ledger = Ledger::create_empty(staging, lock_wait)?;
    let mut walker = Walker::from_genesis();
    let mut head: Option<Head> = None;
    let mut chunk: Vec<Sealed> = Vec::new();
    let mut index: Vec<(String, u64)> = Vec::new();
    let mut buf = Vec::new();
    let mut lineno = 0u64;
    let mut trailed = false;
    while read_bounded_line(input, &mut buf, lineno + 1, source)?.is_some() {
        lineno += 1;
        let at = |field: &str, msg: &str| {
            Error::input(format!("{source}: line {lineno}: field {field}: {msg}"))
        };
        if trailed {
            return Err(at("(line)", "a line after the export's trailer"));
        }
        let text = std::str::from_utf8(&buf).map_err(|_| at("(line)", "not utf-8"))?;
        if text.starts_with("{\"trailer\":") {
            if !chunk.is_empty() {
                head = Some(ledger.append_sealed(head, &chunk, &index)?);
                chunk.clear();
                index.clear();
            }
            check_trailer(text, head, source, lineno)?;
            trailed = true;
            continue;
        }
        let parsed: ExportLine = serde_json::from_str(text)
            .map_err(|e| at("(line)", &format!("not an export line: {e}")))?;
        let bytes = hex::decode(&parsed.record_hex).map_err(|_| at("record_hex", "not hex"))?;
        let prev = decode_hash(&parsed.prev_hash, "prev_hash", lineno)?;
        let hash = decode_hash(&parsed.hash, "hash", lineno)?;
        let sealed = Sealed {
            seq: parsed.seq,
            prev,
            hash,
            bytes,
        };
        let verified = walker
            .step(&parsed.seq.to_be_bytes(), &sealed.value())
            .map_err(|d| at("record_hex", &format!("does not verify: {d}")))?;
        if line(&verified) != text {
            return Err(at(
                "(line)",
                "differs from the canonical line of its record bytes (edited export?)",
            ));
        }
        if let Some(k) = &verified.decoded.record.idempotency_key {
            index.push((k.clone(), parsed.seq));
        }
        chunk.push(sealed);
        if chunk.len() >= IMPORT_CHUNK_RECORDS {
            head = Some(ledger.append_sealed(head, &chunk, &index)?);
            chunk.clear();
            index.clear();
        }
    }
    if !chunk.is_empty() {
        head = Some(ledger.append_sealed(head, &chunk, &index)?);
    }
    let head = head.ok_or_else(|| Error::input(format!("{source}: no records")))?;
    if trailer == TrailerRule::Required && !trailed {
        return Err(Error::input(format!(
            "{source}: no trailer line after record {}: the export is cut short, or was written before exports had trailers (import such an older export with --untrailed, knowing that a cut file then imports as a shorter ledger)",
            head.seq
        )));
    }
    let report = ledger.verify()?;
    if let Some(d) = report.damage {
        return Err(Error::input(format!(
            "{source}: the imported ledger does not verify: {d}"
        )));
    }
    Ok(head)
}
