//! The two evidence planes of PLANE-1, as projections (BIND-5).
//!
//! - Reliability: every traced request counted by how it ended (success,
//!   timeout, 429, 5xx, another failure) under its provider + model +
//!   credential class + protocol. The provider and model are the usage
//!   row's (after a fallback, the one that served it); the credential class
//!   is the frozen route's for that provider and model. A timeout never
//!   proves a model incapable: it is counted here, never in the other plane.
//! - Semantic adequacy: a request-scoped outcome's reward is credited only
//!   to a request that completed (trace `completed`, HTTP 2xx), joined
//!   exactly by request id (one trace, one usage row, one outcome, one
//!   decision where the schema decides) and settled (`computed` or
//!   `not_charged`, SETTLE-4). Everything else is withheld with its reason;
//!   an outcome joined to a request that did not complete fails the
//!   `reward join` row, so a task success after a weak 429 and a strong
//!   fallback credits only the completed request.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::method::projections::{GroupState, RequestState, TraceObs};
use crate::method::verdict::joins::Joins;
use crate::method::verdict::settlement::Settlement;
use crate::schema::events::TraceStatus;
use crate::schema::manifest::ManifestFile;
use crate::schema::money::Dec;

/// What a plane's counts are keyed by (PLANE-1).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PlaneKey {
    /// The provider that served the request (usage row), or `unknown`.
    pub provider: String,
    /// The model that served it, or `unknown`.
    pub model: String,
    /// The frozen route's credential class for that provider and model, or
    /// `unknown`.
    pub credential_class: String,
    /// The request's wire protocol (trace `protocol`).
    pub protocol: String,
}

impl PlaneKey {
    /// `provider:model (credential_class, protocol)`.
    pub fn label(&self) -> String {
        format!(
            "{}:{} ({}, {})",
            self.provider, self.model, self.credential_class, self.protocol
        )
    }
}

crate::schema::named::named_enum! {
    /// How a traced request ended, as the reliability plane counts it.
    pub enum TraceOutcome {
        /// HTTP 2xx and `completed`.
        Success = "success",
        /// HTTP 408 or 504, or the client gave up (499, `client_cancelled`).
        Timeout = "timeout",
        /// HTTP 429.
        RateLimited = "rate_limited",
        /// Any other HTTP 5xx.
        ServerError = "server_error",
        /// Anything else that did not complete.
        OtherFailure = "other_failure",
    }
}

/// How a trace ended.
pub fn classify(t: &TraceObs) -> TraceOutcome {
    match (t.http_status, t.status) {
        (200..=299, TraceStatus::Completed) => TraceOutcome::Success,
        (408 | 499 | 504, _) | (_, TraceStatus::ClientCancelled) => TraceOutcome::Timeout,
        (429, _) => TraceOutcome::RateLimited,
        (500..=599, _) => TraceOutcome::ServerError,
        _ => TraceOutcome::OtherFailure,
    }
}

/// One key of the reliability plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReliabilityLine {
    pub key: PlaneKey,
    /// Requests per outcome (every outcome listed, zeros included).
    pub counts: BTreeMap<TraceOutcome, u64>,
}

/// One key of the semantic plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SemanticLine {
    pub key: PlaneKey,
    /// Requests credited with their outcome's reward.
    pub credited: u64,
    /// The sum of their rewards, exact decimal text.
    pub reward_sum: String,
}

/// A request-scoped outcome that carries no semantic credit, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withheld {
    pub request_id: String,
    /// Why: did not complete, not joined exactly, not settled.
    pub reason: String,
}

/// Both planes of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Planes {
    /// Reliability, by key.
    pub reliability: Vec<ReliabilityLine>,
    /// Semantic adequacy, by key.
    pub semantic: Vec<SemanticLine>,
    /// Outcomes withheld from the semantic plane.
    pub withheld: Vec<Withheld>,
    /// Request ids of outcomes joined to a request that did not complete:
    /// they fail the `reward join` row (BIND-5).
    pub outcomes_on_incomplete: Vec<String>,
}

