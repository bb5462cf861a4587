//! benchledger's benchmark (issue #9): every figure from one run, side by
//! side, as ratios, because these machines are noisy.
//!
//!     cargo build --release --no-default-features                   # the CLI it measures
//!     cargo bench -p benchledger-bench                              # everything
//!     cargo bench -p benchledger-bench -- replay cli                # some sections
//!
//! Sections: `ingest` (durable batched ingest vs raw sled vs SQLite WAL),
//! `sled` (raw sled's open and scan by item size: what chose the store's
//! layout), `open` (`Ledger::open` at each scale),
//! `cli` (one durable append through the CLI vs process start + one fsync),
//! `verify` (records/s vs raw BLAKE3 over the same bytes), `replay` (every
//! projection at 15k, 150k and 1.5M events, peak RSS of a child per scale),
//! `decide` (`case start` on a 150k-event ledger, in-process breakdown and
//! end to end). Options: `--work DIR` (default `$CARGO_TARGET_DIR/bench-work`;
//! generated ledgers are kept there and reused), `--fresh` (regenerate),
//! `--rows N` (ingest rows, 100000), `--batch B` (1000), `--rounds R` (3),
//! `--runs K` (CLI runs, 50), `--scales 15k,150k,1.5m`.
//!
//! Every measurement that reports memory runs in its own child process
//! (this program re-executed as `child ...`) and reads its own VmHWM.
//! Without `--bench` (that is, under `cargo test -p benchledger-bench --benches`) the program
//! runs every section once at a tiny scale and checks nothing but that it
//! works: a smoke run, never a timed test. See tools/BENCHMARKS.md.

mod baselines;
mod gen;
mod run;
mod util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchledger::log::chain::{link_hash, Walker, ZERO_HASH};
use benchledger::log::ledger::{Draft, Ledger};
use benchledger::log::record::Record;
use benchledger::log::store::Store;
use benchledger::schema::events::{CaseRef, Event, OperatorNoted};
use serde_json::{json, Value};

use util::{child, emit, median, mib, percentile, si, vm_hwm_kib};

/// Bumped whenever the generator's output changes: older kept ledgers are
/// regenerated.
const GEN_VERSION: u32 = 2;
const LOCK: Duration = Duration::from_secs(30);

struct Opts {
    sections: Vec<String>,
    work: PathBuf,
    fresh: bool,
    rows: usize,
    batch: usize,
    rounds: usize,
    runs: usize,
    scales: Vec<gen::Scale>,
    /// The scale the CLI, verify and decide sections use.
    main_scale: gen::Scale,
    bin: PathBuf,
    /// The old driver's binary, for `run` side by side (`--old-bin`).
    old_bin: Option<PathBuf>,
    smoke: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return run_child(&args[1..]);
    }
    let opts = parse(&args);
    if !opts.bin.is_file() {
        eprintln!(
            "bench: {} does not exist: build the CLI of the same profile first (cargo build --no-default-features [--release]) or pass --bin",
            opts.bin.display()
        );
        std::process::exit(2);
    }
    std::fs::create_dir_all(&opts.work).expect("work dir");
    let mut results = serde_json::Map::new();
    results.insert("machine".into(), machine());
    println!(
        "# benchledger bench: {}\n",
        if opts.smoke {
            "smoke run (tiny scale)"
        } else {
            "full run"
        }
    );
    println!(
        "work dir {}; benchledger binary {}\n",
        opts.work.display(),
        opts.bin.display()
    );
    let want = |s: &str| opts.sections.is_empty() || opts.sections.iter().any(|x| x == s);
    let t = Instant::now();
    let ledgers = if want("replay")
        || want("cli")
        || want("verify")
        || want("decide")
        || want("open")
        || want("tlog")
        || want("tiles")
    {
        ensure_ledgers(&opts)
    } else {
        Vec::new()
    };
    if want("ingest") {
        results.insert("ingest".into(), section_ingest(&opts));
    }
    if want("sled") {
        results.insert("sled".into(), section_sled(&opts));
    }
    if want("open") {
        results.insert("open".into(), section_open(&opts, &ledgers));
    }
    if want("cli") {
        results.insert(
            "cli".into(),
            section_cli(&opts, main_ledger(&opts, &ledgers)),
        );
    }
    if want("verify") {
        results.insert(
            "verify".into(),
            section_verify(&opts, main_ledger(&opts, &ledgers)),
        );
    }
    if want("replay") {
        results.insert("replay".into(), section_replay(&ledgers));
    }
    if want("decide") {
        results.insert(
            "decide".into(),
            section_decide(&opts, main_ledger(&opts, &ledgers)),
        );
    }
    if want("tlog") {
        results.insert(
            "tlog".into(),
            section_tlog(&opts, main_ledger(&opts, &ledgers)),
        );
    }
    if want("tiles") {
        results.insert("tiles".into(), section_tiles(&opts, &ledgers));
    }
    if want("run") {
        results.insert("run".into(), section_run(&opts));
    }
    if opts.sections.iter().any(|x| x == "crash") {
        results.insert("crash".into(), section_crash(&opts));
    }
    let out = opts.work.join("results.json");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&Value::Object(results)).expect("json"),
    )
    .expect("write results");
    println!(
        "\nall sections in {:.0} s; results in {}",
        t.elapsed().as_secs_f64(),
        out.display()
    );
}

/// `run` (issue 27): the new binary and, with `--old-bin`, the old one.
fn section_run(opts: &Opts) -> Value {
    let mut bins = vec![("new", opts.bin.clone())];
    if let Some(old) = &opts.old_bin {
        bins.push(("old", old.clone()));
    }
    run::section(&run::RunOpts {
        work: &opts.work,
        bins,
        cases: if opts.smoke { 6 } else { 200 },
        concurrency: if opts.smoke { 2 } else { 8 },
        unit_sec: if opts.smoke { 0.01 } else { 0.15 },
        pads: if opts.smoke {
            vec![100]
        } else {
            vec![15_000, 150_000, 1_500_000]
        },
        idle_sec: if opts.smoke { 1.0 } else { 30.0 },
        notes: if opts.smoke { 3 } else { 100 },
    })
}

fn usage() -> ! {
    eprintln!(
        "usage: ledger [ingest|sled|open|cli|verify|replay|decide|tlog|run|crash]... [--work DIR] [--fresh] [--rows N] [--batch B] \
         [--rounds R] [--runs K] [--scales 15k,150k,1.5m] [--bin BENCHLEDGER] [--old-bin BENCHLEDGER]"
    );
    std::process::exit(2);
}

