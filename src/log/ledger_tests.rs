//! Ledger tests against a real sled store in a temp dir.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::log::chain::DamageKind;
use crate::log::store::{DamageTree, DAMAGE_HEAD_KEY};
use crate::schema::events::OperatorNoted;

const WAIT: Duration = Duration::from_millis(500);

fn note(text: &str) -> Draft {
    Draft {
        actor: "ci".into(),
        event: Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: text.into(),
        }),
        idempotency_key: None,
    }
}

fn keyed(text: &str, key: &str) -> Draft {
    Draft {
        idempotency_key: Some(key.into()),
        ..note(text)
    }
}

/// A ledger with genesis plus `n` notes appended in batches of `batch`.
fn ledger_with(n: usize, batch: usize) -> (tempfile::TempDir, Ledger) {
    let tmp = tempfile::tempdir().unwrap();
    let (l, _) = Ledger::create(&tmp.path().join("l"), WAIT, [1; 16], "ci", 1).unwrap();
    let drafts: Vec<Draft> = (0..n).map(|i| note(&format!("note {i}"))).collect();
    for (i, chunk) in drafts.chunks(batch.max(1)).enumerate() {
        l.append(chunk, 1_000 + i as u64).unwrap();
    }
    (tmp, l)
}

fn damage_of(l: &Ledger) -> (u64, DamageKind) {
    let d = l.verify().unwrap().damage.expect("damage detected");
    (d.seq, d.kind)
}

fn raw_value(l: &Ledger, seq: u64) -> Vec<u8> {
    l.store().value(seq).unwrap().unwrap()
}

#[test]
fn ten_thousand_records_verify() {
    let (_t, l) = ledger_with(10_000, 500);
    let r = l.verify().unwrap();
    assert!(r.ok(), "{:?}", r.damage);
    assert_eq!(r.records, 10_001);
    assert_eq!(r.head.unwrap().seq, 10_000);
    assert_eq!(l.records().unwrap().count(), 10_001);
}

#[test]
fn appends_are_consecutive_and_linked() {
    let (_t, l) = ledger_with(5, 2);
    let mut prev = chain::ZERO_HASH;
    for (i, v) in l.records().unwrap().enumerate() {
        let v = v.unwrap();
        assert_eq!(v.decoded.record.seq, i as u64);
        assert_eq!(v.prev, prev);
        prev = v.hash;
    }
    assert_eq!(l.head().unwrap().hash, prev);
}

#[test]
fn idempotent_append_returns_original_seq_and_appends_nothing() {
    // rule LEDGER-2
    let (_t, l) = ledger_with(1, 1);
    let first = l.append(&[keyed("a", "k")], 10).unwrap()[0];
    assert!(first.appended);
    let head = l.head().unwrap();
    let again = l.append(&[keyed("a", "k")], 20).unwrap()[0];
    assert_eq!(
        (again.seq, again.hash, again.appended),
        (first.seq, first.hash, false)
    );
    assert_eq!(l.head().unwrap(), head);
}

