//! Kill test: appends and ingests in a loop while a driver SIGKILLs the
//! writer at random moments; after every kill the ledger must verify, every
//! acknowledged append must be present with the hash (or, for an ingest, the
//! rows) it was acknowledged with, and no file may be half-ingested.
//!
//!     cargo run --no-default-features --example crashtest -- drive --kills 100 [--seed N]
//!         [--dir D] [--mode mixed|lib|cli] [--bin PATH] [--fresh-every 250]
//!
//! `drive` alternates, at random, between two writers:
//!
//! - `lib`: this program as `writer DIR SEED`, appending batches of 1..=32
//!   notes through the library and printing `ack SEQ HASH` for each record
//!   only after `append` returned (after sled's flush); killed after a random
//!   0..=150 ms.
//! - `cli`: this program as `cli-writer BIN DIR FILES SEED` in its own
//!   process group, running the real `benchledger` binary in a loop: `note`
//!   (some with idempotency keys, some repeated) and `ingest
//!   traces|decisions|usage|receipts|outcomes r1 FILE --json` of freshly
//!   generated JSON Lines files (each with bytes new to the ledger: 1..=64 rows drawn from
//!   `replay-tests/fixtures/bitrouter`). What the CLI printed after its
//!   commit is the acknowledgement. The whole group (the loop and the CLI it
//!   is running) is SIGKILLed after a random 0..=500 ms (plus 1 ms per 40
//!   records, since every CLI call replays the ledger first), so kills land in
//!   sled's open and recovery, the replay, the ingest's streaming parse,
//!   the transaction and the flush.
//!
//! After each kill the driver reopens the ledger and checks: `verify` finds
//! no damage (no torn tail: an unacknowledged partial write is never
//! visible as valid); every acknowledged note is present with its hash;
//! every acknowledged ingest has all its rows at the acknowledged seqs,
//! followed by the file's artifact record; and every file that left any
//! trace in the ledger is there completely (all rows 1..=N of the file and
//! its artifact, or nothing). A fresh ledger is started every
//! `--fresh-every` kills (default 250; `DIR`, `DIR.2`, ...) so the CLI's
//! replay stays short and kills keep landing in every phase. The seed is
//! printed; `--seed` replays the same choices (kill timing still depends on
//! the machine).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchledger::log::ledger::{Draft, Ledger};
use benchledger::schema::events::{Event, OperatorNoted};

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/ledger-schema/examples/manifest.toml"
);
const PRIVATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/ledger-schema/examples/manifest.private.toml"
);
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/replay-tests/fixtures/bitrouter"
);
const KINDS: [&str; 5] = ["traces", "decisions", "usage", "receipts", "outcomes"];

/// The crate's one seeded generator, enough for choosing delays.
type Rng = benchledger::rng::SplitMix64;

// ---------------------------------------------------------------------------
// Writers (children)

