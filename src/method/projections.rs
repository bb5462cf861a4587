//! Projections: pure folds over the events. No I/O, no clock, no env.
//!
//! `State::apply` is infallible for every event `decide` can produce; the
//! state is rebuilt from the verified log by `replay` and is never stored.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::ledger::Ledger;
use crate::method::observations::{refute, Refutation};
use crate::schema::events::{
    CaseInvalidated, CaseLaunched, CaseRef, CaseStarted, ChargeStatus, CheckKind, CheckRecorded,
    CleanupAudited, CommandKilled, ControlRegistered, ControlReused, CredentialFound, Event,
    EvidenceRefused, FeedbackApplied, GroupOpened, GroupRef, GroupSealed, HarborJobRecorded,
    LineageStopped, ManifestFrozen, Protocol, ReceiptState, ReconciliationStatus, RunLeased,
    SecurityRefusalRecorded, SignOffRole, Status, TokenBuckets, TraceStatus, TrialFactsRecorded,
    TrialResultRecordedV2, UsageOrigin,
};
use crate::schema::manifest::{CentralLaunch, ExcludedTask};
use crate::schema::plan::Plan;
use crate::schema::verdict::VerdictStatus;

/// The version of the projection code; attested in sealed verdicts so an
/// audit can tell which logic produced them. 2: evidence binding (BIND-1..9)
/// and the two evidence planes (PLANE-1). 3: the secrets row names a
/// leaked credential's shape in plain words ("quotes a credential of shape
/// api_key_assignment", was "quotes a api_key_assignment"); nothing else.
pub const PROJECTION_VERSION: u32 = 3;

/// The oldest projection version this build derives a verdict as: `audit`
/// re-derives each sealed verdict as the version it attests, so a wording
/// a later version changed still verifies word for word.
pub const PROJECTION_VERSION_OLDEST: u32 = 2;

/// Where an event sits in the log: its seq and when it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct At {
    pub seq: u64,
    /// The record's `recorded_at_utc_ns`.
    pub utc_ns: u64,
}

crate::schema::named::named_enum! {
    /// The states of a case identity (CASE-1).
    pub enum CaseStatus {
        /// Never started: the only state that may launch.
        NotStarted = "not_started",
        /// Started, no terminal evidence yet. Consumed forever (CASE-2).
        Started = "started",
        /// A complete TrialResult: the verifier ran, a reward exists, and the
        /// exception is empty or an accepted typed condition (CASE-3).
        TerminalValid = "terminal_valid",
        /// Terminal without a valid TrialResult.
        TerminalInvalid = "terminal_invalid",
    }
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
    /// Its Harbor TrialResult, if ingested (a `trial_result_recorded.v1` in
    /// its v2 form: no content digest, no reward files).
    pub result: Option<(At, TrialResultRecordedV2)>,
    /// Seqs of every TrialResult of this identity (exactly one is the rule).
    pub result_seqs: Vec<u64>,
    /// The timestamps and attempt counts of its first result (BIND-11).
    pub facts: Option<(At, Box<TrialFactsRecorded>)>,
    /// Its sanitized 403 evidence (CASE-6).
    pub refusals: Vec<(At, SecurityRefusalRecorded)>,
    /// Made terminal-invalid on non-result evidence (CASE-3, CASE-8).
    pub invalidated: Option<(At, CaseInvalidated)>,
    /// The process it was launched as (RUN-3), if recorded.
    pub launched: Option<(At, CaseLaunched)>,
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
    pub requests: BTreeMap<Sym, RequestState>,
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
    /// The Harbor job directories ingested for the group, with their retry
    /// settings (BIND-1, CASE-5).
    pub jobs: Vec<(At, HarborJobRecorded)>,
    /// Credential shapes found in the group's ingested files (BIND-8).
    pub leaks: Vec<(At, CredentialFound)>,
    /// Seq of the latest monitor sample (RUN-5: one after each case's exit).
    pub monitor_last_seq: Option<u64>,
    /// The latest lease of a driver on the group (RUN-2).
    pub lease: Option<(At, RunLeased)>,
    /// Commands killed at their deadlines (RUN-4).
    pub kills: Vec<(At, CommandKilled)>,
    /// Evidence files offered to the group and refused by a rule, kept
    /// without their content (BIND-12).
    pub refused_files: Vec<(At, EvidenceRefused)>,
    /// Each request's charge on the series the spend limit counts, kept as
    /// its evidence arrives (SETTLE-6, RUN-7).
    pub spend: SpendState,
}

