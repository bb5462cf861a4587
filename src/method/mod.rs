//! The method as code: freeze (TOML input -> validated stored manifest,
//! commitments, keys), decide (commands -> events or a refusal citing the
//! rule), projections (pure folds of events), the evidence binding of a
//! result to its launch (`binding`) and of an observation to its numbers
//! (`observations`), verdicts (one function per gate row) and TrialConfig
//! rendering. Never reads the clock, the environment,
//! files or the network: the CLI gathers facts and passes them in.

pub mod audit;
pub mod auditor;
pub mod binding;
pub mod central;
pub mod checkpointed;
pub mod decide;
pub mod expect;
pub mod freeze;
pub mod gate_outcomes;
pub mod lineage;
pub mod observations;
pub mod projections;
pub mod run_plan;
pub mod trial_config;
pub mod trust;
pub mod verdict;
pub mod witness;

use crate::error::Error;
use crate::schema::rule::Rule;

/// The one way the method refuses: `rule` (its id, cited in the message
/// the CLI prints) and what was refused and why (exit 3).
pub(crate) fn refuse(rule: Rule, message: impl Into<String>) -> Error {
    Error::Refused {
        rule,
        message: message.into(),
    }
}
