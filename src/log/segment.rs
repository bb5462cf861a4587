//! Segments: many records' stored values in one item of the store
//! (SPEC.md section 5, storage layout 2).
//!
//! A segment is `u32_be(count) || count x (u32_be(len) || value)`, each
//! value a record's stored value `prev || hash || record_bytes`
//! (`chain.rs`), in seq order from the segment's first seq, which is its key
//! in the store. The framing only delimits the values: each record's link
//! hash covers exactly its own stored bytes, as before, so the chain, the
//! vectors and the export do not depend on how records are grouped.
//!
//! The store holds sealed segments of up to `SEGMENT_RECORDS_MAX` records
//! and `SEGMENT_BYTES_MAX` bytes, and an open tail of small segments (one per
//! append) that an append seals once they would fill one (`plan`). A record
//! is found by seq through the segments' keys: the segment with the greatest
//! first seq at or below it.
//!
//! Nothing here trusts its input: a segment that does not frame exactly is
//! damage at the first seq that cannot be delimited, never a panic.

use std::ops::Range;

use crate::limits::{SEGMENT_BYTES_MAX, SEGMENT_RECORDS_MAX};
use crate::log::chain::{Damage, DamageKind};

/// Bytes of a segment's record count.
pub const COUNT_BYTES: usize = 4;
/// Bytes of the length before each value.
pub const LEN_BYTES: usize = 4;

/// The encoded size of a segment holding values of lengths `lens`.
pub fn encoded_len(lens: impl IntoIterator<Item = usize>) -> usize {
    COUNT_BYTES + lens.into_iter().map(|l| LEN_BYTES + l).sum::<usize>()
}

/// Encodes values as one segment. Programmer error (asserts): no values, or
/// a value longer than `u32::MAX` (records are at most `RECORD_BYTES_MAX`).
pub fn encode<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![0u8; COUNT_BYTES];
    let mut count = 0u32;
    for v in values {
        let len = u32::try_from(v.len()).expect("a stored value fits a u32 length");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(v);
        count += 1;
    }
    assert!(count > 0, "a segment holds at least one record");
    out[..COUNT_BYTES].copy_from_slice(&count.to_be_bytes());
    out
}

/// The byte ranges of a segment's values, in order, as far as they can be
/// delimited; then the damage where the framing breaks, if it does. `first`
/// is the segment's first seq (its key): the damage names the first seq
/// whose value cannot be delimited.
pub fn frames(first: u64, bytes: &[u8]) -> (Vec<Range<usize>>, Option<Damage>) {
    let at = |n: usize| first.saturating_add(n as u64);
    let Some(count) = bytes
        .get(..COUNT_BYTES)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
    else {
        return (
            Vec::new(),
            Some(Damage::new(
                first,
                DamageKind::StorageUnreadable,
                format!(
                    "the segment at seq {first} is {} bytes, shorter than its record count",
                    bytes.len()
                ),
            )),
        );
    };
    if count == 0 {
        return (
            Vec::new(),
            Some(Damage::new(
                first,
                DamageKind::StorageUnreadable,
                format!("the segment at seq {first} holds no records"),
            )),
        );
    }
    // Every value takes at least its length: a count the bytes cannot hold
    // is found while walking, without allocating for it.
    let mut spans = Vec::with_capacity(count.min(bytes.len() / LEN_BYTES));
    let mut pos = COUNT_BYTES;
    for n in 0..count {
        let Some(len) = bytes
            .get(pos..pos + LEN_BYTES)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
        else {
            return (spans, Some(ends_early(first, at(n), count, bytes.len())));
        };
        let start = pos + LEN_BYTES;
        let Some(end) = start.checked_add(len).filter(|e| *e <= bytes.len()) else {
            return (spans, Some(ends_early(first, at(n), count, bytes.len())));
        };
        spans.push(start..end);
        pos = end;
    }
    if pos != bytes.len() {
        let d = Damage::new(
            at(count),
            DamageKind::StorageUnreadable,
            format!(
                "the segment at seq {first} has {} bytes after its {count} records",
                bytes.len() - pos
            ),
        );
        return (spans, Some(d));
    }
    (spans, None)
}

