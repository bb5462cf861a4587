//! The must-fail cases, read from `testkit/data/must-fail.toml`: each names
//! where the walker stands, the key, how the stored value is made from the
//! valid chain's first two records (a mutation as a tagged description) and
//! the damage a verifier must report. This code only applies the mutations
//! and recomputes hashes.

use serde::Deserialize;

use crate::log::chain::{DamageKind, Hash, Sealed, Verified, ZERO_HASH};
use crate::log::record::{Record, FORMAT_VERSION};

use super::MustFail;

/// The data file: one `[[case]]` per must-fail case.
const MUST_FAIL_TOML: &str = include_str!("../data/must-fail.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    walk: Walk,
    key: u64,
    value: Mutation,
    expect: Expect,
}

/// Where the walker stands.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Walk {
    seq: u64,
    prev: Link,
}

/// The damage a verifier must report, and where.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    damage: DamageKind,
    seq: u64,
}

/// A predecessor hash.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Link {
    /// Before genesis.
    Zero,
    /// The genesis record's hash.
    Genesis,
    /// The note's hash.
    Note,
    /// The hash of the note with these fields changed, sealed again after
    /// genesis at seq 1.
    NoteWith(RecordEdit),
}

/// One of the two valid records.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Which {
    Genesis,
    Note,
}

/// How the stored value is made.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Mutation {
    /// The note's stored value as it is.
    Stored,
    /// The note's stored value with one byte XORed (`at` < 0: from the end).
    Flip { at: i64, mask: u8 },
    /// The first `len` bytes of the note's stored value.
    Truncate { len: usize },
    /// A record changed, encoded, its bytes edited and sealed again.
    Reseal(Box<Reseal>),
}

/// A record changed, encoded, its bytes edited and sealed again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reseal {
    record: Which,
    #[serde(default)]
    set: RecordEdit,
    #[serde(default)]
    bytes: ByteEdit,
    /// The predecessor sealed over; the walker's when absent.
    prev: Option<Link>,
}

/// Record fields to change.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RecordEdit {
    seq: Option<u64>,
    actor: Option<String>,
    kind: Option<String>,
    format: Option<Format>,
    #[serde(default)]
    no_idempotency_key: bool,
    /// Bytes added after the payload.
    #[serde(default)]
    payload_append: Vec<u8>,
}

/// A format version to set.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Format {
    /// One past `FORMAT_VERSION`.
    Next,
}

/// Edits of the encoded record bytes.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ByteEdit {
    set: Option<SetByte>,
    #[serde(default)]
    append: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetByte {
    at: usize,
    to: u8,
}

/// The valid chain's first two records.
struct Base<'a> {
    genesis: &'a Verified,
    note: &'a Verified,
}

impl Base<'_> {
    fn record(&self, which: Which) -> &Record {
        match which {
            Which::Genesis => &self.genesis.decoded.record,
            Which::Note => &self.note.decoded.record,
        }
    }

    fn link(&self, link: &Link) -> Hash {
        match link {
            Link::Zero => ZERO_HASH,
            Link::Genesis => self.genesis.hash,
            Link::Note => self.note.hash,
            Link::NoteWith(edit) => {
                let bytes = encode(&edit.apply(self.record(Which::Note)));
                Sealed::new(self.genesis.hash, 1, bytes).hash
            }
        }
    }

    /// The note's stored value: prev || hash || record bytes.
    fn stored_note(&self) -> Vec<u8> {
        Sealed {
            seq: 1,
            prev: self.genesis.hash,
            hash: self.note.hash,
            bytes: encode(&self.note.decoded.record),
        }
        .value()
    }

    fn value(&self, case: &Case, walk_prev: Hash) -> Vec<u8> {
        match &case.value {
            Mutation::Stored => self.stored_note(),
            Mutation::Flip { at, mask } => {
                let mut v = self.stored_note();
                let i =
                    usize::try_from(*at).unwrap_or_else(|_| v.len() - at.unsigned_abs() as usize);
                v[i] ^= mask;
                v
            }
            Mutation::Truncate { len } => self.stored_note()[..*len].to_vec(),
            Mutation::Reseal(r) => {
                let mut encoded = encode(&r.set.apply(self.record(r.record)));
                r.bytes.apply(&mut encoded);
                let prev = r.prev.as_ref().map_or(walk_prev, |l| self.link(l));
                Sealed::new(prev, case.key, encoded).value()
            }
        }
    }
}

impl RecordEdit {
    fn apply(&self, record: &Record) -> Record {
        let mut r = record.clone();
        if let Some(seq) = self.seq {
            r.seq = seq;
        }
        if let Some(actor) = &self.actor {
            r.actor = actor.clone();
        }
        if let Some(kind) = &self.kind {
            r.kind = kind.clone();
        }
        if let Some(Format::Next) = self.format {
            r.format = FORMAT_VERSION + 1;
        }
        if self.no_idempotency_key {
            r.idempotency_key = None;
        }
        r.payload.extend_from_slice(&self.payload_append);
        r
    }
}

impl ByteEdit {
    fn apply(&self, bytes: &mut Vec<u8>) {
        if let Some(SetByte { at, to }) = self.set {
            bytes[at] = to;
        }
        bytes.extend_from_slice(&self.append);
    }
}

fn encode(record: &Record) -> Vec<u8> {
    record
        .encode()
        .expect("vector records are within the limit")
}

/// The must-fail cases of the data file, built from the valid chain.
pub fn must_fail() -> Vec<MustFail> {
    let table: Table = toml::from_str(MUST_FAIL_TOML).expect("must-fail.toml parses");
    let chain = super::chain();
    let base = Base {
        genesis: &chain[0],
        note: &chain[1],
    };
    table
        .case
        .iter()
        .map(|case| {
            let walk_prev = base.link(&case.walk.prev);
            MustFail {
                name: case.name.clone(),
                walk_seq: case.walk.seq,
                walk_prev_hash: hex::encode(walk_prev),
                key_hex: hex::encode(case.key.to_be_bytes()),
                value_hex: hex::encode(base.value(case, walk_prev)),
                expect: case.expect.damage,
                expect_seq: case.expect.seq,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(case: &str) -> bool {
        let text = format!(
            "[[case]]\nname = \"n\"\nwalk = {{ seq = 1, prev = \"genesis\" }}\nkey = 1\n\
             {case}\nexpect = {{ damage = \"bad_hash\", seq = 1 }}\n"
        );
        toml::from_str::<Table>(&text).is_ok()
    }

    #[test]
    fn a_misspelt_mutation_fails_the_load() {
        assert!(parses("value = { op = \"flip\", at = 3, mask = 0x10 }"));
        assert!(!parses(
            "value = { op = \"flip\", at = 3, mask = 0x10, mas = 1 }"
        ));
        assert!(!parses("value = { op = \"flop\", at = 3, mask = 0x10 }"));
        assert!(parses(
            "value = { op = \"reseal\", record = \"note\", set = { seq = 5 } }"
        ));
        assert!(!parses(
            "value = { op = \"reseal\", record = \"note\", set = { seqq = 5 } }"
        ));
        assert!(!parses(
            "value = { op = \"reseal\", record = \"note\", sett = { seq = 5 } }"
        ));
    }
}
