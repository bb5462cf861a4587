//! The method's `State` as a cacheable projection of the log
//! (`crate::log::checkpoint`): deciding verbs start from a verified
//! checkpoint and fold only the tail.

use crate::error::Result;
use crate::log::checkpoint::{self, Policy, Projection, Replayed};
use crate::log::ledger::Ledger;
use crate::method::projections::{At, State, PROJECTION_VERSION};
use crate::schema::events::Event;

/// The layout of `State` as encoded. Any change to the state's types changes
/// the bytes; the test `state_layout_is_pinned` then fails until this is
/// raised and its pinned hash renewed.
pub const STATE_LAYOUT_VERSION: u32 = 10;

impl Projection for State {
    const PROJECTION_VERSION: u32 = PROJECTION_VERSION;
    const LAYOUT_VERSION: u32 = STATE_LAYOUT_VERSION;

    fn apply_event(&mut self, seq: u64, recorded_at_utc_ns: u64, event: &Event) {
        self.apply(
            At {
                seq,
                utc_ns: recorded_at_utc_ns,
            },
            event,
        );
    }

    fn head_seq(&self) -> Option<u64> {
        self.head_seq
    }

    fn cacheable(&self) -> bool {
        !self.scan_secrets
    }
}

/// The decide state of `ledger` through its projection checkpoint.
pub fn decide_state(ledger: &Ledger, policy: Policy) -> Result<Replayed<State>> {
    checkpoint::replay::<State>(ledger, policy)
}

/// The paired check of `verify`: a present checkpoint equals the replay of
/// the log up to its seq.
pub fn check(ledger: &Ledger) -> Result<checkpoint::Check> {
    checkpoint::check::<State>(ledger)
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
