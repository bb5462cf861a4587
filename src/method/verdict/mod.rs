//! The group verdict and the projections it reads: settlement (SETTLE),
//! joins (JOIN), cleanup (CLEAN), attempts and the security-policy skip
//! (CASE-3, CASE-6), and the gate rows with their status precedence
//! (VERDICT-1). Pure functions of a replayed [`LineageState`]: no I/O, no
//! clock, no env. `group seal` attests what [`group_verdict`] returns and
//! `audit` re-derives it from the log.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::Digest;

use crate::method::projections::{CaseStatus, GroupState, LineageState, RequestState, State};
use crate::schema::events::{
    CaseRef, ChargeStatus, GateRow, GroupRef, ReceiptState, ReconciliationStatus, RefusalClass,
    TraceStatus, UsageOrigin,
};
use crate::schema::manifest::{is_non_evaluation, ManifestFile, PriceBasis, Tier};
use crate::schema::money::{bitrouter_charge, effective_cache_rate, Buckets, Charge, Dec, Rates};

/// At most this many ids are named in one row's evidence text; the count of
/// the rest follows. The JSON forms (`gate --json`) list them all.
pub const EVIDENCE_IDS_MAX: usize = 12;

/// The domain tag of BitRouter's ingress commitment
/// (`sha256:hex(SHA256(tag + "\0" + trace_id))`, bitrouter-formats section 2).
pub const INGRESS_COMMITMENT_TAG: &str = "bitrouter.ingress-request-id.v1";

/// The gate rows of method.md section 10, in the order they are shown, each
/// with the status its failure maps to (VERDICT-1).
pub const ROWS: [(&str, &str); 13] = [
    ("manifest", "rejected_manifest"),
    ("secrets", "rejected_manifest"),
    ("attempts", "rejected_runtime"),
    ("trial result", "rejected_runtime"),
    ("runtime", "rejected_runtime"),
    ("requests", "rejected_join"),
    ("decisions", "rejected_join"),
    ("cost join", "rejected_join"),
    ("reward join", "rejected_join"),
    ("replay", "rejected_join"),
    ("settlement", "rejected_settlement"),
    ("cleanup", "rejected_cleanup"),
    ("safety limit", "rejected_safety_limit"),
];

/// The status of a group whose rows all hold.
pub const ACCEPTED: &str = "accepted";

// ---------------------------------------------------------------------------
// Settlement (SETTLE-1..8)
// ---------------------------------------------------------------------------

/// The settlement state of one request (SETTLE-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SettlementState {
    /// Reconstructable usage and price, or an authoritative charge.
    Computed,
    /// An authoritative terminal receipt of no charge.
    NotCharged,
    /// Still waiting for a receipt.
    Pending,
    /// Not known; rejects the group.
    Unknown,
}

impl SettlementState {
    /// `computed` and `not_charged` are accepted (SETTLE-4).
    pub fn accepted(self) -> bool {
        matches!(
            self,
            SettlementState::Computed | SettlementState::NotCharged
        )
    }
}

/// The four labelled cost series, never added together (SETTLE-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Series {
    /// An authoritative charge (a computed receipt, or reconciled usage at
    /// an actual price).
    Actual,
    /// Usage x a cited list price.
    Notional,
    /// What a subscription route would have cost at list price.
    SubscriptionCounterfactual,
    /// Pending, unknown or unpriced: no amount.
    Incomplete,
}

/// One request's settlement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestSettlement {
    /// The persisted request id.
    pub request_id: String,
    /// Its state.
    pub state: SettlementState,
    /// Why it is not `computed`/`not_charged`, or how it was cross-checked.
    pub reason: Option<String>,
    /// The cost series its amount belongs to.
    pub series: Series,
    /// The charge counted (micro-USD), when the state is accepted.
    pub charge_micro_usd: Option<u64>,
    /// The charge recomputed from the frozen price snapshot (SETTLE-2/3).
    pub recomputed_micro_usd: Option<u64>,
    /// The latest receipt's charge, if any.
    pub receipt_micro_usd: Option<u64>,
    /// The frozen tier its provider/model resolve to, if any.
    pub tier: Option<Tier>,
    /// Provider and model that served it (from the usage row).
    pub provider_model: Option<(String, String)>,
    /// The observed buckets, if a usage row exists.
    pub buckets: Option<Buckets>,
}

/// The frozen price of a route for a request date (SETTLE-3, SETTLE-8):
/// the price record of exactly that provider, model and credential class
/// whose effective period covers `date` (`YYYY-MM-DD`).
fn frozen_rates(
    m: &ManifestFile,
    provider: &str,
    model: &str,
    credential_class: &str,
    date: &str,
) -> Option<(Rates, PriceBasis)> {
    let p = m.prices.iter().find(|p| {
        p.provider == provider
            && p.model == model
            && p.credential_class == credential_class
            && p.effective_from.as_str() <= date
            && p.effective_to.as_deref().is_none_or(|to| date < to)
    })?;
    let base = Some(p.uncached_input);
    Some((
        Rates {
            uncached_input: base,
            cache_read: effective_cache_rate(p.cache_read, base, p.cache_price_fallback),
            cache_write: effective_cache_rate(p.cache_write, base, p.cache_price_fallback),
            output: Some(p.output),
        },
        p.basis,
    ))
}

fn to_buckets(b: &crate::schema::events::TokenBuckets) -> Buckets {
    Buckets {
        uncached_input_tokens: b.uncached_input_tokens,
        cache_read_tokens: b.cache_read_tokens,
        cache_write_tokens: b.cache_write_tokens,
        output_tokens: b.output_tokens,
        reasoning_tokens: b.reasoning_tokens,
    }
}

