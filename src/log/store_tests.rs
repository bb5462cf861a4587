//! Store tests against real sled databases in temp dirs.

use super::*;
use crate::limits::{SEGMENT_BYTES_MAX, SEGMENT_RECORDS_MAX};
use crate::log::chain::{Sealed, ZERO_HASH};
use crate::log::record::{Record, FORMAT_VERSION};
use crate::schema::events::{Event, OperatorNoted};

fn record(seq: u64, text: &str) -> Vec<u8> {
    let event = if seq == 0 {
        Event::LedgerCreated(crate::schema::events::LedgerCreated {
            ledger_id: "00".repeat(16),
            format_version: FORMAT_VERSION,
            tool_version: "t".into(),
        })
    } else {
        Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: text.into(),
        })
    };
    Record {
        format: FORMAT_VERSION,
        seq,
        recorded_at_utc_ns: seq,
        actor: "ci".into(),
        kind: event.kind().into(),
        idempotency_key: None,
        payload: crate::log::codec::encode_payload(&event).unwrap(),
    }
    .encode()
    .unwrap()
}

fn sealed_chain(from: u64, prev: Hash, n: usize) -> Vec<Sealed> {
    let mut prev = prev;
    (0..n as u64)
        .map(|i| {
            let seq = from + i;
            let s = Sealed::new(prev, seq, record(seq, &format!("note {seq}")));
            prev = s.hash;
            s
        })
        .collect()
}

fn keys(batch: &[Sealed]) -> Vec<(String, u64)> {
    batch
        .iter()
        .map(|s| (format!("k{}", s.seq), s.seq))
        .collect()
}

/// A store with genesis, its index open and current.
fn store_with_genesis(dir: &Path) -> (SledStore, Head) {
    let store = SledStore::create(dir).unwrap();
    let head = store
        .append(None, &sealed_chain(0, ZERO_HASH, 1), &[])
        .unwrap();
    assert_eq!(store.index_through(Some(head)).unwrap(), None);
    store.index_add(&[], head.seq).unwrap();
    (store, head)
}

/// Every stored value from seq 0, through the items.
fn values(store: &SledStore) -> Vec<Vec<u8>> {
    store.scan(0).map(|p| p.unwrap().1.to_vec()).collect()
}

fn item_count(store: &SledStore) -> usize {
    store.log.iter().count()
}

/// sled's file lock held by another handle is waited out up to
/// SLED_LOCK_WAIT_MS_MAX, and refused past it. The lock is held here through
/// the file sled locks (flock on `db`, as sled does), not through a second
/// sled handle: a dropped sled handle releases its lock only when sled's
/// background thread ends, which under load can take longer than the bound
/// (seen in CI), so the release moment would not be the test's to choose.
#[test]
fn a_briefly_held_sled_lock_is_waited_out_within_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    drop(SledStore::create(tmp.path()).unwrap());
    let db_file = tmp.path().join(STORE_DIR).join("db");
    let hold = || {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&db_file)
            .unwrap();
        f.try_lock().expect("the test takes sled's lock");
        f
    };
    let held = hold();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(held);
    });
    SledStore::open(tmp.path()).expect("opens once the other handle is gone");
    t.join().unwrap();
    let _held = hold();
    let started = std::time::Instant::now();
    let e = SledStore::open(tmp.path()).err().unwrap();
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(crate::limits::SLED_LOCK_WAIT_MS_MAX)
    );
    assert_eq!(e.class().code(), 4, "a held lock is the environment: {e:#}");
}

/// A dropped store has released sled's locks (the same process can open it
/// again at once); the wait for sled's threads to let go is bounded by
/// SLED_RELEASE_WAIT_MS_MAX and ends early once the lock is free.
#[test]
fn a_dropped_store_waits_for_sleds_lock_within_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    drop(SledStore::create(tmp.path()).unwrap());
    let db_file = tmp.path().join(STORE_DIR).join("db");
    let held = std::fs::File::open(&db_file).unwrap();
    held.try_lock()
        .expect("the dropped store released sled's lock");
    let bound = std::time::Duration::from_millis(crate::limits::SLED_RELEASE_WAIT_MS_MAX);
    let started = std::time::Instant::now();
    assert!(
        !super::wait_released(tmp.path(), bound),
        "held: not released"
    );
    assert!(started.elapsed() >= bound, "waited the whole bound");
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(held);
    });
    assert!(
        super::wait_released(tmp.path(), bound),
        "released within the bound"
    );
    t.join().unwrap();
}

