//! On-disk tamper harness: damages the bytes of the files of a ledger
//! directory the way bit rot, a bad copy or a hex editor would (not through
//! the store's API: `tamper.rs` does that), then runs `verify`, `audit`, a
//! deciding verb and `export` through the CLI. Every verb must end in exit 1
//! naming damage, or exit 0 with exactly the output it gives on the
//! undamaged ledger (the export byte-identical); never a panic, never exit
//! 4 (the environment is fine), never another record.
//!
//!     cargo build --release --no-default-features
//!     cargo run --release --no-default-features --example disktamper -- --trials 10000
//!         [--seed S] [--notes 4300] [--bin PATH] [--keep DIR]
//!
//! The base ledger: `replay-tests/ledgers/short13-accepted.jsonl` imported
//! (a whole lineage: manifest, gates, cases, evidence, seal), then notes
//! appended through the library until it passes the projection checkpoint's
//! threshold (4,300 by default: some keyed, so `index/` is populated, one of
//! 300 KiB, so sled writes a blob file), then the deciding verb run once so
//! that `projection.checkpoint` exists. Every trial copies it, picks one
//! file of the copy uniformly (sled's log, snapshots, configuration and
//! blobs of `sled/` and `index/`, `benchledger.head`, `benchledger.lock`,
//! `projection.checkpoint`) and damages it: `flip` (1..=4 bytes at random
//! offsets XORed with a random non-zero byte), `zero` (a run of 1..=4,096
//! bytes at a random offset) or `truncate` (to a random shorter length).
//! Then, in order: `verify --json`, `audit --json`, `case render-config
//! LINEAGE/r1 fix-git/t1` (a deciding verb: it reads the state through the
//! projection checkpoint) and `export --jsonl`.
//!
//! Outcomes per trial: `identical` (every verb exit 0 with the baseline's
//! output), `damage` (every verb exit 1 naming damage), `mixed` (some of
//! each: e.g. damage to the index fails `verify` while `export`, which does
//! not read the index, is identical), or a failure (anything else: another
//! exit code, a panic, exit 0 with other output). Counts by file and
//! outcome are printed as a table. Exit 0 only with no failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use benchledger::log::ledger::{Draft, Ledger};
use benchledger::schema::events::{Event, OperatorNoted};

const BASE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/replay-tests/ledgers/short13-accepted.jsonl"
);
const GROUP: &str = "short13-kimi-2026-11/r1";
const CASE: &str = "fix-git/t1";

/// The crate's one seeded generator.
type Rng = benchledger::rng::SplitMix64;

/// One verb's result.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

const VERBS: [&str; 4] = ["verify", "audit", "render-config", "export"];