/// Settles one request from its usage row, receipts and the frozen prices
/// (SETTLE-1..6). The latest receipt is the charge source; the frozen rates
/// are the cross-check, and a difference is `authoritative_charge_mismatch`
/// (SETTLE-5), never an epsilon.
pub fn settle_request(m: &ManifestFile, id: &str, r: &RequestState) -> RequestSettlement {
    let mut out = RequestSettlement {
        request_id: id.to_string(),
        state: SettlementState::Unknown,
        reason: None,
        series: Series::Incomplete,
        charge_micro_usd: None,
        recomputed_micro_usd: None,
        receipt_micro_usd: None,
        tier: None,
        provider_model: None,
        buckets: None,
    };
    let unknown = |mut o: RequestSettlement, why: &str| {
        o.state = SettlementState::Unknown;
        o.series = Series::Incomplete;
        o.charge_micro_usd = None;
        o.reason = Some(why.to_string());
        o
    };
    // SETTLE-1: missing is never zero.
    let Some((_, u)) = r.usage.first() else {
        return unknown(
            out,
            "no usage row: missing buckets are never zero (SETTLE-1)",
        );
    };
    out.provider_model = Some((u.provider_id.to_string(), u.model_id.to_string()));
    out.buckets = Some(to_buckets(&u.buckets));
    let route = m
        .routes
        .iter()
        .find(|rt| rt.provider == u.provider_id && rt.model == u.model_id);
    out.tier = route.map(|rt| rt.tier);
    let date = r
        .traces
        .first()
        .map(|(_, t)| t.captured_at.get(..10).unwrap_or("").to_string());
    // SETTLE-2/3: recompute in decimal from the frozen snapshot.
    let priced = match (route, date.as_deref()) {
        (Some(rt), Some(d)) => {
            frozen_rates(m, &u.provider_id, &u.model_id, &rt.credential_class, d)
                .map(|(rates, basis)| (rates, basis, rt.credential_class.as_str()))
        }
        _ => None,
    };
    let recompute = priced
        .as_ref()
        .map(|(rates, _, _)| bitrouter_charge(&to_buckets(&u.buckets), rates));
    let no_price_reason = match (route, &date, &recompute) {
        (None, _, _) => format!(
            "no frozen route for provider {:?} model {:?}",
            u.provider_id, u.model_id
        ),
        (_, None, _) => "no trace, so no request date to pick a price period".to_string(),
        (_, _, None) => "no frozen price record covers this route and date (SETTLE-8)".to_string(),
        (_, _, Some(Charge::Unknown { reason } | Charge::Invalid { reason })) => {
            format!("unpriced: {reason} (SETTLE-3)")
        }
        (_, _, Some(Charge::Computed { .. })) => String::new(),
    };
    if let Some(Charge::Computed { charge_micro_usd }) = recompute {
        out.recomputed_micro_usd = Some(charge_micro_usd);
    }
    let priced_series = match &priced {
        Some((_, _, class)) if *class == "subscription" => Series::SubscriptionCounterfactual,
        Some((_, PriceBasis::Actual, _)) if u.usage_origin == UsageOrigin::AuthoritativeReceipt => {
            Series::Actual
        }
        _ => Series::Notional,
    };
    if let Some((_, receipt)) = r.receipts.last() {
        out.receipt_micro_usd = receipt.final_charge_micro_usd;
        return match receipt.state {
            ReceiptState::Pending => {
                out.state = SettlementState::Pending;
                out.reason = Some("the latest receipt is pending".into());
                out
            }
            ReceiptState::Unknown => unknown(out, "the latest receipt is unknown"),
            ReceiptState::NotCharged => {
                out.state = SettlementState::NotCharged;
                out.series = Series::Actual;
                out.charge_micro_usd = Some(0);
                out
            }
            ReceiptState::Computed => {
                match (receipt.final_charge_micro_usd, out.recomputed_micro_usd) {
                    (None, _) => unknown(out, "a computed receipt without a charge"),
                    (Some(c), Some(x)) if c != x => {
                        let why = format!(
                        "authoritative_charge_mismatch: receipt {c} micro-USD, frozen prices give {x} (SETTLE-5)"
                    );
                        unknown(out, &why)
                    }
                    (Some(c), x) => {
                        out.state = SettlementState::Computed;
                        out.series = Series::Actual;
                        out.charge_micro_usd = Some(c);
                        if x.is_none() {
                            out.reason = Some(format!(
                                "authoritative receipt; no cross-check: {no_price_reason}"
                            ));
                        }
                        out
                    }
                }
            }
        };
    }
    match u.reconciliation_status {
        ReconciliationStatus::Pending => {
            out.state = SettlementState::Pending;
            out.reason = Some("reconciliation pending, no receipt".into());
            return out;
        }
        ReconciliationStatus::Unknown => return unknown(out, "reconciliation unknown"),
        _ => {}
    }
    match u.charge_status {
        ChargeStatus::NotCharged => {
            out.state = SettlementState::NotCharged;
            out.series = Series::Actual;
            out.charge_micro_usd = Some(0);
            out
        }
        ChargeStatus::Unknown | ChargeStatus::LegacyUnknown => {
            unknown(out, "bitrouter recorded the charge as unknown")
        }
        ChargeStatus::Computed => match (out.recomputed_micro_usd, u.final_charge_micro_usd) {
            (None, _) => {
                let why = no_price_reason.clone();
                unknown(out, &why)
            }
            (Some(x), Some(c)) if c != x => {
                let why = format!(
                    "charge mismatch: bitrouter recorded {c} micro-USD, frozen prices give {x} (SETTLE-2)"
                );
                unknown(out, &why)
            }
            (Some(x), _) => {
                out.state = SettlementState::Computed;
                out.series = priced_series;
                out.charge_micro_usd = Some(x);
                out
            }
        },
    }
}

/// A group's settlement: every request of T u U, and the series totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settlement {
    /// Per request, by id.
    pub requests: Vec<RequestSettlement>,
    /// Micro-USD per series (incomplete is a count, in `incomplete`).
    pub series_micro_usd: BTreeMap<Series, u64>,
    /// Requests per state.
    pub states: BTreeMap<SettlementState, u64>,
}

/// Settles every request of a group.
pub fn settlement(m: &ManifestFile, g: &GroupState) -> Settlement {
    let mut out = Settlement {
        requests: Vec::with_capacity(g.requests.len()),
        series_micro_usd: BTreeMap::new(),
        states: BTreeMap::new(),
    };
    for (id, r) in &g.requests {
        if r.traces.is_empty() && r.usage.is_empty() && r.receipts.is_empty() {
            continue; // an outcome-only id: a join question, not a request
        }
        let s = settle_request(m, id, r);
        *out.states.entry(s.state).or_default() += 1;
        if let Some(c) = s.charge_micro_usd {
            let e = out.series_micro_usd.entry(s.series).or_default();
            *e = e.saturating_add(c);
        }
        out.requests.push(s);
    }
    out
}

// ---------------------------------------------------------------------------
// Joins (JOIN-1..4)
// ---------------------------------------------------------------------------

/// BitRouter's ingress commitment of a trace id, 64 lowercase hex.
pub fn ingress_commitment(trace_id: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(INGRESS_COMMITMENT_TAG.as_bytes());
    h.update([0u8]);
    h.update(trace_id.as_bytes());
    hex::encode(h.finalize())
}

