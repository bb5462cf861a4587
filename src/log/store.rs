//! Storage behind a small trait; the only module that knows sled (pinned
//! `=0.34.7`). Storage layout 2 (SPEC.md section 5).
//!
//! A ledger directory holds two sled databases and a witness file:
//!
//! - `sled/`, the log: tree `log` (first seq big-endian -> a segment of
//!   consecutive records, `segment.rs`) and tree `meta` (`head` -> seq
//!   big-endian || hash, the commit point; `layout` -> the layout version;
//!   `tail` -> the open tail's first seq and framed size; `pending` -> the
//!   seqs of a large append in flight). The segments tile seqs 0..=head: the
//!   sealed ones, then the open tail, one small segment per append, which
//!   an append seals into full segments once they would fill one, in the
//!   same transaction as the head. Few, large items: sled's open and scan
//!   cost per item, so a ledger of 1.5M records is about 15,000 items.
//! - `index/`, the idempotency index: tree `idempotency` (client key -> seq
//!   big-endian) and tree `meta` (`through` -> the last seq indexed). It is
//!   derived from the records and may lag the head (it is updated after the
//!   append's commit point and is caught up from the records before any
//!   lookup, by the ledger); it never leads it. A separate database, so that
//!   opening the ledger for an append that carries no key does not pay for
//!   the index (sled's open costs per page of everything it holds).
//! - `benchledger.head`, the head witness: two checksummed slots, the newer
//!   holding the head of the last acknowledged append, written and
//!   fdatasynced after the append is durable in sled and before it is
//!   acknowledged. sled's recovery treats a log message that fails its
//!   checksum as a torn write and drops it and everything after it; the
//!   witness turns such a loss of acknowledged records into damage instead
//!   of a shorter, valid-looking ledger.
//!
//! The store never decodes payloads and never rewrites or deletes an
//! acknowledged record: sealing rewrites the open tail's records into a
//! segment byte for byte (links re-checked first) in one transaction with
//! the head.
//!
//! Appends of up to `CHUNKED_APPEND_BYTES_MIN` bytes are one sled
//! transaction (segments, open-tail summary and head). A larger one (a whole
//! ingested file, an import chunk) seals the open tail on its own first,
//! then writes a durable `pending` marker naming its seqs, its segments
//! past the head with plain inserts, made durable, and one small
//! transaction that moves the head (CAS) and removes the marker, made
//! durable before the witness and the acknowledgement. A crash before the
//! commit point leaves the marker: the next open (under the writer lock)
//! removes what lies past the head, then the marker. Segments past the
//! head without a marker are damage (`torn_tail`), refused by every append.
//!
//! Layout 1 (one sled item per record, trees `records`, `meta`,
//! `idempotency` in `sled/`) is still read, so that `export` can migrate
//! such a ledger; every append to it is refused with how to migrate.

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use crate::error::{Error, Result};
use crate::log::chain::{self, Damage, DamageKind, Hash, Head, Sealed};
use crate::log::segment::{self, Tail};

/// The storage layout this build writes (SPEC.md section 5).
pub const LAYOUT_VERSION: u32 = 2;
/// The log's sled database inside the ledger directory.
pub const STORE_DIR: &str = "sled";
/// The idempotency index's sled database inside the ledger directory.
pub const INDEX_DIR: &str = "index";
/// Where the index is created before it is renamed to `INDEX_DIR`.
const INDEX_CREATING_DIR: &str = "index.creating";
/// The head witness file inside the ledger directory.
pub const WITNESS_FILE: &str = "benchledger.head";

const HEAD_KEY: &[u8] = b"head";
const LAYOUT_KEY: &[u8] = b"layout";
const TAIL_KEY: &[u8] = b"tail";
/// `meta` key of an append in flight: first seq || last seq (big-endian).
const PENDING_KEY: &[u8] = b"pending";
/// Index `meta` key: the last seq whose key is indexed.
const THROUGH_KEY: &[u8] = b"through";
const LOG_TREE: &str = "log";
const META_TREE: &str = "meta";
const KEYS_TREE: &str = "idempotency";
/// Layout 1's tree of one record per item.
const LEGACY_RECORDS_TREE: &str = "records";
/// sled 0.34.7's log file inside its directory (`Config::path/db`).
const SLED_LOG_FILE: &str = "db";
/// sled 0.34.7's directory of pages stored as files of their own.
const SLED_BLOB_DIR: &str = "blobs";
/// sled 0.34.7's persisted configuration file.
const SLED_CONF_FILE: &str = "conf";
/// What sled 0.34.7 writes to `conf` for the configuration below (512 KiB
/// log segments, no compression, format 0.34), then its CRC-32 (IEEE,
/// little-endian). sled only warns when the CRC fails and reads a torn
/// file as absent, so the store compares the whole file before opening.
const SLED_CONF_BYTES: &[u8] =
    b"segment_size: 524288\nuse_compression: false\nversion: 0.34\n\x76\x19\x51\xc1";

/// Appends of more stored bytes than this are written in chunks with the
/// head as the commit point (see the module doc); smaller ones in one
/// transaction.
pub const CHUNKED_APPEND_BYTES_MIN: usize = 4 * 1024 * 1024;

/// sled's page cache, in bytes (sled's default is 1 GiB). The ledger reads
/// sequentially and verifies what it reads; a small cache bounds memory.
pub const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// One stored (key, value) pair, as read.
pub type RawPair = (Bytes, Bytes);

/// Stored bytes as the store hands them out, without a copy (sled's own
/// reference-counted buffer, kept opaque so that nothing outside this
/// module names sled).
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(sled::IVec);

impl Bytes {
    /// The bytes at `range`, sharing the buffer. Programmer error (panics)
    /// when the range is out of bounds.
    pub fn slice(&self, range: Range<usize>) -> Bytes {
        Bytes(self.0.subslice(range.start, range.len()))
    }

    /// A copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> Bytes {
        Bytes(sled::IVec::from(bytes))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({})", hex::encode(&self.0))
    }
}

/// One item of the log as stored: a segment (layout 2) or one record's
/// stored value (layout 1), with the seq it starts at (its key).
#[derive(Debug, Clone)]
pub struct Item {
    /// The stored key: the first seq, or raw bytes when the key is not 8
    /// bytes long (damage the walk reports).
    pub key: Bytes,
    /// The stored value.
    pub bytes: Bytes,
    /// True for a segment, false for a single stored value (layout 1).
    pub framed: bool,
}

impl Item {
    /// The first seq, when the key is one.
    pub fn first(&self) -> Option<u64> {
        <[u8; 8]>::try_from(&self.key[..])
            .ok()
            .map(u64::from_be_bytes)
    }
}

/// The storage operations the ledger needs, and nothing more.
pub trait Store {
    /// The stored head, raw (verification parses and checks it).
    fn head_raw(&self) -> Result<Option<Vec<u8>>>;

    /// The stored value at `seq`, raw. Framing damage of the segment that
    /// holds it is an `Error::Damage`.
    fn value(&self, seq: u64) -> Result<Option<Vec<u8>>>;

    /// The stored items in seq order, from the one that holds `from`.
    fn items(&self, from: u64) -> Box<dyn Iterator<Item = Result<Item>> + '_>;

    /// Stored (seq, value) pairs from `from` on, in seq order: each record
    /// of each item. Framing damage ends the scan with an `Error::Damage`.
    fn scan(&self, from: u64) -> Box<dyn Iterator<Item = Result<RawPair>> + '_> {
        Box::new(self.items(from).flat_map(move |item| pairs_of(item, from)))
    }

    /// The seq recorded for a client idempotency key. The caller made the
    /// index current first (`SledStore::index_through`, `index_add`).
    fn idempotency_seq(&self, key: &str) -> Result<Option<u64>>;

    /// Every (idempotency key, seq) pair of the index, raw.
    fn idempotency_scan(&self) -> Box<dyn Iterator<Item = Result<RawPair>> + '_>;

    /// Appends `batch` (consecutive seqs after `expected`) if and only if the
    /// stored head is still `expected`; the records and the new head move
    /// together, and `index` (the batch's idempotency keys) follows. Returns
    /// only after the write is durable and witnessed.
    fn append(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
    ) -> Result<Head>;
}