fn parse(args: &[String]) -> Opts {
    let smoke = !args.iter().any(|a| a == "--bench");
    // target/<profile>/deps/<this bench>: the work dir sits in target/.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            default_bin()
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("target"))
        });
    let mut o = Opts {
        sections: Vec::new(),
        work: target.join(if smoke { "bench-smoke" } else { "bench-work" }),
        fresh: smoke,
        rows: if smoke { 2_000 } else { 100_000 },
        batch: if smoke { 200 } else { 1_000 },
        rounds: if smoke { 1 } else { 3 },
        runs: if smoke { 3 } else { 50 },
        scales: if smoke {
            vec![gen::SMOKE]
        } else {
            gen::SCALES.to_vec()
        },
        main_scale: if smoke { gen::SMOKE } else { gen::SCALES[1] },
        bin: default_bin(),
        old_bin: None,
        smoke,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--bench" => {}
            "--work" => o.work = PathBuf::from(val()),
            "--fresh" => o.fresh = true,
            "--old-bin" => o.old_bin = Some(PathBuf::from(val())),
            "--rows" => o.rows = val().parse().unwrap_or_else(|_| usage()),
            "--batch" => o.batch = val().parse().unwrap_or_else(|_| usage()),
            "--rounds" => o.rounds = val().parse().unwrap_or_else(|_| usage()),
            "--runs" => o.runs = val().parse().unwrap_or_else(|_| usage()),
            "--bin" => o.bin = PathBuf::from(val()),
            "--scales" => {
                o.scales = val()
                    .split(',')
                    .map(|s| gen::scale(s).unwrap_or_else(|| usage()))
                    .collect();
                if !o.scales.iter().any(|s| s.name == o.main_scale.name) {
                    o.main_scale = o.scales[o.scales.len().min(2) / 2];
                }
            }
            s if !s.starts_with('-') => o.sections.push(s.to_string()),
            _ => usage(),
        }
    }
    o
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.to_string()))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    println!("machine: {cpu}, {cores} cores, {mem}, kernel {kernel}\n");
    json!({ "cpu": cpu, "cores": cores, "mem": mem, "kernel": kernel })
}

// ---------------------------------------------------------------------------
// Generated ledgers
// ---------------------------------------------------------------------------

struct Generated {
    scale: gen::Scale,
    dir: PathBuf,
    events: u64,
    open: gen::OpenWork,
}

fn main_ledger<'a>(opts: &Opts, ledgers: &'a [Generated]) -> &'a Generated {
    ledgers
        .iter()
        .find(|g| g.scale.name == opts.main_scale.name)
        .unwrap_or_else(|| ledgers.last().expect("a generated ledger"))
}

fn ensure_ledgers(opts: &Opts) -> Vec<Generated> {
    println!("## Generated ledgers\n");
    println!("| scale | lineages | class | cases | events | on disk | generated in |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut scales = opts.scales.clone();
    if !scales.iter().any(|s| s.name == opts.main_scale.name) {
        scales.push(opts.main_scale);
    }
    let mut out = Vec::new();
    for s in scales {
        let dir = opts.work.join(format!("ledger-{}", s.name));
        let marker = opts.work.join(format!("ledger-{}.json", s.name));
        let kept: Option<Value> = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .filter(|v: &Value| {
                v["gen_version"] == GEN_VERSION && v["crate"] == env!("CARGO_PKG_VERSION")
            });
        let (v, how) = match kept {
            Some(v) if !opts.fresh && Ledger::exists(&dir) => (v, "kept".to_string()),
            _ => {
                let _ = std::fs::remove_dir_all(&dir);
                let _ = std::fs::remove_file(&marker);
                let mut v = child(&["gen", s.name, &dir.display().to_string()]);
                v["gen_version"] = json!(GEN_VERSION);
                v["crate"] = json!(env!("CARGO_PKG_VERSION"));
                std::fs::write(&marker, v.to_string()).expect("marker");
                let how = format!("{:.0} s", v["secs"].as_f64().unwrap_or(0.0));
                (v, how)
            }
        };
        let events = v["events"].as_u64().unwrap_or(0);
        let cases = (s.tasks * s.trials * 4 + gen::CONCURRENCY) * s.lineages;
        println!(
            "| {} | {} | {} | {} | {} | {:.0} MiB | {} |",
            s.name,
            s.lineages,
            s.class,
            cases,
            events,
            util::du_bytes(&dir) as f64 / 1048576.0,
            how
        );
        let open = gen::OpenWork {
            lineage: v["open"]["lineage"].as_str().unwrap_or("").into(),
            group: v["open"]["group"].as_str().unwrap_or("").into(),
            cases: v["open"]["cases"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str())
                        .map(parse_case)
                        .collect()
                })
                .unwrap_or_default(),
        };
        out.push(Generated {
            scale: s,
            dir,
            events,
            open,
        });
    }
    println!();
    out
}

fn parse_case(s: &str) -> CaseRef {
    let (task, trial) = s.split_once('/').expect("task/trial");
    CaseRef {
        task: task.into(),
        trial: trial.into(),
        replacement: 0,
    }
}

// ---------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------

