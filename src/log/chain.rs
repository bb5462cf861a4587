//! Hashing, linking and verification of the record chain.
//!
//! `hash_n = BLAKE3-derive_key("benchledger v1 record", prev_hash || seq (u64
//! big-endian) || record_bytes)`, and `prev_hash` of seq 0 is 32 zero bytes.
//! A stored value is `prev_hash || hash || record_bytes` (SPEC.md section 3):
//! keeping the predecessor's hash in each value lets verification tell a
//! rewritten record (its successor still commits to the old hash) from a
//! damaged successor.
//!
//! Nothing here trusts its input: every function returns damage, never panics.

use std::fmt;

use crate::limits::RECORD_BYTES_MAX;
use crate::log::record::{Decoded, Record, FORMAT_VERSION};
use crate::schema::events::Event;

/// A BLAKE3 hash.
pub type Hash = [u8; 32];

/// The `prev_hash` of seq 0.
pub const ZERO_HASH: Hash = [0; 32];

/// The BLAKE3 derive_key context of record links.
pub const HASH_CONTEXT: &str = "benchledger v1 record";

/// Bytes of the prefix before the record bytes in a stored value.
pub const VALUE_PREFIX_BYTES: usize = 64;

/// Bytes of a stored head: seq (u64 big-endian) || hash.
pub const HEAD_BYTES: usize = 40;

/// A hasher in derive_key mode for `HASH_CONTEXT`, before any input: the
/// context key is derived once per process, and each link clones this state
/// instead of hashing the context string again (same output bytes).
fn link_hasher() -> blake3::Hasher {
    static KEYED: std::sync::OnceLock<blake3::Hasher> = std::sync::OnceLock::new();
    KEYED
        .get_or_init(|| blake3::Hasher::new_derive_key(HASH_CONTEXT))
        .clone()
}

/// The hash linking record `seq` to its predecessor.
pub fn link_hash(prev: &Hash, seq: u64, record_bytes: &[u8]) -> Hash {
    let mut h = link_hasher();
    h.update(prev);
    h.update(&seq.to_be_bytes());
    h.update(record_bytes);
    *h.finalize().as_bytes()
}

/// The head of a ledger: its last acknowledged record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Seq of the last record.
    pub seq: u64,
    /// Hash of the last record.
    pub hash: Hash,
}

impl Head {
    /// The stored form: seq big-endian || hash.
    pub fn to_bytes(&self) -> [u8; HEAD_BYTES] {
        let mut out = [0u8; HEAD_BYTES];
        out[..8].copy_from_slice(&self.seq.to_be_bytes());
        out[8..].copy_from_slice(&self.hash);
        out
    }

    /// Parses the stored form; `None` if it is not exactly `HEAD_BYTES` long.
    pub fn from_bytes(b: &[u8]) -> Option<Head> {
        if b.len() != HEAD_BYTES {
            return None;
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[..8]);
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&b[8..]);
        Some(Head {
            seq: u64::from_be_bytes(seq),
            hash,
        })
    }
}

/// A record ready to store: its link and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Position in the log.
    pub seq: u64,
    /// Hash of the predecessor (ZERO_HASH for seq 0).
    pub prev: Hash,
    /// This record's link hash.
    pub hash: Hash,
    /// The canonical record bytes.
    pub bytes: Vec<u8>,
}

impl Sealed {
    /// Links `bytes` as record `seq` after `prev`.
    pub fn new(prev: Hash, seq: u64, bytes: Vec<u8>) -> Sealed {
        let hash = link_hash(&prev, seq, &bytes);
        Sealed {
            seq,
            prev,
            hash,
            bytes,
        }
    }

    /// The stored value: prev || hash || bytes.
    pub fn value(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(VALUE_PREFIX_BYTES + self.bytes.len());
        v.extend_from_slice(&self.prev);
        v.extend_from_slice(&self.hash);
        v.extend_from_slice(&self.bytes);
        v
    }
}