/// The request-id sets of a group and how they differ (JOIN-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Joins {
    /// |T|, |U|, |D|, |R| (distinct ids).
    pub traces: usize,
    /// |U|.
    pub usage: usize,
    /// |D|.
    pub decisions: usize,
    /// |R|.
    pub outcomes: usize,
    /// Whether D must equal T (policy groups; control when its schema emits
    /// decisions).
    pub decisions_required: bool,
    /// Whether request-scoped outcomes were supplied (then R must equal T).
    pub outcomes_supplied: bool,
    /// How decisions were joined: `request_id`, `commitment`, or `mixed`.
    pub decision_key: String,
    /// Ids recorded more than once in one set, by set name.
    pub duplicates: BTreeMap<String, Vec<String>>,
    /// T \ U.
    pub missing_usage: Vec<String>,
    /// U \ T.
    pub extra_usage: Vec<String>,
    /// T \ D (when required).
    pub missing_decisions: Vec<String>,
    /// D \ T, including commitments that match no trace.
    pub extra_decisions: Vec<String>,
    /// T \ R (when supplied).
    pub missing_outcomes: Vec<String>,
    /// R \ T.
    pub extra_outcomes: Vec<String>,
    /// Seqs of decisions with no request id and no commitment, or whose
    /// forms are mixed: weak attribution (JOIN-4).
    pub weak_attribution: Vec<u64>,
    /// Ids whose trace outcome disagrees with its usage row's status.
    pub outcome_disagreements: Vec<String>,
    /// Task-scoped outcomes whose trial name matches no result of the group
    /// (JOIN-3).
    pub unmatched_task_outcomes: Vec<String>,
    /// Decisions per trace id (resolved by the decision key).
    #[serde(skip)]
    pub decision_of: BTreeMap<String, Vec<usize>>,
}

/// Builds the joins of a group: by persisted request id only (JOIN-2).
pub fn joins(m: &ManifestFile, group: &str, g: &GroupState) -> Joins {
    let mut j = Joins {
        decisions_required: group != "control" || m.method.control_emits_decisions,
        ..Joins::default()
    };
    let mut dup = |set: &str, id: &str| {
        j.duplicates
            .entry(set.to_string())
            .or_default()
            .push(id.to_string())
    };
    let mut t_ids = BTreeSet::new();
    for (id, r) in &g.requests {
        if !r.traces.is_empty() {
            t_ids.insert(id.to_string());
        }
        if r.traces.len() > 1 {
            dup("traces", id);
        }
        if r.usage.len() > 1 {
            dup("usage", id);
        }
        if r.outcomes.len() > 1 {
            dup("outcomes", id);
        }
    }
    j.traces = t_ids.len();
    for (id, r) in &g.requests {
        let has_t = !r.traces.is_empty();
        if !r.usage.is_empty() {
            j.usage += 1;
            if !has_t {
                j.extra_usage.push(id.to_string());
            }
        } else if has_t {
            j.missing_usage.push(id.to_string());
        }
        if !r.outcomes.is_empty() {
            j.outcomes += 1;
            j.outcomes_supplied = true;
            if !has_t {
                j.extra_outcomes.push(id.to_string());
            }
        }
        if let (Some((_, t)), Some((_, u))) = (r.traces.first(), r.usage.first()) {
            if let Some(us) = u.status.as_deref() {
                let usage_ok = matches!(us, "completed" | "succeeded");
                let trace_ok = t.status == TraceStatus::Completed;
                if usage_ok != trace_ok {
                    j.outcome_disagreements.push(id.to_string());
                }
            }
        }
    }
    if j.outcomes_supplied {
        j.missing_outcomes = g
            .requests
            .iter()
            .filter(|(_, r)| !r.traces.is_empty() && r.outcomes.is_empty())
            .map(|(id, _)| id.to_string())
            .collect();
    }
    // Decisions: by commitment when every decision carries one, else by
    // request id; a decision with neither, or a mix, is weak attribution.
    let all_committed =
        !g.decisions.is_empty() && g.decisions.iter().all(|(_, d)| d.commitment.is_some());
    let all_ids = g.decisions.iter().all(|(_, d)| d.request_id.is_some());
    j.decision_key = if all_committed {
        "commitment"
    } else if all_ids {
        "request_id"
    } else {
        "mixed"
    }
    .to_string();
    let by_commitment: BTreeMap<String, &String> = if all_committed {
        t_ids
            .iter()
            .map(|id| (ingress_commitment(id), id))
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut d_ids = BTreeSet::new();
    for (i, (seq, d)) in g.decisions.iter().enumerate() {
        let resolved = if all_committed {
            let c = d.commitment.as_ref().map(|c| c.hex()).unwrap_or_default();
            match by_commitment.get(&c) {
                Some(id) => Some((*id).clone()),
                None => {
                    j.extra_decisions.push(format!("sha256:{c}"));
                    None
                }
            }
        } else if all_ids {
            d.request_id.as_deref().map(String::from)
        } else {
            j.weak_attribution.push(*seq);
            None
        };
        if let Some(id) = resolved {
            if !t_ids.contains(&id) {
                j.extra_decisions.push(id.clone());
            }
            d_ids.insert(id.clone());
            j.decision_of.entry(id).or_default().push(i);
        }
    }
    for (id, ds) in &j.decision_of {
        if ds.len() > 1 {
            j.duplicates
                .entry("decisions".into())
                .or_default()
                .push(id.clone());
        }
    }
    j.decisions = d_ids.len();
    if j.decisions_required {
        j.missing_decisions = t_ids
            .iter()
            .filter(|id| !d_ids.contains(*id))
            .cloned()
            .collect();
    }
    // JOIN-3: task-scoped outcomes join by case (Harbor trial name).
    let trial_names: BTreeSet<&str> = g
        .cases
        .values()
        .filter_map(|c| c.result.as_ref().map(|(_, r)| r.trial_name.as_str()))
        .collect();
    for (seq, o) in &g.task_outcomes {
        let name = o.trial_name.as_deref().unwrap_or("");
        if !trial_names.contains(name) {
            j.unmatched_task_outcomes
                .push(format!("seq {seq} trial {name:?}"));
        }
    }
    j
}

// ---------------------------------------------------------------------------
// Cases: attempts, results, the security-policy skip (CASE-3, CASE-6)
// ---------------------------------------------------------------------------

/// A validated security-policy skip of one task x trial (CASE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skip {
    /// The original identity (replacement 0).
    pub case: CaseRef,
    /// The shared normalized class.
    pub class: RefusalClass,
    /// The two evidence hashes (original, replacement-01).
    pub evidence_blake3: [String; 2],
}

/// One case identity in the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseLine {
    /// The identity.
    pub case: CaseRef,
    /// Its state.
    pub status: CaseStatus,
    /// Its reward (`rewards.reward`, or the only reward), if a result has one.
    pub reward: Option<String>,
    /// Seq of its start.
    pub started_seq: Option<u64>,
    /// How many `case_started` it has (more than one is a violation).
    pub starts: usize,
    /// How many TrialResults it has.
    pub results: usize,
}

