//! The chaos run of `benchledger run` (issue 20): while `run` drives a group
//! and is SIGKILLed at random points and restarted, four other processes
//! append notes and read `replay`. The group always seals, every identity
//! starts at most once, every acknowledged note is in the log with the hash
//! it was acknowledged with, no writer waits past the lock bound (no exit
//! 4), and the verdict equals that of an uninterrupted run of the same
//! group (`accepted`), except where a kill fell between a case's start and
//! its launch: that identity is consumed without a result, never
//! relaunched, and the group is `rejected_runtime` (CASE-3, CASE-4).
//!
//! `BENCHLEDGER_CHAOS_KILLS` (default 20) sets the kills,
//! `BENCHLEDGER_CHAOS_SEED` the seed (printed).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use serde_json::Value;

#[cfg(not(feature = "aws"))]
use super::run::{audit_clean, ready, run_cmd, run_once};
use super::run::{kill_delay, killed_after, records, starts};
use super::Harness;

/// Processes appending and reading beside `run`.
const LOAD_PROCESSES: usize = 4;
/// Kills of `run` in one ledger before it may finish on its own.
const KILLS_PER_ROUND_MAX: usize = 40;

/// What the load processes saw.
#[derive(Default)]
struct Load {
    /// (seq, hash) of every acknowledged note.
    acked: Vec<(u64, String)>,
    /// Calls that ended in another exit than 0.
    failures: Vec<String>,
    /// The longest a load call took, ms.
    call_ms_max: u128,
    calls: usize,
}

fn load_process(
    h: Arc<Harness>,
    id: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Load>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let text = format!("load {id}-{i}");
            let args: Vec<&str> = if i % 2 == 0 {
                vec!["replay", "--json"]
            } else {
                vec!["note", &text, "--json"]
            };
            let t0 = Instant::now();
            let out = h.cmd().args(&args).stdin(Stdio::null()).output().unwrap();
            let took = t0.elapsed().as_millis();
            let mut seen = seen.lock().unwrap();
            seen.calls += 1;
            seen.call_ms_max = seen.call_ms_max.max(took);
            if out.status.code() != Some(0) {
                seen.failures.push(format!(
                    "{args:?}: exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
                continue;
            }
            if args[0] == "note" {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                seen.acked.push((
                    v["seq"].as_u64().unwrap(),
                    v["hash"].as_str().unwrap().into(),
                ));
            }
        }
    })
}

/// The sealed status and every gate row as (row, holds).
pub(super) fn verdict(h: &Harness) -> (String, Vec<(String, bool)>) {
    let sealed = records(h, "group_sealed.v1");
    assert_eq!(sealed.len(), 1, "{sealed:?}");
    let status = sealed[0]["payload"]["status"].as_str().unwrap().to_string();
    let gate = h.run(&["gate", "canary-1", "--json"]).json();
    let rows = gate["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["gate"].as_str().unwrap().to_string(),
                r["holds"].as_bool().unwrap(),
            )
        })
        .collect();
    (status, rows)
}

