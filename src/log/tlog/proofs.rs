//! The proof JSON shapes (strict: no unknown or repeated fields, bounded).
//!
//! Inclusion proof (one record in a signed checkpoint):
//!
//! ```json
//! {
//!   "format": "benchledger/tlog-inclusion-proof/v1",
//!   "origin": "<checkpoint origin>",
//!   "tree_size": 7,
//!   "leaf_index": 3,
//!   "link_hash": "<64 lowercase hex: the record's chain hash>",
//!   "hashes": ["<base64 sibling hash, leaf level first>", ...],
//!   "checkpoint": "<the signed checkpoint note, verbatim>"
//! }
//! ```
//!
//! The leaf index is the record's seq; the leaf data is
//! u64_be(leaf_index) || link_hash. `origin` and `tree_size` must equal the
//! checkpoint's.
//!
//! Consistency proof (the tree of `old_size` is a prefix of `new_size`):
//!
//! ```json
//! {
//!   "format": "benchledger/tlog-consistency-proof/v1",
//!   "origin": "<origin of both checkpoints>",
//!   "old_size": 3,
//!   "new_size": 7,
//!   "hashes": ["<base64>", ...]
//! }
//! ```

use serde::{Deserialize, Serialize};

use super::checkpoint::{verify_checkpoint_note, Checkpoint, VerifiedCheckpoint, ORIGIN_BYTES_MAX};
use super::error::TlogError;
use super::leaf::{leaf_data, record_leaf_hash, LEAF_DATA_BYTES};
use super::merkle::{verify_consistency, verify_inclusion, Hash, PROOF_HASHES_MAX, TREE_SIZE_MAX};
use super::note::{SignedNote, VerifierKey};
use super::text::{b64_decode_hash, b64_encode, check_origin, hex_decode, hex_encode};

/// The `format` of an inclusion proof.
pub const INCLUSION_PROOF_FORMAT: &str = "benchledger/tlog-inclusion-proof/v1";
/// The `format` of a consistency proof.
pub const CONSISTENCY_PROOF_FORMAT: &str = "benchledger/tlog-consistency-proof/v1";
/// The largest proof JSON document, in bytes.
pub const PROOF_JSON_BYTES_MAX: usize = 256 * 1024;