fn section_ingest(opts: &Opts) -> Value {
    let (record, payload) = baselines::usage_record_bytes();
    println!("## Durable batched ingest\n");
    println!(
        "{} usage rows (record {record} B: payload {payload} B + header with the row key; stored value {} B), \
         median of {} interleaved rounds, each run a fresh store in its own process.\n",
        opts.rows,
        record + 64,
        opts.rounds
    );
    let mut batches = vec![opts.batch];
    if opts.rows != opts.batch {
        batches.push(opts.rows); // one file = one append, as `ingest usage` does
    }
    let mut out = Vec::new();
    println!(
        "| batch | system | rows/s | MB/s of records | time vs ledger | peak RSS (workload held) |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for &b in &batches {
        let mut secs: [Vec<f64>; 3] = Default::default();
        let mut rss = [0u64; 3];
        let mut base = [0u64; 3];
        let mut bytes = 0u64;
        let systems = ["ledger", "sled", "sqlite"];
        for _ in 0..opts.rounds {
            for (i, sys) in systems.iter().enumerate() {
                let dir = opts.work.join(format!("ingest-{sys}"));
                let _ = std::fs::remove_dir_all(&dir);
                let v = child(&[
                    "ingest",
                    sys,
                    &dir.display().to_string(),
                    &opts.rows.to_string(),
                    &b.to_string(),
                ]);
                secs[i].push(v["secs"].as_f64().unwrap_or(f64::NAN));
                rss[i] = rss[i].max(v["rss_kib"].as_u64().unwrap_or(0));
                base[i] = base[i].max(v["base_kib"].as_u64().unwrap_or(0));
                bytes = v["record_bytes"].as_u64().unwrap_or(bytes);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let med: Vec<f64> = secs.iter().map(|s| median(s)).collect();
        for (i, sys) in systems.iter().enumerate() {
            println!(
                "| {b} | {} | {} | {:.1} | {:.2}x | {:.0} MiB ({:.0}) |",
                match *sys {
                    "ledger" =>
                        "benchledger (Batch: guard, encode, chain; CAS on the head; flush + fsync)",
                    "sled" => "raw sled (same bytes, plain inserts, one flush + fsync per batch)",
                    _ => "SQLite WAL synchronous=FULL + BLAKE3 chain column",
                },
                si(opts.rows as f64 / med[i]),
                bytes as f64 / med[i] / 1e6,
                med[i] / med[0],
                mib(rss[i]),
                mib(base[i])
            );
        }
        let vs_sled = med[1] / med[0];
        let vs_sqlite = med[2] / med[0];
        out.push(json!({
            "batch": b, "rows": opts.rows, "record_bytes": bytes,
            "secs": { "ledger": secs[0], "sled": secs[1], "sqlite": secs[2] },
            "median_secs": med, "rss_kib": rss, "base_kib": base,
            "ledger_vs_sled": vs_sled, "ledger_vs_sqlite": vs_sqlite,
        }));
        println!(
            "\nbatch {b}: ledger throughput = **{vs_sled:.2}x raw sled** (target >= 0.8) and **{vs_sqlite:.2}x SQLite WAL** (target >= 2)\n"
        );
        if b == batches[0] {
            println!("| batch | system | rows/s | MB/s of records | time vs ledger | peak RSS (workload held) |");
            println!("| --- | --- | --- | --- | --- | --- |");
        }
    }
    json!(out)
}

fn section_cli(opts: &Opts, g: &Generated) -> Value {
    println!("## One durable append through the CLI\n");
    let dir = opts.work.join("cli-ledger");
    util::copy_dir(&g.dir, &dir);
    let floor_file = opts.work.join("floor.dat");
    // warm both binaries and the page cache
    for _ in 0..3 {
        spawn_timed(
            &opts.bin,
            &["--ledger", &dir.display().to_string(), "note", "warm-up"],
        );
        spawn_self_timed(&["child", "floor", &floor_file.display().to_string()]);
    }
    let mut cli = Vec::new();
    let mut floor = Vec::new();
    for i in 0..opts.runs {
        floor.push(spawn_self_timed(&[
            "child",
            "floor",
            &floor_file.display().to_string(),
        ]));
        cli.push(spawn_timed(
            &opts.bin,
            &[
                "--ledger",
                &dir.display().to_string(),
                "note",
                &format!("bench note {i}"),
            ],
        ));
    }
    let parts = child(&["open-append", &dir.display().to_string()]);
    let (c50, c99, f50, f99) = (
        percentile(&cli, 50.0),
        percentile(&cli, 99.0),
        percentile(&floor, 50.0),
        percentile(&floor, 99.0),
    );
    println!(
        "`benchledger note` on a copy of the {} ledger ({} events), {} runs interleaved with the floor \
         (this program re-executed: process start, write 256 B, fsync, exit).\n",
        g.scale.name, g.events, opts.runs
    );
    println!("| | p50 | p99 |");
    println!("| --- | --- | --- |");
    println!(
        "| `benchledger note` (start to acknowledged flush + fsync, exit) | {:.1} ms | {:.1} ms |",
        c50 * 1e3,
        c99 * 1e3
    );
    println!(
        "| floor: process start + one fsync of a small file | {:.1} ms | {:.1} ms |",
        f50 * 1e3,
        f99 * 1e3
    );
    println!(
        "\nin-process parts of the same append: Ledger::open {:.1} ms (sled recovery), head check {:.2} ms, \
         append + flush {:.1} ms, drop {:.1} ms; a bare fsync here takes {:.1} ms\n",
        parts["open_ms"].as_f64().unwrap_or(0.0),
        parts["head_ms"].as_f64().unwrap_or(0.0),
        parts["append_ms"].as_f64().unwrap_or(0.0),
        parts["drop_ms"].as_f64().unwrap_or(0.0),
        parts["fsync_ms"].as_f64().unwrap_or(0.0),
    );
    println!("CLI p50 = **{:.2}x the floor** (target <= 2)\n", c50 / f50);
    let _ = std::fs::remove_dir_all(&dir);
    json!({ "events": g.events, "runs": opts.runs, "cli_secs": cli, "floor_secs": floor,
            "cli_p50": c50, "cli_p99": c99, "floor_p50": f50, "floor_p99": f99, "ratio_p50": c50 / f50, "parts": parts })
}

/// `Ledger::open` for one append on each generated ledger, in fresh
/// processes: it must not grow with the ledger (issue 22).
fn section_open(opts: &Opts, ledgers: &[Generated]) -> Value {
    println!("## `Ledger::open` by ledger size\n");
    println!(
        "`Ledger::open` (lock, head witness, sled's recovery of `sled/`; the index is not opened), then `head()` \
         (the head record's link and the witness), then drop; {} fresh processes per ledger, median.\n",
        opts.runs.min(9)
    );
    println!("| scale | events | open | head check | drop |");
    println!("| --- | --- | --- | --- | --- |");
    let mut out = Vec::new();
    for g in ledgers {
        let runs: Vec<Value> = (0..opts.runs.min(9))
            .map(|_| child(&["open", &g.dir.display().to_string()]))
            .collect();
        let med = |k: &str| {
            median(
                &runs
                    .iter()
                    .map(|v| v[k].as_f64().unwrap_or(0.0))
                    .collect::<Vec<_>>(),
            )
        };
        println!(
            "| {} | {} | {:.1} ms | {:.2} ms | {:.1} ms |",
            g.scale.name,
            g.events,
            med("open_ms"),
            med("head_ms"),
            med("drop_ms")
        );
        out.push(
            json!({ "scale": g.scale.name, "events": g.events, "open_ms": med("open_ms"),
                         "head_ms": med("head_ms"), "drop_ms": med("drop_ms"), "runs": runs }),
        );
    }
    // The floor of any store kept in sled: opening a raw sled database of
    // one item (what a small head/tail tree kept apart would cost at best).
    let tiny = opts.work.join("sled-one-item");
    if !tiny.exists() {
        child(&["sled-build", &tiny.display().to_string(), "1", "512"]);
    }
    let tiny_ms: Vec<f64> = (0..opts.runs.min(9))
        .map(|_| {
            child(&["sled-open", &tiny.display().to_string()])["open_ms"]
                .as_f64()
                .unwrap_or(0.0)
        })
        .collect();
    println!(
        "| raw sled, one item of 512 B (any sled open's floor) | 1 | {:.1} ms | - | - |",
        median(&tiny_ms)
    );
    out.push(json!({ "scale": "raw sled, one item", "events": 1, "open_ms": median(&tiny_ms), "runs": tiny_ms }));
    println!();
    json!(out)
}

/// sled 0.34's own cost per item, measured on raw sled databases of about
/// the same bytes held as many small items or as few large ones: what
/// chose the store's layout (segments of at most 7 KiB, read by `get`).
fn section_sled(opts: &Opts) -> Value {
    println!("## sled 0.34 by item size\n");
    let total = if opts.smoke { 2_000_000 } else { 80_000_000 };
    let configs: [(usize, &str); 4] = [
        (512, "one record per item (layout 1)"),
        (7_000, "a segment of at most 7 KiB per item (layout 2)"),
        (
            64_000,
            "a segment of at most 64 KiB per item (leaves become blob files)",
        ),
        (512 * 100, "100x fewer items of 100x the size"),
    ];
    println!(
        "Raw sled databases of about {} MB each (plain inserts, a flush per 1,000), then in fresh processes: \
         `open` (median of 5) and a scan of every value by sled's iterator and by `get` of each key, with the \
         scan's peak RSS. sled re-reads its whole active log segment at every open, blob files included, and \
         its iterator keeps what it read alive.\n",
        total / 1_000_000
    );
    println!("| items | item | what | open | iterator scan | its peak RSS | `get` scan | its peak RSS | blob files |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut out = Vec::new();
    for (bytes, what) in configs {
        let items = total / bytes;
        let dir = opts.work.join(format!("sled-{bytes}"));
        let _ = std::fs::remove_dir_all(&dir);
        child(&[
            "sled-build",
            &dir.display().to_string(),
            &items.to_string(),
            &bytes.to_string(),
        ]);
        let opens: Vec<f64> = (0..5)
            .map(|_| {
                child(&["sled-open", &dir.display().to_string()])["open_ms"]
                    .as_f64()
                    .unwrap_or(0.0)
            })
            .collect();
        let iter = child(&["sled-scan", &dir.display().to_string(), "iter"]);
        let get = child(&["sled-scan", &dir.display().to_string(), "get"]);
        let blobs = std::fs::read_dir(dir.join("blobs")).map_or(0, |d| d.count());
        println!(
            "| {items} | {bytes} B | {what} | {:.1} ms | {:.3} s | {:.0} MiB | {:.3} s | {:.0} MiB | {blobs} |",
            median(&opens),
            iter["secs"].as_f64().unwrap_or(0.0),
            mib(iter["rss_kib"].as_u64().unwrap_or(0)),
            get["secs"].as_f64().unwrap_or(0.0),
            mib(get["rss_kib"].as_u64().unwrap_or(0)),
        );
        out.push(json!({ "items": items, "bytes": bytes, "open_ms": opens, "iter": iter, "get": get, "blobs": blobs }));
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!();
    json!(out)
}

/// TRUST-1, TRUST-2 on a copy of the main ledger: signed checkpoints
/// (`checkpoint sign` derives the tree by a verified walk of every record
/// and rewrites the node cache), and proofs read from that cache (O(log n)
/// node reads, plus opening the ledger and the frozen keys), each a fresh
/// process.
/// Writes the example operator key (the one the generated lineages'
/// manifests list, TRUST-5) to `path`, owner-only; returns its verifier key.
fn example_key(path: &Path) -> String {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let signer = benchledger::testkit::examples::signer("alice");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("write the example key");
    std::io::Write::write_all(&mut f, format!("{}\n", signer.encode()).as_bytes())
        .expect("write the example key");
    signer.verifier().encode()
}

/// TRUST-8 at every scale: `export --tiles` (a checkpoint signed first,
/// then every tile and bundle written) and `verify --tiles` (every tile,
/// bundle and record re-checked), each a fresh process, against `verify`
/// of the same ledger (every link recomputed) in the same run.
fn section_tiles(opts: &Opts, ledgers: &[Generated]) -> Value {
    println!("## The log as tiles (TRUST-8)\n");
    println!(
        "| scale | events | verify (baseline) | export --tiles | verify --tiles | tiles on disk |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let key = opts.work.join("tiles-bench.key");
    let vkey = example_key(&key);
    let mut rows = Vec::new();
    for g in ledgers {
        let dir = opts.work.join("tiles-ledger");
        let out = opts.work.join("tiles-out");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&out);
        util::copy_dir(&g.dir, &dir);
        let ledger = dir.display().to_string();
        let out_arg = out.display().to_string();
        let verify = spawn_timed(&opts.bin, &["--ledger", &ledger, "verify"]);
        let key_arg = key.display().to_string();
        let export = spawn_timed(
            &opts.bin,
            &[
                "--ledger", &ledger, "export", "--tiles", "-o", &out_arg, "--key", &key_arg,
            ],
        );
        // A fresh auditor memory per row (TRUST-7): the scales' ledgers may
        // share an origin, and a smaller one after a larger is a rollback.
        let state = opts.work.join("tiles-auditor-state.json");
        let _ = std::fs::remove_file(&state);
        let state_arg = state.display().to_string();
        let read_back = spawn_timed(
            &opts.bin,
            &[
                "--ledger", &ledger, "verify", "--tiles", &out_arg, "--vkey", &vkey, "--state",
                &state_arg,
            ],
        );
        let bytes = util::du_bytes(&out);
        println!(
            "| {} | {} | {:.2} s | {:.2} s | {:.2} s | {:.1} MiB |",
            g.scale.name,
            g.events,
            verify,
            export,
            read_back,
            bytes as f64 / (1024.0 * 1024.0)
        );
        rows.push(
            json!({ "scale": g.scale.name, "events": g.events, "verify_secs": verify,
            "export_tiles_secs": export, "verify_tiles_secs": read_back, "tiles_bytes": bytes }),
        );
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&out);
    }
    println!();
    Value::Array(rows)
}

fn section_tlog(opts: &Opts, g: &Generated) -> Value {
    println!("## Signed checkpoints and proofs (TRUST-1, TRUST-2)\n");
    let dir = opts.work.join("tlog-ledger");
    let _ = std::fs::remove_dir_all(&dir);
    util::copy_dir(&g.dir, &dir);
    let _ = std::fs::remove_file(dir.join(benchledger::log::tree::NODES_FILE));
    let key = opts.work.join("tlog-bench.key");
    let _ = std::fs::remove_file(&key);
    let ledger = dir.display().to_string();
    let key_arg = key.display().to_string();
    // The example operator key the generated lineages' manifest lists: only
    // a listed operator key signs a checkpoint that counts (TRUST-5).
    let signer = benchledger::testkit::examples::signer("alice");
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key)
            .expect("write the example key");
        std::io::Write::write_all(&mut f, format!("{}\n", signer.encode()).as_bytes())
            .expect("write the example key");
    }
    let vkey = signer.verifier().encode();
    let note = |name: &str| opts.work.join(name).display().to_string();
    let sign = |out: &str| {
        spawn_timed(
            &opts.bin,
            &[
                "--ledger",
                &ledger,
                "checkpoint",
                "sign",
                "--key",
                &key_arg,
                "-o",
                out,
            ],
        )
    };
    let first = sign(&note("tlog-first.note"));
    let runs = opts.runs.clamp(1, 10);
    let mut later = Vec::new();
    for i in 0..runs {
        spawn_timed(
            &opts.bin,
            &["--ledger", &ledger, "note", &format!("tlog {i}")],
        );
        later.push(sign(&note("tlog-last.note")));
    }
    let seq = (g.events / 2).to_string();
    let (first_note, last_note) = (note("tlog-first.note"), note("tlog-last.note"));
    let prove_inclusion = || {
        spawn_timed(
            &opts.bin,
            &[
                "--ledger",
                &ledger,
                "prove",
                "inclusion",
                &seq,
                "--checkpoint",
                &last_note,
                "--vkey",
                &vkey,
            ],
        )
    };
    // The copy has no projection checkpoint: the first proof's process
    // replays the log once for the frozen keys and writes one.
    let first_prove = prove_inclusion();
    let mut inclusion = Vec::new();
    let mut consistency = Vec::new();
    for _ in 0..runs {
        inclusion.push(prove_inclusion());
        consistency.push(spawn_timed(
            &opts.bin,
            &[
                "--ledger",
                &ledger,
                "prove",
                "consistency",
                &first_note,
                &last_note,
                "--vkey",
                &vkey,
            ],
        ));
    }
    println!(
        "On a copy of the {} ledger ({} events), each a fresh process; {runs} runs of the later ones.\n",
        g.scale.name, g.events
    );
    println!("| step | p50 |");
    println!("| --- | --- |");
    println!(
        "| first `checkpoint sign` (derives the tree, writes the node cache) | {:.1} ms |",
        first * 1e3
    );
    println!(
        "| later `checkpoint sign` (one more record each; derives the tree again) | {:.1} ms |",
        median(&later) * 1e3
    );
    println!(
        "| first `prove inclusion` on the copy (no projection checkpoint: replays the log once for the frozen keys) | {:.1} ms |",
        first_prove * 1e3
    );
    println!(
        "| `prove inclusion` of seq {seq} | {:.1} ms |",
        median(&inclusion) * 1e3
    );
    println!(
        "| `prove consistency` first -> last checkpoint | {:.1} ms |\n",
        median(&consistency) * 1e3
    );
    let reads = tlog_reads(&dir, &first_note, &last_note, g.events / 2);
    println!("In this process, from the node cache the CLI left (`tree::synced`: header and last covered record checked, no walk):\n");
    println!(
        "| proof | node hashes read (of {} in the cache) | time |",
        reads.nodes
    );
    println!("| --- | --- | --- |");
    println!(
        "| open the ledger + `tree::synced` | - | {:.2} ms |",
        reads.open_secs * 1e3
    );
    println!(
        "| inclusion of seq {seq} in size {} | {} | {:.3} ms |",
        reads.new_size,
        reads.inclusion_reads,
        reads.inclusion_secs * 1e3
    );
    println!(
        "| consistency {} -> {} | {} | {:.3} ms |\n",
        reads.old_size,
        reads.new_size,
        reads.consistency_reads,
        reads.consistency_secs * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
    json!({ "events": g.events, "first_sign_secs": first, "sign_secs": later,
            "first_prove_secs": first_prove, "inclusion_secs": inclusion, "consistency_secs": consistency,
            "in_process": { "open_synced_secs": reads.open_secs, "cache_nodes": reads.nodes,
                "inclusion_reads": reads.inclusion_reads, "inclusion_secs": reads.inclusion_secs,
                "consistency_reads": reads.consistency_reads, "consistency_secs": reads.consistency_secs } })
}

/// A node source that counts the hashes read through it.
struct CountingNodes<'a> {
    inner: &'a benchledger::log::tree::NodeFile,
    reads: std::cell::Cell<u64>,
}

impl benchledger::log::tlog::NodeSource for CountingNodes<'_> {
    fn leaf_count(&self) -> Result<u64, benchledger::log::tlog::TlogError> {
        self.inner.leaf_count()
    }

    fn subtree(
        &self,
        level: u8,
        index: u64,
    ) -> Result<Option<benchledger::log::tlog::Hash>, benchledger::log::tlog::TlogError> {
        self.reads.set(self.reads.get() + 1);
        self.inner.subtree(level, index)
    }
}

