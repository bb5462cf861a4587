//! Deterministic test vectors (tools/tlog-verify/vectors.json).
//!
//! Eight leaves, seq 0..=7, each with a stand-in link hash
//! SHA-256(u64_be(seq)); roots for sizes 1..=8; checkpoints at sizes 3 and 7
//! signed by a log key and the size-7 one cosigned by a witness; one
//! inclusion and one consistency proof; published examples from C2SP and Go,
//! and a real sum.golang.org checkpoint (its origin holds spaces); and
//! inputs every verifier must reject (among them, as transparency-dev/merkle
//! expects, an inclusion proof in the empty tree and a consistency proof
//! from size 0). The keys are TEST-ONLY: their
//! seeds are SHA-256 of public strings.
//!
//! `vectors_json()` is byte-for-byte the committed file; the test in
//! `tests.rs` checks it, and rewrites the file when
//! BENCHLEDGER_TLOG_WRITE_VECTORS=1.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::checkpoint::Checkpoint;
use super::cosignature::cosign;
use super::error::TlogError;
use super::leaf::{leaf_data, record_leaf_hash};
use super::merkle::{prove_consistency, prove_inclusion, tree_root, Hash, MemoryNodes};
use super::note::{sign_note, KeyKind, SignedNote, SignerKey};
use super::proofs::{ConsistencyProof, InclusionProof};
use super::text::hex_encode;

/// The origin (and log key name) of the vectors: ledger id of SPEC's genesis.
pub const VECTORS_ORIGIN: &str = "benchledger.example/ledger/000102030405060708090a0b0c0d0e0f";
/// The witness key name of the vectors.
pub const VECTORS_WITNESS: &str = "witness.benchledger.example/test-only";
/// The cosignature time of the vectors: 2026-03-01T12:00:00Z.
pub const VECTORS_COSIGNATURE_TIME_SECONDS: u64 = 1_772_366_400;
const LEAF_COUNT: u64 = 8;

/// C2SP signed-note's example verifier key (verifies [`C2SP_EXAMPLE_NOTE`]).
pub const C2SP_EXAMPLE_VKEY: &str =
    "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
/// C2SP signed-note's example note.
pub const C2SP_EXAMPLE_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
/// golang.org/x/mod/sumdb/note's test verifier key.
pub const GO_NOTE_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
/// golang.org/x/mod/sumdb/note's test signer key (public test data).
pub const GO_NOTE_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
/// sum.golang.org's verifier key, as the go command ships it.
pub const SUMDB_VKEY: &str = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8";
/// A checkpoint sum.golang.org signed (tree size 31700353; quoted in
/// transparency-dev/trillian-tessera's internal/parse tests, without its
/// final newline). Its origin, `go.sum database tree`, holds spaces.
pub const SUMDB_NOTE: &str = "go.sum database tree\n31700353\nqINS1GRFhWHwdkUeqLEoP4yEMkTBBzxBkGwGQlVlVcs=\n\n\u{2014} sum.golang.org Az3grnmrIUEDFqHzAElIQCPNoRFRAAdFo47fooyWKMHb89k11GJh5zHIfNCOBmwn/C3YI8oW9/C8DJ87F61QqspBYwM=\n";
/// golang.org/x/mod/sumdb/note's test note, signed by [`GO_NOTE_SKEY`].
pub const GO_NOTE: &str = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

#[derive(Serialize)]
struct Vectors {
    comment: &'static str,
    origin: &'static str,
    leaves: Vec<LeafVector>,
    roots: Vec<RootVector>,
    keys: Keys,
    checkpoint: String,
    signed_note: String,
    cosignature: CosignatureVector,
    inclusion_proof_json: String,
    consistency: ConsistencyVector,
    external: Vec<ExternalVector>,
    external_checkpoints: Vec<ExternalCheckpoint>,
    must_fail: Vec<MustFail>,
}

#[derive(Serialize)]
struct LeafVector {
    seq: u64,
    link_hash: String,
    leaf_data: String,
    leaf_hash: String,
}

#[derive(Serialize)]
struct RootVector {
    size: u64,
    root: String,
}

#[derive(Serialize)]
struct KeyPair {
    verifier_key: String,
    signer_key_test_only: String,
}

