//! Walking the stored records: the store's items (segments, or layout 1's
//! single values) as (seq, value) pairs in seq order, and the verification
//! walk, which checks each record's own link and encoding on every core and
//! then joins the links in order.
//!
//! Each record's link hash depends only on its stored prev, its seq and its
//! bytes, and its canonical decode only on its bytes, so those checks run
//! in parallel over a batch of records held as contiguous memory (slices of
//! the segments); the equality of each stored prev with the hash before it
//! is a cheap second pass in seq order (`Walker::join`), which reports
//! exactly the damage a sequential `Walker::step` would.

use std::collections::VecDeque;

use crate::error::{Error, Result};
use crate::log::chain::{self, Damage, DamageKind, Hash, Head, Walker};
use crate::log::record::Decoded;
use crate::log::segment;
use crate::log::store::{Bytes, Item, Store};

/// Records per parallel verification batch.
const VERIFY_BATCH_RECORDS: usize = 8192;

/// One step of a record scan.
pub(crate) enum Scanned {
    /// A stored record: its key (the seq, big-endian; raw for a layout-1
    /// key that is not 8 bytes) and its stored value.
    Record { key: Bytes, value: Bytes },
    /// Where the stored records stop being readable.
    Damage(Damage),
}

/// An item's first seq and framed size, as the scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ItemSize {
    pub first: u64,
    pub records: usize,
    pub framed_bytes: usize,
}

/// The stored records from `from` in seq order. Framing damage, overlapping
/// segments and storage the engine cannot read end the scan with
/// `Scanned::Damage` at the first seq that could not be read; an error of
/// the environment is an `Err`.
pub(crate) struct RecordScan<'a> {
    items: Box<dyn Iterator<Item = Result<Item>> + 'a>,
    from: u64,
    /// The seq after the last item's records (`None` before the first).
    end: Option<u64>,
    queue: VecDeque<Scanned>,
    done: bool,
    /// Item sizes seen, when asked for (`verify` checks the open tail).
    pub sizes: Option<Vec<ItemSize>>,
}

impl<'a> RecordScan<'a> {
    pub(crate) fn new(store: &'a dyn Store, from: u64) -> RecordScan<'a> {
        RecordScan {
            items: store.items(from),
            from,
            end: None,
            queue: VecDeque::new(),
            done: false,
            sizes: None,
        }
    }

    /// Also records every item's size (`sizes`).
    pub(crate) fn with_sizes(mut self) -> Self {
        self.sizes = Some(Vec::new());
        self
    }

    /// Queues the records of one item.
    fn unpack(&mut self, item: Item) {
        let Some(first) = item.first() else {
            // A key that is not a seq: the walk names it.
            self.queue.push_back(Scanned::Record {
                key: item.key,
                value: item.bytes,
            });
            return;
        };
        if !item.framed {
            self.end = Some(first.saturating_add(1));
            self.queue.push_back(Scanned::Record {
                key: item.key,
                value: item.bytes,
            });
            return;
        }
        if let Some(end) = self.end.filter(|end| first < *end) {
            self.queue.push_back(Scanned::Damage(Damage::new(
                end,
                DamageKind::StorageUnreadable,
                format!(
                    "the segment at seq {first} overlaps the records before it (which end at seq {})",
                    end - 1
                ),
            )));
            return;
        }
        let (spans, damage) = segment::frames(first, &item.bytes);
        if let Some(sizes) = &mut self.sizes {
            sizes.push(ItemSize {
                first,
                records: spans.len(),
                framed_bytes: segment::encoded_len(spans.iter().map(|r| r.len()))
                    - segment::COUNT_BYTES,
            });
        }
        let n_spans = spans.len();
        for (n, r) in spans.into_iter().enumerate() {
            let seq = first + n as u64;
            if seq >= self.from {
                self.queue.push_back(Scanned::Record {
                    key: Bytes::copy_of(&seq.to_be_bytes()),
                    value: item.bytes.slice(r),
                });
            }
        }
        self.end = Some(first + n_spans as u64);
        if let Some(d) = damage {
            self.queue.push_back(Scanned::Damage(d));
        }
    }
}

impl Iterator for RecordScan<'_> {
    type Item = Result<Scanned>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(s) = self.queue.pop_front() {
                if matches!(s, Scanned::Damage(_)) {
                    self.done = true;
                    self.queue.clear();
                }
                return Some(Ok(s));
            }
            if self.done {
                return None;
            }
            match self.items.next()? {
                Ok(item) => self.unpack(item),
                Err(Error::Damage(why)) => {
                    self.done = true;
                    return Some(Ok(Scanned::Damage(Damage::new(
                        self.end.unwrap_or(self.from),
                        DamageKind::StorageUnreadable,
                        why,
                    ))));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What the verification walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Records that verified before the first damage.
    pub records: u64,
    /// The last verified record.
    pub last: Option<Head>,
    /// The hash of the record at the stored head's seq, if the walk saw it.
    pub at_head: Option<Hash>,
    /// Every idempotency key of the records with its seq, sorted by key
    /// (each key once: a key on two records is damage).
    pub keys: Vec<(Vec<u8>, u64)>,
    /// Every item's size.
    pub sizes: Vec<ItemSize>,
    /// The first damage.
    pub damage: Option<Damage>,
}

/// A record's own checks: the link (`chain::check_own`) and, when it
/// holds, the canonical decode (`chain::decode_at`), keeping of the decoded
/// record what the caller needs (`T`).
pub(crate) struct Checked<T> {
    pub own: Result<(Hash, Hash), Damage>,
    pub decoded: Option<Result<T, Damage>>,
}

fn check_one<T>(key: &[u8], value: &[u8], keep: fn(Decoded) -> T) -> Checked<T> {
    let Ok(seq) = <[u8; 8]>::try_from(key).map(u64::from_be_bytes) else {
        // `Walker::join` reports the key before looking at this.
        return Checked {
            own: Err(Damage::new(0, DamageKind::Undecodable, "not a seq")),
            decoded: None,
        };
    };
    match chain::check_own(seq, value) {
        Err(d) => Checked {
            own: Err(d),
            decoded: None,
        },
        Ok(own) => Checked {
            own: Ok((own.prev, own.hash)),
            decoded: Some(chain::decode_at(seq, own.bytes).map(keep)),
        },
    }
}

/// Batches of fewer records than this are checked on the calling thread.
const PARALLEL_RECORDS_MIN: usize = 256;

/// The own checks of a batch, on up to `threads` threads (contiguous
/// chunks), in order: one vector per chunk, so no result is moved again
/// to join them (`Iterator::flatten` walks them in order).
pub(crate) fn check_batch<T: Send>(
    batch: &[(Bytes, Bytes)],
    threads: usize,
    keep: fn(Decoded) -> T,
) -> Vec<Vec<Checked<T>>> {
    if threads <= 1 || batch.len() < PARALLEL_RECORDS_MIN {
        return vec![batch.iter().map(|(k, v)| check_one(k, v, keep)).collect()];
    }
    let chunk = batch.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = batch
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(k, v)| check_one(k, v, keep))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a verification thread does not panic"))
            .collect()
    })
}

