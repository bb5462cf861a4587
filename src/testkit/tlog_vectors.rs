//! Transparency-log vectors over the vector chain
//! (`ledger-schema/vectors/tlog.json`, ledger SPEC section 11).
//!
//! The leaves are the records of `vectors/chain.jsonl` (leaf data
//! `u64_be(seq) || link hash`); the file holds the root of every prefix, the
//! checkpoint the chain itself records (its last record), a signed
//! checkpoint of the whole chain, inclusion proofs in it and consistency
//! proofs to it. Every note is signed by the example key `alice`
//! (TEST-ONLY: its seed is derived from a public string). Ed25519 signatures
//! are deterministic, so the file is a pure function of the code.

use serde::Serialize;

use crate::log::tlog::{
    prove_consistency, prove_inclusion, record_leaf_hash, sign_note, tree_root, Checkpoint,
    ConsistencyProof, Hash, InclusionProof, MemoryNodes,
};
use crate::schema::events::Event;

/// The file name under `ledger-schema/vectors/`.
pub const TLOG_FILE: &str = "tlog.json";

/// The seqs whose inclusion in the head checkpoint the file proves.
const INCLUDED: [u64; 4] = [0, 13, 30, 31];
/// The old sizes of the consistency proofs to the head checkpoint.
const OLD_SIZES: [u64; 2] = [13, 31];

#[derive(Serialize)]
struct TlogVectors {
    comment: &'static str,
    chain: &'static str,
    origin: String,
    log_vkey: String,
    roots: Vec<RootVector>,
    recorded_checkpoint: RecordedVector,
    head_note: String,
    inclusion_proofs: Vec<String>,
    consistency_proofs: Vec<ConsistencyVector>,
}

#[derive(Serialize)]
struct RootVector {
    size: u64,
    root: String,
}

#[derive(Serialize)]
struct RecordedVector {
    seq: u64,
    note: String,
}

#[derive(Serialize)]
struct ConsistencyVector {
    old_note: String,
    new_note: String,
    proof_json: String,
}

fn signed(origin: &str, size: u64, root: Hash) -> String {
    let body = Checkpoint::new(origin, size, root)
        .expect("the vector origin is valid")
        .body();
    sign_note(&body, &[&crate::testkit::examples::signer("alice")]).expect("the example key signs")
}

/// The transparency-log vectors as the committed file's text.
pub fn tlog_json() -> String {
    let chain = crate::testkit::vectors::chain();
    let links: Vec<Hash> = chain.iter().map(|v| v.hash).collect();
    let nodes = MemoryNodes::from_leaf_hashes(
        links
            .iter()
            .enumerate()
            .map(|(seq, link)| record_leaf_hash(seq as u64, link)),
    )
    .expect("the vector chain is small");
    let size = nodes.size();
    let root_at = |n: u64| tree_root(&nodes, n).expect("a size within the tree");
    let Event::LedgerCreated(genesis) = &chain[0].decoded.event else {
        unreachable!("the vector chain starts with genesis")
    };
    let origin = crate::log::tree::origin_of(&genesis.ledger_id);
    // The chain's signed checkpoint: the last checkpoint record (kinds
    // added after it follow it in vocabulary order).
    let Some((last, recorded)) = chain.iter().rev().find_map(|v| match &v.decoded.event {
        Event::CheckpointRecorded(c) => Some((v, c)),
        _ => None,
    }) else {
        unreachable!("the vector chain holds a checkpoint")
    };
    let head_note = signed(&origin, size, root_at(size));
    let inclusion_proofs = INCLUDED
        .iter()
        .map(|&seq| {
            let hashes = prove_inclusion(&nodes, seq, size).expect("a leaf of the tree");
            InclusionProof::new(&head_note, seq, links[seq as usize], hashes)
                .expect("the proof matches its note")
                .to_json()
        })
        .collect();
    let consistency_proofs = OLD_SIZES
        .iter()
        .map(|&old| {
            let hashes = prove_consistency(&nodes, old, size).expect("old is within the tree");
            ConsistencyVector {
                old_note: signed(&origin, old, root_at(old)),
                new_note: head_note.clone(),
                proof_json: ConsistencyProof::new(&origin, old, size, hashes)
                    .expect("a valid proof")
                    .to_json(),
            }
        })
        .collect();
    let vectors = TlogVectors {
        comment: "benchledger transparency-log vectors over chain.jsonl (ledger SPEC section 11); the signer key alice is TEST-ONLY",
        chain: crate::testkit::vectors::CHAIN_FILE,
        log_vkey: crate::testkit::examples::signer("alice").verifier().encode(),
        roots: (1..=size)
            .map(|n| RootVector {
                size: n,
                root: hex::encode(root_at(n)),
            })
            .collect(),
        recorded_checkpoint: RecordedVector {
            seq: last.decoded.record.seq,
            note: recorded.note.clone().expect("the vector checkpoint is signed"),
        },
        origin,
        head_note,
        inclusion_proofs,
        consistency_proofs,
    };
    serde_json::to_string_pretty(&vectors).expect("the vectors serialize") + "\n"
}
