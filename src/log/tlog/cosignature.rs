//! C2SP tlog-cosignature v1 (Ed25519, signature type 0x04).
//!
//! A witness signs `cosignature/v1\ntime <decimal seconds>\n` followed by the
//! whole checkpoint body. The signature line carries
//! base64(key id || u64_be(timestamp) || 64-byte Ed25519 signature).

use super::checkpoint::Checkpoint;
use super::error::TlogError;
use super::note::{KeyKind, NoteSignature, SignerKey, VerifierKey};

/// The largest cosignature timestamp, in POSIX seconds (2^63 - 1).
pub const COSIGNATURE_TIME_SECONDS_MAX: u64 = i64::MAX as u64;
/// The fixed header line of the signed message.
pub const COSIGNATURE_HEADER: &str = "cosignature/v1\n";
/// Bytes after the key id in a v1 cosignature: timestamp and signature.
const TIMESTAMPED_SIGNATURE_BYTES: usize = 8 + 64;

/// The message a v1 cosignature signs over a checkpoint body.
pub fn cosigned_message(body: &str, timestamp: u64) -> String {
    format!("{COSIGNATURE_HEADER}time {timestamp}\n{body}")
}

fn check_time(timestamp: u64) -> Result<(), TlogError> {
    if timestamp > COSIGNATURE_TIME_SECONDS_MAX {
        return Err(TlogError::CosignatureTimeTooLarge { timestamp });
    }
    Ok(())
}

fn want_cosigner(name: &str, kind: KeyKind) -> Result<(), TlogError> {
    if kind != KeyKind::CosignatureV1 {
        return Err(TlogError::WrongKeyKind {
            name: name.to_owned(),
            found: kind.label(),
            wanted: KeyKind::CosignatureV1.label(),
        });
    }
    Ok(())
}

/// Cosign a checkpoint body at `timestamp` (POSIX seconds) with a witness
/// key of kind [`KeyKind::CosignatureV1`].
pub fn cosign(body: &str, witness: &SignerKey, timestamp: u64) -> Result<NoteSignature, TlogError> {
    want_cosigner(witness.name(), witness.kind())?;
    check_time(timestamp)?;
    Checkpoint::parse(body)?;
    let sig = witness.sign_raw(cosigned_message(body, timestamp).as_bytes());
    let mut signature = timestamp.to_be_bytes().to_vec();
    signature.extend_from_slice(&sig);
    Ok(NoteSignature {
        name: witness.name().to_owned(),
        key_id: witness.key_id(),
        signature,
    })
}

/// Verify the bytes after the key id of a v1 cosignature over `body`;
/// returns the timestamp. Used by `open_note` for cosigner keys.
pub(super) fn verify_timestamped(
    body: &str,
    signature: &[u8],
    witness: &VerifierKey,
) -> Result<u64, TlogError> {
    want_cosigner(witness.name(), witness.kind())?;
    let bad = || TlogError::BadSignature {
        name: witness.name().to_owned(),
        key_id: witness.key_id(),
    };
    if signature.len() != TIMESTAMPED_SIGNATURE_BYTES {
        return Err(bad());
    }
    let mut time_bytes = [0u8; 8];
    time_bytes.copy_from_slice(&signature[..8]);
    let timestamp = u64::from_be_bytes(time_bytes);
    check_time(timestamp)?;
    witness.verify_raw(
        cosigned_message(body, timestamp).as_bytes(),
        &signature[8..],
    )?;
    Ok(timestamp)
}

/// Verify one cosignature line over a checkpoint body with a witness key;
/// returns its timestamp. The line's name and key id must be the key's.
pub fn verify_cosignature(
    body: &str,
    line: &NoteSignature,
    witness: &VerifierKey,
) -> Result<u64, TlogError> {
    if line.name != witness.name() || line.key_id != witness.key_id() {
        return Err(TlogError::RequiredKeyMissing {
            name: witness.name().to_owned(),
            key_id: witness.key_id(),
        });
    }
    Checkpoint::parse(body)?;
    verify_timestamped(body, &line.signature, witness)
}
