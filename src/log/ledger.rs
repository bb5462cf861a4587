//! A ledger directory: its lock, its store, and every operation on records.
//!
//! Layout of a ledger directory (created owner-only, 0700):
//! `benchledger.lock` (the writer lock, held for the life of a `Ledger`),
//! and the store (`store.rs`: `sled/`, `index/`, `benchledger.head`). One
//! process at a time holds the lock; a second waits up to its lock wait and
//! then fails with `Error::LockTimeout` (exit 4).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::limits::{APPEND_BATCH_BYTES_MAX, APPEND_BATCH_RECORDS_MAX, LOCK_POLL_MS};
use crate::log::chain::{self, Damage, DamageKind, Hash, Head, Sealed, Verified, Walker};
use crate::log::record::{self, Decoded, Record, FORMAT_VERSION};
use crate::log::scan::{self, Checked, RecordScan, Scanned, Walked};
use crate::log::store::{self, Layout, SledStore, Store};
use crate::schema::events::{Event, LedgerCreated};
use crate::schema::rule::Rule;

/// A check run on every `Ledger::open` of this process, under the writer
/// lock (see [`Ledger::set_fence`]).
pub type FenceCheck = Box<dyn Fn(&Ledger) -> Result<()> + Send + Sync>;

static FENCE: std::sync::RwLock<Option<FenceCheck>> = std::sync::RwLock::new(None);

const LOCK_FILE: &str = "benchledger.lock";
/// Keys gathered per write while the idempotency index is caught up.
const INDEX_CATCH_UP_KEYS: usize = 100_000;

/// The tool version written into genesis records.
pub const TOOL_VERSION: &str = concat!("benchledger ", env!("CARGO_PKG_VERSION"));

/// An event to append, with who appends it and an optional idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// Who appends it.
    pub actor: String,
    pub event: Event,
    /// A client idempotency key: the same key with the same payload appends
    /// once; with a different payload it is refused.
    pub idempotency_key: Option<String>,
}

/// The outcome of appending one draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub seq: u64,
    pub hash: Hash,
    /// False when an earlier record with the same idempotency key and payload
    /// was found and nothing was appended.
    pub appended: bool,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Records that verified before the first damage (all of them when ok).
    pub records: u64,
    /// The verified head (`None` when damaged).
    pub head: Option<Head>,
    /// The first damage found.
    pub damage: Option<Damage>,
}

impl VerifyReport {
    /// True when no damage was found.
    pub fn ok(&self) -> bool {
        self.damage.is_none()
    }
}

/// An open ledger: holding the writer lock, or (opened for reading where
/// its directory cannot be written) a private copy of it.
pub struct Ledger {
    dir: PathBuf,
    store: SledStore,
    /// The writer lock; `None` on a read copy (released once copied).
    _lock: Option<File>,
    /// Opened by [`Ledger::open_read`]: nothing is appended through it.
    read_only: bool,
    /// The private copy read instead of an unwritable directory, removed
    /// after the store (fields drop in order).
    copy: Option<crate::log::read_copy::ReadCopy>,
}

/// Creates `dir` owner-only if missing, and warns when an existing one is
/// readable by others.
fn prepare_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Ok(meta) = fs::metadata(dir) {
        if !meta.is_dir() {
            return Err(Error::input(format!(
                "{} exists and is not a directory; a ledger is a directory",
                dir.display()
            )));
        }
    } else {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| match e.kind() {
                // a component of the path is a regular file: bad input
                std::io::ErrorKind::NotADirectory | std::io::ErrorKind::AlreadyExists => {
                    Error::input(format!(
                        "cannot create the ledger directory {}: {e} (a part of the path is a file, not a directory)",
                        dir.display()
                    ))
                }
                _ => Error::io(format!("create {}", dir.display()), e),
            })?;
    }
    warn_mode(dir)
}

/// Warns when the ledger directory `dir` is readable by others.
fn warn_mode(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir)
        .map_err(|e| Error::io(format!("stat {}", dir.display()), e))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            "ledger directory {} has mode {:o}; expected 0700 (owner-only)",
            dir.display(),
            mode & 0o777
        );
    }
    Ok(())
}