/// The items of the log in key order, each found by `get` at the seq after
/// the one before (the segments tile the seqs), falling back to a range
/// step where there is no item at that seq (a gap, which the walk reports,
/// or the end). Not a sled iterator: sled 0.34's iterator clones every node
/// it passes and, with values of kilobytes, keeps most of what it read
/// alive (measured: 770 MiB after scanning 1 GB of 7 KB values, against
/// 146 MiB through `get`).
struct ItemWalk<'a> {
    log: &'a sled::Tree,
    /// The key to look up next (`None`: done).
    next: Option<Vec<u8>>,
    framed: bool,
    /// The first step looks the start key up by range (it is the item that
    /// holds the first seq wanted, or the first after it).
    first: bool,
}

impl Iterator for ItemWalk<'_> {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        let key = self.next.take()?;
        let found = if self.first {
            self.first = false;
            self.log.range(key.as_slice()..).next().transpose()
        } else {
            match self.log.get(&key) {
                Ok(Some(v)) => Ok(Some((sled::IVec::from(key.as_slice()), v))),
                Ok(None) => self.log.range(key.as_slice()..).next().transpose(),
                Err(e) => Err(e),
            }
        };
        let (k, v) = match found {
            Ok(Some(kv)) => kv,
            Ok(None) => return None,
            Err(e) => return Some(Err(sled_err("read the log", seq_of(&key), e))),
        };
        // The item after: at the seq after this item's records (its count,
        // when it has one), else the next key in order.
        let count = if self.framed {
            v.get(..segment::COUNT_BYTES)
                .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as u64)
                .filter(|c| *c > 0)
        } else {
            Some(1)
        };
        self.next = match (seq_of(&k), count) {
            (Some(first), Some(c)) => first.checked_add(c).map(|n| n.to_be_bytes().to_vec()),
            _ => {
                let mut after = k.to_vec();
                after.push(0);
                Some(after)
            }
        };
        Some(Ok(Item {
            key: Bytes(k),
            bytes: Bytes(v),
            framed: self.framed,
        }))
    }
}

/// The records of one item as (seq key, value) pairs from `from`.
fn pairs_of(item: Result<Item>, from: u64) -> Vec<Result<RawPair>> {
    let item = match item {
        Ok(i) => i,
        Err(e) => return vec![Err(e)],
    };
    let Some(first) = item.first() else {
        return vec![Ok((item.key.clone(), item.bytes.clone()))];
    };
    if !item.framed {
        return vec![Ok((item.key.clone(), item.bytes.clone()))];
    }
    let (spans, damage) = segment::frames(first, &item.bytes);
    let mut out: Vec<Result<RawPair>> = spans
        .into_iter()
        .enumerate()
        .map(|(n, r)| (first + n as u64, r))
        .filter(|(seq, _)| *seq >= from)
        .map(|(seq, r)| Ok((Bytes::copy_of(&seq.to_be_bytes()), item.bytes.slice(r))))
        .collect();
    if let Some(d) = damage {
        out.push(Err(Error::Damage(d.to_string())));
    }
    out
}

/// Whether a ledger directory holds a store.
pub fn exists(dir: &Path) -> bool {
    dir.join(STORE_DIR).exists()
}

// ---------------------------------------------------------------------------
// sled errors

/// Maps a sled error: the environment's I/O failures (no space, no
/// permission, a held lock, ...) stay `Error::Io` (exit 4) with their kind;
/// everything that says stored bytes cannot be read (sled's corruption
/// reports, an unexpected end of file, invalid data, an unreadable device
/// block, an unparsable configuration) is damage of kind
/// `storage_unreadable` (exit 1), naming `seq` when one is known.
fn sled_err(context: &str, seq: Option<u64>, e: sled::Error) -> Error {
    let at = seq.map_or(String::new(), |s| format!("seq {s}: "));
    match e {
        sled::Error::Io(io) if crate::error::is_environment(&io) || is_lock_message(&io) => {
            Error::io(context.to_string(), io)
        }
        sled::Error::Io(io) => Error::Damage(format!(
            "{at}{}: {context}: the store cannot read its files: {io}; run verify",
            DamageKind::StorageUnreadable
        )),
        sled::Error::Corruption { at: pos, .. } => Error::Damage(format!(
            "{at}{}: {context}: sled reports corruption{}; run verify",
            DamageKind::StorageUnreadable,
            pos.map_or(String::new(), |p| format!(" at {p:?}"))
        )),
        other => Error::Damage(format!(
            "{at}{}: {context}: {other}; run verify",
            DamageKind::StorageUnreadable
        )),
    }
}

/// sled reports its own file lock held by another handle as an `Other`
/// I/O error with this message.
fn is_lock_message(io: &std::io::Error) -> bool {
    io.to_string().contains("could not acquire lock")
}

/// Whether sled refused to open because another handle holds its file lock.
fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock
        || is_lock_message(io))
}

// ---------------------------------------------------------------------------
// sled's own panics on damaged files

thread_local! {
    /// Set while this thread runs sled's recovery: a panic there is damage
    /// reported by `open_sled`, not a crash to print.
    static IN_SLED_OPEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: make the next sled open on this thread panic the way sled's
    /// recovery does on a truncated log.
    #[cfg(test)]
    pub(super) static PANIC_IN_SLED_OPEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that stays quiet for a panic inside sled's
/// open on this thread and hands every other panic to the hook before it.
fn install_quiet_open_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_SLED_OPEN.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
}

/// sled's open of `path`. sled 0.34.7 indexes its segment table by offsets
/// read from its snapshot without checking them against the log file's
/// length, so a truncated or damaged log makes its recovery panic (an index
/// out of bounds in `pagecache/segment.rs`): that panic is damage of kind
/// `storage_unreadable` (exit 1), never a crash.
fn open_sled(path: &Path) -> Result<sled::Result<sled::Db>> {
    install_quiet_open_hook();
    IN_SLED_OPEN.with(|f| f.set(true));
    let opened = std::panic::catch_unwind(|| {
        #[cfg(test)]
        if PANIC_IN_SLED_OPEN.with(|p| p.replace(false)) {
            let segments: Vec<u8> = vec![0; 4];
            let _ = segments[std::hint::black_box(10)];
        }
        sled::Config::new()
            .path(path)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(SLED_CACHE_BYTES)
            .open()
    });
    IN_SLED_OPEN.with(|f| f.set(false));
    opened.map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Error::Damage(format!(
            "{}: open {}: sled cannot recover its files ({why}); run verify",
            DamageKind::StorageUnreadable,
            path.display()
        ))
    })
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |e| Error::io(context, e)
}

// ---------------------------------------------------------------------------
// One sled database and its files

/// One sled database: its handle and the files `durable` fsyncs.
struct Sled {
    db: sled::Db,
    /// sled's log file, fsynced after each flush that makes an append or
    /// its marker durable.
    log: File,
    /// sled's directory.
    path: PathBuf,
    /// The newest blob file (by lsn) made durable.
    blobs_synced: Mutex<Option<i64>>,
}

impl Sled {
    /// Opens (or creates) the sled database in `path`. The caller holds the
    /// ledger's lock; sled takes its own exclusive file lock as well.
    fn open(path: &Path) -> Result<Sled> {
        let ctx = format!("open {}", path.display());
        discard_interrupted_snapshots(path)?;
        check_conf(path)?;
        let created = !path.join(SLED_LOG_FILE).exists();
        // The ledger lock is already ours; sled's own file lock may still be
        // held for a few milliseconds by the background thread of a process
        // that just dropped its ledger. Wait that out, boundedly.
        let started = std::time::Instant::now();
        let wait = std::time::Duration::from_millis(crate::limits::SLED_LOCK_WAIT_MS_MAX);
        let db = loop {
            match open_sled(path)? {
                Ok(db) => break db,
                Err(e) if is_lock_error(&e) && started.elapsed() < wait => {
                    std::thread::sleep(std::time::Duration::from_millis(
                        crate::limits::LOCK_POLL_MS,
                    ));
                }
                Err(e) => return Err(sled_err(&ctx, None, e)),
            }
        };
        let log = File::open(path.join(SLED_LOG_FILE)).map_err(|e| {
            if crate::error::is_environment(&e) {
                Error::io(ctx.clone(), e)
            } else {
                Error::Damage(format!(
                    "{}: {ctx}: sled's log file cannot be opened: {e}",
                    DamageKind::StorageUnreadable
                ))
            }
        })?;
        if created {
            sync_created(path)?;
        } else {
            // sled's recovery wrote a new snapshot and renamed it into
            // place (and removed the old one) without an fsync of the
            // directory: make the rename durable before anything relies on
            // the new snapshot (POSIX; ext4's journal would commit it at the
            // next fsync of anything).
            sync_dir(path)?;
        }
        Ok(Sled {
            log,
            path: path.to_path_buf(),
            // Blobs already there were made durable by the append that
            // acknowledged them (or belong to none).
            blobs_synced: Mutex::new(newest_blob(&path.join(SLED_BLOB_DIR))),
            db,
        })
    }

