//! Settlement (SETTLE-1..8): each request of a group is settled from its
//! usage row, its receipts and the frozen prices; the group's settlement
//! totals the four cost series, never adding them together.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::method::projections::{GroupState, LineageState, RequestState, UsageObs};
use crate::schema::events::{
    ChargeStatus, ReceiptState, ReconciliationStatus, TokenBuckets, UsageOrigin,
};
use crate::schema::manifest::{ManifestFile, PriceBasis, Route, Tier};
use crate::schema::money::{bitrouter_charge, effective_cache_rate, Buckets, Charge, Rates};

crate::schema::named::named_enum! {
    /// The settlement state of one request (SETTLE-4).
    pub enum SettlementState {
        /// Reconstructable usage and price, or an authoritative charge.
        Computed = "computed",
        /// An authoritative terminal receipt of no charge.
        NotCharged = "not_charged",
        /// Still waiting for a receipt.
        Pending = "pending",
        /// Not known; rejects the group.
        Unknown = "unknown",
    }
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

crate::schema::named::named_enum! {
    /// The four labelled cost series, never added together (SETTLE-6).
    pub enum Series {
        /// An authoritative charge (a computed receipt, or reconciled usage at
        /// an actual price).
        Actual = "actual",
        /// Usage x a cited list price.
        Notional = "notional",
        /// What a subscription route would have cost at list price.
        SubscriptionCounterfactual = "subscription_counterfactual",
        /// Pending, unknown or unpriced: no amount.
        Incomplete = "incomplete",
    }
}

impl Series {
    /// Whether the series counts toward the lineage's spend against its
    /// limits (SETTLE-6: actual and notional; a counterfactual never did
    /// cost anything, an incomplete charge has no amount).
    pub fn counts_toward_spend(self) -> bool {
        matches!(self, Series::Actual | Series::Notional)
    }
}

/// One request's settlement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestSettlement {
    /// The persisted request id.
    pub request_id: String,
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

impl RequestSettlement {
    /// Nothing known yet about request `id`.
    fn new(id: &str) -> Self {
        RequestSettlement {
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
        }
    }

    /// `unknown`, for the reason `why`: no series, no amount.
    fn unknown(mut self, why: impl Into<String>) -> Self {
        self.state = SettlementState::Unknown;
        self.series = Series::Incomplete;
        self.charge_micro_usd = None;
        self.reason = Some(why.into());
        self
    }

    /// `pending`, for the reason `why`.
    fn pending(mut self, why: &str) -> Self {
        self.state = SettlementState::Pending;
        self.reason = Some(why.to_string());
        self
    }

    /// An authoritative no charge: zero in the actual series.
    fn not_charged(mut self) -> Self {
        self.state = SettlementState::NotCharged;
        self.series = Series::Actual;
        self.charge_micro_usd = Some(0);
        self
    }

    /// `computed` at `charge_micro_usd` in `series`.
    fn computed(mut self, series: Series, charge_micro_usd: u64) -> Self {
        self.state = SettlementState::Computed;
        self.series = series;
        self.charge_micro_usd = Some(charge_micro_usd);
        self
    }
}

/// A frozen price record's rates and basis.
struct FrozenRates {
    rates: Rates,
    basis: PriceBasis,
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
) -> Option<FrozenRates> {
    let p = m.prices.iter().find(|p| {
        p.provider == provider
            && p.model == model
            && p.credential_class == credential_class
            && p.effective_from.as_str() <= date
            && p.effective_to.as_deref().is_none_or(|to| date < to)
    })?;
    let base = Some(p.uncached_input);
    Some(FrozenRates {
        rates: Rates {
            uncached_input: base,
            cache_read: effective_cache_rate(p.cache_read, base, p.cache_price_fallback),
            cache_write: effective_cache_rate(p.cache_write, base, p.cache_price_fallback),
            output: Some(p.output),
        },
        basis: p.basis,
    })
}

/// The frozen rates that price request `r` (SETTLE-3, SETTLE-8): the price
/// record of the frozen route its usage row names, for the date of its
/// first trace, with the declared cache fallbacks applied. `None` without
/// a usage row, a trace, a frozen route or a covering price record. What
/// [`settle_request`] recomputes with, for a report's what-if tables
/// (the cache-read sensitivity) that reprice the same tokens.
pub fn request_rates(m: &ManifestFile, r: &RequestState) -> Option<Rates> {
    let (_, usage) = r.usage.first()?;
    let route = m
        .routes
        .iter()
        .find(|rt| rt.provider == usage.provider_id && rt.model == usage.model_id)?;
    let (_, trace) = r.traces.first()?;
    let date = trace.captured_at.get(..10).unwrap_or("");
    frozen_rates(
        m,
        &usage.provider_id,
        &usage.model_id,
        &route.credential_class,
        date,
    )
    .map(|frozen| frozen.rates)
}

fn to_buckets(b: &TokenBuckets) -> Buckets {
    Buckets {
        uncached_input_tokens: b.uncached_input_tokens,
        cache_read_tokens: b.cache_read_tokens,
        cache_write_tokens: b.cache_write_tokens,
        output_tokens: b.output_tokens,
        reasoning_tokens: b.reasoning_tokens,
    }
}

/// What the frozen snapshot says about one request's usage (SETTLE-2/3).
struct Repricing<'m> {
    /// The frozen route its provider/model resolve to.
    route: Option<&'m Route>,
    /// The charge recomputed in decimal, when a price covers it.
    recomputed: Option<Charge>,
    /// Why there is no computed recomputation (empty when there is one).
    no_price_reason: String,
    /// The series a computed charge at these rates belongs to.
    series: Series,
}