fn run_verb(bin: &Path, dir: &Path, verb: &str, out_file: &Path) -> Outcome {
    let mut c = Command::new(bin);
    c.env_remove("RUST_LOG")
        .env_remove("BENCHLEDGER_DIR")
        .env("RUST_BACKTRACE", "0")
        .arg("--ledger")
        .arg(dir)
        .args(["--lock-timeout", "10"]);
    match verb {
        "verify" => c.args(["verify", "--json"]),
        "audit" => c.args(["audit", "--json"]),
        "render-config" => c.args(["case", "render-config", GROUP, CASE]),
        _ => c.args(["export", "--jsonl", "-o"]).arg(out_file),
    };
    let o = c.output().expect("run benchledger");
    let mut stdout = o.stdout;
    if verb == "export" && o.status.success() {
        stdout = std::fs::read(out_file).unwrap_or_default();
    }
    Outcome {
        code: o.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `verify --json` compared on what must not change: ok, records, head.
fn verify_key(stdout: &[u8]) -> Option<(bool, u64, String)> {
    let v: serde_json::Value = serde_json::from_slice(stdout).ok()?;
    Some((
        v["ok"].as_bool()?,
        v["records"].as_u64()?,
        v["head_hash"].as_str()?.to_string(),
    ))
}

/// Words a damage report carries (SPEC.md section 6's kinds, or the CLI's
/// own wording).
fn names_damage(o: &Outcome) -> bool {
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), o.stderr);
    [
        "damage",
        "bad_hash",
        "rewritten",
        "gap",
        "reordered",
        "undecodable",
        "non_canonical",
        "truncated",
        "bad_genesis",
        "head_mismatch",
        "head_missing",
        "torn_tail",
        "index_mismatch",
        "storage_unreadable",
        "does not verify",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// How one verb fared against its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    Identical,
    Damage,
}

fn judge(verb: &str, got: &Outcome, base: &Outcome) -> Result<Verdict, String> {
    if got.stderr.contains("panicked") {
        return Err(format!("{verb} panicked: {}", got.stderr.trim()));
    }
    match got.code {
        Some(1) if names_damage(got) => Ok(Verdict::Damage),
        Some(0) if got.code == base.code => {
            let same = match verb {
                "verify" => {
                    verify_key(&got.stdout).is_some()
                        && verify_key(&got.stdout) == verify_key(&base.stdout)
                }
                _ => got.stdout == base.stdout,
            };
            if same {
                Ok(Verdict::Identical)
            } else {
                Err(format!(
                    "{verb} exited 0 with other output than on the undamaged ledger"
                ))
            }
        }
        code => Err(format!(
            "{verb} exited {code:?}: {}{}",
            String::from_utf8_lossy(&got.stdout)
                .chars()
                .take(300)
                .collect::<String>(),
            got.stderr.trim().chars().take(600).collect::<String>()
        )),
    }
}

fn build_base(dir: &Path, notes: u64, bin: &Path) -> Result<(), String> {
    let file = std::fs::File::open(BASE).map_err(|e| e.to_string())?;
    benchledger::log::export::import_jsonl(
        &mut std::io::BufReader::new(file),
        BASE,
        dir,
        Duration::from_secs(10),
        benchledger::log::export::TrailerRule::Optional,
    )
    .map_err(|e| format!("import: {e:#}"))?;
    let ledger = Ledger::open(dir, Duration::from_secs(10)).map_err(|e| e.to_string())?;
    let mut n = 0u64;
    while n < notes {
        let drafts: Vec<Draft> = (0..100.min(notes - n))
            .map(|i| {
                let k = n + i;
                let text = if k == 1234 {
                    "b".repeat(300 * 1024)
                } else {
                    format!("disk tamper note {k} {}", "d".repeat((k % 97) as usize * 7))
                };
                Draft {
                    actor: "disktamper".into(),
                    event: Event::OperatorNoted(OperatorNoted {
                        lineage: None,
                        text,
                    }),
                    idempotency_key: k.is_multiple_of(4).then(|| format!("dt-{k}")),
                }
            })
            .collect();
        ledger
            .append(&drafts, 1_900_000_000_000_000_000 + n)
            .map_err(|e| format!("append: {e:#}"))?;
        n += drafts.len() as u64;
    }
    drop(ledger);
    // The deciding verb once: it writes the projection checkpoint.
    let o = run_verb(bin, dir, "render-config", &dir.with_extension("x"));
    if o.code != Some(0) {
        return Err(format!("render-config on the base ledger: {}", o.stderr));
    }
    if !dir.join("projection.checkpoint").exists() {
        return Err("the base ledger has no projection checkpoint".into());
    }
    Ok(())
}

fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The category of a file for the table: `sled/db`, `sled/snap`, ...
fn category(rel: &str) -> String {
    let mut parts: Vec<&str> = rel.split('/').collect();
    if let Some(last) = parts.last_mut() {
        if last.starts_with("snap.") {
            *last = "snap.*";
        } else if last.chars().all(|c| c.is_ascii_digit()) {
            *last = "*";
        }
    }
    parts.join("/")
}

/// A draw in `0..n`, or 0 when `n` is 0 (an empty file).
fn below_or_zero(rng: &mut Rng, n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        rng.below(n)
    }
}

/// Damages `path`; returns a description.
fn damage(path: &Path, rng: &mut Rng) -> Result<String, String> {
    let mut b = std::fs::read(path).map_err(|e| e.to_string())?;
    let len = b.len() as u64;
    let what = match rng.below(3) {
        0 => {
            let n = 1 + rng.below(4);
            let mut at = Vec::new();
            for _ in 0..n {
                if len > 0 {
                    let i = rng.below(len) as usize;
                    b[i] ^= 1 + rng.below(255) as u8;
                    at.push(i);
                }
            }
            format!("flip bytes {at:?} of {len}")
        }
        1 => {
            let i = below_or_zero(rng, len) as usize;
            let n = (1 + rng.below(4096) as usize).min(b.len().saturating_sub(i));
            b[i..i + n].fill(0);
            format!("zero {n} bytes at {i} of {len}")
        }
        _ => {
            let to = below_or_zero(rng, len) as usize;
            b.truncate(to);
            format!("truncate to {to} of {len}")
        }
    };
    std::fs::write(path, &b).map_err(|e| e.to_string())?;
    Ok(what)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(to);
    let st = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| e.to_string())?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("cp -a {} {}", from.display(), to.display()))
    }
}

#[derive(Default)]
struct Row {
    identical: u64,
    damage: u64,
    mixed: u64,
    failed: u64,
}

struct Opts {
    trials: u64,
    seed: u64,
    notes: u64,
    bin: PathBuf,
    keep: Option<PathBuf>,
}

