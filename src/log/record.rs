//! The record: one event with its header, as stored and hashed.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::limits::{ACTOR_BYTES_MAX, IDEMPOTENCY_KEY_BYTES_MAX, RECORD_BYTES_MAX};
use crate::log::codec::{self, CodecError, PayloadError};
use crate::schema::events::Event;

/// The record format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// One record as encoded (SPEC.md section 2). Field order is the byte order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Record format version (`FORMAT_VERSION`).
    pub format: u16,
    /// Position in the log, from 0 (genesis).
    pub seq: u64,
    /// When the CLI gathered the fact, UTC nanoseconds since the Unix epoch.
    /// Passed in by the caller; nothing below the CLI reads the clock.
    pub recorded_at_utc_ns: u64,
    /// Who appended it (`operator:alice`, `ci`, `importer`).
    pub actor: String,
    /// The event kind (`case_started.v1`).
    pub kind: String,
    /// The client's idempotency key, if the append carried one.
    pub idempotency_key: Option<String>,
    /// The canonical encoding of the kind's payload struct.
    #[serde(with = "serde_bytes_vec")]
    pub payload: Vec<u8>,
}

/// A record whose payload has been decoded as well.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The header and raw payload.
    pub record: Record,
    /// The decoded payload.
    pub event: Event,
}

/// Why record bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The header does not decode canonically.
    #[error("record {0}")]
    Codec(#[from] CodecError),
    /// The format version is not one this build reads.
    #[error("record format {0} is not supported (this build reads {FORMAT_VERSION})")]
    Format(u16),
    /// The payload does not decode canonically.
    #[error("{0}")]
    Payload(#[from] PayloadError),
}

impl Record {
    /// Canonical bytes of this record; a record whose encoding would pass
    /// `RECORD_BYTES_MAX` is refused (the codec stops at the limit, so its
    /// length cannot be checked afterwards).
    pub fn encode(&self) -> Result<Vec<u8>> {
        codec::encode(self).map_err(|_| {
            Error::input(format!(
                "record {} ({}) is over the limit of {RECORD_BYTES_MAX} bytes",
                self.seq, self.kind
            ))
        })
    }

    /// Decodes record bytes and its payload; both must be canonical.
    pub fn decode(bytes: &[u8]) -> Result<Decoded, RecordError> {
        let record: Record = codec::decode_canonical(bytes)?;
        if record.format != FORMAT_VERSION {
            return Err(RecordError::Format(record.format));
        }
        let event = codec::decode_payload(&record.kind, &record.payload)?;
        Ok(Decoded { record, event })
    }
}

/// Checks an actor name: 1..=ACTOR_BYTES_MAX bytes of `[A-Za-z0-9._@:+-]`.
pub fn check_actor(actor: &str) -> Result<()> {
    if actor.is_empty() || actor.len() > ACTOR_BYTES_MAX {
        return Err(Error::input(format!(
            "actor must be 1 to {ACTOR_BYTES_MAX} bytes, got {}",
            actor.len()
        )));
    }
    if let Some(c) = actor
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._@:+-".contains(*c)))
    {
        return Err(Error::input(format!(
            "actor contains {c:?}; allowed are letters, digits and . _ @ : + -"
        )));
    }
    Ok(())
}

/// Checks a client idempotency key: 1..=IDEMPOTENCY_KEY_BYTES_MAX printable
/// ASCII bytes.
pub fn check_idempotency_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > IDEMPOTENCY_KEY_BYTES_MAX {
        return Err(Error::input(format!(
            "idempotency key must be 1 to {IDEMPOTENCY_KEY_BYTES_MAX} bytes, got {}",
            key.len()
        )));
    }
    if key.bytes().any(|b| !(0x21..=0x7e).contains(&b)) {
        return Err(Error::input(
            "idempotency key must be printable ascii without spaces",
        ));
    }
    Ok(())
}

