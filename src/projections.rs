//! Projections: pure folds over the events. No I/O, no clock, no env.
//!
//! `State::apply` is infallible for every event `decide` can produce; the
//! state is rebuilt from the verified log by `replay` and is never stored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::events::{
    CaseInvalidated, CaseRef, CaseStarted, ChargeStatus, CheckKind, CleanupAudited,
    ControlRegistered, ControlReused, Event, FeedbackApplied, GroupOpened, GroupSealed,
    LineageStopped, ManifestFrozen, ReceiptState, ReconciliationStatus, SecurityRefusalRecorded,
    SignOffRole, Status, TokenBuckets, TraceStatus, TrialResultRecorded, UsageOrigin,
};
use crate::ledger::Ledger;

/// The version of the projection code; attested in sealed verdicts so an
/// audit can tell which logic produced them.
pub const PROJECTION_VERSION: u32 = 1;

/// Where an event sits in the log: its seq and when it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Seqs of every TrialResult of this identity (exactly one is the rule).
    pub result_seqs: Vec<u64>,
    /// Its sanitized 403 evidence (CASE-6).
    pub refusals: Vec<(At, SecurityRefusalRecorded)>,
    /// Made terminal-invalid on non-result evidence (CASE-3, CASE-8).
    pub invalidated: Option<(At, CaseInvalidated)>,
}

impl CaseState {
    /// The case's state, given the manifest's accepted typed exceptions.
    pub fn status(&self, accepted_exceptions: &[String]) -> CaseStatus {
        if self.started.is_none() {
            return CaseStatus::NotStarted;
        }
        match &self.result {
            None if self.invalidated.is_some() => CaseStatus::TerminalInvalid,
            None => CaseStatus::Started,
            Some((_, r)) => {
                let reward = r.rewards.as_ref().is_some_and(|m| !m.is_empty());
                let exception_ok = r
                    .exception_type
                    .as_ref()
                    .is_none_or(|e| accepted_exceptions.contains(e));
                if reward && exception_ok && self.invalidated.is_none() {
                    CaseStatus::TerminalValid
                } else {
                    CaseStatus::TerminalInvalid
                }
            }
        }
    }
}

/// One group of a lineage as the log has it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Request evidence by persisted request id (JOIN-1, JOIN-2).
    pub requests: BTreeMap<String, RequestState>,
    /// Policy decisions in log order (D): joined to traces in the verdict by
    /// request id, or by ingress commitment when every decision carries one
    /// (bitrouter-formats section 3).
    pub decisions: Vec<(u64, DecisionObs)>,
    /// Task-scoped outcomes (no request id): joined by case, never copied
    /// onto requests (JOIN-3).
    pub task_outcomes: Vec<(u64, TaskOutcome)>,
    /// The latest cleanup audit (CLEAN-1..3).
    pub cleanup: Option<(At, CleanupAudited)>,
    /// Monitor samples recorded.
    pub monitor_samples: u64,
}

/// A trace as the join needs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraceObs {
    /// The HTTP status the daemon answered.
    pub http_status: u16,
    /// Completed, failed or cancelled.
    pub status: TraceStatus,
    /// When the daemon captured it (RFC 3339 text as recorded).
    pub captured_at: String,
}

/// A usage row as settlement needs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UsageObs {
    /// The provider that served it.
    pub provider_id: String,
    /// The model that served it.
    pub model_id: String,
    /// The observed buckets (SETTLE-1).
    pub buckets: TokenBuckets,
    /// BitRouter's charge, if computed.
    pub final_charge_micro_usd: Option<u64>,
    /// BitRouter's charge status.
    pub charge_status: ChargeStatus,
    /// BitRouter's reconciliation status.
    pub reconciliation_status: ReconciliationStatus,
    /// Where the usage numbers come from.
    pub usage_origin: UsageOrigin,
    /// `completed` or `failed`, if recorded.
    pub status: Option<String>,
}

/// A policy decision as the join and replay rows need it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecisionObs {
    /// The persisted request id, if recorded.
    pub request_id: Option<String>,
    /// The ingress commitment (64 hex, `sha256:` prefix removed), if recorded.
    pub commitment: Option<String>,
    /// The decision reason (REPORT-5).
    pub reason: String,
    /// The selected tier.
    pub selected_tier: Option<String>,
    /// The selected model.
    pub selected_model: Option<String>,
}

