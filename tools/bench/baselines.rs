//! The ingest workloads, each run in its own child process: the ledger's
//! `Batch` API, raw sled (the same stored bytes, plain inserts, one flush
//! per batch) and SQLite (WAL, synchronous=FULL, a hash-chain column, one
//! transaction per batch).

use std::path::Path;
use std::time::{Duration, Instant};

use benchledger::log::chain::{link_hash, Sealed, ZERO_HASH};
use benchledger::log::codec::encode_payload;
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::log::record::{Record, FORMAT_VERSION};
use benchledger::schema::events::{Event, GroupRef};

use crate::gen;
use crate::util::{reset_peak_rss, vm_hwm_kib, vm_rss_kib};

const LINEAGE: &str = "public-reproduction-bench-l00";

fn group() -> GroupRef {
    GroupRef {
        lineage: LINEAGE.into(),
        group: "r1".into(),
    }
}

/// The N usage rows of the ingest workload, as `ingest usage` drafts them
/// (row key `usage:<file>:<line>`).
pub fn drafts(n: usize) -> Vec<Draft> {
    let g = group();
    (0..n as u64)
        .map(|i| Draft {
            actor: "operator:alice".into(),
            event: gen::usage_row(&g, &format!("req-r1-bench-{:04}-{:03}", i / 20, i % 20), i),
            idempotency_key: Some(gen::row_key("usage", "bench-usage-file", i + 1)),
        })
        .collect()
}

/// The exact records the ledger stores for `drafts` after a genesis at
/// `T0`, each batch stamped like the ledger run: (key, stored value,
/// idempotency key, record bytes).
pub struct Stored {
    pub seq: u64,
    pub value: Vec<u8>,
    pub bytes: Vec<u8>,
    pub idem: String,
}

/// Encodes the workload exactly as `Ledger::append` would (same record
/// bytes, same links), outside the timed region of the baselines.
pub fn stored(n: usize, batch: usize) -> Vec<Stored> {
    let mut prev = ZERO_HASH;
    let mut out = Vec::with_capacity(n);
    // seq 0 is the genesis each store already holds; its hash is
    // irrelevant to the cost, so chain from a zero predecessor at seq 1.
    for (i, d) in drafts(n).into_iter().enumerate() {
        let seq = i as u64 + 1;
        let now = gen::T0_NS + (i / batch) as u64;
        let bytes = Record {
            format: FORMAT_VERSION,
            seq,
            recorded_at_utc_ns: now,
            actor: d.actor.clone(),
            kind: d.event.kind().into(),
            idempotency_key: d.idempotency_key.clone(),
            payload: encode_payload(&d.event).expect("payload"),
        }
        .encode()
        .expect("bench records are within the limit");
        let s = Sealed::new(prev, seq, bytes);
        prev = s.hash;
        out.push(Stored {
            seq,
            value: s.value(),
            idem: d.idempotency_key.expect("key"),
            bytes: s.bytes,
        });
    }
    out
}

/// Result of one ingest run.
pub struct Ingest {
    pub secs: f64,
    pub rows: usize,
    pub record_bytes: usize,
    /// Peak RSS during the timed region (the workload already in memory).
    pub rss_kib: u64,
    /// RSS when the timed region started: the workload held in memory.
    pub base_kib: u64,
}

/// The ledger: `Ledger::batch`, push every draft, commit (durable) per batch.
pub fn ingest_ledger(dir: &Path, n: usize, batch: usize) -> Ingest {
    let (ledger, _) = Ledger::create(
        dir,
        Duration::from_secs(5),
        [9; 16],
        "operator:init",
        gen::T0_NS,
    )
    .expect("create");
    let drafts = drafts(n);
    let record_bytes = stored(n.min(1000), batch)
        .iter()
        .map(|s| s.bytes.len())
        .sum::<usize>()
        * n
        / n.clamp(1, 1000);
    let base_kib = vm_rss_kib();
    reset_peak_rss();
    let t = Instant::now();
    for (k, chunk) in drafts.chunks(batch).enumerate() {
        let mut b = ledger.batch(gen::T0_NS + k as u64).expect("batch");
        for d in chunk {
            b.push(d.clone()).expect("push");
        }
        b.commit().expect("commit");
    }
    let secs = t.elapsed().as_secs_f64();
    Ingest {
        secs,
        rows: n,
        record_bytes,
        rss_kib: vm_hwm_kib(),
        base_kib,
    }
}

