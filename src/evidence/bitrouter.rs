//! BitRouter's evidence rows -> ledger payloads (`spec/bitrouter-formats.md`
//! section 2, HEAD `003f99ee`).
//!
//! One function per row kind, each `parse_X(line, group)`: the bytes of one
//! JSON Lines row (without its newline) in, one payload out, or a
//! [`FieldError`] naming the field. [`read_rows`] runs a parser over a whole
//! file with the streaming reader of [`super::jsonl::for_each_jsonl_row`] and turns
//! refusals into `<source>: line <n>: field <path>: <problem>`.
//!
//! Common rules of every parser:
//! - the line must be one JSON object, UTF-8, no key repeated at any depth;
//! - an enumerated value outside the formats doc's list is refused, never
//!   mapped; unknown *keys* are ignored (BitRouter adds fields over time);
//! - identifiers are non-empty strings of at most
//!   [`super::INGEST_FIELD_BYTES_MAX`] bytes; counts are JSON integers
//!   (`1.0` is refused, as BitRouter's serde would);
//! - `line_blake3` / `source_blake3` is the BLAKE3 of the exact bytes given;
//! - shapes of other or older formats found among the shared fixtures (the
//!   stale `bundle-smoke` rows, replay fixtures, adapter-side decision rows,
//!   legacy outcomes) are refused with a message that says what they are.
//!
//! Decisions taken where the formats doc is silent are documented on each
//! parser.

use std::io::{BufRead, Read};
use std::path::Path;

use super::json::{found, load_object, raw_values_at, Obj};
use super::jsonl::for_each_jsonl_row_with_progress;
use super::{
    blake3_hex, check_sha256_tag, check_timestamp, echo, FieldError, FieldResult, Progress,
    TimeForm, INGEST_FIELD_BYTES_MAX, INGEST_LINE_BYTES_MAX,
};
use crate::error::{Error, Result};
use crate::schema::events::{
    ChargeStatus, GroupRef, Harness, OutcomeRecorded, PolicyDecisionRecorded, PricingSource,
    Protocol, ReceiptRecorded, ReceiptState, ReconciliationStatus, RequestTraced, TokenBuckets,
    TraceStatus, UsageOrigin, UsageRecorded,
};
use crate::schema::money::{self, Buckets, Charge, Dec, MoneyError, Rates};

// ---------------------------------------------------------------------------
// Enumerations of the formats doc
// ---------------------------------------------------------------------------

/// Trace `harness` values.
pub const HARNESSES: &[(&str, Harness)] = &[
    ("generic", Harness::Generic),
    ("hermes", Harness::Hermes),
    ("claude_code", Harness::ClaudeCode),
    ("codex", Harness::Codex),
    ("smithers", Harness::Smithers),
    ("terminus_2", Harness::Terminus2),
    ("open_claw", Harness::OpenClaw),
    ("unknown", Harness::Unknown),
];

/// Trace `protocol` values.
pub const PROTOCOLS: &[(&str, Protocol)] = &[
    ("chat_completions", Protocol::ChatCompletions),
    ("messages", Protocol::Messages),
    ("responses", Protocol::Responses),
    ("open_claw_runtime", Protocol::OpenClawRuntime),
    ("unknown", Protocol::Unknown),
];

/// Trace `outcome.status` values.
pub const TRACE_STATUSES: &[(&str, TraceStatus)] = &[
    ("completed", TraceStatus::Completed),
    ("failed", TraceStatus::Failed),
    ("client_cancelled", TraceStatus::ClientCancelled),
];

/// The HTTP status BitRouter records with `client_cancelled`.
pub const CLIENT_CANCELLED_HTTP_STATUS: u64 = 499;

/// Decision `reason` values of every period of the formats doc: HEAD,
/// 4b86a513, and Jul 9-30 (online learning).
pub const DECISION_REASONS: &[(&str, &str)] = &[
    ("static_table", "static_table"),
    ("tool_guardrail", "tool_guardrail"),
    ("progress_guard", "progress_guard"),
    (
        "progress_guard_tool_guardrail",
        "progress_guard_tool_guardrail",
    ),
    ("continuation_pin", "continuation_pin"),
    ("no_match", "no_match"),
    ("exploration_trial", "exploration_trial"),
    ("exploration_locked", "exploration_locked"),
    ("adequacy_pin", "adequacy_pin"),
    ("reliability_circuit_open", "reliability_circuit_open"),
    ("reliability_half_open_probe", "reliability_half_open_probe"),
];

/// Decision `*_effort` values.
pub const EFFORTS: &[(&str, &str)] = &[
    ("none", "none"),
    ("minimal", "minimal"),
    ("low", "low"),
    ("medium", "medium"),
    ("high", "high"),
    ("xhigh", "xhigh"),
    ("max", "max"),
];

/// Roles of a HEAD `agent_route/v1` request key.
pub const ROUTE_ROLES: &[(&str, &str)] = &[
    ("orchestrate", "orchestrate"),
    ("implement", "implement"),
    ("mechanical", "mechanical"),
    ("verify", "verify"),
    ("finalize", "finalize"),
    ("unknown", "unknown"),
];

/// Risks of a HEAD `agent_route/v1` request key.
pub const ROUTE_RISKS: &[(&str, &str)] = &[
    ("normal", "normal"),
    ("context", "context"),
    ("guarded", "guarded"),
];

/// Usage `usage_origin` values.
pub const USAGE_ORIGINS: &[(&str, UsageOrigin)] = &[
    ("provider_reported", UsageOrigin::ProviderReported),
    ("authoritative_receipt", UsageOrigin::AuthoritativeReceipt),
    ("estimated", UsageOrigin::Estimated),
    ("unknown", UsageOrigin::Unknown),
];

/// Usage `charge_status` values (also `charge_evidence.status`).
pub const CHARGE_STATUSES: &[(&str, ChargeStatus)] = &[
    ("computed", ChargeStatus::Computed),
    ("not_charged", ChargeStatus::NotCharged),
    ("unknown", ChargeStatus::Unknown),
    ("legacy_unknown", ChargeStatus::LegacyUnknown),
];

/// Usage `reconciliation_status` values.
pub const RECONCILIATION_STATUSES: &[(&str, ReconciliationStatus)] = &[
    ("not_applicable", ReconciliationStatus::NotApplicable),
    ("pending", ReconciliationStatus::Pending),
    ("computed", ReconciliationStatus::Computed),
    ("not_charged", ReconciliationStatus::NotCharged),
    ("unknown", ReconciliationStatus::Unknown),
];

/// Usage `charge_evidence.pricing_source` values.
pub const PRICING_SOURCES: &[(&str, PricingSource)] = &[
    ("configured", PricingSource::Configured),
    ("override", PricingSource::Override),
    ("authoritative_receipt", PricingSource::AuthoritativeReceipt),
    ("unknown", PricingSource::Unknown),
];

/// Usage `status` values (`succeeded` is the old spelling of `completed`).
pub const USAGE_STATUSES: &[(&str, &str)] = &[
    ("completed", "completed"),
    ("failed", "failed"),
    ("succeeded", "succeeded"),
];

/// Usage `error_code` values.
pub const ERROR_CODES: &[(&str, &str)] = &[
    ("upstream_rate_limited", "upstream_rate_limited"),
    ("upstream_policy_violation", "upstream_policy_violation"),
    ("request_failed", "request_failed"),
];

/// Usage `charge_evidence.unknown_reason` values, plus the terminal
/// reconciliation errors the formats doc lists beside them.
pub const UNKNOWN_REASONS: &[(&str, &str)] = &[
    ("usage_unavailable", "usage_unavailable"),
    ("pricing_not_found", "pricing_not_found"),
    ("invalid_input_buckets", "invalid_input_buckets"),
    ("invalid_output_buckets", "invalid_output_buckets"),
    ("missing_uncached_input_rate", "missing_uncached_input_rate"),
    ("missing_cache_read_rate", "missing_cache_read_rate"),
    ("missing_cache_write_rate", "missing_cache_write_rate"),
    ("missing_output_rate", "missing_output_rate"),
    ("invalid_uncached_input_rate", "invalid_uncached_input_rate"),
    ("invalid_cache_read_rate", "invalid_cache_read_rate"),
    ("invalid_cache_write_rate", "invalid_cache_write_rate"),
    ("invalid_output_rate", "invalid_output_rate"),
    ("invalid_charge_total", "invalid_charge_total"),
    (
        "not_charged_receipt_has_usage",
        "not_charged_receipt_has_usage",
    ),
    (
        "authoritative_settlement_unknown",
        "authoritative_settlement_unknown",
    ),
    (
        "authoritative_provider_missing",
        "authoritative_provider_missing",
    ),
    ("authoritative_model_missing", "authoritative_model_missing"),
    (
        "authoritative_pricing_not_found",
        "authoritative_pricing_not_found",
    ),
    (
        "authoritative_charge_mismatch",
        "authoritative_charge_mismatch",
    ),
    (
        "authoritative_pricing_ambiguous",
        "authoritative_pricing_ambiguous",
    ),
    ("attempt_budget_exhausted", "attempt_budget_exhausted"),
    (
        "authoritative_receipt_still_pending",
        "authoritative_receipt_still_pending",
    ),
    (
        "receipt_fetch_attempts_exhausted",
        "receipt_fetch_attempts_exhausted",
    ),
    // bitrouter 1.0.0-alpha.35: a row reconciled by a `not_charged` receipt
    // (charge_status `not_charged`, no charge); not in the formats doc.
    ("authoritative_not_charged", "authoritative_not_charged"),
];

/// The `charge_evidence.pricing_version` of a row no tariff priced.
pub const PRICING_VERSION_UNAVAILABLE: &str = "sha256:unavailable";

/// Receipt `state` values.
pub const RECEIPT_STATES: &[(&str, ReceiptState)] = &[
    ("pending", ReceiptState::Pending),
    ("computed", ReceiptState::Computed),
    ("not_charged", ReceiptState::NotCharged),
    ("unknown", ReceiptState::Unknown),
];

/// The four SETTLE-1 buckets, in BitRouter's pricing order.
pub const FOUR_BUCKETS: [&str; 4] = [
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
];

/// The separately reported reasoning bucket.
pub const REASONING_BUCKET: &str = "reasoning_tokens";

/// The `charge_evidence.effective_rates` keys, in [`Rates`] order.
pub const RATE_KEYS: [&str; 4] = [
    "uncached_input_micro_usd_per_token",
    "cache_read_micro_usd_per_token",
    "cache_write_micro_usd_per_token",
    "output_micro_usd_per_token",
];

// ---------------------------------------------------------------------------
// Messages for other formats
// ---------------------------------------------------------------------------

