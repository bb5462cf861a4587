//! BitRouter's evidence rows -> ledger payloads (`spec/bitrouter-formats.md`
//! section 2, HEAD `003f99ee`).
//!
//! One function per row kind, each `parse_X(line, group)`: the bytes of one
//! JSON Lines row (without its newline) in, one payload out, or a
//! [`FieldError`] naming the field. [`read_rows`] runs a parser over a whole
//! file with the streaming reader of [`super::for_each_jsonl_row`] and turns
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

use super::{
    blake3_hex, check_sha256_tag, check_timestamp, echo, for_each_jsonl_row_with_progress, found,
    load_object, raw_values_at, FieldError, FieldResult, Obj, Progress, TimeForm,
    INGEST_FIELD_BYTES_MAX, INGEST_LINE_BYTES_MAX,
};
use crate::error::{Error, Result};
use crate::events::{
    ChargeStatus, GroupRef, Harness, OutcomeRecorded, PolicyDecisionRecorded, PricingSource,
    Protocol, ReceiptRecorded, ReceiptState, ReconciliationStatus, RequestTraced, TokenBuckets,
    TraceStatus, UsageOrigin, UsageRecorded,
};
use crate::money::{self, Buckets, Charge, Dec, MoneyError, Rates};

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
];

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
read the file as analytical-only outcomes if that is intended";

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
pub fn parse_trace(line: &[u8], group: &GroupRef) -> FieldResult<RequestTraced> {
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
/// xhigh|max`). `request_key` must follow one of the two documented schemes:
/// `agent_route/v1|<task_family>|<role>|<risk>` with the documented roles and
/// risks (HEAD), or `agent_trace/v1|<state>|<risk>` (before ee4dbb2e).
/// Tiers are lock-defined strings and are not enumerated.
///
/// Not checkable here: whether `ingress_request_id_sha256` is the SHA-256
/// commitment of a trace id (the crate has no SHA-256); the join does that.
pub fn parse_decision(line: &[u8], group: &GroupRef) -> FieldResult<PolicyDecisionRecorded> {
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
    o.id("key_strategy")?;
    let request_key = o.id("request_key")?;
    check_request_key(request_key).map_err(|p| FieldError::new("request_key", p))?;
    o.id("legacy_fingerprint")?;
    match (o.has("trace_state"), o.has("workflow_state")) {
        (true, true) => {
            return Err(FieldError::new(
                "workflow_state",
                "present together with trace_state, of which it is the old alias; a row has one",
            ))
        }
        (true, false) => {
            o.id("trace_state")?;
        }
        (false, true) => {
            o.id("workflow_state")?;
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

/// Checks a request key against the two documented schemes.
fn check_request_key(key: &str) -> std::result::Result<(), String> {
    let parts: Vec<&str> = key.split('|').collect();
    let one_of = |v: &str, table: &[(&str, &str)]| table.iter().any(|(n, _)| *n == v);
    let names =
        |table: &[(&str, &str)]| table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("|");
    match parts.as_slice() {
        ["agent_route/v1", family, role, risk] => {
            if family.is_empty() {
                return Err(format!("empty task family in {}", echo(key)));
            }
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
        ["agent_trace/v1", state, risk] if !state.is_empty() && !risk.is_empty() => Ok(()),
        _ => Err(format!(
            "unknown request key scheme {}; expected agent_route/v1|<task_family>|<role>|<risk> \
             or agent_trace/v1|<state>|<risk>",
            echo(key)
        )),
    }
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
pub fn parse_usage(line: &[u8], group: &GroupRef) -> FieldResult<UsageRecorded> {
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
            check_sha256_tag(v).map_err(|p| FieldError::new(ev.path("pricing_version"), p))?;
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
pub fn parse_receipt(line: &[u8], group: &GroupRef) -> FieldResult<ReceiptRecorded> {
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
                    "present ({}) on a {} receipt; only a computed receipt carries a final charge",
                    super::echo_json(v),
                    state_name(other)
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
/// [`OutcomeRecorded`], strictly: `request_id` is required (rule JOIN-1,
/// JOIN-2).
///
/// Decision on the legacy format (rows without `request_id`, as in
/// `test-inline/benchmark-outcome-legacy.jsonl` and the byte-identical stale
/// `bundle-smoke/benchmark-outcomes.jsonl`): this parser refuses them with
/// [`LEGACY_OUTCOME`], since the two cannot be told apart by shape and a
/// strict join must not meet them unannounced; [`parse_outcome_analytical`]
/// accepts them with `request_id: None`, for an operator who asks for
/// analytical-only outcomes (rule JOIN-4).
///
/// Required: `session_key`, `task_id`, `reward` (a JSON number, kept as the
/// literal written: `1.0` stays `1.0`, `1` stays `1`). Optional:
/// `failed_reason`, `trial_name`; `finished_at`, `agent_started_at`,
/// `agent_finished_at` are checked as RFC 3339 when present.
pub fn parse_outcome(line: &[u8], group: &GroupRef) -> FieldResult<OutcomeRecorded> {
    outcome(line, group, false)
}

/// [`parse_outcome`] that accepts a row without `request_id` as
/// analytical-only (`request_id: None`, rule JOIN-4).
pub fn parse_outcome_analytical(line: &[u8], group: &GroupRef) -> FieldResult<OutcomeRecorded> {
    outcome(line, group, true)
}

fn outcome(line: &[u8], group: &GroupRef, analytical: bool) -> FieldResult<OutcomeRecorded> {
    let loaded = load_object(line, &[])?;
    let o = Obj::root(&loaded.map);
    let request_id = match o.present("request_id") {
        None if !analytical => return Err(FieldError::new("request_id", LEGACY_OUTCOME)),
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
pub type RowParser<T> = fn(&[u8], &GroupRef) -> FieldResult<T>;

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
mod tests {}
