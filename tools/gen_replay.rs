//! Builds the replay-test corpus: every `replay-tests/scenarios/*.toml` is
//! run through the real `decide` functions with an injected clock
//! (`benchledger::testkit::scenario`), written into a fresh sled ledger, and exported
//! as canonical JSONL to `replay-tests/ledgers/<name>.jsonl` (never a sled
//! directory). Review the diff, then commit; the `replay` test target
//! imports, verifies, replays, audits and snapshots each one.
//!
//!     cargo run --no-default-features --example gen-replay [NAME ...]

use std::path::Path;

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("replay-tests");
    let only: Vec<String> = std::env::args().skip(1).collect();
    let mut names: Vec<_> = std::fs::read_dir(root.join("scenarios"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        // `NAME.expect.toml` (what it must project to) and
        // `NAME.published.toml` beside a scenario are not scenarios.
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| !s.to_string_lossy().contains('.'))
        })
        .collect();
    names.sort();
    for path in names {
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let spec: benchledger::testkit::scenario::Scenario =
            benchledger::testkit::scenario::Scenario::load(&path)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        let (world, log) = benchledger::testkit::scenario::run(&spec)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let tmp = tempfile::tempdir()?;
        let ledger = world.write(&tmp.path().join("ledger"))?;
        let mut out = Vec::new();
        let head = benchledger::log::export::export_jsonl_trailed(&ledger, &mut out)?;
        std::fs::write(root.join("ledgers").join(format!("{name}.jsonl")), &out)?;
        eprintln!(
            "{name}: {} records, head {}, {} bytes; refusals met: {:?}",
            head.seq + 1,
            &hex::encode(head.hash)[..16],
            out.len(),
            log.refusals
        );
    }
    Ok(())
}