fn writer(dir: &Path, seed: u64) -> ! {
    let mut rng = Rng::new(seed);
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
        let mut b = ledger.batch(n).expect("batch");
        for d in batch {
            b.push(d).expect("push");
        }
        if b.seals().expect("open tail") {
            // The driver counts the kills that land between this line and
            // the acknowledgement: during an append that seals a segment.
            let mut out = stdout.lock();
            writeln!(out, "sealing").expect("stdout");
            out.flush().expect("stdout");
        }
        let done = b.commit().expect("append");
        let mut out = stdout.lock();
        for a in done {
            writeln!(out, "ack {} {}", a.seq, hex::encode(a.hash)).expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

/// The fixture rows of each kind.
fn fixture_rows() -> BTreeMap<&'static str, Vec<String>> {
    KINDS
        .iter()
        .map(|k| {
            let text = std::fs::read_to_string(format!("{FIXTURES}/{k}.jsonl"))
                .unwrap_or_else(|e| panic!("read fixture {k}: {e}"));
            (*k, text.lines().map(String::from).collect())
        })
        .collect()
}

fn cli(bin: &Path, dir: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env_remove("BENCHLEDGER_DIR")
        .env_remove("BENCHLEDGER_ACTOR")
        .env_remove("RUST_LOG")
        .arg("--ledger")
        .arg(dir)
        .args(["--lock-timeout", "60"]);
    c
}

/// The CLI in a loop: notes and ingests. Prints `ack SEQ HASH` for a note
/// and `ingest KIND BLAKE3 ROWS APPENDED FIRST LAST` for an ingest, each
/// after the CLI exited 0; `error ...` for anything else.
fn cli_writer(bin: &Path, dir: &Path, files: &Path, seed: u64) -> ! {
    let mut rng = Rng::new(seed);
    let rows = fixture_rows();
    let stdout = std::io::stdout();
    let mut keys: Vec<(String, String)> = Vec::new();
    // Every ingested file has content of its own: two files with the same
    // bytes share their artifact's idempotency key but not its path, and a
    // second one is refused (LEDGER-2, exit 3) by design. Files of earlier
    // (killed) writers of this ledger count too.
    let mut seen: std::collections::HashSet<String> = std::fs::read_dir(files)
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    let mut n = 0u64;
    loop {
        n += 1;
        let op = rng.below(10);
        if op < 4 {
            // A note; a quarter carry a key, and some repeat an earlier key
            // with its text (appends nothing, acknowledges the original).
            let mut c = cli(bin, dir);
            if !keys.is_empty() && rng.below(4) == 0 {
                let (text, key) = &keys[rng.below(keys.len() as u64) as usize];
                c.args(["note", text, "--json", "--idempotency-key", key]);
            } else {
                let text = format!("c{seed}-{n} {}", "y".repeat(rng.below(300) as usize));
                c.args(["note", &text, "--json"]);
                if rng.below(4) == 0 {
                    let key = format!("cli-{seed}-{n}");
                    c.args(["--idempotency-key", &key]);
                    keys.push((text, key));
                }
            }
            let out = c.output().expect("spawn benchledger");
            let mut o = stdout.lock();
            if !out.status.success() {
                let _ = writeln!(
                    o,
                    "error note exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                let _ = o.flush();
                std::process::exit(1);
            }
            let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("note --json");
            writeln!(o, "ack {} {}", j["seq"], j["hash"].as_str().unwrap_or("")).expect("stdout");
            o.flush().expect("stdout");
        } else {
            let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
            let pool = &rows[kind];
            let text = loop {
                let count = 1 + rng.below(64);
                let mut text = String::new();
                for _ in 0..count {
                    text.push_str(&pool[rng.below(pool.len() as u64) as usize]);
                    text.push('\n');
                }
                if seen.insert(text.clone()) {
                    break text;
                }
            };
            let path = files.join(format!("{seed}-{n}-{kind}.jsonl"));
            std::fs::write(&path, &text).expect("write ingest file");
            let out = cli(bin, dir)
                .args(["ingest", kind, "r1"])
                .arg(&path)
                .arg("--json")
                .output()
                .expect("spawn benchledger");
            let mut o = stdout.lock();
            if !out.status.success() {
                let _ = writeln!(
                    o,
                    "error ingest {kind} exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                let _ = o.flush();
                std::process::exit(1);
            }
            let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ingest --json");
            let seq = |k: &str| j[k].as_u64().map_or("-".to_string(), |s| s.to_string());
            writeln!(
                o,
                "ingest {kind} {} {} {} {} {}",
                j["file_blake3"].as_str().unwrap_or(""),
                j["rows"],
                j["appended"],
                seq("first_seq"),
                seq("last_seq")
            )
            .expect("stdout");
            o.flush().expect("stdout");
        }
    }
}

// ---------------------------------------------------------------------------
// The driver

/// What a writer acknowledged.
#[derive(Debug, Clone)]
enum Ack {
    /// A record at a seq with a hash.
    Record { seq: u64, hash: String },
    /// An ingest that appended `rows` rows at first..=last and its artifact.
    Ingest {
        kind: String,
        blake3: String,
        rows: u64,
        first: u64,
        last: u64,
    },
}

fn parse_ack(line: &str) -> Result<Option<Ack>, String> {
    let p: Vec<&str> = line.split(' ').collect();
    match p.as_slice() {
        ["sealing"] => Ok(None),
        ["ack", seq, hash] => Ok(Some(Ack::Record {
            seq: seq.parse().map_err(|_| format!("bad ack line {line:?}"))?,
            hash: hash.to_string(),
        })),
        ["ingest", kind, blake3, rows, appended, first, last] => {
            let num = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| format!("bad ingest line {line:?}"))
            };
            let (rows, appended) = (num(rows)?, num(appended)?);
            if appended == 0 {
                return Ok(None); // the same file again: nothing new
            }
            if appended != rows {
                return Err(format!(
                    "an ingest appended {appended} of {rows} rows: {line}"
                ));
            }
            Ok(Some(Ack::Ingest {
                kind: kind.to_string(),
                blake3: blake3.to_string(),
                rows,
                first: num(first)?,
                last: num(last)?,
            }))
        }
        _ if line.starts_with("error ") => Err(format!("a writer's command failed: {line}")),
        _ => Err(format!("unexpected writer output {line:?}")),
    }
}

/// Counters of one run.
#[derive(Default)]
struct Tally {
    lib_kills: u64,
    cli_kills: u64,
    acked_records: u64,
    acked_cli_notes: u64,
    acked_ingests: u64,
    acked_ingest_rows: u64,
    files_complete: u64,
    /// Kills of the library writer during an append that sealed the open
    /// tail into segments (after its `sealing` line, before its ack).
    kills_while_sealing: u64,
}

fn check_ack(ledger: &Ledger, ack: &Ack) -> Result<(), String> {
    match ack {
        Ack::Record { seq, hash } => {
            let v = ledger
                .read(*seq)
                .map_err(|e| format!("acknowledged seq {seq} lost: {e}"))?;
            if hex::encode(v.hash) != *hash {
                return Err(format!("acknowledged seq {seq} has another hash"));
            }
        }
        Ack::Ingest {
            kind,
            blake3,
            rows,
            first,
            last,
        } => {
            if last + 1 - first != *rows {
                return Err(format!("ingest ack {first}..={last} is not {rows} rows"));
            }
            for (i, seq) in (*first..=*last).enumerate() {
                let v = ledger
                    .read(seq)
                    .map_err(|e| format!("acknowledged ingest row at seq {seq} lost: {e}"))?;
                let want = format!("{kind}:{}:{}", &blake3[..32], i + 1);
                if v.decoded.record.idempotency_key.as_deref() != Some(want.as_str()) {
                    return Err(format!(
                        "seq {seq} is not row {} of the acknowledged {kind} file {blake3}",
                        i + 1
                    ));
                }
            }
            let v = ledger.read(last + 1).map_err(|e| {
                format!(
                    "acknowledged ingest's artifact at seq {} lost: {e}",
                    last + 1
                )
            })?;
            match &v.decoded.event {
                Event::ArtifactRecorded(a) if a.blake3 == *blake3 => {}
                other => {
                    return Err(format!(
                        "seq {} is {}, not the artifact of {blake3}",
                        last + 1,
                        other.kind()
                    ))
                }
            }
        }
    }
    Ok(())
}

/// A present projection checkpoint equals the replay of the log up to its
/// seq (or is ignored as unusable); never a different state.
fn check_checkpoint(ledger: &Ledger) -> Result<(), String> {
    match benchledger::method::checkpointed::check(ledger) {
        Ok(benchledger::log::checkpoint::Check::Differs { seq }) => Err(format!(
            "the projection checkpoint at seq {seq} differs from the replay of the log"
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("checkpoint check: {e}")),
    }
}

/// Every ingested file visible in records `from..` is there completely: rows
/// 1..=N (N = the file's lines) and its artifact, or nothing.
fn check_files_atomic(ledger: &Ledger, from: u64, tally: &mut Tally) -> Result<(), String> {
    // file key prefix -> (row lines seen, artifact (path, blake3))
    type Seen = (Vec<u64>, Option<(String, String)>);
    let mut files: BTreeMap<String, Seen> = BTreeMap::new();
    let records = ledger
        .records_from(from)
        .map_err(|e| format!("read from {from}: {e}"))?;
    for v in records {
        let v = v.map_err(|e| format!("read: {e}"))?;
        let key = v.decoded.record.idempotency_key.clone().unwrap_or_default();
        if let Event::ArtifactRecorded(a) = &v.decoded.event {
            if let Some(kind) = a.role.strip_prefix("bitrouter_") {
                let prefix = format!("{kind}:{}", &a.blake3[..32]);
                files.entry(prefix).or_default().1 = Some((a.path.clone(), a.blake3.clone()));
            }
            continue;
        }
        let mut parts = key.rsplitn(2, ':');
        if let (Some(line), Some(prefix)) = (parts.next(), parts.next()) {
            if KINDS.iter().any(|k| prefix.starts_with(&format!("{k}:"))) {
                let line: u64 = line.parse().map_err(|_| format!("row key {key:?}"))?;
                files.entry(prefix.to_string()).or_default().0.push(line);
            }
        }
    }
    for (prefix, (lines, artifact)) in files {
        let Some((path, blake3)) = artifact else {
            return Err(format!(
                "file {prefix}: {} rows without the file's artifact (a partial ingest)",
                lines.len()
            ));
        };
        let text = std::fs::read(&path).map_err(|e| format!("read {path}: {e}"))?;
        if blake3::hash(&text).to_hex().as_str() != blake3 {
            return Err(format!("{path} changed since it was ingested"));
        }
        let n = text.iter().filter(|b| **b == b'\n').count() as u64;
        let want: Vec<u64> = (1..=n).collect();
        if lines != want {
            return Err(format!(
                "file {path}: rows {} of {n} present (a partial ingest)",
                lines.len()
            ));
        }
        tally.files_complete += 1;
    }
    Ok(())
}

/// Kills a process group (the cli writer and the CLI it runs).
fn kill_group(pgid: u32) -> Result<(), String> {
    let st = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("run kill: {e}"))?;
    // The group may already be gone (the writer exited on an error).
    let _ = st;
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Mixed,
    Lib,
    Cli,
}

fn setup(dir: &Path, bin: Option<&Path>) -> Result<(), String> {
    if Ledger::exists(dir) {
        return Ok(());
    }
    match bin {
        None => {
            Ledger::create(dir, Duration::from_secs(5), [7; 16], "crashtest", 0)
                .map_err(|e| e.to_string())?;
        }
        Some(bin) => {
            for args in [
                vec!["init".to_string()],
                vec![
                    "manifest".into(),
                    "freeze".into(),
                    MANIFEST.into(),
                    "--private".into(),
                    PRIVATE.into(),
                ],
            ] {
                let out = cli(bin, dir)
                    .args(&args)
                    .output()
                    .map_err(|e| format!("run {}: {e}", bin.display()))?;
                if !out.status.success() {
                    return Err(format!(
                        "setup {args:?}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
            record_r1_opened(dir)?;
        }
    }
    Ok(())
}

/// r1's daemon start as a recorded fact, so the ingests bind to it (GATE-4:
/// evidence binds only to a group whose `group open` is recorded). The
/// order of `group open` itself (LINEAGE-1/2) is not what this test kills.
fn record_r1_opened(dir: &Path) -> Result<(), String> {
    let opened = Event::GroupOpened(benchledger::testkit::examples::daemon_start("r1"));
    let ledger = Ledger::open(dir, Duration::from_secs(30)).map_err(|e| e.to_string())?;
    ledger
        .append(
            &[Draft {
                actor: "crashtest".into(),
                event: opened,
                idempotency_key: None,
            }],
            benchledger::schema::time::now_utc_ns(),
        )
        .map_err(|e| format!("record r1 opened: {e}"))?;
    Ok(())
}

fn drive(
    kills: u64,
    seed: u64,
    base: PathBuf,
    mode: Mode,
    bin: Option<PathBuf>,
    fresh_every: u64,
) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut ledgers = 0u64;
    let mut dir = base.clone();
    let mut files = PathBuf::new();
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let mut acks: Vec<Ack> = Vec::new();
    let mut checked_to = 0u64; // records below this seq were checked for atomic files
    let start = Instant::now();
    for k in 0..kills {
        if k % fresh_every == 0 {
            // A fresh ledger every `fresh_every` kills keeps the CLI's replay
            // short, so kills keep landing in every phase of an append.
            ledgers += 1;
            if ledgers > 1 {
                dir = PathBuf::from(format!("{}.{ledgers}", base.display()));
            }
            setup(&dir, bin.as_deref())?;
            files = dir.with_extension("files");
            std::fs::create_dir_all(&files)
                .map_err(|e| format!("create {}: {e}", files.display()))?;
            acks.clear();
            checked_to = 0;
        }
        let child_seed = rng.next_u64();
        let cli_mode = match mode {
            Mode::Lib => false,
            Mode::Cli => true,
            Mode::Mixed => rng.below(2) == 0,
        };
        let mut cmd = Command::new(&exe);
        let delay_ms = if cli_mode {
            let bin = bin.as_ref().expect("cli mode has a binary");
            cmd.arg("cli-writer")
                .arg(bin)
                .arg(&dir)
                .arg(&files)
                .process_group(0);
            tally.cli_kills += 1;
            // Each CLI call replays the ledger first: give it time in
            // proportion, so kills still land after the replay.
            rng.below(501 + checked_to / 40)
        } else {
            cmd.arg("writer");
            cmd.arg(&dir);
            tally.lib_kills += 1;
            rng.below(151)
        };
        let mut child = cmd
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
                .collect::<Vec<String>>()
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        if cli_mode {
            kill_group(child.id())?;
        } else {
            child.kill().map_err(|e| format!("kill: {e}"))?; // SIGKILL
        }
        child.wait().map_err(|e| e.to_string())?;
        let lines = reader.join().map_err(|_| "reader panicked".to_string())?;
        if lines.last().is_some_and(|l| l == "sealing") {
            tally.kills_while_sealing += 1;
        }
        let ctx = |e: String| format!("kill {k} (seed {seed}): {e}");
        for l in &lines {
            match parse_ack(l).map_err(ctx)? {
                Some(a @ Ack::Record { .. }) => {
                    tally.acked_records += 1;
                    tally.acked_cli_notes += u64::from(cli_mode);
                    acks.push(a);
                }
                Some(a @ Ack::Ingest { rows, .. }) => {
                    tally.acked_ingests += 1;
                    tally.acked_ingest_rows += rows;
                    acks.push(a);
                }
                None => {}
            }
        }
        let ledger =
            Ledger::open(&dir, Duration::from_secs(60)).map_err(|e| ctx(format!("reopen: {e}")))?;
        let report = ledger.verify().map_err(|e| ctx(format!("verify: {e}")))?;
        if let Some(d) = report.damage {
            return Err(ctx(format!("verify found damage: {d}")));
        }
        for a in &acks {
            check_ack(&ledger, a).map_err(ctx)?;
        }
        check_files_atomic(&ledger, checked_to, &mut tally).map_err(ctx)?;
        checked_to = report.records;
        // A killed CLI writer never leaves a projection checkpoint that
        // differs from the replay of the log (every 10th kill: it replays).
        if (k + 1) % 10 == 0 {
            check_checkpoint(&ledger).map_err(ctx)?;
        }
        // Keep the check cost flat: every ack was proven present; sample
        // the older ones from now on.
        if acks.len() > 2_000 {
            let keep: Vec<_> = acks.iter().step_by(acks.len() / 500).cloned().collect();
            acks = keep;
        }
        if (k + 1) % 10 == 0 {
            eprintln!(
                "crashtest: {} kills ({} lib, {} cli), {} acknowledged records, {} acknowledged ingests, head {}",
                k + 1,
                tally.lib_kills,
                tally.cli_kills,
                tally.acked_records,
                tally.acked_ingests,
                report.records - 1
            );
        }
    }
    let mut records = 0;
    for n in 1..=ledgers {
        let d = if n == 1 {
            base.clone()
        } else {
            PathBuf::from(format!("{}.{n}", base.display()))
        };
        let ledger = Ledger::open(&d, Duration::from_secs(60)).map_err(|e| e.to_string())?;
        let report = ledger.verify().map_err(|e| e.to_string())?;
        if let Some(d) = report.damage {
            return Err(format!("final verify: {d}"));
        }
        check_checkpoint(&ledger)?;
        records += report.records;
    }
    println!(
        "crashtest: seed {seed}: {kills} kills survived ({} lib writer, {} of them during an append that sealed segments; {} cli writer) over {ledgers} ledger(s); {} acknowledged records ({} of them cli notes) and {} acknowledged ingests ({} rows) all present with their hashes and rows; {} ingested files complete, none partial; {records} records verify; {:.1} s",
        tally.lib_kills,
        tally.kills_while_sealing,
        tally.cli_kills,
        tally.acked_records,
        tally.acked_cli_notes,
        tally.acked_ingests,
        tally.acked_ingest_rows,
        tally.files_complete,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The benchledger binary next to this example (target/<profile>/benchledger).
fn default_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("benchledger");
    bin.exists().then_some(bin)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("writer") if args.len() == 3 => {
            writer(Path::new(&args[1]), args[2].parse().expect("seed"))
        }
        Some("cli-writer") if args.len() == 5 => cli_writer(
            Path::new(&args[1]),
            Path::new(&args[2]),
            Path::new(&args[3]),
            args[4].parse().expect("seed"),
        ),
        Some("drive") => {
            let mut kills = 50;
            let mut seed = benchledger::schema::time::now_utc_ns();
            let mut dir: Option<PathBuf> = None;
            let mut mode = Mode::Mixed;
            let mut bin: Option<PathBuf> = None;
            let mut fresh_every = 250u64;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                let mut val = || it.next().cloned().unwrap_or_else(|| usage());
                match a.as_str() {
                    "--kills" => kills = val().parse().unwrap_or_else(|_| usage()),
                    "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
                    "--dir" => dir = Some(PathBuf::from(val())),
                    "--bin" => bin = Some(PathBuf::from(val())),
                    "--fresh-every" => {
                        fresh_every = val().parse::<u64>().unwrap_or_else(|_| usage()).max(1)
                    }
                    "--mode" => {
                        mode = match val().as_str() {
                            "mixed" => Mode::Mixed,
                            "lib" => Mode::Lib,
                            "cli" => Mode::Cli,
                            _ => usage(),
                        }
                    }
                    _ => usage(),
                }
            }
            let bin = match mode {
                Mode::Lib => None,
                _ => match bin.or_else(default_bin) {
                    Some(b) => Some(b),
                    None => {
                        eprintln!("crashtest: FAILED: no benchledger binary next to this example; build it first (cargo build --no-default-features) or pass --bin PATH");
                        std::process::exit(1);
                    }
                },
            };
            let tmp = tempfile::tempdir().expect("temp dir");
            let dir = dir.unwrap_or_else(|| tmp.path().join("ledger"));
            eprintln!(
                "crashtest: seed {seed}, {kills} kills, ledger {}{}",
                dir.display(),
                bin.as_ref()
                    .map_or(String::new(), |b| format!(", cli {}", b.display()))
            );
            if let Err(e) = drive(kills, seed, dir, mode, bin, fresh_every) {
                eprintln!("crashtest: FAILED: {e}");
                std::process::exit(1);
            }
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: crashtest drive [--kills N] [--seed N] [--dir DIR] [--mode mixed|lib|cli] [--bin PATH] [--fresh-every N]\n       crashtest writer DIR SEED | crashtest cli-writer BIN DIR FILES SEED"
    );
    std::process::exit(2);
}