fn malformed(reason: &'static str) -> TlogError {
    TlogError::ProofJson { reason }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InclusionWire {
    format: String,
    origin: String,
    tree_size: u64,
    leaf_index: u64,
    link_hash: String,
    hashes: Vec<String>,
    checkpoint: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistencyWire {
    format: String,
    origin: String,
    old_size: u64,
    new_size: u64,
    hashes: Vec<String>,
}

fn parse_json<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, TlogError> {
    if text.len() > PROOF_JSON_BYTES_MAX {
        return Err(malformed("proof json is too long"));
    }
    serde_json::from_str(text).map_err(|e| TlogError::ProofJsonSyntax(e.to_string()))
}

fn to_json<T: Serialize>(wire: &T) -> String {
    let mut out = serde_json::to_string_pretty(wire).expect("proof wire types serialize");
    out.push('\n');
    out
}

fn check_hashes(hashes: &[Hash]) -> Result<(), TlogError> {
    if hashes.len() > PROOF_HASHES_MAX {
        return Err(TlogError::ProofTooLong {
            count: hashes.len(),
        });
    }
    Ok(())
}

fn decode_hashes(encoded: &[String]) -> Result<Vec<Hash>, TlogError> {
    if encoded.len() > PROOF_HASHES_MAX {
        return Err(TlogError::ProofTooLong {
            count: encoded.len(),
        });
    }
    encoded
        .iter()
        .map(|s| b64_decode_hash(s).ok_or(malformed("a proof hash is not 44 characters of base64")))
        .collect()
}

fn mismatch(field: &'static str, found: impl ToString, expected: impl ToString) -> TlogError {
    TlogError::ProofCheckpointMismatch {
        field,
        found: found.to_string(),
        expected: expected.to_string(),
    }
}

/// An inclusion proof of one record in a signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    origin: String,
    tree_size: u64,
    leaf_index: u64,
    link_hash: Hash,
    hashes: Vec<Hash>,
    checkpoint: String,
}

impl InclusionProof {
    /// A proof for record `leaf_index` (its seq) with chain hash
    /// `link_hash`, against the signed checkpoint note `checkpoint` (origin
    /// and size are taken from it; its signatures are not checked here).
    pub fn new(
        checkpoint: &str,
        leaf_index: u64,
        link_hash: Hash,
        hashes: Vec<Hash>,
    ) -> Result<Self, TlogError> {
        let body = Checkpoint::parse(SignedNote::parse(checkpoint)?.text())?;
        let proof = Self {
            origin: body.origin().to_owned(),
            tree_size: body.size(),
            leaf_index,
            link_hash,
            hashes,
            checkpoint: checkpoint.to_owned(),
        };
        proof.check()?;
        Ok(proof)
    }

    fn check(&self) -> Result<(), TlogError> {
        check_origin(&self.origin, ORIGIN_BYTES_MAX)?;
        if self.tree_size > TREE_SIZE_MAX {
            return Err(TlogError::TreeSizeTooLarge {
                size: self.tree_size,
            });
        }
        if self.leaf_index >= self.tree_size {
            return Err(TlogError::IndexOutOfRange {
                index: self.leaf_index,
                size: self.tree_size,
            });
        }
        check_hashes(&self.hashes)?;
        let body = Checkpoint::parse(SignedNote::parse(&self.checkpoint)?.text())?;
        if body.origin() != self.origin {
            return Err(mismatch("origin", &self.origin, body.origin()));
        }
        if body.size() != self.tree_size {
            return Err(mismatch("tree_size", self.tree_size, body.size()));
        }
        Ok(())
    }

    /// Parse the JSON strictly.
    pub fn from_json(text: &str) -> Result<Self, TlogError> {
        let wire: InclusionWire = parse_json(text)?;
        if wire.format != INCLUSION_PROOF_FORMAT {
            return Err(malformed(
                "format is not benchledger/tlog-inclusion-proof/v1",
            ));
        }
        let link_hash = hex_decode::<32>(&wire.link_hash)
            .ok_or(malformed("link_hash is not 64 lowercase hex digits"))?;
        let proof = Self {
            origin: wire.origin,
            tree_size: wire.tree_size,
            leaf_index: wire.leaf_index,
            link_hash,
            hashes: decode_hashes(&wire.hashes)?,
            checkpoint: wire.checkpoint,
        };
        proof.check()?;
        Ok(proof)
    }

    /// The JSON text (pretty, fields in documented order, final newline).
    pub fn to_json(&self) -> String {
        to_json(&InclusionWire {
            format: INCLUSION_PROOF_FORMAT.to_owned(),
            origin: self.origin.clone(),
            tree_size: self.tree_size,
            leaf_index: self.leaf_index,
            link_hash: hex_encode(&self.link_hash),
            hashes: self.hashes.iter().map(|h| b64_encode(h)).collect(),
            checkpoint: self.checkpoint.clone(),
        })
    }

    /// Verify the checkpoint note (log key, known witnesses) and that the
    /// record's leaf is at `leaf_index` in its tree.
    pub fn verify(
        &self,
        log_key: &VerifierKey,
        witnesses: &[VerifierKey],
    ) -> Result<VerifiedCheckpoint, TlogError> {
        let verified = verify_checkpoint_note(&self.checkpoint, log_key, witnesses)?;
        let cp = &verified.checkpoint;
        if cp.origin() != self.origin {
            return Err(mismatch("origin", &self.origin, cp.origin()));
        }
        if cp.size() != self.tree_size {
            return Err(mismatch("tree_size", self.tree_size, cp.size()));
        }
        let leaf = record_leaf_hash(self.leaf_index, &self.link_hash);
        verify_inclusion(
            &leaf,
            self.leaf_index,
            self.tree_size,
            &self.hashes,
            cp.root(),
        )?;
        Ok(verified)
    }

    /// The log origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The checkpoint tree size, in leaves.
    pub fn tree_size(&self) -> u64 {
        self.tree_size
    }

    /// The leaf index: the record's seq.
    pub fn leaf_index(&self) -> u64 {
        self.leaf_index
    }

    /// The record's chain hash.
    pub fn link_hash(&self) -> &Hash {
        &self.link_hash
    }

    /// The leaf data: u64_be(leaf_index) || link_hash.
    pub fn leaf_data(&self) -> [u8; LEAF_DATA_BYTES] {
        leaf_data(self.leaf_index, &self.link_hash)
    }

    /// The proof hashes, in RFC 9162 order.
    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }

    /// The signed checkpoint note.
    pub fn checkpoint(&self) -> &str {
        &self.checkpoint
    }
}

