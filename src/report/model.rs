//! The report's data: [`Report`] and its parts, one struct per REPORT-6
//! section, each serializable to the JSON form that the markdown and the
//! chart are rendered from. The report's own enumerations are named enums
//! (`crate::schema::named::named_enum!`): the text of each value is its
//! serde name and its `as_str`.
//!
//! A few parts are shown in the JSON as arrays (`["what", "value"]`): they
//! are named structs here whose serialization is that array
//! ([`serialize_as_array!`]), so the JSON form is what it always was.

use std::collections::BTreeMap;

use serde::Serialize;

use super::bootstrap::Interval;
use super::numbers::{Cumulative, Money, Ratio};
use crate::method::verdict::Planes;
use crate::schema::named::named_enum;

named_enum! {
    /// The kind of cost basis every cost claim of a report uses (SETTLE-6).
    pub enum BasisKind {
        /// One series every compared group's charges belong to.
        Series = "series",
        /// Usage x the frozen price snapshot (a notional series).
        FrozenPrices = "frozen_prices",
        /// No common basis: no cost claim.
        None = "none",
    }
}

named_enum! {
    /// How the chart draws a group.
    pub enum ChartMarker {
        /// Sealed `accepted`: a filled dot.
        Accepted = "accepted",
        /// Sealed with a rejection: a red cross, diagnostics only.
        Rejected = "rejected",
        /// Not sealed yet: an open circle.
        Unsealed = "unsealed",
    }
}

named_enum! {
    /// The go/no-go decision (section 12).
    pub enum Decision {
        /// Every predeclared round accepted, comparable and within tolerance.
        Go = "GO",
        /// A group is rejected, the lineage stopped, or a check fails.
        NoGo = "NO-GO",
        /// Groups are still open and none is rejected.
        Undecided = "UNDECIDED",
    }
}

named_enum! {
    /// The REPORT-5 category of a request's routing decision.
    pub enum Category {
        /// `exploration_trial`: the learning cost.
        Exploration = "exploration",
        /// `exploration_locked`: a learned lock.
        LearnedReplacement = "learned_replacement",
        /// `static_table`: the operator-authored static route.
        StaticRoute = "static_route",
        /// `reliability_*`, or a served model other than the selected one.
        Fallback = "fallback",
        /// `adequacy_pin`, `progress_guard`.
        Escalation = "escalation",
        /// Any other reason (`tool_guardrail`, `continuation_pin`, ...).
        Other = "other",
        /// A request without a policy decision.
        NoDecision = "no_decision",
    }
}

/// The REPORT-5 category of a BitRouter decision reason
/// (bitrouter-formats section 3): `static_table` is the operator-authored
/// static route, `exploration_trial` exploration (learning cost),
/// `exploration_locked` a learned replacement, `adequacy_pin` and
/// `progress_guard` escalation, `reliability_*` fallback. Everything else
/// (`tool_guardrail`, `continuation_pin`, `no_match`, ...) is `other`. A
/// served model that differs from the selected one is a fallback whatever
/// the reason (the report checks that before asking this).
pub fn category(reason: &str) -> Category {
    match reason {
        "static_table" => Category::StaticRoute,
        "exploration_trial" => Category::Exploration,
        "exploration_locked" => Category::LearnedReplacement,
        "adequacy_pin" | "progress_guard" => Category::Escalation,
        other if other.starts_with("reliability_") => Category::Fallback,
        _ => Category::Other,
    }
}

named_enum! {
    /// The request-id sets of a group's join audit (JOIN-1).
    pub enum RequestIdSet {
        /// T: traces.
        Traces = "T",
        /// U: usage rows.
        Usage = "U",
        /// D: policy decisions.
        Decisions = "D",
        /// R: request outcomes.
        Outcomes = "R",
    }
}

named_enum! {
    /// Which notional amount a cache-read sensitivity row reprices.
    pub enum SensitivitySource {
        /// A group's cost on the frozen-price basis: every request, usage x
        /// the frozen price snapshot.
        FrozenPriceBasis = "frozen_price_basis",
        /// A group's own notional series: its requests charged at a cited
        /// list price.
        NotionalSeries = "notional_series",
    }
}

