//! benchledger: a fail-closed, hash-chained, append-only evidence ledger for
//! LLM-router benchmark runs.
//!
//! The log is the ground truth. Every action and observation is one record,
//! BLAKE3-chained to its predecessor and stored in sled; every verdict is a
//! pure function of the records. See ARCHITECTURE.md for the code map and
//! invariants, and `ledger-schema/SPEC.md` for the byte-level contract.

#![forbid(unsafe_code)]
// No `missing_docs`: it asks a line of every field and variant and bred
// filler; replay-tests/tidy.rs checks module and public item docs and
// refuses filler (ARCHITECTURE.md, "Doc comments").

pub mod cli;
pub mod error;
pub mod evidence;
pub mod gates;
pub mod limits;
pub mod log;
pub mod method;
pub mod report;
pub mod rng;
pub mod schema;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use error::{Error, ExitClass, Result};
/// Expectations as data: check a recorded ledger against a hand-written
/// file (`benchledger expect`).
pub use method::expect;