fn ends_early(first: u64, seq: u64, count: usize, len: usize) -> Damage {
    Damage::new(
        seq,
        DamageKind::StorageUnreadable,
        format!(
            "the segment at seq {first} ({len} bytes) ends inside record {seq} of the {count} it claims"
        ),
    )
}

/// How an append's records are grouped into segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Record counts of the segments to write, in order (their values are
    /// the open tail's, if `merges_tail`, then the batch's).
    pub counts: Vec<usize>,
    /// Whether the open tail is rewritten into these segments (else the
    /// batch is written after it as one new open segment).
    pub merges_tail: bool,
    /// Whether the last segment stays open (not full); every other one is
    /// sealed.
    pub last_open: bool,
}

/// The open tail of the store: the records after the last sealed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tail {
    /// Records in it.
    pub records: usize,
    /// Its values' framed size: the sum of `LEN_BYTES + len`.
    pub framed_bytes: usize,
}

impl Tail {
    /// Whether a segment holding the tail and `records` more values of
    /// `framed_bytes` would still be open (below both bounds).
    pub fn fits(&self, records: usize, framed_bytes: usize) -> bool {
        self.records + records < SEGMENT_RECORDS_MAX
            && COUNT_BYTES + self.framed_bytes + framed_bytes <= SEGMENT_BYTES_MAX
    }
}

/// Plans an append of values of lengths `lens` after the open `tail`: when
/// the tail and the batch still fit one open segment, the batch becomes one
/// more open segment; otherwise the tail and the batch are cut into sealed
/// segments (`cut`), the last one left open unless it is full.
pub fn plan(tail: Tail, lens: &[usize]) -> Plan {
    let framed: usize = lens.iter().map(|l| LEN_BYTES + l).sum();
    if tail.fits(lens.len(), framed) {
        return Plan {
            counts: vec![lens.len()],
            merges_tail: false,
            last_open: true,
        };
    }
    let (counts, last_full) = cut(tail.framed_bytes, tail.records, lens);
    Plan {
        counts,
        merges_tail: tail.records > 0,
        last_open: !last_full,
    }
}

