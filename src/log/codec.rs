//! Canonical bytes. The only module that knows bincode (pinned `=2.0.1`).
//!
//! Encoding: bincode 2 with big-endian, fixed-width integers (ledger-schema
//! SPEC.md section 2 spells the byte layout out for a second implementation).
//! Decoding is strict: every byte must be consumed, and re-encoding the
//! decoded value must reproduce the input exactly; anything else is
//! non-canonical and rejected. This is what makes "hash exactly what is
//! stored" meaningful.
//!
//! Event payloads go through [`encode_payload`] and [`decode_payload`]: the
//! vocabulary (`schema::events`) names no codec and dispatches each kind's
//! type through [`Canonical`], its [`PayloadCodec`].

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::limits::RECORD_BYTES_MAX;
use crate::schema::events::{Event, PayloadCodec};

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
    let (CopyOut(value), used): (CopyOut<T>, usize) =
        bincode::serde::borrow_decode_from_slice(bytes, config())
            .map_err(|e| CodecError::Undecodable(e.to_string()))?;
    canonical(value, used, bytes)
}

/// The canonical-form check of a value decoded from `bytes` using `used`
/// of them: every byte consumed, and re-encoding gives exactly `bytes`
/// (straight against the input: no buffer, and the first differing byte
/// stops the encoder).
fn canonical<T: Serialize>(value: T, used: usize, bytes: &[u8]) -> Result<T, CodecError> {
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
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
    let (CopyOut(value), used): (CopyOut<T>, usize) =
        bincode::serde::borrow_decode_from_slice(bytes, bulk_config())
            .map_err(|e| CodecError::Undecodable(e.to_string()))?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    Ok(value)
}

/// `decode_canonical` as it was before [`CopyOut`]: bincode's own owned
/// decode. Tests check that both accept and refuse exactly the same bytes,
/// with the same errors.
#[cfg(test)]
pub(crate) fn decode_canonical_reference<T: Serialize + DeserializeOwned>(
    bytes: &[u8],
) -> Result<T, CodecError> {
    let (value, used): (T, usize) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| CodecError::Undecodable(e.to_string()))?;
    canonical(value, used, bytes)
}

// ---------------------------------------------------------------------------
// Event payloads: the vocabulary's types through this codec
// ---------------------------------------------------------------------------

/// Why a payload could not be decoded, with this codec's error.
pub type PayloadError = crate::schema::events::PayloadError<CodecError>;

/// This codec as the event vocabulary's [`PayloadCodec`]: [`encode`] and
/// [`decode_canonical`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Canonical;

impl PayloadCodec for Canonical {
    type Error = CodecError;
    fn encode<T: Serialize>(&self, payload: &T) -> Result<Vec<u8>, CodecError> {
        encode(payload)
    }
    fn decode<T: Serialize + DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError> {
        decode_canonical(bytes)
    }
}

/// The canonical payload bytes of an event.
pub fn encode_payload(event: &Event) -> Result<Vec<u8>, CodecError> {
    event.encode_payload_with(&Canonical)
}

/// Decodes a payload of `kind`; the bytes must be canonical.
pub fn decode_payload(kind: &str, bytes: &[u8]) -> Result<Event, PayloadError> {
    Event::decode_payload_with(&Canonical, kind, bytes)
}

/// [`Canonical`] with `decode_canonical_reference` (tests).
#[cfg(test)]
struct CanonicalReference;

#[cfg(test)]
impl PayloadCodec for CanonicalReference {
    type Error = CodecError;
    fn encode<T: Serialize>(&self, payload: &T) -> Result<Vec<u8>, CodecError> {
        encode(payload)
    }
    fn decode<T: Serialize + DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError> {
        decode_canonical_reference(bytes)
    }
}

/// `decode_payload` through `decode_canonical_reference`.
#[cfg(test)]
pub(crate) fn decode_payload_reference(kind: &str, bytes: &[u8]) -> Result<Event, PayloadError> {
    Event::decode_payload_with(&CanonicalReference, kind, bytes)
}

