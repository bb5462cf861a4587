//! The test vectors of `ledger-schema/vectors/`: a deterministic chain with
//! one record of every kind, and must-fail cases, generated from this code
//! and committed. A test fails when the committed files drift from what the
//! code produces (`cargo run --example gen-vectors` rewrites them).

use serde::Serialize;

use crate::chain::{DamageKind, Hash, Sealed, Verified, Walker, ZERO_HASH};
use crate::events::{Event, LedgerCreated, OperatorNoted};
use crate::record::{Record, FORMAT_VERSION};

/// File name of the valid chain (an export, one line per record).
pub const CHAIN_FILE: &str = "chain.jsonl";
/// File name of the must-fail cases.
pub const MUST_FAIL_FILE: &str = "must-fail.jsonl";

/// Fixed instant of the first vector record (2026-03-01T12:00:00Z), in ns.
const T0_UTC_NS: u64 = 1_772_366_400_000_000_000;

/// One example event of every kind, in vocabulary order.
pub fn example_events() -> Vec<(Event, Option<String>)> {
    vec![
        (
            Event::LedgerCreated(LedgerCreated {
                ledger_id: "000102030405060708090a0b0c0d0e0f".into(),
                format_version: FORMAT_VERSION,
                tool_version: "benchledger 0.1.0".into(),
            }),
            None,
        ),
        (
            Event::OperatorNoted(OperatorNoted { lineage: None,
                text: "gates rechecked after lunch".into(),
            }),
            Some("note-1".into()),
        ),
    ]
}

fn record(seq: u64, event: &Event, key: Option<String>) -> Record {
    Record {
        format: FORMAT_VERSION,
        seq,
        recorded_at_utc_ns: T0_UTC_NS + seq * 1_000_000_000,
        actor: if seq == 0 {
            "operator:init".into()
        } else {
            "operator:alice".into()
        },
        kind: event.kind().into(),
        idempotency_key: key,
        payload: event.encode_payload().expect("example events encode"),
    }
}

/// The valid vector chain, verified.
pub fn chain() -> Vec<Verified> {
    let mut walker = Walker::from_genesis();
    let mut prev = ZERO_HASH;
    let mut out = Vec::new();
    for (seq, (event, key)) in example_events().into_iter().enumerate() {
        let seq = seq as u64;
        let sealed = Sealed::new(prev, seq, record(seq, &event, key).encode());
        prev = sealed.hash;
        out.push(
            walker
                .step(&seq.to_be_bytes(), &sealed.value())
                .expect("vector chain verifies"),
        );
    }
    out
}

/// The valid chain as export lines.
pub fn chain_jsonl() -> String {
    chain()
        .iter()
        .map(|v| crate::export::line(v) + "\n")
        .collect()
}

/// One must-fail case: a stored (key, value) that a walker expecting
/// `walk_seq` after `walk_prev_hash` must reject with `expect` at `expect_seq`.
#[derive(Debug, Serialize)]
pub struct MustFail {
    /// What is wrong, in a few words.
    pub name: &'static str,
    /// The seq the walker expects next.
    pub walk_seq: u64,
    /// The hash the walker holds as predecessor (hex).
    pub walk_prev_hash: String,
    /// The stored key (seq, big-endian, hex).
    pub key_hex: String,
    /// The stored value: prev || hash || record bytes (hex).
    pub value_hex: String,
    /// The damage kind a verifier must report.
    pub expect: DamageKind,
    /// The seq it must report.
    pub expect_seq: u64,
}

fn case(
    name: &'static str,
    walk_seq: u64,
    walk_prev: Hash,
    key: u64,
    value: Vec<u8>,
    expect: DamageKind,
    expect_seq: u64,
) -> MustFail {
    MustFail {
        name,
        walk_seq,
        walk_prev_hash: hex::encode(walk_prev),
        key_hex: hex::encode(key.to_be_bytes()),
        value_hex: hex::encode(value),
        expect,
        expect_seq,
    }
}

