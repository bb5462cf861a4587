//! Building the [`Report`] from the projections: one function per REPORT-6
//! section, each computing its part of the model from a shared [`Ctx`]
//! (the lineage, its groups with their verdicts, their cost summaries, the
//! cost basis and the case intersections), and [`report`] calling them in
//! order.

mod basis;
mod claim;
mod control;
mod economics;
mod evidence;
mod failures;
mod frozen;
mod go_no_go;
mod groups;
mod paired;
mod sensitivity;

use std::collections::BTreeMap;

use crate::method::projections::{At, GroupState, LineageState, State};
use crate::method::verdict::{self, Intersection, Verdict};
use crate::schema::manifest::{is_non_evaluation, ManifestFile, REPLICATED_TRIALS_MIN};

use super::model::{Basis, Excluded, GroupRow, LedgerHead, Report};
use super::REPORT_FORMAT;

pub(crate) use basis::CostSummary;
pub(crate) use claim::allowed_claim;
pub use sensitivity::CACHE_READ_SHARES_PCT;

/// The name of the control group in a lineage's target list.
pub(crate) const CONTROL: &str = "control";

/// A target group of the lineage with its verdict (a reused control
/// resolves to the lineage that ran it).
pub(crate) struct GroupEval<'a> {
    /// The group's name in this lineage.
    pub name: String,
    /// The lineage its evidence is in (`None`: a reused control whose
    /// lineage is not in this ledger).
    pub source_lineage: Option<&'a LineageState>,
    /// The group's name in that lineage.
    pub source_group: String,
    /// A control reused from another lineage (LINEAGE-6).
    pub reused: bool,
    /// Its replayed state, when it was opened.
    pub state: Option<&'a GroupState>,
    /// Its verdict as of now, when it was opened.
    pub verdict: Option<Verdict>,
    /// Its seal, when sealed.
    pub sealed: Option<Seal>,
    /// When its daemon started.
    pub opened: Option<At>,
}

/// A group that was opened: its evaluation, replayed state and verdict.
pub(crate) struct OpenedGroup<'c, 'a> {
    pub eval: &'c GroupEval<'a>,
    /// Its replayed state.
    pub state: &'a GroupState,
    pub verdict: &'c Verdict,
}

/// Where and how a group was sealed.
#[derive(Debug, Clone)]
pub(crate) struct Seal {
    /// The seal record.
    pub at: At,
    /// The sealed status.
    pub status: String,
}

impl GroupEval<'_> {
    /// Sealed `accepted`.
    pub fn accepted(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|seal| verdict::VerdictStatus::Accepted.is(&seal.status))
    }

    /// Sealed with any other status.
    pub fn rejected(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|seal| !verdict::VerdictStatus::Accepted.is(&seal.status))
    }

    /// `lineage/group` its numbers come from.
    pub fn source(&self) -> String {
        match self.source_lineage {
            Some(lineage) => format!("{}/{}", lineage.frozen.lineage, self.source_group),
            None => format!("(missing)/{}", self.source_group),
        }
    }

    /// Its sealed status, or what it is now.
    pub fn status(&self) -> String {
        match (&self.sealed, &self.verdict) {
            (Some(seal), _) => seal.status.clone(),
            (None, Some(verdict)) => format!("unsealed (now {})", verdict.status),
            (None, None) if self.source_lineage.is_none() => {
                "reused control not in this ledger".into()
            }
            (None, None) => "not_opened".into(),
        }
    }
}