/// The reward of a result: the `reward` key, or the only key.
pub fn reward_of(r: &crate::schema::events::TrialResultRecorded) -> Option<String> {
    let m = r.rewards.as_ref()?;
    m.get("reward")
        .or_else(|| (m.len() == 1).then(|| m.values().next()).flatten())
        .cloned()
}

fn skip_check(
    l: &LineageState,
    g: &GroupState,
    original: &CaseRef,
) -> Option<Result<Skip, String>> {
    let r01 = CaseRef {
        replacement: 1,
        ..original.clone()
    };
    let rc = g.cases.get(&r01).filter(|c| c.started.is_some())?;
    let accepted = &l.frozen.manifest.public.harbor.accepted_exceptions;
    let Some(oc) = g.cases.get(original) else {
        return Some(Err("replacement-01 without a recorded original".into()));
    };
    if !l.frozen.manifest.public.method.security_skip_enabled {
        return Some(Err("the frozen manifest does not enable the skip".into()));
    }
    for (who, c) in [("original", oc), ("replacement-01", rc)] {
        if c.start_seqs.len() != 1 {
            return Some(Err(format!(
                "{who} was started {} times",
                c.start_seqs.len()
            )));
        }
        if c.status(accepted) != CaseStatus::TerminalInvalid {
            return Some(Err(format!(
                "{who} is {:?}, not terminal_invalid",
                c.status(accepted)
            )));
        }
    }
    let ev = |c: &crate::method::projections::CaseState| {
        c.refusals
            .iter()
            .find(|(_, r)| r.http_status == 403)
            .map(|(_, r)| (r.class, r.evidence_blake3.clone()))
    };
    let (Some((oc_class, oe)), Some((rc_class, re))) = (ev(oc), ev(rc)) else {
        return Some(Err(
            "each attempt needs its own sanitized HTTP 403 evidence".into(),
        ));
    };
    if oc_class != rc_class {
        return Some(Err(format!(
            "evidence classes differ: {oc_class:?} vs {rc_class:?}"
        )));
    }
    if oe == re {
        return Some(Err(
            "both attempts cite the same evidence; each needs its own".into(),
        ));
    }
    Some(Ok(Skip {
        case: original.clone(),
        class: oc_class,
        evidence_blake3: [oe, re],
    }))
}

// ---------------------------------------------------------------------------
// Cleanup (CLEAN-1..3)
// ---------------------------------------------------------------------------

/// A group's cleanup evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cleanup {
    /// Seq of the latest audit, if any.
    pub audit_seq: Option<u64>,
    /// Whether that audit came after the group was closed (CASE-9).
    pub after_close: bool,
    /// Whether the audit itself succeeded.
    pub audit_pass: bool,
    /// Resources found, minus the manifest's central host.
    pub residue: Vec<String>,
    /// The highest sampled sandbox count.
    pub monitor_peak: Option<u64>,
    /// The frozen concurrency.
    pub concurrency: u64,
}

impl Cleanup {
    /// CLEAN-2: peak <= concurrency and the final tail is zero.
    pub fn holds(&self) -> bool {
        self.audit_seq.is_some()
            && self.after_close
            && self.audit_pass
            && self.residue.is_empty()
            && self.monitor_peak.is_some_and(|p| p <= self.concurrency)
    }
}

/// The cleanup projection of a group.
pub fn cleanup(l: &LineageState, g: &GroupState) -> Cleanup {
    let m = &l.frozen.manifest.public;
    let central = m.central.instance_id.as_deref();
    let (audit_seq, after_close, audit_pass, residue) = match &g.cleanup {
        None => (None, false, false, Vec::new()),
        Some((at, a)) => (
            Some(at.seq),
            g.closed.is_some_and(|c| c.seq < at.seq),
            a.status == crate::schema::events::Status::Pass,
            a.found
                .iter()
                .filter(|f| !(f.resource == "instance" && Some(f.id.as_str()) == central))
                .map(|f| format!("{} {} ({})", f.resource, f.id, f.state))
                .collect(),
        ),
    };
    Cleanup {
        audit_seq,
        after_close,
        audit_pass,
        residue,
        monitor_peak: g.monitor_peak,
        concurrency: u64::from(m.limits.concurrency),
    }
}

// ---------------------------------------------------------------------------
// The verdict (VERDICT-1..4)
// ---------------------------------------------------------------------------

/// A group's verdict with everything behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The group.
    pub group: GroupRef,
    /// The terminal status (VERDICT-1).
    pub status: String,
    /// Every gate row, in [`ROWS`] order.
    pub rows: Vec<GateRow>,
    /// Validated security-policy skips (CASE-6).
    pub skipped_security_policy: Vec<Skip>,
    /// Every case identity of the group's manifest plus any started outside it.
    pub cases: Vec<CaseLine>,
    /// Passed trials (reward 1) over the group's N identities (REPORT-1).
    pub passed: u64,
    /// N: the group's predeclared identities.
    pub total: u64,
    /// Settlement.
    pub settlement: Settlement,
    /// Joins.
    pub joins: Joins,
    /// Cleanup.
    pub cleanup: Cleanup,
    /// The projection version that computed it.
    pub projection_version: u32,
}

impl Verdict {
    /// The failing rows.
    pub fn failing(&self) -> Vec<&GateRow> {
        self.rows.iter().filter(|r| !r.holds).collect()
    }

    /// The skipped original identities, as sealed.
    pub fn skipped_cases(&self) -> Vec<CaseRef> {
        self.skipped_security_policy
            .iter()
            .map(|s| s.case.clone())
            .collect()
    }
}

/// Names at most [`EVIDENCE_IDS_MAX`] items, then how many more.
pub fn name_some<T: std::fmt::Display>(items: &[T]) -> String {
    let mut s: Vec<String> = items
        .iter()
        .take(EVIDENCE_IDS_MAX)
        .map(|i| i.to_string())
        .collect();
    if items.len() > EVIDENCE_IDS_MAX {
        s.push(format!("+{} more", items.len() - EVIDENCE_IDS_MAX));
    }
    s.join(", ")
}

/// Whether `selected` names `model` (`model` or `<provider>:<model>`).
pub fn names_model(selected: &str, model: &str) -> bool {
    selected == model || selected.split_once(':').is_some_and(|(_, m)| m == model)
}

/// The lineage's spend so far through `upto` (in target order), micro-USD,
/// over actual and notional series.
fn lineage_spend(l: &LineageState, upto: &str) -> u64 {
    let m = &l.frozen.manifest.public;
    let mut total = 0u64;
    for name in m.group_names() {
        if let Some(g) = l.groups.get(name) {
            let s = settlement(m, g);
            for (series, v) in &s.series_micro_usd {
                if matches!(series, Series::Actual | Series::Notional) {
                    total = total.saturating_add(*v);
                }
            }
        }
        if name == upto {
            break;
        }
    }
    total
}

