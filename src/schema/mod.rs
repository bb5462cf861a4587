//! What is stored: event payloads, the stored manifest types, Harbor trial
//! names, money, secret shapes, the string visitor, time and the verdict's
//! vocabulary. No I/O; a stored field never changes without a new kind
//! version.

pub mod central;
pub mod events;
pub mod manifest;
pub mod money;
pub mod named;
pub mod names;
pub mod observation;
pub mod plan;
pub mod rule;
pub mod secrets;
pub mod strings;
pub mod time;
pub mod trial_content;
pub mod verdict;
