//! Kill test: append in a loop, SIGKILL the writer at random moments, then
//! verify that the chain verifies and every acknowledged append is present
//! with the hash it was acknowledged with.
//!
//!     cargo run --example crashtest -- drive --kills 50 [--seed N] [--dir D]
//!
//! `drive` spawns this same program as `writer DIR SEED`, which appends
//! batches of 1..=32 notes and prints `ack SEQ HASH` for each record only
//! after the append returned (after sled's flush). The driver kills it after
//! a random 0..=150 ms, collects the acks it saw, reopens the ledger and
//! checks. The seed is printed so a failing run can be replayed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchledger::events::{Event, OperatorNoted};
use benchledger::ledger::{Draft, Ledger};

/// splitmix64: a small deterministic generator, enough for choosing delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn writer(dir: &Path, seed: u64) -> ! {
    let mut rng = Rng(seed);
    let ledger = Ledger::open(dir, Duration::from_secs(30)).expect("open ledger");
    let stdout = std::io::stdout();
    let mut n = 0u64;
    loop {
        let batch: Vec<Draft> = (0..1 + rng.below(32))
            .map(|_| {
                n += 1;
                Draft {
                    actor: "crashtest".into(),
                    event: Event::OperatorNoted(OperatorNoted {
                        lineage: None,
                        text: format!("w{seed}-{n} {}", "x".repeat(rng.below(400) as usize)),
                    }),
                    idempotency_key: if rng.below(4) == 0 {
                        Some(format!("ct-{seed}-{n}"))
                    } else {
                        None
                    },
                }
            })
            .collect();
        let done = ledger.append(&batch, n).expect("append");
        let mut out = stdout.lock();
        for a in done {
            writeln!(out, "ack {} {}", a.seq, hex::encode(a.hash)).expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

fn drive(kills: u64, seed: u64, dir: PathBuf) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    if !Ledger::exists(&dir) {
        Ledger::create(&dir, Duration::from_secs(5), [7; 16], "crashtest", 0)
            .map_err(|e| e.to_string())?;
    }
    let mut rng = Rng(seed);
    let mut acked_total = 0u64;
    let mut acks: Vec<(u64, String)> = Vec::new();
    let start = Instant::now();
    for k in 0..kills {
        let child_seed = rng.next();
        let mut child = Command::new(&exe)
            .arg("writer")
            .arg(&dir)
            .arg(child_seed.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| {
                    let mut p = l.split(' ');
                    match (p.next(), p.next(), p.next()) {
                        (Some("ack"), Some(seq), Some(hash)) => {
                            Some((seq.parse::<u64>().ok()?, hash.to_string()))
                        }
                        _ => None,
                    }
                })
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(rng.below(151)));
        child.kill().map_err(|e| format!("kill: {e}"))?; // SIGKILL
        child.wait().map_err(|e| e.to_string())?;
        let got = reader.join().map_err(|_| "reader panicked".to_string())?;
        acked_total += got.len() as u64;
        acks.extend(got);
        let ledger = Ledger::open(&dir, Duration::from_secs(30))
            .map_err(|e| format!("kill {k}: reopen: {e}"))?;
        let report = ledger
            .verify()
            .map_err(|e| format!("kill {k}: verify: {e}"))?;
        if let Some(d) = report.damage {
            return Err(format!("kill {k} (seed {seed}): verify found damage: {d}"));
        }
        for (seq, hash) in &acks {
            let v = ledger
                .read(*seq)
                .map_err(|e| format!("kill {k} (seed {seed}): acknowledged seq {seq} lost: {e}"))?;
            if hex::encode(v.hash) != *hash {
                return Err(format!(
                    "kill {k} (seed {seed}): acknowledged seq {seq} has another hash"
                ));
            }
        }
        // Keep the check cost flat: every ack was proven present; sample
        // the older ones from now on.
        if acks.len() > 2_000 {
            let keep: Vec<_> = acks.iter().step_by(acks.len() / 500).cloned().collect();
            acks = keep;
        }
        if (k + 1) % 10 == 0 {
            eprintln!(
                "crashtest: {} kills, {} acknowledged appends, head {}",
                k + 1,
                acked_total,
                report.records - 1
            );
        }
    }
    let ledger = Ledger::open(&dir, Duration::from_secs(30)).map_err(|e| e.to_string())?;
    let report = ledger.verify().map_err(|e| e.to_string())?;
    println!(
        "crashtest: seed {seed}: {kills} kills survived, {acked_total} acknowledged appends all present, {} records verify, {:.1} s",
        report.records,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("writer") if args.len() == 3 => {
            writer(Path::new(&args[1]), args[2].parse().expect("seed"))
        }
        Some("drive") => {
            let mut kills = 50;
            let mut seed = benchledger::timefmt::now_utc_ns();
            let mut dir: Option<PathBuf> = None;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                let mut val = || it.next().cloned().unwrap_or_else(|| usage());
                match a.as_str() {
                    "--kills" => kills = val().parse().unwrap_or_else(|_| usage()),
                    "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
                    "--dir" => dir = Some(PathBuf::from(val())),
                    _ => usage(),
                }
            }
            let tmp = tempfile::tempdir().expect("temp dir");
            let dir = dir.unwrap_or_else(|| tmp.path().join("ledger"));
            eprintln!(
                "crashtest: seed {seed}, {kills} kills, ledger {}",
                dir.display()
            );
            if let Err(e) = drive(kills, seed, dir) {
                eprintln!("crashtest: FAILED: {e}");
                std::process::exit(1);
            }
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: crashtest drive [--kills N] [--seed N] [--dir DIR] | crashtest writer DIR SEED"
    );
    std::process::exit(2);
}
