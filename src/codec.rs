//! Canonical bytes. The only module that knows bincode (pinned `=2.0.1`).
//!
//! Encoding: bincode 2 with big-endian, fixed-width integers (ledger-schema
//! SPEC.md section 2 spells the byte layout out for a second implementation).
//! Decoding is strict: every byte must be consumed, and re-encoding the
//! decoded value must reproduce the input exactly; anything else is
//! non-canonical and rejected. This is what makes "hash exactly what is
//! stored" meaningful.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::limits::RECORD_BYTES_MAX;

/// Why bytes could not be accepted as a canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes do not decode as the expected type.
    #[error("undecodable: {0}")]
    Undecodable(String),
    /// The bytes decode but carry trailing bytes after the value.
    #[error("non-canonical: {0} trailing bytes after the value")]
    Trailing(usize),
    /// The bytes decode, but re-encoding gives different bytes.
    #[error("non-canonical: re-encoding the decoded value gives different bytes")]
    NonCanonical,
    /// A value could not be encoded (never expected for ledger types).
    #[error("unencodable: {0}")]
    Unencodable(String),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_fixed_int_encoding()
        .with_limit::<{ RECORD_BYTES_MAX }>()
}

/// Encodes a value canonically.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    bincode::serde::encode_to_vec(value, config())
        .map_err(|e| CodecError::Unencodable(e.to_string()))
}

/// Decodes bytes that must be the canonical encoding of a `T`.
pub fn decode_canonical<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, used): (T, usize) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| CodecError::Undecodable(e.to_string()))?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    // Re-encode straight against the input: no buffer, and the first
    // differing byte stops the encoder.
    let mut cmp = CompareWriter {
        expected: bytes,
        at: 0,
        differs: false,
    };
    let encoded = bincode::serde::encode_into_writer(&value, &mut cmp, config());
    if cmp.differs || cmp.at != bytes.len() {
        return Err(CodecError::NonCanonical);
    }
    encoded.map_err(|e| CodecError::Unencodable(e.to_string()))?;
    Ok(value)
}

fn bulk_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_big_endian()
        .with_fixed_int_encoding()
        .with_limit::<{ crate::limits::CHECKPOINT_BYTES_MAX }>()
}

/// Encodes derived, non-ledger data (a projection checkpoint) with the
/// record encoding and the larger `CHECKPOINT_BYTES_MAX` limit. Never used
/// for records: what is hashed into the chain goes through `encode`.
pub fn encode_bulk<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    bincode::serde::encode_to_vec(value, bulk_config())
        .map_err(|e| CodecError::Unencodable(e.to_string()))
}

/// Decodes what `encode_bulk` wrote; every byte must be consumed. No
/// canonical check: the caller checks the blob's own checksum first.
pub fn decode_bulk<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, used): (T, usize) = bincode::serde::decode_from_slice(bytes, bulk_config())
        .map_err(|e| CodecError::Undecodable(e.to_string()))?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    Ok(value)
}

/// A bincode writer that compares what is written with `expected` instead
/// of storing it (the canonical-form check of `decode_canonical`).
struct CompareWriter<'a> {
    expected: &'a [u8],
    at: usize,
    differs: bool,
}

impl bincode::enc::write::Writer for CompareWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        let end = self.at + bytes.len();
        if self.expected.get(self.at..end) != Some(bytes) {
            self.differs = true;
            return Err(bincode::error::EncodeError::Other("differs from the input"));
        }
        self.at = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Sample {
        a: u16,
        b: u64,
        s: String,
        o: Option<String>,
        m: BTreeMap<String, u64>,
        flag: bool,
    }

    fn sample() -> Sample {
        let mut m = BTreeMap::new();
        m.insert("x".to_string(), 1);
        m.insert("y".to_string(), 2);
        Sample {
            a: 1,
            b: 2,
            s: "hi".into(),
            o: None,
            m,
            flag: true,
        }
    }

    #[test]
    fn layout_is_big_endian_fixed_width() {
        let bytes = encode(&(1u16, 2u64, "ab".to_string())).unwrap();
        assert_eq!(
            bytes,
            [0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b']
        );
    }

    #[test]
    fn round_trip_is_identical() {
        let bytes = encode(&sample()).unwrap();
        let back: Sample = decode_canonical(&bytes).unwrap();
        assert_eq!(back, sample());
        assert_eq!(encode(&back).unwrap(), bytes);
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = encode(&sample()).unwrap();
        bytes.push(0);
        assert_eq!(
            decode_canonical::<Sample>(&bytes),
            Err(CodecError::Trailing(1))
        );
    }

    #[test]
    fn unsorted_map_is_non_canonical() {
        // Hand-build a map with keys in descending order: it decodes, but
        // re-encoding sorts it, so the bytes are not canonical.
        let mut bytes = encode(&sample()).unwrap();
        let x = bytes.windows(1).position(|w| w == b"x").unwrap();
        let y = bytes.windows(1).position(|w| w == b"y").unwrap();
        bytes.swap(x, y);
        // Values 1 and 2 follow their keys; swap them too so the map is y=2, x=1.
        let (vx, vy) = (x + 1 + 7, y + 1 + 7);
        bytes.swap(vx, vy);
        assert_eq!(
            decode_canonical::<Sample>(&bytes),
            Err(CodecError::NonCanonical)
        );
    }

    #[test]
    fn bad_bool_and_bad_option_tag_are_undecodable() {
        let mut bytes = encode(&sample()).unwrap();
        let last = bytes.len() - 1;
        bytes[last] = 2; // the bool
        assert!(matches!(
            decode_canonical::<Sample>(&bytes),
            Err(CodecError::Undecodable(_))
        ));
        let mut bytes = encode(&(Some(1u8),)).unwrap();
        bytes[0] = 7; // the option tag
        assert!(matches!(
            decode_canonical::<(Option<u8>,)>(&bytes),
            Err(CodecError::Undecodable(_))
        ));
    }

    #[test]
    fn invalid_utf8_is_undecodable() {
        let mut bytes = encode(&"ab".to_string()).unwrap();
        bytes[8] = 0xff;
        assert!(matches!(
            decode_canonical::<String>(&bytes),
            Err(CodecError::Undecodable(_))
        ));
    }

    #[test]
    fn huge_length_prefix_is_refused_without_allocating() {
        // A length prefix of u64::MAX must fail on the limit, not allocate.
        let bytes = [0xffu8; 8];
        assert!(matches!(
            decode_canonical::<String>(&bytes),
            Err(CodecError::Undecodable(_))
        ));
    }
}