/// What the proofs of the `tlog` section read, measured in this process.
struct TlogReads {
    open_secs: f64,
    nodes: u64,
    old_size: u64,
    new_size: u64,
    inclusion_reads: u64,
    inclusion_secs: f64,
    consistency_reads: u64,
    consistency_secs: f64,
}

fn note_size(path: &str) -> u64 {
    let text = std::fs::read_to_string(path).expect("read note");
    let note = benchledger::log::tlog::SignedNote::parse(&text).expect("note");
    benchledger::log::tlog::Checkpoint::parse(note.text())
        .expect("checkpoint")
        .size()
}

fn tlog_reads(dir: &Path, first_note: &str, last_note: &str, seq: u64) -> TlogReads {
    let (old_size, new_size) = (note_size(first_note), note_size(last_note));
    let t = Instant::now();
    let ledger = Ledger::open(dir, Duration::from_secs(10)).expect("open");
    let nodes = benchledger::log::tree::synced(&ledger).expect("synced");
    let open_secs = t.elapsed().as_secs_f64();
    let counting = CountingNodes {
        inner: &nodes,
        reads: std::cell::Cell::new(0),
    };
    let t = Instant::now();
    benchledger::log::tlog::prove_inclusion(&counting, seq, new_size).expect("inclusion");
    let inclusion_secs = t.elapsed().as_secs_f64();
    let inclusion_reads = counting.reads.replace(0);
    let t = Instant::now();
    benchledger::log::tlog::prove_consistency(&counting, old_size, new_size).expect("consistency");
    let consistency_secs = t.elapsed().as_secs_f64();
    TlogReads {
        open_secs,
        nodes: benchledger::log::tree::node_count(nodes.leaves()),
        old_size,
        new_size,
        inclusion_reads,
        inclusion_secs,
        consistency_reads: counting.reads.get(),
        consistency_secs,
    }
}

