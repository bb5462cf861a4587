//! Test support, compiled only for tests and tools (`cfg(test)` or the
//! `testkit` feature): the deterministic lineage builder of the replay-test
//! scenarios, the generator of the contract vectors and a tiny HTTP server
//! for the gate checks' tests.

pub mod examples;
pub mod figures;
pub mod http_server;
pub mod procs;
pub mod scenario;
pub mod sim;
pub mod tlog_vectors;
pub mod vectors;

#[cfg(test)]
mod fuzz_tests;