#[derive(Serialize)]
struct Keys {
    log: KeyPair,
    witness: KeyPair,
}

#[derive(Serialize)]
struct CosignatureVector {
    timestamp: u64,
    line: String,
    cosigned_note: String,
}

#[derive(Serialize)]
struct ConsistencyVector {
    old_note: String,
    new_note: String,
    proof_json: String,
}

#[derive(Serialize)]
struct ExternalVector {
    source: &'static str,
    verifier_key: &'static str,
    signer_key: Option<&'static str>,
    note: &'static str,
}

/// A checkpoint a real log signed: it verifies with `verifier_key` and
/// parses to `origin`, `tree_size` and `root` (hex).
#[derive(Serialize)]
struct ExternalCheckpoint {
    source: &'static str,
    verifier_key: &'static str,
    note: &'static str,
    origin: String,
    tree_size: u64,
    root: String,
}

/// An input every verifier must reject. `kind` says which fields are set:
/// note (note, verifier_keys), checkpoint (text), verifier_key (text),
/// inclusion (proof_json), consistency (proof_json, old_note, new_note);
/// inclusion and consistency are checked with keys.log and keys.witness.
#[derive(Serialize, Default)]
struct MustFail {
    name: &'static str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verifier_keys: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proof_json: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_note: Option<String>,
}

fn seed(label: &str) -> [u8; 32] {
    Sha256::digest(label.as_bytes()).into()
}

/// The stand-in link hash of leaf `seq`: SHA-256(u64_be(seq)).
pub fn vector_link_hash(seq: u64) -> Hash {
    Sha256::digest(seq.to_be_bytes()).into()
}

/// The TEST-ONLY log key (Ed25519 note key named [`VECTORS_ORIGIN`]).
pub fn vector_log_key() -> Result<SignerKey, TlogError> {
    let s = seed("benchledger tlog test vectors: log key (TEST ONLY)");
    SignerKey::from_seed(VECTORS_ORIGIN, KeyKind::Ed25519, s)
}

/// The TEST-ONLY witness key (cosignature/v1 key named [`VECTORS_WITNESS`]).
pub fn vector_witness_key() -> Result<SignerKey, TlogError> {
    let s = seed("benchledger tlog test vectors: witness key (TEST ONLY)");
    SignerKey::from_seed(VECTORS_WITNESS, KeyKind::CosignatureV1, s)
}

fn key_pair(key: &SignerKey) -> KeyPair {
    KeyPair {
        verifier_key: key.verifier().encode(),
        signer_key_test_only: key.encode(),
    }
}

fn leaves_and_tree() -> Result<(Vec<LeafVector>, MemoryNodes), TlogError> {
    let mut tree = MemoryNodes::new();
    let mut leaves = Vec::new();
    for seq in 0..LEAF_COUNT {
        let link = vector_link_hash(seq);
        let hash = record_leaf_hash(seq, &link);
        tree.append_leaf_hash(hash)?;
        leaves.push(LeafVector {
            seq,
            link_hash: hex_encode(&link),
            leaf_data: hex_encode(&leaf_data(seq, &link)),
            leaf_hash: hex_encode(&hash),
        });
    }
    Ok((leaves, tree))
}

fn signed_checkpoint(
    tree: &MemoryNodes,
    size: u64,
    log: &SignerKey,
) -> Result<(String, String), TlogError> {
    let body = Checkpoint::new(VECTORS_ORIGIN, size, tree_root(tree, size)?)?.body();
    let note = sign_note(&body, &[log])?;
    Ok((body, note))
}

