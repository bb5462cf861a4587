//! Section `run` (issue 27): `benchledger run` over a stand-in launch
//! command (it sleeps the case's drawn duration and writes no result, so
//! each case ends `terminal_invalid` and frees its slot), in a build
//! without AWS relying on recorded AWS gates, the daemon gates taken from a
//! stand-in daemon in this process. The same figures for the new binary
//! and, with `--old-bin`, the old one, side by side in one run:
//!
//! (a) the case phase's makespan of a group at concurrency c, durations
//!     drawn from a fixed-seed lognormal, against the ideal worker-pool
//!     makespan of the same durations in the same launch order;
//! (b) `run`'s own CPU while it only waits for its cases, on a ledger
//!     padded to `pad` records, and the latency of a concurrent `note`;
//! (c) the same idle CPU at a small and a large padding: a tick's cost
//!     must not grow with the ledger.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benchledger::log::ledger::Draft;
use benchledger::schema::events::{Event, OperatorNoted};
use benchledger::testkit::examples::EXAMPLE_PRIVATE;
use serde_json::{json, Value};

use crate::util::percentile;

/// `run`'s default poll interval (`run --poll-ms`).
const POLL_MS: u64 = benchledger::limits::RUN_POLL_MS_DEFAULT;

/// What one `run` section measures.
pub struct RunOpts<'a> {
    pub work: &'a Path,
    pub bins: Vec<(&'static str, PathBuf)>,
    pub cases: usize,
    pub concurrency: u32,
    /// Seconds per unit of the drawn durations (median 20 units).
    pub unit_sec: f64,
    pub pads: Vec<usize>,
    pub idle_sec: f64,
    pub notes: usize,
}

/// `n` durations in units: lognormal with median 20 and sigma 0.9 (about
/// one case in 20 takes 10x the median or more), from a fixed seed.
pub fn durations(n: usize) -> Vec<f64> {
    let mut rng = benchledger::rng::SplitMix64::new(27);
    (0..n)
        .map(|_| {
            let u1 = rng.unit_f64();
            let u2 = rng.unit_f64();
            let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            20.0 * (0.9 * z).exp()
        })
        .collect()
}

