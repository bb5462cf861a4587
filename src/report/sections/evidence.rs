//! Sections 7, 8 and 9 over every group with evidence (canaries
//! included): decisions by tier and reason (REPORT-5), the four-bucket
//! settlement and join audit, and the runtime, provider, retry,
//! concurrency and cleanup evidence.

use std::collections::BTreeMap;

use crate::method::projections::GroupState;
use crate::method::verdict::{Joins, RequestSettlement, Series};
use crate::schema::events::{GateRow, TraceStatus};

use super::basis::CostSummary;
use super::{Ctx, GroupEval, OpenedGroup};
use crate::report::join_ids::offending_ids;
use crate::report::lookup::{decision_for, request_category, served_other_model};
use crate::report::model::{
    Category, DecisionCounts, RequestIdSet, RouteUsage, RowLine, RuntimeEvidence, SetSize,
    SettlementAudit,
};
use crate::report::names::{tier_or_unresolved, JOIN_AND_SETTLEMENT_ROWS};
use crate::report::numbers::Money;
use crate::schema::verdict::VerdictRow;

/// An opened group with its cost summary: everything sections 7-9 read.
struct WithEvidence<'c, 'a> {
    opened: OpenedGroup<'c, 'a>,
    costs: &'c CostSummary,
}

impl<'c, 'a> WithEvidence<'c, 'a> {
    fn eval(&self) -> &'c GroupEval<'a> {
        self.opened.eval
    }
}

/// The opened groups with a cost summary, in target order.
fn with_evidence<'c, 'a>(ctx: &'c Ctx<'a>) -> impl Iterator<Item = WithEvidence<'c, 'a>> {
    ctx.opened_groups().filter_map(|opened| {
        Some(WithEvidence {
            costs: ctx.costs.get(&opened.eval.name)?,
            opened,
        })
    })
}

/// A gate row as evidence, with the request ids behind a failing join
/// row's counts (from the verdict's joins).
pub(super) fn row_line(row: &GateRow, joins: &Joins) -> RowLine {
    RowLine {
        gate: row.gate.clone(),
        holds: row.holds,
        evidence: row.evidence.clone(),
        ids: offending_ids(joins, row),
    }
}

/// Section 7.
pub(super) fn decision_counts(ctx: &Ctx<'_>) -> Vec<DecisionCounts> {
    with_evidence(ctx)
        .map(|group| decisions_of(&group))
        .collect()
}

fn decisions_of(group: &WithEvidence<'_, '_>) -> DecisionCounts {
    let verdict = group.opened.verdict;
    let mut out = DecisionCounts {
        group: group.eval().name.clone(),
        diagnostics_only: !group.eval().accepted(),
        requests: verdict.settlement.requests.len() as u64,
        served_tier: BTreeMap::new(),
        selected_tier: BTreeMap::new(),
        by_category: BTreeMap::new(),
        by_reason: BTreeMap::new(),
        fallback_model_mismatch: 0,
    };
    for request in &verdict.settlement.requests {
        *out.served_tier
            .entry(tier_or_unresolved(request.tier))
            .or_default() += 1;
        let decision = decision_for(verdict, group.opened.state, request);
        let category = request_category(decision, request);
        *out.by_category
            .entry(category.as_str().to_string())
            .or_default() += 1;
        let Some(decision) = decision else {
            continue;
        };
        *out.by_reason
            .entry(decision.reason.to_string())
            .or_default() += 1;
        let selected = decision.selected_tier.as_deref().unwrap_or("none");
        *out.selected_tier.entry(selected.to_string()).or_default() += 1;
        if served_other_model(decision, request) {
            debug_assert_eq!(category, Category::Fallback);
            out.fallback_model_mismatch += 1;
        }
    }
    out
}

/// Section 8.
pub(super) fn settlement_audits(ctx: &Ctx<'_>) -> Vec<SettlementAudit> {
    with_evidence(ctx)
        .map(|group| settlement_of(&group))
        .collect()
}

fn settlement_of(group: &WithEvidence<'_, '_>) -> SettlementAudit {
    let joins = &group.opened.verdict.joins;
    let costs = group.costs;
    let size = |set, size: usize| SetSize {
        set,
        size: size as u64,
    };
    SettlementAudit {
        group: group.eval().name.clone(),
        diagnostics_only: !group.eval().accepted(),
        states: costs.states.clone(),
        series: costs
            .series
            .iter()
            .map(|(series, amount)| (series.as_str().to_string(), Money::new(*amount)))
            .collect(),
        incomplete_requests: costs.incomplete,
        unpriced_requests: costs.unpriced,
        frozen_price_total: costs.frozen_prices.map(Money::new),
        routes: route_usage(&group.opened.verdict.settlement.requests),
        sets: vec![
            size(RequestIdSet::Traces, joins.traces),
            size(RequestIdSet::Usage, joins.usage),
            size(RequestIdSet::Decisions, joins.decisions),
            size(RequestIdSet::Outcomes, joins.outcomes),
        ],
        rows: group
            .opened
            .verdict
            .rows
            .iter()
            .filter(|row| {
                JOIN_AND_SETTLEMENT_ROWS
                    .iter()
                    .any(|r| r.as_str() == row.gate)
            })
            .map(|row| row_line(row, joins))
            .collect(),
    }
}

