//! Rewrites `ledger-schema/vectors/` from the code: the valid chain (one
//! record of every kind) and the must-fail cases. Run after an intended
//! change of the vocabulary or layout, then review the diff:
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
    eprintln!("wrote {}", dir.display());
    Ok(())
}
