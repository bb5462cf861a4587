//! Replays a generated public-reproduction lineage (89 tasks x 5 trials,
//! canary + control + r1 + r2, built through the real decisions) and times
//! every projection: the verified fold with the secret scan, then each
//! group's verdict, the lineage view and the control catalog. Prints one
//! JSON line. Not a test; see tools/bench for the side-by-side benchmarks.
//!
//!     cargo run --release --no-default-features --example scale-replay -- [REQUESTS_PER_CASE]

use std::time::Instant;

fn rss_peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let k: usize = std::env::args().nth(1).map_or(Ok(36), |a| a.parse())?;
    let t = Instant::now();
    let mut w = benchledger::testkit::scenario::World::new();
    w.requests_per_case = k;
    let text = benchledger::testkit::scenario::public_example();
    w.freeze(&text, benchledger::testkit::scenario::EXAMPLE_PRIVATE)?;
    let spec = benchledger::testkit::scenario::LineageSpec::default();
    benchledger::testkit::scenario::run_groups(&mut w, &spec)?;
    let built_s = t.elapsed().as_secs_f64();
    let tmp = tempfile::tempdir()?;
    let t = Instant::now();
    let ledger = w.write_batched(&tmp.path().join("l"), 50_000)?;
    let write_s = t.elapsed().as_secs_f64();
    drop(w);
    let t = Instant::now();
    let state = benchledger::method::projections::replay_scanning(&ledger)?;
    let fold_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut statuses = Vec::new();
    for l in state.lineages.values() {
        for g in l.frozen.manifest.public.group_names() {
            statuses.push(format!(
                "{g}={}",
                benchledger::method::verdict::group_verdict(&state, l, g).status
            ));
        }
        let _ = benchledger::method::verdict::lineage_view(&state, l);
    }
    let _ = benchledger::method::verdict::control_catalog(&state);
    let verdicts_s = t.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "events": state.head_seq.unwrap_or(0) + 1,
            "requests_per_case": k,
            "build_s": built_s,
            "write_s": write_s,
            "fold_with_secret_scan_s": fold_s,
            "verdicts_s": verdicts_s,
            "replay_all_projections_s": fold_s + verdicts_s,
            "statuses": statuses,
            "peak_rss_mib": rss_peak_kib() / 1024,
        })
    );
    Ok(())
}
