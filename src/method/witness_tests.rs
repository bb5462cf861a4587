use super::*;
use crate::log::tlog::{cosign, SignerKey};
use crate::schema::events::Event;

const ORIGIN: &str = "benchledger/ledger/00112233445566778899aabbccddeeff";

fn key(name: &str) -> SignerKey {
    let seed = blake3::derive_key("benchledger witness test", name.as_bytes());
    SignerKey::from_seed(name, KeyKind::CosignatureV1, seed).unwrap()
}

fn witnessing(quorum: u32) -> Witnessing {
    Witnessing {
        quorum,
        witnesses: ["a", "b"]
            .iter()
            .map(|n| Witness {
                name: (*n).into(),
                key: key(&format!("w.example/{n}")).verifier().encode(),
                url: format!("http://127.0.0.1:1/{n}"),
            })
            .collect(),
    }
}

fn checkpoint(size: u64, tag: u8) -> Checkpoint {
    Checkpoint::new(ORIGIN, size, [tag; 32]).unwrap()
}

fn cosigned(who: &str, cp: &Checkpoint, by: &SignerKey) -> CheckpointCosigned {
    let sig = cosign(&cp.body(), by, 1_700_000_000).unwrap();
    CheckpointCosigned {
        lineage: "l".into(),
        witness: who.into(),
        tree_size: cp.size(),
        root: hex::encode(cp.root()),
        signature: sig.line(),
        cosigned_at: 1_700_000_000,
    }
}

#[test]
fn the_request_body_is_the_c2sp_add_checkpoint_form() {
    let note = "o\n1\nroot\n\n— o sig\n";
    assert_eq!(
        add_checkpoint_body(0, &[], note).unwrap(),
        format!("old 0\n\n{note}"),
        "TRUST-6: old 0, no proof lines, an empty line, the note"
    );
    let body = add_checkpoint_body(3, &[[0u8; 32], [255u8; 32]], note).unwrap();
    assert_eq!(
        body,
        format!(
            "old 3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n//////////////////////////////////////////8=\n\n{note}"
        ),
        "TRUST-6: one base64 hash per line"
    );
    assert!(add_checkpoint_body(0, &[[0u8; 32]], note).is_err());
    assert!(add_checkpoint_body(1, &vec![[0u8; 32]; WITNESS_PROOF_LINES_MAX + 1], note).is_err());
    assert_eq!(endpoint("http://h:1/w/"), "http://h:1/w/add-checkpoint");
}

#[test]
fn the_old_size_is_the_largest_the_ledger_records_cosigned() {
    let w = witnessing(2);
    let a = key("w.example/a");
    let c = vec![
        cosigned("a", &checkpoint(5, 1), &a),
        cosigned("a", &checkpoint(9, 2), &a),
        cosigned("b", &checkpoint(12, 3), &a),
    ];
    assert_eq!(
        old_size(&c, "a", 20),
        9,
        "TRUST-6: from the size it last saw"
    );
    assert_eq!(old_size(&c, "a", 7), 5);
    assert_eq!(old_size(&c, "b", 11), 0);
    assert_eq!(old_size(&[], "a", 20), 0, "TRUST-6: 0 at first");
    let _ = w;
}

#[test]
fn a_409_is_retried_once_from_the_witness_size_and_a_rollback_is_refused() {
    let w = &witnessing(2).witnesses[0];
    let cp = checkpoint(10, 1);
    let ct = Some("text/x.tlog.size");
    assert_eq!(
        judge(w, &cp, 0, false, 409, ct, b"4\n"),
        Answer::Retry { old: 4 },
        "TRUST-6: a 409 names the witness's size; retry from it"
    );
    let Answer::Failed { status, message } = judge(w, &cp, 0, false, 409, ct, b"20\n") else {
        panic!("TRUST-6: a larger witness tree is a rollback, never retried");
    };
    assert_eq!(status, Some(409));
    assert!(message.contains("rolled-back"), "{message}");
    assert!(matches!(
        judge(w, &cp, 4, true, 409, ct, b"6\n"),
        Answer::Failed { .. }
    ));
    assert!(
        matches!(
            judge(w, &cp, 10, false, 409, ct, b"10\n"),
            Answer::Failed { .. }
        ),
        "TRUST-6: same size, another root: a fork"
    );
    assert!(matches!(
        judge(w, &cp, 0, false, 409, Some("text/plain"), b"4\n"),
        Answer::Failed { .. }
    ));
    for status in [400, 403, 404, 422, 500] {
        assert!(matches!(
            judge(w, &cp, 0, false, status, None, b""),
            Answer::Failed { status: Some(s), .. } if s == status
        ));
    }
}

