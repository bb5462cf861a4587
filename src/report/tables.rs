//! The dataset-publication tables: one row per request and one per case
//! identity of every group of every lineage, as typed rows (JSON Lines,
//! Parquet) and as CSV written from those rows with the `csv` crate.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::method::projections::{GroupState, State};
use crate::method::verdict::{self, RequestSettlement, Verdict};
use crate::schema::events::CaseRef;

use super::lookup::{case_passed, decision_for, request_category};
use super::model::Category;
use super::names::{tier_or_unresolved, ReportName};

/// One request of a group: its buckets, charge, tier, reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRow {
    /// The lineage.
    pub lineage: String,
    /// The group.
    pub group: String,
    /// The group's status.
    pub group_status: String,
    /// The persisted request id.
    pub request_id: String,
    /// The served route's tier.
    pub tier: String,
    /// Served provider, if a usage row exists.
    pub provider: Option<String>,
    /// Served model, if a usage row exists.
    pub model: Option<String>,
    /// The decision reason, if any.
    pub reason: Option<String>,
    /// The REPORT-5 category.
    pub category: Category,
    /// The selected tier, if a decision exists.
    pub selected_tier: Option<String>,
    /// Uncached input tokens.
    pub uncached_input_tokens: Option<u64>,
    /// Cache read tokens.
    pub cache_read_tokens: Option<u64>,
    /// Cache write tokens.
    pub cache_write_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Reasoning tokens.
    pub reasoning_tokens: Option<u64>,
    /// Settlement state.
    pub settlement_state: String,
    /// Cost series.
    pub series: String,
    /// The charge counted, micro-USD.
    pub charge_micro_usd: Option<u64>,
    /// Usage x the frozen prices, micro-USD.
    pub recomputed_micro_usd: Option<u64>,
    /// The trace's HTTP status.
    pub http_status: Option<u16>,
}

/// One case identity of a group: reward and status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseRow {
    /// The lineage.
    pub lineage: String,
    /// The group.
    pub group: String,
    /// The group's status.
    pub group_status: String,
    /// The task.
    pub task: String,
    /// The trial identity.
    pub trial: String,
    /// 0 original, 1 replacement-01.
    pub replacement: u8,
    /// The case state.
    pub status: String,
    /// The reward as Harbor wrote it.
    pub reward: Option<String>,
    /// Passed (reward exactly 1, terminal-valid original).
    pub passed: bool,
    /// A validated security-policy skip.
    pub skipped: bool,
    /// Seq of its start.
    pub started_seq: Option<u64>,
}

/// The columns of the request table, in order.
pub const REQUEST_COLUMNS: [&str; 20] = [
    "lineage",
    "group",
    "group_status",
    "request_id",
    "tier",
    "provider",
    "model",
    "reason",
    "category",
    "selected_tier",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "settlement_state",
    "series",
    "charge_micro_usd",
    "recomputed_micro_usd",
    "http_status",
];

/// The columns of the case table, in order.
pub const CASE_COLUMNS: [&str; 11] = [
    "lineage",
    "group",
    "group_status",
    "task",
    "trial",
    "replacement",
    "status",
    "reward",
    "passed",
    "skipped",
    "started_seq",
];

/// One group of a lineage with its verdict, as the tables read it.
struct TableGroup<'a> {
    lineage: &'a str,
    name: &'a str,
    status: String,
    state: &'a GroupState,
    verdict: Verdict,
}

/// Every request and case of every lineage of the state (the
/// dataset-publication tables). Pure.
pub fn tables(state: &State) -> (Vec<RequestRow>, Vec<CaseRow>) {
    let mut requests = Vec::new();
    let mut cases = Vec::new();
    for lineage in state.lineages.values() {
        for name in lineage.frozen.manifest.public.group_names() {
            let Some(group_state) = lineage.groups.get(name) else {
                continue;
            };
            let verdict = verdict::group_verdict(state, lineage, name);
            let status = group_state.sealed.as_ref().map_or(
                format!("unsealed (now {})", verdict.status),
                |(_, sealed)| sealed.status.clone(),
            );
            let group = TableGroup {
                lineage: &lineage.frozen.lineage,
                name,
                status,
                state: group_state,
                verdict,
            };
            requests.extend(
                group
                    .verdict
                    .settlement
                    .requests
                    .iter()
                    .map(|request| request_row(&group, request)),
            );
            cases.extend(case_rows(&group));
        }
    }
    (requests, cases)
}

fn request_row(group: &TableGroup<'_>, request: &RequestSettlement) -> RequestRow {
    let decision = decision_for(&group.verdict, group.state, request);
    let buckets = request.buckets.as_ref();
    RequestRow {
        lineage: group.lineage.to_string(),
        group: group.name.to_string(),
        group_status: group.status.clone(),
        request_id: request.request_id.clone(),
        tier: tier_or_unresolved(request.tier),
        provider: request
            .provider_model
            .as_ref()
            .map(|(provider, _)| provider.clone()),
        model: request
            .provider_model
            .as_ref()
            .map(|(_, model)| model.clone()),
        reason: decision.map(|decision| decision.reason.to_string()),
        category: request_category(decision, request),
        selected_tier: decision
            .and_then(|decision| decision.selected_tier.as_deref().map(String::from)),
        uncached_input_tokens: buckets.map(|buckets| buckets.uncached_input_tokens),
        cache_read_tokens: buckets.map(|buckets| buckets.cache_read_tokens),
        cache_write_tokens: buckets.map(|buckets| buckets.cache_write_tokens),
        output_tokens: buckets.map(|buckets| buckets.output_tokens),
        reasoning_tokens: buckets.map(|buckets| buckets.reasoning_tokens),
        settlement_state: request.state.report_name().to_string(),
        series: request.series.report_name().to_string(),
        charge_micro_usd: request.charge_micro_usd,
        recomputed_micro_usd: request.recomputed_micro_usd,
        http_status: group
            .state
            .requests
            .get(request.request_id.as_str())
            .and_then(|observed| observed.traces.first())
            .map(|(_, trace)| trace.http_status),
    }
}

fn case_rows(group: &TableGroup<'_>) -> Vec<CaseRow> {
    let skipped: BTreeSet<CaseRef> = group.verdict.skipped_cases().into_iter().collect();
    group
        .verdict
        .cases
        .iter()
        .map(|case| CaseRow {
            lineage: group.lineage.to_string(),
            group: group.name.to_string(),
            group_status: group.status.clone(),
            task: case.case.task.clone(),
            trial: case.case.trial.clone(),
            replacement: case.case.replacement,
            status: case.status.report_name().to_string(),
            reward: case.reward.clone(),
            passed: case_passed(case),
            skipped: skipped.contains(&CaseRef {
                replacement: 0,
                ..case.case.clone()
            }),
            started_seq: case.started_seq,
        })
        .collect()
}

/// Rows as CSV (RFC 4180: fields quoted when they hold a comma, quote or
/// newline; absent values empty), header from the JSON field names.
pub fn to_csv<T: Serialize>(rows: &[T], header: &[&str]) -> String {
    let mut out = String::new();
    out.push_str(&header.join(","));
    out.push('\n');
    for row in rows {
        let value = serde_json::to_value(row).unwrap_or_default();
        let fields: Vec<String> = header
            .iter()
            .map(|column| match value.get(*column) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(text)) => csv_field(text),
                Some(other) => csv_field(&other.to_string()),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

pub(crate) fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
