//! Joins (JOIN-1..4): the request-id sets of a group (traces T, usage U,
//! decisions D, outcomes R) and how they differ. Everything joins by
//! persisted request id (JOIN-2), decisions also by BitRouter's ingress
//! commitment, task-scoped outcomes by case (JOIN-3).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::Digest;

use crate::method::projections::GroupState;
use crate::schema::events::TraceStatus;
use crate::schema::manifest::ManifestFile;

/// The domain tag of BitRouter's ingress commitment
/// (`sha256:hex(SHA256(tag + "\0" + trace_id))`, bitrouter-formats section 2).
pub const INGRESS_COMMITMENT_TAG: &str = "bitrouter.ingress-request-id.v1";

/// BitRouter's ingress commitment of a trace id, 64 lowercase hex.
pub fn ingress_commitment(trace_id: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(INGRESS_COMMITMENT_TAG.as_bytes());
    h.update([0u8]);
    h.update(trace_id.as_bytes());
    hex::encode(h.finalize())
}

crate::schema::named::named_enum! {
    /// How a group's decisions were joined to its traces.
    #[derive(Default)]
    pub enum DecisionKey {
        /// By persisted request id.
        #[default]
        RequestId = "request_id",
        /// By ingress commitment: every decision carries one.
        Commitment = "commitment",
        /// Neither throughout: weak attribution (JOIN-4).
        Mixed = "mixed",
    }
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
    pub decision_key: DecisionKey,
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

impl Joins {
    fn duplicate(&mut self, set: &str, id: &str) {
        self.duplicates
            .entry(set.to_string())
            .or_default()
            .push(id.to_string());
    }
}

/// Builds the joins of a group: by persisted request id only (JOIN-2).
pub fn joins(m: &ManifestFile, group: &str, g: &GroupState) -> Joins {
    let mut j = Joins {
        decisions_required: group != "control" || m.method.control_emits_decisions,
        ..Joins::default()
    };
    let trace_ids = join_requests(g, &mut j);
    join_decisions(g, &trace_ids, &mut j);
    join_task_outcomes(g, &mut j);
    j
}

/// T, U and R by request id: counts, duplicates, the differences, and
/// traces whose outcome disagrees with their usage row. Returns T.
fn join_requests(g: &GroupState, j: &mut Joins) -> BTreeSet<String> {
    let mut trace_ids = BTreeSet::new();
    for (id, r) in &g.requests {
        if !r.traces.is_empty() {
            trace_ids.insert(id.to_string());
        }
        if r.traces.len() > 1 {
            j.duplicate("traces", id);
        }
        if r.usage.len() > 1 {
            j.duplicate("usage", id);
        }
        if r.outcomes.len() > 1 {
            j.duplicate("outcomes", id);
        }
    }
    j.traces = trace_ids.len();
    for (id, r) in &g.requests {
        let has_trace = !r.traces.is_empty();
        if !r.usage.is_empty() {
            j.usage += 1;
            if !has_trace {
                j.extra_usage.push(id.to_string());
            }
        } else if has_trace {
            j.missing_usage.push(id.to_string());
        }
        if !r.outcomes.is_empty() {
            j.outcomes += 1;
            j.outcomes_supplied = true;
            if !has_trace {
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
    trace_ids
}

/// How an extra decision joined by commitment is named (JOIN-1): the id of
/// this group's request (a usage row, a receipt, an outcome without a
/// trace) whose ingress commitment it is, else the commitment itself
/// (`sha256:...`: no record names its id). The row's own `request_id` is
/// BitRouter's opaque invocation id, never the request's. Only the name:
/// membership stays by trace (JOIN-2).
/// `names` (commitment -> id over the group's requests) is built once, at
/// the first extra decision.
fn extra_decision_name(
    g: &GroupState,
    c: &str,
    names: &mut Option<BTreeMap<String, String>>,
) -> String {
    let names = names.get_or_insert_with(|| {
        g.requests
            .keys()
            .map(|id| (ingress_commitment(id.as_str()), id.to_string()))
            .collect()
    });
    names
        .get(c)
        .cloned()
        .unwrap_or_else(|| format!("sha256:{c}"))
}

/// D: by commitment when every decision carries one, else by request id; a
/// decision with neither, or a mix, is weak attribution (JOIN-4).
fn join_decisions(g: &GroupState, trace_ids: &BTreeSet<String>, j: &mut Joins) {
    let all_committed =
        !g.decisions.is_empty() && g.decisions.iter().all(|(_, d)| d.commitment.is_some());
    let all_ids = g.decisions.iter().all(|(_, d)| d.request_id.is_some());
    j.decision_key = if all_committed {
        DecisionKey::Commitment
    } else if all_ids {
        DecisionKey::RequestId
    } else {
        DecisionKey::Mixed
    };
    let by_commitment: BTreeMap<String, &String> = if all_committed {
        trace_ids
            .iter()
            .map(|id| (ingress_commitment(id), id))
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut decision_ids = BTreeSet::new();
    let mut names = None;
    for (index, (seq, d)) in g.decisions.iter().enumerate() {
        let resolved = match j.decision_key {
            DecisionKey::Commitment => {
                let c = d.commitment.as_ref().map(|c| c.hex()).unwrap_or_default();
                match by_commitment.get(&c) {
                    Some(id) => Some((*id).clone()),
                    None => {
                        j.extra_decisions
                            .push(extra_decision_name(g, &c, &mut names));
                        None
                    }
                }
            }
            DecisionKey::RequestId => d.request_id.as_deref().map(String::from),
            DecisionKey::Mixed => {
                j.weak_attribution.push(*seq);
                None
            }
        };
        if let Some(id) = resolved {
            if !trace_ids.contains(&id) {
                j.extra_decisions.push(id.clone());
            }
            decision_ids.insert(id.clone());
            j.decision_of.entry(id).or_default().push(index);
        }
    }
    let several: Vec<String> = j
        .decision_of
        .iter()
        .filter(|(_, ds)| ds.len() > 1)
        .map(|(id, _)| id.clone())
        .collect();
    for id in several {
        j.duplicate("decisions", &id);
    }
    j.decisions = decision_ids.len();
    if j.decisions_required {
        j.missing_decisions = trace_ids
            .iter()
            .filter(|id| !decision_ids.contains(*id))
            .cloned()
            .collect();
    }
}

/// JOIN-3: task-scoped outcomes join by case (Harbor trial name).
fn join_task_outcomes(g: &GroupState, j: &mut Joins) {
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
}