#[test]
fn the_conf_sled_writes_is_the_one_the_store_expects() {
    let tmp = tempfile::tempdir().unwrap();
    drop(SledStore::create(tmp.path()).unwrap());
    let conf = std::fs::read(tmp.path().join(STORE_DIR).join(SLED_CONF_FILE)).unwrap();
    assert_eq!(conf, SLED_CONF_BYTES);
    // A changed byte (sled would only warn and run with it) is damage.
    let path = tmp.path().join(STORE_DIR).join(SLED_CONF_FILE);
    let mut b = std::fs::read(&path).unwrap();
    b[15] = b'9';
    std::fs::write(&path, &b).unwrap();
    let e = SledStore::open(tmp.path()).err().unwrap();
    assert!(
        matches!(e, Error::Damage(ref m) if m.contains("storage_unreadable")),
        "{e}"
    );
    assert_eq!(e.class().code(), 1);
}

#[test]
fn a_panic_in_sleds_recovery_is_damage_not_a_crash() {
    // sled 0.34.7's recovery indexes its segment table by offsets from its
    // snapshot, so some truncations of its log make it panic (seen by
    // tools/disktamper.rs); the store reports that as damage, exit 1.
    let tmp = tempfile::tempdir().unwrap();
    drop(SledStore::create(tmp.path()).unwrap());
    PANIC_IN_SLED_OPEN.with(|p| p.set(true));
    let e = SledStore::open(tmp.path()).err().expect("damage");
    assert!(
        matches!(e, Error::Damage(ref m) if m.contains("storage_unreadable")
            && m.contains("sled cannot recover its files")
            && m.contains("index out of bounds")),
        "{e}"
    );
    assert_eq!(e.class().code(), 1);
    // the flag is spent and the store opens again
    assert!(!PANIC_IN_SLED_OPEN.with(std::cell::Cell::get));
    assert!(!IN_SLED_OPEN.with(std::cell::Cell::get));
    SledStore::open(tmp.path()).expect("opens");
}

#[test]
fn small_appends_stay_open_segments_until_they_fill_one_then_seal() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut head) = store_with_genesis(tmp.path());
    let mut all = vec![sealed_chain(0, ZERO_HASH, 1)[0].value()];
    // one record per append: each an open segment of its own
    for _ in 0..5 {
        let b = sealed_chain(head.seq + 1, head.hash, 1);
        all.push(b[0].value());
        head = store.append(Some(head), &b, &[]).unwrap();
    }
    assert_eq!(item_count(&store), 6);
    let (first, framed) = parse_tail(&store.tail_raw().unwrap().unwrap()).unwrap();
    assert_eq!(first, 0);
    assert_eq!(
        framed,
        all.iter()
            .map(|v| segment::LEN_BYTES + v.len())
            .sum::<usize>()
    );
    // until the tail would pass a bound: then it is sealed with the batch
    while item_count(&store) > 1 || head.seq < 10 {
        let b = sealed_chain(head.seq + 1, head.hash, 37);
        all.extend(b.iter().map(Sealed::value));
        head = store.append(Some(head), &b, &[]).unwrap();
        if head.seq > 2 * SEGMENT_RECORDS_MAX as u64 {
            break;
        }
    }
    assert_eq!(values(&store), all, "every record byte for byte, in order");
    for (k, v) in store.log.iter().map(|kv| kv.unwrap()) {
        assert!(
            v.len() <= SEGMENT_BYTES_MAX,
            "segment at {k:?} is {} bytes",
            v.len()
        );
    }
    // the head record and every record are found by seq
    for (seq, v) in all.iter().enumerate() {
        assert_eq!(store.value(seq as u64).unwrap().as_ref(), Some(v));
    }
    assert_eq!(store.value(head.seq + 1).unwrap(), None);
}