/// The key of a request: its usage row's provider and model, the frozen
/// route's credential class, the trace's protocol.
fn key_of(m: &ManifestFile, r: &RequestState, protocol: &str) -> PlaneKey {
    let unknown = || "unknown".to_string();
    let (provider, model) = r.usage.first().map_or((unknown(), unknown()), |(_, u)| {
        (u.provider_id.to_string(), u.model_id.to_string())
    });
    let credential_class = m
        .routes
        .iter()
        .find(|rt| rt.provider == provider && rt.model == model)
        .map_or_else(unknown, |rt| rt.credential_class.clone());
    PlaneKey {
        provider,
        model,
        credential_class,
        protocol: protocol.to_string(),
    }
}

/// Why request `id` carries no semantic credit, or `None` when it does.
fn withheld_reason(id: &str, r: &RequestState, joins: &Joins, settled: bool) -> Option<String> {
    let Some((_, t)) = r.traces.first() else {
        return Some("no trace: not joined by request id".into());
    };
    let outcome = classify(t);
    if outcome != TraceOutcome::Success {
        return Some(format!(
            "did not complete (HTTP {}, {})",
            t.http_status,
            outcome.as_str()
        ));
    }
    let decisions = joins.decision_of.get(id).map_or(0, Vec::len);
    if r.traces.len() != 1
        || r.usage.len() != 1
        || r.outcomes.len() != 1
        || (joins.decisions_required && decisions != 1)
    {
        return Some("not joined exactly by request id".into());
    }
    (!settled).then(|| "not settled computed or not_charged".into())
}

/// The planes of a group, from its requests, joins and settlement.
pub fn planes(m: &ManifestFile, g: &GroupState, joins: &Joins, settlement: &Settlement) -> Planes {
    let settled: BTreeMap<&str, bool> = settlement
        .requests
        .iter()
        .map(|s| (s.request_id.as_str(), s.state.accepted()))
        .collect();
    let mut reliability: BTreeMap<PlaneKey, BTreeMap<TraceOutcome, u64>> = BTreeMap::new();
    let mut semantic: BTreeMap<PlaneKey, (u64, Dec)> = BTreeMap::new();
    let mut out = Planes::default();
    for (id, r) in &g.requests {
        let protocol = r
            .traces
            .first()
            .map_or("unknown", |(_, t)| t.protocol.as_str());
        let key = key_of(m, r, protocol);
        if let Some((_, t)) = r.traces.first() {
            let counts = reliability
                .entry(key.clone())
                .or_insert_with(|| TraceOutcome::ALL.iter().map(|o| (*o, 0)).collect());
            *counts.entry(classify(t)).or_default() += 1;
            if classify(t) != TraceOutcome::Success && !r.outcomes.is_empty() {
                out.outcomes_on_incomplete.push(id.to_string());
            }
        }
        let Some((_, reward)) = r.outcomes.first() else {
            continue;
        };
        let is_settled = settled.get(id.as_ref()).copied().unwrap_or(false);
        let reason = withheld_reason(id, r, joins, is_settled);
        let value = Dec::from_json_number_text(reward);
        match (reason, value) {
            (None, Ok(v)) => {
                let line = semantic.entry(key).or_insert((0, Dec::from(0u64)));
                line.0 += 1;
                line.1 = line.1.checked_add(v).unwrap_or(line.1);
            }
            (None, Err(_)) => out.withheld.push(Withheld {
                request_id: id.to_string(),
                reason: format!("its outcome's reward {reward} is not a number"),
            }),
            (Some(reason), _) => out.withheld.push(Withheld {
                request_id: id.to_string(),
                reason,
            }),
        }
    }
    out.reliability = reliability
        .into_iter()
        .map(|(key, counts)| ReliabilityLine { key, counts })
        .collect();
    out.semantic = semantic
        .into_iter()
        .map(|(key, (credited, sum))| SemanticLine {
            key,
            credited,
            reward_sum: sum.canonical(),
        })
        .collect();
    out
}

impl Planes {
    /// The human lines of both planes (the `gate` table, the report).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.reliability {
            let counts: Vec<String> = l
                .counts
                .iter()
                .map(|(o, n)| format!("{n} {}", o.as_str()))
                .collect();
            out.push(format!(
                "reliability {}: {}",
                l.key.label(),
                counts.join(", ")
            ));
        }
        for l in &self.semantic {
            out.push(format!(
                "semantic {}: {} requests credited, reward sum {}",
                l.key.label(),
                l.credited,
                l.reward_sum
            ));
        }
        for w in &self.withheld {
            out.push(format!(
                "semantic credit withheld from {}: {}",
                w.request_id, w.reason
            ));
        }
        out
    }
}