#[cfg(not(feature = "aws"))]
/// `run` until it ends on its own (the cleanup audit an `aws` build
/// records is appended when it asks for it), then sealed; returns the last
/// exit code (0 when sealed accepted, 1 otherwise).
fn run_to_seal(h: &Harness, url: &str) -> i32 {
    let r = run_once(h, url, &[]);
    assert_eq!(r.code, 4, "the cleanup audit needs AWS: {}", r.stderr);
    audit_clean(h);
    let r = run_once(h, url, &[]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    r.code
}

#[cfg(not(feature = "aws"))]
/// One ledger: `run` killed at random points under load, then sealed.
/// Returns the kills and the verdict.
fn chaos_round(seed: &mut u64, kills_left: usize) -> Round {
    let (h, url) = ready(4, 2);
    let url2 = url.clone();
    chaos_ledger(
        Arc::new(h),
        4,
        &move |h: &Harness| run_cmd(h, &url, &[]),
        &move |h: &Harness| {
            run_to_seal(h, &url2);
        },
        seed,
        kills_left,
    )
}

/// The chaos of one ledger holding `cases` identities: `run` (as `run`
/// builds it) SIGKILLed at random points while the load processes write
/// and read, until it ends on its own; then `finish` takes it to its seal.
/// Checks every identity started at most once after each kill and exactly
/// once at the end, every acknowledged note present, no load call refused,
/// and `verify`.
pub(super) fn chaos_ledger(
    h: Arc<Harness>,
    cases: usize,
    run: &dyn Fn(&Harness) -> std::process::Command,
    finish: &dyn Fn(&Harness),
    seed: &mut u64,
    kills_left: usize,
) -> Round {
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Load::default()));
    let load: Vec<JoinHandle<()>> = (0..LOAD_PROCESSES)
        .map(|id| load_process(h.clone(), id, stop.clone(), seen.clone()))
        .collect();
    let mut kills = 0;
    while kills < kills_left.min(KILLS_PER_ROUND_MAX) {
        let after = kill_delay(seed, 700);
        if killed_after(run(&h), after).is_some() {
            break;
        }
        kills += 1;
        let s = starts(&h);
        assert!(s.values().all(|n| *n == 1), "{s:?}");
    }
    finish(&h);
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(seen.failures.is_empty(), "{:?}", seen.failures);
    check_acknowledged(&h, &seen.acked);
    let s = starts(&h);
    assert_eq!(s.len(), cases, "{s:?}");
    assert!(s.values().all(|n| *n == 1), "{s:?}");
    h.ok(&["verify"]);
    eprintln!(
        "chaos round: {kills} kills, {} load calls ({} notes acknowledged), longest {} ms",
        seen.calls,
        seen.acked.len(),
        seen.call_ms_max
    );
    Round {
        kills,
        invalidated: records(&h, "case_invalidated.v1").len(),
        verdict: verdict(&h),
    }
}

/// Every acknowledged note is in the log at its seq with its hash.
fn check_acknowledged(h: &Harness, acked: &[(u64, String)]) {
    let log: BTreeMap<u64, String> = h
        .ok(&["log"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["seq"].as_u64().unwrap(),
                r["hash"].as_str().unwrap().into(),
            )
        })
        .collect();
    for (seq, hash) in acked {
        assert_eq!(log.get(seq), Some(hash), "acknowledged note at seq {seq}");
    }
}

/// What one chaos ledger ended with.
pub(super) struct Round {
    pub kills: usize,
    /// Cases a kill left between their start and their launch:
    /// `terminal_invalid`, never relaunched (CASE-3, CASE-4).
    pub invalidated: usize,
    pub verdict: (String, Vec<(String, bool)>),
}

impl Round {
    /// Checks the ledger's verdict against the uninterrupted run's; whether
    /// a kill invalidated a case. A kill between a case's start and its
    /// launch consumes the identity without a result: the group is
    /// `rejected_runtime`, as the method says. Every other ledger ends as
    /// the uninterrupted run.
    pub(super) fn check(
        &self,
        uninterrupted: &(String, Vec<(String, bool)>),
        round: usize,
    ) -> bool {
        if self.invalidated == 0 {
            assert_eq!(&self.verdict, uninterrupted, "round {round}");
            false
        } else {
            assert_eq!(self.verdict.0, "rejected_runtime", "round {round}");
            true
        }
    }
}

#[test]
#[cfg(not(feature = "aws"))]
fn chaos_run_killed_under_load_seals_with_the_uninterrupted_verdict() {
    // rule CASE-2, rule CASE-4, rule LEDGER-1, rule LEDGER-3
    let want: usize = super::env_number("BENCHLEDGER_CHAOS_KILLS", 20);
    let mut seed: u64 = super::env_number("BENCHLEDGER_CHAOS_SEED", 20_261_202);
    eprintln!("chaos: {want} kills, BENCHLEDGER_CHAOS_SEED={seed}");
    let (h, url) = ready(4, 2);
    assert_eq!(run_to_seal(&h, &url), 0);
    let uninterrupted = verdict(&h);
    assert_eq!(uninterrupted.0, "accepted", "{uninterrupted:?}");
    let mut kills = 0;
    let mut rounds = 0;
    let mut invalidated_rounds = 0;
    while kills < want {
        let round = chaos_round(&mut seed, want - kills);
        invalidated_rounds += usize::from(round.check(&uninterrupted, rounds));
        kills += round.kills;
        rounds += 1;
    }
    eprintln!(
        "chaos: {kills} kills in {rounds} ledgers: {} with the uninterrupted verdict, {invalidated_rounds} rejected_runtime (a kill between a start and its launch)",
        rounds - invalidated_rounds
    );
}