    fn tree(&self, name: &str) -> Result<sled::Tree> {
        self.db
            .open_tree(name)
            .map_err(|e| sled_err(&format!("open tree {name}"), None, e))
    }

    /// Makes everything written so far durable: sled's `flush` (its log
    /// buffers written out), then `fsync` of sled's log file. On Linux,
    /// sled 0.34.7's flush ends in `sync_file_range`, which neither flushes
    /// the device's write cache nor the file's metadata, so on its own it
    /// survives a process crash but not a power loss; the fsync makes an
    /// acknowledged append survive both.
    ///
    /// sled writes a page too large for its log (over a quarter segment) to
    /// its own file under `blobs/`, named by its log sequence number, and
    /// never fsyncs it: the blob files past the last one made durable, and
    /// the directory, are fsynced too.
    fn durable(&self) -> Result<()> {
        self.db.flush().map_err(|e| sled_err("flush", None, e))?;
        self.log
            .sync_all()
            .map_err(io_err(format!("fsync {SLED_LOG_FILE}")))?;
        let dir = self.path.join(SLED_BLOB_DIR);
        let mut synced = self.blobs_synced.lock().unwrap_or_else(|p| p.into_inner());
        let io = |e: std::io::Error| Error::io(format!("fsync {}", dir.display()), e);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        };
        let mut newest = *synced;
        let mut any = false;
        for e in entries {
            let e = e.map_err(io)?;
            let lsn = e.file_name().to_str().and_then(|n| n.parse::<i64>().ok());
            if lsn.is_none_or(|l| Some(l) > *synced) {
                match File::open(e.path()).and_then(|f| f.sync_all()) {
                    // sled removes blobs of superseded pages on its own
                    // threads: one gone since the listing needs no fsync.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    r => r.map_err(io)?,
                }
                newest = newest.max(lsn);
                any = true;
            }
        }
        if any {
            sync_dir(&dir)?;
            *synced = newest;
        }
        Ok(())
    }
}

/// fsync of a directory (its entries made durable).
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io_err(format!("fsync {}", dir.display())))
}

/// Refuses a sled configuration file that is not exactly what this build's
/// configuration makes sled write: sled itself only warns when its CRC
/// fails, reads a file of 8 bytes or less as absent and then runs with
/// whatever segment size the damaged text names. A file that is a strict
/// prefix of those bytes (a creation torn by a crash or a power loss) is
/// written again whole: its content is a constant of this build.
fn check_conf(path: &Path) -> Result<()> {
    let conf = path.join(SLED_CONF_FILE);
    match std::fs::read(&conf) {
        Ok(b) if b == SLED_CONF_BYTES => Ok(()),
        Ok(b) if SLED_CONF_BYTES.starts_with(&b) => {
            tracing::warn!(
                "{} holds {} of the {} bytes of its sled configuration (a torn creation); writing it again",
                conf.display(),
                b.len(),
                SLED_CONF_BYTES.len()
            );
            let ctx = format!("write {}", conf.display());
            std::fs::write(&conf, SLED_CONF_BYTES).map_err(io_err(ctx.clone()))?;
            File::open(&conf)
                .and_then(|f| f.sync_all())
                .map_err(io_err(ctx))
        }
        Ok(b) => Err(Error::Damage(format!(
            "{}: {} is not the sled configuration this build writes ({} bytes); run verify",
            DamageKind::StorageUnreadable,
            conf.display(),
            b.len()
        ))),
        // A new database (no log yet) gets its configuration from sled.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound && !path.join(SLED_LOG_FILE).exists() =>
        {
            Ok(())
        }
        Err(e) if crate::error::is_environment(&e) => {
            Err(Error::io(format!("read {}", conf.display()), e))
        }
        Err(e) => Err(Error::Damage(format!(
            "{}: {} cannot be read: {e}; run verify",
            DamageKind::StorageUnreadable,
            conf.display()
        ))),
    }
}

