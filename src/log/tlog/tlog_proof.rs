//! The C2SP `tlog-proof` text form of an inclusion proof (TRUST-8):
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64 of the leaf data: u64_be(seq) || link hash>
//! index <seq>
//! <base64 sibling hash, leaf level first>
//! ...
//!
//! <the signed checkpoint note, verbatim>
//! ```
//!
//! The `extra` line carries what a verifier needs to compute the leaf hash
//! (C2SP: unauthenticated; the inclusion proof binds it to the signed
//! root). benchledger always writes it and requires it when reading, and
//! its leaf data must name the `index` line's seq.

use super::error::TlogError;
use super::leaf::LEAF_DATA_BYTES;
use super::merkle::{Hash, PROOF_HASHES_MAX};
use super::proofs::InclusionProof;
use super::text::{b64_decode, b64_decode_hash, b64_encode};

/// The first line of a tlog-proof.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";
/// The largest tlog-proof read, in bytes.
pub const TLOG_PROOF_BYTES_MAX: usize = 256 * 1024;

fn bad(reason: &'static str) -> TlogError {
    TlogError::ProofJson { reason }
}

/// The tlog-proof text of an inclusion proof.
pub fn to_tlog_proof(proof: &InclusionProof) -> String {
    let mut out = format!(
        "{TLOG_PROOF_HEADER}\nextra {}\nindex {}\n",
        b64_encode(&proof.leaf_data()),
        proof.leaf_index()
    );
    for h in proof.hashes() {
        out.push_str(&b64_encode(h));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(proof.checkpoint());
    out
}

/// Parses a tlog-proof strictly into an inclusion proof (not verified:
/// call [`InclusionProof::verify`]).
pub fn from_tlog_proof(text: &str) -> Result<InclusionProof, TlogError> {
    if text.len() > TLOG_PROOF_BYTES_MAX {
        return Err(bad("the tlog-proof is too long"));
    }
    let (head, checkpoint) = text.split_once("\n\n").ok_or(bad(
        "the tlog-proof has no empty line before its checkpoint",
    ))?;
    let mut lines = head.split('\n');
    if lines.next() != Some(TLOG_PROOF_HEADER) {
        return Err(bad("the first line is not c2sp.org/tlog-proof@v1"));
    }
    let extra = lines
        .next()
        .and_then(|l| l.strip_prefix("extra "))
        .ok_or(bad("no extra line: benchledger needs the leaf data"))?;
    let leaf: [u8; LEAF_DATA_BYTES] = b64_decode(extra)
        .and_then(|b| b.try_into().ok())
        .ok_or(bad("the extra line is not 40 bytes of base64 leaf data"))?;
    let index_text = lines
        .next()
        .and_then(|l| l.strip_prefix("index "))
        .ok_or(bad("no index line"))?;
    let canonical = index_text.bytes().all(|b| b.is_ascii_digit())
        && !index_text.is_empty()
        && (index_text == "0" || !index_text.starts_with('0'));
    let index: u64 = index_text
        .parse()
        .ok()
        .filter(|_| canonical)
        .ok_or(bad("the index is not a decimal without leading zeros"))?;
    if u64::from_be_bytes(leaf[..8].try_into().expect("8 bytes")) != index {
        return Err(bad("the extra line's leaf data names another seq"));
    }
    let mut hashes: Vec<Hash> = Vec::new();
    for line in lines {
        if hashes.len() == PROOF_HASHES_MAX {
            return Err(TlogError::ProofTooLong {
                count: hashes.len() + 1,
            });
        }
        hashes.push(b64_decode_hash(line).ok_or(bad("a proof line is not a base64 hash"))?);
    }
    let link: Hash = leaf[8..].try_into().expect("32 bytes");
    InclusionProof::new(checkpoint, index, link, hashes)
}