/// Reprices a usage row from the frozen route table and price records, on
/// the date of the request's first trace.
fn reprice<'m>(m: &'m ManifestFile, usage: &UsageObs, request: &RequestState) -> Repricing<'m> {
    let route = m
        .routes
        .iter()
        .find(|rt| rt.provider == usage.provider_id && rt.model == usage.model_id);
    let date = request
        .traces
        .first()
        .map(|(_, t)| t.captured_at.get(..10).unwrap_or("").to_string());
    let priced = match (route, date.as_deref()) {
        (Some(rt), Some(d)) => frozen_rates(
            m,
            &usage.provider_id,
            &usage.model_id,
            &rt.credential_class,
            d,
        )
        .map(|frozen| (frozen, rt.credential_class.as_str())),
        _ => None,
    };
    let recomputed = priced
        .as_ref()
        .map(|(frozen, _)| bitrouter_charge(&to_buckets(&usage.buckets), &frozen.rates));
    let no_price_reason = match (route, &date, &recomputed) {
        (None, _, _) => format!(
            "no frozen route for provider {:?} model {:?}",
            usage.provider_id, usage.model_id
        ),
        (_, None, _) => "no trace, so no request date to pick a price period".to_string(),
        (_, _, None) => "no frozen price record covers this route and date (SETTLE-8)".to_string(),
        (_, _, Some(Charge::Unknown { reason } | Charge::Invalid { reason })) => {
            format!("unpriced: {reason} (SETTLE-3)")
        }
        (_, _, Some(Charge::Computed { .. })) => String::new(),
    };
    let series = match &priced {
        Some((_, class)) if *class == "subscription" => Series::SubscriptionCounterfactual,
        Some((frozen, _))
            if matches!(frozen.basis, PriceBasis::Actual)
                && usage.usage_origin == UsageOrigin::AuthoritativeReceipt =>
        {
            Series::Actual
        }
        _ => Series::Notional,
    };
    Repricing {
        route,
        recomputed,
        no_price_reason,
        series,
    }
}

/// Settles one request from its usage row, receipts and the frozen prices
/// (SETTLE-1..6). The latest receipt is the charge source; the frozen rates
/// are the cross-check, and a difference is `authoritative_charge_mismatch`
/// (SETTLE-5), never an epsilon.
pub fn settle_request(m: &ManifestFile, id: &str, r: &RequestState) -> RequestSettlement {
    let mut out = RequestSettlement::new(id);
    // SETTLE-1: missing is never zero.
    let Some((_, usage)) = r.usage.first() else {
        return out.unknown("no usage row: missing buckets are never zero (SETTLE-1)");
    };
    out.provider_model = Some((usage.provider_id.to_string(), usage.model_id.to_string()));
    out.buckets = Some(to_buckets(&usage.buckets));
    // SETTLE-2/3: recompute in decimal from the frozen snapshot.
    let repricing = reprice(m, usage, r);
    out.tier = repricing.route.map(|rt| rt.tier);
    if let Some(Charge::Computed { charge_micro_usd }) = repricing.recomputed {
        out.recomputed_micro_usd = Some(charge_micro_usd);
    }
    match r.receipts.last() {
        Some((_, receipt)) => {
            out.receipt_micro_usd = receipt.final_charge_micro_usd;
            let unpriced = matches!(
                repricing.recomputed,
                Some(Charge::Unknown { .. } | Charge::Invalid { .. })
            );
            settle_by_receipt(out, receipt.state, &repricing.no_price_reason, unpriced)
        }
        None => settle_by_usage(out, usage, repricing),
    }
}