fn idempotency_key(d: Decoded) -> Option<String> {
    d.record.idempotency_key
}

/// The verification walk from seq 0 over every stored record, `threads`
/// at a time; stops at the first damage.
pub(crate) fn verify_walk(
    store: &dyn Store,
    head_seq: Option<u64>,
    threads: usize,
) -> Result<Walked> {
    let mut scan = RecordScan::new(store, 0).with_sizes();
    let mut walker = Walker::from_genesis();
    let mut out = Walked::default();
    let mut batch: Vec<(Bytes, Bytes)> = Vec::with_capacity(VERIFY_BATCH_RECORDS);
    let mut ended: Option<Damage> = None;
    loop {
        batch.clear();
        while batch.len() < VERIFY_BATCH_RECORDS {
            match scan.next().transpose()? {
                None => break,
                Some(Scanned::Record { key, value }) => batch.push((key, value)),
                Some(Scanned::Damage(d)) => {
                    ended = Some(d);
                    break;
                }
            }
        }
        let checked = check_batch(&batch, threads, idempotency_key);
        for ((key, _), c) in batch.iter().zip(checked.into_iter().flatten()) {
            match walker.join(key, c.own, c.decoded) {
                Err(d) => {
                    out.damage = Some(d);
                    out.records = walker.next_seq();
                    return Ok(sorted_keys(out));
                }
                Ok(idem) => {
                    let seq = walker.next_seq() - 1;
                    let hash = walker.prev_hash();
                    if let Some(k) = idem {
                        out.keys.push((k.into_bytes(), seq));
                    }
                    if Some(seq) == head_seq {
                        out.at_head = Some(hash);
                    }
                    out.last = Some(Head { seq, hash });
                }
            }
        }
        if let Some(d) = ended {
            out.records = walker.next_seq();
            out.damage = Some(d);
            return Ok(sorted_keys(out));
        }
        if batch.len() < VERIFY_BATCH_RECORDS {
            break;
        }
    }
    out.records = out.last.map_or(0, |h| h.seq + 1);
    out.sizes = scan.sizes.take().unwrap_or_default();
    Ok(sorted_keys(out))
}

/// Sorts the walk's keys; a key on two records is damage at the later
/// record (what a walk that checked each key as it went would have stopped
/// at, before any later damage).
fn sorted_keys(mut out: Walked) -> Walked {
    out.keys.sort_unstable();
    let twice = out
        .keys
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1].1)
        .min();
    if let Some(seq) = twice {
        out.damage = Some(Damage::new(
            seq,
            DamageKind::IndexMismatch,
            "an idempotency key appears on two records",
        ));
        out.records = seq;
    }
    out
}

/// The threads verification uses: every core the process may run on.
pub fn verify_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