/// An authoritative settlement receipt (SETTLE-4, SETTLE-5).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReceiptObs {
    /// Its state.
    pub state: ReceiptState,
    /// Its charge when computed.
    pub final_charge_micro_usd: Option<u64>,
}

/// A task-scoped verifier outcome (JOIN-3).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskOutcome {
    /// Harbor's trial name, if recorded.
    pub trial_name: Option<String>,
    /// The task id.
    pub task_id: String,
    /// The reward, decimal text.
    pub reward: String,
}

/// Everything recorded under one persisted request id of a group. Each list
/// holds (seq, observation); more than one entry in a list is a duplicate
/// the verdict reports (JOIN-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestState {
    /// Trace rows (T).
    pub traces: Vec<(u64, TraceObs)>,
    /// Usage rows (U).
    pub usage: Vec<(u64, UsageObs)>,
    /// Receipts, in log order; the latest is authoritative.
    pub receipts: Vec<(u64, ReceiptObs)>,
    /// Request-scoped outcomes (R).
    pub outcomes: Vec<u64>,
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Observation {
    /// Where it sits in the log.
    pub at: At,
    /// Pass or fail.
    pub status: Status,
}

/// The latest gate observations of a lineage (GATE-1..3).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gates {
    /// The latest STS identity proof.
    pub identity: Option<Observation>,
    /// The latest quota check.
    pub quota: Option<Observation>,
    /// The latest generic check by (kind, group, target).
    pub checks: BTreeMap<(CheckKind, Option<String>, String), Observation>,
}

/// One lineage as the log has it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The control this lineage reuses instead of launching one (LINEAGE-6).
    pub control_reused: Option<(At, ControlReused)>,
}

impl LineageState {
    /// True when both operator and reviewer signed off (FREEZE-7).
    pub fn signed_off(&self) -> bool {
        self.sign_offs.contains_key(&SignOffRole::Operator)
            && self.sign_offs.contains_key(&SignOffRole::Reviewer)
    }
}