named_enum! {
    /// A difference of request-id sets that a failing `requests` row counts
    /// (JOIN-1); the ids behind the count are listed where the row is shown.
    pub enum JoinDifference {
        /// T \ U: traces without a usage row.
        MissingUsage = "missing_usage",
        /// U \ T: usage rows without a trace.
        ExtraUsage = "extra_usage",
        /// T \ D: traces without a decision.
        MissingDecisions = "missing_decisions",
        /// D \ T: decisions without a trace.
        ExtraDecisions = "extra_decisions",
        /// T \ R: traces without a request outcome.
        MissingOutcomes = "missing_outcomes",
        /// R \ T: request outcomes without a trace.
        ExtraOutcomes = "extra_outcomes",
    }
}

impl JoinDifference {
    /// How the markdown and the terminal name it (`extra usage`).
    pub fn words(self) -> &'static str {
        match self {
            JoinDifference::MissingUsage => "missing usage",
            JoinDifference::ExtraUsage => "extra usage",
            JoinDifference::MissingDecisions => "missing decisions",
            JoinDifference::ExtraDecisions => "extra decisions",
            JoinDifference::MissingOutcomes => "missing outcomes",
            JoinDifference::ExtraOutcomes => "extra outcomes",
        }
    }
}

/// The request ids behind one counted difference of a failing join row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffendingIds {
    /// Which difference.
    pub set: JoinDifference,
    /// Every id in it (the markdown and the terminal name at most
    /// [`super::JOIN_IDS_SHOWN`], then how many more).
    pub ids: Vec<String>,
}

/// Implements `Serialize` for a struct with named fields as the array of
/// those fields in order (serde's form of a tuple).
macro_rules! serialize_as_array {
    ($name:ident { $($field:ident),+ $(,)? }) => {
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                ($(&self.$field,)+).serialize(serializer)
            }
        }
    };
}
pub(crate) use serialize_as_array;

/// A labelled value of the frozen tuple (software, topology, limits,
/// hashes). JSON: `["what", "value"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// What it is.
    pub what: String,
    pub value: String,
}
serialize_as_array!(Fact { what, value });

impl Fact {
    /// `what`: `value`.
    pub fn new(what: impl Into<String>, value: impl Into<String>) -> Fact {
        Fact {
            what: what.into(),
            value: value.into(),
        }
    }
}

/// A sign-off of the manifest. JSON: `["role", "name", seq]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignOffLine {
    /// `operator` or `reviewer`.
    pub role: String,
    /// Who signed.
    pub name: String,
    /// Seq of the sign-off.
    pub seq: u64,
}
serialize_as_array!(SignOffLine { role, name, seq });

/// The size of one request-id set. JSON: `["T", 26]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetSize {
    /// Which set.
    pub set: RequestIdSet,
    /// Its distinct ids.
    pub size: u64,
}
serialize_as_array!(SetSize { set, size });

/// The lineage's hard stop. JSON: `[seq, "rule", "reason"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopLine {
    /// Seq of the stop.
    pub seq: u64,
    /// The rule that stopped it.
    pub rule: String,
    /// What happened.
    pub reason: String,
}
serialize_as_array!(StopLine { seq, rule, reason });

/// A sealed verdict. JSON: `["group", seq, "status"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedLine {
    pub group: String,
    /// Seq of its seal.
    pub seq: u64,
    /// The sealed status.
    pub status: String,
}
serialize_as_array!(SealedLine { group, seq, status });

/// The ledger head the report was computed at (the caller reads it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LedgerHead {
    /// Seq of the head record.
    pub head_seq: u64,
    /// Its hash, hex.
    pub head_hash: String,
}