#[test]
fn only_a_cosignature_by_the_frozen_key_over_this_checkpoint_is_taken() {
    let ws = witnessing(2);
    let w = &ws.witnesses[0];
    let cp = checkpoint(10, 1);
    let good = cosign(&cp.body(), &key("w.example/a"), 1_700_000_000).unwrap();
    let other = cosign(&cp.body(), &key("w.example/zz"), 1_700_000_000).unwrap();
    let body = format!("{}{}", other.line(), good.line());
    assert_eq!(
        judge(w, &cp, 0, false, 200, None, body.as_bytes()),
        Answer::Cosigned {
            line: good.line(),
            timestamp: 1_700_000_000
        },
        "TRUST-6: the frozen key's cosignature, others ignored"
    );
    assert!(
        matches!(
            judge(w, &cp, 0, false, 200, None, other.line().as_bytes()),
            Answer::Failed { .. }
        ),
        "TRUST-6: an unknown key's cosignature is never taken"
    );
    let over_other = cosign(&checkpoint(10, 2).body(), &key("w.example/a"), 1).unwrap();
    assert!(
        matches!(
            judge(w, &cp, 0, false, 200, None, over_other.line().as_bytes()),
            Answer::Failed { .. }
        ),
        "TRUST-6: a cosignature over another root does not verify"
    );
}

#[test]
fn a_seal_counts_once_k_frozen_witnesses_cosigned_a_covering_checkpoint() {
    let ws = witnessing(2);
    let (a, b) = (key("w.example/a"), key("w.example/b"));
    let (cp10, cp20) = (checkpoint(10, 1), checkpoint(20, 2));
    let recorded = vec![(10, *cp10.root()), (20, *cp20.root())];
    let only_a = vec![cosigned("a", &cp10, &a)];
    let s = seal_witnessing(&ws, ORIGIN, &recorded, &only_a, 5);
    assert!(!s.counts(), "TRUST-6: one of two is pending");
    assert_eq!(s.line(), "pending: 1 of 2 witnesses cosigned (quorum 2)");
    let both = vec![cosigned("a", &cp10, &a), cosigned("b", &cp20, &b)];
    let s = seal_witnessing(&ws, ORIGIN, &recorded, &both, 5);
    assert!(s.counts(), "TRUST-6: two distinct witnesses, quorum 2");
    assert_eq!(s.line(), "witnessed by a, b (quorum 2)");
    assert!(
        !seal_witnessing(&ws, ORIGIN, &recorded, &both, 12).counts(),
        "TRUST-6: a checkpoint of size 10 does not cover the seal at seq 12"
    );
    let twice_a = vec![cosigned("a", &cp10, &a), cosigned("a", &cp20, &a)];
    assert!(
        !seal_witnessing(&ws, ORIGIN, &recorded, &twice_a, 5).counts(),
        "TRUST-6: one witness twice is one"
    );
    // b's name with a's key, a checkpoint the log does not record, a
    // witness no manifest freezes: never counted.
    let forged = vec![cosigned("a", &cp10, &a), cosigned("b", &cp10, &a)];
    assert!(!seal_witnessing(&ws, ORIGIN, &recorded, &forged, 5).counts());
    let unrecorded = vec![
        cosigned("a", &cp10, &a),
        cosigned("b", &checkpoint(10, 9), &b),
    ];
    assert!(!seal_witnessing(&ws, ORIGIN, &recorded, &unrecorded, 5).counts());
    let stranger = vec![
        cosigned("a", &cp10, &a),
        cosigned("c", &cp10, &key("w.example/c")),
    ];
    assert!(
        !seal_witnessing(&ws, ORIGIN, &recorded, &stranger, 5).counts(),
        "TRUST-6: a key not in the frozen set is never counted"
    );
}

/// The example manifest with `[signers].witnesses` listing `listed` and a
/// `[witnessing]` table appended.
fn freeze_with(
    listed: &[String],
    table: &str,
) -> crate::error::Result<crate::method::freeze::Frozen> {
    use crate::testkit::examples::{EXAMPLE_MANIFEST, EXAMPLE_PRIVATE};
    let keys: Vec<String> = listed.iter().map(|k| format!("{k:?}")).collect();
    let public = EXAMPLE_MANIFEST.replacen(
        "witnesses = []",
        &format!("witnesses = [{}]", keys.join(", ")),
        1,
    ) + table;
    crate::method::freeze::freeze(&public, "m.toml", EXAMPLE_PRIVATE, "m.private.toml")
}

fn table(quorum: u32, rows: &[(&str, &str, &str)]) -> String {
    let mut t = format!("\n[witnessing]\nquorum = {quorum}\n");
    for (name, key, url) in rows {
        t +=
            &format!("\n[[witnessing.witnesses]]\nname = {name:?}\nkey = {key:?}\nurl = {url:?}\n");
    }
    t
}