/// Makes a database sled just created durable with its directory entries:
/// sled writes its configuration and log file without an fsync and never
/// fsyncs a directory.
fn sync_created(path: &Path) -> Result<()> {
    for file in [SLED_CONF_FILE, SLED_LOG_FILE] {
        let p = path.join(file);
        File::open(&p)
            .and_then(|f| f.sync_all())
            .map_err(io_err(format!("fsync {}", p.display())))?;
    }
    let blobs = path.join(SLED_BLOB_DIR);
    if blobs.exists() {
        sync_dir(&blobs)?;
    }
    sync_dir(path)?;
    match path.parent() {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// The newest blob file's lsn in `dir`, if any.
fn newest_blob(dir: &Path) -> Option<i64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .max()
}

/// Removes `snap.*.generating` files left by a process killed while sled was
/// writing a recovery snapshot.
///
/// sled 0.34.7 writes a snapshot during `open` (recovery) to
/// `snap.<lsn>.generating`, syncs it and renames it to `snap.<lsn>`; old
/// snapshots are removed only after the rename. But its snapshot lookup
/// lists `.generating` files too and reads the last in sort order, so a
/// SIGKILL during that write makes every later `open` fail with
/// "Read corrupted data" (found by the kill test; upstream issues #1527 and
/// #1533). A `.generating` file is by construction an incomplete snapshot:
/// removing it makes sled recover from the previous complete snapshot and
/// the log, exactly as if the process had died a moment earlier. The chain
/// is verified after every open anyway.
fn discard_interrupted_snapshots(path: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err(format!("read {}", path.display())))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            tracing::warn!("removing interrupted sled snapshot {name} (left by a killed process)");
            std::fs::remove_file(entry.path())
                .map_err(io_err(format!("remove {}", entry.path().display())))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The head witness

/// Bytes of one witness slot: magic (4), version (1), has-head flag (1),
/// reserved zeros (2), seq big-endian (8), hash (32), checksum (16).
const WITNESS_SLOT_BYTES: usize = 64;
const WITNESS_MAGIC: &[u8; 4] = b"BLHW";
const WITNESS_VERSION: u8 = 1;
/// BLAKE3 derive_key context of a slot's checksum (its first 16 bytes).
const WITNESS_CONTEXT: &str = "benchledger v1 head witness";
const WITNESS_BODY_BYTES: usize = 48;

/// A witness slot's bytes.
fn witness_slot(head: Option<Head>) -> [u8; WITNESS_SLOT_BYTES] {
    let mut b = [0u8; WITNESS_SLOT_BYTES];
    b[..4].copy_from_slice(WITNESS_MAGIC);
    b[4] = WITNESS_VERSION;
    if let Some(h) = head {
        b[5] = 1;
        b[8..16].copy_from_slice(&h.seq.to_be_bytes());
        b[16..48].copy_from_slice(&h.hash);
    }
    let sum = blake3::Hasher::new_derive_key(WITNESS_CONTEXT)
        .update(&b[..WITNESS_BODY_BYTES])
        .finalize();
    b[WITNESS_BODY_BYTES..].copy_from_slice(&sum.as_bytes()[..16]);
    b
}

/// A slot's head: `None` when the slot is not valid (torn, damaged,
/// absent), `Some(None)` when it is valid and names no head yet.
fn parse_witness_slot(b: &[u8]) -> Option<Option<Head>> {
    if b.len() != WITNESS_SLOT_BYTES || b[..4] != WITNESS_MAGIC[..] || b[4] != WITNESS_VERSION {
        return None;
    }
    let sum = blake3::Hasher::new_derive_key(WITNESS_CONTEXT)
        .update(&b[..WITNESS_BODY_BYTES])
        .finalize();
    if b[WITNESS_BODY_BYTES..] != sum.as_bytes()[..16] || b[6..8] != [0, 0] {
        return None;
    }
    match b[5] {
        0 if b[8..48].iter().all(|x| *x == 0) => Some(None),
        1 => Head::from_bytes(&b[8..48]).map(Some),
        _ => None,
    }
}

/// The raw bytes of a ledger directory's head witness, read without any
/// lock: they change with every acknowledged append, so a long-lived
/// reader (`run`, RUN-7) re-reads the log only when they changed. A hint,
/// never trusted: what is then read goes through the verified walk.
pub fn witness_stamp(dir: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(dir.join(WITNESS_FILE)).ok()?;
    let mut buf = Vec::with_capacity(2 * WITNESS_SLOT_BYTES);
    f.take(2 * WITNESS_SLOT_BYTES as u64)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// What the witness file says.
#[derive(Debug, Clone)]
enum Witnessed {
    /// The newest valid slot (and which one it is): the head of the last
    /// acknowledged append, if any.
    Head { head: Option<Head>, slot: usize },
    /// No valid slot: damage.
    Unreadable(String),
}

struct Witness {
    file: Option<File>,
    state: Witnessed,
}

impl Witness {
    /// Creates the witness of a new ledger (both slots: no head yet),
    /// durable with its directory entry.
    fn create(dir: &Path) -> Result<Witness> {
        let path = dir.join(WITNESS_FILE);
        let ctx = format!("write {}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io_err(ctx.clone()))?;
        let mut both = witness_slot(None).to_vec();
        both.extend_from_slice(&witness_slot(None));
        write_at(&file, &both, 0).map_err(io_err(ctx.clone()))?;
        file.sync_all().map_err(io_err(ctx))?;
        sync_dir(dir)?;
        Ok(Witness {
            file: Some(file),
            state: Witnessed::Head {
                head: None,
                slot: 0,
            },
        })
    }

    /// Reads the witness of an existing ledger.
    fn open(dir: &Path) -> Result<Witness> {
        let path = dir.join(WITNESS_FILE);
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if crate::error::is_environment(&e) => {
                return Err(Error::io(format!("open {}", path.display()), e))
            }
            Err(e) => {
                return Ok(Witness {
                    file: None,
                    state: Witnessed::Unreadable(format!("{WITNESS_FILE} cannot be opened: {e}")),
                })
            }
        };
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut buf)
            .map_err(io_err(format!("read {}", path.display())))?;
        let slots: Vec<Option<Option<Head>>> = (0..2)
            .map(|i| {
                buf.get(i * WITNESS_SLOT_BYTES..(i + 1) * WITNESS_SLOT_BYTES)
                    .and_then(parse_witness_slot)
            })
            .collect();
        let newest = slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|h| (i, h)))
            .max_by_key(|(_, h)| h.map(|h| h.seq));
        let state = match newest {
            Some((slot, head)) => Witnessed::Head { head, slot },
            None => Witnessed::Unreadable(format!(
                "{WITNESS_FILE} holds no valid slot ({} bytes)",
                buf.len()
            )),
        };
        Ok(Witness {
            file: Some(file),
            state,
        })
    }

    /// Records `head` as acknowledged: writes the slot that does not hold
    /// the newest valid head (a torn write leaves that one) and fdatasyncs.
    fn record(&mut self, head: Head) -> Result<()> {
        let slot = match self.state {
            Witnessed::Head { slot, .. } => 1 - slot,
            Witnessed::Unreadable(ref why) => {
                return Err(Error::Damage(format!(
                    "{}: {why}; run verify",
                    DamageKind::StorageUnreadable
                )))
            }
        };
        let file = self.file.as_ref().expect("a readable witness has its file");
        let ctx = || format!("write {WITNESS_FILE}");
        write_at(
            file,
            &witness_slot(Some(head)),
            (slot * WITNESS_SLOT_BYTES) as u64,
        )
        .map_err(io_err(ctx()))?;
        file.sync_data().map_err(io_err(ctx()))?;
        self.state = Witnessed::Head {
            head: Some(head),
            slot,
        };
        Ok(())
    }
}

fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

// ---------------------------------------------------------------------------
// The idempotency index (its own sled database)

struct Index {
    sled: Sled,
    keys: sled::Tree,
    meta: sled::Tree,
    /// The last seq indexed (`None`: nothing yet).
    through: Option<u64>,
}

impl Index {
    /// Opens the index of the ledger in `dir`, creating it when there is
    /// none: in `index.creating/`, made durable and then renamed into place,
    /// so that a crash or a power loss while it is created leaves no index
    /// (created again, then caught up from the records), never half of one.
    fn open(dir: &Path) -> Result<Index> {
        let path = dir.join(INDEX_DIR);
        let creating = dir.join(INDEX_CREATING_DIR);
        if creating.exists() {
            tracing::warn!("removing {INDEX_CREATING_DIR} (an index creation was interrupted)");
            std::fs::remove_dir_all(&creating)
                .map_err(io_err(format!("remove {}", creating.display())))?;
        }
        if !path.exists() {
            let fresh = Sled::open(&creating)?;
            fresh.tree(KEYS_TREE)?;
            fresh.tree(META_TREE)?;
            fresh.durable()?;
            drop(fresh);
            // sled's file lock may outlive the handle by a moment (its
            // threads); the rename does not care.
            std::fs::rename(&creating, &path).map_err(io_err(format!(
                "rename {} to {}",
                creating.display(),
                path.display()
            )))?;
            sync_dir(dir)?;
        }
        let sled = Sled::open(&path)?;
        let keys = sled.tree(KEYS_TREE)?;
        let meta = sled.tree(META_TREE)?;
        let through = match meta
            .get(THROUGH_KEY)
            .map_err(|e| sled_err("read the index", None, e))?
        {
            None => None,
            Some(v) => Some(seq_of(&v).ok_or_else(|| {
                Error::Damage(format!(
                    "{}: the index's last indexed seq is {} bytes, not 8; run verify",
                    DamageKind::IndexMismatch,
                    v.len()
                ))
            })?),
        };
        Ok(Index {
            sled,
            keys,
            meta,
            through,
        })
    }

    /// Adds `entries` and moves `through`, in one batch (the index is a
    /// cache: not made durable here).
    fn add(&mut self, entries: &[(String, u64)], through: u64) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, seq) in entries {
            b.insert(k.as_bytes(), &seq.to_be_bytes());
        }
        self.keys
            .apply_batch(b)
            .map_err(|e| sled_err("write the index", None, e))?;
        self.meta
            .insert(THROUGH_KEY, &through.to_be_bytes())
            .map_err(|e| sled_err("write the index", None, e))?;
        self.through = Some(through);
        Ok(())
    }
}

fn seq_of(v: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(v).ok().map(u64::from_be_bytes)
}

// ---------------------------------------------------------------------------
// The store

/// The storage layout of an opened ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Layout 1: one sled item per record. Read only.
    Records,
    /// Layout 2: segments, open tail, separate index, head witness.
    Segments,
}

/// The sled store of one ledger directory.
pub struct SledStore {
    dir: PathBuf,
    main: Sled,
    /// Layout 2: the segments; layout 1: the records.
    log: sled::Tree,
    meta: sled::Tree,
    layout: Layout,
    /// Layout 1's index tree (inside `sled/`).
    legacy_keys: Option<sled::Tree>,
    /// Layout 2's index, opened on first use.
    index: Mutex<Option<Index>>,
    witness: Mutex<Witness>,
    /// Serializes appends of this process (a chunked append writes past the
    /// head before its commit point).
    append_lock: Mutex<()>,
    /// Last field, so it drops after every sled handle above.
    _released: LocksReleased,
}

/// Dropping a store returns only once sled's file locks are free again, so
/// the same process can open the ledger right after (sled's worker threads
/// may hold its lock a little past the handle's drop; under load, longer
/// than `SLED_LOCK_WAIT_MS_MAX`). Bounded by `SLED_RELEASE_WAIT_MS_MAX`.
struct LocksReleased {
    dir: PathBuf,
}