#[test]
fn idempotency_key_with_other_payload_is_refused_and_head_unchanged() {
    // rule LEDGER-2
    let (_t, l) = ledger_with(1, 1);
    l.append(&[keyed("a", "k")], 10).unwrap();
    let head = l.head().unwrap();
    let err = l.append(&[note("fine"), keyed("b", "k")], 20).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused {
                rule: crate::schema::rule::Rule::Ledger2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(l.head().unwrap(), head);
    assert!(l.verify().unwrap().ok());
}

#[test]
fn repeated_key_inside_one_batch_appends_once() {
    let (_t, l) = ledger_with(0, 1);
    let out = l.append(&[keyed("a", "k"), keyed("a", "k")], 10).unwrap();
    assert_eq!(out[0].seq, out[1].seq);
    assert!(out[0].appended && !out[1].appended);
    assert_eq!(l.head().unwrap().seq, 1);
    let err = l
        .append(&[keyed("x", "j"), keyed("y", "j")], 10)
        .unwrap_err();
    assert!(matches!(err, Error::Refused { .. }));
    assert_eq!(l.head().unwrap().seq, 1);
}

#[test]
fn malformed_append_leaves_head_byte_identical() {
    let (_t, l) = ledger_with(3, 3);
    let before = l.store().head_raw().unwrap();
    let bad_actor = Draft {
        actor: "has space".into(),
        ..note("x")
    };
    assert!(matches!(
        l.append(&[note("ok"), bad_actor], 5),
        Err(Error::Input(_))
    ));
    let too_big = note(&"x".repeat(crate::limits::RECORD_BYTES_MAX));
    assert!(matches!(l.append(&[too_big], 5), Err(Error::Input(_))));
    let secret = note(&format!("key {}{}", "AKIA", "Z7Q3X9W2V8R4T6Y1"));
    assert!(matches!(
        l.append(&[secret], 5),
        Err(Error::Refused {
            rule: crate::schema::rule::Rule::Freeze2,
            ..
        })
    ));
    assert_eq!(l.store().head_raw().unwrap(), before);
    assert!(l.verify().unwrap().ok());
}

#[test]
fn batch_limits_at_and_past_bound() {
    use crate::limits::{APPEND_BATCH_BYTES_MAX, APPEND_BATCH_RECORDS_MAX};
    assert!(check_batch(APPEND_BATCH_RECORDS_MAX, 0).is_ok());
    assert!(check_batch(APPEND_BATCH_RECORDS_MAX + 1, 0).is_err());
    assert!(check_batch(1, APPEND_BATCH_BYTES_MAX).is_ok());
    assert!(check_batch(1, APPEND_BATCH_BYTES_MAX + 1).is_err());
}

#[test]
fn record_at_size_limit_is_stored_and_one_past_is_refused() {
    let (_t, l) = ledger_with(0, 1);
    // Find the note text length whose record is exactly RECORD_BYTES_MAX.
    let overhead = Record {
        format: FORMAT_VERSION,
        seq: 1,
        recorded_at_utc_ns: 5,
        actor: "ci".into(),
        kind: "operator_noted.v1".into(),
        idempotency_key: None,
        payload: crate::log::codec::encode_payload(&Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: String::new(),
        }))
        .unwrap(),
    }
    .encode()
    .unwrap()
    .len();
    let fits = crate::limits::RECORD_BYTES_MAX - overhead;
    l.append(&[note(&"y".repeat(fits))], 5).unwrap();
    assert!(l.append(&[note(&"y".repeat(fits + 1))], 5).is_err());
    assert!(l.verify().unwrap().ok());
}

#[test]
fn create_refuses_an_existing_ledger() {
    let (t, l) = ledger_with(0, 1);
    drop(l);
    let err = Ledger::create(&t.path().join("l"), WAIT, [2; 16], "ci", 1)
        .err()
        .unwrap();
    assert!(matches!(err, Error::Input(_)));
}

#[test]
fn second_opener_times_out_with_lock_error() {
    let (t, l) = ledger_with(0, 1);
    let err = Ledger::open(&t.path().join("l"), Duration::from_millis(60))
        .err()
        .unwrap();
    assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
    assert_eq!(err.class().code(), 4);
    drop(l);
    assert!(Ledger::open(&t.path().join("l"), WAIT).is_ok());
}

#[test]
fn an_interrupted_sled_snapshot_does_not_block_reopening() {
    // Regression: a SIGKILL while sled writes its recovery snapshot leaves
    // `snap.<lsn>.generating`; sled 0.34.7 would read it and refuse to open.
    let (t, l) = ledger_with(50, 10);
    let head = l.head().unwrap();
    drop(l);
    let sled_dir = t.path().join("l").join("sled");
    std::fs::write(
        sled_dir.join("snap.FFFFFFFFFFFFFFFF.generating"),
        b"half a snapshot",
    )
    .unwrap();
    let l = Ledger::open(&t.path().join("l"), WAIT).unwrap();
    assert_eq!(l.head().unwrap(), head);
    assert!(l.verify().unwrap().ok());
    assert!(!sled_dir.join("snap.FFFFFFFFFFFFFFFF.generating").exists());
}

#[test]
fn truncation_is_detected() {
    let (_t, l) = ledger_with(10, 10);
    for seq in [10, 9] {
        l.store()
            .damage_remove(DamageTree::Records, &(seq as u64).to_be_bytes())
            .unwrap();
    }
    assert_eq!(damage_of(&l), (9, DamageKind::Truncated));
}