/// The group's spend on the actual and notional series (SETTLE-6's figure):
/// each request's charge as `settle_request` gives it, refreshed whenever a
/// record touches the request, so the driver's spend check per step costs
/// O(groups), not O(requests) (RUN-7). Equal to the sum over a fresh
/// `verdict::settlement` by construction; `matches_settlement` checks it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpendState {
    charges: BTreeMap<Sym, u64>,
    total: u128,
}

impl SpendState {
    /// The group's spend, micro-USD (saturating at `u64::MAX`, as the
    /// settlement's own sums do).
    pub fn total_micro_usd(&self) -> u64 {
        u64::try_from(self.total).unwrap_or(u64::MAX)
    }

    /// Records `id`'s current counted charge (`None`: not counted).
    fn set(&mut self, id: &Sym, charge: Option<u64>) {
        let old = match charge {
            Some(c) => self.charges.insert(id.clone(), c),
            None => self.charges.remove(id.as_ref()),
        };
        let kept = self
            .total
            .checked_sub(u128::from(old.unwrap_or(0)))
            .expect("the total holds every kept charge");
        self.total = kept + u128::from(charge.unwrap_or(0));
    }

    /// Whether the kept figure equals a fresh settlement of `g` under `m`.
    pub fn matches_settlement(
        &self,
        m: &crate::schema::manifest::ManifestFile,
        g: &GroupState,
    ) -> bool {
        let fresh = crate::method::verdict::settlement(m, g)
            .series_micro_usd
            .into_iter()
            .filter(|(s, _)| s.counts_toward_spend())
            .fold(0u64, |a, (_, v)| a.saturating_add(v));
        fresh == self.total_micro_usd()
    }
}

/// A trace as the join needs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraceObs {
    /// The HTTP status the daemon answered.
    pub http_status: u16,
    /// Completed, failed or cancelled.
    pub status: TraceStatus,
    /// When the daemon captured it (RFC 3339 text as recorded).
    pub captured_at: Box<str>,
    /// The wire protocol of the request (PLANE-1 keys reliability by it).
    pub protocol: Protocol,
}

/// A usage row as settlement needs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UsageObs {
    /// The provider that served it.
    pub provider_id: Sym,
    /// The model that served it.
    pub model_id: Sym,
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
    pub status: Option<Sym>,
}

/// A policy decision as the join and replay rows need it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DecisionObs {
    /// The persisted request id, if recorded (shares the request key).
    pub request_id: Option<Sym>,
    /// The ingress commitment (`sha256:` prefix removed), if recorded.
    pub commitment: Option<Commitment>,
    /// The decision reason (REPORT-5).
    pub reason: Sym,
    pub selected_tier: Option<Sym>,
    pub selected_model: Option<Sym>,
}

/// A decision's ingress commitment: 32 bytes when it is 64 hex digits (as
/// `ingest decisions` requires), else the text as recorded (lowercased).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Commitment {
    /// A SHA-256, from 64 hex digits.
    Sha256([u8; 32]),
    /// Anything else, kept as text.
    Other(Box<str>),
}

impl Commitment {
    /// From the recorded text (`sha256:` prefix optional, any case).
    pub fn parse(text: &str) -> Commitment {
        let t = text
            .strip_prefix("sha256:")
            .unwrap_or(text)
            .to_ascii_lowercase();
        let mut out = [0u8; 32];
        match hex::decode_to_slice(&t, &mut out) {
            Ok(()) => Commitment::Sha256(out),
            Err(_) => Commitment::Other(t.into()),
        }
    }

    /// Lowercase hex (or the text as recorded, lowercased).
    pub fn hex(&self) -> String {
        match self {
            Commitment::Sha256(b) => hex::encode(b),
            Commitment::Other(t) => t.to_string(),
        }
    }
}

/// An authoritative settlement receipt (SETTLE-4, SETTLE-5).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReceiptObs {
    pub state: ReceiptState,
    /// Its charge when computed.
    pub final_charge_micro_usd: Option<u64>,
}

