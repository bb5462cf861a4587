//! The event vocabulary: versioned, past-tense payload types, one per kind.
//!
//! A record carries its kind as a string (`ledger_created.v1`) and the
//! payload as the canonical encoding of that kind's struct. A change to a
//! payload's fields is a new kind (`..._v2`), never an edit of an old one, so
//! every recorded ledger stays decodable. `ledger-schema/SPEC.md` documents
//! each kind's fields, units and the rule ids it serves.

use serde::{Deserialize, Serialize};

use crate::codec::{self, CodecError};

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// The kind is not in this version's vocabulary.
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    /// The payload bytes are not the canonical encoding of the kind's struct.
    #[error("payload of {kind}: {source}")]
    Codec {
        /// The kind whose payload failed.
        kind: &'static str,
        /// The codec failure.
        source: CodecError,
    },
}

macro_rules! vocabulary {
    ($( $(#[$doc:meta])* $variant:ident($ty:ty) = $kind:literal ),* $(,)?) => {
        /// One event of the vocabulary.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Event {
            /// Every kind string of this vocabulary, in declaration order.
            pub const KINDS: &'static [&'static str] = &[$($kind),*];

            /// The kind string recorded for this event.
            pub fn kind(&self) -> &'static str {
                match self { $( Event::$variant(_) => $kind, )* }
            }

            /// The canonical payload bytes.
            pub fn encode_payload(&self) -> Result<Vec<u8>, CodecError> {
                match self { $( Event::$variant(p) => codec::encode(p), )* }
            }

            /// Decodes a payload of `kind`; the bytes must be canonical.
            pub fn decode_payload(kind: &str, bytes: &[u8]) -> Result<Event, PayloadError> {
                match kind {
                    $( $kind => codec::decode_canonical::<$ty>(bytes)
                        .map(Event::$variant)
                        .map_err(|source| PayloadError::Codec { kind: $kind, source }), )*
                    other => Err(PayloadError::UnknownKind(other.to_string())),
                }
            }

            /// The payload as JSON (field order as declared; maps are ordered).
            pub fn payload_json(&self) -> serde_json::Value {
                let value = match self { $( Event::$variant(p) => serde_json::to_value(p), )* };
                // Payload types are plain structs of strings, integers, ordered
                // maps and options: serializing them to JSON cannot fail.
                value.expect("payload types serialize to json")
            }

            /// Every string field of the payload with its field path, for the
            /// secret guard and other whole-payload checks.
            pub fn strings(&self) -> Vec<(String, String)> {
                let mut out = Vec::new();
                collect_strings(&self.payload_json(), String::new(), &mut out);
                out
            }
        }
    };
}

fn collect_strings(v: &serde_json::Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::String(s) => out.push((path, s.clone())),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_strings(item, format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                // Map keys are strings too and may carry text of their own.
                out.push((format!("{p}#key"), k.clone()));
                collect_strings(item, p, out);
            }
        }
        _ => {}
    }
}

vocabulary! {
    /// Seq 0 of every ledger.
    LedgerCreated(LedgerCreated) = "ledger_created.v1",
    /// A free-text note by an operator; changes no projection.
    OperatorNoted(OperatorNoted) = "operator_noted.v1",
}

/// The genesis payload: which ledger this is and what created it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerCreated {
    /// 128 random bits, lowercase hex (32 characters).
    pub ledger_id: String,
    /// The record format version the ledger was created with.
    pub format_version: u16,
    /// `benchledger <semver>` of the creating tool.
    pub tool_version: String,
}

/// A free-text operator note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorNoted {
    /// The note, at most `NOTE_TEXT_BYTES_MAX` bytes.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_unique_and_versioned() {
        let mut seen = std::collections::BTreeSet::new();
        for k in Event::KINDS {
            assert!(seen.insert(*k), "duplicate kind {k}");
            assert!(
                k.rsplit_once(".v")
                    .is_some_and(|(_, v)| v.parse::<u32>().is_ok()),
                "{k}"
            );
        }
    }

    #[test]
    fn payload_round_trips_and_unknown_kind_is_named() {
        let e = Event::OperatorNoted(OperatorNoted {
            text: "hello".into(),
        });
        let bytes = e.encode_payload().unwrap();
        assert_eq!(Event::decode_payload(e.kind(), &bytes).unwrap(), e);
        assert_eq!(
            Event::decode_payload("nope.v1", &bytes),
            Err(PayloadError::UnknownKind("nope.v1".into()))
        );
    }

    #[test]
    fn strings_lists_every_string_with_its_path() {
        let e = Event::LedgerCreated(LedgerCreated {
            ledger_id: "ab".into(),
            format_version: 1,
            tool_version: "benchledger 0.1.0".into(),
        });
        let s = e.strings();
        assert!(s.contains(&("ledger_id".into(), "ab".into())));
        assert!(s.contains(&("tool_version".into(), "benchledger 0.1.0".into())));
    }
}
