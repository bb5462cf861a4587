//! Projections: pure folds over the events. No I/O, no clock, no env.
//!
//! `State::apply` is infallible for every event `decide` can produce; the
//! state is rebuilt from the verified log by `replay` and is never stored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::events::{Event, ManifestFrozen, SignOffRole};
use crate::ledger::Ledger;

/// The version of the projection code; attested in sealed verdicts so an
/// audit can tell which logic produced them.
pub const PROJECTION_VERSION: u32 = 1;

/// One lineage as the log has it.
#[derive(Debug, Clone, PartialEq)]
pub struct LineageState {
    /// Seq of the `manifest_frozen` event.
    pub frozen_seq: u64,
    /// The frozen manifest and its keys.
    pub frozen: ManifestFrozen,
    /// Sign-offs by role: (name, seq).
    pub sign_offs: BTreeMap<SignOffRole, (String, u64)>,
}

impl LineageState {
    /// True when both operator and reviewer signed off (FREEZE-7).
    pub fn signed_off(&self) -> bool {
        self.sign_offs.contains_key(&SignOffRole::Operator)
            && self.sign_offs.contains_key(&SignOffRole::Reviewer)
    }
}

/// Everything the decisions need, folded from the log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Seq of the last event applied.
    pub head_seq: Option<u64>,
    /// Frozen lineages by label.
    pub lineages: BTreeMap<String, LineageState>,
    /// Run-scoped resources claimed by frozen lineages (FREEZE-4):
    /// claim key -> (lineage, field).
    pub claims: BTreeMap<String, (String, String)>,
}

impl State {
    /// Applies one event. Infallible: anything `decide` produced folds.
    pub fn apply(&mut self, seq: u64, event: &Event) {
        self.head_seq = Some(seq);
        match event {
            Event::ManifestFrozen(f) => {
                for (key, field) in f.manifest.public.run_scoped_claims() {
                    self.claims
                        .entry(key)
                        .or_insert_with(|| (f.lineage.clone(), field));
                }
                self.lineages.insert(
                    f.lineage.clone(),
                    LineageState {
                        frozen_seq: seq,
                        frozen: f.clone(),
                        sign_offs: BTreeMap::new(),
                    },
                );
            }
            Event::ManifestSignedOff(s) => {
                if let Some(l) = self.lineages.get_mut(&s.lineage) {
                    l.sign_offs
                        .entry(s.role)
                        .or_insert_with(|| (s.name.clone(), seq));
                }
            }
            _ => {}
        }
    }

    /// The lineage named, or the only one when `label` is `None`.
    pub fn lineage(&self, label: Option<&str>) -> Result<&LineageState> {
        match label {
            Some(l) => self.lineages.get(l).ok_or_else(|| {
                Error::input(format!(
                    "no frozen lineage {l:?} in this ledger (frozen: {:?})",
                    self.lineages.keys().collect::<Vec<_>>()
                ))
            }),
            None => match self.lineages.len() {
                1 => Ok(self.lineages.values().next().expect("one lineage")),
                0 => Err(Error::input(
                    "this ledger has no frozen lineage (run `benchledger manifest freeze`)",
                )),
                _ => Err(Error::input(format!(
                    "this ledger holds several lineages {:?}; name one",
                    self.lineages.keys().collect::<Vec<_>>()
                ))),
            },
        }
    }
}

/// Folds the verified log into a `State`.
pub fn replay(ledger: &Ledger) -> Result<State> {
    let mut state = State::default();
    for v in ledger.records()? {
        let v = v?;
        state.apply(v.decoded.record.seq, &v.decoded.event);
    }
    Ok(state)
}