/// Takes the writer lock of `dir`, waiting up to `wait`.
fn lock(dir: &Path, wait: Duration) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let start = Instant::now();
    let mut announced = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("lock {}", path.display()), e))
            }
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Err(Error::LockTimeout {
                dir: dir.display().to_string(),
                waited_ms: waited.as_millis() as u64,
            });
        }
        if !announced {
            tracing::info!("waiting for the writer lock of {}", dir.display());
            announced = true;
        }
        std::thread::sleep(Duration::from_millis(LOCK_POLL_MS).min(wait - waited));
    }
}

/// Checks one draft and encodes it as record `seq`.
fn encode_draft(d: &Draft, payload: Vec<u8>, seq: u64, now_ns: u64) -> Result<Vec<u8>> {
    record::check_actor(&d.actor)?;
    if let Some(k) = &d.idempotency_key {
        record::check_idempotency_key(k)?;
    }
    crate::log::guard::check_header(&d.actor, d.idempotency_key.as_deref())?;
    crate::log::guard::check_event(&d.event)?;
    let bytes = Record {
        format: FORMAT_VERSION,
        seq,
        recorded_at_utc_ns: now_ns,
        actor: d.actor.clone(),
        kind: d.event.kind().to_string(),
        idempotency_key: d.idempotency_key.clone(),
        payload,
    }
    .encode()?;
    record::check_size(seq, d.event.kind(), bytes.len())?;
    Ok(bytes)
}

/// Checks one append's size against `APPEND_BATCH_RECORDS_MAX` and
/// `APPEND_BATCH_BYTES_MAX`.
pub fn check_batch(records: usize, bytes: usize) -> Result<()> {
    if records > APPEND_BATCH_RECORDS_MAX {
        return Err(Error::input(format!(
            "one append may carry at most {APPEND_BATCH_RECORDS_MAX} records, got {records}"
        )));
    }
    if bytes > APPEND_BATCH_BYTES_MAX {
        return Err(Error::input(format!(
            "one append may carry at most {APPEND_BATCH_BYTES_MAX} bytes, got {bytes}"
        )));
    }
    Ok(())
}

impl Ledger {
    /// True when `dir` holds a ledger store.
    pub fn exists(dir: &Path) -> bool {
        store::exists(dir)
    }

    /// Creates a ledger in `dir` (which must not hold one) with its genesis
    /// record. `ledger_id` is 16 random bytes chosen by the caller.
    pub fn create(
        dir: &Path,
        lock_wait: Duration,
        ledger_id: [u8; 16],
        actor: &str,
        now_ns: u64,
    ) -> Result<(Ledger, Appended)> {
        // Check what the genesis record needs before anything is created.
        record::check_actor(actor)?;
        crate::log::guard::check_header(actor, None)?;
        Self::refuse_unwritable(dir)?;
        prepare_dir(dir)?;
        let file = lock(dir, lock_wait)?;
        if Self::exists(dir) {
            return Err(Error::input(format!(
                "{} already holds a ledger",
                dir.display()
            )));
        }
        let ledger = Ledger {
            store: SledStore::create(dir)?,
            dir: dir.to_path_buf(),
            _lock: Some(file),
            read_only: false,
            copy: None,
        };
        let genesis = Draft {
            actor: actor.to_string(),
            event: Event::LedgerCreated(LedgerCreated {
                ledger_id: hex::encode(ledger_id),
                format_version: FORMAT_VERSION,
                tool_version: TOOL_VERSION.to_string(),
            }),
            idempotency_key: None,
        };
        let payload = crate::log::codec::encode_payload(&genesis.event)
            .map_err(|e| Error::input(e.to_string()))?;
        let bytes = encode_draft(&genesis, payload, 0, now_ns)?;
        let sealed = Sealed::new(chain::ZERO_HASH, 0, bytes);
        let head = ledger
            .store
            .append(None, std::slice::from_ref(&sealed), &[])?;
        Ok((
            ledger,
            Appended {
                seq: head.seq,
                hash: head.hash,
                appended: true,
            },
        ))
    }