/// Splits a stored value into (prev, hash, record bytes).
pub fn split_value(value: &[u8]) -> Option<(Hash, Hash, &[u8])> {
    if value.len() < VALUE_PREFIX_BYTES {
        return None;
    }
    let mut prev = [0u8; 32];
    prev.copy_from_slice(&value[..32]);
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&value[32..64]);
    Some((prev, hash, &value[64..]))
}

/// The kinds of damage verification distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DamageKind {
    /// The stored hash is not the hash of the stored prev, seq and bytes:
    /// the record bytes or its stored hash were changed.
    BadHash,
    /// The record verifies on its own, but its successor committed to a
    /// different hash: it was rewritten with a recomputed hash.
    Rewritten,
    /// A seq is missing from the middle of the log.
    Gap,
    /// A record is stored under another record's seq.
    Reordered,
    /// The stored value or the record bytes do not decode.
    Undecodable,
    /// The bytes decode, but are not the canonical encoding.
    NonCanonical,
    /// A stored value is shorter than its fixed prefix, or a record larger
    /// than the record size limit.
    TruncatedRecord,
    /// Seq 0 is not a genesis record, or a genesis record appears later.
    BadGenesis,
    /// The stored head does not name the last record.
    HeadMismatch,
    /// There is no stored head, or no records at all.
    HeadMissing,
    /// Records past the stored head: written but never acknowledged.
    TornTail,
    /// The head names a seq past the last record: records were removed.
    Truncated,
    /// A derived index disagrees with the records.
    IndexMismatch,
    /// The storage engine cannot read what it stored: a file of the ledger
    /// directory fails its checksum, ends early or does not parse (sled
    /// reports corruption), a segment's framing is broken, or the head
    /// witness file holds no valid slot.
    StorageUnreadable,
}

impl fmt::Display for DamageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self).ok();
        f.write_str(s.as_ref().and_then(|v| v.as_str()).unwrap_or("damage"))
    }
}

/// The first damage found, at the seq it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The first bad seq.
    pub seq: u64,
    /// What kind of damage.
    pub kind: DamageKind,
    /// A specific, human-readable account.
    pub detail: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {}: {}: {}", self.seq, self.kind, self.detail)
    }
}

impl Damage {
    /// Damage of `kind` at `seq`.
    pub fn new(seq: u64, kind: DamageKind, detail: impl Into<String>) -> Damage {
        damage(seq, kind, detail)
    }
}

fn damage(seq: u64, kind: DamageKind, detail: impl Into<String>) -> Damage {
    Damage {
        seq,
        kind,
        detail: detail.into(),
    }
}

/// A record that passed every check, with its link.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// Hash of the predecessor.
    pub prev: Hash,
    /// This record's hash.
    pub hash: Hash,
    pub decoded: Decoded,
}

/// Walks stored (key, value) pairs in key order and checks every link.
///
/// Used by `verify` from seq 0, and by every reader (paired check: the chain
/// is verified before an append and after every read).
pub struct Walker {
    prev: Hash,
    next_seq: u64,
}

impl Walker {
    /// A walker from genesis.
    pub fn from_genesis() -> Walker {
        Walker {
            prev: ZERO_HASH,
            next_seq: 0,
        }
    }

    /// A walker that continues after a record already verified.
    pub fn after(seq: u64, hash: Hash) -> Walker {
        Walker {
            prev: hash,
            next_seq: seq + 1,
        }
    }

    /// The seq the walker expects next.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The hash of the last record walked (the zero hash before genesis).
    pub fn prev_hash(&self) -> Hash {
        self.prev
    }

    /// Checks the next stored pair: its key is the expected seq, its link
    /// hash holds, it links to the previous record, it decodes canonically,
    /// and genesis sits at seq 0 only.
    pub fn step(&mut self, key: &[u8], value: &[u8]) -> Result<Verified, Damage> {
        let seq = self.expected_seq(key)?;
        let own = check_own(seq, value)?;
        self.check_prev(seq, &own.prev)?;
        let decoded = decode_at(seq, own.bytes)?;
        self.prev = own.hash;
        self.next_seq = seq + 1;
        Ok(Verified {
            prev: own.prev,
            hash: own.hash,
            decoded,
        })
    }

