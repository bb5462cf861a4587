//! The test vectors of `ledger-schema/vectors/`: a deterministic chain with
//! one record of every kind, and must-fail cases, generated and committed. A
//! test fails when the committed files drift from what the code produces
//! (`cargo run --example gen-vectors` rewrites them). The fixtures are data:
//! the events in `testkit/data/events.toml` (`events`), the must-fail cases
//! in `testkit/data/must-fail.toml` (`must_fail`); the code here seals them
//! into records.

use serde::Serialize;

use crate::log::chain::{DamageKind, Sealed, Verified, Walker, ZERO_HASH};
use crate::log::record::{Record, FORMAT_VERSION};
use crate::schema::events::Event;

/// File name of the valid chain (an export, one line per record).
pub const CHAIN_FILE: &str = "chain.jsonl";
/// File name of the must-fail cases.
pub const MUST_FAIL_FILE: &str = "must-fail.jsonl";

/// Fixed instant of the first vector record (2026-03-01T12:00:00Z), in ns.
const T0_UTC_NS: u64 = 1_772_366_400_000_000_000;

mod events;
mod must_fail;

pub use events::example_events;
pub use must_fail::must_fail;

/// A stand-in digest: the BLAKE3 of `tag`, in hex.
fn hex64(tag: &str) -> String {
    hex::encode(blake3::hash(tag.as_bytes()).as_bytes())
}

/// Record `seq` of the vector chain: one second apart from `T0_UTC_NS`.
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
        payload: crate::log::codec::encode_payload(event).expect("example events encode"),
    }
}

/// The valid vector chain, verified.
pub fn chain() -> Vec<Verified> {
    let mut walker = Walker::from_genesis();
    let mut prev = ZERO_HASH;
    let mut out = Vec::new();
    for (seq, (event, key)) in example_events().into_iter().enumerate() {
        let seq = seq as u64;
        let sealed = Sealed::new(
            prev,
            seq,
            record(seq, &event, key)
                .encode()
                .expect("vector records are within the limit"),
        );
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
        .map(|v| crate::log::export::line(v) + "\n")
        .collect()
}

/// One must-fail case: a stored (key, value) that a walker expecting
/// `walk_seq` after `walk_prev_hash` must reject with `expect` at `expect_seq`.
#[derive(Debug, Serialize)]
pub struct MustFail {
    /// What is wrong, in a few words.
    pub name: String,
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

/// The must-fail cases as JSON lines.
pub fn must_fail_jsonl() -> String {
    must_fail()
        .iter()
        .map(|c| serde_json::to_string(c).expect("cases serialize") + "\n")
        .collect()
}

/// Runs one must-fail case through a walker; returns the damage found.
pub fn run_case(c: &MustFail) -> Option<crate::log::chain::Damage> {
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