    /// Opens the existing ledger in `dir`, waiting up to `lock_wait` for the
    /// writer lock.
    pub fn open(dir: &Path, lock_wait: Duration) -> Result<Ledger> {
        if !Self::exists(dir) {
            return Err(Error::input(format!(
                "no ledger at {} (create one with `benchledger init`)",
                dir.display()
            )));
        }
        Self::refuse_unwritable(dir)?;
        prepare_dir(dir)?;
        let file = lock(dir, lock_wait)?;
        let store = SledStore::open(dir)?;
        check_genesis_format(&store, dir)?;
        let ledger = Ledger {
            store,
            dir: dir.to_path_buf(),
            _lock: Some(file),
            read_only: false,
            copy: None,
        };
        let fence = FENCE
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(check) = fence.as_ref() {
            check(&ledger)?;
        }
        drop(fence);
        Ok(ledger)
    }

    /// Opens the existing ledger in `dir` for reading only. Where this
    /// process may write the directory, as [`Ledger::open`] (the writer
    /// lock, waiting up to `lock_wait`); where it may not (a read-only
    /// mount, another user's archive), a private copy of it made in
    /// `scratch` (`log::read_copy`), read exactly as the directory would
    /// be and removed when the ledger is dropped. Nothing is ever appended
    /// through the ledger it returns.
    pub fn open_read(dir: &Path, lock_wait: Duration, scratch: &Path) -> Result<Ledger> {
        if !Self::exists(dir) {
            return Self::open(dir, lock_wait);
        }
        let Some(why) = crate::log::read_copy::not_writable(dir, &Self::store_paths()) else {
            let mut ledger = Self::open(dir, lock_wait)?;
            ledger.read_only = true;
            return Ok(ledger);
        };
        warn_mode(dir)?;
        let copy = crate::log::read_copy::ReadCopy::make(dir, scratch, LOCK_FILE, lock_wait, &why)?;
        tracing::info!(
            "{} cannot be written here ({}); reading a private copy in {}",
            dir.display(),
            why.1,
            copy.dir().display()
        );
        let named = |e: Error| renamed(e, copy.dir(), dir);
        let store = SledStore::open(copy.dir()).map_err(named)?;
        check_genesis_format(&store, dir)?;
        Ok(Ledger {
            dir: copy.dir().to_path_buf(),
            store,
            _lock: None,
            read_only: true,
            copy: Some(copy),
        })
    }

    /// Refuses (exit 4, saying why and what still works) to open an
    /// existing directory this process cannot write for appending.
    fn refuse_unwritable(dir: &Path) -> Result<()> {
        if !dir.is_dir() {
            return Ok(());
        }
        let Some((path, why)) = crate::log::read_copy::not_writable(dir, &Self::store_paths())
        else {
            return Ok(());
        };
        Err(Error::io(
            format!(
                "open {} for appending: {} cannot be written here; this verb appends, so it needs write access to the ledger directory (the read verbs, such as verify, log, export, audit, gate, replay and report, work without it)",
                dir.display(),
                path.display()
            ),
            why,
        ))
    }

    /// The paths of a ledger directory that an open writes, relative to it.
    fn store_paths() -> [&'static str; 6] {
        [
            LOCK_FILE,
            store::STORE_DIR,
            "sled/db",
            "sled/conf",
            store::INDEX_DIR,
            store::WITNESS_FILE,
        ]
    }

    /// The private copy this ledger reads instead of its directory, if it
    /// is one ([`Ledger::open_read`]).
    pub fn read_copy(&self) -> Option<&Path> {
        self.copy.as_ref().map(|c| c.dir())
    }

    /// Sets (or clears) the check every `open` of this process runs under
    /// the writer lock before it hands the ledger out: a driver's fencing
    /// (RUN-2), so that once its lease was taken over nothing it does can
    /// append.
    pub fn set_fence(check: Option<FenceCheck>) {
        *FENCE
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = check;
    }

    /// The raw bytes of the head witness of the ledger in `dir`, read
    /// without the lock: they change with every acknowledged append (a
    /// hint for a long-lived reader, RUN-7; what it then reads is verified).
    pub fn head_stamp(dir: &Path) -> Option<Vec<u8>> {
        store::witness_stamp(dir)
    }

    /// The ledger directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store, for damage harnesses.
    #[doc(hidden)]
    pub fn store(&self) -> &SledStore {
        &self.store
    }

