//! Tests of the `tlog` module.

mod formats;
mod merkle;
mod notes;
mod proofs;
mod tiles;
mod vectors;
