//! `export --tiles -o DIR` and `verify --tiles DIR|URL` (TRUST-8): the ledger
//! as C2SP tlog-tiles (`log::tiles`), written from the latest signed
//! checkpoint and read back against a trusted key.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use crate::cli::common::*;
use crate::cli::out::outln;
use crate::cli::trust::{not_checked, not_checked_text, open_checkpoint, parse_vkey, signed_by};
use crate::cli::Cli;
use crate::error::Error;
use crate::gates::http::{exchange_limited, parse_http_url, HttpUrl, Method};
use crate::limits::TILES_FETCH_MS_MAX;
use crate::log::chain::Verified;
use crate::log::tiles::{read_tiles, DirSource, TileNodes, TileSource, CHECKPOINT_PATH};
use crate::log::tlog::note::NOTE_BYTES_MAX;
use crate::log::tlog::{Checkpoint, SignedNote, VerifierKey};
use crate::schema::events::{Event, SignOffRole};

/// `export --tiles -o DIR [--key FILE]`: with `--key`, a checkpoint of every
/// record is signed and appended first (as `checkpoint sign`); the tiles
/// cover the latest signed checkpoint. A ledger without one, and no
/// `--key`, is refused (exit 2): C2SP has a public log's checkpoint carry
/// the log's signature, so nothing unsigned is published.
pub(crate) fn run_export_tiles(
    cli: &Cli,
    dir: &Path,
    key: Option<&Path>,
    json_out: bool,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    if let Some(key) = key {
        // `sign_head` announces its append; this says only what it is for.
        let (seq, cp, _) = crate::cli::tlog::sign_head(cli, key, wait)?;
        eprintln!(
            "benchledger: the checkpoint at seq {seq} (size {}, signed with {}) is the one published",
            cp.size(),
            key.display()
        );
    }
    let ledger = open_reading(&cli.ledger, wait)?;
    let state = decide_state(&ledger)?;
    let Some(signed) = crate::cli::trust::signed_head(&ledger, &state)? else {
        return Err(BadUsage(
            "this ledger records no signed checkpoint, and export --tiles publishes only a signed tree (C2SP tlog-tiles: a public log's checkpoint carries the log's signature): pass --key FILE to sign one of every record now, or run `checkpoint sign --key FILE` first".into(),
        )
        .into());
    };
    drop(state);
    let head = ledger.head()?;
    let cp = &signed.checkpoint;
    let done = crate::log::tiles::export_tiles(&ledger, cp, &signed.note, dir)?;
    let after = (head.seq + 1).saturating_sub(cp.size());
    if json_out {
        print_json(&json!({
            "dir": dir.display().to_string(),
            "origin": cp.origin(),
            "tree_size": cp.size(),
            "root": hex::encode(cp.root()),
            "checkpoint_seq": signed.seq,
            "records_after_checkpoint": after,
            "files_written": done.written,
            "files_kept": done.kept,
            "bytes_written": done.bytes,
        }))?;
    } else {
        outln!(
            "wrote {} tiles of size {} root {} into {} ({} files, {} bytes; {} full tiles already there kept)",
            cp.origin(),
            cp.size(),
            hex::encode(cp.root()),
            dir.display(),
            done.written,
            done.bytes,
            done.kept
        )?;
    }
    if after > 0 {
        eprintln!(
            "benchledger: the signed checkpoint (seq {}) covers records 0..{}; the {after} records from seq {} on (the checkpoint's own record among them) are in the next export's tiles",
            signed.seq,
            cp.size(),
            cp.size()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A tiles log served over plain HTTP: one bounded GET per file, each
/// within `TILES_FETCH_MS_MAX` (name lookup included).
struct HttpSource {
    base: HttpUrl,
}

impl TileSource for HttpSource {
    fn prefix(&self) -> String {
        self.base.text()
    }

    fn fetch(&mut self, path: &str, max: u64) -> crate::error::Result<Vec<u8>> {
        let url = HttpUrl {
            path: format!("{}/{path}", self.base.path.trim_end_matches('/')),
            ..self.base.clone()
        };
        let timeout = Duration::from_millis(TILES_FETCH_MS_MAX);
        let answer = exchange_limited(Method::Get, &url, &[], &[], timeout, max).map_err(|f| {
            Error::io(
                format!("GET {}", url.text()),
                std::io::Error::other(f.error),
            )
        })?;
        if answer.status != 200 {
            return Err(Error::NotHeld(format!(
                "GET {}: status {} (the log does not serve it)",
                url.text(),
                answer.status
            )));
        }
        Ok(answer.body)
    }
}

/// The source of `--tiles DIR|URL`: `http://` is fetched, anything else is
/// a directory. `https://` is refused: this build's HTTP client has no TLS
/// (mirror the log, e.g. with a static download, and verify the directory).
fn source_of(arg: &str) -> anyhow::Result<Box<dyn TileSource>> {
    if arg.starts_with("http://") || arg.starts_with("https://") {
        let base = parse_http_url(arg).map_err(|e| {
            BadUsage(format!(
                "--tiles {arg}: {e} (an https:// log: download it and verify the directory)"
            ))
        })?;
        return Ok(Box::new(HttpSource { base }));
    }
    let dir = Path::new(arg);
    if !dir.is_dir() {
        return Err(BadUsage(format!("--tiles {arg}: not a directory or an http:// URL")).into());
    }
    Ok(Box::new(DirSource {
        dir: dir.to_path_buf(),
    }))
}

/// What the walk of the records gathered: the origin of the genesis record
/// and the operator keys the frozen manifests list.
#[derive(Default)]
struct Gathered {
    origin: Option<String>,
    operators: Vec<VerifierKey>,
}

impl Gathered {
    fn see(&mut self, v: &Verified) -> crate::error::Result<()> {
        match &v.decoded.event {
            Event::LedgerCreated(g) => {
                self.origin = Some(crate::log::tree::origin_of(&g.ledger_id));
            }
            Event::ManifestFrozenV2(m) => {
                for k in crate::method::trust::role_keys(&m.plan, SignOffRole::Operator) {
                    if !self.operators.contains(&k) {
                        self.operators.push(k);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The log's checkpoint file: its note text and the checkpoint it signs.
fn read_checkpoint(src: &mut dyn TileSource) -> anyhow::Result<(String, Checkpoint)> {
    let bytes = src.fetch(CHECKPOINT_PATH, NOTE_BYTES_MAX as u64)?;
    let note = String::from_utf8(bytes)
        .map_err(|_| Error::Damage(format!("{}/{CHECKPOINT_PATH}: not UTF-8", src.prefix())))?;
    let parsed = SignedNote::parse(&note)
        .map_err(|e| Error::Damage(format!("{}/{CHECKPOINT_PATH}: {e}", src.prefix())))?;
    let cp = Checkpoint::parse(parsed.text())
        .map_err(|e| Error::Damage(format!("{}/{CHECKPOINT_PATH}: {e}", src.prefix())))?;
    Ok((note, cp))
}

/// `verify --tiles DIR|URL [--vkey K] [--state FILE]`: the checkpoint, the
/// tiles and bundles top down against its root, every record through the
/// chain walker, then the checkpoint's signature by `--vkey` or else by an
/// operator key a frozen manifest in those records lists, and its origin
/// against the genesis record; then the auditor's memory (TRUST-7): the
/// checkpoint must be the one remembered for its origin or extend it (the
/// consistency proof computed from the hash tiles), and is remembered
/// once everything held. Exit 1 naming the first file that does not hold,
/// or the rollback or fork.
pub(crate) fn run_verify_tiles(
    arg: &str,
    vkeys: &[String],
    state: Option<&Path>,
    wait: Duration,
    json_out: bool,
) -> anyhow::Result<ExitCode> {
    let trusted = vkeys
        .iter()
        .map(|k| parse_vkey(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut src = source_of(arg)?;
    let (note, cp) = read_checkpoint(src.as_mut())?;
    let memory = crate::cli::auditor::Memory::open(state, wait)?;
    let mut seen = Gathered::default();
    let read = read_tiles(src.as_mut(), &cp, &mut |v| seen.see(v))?;
    let keys = if trusted.is_empty() {
        seen.operators.clone()
    } else {
        trusted
    };
    if keys.is_empty() {
        return Err(Error::NotHeld(
            "no key to check the checkpoint's signature with: the log's frozen manifests list no operator key; pass --vkey".into(),
        )
        .into());
    }
    let origin = seen.origin.clone().unwrap_or_default();
    let v = open_checkpoint(&note, &keys, &[], &origin)
        .map_err(|e| Error::NotHeld(format!("{}/{CHECKPOINT_PATH}: {e:#}", src.prefix())))?;
    // The consistency proof from the remembered size, out of the hash
    // tiles (fetched again: a proof of changed bytes does not verify).
    let judged = memory.judge(&TileNodes::new(src.as_mut(), cp.size()), &cp, &note)?;
    if let Some(refusal) = judged.refusal() {
        return Err(Error::NotHeld(format!("{}: {refusal}", src.prefix())).into());
    }
    let file = memory.path().to_path_buf();
    let written = memory.commit(&[&judged])?;
    let (who, unchecked) = (signed_by(&v), not_checked(&v));
    if json_out {
        print_json(&json!({
            "ok": true,
            "tiles": src.prefix(),
            "origin": cp.origin(),
            "tree_size": cp.size(),
            "root": hex::encode(cp.root()),
            "records": read.records,
            "files": read.files + 1,
            "signed_by": who,
            "keys": if vkeys.is_empty() { "frozen operator keys" } else { "--vkey" },
            "not_checked": unchecked,
            "auditor": judged.json(),
            "auditor_state": { "file": file.display().to_string(), "updated": written },
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "ok: {} size {} root {} signed by {}; {} records in {} files re-checked: every tile, entry bundle and record holds, and the chain links{}",
        cp.origin(),
        cp.size(),
        hex::encode(cp.root()),
        who.join(", "),
        read.records,
        read.files + 1,
        not_checked_text(&unchecked)
    )?;
    outln!("{}", judged.line())?;
    outln!("{}", crate::cli::auditor::committed_line(&file, written))?;
    Ok(ExitCode::SUCCESS)
}