    /// The head, after checking that the record it names links to it
    /// (the paired check before an append).
    pub fn head(&self) -> Result<Head> {
        let raw = self
            .store
            .head_raw()?
            .ok_or_else(|| Error::Damage("seq 0: head_missing: no stored head".into()))?;
        let head = Head::from_bytes(&raw)
            .ok_or_else(|| Error::Damage("head_mismatch: the stored head is malformed".into()))?;
        let value = self.store.value(head.seq)?.ok_or_else(|| {
            Error::Damage(format!(
                "seq {}: truncated: the head names a record that is not stored",
                head.seq
            ))
        })?;
        let ok = chain::split_value(&value).is_some_and(|(prev, hash, bytes)| {
            hash == head.hash && chain::link_hash(&prev, head.seq, bytes) == hash
        });
        if !ok {
            return Err(Error::Damage(format!(
                "seq {}: head_mismatch: the head record does not verify; run verify",
                head.seq
            )));
        }
        if let Some(d) = self.store.witness_damage(Some(head)) {
            return Err(Error::Damage(format!("{d}; run verify")));
        }
        Ok(head)
    }

    /// The storage layout of this ledger (layout 1 is read only).
    pub fn layout(&self) -> Layout {
        self.store.layout()
    }

    /// Makes the idempotency index cover every record up to `head`: opens
    /// it and adds the keys of the (verified) records it does not cover
    /// yet. The index lags the head after a process that appended without
    /// opening it, or died between an append's commit point and its index
    /// update; it never leads it.
    fn ensure_index(&self, head: Option<Head>) -> Result<()> {
        let through = self.store.index_through(head)?;
        let head_seq = head.map(|h| h.seq);
        if through == head_seq {
            return Ok(());
        }
        let Some(head_seq) = head_seq.filter(|h| through.is_none_or(|t| t < *h)) else {
            return Err(Error::Damage(format!(
                "{}: the idempotency index covers seq {} but the head is {}; run verify",
                DamageKind::IndexMismatch,
                through.map_or("none".into(), |t| t.to_string()),
                head_seq.map_or("none".into(), |h| h.to_string())
            )));
        };
        let from = through.map_or(0, |t| t + 1);
        let mut entries = Vec::new();
        for v in self.records_from(from)? {
            let v = v?;
            let seq = v.decoded.record.seq;
            if seq > head_seq {
                break;
            }
            if let Some(k) = v.decoded.record.idempotency_key {
                entries.push((k, seq));
            }
            if entries.len() >= INDEX_CATCH_UP_KEYS {
                self.store.index_add(&entries, seq)?;
                entries.clear();
            }
        }
        self.store.index_add(&entries, head_seq)?;
        tracing::info!("the idempotency index caught up with seqs {from}..={head_seq}");
        Ok(())
    }

    /// Appends drafts atomically after the current head, stamped `now_ns`.
    /// Drafts whose idempotency key was seen with the same kind and payload
    /// append nothing and return the original seq; with a different payload,
    /// the whole append is refused.
    pub fn append(&self, drafts: &[Draft], now_ns: u64) -> Result<Vec<Appended>> {
        self.append_iter(drafts.iter().cloned().map(Ok), now_ns)
    }

    /// `append` over a stream of drafts; the first error (of the stream or
    /// of a draft) appends nothing.
    pub fn append_iter(
        &self,
        drafts: impl IntoIterator<Item = Result<Draft>>,
        now_ns: u64,
    ) -> Result<Vec<Appended>> {
        let mut batch = self.batch(now_ns)?;
        for d in drafts {
            batch.push(d?)?;
        }
        batch.commit()
    }

