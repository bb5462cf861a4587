//! Storage behind a small trait; the only module that knows sled (pinned
//! `=0.34.7`).
//!
//! Trees: `records` (seq big-endian -> prev || hash || record bytes), `meta`
//! (`head` -> seq big-endian || hash) and `idempotency` (client key -> seq
//! big-endian), the one index, derivable from the records. The store never
//! decodes payloads and never rewrites or deletes an acknowledged record.
//!
//! The head is the commit point of every append. An append of up to
//! `CHUNKED_APPEND_RECORDS_MIN` records and `CHUNKED_APPEND_BYTES_MIN` bytes
//! writes its records, index entries and the new head in one sled
//! transaction. A larger one (a whole ingested file) would make sled hold
//! every superseded tree node of the transaction until it commits (sled
//! 0.34 keeps one epoch guard pinned for the whole commit: about 11 KB per
//! record, 1.1 GB for 100,000 usage rows), so it is written in chunks
//! instead: a `pending` marker naming its seqs is made durable first, then
//! the records and index entries past the head with plain inserts,
//! flushed, and only then one small transaction
//! moves the head (CAS) and removes the marker, flushed again before the
//! append is acknowledged. Until the head moves, readers stop at the old
//! head and nothing of the append is visible. A crash before the commit
//! point leaves the marker: the next open (under the writer lock) removes
//! what the marker names past the head (records and index entries that
//! were never acknowledged) and then the marker, so the ledger is exactly
//! as it was before the append. Records past the head without a marker are
//! still damage (`torn_tail`), refused by every append.

use std::path::Path;

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use crate::error::{Error, Result};
use crate::log::chain::{Head, Sealed};

const HEAD_KEY: &[u8] = b"head";
/// sled 0.34.7's log file inside its directory (`Config::path/db`).
const SLED_LOG_FILE: &str = "db";
/// sled 0.34.7's directory of pages stored as files of their own.
const SLED_BLOB_DIR: &str = "blobs";
/// `meta` key of an append in flight: first seq || last seq (big-endian).
const PENDING_KEY: &[u8] = b"pending";

/// Appends of more records than this are written in chunks with the head as
/// the commit point (see the module doc); smaller ones in one transaction.
///
/// Small on purpose: a sled 0.34 transaction pins one epoch guard over all
/// its inserts and rolls the IO buffer, so past a few dozen records it costs
/// more than the two extra flushes of the chunked path (measured: 1,000-record
/// appends 1.7x slower as one transaction than as plain inserts under the
/// marker; about even at 64). A one-record append (a CLI note) keeps the
/// single transaction and its single flush.
pub const CHUNKED_APPEND_RECORDS_MIN: usize = 64;
/// Appends of more stored bytes than this are written in chunks too.
pub const CHUNKED_APPEND_BYTES_MIN: usize = 4 * 1024 * 1024;
/// Records (or index entries) removed per `apply_batch` when an interrupted
/// chunked append is discarded.
pub const APPEND_CHUNK_RECORDS: usize = 1024;

/// sled's page cache, in bytes (sled's default is 1 GiB). The ledger reads
/// sequentially and verifies what it reads; a small cache bounds memory
/// (64 -> 32 MiB took the peak RSS of a 1.5M-event replay from 501 to 472
/// MiB with no measurable change in replay time).
pub const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// One stored (key, value) pair, as read.
pub type RawPair = (Bytes, Bytes);

/// Stored bytes as the store hands them out, without a copy (sled's own
/// reference-counted buffer, kept opaque so that nothing outside this
/// module names sled).
#[derive(Clone, PartialEq, Eq)]
pub struct Bytes(sled::IVec);

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

/// The storage operations the ledger needs, and nothing more.
pub trait Store {
    /// The stored head, raw (verification parses and checks it).
    fn head_raw(&self) -> Result<Option<Vec<u8>>>;

    /// The stored value at `seq`, raw.
    fn value(&self, seq: u64) -> Result<Option<Vec<u8>>>;