fn input_error(r: crate::error::Result<crate::method::freeze::Frozen>) -> String {
    match r {
        Err(crate::error::Error::Input(m)) => m,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn a_frozen_witness_set_is_a_v3_manifest_whose_hash_covers_it() {
    let (a, b) = (
        key("w.example/a").verifier().encode(),
        key("w.example/b").verifier().encode(),
    );
    let listed = [a.clone(), b.clone()];
    let rows = [
        ("a", a.as_str(), "http://127.0.0.1:9001"),
        ("b", b.as_str(), "http://127.0.0.1:9002/w"),
    ];
    let frozen = freeze_with(&listed, &table(2, &rows)).unwrap();
    let w = frozen
        .witnessing
        .clone()
        .expect("TRUST-6: the witness set is frozen");
    assert_eq!((w.quorum, w.witnesses.len()), (2, 2));
    assert_eq!(w.witnesses[1].url, "http://127.0.0.1:9002/w");
    let plain = freeze_with(&listed, "").unwrap();
    assert_ne!(
        frozen.manifest_blake3, plain.manifest_blake3,
        "TRUST-6: the manifest hash covers the witness set"
    );
    let Event::ManifestFrozenV3(v3) = frozen.into_event() else {
        panic!("TRUST-6: a witness set is frozen in manifest_frozen.v3");
    };
    assert_eq!(v3.witnessing, Some(w));
    assert!(matches!(plain.into_event(), Event::ManifestFrozenV2(_)));
}

#[test]
fn a_witness_set_is_refused_naming_the_field() {
    let (a, b) = (
        key("w.example/a").verifier().encode(),
        key("w.example/b").verifier().encode(),
    );
    let listed = [a.clone(), b.clone()];
    let url = "http://127.0.0.1:9001";
    let long_url = format!(
        "http://w.example/{}",
        "x".repeat(crate::limits::WITNESS_URL_BYTES_MAX)
    );
    let note = crate::testkit::examples::signer("carol")
        .verifier()
        .encode();
    let too_many: Vec<(String, String)> = (0..=crate::limits::WITNESSES_MAX)
        .map(|i| (format!("w{i}"), a.clone()))
        .collect();
    let too_many: Vec<(&str, &str, &str)> = too_many
        .iter()
        .map(|(n, k)| (n.as_str(), k.as_str(), url))
        .collect();
    for (t, field) in [
        (table(0, &[("a", &a, url)]), "witnessing.quorum"),
        (
            table(3, &[("a", &a, url), ("b", &b, url)]),
            "witnessing.quorum",
        ),
        (table(1, &[]), "witnessing.witnesses"),
        (table(1, &too_many), "witnessing.witnesses"),
        (
            table(1, &[("a", &a, url), ("a", &b, url)]),
            "witnessing.witnesses[1].name",
        ),
        (
            table(1, &[("a b", &a, url)]),
            "witnessing.witnesses[0].name",
        ),
        (
            table(1, &[("a", "not a key", url)]),
            "witnessing.witnesses[0].key",
        ),
        (
            table(1, &[("a", &note, url)]),
            "witnessing.witnesses[0].key",
        ),
        (
            table(1, &[("c", &key("w.example/c").verifier().encode(), url)]),
            "witnessing.witnesses[0].key",
        ),
        (
            table(1, &[("a", &a, url), ("b", &a, url)]),
            "witnessing.witnesses[1].key",
        ),
        (
            table(1, &[("a", &a, "https://w.example")]),
            "witnessing.witnesses[0].url",
        ),
        (
            table(1, &[("a", &a, "w.example")]),
            "witnessing.witnesses[0].url",
        ),
        (
            table(1, &[("a", &a, "http://u:p@w.example")]),
            "witnessing.witnesses[0].url",
        ),
        (
            table(1, &[("a", &a, "http://:80")]),
            "witnessing.witnesses[0].url",
        ),
        (
            table(1, &[("a", &a, "http://w.example:0")]),
            "witnessing.witnesses[0].url",
        ),
        (
            table(1, &[("a", &a, &long_url)]),
            "witnessing.witnesses[0].url",
        ),
    ] {
        let msg = input_error(freeze_with(&listed, &t));
        assert!(
            msg.contains(&format!("field {field}:")),
            "TRUST-6: {msg} names {field}"
        );
    }
    // At the bounds: k = n = WITNESSES_MAX distinct listed keys, a url of
    // WITNESS_URL_BYTES_MAX bytes.
    let pad = crate::limits::WITNESS_URL_BYTES_MAX - "http://w.example/".len();
    let url = format!("http://w.example/{}", "x".repeat(pad));
    let url = url.as_str();
    let keys: Vec<String> = (0..crate::limits::WITNESSES_MAX)
        .map(|i| key(&format!("w.example/{i}")).verifier().encode())
        .collect();
    let names: Vec<String> = (0..keys.len()).map(|i| format!("w{i}")).collect();
    let rows: Vec<(&str, &str, &str)> = names
        .iter()
        .zip(&keys)
        .map(|(n, k)| (n.as_str(), k.as_str(), url))
        .collect();
    let max = crate::limits::WITNESSES_MAX as u32;
    assert!(
        freeze_with(&keys, &table(max, &rows)).is_ok(),
        "TRUST-6: k = n = WITNESSES_MAX"
    );
}
