//! Test support, compiled only for tests and tools (`cfg(test)` or the
//! `testkit` feature): the deterministic lineage builder of the replay-test
//! scenarios and the generator of the contract vectors.

pub mod examples;
pub mod scenario;
pub mod vectors;

#[cfg(test)]
mod fuzz_tests;