/// Cuts a run of values (the tail's `tail_records` values of
/// `tail_framed` framed bytes, which fit one segment, then `lens`) into
/// segments greedily: a segment closes when it holds `SEGMENT_RECORDS_MAX`
/// records or the next value would take it past `SEGMENT_BYTES_MAX` (a
/// single larger value is a segment of its own). Returns each segment's
/// record count and whether the last one is full.
pub fn cut(tail_framed: usize, tail_records: usize, lens: &[usize]) -> (Vec<usize>, bool) {
    let mut counts = Vec::new();
    let (mut records, mut bytes) = (tail_records, COUNT_BYTES + tail_framed);
    for &len in lens {
        let add = LEN_BYTES + len;
        if records > 0 && (records == SEGMENT_RECORDS_MAX || bytes + add > SEGMENT_BYTES_MAX) {
            counts.push(records);
            records = 0;
            bytes = COUNT_BYTES;
        }
        records += 1;
        bytes += add;
    }
    let full = records == SEGMENT_RECORDS_MAX || bytes > SEGMENT_BYTES_MAX;
    if records > 0 {
        counts.push(records);
    }
    (counts, full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_frames_gives_back_every_value() {
        let values: Vec<Vec<u8>> = (0..5).map(|i| vec![i as u8; 64 + i * 7]).collect();
        let seg = encode(values.iter().map(|v| v.as_slice()));
        assert_eq!(seg.len(), encoded_len(values.iter().map(|v| v.len())));
        let (spans, damage) = frames(10, &seg);
        assert!(damage.is_none());
        let got: Vec<&[u8]> = spans.iter().map(|r| &seg[r.clone()]).collect();
        let want: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn broken_framing_is_damage_at_the_first_seq_it_hides() {
        let values: Vec<Vec<u8>> = (0..3).map(|i| vec![i as u8; 70]).collect();
        let seg = encode(values.iter().map(|v| v.as_slice()));
        // cut inside the third value: two delimited, damage at seq 102
        let (spans, d) = frames(100, &seg[..seg.len() - 1]);
        assert_eq!(spans.len(), 2);
        let d = d.unwrap();
        assert_eq!((d.seq, d.kind), (102, DamageKind::StorageUnreadable));
        // trailing bytes: all three delimited, damage at seq 103
        let mut long = seg.clone();
        long.push(0);
        let (spans, d) = frames(100, &long);
        assert_eq!((spans.len(), d.unwrap().seq), (3, 103));
        // a count the bytes cannot hold, a zero count, no count at all
        let mut big = seg.clone();
        big[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(frames(100, &big).1.unwrap().seq, 103);
        assert_eq!(frames(100, &[0, 0, 0, 0]).1.unwrap().seq, 100);
        assert_eq!(frames(100, &[0, 0]).1.unwrap().seq, 100);
        // a length past the end
        let mut len = seg.clone();
        len[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let (spans, d) = frames(100, &len);
        assert_eq!((spans.len(), d.unwrap().seq), (0, 100));
    }

    #[test]
    fn any_mutation_of_a_segment_frames_without_panicking() {
        let values: Vec<Vec<u8>> = (0..4).map(|i| vec![i as u8; 66]).collect();
        let seg = encode(values.iter().map(|v| v.as_slice()));
        for m in crate::log::codec::mutations(&seg) {
            let (spans, _) = frames(0, &m);
            assert!(spans.iter().all(|r| r.end <= m.len()));
        }
    }

    #[test]
    fn cut_closes_a_segment_at_either_bound() {
        // by records: SEGMENT_RECORDS_MAX small values close one segment
        let small = vec![1usize; SEGMENT_RECORDS_MAX + 1];
        let (counts, full) = cut(0, 0, &small);
        assert_eq!(counts, vec![SEGMENT_RECORDS_MAX, 1]);
        assert!(!full);
        let (counts, full) = cut(0, 0, &small[..SEGMENT_RECORDS_MAX]);
        assert_eq!(counts, vec![SEGMENT_RECORDS_MAX]);
        assert!(full);
        // by bytes: a segment is never past SEGMENT_BYTES_MAX unless it is
        // a single larger value
        let lens = vec![1000usize; 200];
        let (counts, _) = cut(0, 0, &lens);
        let per = (SEGMENT_BYTES_MAX - COUNT_BYTES) / (LEN_BYTES + 1000);
        assert!(counts[..counts.len() - 1].iter().all(|c| *c == per));
        assert_eq!(counts.iter().sum::<usize>(), 200);
        let (counts, full) = cut(0, 0, &[SEGMENT_BYTES_MAX * 2, 10, 10]);
        assert_eq!(counts, vec![1, 2]);
        assert!(!full);
        // at the byte bound exactly: still one segment, and full once the
        // next value would not fit
        let exact = SEGMENT_BYTES_MAX - COUNT_BYTES - LEN_BYTES;
        assert_eq!(cut(0, 0, &[exact]).0, vec![1]);
        assert_eq!(cut(0, 0, &[exact, 1]).0, vec![1, 1]);
        assert_eq!(cut(0, 0, &[exact + 1, 1]).0, vec![1, 1]);
    }

    #[test]
    fn a_small_append_adds_an_open_segment_until_the_tail_would_fill_one() {
        let tail = Tail {
            records: 3,
            framed_bytes: 3 * (LEN_BYTES + 100),
        };
        let p = plan(tail, &[100, 100]);
        assert_eq!(
            (p.counts, p.merges_tail, p.last_open),
            (vec![2], false, true)
        );
        let near = Tail {
            records: SEGMENT_RECORDS_MAX - 1,
            framed_bytes: (SEGMENT_RECORDS_MAX - 1) * (LEN_BYTES + 1),
        };
        assert!(!near.fits(1, LEN_BYTES + 1));
        let p = plan(near, &[1, 1]);
        assert_eq!(p.counts, vec![SEGMENT_RECORDS_MAX, 1]);
        assert!(p.merges_tail && p.last_open);
        let p = plan(Tail::default(), &vec![1; SEGMENT_RECORDS_MAX]);
        assert_eq!(p.counts, vec![SEGMENT_RECORDS_MAX]);
        assert!(!p.merges_tail && !p.last_open);
    }
}