/// The vectors file, byte for byte.
pub fn vectors_json() -> Result<String, TlogError> {
    let (log, witness) = (vector_log_key()?, vector_witness_key()?);
    let (leaves, tree) = leaves_and_tree()?;
    let roots = (1..=LEAF_COUNT)
        .map(|size| {
            Ok(RootVector {
                size,
                root: hex_encode(&tree_root(&tree, size)?),
            })
        })
        .collect::<Result<Vec<_>, TlogError>>()?;
    let (body, signed_note) = signed_checkpoint(&tree, 7, &log)?;
    let line = cosign(&body, &witness, VECTORS_COSIGNATURE_TIME_SECONDS)?;
    let mut cosigned = SignedNote::parse(&signed_note)?;
    cosigned.push_signature(line.clone())?;
    let cosigned_note = cosigned.encode();
    let inclusion = prove_inclusion(&tree, 3, 7)?;
    let inclusion = InclusionProof::new(&cosigned_note, 3, vector_link_hash(3), inclusion)?;
    let (_, old_note) = signed_checkpoint(&tree, 3, &log)?;
    let consistency = ConsistencyProof::new(VECTORS_ORIGIN, 3, 7, prove_consistency(&tree, 3, 7)?)?;
    let consistency = ConsistencyVector {
        old_note,
        new_note: cosigned_note.clone(),
        proof_json: consistency.to_json(),
    };
    let vectors = Vectors {
        comment: "benchledger tlog test vectors; regenerate with BENCHLEDGER_TLOG_WRITE_VECTORS=1 cargo test tlog. The signer keys are TEST-ONLY (seeds are SHA-256 of public strings): never trust them.",
        origin: VECTORS_ORIGIN,
        leaves,
        roots,
        keys: Keys { log: key_pair(&log), witness: key_pair(&witness) },
        must_fail: {
            let mut cases = must_fail(&inclusion, &consistency, &signed_note, &body, &log, &witness)?;
            cases.extend(must_fail_empty_tree(&tree, &inclusion, &consistency, &log)?);
            cases
        },
        checkpoint: body,
        signed_note,
        cosignature: CosignatureVector {
            timestamp: VECTORS_COSIGNATURE_TIME_SECONDS,
            line: line.line(),
            cosigned_note,
        },
        inclusion_proof_json: inclusion.to_json(),
        consistency,
        external: external(),
        external_checkpoints: external_checkpoints()?,
    };
    let mut out =
        serde_json::to_string_pretty(&vectors).map_err(|e| TlogError::Vectors(e.to_string()))?;
    out.push('\n');
    Ok(out)
}

fn external() -> Vec<ExternalVector> {
    vec![
        ExternalVector {
            source: "C2SP signed-note, section Verifier keys, Example",
            verifier_key: C2SP_EXAMPLE_VKEY,
            signer_key: None,
            note: C2SP_EXAMPLE_NOTE,
        },
        ExternalVector {
            source: "golang.org/x/mod/sumdb/note note_test.go (PeterNeumann)",
            verifier_key: GO_NOTE_VKEY,
            signer_key: Some(GO_NOTE_SKEY),
            note: GO_NOTE,
        },
    ]
}

fn external_checkpoints() -> Result<Vec<ExternalCheckpoint>, TlogError> {
    let body = Checkpoint::parse(SignedNote::parse(SUMDB_NOTE)?.text())?;
    Ok(vec![ExternalCheckpoint {
        source: "sum.golang.org, a signed tree head (origin with spaces)",
        verifier_key: SUMDB_VKEY,
        note: SUMDB_NOTE,
        origin: body.origin().to_owned(),
        tree_size: body.size(),
        root: hex_encode(body.root()),
    }])
}

/// What transparency-dev/merkle's vectors expect refused: an inclusion
/// proof in the empty tree (no leaf index is below size 0) and a
/// consistency proof from size 0 (it proves nothing), each with a size-0
/// checkpoint the log key signed.
fn must_fail_empty_tree(
    tree: &MemoryNodes,
    inclusion: &InclusionProof,
    consistency: &ConsistencyVector,
    log: &SignerKey,
) -> Result<Vec<MustFail>, TlogError> {
    let (_, empty_note) = signed_checkpoint(tree, 0, log)?;
    // The proof's own JSON, field order kept, with the size-0 note, size,
    // index 0 and no hashes.
    let json = inclusion.to_json();
    let hashes = json
        .find("\"hashes\": [")
        .and_then(|start| Some((start, start + json[start..].find(']')?)))
        .ok_or_else(|| TlogError::Vectors("the inclusion proof has no hashes".into()))?;
    let note = serde_json::to_string(&empty_note).map_err(|e| TlogError::Vectors(e.to_string()))?;
    let in_empty = format!(
        "{}\"hashes\": []{}",
        &json[..hashes.0],
        &json[hashes.1 + 1..]
    )
    .replacen("\"tree_size\": 7", "\"tree_size\": 0", 1)
    .replacen("\"leaf_index\": 3", "\"leaf_index\": 0", 1);
    let in_empty = match in_empty.find("\"checkpoint\": \"") {
        Some(at) => {
            let value = at + "\"checkpoint\": ".len();
            let end = value + json_string_len(&in_empty[value..]);
            format!("{}{note}{}", &in_empty[..value], &in_empty[end..])
        }
        None => {
            return Err(TlogError::Vectors(
                "the inclusion proof has no checkpoint".into(),
            ))
        }
    };
    let from_empty = ConsistencyProof::new(VECTORS_ORIGIN, 0, 3, Vec::new())?;
    Ok(vec![
        MustFail::inclusion("inclusion proof in the empty tree", in_empty),
        MustFail {
            name: "consistency proof from the empty tree (size 0 to 3)",
            kind: "consistency",
            proof_json: Some(from_empty.to_json()),
            old_note: Some(empty_note),
            new_note: Some(consistency.old_note.clone()),
            ..MustFail::default()
        },
    ])
}