fn spawn_timed(bin: &Path, args: &[&str]) -> f64 {
    let t = Instant::now();
    // The bench records the AWS gate observations itself (gen::fresh_gates);
    // a build without `aws` relies on them only when told to.
    let st = Command::new(bin)
        .args(args)
        .env("BENCHLEDGER_AWS_GATES", "recorded")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("spawn");
    let secs = t.elapsed().as_secs_f64();
    assert!(st.success(), "{} {args:?} failed: {st}", bin.display());
    secs
}

fn spawn_self_timed(args: &[&str]) -> f64 {
    spawn_timed(&std::env::current_exe().expect("exe"), args)
}

fn section_verify(opts: &Opts, g: &Generated) -> Value {
    let _ = opts;
    println!("## Verify\n");
    let v = child(&["verify", &g.dir.display().to_string()]);
    let n = v["records"].as_f64().unwrap_or(0.0);
    let rate = |k: &str| n / v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "`Ledger::verify` on the {} ledger: {} records, {:.1} MB of stored values, in a fresh process.\n",
        g.scale.name,
        n,
        v["value_bytes"].as_f64().unwrap_or(0.0) / 1e6
    );
    println!("| what | records/s | time |");
    println!("| --- | --- | --- |");
    for (k, what) in [
        (
            "verify_cold_secs",
            "`Ledger::verify` on every core, the first pass after open (cold: sled pages its files in)",
        ),
        (
            "verify_secs",
            "`Ledger::verify` on every core (scan, link, decode + re-encode, open-tail and index checks), warm",
        ),
        (
            "verify_one_core_secs",
            "`Ledger::verify_with(1)`: the same on one core, warm",
        ),
        (
            "scan_secs",
            "part: store scan of every stored value (one sled `get` per segment, values copied out)",
        ),
        (
            "walk_secs",
            "part: `Walker::step` over the values in memory (link + decode + canonical check)",
        ),
        (
            "link_secs",
            "part: link hash (BLAKE3 derive_key) over the values in memory",
        ),
        (
            "decode_secs",
            "part: `Record::decode` (record + payload, each re-encoded) in memory",
        ),
        (
            "header_decode_secs",
            "part of that: decode of the record header alone (codec::decode_bulk: no payload, no re-encode)",
        ),
        (
            "header_encode_secs",
            "part of that: re-encoding the decoded header (the canonical check, once of two)",
        ),
        (
            "blake3_secs",
            "baseline: raw BLAKE3 of each stored value in memory",
        ),
    ] {
        println!(
            "| {what} | {} | {:.3} s |",
            si(rate(k)),
            v[k].as_f64().unwrap_or(0.0)
        );
    }
    let ratio = rate("verify_secs") / rate("blake3_secs");
    let one_ratio = rate("verify_one_core_secs") / rate("blake3_secs");
    let verify_rate = rate("verify_secs");
    println!(
        "\nverify = **{} records/s** on {} cores, **{} records/s** on one (target >= 1M on one) = **{ratio:.2}x** / **{one_ratio:.2}x raw BLAKE3** (target >= 0.5); peak RSS {:.0} MiB\n",
        si(rate("verify_secs")),
        v["threads"].as_u64().unwrap_or(0),
        si(rate("verify_one_core_secs")),
        mib(v["rss_kib"].as_u64().unwrap_or(0))
    );
    let mut v = v;
    v["records_per_sec"] = json!(verify_rate);
    v["ratio_to_blake3"] = json!(ratio);
    v["one_core_ratio_to_blake3"] = json!(one_ratio);
    v
}

