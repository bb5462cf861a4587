//! Gate observations: daemon health, provider sentinels, binary and config
//! checks, the pure AWS judgements, and the AWS calls (feature `aws`).
//! Facts out; never called from `method`, never the SDK's default
//! credential chain. Imports only `schema` (and `error`, `limits`).
//!
//! - [`checks`]: health, sentinel, binary and config observations;
//! - [`http`]: the one plain-HTTP exchange those checks make (ureq);
//! - [`rules`]: what the AWS answers mean (GATE-1, GATE-2, residue,
//!   CLEAN-1..3), always compiled and tested;
//! - `aws` (feature `aws`): the SDK sessions and calls.

#[cfg(feature = "aws")]
pub mod aws;
pub mod checks;
pub mod http;
pub mod rules;