/// Raw sled: the same (seq -> stored value), (key -> seq) and head bytes,
/// plain `insert`s, one `flush` per batch followed by an fsync of sled's
/// log file (sled 0.34's flush ends in `sync_file_range`, not an fsync; the
/// ledger fsyncs after its flush, and SQLite's synchronous=FULL fsyncs, so
/// every system pays the same durability); no checks, no transaction.
pub fn ingest_sled(dir: &Path, n: usize, batch: usize) -> Ingest {
    let db = sled::Config::new()
        .path(dir)
        .mode(sled::Mode::HighThroughput)
        .cache_capacity(benchledger::log::store::SLED_CACHE_BYTES)
        .open()
        .expect("sled");
    let records = db.open_tree("records").expect("tree");
    let log = std::fs::File::open(dir.join("db")).expect("sled log file");
    let meta = db.open_tree("meta").expect("tree");
    let idem = db.open_tree("idempotency").expect("tree");
    let rows = stored(n, batch);
    let record_bytes = rows.iter().map(|s| s.bytes.len()).sum();
    let base_kib = vm_rss_kib();
    reset_peak_rss();
    let t = Instant::now();
    for chunk in rows.chunks(batch) {
        for s in chunk {
            records
                .insert(s.seq.to_be_bytes(), s.value.as_slice())
                .expect("insert");
            idem.insert(s.idem.as_bytes(), &s.seq.to_be_bytes())
                .expect("insert");
        }
        let last = chunk.last().expect("non-empty");
        let mut head = last.seq.to_be_bytes().to_vec();
        head.extend_from_slice(&last.value[32..64]);
        meta.insert(b"head", head).expect("insert");
        db.flush().expect("flush");
        log.sync_all().expect("fsync");
    }
    let secs = t.elapsed().as_secs_f64();
    drop(rows);
    Ingest {
        secs,
        rows: n,
        record_bytes,
        rss_kib: vm_hwm_kib(),
        base_kib,
    }
}

/// SQLite: WAL, synchronous=FULL; `records(seq, prev, hash, bytes, idem
/// UNIQUE)` with the BLAKE3 link computed per row, one transaction per
/// batch that also moves a one-row head table.
pub fn ingest_sqlite(dir: &Path, n: usize, batch: usize) -> Ingest {
    std::fs::create_dir_all(dir).expect("dir");
    let mut db = rusqlite::Connection::open(dir.join("ledger.sqlite")).expect("sqlite");
    db.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=FULL;
         CREATE TABLE records(seq INTEGER PRIMARY KEY, prev BLOB NOT NULL, hash BLOB NOT NULL,
                              bytes BLOB NOT NULL, idem TEXT UNIQUE);
         CREATE TABLE head(id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, hash BLOB NOT NULL);
         INSERT INTO head VALUES (0, 0, zeroblob(32));",
    )
    .expect("schema");
    let rows = stored(n, batch);
    let record_bytes = rows.iter().map(|s| s.bytes.len()).sum();
    let base_kib = vm_rss_kib();
    reset_peak_rss();
    let t = Instant::now();
    let mut prev = ZERO_HASH;
    for chunk in rows.chunks(batch) {
        let tx = db.transaction().expect("begin");
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO records(seq, prev, hash, bytes, idem) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .expect("prepare");
            for s in chunk {
                let hash = link_hash(&prev, s.seq, &s.bytes);
                ins.execute(rusqlite::params![
                    s.seq as i64,
                    &prev[..],
                    &hash[..],
                    &s.bytes,
                    &s.idem
                ])
                .expect("insert");
                prev = hash;
            }
            let last = chunk.last().expect("non-empty");
            tx.execute(
                "UPDATE head SET seq = ?1, hash = ?2 WHERE id = 0",
                rusqlite::params![last.seq as i64, &prev[..]],
            )
            .expect("head");
        }
        tx.commit().expect("commit");
    }
    let secs = t.elapsed().as_secs_f64();
    drop(rows);
    Ingest {
        secs,
        rows: n,
        record_bytes,
        rss_kib: vm_hwm_kib(),
        base_kib,
    }
}

/// The encoded size of one usage row record, as stored (for the report).
pub fn usage_record_bytes() -> (usize, usize) {
    let s = &stored(1, 1)[0];
    let Event::UsageRecorded(_) = &drafts(1)[0].event else {
        unreachable!()
    };
    let payload = encode_payload(&drafts(1)[0].event).expect("payload").len();
    (s.bytes.len(), payload)
}

fn raw_sled(dir: &Path) -> sled::Db {
    sled::Config::new()
        .path(dir)
        .mode(sled::Mode::HighThroughput)
        .cache_capacity(benchledger::log::store::SLED_CACHE_BYTES)
        .open()
        .expect("sled")
}

/// A raw sled database of `items` values of `bytes` bytes in one tree.
pub fn sled_build(dir: &Path, items: usize, bytes: usize) {
    let db = raw_sled(dir);
    let t = db.open_tree("items").expect("tree");
    let v = vec![0x5au8; bytes];
    for i in 0..items as u64 {
        t.insert(i.to_be_bytes(), &v[..]).expect("insert");
        if i % 1000 == 999 {
            db.flush().expect("flush");
        }
    }
    db.flush().expect("flush");
}

/// sled's open of `dir` in this (fresh) process.
pub fn sled_open(dir: &Path) -> serde_json::Value {
    let t = Instant::now();
    let db = raw_sled(dir);
    let tree = db.open_tree("items").expect("tree");
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(tree);
    drop(db);
    serde_json::json!({ "open_ms": open_ms })
}

/// Every value of `dir`, by sled's iterator or by `get` of each key; the
/// time and the peak RSS of the scan.
pub fn sled_scan(dir: &Path, how: &str) -> serde_json::Value {
    let db = raw_sled(dir);
    let tree = db.open_tree("items").expect("tree");
    reset_peak_rss();
    let t = Instant::now();
    let mut bytes = 0usize;
    if how == "iter" {
        for kv in tree.iter() {
            bytes += kv.expect("read").1.len();
        }
    } else {
        let mut i = 0u64;
        while let Some(v) = tree.get(i.to_be_bytes()).expect("read") {
            bytes += v.len();
            i += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    serde_json::json!({ "secs": secs, "bytes": bytes, "rss_kib": vm_hwm_kib() })
}