impl Drop for LocksReleased {
    fn drop(&mut self) {
        let wait = std::time::Duration::from_millis(crate::limits::SLED_RELEASE_WAIT_MS_MAX);
        wait_released(&self.dir, wait);
    }
}

/// Waits until sled's file locks in ledger `dir` (main store and index) can
/// be taken, up to `wait`; whether they could.
fn wait_released(dir: &Path, wait: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    for sub in [STORE_DIR, INDEX_DIR] {
        let Ok(file) = File::open(dir.join(sub).join(SLED_LOG_FILE)) else {
            continue;
        };
        while let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
            if started.elapsed() >= wait {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(
                crate::limits::LOCK_POLL_MS,
            ));
        }
        // Dropping `file` releases the lock just taken.
    }
    true
}

/// Why a transaction was aborted.
enum Abort {
    HeadMoved { found: Option<Head> },
    Pending,
    Marker,
}

type TxResult = std::result::Result<(), TransactionError<Abort>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SledStore {
    /// Creates the store of a new ledger in `dir` (which holds none): the
    /// head witness, then `sled/` with the layout version, both durable.
    pub fn create(dir: &Path) -> Result<SledStore> {
        let witness = Witness::create(dir)?;
        let main = Sled::open(&dir.join(STORE_DIR))?;
        let meta = main.tree(META_TREE)?;
        meta.insert(LAYOUT_KEY, &LAYOUT_VERSION.to_be_bytes())
            .map_err(|e| sled_err("write the layout version", None, e))?;
        main.durable()?;
        sync_dir(&main.path)?;
        sync_dir(dir)?;
        let store = SledStore {
            dir: dir.to_path_buf(),
            log: main.tree(LOG_TREE)?,
            meta,
            main,
            layout: Layout::Segments,
            legacy_keys: None,
            index: Mutex::new(None),
            witness: Mutex::new(witness),
            append_lock: Mutex::new(()),
            _released: LocksReleased {
                dir: dir.to_path_buf(),
            },
        };
        Ok(store)
    }

    /// Opens the store of the existing ledger in `dir`. The caller holds the
    /// ledger's lock.
    pub fn open(dir: &Path) -> Result<SledStore> {
        let main = Sled::open(&dir.join(STORE_DIR))?;
        let meta = main.tree(META_TREE)?;
        let layout = match meta
            .get(LAYOUT_KEY)
            .map_err(|e| sled_err("read the layout version", None, e))?
        {
            Some(v) if v.as_ref() == LAYOUT_VERSION.to_be_bytes() => Layout::Segments,
            Some(v) => {
                return Err(Error::Damage(format!(
                    "{}: the store names storage layout {} (this build reads 1 and {LAYOUT_VERSION}); run verify",
                    DamageKind::StorageUnreadable,
                    hex::encode(&v)
                )))
            }
            None if main
                .db
                .tree_names()
                .iter()
                .any(|n| n.as_ref() == LEGACY_RECORDS_TREE.as_bytes()) =>
            {
                Layout::Records
            }
            None => Layout::Segments,
        };
        let (log, legacy_keys, witness) = match layout {
            Layout::Records => (
                main.tree(LEGACY_RECORDS_TREE)?,
                Some(main.tree(KEYS_TREE)?),
                Witness {
                    file: None,
                    state: Witnessed::Head {
                        head: None,
                        slot: 0,
                    },
                },
            ),
            Layout::Segments => (main.tree(LOG_TREE)?, None, Witness::open(dir)?),
        };
        let store = SledStore {
            dir: dir.to_path_buf(),
            main,
            log,
            meta,
            layout,
            legacy_keys,
            index: Mutex::new(None),
            witness: Mutex::new(witness),
            append_lock: Mutex::new(()),
            _released: LocksReleased {
                dir: dir.to_path_buf(),
            },
        };
        if layout == Layout::Segments {
            store.discard_pending()?;
        }
        Ok(store)
    }

    /// The storage layout of this ledger.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Checks the stored head against the head witness: the store must hold
    /// every acknowledged record. `None` when it does (or the layout has no
    /// witness).
    pub fn witness_damage(&self, stored: Option<Head>) -> Option<Damage> {
        let state = lock(&self.witness).state.clone();
        let witnessed = match state {
            Witnessed::Unreadable(why) => {
                let seq = stored.map_or(0, |h| h.seq);
                return Some(Damage::new(seq, DamageKind::StorageUnreadable, why));
            }
            Witnessed::Head { head: None, .. } => return None,
            Witnessed::Head { head: Some(w), .. } => w,
        };
        let lost = |have: String| {
            Some(Damage::new(
                stored.map_or(0, |h| h.seq + 1),
                DamageKind::Truncated,
                format!(
                    "the store ends at {have} but seq {} was acknowledged ({WITNESS_FILE}): acknowledged records were lost",
                    witnessed.seq
                ),
            ))
        };
        let Some(stored) = stored else {
            return lost("no head".into());
        };
        if stored.seq < witnessed.seq {
            return lost(format!("seq {}", stored.seq));
        }
        let hash = if stored.seq == witnessed.seq {
            Some(stored.hash)
        } else {
            self.value(witnessed.seq)
                .ok()
                .flatten()
                .and_then(|v| chain::split_value(&v).map(|(_, h, _)| h))
        };
        (hash != Some(witnessed.hash)).then(|| {
            Damage::new(
                witnessed.seq,
                DamageKind::HeadMismatch,
                format!(
                    "record {} is not the one acknowledged with hash {} ({WITNESS_FILE})",
                    witnessed.seq,
                    hex::encode(witnessed.hash)
                ),
            )
        })
    }

    /// Refuses to write to a layout-1 ledger, saying how to migrate.
    fn writable(&self) -> Result<()> {
        match self.layout {
            Layout::Segments => Ok(()),
            Layout::Records => Err(Error::input(format!(
                "{} uses storage layout 1 (one sled item per record), which this build reads but does not write (layout {LAYOUT_VERSION}); migrate it: `benchledger --ledger {} export --jsonl -o ledger.jsonl`, then `benchledger --ledger NEW_DIR import --jsonl ledger.jsonl` (byte-identical records, hashes and head), and use NEW_DIR",
                self.dir.display(),
                self.dir.display()
            ))),
        }
    }

    /// The open tail's first seq and size, from `meta` (derivable: verify
    /// checks it). `after_head` is the seq after the head.
    fn tail(&self, after_head: u64) -> Result<(u64, Tail)> {
        let raw = self
            .meta
            .get(TAIL_KEY)
            .map_err(|e| sled_err("read the open tail", None, e))?;
        match raw.as_deref().map(parse_tail) {
            None => Ok((after_head, Tail::default())),
            Some(Some((first, framed))) if first <= after_head => Ok((
                first,
                Tail {
                    records: (after_head - first) as usize,
                    framed_bytes: framed,
                },
            )),
            Some(_) => Err(Error::Damage(format!(
                "seq {after_head}: {}: the open tail summary in meta is malformed; run verify",
                DamageKind::IndexMismatch
            ))),
        }
    }

    /// Whether an append of values of lengths `lens` after `head` would seal
    /// the open tail (for the kill test, which counts kills during such
    /// appends).
    #[doc(hidden)]
    pub fn seals(&self, head: Head, lens: &[usize]) -> Result<bool> {
        let (_, tail) = self.tail(head.seq + 1)?;
        let framed: usize = lens.iter().map(|l| segment::LEN_BYTES + l).sum();
        let bytes: usize = lens.iter().map(|l| l - chain::VALUE_PREFIX_BYTES).sum();
        Ok(!lens.is_empty()
            && if bytes > CHUNKED_APPEND_BYTES_MIN {
                tail.records > 0
            } else {
                !tail.fits(lens.len(), framed)
            })
    }

    /// The open tail summary as stored, raw (verify parses and checks it).
    pub fn tail_raw(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .meta
            .get(TAIL_KEY)
            .map_err(|e| sled_err("read the open tail", None, e))?
            .map(|v| v.to_vec()))
    }
}