    /// The checks of `step` that depend on the walk, for a record whose own
    /// checks (`check_own`, and then `decode_at`) ran elsewhere, possibly on
    /// another thread: the key is the expected seq, `own` (the result of
    /// `check_own`) holds, the stored prev is the hash before it, and then
    /// `decoded` (the result of `decode_at`, `None` when it was not run
    /// because `own` failed) holds. The first failure is exactly what `step`
    /// reports for the same pair.
    pub fn join<T>(
        &mut self,
        key: &[u8],
        own: Result<(Hash, Hash), Damage>,
        decoded: Option<Result<T, Damage>>,
    ) -> Result<T, Damage> {
        let seq = self.expected_seq(key)?;
        let (prev, hash) = own?;
        self.check_prev(seq, &prev)?;
        let decoded = decoded.unwrap_or_else(|| {
            Err(damage(
                seq,
                DamageKind::Undecodable,
                "the record was not decoded",
            ))
        })?;
        self.prev = hash;
        self.next_seq = seq + 1;
        Ok(decoded)
    }

    /// The seq of a stored key, which must be the one expected next.
    pub fn expected_seq(&self, key: &[u8]) -> Result<u64, Damage> {
        let expected = self.next_seq;
        let seq = match <[u8; 8]>::try_from(key) {
            Ok(k) => u64::from_be_bytes(k),
            Err(_) => {
                return Err(damage(
                    expected,
                    DamageKind::Undecodable,
                    format!("a key of {} bytes is not a seq", key.len()),
                ))
            }
        };
        if seq != expected {
            return Err(damage(
                expected,
                DamageKind::Gap,
                format!("seq {expected} is missing (next stored seq is {seq})"),
            ));
        }
        Ok(seq)
    }

    /// The stored prev equals the hash of the record before (the paired
    /// check of the chain: a rewritten record breaks its successor).
    fn check_prev(&self, seq: u64, prev: &Hash) -> Result<(), Damage> {
        if *prev == self.prev {
            return Ok(());
        }
        if seq == 0 {
            return Err(damage(
                0,
                DamageKind::BadHash,
                "genesis does not link to the zero hash",
            ));
        }
        Err(damage(seq - 1, DamageKind::Rewritten, format!(
            "record {} was rewritten: record {seq} committed to hash {}, the stored record hashes to {}",
            seq - 1, hex::encode(prev), hex::encode(self.prev))))
    }
}

/// A stored value split by `check_own`: its link and record bytes.
#[derive(Debug, Clone, Copy)]
pub struct Own<'a> {
    /// The stored hash of the predecessor.
    pub prev: Hash,
    /// The stored hash of this record (checked: it is the link hash).
    pub hash: Hash,
    /// The record bytes.
    pub bytes: &'a [u8],
}

/// The checks of one stored value that need nothing but its seq and the
/// value (so verification may run them in parallel): the value holds the
/// link prefix, the record is within the size limit, and the stored hash is
/// the link hash of the stored prev, seq and bytes.
pub fn check_own(seq: u64, value: &[u8]) -> Result<Own<'_>, Damage> {
    let Some((prev, hash, bytes)) = split_value(value) else {
        return Err(damage(
            seq,
            DamageKind::TruncatedRecord,
            format!(
                "stored value is {} bytes, shorter than its {VALUE_PREFIX_BYTES}-byte link prefix",
                value.len()
            ),
        ));
    };
    if bytes.len() > RECORD_BYTES_MAX {
        return Err(damage(
            seq,
            DamageKind::TruncatedRecord,
            format!(
                "record is {} bytes, over the limit of {RECORD_BYTES_MAX}",
                bytes.len()
            ),
        ));
    }
    check_link(seq, &prev, &hash, bytes)?;
    Ok(Own { prev, hash, bytes })
}