/// The refusal of a `bundle-smoke` trace row.
pub const STALE_TRACE: &str = "stale bitrouter format: this is the pre-strict trace row of \
workflow_state_bundle_smoke.sh (no captured_at, and usage linked through the \
x-bitrouter-cloud-request-id header instead of one shared request id); the current \
workflow-state bundle rejects it";

/// The refusal of a `bundle-smoke` usage row.
pub const STALE_USAGE: &str = "stale bitrouter format: this is the pre-strict cloud-usage row of \
workflow_state_bundle_smoke.sh (none of the four buckets uncached_input_tokens, \
cache_read_tokens, cache_write_tokens, output_tokens and no charge_evidence); the current \
workflow-state bundle rejects it (rule SETTLE-1)";

/// The refusal of an outcome row without `request_id` (strict parser).
pub const LEGACY_OUTCOME: &str = "missing; this is the legacy outcome format from before \
request ids (bitrouter #757, jul 29), which is also the stale bundle-smoke format: a row \
without request_id cannot join its request (rule JOIN-2) and is analytical only (rule JOIN-4); \
read the file as analytical-only outcomes if that is intended, or name the row's trial \
(trial_name) to make it a task-scoped outcome that joins by case (rule JOIN-3)";

/// The refusal of an adapter-side decision row of `route-evidence-run`.
pub const ADAPTER_DECISION: &str = "not a bitrouter policy decision record: this is an \
adapter-side route-evidence row (decision_id, exact_task_id, task_join_method) of the unmerged \
codex/next-bitrouter-iteration branch, without input_model, reason, pinned, locked or trialed";

/// The refusal of a workflow-state replay fixture given as a trace.
pub const REPLAY_FIXTURE: &str = "not a captured trace row: this is a workflow-state replay \
fixture (the to_replay_fixture_json form, with expected), which has no captured_at, method, \
path or outcome";

/// The refusal of a trajectory test input given as a trace.
pub const TRAJECTORY_INPUT: &str = "not a captured trace row: this is a trajectory test input \
(stage, body), not evidence";

// ---------------------------------------------------------------------------
// Traces
// ---------------------------------------------------------------------------

/// Parses one trace row (`CapturedIngressTrace`) into [`RequestTraced`].
///
/// Required: `id` (the request id), `captured_at` (RFC 3339), `harness`,
/// `protocol`, `method` (an upper-case HTTP method), `path` (starting with
/// `/`), `outcome.http_status` (100..=599) and `outcome.status`. `raw_body`
/// is skipped unparsed except for its syntax (it can be 16 MiB) but is
/// covered by `line_blake3`.
///
/// Decisions: a `client_cancelled` status must come with HTTP 499 (the doc
/// pairs them); an inbound `headers.x-bitrouter-request-id` must equal `id`
/// (BitRouter reuses it as the id, so a difference is one request with two
/// ids: weak attribution, rule JOIN-4).
pub fn parse_trace(line: &[u8], group: &GroupRef) -> Result<RequestTraced, FieldError> {
    let loaded = load_object(line, &["raw_body"])?;
    let o = Obj::root(&loaded.map);
    refuse_other_trace_shapes(&o)?;
    let request_id = o.id("id")?;
    let captured_at = o.id("captured_at")?;
    check_timestamp(captured_at, TimeForm::Rfc3339)
        .map_err(|p| FieldError::new("captured_at", p))?;
    let harness = o.enumerated("harness", HARNESSES)?;
    let protocol = o.enumerated("protocol", PROTOCOLS)?;
    let method = o.id("method")?;
    if method.len() > 16 || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(FieldError::new(
            "method",
            format!(
                "expected an upper-case http method such as POST, found {}",
                echo(method)
            ),
        ));
    }
    let path = o.id("path")?;
    if !path.starts_with('/') {
        return Err(FieldError::new(
            "path",
            format!(
                "expected a request path starting with /, found {}",
                echo(path)
            ),
        ));
    }
    if let Some(headers) = o.obj_opt("headers")? {
        if let Some(inbound) = headers.text_opt("x-bitrouter-request-id")? {
            if inbound != request_id {
                return Err(FieldError::new(
                    "headers.x-bitrouter-request-id",
                    format!(
                        "{} differs from id {}; bitrouter reuses the inbound id, so one request \
                         would carry two ids (weak attribution, rule JOIN-4)",
                        echo(inbound),
                        echo(request_id)
                    ),
                ));
            }
        }
    }
    let outcome = o.obj("outcome")?;
    let http = outcome.u64("http_status")?;
    let http_status = u16::try_from(http)
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| {
            FieldError::new(
                "outcome.http_status",
                format!("expected an http status 100..=599, found {http}"),
            )
        })?;
    let status = outcome.enumerated("status", TRACE_STATUSES)?;
    if status == TraceStatus::ClientCancelled && http != CLIENT_CANCELLED_HTTP_STATUS {
        return Err(FieldError::new(
            "outcome.http_status",
            format!("client_cancelled is recorded with http {CLIENT_CANCELLED_HTTP_STATUS}, found {http}"),
        ));
    }
    Ok(RequestTraced {
        group: group.clone(),
        request_id: request_id.to_string(),
        captured_at: captured_at.to_string(),
        harness,
        protocol,
        method: method.to_string(),
        path: path.to_string(),
        http_status,
        status,
        line_blake3: blake3_hex(line),
    })
}

