//! Projections: pure folds over the events. No I/O, no clock, no env.
//!
//! `State::apply` is infallible for every event `decide` can produce; the
//! state is rebuilt from the verified log by `replay` and is never stored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::events::{
    CaseRef, CaseStarted, CheckKind, Event, FeedbackApplied, GroupOpened, GroupSealed,
    LineageStopped, ManifestFrozen, SecurityRefusalRecorded, SignOffRole, Status,
    TrialResultRecorded,
};
use crate::ledger::Ledger;

/// The version of the projection code; attested in sealed verdicts so an
/// audit can tell which logic produced them.
pub const PROJECTION_VERSION: u32 = 1;

/// Where an event sits in the log: its seq and when it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// The record's seq.
    pub seq: u64,
    /// The record's `recorded_at_utc_ns`.
    pub utc_ns: u64,
}

/// The states of a case identity (CASE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Never started: the only state that may launch.
    NotStarted,
    /// Started, no terminal evidence yet. Consumed forever (CASE-2).
    Started,
    /// A complete TrialResult: the verifier ran, a reward exists, and the
    /// exception is empty or an accepted typed condition (CASE-3).
    TerminalValid,
    /// Terminal without a valid TrialResult.
    TerminalInvalid,
}

impl CaseStatus {
    /// True for the two terminal states.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            CaseStatus::TerminalValid | CaseStatus::TerminalInvalid
        )
    }
}

/// Everything recorded about one case identity of a group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseState {
    /// The start (at most one: CASE-2).
    pub started: Option<(At, CaseStarted)>,
    /// Seqs of every `case_started` of this identity (more than one is a
    /// violation the verdict reports; decide never produces it).
    pub start_seqs: Vec<u64>,
    /// When its launched process exited, if recorded.
    pub exited: Option<At>,
    /// Its Harbor TrialResult, if ingested.
    pub result: Option<(At, TrialResultRecorded)>,
    /// Its sanitized 403 evidence (CASE-6).
    pub refusals: Vec<(At, SecurityRefusalRecorded)>,
}

impl CaseState {
    /// The case's state, given the manifest's accepted typed exceptions.
    pub fn status(&self, accepted_exceptions: &[String]) -> CaseStatus {
        if self.started.is_none() {
            return CaseStatus::NotStarted;
        }
        match &self.result {
            None => CaseStatus::Started,
            Some((_, r)) => {
                let reward = r.rewards.as_ref().is_some_and(|m| !m.is_empty());
                let exception_ok = r
                    .exception_type
                    .as_ref()
                    .is_none_or(|e| accepted_exceptions.contains(e));
                if reward && exception_ok {
                    CaseStatus::TerminalValid
                } else {
                    CaseStatus::TerminalInvalid
                }
            }
        }
    }
}

/// One group of a lineage as the log has it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupState {
    /// The daemon start.
    pub opened: Option<(At, GroupOpened)>,
    /// No more launches after this.
    pub closed: Option<At>,
    /// The attested verdict (final: VERDICT-4).
    pub sealed: Option<(At, GroupSealed)>,
    /// Feedback applied from this group (LINEAGE-3).
    pub feedback: Option<(At, FeedbackApplied)>,
    /// Case identities with anything recorded.
    pub cases: BTreeMap<CaseRef, CaseState>,
    /// Highest sampled run-tagged sandbox count (CLEAN-2).
    pub monitor_peak: Option<u64>,
}

impl GroupState {
    /// True when sealed `accepted`.
    pub fn accepted(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|(_, s)| s.status == "accepted")
    }

    /// Cases started and not terminal (CASE-7).
    pub fn running(&self, accepted_exceptions: &[String]) -> usize {
        self.cases
            .values()
            .filter(|c| c.status(accepted_exceptions) == CaseStatus::Started)
            .count()
    }
}

/// The latest observation of a gate: when, and pass or fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Where it sits in the log.
    pub at: At,
    /// Pass or fail.
    pub status: Status,
}