/// The stored hash is the link hash of `prev`, `seq` and the bytes; a record
/// stored under another seq's key is named as reordered.
fn check_link(seq: u64, prev: &Hash, hash: &Hash, bytes: &[u8]) -> Result<(), Damage> {
    if link_hash(prev, seq, bytes) == *hash {
        return Ok(());
    }
    if let Ok(inner) = crate::log::codec::decode_canonical::<Record>(bytes) {
        if inner.seq != seq && link_hash(prev, inner.seq, bytes) == *hash {
            return Err(damage(
                seq,
                DamageKind::Reordered,
                format!("the record stored at seq {seq} is record {}", inner.seq),
            ));
        }
    }
    Err(damage(
        seq,
        DamageKind::BadHash,
        "stored hash does not match the record bytes and link",
    ))
}

/// Decodes the record stored at `seq` (canonically) and checks that it says
/// it is `seq` and that genesis sits at seq 0 only.
pub fn decode_at(seq: u64, bytes: &[u8]) -> Result<Decoded, Damage> {
    let decoded = Record::decode(bytes).map_err(|e| {
        let kind = if is_non_canonical(&e) {
            DamageKind::NonCanonical
        } else {
            DamageKind::Undecodable
        };
        damage(seq, kind, e.to_string())
    })?;
    if decoded.record.seq != seq {
        return Err(damage(
            seq,
            DamageKind::Reordered,
            format!(
                "the record stored at seq {seq} says it is seq {}",
                decoded.record.seq
            ),
        ));
    }
    let is_genesis = matches!(decoded.event, Event::LedgerCreated(_));
    if (seq == 0) != is_genesis {
        let detail = if seq == 0 {
            format!("seq 0 is {}, not the genesis record", decoded.record.kind)
        } else {
            "a genesis record after seq 0".to_string()
        };
        return Err(damage(seq, DamageKind::BadGenesis, detail));
    }
    if let Event::LedgerCreated(g) = &decoded.event {
        if g.format_version != FORMAT_VERSION {
            return Err(damage(
                seq,
                DamageKind::BadGenesis,
                format!(
                    "the genesis declares format_version {}; this build reads format {FORMAT_VERSION} only",
                    g.format_version
                ),
            ));
        }
    }
    Ok(decoded)
}

/// Bytes that decode but are not the canonical encoding (or carry bytes
/// after it): damage of kind `non_canonical`, not `undecodable`.
fn is_non_canonical(e: &crate::log::record::RecordError) -> bool {
    use crate::log::codec::CodecError;
    use crate::log::record::RecordError;
    matches!(
        e,
        RecordError::Codec(CodecError::NonCanonical | CodecError::Trailing(_))
            | RecordError::Payload(crate::log::codec::PayloadError::Codec {
                source: CodecError::NonCanonical | CodecError::Trailing(_),
                ..
            })
    )
}