/// Parses a stored open-tail summary: (first seq, framed bytes).
pub fn parse_tail(b: &[u8]) -> Option<(u64, usize)> {
    let b = <[u8; 16]>::try_from(b).ok()?;
    let first = u64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
    let framed = u64::from_be_bytes(b[8..].try_into().expect("8 bytes"));
    usize::try_from(framed).ok().map(|f| (first, f))
}

fn tail_bytes(first: u64, framed: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&first.to_be_bytes());
    b[8..].copy_from_slice(&(framed as u64).to_be_bytes());
    b
}

// The idempotency index.
impl SledStore {
    /// Opens the index if needed and returns the last seq it covers (`None`:
    /// none yet). Layout 1's index is always current.
    pub fn index_through(&self, head: Option<Head>) -> Result<Option<u64>> {
        if self.layout == Layout::Records {
            return Ok(head.map(|h| h.seq));
        }
        let mut ix = lock(&self.index);
        if ix.is_none() {
            *ix = Some(Index::open(&self.dir)?);
        }
        Ok(ix.as_ref().expect("opened above").through)
    }

    /// Adds index entries for records already committed, up to `through`
    /// (the ledger's catch-up from the verified records).
    pub fn index_add(&self, entries: &[(String, u64)], through: u64) -> Result<()> {
        self.writable()?;
        let mut ix = lock(&self.index);
        let ix = ix.as_mut().expect("index_through opened the index");
        ix.add(entries, through)
    }

    fn keys_tree(&self) -> Result<sled::Tree> {
        if let Some(t) = &self.legacy_keys {
            return Ok(t.clone());
        }
        let mut ix = lock(&self.index);
        if ix.is_none() {
            *ix = Some(Index::open(&self.dir)?);
        }
        Ok(ix.as_ref().expect("opened above").keys.clone())
    }

    /// After a commit: the batch's keys and the new head, when the index is
    /// open and was current. An error here does not undo the append (it is
    /// durable and witnessed): the index is closed and caught up again from
    /// the records by the next lookup.
    fn index_after_commit(&self, expected: Option<Head>, index: &[(String, u64)], new_head: Head) {
        let mut ix = lock(&self.index);
        let Some(open) = ix.as_mut() else {
            assert!(
                index.is_empty(),
                "an append with keys makes the index current first"
            );
            return;
        };
        if open.through != expected.map(|h| h.seq) {
            assert!(
                index.is_empty(),
                "the index is current before keyed appends"
            );
            return;
        }
        if let Err(e) = open.add(index, new_head.seq) {
            tracing::warn!("the idempotency index could not be updated ({e:#}); it is caught up from the records when next needed");
            *ix = None;
        }
    }
}

impl Store for SledStore {
    fn head_raw(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .meta
            .get(HEAD_KEY)
            .map_err(|e| sled_err("read the head", None, e))?
            .map(|v| v.to_vec()))
    }

    fn value(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        let ctx = "read a record";
        if self.layout == Layout::Records {
            return Ok(self
                .log
                .get(seq.to_be_bytes())
                .map_err(|e| sled_err(ctx, Some(seq), e))?
                .map(|v| v.to_vec()));
        }
        let Some((k, v)) = self
            .log
            .range(..=seq.to_be_bytes())
            .next_back()
            .transpose()
            .map_err(|e| sled_err(ctx, Some(seq), e))?
        else {
            return Ok(None);
        };
        let Some(first) = seq_of(&k) else {
            return Ok(None);
        };
        let (spans, damage) = segment::frames(first, &v);
        match spans.get((seq - first) as usize) {
            Some(r) => Ok(Some(v[r.clone()].to_vec())),
            None => match damage {
                Some(d) if d.seq <= seq => Err(Error::Damage(format!("{d}; run verify"))),
                _ => Ok(None),
            },
        }
    }

    fn items(&self, from: u64) -> Box<dyn Iterator<Item = Result<Item>> + '_> {
        let framed = self.layout == Layout::Segments;
        let start = if framed {
            match self.log.range(..=from.to_be_bytes()).next_back() {
                Some(Ok((k, _))) => k.to_vec(),
                _ => from.to_be_bytes().to_vec(),
            }
        } else {
            from.to_be_bytes().to_vec()
        };
        Box::new(ItemWalk {
            log: &self.log,
            next: Some(start),
            framed,
            first: true,
        })
    }

    fn idempotency_seq(&self, key: &str) -> Result<Option<u64>> {
        let v = self
            .keys_tree()?
            .get(key.as_bytes())
            .map_err(|e| sled_err("read the idempotency index", None, e))?;
        match v {
            None => Ok(None),
            Some(v) => match seq_of(&v) {
                Some(s) => Ok(Some(s)),
                None => Err(Error::Damage(format!(
                    "{}: idempotency index entry for {key:?} is not a seq; run verify",
                    DamageKind::IndexMismatch
                ))),
            },
        }
    }

    fn idempotency_scan(&self) -> Box<dyn Iterator<Item = Result<RawPair>> + '_> {
        match self.keys_tree() {
            Err(e) => Box::new(std::iter::once(Err(e))),
            Ok(t) => Box::new(t.iter().map(|r| {
                r.map(|(k, v)| (Bytes(k), Bytes(v)))
                    .map_err(|e| sled_err("read the idempotency index", None, e))
            })),
        }
    }

    fn append(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
    ) -> Result<Head> {
        self.writable()?;
        let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
            return expected.ok_or_else(|| Error::input("an empty append to an empty ledger"));
        };
        // Programmer errors: the caller builds consecutive seqs after the head.
        assert_eq!(
            first.seq,
            expected.map_or(0, |h| h.seq + 1),
            "batch must start right after the head"
        );
        assert!(
            batch
                .windows(2)
                .all(|w| w[1].seq == w[0].seq + 1 && w[1].prev == w[0].hash),
            "batch must be linked"
        );
        assert!(
            expected.is_none_or(|h| first.prev == h.hash),
            "batch must link to the head"
        );
        let new_head = Head {
            seq: last.seq,
            hash: last.hash,
        };
        // One appender at a time in this process (other processes are kept
        // out by the ledger lock and sled's own).
        let _one = lock(&self.append_lock);
        self.check_nothing_past(expected)?;
        let bytes: usize = batch.iter().map(|s| s.bytes.len()).sum();
        if bytes > CHUNKED_APPEND_BYTES_MIN {
            self.append_chunked(expected, batch, new_head)?;
        } else {
            self.append_small(expected, batch, new_head)?;
        }
        lock(&self.witness).record(new_head)?;
        self.index_after_commit(expected, index, new_head);
        Ok(new_head)
    }
}

// Appends.
impl SledStore {
    /// Paired check before writing: nothing is stored past the head (else
    /// damage `torn_tail`) and no append is pending.
    fn check_nothing_past(&self, expected: Option<Head>) -> Result<()> {
        let after = expected.map_or(0, |h| h.seq + 1);
        let ctx = "check the log past the head";
        if self
            .meta
            .get(PENDING_KEY)
            .map_err(|e| sled_err(ctx, None, e))?
            .is_some()
        {
            return Err(pending());
        }
        if let Some(kv) = self.log.range(after.to_be_bytes()..).next() {
            let (k, _) = kv.map_err(|e| sled_err(ctx, Some(after), e))?;
            return Err(occupied(seq_of(&k).unwrap_or(after)));
        }
        // The item before may reach past the head too.
        if let Some(kv) = self.log.range(..after.to_be_bytes()).next_back() {
            let (k, v) = kv.map_err(|e| sled_err(ctx, Some(after), e))?;
            let first = seq_of(&k).unwrap_or(0);
            let (spans, _) = segment::frames(first, &v);
            if first + spans.len() as u64 > after {
                return Err(occupied(after));
            }
        }
        Ok(())
    }