    /// Starts an atomic batch after the current head: drafts are checked,
    /// encoded and linked as they are pushed (only their encoded records are
    /// held), and nothing is written until `commit`. Dropping the batch
    /// appends nothing.
    pub fn batch(&self, now_ns: u64) -> Result<Batch<'_>> {
        self.writable()?;
        let head = self.head()?;
        Ok(Batch {
            ledger: self,
            head,
            now_ns,
            prev: head.hash,
            out: Vec::new(),
            sealed: Vec::new(),
            index: Vec::new(),
            batch_keys: std::collections::HashMap::new(),
            bytes_total: 0,
            index_ready: false,
        })
    }

    /// Reads and checks one record: its own link, not its predecessors'.
    pub fn read(&self, seq: u64) -> Result<Verified> {
        let value = self
            .store
            .value(seq)?
            .ok_or_else(|| Error::input(format!("no record at seq {seq}")))?;
        let (prev, _, _) = chain::split_value(&value)
            .ok_or_else(|| Error::Damage(format!("seq {seq}: truncated_record: run verify")))?;
        let mut w = if seq == 0 {
            Walker::from_genesis()
        } else {
            Walker::after(seq - 1, prev)
        };
        w.step(&seq.to_be_bytes(), &value)
            .map_err(|d| Error::Damage(d.to_string()))
    }

    /// Verified records from genesis, in order. Each item has passed the
    /// full link check from seq 0; the first damage ends the walk with an
    /// error.
    pub fn records(&self) -> Result<Records<'_>> {
        self.records_from(0)
    }

    /// Verified records from `from` up to the acknowledged head. The walk
    /// starts at the stored link of `from` (checked against its
    /// predecessor's stored hash), so a range read is as strict as a full
    /// one from that point.
    pub fn records_from(&self, from: u64) -> Result<Records<'_>> {
        let head = self.head()?;
        let walker = if from == 0 {
            Walker::from_genesis()
        } else {
            let before = self.read(from - 1)?;
            Walker::after(from - 1, before.hash)
        };
        Ok(Records {
            inner: RecordScan::new(&self.store, from),
            walker,
            head,
            done: false,
            threads: scan::verify_threads(),
            keys: Vec::new().into_iter(),
            ready: Vec::new().into_iter().flatten(),
            end: None,
        })
    }

    /// Recomputes every link from seq 0, checks the head against the
    /// records and the head witness, and checks that the open-tail summary
    /// and the idempotency index are exactly what the records imply. The
    /// records' own checks run on every core (`verify_with` for a count).
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(scan::verify_threads())
    }

    /// `verify` with the records' own checks on `threads` threads (1: one
    /// core, the same walk in seq order).
    pub fn verify_with(&self, threads: usize) -> Result<VerifyReport> {
        let report = |records: u64, damage: Damage| VerifyReport {
            records,
            head: None,
            damage: Some(damage),
        };
        let head_raw = match self.store.head_raw() {
            Ok(h) => h,
            Err(e) => return unreadable(e, 0, 0),
        };
        let head_seq = head_raw
            .as_deref()
            .and_then(Head::from_bytes)
            .map(|h| h.seq);
        let walked = scan::verify_walk(&self.store, head_seq, threads)?;
        if let Some(d) = walked.damage {
            return Ok(report(walked.records, d));
        }
        let count = walked.records;
        let head = match chain::check_head(head_raw.as_deref(), walked.last, walked.at_head) {
            Ok(h) => h,
            Err(d) => return Ok(report(count, d)),
        };
        if let Some(d) = self.store.witness_damage(Some(head)) {
            return Ok(report(count, d));
        }
        let derived = self.check_tail(&walked, head).and_then(|d| match d {
            None => self.check_index(&walked, head),
            some => Ok(some),
        });
        match derived {
            Ok(Some(d)) => Ok(report(count, d)),
            Ok(None) => Ok(VerifyReport {
                records: count,
                head: Some(head),
                damage: None,
            }),
            Err(e) => unreadable(e, count, head.seq),
        }
    }

    /// The open-tail summary (layout 2) names an item boundary at or below
    /// the head and the framed size of the items from there.
    fn check_tail(&self, walked: &Walked, head: Head) -> Result<Option<Damage>> {
        if self.store.layout() == Layout::Records {
            return Ok(None);
        }
        let after = head.seq + 1;
        let raw = self.store.tail_raw()?;
        let stored = raw.as_deref().and_then(store::parse_tail);
        let from_first = |first: u64| -> Option<usize> {
            let at = walked.sizes.iter().position(|s| s.first == first)?;
            Some(walked.sizes[at..].iter().map(|s| s.framed_bytes).sum())
        };
        let ok = match stored {
            None => false,
            Some((first, framed)) if first == after => framed == 0,
            Some((first, framed)) => first < after && from_first(first) == Some(framed),
        };
        Ok((!ok).then(|| {
            Damage::new(
                stored.map_or(after, |(first, _)| first.min(after)),
                DamageKind::IndexMismatch,
                format!(
                    "the open-tail summary in meta ({}) is not the records' (the tail must start at a segment and hold its framed size)",
                    stored.map_or("none".into(), |(f, b)| format!("seq {f}, {b} bytes"))
                ),
            )
        }))
    }

    /// The idempotency index holds exactly the keys of the records it
    /// covers (those up to its last indexed seq, which is at most the
    /// head).
    fn check_index(&self, walked: &Walked, head: Head) -> Result<Option<Damage>> {
        let through = self.store.index_through(Some(head))?;
        if let Some(t) = through.filter(|t| *t > head.seq) {
            return Ok(Some(Damage::new(
                head.seq,
                DamageKind::IndexMismatch,
                format!("the idempotency index covers seq {t}, past the head"),
            )));
        }
        // Both sides in key order: the records' keys it covers, and the
        // index as stored. The first entry of the index that is not a
        // record's key with its seq is named; else the first key missing.
        let mut keys = walked
            .keys
            .iter()
            .filter(|(_, s)| through.is_some_and(|t| *s <= t))
            .peekable();
        let mut wrong: Option<u64> = None;
        let mut missing: Option<u64> = None;
        for pair in self.store.idempotency_scan() {
            let (k, v) = pair?;
            let seq = <[u8; 8]>::try_from(&v[..])
                .map(u64::from_be_bytes)
                .unwrap_or(u64::MAX);
            while let Some((_, s)) = keys.next_if(|(key, _)| key.as_slice() < &k[..]) {
                missing = missing.or(Some(*s));
            }
            match keys.next_if(|(key, _)| key.as_slice() == &k[..]) {
                Some((_, s)) if *s == seq => {}
                _ => {
                    wrong = Some(seq);
                    break;
                }
            }
        }
        if wrong.is_none() {
            missing = missing.or(keys.next().map(|(_, s)| *s));
        }
        let Some(seq) = wrong.or(missing) else {
            return Ok(None);
        };
        Ok(Some(Damage::new(
            seq,
            DamageKind::IndexMismatch,
            "the idempotency index disagrees with the records",
        )))
    }

    /// Appends already-sealed records (an import). The batch must continue
    /// the current head.
    pub(crate) fn append_sealed(
        &self,
        expected: Option<Head>,
        batch: &[Sealed],
        index: &[(String, u64)],
    ) -> Result<Head> {
        self.writable()?;
        if !index.is_empty() {
            self.ensure_index(expected)?;
        }
        self.store.append(expected, batch, index)
    }

    /// Refuses an append through a ledger opened for reading (exit 4: the
    /// verb that tried needs write access).
    fn writable(&self) -> Result<()> {
        if !self.read_only {
            return Ok(());
        }
        Err(Error::io(
            format!(
                "append to {}: the ledger was opened for reading only; a verb that appends opens it with write access",
                self.dir.display()
            ),
            std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem),
        ))
    }

    /// Opens a fresh, empty store in `dir` for an import (no genesis).
    pub(crate) fn create_empty(dir: &Path, lock_wait: Duration) -> Result<Ledger> {
        prepare_dir(dir)?;
        let file = lock(dir, lock_wait)?;
        if Self::exists(dir) {
            return Err(Error::input(format!(
                "{} already holds a ledger",
                dir.display()
            )));
        }
        Ok(Ledger {
            store: SledStore::create(dir)?,
            dir: dir.to_path_buf(),
            _lock: Some(file),
            read_only: false,
            copy: None,
        })
    }
}

