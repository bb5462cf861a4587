//! The example events of the vector chain, read from
//! `testkit/data/events.toml`: the file names each event's kind, key and
//! payload fields; this code supplies only what is computed (the frozen
//! example manifest, signatures, the checkpoint over the chain, stand-in
//! digests) through `{{...}}` placeholders, and decodes each payload as its
//! kind's struct.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::log::chain::{Sealed, ZERO_HASH};
use crate::schema::events::{CheckpointRecorded, Event, PayloadCodec, SignOffRole};

use super::{hex64, record, T0_UTC_NS};

/// The data file: one `[[event]]` per kind, in vocabulary order.
const EVENTS_TOML: &str = include_str!("../data/events.toml");

/// The data file's shape.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    /// Values several events share (`{{values.NAME}}`).
    values: Map<String, Value>,
    /// The events, in order.
    event: Vec<Entry>,
}

/// One event of the data file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    kind: String,
    key: Option<String>,
    /// A value the payload's fields are laid over.
    base: Option<Value>,
    payload: Option<Value>,
    /// An event the code builds whole.
    build: Option<Build>,
}

/// The events the code builds whole.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Build {
    /// A checkpoint of every event before it, signed by the example operator.
    Checkpoint,
}

/// Payloads as JSON: how the data file's payloads are decoded as their
/// kind's struct (the vocabulary's own dispatch, another codec).
struct JsonCodec;

impl PayloadCodec for JsonCodec {
    type Error = serde_json::Error;
    fn encode<T: Serialize>(&self, payload: &T) -> Result<Vec<u8>, Self::Error> {
        serde_json::to_vec(payload)
    }
    fn decode<T: Serialize + DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, Self::Error> {
        serde_json::from_slice(bytes)
    }
}

/// The example events with their idempotency keys, as the data file lists
/// them.
pub fn example_events() -> Vec<(Event, Option<String>)> {
    let file: EventsFile = toml::from_str(EVENTS_TOML).expect("events.toml parses");
    let alice = crate::testkit::examples::signer("alice");
    let mut ctx = context(&alice);
    let values = resolve(&Value::Object(file.values), &ctx);
    ctx.insert("values".into(), values);
    let mut events: Vec<(Event, Option<String>)> = Vec::new();
    for entry in &file.event {
        let event = match entry.build {
            Some(Build::Checkpoint) => {
                let checkpoint = checkpoint_of(&events, &alice);
                ctx.insert("checkpoint".into(), to_json(&checkpoint));
                ctx.insert("cosignature".into(), cosignature(&checkpoint));
                Event::CheckpointRecorded(checkpoint)
            }
            None => decode(&entry.kind, &payload(entry, &ctx)),
        };
        assert_eq!(
            event.kind(),
            entry.kind,
            "events.toml: a built event's kind"
        );
        events.push((event, entry.key.clone()));
    }
    events
}

/// The values the code supplies before the first event.
fn context(alice: &crate::log::tlog::SignerKey) -> Map<String, Value> {
    let frozen = crate::testkit::examples::frozen();
    let sign_off = crate::method::trust::sign_manifest(
        &frozen.lineage,
        &frozen.manifest_blake3,
        SignOffRole::Operator,
        alice,
    )
    .expect("the example key signs");
    let mut ctx = Map::new();
    ctx.insert(
        "format_version".into(),
        crate::log::record::FORMAT_VERSION.into(),
    );
    ctx.insert(
        "projection_version".into(),
        crate::method::projections::PROJECTION_VERSION.into(),
    );
    ctx.insert("frozen_v1".into(), to_json(&frozen.v1_view()));
    ctx.insert("frozen".into(), to_json(&frozen));
    ctx.insert("operator_sign_off".into(), to_json(&sign_off));
    ctx.insert(
        "witness_key".into(),
        example_witness().verifier().encode().into(),
    );
    ctx
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("example payloads serialize")
}