#[test]
fn a_seal_keeps_every_segment_within_its_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mut head) = store_with_genesis(tmp.path());
    let mut all = vec![sealed_chain(0, ZERO_HASH, 1)[0].value()];
    // batches of 1..=70 records: many seals, some through the tail
    for n in (1..=70).cycle().take(90) {
        let b = sealed_chain(head.seq + 1, head.hash, n);
        all.extend(b.iter().map(Sealed::value));
        head = store.append(Some(head), &b, &keys(&b)).unwrap();
    }
    assert_eq!(values(&store), all);
    let (tail_first, _) = parse_tail(&store.tail_raw().unwrap().unwrap()).unwrap();
    let sealed: Vec<(u64, usize, usize)> = store
        .log
        .iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            let first = seq_of(&k).unwrap();
            (first, segment::frames(first, &v).0.len(), v.len())
        })
        .filter(|(first, _, _)| *first < tail_first)
        .collect();
    assert!(sealed.len() > 4, "{} sealed segments", sealed.len());
    for (first, n, bytes) in &sealed {
        assert!(
            *n <= SEGMENT_RECORDS_MAX && *bytes <= SEGMENT_BYTES_MAX,
            "{first}: {n} records, {bytes} bytes"
        );
        // full: the next record would not have fit
        let next = all[*first as usize + n].len();
        assert!(
            *n == SEGMENT_RECORDS_MAX || bytes + segment::LEN_BYTES + next > SEGMENT_BYTES_MAX,
            "segment {first} sealed before it was full"
        );
    }
    assert_eq!(store.idempotency_seq("k5").unwrap(), Some(5));
}

#[test]
fn an_append_fsyncs_the_blob_files_sled_wrote_for_it() {
    // A record over a quarter of sled's segment is written by sled to a
    // file of its own under blobs/, which sled never fsyncs; the
    // acknowledged append must have made it durable.
    let tmp = tempfile::tempdir().unwrap();
    let (store, head) = store_with_genesis(tmp.path());
    let blobs = tmp.path().join(STORE_DIR).join(SLED_BLOB_DIR);
    let bytes = record(1, &"x".repeat(300 * 1024));
    let big = Sealed::new(head.hash, 1, bytes);
    store.append(Some(head), &[big], &[]).unwrap();
    let newest = newest_blob(&blobs);
    assert!(newest.is_some(), "sled wrote no blob for a 300 KiB value");
    assert_eq!(*store.main.blobs_synced.lock().unwrap(), newest);
    drop(store);
    // A reopen starts from the blobs already there.
    let store = SledStore::open(tmp.path()).unwrap();
    assert_eq!(*store.main.blobs_synced.lock().unwrap(), newest);
}

#[test]
fn a_large_append_is_chunked_and_lands_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, head) = store_with_genesis(tmp.path());
    // an open tail first: the large append seals it on its own
    let small = sealed_chain(1, head.hash, 3);
    let head = store.append(Some(head), &small, &keys(&small)).unwrap();
    let big = "y".repeat(5000);
    let mut prev = head.hash;
    let batch: Vec<Sealed> = (0..1000u64)
        .map(|i| {
            let s = Sealed::new(prev, 4 + i, record(4 + i, &big));
            prev = s.hash;
            s
        })
        .collect();
    assert!(batch.iter().map(|s| s.bytes.len()).sum::<usize>() > CHUNKED_APPEND_BYTES_MIN);
    let new = store.append(Some(head), &batch, &keys(&batch)).unwrap();
    assert_eq!(new.seq, 1003);
    assert_eq!(store.scan(0).count(), 1004);
    assert_eq!(store.idempotency_scan().count(), 1003);
    assert_eq!(store.idempotency_seq("k500").unwrap(), Some(500));
    assert!(store.meta.get(PENDING_KEY).unwrap().is_none());
    // CAS: a large append against a stale head is refused, nothing written
    let stale: Vec<Sealed> = sealed_chain(4, head.hash, 900)
        .into_iter()
        .map(|s| Sealed::new(s.prev, s.seq, record(s.seq, &big)))
        .collect();
    let relinked = {
        let mut prev = head.hash;
        stale
            .into_iter()
            .map(|s| {
                let n = Sealed::new(prev, s.seq, s.bytes);
                prev = n.hash;
                n
            })
            .collect::<Vec<_>>()
    };
    assert!(store.append(Some(head), &relinked, &[]).is_err());
    assert_eq!(store.scan(0).count(), 1004);
}