#[test]
fn gap_is_detected_at_the_missing_seq() {
    let (_t, l) = ledger_with(10, 10);
    l.store()
        .damage_remove(DamageTree::Records, &4u64.to_be_bytes())
        .unwrap();
    assert_eq!(damage_of(&l), (4, DamageKind::Gap));
}

#[test]
fn swapped_records_are_reordered_at_the_first() {
    let (_t, l) = ledger_with(10, 10);
    let (a, b) = (raw_value(&l, 3), raw_value(&l, 4));
    l.store()
        .damage_put(DamageTree::Records, &3u64.to_be_bytes(), &b)
        .unwrap();
    l.store()
        .damage_put(DamageTree::Records, &4u64.to_be_bytes(), &a)
        .unwrap();
    assert_eq!(damage_of(&l), (3, DamageKind::Reordered));
}

#[test]
fn rewritten_record_with_recomputed_hash_is_named() {
    let (_t, l) = ledger_with(10, 10);
    let v = l.read(5).unwrap();
    let mut r = v.decoded.record.clone();
    r.actor = "mallory".into();
    let forged = Sealed::new(v.prev, 5, r.encode().unwrap());
    l.store()
        .damage_put(DamageTree::Records, &5u64.to_be_bytes(), &forged.value())
        .unwrap();
    assert_eq!(damage_of(&l), (5, DamageKind::Rewritten));
}

#[test]
fn torn_tail_is_distinct_from_corruption() {
    let (_t, l) = ledger_with(4, 4);
    let head = l.head().unwrap();
    // A linked record past the head, as an unacknowledged write would leave.
    let r = Record {
        format: FORMAT_VERSION,
        seq: head.seq + 1,
        recorded_at_utc_ns: 9,
        actor: "ci".into(),
        kind: "operator_noted.v1".into(),
        idempotency_key: None,
        payload: crate::log::codec::encode_payload(&Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: "t".into(),
        }))
        .unwrap(),
    };
    let s = Sealed::new(head.hash, head.seq + 1, r.encode().unwrap());
    l.store()
        .damage_put(DamageTree::Records, &s.seq.to_be_bytes(), &s.value())
        .unwrap();
    assert_eq!(damage_of(&l), (5, DamageKind::TornTail));
    // An append refuses to write over it, and readers stop at the head.
    assert!(matches!(l.append(&[note("x")], 10), Err(Error::Damage(_))));
    assert_eq!(l.records().unwrap().count(), 5);
}

#[test]
fn head_rewrites_are_detected() {
    let (_t, l) = ledger_with(4, 4);
    let head = l.head().unwrap();
    let mut wrong = head;
    wrong.hash[0] ^= 1;
    l.store()
        .damage_put(DamageTree::Meta, DAMAGE_HEAD_KEY, &wrong.to_bytes())
        .unwrap();
    assert_eq!(damage_of(&l), (4, DamageKind::HeadMismatch));
    assert!(matches!(l.append(&[note("x")], 10), Err(Error::Damage(_))));
    l.store()
        .damage_remove(DamageTree::Meta, DAMAGE_HEAD_KEY)
        .unwrap();
    assert_eq!(damage_of(&l), (4, DamageKind::HeadMissing));
}

#[test]
fn idempotency_index_must_match_the_records() {
    let (_t, l) = ledger_with(2, 2);
    l.append(&[keyed("a", "k")], 10).unwrap();
    assert!(l.verify().unwrap().ok());
    l.store()
        .damage_put(DamageTree::Idempotency, b"k", &1u64.to_be_bytes())
        .unwrap();
    assert_eq!(damage_of(&l).1, DamageKind::IndexMismatch);
    l.store()
        .damage_remove(DamageTree::Idempotency, b"k")
        .unwrap();
    assert_eq!(damage_of(&l), (3, DamageKind::IndexMismatch));
}

