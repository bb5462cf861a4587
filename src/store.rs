//! Storage behind a small trait; the only module that knows sled (pinned
//! `=0.34.7`).
//!
//! Trees: `records` (seq big-endian -> prev || hash || record bytes), `meta`
//! (`head` -> seq big-endian || hash) and `idempotency` (client key -> seq
//! big-endian), the one index, derivable from the records. The store never
//! decodes payloads, never rewrites and never deletes.

use std::path::Path;

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use crate::chain::{Head, Sealed};
use crate::error::{Error, Result};

const HEAD_KEY: &[u8] = b"head";

/// sled's page cache, in bytes (sled's default is 1 GiB). The ledger reads
/// sequentially and verifies what it reads; a small cache bounds memory.
pub const SLED_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// One stored (key, value) pair, as read.
pub type RawPair = (Vec<u8>, Vec<u8>);

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
}

/// Why a transaction was aborted.
enum Abort {
    HeadMoved { found: Option<Head> },
    Occupied(u64),
}

impl SledStore {
    /// Opens (or creates) the sled database in `path`. The caller holds the
    /// ledger's lock; sled takes its own exclusive file lock as well.
    pub fn open(path: &Path) -> Result<SledStore> {
        let ctx = || format!("open {}", path.display());
        discard_interrupted_snapshots(path)?;
        let db = sled::Config::new()
            .path(path)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(SLED_CACHE_BYTES)
            .open()
            .map_err(|e| Error::io(ctx(), e))?;
        let tree = |name: &str| db.open_tree(name).map_err(|e| Error::io(ctx(), e));
        Ok(SledStore {
            records: tree("records")?,
            meta: tree("meta")?,
            idempotency: tree("idempotency")?,
            db,
        })
    }

    /// Writes a raw value, bypassing every check. Only for damage harnesses
    /// (tamper tests); the ledger never calls it.
    #[doc(hidden)]
    pub fn damage_put(&self, tree: DamageTree, key: &[u8], value: &[u8]) -> Result<()> {
        self.raw_tree(tree)
            .insert(key, value)
            .map_err(|e| Error::io("damage put", e))?;
        self.db.flush().map_err(|e| Error::io("flush", e))?;
        Ok(())
    }

    /// Removes a raw key, bypassing every check. Only for damage harnesses.
    #[doc(hidden)]
    pub fn damage_remove(&self, tree: DamageTree, key: &[u8]) -> Result<()> {
        self.raw_tree(tree)
            .remove(key)
            .map_err(|e| Error::io("damage remove", e))?;
        self.db.flush().map_err(|e| Error::io("flush", e))?;
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
        r.map(|(k, v)| (k.to_vec(), v.to_vec()))
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
                let show = |h: Option<Head>| h.map_or("none".to_string(), |h| h.seq.to_string());
                return Err(Error::HeadMoved {
                    expected: show(expected),
                    found: show(found),
                });
            }
            Err(TransactionError::Abort(Abort::Occupied(seq))) => {
                return Err(Error::Damage(format!(
                    "seq {seq}: torn_tail: a record already sits past the head; run verify"
                )))
            }
            Err(TransactionError::Storage(e)) => return Err(Error::io("append", e)),
        }
        self.db.flush().map_err(|e| Error::io("flush", e))?;
        Ok(new_head)
    }
}