/// Everything the decisions need, folded from the log.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// Seq of the last event applied.
    pub head_seq: Option<u64>,
    /// Frozen lineages by label.
    pub lineages: BTreeMap<String, LineageState>,
    /// Run-scoped resources claimed by frozen lineages (FREEZE-4):
    /// claim key -> (lineage, field).
    pub claims: BTreeMap<String, (String, String)>,
    /// The control catalog: accepted controls by control key (LINEAGE-6).
    pub controls: BTreeMap<String, Vec<(At, ControlRegistered)>>,
    /// Strings that look like credentials, by (lineage, group) when the
    /// event names one (the verdict's secrets row): (seq, field, shape).
    /// Filled only when the fold scans (`State::scanning`).
    pub secret_findings: BTreeMap<(String, String), Vec<(u64, String, String)>>,
    /// Whether `apply` scans every event's strings for credentials.
    pub scan_secrets: bool,
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
                        control_reused: None,
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
                g.monitor_samples += 1;
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
                    c.result_seqs.push(seq);
                    c.result.get_or_insert_with(|| (at, e.clone()));
                })
            }
            Event::SecurityRefusalRecorded(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.refusals.push((at, e.clone()));
                })
            }
            Event::CaseInvalidated(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.invalidated.get_or_insert_with(|| (at, e.clone()));
                })
            }
            Event::RequestTraced(e) => {
                self.request(&e.group.lineage, &e.group.group, &e.request_id, |r| {
                    r.traces.push((
                        seq,
                        TraceObs {
                            http_status: e.http_status,
                            status: e.status,
                            captured_at: e.captured_at.clone(),
                        },
                    ))
                })
            }
            Event::UsageRecorded(e) => {
                self.request(&e.group.lineage, &e.group.group, &e.request_id, |r| {
                    r.usage.push((
                        seq,
                        UsageObs {
                            provider_id: e.provider_id.clone(),
                            model_id: e.model_id.clone(),
                            buckets: e.buckets,
                            final_charge_micro_usd: e.final_charge_micro_usd,
                            charge_status: e.charge_status,
                            reconciliation_status: e.reconciliation_status,
                            usage_origin: e.usage_origin,
                            status: e.status.clone(),
                        },
                    ))
                })
            }
            Event::PolicyDecisionRecorded(e) => {
                let obs = DecisionObs {
                    request_id: e.request_id.clone(),
                    commitment: e
                        .ingress_request_id_sha256
                        .as_ref()
                        .map(|c| c.strip_prefix("sha256:").unwrap_or(c).to_ascii_lowercase()),
                    reason: e.reason.clone(),
                    selected_tier: e.selected_tier.clone(),
                    selected_model: e.selected_model.clone(),
                };
                self.group(&e.group.lineage, &e.group.group, |g| {
                    g.decisions.push((seq, obs))
                })
            }
            Event::ReceiptRecorded(e) => {
                self.request(&e.group.lineage, &e.group.group, &e.request_id, |r| {
                    r.receipts.push((
                        seq,
                        ReceiptObs {
                            state: e.state,
                            final_charge_micro_usd: e.final_charge_micro_usd,
                        },
                    ))
                })
            }
            Event::OutcomeRecorded(e) => match &e.request_id {
                Some(id) => self.request(&e.group.lineage, &e.group.group, id, |r| {
                    r.outcomes.push(seq)
                }),
                None => self.group(&e.group.lineage, &e.group.group, |g| {
                    g.task_outcomes.push((
                        seq,
                        TaskOutcome {
                            trial_name: e.trial_name.clone(),
                            task_id: e.task_id.clone(),
                            reward: e.reward.clone(),
                        },
                    ))
                }),
            },
            Event::CleanupAudited(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.cleanup = Some((at, e.clone()));
            }),
            Event::ControlRegistered(e) => {
                self.controls
                    .entry(e.control_key.clone())
                    .or_default()
                    .push((at, e.clone()));
            }
            Event::ControlReused(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.control_reused.get_or_insert_with(|| (at, e.clone()));
                }
            }
            _ => {}
        }
        if self.scan_secrets {
            self.scan(seq, event);
        }
    }

    /// Scans every string of `event` for credential shapes (the verdict's
    /// secrets row). The append path refuses such events, so a finding means
    /// the log was written around the guard (e.g. an imported export).
    fn scan(&mut self, seq: u64, event: &Event) {
        if !event.any_string(&mut |s| crate::secrets::scan(s).is_some()) {
            return;
        }
        let strings = event.strings();
        let owner = || {
            let json = event.payload_json();
            let group = json.get("group");
            let lineage = group
                .and_then(|g| g.get("lineage"))
                .or_else(|| json.get("lineage"))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string();
            let group = group
                .and_then(|g| g.get("group"))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string();
            (lineage, group)
        };
        for (path, value) in strings {
            if let Some(found) = crate::secrets::scan(&value) {
                self.secret_findings.entry(owner()).or_default().push((
                    seq,
                    format!("{}.{path}", event.kind()),
                    found.shape.to_string(),
                ));
            }
        }
    }

    fn request(&mut self, lineage: &str, group: &str, id: &str, f: impl FnOnce(&mut RequestState)) {
        self.group(lineage, group, |g| {
            f(g.requests.entry(id.to_string()).or_default())
        });
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

impl State {
    /// An empty state whose fold also scans every event for credentials.
    pub fn scanning() -> State {
        State {
            scan_secrets: true,
            ..State::default()
        }
    }
}

/// Folds the verified log into a `State` (without the secret scan: what
/// `decide` needs before an append).
pub fn replay(ledger: &Ledger) -> Result<State> {
    replay_into(ledger, State::default())
}

/// Folds the verified log into a `State` with the secret scan: what the
/// verdict, `gate`, `group seal` and `audit` need.
pub fn replay_scanning(ledger: &Ledger) -> Result<State> {
    replay_into(ledger, State::scanning())
}

fn replay_into(ledger: &Ledger, state: State) -> Result<State> {
    replay_until(ledger, state, u64::MAX)
}

/// Folds the verified log up to and including `seq_max` into `state`: every
/// projection as of that seq (`replay --at`, `audit`).
pub fn replay_until(ledger: &Ledger, mut state: State, seq_max: u64) -> Result<State> {
    for v in ledger.records()? {
        let v = v?;
        let r = &v.decoded.record;
        if r.seq > seq_max {
            break;
        }
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
