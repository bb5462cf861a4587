//! Transparency-log core for benchledger (issue 19, method section 15).
//!
//! - [`merkle`]: RFC 6962 tree hashing, RFC 9162 inclusion and consistency
//!   proofs, generated in O(log n) reads from a [`merkle::NodeSource`] of
//!   complete-subtree hashes that [`merkle::TreeBuilder`] emits.
//! - [`leaf`]: the benchledger leaf, u64_be(seq) || link_hash.
//! - [`checkpoint`]: C2SP tlog-checkpoint bodies and signed-checkpoint checks.
//! - [`note`]: C2SP signed notes and Ed25519 verifier/signer keys.
//! - [`cosignature`]: C2SP tlog-cosignature v1 (Ed25519, type 0x04).
//! - [`proofs`]: the inclusion and consistency proof JSON.
//! - [`tiles`]: C2SP tlog-tiles paths, tiles, entry bundles, the edge root.
//! - [`tlog_proof`]: the C2SP tlog-proof text form of an inclusion proof.
//! - the deterministic test vectors of tools/tlog-verify are test support:
//!   `testkit::tlog_vectors` (feature `testkit`).
//!
//! Depends on std, sha2, ed25519-dalek, getrandom, base64, thiserror,
//! serde and serde_json only; nothing from the rest of the crate.

pub mod checkpoint;
pub mod cosignature;
pub mod error;
pub mod leaf;
pub mod merkle;
pub mod note;
pub mod proofs;
mod text;
pub mod tiles;
pub mod tlog_proof;
/// The independent verifier's vectors, with TEST-ONLY keys: compiled for
/// the tests alone, never into the production binary.
#[cfg(test)]
mod vectors;

#[cfg(test)]
mod tests;

pub use checkpoint::{check_log_matches, verify_checkpoint_note, Checkpoint, VerifiedCheckpoint};
pub use cosignature::{cosign, verify_cosignature};
pub use error::TlogError;
pub use leaf::{leaf_data, record_leaf_hash};
pub use merkle::{
    leaf_hash, node_hash, prove_consistency, prove_inclusion, tree_root, verify_consistency,
    verify_inclusion, Hash, MemoryNodes, NodeSource, Subtree, TreeBuilder,
};
pub use note::{open_note, sign_note, KeyKind, OpenedNote, SignedNote, SignerKey, VerifierKey};
pub use proofs::{ConsistencyProof, InclusionProof};
