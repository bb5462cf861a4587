//! benchledger: a fail-closed, hash-chained, append-only evidence ledger for
//! LLM-router benchmark runs.
//!
//! The log is the ground truth. Every action and observation is one record,
//! BLAKE3-chained to its predecessor and stored in sled; every verdict is a
//! pure function of the records. See ARCHITECTURE.md for the code map and
//! invariants, and `ledger-schema/SPEC.md` for the byte-level contract.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "aws")]
pub mod aws;
pub mod chain;
pub mod checkpoint;
pub mod checks;
pub mod cli;
pub mod cli_cases;
pub mod cli_checks;
pub mod cli_ingest;
pub mod cli_report;
pub mod cli_verdicts;
pub mod codec;
pub mod decide;
pub mod error;
pub mod events;
pub mod export;
pub mod guard;
pub mod ingest;
pub mod ledger;
pub mod limits;
pub mod manifest;
pub mod money;
pub mod projections;
pub mod record;
pub mod report;
pub mod scenario;
pub mod secrets;
pub mod store;
pub mod strings;
pub mod timefmt;
pub mod trial_config;
pub mod vectors;
pub mod verdict;

pub use error::{Error, ExitClass, Result};

#[cfg(test)]
mod fuzz_tests;
