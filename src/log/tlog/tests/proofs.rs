//! Proof JSON: round trips, strict parsing, bounds, and end-to-end checks.

use super::super::checkpoint::{check_log_matches, Checkpoint};
use super::super::cosignature::cosign;
use super::super::error::TlogError;
use super::super::leaf::{leaf_data, record_leaf_hash};
use super::super::merkle::{
    prove_consistency, prove_inclusion, tree_root, Hash, MemoryNodes, PROOF_HASHES_MAX,
};
use super::super::note::{sign_note, KeyKind, SignedNote, SignerKey};
use super::super::proofs::*;
use super::super::text::b64_encode;

const ORIGIN: &str = "benchledger.example/ledger/test";

fn link(seq: u64) -> Hash {
    super::super::merkle::leaf_hash(&seq.to_le_bytes())
}

struct Fixture {
    tree: MemoryNodes,
    log: SignerKey,
    witness: SignerKey,
}

impl Fixture {
    fn new(n: u64) -> Self {
        let tree =
            MemoryNodes::from_leaf_hashes((0..n).map(|s| record_leaf_hash(s, &link(s)))).unwrap();
        let log = SignerKey::from_seed(ORIGIN, KeyKind::Ed25519, [1; 32]).unwrap();
        let witness = SignerKey::from_seed("w.example", KeyKind::CosignatureV1, [2; 32]).unwrap();
        Self { tree, log, witness }
    }

    fn note(&self, size: u64, cosigned: bool) -> String {
        let body = Checkpoint::new(ORIGIN, size, tree_root(&self.tree, size).unwrap())
            .unwrap()
            .body();
        let mut note = SignedNote::parse(&sign_note(&body, &[&self.log]).unwrap()).unwrap();
        if cosigned {
            note.push_signature(cosign(&body, &self.witness, 42).unwrap())
                .unwrap();
        }
        note.encode()
    }

    fn inclusion(&self, seq: u64, size: u64) -> InclusionProof {
        let hashes = prove_inclusion(&self.tree, seq, size).unwrap();
        InclusionProof::new(&self.note(size, true), seq, link(seq), hashes).unwrap()
    }
}

#[test]
fn inclusion_json_round_trips_and_verifies() {
    let f = Fixture::new(20);
    for (seq, size) in [(0, 1), (3, 7), (19, 20), (8, 9)] {
        let proof = f.inclusion(seq, size);
        let json = proof.to_json();
        let back = InclusionProof::from_json(&json).unwrap();
        assert_eq!(back, proof);
        assert_eq!(back.leaf_data(), leaf_data(seq, &link(seq)));
        let verified = back
            .verify(&f.log.verifier(), &[f.witness.verifier()])
            .unwrap();
        assert_eq!(verified.checkpoint.size(), size);
        assert_eq!(verified.note.verified.len(), 2);
        assert!(
            back.verify(&f.log.verifier(), &[]).is_ok(),
            "unknown cosignature ignored"
        );
    }
    let proof = f.inclusion(3, 7);
    let other =
        InclusionProof::new(proof.checkpoint(), 3, link(4), proof.hashes().to_vec()).unwrap();
    assert_eq!(
        other.verify(&f.log.verifier(), &[]).err(),
        Some(TlogError::InclusionRootMismatch)
    );
}

#[test]
fn consistency_json_round_trips_and_verifies() {
    let f = Fixture::new(20);
    let (log, w) = (f.log.verifier(), f.witness.verifier());
    for (old, new) in [(1, 20), (3, 7), (8, 16), (7, 7), (19, 20)] {
        let proof = ConsistencyProof::new(
            ORIGIN,
            old,
            new,
            prove_consistency(&f.tree, old, new).unwrap(),
        )
        .unwrap();
        let back = ConsistencyProof::from_json(&proof.to_json()).unwrap();
        assert_eq!(back, proof);
        let (a, b) = (f.note(old, false), f.note(new, true));
        assert!(
            back.verify(&a, &b, &log, std::slice::from_ref(&w)).is_ok(),
            "{old} -> {new}"
        );
        if old != new {
            let swapped = back.verify(&b, &a, &log, &[]).err();
            assert!(matches!(
                swapped,
                Some(TlogError::ProofCheckpointMismatch { .. })
            ));
        }
    }
    // A rewritten history: same sizes, another leaf 2.
    let mut forked = MemoryNodes::new();
    for s in 0..20u64 {
        let l = if s == 2 { link(99) } else { link(s) };
        forked.append_leaf_hash(record_leaf_hash(s, &l)).unwrap();
    }
    let body = Checkpoint::new(ORIGIN, 20, tree_root(&forked, 20).unwrap())
        .unwrap()
        .body();
    let forked_note = sign_note(&body, &[&f.log]).unwrap();
    let proof =
        ConsistencyProof::new(ORIGIN, 3, 20, prove_consistency(&forked, 3, 20).unwrap()).unwrap();
    assert!(proof
        .verify(&f.note(3, false), &forked_note, &log, &[])
        .is_err());
    // The rewritten log no longer matches the checkpoints that cover leaf 2.
    let cp = |tree: &MemoryNodes, size| {
        Checkpoint::new(ORIGIN, size, tree_root(tree, size).unwrap()).unwrap()
    };
    let old = cp(&f.tree, 3);
    assert_eq!(check_log_matches(&f.tree, &old), Ok(()));
    assert_eq!(
        check_log_matches(&forked, &old),
        Err(TlogError::CheckpointRootMismatch { size: 3 })
    );
    assert_eq!(
        check_log_matches(&forked, &cp(&f.tree, 2)),
        Ok(()),
        "leaves before the rewrite match"
    );
    let long = Checkpoint::new(ORIGIN, 21, tree_root(&f.tree, 20).unwrap()).unwrap();
    let short = Err(TlogError::SizeBeyondSource {
        size: 21,
        available: 20,
    });
    assert_eq!(check_log_matches(&forked, &long), short);
}