/// A task-scoped verifier outcome (JOIN-3).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskOutcome {
    /// Harbor's trial name, if recorded.
    pub trial_name: Option<Sym>,
    pub task_id: Sym,
    /// The reward, decimal text.
    pub reward: Sym,
}

/// Everything recorded under one persisted request id of a group. Each list
/// holds (seq, observation); more than one entry in a list is a duplicate
/// the verdict reports (JOIN-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestState {
    /// Trace rows (T).
    pub traces: One<(u64, TraceObs)>,
    /// Usage rows (U).
    pub usage: One<(u64, UsageObs)>,
    /// Receipts, in log order; the latest is authoritative.
    pub receipts: One<(u64, ReceiptObs)>,
    /// Request-scoped outcomes (R): seq and reward text as written.
    pub outcomes: One<(u64, Sym)>,
}

/// A list that almost always holds exactly one item (one trace, one usage
/// row, one receipt per request): that item is stored inline, so a
/// replayed request costs no allocation per list. Encodes as a sequence,
/// like `Vec`.
pub type One<T> = smallvec::SmallVec<[T; 1]>;

impl GroupState {
    /// True when sealed `accepted`.
    pub fn accepted(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|(_, s)| VerdictStatus::Accepted.is(&s.status))
    }

    /// Cases started and not terminal (CASE-7).
    pub fn running(&self, accepted_exceptions: &[String]) -> usize {
        self.cases
            .values()
            .filter(|c| c.status(accepted_exceptions) == CaseStatus::Started)
            .count()
    }
}

/// The latest observation of a gate: when, pass or fail, and whether its
/// numbers earn a pass (BIND-6).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Observation {
    /// Where it sits in the log.
    pub at: At,
    /// Pass or fail, as recorded.
    pub status: Status,
    /// Why its recorded numbers do not earn a pass, judged against the
    /// frozen manifest when it was folded (BIND-6, BIND-7); `None` when they
    /// do (and for a fail).
    pub refuted: Option<Refutation>,
}

/// Who signed off in a role, and at which seq (FREEZE-7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignOff {
    /// The name (or key) that signed.
    pub name: String,
    /// The seq of the sign-off record.
    pub seq: u64,
}

/// The first lineage that claimed a run-scoped resource (FREEZE-4).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Claim {
    /// The lineage that claimed it.
    pub lineage: String,
    /// The manifest field that named it.
    pub field: String,
}

/// A credential shape found in a stored string (the secrets row).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SecretFinding {
    pub seq: u64,
    /// `<kind>.<field path>` of the string.
    pub field: String,
    /// The shape's name (never the value).
    pub shape: String,
}

/// What a generic gate observation is about: the latest one per key counts.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct CheckKey {
    /// The kind of check.
    pub kind: CheckKind,
    /// The group it was for, if any.
    pub group: Option<String>,
    /// Its target (a gate target, a config hash, a URL).
    pub target: String,
}

/// The latest gate observations of a lineage (GATE-1..3).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gates {
    /// The latest STS identity proof.
    pub identity: Option<Observation>,
    /// The latest quota check.
    pub quota: Option<Observation>,
    /// The vCPUs the latest quota check found available (RUN-1: a wave
    /// launches no more sandboxes than they cover).
    pub quota_available_vcpu: u64,
    /// The latest generic check by (kind, group, target).
    pub checks: BTreeMap<CheckKey, Observation>,
}

impl Gates {
    /// The latest observation of `kind`, for `group` and `target` where
    /// given (any where not): what `case start` and `run` look up.
    pub fn latest_check(
        &self,
        kind: CheckKind,
        group: Option<&str>,
        target: Option<&str>,
    ) -> Option<&Observation> {
        self.checks
            .iter()
            .filter(|(key, _)| {
                key.kind == kind
                    && group.is_none_or(|want| key.group.as_deref() == Some(want))
                    && target.is_none_or(|want| key.target == want)
            })
            .map(|(_, observation)| observation)
            .max_by_key(|observation| observation.at.seq)
    }
}