/// The makespan of list scheduling `d` in order on `c` slots.
pub fn ideal_makespan(d: &[f64], c: usize) -> f64 {
    let mut free = vec![0.0f64; c.max(1)];
    for x in d {
        let (i, t) = free
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("slots");
        free[i] = t + x;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// The example manifest with `n` canary identities at concurrency `c`,
/// every path under `root`, a validator and the stand-in launch (it sleeps
/// the trial's drawn duration).
fn manifest(root: &Path, n: usize, c: u32) -> String {
    let r = root.display();
    std::fs::write(
        root.join("launch.sh"),
        format!("#!/bin/sh\necho $$ > {r}/started/$1\nexec sleep $(cat {r}/durations/$1)\n"),
    )
    .expect("launch");
    let n = u32::try_from(n).expect("cases");
    benchledger::testkit::examples::run_manifest(root, n, c, "timeout_sec = 3600")
        .expect("manifest")
}

/// A ledger in `root/ledger`: the lineage frozen, canary-1 opened, fresh
/// AWS observations, `pad` notes; the stand-in's durations written.
fn prepare(root: &Path, n: usize, c: u32, d_sec: &[f64], pad: usize) -> PathBuf {
    let _ = std::fs::remove_dir_all(root);
    for sub in ["started", "durations"] {
        std::fs::create_dir_all(root.join(sub)).expect("dirs");
    }
    let m = manifest(root, n, c);
    let mut w = benchledger::testkit::scenario::World::new();
    w.freeze(&m, EXAMPLE_PRIVATE).expect("freeze");
    w.open("canary-1").expect("open");
    let dir = root.join("ledger");
    let ledger = w.write_batched(&dir, 4096).expect("write");
    let now = benchledger::schema::time::now_utc_ns();
    let frozen = &w.state.lineage(None).expect("lineage").frozen;
    let aws = benchledger::testkit::scenario::aws_observations(frozen, "canary-1");
    let draft = |event| Draft {
        actor: "bench".into(),
        event,
        idempotency_key: None,
    };
    ledger
        .append(&aws.into_iter().map(draft).collect::<Vec<_>>(), now)
        .expect("aws gates");
    let mut left = pad;
    while left > 0 {
        let k = left.min(4096);
        let mut b = ledger.batch(now).expect("batch");
        for i in 0..k {
            b.push(draft(Event::OperatorNoted(OperatorNoted {
                lineage: None,
                text: format!("padding {i}"),
            })))
            .expect("push");
        }
        b.commit().expect("commit");
        left -= k;
    }
    for (i, d) in d_sec.iter().enumerate() {
        let name = format!("hello-world__canary-1-c{}", i + 1);
        std::fs::write(root.join("durations").join(name), format!("{d:.3}")).expect("duration");
    }
    dir
}

fn run_cmd(bin: &Path, ledger: &Path, url: &str) -> Command {
    let mut c = Command::new(bin);
    c.env("BENCHLEDGER_AWS_GATES", "recorded")
        .env_remove("RUST_LOG")
        .args([
            "--ledger",
            &ledger.display().to_string(),
            "run",
            "canary-1",
            "--daemon-url",
            url,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// The `case_started` times (seconds) and trials in launch order, and the
/// `case_process_exited` times.
fn case_times(bin: &Path, ledger: &Path) -> (Vec<(f64, String)>, Vec<f64>) {
    let out = Command::new(bin)
        .args(["--ledger", &ledger.display().to_string(), "log"])
        .output()
        .expect("log");
    let (mut starts, mut ends) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(r) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let t = r["recorded_at_utc_ns"].as_u64().unwrap_or(0) as f64 / 1e9;
        match r["kind"].as_str() {
            Some("case_started.v1") => {
                let trial = r["payload"]["case"]["trial"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                starts.push((t, trial));
            }
            Some("case_process_exited.v1") => ends.push(t),
            _ => {}
        }
    }
    (starts, ends)
}

/// (a): the case phase of one group on `bin`.
fn makespan(o: &RunOpts, name: &str, bin: &Path, url: &str) -> Value {
    let root = o.work.join(format!("run-makespan-{name}"));
    let units = durations(o.cases);
    let d: Vec<f64> = units.iter().map(|u| u * o.unit_sec).collect();
    let ledger = prepare(&root, o.cases, o.concurrency, &d, 0);
    let t0 = Instant::now();
    let status = run_cmd(bin, &ledger, url).status().expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let (starts, ends) = case_times(bin, &ledger);
    let first = starts.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let last = ends.iter().copied().fold(0.0, f64::max);
    let measured = last - first;
    // The ideal pool runs the same durations in the launch order `run` chose.
    let by_trial: BTreeMap<String, f64> = d
        .iter()
        .enumerate()
        .map(|(i, x)| (format!("c{}", i + 1), *x))
        .collect();
    let ordered: Vec<f64> = starts
        .iter()
        .filter_map(|(_, t)| by_trial.get(t).copied())
        .collect();
    let ideal = ideal_makespan(&ordered, o.concurrency as usize);
    json!({
        "binary": name, "exit": status.code(), "cases_started": starts.len(), "cases_ended": ends.len(),
        "makespan_sec": measured, "ideal_sec": ideal, "ratio": measured / ideal,
        "busy_share": d.iter().sum::<f64>() / (measured * f64::from(o.concurrency)), "wall_sec": wall,
    })
}

/// utime + stime of `pid`, seconds.
fn cpu_sec(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|i| f.get(*i)?.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

/// Kills `run` and the launches it started (each its own process group).
fn stop(mut child: Child, root: &Path) {
    let _ = child.kill();
    let _ = child.wait();
    if let Ok(dir) = std::fs::read_dir(root.join("started")) {
        for e in dir.flatten() {
            if let Ok(pid) = std::fs::read_to_string(e.path()) {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", pid.trim())])
                    .status();
            }
        }
    }
}

/// (b) and (c): `run`'s CPU while its cases only run, and a concurrent
/// `note`'s latency, on a ledger padded with `pad` records.
fn idle(o: &RunOpts, name: &str, bin: &Path, url: &str, pad: usize) -> Value {
    let root = o.work.join(format!("run-idle-{name}-{pad}"));
    let c = o.concurrency as usize;
    let long = vec![o.idle_sec * 4.0 + 120.0; c];
    let ledger = prepare(&root, c, o.concurrency, &long, pad);
    let t0 = Instant::now();
    let child = run_cmd(bin, &ledger, url).spawn().expect("run");
    let pid = child.id();
    let started = |root: &Path| std::fs::read_dir(root.join("started")).map_or(0, |d| d.count());
    while started(&root) < c && t0.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ready = t0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));
    // (c) Quiet: nothing is appended, so each loop tick only looks at the
    // processes, the head witness and the result files.
    let (cpu_q, w_q) = (cpu_sec(pid), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(o.idle_sec / 2.0));
    let quiet_wall = w_q.elapsed().as_secs_f64();
    let quiet_cpu = cpu_sec(pid) - cpu_q;
    let ticks = quiet_wall / (POLL_MS as f64 / 1e3);
    // (b) While `note`s append: each append is caught up (and re-planned).
    let (cpu0, w0) = (cpu_sec(pid), Instant::now());
    let mut lat = Vec::new();
    let gap = Duration::from_secs_f64(o.idle_sec / o.notes.max(1) as f64);
    for i in 0..o.notes {
        let t = Instant::now();
        let _ = Command::new(bin)
            .args([
                "--ledger",
                &ledger.display().to_string(),
                "note",
                &format!("concurrent {i}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(gap.saturating_sub(t.elapsed()));
    }
    let wall = w0.elapsed().as_secs_f64();
    let cpu = cpu_sec(pid) - cpu0;
    stop(child, &root);
    json!({
        "binary": name, "pad": pad, "ready_sec": ready, "window_sec": wall,
        "quiet_window_sec": quiet_wall, "quiet_cpu_share_of_core": quiet_cpu / quiet_wall,
        "tick_cpu_us": quiet_cpu / ticks * 1e6,
        "cpu_sec": cpu, "cpu_share_of_core": cpu / wall,
        "note_p50_ms": percentile(&lat, 50.0), "note_p99_ms": percentile(&lat, 99.0),
    })
}

/// The section: every figure for every binary, printed side by side.
pub fn section(o: &RunOpts) -> Value {
    println!("## `run` for the real workload (issue 27)\n");
    let url = benchledger::testkit::http_server::daemon_stand_in();
    let mut out = BTreeMap::new();
    let mut rows = Vec::new();
    for (name, bin) in &o.bins {
        rows.push(makespan(o, name, bin, &url));
    }
    println!(
        "(a) {} cases at c = {}, durations lognormal (median 20 units of {} s, seed 27):\n",
        o.cases, o.concurrency, o.unit_sec
    );
    println!(
        "| binary | makespan | ideal pool | ratio | slots busy |\n| --- | --- | --- | --- | --- |"
    );
    for r in &rows {
        println!(
            "| {} | {:.1} s | {:.1} s | {:.2}x | {:.0}% |",
            r["binary"].as_str().unwrap_or("?"),
            r["makespan_sec"].as_f64().unwrap_or(0.0),
            r["ideal_sec"].as_f64().unwrap_or(0.0),
            r["ratio"].as_f64().unwrap_or(0.0),
            100.0 * r["busy_share"].as_f64().unwrap_or(0.0)
        );
    }
    out.insert("makespan", Value::Array(rows));
    let mut rows = Vec::new();
    for pad in &o.pads {
        for (name, bin) in &o.bins {
            rows.push(idle(o, name, bin, &url, *pad));
        }
    }
    println!(
        "\n(b, c) `run` waiting for {} cases: {:.0} s quiet (CPU per {POLL_MS} ms tick), then {:.0} s with {} `note`s appending:\n",
        o.concurrency,
        o.idle_sec / 2.0,
        o.idle_sec,
        o.notes
    );
    println!("| binary | ledger padding | quiet: run CPU | quiet: CPU per tick | with notes: run CPU | note p50 | note p99 |\n| --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {} | {:.2}% | {:.0} us | {:.2}% | {:.1} ms | {:.1} ms |",
            r["binary"].as_str().unwrap_or("?"),
            r["pad"],
            100.0 * f("quiet_cpu_share_of_core"),
            f("tick_cpu_us"),
            100.0 * f("cpu_share_of_core"),
            f("note_p50_ms"),
            f("note_p99_ms")
        );
    }
    out.insert("idle", Value::Array(rows));
    println!();
    json!(out)
}