    /// Stored pairs from `from` on, in seq order.
    fn scan(&self, from: u64) -> Box<dyn Iterator<Item = Result<RawPair>> + '_>;

    /// The seq recorded for a client idempotency key.
    fn idempotency_seq(&self, key: &str) -> Result<Option<u64>>;

    /// Every (idempotency key, seq) pair of the index, raw.
    fn idempotency_scan(&self) -> Box<dyn Iterator<Item = Result<RawPair>> + '_>;

    /// Appends `batch` (consecutive seqs after `expected`) and its index
    /// entries if and only if the stored head is still `expected`; the
    /// records, the index entries and the new head move together. Returns
    /// only after the write is durable (flushed).
    fn append(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
    ) -> Result<Head>;
}

/// The sled store of one ledger directory.
pub struct SledStore {
    db: sled::Db,
    records: sled::Tree,
    meta: sled::Tree,
    idempotency: sled::Tree,
    /// Serializes appends of this process (a chunked append writes past the
    /// head before its commit point).
    append_lock: std::sync::Mutex<()>,
    /// sled's log file, fsynced after each flush that makes an append or
    /// its marker durable (see `durable`).
    log: std::fs::File,
    /// sled's directory.
    path: std::path::PathBuf,
    /// The newest blob file (by lsn) made durable.
    blobs_synced: std::sync::Mutex<Option<i64>>,
}

/// Why a transaction was aborted.
enum Abort {
    HeadMoved { found: Option<Head> },
    Occupied(u64),
    Pending,
}

/// Whether sled refused to open because another handle holds its file lock.
fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock
        || io.to_string().contains("lock"))
}