/// One lineage as the log has it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LineageState {
    /// Seq of the `manifest_frozen` event.
    pub frozen_seq: u64,
    /// The frozen manifest and its keys (the v1 fields of either version).
    pub frozen: ManifestFrozen,
    /// The plan of a v2 lineage (`None` for a lineage frozen as v1).
    pub plan: Option<Plan>,
    /// Sign-offs by role: (name, seq).
    pub sign_offs: BTreeMap<SignOffRole, SignOff>,
    /// The verifier key (as the frozen plan lists it) of each role's signed
    /// sign-off that counts (TRUST-3); only these satisfy FREEZE-7 for a v2
    /// lineage.
    pub sign_off_keys: BTreeMap<SignOffRole, String>,
    /// Groups with anything recorded, by name.
    pub groups: BTreeMap<String, GroupState>,
    /// The latest gate observations.
    pub gates: Gates,
    /// A hard stop, if one was recorded.
    pub stopped: Option<(At, LineageStopped)>,
    /// The control this lineage reuses instead of launching one (LINEAGE-6).
    pub control_reused: Option<(At, ControlReused)>,
    /// How its central host is launched (`manifest_frozen.v3`), if frozen.
    pub central_launch: Option<CentralLaunch>,
    /// Tasks left out before the freeze (`manifest_frozen.v3`; CLASS-1).
    pub excluded_tasks: Vec<ExcludedTask>,
    /// The latest `central_host` and `central_teardown` observations as
    /// recorded (what the report's topology names).
    pub central_seen: BTreeMap<CheckKind, (At, CheckRecorded)>,
    /// The frozen witnesses and quorum (`manifest_frozen.v3`; TRUST-6).
    pub witnessing: Option<crate::schema::manifest::Witnessing>,
    /// The cosignatures recorded for it, in log order (TRUST-6; whether
    /// each counts is `method::witness::counts`).
    pub cosigned: Vec<crate::schema::events::CheckpointCosigned>,
}

impl LineageState {
    /// True when both operator and reviewer signed off (FREEZE-7): for a v2
    /// lineage with keys the frozen plan lists (TRUST-3), for a v1 lineage
    /// by name.
    pub fn signed_off(&self) -> bool {
        let roles = [SignOffRole::Operator, SignOffRole::Reviewer];
        match self.plan {
            Some(_) => roles.iter().all(|r| self.sign_off_keys.contains_key(r)),
            None => roles.iter().all(|r| self.sign_offs.contains_key(r)),
        }
    }
}