/// Section 1: hypothesis, class, allowed claim, tolerances (CLASS-2, CLASS-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// The frozen hypothesis.
    pub hypothesis: String,
    /// The frozen run class.
    pub run_class: String,
    /// Tasks in the manifest.
    pub tasks: u64,
    /// Trial identities per task.
    pub trials_per_task: u64,
    /// N: predeclared case identities per evaluation group.
    pub cases_per_group: u64,
    /// What the class allows the report to claim (CLASS-2).
    pub allowed_claim: String,
    /// What `passed / N x 100` is called in this class's report: `official
    /// score` for a public reproduction, `score over N` otherwise (CLASS-2).
    pub score_name: String,
    /// What the report's claims, the go/no-go line first, speak for: the
    /// allowed claim in a few words (CLASS-2).
    pub claim_scope: String,
    /// Claims this report refuses, and why (CLASS-5, VERDICT-2).
    pub refused_claims: Vec<String>,
    /// Quality tolerance, percentage points of official score.
    pub quality_tolerance_pp: String,
    /// Cost tolerance, percent of control's cost.
    pub cost_tolerance_pct: String,
    /// The frozen interval method (REPORT-4).
    pub interval_method: String,
    /// The frozen bootstrap seed.
    pub interval_seed: u64,
    /// The frozen bootstrap resample count.
    pub interval_resamples: u32,
}

/// Section 2: tuning or held-out (LINEAGE-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Role {
    /// `tuning` or `held_out`.
    pub role: String,
    /// Tasks learning may use (empty: all, for tuning).
    pub tuning_tasks: Vec<String>,
    /// Tasks held out from learning.
    pub held_out_tasks: Vec<String>,
    /// What the role means for the claim.
    pub note: String,
}

/// One frozen route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteLine {
    /// strong, balanced, economy.
    pub tier: String,
    pub provider: String,
    pub model: String,
    /// Wire protocol.
    pub protocol: String,
    pub credential_class: String,
}

/// One frozen price record (USD per million tokens = micro-USD per token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriceLine {
    /// `provider:model`.
    pub route: String,
    pub credential_class: String,
    /// actual or notional.
    pub basis: String,
    /// Uncached input rate.
    pub uncached_input: String,
    /// Cache read rate, if any.
    pub cache_read: Option<String>,
    /// Cache write rate, if any.
    pub cache_write: Option<String>,
    /// Output rate (reasoning billed at it).
    pub output: String,
    /// Where the price comes from.
    pub source: String,
    /// Effective period.
    pub effective: String,
}

/// Section 3: the frozen tuple, hashes and topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frozen {
    /// Benchmark name and version.
    pub benchmark: String,
    /// Dataset repository and revision.
    pub dataset: String,
    /// Ordered target groups.
    pub groups: Vec<String>,
    /// Trial identities.
    pub trials: Vec<String>,
    /// Tasks left out before the freeze and why (CLASS-1); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_before_run: Vec<Fact>,
    /// Routes by tier.
    pub routes: Vec<RouteLine>,
    /// Price records.
    pub prices: Vec<PriceLine>,
    /// Pinned software and sources.
    pub software: Vec<Fact>,
    pub topology: Vec<Fact>,
    pub limits: Vec<Fact>,
    /// Frozen hashes and keys (the value is hex).
    pub hashes: Vec<Fact>,
    pub sign_offs: Vec<SignOffLine>,
    /// Seq of `manifest_frozen`.
    pub frozen_seq: u64,
}

/// An identity excluded from a comparison, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Excluded {
    /// `task/trial`.
    pub case: String,
    pub why: String,
}

/// The exact case intersection of a round with its control (LINEAGE-9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntersectionLine {
    pub round: String,
    /// Identities valid in both.
    pub included: u64,
    /// Predeclared identities of the round.
    pub predeclared: u64,
    /// Excluded identities and why.
    pub excluded: Vec<Excluded>,
}

/// Section 4: which control the rounds compare to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControlResolution {
    /// `lineage/control` compared against, if any.
    pub source: Option<String>,
    /// Whether it is reused from another lineage (LINEAGE-6).
    pub reused: bool,
    /// Seq of the reuse record.
    pub reuse_seq: Option<u64>,
    /// Its status (sealed, or as the log gives it now).
    pub status: String,
    /// Seq of its control-catalog registration.
    pub registered_seq: Option<u64>,
    /// Its registered artifact checksum.
    pub artifact_blake3: Option<String>,
    /// The control key (FREEZE-6).
    pub control_key: String,
    /// Per round: the exact intersection.
    pub intersections: Vec<IntersectionLine>,
}