/// `e` with the path of a read copy replaced by the directory it copies, so
/// a message names the ledger the user gave.
fn renamed(e: Error, copy: &Path, dir: &Path) -> Error {
    let (from, to) = (copy.display().to_string(), dir.display().to_string());
    match e {
        Error::Input(m) => Error::Input(m.replace(&from, &to)),
        Error::Damage(m) => Error::Damage(m.replace(&from, &to)),
        Error::NotHeld(m) => Error::NotHeld(m.replace(&from, &to)),
        Error::Io { context, source } => Error::Io {
            context: context.replace(&from, &to),
            source,
        },
        other => other,
    }
}

/// Refuses a ledger whose genesis declares a format this build does not
/// read, naming both (exit 2): its records mean what that format says, not
/// what this build would read into them. Genesis bytes that do not read or
/// decode are left to the verified walk, which names them as damage.
fn check_genesis_format(store: &SledStore, dir: &Path) -> Result<()> {
    let Some(value) = store.value(0).ok().flatten() else {
        return Ok(());
    };
    let Some((_, _, bytes)) = chain::split_value(&value) else {
        return Ok(());
    };
    match Record::decode(bytes) {
        Ok(Decoded {
            event: Event::LedgerCreated(g),
            ..
        }) if g.format_version != FORMAT_VERSION => Err(Error::input(format!(
            "ledger {}: its genesis declares format_version {}; this build of benchledger reads format {FORMAT_VERSION} only (use a benchledger that reads format {})",
            dir.display(),
            g.format_version,
            g.format_version
        ))),
        _ => Ok(()),
    }
}