/// A signed sign-off that counts (TRUST-3, checked again here: a record
/// that was not appended by `decide` counts only if it holds) takes its
/// role, replacing a name-only one in the report's list.
fn signed_off_with_key(
    l: &mut LineageState,
    seq: u64,
    s: &crate::schema::events::ManifestSignedOffV2,
) {
    if l.sign_off_keys.contains_key(&s.role) {
        return;
    }
    if let Ok(key) = crate::method::trust::check_sign_off(l, s) {
        l.sign_off_keys.insert(s.role, key);
        l.sign_offs.insert(
            s.role,
            SignOff {
                name: s.key_name.clone(),
                seq,
            },
        );
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
    pub claims: BTreeMap<String, Claim>,
    /// The control catalog: accepted controls by control key (LINEAGE-6).
    pub controls: BTreeMap<String, Vec<(At, ControlRegistered)>>,
    /// Strings that look like credentials, by (lineage, group) when the
    /// event names one (the verdict's secrets row): (seq, field, shape).
    /// Filled only when the fold scans (`State::scanning`).
    pub secret_findings: BTreeMap<GroupRef, Vec<SecretFinding>>,
    /// Whether `apply` scans every event's strings for credentials.
    pub scan_secrets: bool,
    /// One shared copy of each repeated string of the request evidence
    /// (providers, models, reasons, tiers): not state, not encoded.
    #[serde(skip)]
    pub syms: Interner,
}

/// A shared, immutable string of the replayed state (interned by
/// `Interner`): compares, orders and encodes exactly like the `String` it
/// holds.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym(std::sync::Arc<str>);

impl Sym {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Sym {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Sym {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Sym {
        Sym(s.into())
    }
}

impl From<String> for Sym {
    fn from(s: String) -> Sym {
        Sym(s.into())
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Sym {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Sym> for String {
    fn eq(&self, other: &Sym) -> bool {
        **self == *other.0
    }
}

impl serde::Serialize for Sym {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Sym {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Sym, D::Error> {
        String::deserialize(d).map(Sym::from)
    }
}

/// The set of shared strings behind `Sym`s. It is a memory optimisation,
/// not state: two interners always compare equal.
#[derive(Clone, Default)]
pub struct Interner(std::collections::BTreeSet<Sym>);

impl Interner {
    /// The shared copy of `s`.
    pub fn sym(&mut self, s: &str) -> Sym {
        if let Some(found) = self.0.get(s) {
            return found.clone();
        }
        let sym = Sym::from(s);
        self.0.insert(sym.clone());
        sym
    }

    /// `sym` of an optional string.
    pub fn opt(&mut self, s: Option<&String>) -> Option<Sym> {
        s.map(|s| self.sym(s))
    }
}

impl PartialEq for Interner {
    fn eq(&self, _: &Interner) -> bool {
        true
    }
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Interner({} strings)", self.0.len())
    }
}

impl State {
    /// Applies one event. Infallible: anything `decide` produced folds, and
    /// what a projection does not need is ignored.
    pub fn apply(&mut self, at: At, event: &Event) {
        // Later records sit at later seqs; a fold never moves the head back
        // (a programmer error: the verified walk hands out seqs in order).
        assert!(
            self.head_seq.is_none_or(|h| h < at.seq),
            "events applied out of order: seq {} after {:?}",
            at.seq,
            self.head_seq
        );
        self.head_seq = Some(at.seq);
        let _folded = self.apply_lineage_event(at, event)
            || self.apply_group_event(at, event)
            || self.apply_case_event(at, event)
            || self.apply_request_event(at, event);
        if self.scan_secrets {
            self.scan(at.seq, event);
        }
    }

    /// A lineage frozen at `seq`: its run-scoped claims (FREEZE-4) and its
    /// state.
    fn frozen(&mut self, seq: u64, frozen: ManifestFrozen, plan: Option<Plan>) {
        for (key, field) in frozen.manifest.public.run_scoped_claims() {
            self.claims.entry(key).or_insert_with(|| Claim {
                lineage: frozen.lineage.clone(),
                field,
            });
        }
        self.lineages.insert(
            frozen.lineage.clone(),
            LineageState {
                frozen_seq: seq,
                frozen,
                plan,
                sign_offs: BTreeMap::new(),
                sign_off_keys: BTreeMap::new(),
                groups: BTreeMap::new(),
                gates: Gates::default(),
                stopped: None,
                control_reused: None,
                central_launch: None,
                excluded_tasks: Vec::new(),
                central_seen: BTreeMap::new(),
                witnessing: None,
                cosigned: Vec::new(),
            },
        );
    }

    /// Lineage-level events: the frozen manifest, sign-offs, gate observations, stops and the control catalog. Returns whether `event` was one of them.
    fn apply_lineage_event(&mut self, at: At, event: &Event) -> bool {
        let seq = at.seq;
        match event {
            Event::ManifestFrozen(f) => self.frozen(seq, (**f).clone(), None),
            Event::ManifestFrozenV2(f) => self.frozen(seq, f.v1_view(), Some(f.plan.clone())),
            Event::ManifestFrozenV3(f) => {
                let (v2, launch, excluded) = f.split();
                self.frozen(seq, v2.v1_view(), Some(v2.plan));
                if let Some(l) = self.lineages.get_mut(&f.lineage) {
                    l.central_launch = launch;
                    l.excluded_tasks = excluded;
                    l.witnessing = f.witnessing.clone();
                }
            }
            Event::CheckpointCosigned(c) => {
                if let Some(l) = self.lineages.get_mut(&c.lineage) {
                    l.cosigned.push(c.clone());
                }
            }
            Event::ManifestSignedOff(s) => {
                if let Some(l) = self.lineages.get_mut(&s.lineage) {
                    l.sign_offs.entry(s.role).or_insert_with(|| SignOff {
                        name: s.name.clone(),
                        seq,
                    });
                }
            }
            Event::ManifestSignedOffV2(s) => {
                if let Some(l) = self.lineages.get_mut(&s.lineage) {
                    signed_off_with_key(l, seq, s);
                }
            }
            Event::IdentityChecked(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    let refuted = refute(l, event);
                    l.gates.identity = Some(Observation {
                        at,
                        status: e.status,
                        refuted,
                    });
                }
            }
            Event::QuotaChecked(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    let refuted = refute(l, event);
                    l.gates.quota = Some(Observation {
                        at,
                        status: e.status,
                        refuted,
                    });
                    l.gates.quota_available_vcpu = e.available_vcpu;
                }
            }
            Event::CheckRecorded(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    let refuted = refute(l, event);
                    if matches!(e.check, CheckKind::CentralHost | CheckKind::CentralTeardown) {
                        l.central_seen.insert(e.check, (at, e.clone()));
                    }
                    l.gates.checks.insert(
                        CheckKey {
                            kind: e.check,
                            group: e.group.clone(),
                            target: e.target.clone(),
                        },
                        Observation {
                            at,
                            status: e.status,
                            refuted,
                        },
                    );
                }
            }
            Event::LineageStopped(e) => {
                if let Some(l) = self.lineages.get_mut(&e.lineage) {
                    l.stopped.get_or_insert_with(|| (at, e.clone()));
                }
            }
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
            _ => return false,
        }
        true
    }

    /// A group's lifecycle: open, close, seal, feedback, monitor samples and cleanup audits. Returns whether `event` was one of them.
    fn apply_group_event(&mut self, at: At, event: &Event) -> bool {
        match event {
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
                g.monitor_last_seq = Some(at.seq);
            }),
            Event::RunLeased(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.lease = Some((at, e.clone()));
            }),
            Event::CommandKilled(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.kills.push((at, e.clone()));
            }),
            Event::CleanupAudited(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.cleanup = Some((at, e.clone()));
            }),
            Event::HarborJobRecorded(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.jobs.push((at, e.clone()));
            }),
            Event::CredentialFound(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.leaks.push((at, e.clone()));
            }),
            Event::EvidenceRefused(e) => self.group(&e.group.lineage, &e.group.group, |g| {
                g.refused_files.push((at, e.clone()));
            }),
            _ => return false,
        }
        true
    }

    /// A case's lifecycle: started, process exit, TrialResult, refusal evidence, invalidation. Returns whether `event` was one of them.
    fn apply_case_event(&mut self, at: At, event: &Event) -> bool {
        let seq = at.seq;
        match event {
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
                    c.result.get_or_insert_with(|| (at, e.to_v2()));
                })
            }
            Event::TrialResultRecordedV2(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.result_seqs.push(seq);
                    c.result.get_or_insert_with(|| (at, (**e).clone()));
                })
            }
            Event::SecurityRefusalRecorded(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.refusals.push((at, e.clone()));
                })
            }
            Event::TrialFactsRecorded(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.facts.get_or_insert_with(|| (at, Box::new(e.clone())));
                })
            }
            Event::CaseInvalidated(e) => {
                self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                    c.invalidated.get_or_insert_with(|| (at, e.clone()));
                })
            }
            Event::CaseLaunched(e) => self.case(&e.group.lineage, &e.group.group, &e.case, |c| {
                c.launched.get_or_insert_with(|| (at, e.clone()));
            }),
            _ => return false,
        }
        true
    }

    /// Request evidence by persisted request id: traces, usage, decisions, receipts, outcomes. Returns whether `event` was one of them.
    fn apply_request_event(&mut self, at: At, event: &Event) -> bool {
        let seq = at.seq;
        match event {
            Event::RequestTraced(e) => {
                self.request(&e.group.lineage, &e.group.group, &e.request_id, |r| {
                    r.traces.push((
                        seq,
                        TraceObs {
                            http_status: e.http_status,
                            status: e.status,
                            captured_at: e.captured_at.as_str().into(),
                            protocol: e.protocol,
                        },
                    ))
                })
            }
            Event::UsageRecorded(e) => {
                let obs = UsageObs {
                    provider_id: self.syms.sym(&e.provider_id),
                    model_id: self.syms.sym(&e.model_id),
                    buckets: e.buckets,
                    final_charge_micro_usd: e.final_charge_micro_usd,
                    charge_status: e.charge_status,
                    reconciliation_status: e.reconciliation_status,
                    usage_origin: e.usage_origin,
                    status: self.syms.opt(e.status.as_ref()),
                };
                self.request(&e.group.lineage, &e.group.group, &e.request_id, |r| {
                    r.usage.push((seq, obs))
                })
            }
            Event::PolicyDecisionRecorded(e) => {
                let request_id = e
                    .request_id
                    .as_deref()
                    .map(|id| self.request_key(&e.group.lineage, &e.group.group, id));
                let obs = DecisionObs {
                    request_id,
                    commitment: e
                        .ingress_request_id_sha256
                        .as_deref()
                        .map(Commitment::parse),
                    reason: self.syms.sym(&e.reason),
                    selected_tier: self.syms.opt(e.selected_tier.as_ref()),
                    selected_model: self.syms.opt(e.selected_model.as_ref()),
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
                Some(id) => {
                    let reward = self.syms.sym(&e.reward);
                    self.request(&e.group.lineage, &e.group.group, id, |r| {
                        r.outcomes.push((seq, reward))
                    })
                }
                None => {
                    let obs = TaskOutcome {
                        trial_name: self.syms.opt(e.trial_name.as_ref()),
                        task_id: self.syms.sym(&e.task_id),
                        reward: self.syms.sym(&e.reward),
                    };
                    self.group(&e.group.lineage, &e.group.group, |g| {
                        g.task_outcomes.push((seq, obs))
                    })
                }
            },
            _ => return false,
        }
        true
    }

    /// Scans every string of `event` for credential shapes (the verdict's
    /// secrets row). The append path refuses such events, so a finding means
    /// the log was written around the guard (e.g. an imported export).
    fn scan(&mut self, seq: u64, event: &Event) {
        if !event.any_string(&mut |s| crate::schema::secrets::scan(s).is_some()) {
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
            GroupRef { lineage, group }
        };
        for (path, value) in strings {
            if let Some(found) = crate::schema::secrets::scan(&value) {
                self.secret_findings
                    .entry(owner())
                    .or_default()
                    .push(SecretFinding {
                        seq,
                        field: format!("{}.{path}", event.kind()),
                        shape: found.shape.to_string(),
                    });
            }
        }
    }

    /// Applies `f` to the request's evidence, then refreshes its counted
    /// charge in the group's spend (SETTLE-6, RUN-7).
    fn request(&mut self, lineage: &str, group: &str, id: &str, f: impl FnOnce(&mut RequestState)) {
        let Some(l) = self.lineages.get_mut(lineage) else {
            return;
        };
        let m = &l.frozen.manifest.public;
        let g = l.groups.entry(group.to_string()).or_default();
        let (key, r) = match g.requests.get_key_value(id) {
            Some((k, _)) => {
                let k = k.clone();
                let r = g.requests.get_mut(id).expect("the key was just found");
                (k, r)
            }
            None => {
                let k = Sym::from(id);
                (k.clone(), g.requests.entry(k).or_default())
            }
        };
        f(r);
        let s = crate::method::verdict::settle_request(m, id, r);
        let counted = s
            .charge_micro_usd
            .filter(|_| s.series.counts_toward_spend());
        g.spend.set(&key, counted);
    }

    /// The request map's own key for `id` when the group has one (no copy),
    /// else a new `Sym`.
    fn request_key(&self, lineage: &str, group: &str, id: &str) -> Sym {
        self.lineages
            .get(lineage)
            .and_then(|l| l.groups.get(group))
            .and_then(|g| g.requests.get_key_value(id))
            .map_or_else(|| Sym::from(id), |(k, _)| k.clone())
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
                    "no frozen lineage {} in this ledger (frozen: {:?})",
                    crate::schema::secrets::echo_name(l),
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
pub fn replay_until(ledger: &Ledger, state: State, seq_max: u64) -> Result<State> {
    replay_until_observed(ledger, state, seq_max, &mut |_| {})
}

/// [`replay_until`], calling `folded` with the seq of each record once it
/// is folded: the counter a caller's progress display reads (the library
/// draws nothing).
pub fn replay_until_observed(
    ledger: &Ledger,
    mut state: State,
    seq_max: u64,
    folded: &mut dyn FnMut(u64),
) -> Result<State> {
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
        folded(r.seq);
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::CaseStatus;

    #[test]
    fn case_status_as_str_is_the_serde_name() {
        crate::schema::named::assert_serde_names(CaseStatus::ALL, CaseStatus::as_str);
    }
}