fn run(o: &Opts) -> Result<bool, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work = o.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let base = work.join("base");
    let _ = std::fs::remove_dir_all(&base);
    let t0 = Instant::now();
    build_base(&base, o.notes, &o.bin)?;
    let trial = work.join("trial");
    let export = work.join("export.jsonl");
    // Baselines: the same verbs on an undamaged copy.
    copy_dir(&base, &trial)?;
    let baseline: Vec<Outcome> = VERBS
        .iter()
        .map(|v| run_verb(&o.bin, &trial, v, &export))
        .collect();
    for (v, b) in VERBS.iter().zip(&baseline) {
        if b.code != Some(0) {
            return Err(format!(
                "{v} on the undamaged ledger exited {:?}: {}",
                b.code, b.stderr
            ));
        }
    }
    let files: Vec<String> = files_of(&base)
        .iter()
        .map(|p| {
            p.strip_prefix(&base)
                .expect("under base")
                .display()
                .to_string()
        })
        .collect();
    eprintln!(
        "disktamper: base ledger built in {:.1} s: {} files ({})",
        t0.elapsed().as_secs_f64(),
        files.len(),
        files.join(", ")
    );
    let mut rng = Rng::new(o.seed);
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    for i in 0..o.trials {
        copy_dir(&base, &trial)?;
        // the file list of this copy (the same as the base's)
        let rel = &files[rng.below(files.len() as u64) as usize];
        let what = damage(&trial.join(rel), &mut rng)?;
        let mut verdicts = Vec::new();
        let mut failed = None;
        for (v, b) in VERBS.iter().zip(&baseline) {
            let got = run_verb(&o.bin, &trial, v, &export);
            match judge(v, &got, b) {
                Ok(x) => verdicts.push(x),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let row = rows.entry(category(rel)).or_default();
        match failed {
            Some(e) => {
                row.failed += 1;
                let msg = format!("trial {i}: {rel}: {what}: {e}");
                eprintln!("disktamper: FAILED: {msg}");
                if let Some(keep) = &o.keep {
                    let _ = copy_dir(&trial, &keep.join(format!("failed-{i}")));
                }
                failures.push(msg);
            }
            None if verdicts.iter().all(|v| *v == Verdict::Identical) => row.identical += 1,
            None if verdicts.iter().all(|v| *v == Verdict::Damage) => row.damage += 1,
            None => row.mixed += 1,
        }
        if (i + 1) % 500 == 0 {
            eprintln!(
                "disktamper: {} trials, {} failures, {:.0} s",
                i + 1,
                failures.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "disktamper: seed {}, {} trials on a {}-file ledger, {:.0} s",
        o.seed,
        o.trials,
        files.len(),
        t0.elapsed().as_secs_f64()
    );
    println!("| file | trials | identical (exit 0, same output) | damage (exit 1 named by every verb) | mixed | failed |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut total = Row::default();
    for (cat, r) in &rows {
        println!(
            "| `{cat}` | {} | {} | {} | {} | {} |",
            r.identical + r.damage + r.mixed + r.failed,
            r.identical,
            r.damage,
            r.mixed,
            r.failed
        );
        total.identical += r.identical;
        total.damage += r.damage;
        total.mixed += r.mixed;
        total.failed += r.failed;
    }
    println!(
        "| all | {} | {} | {} | {} | {} |",
        o.trials, total.identical, total.damage, total.mixed, total.failed
    );
    for f in failures.iter().take(20) {
        eprintln!("disktamper: FAILED: {f}");
    }
    Ok(failures.is_empty())
}

fn default_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("benchledger");
    bin.exists().then_some(bin)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        trials: 200,
        seed: benchledger::schema::time::now_utc_ns(),
        notes: 4_300,
        bin: PathBuf::new(),
        keep: None,
    };
    let mut bin = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--trials" => o.trials = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => o.seed = val().parse().unwrap_or_else(|_| usage()),
            "--notes" => o.notes = val().parse().unwrap_or_else(|_| usage()),
            "--bin" => bin = Some(PathBuf::from(val())),
            "--keep" => o.keep = Some(PathBuf::from(val())),
            _ => usage(),
        }
    }
    o.bin = match bin.or_else(default_bin) {
        Some(b) => b,
        None => {
            eprintln!("disktamper: FAILED: no benchledger binary next to this example; build it first (cargo build --no-default-features) or pass --bin PATH");
            std::process::exit(1);
        }
    };
    eprintln!(
        "disktamper: seed {}, {} trials, binary {}",
        o.seed,
        o.trials,
        o.bin.display()
    );
    match run(&o) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("disktamper: FAILED: {e}");
            std::process::exit(1);
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: disktamper [--trials N] [--seed S] [--notes N] [--bin PATH] [--keep DIR]");
    std::process::exit(2);
}