    /// The open tail's records (stored values), read and re-linked: each
    /// value's link hash holds and each links to the one before, ending at
    /// the head (the paired check before they are rewritten into a
    /// segment).
    fn read_tail(&self, first: u64, head: Head) -> Result<(Vec<u8>, Vec<Bytes>)> {
        let mut keys = Vec::new();
        let mut values = Vec::new();
        let ctx = "read the open tail";
        for kv in self.log.range(first.to_be_bytes()..=head.seq.to_be_bytes()) {
            let (k, v) = kv.map_err(|e| sled_err(ctx, Some(first), e))?;
            let at = seq_of(&k).unwrap_or(u64::MAX);
            let (spans, damage) = segment::frames(at, &v);
            if let Some(d) = damage {
                return Err(Error::Damage(format!("{d}; run verify")));
            }
            keys.extend_from_slice(&k);
            values.extend(spans.into_iter().map(|r| Bytes(v.clone()).slice(r)));
        }
        let mut prev: Option<Hash> = None;
        for (n, v) in values.iter().enumerate() {
            let seq = first + n as u64;
            let linked = chain::split_value(v).filter(|(p, h, bytes)| {
                prev.is_none_or(|x| x == *p) && chain::link_hash(p, seq, bytes) == *h
            });
            prev = linked.map(|(_, h, _)| h);
            if linked.is_none() {
                return Err(Error::Damage(format!(
                    "seq {seq}: {}: a record of the open tail does not verify; run verify",
                    DamageKind::BadHash
                )));
            }
        }
        if values.len() as u64 != head.seq + 1 - first || prev != Some(head.hash) {
            return Err(Error::Damage(format!(
                "seq {first}: {}: the open tail does not end at the head; run verify",
                DamageKind::HeadMismatch
            )));
        }
        Ok((keys, values))
    }

    /// The segments of `values` (the tail's, then the batch's) cut as
    /// `counts`, keyed by their first seq.
    fn segments_of(first: u64, values: &[&[u8]], counts: &[usize]) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        for &n in counts {
            out.push((
                first + at as u64,
                segment::encode(values[at..at + n].iter().copied()),
            ));
            at += n;
        }
        out
    }

    /// An append in one transaction: the batch as one more open segment, or
    /// the open tail and the batch sealed into segments (`segment::plan`),
    /// with the tail summary and the head (CAS), then made durable.
    fn append_small(&self, expected: Option<Head>, batch: &[Sealed], new_head: Head) -> Result<()> {
        let after = expected.map_or(0, |h| h.seq + 1);
        let (tail_first, tail) = self.tail(after)?;
        let values: Vec<Vec<u8>> = batch.iter().map(Sealed::value).collect();
        let lens: Vec<usize> = values.iter().map(Vec::len).collect();
        let plan = segment::plan(tail, &lens);
        let (old_keys, merged) = match (plan.merges_tail, expected) {
            (true, Some(head)) => self.read_tail(tail_first, head)?,
            _ => (Vec::new(), Vec::new()),
        };
        let all: Vec<&[u8]> = merged
            .iter()
            .map(|b| &b[..])
            .chain(values.iter().map(|v| v.as_slice()))
            .collect();
        let first = if plan.merges_tail { tail_first } else { after };
        let segments = Self::segments_of(first, &all, &plan.counts);
        let new_tail = next_tail(&plan, &segments, &all, tail, tail_first, new_head);
        let result: TxResult = (&self.log, &self.meta).transaction(|(log, meta)| {
            check_head_in(meta, expected)?;
            for k in old_keys.chunks(8) {
                log.remove(k)?;
            }
            for (key, bytes) in &segments {
                log.insert(&key.to_be_bytes(), bytes.as_slice())?;
            }
            meta.insert(TAIL_KEY, &tail_bytes(new_tail.0, new_tail.1)[..])?;
            meta.insert(HEAD_KEY, &new_head.to_bytes()[..])?;
            Ok(())
        });
        tx_result(result, expected)?;
        self.main.durable()
    }

    /// A large append (see the module doc): the open tail sealed on its own,
    /// a durable marker, the segments past the head, durable, then the head
    /// (CAS) with the marker removed, durable.
    fn append_chunked(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        new_head: Head,
    ) -> Result<()> {
        let after = expected.map_or(0, |h| h.seq + 1);
        if let Some(head) = expected {
            self.seal_tail(head)?;
        }
        let mut marker = [0u8; 16];
        marker[..8].copy_from_slice(&after.to_be_bytes());
        marker[8..].copy_from_slice(&new_head.seq.to_be_bytes());
        let io = |e| sled_err("append", None, e);
        self.meta.insert(PENDING_KEY, &marker[..]).map_err(io)?;
        self.main.durable()?;
        let written = (|| -> Result<()> {
            let lens: Vec<usize> = batch
                .iter()
                .map(|s| s.bytes.len() + chain::VALUE_PREFIX_BYTES)
                .collect();
            let (counts, last_full) = segment::cut(0, 0, &lens);
            let mut at = 0usize;
            let mut last_first = after;
            for n in &counts {
                let values: Vec<Vec<u8>> = batch[at..at + n].iter().map(Sealed::value).collect();
                last_first = after + at as u64;
                // Plain inserts, not a transaction: the marker and the head
                // make the append atomic.
                self.log
                    .insert(
                        last_first.to_be_bytes(),
                        segment::encode(values.iter().map(|v| v.as_slice())),
                    )
                    .map_err(io)?;
                at += n;
            }
            // Every record is durable before the head names it.
            self.main.durable()?;
            let new_tail = if last_full {
                (new_head.seq + 1, 0)
            } else {
                let framed = lens[lens.len() - counts[counts.len() - 1]..]
                    .iter()
                    .map(|l| segment::LEN_BYTES + l)
                    .sum();
                (last_first, framed)
            };
            let result: TxResult = self.meta.transaction(|m| {
                check_head_in(m, expected).or_else(|e| match e {
                    ConflictableTransactionError::Abort(Abort::Pending) => Ok(()),
                    other => Err(other),
                })?;
                if m.get(PENDING_KEY)?.as_deref() != Some(&marker[..]) {
                    return Err(ConflictableTransactionError::Abort(Abort::Marker));
                }
                m.insert(TAIL_KEY, &tail_bytes(new_tail.0, new_tail.1)[..])?;
                m.insert(HEAD_KEY, &new_head.to_bytes()[..])?;
                m.remove(PENDING_KEY)?;
                Ok(())
            });
            tx_result(result, expected)
        })();
        if let Err(e) = written {
            // Nothing was acknowledged: take the partial write back now (the
            // next open would otherwise).
            if let Err(again) = self.discard_pending() {
                tracing::warn!("could not discard an interrupted append: {again:#}");
            }
            return Err(e);
        }
        self.main.durable()
    }

    /// Seals the open tail as it is (before a large append): its records
    /// rewritten into sealed segments in one transaction with the tail
    /// summary, the head unchanged (CAS). Content-preserving: a crash on
    /// either side of it leaves an equally valid store.
    fn seal_tail(&self, head: Head) -> Result<()> {
        let after = head.seq + 1;
        let (tail_first, tail) = self.tail(after)?;
        if tail.records == 0 {
            return Ok(());
        }
        let (old_keys, merged) = self.read_tail(tail_first, head)?;
        let all: Vec<&[u8]> = merged.iter().map(|b| &b[..]).collect();
        let lens: Vec<usize> = all.iter().map(|v| v.len()).collect();
        let (counts, _) = segment::cut(0, 0, &lens);
        let segments = Self::segments_of(tail_first, &all, &counts);
        let result: TxResult = (&self.log, &self.meta).transaction(|(log, meta)| {
            check_head_in(meta, Some(head))?;
            for k in old_keys.chunks(8) {
                log.remove(k)?;
            }
            for (key, bytes) in &segments {
                log.insert(&key.to_be_bytes(), bytes.as_slice())?;
            }
            meta.insert(TAIL_KEY, &tail_bytes(after, 0)[..])?;
            Ok(())
        });
        tx_result(result, Some(head))
    }

    /// Removes what an append interrupted before its commit point left past
    /// the head: every item from the first seq its `pending` marker names
    /// (never acknowledged: the head did not move), then the marker.
    fn discard_pending(&self) -> Result<()> {
        let io = |e| sled_err("discard an interrupted append", None, e);
        let Some(marker) = self.meta.get(PENDING_KEY).map_err(io)? else {
            return Ok(());
        };
        let (first, last) = match <[u8; 16]>::try_from(marker.as_ref()) {
            Ok(b) => (
                u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                u64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
            ),
            Err(_) => {
                return Err(Error::Damage(
                    "the marker of an interrupted append is malformed; run verify".into(),
                ))
            }
        };
        let head = self.head_raw()?.as_deref().and_then(Head::from_bytes);
        let after_head = head.map_or(0, |h| h.seq + 1);
        if after_head != first || last < first {
            return Err(Error::Damage(format!(
                "seq {first}: an interrupted append names seqs {first}..={last}, but the head is {}; run verify",
                head.map_or("none".to_string(), |h| h.seq.to_string())
            )));
        }
        tracing::warn!(
            "discarding seqs {first}..={last} of an append interrupted before its commit point (never acknowledged)"
        );
        let stale: Vec<sled::IVec> = self
            .log
            .range(first.to_be_bytes()..)
            .keys()
            .collect::<std::result::Result<_, _>>()
            .map_err(io)?;
        for k in stale {
            self.log.remove(k).map_err(io)?;
        }
        self.main.durable()?;
        self.meta.remove(PENDING_KEY).map_err(io)?;
        self.main.durable()?;
        Ok(())
    }
}