/// The cost basis of every cost claim of the report (SETTLE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Basis {
    /// `series`, `frozen_prices` or `none`.
    pub kind: BasisKind,
    /// The series its amounts belong to (`actual`, `notional`, ...), if any.
    pub series: Option<String>,
    /// How the report names it.
    pub label: String,
    /// Why this basis (or why none).
    pub note: String,
}

/// The runnable-only score (REPORT-1), always with its denominator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runnable {
    /// |accepted|: terminal-valid original identities.
    pub accepted_cases: u64,
    /// Validated security-policy skips.
    pub skipped: u64,
    /// passed / |accepted| x 100.
    pub score_pct: Option<Ratio>,
}

/// Section 5: one row of the table of control and every predeclared round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// The group name in this lineage.
    pub group: String,
    /// `lineage/group` the numbers come from (a reused control's own).
    pub source: String,
    /// Sealed status, `unsealed (now X)`, `not_opened`.
    pub status: String,
    /// Seq of its seal.
    pub sealed_seq: Option<u64>,
    /// Sealed `accepted`.
    pub accepted: bool,
    /// Rejected or unsealed: shown as diagnostics, never in a claim (VERDICT-2).
    pub diagnostics_only: bool,
    /// Passed trials (reward 1).
    pub passed: u64,
    /// N: predeclared identities (the official denominator).
    pub total: u64,
    /// Official score, percent over N with skips as 0 (REPORT-1).
    pub score_pct: Option<Ratio>,
    /// Runnable-only score with its denominator.
    pub runnable: Runnable,
    /// Requests settled (T u U).
    pub requests: u64,
    /// Requests served by the strong route.
    pub strong_requests: u64,
    /// Cost on the report's basis (claims only when accepted).
    pub cost: Option<Money>,
    /// Cost per success, USD (REPORT-2).
    pub cost_per_success: Option<Ratio>,
    /// Comparable with its control (REPORT-2, REPORT-4); always false for control.
    pub comparable: bool,
    /// Why not comparable.
    pub not_comparable: Option<String>,
    /// Official score delta vs control, percentage points.
    pub score_delta_pp: Option<Ratio>,
    /// Cost delta vs control, percent.
    pub cost_delta_pct: Option<Ratio>,
    /// Strong-call delta vs control, percent.
    pub strong_call_delta_pct: Option<Ratio>,
}

/// One point of the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChartPoint {
    pub group: String,
    /// `accepted`, `rejected` or `unsealed`.
    pub marker: ChartMarker,
    /// Official score, percent.
    pub score_pct: Option<Ratio>,
    /// Cost on the basis (a diagnostic amount for rejected groups).
    pub cost: Option<Money>,
}

/// One case pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairLine {
    /// `task/trial`.
    pub case: String,
    /// q of control (1 passed, 0 not).
    pub control_q: u8,
    /// q of the round.
    pub round_q: u8,
    /// round_q - control_q.
    pub delta: i8,
}

/// Section 6: paired per-case deltas of a round (REPORT-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Paired {
    pub round: String,
    /// Whether the round is accepted (else diagnostics only).
    pub diagnostics_only: bool,
    /// Case pairs on the exact intersection.
    pub pairs: u64,
    /// Pairs where the round passed and control did not.
    pub improved: u64,
    /// Pairs where control passed and the round did not.
    pub worsened: u64,
    /// Pairs with equal q.
    pub unchanged: u64,
    /// Mean delta, percentage points.
    pub mean_delta_pp: Option<Ratio>,
    /// The 95% bootstrap interval (replicated runs only).
    pub interval: Option<Interval>,
    /// Why there is no interval, or how it was computed.
    pub interval_note: String,
    /// Every pair.
    pub cases: Vec<PairLine>,
    /// Identities excluded from the pairs, and why.
    pub excluded: Vec<Excluded>,
}