#[test]
fn proof_json_is_strict() {
    let f = Fixture::new(8);
    let json = f.inclusion(3, 7).to_json();
    let syntax = |text: &str| {
        matches!(
            InclusionProof::from_json(text),
            Err(TlogError::ProofJsonSyntax(_))
        )
    };
    assert!(
        syntax(&json.replacen("{\n", "{\n  \"extra\": 1,\n", 1)),
        "unknown field"
    );
    assert!(
        syntax(&json.replacen("{\n", "{\n  \"leaf_index\": 3,\n", 1)),
        "repeated field"
    );
    assert!(
        syntax(&json.replacen("\"leaf_index\": 3", "\"leaf_index\": 3.0", 1)),
        "float"
    );
    assert!(
        syntax(&json.replacen("\"leaf_index\": 3", "\"leaf_index\": -3", 1)),
        "negative"
    );
    assert!(
        syntax(&json.replacen("\"leaf_index\": 3,\n", "", 1)),
        "missing field"
    );
    assert!(syntax(&format!("{json}{{}}")), "trailing data");
    let m = |r| Some(TlogError::ProofJson { reason: r });
    let format = json.replacen("inclusion-proof/v1", "inclusion-proof/v2", 1);
    assert_eq!(
        InclusionProof::from_json(&format).err(),
        m("format is not benchledger/tlog-inclusion-proof/v1")
    );
    let upper = {
        let start = json.find("\"link_hash\": \"").unwrap() + 14;
        format!(
            "{}{}{}",
            &json[..start],
            json[start..start + 64].to_uppercase(),
            &json[start + 64..]
        )
    };
    assert_eq!(
        InclusionProof::from_json(&upper).err(),
        m("link_hash is not 64 lowercase hex digits")
    );
    let index = json.replacen("\"leaf_index\": 3", "\"leaf_index\": 7", 1);
    assert_eq!(
        InclusionProof::from_json(&index).err(),
        Some(TlogError::IndexOutOfRange { index: 7, size: 7 })
    );
    let size = json.replacen("\"tree_size\": 7", "\"tree_size\": 8", 1);
    assert!(matches!(
        InclusionProof::from_json(&size),
        Err(TlogError::ProofCheckpointMismatch {
            field: "tree_size",
            ..
        })
    ));
    let origin = json.replacen(
        "\"origin\": \"benchledger.example/ledger/test\"",
        "\"origin\": \"elsewhere\"",
        1,
    );
    assert!(matches!(
        InclusionProof::from_json(&origin),
        Err(TlogError::ProofCheckpointMismatch {
            field: "origin",
            ..
        })
    ));
    let cons = ConsistencyProof::new(ORIGIN, 3, 7, prove_consistency(&f.tree, 3, 7).unwrap())
        .unwrap()
        .to_json();
    let swapped = cons.replacen("\"old_size\": 3", "\"old_size\": 9", 1);
    assert_eq!(
        ConsistencyProof::from_json(&swapped).err(),
        Some(TlogError::OldSizeAboveNewSize { old: 9, new: 7 })
    );
    let bad_hash = cons.replacen("\"hashes\": [\n    \"", "\"hashes\": [\n    \"A", 1);
    assert_eq!(
        ConsistencyProof::from_json(&bad_hash).err(),
        m("a proof hash is not 44 characters of base64")
    );
}

#[test]
fn proof_hashes_max_in_json_at_and_past_the_bound() {
    let h = b64_encode(&[7u8; 32]);
    let doc = |n: usize| {
        let hashes = vec![format!("\"{h}\""); n].join(",");
        format!("{{\"format\":\"{CONSISTENCY_PROOF_FORMAT}\",\"origin\":\"o\",\"old_size\":1,\"new_size\":2,\"hashes\":[{hashes}]}}")
    };
    assert_eq!(
        ConsistencyProof::from_json(&doc(PROOF_HASHES_MAX)).map(|p| p.hashes().len()),
        Ok(PROOF_HASHES_MAX)
    );
    let long = Some(TlogError::ProofTooLong {
        count: PROOF_HASHES_MAX + 1,
    });
    assert_eq!(
        ConsistencyProof::from_json(&doc(PROOF_HASHES_MAX + 1)).err(),
        long
    );
    assert_eq!(
        ConsistencyProof::new("o", 1, 2, vec![[0; 32]; PROOF_HASHES_MAX + 1]).err(),
        long
    );
    let f = Fixture::new(8);
    let note = f.note(7, false);
    assert!(InclusionProof::new(&note, 0, link(0), vec![[0; 32]; PROOF_HASHES_MAX]).is_ok());
    assert_eq!(
        InclusionProof::new(&note, 0, link(0), vec![[0; 32]; PROOF_HASHES_MAX + 1]).err(),
        long
    );
}

#[test]
fn proof_json_bytes_max_at_and_past_the_bound() {
    let f = Fixture::new(8);
    let json = f.inclusion(3, 7).to_json();
    // JSON allows trailing white space: pad to exactly the bound.
    let at = format!("{json}{}", " ".repeat(PROOF_JSON_BYTES_MAX - json.len()));
    assert_eq!(at.len(), PROOF_JSON_BYTES_MAX);
    assert!(InclusionProof::from_json(&at).is_ok());
    let past = format!("{at} ");
    let too_long = Some(TlogError::ProofJson {
        reason: "proof json is too long",
    });
    assert_eq!(InclusionProof::from_json(&past).err(), too_long);
    assert_eq!(ConsistencyProof::from_json(&past).err(), too_long);
}
