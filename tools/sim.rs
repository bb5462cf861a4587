//! The driver's deterministic simulator (issue 28, src/testkit/sim/): runs
//! seeds of `benchledger run` against a simulated machine, cloud and
//! BitRouter daemon, each with and without controller faults, and prints
//! every invariant violation with the seed's one-line reproduction.
//!
//!     cargo run --release --no-default-features --features testkit --example sim -- \
//!         [--seed N | --seeds COUNT [--from FIRST]] [--scale] [--no-verify] [--json]
//!
//! `--seed N` runs one seed and prints its outcome; `--seeds COUNT` runs
//! COUNT seeds from FIRST (default: a random start, printed) and prints the
//! totals: steps, records, cases, faults of each kind, violations.
//! `--no-verify` skips writing each faulted run's records to a sled ledger
//! and verifying it (the audit still re-derives every seal). Exit 1
//! when any seed broke an invariant.

use std::process::ExitCode;
use std::time::Instant;

use benchledger::testkit::sim::{check_seed, reproduction, FaultCounts, Outcome};

struct Args {
    seed: Option<u64>,
    seeds: u64,
    from: Option<u64>,
    scale: bool,
    json: bool,
    no_verify: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        seed: None,
        seeds: 1,
        from: None,
        scale: false,
        json: false,
        no_verify: false,
    };
    let mut it = std::env::args().skip(1);
    let num = |v: Option<String>, f: &str| -> Result<u64, String> {
        v.ok_or(format!("{f} needs a number"))?
            .parse()
            .map_err(|e| format!("{f}: {e}"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seed" => a.seed = Some(num(it.next(), "--seed")?),
            "--seeds" => a.seeds = num(it.next(), "--seeds")?,
            "--from" => a.from = Some(num(it.next(), "--from")?),
            "--scale" => a.scale = true,
            "--json" => a.json = true,
            "--no-verify" => a.no_verify = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("sim: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = a.seed {
        return one(seed, &a);
    }
    let from = a.from.unwrap_or_else(|| {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("the OS random source");
        u64::from_le_bytes(b) >> 16
    });
    many(from, &a)
}

fn one(seed: u64, a: &Args) -> ExitCode {
    match check_seed(seed, a.scale, !a.no_verify) {
        Ok((out, clean)) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"with_faults": out, "without": clean})
                );
            } else {
                print_outcome(&out);
                println!("without controller faults: {:?}", clean.groups);
            }
            if out.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("sim: seed {seed}: {e}");
            ExitCode::from(4)
        }
    }
}

fn print_outcome(o: &Outcome) {
    println!(
        "seed {}: concurrency {}, {} steps, {} drivers, {} records, {} starts, {} simulated s",
        o.seed, o.concurrency, o.steps, o.drivers, o.records, o.starts, o.simulated_sec
    );
    println!("groups: {:?}", o.groups);
    println!("drivers ended: {:?}", o.ends);
    if let Some(s) = &o.stopped {
        println!("hard stop: {s}");
    }
    println!(
        "faults: {}",
        serde_json::to_string(&o.faults).unwrap_or_default()
    );
    for v in &o.violations {
        println!("VIOLATION {v}");
    }
}

fn many(from: u64, a: &Args) -> ExitCode {
    let t = Instant::now();
    let (mut steps, mut records, mut starts, mut failed) = (0u64, 0u64, 0u64, 0u64);
    let mut faults = FaultCounts::default();
    let mut stops = 0u64;
    let mut stop_rules: std::collections::BTreeMap<String, u64> = Default::default();
    println!("sim: seeds {from}..{}", from + a.seeds);
    for seed in from..from + a.seeds {
        match check_seed(seed, a.scale, !a.no_verify) {
            Ok((o, _)) => {
                steps += o.steps;
                records += o.records;
                starts += o.starts;
                stops += u64::from(o.stopped.is_some());
                if let Some(s) = &o.stopped {
                    let rule = s.split(':').next().unwrap_or_default().to_string();
                    *stop_rules.entry(rule).or_default() += 1;
                }
                faults.add(&o.faults);
                if !o.violations.is_empty() {
                    failed += 1;
                    for v in &o.violations {
                        println!("seed {seed}: {v}");
                    }
                    println!("  reproduce: {}", reproduction(seed));
                }
            }
            Err(e) => {
                failed += 1;
                println!(
                    "seed {seed}: error {e}\n  reproduce: {}",
                    reproduction(seed)
                );
            }
        }
    }
    println!(
        "sim: {} seeds in {:.1} s: {steps} steps, {records} records, {starts} cases started, {stops} hard stops; {failed} seed(s) broke an invariant",
        a.seeds,
        t.elapsed().as_secs_f64()
    );
    println!("hard stops by rule: {stop_rules:?}");
    println!(
        "faults injected: {}",
        serde_json::to_string(&faults).unwrap_or_default()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