/// Every variation of `bytes` the differential tests try: each byte
/// replaced by 0, 1, 0x80 and 0xff and xored with 1, every truncation, and
/// one or two extra bytes.
#[cfg(test)]
pub(crate) fn mutations(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..bytes.len() {
        for b in [0u8, 1, 0x80, 0xff, bytes[i] ^ 1] {
            if b != bytes[i] {
                let mut v = bytes.to_vec();
                v[i] = b;
                out.push(v);
            }
        }
    }
    for n in 0..bytes.len() {
        out.push(bytes[..n].to_vec());
    }
    for tail in [&[0u8][..], &[1, 0]] {
        let mut v = bytes.to_vec();
        v.extend_from_slice(tail);
        out.push(v);
    }
    out
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

/// Decodes a `T` through [`copy_out::Borrowing`]: owned strings and byte
/// buffers are read as borrowed slices of the input and copied, instead of
/// bincode's zero-filled buffer that the input is then read into. Same
/// checks and errors in the same order (the length prefix against the limit
/// and the input, then UTF-8), one allocation without zero-filling (`calloc`
/// bypasses glibc's per-thread cache; this was most of a record's decode).
struct CopyOut<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for CopyOut<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(copy_out::Borrowing(d)).map(CopyOut)
    }
}

/// A serde deserializer adapter: `deserialize_string` and
/// `deserialize_byte_buf` become `deserialize_str` and `deserialize_bytes`
/// (a visitor of an owned value copies the borrowed one); everything else,
/// at every depth, is passed through unchanged.
mod copy_out {
    use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
    use std::fmt;

    pub struct Borrowing<D>(pub D);
    struct Wrap<V>(V);
    struct Seed<S>(S);
    struct Seq<A>(A);
    struct Map<A>(A);
    struct Enum<A>(A);
    struct Variant<A>(A);