/// Section 7: requests by tier and decision reason (REPORT-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionCounts {
    pub group: String,
    /// Rejected or unsealed.
    pub diagnostics_only: bool,
    /// Requests (T u U).
    pub requests: u64,
    /// By the tier of the route that served it (usage provider/model).
    pub served_tier: BTreeMap<String, u64>,
    /// By the tier the policy selected.
    pub selected_tier: BTreeMap<String, u64>,
    /// By REPORT-5 category (the names of [`Category`]).
    pub by_category: BTreeMap<String, u64>,
    /// By the raw decision reason.
    pub by_reason: BTreeMap<String, u64>,
    /// Fallbacks seen only as served model != selected model.
    pub fallback_model_mismatch: u64,
}

/// Token buckets and charges of one served route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteUsage {
    /// `provider:model`, or `(no usage row)`.
    pub route: String,
    /// Its frozen tier, or `unresolved`.
    pub tier: String,
    pub requests: u64,
    pub uncached_input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// Reasoning tokens (billed at the output rate).
    pub reasoning_tokens: u64,
    /// Charges by series, never summed.
    pub series: BTreeMap<String, Money>,
    /// Requests without an amount (pending, unknown, unpriced).
    pub incomplete: u64,
}

/// One gate row as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowLine {
    pub gate: String,
    pub holds: bool,
    /// Its evidence text, as the verdict has it (and a seal stores it).
    pub evidence: String,
    /// The request ids behind the counts of a failing `requests` row, from
    /// the verdict's joins (left out of the JSON when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<OffendingIds>,
}

/// Section 8: four-bucket settlement and join audit of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettlementAudit {
    pub group: String,
    /// Rejected or unsealed.
    pub diagnostics_only: bool,
    /// Requests by settlement state.
    pub states: BTreeMap<String, u64>,
    /// Amounts by series (SETTLE-6), never summed.
    pub series: BTreeMap<String, Money>,
    /// Requests in the incomplete series (pending, unknown).
    pub incomplete_requests: u64,
    /// Requests without a frozen-price recomputation.
    pub unpriced_requests: u64,
    /// Usage x the frozen price snapshot, when every request has it.
    pub frozen_price_total: Option<Money>,
    /// By served route.
    pub routes: Vec<RouteUsage>,
    /// |T|, |U|, |D|, |R| (traces, usage rows, decisions, request
    /// outcomes), in that order.
    pub sets: Vec<SetSize>,
    /// The join and settlement rows of the verdict.
    pub rows: Vec<RowLine>,
}

/// Section 9: runtime, provider, retry, concurrency and cleanup evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeEvidence {
    /// The group (canaries included).
    pub group: String,
    pub status: String,
    /// Case identities by state.
    pub cases: BTreeMap<String, u64>,
    /// `replacement-01` identities started.
    pub replacements_started: u64,
    /// Validated skips.
    pub skipped: u64,
    /// Traces by non-2xx HTTP status.
    pub http_non_2xx: BTreeMap<String, u64>,
    pub traces_failed: u64,
    /// Traces `client_cancelled`.
    pub traces_cancelled: u64,
    /// Usage rows `failed`.
    pub usage_failed: u64,
    /// Latency evidence.
    pub latency: String,
    /// Harbor retries (frozen; CASE-5).
    pub harbor_retries: u32,
    /// Frozen concurrency.
    pub concurrency: u64,
    /// Highest sampled sandbox count.
    pub monitor_peak: Option<u64>,
    pub monitor_samples: u64,
    pub cleanup: RowLine,
    /// Failing gate rows.
    pub failing_rows: Vec<String>,
    /// Its reliability and semantic planes (PLANE-1, BIND-5).
    pub planes: Planes,
}

/// A steady-state row (REPORT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SteadyRow {
    pub round: String,
    /// Its cost on the basis.
    pub cost: Option<Money>,
    /// Control's cost on the basis.
    pub control: Option<Money>,
    /// Cost delta %.
    pub delta_pct: Option<Ratio>,
    /// Why no delta.
    pub note: Option<String>,
}

/// A cumulative lifecycle row through a round (REPORT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CumulativeRow {
    /// Through this round.
    pub through: String,
    /// The row, when every round through it is comparable.
    pub row: Option<Cumulative>,
    /// Why not.
    pub note: Option<String>,
}

