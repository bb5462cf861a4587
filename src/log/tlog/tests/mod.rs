//! Tests of the `tlog` module.

mod formats;
mod merkle;
mod notes;
mod proofs;
mod vectors;