impl SledStore {
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
        self.db.flush().map_err(|e| Error::io("flush", e))?;
        self.log
            .sync_all()
            .map_err(|e| Error::io(format!("fsync {SLED_LOG_FILE}"), e))?;
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
                match std::fs::File::open(e.path()).and_then(|f| f.sync_all()) {
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
            std::fs::File::open(&dir)
                .and_then(|f| f.sync_all())
                .map_err(io)?;
            *synced = newest;
        }
        Ok(())
    }

    /// Opens (or creates) the sled database in `path`. The caller holds the
    /// ledger's lock; sled takes its own exclusive file lock as well.
    pub fn open(path: &Path) -> Result<SledStore> {
        let ctx = || format!("open {}", path.display());
        discard_interrupted_snapshots(path)?;
        // The ledger lock is already ours; sled's own file lock may still be
        // held for a few milliseconds by the background thread of a process
        // that just dropped its ledger. Wait that out, boundedly.
        let started = std::time::Instant::now();
        let db = loop {
            match sled::Config::new()
                .path(path)
                .mode(sled::Mode::HighThroughput)
                .cache_capacity(SLED_CACHE_BYTES)
                .open()
            {
                Ok(db) => break db,
                Err(e)
                    if is_lock_error(&e)
                        && started.elapsed()
                            < std::time::Duration::from_millis(
                                crate::limits::SLED_LOCK_WAIT_MS_MAX,
                            ) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(
                        crate::limits::LOCK_POLL_MS,
                    ));
                }
                Err(e) => return Err(Error::io(ctx(), e)),
            }
        };
        let tree = |name: &str| db.open_tree(name).map_err(|e| Error::io(ctx(), e));
        let log = std::fs::File::open(path.join(SLED_LOG_FILE)).map_err(|e| Error::io(ctx(), e))?;
        let store = SledStore {
            log,
            path: path.to_path_buf(),
            // Blobs already there were made durable by the append that
            // acknowledged them (or belong to none).
            blobs_synced: std::sync::Mutex::new(newest_blob(&path.join(SLED_BLOB_DIR))),
            records: tree("records")?,
            meta: tree("meta")?,
            idempotency: tree("idempotency")?,
            db,
            append_lock: std::sync::Mutex::new(()),
        };
        store.discard_pending()?;
        Ok(store)
    }

    /// Removes what an append interrupted before its commit point left past
    /// the head: the records and index entries its `pending` marker names
    /// (never acknowledged: the head did not move), then the marker.
    fn discard_pending(&self) -> Result<()> {
        let Some(marker) = self
            .meta
            .get(PENDING_KEY)
            .map_err(|e| Error::io("read meta", e))?
        else {
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
        let io = |e| Error::io("discard an interrupted append", e);
        let stale: Vec<sled::IVec> = self
            .records
            .range(first.to_be_bytes()..=last.to_be_bytes())
            .keys()
            .collect::<std::result::Result<_, _>>()
            .map_err(io)?;
        for chunk in stale.chunks(APPEND_CHUNK_RECORDS) {
            let mut b = sled::Batch::default();
            for k in chunk {
                b.remove(k.clone());
            }
            self.records.apply_batch(b).map_err(io)?;
        }
        let mut keys = Vec::new();
        for pair in self.idempotency.iter() {
            let (k, v) = pair.map_err(io)?;
            let seq = <[u8; 8]>::try_from(v.as_ref()).map(u64::from_be_bytes);
            if seq.is_ok_and(|s| (first..=last).contains(&s)) {
                keys.push(k);
            }
        }
        for chunk in keys.chunks(APPEND_CHUNK_RECORDS) {
            let mut b = sled::Batch::default();
            for k in chunk {
                b.remove(k.clone());
            }
            self.idempotency.apply_batch(b).map_err(io)?;
        }
        self.durable()?;
        self.meta.remove(PENDING_KEY).map_err(io)?;
        self.durable()?;
        Ok(())
    }

    /// The chunked append of a large batch (see the module doc): marker,
    /// records and index entries past the head, then the head as the
    /// commit point. The caller checked the batch and holds `append_lock`.
    fn append_chunked(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
        new_head: Head,
    ) -> Result<Head> {
        let first = batch[0].seq;
        let io = |e| Error::io("append", e);
        let found = self
            .meta
            .get(HEAD_KEY)
            .map_err(io)?
            .and_then(|v| Head::from_bytes(&v));
        if found != expected {
            return Err(head_moved(expected, found));
        }
        if self.meta.get(PENDING_KEY).map_err(io)?.is_some() {
            return Err(pending());
        }
        // Paired check: nothing may already sit where the batch goes.
        if self.records.get(first.to_be_bytes()).map_err(io)?.is_some() {
            return Err(occupied(first));
        }
        let mut marker = [0u8; 16];
        marker[..8].copy_from_slice(&first.to_be_bytes());
        marker[8..].copy_from_slice(&new_head.seq.to_be_bytes());
        self.meta.insert(PENDING_KEY, &marker[..]).map_err(io)?;
        self.durable()?;
        let written = (|| -> Result<()> {
            // Plain inserts, not `apply_batch`: the marker and the head make
            // the append atomic, and each `apply_batch` would roll sled's IO
            // buffer (`pin_log`) and pin one epoch guard over all its
            // inserts, keeping every superseded tree node alive meanwhile.
            for s in batch {
                self.records
                    .insert(s.seq.to_be_bytes(), s.value())
                    .map_err(io)?;
            }
            for (k, seq) in index {
                self.idempotency
                    .insert(k.as_bytes(), &seq.to_be_bytes())
                    .map_err(io)?;
            }
            // Every record is durable before the head names it.
            self.durable()?;
            let result = self.meta.transaction(|m| {
                let found = m.get(HEAD_KEY)?.and_then(|v| Head::from_bytes(&v));
                if found != expected {
                    return Err(ConflictableTransactionError::Abort(Abort::HeadMoved {
                        found,
                    }));
                }
                if m.get(PENDING_KEY)?.as_deref() != Some(&marker[..]) {
                    return Err(ConflictableTransactionError::Abort(Abort::Occupied(first)));
                }
                m.insert(HEAD_KEY, &new_head.to_bytes()[..])?;
                m.remove(PENDING_KEY)?;
                Ok(())
            });
            match result {
                Ok(()) => Ok(()),
                Err(TransactionError::Abort(Abort::HeadMoved { found })) => {
                    Err(head_moved(expected, found))
                }
                Err(TransactionError::Abort(Abort::Occupied(seq))) => Err(occupied(seq)),
                Err(TransactionError::Abort(Abort::Pending)) => Err(pending()),
                Err(TransactionError::Storage(e)) => Err(io(e)),
            }
        })();
        if let Err(e) = written {
            // Nothing was acknowledged: take the partial write back now (the
            // next open would otherwise).
            if let Err(again) = self.discard_pending() {
                tracing::warn!("could not discard an interrupted append: {again}");
            }
            return Err(e);
        }
        self.durable()?;
        Ok(new_head)
    }

    /// Writes a raw value, bypassing every check. Only for damage harnesses
    /// (tamper tests); the ledger never calls it.
    #[doc(hidden)]
    pub fn damage_put(&self, tree: DamageTree, key: &[u8], value: &[u8]) -> Result<()> {
        self.raw_tree(tree)
            .insert(key, value)
            .map_err(|e| Error::io("damage put", e))?;
        self.durable()?;
        Ok(())
    }

    /// Removes a raw key, bypassing every check. Only for damage harnesses.
    #[doc(hidden)]
    pub fn damage_remove(&self, tree: DamageTree, key: &[u8]) -> Result<()> {
        self.raw_tree(tree)
            .remove(key)
            .map_err(|e| Error::io("damage remove", e))?;
        self.durable()?;
        Ok(())
    }

    fn raw_tree(&self, tree: DamageTree) -> &sled::Tree {
        match tree {
            DamageTree::Records => &self.records,
            DamageTree::Meta => &self.meta,
            DamageTree::Idempotency => &self.idempotency,
        }
    }
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
/// The newest blob file's lsn in `dir`, if any.
fn newest_blob(dir: &Path) -> Option<i64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .max()
}

