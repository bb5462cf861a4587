//! The committed vectors: re-derived byte for byte, and every case checked.

use serde_json::Value;

use super::super::checkpoint::{verify_checkpoint_note, Checkpoint};
use super::super::merkle::{leaf_hash, root_of_leaf_hashes, Hash};
use super::super::note::{open_note, sign_note, SignerKey, VerifierKey};
use super::super::proofs::{ConsistencyProof, InclusionProof};
use super::super::text::hex_decode;
use super::super::vectors::{vectors_json, VECTORS_FILE, VECTORS_PATH_FROM_MANIFEST};

#[test]
fn vectors_file_is_re_derived_byte_for_byte() {
    let fresh = vectors_json().unwrap();
    if std::env::var("BENCHLEDGER_TLOG_WRITE_VECTORS").as_deref() == Ok("1") {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS_PATH_FROM_MANIFEST);
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    assert!(
        fresh == VECTORS_FILE,
        "vectors.json is stale: BENCHLEDGER_TLOG_WRITE_VECTORS=1 cargo test tlog"
    );
    assert_eq!(vectors_json().unwrap(), fresh, "deterministic");
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is a string"))
}

fn hash(v: &Value, key: &str) -> Hash {
    hex_decode::<32>(s(v, key)).unwrap()
}

#[test]
fn vectors_agree_with_the_implementation() {
    let v: Value = serde_json::from_str(VECTORS_FILE).unwrap();
    let leaves: Vec<Hash> = v["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| hash(l, "leaf_hash"))
        .collect();
    for l in v["leaves"].as_array().unwrap() {
        let data = hex_decode::<40>(s(l, "leaf_data")).unwrap();
        assert_eq!(leaf_hash(&data), hash(l, "leaf_hash"));
    }
    for r in v["roots"].as_array().unwrap() {
        let size = r["size"].as_u64().unwrap() as usize;
        assert_eq!(root_of_leaf_hashes(&leaves[..size]), hash(r, "root"));
    }
    let log = VerifierKey::parse(s(&v["keys"]["log"], "verifier_key")).unwrap();
    let witness = VerifierKey::parse(s(&v["keys"]["witness"], "verifier_key")).unwrap();
    let signer = SignerKey::parse(s(&v["keys"]["log"], "signer_key_test_only")).unwrap();
    assert_eq!(signer.verifier(), log);
    assert_eq!(
        sign_note(s(&v, "checkpoint"), &[&signer]).unwrap(),
        s(&v, "signed_note")
    );
    let cosigned = s(&v["cosignature"], "cosigned_note");
    let opened = verify_checkpoint_note(cosigned, &log, std::slice::from_ref(&witness)).unwrap();
    assert_eq!(opened.note.verified.len(), 2);
    assert_eq!(
        opened.checkpoint,
        Checkpoint::parse(s(&v, "checkpoint")).unwrap()
    );
    let proof = InclusionProof::from_json(s(&v, "inclusion_proof_json")).unwrap();
    assert!(proof.verify(&log, std::slice::from_ref(&witness)).is_ok());
    assert_eq!(proof.to_json(), s(&v, "inclusion_proof_json"));
    let c = &v["consistency"];
    let proof = ConsistencyProof::from_json(s(c, "proof_json")).unwrap();
    assert!(proof
        .verify(
            s(c, "old_note"),
            s(c, "new_note"),
            &log,
            std::slice::from_ref(&witness)
        )
        .is_ok());
    for e in v["external"].as_array().unwrap() {
        let key = VerifierKey::parse(s(e, "verifier_key")).unwrap();
        assert!(
            open_note(s(e, "note"), &[key]).is_ok(),
            "{}",
            s(e, "source")
        );
    }
    for e in v["external_checkpoints"].as_array().unwrap() {
        let key = VerifierKey::parse(s(e, "verifier_key")).unwrap();
        let cp = verify_checkpoint_note(s(e, "note"), &key, &[])
            .unwrap_or_else(|err| panic!("TRUST-8: {} verifies: {err}", s(e, "source")))
            .checkpoint;
        assert_eq!(
            cp.origin(),
            s(e, "origin"),
            "TRUST-8: the whole origin line"
        );
        assert!(cp.origin().contains(' '), "an origin with spaces");
        assert_eq!(cp.size(), e["tree_size"].as_u64().unwrap());
        assert_eq!(*cp.root(), hash(e, "root"));
    }
}

#[test]
fn every_must_fail_vector_fails() {
    let v: Value = serde_json::from_str(VECTORS_FILE).unwrap();
    let log = VerifierKey::parse(s(&v["keys"]["log"], "verifier_key")).unwrap();
    let witnesses = [VerifierKey::parse(s(&v["keys"]["witness"], "verifier_key")).unwrap()];
    let cases = v["must_fail"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        let failed = match s(case, "kind") {
            "note" => {
                let keys: Vec<VerifierKey> = case["verifier_keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| VerifierKey::parse(k.as_str().unwrap()).unwrap())
                    .collect();
                open_note(s(case, "note"), &keys).is_err()
            }
            "checkpoint" => Checkpoint::parse(s(case, "text")).is_err(),
            "verifier_key" => VerifierKey::parse(s(case, "text")).is_err(),
            "inclusion" => InclusionProof::from_json(s(case, "proof_json"))
                .and_then(|p| p.verify(&log, &witnesses))
                .is_err(),
            "consistency" => ConsistencyProof::from_json(s(case, "proof_json"))
                .and_then(|p| p.verify(s(case, "old_note"), s(case, "new_note"), &log, &witnesses))
                .is_err(),
            other => panic!("unknown kind {other}"),
        };
        assert!(failed, "must fail: {}", s(case, "name"));
    }
}