/// The verdict of `group` of lineage `l` as of the state's seq: every gate
/// row of method.md section 10 with its evidence, and the status from the
/// first failing row in VERDICT-1's precedence. `secret_findings` are the
/// fold's findings for this group (see [`State::secret_findings`]).
pub fn group_verdict(state: &State, l: &LineageState, group: &str) -> Verdict {
    let m = &l.frozen.manifest.public;
    let lineage = l.frozen.lineage.clone();
    let empty = GroupState::default();
    let g = l.groups.get(group).unwrap_or(&empty);
    let accepted = &m.harbor.accepted_exceptions;
    let identities = crate::method::decide::group_identities(l, group);
    let mut rows: BTreeMap<&str, (bool, String)> = BTreeMap::new();

    // manifest: the launched configuration equals the frozen one (GATE-4, GATE-7).
    {
        let mut bad = Vec::new();
        match &g.opened {
            None => bad.push("no daemon start recorded".to_string()),
            Some((at, o)) => {
                let sw = &m.software;
                let mg = m.groups.iter().find(|x| x.name == group);
                if o.binary_sha256 != sw.bitrouter_binary_sha256 {
                    bad.push(format!("binary sha256 at seq {}", at.seq));
                }
                if Some(&o.config_sha256) != sw.bitrouter_config_sha256.get(group) {
                    bad.push(format!("config sha256 at seq {}", at.seq));
                }
                if mg.is_none_or(|mg| {
                    mg.ports != o.ports || mg.db_path != o.db_path || mg.out_dir != o.out_dir
                }) {
                    bad.push(format!("ports/paths at seq {}", at.seq));
                }
            }
        }
        let mut launched = 0;
        for (case, c) in &g.cases {
            if let Some((at, s)) = &c.started {
                launched += 1;
                match crate::method::trial_config::render(m, group, case) {
                    Ok(r) if r.blake3 == s.trial_config_blake3 => {}
                    Ok(_) => bad.push(format!(
                        "{} launched TrialConfig {} at seq {}, not the frozen rendering",
                        case.label(),
                        &s.trial_config_blake3[..s.trial_config_blake3.len().min(16)],
                        at.seq
                    )),
                    Err(e) => bad.push(format!("{}: {e}", case.label())),
                }
            }
        }
        let text = if bad.is_empty() {
            format!("daemon start and {launched} TrialConfigs equal the frozen manifest")
        } else {
            name_some(&bad)
        };
        rows.insert("manifest", (bad.is_empty(), text));
    }

    // secrets: no credential anywhere in the group's evidence.
    {
        let found = state
            .secret_findings
            .get(&(lineage.clone(), group.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let text = if found.is_empty() {
            if state.scan_secrets {
                "no credential shape in the group's evidence".to_string()
            } else {
                "not scanned".to_string()
            }
        } else {
            let named: Vec<String> = found
                .iter()
                .map(|(seq, path, shape)| format!("seq {seq} {path} ({shape})"))
                .collect();
            name_some(&named)
        };
        rows.insert("secrets", (found.is_empty() && state.scan_secrets, text));
    }

    // Cases, skips.
    let mut skips = Vec::new();
    let mut bad_skips = Vec::new();
    for id in &identities {
        match skip_check(l, g, id) {
            Some(Ok(s)) => skips.push(s),
            Some(Err(why)) => bad_skips.push(format!("{}: {why}", id.label())),
            None => {}
        }
    }
    let skipped: BTreeSet<CaseRef> = skips
        .iter()
        .flat_map(|s| {
            [
                s.case.clone(),
                CaseRef {
                    replacement: 1,
                    ..s.case.clone()
                },
            ]
        })
        .collect();
    let mut cases = Vec::new();
    let mut all: BTreeSet<CaseRef> = identities.iter().cloned().collect();
    all.extend(
        g.cases
            .keys()
            .filter(|k| g.cases[*k].started.is_some())
            .cloned(),
    );
    let id_set: BTreeSet<&CaseRef> = identities.iter().collect();
    let (
        mut missing,
        mut duplicates,
        mut foreign,
        mut not_terminal,
        mut invalid,
        mut multi_results,
    ) = (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut passed = 0u64;
    for case in &all {
        let cs = g.cases.get(case);
        let status = cs.map_or(CaseStatus::NotStarted, |c| c.status(accepted));
        let reward = cs
            .and_then(|c| c.result.as_ref())
            .and_then(|(_, r)| reward_of(r));
        let starts = cs.map_or(0, |c| c.start_seqs.len());
        let results = cs.map_or(0, |c| c.result_seqs.len());
        let original = CaseRef {
            replacement: 0,
            ..case.clone()
        };
        if !id_set.contains(&original)
            || (case.replacement > 0 && !skipped.contains(case) && case.replacement > 1)
        {
            foreign.push(case.label());
        }
        if starts > 1 {
            duplicates.push(case.label());
        }
        if results > 1 {
            multi_results.push(case.label());
        }
        match status {
            CaseStatus::NotStarted if case.replacement == 0 => missing.push(case.label()),
            CaseStatus::NotStarted => {}
            CaseStatus::Started => not_terminal.push(case.label()),
            CaseStatus::TerminalInvalid if !skipped.contains(case) => invalid.push(case.label()),
            CaseStatus::TerminalInvalid => {}
            CaseStatus::TerminalValid => {
                if case.replacement == 0
                    && reward
                        .as_deref()
                        .and_then(|r| Dec::parse(r).ok())
                        .is_some_and(|r| r == Dec::from(1u64))
                {
                    passed += 1;
                }
            }
        }
        cases.push(CaseLine {
            case: case.clone(),
            status,
            reward,
            started_seq: cs.and_then(|c| c.started.as_ref()).map(|(at, _)| at.seq),
            starts,
            results,
        });
    }
    let valid = cases
        .iter()
        .filter(|c| c.status == CaseStatus::TerminalValid && c.case.replacement == 0)
        .count();
    {
        let mut bad = Vec::new();
        if !missing.is_empty() {
            bad.push(format!("never started: {}", name_some(&missing)));
        }
        if !duplicates.is_empty() {
            bad.push(format!(
                "started more than once: {}",
                name_some(&duplicates)
            ));
        }
        if !foreign.is_empty() {
            bad.push(format!(
                "not identities of the manifest: {}",
                name_some(&foreign)
            ));
        }
        let text = if bad.is_empty() {
            format!(
                "{} identities: {valid} terminal_valid + {} validated skips cover the manifest",
                identities.len(),
                skips.len()
            )
        } else {
            bad.join("; ")
        };
        rows.insert("attempts", (bad.is_empty(), text));
    }
    {
        let text = if multi_results.is_empty() {
            format!(
                "{valid} accepted cases with exactly one TrialResult; none valid for {} skips",
                skips.len()
            )
        } else {
            format!("more than one TrialResult: {}", name_some(&multi_results))
        };
        rows.insert("trial result", (multi_results.is_empty(), text));
    }
    {
        let mut bad = Vec::new();
        if !not_terminal.is_empty() {
            bad.push(format!("not terminal: {}", name_some(&not_terminal)));
        }
        if !invalid.is_empty() {
            bad.push(format!("terminal_invalid: {}", name_some(&invalid)));
        }
        if !bad_skips.is_empty() {
            bad.push(format!(
                "invalid security-policy skip: {}",
                name_some(&bad_skips)
            ));
        }
        let text = if bad.is_empty() {
            "every non-skipped started case is terminal_valid".to_string()
        } else {
            bad.join("; ")
        };
        rows.insert("runtime", (bad.is_empty(), text));
    }

    // Joins.
    let j = joins(m, group, g);
    {
        let mut bad = Vec::new();
        for (set, ids) in &j.duplicates {
            bad.push(format!("duplicate {set} ids: {}", name_some(ids)));
        }
        if !j.missing_usage.is_empty() || !j.extra_usage.is_empty() {
            bad.push(format!(
                "T != U (missing usage {}, extra usage {})",
                j.missing_usage.len(),
                j.extra_usage.len()
            ));
        }
        if j.decisions_required
            && (!j.missing_decisions.is_empty() || !j.extra_decisions.is_empty())
        {
            bad.push(format!(
                "T != D (missing {}, extra {})",
                j.missing_decisions.len(),
                j.extra_decisions.len()
            ));
        }
        if !j.decisions_required && !j.extra_decisions.is_empty() {
            bad.push(format!(
                "decisions for unknown requests: {}",
                name_some(&j.extra_decisions)
            ));
        }
        if j.outcomes_supplied && (!j.missing_outcomes.is_empty() || !j.extra_outcomes.is_empty()) {
            bad.push(format!(
                "T != R (missing {}, extra {})",
                j.missing_outcomes.len(),
                j.extra_outcomes.len()
            ));
        }
        if !j.weak_attribution.is_empty() {
            bad.push(format!(
                "weak attribution (JOIN-4) at seqs {}",
                name_some(&j.weak_attribution)
            ));
        }
        let text = if bad.is_empty() {
            format!(
                "|T| = |U| = {}{}{}, each id once",
                j.traces,
                if j.decisions_required {
                    format!(" = |D| = {}", j.decisions)
                } else {
                    String::new()
                },
                if j.outcomes_supplied {
                    format!(" = |R| = {}", j.outcomes)
                } else {
                    String::new()
                },
            )
        } else {
            bad.join("; ")
        };
        rows.insert("requests", (bad.is_empty(), text));
    }
    {
        let multi: Vec<&String> = j
            .decision_of
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, _)| k)
            .collect();
        let ok = !j.decisions_required
            || (j.missing_decisions.is_empty()
                && multi.is_empty()
                && j.weak_attribution.is_empty());
        let text = if !j.decisions_required {
            "the frozen control schema emits no decisions".to_string()
        } else if ok {
            format!(
                "one decision per request ({} by {})",
                j.decisions, j.decision_key
            )
        } else {
            format!(
                "without a decision: {}; more than one: {}",
                name_some(&j.missing_decisions),
                name_some(&multi)
            )
        };
        rows.insert("decisions", (ok, text));
    }
    {
        let dup_u = j.duplicates.get("usage").map_or(0, Vec::len);
        let ok = j.missing_usage.is_empty()
            && j.extra_usage.is_empty()
            && dup_u == 0
            && j.outcome_disagreements.is_empty();
        let text = if ok {
            format!("each of {} traces matches exactly one usage row", j.traces)
        } else {
            let mut b = Vec::new();
            if !j.missing_usage.is_empty() {
                b.push(format!(
                    "traces without usage: {}",
                    name_some(&j.missing_usage)
                ));
            }
            if !j.extra_usage.is_empty() {
                b.push(format!(
                    "usage without a trace: {}",
                    name_some(&j.extra_usage)
                ));
            }
            if dup_u > 0 {
                b.push(format!("{dup_u} ids with several usage rows"));
            }
            if !j.outcome_disagreements.is_empty() {
                b.push(format!(
                    "trace and usage outcomes disagree: {}",
                    name_some(&j.outcome_disagreements)
                ));
            }
            b.join("; ")
        };
        rows.insert("cost join", (ok, text));
    }
    {
        let dup_r = j.duplicates.get("outcomes").map_or(0, Vec::len);
        let ok = (!j.outcomes_supplied
            || (j.missing_outcomes.is_empty() && j.extra_outcomes.is_empty() && dup_r == 0))
            && j.unmatched_task_outcomes.is_empty();
        let text = if ok {
            format!(
                "{} request outcomes one-to-one with traces; {} task outcomes join by case",
                j.outcomes,
                g.task_outcomes.len()
            )
        } else {
            let mut b = Vec::new();
            if !j.missing_outcomes.is_empty() {
                b.push(format!(
                    "traces without an outcome: {}",
                    name_some(&j.missing_outcomes)
                ));
            }
            if !j.extra_outcomes.is_empty() {
                b.push(format!(
                    "outcomes without a trace: {}",
                    name_some(&j.extra_outcomes)
                ));
            }
            if dup_r > 0 {
                b.push(format!("{dup_r} ids with several outcomes"));
            }
            if !j.unmatched_task_outcomes.is_empty() {
                b.push(format!(
                    "task outcomes matching no case: {}",
                    name_some(&j.unmatched_task_outcomes)
                ));
            }
            b.join("; ")
        };
        rows.insert("reward join", (ok, text));
    }
    // replay: the frozen route table reconstructs every decision; control
    // resolves every request to the strong route (LINEAGE-8).
    {
        let mut bad = Vec::new();
        if group == "control" {
            let strong = m.route(Tier::Strong);
            for (id, r) in &g.requests {
                if let Some((_, u)) = r.usage.first() {
                    if strong.is_none_or(|s| s.provider != u.provider_id || s.model != u.model_id) {
                        bad.push(format!("{id} served by {}:{}", u.provider_id, u.model_id));
                    }
                }
            }
        } else {
            for (id, _) in g.requests.iter().filter(|(_, r)| !r.traces.is_empty()) {
                let Some(ix) = j.decision_of.get(id.as_str()) else {
                    if j.decisions_required {
                        bad.push(format!("{id}: no decision to reconstruct"));
                    }
                    continue;
                };
                let d = &g.decisions[ix[0]].1;
                let route = d
                    .selected_tier
                    .as_deref()
                    .and_then(|t| m.routes.iter().find(|r| tier_name(r.tier) == t));
                match (route, d.selected_model.as_deref()) {
                    (Some(r), Some(sel)) if names_model(sel, &r.model) => {}
                    (Some(r), sel) => bad.push(format!(
                        "{id}: tier {} is frozen to {} but the decision selected {:?}",
                        tier_name(r.tier),
                        r.model,
                        sel
                    )),
                    (None, _) => bad.push(format!(
                        "{id}: selected tier {:?} is not a frozen tier",
                        d.selected_tier
                    )),
                }
            }
        }
        let ok = bad.is_empty();
        let text = if ok {
            if group == "control" {
                "every control request resolved to the frozen strong route".to_string()
            } else {
                "every decision agrees with the frozen route table".to_string()
            }
        } else {
            name_some(&bad)
        };
        rows.insert("replay", (ok, text));
    }
    // settlement.
    let s = settlement(m, g);
    {
        let bad: Vec<String> = s
            .requests
            .iter()
            .filter(|r| !r.state.accepted())
            .map(|r| {
                format!(
                    "{} {:?}: {}",
                    r.request_id,
                    r.state,
                    r.reason.as_deref().unwrap_or("")
                )
            })
            .collect();
        let text = if bad.is_empty() {
            format!("{} requests computed or not_charged", s.requests.len())
        } else {
            name_some(&bad)
        };
        rows.insert("settlement", (bad.is_empty(), text));
    }
    // cleanup.
    let c = cleanup(l, g);
    {
        let text = if c.holds() {
            format!(
                "audit at seq {} found zero residue; peak {} <= concurrency {}",
                c.audit_seq.unwrap_or(0),
                c.monitor_peak.unwrap_or(0),
                c.concurrency
            )
        } else {
            let mut b = Vec::new();
            match c.audit_seq {
                None => b.push("no cleanup audit recorded".to_string()),
                Some(seq) => {
                    if !c.after_close {
                        b.push(format!(
                            "audit at seq {seq} is not after the group closed (CASE-9)"
                        ));
                    }
                    if !c.audit_pass {
                        b.push(format!("audit at seq {seq} failed"));
                    }
                    if !c.residue.is_empty() {
                        b.push(format!("residue: {}", name_some(&c.residue)));
                    }
                }
            }
            match c.monitor_peak {
                None => b.push("no monitor sample recorded".into()),
                Some(p) if p > c.concurrency => {
                    b.push(format!("peak {p} > concurrency {}", c.concurrency))
                }
                Some(_) => {}
            }
            b.join("; ")
        };
        rows.insert("cleanup", (c.holds(), text));
    }
    // safety limit: spend and severe quality.
    {
        let spend = lineage_spend(l, group);
        let mut bad = Vec::new();
        if spend > m.limits.spend_stop_micro_usd {
            bad.push(format!(
                "lineage spend {spend} micro-USD crossed the stop limit {}",
                m.limits.spend_stop_micro_usd
            ));
        }
        let n = identities.len() as u64;
        if !is_non_evaluation(group) && group != "control" && n > 0 {
            // passed/n*100 < stop  <=>  passed*100 < stop*n (exact).
            let score_x100 = Dec::from(passed.saturating_mul(100));
            let below = m
                .limits
                .severe_quality_stop_pct
                .checked_mul(Dec::from(n))
                .is_ok_and(|limit| score_x100 < limit);
            if below {
                bad.push(format!(
                    "score {passed}/{n} is below the severe-quality stop of {}%",
                    m.limits.severe_quality_stop_pct.canonical()
                ));
            }
        }
        let text = if bad.is_empty() {
            format!(
                "lineage spend {spend} micro-USD within {}",
                m.limits.spend_stop_micro_usd
            )
        } else {
            bad.join("; ")
        };
        rows.insert("safety limit", (bad.is_empty(), text));
    }

    let rows: Vec<GateRow> = ROWS
        .iter()
        .map(|(name, _)| {
            let (holds, evidence) = rows.remove(name).expect("every row is computed");
            GateRow {
                gate: (*name).to_string(),
                holds,
                evidence,
            }
        })
        .collect();
    let status = status_of(&rows);
    Verdict {
        group: GroupRef {
            lineage,
            group: group.to_string(),
        },
        status,
        rows,
        skipped_security_policy: skips,
        cases,
        passed,
        total: identities.len() as u64,
        settlement: s,
        joins: j,
        cleanup: c,
        projection_version: crate::method::projections::PROJECTION_VERSION,
    }
}

/// VERDICT-1: the status of the first failing row in precedence order, or
/// `accepted` when every row holds.
pub fn status_of(rows: &[GateRow]) -> String {
    for (name, status) in ROWS {
        if rows.iter().any(|r| r.gate == name && !r.holds) {
            return status.to_string();
        }
    }
    ACCEPTED.to_string()
}

/// The tier's name as decisions write it.
pub fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Strong => "strong",
        Tier::Balanced => "balanced",
        Tier::Economy => "economy",
    }
}