/// The latest receipt decides (SETTLE-5): a computed receipt is
/// cross-checked against the frozen prices when they give a charge. On a
/// frozen route whose prices leave a bucket it bills unpriced (`unpriced`:
/// no cache price and no declared fallback, SETTLE-3) the receipt cannot be
/// cross-checked and is not settlement evidence:
/// `authoritative_pricing_not_found`, unknown, as the same request without
/// the receipt.
fn settle_by_receipt(
    out: RequestSettlement,
    receipt: ReceiptState,
    no_price_reason: &str,
    unpriced: bool,
) -> RequestSettlement {
    match receipt {
        ReceiptState::Pending => out.pending("the latest receipt is pending"),
        ReceiptState::Unknown => out.unknown("the latest receipt is unknown"),
        ReceiptState::NotCharged => out.not_charged(),
        ReceiptState::Computed => match (out.receipt_micro_usd, out.recomputed_micro_usd) {
            (None, _) => out.unknown("a computed receipt without a charge"),
            (Some(receipt_charge), Some(recomputed)) if receipt_charge != recomputed => {
                out.unknown(format!(
                    "authoritative_charge_mismatch: receipt {receipt_charge} micro-USD, frozen prices give {recomputed} (SETTLE-5)"
                ))
            }
            (Some(receipt_charge), None) if unpriced => out.unknown(format!(
                "authoritative_pricing_not_found: the receipt's {receipt_charge} micro-USD cannot be cross-checked against the frozen prices: {no_price_reason} (SETTLE-5)"
            )),
            (Some(receipt_charge), recomputed) => {
                let mut out = out.computed(Series::Actual, receipt_charge);
                if recomputed.is_none() {
                    out.reason = Some(format!(
                        "authoritative receipt; no cross-check: {no_price_reason}"
                    ));
                }
                out
            }
        },
    }
}

/// No receipt: the usage row's reconciliation and charge status decide, and
/// a computed charge must equal the frozen prices' (SETTLE-2).
fn settle_by_usage(
    out: RequestSettlement,
    usage: &UsageObs,
    repricing: Repricing<'_>,
) -> RequestSettlement {
    match usage.reconciliation_status {
        ReconciliationStatus::Pending => return out.pending("reconciliation pending, no receipt"),
        ReconciliationStatus::Unknown => return out.unknown("reconciliation unknown"),
        _ => {}
    }
    match usage.charge_status {
        ChargeStatus::NotCharged => out.not_charged(),
        ChargeStatus::Unknown | ChargeStatus::LegacyUnknown => {
            out.unknown("bitrouter recorded the charge as unknown")
        }
        ChargeStatus::Computed => match (out.recomputed_micro_usd, usage.final_charge_micro_usd) {
            (None, _) => out.unknown(repricing.no_price_reason),
            (Some(recomputed), Some(recorded)) if recorded != recomputed => out.unknown(format!(
                "charge mismatch: bitrouter recorded {recorded} micro-USD, frozen prices give {recomputed} (SETTLE-2)"
            )),
            (Some(recomputed), _) => out.computed(repricing.series, recomputed),
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

/// The lineage's spend so far through `upto` (in target order), micro-USD,
/// over actual and notional series: the groups' kept spend (`SpendState`).
pub(super) fn lineage_spend(l: &LineageState, upto: &str) -> u64 {
    let m = &l.frozen.manifest.public;
    let mut total = 0u64;
    for name in m.group_names() {
        if let Some(g) = l.groups.get(name) {
            total = total.saturating_add(g.spend.total_micro_usd());
        }
        if name == upto {
            break;
        }
    }
    total
}