fn refuse_other_trace_shapes(o: &Obj<'_>) -> FieldResult<()> {
    if !o.has("captured_at") {
        let cloud_link = match o.get("headers") {
            Some(serde_json::Value::Object(h)) => h.contains_key("x-bitrouter-cloud-request-id"),
            _ => false,
        };
        if cloud_link {
            return Err(FieldError::line(STALE_TRACE));
        }
        if o.has("expected") && !o.has("outcome") {
            return Err(FieldError::line(REPLAY_FIXTURE));
        }
    }
    if o.has("stage") && o.has("body") && !o.has("id") {
        return Err(FieldError::line(TRAJECTORY_INPUT));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Decisions
// ---------------------------------------------------------------------------

/// Parses one policy decision row (`PolicyDecisionRecord`) into
/// [`PolicyDecisionRecorded`].
///
/// Required: `input_model`, `key_strategy`, `request_key`,
/// `legacy_fingerprint`, `trace_state` (or its alias `workflow_state`, not
/// both), `reason` (a value of any period of the formats doc), `pinned`,
/// `locked`, `trialed`; and `request_id` or `ingress_request_id_sha256`
/// (`sha256:<64 lowercase hex>`) or both (rule JOIN-2).
///
/// Checked when present: `captured_at` (RFC 3339), `policy_digest`
/// (`sha256:<hex>`), every `*_effort` key (`none|minimal|low|medium|high|
/// xhigh|max`). `request_key` must follow a scheme the daemon writes
/// (`check_request_key`: `semantic_route/v1`, as bitrouter 1.0.0-alpha.35
/// writes it; the formats doc's `agent_route/v1`; `agent_trace/v1|v2`).
/// Tiers are lock-defined strings and are not enumerated.
///
/// Not checkable here: whether `ingress_request_id_sha256` is the SHA-256
/// commitment of a trace id (the crate has no SHA-256); the join does that.
pub fn parse_decision(line: &[u8], group: &GroupRef) -> Result<PolicyDecisionRecorded, FieldError> {
    let loaded = load_object(line, &[])?;
    let o = Obj::root(&loaded.map);
    if o.has("decision_id") && !o.has("input_model") {
        return Err(FieldError::line(ADAPTER_DECISION));
    }
    let request_id = o.id_opt("request_id")?;
    let commitment = o.id_opt("ingress_request_id_sha256")?;
    if let Some(c) = commitment {
        check_sha256_tag(c).map_err(|p| FieldError::new("ingress_request_id_sha256", p))?;
    }
    if request_id.is_none() && commitment.is_none() {
        return Err(FieldError::new(
            "request_id",
            "missing, and so is ingress_request_id_sha256; a decision needs one of them to \
             join its trace (rule JOIN-2)",
        ));
    }
    let captured_at = o.id_opt("captured_at")?;
    if let Some(t) = captured_at {
        check_timestamp(t, TimeForm::Rfc3339).map_err(|p| FieldError::new("captured_at", p))?;
    }
    let input_model = o.id("input_model")?;
    o.text("key_strategy")?;
    let request_key = o.id("request_key")?;
    check_request_key(request_key).map_err(|p| FieldError::new("request_key", p))?;
    o.text("legacy_fingerprint")?;
    match (o.has("trace_state"), o.has("workflow_state")) {
        (true, true) => {
            return Err(FieldError::new(
                "workflow_state",
                "present together with trace_state, of which it is the old alias; a row has one",
            ))
        }
        (true, false) => {
            o.text("trace_state")?;
        }
        (false, true) => {
            o.text("workflow_state")?;
        }
        (false, false) => {
            return Err(FieldError::new(
                "trace_state",
                "missing (and so is its alias workflow_state)",
            ))
        }
    }
    if let Some(digest) = o.id_opt("policy_digest")? {
        check_sha256_tag(digest).map_err(|p| FieldError::new("policy_digest", p))?;
    }
    let effort_keys: Vec<&String> = o.keys().filter(|k| k.ends_with("_effort")).collect();
    for key in effort_keys {
        o.enumerated_opt(key, EFFORTS)?;
    }
    let reason = o.enumerated("reason", DECISION_REASONS)?;
    Ok(PolicyDecisionRecorded {
        group: group.clone(),
        request_id: request_id.map(str::to_string),
        ingress_request_id_sha256: commitment.map(str::to_string),
        captured_at: captured_at.map(str::to_string),
        input_model: input_model.to_string(),
        policy: o.id_opt("policy")?.map(str::to_string),
        reason: reason.to_string(),
        baseline_tier: o.id_opt("baseline_tier")?.map(str::to_string),
        selected_tier: o.id_opt("selected_tier")?.map(str::to_string),
        selected_model: o.id_opt("selected_model")?.map(str::to_string),
        pinned: o.bool("pinned")?,
        locked: o.bool("locked")?,
        trialed: o.bool("trialed")?,
        line_blake3: blake3_hex(line),
    })
}

/// Task families of a `semantic_route/v1` request key, as bitrouter
/// 1.0.0-alpha.35's `parse_semantic_route_key` accepts them.
pub const SEMANTIC_TASK_FAMILIES: &[&str] = &[
    "code:generation",
    "code:debugging",
    "code:review",
    "code:sql_database",
    "code:frontend_ui",
    "code:devops_config",
    "code:repository_analysis",
    "agent:multi_step_planning",
    "agent:workflow_execution",
    "agent:web_research",
    "agent:memory_operations",
    "agent:general",
    "unknown",
];

/// Workflow states of an `agent_trace/v1|v2` request key (bitrouter
/// 1.0.0-alpha.35, `parse_workflow_state_kind`).
pub const TRACE_STATES: &[&str] = &[
    "unknown",
    "opening",
    "planning",
    "tool_followup",
    "edit",
    "test",
    "debug",
    "review",
    "recovery",
    "subagent_dispatch",
    "finalization",
];

/// Checks a request key against the schemes the daemon writes:
/// `semantic_route/v1|<task_family>|<role>|<risk>` (what bitrouter
/// 1.0.0-alpha.35 writes), the formats doc's `agent_route/v1` of the same
/// shape, and `agent_trace/v1|v2|<state>|<risk>` (v1 never with risk
/// `context`).
fn check_request_key(key: &str) -> std::result::Result<(), String> {
    let parts: Vec<&str> = key.split('|').collect();
    match parts.as_slice() {
        ["semantic_route/v1", family, role, risk] => {
            if !SEMANTIC_TASK_FAMILIES.contains(family) {
                return Err(format!(
                    "unknown task family {} in {}; expected one of {}",
                    echo(family),
                    echo(key),
                    SEMANTIC_TASK_FAMILIES.join("|")
                ));
            }
            check_role_and_risk(key, role, risk)
        }
        ["agent_route/v1", family, role, risk] => {
            if family.is_empty() {
                return Err(format!("empty task family in {}", echo(key)));
            }
            check_role_and_risk(key, role, risk)
        }
        [version @ ("agent_trace/v1" | "agent_trace/v2"), state, risk] => {
            if !TRACE_STATES.contains(state) {
                return Err(format!(
                    "unknown trace state {} in {}; expected one of {}",
                    echo(state),
                    echo(key),
                    TRACE_STATES.join("|")
                ));
            }
            let v1_context = *version == "agent_trace/v1" && *risk == "context";
            if v1_context || !ROUTE_RISKS.iter().any(|(n, _)| n == risk) {
                return Err(format!("risk {} is not one of {version}'s", echo(risk)));
            }
            Ok(())
        }
        _ => Err(format!(
            "unknown request key scheme {}; expected semantic_route/v1|<task_family>|<role>|<risk>, \
             agent_route/v1|<task_family>|<role>|<risk> or agent_trace/v1|v2|<state>|<risk>",
            echo(key)
        )),
    }
}

fn check_role_and_risk(key: &str, role: &str, risk: &str) -> std::result::Result<(), String> {
    let one_of = |v: &str, table: &[(&str, &str)]| table.iter().any(|(n, _)| *n == v);
    let names =
        |table: &[(&str, &str)]| table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("|");
    if !one_of(role, ROUTE_ROLES) {
        return Err(format!(
            "unknown role {} in {}; expected one of {}",
            echo(role),
            echo(key),
            names(ROUTE_ROLES)
        ));
    }
    if !one_of(risk, ROUTE_RISKS) {
        return Err(format!(
            "unknown risk {} in {}; expected one of {}",
            echo(risk),
            echo(key),
            names(ROUTE_RISKS)
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------

/// Parses one usage row (`MeteringUsageRecord` / `CloudUsageRecord`) into
/// [`UsageRecorded`].
///
/// Required: `request_id` (a row without it cannot join: rule JOIN-2),
/// `provider_id`, `model_id`, `prompt_tokens`, `completion_tokens`, all four
/// buckets `uncached_input_tokens`, `cache_read_tokens`,
/// `cache_write_tokens`, `output_tokens` (missing or null is refused, never
/// read as zero: rule SETTLE-1), **and `reasoning_tokens`** (decision:
/// reasoning is billed at the output rate and `completion = output +
/// reasoning` cannot be checked without it, so a missing reasoning bucket
/// is refused like the other four), `charge_status`,
/// `reconciliation_status`, `usage_origin`. Both identities
/// `prompt = uncached + cache_read + cache_write` and
/// `completion = output + reasoning` must hold; the message gives the
/// numbers.
///
/// Optional (missing or null is `None`): `final_charge_micro_usd` (a pending
/// row has none), `status` (`completed|failed|succeeded`), `error_code`, and
/// `charge_evidence` with `effective_rates`, `pricing_source`,
/// `pricing_version` (`sha256:<hex>`); the evidence's `status`,
/// `charge_micro_usd`, `unknown_reason` and `normalized_usage` buckets are
/// type- and value-checked but have no payload field.
///
/// When `effective_rates` is present, the charge is recomputed with
/// [`money::bitrouter_charge`] from the row's buckets (rates read with
/// [`Dec::from_json_value`], so `0.84` is exactly 0.84):
/// `recomputed_charge_micro_usd` is the computed charge (none when the rates
/// give unknown or invalid), and `recompute_matches` is true only when a
/// charge was computed and equals `final_charge_micro_usd`. Whether a
/// mismatch rejects the group is the settlement verdict's business
/// (SETTLE-5), not the parser's.
pub fn parse_usage(line: &[u8], group: &GroupRef) -> Result<UsageRecorded, FieldError> {
    let loaded = load_object(line, &[])?;
    let o = Obj::root(&loaded.map);
    if FOUR_BUCKETS.iter().all(|b| !o.has(b)) && !o.has("charge_evidence") {
        return Err(FieldError::line(STALE_USAGE));
    }
    if o.present("request_id").is_none() {
        return Err(FieldError::new(
            "request_id",
            if o.has("request_id") {
                "is null; a usage row without request_id cannot join its trace (rule JOIN-2)"
            } else {
                "missing; a usage row without request_id cannot join its trace (rule JOIN-2)"
            },
        ));
    }
    let request_id = o.id("request_id")?;
    let provider_id = o.id("provider_id")?;
    let model_id = o.id("model_id")?;
    let prompt_tokens = o.u64("prompt_tokens")?;
    let completion_tokens = o.u64("completion_tokens")?;
    let buckets = five_buckets(&o)?;
    check_identities(prompt_tokens, completion_tokens, &buckets)?;
    let final_charge_micro_usd = o.u64_opt("final_charge_micro_usd")?;
    let charge_status = o.enumerated("charge_status", CHARGE_STATUSES)?;
    let reconciliation_status = o.enumerated("reconciliation_status", RECONCILIATION_STATUSES)?;
    let usage_origin = o.enumerated("usage_origin", USAGE_ORIGINS)?;
    let status = o.enumerated_opt("status", USAGE_STATUSES)?;
    let error_code = o.enumerated_opt("error_code", ERROR_CODES)?;
    let mut rates = None;
    let mut pricing_source = None;
    let mut pricing_version = None;
    if let Some(ev) = o.obj_opt("charge_evidence")? {
        ev.enumerated_opt("status", CHARGE_STATUSES)?;
        ev.u64_opt("charge_micro_usd")?;
        ev.enumerated_opt("unknown_reason", UNKNOWN_REASONS)?;
        if let Some(nu) = ev.obj_opt("normalized_usage")? {
            for b in FOUR_BUCKETS
                .iter()
                .chain(std::iter::once(&REASONING_BUCKET))
            {
                nu.u64_opt(b)?;
            }
        }
        if let Some(r) = ev.obj_opt("effective_rates")? {
            let mut got: [Option<Dec>; 4] = [None; 4];
            for (slot, key) in got.iter_mut().zip(RATE_KEYS) {
                *slot = rate(&r, key)?;
            }
            let [uncached_input, cache_read, cache_write, output] = got;
            rates = Some(Rates {
                uncached_input,
                cache_read,
                cache_write,
                output,
            });
        }
        pricing_source = ev.enumerated_opt("pricing_source", PRICING_SOURCES)?;
        if let Some(v) = ev.id_opt("pricing_version")? {
            // bitrouter 1.0.0-alpha.35 writes `sha256:unavailable` when no
            // tariff applied (a row settled by a not_charged receipt).
            if v != PRICING_VERSION_UNAVAILABLE {
                check_sha256_tag(v).map_err(|p| FieldError::new(ev.path("pricing_version"), p))?;
            }
            pricing_version = Some(v.to_string());
        }
    }
    let (recomputed_charge_micro_usd, recompute_matches) = match &rates {
        None => (None, None),
        Some(r) => {
            let recomputed = match money::bitrouter_charge(&buckets, r) {
                Charge::Computed { charge_micro_usd } => Some(charge_micro_usd),
                Charge::Unknown { .. } | Charge::Invalid { .. } => None,
            };
            let matches = recomputed.is_some() && recomputed == final_charge_micro_usd;
            (recomputed, Some(matches))
        }
    };
    Ok(UsageRecorded {
        group: group.clone(),
        request_id: request_id.to_string(),
        provider_id: provider_id.to_string(),
        model_id: model_id.to_string(),
        prompt_tokens,
        completion_tokens,
        buckets: token_buckets(&buckets),
        final_charge_micro_usd,
        charge_status,
        reconciliation_status,
        usage_origin,
        status: status.map(str::to_string),
        error_code: error_code.map(str::to_string),
        rates,
        pricing_source,
        pricing_version,
        recomputed_charge_micro_usd,
        recompute_matches,
        line_blake3: blake3_hex(line),
    })
}

/// One effective rate: missing or null is `None` (a missing rate), a JSON
/// number is an exact decimal, anything else is refused.
fn rate(r: &Obj<'_>, key: &str) -> FieldResult<Option<Dec>> {
    match r.present(key) {
        None => Ok(None),
        Some(v @ serde_json::Value::Number(_)) => Dec::from_json_value(v)
            .map(Some)
            .map_err(|e| FieldError::new(r.path(key), e.to_string())),
        Some(other) => Err(FieldError::new(
            r.path(key),
            format!("expected a number (micro-usd per token), {}", found(other)),
        )),
    }
}

/// The four SETTLE-1 buckets and reasoning of `o`, each required.
fn five_buckets(o: &Obj<'_>) -> FieldResult<Buckets> {
    let mut got = [0u64; 5];
    let names = FOUR_BUCKETS
        .iter()
        .copied()
        .chain(std::iter::once(REASONING_BUCKET));
    for (slot, name) in got.iter_mut().zip(names) {
        if o.present(name).is_none() {
            let how = if o.has(name) { "is null" } else { "missing" };
            let why = if name == REASONING_BUCKET {
                "reasoning is billed at the output rate and completion_tokens = output_tokens + \
                 reasoning_tokens cannot be checked without it (rule SETTLE-1, SETTLE-2)"
            } else {
                "a bucket that was not observed is never read as zero (rule SETTLE-1)"
            };
            return Err(FieldError::new(o.path(name), format!("{how}; {why}")));
        }
        *slot = o.u64(name)?;
    }
    let [uncached_input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens] =
        got;
    Ok(Buckets {
        uncached_input_tokens,
        cache_read_tokens,
        cache_write_tokens,
        output_tokens,
        reasoning_tokens,
    })
}

fn check_identities(prompt: u64, completion: u64, b: &Buckets) -> FieldResult<()> {
    money::check_bucket_identities(prompt, completion, b).map_err(|e| {
        let field = match e {
            MoneyError::CompletionIdentity { .. } => "completion_tokens",
            _ => "prompt_tokens",
        };
        FieldError::new(field, format!("{e} (rule SETTLE-1)"))
    })
}

fn token_buckets(b: &Buckets) -> TokenBuckets {
    TokenBuckets {
        uncached_input_tokens: b.uncached_input_tokens,
        cache_read_tokens: b.cache_read_tokens,
        cache_write_tokens: b.cache_write_tokens,
        output_tokens: b.output_tokens,
        reasoning_tokens: b.reasoning_tokens,
    }
}

// ---------------------------------------------------------------------------
// Receipts
// ---------------------------------------------------------------------------

/// Parses one settlement receipt (`bitrouter-cloud-sdk` `SettlementReceipt`,
/// the body of `GET /v1/requests/{id}/settlement`) into [`ReceiptRecorded`].
///
/// Required: `request_id`, `state` (`pending|computed|not_charged|unknown`),
/// `usage` with all five buckets (the SDK's i64 buckets: a negative one is
/// refused; a missing one is never zero, rule SETTLE-1).
/// `final_charge_micro_usd` must be present and >= 0 when `state` is
/// `computed` and absent or null otherwise. `model_id` and `provider_id` are
/// optional. The shared fixtures hold bare receipts (no envelope), which is
/// the shape accepted.
pub fn parse_receipt(line: &[u8], group: &GroupRef) -> Result<ReceiptRecorded, FieldError> {
    let loaded = load_object(line, &[])?;
    let o = Obj::root(&loaded.map);
    let request_id = o.id("request_id")?;
    let state = o.enumerated("state", RECEIPT_STATES)?;
    let provider_id = o.id_opt("provider_id")?;
    let model_id = o.id_opt("model_id")?;
    let usage = o.obj("usage")?;
    let buckets = five_buckets(&usage)?;
    let final_charge_micro_usd = match (state, o.present("final_charge_micro_usd")) {
        (ReceiptState::Computed, None) => {
            let how = if o.has("final_charge_micro_usd") {
                "is null"
            } else {
                "missing"
            };
            return Err(FieldError::new(
                "final_charge_micro_usd",
                format!("{how}; a computed receipt carries its final charge (rule SETTLE-4)"),
            ));
        }
        (ReceiptState::Computed, Some(_)) => Some(o.u64("final_charge_micro_usd")?),
        (other, Some(v)) => {
            return Err(FieldError::new(
                "final_charge_micro_usd",
                format!(
                    "present ({}) on {} receipt; only a computed receipt carries a final charge",
                    super::echo_json(v),
                    crate::schema::strings::with_article(state_name(other))
                ),
            ))
        }
        (_, None) => None,
    };
    Ok(ReceiptRecorded {
        group: group.clone(),
        request_id: request_id.to_string(),
        state,
        provider_id: provider_id.map(str::to_string),
        model_id: model_id.map(str::to_string),
        buckets: token_buckets(&buckets),
        final_charge_micro_usd,
        source_blake3: blake3_hex(line),
    })
}

fn state_name(state: ReceiptState) -> &'static str {
    RECEIPT_STATES
        .iter()
        .find(|(_, s)| *s == state)
        .map_or("unknown", |(n, _)| *n)
}

/// How a receipts file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptFileForm {
    /// One JSON document (compact or pretty-printed) holding one receipt, as
    /// `reconcile-metering` fetches it: `*.json`.
    Document,
    /// JSON Lines, one receipt per line: any other name (`*.jsonl`).
    JsonLines,
}

impl ReceiptFileForm {
    /// The form of a receipts file by its name: `.json` is one document,
    /// anything else is JSON Lines.
    pub fn of_path(path: &Path) -> ReceiptFileForm {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => ReceiptFileForm::Document,
            _ => ReceiptFileForm::JsonLines,
        }
    }
}

/// Parses a file holding one receipt document (at most
/// [`INGEST_LINE_BYTES_MAX`] bytes); errors read
/// `<source>: field <path>: <problem>`. `source_blake3` covers the whole
/// file's bytes.
pub fn parse_receipt_document(
    bytes: &[u8],
    source: &str,
    group: &GroupRef,
) -> Result<ReceiptRecorded> {
    if bytes.len() > INGEST_LINE_BYTES_MAX {
        return Err(FieldError::line(format!(
            "document is {} bytes, longer than the limit of {INGEST_LINE_BYTES_MAX} bytes",
            bytes.len()
        ))
        .in_document(source));
    }
    parse_receipt(bytes, group).map_err(|e| e.in_document(source))
}

/// Reads (at most [`INGEST_LINE_BYTES_MAX`] bytes) and parses a file holding
/// one receipt document.
pub fn read_receipt_document(
    r: &mut dyn Read,
    source: &str,
    group: &GroupRef,
) -> Result<ReceiptRecorded> {
    let mut bytes = Vec::new();
    r.take(INGEST_LINE_BYTES_MAX as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("read {source}"), e))?;
    parse_receipt_document(&bytes, source, group)
}

// ---------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------

/// Parses one benchmark outcome row (`BenchmarkOutcomeRecord`) into
/// [`OutcomeRecorded`], strictly: a row joins its request by `request_id`
/// (rule JOIN-1, JOIN-2), or, without one, names its trial (`trial_name`)
/// and is a task-scoped outcome that joins by case (rule JOIN-3: one
/// verifier reward per trial, never copied onto every request).
///
/// Decision on the legacy format (rows without `request_id`, as in
/// `test-inline/benchmark-outcome-legacy.jsonl` and the byte-identical stale
/// `bundle-smoke/benchmark-outcomes.jsonl`): this parser refuses them with
/// [`LEGACY_OUTCOME`], since the two cannot be told apart by shape and a
/// strict join must not meet them unannounced (neither carries a
/// `trial_name`, so a row that does is task-scoped); [`parse_outcome_analytical`]
/// accepts them with `request_id: None`, for an operator who asks for
/// analytical-only outcomes (rule JOIN-4).
///
/// Required: `session_key`, `task_id`, `reward` (a JSON number, kept as the
/// literal written: `1.0` stays `1.0`, `1` stays `1`). Optional:
/// `failed_reason`, `trial_name`; `finished_at`, `agent_started_at`,
/// `agent_finished_at` are checked as RFC 3339 when present.
pub fn parse_outcome(line: &[u8], group: &GroupRef) -> Result<OutcomeRecorded, FieldError> {
    outcome(line, group, false)
}

/// [`parse_outcome`] that accepts a row without `request_id` as
/// analytical-only (`request_id: None`, rule JOIN-4).
pub fn parse_outcome_analytical(
    line: &[u8],
    group: &GroupRef,
) -> Result<OutcomeRecorded, FieldError> {
    outcome(line, group, true)
}

fn outcome(line: &[u8], group: &GroupRef, analytical: bool) -> FieldResult<OutcomeRecorded> {
    let loaded = load_object(line, &[])?;
    let o = Obj::root(&loaded.map);
    let request_id = match o.present("request_id") {
        None if !analytical && o.present("trial_name").is_none() => {
            return Err(FieldError::new("request_id", LEGACY_OUTCOME))
        }
        None => None,
        Some(_) => Some(o.id("request_id")?.to_string()),
    };
    let session_key = o.id("session_key")?;
    let task_id = o.id("task_id")?;
    let reward = match o.get("reward") {
        None => return Err(FieldError::new("reward", "missing")),
        Some(serde_json::Value::Number(_)) => {
            let raw = raw_values_at(loaded.text, &[&["reward"]])?;
            match raw.first().copied().flatten() {
                Some(text) if text.len() <= INGEST_FIELD_BYTES_MAX => text.to_string(),
                Some(text) => {
                    return Err(FieldError::new(
                        "reward",
                        format!(
                            "number literal is {} bytes, longer than the limit of {INGEST_FIELD_BYTES_MAX} bytes",
                            text.len()
                        ),
                    ))
                }
                None => return Err(FieldError::new("reward", "missing")),
            }
        }
        Some(other) => {
            return Err(FieldError::new(
                "reward",
                format!("expected a json number, {}", found(other)),
            ))
        }
    };
    for key in ["finished_at", "agent_started_at", "agent_finished_at"] {
        if let Some(t) = o.id_opt(key)? {
            check_timestamp(t, TimeForm::Rfc3339).map_err(|p| FieldError::new(key, p))?;
        }
    }
    Ok(OutcomeRecorded {
        group: group.clone(),
        request_id,
        session_key: session_key.to_string(),
        task_id: task_id.to_string(),
        reward,
        failed_reason: o.text_opt("failed_reason")?.map(str::to_string),
        trial_name: o.id_opt("trial_name")?.map(str::to_string),
        line_blake3: blake3_hex(line),
    })
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// A row parser of this module.
pub type RowParser<T> = fn(&[u8], &GroupRef) -> Result<T, FieldError>;

/// Runs `parse` over every row of the JSON Lines `r` (streaming, one bounded
/// line at a time) and hands each payload to `sink` with its line number.
/// The first refusal stops the read as
/// `<source>: line <n>: field <path>: <problem>`. Returns the row count.
pub fn read_rows<T>(
    r: &mut dyn BufRead,
    source: &str,
    group: &GroupRef,
    parse: RowParser<T>,
    progress: Option<Progress<'_>>,
    sink: &mut dyn FnMut(u64, T) -> Result<()>,
) -> Result<u64> {
    for_each_jsonl_row_with_progress(r, source, progress, &mut |n, line| {
        let row = parse(line, group).map_err(|e| e.at_line(source, n))?;
        sink(n, row)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fmt::Debug;
    use std::io::BufReader;
    use std::path::PathBuf;

    use serde_json::{json, Map, Value};

    use super::*;
    use crate::evidence::harbor;
    use crate::evidence::jsonl::tests::Generated;

    const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/bitrouter");
    const OURS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/replay-tests/fixtures/bitrouter"
    );

    fn g() -> GroupRef {
        GroupRef {
            lineage: "tb21-short13-kimi".into(),
            group: "r1".into(),
        }
    }

    fn read(dir: &str, rel: &str) -> Vec<u8> {
        let path = format!("{dir}/{rel}");
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Every row of a file through `read_rows`.
    fn rows_of<T>(dir: &str, rel: &str, parse: RowParser<T>) -> Result<Vec<T>> {
        let path = format!("{dir}/{rel}");
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut out = Vec::new();
        read_rows(
            &mut BufReader::new(file),
            rel,
            &g(),
            parse,
            None,
            &mut |_, row| {
                out.push(row);
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// The message of refusing `text` (one or more lines) as file `x.jsonl`.
    fn refusal<T: Debug>(parse: RowParser<T>, text: &[u8]) -> String {
        let result = read_rows(&mut &text[..], "x.jsonl", &g(), parse, None, &mut |_, _| {
            Ok(())
        });
        match result {
            Err(e) => {
                assert_eq!(e.class(), crate::error::ExitClass::BadInput, "{e}");
                e.to_string()
            }
            Ok(n) => panic!("{n} rows accepted, expected a refusal"),
        }
    }

    /// A JSON line from `base` with `edit` applied to its top-level object.
    fn edited(base: &Value, edit: impl FnOnce(&mut Map<String, Value>)) -> Vec<u8> {
        let mut v = base.clone();
        if let Value::Object(m) = &mut v {
            edit(m);
        }
        serde_json::to_vec(&v).unwrap()
    }

    /// Sets `path` (dotted) in `m` to `value`; `None` removes it.
    fn set(m: &mut Map<String, Value>, path: &str, value: Option<Value>) {
        let (head, last) = match path.rsplit_once('.') {
            Some((h, l)) => (Some(h), l),
            None => (None, path),
        };
        let mut cur = m;
        if let Some(head) = head {
            for key in head.split('.') {
                cur = cur.get_mut(key).and_then(Value::as_object_mut).unwrap();
            }
        }
        match value {
            Some(v) => {
                cur.insert(last.to_string(), v);
            }
            None => {
                cur.remove(last);
            }
        }
    }

    fn first_line(dir: &str, rel: &str) -> Value {
        let bytes = read(dir, rel);
        let line = bytes.split(|b| *b == b'\n').next().unwrap();
        serde_json::from_slice(line).unwrap()
    }

    fn trace() -> Value {
        first_line(OURS, "traces.jsonl")
    }
    fn decision() -> Value {
        first_line(OURS, "decisions.jsonl")
    }
    /// The kimi equal-rate usage row (request 2 of our fixtures).
    fn usage() -> Value {
        let bytes = read(OURS, "usage.jsonl");
        let line = bytes.split(|b| *b == b'\n').nth(1).unwrap();
        serde_json::from_slice(line).unwrap()
    }
    fn receipt() -> Value {
        serde_json::from_slice(&read(
            SHARED,
            "test-inline/receipts/computed_kimi_equal_rate_buckets.json",
        ))
        .unwrap()
    }
    fn outcome() -> Value {
        first_line(OURS, "outcomes.jsonl")
    }

    fn at(field: &str, problem: &str) -> String {
        format!("x.jsonl: line 1: field {field}: {problem}")
    }

    // ---- our fixtures ----

    #[test]
    fn our_fixtures_parse_and_join_on_equal_request_ids() {
        // rule JOIN-1: T = U = D = R, no duplicates
        let traces = rows_of(OURS, "traces.jsonl", parse_trace).unwrap();
        let decisions = rows_of(OURS, "decisions.jsonl", parse_decision).unwrap();
        let usage = rows_of(OURS, "usage.jsonl", parse_usage).unwrap();
        let receipts = rows_of(OURS, "receipts.jsonl", parse_receipt).unwrap();
        let outcomes = rows_of(OURS, "outcomes.jsonl", parse_outcome).unwrap();
        let t: BTreeSet<_> = traces.iter().map(|r| r.request_id.clone()).collect();
        let d: BTreeSet<_> = decisions
            .iter()
            .filter_map(|r| r.request_id.clone())
            .collect();
        let u: BTreeSet<_> = usage.iter().map(|r| r.request_id.clone()).collect();
        let rc: BTreeSet<_> = receipts.iter().map(|r| r.request_id.clone()).collect();
        let o: BTreeSet<_> = outcomes
            .iter()
            .filter_map(|r| r.request_id.clone())
            .collect();
        assert_eq!(t.len(), 6);
        assert_eq!(traces.len(), 6);
        for other in [&d, &u, &rc, &o] {
            assert_eq!(&t, other);
        }
        // every computed row recomputes to its charge (SETTLE-2, SETTLE-5)
        for row in &usage {
            match row.reconciliation_status {
                ReconciliationStatus::Computed => {
                    assert_eq!(row.recompute_matches, Some(true), "{}", row.request_id);
                    assert_eq!(row.recomputed_charge_micro_usd, row.final_charge_micro_usd);
                }
                _ => {
                    assert_eq!(row.final_charge_micro_usd, None);
                    assert_eq!(row.recompute_matches, None);
                }
            }
        }
        // receipts agree with their usage rows
        for (r, u) in receipts.iter().zip(&usage) {
            assert_eq!(r.request_id, u.request_id);
            assert_eq!(r.buckets, u.buckets);
            assert_eq!(r.final_charge_micro_usd, u.final_charge_micro_usd);
        }
        // the 429 zero-usage row
        let limited = &traces[4];
        assert_eq!(
            (limited.http_status, limited.status),
            (429, TraceStatus::Failed)
        );
        assert_eq!(
            usage[4].error_code.as_deref(),
            Some("upstream_rate_limited")
        );
        assert_eq!(usage[4].buckets, token_buckets(&Buckets::default()));
        assert_eq!(receipts[4].state, ReceiptState::NotCharged);
        // the kimi equal-rate row
        assert_eq!(usage[1].final_charge_micro_usd, Some(31175));
        assert_eq!(usage[1].pricing_source, Some(PricingSource::Override));
        assert_eq!(decisions[2].reason, "progress_guard");
        assert_eq!(outcomes[0].reward, "1.0");
        assert_eq!(
            outcomes[3].failed_reason.as_deref(),
            Some("verifier_failed")
        );
        // line hashes are of the exact line bytes
        let first = read(OURS, "traces.jsonl");
        let line = first.split(|b| *b == b'\n').next().unwrap();
        assert_eq!(traces[0].line_blake3, blake3_hex(line));
        assert_eq!(traces[0].harness, Harness::Terminus2);
        assert_eq!(traces[0].protocol, Protocol::ChatCompletions);
    }

    #[test]
    fn our_fixtures_hold_no_credential_shapes() {
        // verdict row: secrets
        for name in [
            "traces.jsonl",
            "decisions.jsonl",
            "usage.jsonl",
            "receipts.jsonl",
            "outcomes.jsonl",
            "README.md",
            "make_fixtures.py",
        ] {
            let text = String::from_utf8(read(OURS, name)).unwrap();
            for (i, line) in text.lines().enumerate() {
                assert_eq!(crate::schema::secrets::scan(line), None, "{name}:{}", i + 1);
            }
        }
        // and no string of the payloads looks like a credential (the append
        // guard's check, from schema)
        let traces = rows_of(OURS, "traces.jsonl", parse_trace).unwrap();
        for t in traces {
            for (field, value) in crate::schema::events::Event::RequestTraced(t).strings() {
                assert_eq!(crate::schema::secrets::scan(&value), None, "{field}");
            }
        }
    }

    // ---- the shared fixtures ----

    fn files_under(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(&path, out);
            } else {
                out.push(path);
            }
        }
    }

    fn refused_with<T: Debug>(rel: &str, parse: RowParser<T>, expected: &str) {
        let err = rows_of(SHARED, rel, parse).unwrap_err().to_string();
        assert_eq!(err, expected, "{rel}");
    }

    #[test]
    fn every_shared_bitrouter_fixture_parses_or_is_refused_clearly() {
        let root = std::path::Path::new(SHARED);
        let mut files = Vec::new();
        files_under(root, &mut files);
        let mut seen: BTreeSet<String> = files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        let mut check = |rel: &str| assert!(seen.remove(rel), "no fixture {rel}");

        check("README.md"); // documentation
        stale_and_adapter_rows(&mut check);
        partial_harbor_results(root, &mut check);
        receipt_documents(&mut check);
        inputs_that_are_not_evidence(&mut check);
        assert!(seen.is_empty(), "fixtures without an expectation: {seen:?}");
    }

    /// Stale bundle-smoke rows, the legacy outcome row and adapter-side
    /// decision rows: refused by shape, with a clear message.
    fn stale_and_adapter_rows(check: &mut dyn FnMut(&str)) {
        // stale bundle-smoke format: refused by shape, with a clear message
        check("bundle-smoke/traces.jsonl");
        refused_with(
            "bundle-smoke/traces.jsonl",
            parse_trace,
            &format!("bundle-smoke/traces.jsonl: line 1: field (line): {STALE_TRACE}"),
        );
        check("bundle-smoke/cloud-usage.jsonl");
        refused_with(
            "bundle-smoke/cloud-usage.jsonl",
            parse_usage,
            &format!("bundle-smoke/cloud-usage.jsonl: line 1: field (line): {STALE_USAGE}"),
        );
        check("bundle-smoke/benchmark-outcomes.jsonl");
        refused_with(
            "bundle-smoke/benchmark-outcomes.jsonl",
            parse_outcome,
            &format!(
                "bundle-smoke/benchmark-outcomes.jsonl: line 1: field request_id: {LEGACY_OUTCOME}"
            ),
        );

        // the legacy outcome row: refused strictly, analytical-only on request (JOIN-4)
        check("test-inline/benchmark-outcome-legacy.jsonl");
        refused_with("test-inline/benchmark-outcome-legacy.jsonl", parse_outcome, &format!("test-inline/benchmark-outcome-legacy.jsonl: line 1: field request_id: {LEGACY_OUTCOME}"));
        let legacy = rows_of(
            SHARED,
            "test-inline/benchmark-outcome-legacy.jsonl",
            parse_outcome_analytical,
        )
        .unwrap();
        assert_eq!(legacy.len(), 1);
        assert_eq!(legacy[0].request_id, None);
        assert_eq!(legacy[0].reward, "0.0");
        assert_eq!(legacy[0].task_id, "filter-js-from-html");
        assert_eq!(legacy[0].failed_reason.as_deref(), Some("verifier_failed"));
        // The same row naming its trial is a task-scoped outcome, strictly
        // (rule JOIN-3: it joins by case, not by request).
        let text = std::fs::read_to_string(format!(
            "{SHARED}/test-inline/benchmark-outcome-legacy.jsonl"
        ))
        .unwrap();
        let named = text
            .trim_end()
            .replace('}', ",\"trial_name\":\"filter-js-from-html__abc1234\"}");
        let task = parse_outcome(named.as_bytes(), &g()).unwrap();
        assert_eq!(task.request_id, None);
        assert_eq!(
            task.trial_name.as_deref(),
            Some("filter-js-from-html__abc1234")
        );

        // adapter-side decision rows of an unmerged branch
        check("route-evidence-run/decisions.jsonl");
        refused_with(
            "route-evidence-run/decisions.jsonl",
            parse_decision,
            &format!(
                "route-evidence-run/decisions.jsonl: line 1: field (line): {ADAPTER_DECISION}"
            ),
        );
    }

    /// Partial Harbor results (test literals, adapter fixtures), not dumps.
    fn partial_harbor_results(root: &std::path::Path, check: &mut dyn FnMut(&str)) {
        // partial harbor results (test literals / adapter fixtures), not harbor dumps
        for rel in [
            "route-evidence-run/jobs/job/pass/result.json",
            "route-evidence-run/jobs/job/provider/result.json",
            "test-inline/harbor-run-4b86a513/regex-log__abc123/result.json",
        ] {
            check(rel);
            let err = harbor::parse_trial_result(&read(SHARED, rel), rel)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!(
                    "{rel}: field trial_uri: missing; not a harbor 0.25.0 trial result dump"
                )),
                "{err}"
            );
        }
        let jobs = harbor::walk_jobs(&root.join("route-evidence-run/jobs")).unwrap();
        assert_eq!(jobs.jobs.len(), 1);
        assert_eq!(
            jobs.jobs[0]
                .trials
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["pass", "provider"]
        );
        assert!(jobs.incomplete().is_empty());
        assert_eq!(jobs.unmapped().len(), 2);
        check("test-inline/harbor-run-4b86a513/result.json");
        let rel = "test-inline/harbor-run-4b86a513/result.json";
        assert_eq!(
            harbor::parse_job_result(&read(SHARED, rel), rel)
                .unwrap_err()
                .to_string(),
            format!("{rel}: field started_at: missing")
        );
        let run = harbor::walk_jobs(&root.join("test-inline/harbor-run-4b86a513")).unwrap();
        assert_eq!(run.jobs.len(), 1);
        assert_eq!(run.jobs[0].artifacts.len(), 1);
        assert_eq!(run.jobs[0].trials.len(), 1);
    }

    fn receipt_documents(check: &mut dyn FnMut(&str)) {
        // receipts: single JSON documents, bare SettlementReceipt bodies
        for (rel, state, charge) in [
            (
                "test-inline/receipts/computed.json",
                ReceiptState::Computed,
                Some(29),
            ),
            (
                "test-inline/receipts/computed_kimi_equal_rate_buckets.json",
                ReceiptState::Computed,
                Some(31175),
            ),
            (
                "test-inline/receipts/not_charged.json",
                ReceiptState::NotCharged,
                None,
            ),
        ] {
            check(rel);
            assert_eq!(
                ReceiptFileForm::of_path(std::path::Path::new(rel)),
                ReceiptFileForm::Document
            );
            let bytes = read(SHARED, rel);
            let r = parse_receipt_document(&bytes, rel, &g()).unwrap();
            assert_eq!(
                (r.state, r.final_charge_micro_usd),
                (state, charge),
                "{rel}"
            );
            assert_eq!(r.source_blake3, blake3_hex(&bytes));
            let again = read_receipt_document(&mut &bytes[..], rel, &g()).unwrap();
            assert_eq!(again, r);
        }
    }

    fn inputs_that_are_not_evidence(check: &mut dyn FnMut(&str)) {
        // test inputs that are not evidence rows
        check("trajectory/complete_chat.jsonl");
        refused_with(
            "trajectory/complete_chat.jsonl",
            parse_trace,
            &format!("trajectory/complete_chat.jsonl: line 1: field (line): {TRAJECTORY_INPUT}"),
        );
        for rel in [
            "workflow_state_replay/previous_response.json",
            "workflow_state_replay/real_session_opening_20260703.json",
        ] {
            check(rel);
            assert_eq!(
                parse_trace(&read(SHARED, rel), &g()).unwrap_err(),
                FieldError::line(REPLAY_FIXTURE),
                "{rel}"
            );
        }
    }

    // ---- money through the usage path ----

    #[test]
    fn kimi_receipt_recomputes_to_31175_through_the_usage_path() {
        // rule SETTLE-2, SETTLE-5: the receipt's buckets as a usage row with its effective rates
        let r = receipt();
        let b = &r["usage"];
        let prompt = b["uncached_input_tokens"].as_u64().unwrap()
            + b["cache_read_tokens"].as_u64().unwrap()
            + b["cache_write_tokens"].as_u64().unwrap();
        let completion =
            b["output_tokens"].as_u64().unwrap() + b["reasoning_tokens"].as_u64().unwrap();
        let row = json!({
            "id": r["request_id"], "request_id": r["request_id"], "provider_id": r["provider_id"], "model_id": r["model_id"],
            "prompt_tokens": prompt, "completion_tokens": completion,
            "reasoning_tokens": b["reasoning_tokens"], "uncached_input_tokens": b["uncached_input_tokens"],
            "cache_read_tokens": b["cache_read_tokens"], "cache_write_tokens": b["cache_write_tokens"], "output_tokens": b["output_tokens"],
            "usage_origin": "authoritative_receipt", "raw_usage": {}, "final_charge_micro_usd": r["final_charge_micro_usd"],
            "charge_status": "computed",
            "charge_evidence": {"status": "computed", "charge_micro_usd": 31175,
                "effective_rates": {"uncached_input_micro_usd_per_token": 0.84, "cache_read_micro_usd_per_token": 0.84,
                    "cache_write_micro_usd_per_token": 0.84, "output_micro_usd_per_token": 3.99},
                "pricing_source": "override", "pricing_version": format!("sha256:{}", "0".repeat(64)), "unknown_reason": null},
            "reconciliation_status": "computed", "reconciliation_attempts": 1, "status": "completed", "error_code": null
        });
        let u = parse_usage(&serde_json::to_vec(&row).unwrap(), &g()).unwrap();
        assert_eq!(u.recomputed_charge_micro_usd, Some(31175));
        assert_eq!(u.recompute_matches, Some(true));
        let rates = u.rates.unwrap();
        assert_eq!(rates.uncached_input.unwrap().canonical(), "0.84");
        assert_eq!(rates.output.unwrap().canonical(), "3.99");
        assert_eq!((u.prompt_tokens, u.completion_tokens), (34804, 486));
    }

    #[test]
    fn a_charge_that_does_not_recompute_is_recorded_not_hidden() {
        // rule SETTLE-5: no epsilon; the parser records the mismatch for the verdict
        let line = edited(&usage(), |m| {
            set(m, "final_charge_micro_usd", Some(json!(31176)))
        });
        let u = parse_usage(&line, &g()).unwrap();
        assert_eq!(
            (u.recomputed_charge_micro_usd, u.recompute_matches),
            (Some(31175), Some(false))
        );
        // rates that price as unknown: nothing recomputed, no match
        let line = edited(&usage(), |m| {
            set(
                m,
                "charge_evidence.effective_rates.output_micro_usd_per_token",
                Some(Value::Null),
            )
        });
        let u = parse_usage(&line, &g()).unwrap();
        assert_eq!(
            (u.recomputed_charge_micro_usd, u.recompute_matches),
            (None, Some(false))
        );
        assert_eq!(u.rates.unwrap().output, None);
        // no evidence at all (a pending row)
        let line = edited(&usage(), |m| {
            set(m, "charge_evidence", Some(Value::Null));
            set(m, "final_charge_micro_usd", Some(Value::Null));
            set(m, "reconciliation_status", Some(json!("pending")));
        });
        let u = parse_usage(&line, &g()).unwrap();
        assert_eq!(
            (u.rates, u.recompute_matches, u.pricing_source),
            (None, None, None)
        );
    }

    // ---- malformed traces ----

    #[test]
    fn trace_refusals_name_line_and_field() {
        let t = trace();
        let cases: Vec<(Vec<u8>, String)> = vec![
            (edited(&t, |m| set(m, "harness", Some(json!("claude")))),
             at("harness", "unknown value \"claude\"; expected one of generic|hermes|claude_code|codex|smithers|terminus_2|open_claw|unknown")),
            (edited(&t, |m| set(m, "protocol", Some(json!("grpc")))),
             at("protocol", "unknown value \"grpc\"; expected one of chat_completions|messages|responses|open_claw_runtime|unknown")),
            (edited(&t, |m| set(m, "outcome.status", None)), at("outcome.status", "missing")),
            (edited(&t, |m| set(m, "outcome.http_status", Some(json!(700)))),
             at("outcome.http_status", "expected an http status 100..=599, found 700")),
            (edited(&t, |m| set(m, "outcome.http_status", Some(json!("200")))),
             at("outcome.http_status", "expected a non-negative integer, found a string \"200\"")),
            (edited(&t, |m| {
                set(m, "outcome.status", Some(json!("client_cancelled")));
            }), at("outcome.http_status", "client_cancelled is recorded with http 499, found 200")),
            (edited(&t, |m| set(m, "captured_at", Some(json!("yesterday")))),
             at("captured_at", "expected an rfc 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), found \"yesterday\"")),
            (edited(&t, |m| set(m, "id", None)), at("id", "missing")),
            (edited(&t, |m| set(m, "id", Some(json!("")))), at("id", "is empty")),
            (edited(&t, |m| set(m, "method", Some(json!("post")))),
             at("method", "expected an upper-case http method such as POST, found \"post\"")),
            (edited(&t, |m| set(m, "path", Some(json!("v1/chat")))),
             at("path", "expected a request path starting with /, found \"v1/chat\"")),
            (edited(&t, |m| set(m, "headers.x-bitrouter-request-id", Some(json!("other-id")))),
             at("headers.x-bitrouter-request-id", &format!(
                 "\"other-id\" differs from id {:?}; bitrouter reuses the inbound id, so one request would carry two ids (weak attribution, rule JOIN-4)",
                 t["id"].as_str().unwrap()))),
            (edited(&t, |m| set(m, "outcome", Some(json!([200])))),
             at("outcome", "expected an object, found an array [200]")),
        ];
        for (line, expected) in &cases {
            assert_eq!(&refusal(parse_trace, line), expected);
        }
        // a repeated key is refused, at any depth
        let dup = br#"{"id":"a","id":"b"}"#;
        assert_eq!(
            refusal(parse_trace, dup),
            at("id", "duplicate key; a json object must not repeat a key")
        );
        let mut nested = serde_json::to_vec(&t).unwrap();
        let text = String::from_utf8(nested.clone()).unwrap().replace(
            "\"http_status\":200",
            "\"http_status\":200,\"http_status\":500",
        );
        nested = text.into_bytes();
        assert_eq!(
            refusal(parse_trace, &nested),
            at(
                "outcome.http_status",
                "duplicate key; a json object must not repeat a key"
            )
        );
    }

    #[test]
    fn whole_line_refusals() {
        let good = serde_json::to_vec(&trace()).unwrap();
        // blank line between rows
        let mut two = good.clone();
        two.extend_from_slice(b"\n\n");
        two.extend_from_slice(&good);
        assert_eq!(
            refusal(parse_trace, &two),
            "x.jsonl: line 2: field (line): blank line; every line must hold one json object"
        );
        // truncated json (a writer killed mid-line)
        let cut = &good[..good.len() / 2];
        let err = refusal(parse_trace, cut);
        assert!(
            err.starts_with(
                "x.jsonl: line 1: field (line): truncated json: the text ends inside a value"
            ),
            "{err}"
        );
        // not utf-8
        let mut bad = br#"{"id":"a"#.to_vec();
        bad.push(0xff);
        bad.extend_from_slice(br#""}"#);
        assert_eq!(
            refusal(parse_trace, &bad),
            "x.jsonl: line 1: field (line): not utf-8: invalid byte at offset 8"
        );
        // not an object
        let err = refusal(parse_usage, b"[1,2]");
        assert!(err.starts_with("x.jsonl: line 1: field (line): invalid json: invalid type: sequence, expected a json object"), "{err}");
        // trailing garbage after the object
        let err = refusal(parse_usage, b"{} {}");
        assert!(
            err.starts_with("x.jsonl: line 1: field (line): invalid json: trailing characters"),
            "{err}"
        );
    }

    #[test]
    fn line_too_long_is_refused_before_parsing() {
        // INGEST_LINE_BYTES_MAX through read_rows, streamed
        let past = std::io::repeat(b' ').take(INGEST_LINE_BYTES_MAX as u64 + 1);
        let mut r = BufReader::new(past);
        let err = read_rows(&mut r, "big.jsonl", &g(), parse_trace, None, &mut |_, _| {
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.to_string(), format!("big.jsonl: line 1: field (line): line is longer than the limit of {INGEST_LINE_BYTES_MAX} bytes"));
    }

    #[test]
    fn a_large_raw_body_is_read_and_skipped() {
        // 8 MiB of body, well below the line bound; skipped unparsed but hashed
        let mut t = trace();
        t["raw_body"] = json!({"model": "@auto", "messages": [{"role": "user", "content": "x".repeat(8 << 20)}]});
        let line = serde_json::to_vec(&t).unwrap();
        let parsed = parse_trace(&line, &g()).unwrap();
        assert_eq!(parsed.line_blake3, blake3_hex(&line));
    }

    // ---- malformed decisions ----

    #[test]
    fn decision_refusals_name_line_and_field() {
        let d = decision();
        let cases: Vec<(Vec<u8>, String)> = vec![
            (edited(&d, |m| set(m, "reason", Some(json!("fallback")))),
             at("reason", "unknown value \"fallback\"; expected one of static_table|tool_guardrail|progress_guard|progress_guard_tool_guardrail|continuation_pin|no_match|exploration_trial|exploration_locked|adequacy_pin|reliability_circuit_open|reliability_half_open_probe")),
            (edited(&d, |m| set(m, "ingress_request_id_sha256", Some(json!("sha256:XYZ")))),
             at("ingress_request_id_sha256", "expected sha256:<64 lowercase hex digits>, found \"sha256:XYZ\"")),
            (edited(&d, |m| {
                set(m, "request_id", None);
                set(m, "ingress_request_id_sha256", Some(Value::Null));
            }), at("request_id", "missing, and so is ingress_request_id_sha256; a decision needs one of them to join its trace (rule JOIN-2)")),
            (edited(&d, |m| set(m, "pinned", Some(json!("false")))),
             at("pinned", "expected true or false, found a string \"false\"")),
            (edited(&d, |m| set(m, "trialed", None)), at("trialed", "missing")),
            (edited(&d, |m| set(m, "workflow_state", Some(json!("opening")))),
             at("workflow_state", "present together with trace_state, of which it is the old alias; a row has one")),
            (edited(&d, |m| set(m, "trace_state", None)),
             at("trace_state", "missing (and so is its alias workflow_state)")),
            (edited(&d, |m| set(m, "selected_effort", Some(json!("ultra")))),
             at("selected_effort", "unknown value \"ultra\"; expected one of none|minimal|low|medium|high|xhigh|max")),
            (edited(&d, |m| set(m, "request_key", Some(json!("agent_route/v1|unknown|boss|normal")))),
             at("request_key", "unknown role \"boss\" in \"agent_route/v1|unknown|boss|normal\"; expected one of orchestrate|implement|mechanical|verify|finalize|unknown")),
            (edited(&d, |m| set(m, "request_key", Some(json!("route/v2|x")))),
             at("request_key", "unknown request key scheme \"route/v2|x\"; expected semantic_route/v1|<task_family>|<role>|<risk>, agent_route/v1|<task_family>|<role>|<risk> or agent_trace/v1|v2|<state>|<risk>")),
            (edited(&d, |m| set(m, "request_key", Some(json!("semantic_route/v1|code:poetry|verify|normal")))),
             at("request_key", "unknown task family \"code:poetry\" in \"semantic_route/v1|code:poetry|verify|normal\"; expected one of code:generation|code:debugging|code:review|code:sql_database|code:frontend_ui|code:devops_config|code:repository_analysis|agent:multi_step_planning|agent:workflow_execution|agent:web_research|agent:memory_operations|agent:general|unknown")),
            (edited(&d, |m| set(m, "request_key", Some(json!("agent_trace/v1|opening|context")))),
             at("request_key", "risk \"context\" is not one of agent_trace/v1's")),
            (edited(&d, |m| set(m, "input_model", Some(json!(5)))),
             at("input_model", "expected a string, found a number 5")),
            (edited(&d, |m| set(m, "captured_at", Some(json!("2026-08-17 00:00:01")))),
             at("captured_at", "expected an rfc 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), found \"2026-08-17 00:00:01\"")),
        ];
        for (line, expected) in &cases {
            assert_eq!(&refusal(parse_decision, line), expected);
        }
    }

    #[test]
    fn decision_forms_of_the_join_key_and_the_alias() {
        // JOIN-2: the commitment alone joins under guarded eval invocations
        let d = decision();
        let only_commitment = edited(&d, |m| set(m, "request_id", None));
        let p = parse_decision(&only_commitment, &g()).unwrap();
        assert_eq!(p.request_id, None);
        assert!(p.ingress_request_id_sha256.unwrap().starts_with("sha256:"));
        // the old alias workflow_state, and the 4b86a513 row without HEAD fields
        let old = edited(&d, |m| {
            let state = m.remove("trace_state").unwrap();
            m.insert("workflow_state".into(), state);
            for k in [
                "ingress_request_id_sha256",
                "route_projection",
                "baseline_effort",
                "selected_effort",
                "trace_identity",
            ] {
                m.remove(k);
            }
            m.insert(
                "request_key".into(),
                json!("agent_trace/v1|tool_followup|normal"),
            );
            m.insert("reason".into(), json!("exploration_locked"));
        });
        let p = parse_decision(&old, &g()).unwrap();
        assert_eq!(p.reason, "exploration_locked");
        assert_eq!(p.ingress_request_id_sha256, None);
    }

    // ---- malformed usage ----

    #[test]
    fn usage_refusals_name_line_and_field() {
        let u = usage();
        let cases: Vec<(Vec<u8>, String)> = vec![
            // rule SETTLE-1: missing is never zero, for each bucket
            (edited(&u, |m| set(m, "cache_write_tokens", None)),
             at("cache_write_tokens", "missing; a bucket that was not observed is never read as zero (rule SETTLE-1)")),
            (edited(&u, |m| set(m, "uncached_input_tokens", None)),
             at("uncached_input_tokens", "missing; a bucket that was not observed is never read as zero (rule SETTLE-1)")),
            (edited(&u, |m| set(m, "output_tokens", Some(Value::Null))),
             at("output_tokens", "is null; a bucket that was not observed is never read as zero (rule SETTLE-1)")),
            (edited(&u, |m| set(m, "reasoning_tokens", None)),
             at("reasoning_tokens", "missing; reasoning is billed at the output rate and completion_tokens = output_tokens + reasoning_tokens cannot be checked without it (rule SETTLE-1, SETTLE-2)")),
            // identities, with the numbers
            (edited(&u, |m| set(m, "prompt_tokens", Some(json!(34805)))),
             at("prompt_tokens", "bucket identity prompt = uncached_input + cache_read + cache_write fails: prompt_tokens 34805 != 1972 + 32832 + 0 = 34804 (rule SETTLE-1)")),
            (edited(&u, |m| set(m, "completion_tokens", Some(json!(485)))),
             at("completion_tokens", "bucket identity completion = output + reasoning fails: completion_tokens 485 != 485 + 1 = 486 (rule SETTLE-1)")),
            // enums
            (edited(&u, |m| set(m, "usage_origin", Some(json!("measured")))),
             at("usage_origin", "unknown value \"measured\"; expected one of provider_reported|authoritative_receipt|estimated|unknown")),
            (edited(&u, |m| set(m, "charge_status", Some(json!("charged")))),
             at("charge_status", "unknown value \"charged\"; expected one of computed|not_charged|unknown|legacy_unknown")),
            (edited(&u, |m| set(m, "reconciliation_status", Some(json!("done")))),
             at("reconciliation_status", "unknown value \"done\"; expected one of not_applicable|pending|computed|not_charged|unknown")),
            (edited(&u, |m| set(m, "status", Some(json!("ok")))),
             at("status", "unknown value \"ok\"; expected one of completed|failed|succeeded")),
            (edited(&u, |m| set(m, "error_code", Some(json!("timeout")))),
             at("error_code", "unknown value \"timeout\"; expected one of upstream_rate_limited|upstream_policy_violation|request_failed")),
            (edited(&u, |m| set(m, "charge_evidence.pricing_source", Some(json!("list_price")))),
             at("charge_evidence.pricing_source", "unknown value \"list_price\"; expected one of configured|override|authoritative_receipt|unknown")),
            (edited(&u, |m| set(m, "charge_evidence.unknown_reason", Some(json!("no_idea")))),
             at("charge_evidence.unknown_reason", &format!("unknown value \"no_idea\"; expected one of {}", UNKNOWN_REASONS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("|")))),
            // numbers
            (edited(&u, |m| set(m, "uncached_input_tokens", Some(json!(-5)))),
             at("uncached_input_tokens", "negative number -5; expected a non-negative integer")),
            (edited(&u, |m| set(m, "prompt_tokens", Some(json!("34804")))),
             at("prompt_tokens", "expected a non-negative integer, found a string \"34804\"")),
            (edited(&u, |m| set(m, "output_tokens", Some(json!(485.5)))),
             at("output_tokens", "expected a non-negative integer, found the non-integer number 485.5")),
            (edited(&u, |m| set(m, "final_charge_micro_usd", Some(json!(-1)))),
             at("final_charge_micro_usd", "negative number -1; expected a non-negative integer")),
            (edited(&u, |m| set(m, "charge_evidence.effective_rates.output_micro_usd_per_token", Some(json!("3.99")))),
             at("charge_evidence.effective_rates.output_micro_usd_per_token", "expected a number (micro-usd per token), found a string \"3.99\"")),
            (edited(&u, |m| set(m, "charge_evidence.pricing_version", Some(json!("v3")))),
             at("charge_evidence.pricing_version", "expected sha256:<64 lowercase hex digits>, found \"v3\"")),
            (edited(&u, |m| set(m, "charge_evidence.normalized_usage.output_tokens", Some(json!(-485)))),
             at("charge_evidence.normalized_usage.output_tokens", "negative number -485; expected a non-negative integer")),
            // rule JOIN-2: no request id, no join
            (edited(&u, |m| set(m, "request_id", None)),
             at("request_id", "missing; a usage row without request_id cannot join its trace (rule JOIN-2)")),
            (edited(&u, |m| set(m, "request_id", Some(Value::Null))),
             at("request_id", "is null; a usage row without request_id cannot join its trace (rule JOIN-2)")),
            (edited(&u, |m| set(m, "provider_id", None)), at("provider_id", "missing")),
            (edited(&u, |m| set(m, "charge_evidence", Some(json!("computed")))),
             at("charge_evidence", "expected an object, found a string \"computed\"")),
        ];
        for (line, expected) in &cases {
            assert_eq!(&refusal(parse_usage, line), expected);
        }
        // a count above u64::MAX, written as a literal
        let text = String::from_utf8(serde_json::to_vec(&u).unwrap())
            .unwrap()
            .replace(
                "\"cache_read_tokens\":32832",
                "\"cache_read_tokens\":18446744073709551616",
            );
        assert_eq!(
            refusal(parse_usage, text.as_bytes()),
            at(
                "cache_read_tokens",
                "number 1.8446744073709552e+19 is greater than u64::MAX (18446744073709551615)"
            )
        );
    }

    #[test]
    fn secret_looking_values_are_never_echoed() {
        // verdict row: secrets; FREEZE-2
        let key = format!("sk-proj-{}", "Q7w2Er9tY4uI1oP6aS3dF8gH5jK0lZxC".repeat(2));
        let line = edited(&usage(), |m| {
            set(m, "usage_origin", Some(json!(key.clone())))
        });
        let err = refusal(parse_usage, &line);
        assert!(!err.contains(&key) && !err.contains("Q7w2Er9t"), "{err}");
        assert!(
            err.starts_with("x.jsonl: line 1: field usage_origin: unknown value <redacted: "),
            "{err}"
        );
        let line = edited(&trace(), |m| {
            set(m, "path", Some(json!(format!("v1?api_key={key}"))))
        });
        let err = refusal(parse_trace, &line);
        assert!(
            !err.contains("Q7w2Er9t") && err.contains("<redacted: "),
            "{err}"
        );
        let line = edited(&outcome(), |m| {
            set(m, "reward", Some(json!({"token": key.clone()})))
        });
        let err = refusal(parse_outcome, &line);
        assert!(
            !err.contains("Q7w2Er9t") && err.contains("<redacted: "),
            "{err}"
        );
        // a value that is not secret is echoed, cut to the echo limit
        let long = "m".repeat(500);
        let line = edited(&usage(), |m| set(m, "usage_origin", Some(json!(long))));
        let err = refusal(parse_usage, &line);
        assert!(
            err.contains(&format!(
                "unknown value \"{}\"... (500 bytes in all)",
                "m".repeat(crate::evidence::INGEST_ECHO_BYTES_MAX)
            )),
            "{err}"
        );
    }

    // ---- malformed receipts ----

    #[test]
    fn receipt_refusals_name_line_and_field() {
        let r = receipt();
        let cases: Vec<(Vec<u8>, String)> = vec![
            (edited(&r, |m| set(m, "final_charge_micro_usd", None)),
             at("final_charge_micro_usd", "missing; a computed receipt carries its final charge (rule SETTLE-4)")),
            (edited(&r, |m| set(m, "final_charge_micro_usd", Some(Value::Null))),
             at("final_charge_micro_usd", "is null; a computed receipt carries its final charge (rule SETTLE-4)")),
            (edited(&r, |m| set(m, "final_charge_micro_usd", Some(json!(-3)))),
             at("final_charge_micro_usd", "negative number -3; expected a non-negative integer")),
            (edited(&r, |m| set(m, "state", Some(json!("not_charged")))),
             at("final_charge_micro_usd", "present (31175) on a not_charged receipt; only a computed receipt carries a final charge")),
            (edited(&r, |m| set(m, "state", Some(json!("settled")))),
             at("state", "unknown value \"settled\"; expected one of pending|computed|not_charged|unknown")),
            (edited(&r, |m| set(m, "usage.output_tokens", Some(json!(-1)))),
             at("usage.output_tokens", "negative number -1; expected a non-negative integer")),
            (edited(&r, |m| set(m, "usage.reasoning_tokens", None)),
             at("usage.reasoning_tokens", "missing; reasoning is billed at the output rate and completion_tokens = output_tokens + reasoning_tokens cannot be checked without it (rule SETTLE-1, SETTLE-2)")),
            (edited(&r, |m| set(m, "usage.cache_read_tokens", None)),
             at("usage.cache_read_tokens", "missing; a bucket that was not observed is never read as zero (rule SETTLE-1)")),
            (edited(&r, |m| set(m, "usage", None)), at("usage", "missing")),
            (edited(&r, |m| set(m, "request_id", Some(json!(7)))),
             at("request_id", "expected a string, found a number 7")),
        ];
        for (line, expected) in &cases {
            assert_eq!(&refusal(parse_receipt, line), expected);
        }
        // document form: no line number; a pretty-printed document parses
        let pretty = serde_json::to_vec_pretty(&edited_value(&r, |m| {
            set(m, "state", Some(json!("settled")))
        }))
        .unwrap();
        assert_eq!(
            parse_receipt_document(&pretty, "r.json", &g()).unwrap_err().to_string(),
            "r.json: field state: unknown value \"settled\"; expected one of pending|computed|not_charged|unknown"
        );
        let pretty = serde_json::to_vec_pretty(&r).unwrap();
        assert_eq!(
            parse_receipt_document(&pretty, "r.json", &g())
                .unwrap()
                .final_charge_micro_usd,
            Some(31175)
        );
        // a pending receipt has no charge
        let pending = edited(&r, |m| {
            set(m, "state", Some(json!("pending")));
            set(m, "final_charge_micro_usd", Some(Value::Null));
        });
        assert_eq!(
            parse_receipt(&pending, &g()).unwrap().state,
            ReceiptState::Pending
        );
        // JSON Lines form
        assert_eq!(
            ReceiptFileForm::of_path(std::path::Path::new("receipts.jsonl")),
            ReceiptFileForm::JsonLines
        );
    }

    fn edited_value(base: &Value, edit: impl FnOnce(&mut Map<String, Value>)) -> Value {
        serde_json::from_slice(&edited(base, edit)).unwrap()
    }

    #[test]
    fn receipt_documents_at_the_bound_and_one_past() {
        // INGEST_LINE_BYTES_MAX applies to a receipt document as a whole
        let body = serde_json::to_vec(&receipt()).unwrap();
        let mut at_bound = body.clone();
        at_bound.resize(INGEST_LINE_BYTES_MAX, b' ');
        assert!(parse_receipt_document(&at_bound, "r.json", &g()).is_ok());
        let mut past = at_bound;
        past.push(b' ');
        assert_eq!(
            read_receipt_document(&mut &past[..], "r.json", &g()).unwrap_err().to_string(),
            format!("r.json: field (line): document is {} bytes, longer than the limit of {INGEST_LINE_BYTES_MAX} bytes", INGEST_LINE_BYTES_MAX + 1)
        );
    }

    // ---- outcomes ----

    #[test]
    fn outcome_refusals_name_line_and_field() {
        let o = outcome();
        let cases: Vec<(Vec<u8>, String)> = vec![
            (edited(&o, |m| set(m, "reward", Some(json!("1.0")))),
             at("reward", "expected a json number, found a string \"1.0\"")),
            (edited(&o, |m| set(m, "reward", Some(Value::Null))), at("reward", "expected a json number, found null")),
            (edited(&o, |m| set(m, "reward", None)), at("reward", "missing")),
            (edited(&o, |m| set(m, "task_id", None)), at("task_id", "missing")),
            (edited(&o, |m| set(m, "session_key", Some(json!("")))), at("session_key", "is empty")),
            (edited(&o, |m| { set(m, "request_id", None); set(m, "trial_name", None) }), at("request_id", LEGACY_OUTCOME)),
            (edited(&o, |m| set(m, "finished_at", Some(json!("soon")))),
             at("finished_at", "expected an rfc 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.f](Z|+HH:MM)), found \"soon\"")),
        ];
        for (line, expected) in &cases {
            assert_eq!(&refusal(parse_outcome, line), expected);
        }
    }

    #[test]
    fn rewards_are_kept_as_written() {
        // design 3: rewards keep the source's number (1 or 1.0)
        let base = String::from_utf8(serde_json::to_vec(&outcome()).unwrap()).unwrap();
        for literal in ["1", "1.0", "1.00", "0.5", "0", "1e0", "-0.0"] {
            let line = base.replace("\"reward\":1.0", &format!("\"reward\":{literal}"));
            assert_eq!(
                parse_outcome(line.as_bytes(), &g()).unwrap().reward,
                literal
            );
        }
    }

    // ---- streaming ----

    #[test]
    fn hundred_thousand_generated_usage_rows_stream_through() {
        // the reader holds one line at a time; the input is generated, never a Vec
        let template = String::from_utf8(serde_json::to_vec(&usage()).unwrap()).unwrap();
        let id = usage()["request_id"].as_str().unwrap().to_string();
        let mut input = Generated::new(100_000, |i, buf| {
            buf.extend_from_slice(template.replace(&id, &format!("gen-{i:06}")).as_bytes());
        });
        let mut charged = 0u64;
        let mut last = String::new();
        let mut progress_calls = 0;
        let mut report = |_: u64, _: u64| progress_calls += 1;
        let rows = read_rows(
            &mut input,
            "generated.jsonl",
            &g(),
            parse_usage,
            Some(Progress {
                every_rows: 10_000,
                report: &mut report,
            }),
            &mut |_, u| {
                charged += u.final_charge_micro_usd.unwrap_or(0);
                last = u.request_id;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(rows, 100_000);
        assert_eq!(charged, 100_000 * 31175);
        assert_eq!(last, "gen-099999");
        assert_eq!(progress_calls, 10);
    }
}