/// Checks an encoded record against `RECORD_BYTES_MAX`.
pub fn check_size(seq: u64, kind: &str, len: usize) -> Result<()> {
    if len > RECORD_BYTES_MAX {
        return Err(Error::input(format!(
            "record {seq} ({kind}) is {len} bytes, over the limit of {RECORD_BYTES_MAX} bytes"
        )));
    }
    Ok(())
}

/// `Vec<u8>` as one length-prefixed byte string (same bytes as a sequence of
/// u8 under fixed-int encoding, but encoded in one step).
mod serde_bytes_vec {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        d.deserialize_byte_buf(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::events::OperatorNoted;

    fn note(seq: u64) -> Record {
        let e = Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: "x".into(),
        });
        Record {
            format: FORMAT_VERSION,
            seq,
            recorded_at_utc_ns: 7,
            actor: "ci".into(),
            kind: e.kind().into(),
            idempotency_key: None,
            payload: codec::encode_payload(&e).unwrap(),
        }
    }

    #[test]
    fn encode_decode_is_identity() {
        let r = note(3);
        let bytes = r.encode().unwrap();
        let d = Record::decode(&bytes).unwrap();
        assert_eq!(d.record, r);
        assert_eq!(d.record.encode().unwrap(), bytes);
    }

    #[test]
    fn decode_accepts_and_refuses_exactly_what_the_owned_decode_did() {
        // Every example kind, every mutation of its payload and of its
        // record: the same value or the same error as bincode's owned decode.
        for (i, (event, key)) in crate::testkit::vectors::example_events()
            .into_iter()
            .enumerate()
        {
            let payload = codec::encode_payload(&event).unwrap();
            for m in codec::mutations(&payload) {
                assert_eq!(
                    codec::decode_payload(event.kind(), &m),
                    codec::decode_payload_reference(event.kind(), &m),
                    "{} {m:?}",
                    event.kind()
                );
            }
            let record = Record {
                format: FORMAT_VERSION,
                seq: i as u64,
                recorded_at_utc_ns: 7,
                actor: "operator:alice".into(),
                kind: event.kind().into(),
                idempotency_key: key,
                payload,
            };
            let bytes = record.encode().unwrap();
            assert_eq!(Record::decode(&bytes).unwrap().event, event);
            // Mutations of the header (the payload's were covered above).
            let header = bytes.len() - record.payload.len();
            for m in codec::mutations(&bytes[..header]) {
                let mut m = m;
                m.extend_from_slice(&bytes[header..]);
                assert_eq!(
                    codec::decode_canonical::<Record>(&m),
                    codec::decode_canonical_reference::<Record>(&m),
                    "{m:?}"
                );
            }
        }
    }

    #[test]
    fn unknown_format_is_refused() {
        let mut r = note(3);
        r.format = 2;
        assert_eq!(
            Record::decode(&r.encode().unwrap()),
            Err(RecordError::Format(2))
        );
    }

    #[test]
    fn actor_limit_at_and_past_bound() {
        assert!(check_actor(&"a".repeat(ACTOR_BYTES_MAX)).is_ok());
        assert!(check_actor(&"a".repeat(ACTOR_BYTES_MAX + 1)).is_err());
        assert!(check_actor("").is_err());
        assert!(check_actor("bad actor").is_err());
    }

    #[test]
    fn idempotency_key_limit_at_and_past_bound() {
        assert!(check_idempotency_key(&"k".repeat(IDEMPOTENCY_KEY_BYTES_MAX)).is_ok());
        assert!(check_idempotency_key(&"k".repeat(IDEMPOTENCY_KEY_BYTES_MAX + 1)).is_err());
        assert!(check_idempotency_key("has space").is_err());
    }

    #[test]
    fn record_size_limit_at_and_past_bound() {
        assert!(check_size(1, "k", RECORD_BYTES_MAX).is_ok());
        assert!(check_size(1, "k", RECORD_BYTES_MAX + 1).is_err());
    }
}
