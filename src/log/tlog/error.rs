//! The one error type of the transparency-log module.

use super::merkle::{PROOF_HASHES_MAX, TREE_SIZE_MAX};
use super::note::SIGNATURES_MAX;

/// Everything that can go wrong in `tlog`. Messages are lowercase and name
/// the failing check; `reason` fields are short static phrases. Each
/// variant is documented by its `#[error]` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlogError {
    // --- Merkle tree and node sources ---
    #[error("tree size {size} exceeds the maximum of {TREE_SIZE_MAX} leaves")]
    TreeSizeTooLarge { size: u64 },
    #[error("tree size {size} exceeds the {available} leaves held by the node source")]
    SizeBeyondSource { size: u64, available: u64 },
    #[error("leaf index {index} is not below tree size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("old tree size {old} exceeds new tree size {new}")]
    OldSizeAboveNewSize { old: u64, new: u64 },
    #[error("node source has no subtree at level {level} index {index}")]
    MissingNode { level: u8, index: u64 },
    #[error("node source failed: {0}")]
    NodeSource(String),
    #[error("bad tile: {0}")]
    Tile(String),
    #[error("proof has {count} hashes, more than the maximum of {PROOF_HASHES_MAX}")]
    ProofTooLong { count: usize },
    #[error("inclusion proof has the wrong number of hashes ({count})")]
    InclusionProofLength { count: usize },
    #[error("inclusion proof does not lead to the expected root")]
    InclusionRootMismatch,
    #[error("consistency proof has the wrong number of hashes ({count})")]
    ConsistencyProofLength { count: usize },
    #[error("consistency proof does not lead to the old root")]
    ConsistencyOldRootMismatch,
    #[error("consistency proof does not lead to the new root")]
    ConsistencyNewRootMismatch,
    #[error("trees of equal size {size} have different roots")]
    SameSizeRootsDiffer { size: u64 },
    #[error("the root of an empty tree is not sha-256 of the empty string")]
    EmptyTreeRootMismatch,
    #[error("a consistency proof from the empty tree (size 0) to size {new} proves nothing and is refused")]
    ConsistencyFromEmptyTree { new: u64 },
    #[error("the log's root at size {size} differs from the checkpoint's")]
    CheckpointRootMismatch { size: u64 },

    // --- text formats ---
    #[error("{what} {problem}")]
    Name {
        what: &'static str,
        problem: &'static str,
    },
    #[error("malformed checkpoint: {reason}")]
    Checkpoint { reason: &'static str },
    #[error("malformed signed note: {reason}")]
    Note { reason: &'static str },
    #[error("note has {count} signatures, more than the maximum of {SIGNATURES_MAX}")]
    TooManySignatures { count: usize },
    #[error("malformed key: {reason}")]
    Key { reason: &'static str },
    #[error("key id {found:08x} does not match the key (expected {expected:08x})")]
    KeyIdMismatch { found: u32, expected: u32 },
    #[error("malformed proof json: {reason}")]
    ProofJson { reason: &'static str },
    #[error("proof json does not parse: {0}")]
    ProofJsonSyntax(String),
    #[error("proof {field} {found} does not match the checkpoint ({expected})")]
    ProofCheckpointMismatch {
        field: &'static str,
        found: String,
        expected: String,
    },

    // --- signatures ---
    #[error("signature from known key {name}+{key_id:08x} does not verify")]
    BadSignature { name: String, key_id: u32 },
    #[error("note has no valid signature from a known key")]
    NoKnownSignature,
    #[error("note is not signed by the required key {name}+{key_id:08x}")]
    RequiredKeyMissing { name: String, key_id: u32 },
    #[error("verifier set holds two keys named {name} with key id {key_id:08x}")]
    AmbiguousVerifier { name: String, key_id: u32 },
    #[error("signers {name}+{key_id:08x} appear twice")]
    DuplicateSigner { name: String, key_id: u32 },
    #[error("key {name} is of kind {found}; a key of kind {wanted} is needed")]
    WrongKeyKind {
        name: String,
        found: &'static str,
        wanted: &'static str,
    },
    #[error("cosignature timestamp {timestamp} exceeds 2^63-1")]
    CosignatureTimeTooLarge { timestamp: u64 },
    #[error("the system random source failed: {0}")]
    Random(String),
    #[error("test vectors: {0}")]
    Vectors(String),
}