/// Checks the stored head against the last verified record.
///
/// `at_head` is the hash of the record at the head's seq, if the walk saw it.
pub fn check_head(
    head_raw: Option<&[u8]>,
    last: Option<Head>,
    at_head: Option<Hash>,
) -> Result<Head, Damage> {
    let Some(last) = last else {
        return Err(damage(
            0,
            DamageKind::HeadMissing,
            "the ledger has no records",
        ));
    };
    let Some(raw) = head_raw else {
        return Err(damage(
            last.seq,
            DamageKind::HeadMissing,
            "the ledger has records but no stored head",
        ));
    };
    let Some(head) = Head::from_bytes(raw) else {
        return Err(damage(
            last.seq,
            DamageKind::HeadMismatch,
            format!("stored head is {} bytes, not {HEAD_BYTES}", raw.len()),
        ));
    };
    if head.seq > last.seq {
        return Err(damage(
            last.seq + 1,
            DamageKind::Truncated,
            format!(
                "the head names seq {} but the log ends at seq {}",
                head.seq, last.seq
            ),
        ));
    }
    if head.seq < last.seq {
        if at_head == Some(head.hash) {
            return Err(damage(
                head.seq + 1,
                DamageKind::TornTail,
                format!(
                    "records {}..={} lie past the acknowledged head {}",
                    head.seq + 1,
                    last.seq,
                    head.seq
                ),
            ));
        }
        return Err(damage(
            head.seq,
            DamageKind::HeadMismatch,
            format!(
                "the head names seq {} with a hash that is not that record's",
                head.seq
            ),
        ));
    }
    if head.hash != last.hash {
        return Err(damage(
            head.seq,
            DamageKind::HeadMismatch,
            format!(
                "the head hash {} is not the hash {} of record {}",
                hex::encode(head.hash),
                hex::encode(last.hash),
                last.seq
            ),
        ));
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_hash_depends_on_every_input() {
        let a = link_hash(&ZERO_HASH, 0, b"x");
        assert_ne!(a, link_hash(&ZERO_HASH, 1, b"x"));
        assert_ne!(a, link_hash(&[1; 32], 0, b"x"));
        assert_ne!(a, link_hash(&ZERO_HASH, 0, b"y"));
        // derive_key, not a plain hash of the concatenation
        let mut plain = Vec::new();
        plain.extend_from_slice(&ZERO_HASH);
        plain.extend_from_slice(&0u64.to_be_bytes());
        plain.extend_from_slice(b"x");
        assert_ne!(a, *blake3::hash(&plain).as_bytes());
    }

    #[test]
    fn link_hash_is_blake3_derive_key_of_the_link_input() {
        // The cached derive_key state must give exactly what a fresh
        // derive_key hasher gives, on every call (not only the first).
        for (seq, bytes) in [(0u64, &b"x"[..]), (7, b""), (u64::MAX, &[9u8; 3000][..])] {
            let prev = [seq as u8; 32];
            let mut fresh = blake3::Hasher::new_derive_key(HASH_CONTEXT);
            fresh.update(&prev);
            fresh.update(&seq.to_be_bytes());
            fresh.update(bytes);
            assert_eq!(link_hash(&prev, seq, bytes), *fresh.finalize().as_bytes());
        }
    }

    #[test]
    fn head_bytes_round_trip_and_reject_other_lengths() {
        let h = Head {
            seq: 42,
            hash: [7; 32],
        };
        assert_eq!(Head::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Head::from_bytes(&[0; 39]), None);
        assert_eq!(Head::from_bytes(&[0; 41]), None);
    }

    #[test]
    fn split_value_rejects_short_values() {
        assert!(split_value(&[0; 63]).is_none());
        assert!(split_value(&[0; 64]).is_some());
    }

    #[test]
    fn check_head_classifies() {
        let last = Head {
            seq: 5,
            hash: [5; 32],
        };
        assert!(check_head(Some(&last.to_bytes()), Some(last), Some(last.hash)).is_ok());
        let e = check_head(None, Some(last), None).unwrap_err();
        assert_eq!(e.kind, DamageKind::HeadMissing);
        let past = Head {
            seq: 9,
            hash: [5; 32],
        };
        let e = check_head(Some(&past.to_bytes()), Some(last), None).unwrap_err();
        assert_eq!((e.kind, e.seq), (DamageKind::Truncated, 6));
        let before = Head {
            seq: 3,
            hash: [3; 32],
        };
        let e = check_head(Some(&before.to_bytes()), Some(last), Some([3; 32])).unwrap_err();
        assert_eq!((e.kind, e.seq), (DamageKind::TornTail, 4));
        let e = check_head(Some(&before.to_bytes()), Some(last), Some([9; 32])).unwrap_err();
        assert_eq!((e.kind, e.seq), (DamageKind::HeadMismatch, 3));
        let wrong = Head {
            seq: 5,
            hash: [6; 32],
        };
        let e = check_head(Some(&wrong.to_bytes()), Some(last), None).unwrap_err();
        assert_eq!((e.kind, e.seq), (DamageKind::HeadMismatch, 5));
    }
}