/// A consistency proof between two tree sizes of one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    origin: String,
    old_size: u64,
    new_size: u64,
    hashes: Vec<Hash>,
}

impl ConsistencyProof {
    /// A proof from `old_size` to `new_size` of the log `origin`.
    pub fn new(
        origin: &str,
        old_size: u64,
        new_size: u64,
        hashes: Vec<Hash>,
    ) -> Result<Self, TlogError> {
        check_origin(origin, ORIGIN_BYTES_MAX)?;
        if new_size > TREE_SIZE_MAX {
            return Err(TlogError::TreeSizeTooLarge { size: new_size });
        }
        if old_size > new_size {
            return Err(TlogError::OldSizeAboveNewSize {
                old: old_size,
                new: new_size,
            });
        }
        check_hashes(&hashes)?;
        Ok(Self {
            origin: origin.to_owned(),
            old_size,
            new_size,
            hashes,
        })
    }

    /// Parse the JSON strictly.
    pub fn from_json(text: &str) -> Result<Self, TlogError> {
        let wire: ConsistencyWire = parse_json(text)?;
        if wire.format != CONSISTENCY_PROOF_FORMAT {
            return Err(malformed(
                "format is not benchledger/tlog-consistency-proof/v1",
            ));
        }
        let hashes = decode_hashes(&wire.hashes)?;
        Self::new(&wire.origin, wire.old_size, wire.new_size, hashes)
    }

    /// The JSON text (pretty, fields in documented order, final newline).
    pub fn to_json(&self) -> String {
        to_json(&ConsistencyWire {
            format: CONSISTENCY_PROOF_FORMAT.to_owned(),
            origin: self.origin.clone(),
            old_size: self.old_size,
            new_size: self.new_size,
            hashes: self.hashes.iter().map(|h| b64_encode(h)).collect(),
        })
    }

    /// Verify both signed checkpoint notes, that they name this proof's
    /// origin and sizes, and that the old tree is a prefix of the new one.
    pub fn verify(
        &self,
        old_note: &str,
        new_note: &str,
        log_key: &VerifierKey,
        witnesses: &[VerifierKey],
    ) -> Result<(VerifiedCheckpoint, VerifiedCheckpoint), TlogError> {
        let old = verify_checkpoint_note(old_note, log_key, witnesses)?;
        let new = verify_checkpoint_note(new_note, log_key, witnesses)?;
        for (cp, size, which) in [
            (&old, self.old_size, "old_size"),
            (&new, self.new_size, "new_size"),
        ] {
            if cp.checkpoint.origin() != self.origin {
                return Err(mismatch("origin", &self.origin, cp.checkpoint.origin()));
            }
            if cp.checkpoint.size() != size {
                return Err(mismatch(which, size, cp.checkpoint.size()));
            }
        }
        let (old_root, new_root) = (old.checkpoint.root(), new.checkpoint.root());
        verify_consistency(
            self.old_size,
            self.new_size,
            &self.hashes,
            old_root,
            new_root,
        )?;
        Ok((old, new))
    }

    /// The log origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The old tree size, in leaves.
    pub fn old_size(&self) -> u64 {
        self.old_size
    }

    /// The new tree size, in leaves.
    pub fn new_size(&self) -> u64 {
        self.new_size
    }

    /// The proof hashes, in RFC 9162 order.
    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }
}