/// Token buckets and charges per served route, ordered by (tier, route).
fn route_usage(requests: &[RequestSettlement]) -> Vec<RouteUsage> {
    let mut routes: BTreeMap<(String, String), RouteUsage> = BTreeMap::new();
    for request in requests {
        let route = request
            .provider_model
            .as_ref()
            .map_or("(no usage row)".to_string(), |(provider, model)| {
                format!("{provider}:{model}")
            });
        let tier = tier_or_unresolved(request.tier);
        let usage = routes
            .entry((tier.clone(), route.clone()))
            .or_insert_with(|| RouteUsage {
                route,
                tier,
                requests: 0,
                uncached_input_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 0,
                reasoning_tokens: 0,
                series: BTreeMap::new(),
                incomplete: 0,
            });
        usage.requests += 1;
        if let Some(buckets) = &request.buckets {
            usage.uncached_input_tokens = usage
                .uncached_input_tokens
                .saturating_add(buckets.uncached_input_tokens);
            usage.cache_read_tokens = usage
                .cache_read_tokens
                .saturating_add(buckets.cache_read_tokens);
            usage.cache_write_tokens = usage
                .cache_write_tokens
                .saturating_add(buckets.cache_write_tokens);
            usage.output_tokens = usage.output_tokens.saturating_add(buckets.output_tokens);
            usage.reasoning_tokens = usage
                .reasoning_tokens
                .saturating_add(buckets.reasoning_tokens);
        }
        match request.charge_micro_usd {
            Some(charge) if request.series != Series::Incomplete => {
                let amount = usage
                    .series
                    .entry(request.series.as_str().to_string())
                    .or_insert_with(|| Money::new(0));
                *amount = Money::new(amount.micro_usd.saturating_add(charge));
            }
            _ => usage.incomplete += 1,
        }
    }
    routes.into_values().collect()
}

/// Counts of a group's traces and usage rows that did not complete.
#[derive(Default)]
struct ProviderErrors {
    http_non_2xx: BTreeMap<String, u64>,
    traces_failed: u64,
    traces_cancelled: u64,
    usage_failed: u64,
}

fn provider_errors(group: &GroupState) -> ProviderErrors {
    let mut errors = ProviderErrors::default();
    for request in group.requests.values() {
        for (_seq, trace) in &request.traces {
            if !(200..300).contains(&trace.http_status) {
                *errors
                    .http_non_2xx
                    .entry(trace.http_status.to_string())
                    .or_default() += 1;
            }
            match trace.status {
                TraceStatus::Failed => errors.traces_failed += 1,
                TraceStatus::ClientCancelled => errors.traces_cancelled += 1,
                TraceStatus::Completed => {}
            }
        }
        for (_seq, usage) in &request.usage {
            if usage.status.as_deref() == Some("failed") {
                errors.usage_failed += 1;
            }
        }
    }
    errors
}

/// Section 9.
pub(super) fn runtime_evidence(ctx: &Ctx<'_>) -> Vec<RuntimeEvidence> {
    with_evidence(ctx)
        .map(|group| runtime_of(ctx, &group))
        .collect()
}

fn runtime_of(ctx: &Ctx<'_>, group: &WithEvidence<'_, '_>) -> RuntimeEvidence {
    let verdict = group.opened.verdict;
    let mut cases = BTreeMap::new();
    let mut replacements_started = 0;
    for case in &verdict.cases {
        *cases.entry(case.status.as_str().to_string()).or_default() += 1;
        if case.case.replacement > 0 && case.starts > 0 {
            replacements_started += 1;
        }
    }
    let errors = provider_errors(group.opened.state);
    let cleanup = verdict
        .rows
        .iter()
        .find(|row| row.gate == VerdictRow::Cleanup.as_str())
        .map(|row| row_line(row, &verdict.joins))
        .unwrap_or(RowLine {
            gate: VerdictRow::Cleanup.as_str().into(),
            holds: false,
            evidence: "no cleanup row".into(),
            ids: Vec::new(),
        });
    RuntimeEvidence {
        group: group.eval().name.clone(),
        status: group.eval().status(),
        cases,
        replacements_started,
        skipped: verdict.skipped_security_policy.len() as u64,
        http_non_2xx: errors.http_non_2xx,
        traces_failed: errors.traces_failed,
        traces_cancelled: errors.traces_cancelled,
        usage_failed: errors.usage_failed,
        latency: "not in the evidence (BitRouter traces carry no latency; it lives only in the daemon's SQLite)".into(),
        harbor_retries: ctx.manifest.harbor.retries,
        concurrency: verdict.cleanup.concurrency,
        monitor_peak: verdict.cleanup.monitor_peak,
        monitor_samples: group.opened.state.monitor_samples,
        cleanup,
        failing_rows: verdict
            .failing()
            .iter()
            .map(|row| row.gate.clone())
            .collect(),
        planes: verdict.planes.clone(),
    }
}