/// The control artifact checksum (LINEAGE-6, LINEAGE-9): BLAKE3 over the
/// canonical JSON of the control's case results and request settlements,
/// re-derivable from the log at any later seq.
pub fn control_artifact_blake3(l: &LineageState, group: &str) -> String {
    let m = &l.frozen.manifest.public;
    let empty = GroupState::default();
    let g = l.groups.get(group).unwrap_or(&empty);
    let accepted = &m.harbor.accepted_exceptions;
    let cases: Vec<serde_json::Value> = g
        .cases
        .iter()
        .map(|(k, c)| {
            serde_json::json!({
                "case": k,
                "status": c.status(accepted),
                "result_blake3": c.result.as_ref().map(|(_, r)| r.result_blake3.clone()),
            })
        })
        .collect();
    let s = settlement(m, g);
    let doc = serde_json::json!({
        "control_key": l.frozen.control_key,
        "task_manifest_blake3": l.frozen.task_manifest_blake3,
        "cases": cases,
        "requests": s.requests,
    });
    let bytes = serde_json::to_vec(&doc).expect("json values serialize");
    hex::encode(blake3::hash(&bytes).as_bytes())
}

// ---------------------------------------------------------------------------
// The lineage (LINEAGE-1..9) and the control catalog (LINEAGE-6, FREEZE-6)
// ---------------------------------------------------------------------------