fn discard_interrupted_snapshots(path: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            tracing::warn!("removing interrupted sled snapshot {name} (left by a killed process)");
            std::fs::remove_file(entry.path())
                .map_err(|e| Error::io(format!("remove {}", entry.path().display()), e))?;
        }
    }
    Ok(())
}

/// Whether an append of `records` records and `bytes` stored bytes is
/// written in chunks under a marker (else in one transaction).
fn takes_chunked_path(records: usize, bytes: usize) -> bool {
    records > CHUNKED_APPEND_RECORDS_MIN || bytes > CHUNKED_APPEND_BYTES_MIN
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

/// The trees a damage harness may write.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum DamageTree {
    /// seq -> value
    Records,
    /// `head` -> head
    Meta,
    /// key -> seq
    Idempotency,
}

/// The key under which `damage_put` reaches the head.
#[doc(hidden)]
pub const DAMAGE_HEAD_KEY: &[u8] = HEAD_KEY;

fn pairs(it: sled::Iter) -> Box<dyn Iterator<Item = Result<RawPair>>> {
    Box::new(it.map(|r| {
        r.map(|(k, v)| (Bytes(k), Bytes(v)))
            .map_err(|e| Error::io("read", e))
    }))
}

impl Store for SledStore {
    fn head_raw(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .meta
            .get(HEAD_KEY)
            .map_err(|e| Error::io("read head", e))?
            .map(|v| v.to_vec()))
    }

    fn value(&self, seq: u64) -> Result<Option<Vec<u8>>> {
        Ok(self
            .records
            .get(seq.to_be_bytes())
            .map_err(|e| Error::io("read record", e))?
            .map(|v| v.to_vec()))
    }

    fn scan(&self, from: u64) -> Box<dyn Iterator<Item = Result<RawPair>> + '_> {
        pairs(self.records.range(from.to_be_bytes()..))
    }

    fn idempotency_seq(&self, key: &str) -> Result<Option<u64>> {
        let v = self
            .idempotency
            .get(key.as_bytes())
            .map_err(|e| Error::io("read idempotency index", e))?;
        match v {
            None => Ok(None),
            Some(v) => match <[u8; 8]>::try_from(v.as_ref()) {
                Ok(b) => Ok(Some(u64::from_be_bytes(b))),
                Err(_) => Err(Error::Damage(format!(
                    "idempotency index entry for {key:?} is not a seq"
                ))),
            },
        }
    }

    fn idempotency_scan(&self) -> Box<dyn Iterator<Item = Result<RawPair>> + '_> {
        pairs(self.idempotency.iter())
    }

    fn append(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
    ) -> Result<Head> {
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
        let _one = self
            .append_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let bytes: usize = batch.iter().map(|s| s.bytes.len()).sum();
        if takes_chunked_path(batch.len(), bytes) {
            return self.append_chunked(expected, batch, index, new_head);
        }
        let mut records = sled::Batch::default();
        for s in batch {
            records.insert(&s.seq.to_be_bytes(), s.value());
        }
        let mut idem = sled::Batch::default();
        for (k, seq) in index {
            idem.insert(k.as_bytes(), &seq.to_be_bytes());
        }
        let result = (&self.records, &self.meta, &self.idempotency).transaction(|(r, m, i)| {
            let found = m.get(HEAD_KEY)?.and_then(|v| Head::from_bytes(&v));
            if found != expected {
                return Err(ConflictableTransactionError::Abort(Abort::HeadMoved {
                    found,
                }));
            }
            if m.get(PENDING_KEY)?.is_some() {
                return Err(ConflictableTransactionError::Abort(Abort::Pending));
            }
            // Paired check: nothing may already sit where the batch goes.
            if r.get(first.seq.to_be_bytes())?.is_some() {
                return Err(ConflictableTransactionError::Abort(Abort::Occupied(
                    first.seq,
                )));
            }
            r.apply_batch(&records)?;
            i.apply_batch(&idem)?;
            m.insert(HEAD_KEY, &new_head.to_bytes()[..])?;
            Ok(())
        });
        match result {
            Ok(()) => {}
            Err(TransactionError::Abort(Abort::HeadMoved { found })) => {
                return Err(head_moved(expected, found))
            }
            Err(TransactionError::Abort(Abort::Occupied(seq))) => return Err(occupied(seq)),
            Err(TransactionError::Abort(Abort::Pending)) => return Err(pending()),
            Err(TransactionError::Storage(e)) => return Err(Error::io("append", e)),
        }
        self.durable()?;
        Ok(new_head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sled's file lock held by another handle is waited out up to
    /// SLED_LOCK_WAIT_MS_MAX, and refused past it.
    #[test]
    fn a_briefly_held_sled_lock_is_waited_out_within_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store");
        drop(SledStore::open(&path).unwrap());
        let held = sled::Config::new().path(&path).open().unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(held);
        });
        SledStore::open(&path).expect("opens once the other handle is gone");
        t.join().unwrap();
        let _held = sled::Config::new().path(&path).open().unwrap();
        let started = std::time::Instant::now();
        assert!(SledStore::open(&path).is_err());
        assert!(
            started.elapsed()
                >= std::time::Duration::from_millis(crate::limits::SLED_LOCK_WAIT_MS_MAX)
        );
    }
    use crate::log::chain::{Sealed, ZERO_HASH};
    use crate::log::record::{Record, FORMAT_VERSION};
    use crate::schema::events::{Event, OperatorNoted};

    fn sealed_chain(from: u64, prev: crate::log::chain::Hash, n: usize) -> Vec<Sealed> {
        let mut prev = prev;
        (0..n as u64)
            .map(|i| {
                let seq = from + i;
                let event = if seq == 0 {
                    Event::LedgerCreated(crate::schema::events::LedgerCreated {
                        ledger_id: "00".repeat(16),
                        format_version: FORMAT_VERSION,
                        tool_version: "t".into(),
                    })
                } else {
                    Event::OperatorNoted(OperatorNoted {
                        lineage: None,
                        text: format!("note {seq}"),
                    })
                };
                let bytes = Record {
                    format: FORMAT_VERSION,
                    seq,
                    recorded_at_utc_ns: seq,
                    actor: "ci".into(),
                    kind: event.kind().into(),
                    idempotency_key: None,
                    payload: crate::log::codec::encode_payload(&event).unwrap(),
                }
                .encode();
                let s = Sealed::new(prev, seq, bytes);
                prev = s.hash;
                s
            })
            .collect()
    }

    fn keys(batch: &[Sealed]) -> Vec<(String, u64)> {
        batch
            .iter()
            .map(|s| (format!("k{}", s.seq), s.seq))
            .collect()
    }

    /// An append of exactly `CHUNKED_APPEND_RECORDS_MIN` records (and up to
    /// `CHUNKED_APPEND_BYTES_MIN` bytes) is one transaction; one record or
    /// one byte more takes the chunked path. Both land whole with their
    /// index entries and leave no marker.
    #[test]
    fn the_chunked_path_starts_one_past_its_bounds() {
        assert!(!takes_chunked_path(
            CHUNKED_APPEND_RECORDS_MIN,
            CHUNKED_APPEND_BYTES_MIN
        ));
        assert!(takes_chunked_path(CHUNKED_APPEND_RECORDS_MIN + 1, 0));
        assert!(takes_chunked_path(1, CHUNKED_APPEND_BYTES_MIN + 1));
        let tmp = tempfile::tempdir().unwrap();
        let store = SledStore::open(&tmp.path().join("s")).unwrap();
        let mut head = store
            .append(None, &sealed_chain(0, ZERO_HASH, 1), &[])
            .unwrap();
        for n in [CHUNKED_APPEND_RECORDS_MIN, CHUNKED_APPEND_RECORDS_MIN + 1] {
            let batch = sealed_chain(head.seq + 1, head.hash, n);
            let index = keys(&batch);
            head = store.append(Some(head), &batch, &index).unwrap();
            assert_eq!(head.hash, batch.last().unwrap().hash);
            assert!(store.meta.get(PENDING_KEY).unwrap().is_none());
            let last = batch.last().unwrap().seq;
            assert_eq!(
                store.idempotency_seq(&format!("k{last}")).unwrap(),
                Some(last)
            );
        }
        let total = 1 + 2 * CHUNKED_APPEND_RECORDS_MIN + 1;
        assert_eq!(store.scan(0).count(), total);
        assert_eq!(store.idempotency_scan().count(), total - 1);
    }

    #[test]
    fn an_append_fsyncs_the_blob_files_sled_wrote_for_it() {
        // A record over a quarter of sled's segment is written by sled to a
        // file of its own under blobs/, which sled never fsyncs; the
        // acknowledged append must have made it durable.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        let store = SledStore::open(&dir).unwrap();
        let head = store
            .append(None, &sealed_chain(0, ZERO_HASH, 1), &[])
            .unwrap();
        assert_eq!(*store.blobs_synced.lock().unwrap(), None);
        let text = "x".repeat(300 * 1024);
        let event = Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text,
        });
        let bytes = Record {
            format: FORMAT_VERSION,
            seq: 1,
            recorded_at_utc_ns: 1,
            actor: "ci".into(),
            kind: event.kind().into(),
            idempotency_key: None,
            payload: crate::log::codec::encode_payload(&event).unwrap(),
        }
        .encode();
        let big = Sealed::new(head.hash, 1, bytes);
        store.append(Some(head), &[big], &[]).unwrap();
        let newest = newest_blob(&dir.join(SLED_BLOB_DIR));
        assert!(newest.is_some(), "sled wrote no blob for a 300 KiB value");
        assert_eq!(*store.blobs_synced.lock().unwrap(), newest);
        drop(store);
        // A reopen starts from the blobs already there.
        let store = SledStore::open(&dir).unwrap();
        assert_eq!(*store.blobs_synced.lock().unwrap(), newest);
    }

    #[test]
    fn a_large_append_is_chunked_and_lands_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SledStore::open(&tmp.path().join("s")).unwrap();
        let genesis = sealed_chain(0, ZERO_HASH, 1);
        let head = store.append(None, &genesis, &[]).unwrap();
        let n = CHUNKED_APPEND_RECORDS_MIN * 2 + 7;
        let batch = sealed_chain(1, head.hash, n);
        let index = keys(&batch);
        let new = store.append(Some(head), &batch, &index).unwrap();
        assert_eq!(new.seq, n as u64);
        assert_eq!(store.scan(0).count(), n + 1);
        assert_eq!(store.idempotency_scan().count(), n);
        assert_eq!(store.idempotency_seq("k5").unwrap(), Some(5));
        assert!(store.meta.get(PENDING_KEY).unwrap().is_none());
        // CAS: a large append against a stale head is refused, nothing written
        let stale = sealed_chain(1, head.hash, n);
        assert!(matches!(
            store.append(Some(head), &stale, &[]),
            Err(Error::HeadMoved { .. })
        ));
        assert_eq!(store.scan(0).count(), n + 1);
    }

    #[test]
    fn an_append_interrupted_before_its_commit_point_is_discarded_on_open() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s");
        let head = {
            let store = SledStore::open(&path).unwrap();
            let genesis = sealed_chain(0, ZERO_HASH, 1);
            let head = store.append(None, &genesis, &[]).unwrap();
            // What a crash after the marker and some chunks leaves.
            let batch = sealed_chain(1, head.hash, 3000);
            let mut marker = [0u8; 16];
            marker[..8].copy_from_slice(&1u64.to_be_bytes());
            marker[8..].copy_from_slice(&3000u64.to_be_bytes());
            store.meta.insert(PENDING_KEY, &marker[..]).unwrap();
            for s in &batch[..1500] {
                store
                    .records
                    .insert(s.seq.to_be_bytes(), s.value())
                    .unwrap();
                store
                    .idempotency
                    .insert(format!("k{}", s.seq).as_bytes(), &s.seq.to_be_bytes())
                    .unwrap();
            }
            store
                .idempotency
                .insert(b"older", &0u64.to_be_bytes())
                .unwrap();
            store.db.flush().unwrap();
            head
        };
        let store = SledStore::open(&path).unwrap();
        assert_eq!(store.scan(0).count(), 1, "unacknowledged records removed");
        assert_eq!(
            store.idempotency_scan().count(),
            1,
            "only the older entry stays"
        );
        assert!(store.meta.get(PENDING_KEY).unwrap().is_none());
        let raw = store.head_raw().unwrap().unwrap();
        assert_eq!(Head::from_bytes(&raw), Some(head));
        // and the ledger appends again from the same head
        let batch = sealed_chain(1, head.hash, 2000);
        assert_eq!(
            store.append(Some(head), &batch, &keys(&batch)).unwrap().seq,
            2000
        );
    }

    #[test]
    fn a_marker_that_does_not_sit_at_the_head_is_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s");
        {
            let store = SledStore::open(&path).unwrap();
            let genesis = sealed_chain(0, ZERO_HASH, 1);
            store.append(None, &genesis, &[]).unwrap();
            let mut marker = [0u8; 16];
            marker[..8].copy_from_slice(&5u64.to_be_bytes());
            marker[8..].copy_from_slice(&9u64.to_be_bytes());
            store.meta.insert(PENDING_KEY, &marker[..]).unwrap();
            store.db.flush().unwrap();
        }
        assert!(matches!(SledStore::open(&path), Err(Error::Damage(_))));
    }
}