/// The length in bytes of the JSON string literal `text` starts with.
fn json_string_len(text: &str) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match (escaped, c) {
            (false, '\\') => escaped = true,
            (false, '"') => return i + 1,
            _ => escaped = false,
        }
    }
    text.len()
}

/// Flip the lowest bit of the `nth` base64 character after `marker` so the
/// text stays canonical base64 of the same length ('A' <-> 'B' etc.).
fn flip_after(text: &str, marker: &str, nth: usize) -> String {
    let start = text.find(marker).map_or(0, |i| i + marker.len()) + nth;
    let mut bytes = text.as_bytes().to_vec();
    bytes[start] = match bytes[start] {
        b'A' => b'B',
        b'B' => b'A',
        c if c.is_ascii_lowercase() && c != b'z' => c + 1,
        _ => b'A',
    };
    String::from_utf8(bytes).expect("ascii edit keeps utf-8")
}

impl MustFail {
    fn note(name: &'static str, note: String, vkey: &str) -> Self {
        let verifier_keys = Some(vec![vkey.to_owned()]);
        Self {
            name,
            kind: "note",
            note: Some(note),
            verifier_keys,
            ..Self::default()
        }
    }

    fn text(name: &'static str, kind: &'static str, text: String) -> Self {
        Self {
            name,
            kind,
            text: Some(text),
            ..Self::default()
        }
    }

    fn inclusion(name: &'static str, proof_json: String) -> Self {
        Self {
            name,
            kind: "inclusion",
            proof_json: Some(proof_json),
            ..Self::default()
        }
    }

    fn consistency(name: &'static str, proof_json: String, c: &ConsistencyVector) -> Self {
        Self {
            name,
            kind: "consistency",
            proof_json: Some(proof_json),
            old_note: Some(c.old_note.clone()),
            new_note: Some(c.new_note.clone()),
            ..Self::default()
        }
    }
}

fn must_fail(
    inclusion: &InclusionProof,
    consistency: &ConsistencyVector,
    signed_note: &str,
    body: &str,
    log: &SignerKey,
    witness: &SignerKey,
) -> Result<Vec<MustFail>, TlogError> {
    let mut cases = must_fail_notes(signed_note, body, log)?;
    cases.extend(must_fail_texts(body, log, witness));
    let proof = inclusion.to_json();
    let hashes = "\"hashes\": [\n    \"";
    cases.extend([
        MustFail::inclusion(
            "leaf index changed",
            proof.replacen("\"leaf_index\": 3", "\"leaf_index\": 4", 1),
        ),
        MustFail::inclusion("a proof hash altered", flip_after(&proof, hashes, 0)),
        MustFail::inclusion(
            "link hash altered",
            flip_after(&proof, "\"link_hash\": \"", 0),
        ),
        MustFail::inclusion(
            "unknown field",
            proof.replacen("{\n", "{\n  \"extra\": 1,\n", 1),
        ),
    ]);
    let c = consistency;
    let old_size = c
        .proof_json
        .replacen("\"old_size\": 3", "\"old_size\": 2", 1);
    cases.extend([
        MustFail::consistency(
            "a proof hash altered",
            flip_after(&c.proof_json, hashes, 0),
            c,
        ),
        MustFail::consistency("old size changed", old_size, c),
    ]);
    Ok(cases)
}