/// Section 10: steady-state and cumulative economics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Economics {
    /// The report's cost basis (`basis.label`), the same for every round.
    pub basis: String,
    /// One per round.
    pub steady: Vec<SteadyRow>,
    /// Through each round.
    pub cumulative: Vec<CumulativeRow>,
}

/// The cost of a notional amount at one cache-read share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareCost {
    /// Percent of the prompt tokens read from a cache.
    pub share_pct: u32,
    /// The cost at that share with the frozen prices, when every route
    /// involved has the prices it needs.
    pub cost: Option<Money>,
}

/// The cache-read sensitivity of one notional amount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SensitivityRow {
    pub group: String,
    /// Not sealed `accepted`: shown as diagnostics only (VERDICT-2).
    pub diagnostics_only: bool,
    /// Which notional amount.
    pub source: SensitivitySource,
    /// Requests repriced.
    pub requests: u64,
    /// Their prompt tokens: uncached input + cache read + cache write.
    pub prompt_tokens: u64,
    /// Their observed cache-read tokens.
    pub cache_read_tokens: u64,
    /// Observed cache reads as a percent of the prompt tokens.
    pub observed_share_pct: Option<Ratio>,
    /// The amount as the report states it (the observed buckets).
    pub observed: Money,
    /// The cost at each share of [`CacheSensitivity::shares_pct`], in order.
    pub costs: Vec<ShareCost>,
    /// Whether the 0% cost bounds every share's cost from above: every
    /// route's cache-read price is at most its uncached input price.
    pub zero_cache_upper_bound: bool,
    /// What limits the row (unpriced routes, a cache price above the
    /// uncached one, an observed cost above the zero-cache one).
    pub notes: Vec<String>,
}

/// Section 10: the cache-read sensitivity of every notional amount of the
/// report (SETTLE-6: notional amounts are usage x a cited price, so they
/// depend on how much of the prompt a cache served).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheSensitivity {
    /// The shares, percent of prompt tokens read from a cache.
    pub shares_pct: Vec<u32>,
    /// How each cost is computed.
    pub method: String,
    /// One per notional amount.
    pub rows: Vec<SensitivityRow>,
    /// Each accepted round against an accepted control, both on the
    /// frozen-price basis, at the same cache-read share (issue 31: the
    /// correction report 001 is known for).
    pub equal_share_deltas: Vec<EqualShareDelta>,
}

/// A round against control at equal cache-read shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EqualShareDelta {
    pub round: String,
    /// At each share of [`CacheSensitivity::shares_pct`], in order.
    pub at: Vec<ShareDelta>,
}

/// The round's and control's cost at one share, and the delta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareDelta {
    /// Percent of the prompt tokens read from a cache.
    pub share_pct: u32,
    /// The round's cost at that share.
    pub round: Option<Money>,
    /// Control's cost at that share.
    pub control: Option<Money>,
    /// (round / control - 1) x 100, when both are priced.
    pub delta_pct: Option<Ratio>,
}

/// A failed, invalid or unfinished case attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedCase {
    pub group: String,
    pub case: String,
    pub status: String,
    /// Why, as recorded.
    pub why: String,
}

/// A validated security-policy skip (REPORT-1, CASE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkipLine {
    pub group: String,
    /// The original identity.
    pub case: String,
    /// The shared class.
    pub class: String,
    /// Both evidence hashes (original, replacement-01).
    pub evidence_blake3: Vec<String>,
    /// The cost of both failed attempts.
    pub failed_attempts_cost: String,
}

/// The time between control and a round (stale controls show here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeGap {
    pub round: String,
    /// Seq of the control's seal.
    pub control_sealed_seq: u64,
    /// Seq of the round's daemon start.
    pub round_opened_seq: u64,
    /// recorded_at(round opened) - recorded_at(control sealed), ns.
    pub gap_ns: i64,
    /// The same, as text.
    pub text: String,
}

/// A group shown as diagnostics (VERDICT-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub group: String,
    pub status: String,
    pub failing: Vec<RowLine>,
}