#[test]
fn an_append_interrupted_before_its_commit_point_is_discarded_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let head = {
        let (store, head) = store_with_genesis(tmp.path());
        // What a crash after the marker and some segments leaves.
        let batch = sealed_chain(1, head.hash, 3000);
        let mut marker = [0u8; 16];
        marker[..8].copy_from_slice(&1u64.to_be_bytes());
        marker[8..].copy_from_slice(&3000u64.to_be_bytes());
        store.meta.insert(PENDING_KEY, &marker[..]).unwrap();
        for chunk in batch[..1500].chunks(100) {
            let values: Vec<Vec<u8>> = chunk.iter().map(Sealed::value).collect();
            store
                .log
                .insert(
                    chunk[0].seq.to_be_bytes(),
                    segment::encode(values.iter().map(|v| v.as_slice())),
                )
                .unwrap();
        }
        store.main.db.flush().unwrap();
        head
    };
    let store = SledStore::open(tmp.path()).unwrap();
    assert_eq!(store.scan(0).count(), 1, "unacknowledged records removed");
    assert!(store.meta.get(PENDING_KEY).unwrap().is_none());
    let raw = store.head_raw().unwrap().unwrap();
    assert_eq!(Head::from_bytes(&raw), Some(head));
    // and the ledger appends again from the same head
    let batch = sealed_chain(1, head.hash, 2000);
    store.index_through(Some(head)).unwrap();
    assert_eq!(
        store.append(Some(head), &batch, &keys(&batch)).unwrap().seq,
        2000
    );
}

#[test]
fn a_marker_that_does_not_sit_at_the_head_is_damage() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (store, _) = store_with_genesis(tmp.path());
        let mut marker = [0u8; 16];
        marker[..8].copy_from_slice(&5u64.to_be_bytes());
        marker[8..].copy_from_slice(&9u64.to_be_bytes());
        store.meta.insert(PENDING_KEY, &marker[..]).unwrap();
        store.main.db.flush().unwrap();
    }
    assert!(matches!(SledStore::open(tmp.path()), Err(Error::Damage(_))));
}

#[test]
fn a_segment_past_the_head_is_refused_as_a_torn_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, head) = store_with_genesis(tmp.path());
    let past = sealed_chain(1, head.hash, 2);
    let values: Vec<Vec<u8>> = past.iter().map(Sealed::value).collect();
    let seg = segment::encode(values.iter().map(|v| v.as_slice()));
    store
        .damage_put_item(&1u64.to_be_bytes(), Some(&seg))
        .unwrap();
    let e = store.append(Some(head), &past[..1], &[]).unwrap_err();
    assert!(e.to_string().contains("torn_tail"), "{e}");
}

#[test]
fn the_witness_keeps_the_newest_valid_slot_and_reports_lost_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, head) = store_with_genesis(tmp.path());
    let b = sealed_chain(1, head.hash, 3);
    let h3 = store.append(Some(head), &b, &[]).unwrap();
    assert!(store.witness_damage(Some(h3)).is_none());
    // the store rolled back to an earlier, consistent head: damage
    let d = store.witness_damage(Some(head)).unwrap();
    assert_eq!((d.seq, d.kind), (1, DamageKind::Truncated));
    let d = store.witness_damage(None).unwrap();
    assert_eq!(d.kind, DamageKind::Truncated);
    // the same seq with another hash, a later head whose record at the
    // witnessed seq differs
    let other = Head {
        seq: 3,
        hash: [9; 32],
    };
    assert_eq!(
        store.witness_damage(Some(other)).unwrap().kind,
        DamageKind::HeadMismatch
    );
    drop(store);
    // a torn newest slot: the older one (genesis) is the lower bound
    let path = tmp.path().join(WITNESS_FILE);
    let mut w = std::fs::read(&path).unwrap();
    let newest = if parse_witness_slot(&w[..64]) == Some(Some(h3)) {
        0
    } else {
        64
    };
    w[newest + 20] ^= 1;
    std::fs::write(&path, &w).unwrap();
    let store = SledStore::open(tmp.path()).unwrap();
    assert!(store.witness_damage(Some(h3)).is_none());
    drop(store);
    // no valid slot at all
    std::fs::write(&path, b"").unwrap();
    let store = SledStore::open(tmp.path()).unwrap();
    assert_eq!(
        store.witness_damage(Some(h3)).unwrap().kind,
        DamageKind::StorageUnreadable
    );
    assert!(store
        .append(Some(h3), &sealed_chain(4, h3.hash, 1), &[])
        .is_err());
}

