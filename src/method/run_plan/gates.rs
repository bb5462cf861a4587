//! The pre-batch gates `run` takes itself (GATE-1..3) and whether each one
//! counts for the next batch: observed after the lineage's last
//! `case_started` (at least once per batch), passing, and within the frozen
//! freshness window.

use serde::Serialize;

use crate::method::lineage::group_routes;
use crate::method::projections::{LineageState, Observation};
use crate::schema::events::{CheckKind, Status};
use crate::schema::manifest::Tier;
use crate::schema::rule::Rule;

/// A gate `run` takes before every batch, in the order it takes them: the
/// identity first, so nothing reaches quota or EC2 under another identity
/// (GATE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateId {
    /// STS identity through the frozen selector (GATE-1).
    Identity,
    /// The vCPU quota with the GATE-2 formula.
    Quota,
    /// The central host launched once, or the reused one checked against
    /// the frozen one (FREEZE-8; a difference is a hard stop, VERDICT-3).
    CentralHost,
    /// No live run-tagged sandbox (GATE-3).
    Residue,
    /// The group's daemon answers its health URL (GATE-3).
    DaemonHealth,
    /// One minimal request per route of the group (GATE-3, PLANE-2).
    Sentinel(Tier),
}

impl GateId {
    /// The rule that requires it.
    pub fn rule(self) -> Rule {
        match self {
            GateId::Identity => Rule::Gate1,
            GateId::Quota => Rule::Gate2,
            GateId::CentralHost => Rule::Freeze8,
            _ => Rule::Gate3,
        }
    }

    /// A short name for progress lines.
    pub fn name(self) -> String {
        match self {
            GateId::Identity => "identity".into(),
            GateId::Quota => "quota".into(),
            GateId::CentralHost => "central host".into(),
            GateId::Residue => "residue".into(),
            GateId::DaemonHealth => "daemon health".into(),
            GateId::Sentinel(t) => format!("sentinel {}", crate::method::verdict::tier_name(t)),
        }
    }

    /// Whether taking it calls AWS.
    pub fn calls_aws(self) -> bool {
        matches!(
            self,
            GateId::Identity | GateId::Quota | GateId::CentralHost | GateId::Residue
        )
    }
}

/// Where a gate stands for the next batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GateState {
    /// Never observed.
    Missing,
    /// Observed before the last batch started: taken again (GATE-2, GATE-3).
    BeforeBatch {
        /// The observation's seq.
        seq: u64,
    },
    /// Older than the frozen freshness window.
    Stale {
        /// The observation's seq.
        seq: u64,
    },
    /// Observed for this batch and failed: a hard stop (VERDICT-3).
    Failed {
        /// The observation's seq.
        seq: u64,
    },
    /// Observed for this batch, passing, fresh.
    Fresh {
        /// The observation's seq.
        seq: u64,
        /// Seconds until it leaves the freshness window.
        expires_in_sec: u64,
    },
}

/// One gate and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateLine {
    pub gate: GateId,
    /// The rule that requires it.
    pub rule: Rule,
    /// Its exact target (a route's gate target, the group, the region).
    pub target: String,
    /// Where it stands.
    pub state: GateState,
}

/// The gates of the next batch of `group`, in the order they are taken.
pub fn gates_of(l: &LineageState, group: &str) -> Vec<(GateId, String)> {
    let m = &l.frozen.manifest.public;
    let mut out = vec![
        (GateId::Identity, m.aws.region.clone()),
        (
            GateId::Quota,
            format!("{} {}", m.aws.quota_code, m.aws.region),
        ),
        (GateId::Residue, group.to_string()),
        (GateId::DaemonHealth, group.to_string()),
    ];
    if crate::method::central::managed(l) {
        // After the quota, whose need counts the host still to come (GATE-2).
        out.insert(2, (GateId::CentralHost, m.central.role_tag_value.clone()));
    }
    for tier in group_routes(l, group) {
        if let Some(r) = m.route(tier) {
            out.push((GateId::Sentinel(tier), r.gate_target.clone()));
        }
    }
    out
}

/// The latest observation of a gate.
fn latest<'a>(
    l: &'a LineageState,
    group: &str,
    gate: GateId,
    target: &str,
) -> Option<&'a Observation> {
    let check = |kind: CheckKind, group: Option<&str>, target: Option<&str>| {
        l.gates.latest_check(kind, group, target)
    };
    match gate {
        GateId::Identity => l.gates.identity.as_ref(),
        GateId::Quota => l.gates.quota.as_ref(),
        GateId::CentralHost => crate::method::central::latest_check(l).map(|(_, o)| o),
        GateId::Residue => check(CheckKind::Residue, Some(group), None),
        GateId::DaemonHealth => check(CheckKind::DaemonHealth, Some(group), None),
        GateId::Sentinel(_) => check(CheckKind::ProviderSentinel, None, Some(target)),
    }
}

/// The seq of the lineage's last `case_started`, if any: a gate counts for
/// the next batch only when observed after it.
pub fn last_start_seq(l: &LineageState) -> Option<u64> {
    l.groups
        .values()
        .flat_map(|g| g.cases.values())
        .filter_map(|c| c.started.as_ref().map(|(at, _)| at.seq))
        .max()
}

/// Every gate of the next batch of `group` and where it stands at `now`.
/// With `aws_recorded` (a build without the AWS gates, relying on the
/// observations an `aws` build recorded), the AWS gates count when passing
/// and fresh, even if observed before the last batch.
pub fn gate_lines(
    l: &LineageState,
    group: &str,
    now_utc_ns: u64,
    aws_recorded: bool,
) -> Vec<GateLine> {
    let freshness_sec = l.frozen.manifest.public.limits.gate_freshness_sec;
    let window_ns = freshness_sec.saturating_mul(1_000_000_000);
    let batch_after = last_start_seq(l);
    gates_of(l, group)
        .into_iter()
        .map(|(gate, target)| {
            let state = match latest(l, group, gate, &target) {
                None => GateState::Missing,
                Some(o)
                    if batch_after.is_some_and(|s| o.at.seq < s)
                        && !(aws_recorded && gate.calls_aws()) =>
                {
                    GateState::BeforeBatch { seq: o.at.seq }
                }
                Some(o) if o.at.utc_ns > now_utc_ns || now_utc_ns - o.at.utc_ns > window_ns => {
                    GateState::Stale { seq: o.at.seq }
                }
                Some(o) if o.status != Status::Pass => GateState::Failed { seq: o.at.seq },
                Some(o) => GateState::Fresh {
                    seq: o.at.seq,
                    expires_in_sec: (o.at.utc_ns + window_ns - now_utc_ns) / 1_000_000_000,
                },
            };
            GateLine {
                gate,
                rule: gate.rule(),
                target,
                state,
            }
        })
        .collect()
}