/// One target group of a lineage as the log has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupLine {
    /// The group name.
    pub group: String,
    /// Seq of its daemon start.
    pub opened_seq: Option<u64>,
    /// Seq of its close.
    pub closed_seq: Option<u64>,
    /// Seq and status of its attested verdict.
    pub sealed: Option<(u64, String)>,
    /// Seq of the feedback applied from it.
    pub feedback_seq: Option<u64>,
    /// The verdict the log gives now (for an unsealed group: what a seal
    /// would attest if nothing more arrived).
    pub status_now: String,
}

/// A lineage's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineageView {
    /// The label.
    pub lineage: String,
    /// Its target groups in order.
    pub groups: Vec<GroupLine>,
    /// The group that may open next, if any (LINEAGE-1, LINEAGE-2).
    pub next_group: Option<String>,
    /// Groups whose feedback may be recorded now (LINEAGE-3).
    pub feedback_allowed: Vec<String>,
    /// Complete: every target accepted, and r2 feedback recorded when the
    /// lineage ends at r2 (LINEAGE-4).
    pub complete: bool,
    /// The hard stop, if any: (seq, rule, reason).
    pub stopped: Option<(u64, String, String)>,
    /// The control compared against: `lineage/control` and how.
    pub control: Option<String>,
}

/// The lineage projection.
pub fn lineage_view(state: &State, l: &LineageState) -> LineageView {
    let m = &l.frozen.manifest.public;
    let names = m.group_names();
    let mut groups = Vec::new();
    let mut next_group = None;
    let mut feedback_allowed = Vec::new();
    let reused = l.control_reused.as_ref();
    for name in &names {
        let g = l.groups.get(*name);
        let sealed = g
            .and_then(|g| g.sealed.as_ref())
            .map(|(at, s)| (at.seq, s.status.clone()));
        let opened_seq = g.and_then(|g| g.opened.as_ref()).map(|(at, _)| at.seq);
        if next_group.is_none()
            && opened_seq.is_none()
            && l.stopped.is_none()
            && !(*name == "control" && reused.is_some())
            && crate::method::decide::earlier_groups_done(l, name).is_ok()
        {
            next_group = Some(name.to_string());
        }
        let feedback_seq = g.and_then(|g| g.feedback.as_ref()).map(|(at, _)| at.seq);
        if (*name == "r1" || *name == "r2")
            && feedback_seq.is_none()
            && sealed.as_ref().is_some_and(|(_, s)| s == ACCEPTED)
        {
            feedback_allowed.push(name.to_string());
        }
        let status_now = match &sealed {
            Some((_, s)) => s.clone(),
            None if *name == "control" && reused.is_some() => "reused".to_string(),
            None if g.is_none() => "not_opened".to_string(),
            None => group_verdict(state, l, name).status,
        };
        groups.push(GroupLine {
            group: name.to_string(),
            opened_seq,
            closed_seq: g.and_then(|g| g.closed).map(|at| at.seq),
            sealed,
            feedback_seq,
            status_now,
        });
    }
    let all_accepted = groups.iter().all(|g| {
        g.sealed.as_ref().is_some_and(|(_, s)| s == ACCEPTED)
            || (g.group == "control" && reused.is_some())
    });
    let last = names.last().copied().unwrap_or("");
    let feedback_done = last != "r2"
        || groups
            .iter()
            .any(|g| g.group == "r2" && g.feedback_seq.is_some());
    LineageView {
        lineage: l.frozen.lineage.clone(),
        groups,
        next_group,
        feedback_allowed,
        complete: all_accepted && feedback_done && l.stopped.is_none(),
        stopped: l
            .stopped
            .as_ref()
            .map(|(at, s)| (at.seq, s.rule.clone(), s.reason.clone())),
        control: match reused {
            Some((at, r)) => Some(format!(
                "{}/{} reused at seq {} (key {})",
                r.control.lineage, r.control.group, at.seq, r.control_key
            )),
            None if names.contains(&"control") => {
                Some(format!("{}/control (own)", l.frozen.lineage))
            }
            None => None,
        },
    }
}