/// The open tail after an append planned as `plan`: (first seq, framed
/// bytes).
fn next_tail(
    plan: &segment::Plan,
    segments: &[(u64, Vec<u8>)],
    all: &[&[u8]],
    tail: Tail,
    tail_first: u64,
    new_head: Head,
) -> (u64, usize) {
    if !plan.last_open {
        return (new_head.seq + 1, 0);
    }
    let last_n = plan.counts[plan.counts.len() - 1];
    let framed: usize = all[all.len() - last_n..]
        .iter()
        .map(|v| segment::LEN_BYTES + v.len())
        .sum();
    if plan.merges_tail || tail.records == 0 {
        // The last segment written is the whole open tail.
        (segments[segments.len() - 1].0, framed)
    } else {
        // One more open segment after the tail's.
        (tail_first, tail.framed_bytes + framed)
    }
}

/// Inside a transaction: the stored head is `expected` and no append is
/// pending.
fn check_head_in(
    meta: &sled::transaction::TransactionalTree,
    expected: Option<Head>,
) -> std::result::Result<(), ConflictableTransactionError<Abort>> {
    let found = meta.get(HEAD_KEY)?.and_then(|v| Head::from_bytes(&v));
    if found != expected {
        return Err(ConflictableTransactionError::Abort(Abort::HeadMoved {
            found,
        }));
    }
    if meta.get(PENDING_KEY)?.is_some() {
        return Err(ConflictableTransactionError::Abort(Abort::Pending));
    }
    Ok(())
}

fn tx_result(r: TxResult, expected: Option<Head>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(TransactionError::Abort(Abort::HeadMoved { found })) => {
            Err(head_moved(expected, found))
        }
        Err(TransactionError::Abort(Abort::Pending)) => Err(pending()),
        Err(TransactionError::Abort(Abort::Marker)) => Err(Error::Damage(
            "the marker of the append in flight changed; run verify".into(),
        )),
        Err(TransactionError::Storage(e)) => Err(sled_err("append", None, e)),
    }
}

fn head_moved(expected: Option<Head>, found: Option<Head>) -> Error {
    let show = |h: Option<Head>| h.map_or("none".to_string(), |h| h.seq.to_string());
    Error::HeadMoved {
        expected: show(expected),
        found: show(found),
    }
}

fn pending() -> Error {
    Error::Damage("an interrupted append is still pending; reopen the ledger".into())
}

fn occupied(seq: u64) -> Error {
    Error::Damage(format!(
        "seq {seq}: torn_tail: a record already sits past the head; run verify"
    ))
}

// ---------------------------------------------------------------------------
// Damage harness hooks

/// The trees a damage harness may write.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum DamageTree {
    /// seq -> value: the record at that seq inside its segment.
    Records,
    /// `head` -> head
    Meta,
    /// key -> seq
    Idempotency,
}

/// The key under which `damage_put` reaches the head.
#[doc(hidden)]
pub const DAMAGE_HEAD_KEY: &[u8] = HEAD_KEY;

impl SledStore {
    /// Writes a raw value, bypassing every check. Only for damage harnesses
    /// (tamper tests); the ledger never calls it. For `Records`, `key` is a
    /// seq and `value` replaces that record's stored value inside the
    /// segment that holds it (or becomes a segment of its own at that seq
    /// when none does).
    #[doc(hidden)]
    pub fn damage_put(&self, tree: DamageTree, key: &[u8], value: &[u8]) -> Result<()> {
        let io = |e| sled_err("damage put", None, e);
        match tree {
            DamageTree::Records => self.damage_record(key, Some(value))?,
            DamageTree::Meta => {
                self.meta.insert(key, value).map_err(io)?;
            }
            DamageTree::Idempotency => {
                self.keys_tree()?.insert(key, value).map_err(io)?;
            }
        }
        self.damage_durable()
    }

    /// Removes a raw key, bypassing every check. Only for damage harnesses.
    /// For `Records`, the record at that seq is cut out of its segment,
    /// which is split around it (a gap at that seq).
    #[doc(hidden)]
    pub fn damage_remove(&self, tree: DamageTree, key: &[u8]) -> Result<()> {
        let io = |e| sled_err("damage remove", None, e);
        match tree {
            DamageTree::Records => self.damage_record(key, None)?,
            DamageTree::Meta => {
                self.meta.remove(key).map_err(io)?;
            }
            DamageTree::Idempotency => {
                self.keys_tree()?.remove(key).map_err(io)?;
            }
        }
        self.damage_durable()
    }

    /// Writes a raw item of the log (a whole segment or layout-1 value).
    /// Only for damage harnesses.
    #[doc(hidden)]
    pub fn damage_put_item(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let io = |e| sled_err("damage put", None, e);
        match value {
            Some(v) => self.log.insert(key, v).map(|_| ()).map_err(io)?,
            None => self.log.remove(key).map(|_| ()).map_err(io)?,
        }
        self.damage_durable()
    }

    fn damage_durable(&self) -> Result<()> {
        self.main.durable()?;
        if let Some(ix) = lock(&self.index).as_ref() {
            ix.sled.durable()?;
        }
        Ok(())
    }

    /// Replaces (or removes) the record at seq `key` inside its segment.
    fn damage_record(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let io = |e| sled_err("damage", None, e);
        let Some(seq) = seq_of(key) else {
            return match value {
                Some(v) => self.log.insert(key, v).map(|_| ()).map_err(io),
                None => self.log.remove(key).map(|_| ()).map_err(io),
            };
        };
        if self.layout == Layout::Records {
            return match value {
                Some(v) => self.log.insert(key, v).map(|_| ()).map_err(io),
                None => self.log.remove(key).map(|_| ()).map_err(io),
            };
        }
        let found = self.log.range(..=key).next_back().transpose().map_err(io)?;
        let (first, spans, bytes) = match found {
            Some((k, v)) => {
                let first = seq_of(&k).unwrap_or(u64::MAX);
                let (spans, _) = segment::frames(first, &v);
                (first, spans, v)
            }
            None => (seq, Vec::new(), sled::IVec::from(&[][..])),
        };
        let at = seq.wrapping_sub(first) as usize;
        if spans.len() <= at {
            if let Some(v) = value {
                self.log.insert(key, segment::encode([v])).map_err(io)?;
            }
            return Ok(());
        }
        let part = |r: Range<usize>| -> Vec<&[u8]> {
            spans[r].iter().map(|s| &bytes[s.clone()]).collect()
        };
        self.log.remove(first.to_be_bytes()).map_err(io)?;
        let before = part(0..at);
        let after = part(at + 1..spans.len());
        match value {
            Some(v) => {
                let all: Vec<&[u8]> = before.into_iter().chain([v]).chain(after).collect();
                self.log
                    .insert(first.to_be_bytes(), segment::encode(all))
                    .map_err(io)?;
            }
            None => {
                if !before.is_empty() {
                    self.log
                        .insert(first.to_be_bytes(), segment::encode(before))
                        .map_err(io)?;
                }
                if !after.is_empty() {
                    self.log
                        .insert((seq + 1).to_be_bytes(), segment::encode(after))
                        .map_err(io)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