/// The group `name` of `lineage` with its verdict.
pub(crate) fn evaluate<'a>(
    state: &'a State,
    lineage: &'a LineageState,
    name: &str,
) -> GroupEval<'a> {
    let (source_lineage, source_group, reused) = match (&lineage.control_reused, name) {
        (Some((_, reuse)), CONTROL) => (
            state.lineages.get(&reuse.control.lineage),
            reuse.control.group.clone(),
            true,
        ),
        _ => (Some(lineage), name.to_string(), false),
    };
    let group = source_lineage.and_then(|source| source.groups.get(&source_group));
    let verdict = match (source_lineage, group) {
        (Some(source), Some(_)) => Some(verdict::group_verdict(state, source, &source_group)),
        _ => None,
    };
    GroupEval {
        name: name.to_string(),
        source_lineage,
        source_group,
        reused,
        state: group,
        verdict,
        sealed: group
            .and_then(|group| group.sealed.as_ref())
            .map(|(at, sealed)| Seal {
                at: *at,
                status: sealed.status.clone(),
            }),
        opened: group
            .and_then(|group| group.opened.as_ref())
            .map(|(at, _)| *at),
    }
}

/// What every section reads: the lineage, its groups with their verdicts
/// and cost summaries, the cost basis and the case intersections.
pub(crate) struct Ctx<'a> {
    /// The replayed state.
    pub state: &'a State,
    /// The lineage reported on.
    pub lineage: &'a LineageState,
    /// Its frozen manifest.
    pub manifest: &'a ManifestFile,
    /// Every target group, in target order (canaries included).
    pub groups: Vec<GroupEval<'a>>,
    /// Cost summaries of the groups with a verdict, by name.
    pub costs: BTreeMap<String, CostSummary>,
    /// The cost basis of every cost claim.
    pub cost_basis: basis::CostBasis,
    /// The same, as the report shows it.
    pub basis: Basis,
    /// Each round with evidence against its control (LINEAGE-9), by name.
    pub intersections: BTreeMap<String, Intersection>,
    /// N: predeclared case identities per group.
    pub cases_per_group: u64,
}

impl<'a> Ctx<'a> {
    /// The context of `lineage`: every verdict computed once.
    pub fn new(state: &'a State, lineage: &'a LineageState) -> Ctx<'a> {
        let manifest = &lineage.frozen.manifest.public;
        let groups: Vec<GroupEval<'a>> = manifest
            .group_names()
            .iter()
            .map(|name| evaluate(state, lineage, name))
            .collect();
        let costs: BTreeMap<String, CostSummary> = groups
            .iter()
            .filter_map(|group| {
                let verdict = group.verdict.as_ref()?;
                Some((group.name.clone(), CostSummary::of(verdict)))
            })
            .collect();
        let compared: Vec<basis::Compared<'_>> = groups
            .iter()
            .filter(|group| !is_non_evaluation(&group.name) && group.accepted())
            .filter_map(|group| {
                let summary = costs.get(&group.name)?;
                Some(basis::Compared {
                    group: &group.name,
                    summary,
                })
            })
            .collect();
        let chosen = basis::choose(&compared);
        let intersections = groups
            .iter()
            .filter(|group| !is_non_evaluation(&group.name) && group.name != CONTROL)
            .filter(|round| round.state.is_some())
            .map(|round| {
                let intersection = verdict::intersection(state, lineage, &round.name);
                (round.name.clone(), intersection)
            })
            .collect();
        Ctx {
            state,
            lineage,
            manifest,
            groups,
            costs,
            cost_basis: chosen.cost_basis,
            basis: chosen.basis,
            intersections,
            cases_per_group: (manifest.cases.tasks.len() * manifest.cases.trials.len()) as u64,
        }
    }

    /// The evaluation groups (control and the rounds), in target order.
    pub fn evaluation_groups(&self) -> impl Iterator<Item = &GroupEval<'a>> {
        self.groups
            .iter()
            .filter(|group| !is_non_evaluation(&group.name))
    }

    /// The groups that were opened (canaries included), in target order.
    pub fn opened_groups(&self) -> impl Iterator<Item = OpenedGroup<'_, 'a>> {
        self.groups.iter().filter_map(|eval| {
            Some(OpenedGroup {
                eval,
                state: eval.state?,
                verdict: eval.verdict.as_ref()?,
            })
        })
    }

    /// The control, when the target list has one.
    pub fn control(&self) -> Option<&GroupEval<'a>> {
        self.evaluation_groups().find(|group| group.name == CONTROL)
    }

    /// The control, when it is sealed `accepted`.
    pub fn accepted_control(&self) -> Option<&GroupEval<'a>> {
        self.control().filter(|control| control.accepted())
    }

    /// The predeclared policy rounds, in target order.
    pub fn rounds(&self) -> impl Iterator<Item = &GroupEval<'a>> {
        self.evaluation_groups()
            .filter(|group| group.name != CONTROL)
    }

    /// The group's cost on the basis, if it has one.
    pub fn cost_on_basis(&self, group: &GroupEval<'_>) -> Option<u64> {
        let summary = self.costs.get(&group.name)?;
        self.cost_basis.cost_of(summary)
    }

    /// The accepted control's cost on the basis.
    pub fn control_cost(&self) -> Option<u64> {
        self.accepted_control()
            .and_then(|control| self.cost_on_basis(control))
    }

    /// Replicated runs (at least three trials per task): the bootstrap
    /// applies (REPORT-4).
    pub fn replicated(&self) -> bool {
        self.manifest.cases.trials.len() >= REPLICATED_TRIALS_MIN
    }

    /// CLASS-4: the policy database a replicated lineage's trials share.
    /// A group serves every trial of its round from its one frozen
    /// `db_path` (and the rounds share one policy state, FREEZE-4), so the
    /// trials of one lineage replicate trials, never whole clean lineages
    /// each with its own fresh policy database. `None` unless replicated
    /// with a policy round.
    pub fn shared_policy_db(&self) -> Option<&'a str> {
        if !self.replicated() {
            return None;
        }
        let manifest: &'a ManifestFile = self.manifest;
        self.rounds().find_map(|round| {
            manifest
                .groups
                .iter()
                .find(|g| g.name == round.name)
                .map(|g| g.db_path.as_str())
        })
    }
}

