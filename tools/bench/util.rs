//! Small helpers: peak RSS, child processes, percentiles, formatting.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Peak resident set size of this process (`VmHWM`), KiB.
pub fn vm_hwm_kib() -> u64 {
    status_kib("VmHWM:")
}

/// Current resident set size (`VmRSS`), KiB.
pub fn vm_rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// Resets this process's peak RSS to its current RSS (`clear_refs` 5), so
/// that a later `vm_hwm_kib` measures the peak of what follows.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Prints the result line a parent reads.
pub fn emit(v: Value) {
    println!("RESULT {v}");
}

/// Runs this program as `child ARGS...` and returns its result line.
pub fn child(args: &[&str]) -> Value {
    let exe = std::env::current_exe().expect("current exe");
    let out = Command::new(exe)
        .arg("child")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("spawn child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        panic!("child {args:?} failed ({}): {stdout}", out.status);
    }
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("child {args:?} printed no result: {stdout}"));
    serde_json::from_str(line).expect("result json")
}

/// The p-th percentile (nearest rank) of `xs`.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Median.
pub fn median(xs: &[f64]) -> f64 {
    percentile(xs, 50.0)
}

/// Copies a directory tree (a ledger) with `cp -a`.
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp")
        .success();
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

/// Bytes of every file under `dir`.
pub fn du_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            match e.metadata() {
                Ok(m) if m.is_dir() => total += du_bytes(&p),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// `1234567` -> `1.23M`, for rates.
pub fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// MiB from KiB.
pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Waits (up to 10 s) until nothing holds sled's file lock on the ledger in
/// `dir`. A dropped `Ledger` releases the ledger lock at once, but sled
/// 0.34's background I/O threads can keep its own lock on `sled/db` for a
/// moment after: a process that opens the ledger in that window fails
/// with "could not acquire lock" instead of waiting (reported in
/// tools/BENCHMARKS.md).
pub fn wait_sled_unlocked(dir: &Path) {
    let db = dir.join("sled").join("db");
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(10) {
        match std::fs::OpenOptions::new().read(true).write(true).open(&db) {
            Ok(f) if f.try_lock().is_ok() => return,
            Ok(_) => {}
            Err(_) => return,
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