/// Section 11: failures, limitations and the control-to-policy time gap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failures {
    /// Rejected or unsealed groups.
    pub diagnostics: Vec<Diagnostic>,
    /// Predeclared groups never opened (they count 0 of N).
    pub not_opened: Vec<String>,
    /// Every case attempt that is not terminal-valid.
    pub failed_cases: Vec<FailedCase>,
    /// Validated skips.
    pub skips: Vec<SkipLine>,
    /// The lineage's hard stop.
    pub stopped: Option<StopLine>,
    /// Control-to-round time gaps.
    pub time_gaps: Vec<TimeGap>,
    /// What the evidence cannot show.
    pub limitations: Vec<String>,
    /// Evidence files a rule refused, by group (BIND-12).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused_files: Vec<RefusedFileLine>,
}

/// An evidence file offered to a group and refused by a rule (BIND-12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedFileLine {
    /// The group it was offered to.
    pub group: String,
    /// The file and its refusal.
    pub file: crate::method::verdict::RefusedFile,
}

/// The go/no-go checks of one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoundCheck {
    pub round: String,
    /// Accepted and comparable with control.
    pub comparable: bool,
    /// No more than the quality tolerance below control (REPORT-2): on a
    /// replicated run by the lower end of the round's 95% paired interval
    /// (REPORT-4), else by the official score delta.
    pub quality_within: Option<bool>,
    /// The figure the quality check compared with the tolerance.
    pub quality_on: Option<String>,
    /// Cost delta within the cost tolerance.
    pub cost_within: Option<bool>,
    /// Cumulative cost delta through this round within the cost tolerance.
    pub cumulative_cost_within: Option<bool>,
}

/// Section 12: the go/no-go line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoNoGo {
    /// `GO`, `NO-GO` or `UNDECIDED`.
    pub decision: Decision,
    /// The one line.
    pub line: String,
    /// The rule applied.
    pub rule: String,
    /// Per round.
    pub rounds: Vec<RoundCheck>,
    /// Why not GO.
    pub reasons: Vec<String>,
}

/// Section 12: artifact and ledger checksums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checksums {
    /// The ledger head the report was computed at.
    pub ledger: LedgerHead,
    /// Frozen hashes and keys (the value is hex).
    pub hashes: Vec<Fact>,
    /// Sealed verdicts.
    pub sealed: Vec<SealedLine>,
}

/// TRUST-4: the signed checkpoint of the log a report was derived from,
/// and an inclusion proof in it of each sealed verdict. Filled in by the
/// caller that read the log (`build` is pure and leaves it out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transparency {
    /// The latest signed checkpoint the log records; `None` when it has
    /// none.
    pub checkpoint: Option<SignedCheckpoint>,
    /// One per sealed group of the report, in seq order.
    pub seals: Vec<SealInclusion>,
}

/// A signed checkpoint (C2SP tlog-checkpoint in a signed note, TRUST-1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedCheckpoint {
    /// The seq of the `checkpoint_recorded` record holding it.
    pub seq: u64,
    /// The origin line (`benchledger/ledger/<ledger id>`).
    pub origin: String,
    /// The tree size: the records it covers (seqs 0..tree_size).
    pub tree_size: u64,
    /// The Merkle root, 64 lowercase hex.
    pub root: String,
    /// The signer's key name.
    pub signer: String,
    /// The signer's key id, 8 lowercase hex.
    pub key_id: String,
    /// SHA-256 of the note text, 64 lowercase hex.
    pub note_sha256: String,
    /// The signed note, verbatim.
    pub note: String,
}

/// A sealed group's seal record and its inclusion proof in the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealInclusion {
    pub group: String,
    /// The seq of its seal.
    pub seq: u64,
    /// Its inclusion proof, verified against the checkpoint's root; `None`
    /// when the seal comes after the checkpoint.
    pub proof: Option<SealProof>,
    /// TRUST-6, when the lineage freezes a witness quorum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnessing: Option<SealWitnesses>,
}

/// Whether k distinct frozen witnesses cosigned a checkpoint covering a
/// seal (TRUST-6): only cosignatures by frozen keys over checkpoints the
/// log records count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealWitnesses {
    /// True once `witnessed_by` has `quorum` names.
    pub counts: bool,
    /// The frozen witnesses whose cosignature covers it.
    pub witnessed_by: Vec<String>,
    /// k.
    pub quorum: u32,
    /// How many witnesses are frozen.
    pub witnesses: usize,
    /// "witnessed by a, b (quorum 2)" or "pending: 1 of 2 witnesses
    /// cosigned (quorum 2)".
    pub line: String,
}