/// The excluded identities of an intersection.
pub(crate) fn excluded_of(intersection: &Intersection) -> Vec<Excluded> {
    intersection
        .excluded
        .iter()
        .map(|(case, why)| Excluded {
            case: case.clone(),
            why: why.clone(),
        })
        .collect()
}

/// The section-5 row of `group`.
pub(crate) fn row_of<'r>(rows: &'r [GroupRow], group: &str) -> &'r GroupRow {
    rows.iter()
        .find(|row| row.group == group)
        .expect("a row per evaluation group")
}

/// The report of the context's lineage at `head`: the sections in the
/// order their inputs allow, assembled in REPORT-6 order.
pub(crate) fn report(ctx: &Ctx<'_>, head: LedgerHead) -> Report {
    let control = control::control_resolution(ctx);
    let groups = groups::group_rows(ctx);
    let decisions = evidence::decision_counts(ctx);
    let economics = economics::economics(ctx, &groups);
    let paired = paired::paired(ctx);
    let checks = go_no_go::round_checks(ctx, &groups, &economics, &paired);
    let refused = claim::refused_claims(ctx, &groups, &decisions, &checks);
    let hashes = frozen::hashes(ctx, &control);
    Report {
        format: REPORT_FORMAT.into(),
        lineage: ctx.lineage.frozen.lineage.clone(),
        projection_version: crate::method::projections::PROJECTION_VERSION,
        claim: claim::claim(ctx, refused),
        role: claim::role(ctx),
        frozen: frozen::frozen(ctx, hashes.clone()),
        control,
        basis: ctx.basis.clone(),
        chart: groups::chart_points(ctx),
        paired,
        settlement: evidence::settlement_audits(ctx),
        runtime: evidence::runtime_evidence(ctx),
        failures: failures::failures(ctx),
        go_no_go: go_no_go::go_no_go(ctx, &groups, checks),
        checksums: go_no_go::checksums(ctx, hashes, head),
        groups,
        decisions,
        economics,
        cache_sensitivity: sensitivity::cache_sensitivity(ctx),
        transparency: None,
    }
}