/// The latest gate observations of a lineage (GATE-1..3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gates {
    /// The latest STS identity proof.
    pub identity: Option<Observation>,
    /// The latest quota check.
    pub quota: Option<Observation>,
    /// The latest generic check by (kind, group, target).
    pub checks: BTreeMap<(CheckKind, Option<String>, String), Observation>,
}

/// One lineage as the log has it.
#[derive(Debug, Clone, PartialEq)]
pub struct LineageState {
    /// Seq of the `manifest_frozen` event.
    pub frozen_seq: u64,
    /// The frozen manifest and its keys.
    pub frozen: ManifestFrozen,
    /// Sign-offs by role: (name, seq).
    pub sign_offs: BTreeMap<SignOffRole, (String, u64)>,
    /// Groups with anything recorded, by name.
    pub groups: BTreeMap<String, GroupState>,
    /// The latest gate observations.
    pub gates: Gates,
    /// A hard stop, if one was recorded.
    pub stopped: Option<(At, LineageStopped)>,
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
    /// Applies one event. Infallible: anything `decide` produced folds, and
    /// what a projection does not need is ignored.
    pub fn apply(&mut self, at: At, event: &Event) {
        // Later records sit at later seqs; a fold never goes backwards.
        debug_assert!(
            self.head_seq.is_none_or(|h| h < at.seq),
            "events applied out of order"
        );
        let seq = at.seq;
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
                        groups: BTreeMap::new(),
                        gates: Gates::default(),
                        stopped: None,
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
            Event::IdentityChecked(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.gates.identity = Some(Observation {
                        at,
                        status: e.status,
                    });
                }
            }
            Event::QuotaChecked(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.gates.quota = Some(Observation {
                        at,
                        status: e.status,
                    });
                }
            }
            Event::CheckRecorded(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.gates.checks.insert(
                        (e.check, e.group.clone(), e.target.clone()),
                        Observation {
                            at,
                            status: e.status,
                        },
                    );
                }
            }
            Event::LineageStopped(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.stopped.get_or_insert_with(|| (at, e.clone()));
                }
            }
            Event::GroupOpened(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.opened.get_or_insert_with(|| (at, e.clone()));
            }),
            Event::GroupClosed(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.closed.get_or_insert(at);
            }),
            Event::GroupSealed(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.sealed.get_or_insert_with(|| (at, e.clone()));
            }),
            Event::FeedbackApplied(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.feedback.get_or_insert_with(|| (at, e.clone()));
            }),
            Event::MonitorSampled(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.monitor_peak = Some(g.monitor_peak.unwrap_or(0).max(e.sandbox_count));
            }),
            Event::CaseStarted(e) => self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                c.start_seqs.push(seq);
                c.started.get_or_insert_with(|| (at, e.clone()));
            }),
            Event::CaseProcessExited(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.exited.get_or_insert(at);
                })
            }
            Event::TrialResultRecorded(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.result.get_or_insert_with(|| (at, e.clone()));
                })
            }
            Event::SecurityRefusalRecorded(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.refusals.push((at, e.clone()));
                })
            }
            _ => {}
        }
    }

    fn group(&mut self, lineage: &str, group: &str, f: impl FnOnce(&mut GroupState)) {
        if let Some(l) = self.lineages.get_mut(lineage) {
            f(l.groups.entry(group.to_string()).or_default());
        }
    }

    fn case(&mut self, lineage: &str, group: &str, case: &CaseRef, f: impl FnOnce(&mut CaseState)) {
        self.group(lineage, group, |g| {
            f(g.cases.entry(case.clone()).or_default())
        });
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
        let r = &v.decoded.record;
        state.apply(
            At {
                seq: r.seq,
                utc_ns: r.recorded_at_utc_ns,
            },
            &v.decoded.event,
        );
    }
    Ok(state)
}
