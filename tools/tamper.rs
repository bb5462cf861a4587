//! Tamper harness: damage a stored ledger in every way an attacker or a bad
//! disk could, run `Ledger::verify`, and check that it names the damage at
//! the seq SPEC.md section 6 says it must.
//!
//!     cargo run --release --no-default-features --example tamper -- [--trials N]
//!         [--records N] [--kinds K,K,...] [--seed S] [--check-every N] [--dir DIR]
//!
//! It builds one ledger of `--records` records (default 10,000: a genesis
//! and notes of 10..=300 bytes, every fifth with an idempotency key), then
//! runs `--trials` trials (default 10,000) of each kind against that one
//! open store: damage it through the store's `damage_put`/`damage_remove`
//! hooks, verify, restore the original bytes. Every `--check-every` trials
//! (and at the end) it verifies that the restored ledger is whole again with
//! the original head. The kinds and what verify must report (SPEC.md 6):
//!
//! | kind | damage | expected |
//! | --- | --- | --- |
//! | `flip` | one byte anywhere in a stored value (prev, hash or record bytes) XORed with a random non-zero byte | `bad_hash` at that seq |
//! | `truncate` | a stored value cut to a random shorter length | `truncated_record` (under 64 bytes) or `bad_hash`, at that seq |
//! | `delete` | a stored record removed | `gap` at that seq; `truncated` at that seq when it was the last |
//! | `swap` | the values of two records i < j exchanged | `reordered` at i |
//! | `head` | the stored head rewritten: another hash; an earlier seq with its true hash; an earlier seq with another hash; a seq past the end; a wrong length; one flipped byte; removed | `head_mismatch` at the head / `torn_tail` at seq + 1 / `head_mismatch` at seq / `truncated` at last + 1 / `head_mismatch` / by the rules / `head_missing` |
//! | `rewrite` | a record's payload changed and re-encoded, its own hash recomputed over the stored prev, its successors untouched | `rewritten` at that seq; `head_mismatch` at that seq when it was the last |
//!
//! The first trial of each kind hits seq 0 and the second the last record;
//! the rest are uniform. The seed is printed; `--seed` replays the same
//! ledger and the same trials. Exit 0 only when every trial was detected at
//! the right seq with the right damage kind.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use benchledger::log::chain::{link_hash, DamageKind, Hash, HEAD_BYTES, VALUE_PREFIX_BYTES};
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::log::record::Record;
use benchledger::log::store::{DamageTree, Store, DAMAGE_HEAD_KEY};
use benchledger::rng::SplitMix64;
use benchledger::schema::events::{Event, OperatorNoted};

/// The crate's one seeded generator, with the draws the trials need.
type Rng = SplitMix64;

trait Draws {
    fn nonzero_byte(&mut self) -> u8;
    fn hash(&mut self) -> Hash;
}

impl Draws for Rng {
    fn nonzero_byte(&mut self) -> u8 {
        1 + self.below(255) as u8
    }

    fn hash(&mut self) -> Hash {
        let mut h = [0u8; 32];
        for b in &mut h {
            *b = self.next_u64() as u8;
        }
        h
    }
}

const KINDS: [&str; 6] = ["flip", "truncate", "delete", "swap", "head", "rewrite"];

/// What verify must report for one trial.
struct Expect {
    seq: u64,
    kinds: &'static [DamageKind],
}

/// What must be undone after a trial.
enum Undo {
    Put(DamageTree, Vec<u8>, Vec<u8>),
    Puts(Vec<(DamageTree, Vec<u8>, Vec<u8>)>),
}

struct Harness {
    ledger: Ledger,
    last: u64,
    head_raw: Vec<u8>,
}

impl Harness {
    fn value(&self, seq: u64) -> Vec<u8> {
        self.ledger
            .store()
            .value(seq)
            .expect("read")
            .expect("a stored record")
    }

    fn put(&self, tree: DamageTree, key: &[u8], value: &[u8]) {
        self.ledger
            .store()
            .damage_put(tree, key, value)
            .expect("damage put");
    }

    fn remove(&self, tree: DamageTree, key: &[u8]) {
        self.ledger
            .store()
            .damage_remove(tree, key)
            .expect("damage remove");
    }

    fn undo(&self, u: Undo) {
        match u {
            Undo::Put(t, k, v) => self.put(t, &k, &v),
            Undo::Puts(all) => {
                for (t, k, v) in all {
                    self.put(t, &k, &v)
                }
            }
        }
    }

    /// Seq for trial `i`: 0 first, the last record second, then uniform.
    fn pick(&self, i: u64, rng: &mut Rng) -> u64 {
        match i {
            0 => 0,
            1 => self.last,
            _ => rng.below(self.last + 1),
        }
    }