/// An inclusion proof of a seal record (SPEC 11.6 without the note: leaf
/// index = the seal's seq, leaf = u64_be(seq) || link hash, tree size =
/// the checkpoint's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealProof {
    /// The seal record's link hash, 64 lowercase hex.
    pub link_hash: String,
    /// The sibling hashes, base64, RFC 9162 order.
    pub hashes: Vec<String>,
}

/// The report of one lineage: the twelve sections of REPORT-6 in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// [`super::REPORT_FORMAT`].
    pub format: String,
    pub lineage: String,
    /// The projection version that computed the verdicts.
    pub projection_version: u32,
    /// 1. Hypothesis, class, allowed claim, tolerances.
    pub claim: Claim,
    /// 2. Tuning/held-out role.
    pub role: Role,
    /// 3. The frozen tuple, hashes and topology.
    pub frozen: Frozen,
    /// 4. Control resolution and case intersection.
    pub control: ControlResolution,
    /// The cost basis of 5 and 10.
    pub basis: Basis,
    /// 5. Control and every predeclared round.
    pub groups: Vec<GroupRow>,
    /// 5. The chart's points.
    pub chart: Vec<ChartPoint>,
    /// 6. Paired per-case deltas.
    pub paired: Vec<Paired>,
    /// 7. Decisions by tier and reason.
    pub decisions: Vec<DecisionCounts>,
    /// 8. Four-bucket settlement and join audit.
    pub settlement: Vec<SettlementAudit>,
    /// 9. Runtime/provider/retry/concurrency/cleanup evidence.
    pub runtime: Vec<RuntimeEvidence>,
    /// 10. Steady-state and cumulative economics.
    pub economics: Economics,
    /// 10. The cache-read sensitivity of every notional amount.
    pub cache_sensitivity: CacheSensitivity,
    /// 11. Failures, limitations and the time gap.
    pub failures: Failures,
    /// 12. Go/no-go.
    pub go_no_go: GoNoGo,
    /// 12. Artifact and ledger checksums.
    pub checksums: Checksums,
    /// TRUST-4, when the caller read it from the log (absent from the JSON
    /// form otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparency: Option<Transparency>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::named::assert_serde_names;

    #[test]
    fn every_report_enum_is_named_by_its_serde_name() {
        assert_serde_names(BasisKind::ALL, BasisKind::as_str);
        assert_serde_names(ChartMarker::ALL, ChartMarker::as_str);
        assert_serde_names(Decision::ALL, Decision::as_str);
        assert_serde_names(Category::ALL, Category::as_str);
        assert_serde_names(RequestIdSet::ALL, RequestIdSet::as_str);
        assert_serde_names(SensitivitySource::ALL, SensitivitySource::as_str);
        assert_serde_names(JoinDifference::ALL, JoinDifference::as_str);
    }

    /// The named parts serialize as the arrays the JSON form always had.
    #[test]
    fn named_parts_serialize_as_arrays() {
        assert_eq!(json(&Fact::new("region", "eu")), r#"["region","eu"]"#);
        let sign_off = SignOffLine {
            role: "operator".into(),
            name: "ana".into(),
            seq: 3,
        };
        assert_eq!(json(&sign_off), r#"["operator","ana",3]"#);
        let set = SetSize {
            set: RequestIdSet::Traces,
            size: 26,
        };
        assert_eq!(json(&set), r#"["T",26]"#);
        let stop = StopLine {
            seq: 9,
            rule: "RUN-1".into(),
            reason: "why".into(),
        };
        assert_eq!(json(&stop), r#"[9,"RUN-1","why"]"#);
        let sealed = SealedLine {
            group: "r1".into(),
            seq: 40,
            status: "accepted".into(),
        };
        assert_eq!(json(&sealed), r#"["r1",40,"accepted"]"#);
    }

    fn json<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).expect("serializes")
    }
}