/// One entry of the control catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogEntry {
    /// The control key.
    pub control_key: String,
    /// The accepted control group.
    pub group: GroupRef,
    /// Its artifact checksum as registered.
    pub artifact_blake3: String,
    /// Seq of the registration.
    pub seq: u64,
    /// Lineages that reuse it.
    pub reused_by: Vec<String>,
}

/// The control catalog: accepted controls by key, and who reuses them.
pub fn control_catalog(state: &State) -> Vec<CatalogEntry> {
    let mut out = Vec::new();
    for (key, regs) in &state.controls {
        for (at, r) in regs {
            let reused_by = state
                .lineages
                .values()
                .filter(|l| {
                    l.control_reused
                        .as_ref()
                        .is_some_and(|(_, u)| u.control == r.group)
                })
                .map(|l| l.frozen.lineage.clone())
                .collect();
            out.push(CatalogEntry {
                control_key: key.clone(),
                group: r.group.clone(),
                artifact_blake3: r.artifact_blake3.clone(),
                seq: at.seq,
                reused_by,
            });
        }
    }
    out
}

/// The exact case intersection of a round with its control (LINEAGE-9,
/// REPORT-4): identities terminal-valid in both, and every excluded one
/// with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intersection {
    /// `task/trial` identities valid in both groups.
    pub included: Vec<String>,
    /// Excluded identities and why.
    pub excluded: Vec<(String, String)>,
}

/// Computes the intersection of `round` (in `l`) with the control it
/// compares to (its own or the reused one).
pub fn intersection(state: &State, l: &LineageState, round: &str) -> Intersection {
    let (cl, cg) = match &l.control_reused {
        Some((_, r)) => (
            state.lineages.get(&r.control.lineage),
            r.control.group.as_str(),
        ),
        None => (Some(l), "control"),
    };
    let status = |lin: Option<&LineageState>, group: &str, id: &CaseRef| {
        lin.and_then(|x| {
            let acc = &x.frozen.manifest.public.harbor.accepted_exceptions;
            x.groups
                .get(group)
                .and_then(|g| g.cases.get(id))
                .map(|c| c.status(acc))
        })
        .unwrap_or(CaseStatus::NotStarted)
    };
    let mut out = Intersection {
        included: Vec::new(),
        excluded: Vec::new(),
    };
    for id in crate::method::decide::group_identities(l, round) {
        let r = status(Some(l), round, &id);
        let c = status(cl, cg, &id);
        let name = id.label();
        match (c, r) {
            (CaseStatus::TerminalValid, CaseStatus::TerminalValid) => out.included.push(name),
            (c, r) => {
                let status = |s: CaseStatus| {
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                };
                let why = if c != CaseStatus::TerminalValid {
                    format!("control {}", status(c))
                } else {
                    format!("{round} {}", status(r))
                };
                out.excluded.push((name, why));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