    /// Damages the store for one trial of `kind`; returns the expectation,
    /// a description and the undo.
    fn damage(&self, kind: &str, i: u64, rng: &mut Rng) -> (Expect, String, Undo) {
        use DamageKind::*;
        let rec = |s: u64| s.to_be_bytes().to_vec();
        match kind {
            "flip" => {
                let seq = self.pick(i, rng);
                let orig = self.value(seq);
                let mut v = orig.clone();
                let at = rng.below(v.len() as u64) as usize;
                v[at] ^= rng.nonzero_byte();
                self.put(DamageTree::Records, &rec(seq), &v);
                (
                    Expect {
                        seq,
                        kinds: &[BadHash],
                    },
                    format!("seq {seq}: byte {at} of {}", orig.len()),
                    Undo::Put(DamageTree::Records, rec(seq), orig),
                )
            }
            "truncate" => {
                let seq = self.pick(i, rng);
                let orig = self.value(seq);
                let len = rng.below(orig.len() as u64) as usize;
                self.put(DamageTree::Records, &rec(seq), &orig[..len]);
                let kinds: &'static [DamageKind] = if len < VALUE_PREFIX_BYTES {
                    &[TruncatedRecord]
                } else {
                    &[BadHash]
                };
                (
                    Expect { seq, kinds },
                    format!("seq {seq}: cut to {len} of {} bytes", orig.len()),
                    Undo::Put(DamageTree::Records, rec(seq), orig),
                )
            }
            "delete" => {
                let seq = self.pick(i, rng);
                let orig = self.value(seq);
                self.remove(DamageTree::Records, &rec(seq));
                let kinds: &'static [DamageKind] = if seq == self.last {
                    &[Truncated]
                } else {
                    &[Gap]
                };
                (
                    Expect { seq, kinds },
                    format!("seq {seq} removed"),
                    Undo::Put(DamageTree::Records, rec(seq), orig),
                )
            }
            "swap" => {
                let (a, b) = match i {
                    0 => (0, 1 + rng.below(self.last)),
                    1 => (rng.below(self.last), self.last),
                    _ => loop {
                        let (a, b) = (rng.below(self.last + 1), rng.below(self.last + 1));
                        if a != b {
                            break (a.min(b), a.max(b));
                        }
                    },
                };
                let (va, vb) = (self.value(a), self.value(b));
                self.put(DamageTree::Records, &rec(a), &vb);
                self.put(DamageTree::Records, &rec(b), &va);
                (
                    Expect {
                        seq: a,
                        kinds: &[Reordered],
                    },
                    format!("seqs {a} and {b} swapped"),
                    Undo::Puts(vec![
                        (DamageTree::Records, rec(a), va),
                        (DamageTree::Records, rec(b), vb),
                    ]),
                )
            }
            "head" => self.damage_head(i, rng),
            "rewrite" => {
                let seq = self.pick(i, rng);
                let orig = self.value(seq);
                let prev: Hash = orig[..32].try_into().expect("prefix");
                let mut d = Record::decode(&orig[VALUE_PREFIX_BYTES..]).expect("a valid record");
                let event = match d.event {
                    Event::OperatorNoted(mut n) => {
                        n.text = format!("{} (forged {})", n.text, rng.next_u64());
                        Event::OperatorNoted(n)
                    }
                    Event::LedgerCreated(mut g) => {
                        g.ledger_id = hex::encode(&rng.hash()[..16]);
                        Event::LedgerCreated(g)
                    }
                    other => panic!("the tamper ledger holds only notes, not {}", other.kind()),
                };
                d.record.payload =
                    benchledger::log::codec::encode_payload(&event).expect("encode payload");
                let bytes = d
                    .record
                    .encode()
                    .expect("a tamper note is within the limit");
                let hash = link_hash(&prev, seq, &bytes);
                let mut v = Vec::with_capacity(VALUE_PREFIX_BYTES + bytes.len());
                v.extend_from_slice(&prev);
                v.extend_from_slice(&hash);
                v.extend_from_slice(&bytes);
                self.put(DamageTree::Records, &rec(seq), &v);
                let kinds: &'static [DamageKind] = if seq == self.last {
                    &[HeadMismatch]
                } else {
                    &[Rewritten]
                };
                (
                    Expect { seq, kinds },
                    format!("seq {seq}: payload rewritten, hash recomputed"),
                    Undo::Put(DamageTree::Records, rec(seq), orig),
                )
            }
            _ => unreachable!("kinds are checked"),
        }
    }

    fn damage_head(&self, i: u64, rng: &mut Rng) -> (Expect, String, Undo) {
        use DamageKind::*;
        let last = self.last;
        let head = |seq: u64, hash: &Hash| {
            let mut b = seq.to_be_bytes().to_vec();
            b.extend_from_slice(hash);
            b
        };
        let undo = Undo::Put(
            DamageTree::Meta,
            DAMAGE_HEAD_KEY.to_vec(),
            self.head_raw.clone(),
        );
        let variant = if i < 7 { i } else { rng.below(7) };
        let (bytes, expect, what): (Option<Vec<u8>>, Expect, String) = match variant {
            0 => {
                let mut h = rng.hash();
                h[0] ^= 1; // never the true hash
                (
                    Some(head(last, &h)),
                    Expect {
                        seq: last,
                        kinds: &[HeadMismatch],
                    },
                    format!("head: seq {last} with another hash"),
                )
            }
            1 => {
                let s = rng.below(last);
                let v = self.value(s);
                let h: Hash = v[32..64].try_into().expect("hash");
                (
                    Some(head(s, &h)),
                    Expect {
                        seq: s + 1,
                        kinds: &[TornTail],
                    },
                    format!("head: rolled back to seq {s} with its true hash"),
                )
            }
            2 => {
                let s = rng.below(last);
                let mut h = rng.hash();
                let true_hash: Hash = self.value(s)[32..64].try_into().expect("hash");
                if h == true_hash {
                    h[0] ^= 1;
                }
                (
                    Some(head(s, &h)),
                    Expect {
                        seq: s,
                        kinds: &[HeadMismatch],
                    },
                    format!("head: seq {s} with another hash"),
                )
            }
            3 => {
                let s = last + 1 + rng.below(1_000_000);
                (
                    Some(head(s, &rng.hash())),
                    Expect {
                        seq: last + 1,
                        kinds: &[Truncated],
                    },
                    format!("head: seq {s}, past the end"),
                )
            }
            4 => {
                let mut len = rng.below(81) as usize;
                if len == HEAD_BYTES {
                    len += 1;
                }
                let b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                (
                    Some(b),
                    Expect {
                        seq: last,
                        kinds: &[HeadMismatch],
                    },
                    format!("head: {len} bytes"),
                )
            }
            5 => {
                let mut b = self.head_raw.clone();
                let at = rng.below(b.len() as u64) as usize;
                b[at] ^= rng.nonzero_byte();
                let s = u64::from_be_bytes(b[..8].try_into().expect("seq"));
                let expect = if at >= 8 {
                    Expect {
                        seq: last,
                        kinds: &[HeadMismatch],
                    }
                } else if s > last {
                    Expect {
                        seq: last + 1,
                        kinds: &[Truncated],
                    }
                } else {
                    // An earlier seq with the last record's hash.
                    Expect {
                        seq: s,
                        kinds: &[HeadMismatch],
                    }
                };
                (Some(b), expect, format!("head: byte {at} flipped"))
            }
            _ => (
                None,
                Expect {
                    seq: last,
                    kinds: &[HeadMissing],
                },
                "head: removed".to_string(),
            ),
        };
        match bytes {
            Some(b) => self.put(DamageTree::Meta, DAMAGE_HEAD_KEY, &b),
            None => self.remove(DamageTree::Meta, DAMAGE_HEAD_KEY),
        }
        (expect, what, undo)
    }
}