#[test]
fn range_reads_check_links_from_their_start() {
    let (_t, l) = ledger_with(10, 10);
    let seqs: Vec<u64> = l
        .records_from(7)
        .unwrap()
        .map(|v| v.unwrap().decoded.record.seq)
        .collect();
    assert_eq!(seqs, vec![7, 8, 9, 10]);
    let mut v = raw_value(&l, 8);
    let last = v.len() - 1;
    v[last] ^= 1;
    l.store()
        .damage_put(DamageTree::Records, &8u64.to_be_bytes(), &v)
        .unwrap();
    let results: Vec<_> = l.records_from(7).unwrap().collect();
    assert!(results[0].is_ok() && results[1].is_err());
    assert_eq!(results.len(), 2, "the walk ends at the first damage");
}

#[test]
fn export_import_round_trips_byte_identically() {
    let (t, l) = ledger_with(300, 50);
    l.append(&[keyed("k", "key-1")], 99).unwrap();
    let mut out = Vec::new();
    crate::log::export::export_jsonl(&l, &mut out).unwrap();
    let target = t.path().join("copy");
    let head = crate::log::export::import_jsonl(
        &mut out.as_slice(),
        "mem",
        &target,
        WAIT,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap();
    assert_eq!(head, l.head().unwrap());
    let copy = Ledger::open(&target, WAIT).unwrap();
    assert!(copy.verify().unwrap().ok());
    for seq in 0..=head.seq {
        assert_eq!(
            copy.store().value(seq).unwrap(),
            l.store().value(seq).unwrap()
        );
    }
    assert_eq!(
        copy.store().head_raw().unwrap(),
        l.store().head_raw().unwrap()
    );
    let mut again = Vec::new();
    crate::log::export::export_jsonl(&copy, &mut again).unwrap();
    assert_eq!(again, out);
}

#[test]
fn tampered_exports_are_refused_and_leave_nothing() {
    let (t, l) = ledger_with(20, 20);
    let mut out = Vec::new();
    crate::log::export::export_jsonl(&l, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cases: Vec<(String, &str)> = vec![
        (
            text.replacen("note 3", "note 4", 1),
            "decoded payload edited",
        ),
        (
            lines[..5]
                .iter()
                .chain(&lines[6..])
                .map(|l| format!("{l}\n"))
                .collect(),
            "a line removed",
        ),
        (
            text.replacen("\"actor\":\"ci\"", "\"actor\":\"cj\"", 1),
            "actor edited",
        ),
        (
            {
                let mut s: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                s.swap(3, 4);
                s.join("\n") + "\n"
            },
            "two lines swapped",
        ),
        (
            {
                // flip one hex digit inside record bytes of line 7
                let mut s: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                let at = s[7].rfind("\"}").unwrap() - 3;
                let c = if &s[7][at..at + 1] == "0" { "1" } else { "0" };
                s[7].replace_range(at..at + 1, c);
                s.join("\n") + "\n"
            },
            "record bytes flipped",
        ),
        (String::new(), "empty file"),
        ("{not json\n".to_string(), "not json"),
    ];
    for (i, (bad, what)) in cases.iter().enumerate() {
        let target = t.path().join(format!("bad{i}"));
        let r = crate::log::export::import_jsonl(
            &mut bad.as_bytes(),
            "mem",
            &target,
            WAIT,
            crate::log::export::TrailerRule::Optional,
        );
        assert!(matches!(r, Err(Error::Input(_))), "{what}: {r:?}");
        assert!(!target.exists(), "{what}: a refused import left {target:?}");
        let leftovers: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("importing"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: staging left behind");
    }
}

#[test]
fn import_refuses_a_non_empty_target() {
    let (t, l) = ledger_with(2, 2);
    let mut out = Vec::new();
    crate::log::export::export_jsonl(&l, &mut out).unwrap();
    let target = t.path().join("full");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("x"), b"x").unwrap();
    let r = crate::log::export::import_jsonl(
        &mut out.as_slice(),
        "mem",
        &target,
        WAIT,
        crate::log::export::TrailerRule::Optional,
    );
    assert!(matches!(r, Err(Error::Input(_))));
    // An empty existing directory is fine.
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    crate::log::export::import_jsonl(
        &mut out.as_slice(),
        "mem",
        &empty,
        WAIT,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap();
}

#[test]
fn export_line_length_limit_at_and_past_bound() {
    use crate::limits::EXPORT_LINE_BYTES_MAX;
    let t = tempfile::tempdir().unwrap();
    let mut at = vec![b'x'; EXPORT_LINE_BYTES_MAX];
    at.push(b'\n');
    // At the bound the line is read (and then refused as not json).
    let e = crate::log::export::import_jsonl(
        &mut at.as_slice(),
        "mem",
        &t.path().join("a"),
        WAIT,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not an export line"), "{e}");
    let past = vec![b'x'; EXPORT_LINE_BYTES_MAX + 1];
    let e = crate::log::export::import_jsonl(
        &mut past.as_slice(),
        "mem",
        &t.path().join("b"),
        WAIT,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: Some(Box::new(
        proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions"))), ..ProptestConfig::default() })]

    /// Flipping any single bit of any stored value is detected at that seq.
    #[test]
    fn any_flipped_byte_in_a_record_is_detected_at_its_seq(seq in 0u64..=40, pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let (_t, l) = shared_ledger();
        let original = raw_value(&l, seq);
        let at = pos.index(original.len());
        let mut v = original.clone();
        v[at] ^= 1 << bit;
        l.store().damage_put(DamageTree::Records, &seq.to_be_bytes(), &v).unwrap();
        let d = l.verify().unwrap().damage;
        l.store().damage_put(DamageTree::Records, &seq.to_be_bytes(), &original).unwrap();
        let d = d.expect("damage detected");
        prop_assert_eq!(d.seq, seq, "{}", d);
        prop_assert!(l.verify().unwrap().ok());
    }

    /// Flipping any bit of the stored head is detected.
    #[test]
    fn any_flipped_byte_in_the_head_is_detected(pos in 0usize..40, bit in 0u8..8) {
        let (_t, l) = shared_ledger();
        let original = l.store().head_raw().unwrap().unwrap();
        let mut v = original.clone();
        v[pos] ^= 1 << bit;
        l.store().damage_put(DamageTree::Meta, DAMAGE_HEAD_KEY, &v).unwrap();
        let r = l.verify().unwrap();
        l.store().damage_put(DamageTree::Meta, DAMAGE_HEAD_KEY, &original).unwrap();
        let d = r.damage.expect("damage detected");
        prop_assert!(matches!(d.kind, DamageKind::HeadMismatch | DamageKind::Truncated | DamageKind::TornTail), "{}", d);
    }
}

/// One 41-record ledger per test thread, restored after each case.
fn shared_ledger() -> (std::sync::Arc<tempfile::TempDir>, std::sync::Arc<Ledger>) {
    use std::cell::RefCell;
    use std::sync::Arc;
    thread_local! {
        static L: RefCell<Option<(Arc<tempfile::TempDir>, Arc<Ledger>)>> = const { RefCell::new(None) };
    }
    L.with(|cell| {
        let mut c = cell.borrow_mut();
        if c.is_none() {
            let (t, l) = ledger_with(40, 7);
            l.append(&[keyed("k", "key")], 5).unwrap();
            *c = Some((Arc::new(t), Arc::new(l)));
        }
        c.clone().unwrap()
    })
}

#[test]
fn parallel_and_single_core_verification_report_the_same_damage() {
    let (_t, l) = ledger_with(3_000, 250);
    assert_eq!(l.verify_with(1).unwrap(), l.verify_with(4).unwrap());
    for seq in [0u64, 1, 777, 1_500, 2_999, 3_000] {
        let original = raw_value(&l, seq);
        for at in [0usize, 40, original.len() - 1] {
            let mut v = original.clone();
            v[at] ^= 0x40;
            l.store()
                .damage_put(DamageTree::Records, &seq.to_be_bytes(), &v)
                .unwrap();
            let one = l.verify_with(1).unwrap();
            let many = l.verify_with(4).unwrap();
            assert_eq!(one, many, "seq {seq} byte {at}");
            assert_eq!(one.damage.unwrap().seq, seq);
        }
        l.store()
            .damage_put(DamageTree::Records, &seq.to_be_bytes(), &original)
            .unwrap();
    }
    assert!(l.verify_with(3).unwrap().ok());
}

#[test]
fn the_index_catches_up_after_appends_that_did_not_open_it() {
    let (t, l) = ledger_with(5, 5);
    l.append(&[keyed("a", "ka")], 10).unwrap();
    drop(l);
    // appends without keys do not open the index: it lags
    let l = Ledger::open(&t.path().join("l"), WAIT).unwrap();
    l.append(&[note("x"), note("y")], 11).unwrap();
    let head = l.head().unwrap();
    drop(l);
    let l = Ledger::open(&t.path().join("l"), WAIT).unwrap();
    assert_eq!(l.store().index_through(Some(head)).unwrap(), Some(6));
    assert!(l.verify().unwrap().ok(), "a lagging index is not damage");
    // a keyed append catches it up first: the old key is found
    let again = l.append(&[keyed("a", "ka"), keyed("b", "kb")], 12).unwrap();
    assert_eq!((again[0].seq, again[0].appended), (6, false));
    assert!(again[1].appended);
    assert_eq!(
        l.store().index_through(Some(l.head().unwrap())).unwrap(),
        Some(9)
    );
    assert!(l.verify().unwrap().ok());
    // an index past the head is damage
    l.store().index_add(&[], 50).unwrap();
    assert_eq!(damage_of(&l).1, DamageKind::IndexMismatch);
}

#[test]
fn records_lost_by_the_store_below_the_witness_are_damage() {
    let (_t, l) = ledger_with(10, 1);
    let head = l.head().unwrap();
    let before = l.read(9).unwrap();
    // what sled's recovery leaves when it drops a log tail: the last record
    // and the head update gone, the rest consistent
    l.store()
        .damage_remove(DamageTree::Records, &10u64.to_be_bytes())
        .unwrap();
    let rolled = Head {
        seq: 9,
        hash: before.hash,
    };
    l.store()
        .damage_put(DamageTree::Meta, DAMAGE_HEAD_KEY, &rolled.to_bytes())
        .unwrap();
    assert_eq!(damage_of(&l), (10, DamageKind::Truncated));
    assert!(matches!(l.head(), Err(Error::Damage(_))));
    assert!(matches!(l.records(), Err(Error::Damage(_))));
    assert_ne!(rolled, head);
}

#[test]
fn a_wrong_open_tail_summary_is_damage() {
    let (_t, l) = ledger_with(10, 3);
    l.store()
        .damage_put(DamageTree::Meta, b"tail", &[0u8; 16])
        .unwrap();
    assert_eq!(damage_of(&l).1, DamageKind::IndexMismatch);
    l.store()
        .damage_put(DamageTree::Meta, b"tail", b"short")
        .unwrap();
    assert_eq!(damage_of(&l).1, DamageKind::IndexMismatch);
}

#[test]
fn a_layout_1_ledger_is_read_and_migrated_by_export_and_import() {
    let (t, l) = ledger_with(40, 7);
    l.append(&[keyed("k", "key-1")], 99).unwrap();
    let mut out = Vec::new();
    crate::log::export::export_jsonl(&l, &mut out).unwrap();
    drop(l);
    // the same records as layout 1 wrote them
    let old = t.path().join("old");
    std::fs::create_dir_all(&old).unwrap();
    {
        let db = sled::Config::new().path(old.join("sled")).open().unwrap();
        let records = db.open_tree("records").unwrap();
        let meta = db.open_tree("meta").unwrap();
        let keys = db.open_tree("idempotency").unwrap();
        let mut head = None;
        for line in String::from_utf8(out.clone()).unwrap().lines() {
            let e: crate::log::export::ExportLine = serde_json::from_str(line).unwrap();
            let mut v = hex::decode(&e.prev_hash).unwrap();
            v.extend(hex::decode(&e.hash).unwrap());
            v.extend(hex::decode(&e.record_hex).unwrap());
            records.insert(e.seq.to_be_bytes(), v).unwrap();
            if let Some(k) = e.idempotency_key {
                keys.insert(k.as_bytes(), &e.seq.to_be_bytes()).unwrap();
            }
            let mut h = [0u8; 32];
            hex::decode_to_slice(&e.hash, &mut h).unwrap();
            head = Some(Head {
                seq: e.seq,
                hash: h,
            });
        }
        meta.insert(b"head", &head.unwrap().to_bytes()[..]).unwrap();
        db.flush().unwrap();
    }
    let legacy = Ledger::open(&old, WAIT).unwrap();
    assert_eq!(legacy.layout(), Layout::Records);
    assert!(legacy.verify().unwrap().ok());
    let mut again = Vec::new();
    crate::log::export::export_jsonl(&legacy, &mut again).unwrap();
    assert_eq!(again, out, "layout 1 exports byte-identically");
    let e = legacy.append(&[note("x")], 100).unwrap_err();
    assert!(
        matches!(e, Error::Input(ref m) if m.contains("import")),
        "{e}"
    );
    // the migration: import the export
    let new = t.path().join("new");
    crate::log::export::import_jsonl(
        &mut again.as_slice(),
        "mem",
        &new,
        WAIT,
        crate::log::export::TrailerRule::Optional,
    )
    .unwrap();
    let migrated = Ledger::open(&new, WAIT).unwrap();
    assert_eq!(migrated.layout(), Layout::Segments);
    let mut third = Vec::new();
    crate::log::export::export_jsonl(&migrated, &mut third).unwrap();
    assert_eq!(third, out);
    assert!(!migrated.append(&[keyed("k", "key-1")], 101).unwrap()[0].appended);
}

#[test]
fn an_unreadable_store_item_is_storage_unreadable_damage_at_its_first_seq() {
    let (_t, l) = ledger_with(30, 10);
    // a segment whose framing claims more records than it holds
    let items: Vec<(u64, usize)> = l
        .store()
        .items(0)
        .map(|i| {
            let i = i.unwrap();
            (i.first().unwrap(), i.bytes.len())
        })
        .collect();
    let (first, _) = items[1];
    let mut seg = l
        .store()
        .items(first)
        .next()
        .unwrap()
        .unwrap()
        .bytes
        .to_vec();
    seg[..4].copy_from_slice(&1000u32.to_be_bytes());
    l.store()
        .damage_put_item(&first.to_be_bytes(), Some(&seg))
        .unwrap();
    let d = l.verify().unwrap().damage.unwrap();
    assert_eq!(d.kind, DamageKind::StorageUnreadable);
    let next = items[2].0;
    assert_eq!(d.seq, next, "{d}");
    assert!(l.read(first).is_ok());
}

/// A genesis record that declares `format_version`, sealed.
fn genesis_declaring(format_version: u16) -> Sealed {
    let draft = Draft {
        actor: "ci".into(),
        event: Event::LedgerCreated(LedgerCreated {
            ledger_id: "00".repeat(16),
            format_version,
            tool_version: TOOL_VERSION.into(),
        }),
        idempotency_key: None,
    };
    let payload = crate::log::codec::encode_payload(&draft.event).unwrap();
    Sealed::new(
        chain::ZERO_HASH,
        0,
        encode_draft(&draft, payload, 0, 1).unwrap(),
    )
}

#[test]
fn a_ledger_of_another_format_is_refused_naming_both_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("l");
    {
        let l = Ledger::create_empty(&dir, WAIT).unwrap();
        l.append_sealed(None, &[genesis_declaring(FORMAT_VERSION + 1)], &[])
            .unwrap();
    }
    let e = Ledger::open(&dir, WAIT).err().expect("refused");
    let text = e.to_string();
    assert_eq!(e.class(), crate::error::ExitClass::BadInput, "{text}");
    assert!(
        text.contains(&format!("format_version {}", FORMAT_VERSION + 1))
            && text.contains(&format!("reads format {FORMAT_VERSION}")),
        "the refusal names both versions: {text}"
    );
    // and the verified walk names it as a bad genesis
    let sealed = genesis_declaring(FORMAT_VERSION + 1);
    let Err(d) = Walker::from_genesis().step(&0u64.to_be_bytes(), &sealed.value()) else {
        panic!("a walk refuses it")
    };
    assert_eq!(d.kind, DamageKind::BadGenesis);
    assert!(d.to_string().contains("format_version 2"), "{d}");
    // the format this build writes opens
    let ok = tmp.path().join("ok");
    {
        let l = Ledger::create_empty(&ok, WAIT).unwrap();
        l.append_sealed(None, &[genesis_declaring(FORMAT_VERSION)], &[])
            .unwrap();
    }
    assert!(Ledger::open(&ok, WAIT).unwrap().verify().unwrap().ok());
}