    macro_rules! forward {
        ($($method:ident),* $(,)?) => {$(
            fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
                self.0.$method(Wrap(v))
            }
        )*};
    }

    impl<'de, D: Deserializer<'de>> Deserializer<'de> for Borrowing<D> {
        type Error = D::Error;

        forward!(
            deserialize_any,
            deserialize_bool,
            deserialize_i8,
            deserialize_i16,
            deserialize_i32,
            deserialize_i64,
            deserialize_i128,
            deserialize_u8,
            deserialize_u16,
            deserialize_u32,
            deserialize_u64,
            deserialize_u128,
            deserialize_f32,
            deserialize_f64,
            deserialize_char,
            deserialize_str,
            deserialize_bytes,
            deserialize_option,
            deserialize_unit,
            deserialize_seq,
            deserialize_map,
            deserialize_identifier,
            deserialize_ignored_any,
        );

        fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            self.0.deserialize_str(Wrap(v))
        }

        fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            self.0.deserialize_bytes(Wrap(v))
        }

        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_unit_struct(name, Wrap(v))
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_newtype_struct(name, Wrap(v))
        }

        fn deserialize_tuple<V: Visitor<'de>>(
            self,
            len: usize,
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_tuple(len, Wrap(v))
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_tuple_struct(name, len, Wrap(v))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            fields: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_struct(name, fields, Wrap(v))
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_enum(name, variants, Wrap(v))
        }

        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    }

    macro_rules! visit {
        ($($method:ident($ty:ty)),* $(,)?) => {$(
            fn $method<E: de::Error>(self, x: $ty) -> Result<Self::Value, E> {
                self.0.$method(x)
            }
        )*};
    }

    impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
        type Value = V::Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }

        visit!(
            visit_bool(bool),
            visit_i8(i8),
            visit_i16(i16),
            visit_i32(i32),
            visit_i64(i64),
            visit_i128(i128),
            visit_u8(u8),
            visit_u16(u16),
            visit_u32(u32),
            visit_u64(u64),
            visit_u128(u128),
            visit_f32(f32),
            visit_f64(f64),
            visit_char(char),
            visit_str(&str),
            visit_borrowed_str(&'de str),
            visit_string(String),
            visit_bytes(&[u8]),
            visit_borrowed_bytes(&'de [u8]),
            visit_byte_buf(Vec<u8>),
        );

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            self.0.visit_none()
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            self.0.visit_unit()
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            self.0.visit_some(Borrowing(d))
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            self.0.visit_newtype_struct(Borrowing(d))
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
            self.0.visit_seq(Seq(a))
        }

        fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
            self.0.visit_map(Map(a))
        }

        fn visit_enum<A: de::EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
            self.0.visit_enum(Enum(a))
        }
    }

    impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
        type Value = S::Value;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            self.0.deserialize(Borrowing(d))
        }
    }

    impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Seq<A> {
        type Error = A::Error;

        fn next_element_seed<T: DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, A::Error> {
            self.0.next_element_seed(Seed(seed))
        }

        fn size_hint(&self) -> Option<usize> {
            self.0.size_hint()
        }
    }

    impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Map<A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, A::Error> {
            self.0.next_key_seed(Seed(seed))
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, A::Error> {
            self.0.next_value_seed(Seed(seed))
        }

        fn size_hint(&self) -> Option<usize> {
            self.0.size_hint()
        }
    }

    impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Enum<A> {
        type Error = A::Error;
        type Variant = Variant<A::Variant>;

        fn variant_seed<S: DeserializeSeed<'de>>(
            self,
            seed: S,
        ) -> Result<(S::Value, Self::Variant), A::Error> {
            self.0
                .variant_seed(Seed(seed))
                .map(|(value, variant)| (value, Variant(variant)))
        }
    }

    impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Variant<A> {
        type Error = A::Error;

        fn unit_variant(self) -> Result<(), A::Error> {
            self.0.unit_variant()
        }

        fn newtype_variant_seed<S: DeserializeSeed<'de>>(
            self,
            seed: S,
        ) -> Result<S::Value, A::Error> {
            self.0.newtype_variant_seed(Seed(seed))
        }

        fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, A::Error> {
            self.0.tuple_variant(len, Wrap(v))
        }

        fn struct_variant<V: Visitor<'de>>(
            self,
            fields: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, A::Error> {
            self.0.struct_variant(fields, Wrap(v))
        }
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

    /// Every shape the adapter passes through: strings, bytes as a string
    /// and as a sequence, options, maps, tuples, newtypes and enums of each
    /// variant form.
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Rich {
        s: String,
        o: Option<String>,
        #[serde(with = "bytes_as_string")]
        b: Vec<u8>,
        seq: Vec<u8>,
        m: BTreeMap<String, Vec<String>>,
        t: (u8, String),
        n: Newtype,
        e: Vec<Shape>,
        c: char,
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Newtype(String);

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    enum Shape {
        Unit,
        New(String),
        Tuple(u16, String),
        Struct { name: String, at: Option<u64> },
    }

    mod bytes_as_string {
        pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(v)
        }
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            struct V;
            impl serde::de::Visitor<'_> for V {
                type Value = Vec<u8>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                    Ok(v.to_vec())
                }
            }
            d.deserialize_byte_buf(V)
        }
    }

    fn rich() -> Rich {
        let mut m = BTreeMap::new();
        m.insert("k".to_string(), vec!["a".to_string(), "é".to_string()]);
        m.insert("l".to_string(), vec![]);
        Rich {
            s: "hello".into(),
            o: Some("opt".into()),
            b: vec![1, 2, 3],
            seq: vec![4, 5],
            m,
            t: (7, "tu".into()),
            n: Newtype("nt".into()),
            e: vec![
                Shape::Unit,
                Shape::New("x".into()),
                Shape::Tuple(3, "y".into()),
                Shape::Struct {
                    name: "z".into(),
                    at: Some(9),
                },
            ],
            c: 'ß',
        }
    }

    #[test]
    fn copy_out_decode_matches_bincode_owned_decode_on_every_mutation() {
        let bytes = encode(&rich()).unwrap();
        assert_eq!(decode_canonical::<Rich>(&bytes).unwrap(), rich());
        let mut refused = 0;
        for m in mutations(&bytes) {
            let new = decode_canonical::<Rich>(&m);
            assert_eq!(new, decode_canonical_reference::<Rich>(&m), "{m:?}");
            refused += usize::from(new.is_err());
        }
        assert!(refused > 100, "the mutations must exercise errors");
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

    #[test]
    fn payload_round_trips_and_unknown_kind_is_named() {
        use crate::schema::events::OperatorNoted;
        let e = Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: "hello".into(),
        });
        let bytes = encode_payload(&e).unwrap();
        assert_eq!(decode_payload(e.kind(), &bytes).unwrap(), e);
        assert_eq!(
            decode_payload("nope.v1", &bytes),
            Err(PayloadError::UnknownKind("nope.v1".into()))
        );
    }
}