/// The must-fail cases, built from the valid chain.
pub fn must_fail() -> Vec<MustFail> {
    let c = chain();
    let g = &c[0];
    let n = &c[1];
    let note_record = n.decoded.record.clone();
    let resealed = |r: &Record| Sealed::new(g.hash, 1, r.encode()).value();
    let plain = Sealed {
        seq: 1,
        prev: g.hash,
        hash: n.hash,
        bytes: note_record.encode(),
    }
    .value();
    let mut out = Vec::new();

    let mut v = plain.clone();
    let last = v.len() - 1;
    v[last] ^= 0x01;
    out.push(case(
        "flipped byte in the record bytes",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut v = plain.clone();
    v[40] ^= 0x80;
    out.push(case(
        "flipped byte in the stored hash",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut v = plain.clone();
    v[3] ^= 0x10;
    out.push(case(
        "flipped byte in the stored prev hash",
        1,
        g.hash,
        1,
        v,
        DamageKind::BadHash,
        1,
    ));

    let mut bytes = note_record.encode();
    bytes.push(0);
    out.push(case(
        "a trailing byte after the record (hash recomputed)",
        1,
        g.hash,
        1,
        Sealed::new(g.hash, 1, bytes).value(),
        DamageKind::NonCanonical,
        1,
    ));

    let mut r = note_record.clone();
    r.payload.push(0);
    out.push(case(
        "a trailing byte after the payload (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::NonCanonical,
        1,
    ));

    let mut r = note_record.clone();
    r.format = FORMAT_VERSION + 1;
    out.push(case(
        "an unknown format version (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Undecodable,
        1,
    ));

    let mut r = note_record.clone();
    r.kind = "unknown_kind.v1".into();
    out.push(case(
        "an unknown kind (hash recomputed)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Undecodable,
        1,
    ));

    let mut bytes = note_record.encode();
    // The actor string starts after format (2), seq (8), time (8) and its
    // length (8): make its first byte invalid utf-8.
    bytes[26] = 0xff;
    out.push(case(
        "invalid utf-8 in the actor (hash recomputed)",
        1,
        g.hash,
        1,
        Sealed::new(g.hash, 1, bytes).value(),
        DamageKind::Undecodable,
        1,
    ));

    out.push(case(
        "record 1 stored under seq 2",
        2,
        n.hash,
        2,
        plain.clone(),
        DamageKind::Reordered,
        2,
    ));

    let mut r = note_record.clone();
    r.seq = 5;
    out.push(case(
        "a record whose own seq is not its key (hash over the key)",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::Reordered,
        1,
    ));

    out.push(case(
        "a value shorter than its link prefix",
        1,
        g.hash,
        1,
        plain[..63].to_vec(),
        DamageKind::TruncatedRecord,
        1,
    ));

    out.push(case(
        "seq 1 missing (next stored is 2)",
        1,
        g.hash,
        2,
        plain.clone(),
        DamageKind::Gap,
        1,
    ));

    let mut r = note_record.clone();
    r.seq = 0;
    out.push(case(
        "seq 0 is not a genesis record",
        0,
        ZERO_HASH,
        0,
        Sealed::new(ZERO_HASH, 0, r.encode()).value(),
        DamageKind::BadGenesis,
        0,
    ));

    let mut r = g.decoded.record.clone();
    r.seq = 1;
    out.push(case(
        "a genesis record after seq 0",
        1,
        g.hash,
        1,
        resealed(&r),
        DamageKind::BadGenesis,
        1,
    ));

    let mut r = note_record.clone();
    r.actor = "operator:mallory".into();
    let rewritten = Sealed::new(g.hash, 1, r.encode());
    // The walker holds the rewritten record's hash; the successor committed
    // to the original one.
    let successor = Sealed::new(n.hash, 2, {
        let mut s = note_record.clone();
        s.seq = 2;
        s.idempotency_key = None;
        s.encode()
    });
    out.push(case(
        "record 1 rewritten with a recomputed hash; record 2 still links to the original",
        2,
        rewritten.hash,
        2,
        successor.value(),
        DamageKind::Rewritten,
        1,
    ));
    out
}

/// The must-fail cases as JSON lines.
pub fn must_fail_jsonl() -> String {
    must_fail()
        .iter()
        .map(|c| serde_json::to_string(c).expect("cases serialize") + "\n")
        .collect()
}

/// Runs one must-fail case through a walker; returns the damage found.
pub fn run_case(c: &MustFail) -> Option<crate::chain::Damage> {
    let mut prev = [0u8; 32];
    hex::decode_to_slice(&c.walk_prev_hash, &mut prev).ok()?;
    let mut w = if c.walk_seq == 0 {
        Walker::from_genesis()
    } else {
        Walker::after(c.walk_seq - 1, prev)
    };
    let key = hex::decode(&c.key_hex).ok()?;
    let value = hex::decode(&c.value_hex).ok()?;
    w.step(&key, &value).err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_an_example() {
        let kinds: Vec<&str> = example_events().iter().map(|(e, _)| e.kind()).collect();
        assert_eq!(kinds, Event::KINDS);
    }

    #[test]
    fn every_must_fail_case_fails_as_declared() {
        for c in must_fail() {
            let d = run_case(&c).unwrap_or_else(|| panic!("{}: walker accepted it", c.name));
            assert_eq!((d.kind, d.seq), (c.expect, c.expect_seq), "{}: {d}", c.name);
        }
    }
}
