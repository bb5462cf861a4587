//! Rewrites `ledger-schema/vectors/` from the fixtures of
//! `src/testkit/data/` and the code that seals them: the valid chain (one
//! record of every kind), the must-fail cases and the transparency-log
//! vectors over the chain. Run after an intended change of the vocabulary,
//! the layout or the fixtures, then review the diff:
//!
//!     cargo run --example gen-vectors

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ledger-schema/vectors");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join(benchledger::testkit::vectors::CHAIN_FILE),
        benchledger::testkit::vectors::chain_jsonl(),
    )?;
    std::fs::write(
        dir.join(benchledger::testkit::vectors::MUST_FAIL_FILE),
        benchledger::testkit::vectors::must_fail_jsonl(),
    )?;
    std::fs::write(
        dir.join(benchledger::testkit::tlog_vectors::TLOG_FILE),
        benchledger::testkit::tlog_vectors::tlog_json(),
    )?;
    eprintln!("wrote {}", dir.display());
    Ok(())
}