/// An entry's payload: its `base` with its `payload` fields laid over it,
/// every placeholder replaced.
fn payload(entry: &Entry, ctx: &Map<String, Value>) -> Value {
    let fields = entry.payload.as_ref().map(|p| resolve(p, ctx));
    match (entry.base.as_ref().map(|b| resolve(b, ctx)), fields) {
        (Some(base), Some(fields)) => overlay(base, fields),
        (Some(whole), None) | (None, Some(whole)) => whole,
        (None, None) => panic!("events.toml: {} has no payload", entry.kind),
    }
}

/// `top` laid over `base`: objects merged key by key, anything else replaced.
fn overlay(base: Value, top: Value) -> Value {
    match (base, top) {
        (Value::Object(mut base), Value::Object(top)) => {
            for (key, value) in top {
                let merged = match base.remove(&key) {
                    Some(old) => overlay(old, value),
                    None => value,
                };
                base.insert(key, merged);
            }
            Value::Object(base)
        }
        (_, top) => top,
    }
}

/// `value` with every `{{...}}` placeholder of its strings replaced.
fn resolve(value: &Value, ctx: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => resolve_str(s, ctx),
        Value::Array(items) => Value::Array(items.iter().map(|v| resolve(v, ctx)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve(v, ctx)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A string that is one placeholder is its value, whatever its type; else
/// each placeholder's text is spliced in.
fn resolve_str(s: &str, ctx: &Map<String, Value>) -> Value {
    if let Some(name) = s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        if !name.contains("{{") {
            return lookup(name, ctx);
        }
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .unwrap_or_else(|| panic!("events.toml: an unclosed placeholder in {s:?}"));
        match lookup(&after[..end], ctx) {
            Value::String(text) => out.push_str(&text),
            Value::Number(n) => out.push_str(&n.to_string()),
            other => panic!("events.toml: {s:?} splices a non-text value {other}"),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Value::String(out)
}

/// The value a placeholder names: `hex64:TAG`, or a dotted path into the
/// context.
fn lookup(name: &str, ctx: &Map<String, Value>) -> Value {
    if let Some(tag) = name.strip_prefix("hex64:") {
        return Value::String(hex64(tag));
    }
    let mut parts = name.split('.');
    let first = parts.next().unwrap_or_default();
    let found = parts.try_fold(ctx.get(first), |v, part| Some(v?.get(part)));
    match found.flatten() {
        Some(v) => v.clone(),
        None => panic!("events.toml: no value {{{{{name}}}}} here"),
    }
}

/// The payload decoded as its kind's struct; a field the kind does not have
/// (or a value that does not come back as written) fails.
fn decode(kind: &str, payload: &Value) -> Event {
    let bytes = serde_json::to_vec(payload).expect("a JSON value serializes");
    let event = Event::decode_payload_with(&JsonCodec, kind, &bytes)
        .unwrap_or_else(|e| panic!("events.toml: {kind}: {e}"));
    if let Some(path) = first_difference(payload, &event.payload_json(), "") {
        panic!("events.toml: {kind}: field {path} is not the kind's as written");
    }
    event
}

/// The first path where `given` is not contained in `decoded`.
fn first_difference(given: &Value, decoded: &Value, path: &str) -> Option<String> {
    match (given, decoded) {
        (Value::Object(g), Value::Object(d)) => g.iter().find_map(|(k, v)| {
            let at = format!("{path}.{k}");
            match d.get(k) {
                Some(dv) => first_difference(v, dv, &at),
                None => Some(at),
            }
        }),
        (Value::Array(g), Value::Array(d)) if g.len() == d.len() => g
            .iter()
            .zip(d)
            .enumerate()
            .find_map(|(i, (gv, dv))| first_difference(gv, dv, &format!("{path}[{i}]"))),
        _ => (given != decoded).then(|| path.to_string()),
    }
}

/// The example witness key `witness.example/w1` (TEST-ONLY, derivable by
/// anyone).
fn example_witness() -> crate::log::tlog::SignerKey {
    let seed = blake3::derive_key("benchledger example witness key", b"witness.example/w1");
    crate::log::tlog::SignerKey::from_seed(
        "witness.example/w1",
        crate::log::tlog::KeyKind::CosignatureV1,
        seed,
    )
    .expect("the example witness name is a valid key name")
}

/// The example witness's cosignature of `checkpoint` an hour after the
/// first record (TRUST-6): `line` and `cosigned_at`.
fn cosignature(checkpoint: &CheckpointRecorded) -> Value {
    let root: crate::log::tlog::Hash = hex::decode(&checkpoint.root)
        .expect("hex")
        .try_into()
        .expect("32 bytes");
    let body = crate::log::tlog::Checkpoint::new(&checkpoint.origin, checkpoint.tree_size, root)
        .expect("the example checkpoint is valid")
        .body();
    let cosigned_at = T0_UTC_NS / 1_000_000_000 + 3_600;
    let line = crate::log::tlog::cosign(&body, &example_witness(), cosigned_at)
        .expect("the example witness cosigns")
        .line();
    serde_json::json!({ "line": line, "cosigned_at": cosigned_at })
}

/// The checkpoint of the chain of `events`, signed by `key`.
fn checkpoint_of(
    events: &[(Event, Option<String>)],
    key: &crate::log::tlog::SignerKey,
) -> CheckpointRecorded {
    let mut tree = crate::log::tlog::MemoryNodes::new();
    let mut prev = ZERO_HASH;
    for (seq, (event, k)) in events.iter().enumerate() {
        let seq = seq as u64;
        let sealed = Sealed::new(
            prev,
            seq,
            record(seq, event, k.clone())
                .encode()
                .expect("vector records are within the limit"),
        );
        prev = sealed.hash;
        tree.append_leaf_hash(crate::log::tlog::record_leaf_hash(seq, &sealed.hash))
            .expect("the example tree is small");
    }
    let Event::LedgerCreated(genesis) = &events[0].0 else {
        unreachable!("the chain starts with genesis")
    };
    let origin = crate::log::tree::origin_of(&genesis.ledger_id);
    let body = crate::log::tlog::Checkpoint::new(&origin, tree.size(), tree.root())
        .expect("the example origin is valid");
    CheckpointRecorded {
        note: Some(crate::log::tlog::sign_note(&body.body(), &[key]).expect("example note signs")),
        signer: Some(key.verifier().encode()),
        origin,
        tree_size: tree.size(),
        root: hex::encode(tree.root()),
        sealed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_the_kind_lacks_fails_the_load() {
        let good = json!({"lineage": "l", "text": "gates rechecked"});
        assert_eq!(decode("operator_noted.v1", &good).payload_json(), good);
        let typo = json!({"lineage": "l", "text": "gates rechecked", "txet": "x"});
        let refused = std::panic::catch_unwind(|| decode("operator_noted.v1", &typo));
        assert!(refused.is_err(), "an unknown field was dropped silently");
    }

    #[test]
    fn placeholders_are_replaced_whole_or_spliced() {
        let mut ctx = Map::new();
        ctx.insert("frozen".into(), json!({"lineage": "l1", "n": 7}));
        assert_eq!(
            resolve_str("{{frozen}}", &ctx),
            json!({"lineage": "l1", "n": 7})
        );
        assert_eq!(resolve_str("{{frozen.n}}", &ctx), json!(7));
        assert_eq!(
            resolve_str("{{frozen.lineage}}-central/{{frozen.n}}", &ctx),
            json!("l1-central/7")
        );
        assert_eq!(resolve_str("{{hex64:log}}", &ctx), json!(hex64("log")));
        let missing = std::panic::catch_unwind(|| resolve_str("{{frozen.nope}}", &ctx));
        assert!(missing.is_err(), "a missing value was replaced by nothing");
    }

    #[test]
    fn a_base_is_overlaid_key_by_key() {
        let base = json!({"lineage": "a", "manifest": {"public": {"lineage": "a", "x": 1}}});
        let top = json!({"lineage": "b", "manifest": {"public": {"lineage": "b"}}, "y": [2]});
        assert_eq!(
            overlay(base, top),
            json!({"lineage": "b", "manifest": {"public": {"lineage": "b", "x": 1}}, "y": [2]})
        );
    }
}