/// A verify report of storage the engine cannot read (an `Error::Damage`
/// from the store); other errors (the environment's) stay errors.
fn unreadable(e: Error, records: u64, seq: u64) -> Result<VerifyReport> {
    match e {
        Error::Damage(why) => Ok(VerifyReport {
            records,
            head: None,
            damage: Some(Damage::new(seq, DamageKind::StorageUnreadable, why)),
        }),
        other => Err(other),
    }
}

/// An atomic append being built (see `Ledger::batch`).
pub struct Batch<'a> {
    ledger: &'a Ledger,
    head: Head,
    now_ns: u64,
    prev: Hash,
    out: Vec<Appended>,
    sealed: Vec<Sealed>,
    index: Vec<(String, u64)>,
    /// Keys first seen in this batch -> (position in `sealed`, kind,
    /// BLAKE3 of the payload).
    batch_keys: std::collections::HashMap<String, (usize, &'static str, [u8; 32])>,
    bytes_total: usize,
    /// Whether the idempotency index was made current for this batch.
    index_ready: bool,
}

impl Batch<'_> {
    /// Checks, encodes and links one draft. A draft whose idempotency key was
    /// seen (in the ledger or earlier in this batch) with the same kind and
    /// payload adds nothing and reports the original; with another payload
    /// it is refused (LEDGER-2).
    pub fn push(&mut self, d: Draft) -> Result<Appended> {
        let payload = crate::log::codec::encode_payload(&d.event)
            .map_err(|e| Error::input(format!("{}: {e}", d.event.kind())))?;
        if let Some(key) = &d.idempotency_key {
            record::check_idempotency_key(key)?;
            if let Some((n, kind, earlier)) = self.batch_keys.get(key) {
                let s = &self.sealed[*n];
                if *kind != d.event.kind() || *earlier != *blake3::hash(&payload).as_bytes() {
                    return Err(idempotency_conflict(key, s.seq));
                }
                let a = Appended {
                    seq: s.seq,
                    hash: s.hash,
                    appended: false,
                };
                self.out.push(a);
                return Ok(a);
            }
            if !self.index_ready {
                self.ledger.ensure_index(Some(self.head))?;
                self.index_ready = true;
            }
            if let Some(seq) = self.ledger.store.idempotency_seq(key)? {
                let original = self.ledger.read(seq)?;
                if original.decoded.record.kind != d.event.kind()
                    || original.decoded.record.payload != payload
                {
                    return Err(idempotency_conflict(key, seq));
                }
                let a = Appended {
                    seq,
                    hash: original.hash,
                    appended: false,
                };
                self.out.push(a);
                return Ok(a);
            }
        }
        let seq = self.head.seq + 1 + self.sealed.len() as u64;
        let payload_hash = d
            .idempotency_key
            .as_ref()
            .map(|_| *blake3::hash(&payload).as_bytes());
        let bytes = encode_draft(&d, payload, seq, self.now_ns)?;
        self.bytes_total += bytes.len();
        check_batch(self.sealed.len() + 1, self.bytes_total)?;
        let s = Sealed::new(self.prev, seq, bytes);
        self.prev = s.hash;
        if let Some(key) = d.idempotency_key {
            self.index.push((key.clone(), seq));
            self.batch_keys.insert(
                key,
                (
                    self.sealed.len(),
                    d.event.kind(),
                    payload_hash.unwrap_or_default(),
                ),
            );
        }
        let a = Appended {
            seq,
            hash: s.hash,
            appended: true,
        };
        self.out.push(a);
        self.sealed.push(s);
        Ok(a)
    }

    /// New records in the batch so far.
    pub fn new_records(&self) -> usize {
        self.sealed.len()
    }

    /// Whether committing the batch now would seal the store's open tail
    /// into segments (for the kill test).
    #[doc(hidden)]
    pub fn seals(&self) -> Result<bool> {
        let lens: Vec<usize> = self
            .sealed
            .iter()
            .map(|s| s.bytes.len() + chain::VALUE_PREFIX_BYTES)
            .collect();
        self.ledger.store.seals(self.head, &lens)
    }

    /// Writes the batch in one transaction (CAS on the head) and flushes;
    /// returns the outcome of every pushed draft, in order.
    pub fn commit(self) -> Result<Vec<Appended>> {
        if !self.sealed.is_empty() {
            self.ledger
                .store
                .append(Some(self.head), &self.sealed, &self.index)?;
        }
        Ok(self.out)
    }
}