#[derive(Default)]
struct Row {
    trials: u64,
    detected: u64,
    right_seq: u64,
    right_kind: u64,
    seen: BTreeMap<String, u64>,
    secs: f64,
}

fn build(dir: &std::path::Path, records: u64, rng: &mut Rng) -> Result<Harness, String> {
    let (ledger, _) = Ledger::create(dir, Duration::from_secs(5), [0x7a; 16], "tamper", 1)
        .map_err(|e| e.to_string())?;
    let mut n = 1u64;
    while n < records {
        let k = (records - n).min(2_000);
        let drafts: Vec<Draft> = (0..k)
            .map(|j| {
                let seq = n + j;
                Draft {
                    actor: "tamper".into(),
                    event: Event::OperatorNoted(OperatorNoted {
                        lineage: None,
                        text: format!("note {seq} {}", "t".repeat(rng.below(291) as usize)),
                    }),
                    idempotency_key: seq.is_multiple_of(5).then(|| format!("tamper-{seq}")),
                }
            })
            .collect();
        ledger
            .append(&drafts, 1_000 + n)
            .map_err(|e| e.to_string())?;
        n += k;
    }
    let head_raw = ledger
        .store()
        .head_raw()
        .map_err(|e| e.to_string())?
        .ok_or("no head")?;
    let report = ledger.verify().map_err(|e| e.to_string())?;
    if !report.ok() || report.records != records {
        return Err(format!(
            "the fresh ledger does not verify: {:?}",
            report.damage
        ));
    }
    Ok(Harness {
        ledger,
        last: records - 1,
        head_raw,
    })
}