#[test]
fn witness_slots_round_trip_and_refuse_any_changed_byte() {
    for head in [
        None,
        Some(Head {
            seq: 7,
            hash: [3; 32],
        }),
    ] {
        let slot = witness_slot(head);
        assert_eq!(parse_witness_slot(&slot), Some(head));
        for i in 0..slot.len() {
            let mut b = slot;
            b[i] ^= 0x10;
            assert_eq!(parse_witness_slot(&b), None, "byte {i}");
        }
        assert_eq!(parse_witness_slot(&slot[..63]), None);
    }
}

#[test]
fn a_layout_1_store_is_read_and_every_append_is_refused_with_how_to_migrate() {
    let tmp = tempfile::tempdir().unwrap();
    let chain = sealed_chain(0, ZERO_HASH, 5);
    {
        // layout 1 as the previous build wrote it
        let db = sled::Config::new()
            .path(tmp.path().join(STORE_DIR))
            .open()
            .unwrap();
        let records = db.open_tree(LEGACY_RECORDS_TREE).unwrap();
        let meta = db.open_tree(META_TREE).unwrap();
        let keys = db.open_tree(KEYS_TREE).unwrap();
        for s in &chain {
            records.insert(s.seq.to_be_bytes(), s.value()).unwrap();
        }
        keys.insert(b"k3", &3u64.to_be_bytes()).unwrap();
        let last = chain.last().unwrap();
        let head = Head {
            seq: last.seq,
            hash: last.hash,
        };
        meta.insert(HEAD_KEY, &head.to_bytes()[..]).unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open(tmp.path()).unwrap();
    assert_eq!(store.layout(), Layout::Records);
    let got: Vec<Vec<u8>> = values(&store);
    let want: Vec<Vec<u8>> = chain.iter().map(Sealed::value).collect();
    assert_eq!(got, want);
    assert_eq!(store.value(2).unwrap(), Some(chain[2].value()));
    assert_eq!(store.idempotency_seq("k3").unwrap(), Some(3));
    let head = Head::from_bytes(&store.head_raw().unwrap().unwrap()).unwrap();
    let e = store
        .append(Some(head), &sealed_chain(5, head.hash, 1), &[])
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("storage layout 1")
            && text.contains("export --jsonl")
            && text.contains("import"),
        "{text}"
    );
    assert_eq!(e.class().code(), 2);
}

#[test]
fn damage_hooks_reach_single_records_inside_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, head) = store_with_genesis(tmp.path());
    let b = sealed_chain(1, head.hash, 9);
    store.append(Some(head), &b, &[]).unwrap();
    let mut v = store.value(5).unwrap().unwrap();
    v[70] ^= 1;
    store
        .damage_put(DamageTree::Records, &5u64.to_be_bytes(), &v)
        .unwrap();
    assert_eq!(store.value(5).unwrap(), Some(v));
    assert_eq!(store.value(6).unwrap(), Some(b[5].value()));
    store
        .damage_remove(DamageTree::Records, &5u64.to_be_bytes())
        .unwrap();
    assert_eq!(store.value(5).unwrap(), None);
    assert_eq!(store.value(6).unwrap(), Some(b[5].value()));
    assert_eq!(store.value(4).unwrap(), Some(b[3].value()));
}