fn idempotency_conflict(key: &str, seq: u64) -> Error {
    Error::Refused {
        rule: Rule::Ledger2,
        message: format!(
            "idempotency key {key:?} was used at seq {seq} with a different payload; nothing was appended"
        ),
    }
}

/// Verified records in seq order up to the head; ends at the first damage
/// with an error.
///
/// Records are read a batch at a time; each record's own checks (its link
/// hash and its canonical decode, which depend on nothing before it) run
/// on every core, and the links are then joined in order as the records
/// are handed out (`Walker::join`): the same checks, in the same order, as
/// `Walker::step` one record at a time.
pub struct Records<'a> {
    inner: RecordScan<'a>,
    walker: Walker,
    head: Head,
    done: bool,
    threads: usize,
    /// The keys of the checked records not handed out yet, in order.
    keys: std::vec::IntoIter<crate::log::store::Bytes>,
    /// Their checks, in the same order (one vector per checking thread).
    ready: std::iter::Flatten<std::vec::IntoIter<Vec<Checked<Decoded>>>>,
    /// How the scan ended after `ready`, once it has.
    end: Option<Result<Option<Damage>>>,
}

/// Records read and checked per batch.
const READ_BATCH_RECORDS: usize = 2048;

impl Records<'_> {
    /// Reads and checks the next batch of records (at most up to the head).
    fn fill(&mut self) {
        let want = (self.head.seq + 1 - self.walker.next_seq()).min(READ_BATCH_RECORDS as u64);
        let mut batch = Vec::with_capacity(want as usize);
        while (batch.len() as u64) < want {
            match self.inner.next() {
                None => {
                    self.end = Some(Ok(None));
                    break;
                }
                Some(Err(e)) => {
                    self.end = Some(Err(e));
                    break;
                }
                Some(Ok(Scanned::Damage(d))) => {
                    self.end = Some(Ok(Some(d)));
                    break;
                }
                Some(Ok(Scanned::Record { key, value })) => batch.push((key, value)),
            }
        }
        self.ready = scan::check_batch(&batch, self.threads, |d| d)
            .into_iter()
            .flatten();
        self.keys = batch
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>()
            .into_iter();
    }

    fn step(&mut self) -> Result<Verified> {
        if self.keys.len() == 0 && self.end.is_none() {
            self.fill();
        }
        let (Some(key), Some(c)) = (self.keys.next(), self.ready.next()) else {
            return match self.end.take() {
                Some(Err(e)) => Err(e),
                Some(Ok(Some(d))) => Err(Error::Damage(format!("{d}; run verify"))),
                _ => Err(Error::Damage(format!(
                    "seq {}: truncated: the log ends before the head {}",
                    self.walker.next_seq(),
                    self.head.seq
                ))),
            };
        };
        let link = c.own.as_ref().ok().copied();
        let decoded = self
            .walker
            .join(&key, c.own, c.decoded)
            .map_err(|d| Error::Damage(d.to_string()))?;
        let (prev, hash) = link.expect("a joined record passed its own checks");
        if decoded.record.seq == self.head.seq && hash != self.head.hash {
            return Err(Error::Damage(format!(
                "seq {}: head_mismatch: run verify",
                self.head.seq
            )));
        }
        Ok(Verified {
            prev,
            hash,
            decoded,
        })
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Verified>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.walker.next_seq() > self.head.seq {
            return None;
        }
        let item = self.step();
        if item.is_err() {
            self.done = true;
        }
        Some(item)
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