fn check_whole(h: &Harness, records: u64) -> Result<(), String> {
    let r = h.ledger.verify().map_err(|e| e.to_string())?;
    let head = h.ledger.store().head_raw().map_err(|e| e.to_string())?;
    if !r.ok() || r.records != records || head.as_deref() != Some(h.head_raw.as_slice()) {
        return Err(format!(
            "the restored ledger is not whole: {:?}, {} records",
            r.damage, r.records
        ));
    }
    Ok(())
}

fn run(
    trials: u64,
    records: u64,
    kinds: &[String],
    seed: u64,
    check_every: u64,
    dir: PathBuf,
) -> Result<bool, String> {
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();
    let h = build(&dir, records, &mut rng)?;
    eprintln!(
        "tamper: built a {records}-record ledger in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut verifies = 0u64;
    for kind in kinds {
        let started = Instant::now();
        let row = rows.entry(kind.clone()).or_default();
        for i in 0..trials {
            let (expect, what, undo) = h.damage(kind, i, &mut rng);
            let report = h
                .ledger
                .verify()
                .map_err(|e| format!("{kind} trial {i}: verify: {e}"))?;
            verifies += 1;
            row.trials += 1;
            match &report.damage {
                None => failures.push(format!("{kind} trial {i} ({what}): not detected")),
                Some(d) => {
                    row.detected += 1;
                    *row.seen.entry(d.kind.to_string()).or_default() += 1;
                    let seq_ok = d.seq == expect.seq;
                    let kind_ok = expect.kinds.contains(&d.kind);
                    row.right_seq += u64::from(seq_ok);
                    row.right_kind += u64::from(kind_ok);
                    if !(seq_ok && kind_ok) {
                        failures.push(format!(
                            "{kind} trial {i} ({what}): verify said seq {} {}, expected seq {} {:?} ({})",
                            d.seq, d.kind, expect.seq, expect.kinds, d.detail
                        ));
                    }
                }
            }
            h.undo(undo);
            if (i + 1) % check_every == 0 {
                check_whole(&h, records).map_err(|e| format!("{kind} after trial {i}: {e}"))?;
                verifies += 1;
            }
            if (i + 1) % 1_000 == 0 {
                eprintln!(
                    "tamper: {kind}: {} trials, {} right, {:.1} s",
                    i + 1,
                    row.right_seq.min(row.right_kind),
                    started.elapsed().as_secs_f64()
                );
            }
        }
        check_whole(&h, records).map_err(|e| format!("{kind} at the end: {e}"))?;
        verifies += 1;
        row.secs = started.elapsed().as_secs_f64();
    }
    println!(
        "tamper: seed {seed}, a {records}-record ledger, {trials} trials per kind, {verifies} verifies, {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    println!(
        "| kind | trials | detected | at the right seq | right damage kind | damage kinds reported | s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | --- | ---: |");
    for kind in kinds {
        let r = &rows[kind];
        let seen: Vec<String> = r.seen.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "| {kind} | {} | {} | {} | {} | {} | {:.1} |",
            r.trials,
            r.detected,
            r.right_seq,
            r.right_kind,
            seen.join(", "),
            r.secs
        );
    }
    for f in failures.iter().take(20) {
        eprintln!("tamper: FAILED: {f}");
    }
    if !failures.is_empty() {
        eprintln!(
            "tamper: {} trials not detected as expected (seed {seed})",
            failures.len()
        );
    }
    Ok(failures.is_empty())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut trials = 10_000u64;
    let mut records = 10_000u64;
    let mut seed = benchledger::schema::time::now_utc_ns();
    let mut check_every = 100u64;
    let mut kinds: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
    let mut dir: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_else(|| usage());
        let num = |s: String| s.parse::<u64>().unwrap_or_else(|_| usage());
        match a.as_str() {
            "--trials" => trials = num(val()),
            "--records" => records = num(val()),
            "--seed" => seed = num(val()),
            "--check-every" => check_every = num(val()).max(1),
            "--dir" => dir = Some(PathBuf::from(val())),
            "--kinds" => {
                kinds = val().split(',').map(str::to_string).collect();
                if kinds.iter().any(|k| !KINDS.contains(&k.as_str())) {
                    usage()
                }
            }
            _ => usage(),
        }
    }
    if records < 3 {
        usage()
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = dir.unwrap_or_else(|| tmp.path().join("ledger"));
    eprintln!(
        "tamper: seed {seed}, {records} records, {trials} trials of {}",
        kinds.join(", ")
    );
    match run(trials, records, &kinds, seed, check_every, dir) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("tamper: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: tamper [--trials N] [--records N] [--kinds {}] [--seed S] [--check-every N] [--dir DIR]",
        KINDS.join(",")
    );
    std::process::exit(2);
}