fn must_fail_notes(
    signed_note: &str,
    body: &str,
    log: &SignerKey,
) -> Result<Vec<MustFail>, TlogError> {
    let vkey = log.verifier().encode();
    let stranger =
        SignerKey::from_seed("stranger.example/key", KeyKind::Ed25519, seed("stranger"))?;
    Ok(vec![
        MustFail::note(
            "signature from the known key altered",
            flip_after(signed_note, "\u{2014} ", 70),
            &vkey,
        ),
        MustFail::note(
            "note text altered after signing",
            signed_note.replacen("\n7\n", "\n8\n", 1),
            &vkey,
        ),
        MustFail::note(
            "signed only by an unknown key",
            sign_note(body, &[&stranger])?,
            &vkey,
        ),
        MustFail::note(
            "no blank line before the signatures",
            signed_note.replacen("\n\n", "\n", 1),
            &vkey,
        ),
    ])
}

fn must_fail_texts(body: &str, log: &SignerKey, witness: &SignerKey) -> Vec<MustFail> {
    let lines: Vec<&str> = body.lines().collect();
    let (origin, root) = (lines[0], lines[2]);
    let checkpoint = |name, text| MustFail::text(name, "checkpoint", text);
    let vkey = |name, text| MustFail::text(name, "verifier_key", text);
    vec![
        checkpoint(
            "size with a leading zero",
            format!("{origin}\n07\n{root}\n"),
        ),
        checkpoint("empty origin line", format!("\n7\n{root}\n")),
        checkpoint(
            "root of 43 characters",
            format!("{origin}\n7\n{}\n", &root[1..]),
        ),
        checkpoint("no final newline", body.trim_end_matches('\n').to_owned()),
        checkpoint(
            "size above the maximum",
            format!("{origin}\n281474976710657\n{root}\n"),
        ),
        checkpoint("empty extension line", format!("{body}\n")),
        vkey("key id does not match", wrong_key_id(log)),
        vkey(
            "upper-case key id",
            upper_key_id(&witness.verifier().encode()),
        ),
        vkey(
            "unknown signature type",
            flip_type_byte(&log.verifier().encode()),
        ),
        vkey("small-order public key (the identity)", identity_key()),
    ]
}

fn upper_key_id(vkey: &str) -> String {
    assert!(vkey
        .split('+')
        .nth(1)
        .is_some_and(|id| id.contains(char::is_alphabetic)));
    let parts: Vec<&str> = vkey.split('+').collect();
    format!("{}+{}+{}", parts[0], parts[1].to_uppercase(), parts[2])
}

/// A verifier key for the identity point, with a correct key id.
fn identity_key() -> String {
    let mut public = [0u8; 32];
    public[0] = 1;
    let id = super::note::key_id("identity.example", KeyKind::Ed25519, &public);
    let mut material = vec![KeyKind::Ed25519.alg_byte()];
    material.extend_from_slice(&public);
    format!(
        "identity.example+{id:08x}+{}",
        super::text::b64_encode(&material)
    )
}

fn wrong_key_id(log: &SignerKey) -> String {
    let vkey = log.verifier().encode();
    let parts: Vec<&str> = vkey.split('+').collect();
    format!("{}+{:08x}+{}", parts[0], log.key_id() ^ 1, parts[2])
}

/// The verifier key with signature type 0x02 instead of 0x01.
fn flip_type_byte(vkey: &str) -> String {
    let parts: Vec<&str> = vkey.split('+').collect();
    let mut raw = super::text::b64_decode(parts[2]).expect("own key is base64");
    raw[0] = 0x02;
    format!(
        "{}+{}+{}",
        parts[0],
        parts[1],
        super::text::b64_encode(&raw)
    )
}

/// The committed vectors file, relative to this source file
/// (src/log/tlog/vectors.rs -> tools/tlog-verify/vectors.json).
#[cfg(test)]
pub(super) const VECTORS_FILE: &str = include_str!("../../../tools/tlog-verify/vectors.json");
/// Where the test rewrites the file when BENCHLEDGER_TLOG_WRITE_VECTORS=1.
#[cfg(test)]
pub(super) const VECTORS_PATH_FROM_MANIFEST: &str = "tools/tlog-verify/vectors.json";
