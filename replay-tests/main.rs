//! Replay tests: the committed contract files and recorded ledgers, checked
//! against the code.
//!
//! - `ledger-schema/vectors/`: the committed chain and must-fail cases must
//!   equal what the code generates, the chain must import and verify, and
//!   every must-fail case (read from the committed file, as a second
//!   implementation would) must fail as declared.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchledger::vectors;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn vectors_dir() -> PathBuf {
    root().join("ledger-schema/vectors")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn committed_vectors_match_the_code() {
    let hint = "the committed vectors drifted from the code: if the change is intended, run `cargo run --example gen-vectors` and review the diff";
    assert_eq!(
        read(&vectors_dir().join(vectors::CHAIN_FILE)),
        vectors::chain_jsonl(),
        "{hint}"
    );
    assert_eq!(
        read(&vectors_dir().join(vectors::MUST_FAIL_FILE)),
        vectors::must_fail_jsonl(),
        "{hint}"
    );
}

#[test]
fn committed_chain_imports_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let text = read(&vectors_dir().join(vectors::CHAIN_FILE));
    let dir = tmp.path().join("l");
    let head = benchledger::export::import_jsonl(
        &mut text.as_bytes(),
        "chain.jsonl",
        &dir,
        Duration::from_secs(5),
    )
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(hex::encode(head.hash), last["hash"].as_str().unwrap());
}

#[test]
fn committed_must_fail_cases_fail_as_declared() {
    let text = read(&vectors_dir().join(vectors::MUST_FAIL_FILE));
    let mut n = 0;
    for line in text.lines() {
        let c: serde_json::Value = serde_json::from_str(line).unwrap();
        let case = vectors::MustFail {
            name: "committed",
            walk_seq: c["walk_seq"].as_u64().unwrap(),
            walk_prev_hash: c["walk_prev_hash"].as_str().unwrap().into(),
            key_hex: c["key_hex"].as_str().unwrap().into(),
            value_hex: c["value_hex"].as_str().unwrap().into(),
            expect: serde_json::from_value(c["expect"].clone()).unwrap(),
            expect_seq: c["expect_seq"].as_u64().unwrap(),
        };
        let d = vectors::run_case(&case).unwrap_or_else(|| panic!("{}: accepted", c["name"]));
        assert_eq!(
            (d.kind, d.seq),
            (case.expect, case.expect_seq),
            "{}",
            c["name"]
        );
        n += 1;
    }
    assert!(n >= 10, "only {n} must-fail cases");
}

/// `ledger-schema/EVENTS.md` documents every kind with exactly its payload's
/// top-level fields: a heading "### `kind`" and a table whose rows start
/// with "| `field` |", in encoding order.
#[test]
fn every_kind_is_documented_with_exactly_its_fields() {
    let doc = read(&root().join("ledger-schema/EVENTS.md"));
    let mut documented: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(rest) = line.strip_prefix("### `") {
            let kind = rest.split('`').next().unwrap_or_default().to_string();
            documented.insert(kind.clone(), Vec::new());
            current = Some(kind);
        } else if line.starts_with("## ") {
            current = None;
        } else if let (Some(k), Some(rest)) = (&current, line.strip_prefix("| `")) {
            let field = rest.split('`').next().unwrap_or_default().to_string();
            documented.get_mut(k).expect("current kind").push(field);
        }
    }
    for (event, _) in vectors::example_events() {
        let kind = event.kind();
        let fields = documented
            .get(kind)
            .unwrap_or_else(|| panic!("EVENTS.md lacks a section for {kind}"));
        let json = event.payload_json();
        let actual: Vec<String> = match &json {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            _ => panic!("{kind} payload is not an object"),
        };
        let mut sorted_doc = fields.clone();
        sorted_doc.sort();
        let mut sorted_actual = actual.clone();
        sorted_actual.sort();
        assert_eq!(
            sorted_doc, sorted_actual,
            "EVENTS.md fields of {kind} differ from the payload"
        );
    }
    assert_eq!(
        documented.len(),
        benchledger::events::Event::KINDS.len(),
        "EVENTS.md documents kinds that do not exist"
    );
}