/// The projection folds measured: `replay` (what `decide` needs) and, when
/// the verdict projection's entry points exist, those too. Add new entry
/// points here (and in `child replay`).
///
/// - `read`: the verified read alone (`Ledger::records`: scan, link, decode),
///   no fold: what every projection pays first;
/// - `replay`: `projections::replay`, the fold `decide` needs;
/// - `verdicts`: `projections::replay_scanning` (the fold with the secret
///   scan) and `verdict::group_verdict` of every group of every lineage.
const PROJECTIONS: &[&str] = &["read", "replay", "verdicts"];

fn section_replay(ledgers: &[Generated]) -> Value {
    println!("## Replay of every projection\n");
    println!("Each scale in its own process: `Ledger::open`, then the fold over the verified log; peak RSS is that process's VmHWM.\n");
    println!("| projection | scale | events | open | replay | ns/event | events/s | peak RSS |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut out = Vec::new();
    for p in PROJECTIONS {
        for g in ledgers {
            let v = child(&["replay", p, &g.dir.display().to_string()]);
            let secs = v["replay_secs"].as_f64().unwrap_or(f64::NAN);
            let n = v["events"].as_f64().unwrap_or(0.0);
            println!(
                "| {p} | {} | {} | {:.0} ms | {:.3} s | {:.0} | {} | {:.0} MiB |",
                g.scale.name,
                n,
                v["open_secs"].as_f64().unwrap_or(0.0) * 1e3,
                secs,
                secs / n * 1e9,
                si(n / secs),
                mib(v["rss_kib"].as_u64().unwrap_or(0))
            );
            out.push(json!({ "projection": p, "scale": g.scale.name, "result": v }));
        }
    }
    println!(
        "\ntargets: 150k < 0.3 s, 1.5M < 3 s, linear (ns/event flat), peak RSS at 1.5M < 500 MiB\n"
    );
    json!(out)
}

fn section_decide(opts: &Opts, g: &Generated) -> Value {
    println!("## `case start` decide latency\n");
    let dir = opts.work.join("decide-ledger");
    util::copy_dir(&g.dir, &dir);
    let open = &g.open;
    let (frozen, plan) = {
        let ledger = Ledger::open(&dir, LOCK).expect("open");
        let state = benchledger::method::projections::replay(&ledger).expect("replay");
        let l = &state.lineages[&open.lineage];
        (
            l.frozen.clone(),
            l.plan.clone().expect("a generated lineage is v2"),
        )
    };
    util::wait_sled_unlocked(&dir);
    let runs = opts.runs.min(open.cases.len().saturating_sub(1)).max(1);
    // in-process breakdown, in a child (cold process, like the CLI)
    let case = &open.cases[0];
    let now = benchledger::schema::time::now_utc_ns();
    let cfg = benchledger::method::trial_config::render_planned(
        &frozen.manifest.public,
        Some(&plan),
        &open.group,
        case,
    )
    .expect("render")
    .blake3;
    {
        let ledger = Ledger::open(&dir, LOCK).expect("open");
        gen::fresh_gates(&ledger, &frozen, &plan, &open.group, &cfg, now);
    }
    util::wait_sled_unlocked(&dir);
    let parts = child(&[
        "decide",
        &dir.display().to_string(),
        &open.lineage,
        &open.group,
        &case.task,
        &case.trial,
        &(now + 1).to_string(),
    ]);
    {
        let ledger = Ledger::open(&dir, LOCK).expect("open");
        gen::finish_case(
            &ledger,
            &open.lineage,
            &open.group,
            case,
            benchledger::schema::time::now_utc_ns(),
        );
    }
    util::wait_sled_unlocked(&dir);
    let mut cli = Vec::new();
    for case in open.cases.iter().skip(1).take(runs) {
        let cfg = benchledger::method::trial_config::render_planned(
            &frozen.manifest.public,
            Some(&plan),
            &open.group,
            case,
        )
        .expect("render")
        .blake3;
        {
            let ledger = Ledger::open(&dir, LOCK).expect("open");
            gen::fresh_gates(
                &ledger,
                &frozen,
                &plan,
                &open.group,
                &cfg,
                benchledger::schema::time::now_utc_ns(),
            );
        }
        util::wait_sled_unlocked(&dir);
        let group = format!("{}/{}", open.lineage, open.group);
        let c = format!("{}/{}", case.task, case.trial);
        cli.push(spawn_timed(
            &opts.bin,
            &[
                "--ledger",
                &dir.display().to_string(),
                "case",
                "start",
                &group,
                &c,
                "--json",
            ],
        ));
        let ledger = Ledger::open(&dir, LOCK).expect("open");
        gen::finish_case(
            &ledger,
            &open.lineage,
            &open.group,
            case,
            benchledger::schema::time::now_utc_ns(),
        );
        drop(ledger);
        util::wait_sled_unlocked(&dir);
    }
    let (p50, p99) = (percentile(&cli, 50.0), percentile(&cli, 99.0));
    let ms = |k: &str| parts[k].as_f64().unwrap_or(0.0);
    println!(
        "On a copy of the {} ledger ({} events), case identities of {}/{} never started, gates fresh.\n",
        g.scale.name, g.events, open.lineage, open.group
    );
    println!("| part (in a fresh process) | time |");
    println!("| --- | --- |");
    println!("| `Ledger::open` | {:.1} ms |", ms("open_ms"));
    println!(
        "| `projections::replay` (verified read + fold of every event) | {:.1} ms |",
        ms("replay_ms")
    );
    println!(
        "| `checkpoint::replay` without a checkpoint (full replay + write {:.1} MB) | {:.1} ms |",
        parts["checkpoint_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        ms("checkpoint_build_ms")
    );
    println!(
        "| `checkpoint::replay` from that checkpoint (read, check, decode; tail 0) | {:.1} ms |",
        ms("checkpoint_load_ms")
    );
    println!(
        "| `decide::case_start` (pure) | {:.3} ms |",
        ms("decide_ms")
    );
    println!(
        "| append `case_started` + flush | {:.1} ms |",
        ms("append_ms")
    );
    println!(
        "\n`benchledger case start GROUP CASE --json` end to end, {runs} runs (each after ~20 \
         appended gate and finish events; the checkpoint left by the in-process run is used): \
         p50 {:.1} ms, p99 {:.1} ms; a full replay alone would be {:.0} ms\n",
        p50 * 1e3,
        p99 * 1e3,
        ms("replay_ms")
    );
    let _ = std::fs::remove_dir_all(&dir);
    json!({ "events": g.events, "runs": runs, "cli_secs": cli, "cli_p50": p50, "cli_p99": p99, "parts": parts })
}

/// A kill test of large (chunked) appends: a writer appends batches of
/// 1,100..=6,000 notes (past `CHUNKED_APPEND_RECORDS_MIN`) and prints an ack
/// per record after each append returned; it is SIGKILLed at random
/// moments; after every kill the ledger must open, verify, and hold every
/// acknowledged record with its hash. Run explicitly: `-- crash`.
fn section_crash(opts: &Opts) -> Value {
    use std::io::BufRead;
    println!("## Kill test of chunked appends\n");
    let dir = opts.work.join("crash-ledger");
    let _ = std::fs::remove_dir_all(&dir);
    drop(Ledger::create(&dir, LOCK, [3; 16], "operator:init", 0).expect("create"));
    util::wait_sled_unlocked(&dir);
    let kills = if opts.smoke { 3 } else { opts.runs.max(20) };
    let mut seed = benchledger::schema::time::now_utc_ns();
    let mut acks: Vec<(u64, String)> = Vec::new();
    let t = Instant::now();
    for k in 0..kills {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut c = Command::new(std::env::current_exe().expect("exe"))
            .args([
                "child",
                "crash-writer",
                &dir.display().to_string(),
                &seed.to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn writer");
        let out = c.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            std::io::BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| {
                    let mut p = l.split(' ');
                    match (p.next(), p.next(), p.next()) {
                        (Some("ack"), Some(s), Some(h)) => {
                            Some((s.parse::<u64>().ok()?, h.to_string()))
                        }
                        _ => None,
                    }
                })
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(50 + (seed >> 33) % 1500));
        c.kill().expect("kill");
        c.wait().expect("wait");
        acks.extend(reader.join().expect("reader"));
        let ledger = Ledger::open(&dir, LOCK)
            .unwrap_or_else(|e| panic!("kill {k} (seed {seed}): reopen: {e}"));
        let report = ledger.verify().expect("verify");
        assert!(
            report.ok(),
            "kill {k} (seed {seed}): damage {:?}",
            report.damage
        );
        for (seq, hash) in &acks {
            let v = ledger
                .read(*seq)
                .unwrap_or_else(|e| panic!("kill {k}: acknowledged seq {seq} lost: {e}"));
            assert_eq!(
                &hex::encode(v.hash),
                hash,
                "kill {k}: acknowledged seq {seq} changed"
            );
        }
        drop(ledger);
        util::wait_sled_unlocked(&dir);
        if acks.len() > 5_000 {
            acks = acks.iter().step_by(acks.len() / 1_000).cloned().collect();
        }
    }
    let ledger = Ledger::open(&dir, LOCK).expect("open");
    let report = ledger.verify().expect("verify");
    println!(
        "{kills} kills of a writer appending 1,100..=6,000 records per append: every reopen verified, \
         every acknowledged record present with its hash; {} records at the end ({:.0} s)\n",
        report.records,
        t.elapsed().as_secs_f64()
    );
    drop(ledger);
    let _ = std::fs::remove_dir_all(&dir);
    json!({ "kills": kills, "records": report.records })
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

fn run_child(args: &[String]) {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["gen", scale, dir] => {
            let s = gen::scale(scale).expect("scale");
            let t = Instant::now();
            let (events, open) = gen::generate(Path::new(dir), &s);
            emit(json!({
                "events": events, "secs": t.elapsed().as_secs_f64(), "rss_kib": vm_hwm_kib(),
                "open": { "lineage": open.lineage, "group": open.group,
                          "cases": open.cases.iter().map(|c| format!("{}/{}", c.task, c.trial)).collect::<Vec<_>>() },
            }));
        }
        ["ingest", sys, dir, n, b] => {
            let (n, b): (usize, usize) = (n.parse().expect("n"), b.parse().expect("b"));
            let r = match *sys {
                "ledger" => baselines::ingest_ledger(Path::new(dir), n, b),
                "sled" => baselines::ingest_sled(Path::new(dir), n, b),
                "sqlite" => baselines::ingest_sqlite(Path::new(dir), n, b),
                _ => panic!("unknown system {sys}"),
            };
            emit(
                json!({ "secs": r.secs, "rows": r.rows, "record_bytes": r.record_bytes, "rss_kib": r.rss_kib, "base_kib": r.base_kib }),
            );
        }
        ["floor", file] => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(file)
                .expect("open");
            f.write_all(&[7u8; 256]).expect("write");
            f.sync_all().expect("fsync");
        }
        ["open-append", dir] => {
            let t = Instant::now();
            let ledger = Ledger::open(Path::new(dir), LOCK).expect("open");
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            ledger.head().expect("head");
            let head_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            ledger
                .append(
                    &[note("in-process")],
                    benchledger::schema::time::now_utc_ns(),
                )
                .expect("append");
            let append_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            drop(ledger);
            let drop_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(Path::new(dir).join("fsync.probe"))
                .expect("probe");
            std::io::Write::write_all(&mut &f, &[1u8; 256]).expect("write");
            f.sync_all().expect("fsync");
            let fsync_ms = t.elapsed().as_secs_f64() * 1e3;
            let _ = std::fs::remove_file(Path::new(dir).join("fsync.probe"));
            emit(
                json!({ "open_ms": open_ms, "head_ms": head_ms, "append_ms": append_ms, "drop_ms": drop_ms, "fsync_ms": fsync_ms }),
            );
        }
        ["verify", dir] => emit(child_verify(Path::new(dir))),
        ["open", dir] => {
            let t = Instant::now();
            let ledger = Ledger::open(Path::new(dir), LOCK).expect("open");
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            ledger.head().expect("head");
            let head_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            drop(ledger);
            let drop_ms = t.elapsed().as_secs_f64() * 1e3;
            emit(json!({ "open_ms": open_ms, "head_ms": head_ms, "drop_ms": drop_ms }));
        }
        ["sled-build", dir, items, bytes] => {
            baselines::sled_build(
                Path::new(dir),
                items.parse().expect("n"),
                bytes.parse().expect("b"),
            );
            emit(json!({}));
        }
        ["sled-open", dir] => emit(baselines::sled_open(Path::new(dir))),
        ["sled-scan", dir, how] => emit(baselines::sled_scan(Path::new(dir), how)),
        ["crash-writer", dir, seed] => {
            use std::io::Write;
            let mut x: u64 = seed.parse().expect("seed");
            let ledger = Ledger::open(Path::new(dir), LOCK).expect("open");
            let mut n = 0u64;
            loop {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let len = 1_100 + (x >> 33) as usize % 4_901;
                let batch: Vec<Draft> = (0..len)
                    .map(|i| {
                        n += 1;
                        Draft {
                            idempotency_key: (i % 3 == 0).then(|| format!("crash-{x}-{n}")),
                            ..note(&format!("crash {x} {n} {}", "x".repeat((n % 200) as usize)))
                        }
                    })
                    .collect();
                let done = ledger.append(&batch, n).expect("append");
                let mut out = std::io::stdout().lock();
                for a in done {
                    writeln!(out, "ack {} {}", a.seq, hex::encode(a.hash)).expect("stdout");
                }
                out.flush().expect("stdout");
            }
        }
        ["replay", projection, dir] => {
            let rss_start = vm_hwm_kib();
            let t = Instant::now();
            let ledger = Ledger::open(Path::new(dir), LOCK).expect("open");
            let open_secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let (events, lineages, verdicts) = match *projection {
                "read" => {
                    let mut n = 0u64;
                    for v in ledger.records().expect("records") {
                        v.expect("verified record");
                        n += 1;
                    }
                    (n, 0, 0)
                }
                "replay" => {
                    let state = benchledger::method::projections::replay(&ledger).expect("replay");
                    (state.head_seq.map_or(0, |s| s + 1), state.lineages.len(), 0)
                }
                "verdicts" => {
                    let state =
                        benchledger::method::projections::replay_scanning(&ledger).expect("replay");
                    let mut n = 0;
                    for l in state.lineages.values() {
                        for g in l.frozen.manifest.public.group_names() {
                            std::hint::black_box(benchledger::method::verdict::group_verdict(
                                &state, l, g,
                            ));
                            n += 1;
                        }
                    }
                    (state.head_seq.map_or(0, |s| s + 1), state.lineages.len(), n)
                }
                other => panic!("unknown projection {other}"),
            };
            let replay_secs = t.elapsed().as_secs_f64();
            emit(
                json!({ "open_secs": open_secs, "replay_secs": replay_secs, "events": events, "verdicts": verdicts,
                         "lineages": lineages, "rss_kib": vm_hwm_kib(), "rss_start_kib": rss_start }),
            );
        }
        ["decide", dir, lineage, group, task, trial, now] => {
            let t = Instant::now();
            let ledger = Ledger::open(Path::new(dir), LOCK).expect("open");
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let full = benchledger::method::projections::replay(&ledger).expect("replay");
            let replay_ms = t.elapsed().as_secs_f64() * 1e3;
            // The CLI's path: the first call replays from genesis and writes
            // the projection checkpoint, the next folds only the tail.
            // (events_min 0: the smoke run's tiny ledger writes one too; at
            // 150k the default policy writes it anyway)
            let policy = benchledger::log::checkpoint::Policy {
                events_min: 0,
                ..benchledger::log::checkpoint::Policy::DEFAULT
            };
            let ckpt = benchledger::log::checkpoint::path(Path::new(dir));
            let _ = std::fs::remove_file(&ckpt);
            let t = Instant::now();
            let first = benchledger::log::checkpoint::replay::<
                benchledger::method::projections::State,
            >(&ledger, policy)
            .expect("replay");
            let ckpt_build_ms = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(first.written, Some(Ok(full.head_seq.expect("events"))));
            let ckpt_bytes = std::fs::metadata(&ckpt).expect("checkpoint").len();
            drop(first);
            let t = Instant::now();
            let r =
                benchledger::log::checkpoint::replay::<benchledger::method::projections::State>(
                    &ledger, policy,
                )
                .expect("replay");
            let ckpt_load_ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(matches!(
                r.source,
                benchledger::log::checkpoint::Source::Checkpoint { .. }
            ));
            assert!(r.state == full, "the checkpointed state equals the replay");
            let state = r.state;
            drop(full);
            let case = CaseRef {
                task: task.to_string(),
                trial: trial.to_string(),
                replacement: 0,
            };
            let m = &state.lineages[*lineage].frozen.manifest.public;
            let cfg = benchledger::method::trial_config::render(m, group, &case)
                .expect("render")
                .blake3;
            let cmd = benchledger::method::decide::CaseStart {
                lineage: Some(lineage.to_string()),
                group: group.to_string(),
                case: case.clone(),
                trial_name: benchledger::schema::names::trial_name(task, group, &case),
                trial_config_blake3: cfg,
                command: vec![],
                now_utc_ns: now.parse().expect("now"),
            };
            let t = Instant::now();
            let events = benchledger::method::decide::case_start(&state, cmd)
                .expect("case start is accepted");
            let decide_ms = t.elapsed().as_secs_f64() * 1e3;
            let drafts: Vec<Draft> = events
                .into_iter()
                .map(|event| Draft {
                    actor: "operator:alice".into(),
                    event,
                    idempotency_key: None,
                })
                .collect();
            let t = Instant::now();
            ledger
                .append(&drafts, now.parse().expect("now"))
                .expect("append");
            let append_ms = t.elapsed().as_secs_f64() * 1e3;
            emit(
                json!({ "open_ms": open_ms, "replay_ms": replay_ms, "checkpoint_build_ms": ckpt_build_ms,
                        "checkpoint_load_ms": ckpt_load_ms, "checkpoint_bytes": ckpt_bytes,
                        "decide_ms": decide_ms, "append_ms": append_ms, "rss_kib": vm_hwm_kib() }),
            );
        }
        _ => {
            eprintln!("unknown child command {a:?}");
            std::process::exit(2);
        }
    }
}

fn note(text: &str) -> Draft {
    Draft {
        actor: "operator:alice".into(),
        event: Event::OperatorNoted(OperatorNoted {
            lineage: None,
            text: text.into(),
        }),
        idempotency_key: None,
    }
}

fn child_verify(dir: &Path) -> Value {
    let t = Instant::now();
    let ledger = Ledger::open(dir, LOCK).expect("open");
    let open_secs = t.elapsed().as_secs_f64();
    // The first pass is cold (sled pages its files in): timed apart, so
    // that the every-core and one-core figures compare warm passes.
    let t = Instant::now();
    let cold = ledger.verify().expect("verify");
    let verify_cold_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let report = ledger.verify().expect("verify");
    let verify_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let one = ledger.verify_with(1).expect("verify");
    let verify_one_core_secs = t.elapsed().as_secs_f64();
    assert_eq!(cold, report, "a cold and a warm verify agree");
    assert_eq!(one, report, "one core and every core verify alike");
    assert!(
        report.ok(),
        "the generated ledger verifies: {:?}",
        report.damage
    );
    let rss_kib = vm_hwm_kib();
    let t = Instant::now();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = ledger
        .store()
        .scan(0)
        .map(|p| {
            let (k, v) = p.expect("scan");
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let scan_secs = t.elapsed().as_secs_f64();
    let value_bytes: usize = pairs.iter().map(|(_, v)| v.len()).sum();
    let t = Instant::now();
    let mut acc = 0u8;
    for (_, v) in &pairs {
        acc ^= blake3::hash(v).as_bytes()[0];
    }
    let blake3_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut prev = ZERO_HASH;
    for (seq, (_, v)) in pairs.iter().enumerate() {
        prev = link_hash(&prev, seq as u64, &v[64..]);
        acc ^= prev[0];
    }
    let link_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for (_, v) in &pairs {
        acc ^= Record::decode(&v[64..])
            .map(|d| d.record.kind.len() as u8)
            .unwrap_or(0);
    }
    let decode_secs = t.elapsed().as_secs_f64();
    // the same decode split: the header alone, without the canonical
    // re-encode, then the re-encode alone (what `codec::decode_canonical`
    // adds to every decode, twice per record)
    let t = Instant::now();
    let headers: Vec<Record> = pairs
        .iter()
        .map(|(_, v)| benchledger::log::codec::decode_bulk::<Record>(&v[64..]).expect("header"))
        .collect();
    let header_decode_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for r in &headers {
        acc ^= r.encode().expect("decoded headers re-encode").len() as u8;
    }
    let header_encode_secs = t.elapsed().as_secs_f64();
    drop(headers);
    let t = Instant::now();
    let mut w = Walker::from_genesis();
    for (k, v) in &pairs {
        w.step(k, v).expect("step");
    }
    let walk_secs = t.elapsed().as_secs_f64();
    std::hint::black_box(acc);
    json!({
        "records": report.records, "value_bytes": value_bytes, "open_secs": open_secs,
        "verify_cold_secs": verify_cold_secs, "verify_secs": verify_secs, "verify_one_core_secs": verify_one_core_secs, "scan_secs": scan_secs,
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()), "blake3_secs": blake3_secs,
        "link_secs": link_secs, "decode_secs": decode_secs, "walk_secs": walk_secs, "rss_kib": rss_kib,
        "header_decode_secs": header_decode_secs, "header_encode_secs": header_encode_secs,
    })
}

/// The `benchledger` binary of the same profile as this program
/// (`target/<profile>/benchledger`, beside `deps/` where cargo puts benches);
/// `--bin` overrides it.
fn default_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench knows its own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("cargo puts benches under target/<profile>/deps");
    profile_dir.join(format!("benchledger{}", std::env::consts::EXE_SUFFIX))
}
