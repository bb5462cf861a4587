//! The benchledger leaf: one leaf per record, in seq order from seq 0.
//!
//! leaf data = u64_be(seq) || link_hash (40 bytes), where link_hash is the
//! record's chain hash (ledger SPEC section 4), which already commits to the
//! previous hash, the seq and the record bytes. The leaf index equals seq.

use super::merkle::{leaf_hash, Hash};

/// Length of the leaf data, in bytes.
pub const LEAF_DATA_BYTES: usize = 40;

/// The leaf data of the record `seq` with chain hash `link_hash`.
pub fn leaf_data(seq: u64, link_hash: &Hash) -> [u8; LEAF_DATA_BYTES] {
    let mut out = [0u8; LEAF_DATA_BYTES];
    out[..8].copy_from_slice(&seq.to_be_bytes());
    out[8..].copy_from_slice(link_hash);
    out
}

/// The RFC 6962 leaf hash of the record `seq` with chain hash `link_hash`.
pub fn record_leaf_hash(seq: u64, link_hash: &Hash) -> Hash {
    leaf_hash(&leaf_data(seq, link_hash))
}
