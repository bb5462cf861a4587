//! The report of a lineage (REPORT-1..7, CLASS-2, CLASS-5): a pure function
//! of the replayed [`State`] and the ledger head the caller read.
//!
//! [`build`] computes a [`Report`] (serializable to JSON) from the
//! projections of `crate::method::verdict`; [`render_markdown`] and
//! [`render_svg`] render that struct and nothing else, so every number of
//! the markdown is a field of the JSON form (the `text` of a [`Ratio`], the
//! `usd` of a [`Money`], a count). No I/O, no clock, no env, no binary
//! floats: money is integer micro-USD shown through
//! [`Dec`](crate::schema::money::Dec), ratios are exact integer fractions
//! rounded half away from zero only for display.
//!
//! The folder, in reading order:
//! - `model`: [`Report`] and its parts, one struct per section, and the
//!   report's own enumerations ([`BasisKind`], [`ChartMarker`], ...).
//! - `numbers`: the exact formulas (ratios, percentages, deltas, cost per
//!   success, tolerances, lifecycle) and money text.
//! - `bootstrap`: the percentile bootstrap (its generator, [`SplitMix64`],
//!   is `crate::rng`'s, re-exported here).
//! - `sections/`: one function per REPORT-6 section over a shared context
//!   (the lineage, its groups with their verdicts, the cost basis).
//! - `markdown`, `svg`: the renderings, one function per section;
//!   `labels`, where the chart's labels go (none overlaps another or a
//!   marker).
//! - `registry`: the REPORT-7 entry and its YAML.
//! - `tables`: the request and case tables and their CSV.
//! - `names`, `lookup`: the names of enums defined outside the report, and
//!   what several parts read from a verdict.
//!
//! The report's own choices, each stated in the report where it applies:
//! - q_i = 1 when the case passed (reward exactly 1, as the verdict counts
//!   `passed`), else 0; a skipped or missing case counts 0 (REPORT-1).
//! - Cost claims use one cost basis for the whole lineage (SETTLE-6: series
//!   are never added): the one series every compared group's charges
//!   belong to, else the frozen-price basis (usage x the frozen price
//!   snapshot, a notional series) when every request of every compared
//!   group has one, else none and no cost claim.
//! - A round is comparable with its control only when both are sealed
//!   `accepted`, the exact case intersection excludes nothing (REPORT-2,
//!   REPORT-4) and both have a cost on the basis.
//! - Cost within tolerance: cost delta % <= the frozen `cost_tolerance_pct`;
//!   quality (one-sided, REPORT-2): official score delta (percentage
//!   points) >= -`quality_tolerance_pct`; on a replicated run the lower end
//!   of the round's 95% paired interval instead (REPORT-4).
//! - The bootstrap (replicated runs, trials >= 3): [`SplitMix64`] seeded
//!   with the frozen `interval_seed`, `interval_resamples` resamples of the
//!   n case pairs with replacement (unbiased bounded draws), the mean delta
//!   of each; the interval is the sorted means at ⌊0.025 B⌋ and ⌈0.975 B⌉ − 1.

mod bootstrap;
mod cents;
mod join_ids;
mod labels;
mod lookup;
mod markdown;
mod model;
mod names;
mod numbers;
mod registry;
mod sections;
mod svg;
mod tables;

pub use crate::rng::SplitMix64;
pub use bootstrap::{bootstrap_interval, bootstrap_sums, Interval, PercentileSums};
pub use join_ids::{ids_text, offending_ids, JOIN_IDS_SHOWN};
pub use markdown::render_markdown;
pub use model::{
    category, Basis, BasisKind, CacheSensitivity, Category, ChartMarker, ChartPoint, Checksums,
    Claim, ControlResolution, CumulativeRow, Decision, DecisionCounts, Diagnostic, Economics,
    Excluded, Fact, FailedCase, Failures, Frozen, GoNoGo, GroupRow, IntersectionLine,
    JoinDifference, LedgerHead, OffendingIds, PairLine, Paired, PriceLine, Report, RequestIdSet,
    Role, RoundCheck, RouteLine, RouteUsage, RowLine, Runnable, RuntimeEvidence, SealInclusion,
    SealProof, SealWitnesses, SealedLine, SensitivityRow, SensitivitySource, SetSize,
    SettlementAudit, ShareCost, SignOffLine, SignedCheckpoint, SkipLine, SteadyRow, StopLine,
    TimeGap, Transparency,
};
pub use numbers::{
    cents, cost_per_success, cost_within, delta_pct, duration_text, lifecycle, quality_within,
    ratio_text, score_delta_pp, score_pct, usd, Cumulative, Money, Ratio,
};
pub use registry::{registry, render_registry_yaml, Omitted, Registry, RegistryMetric};
pub use sections::CACHE_READ_SHARES_PCT;
pub use svg::render_svg;
pub use tables::{
    group_table, tables, to_csv, CaseRow, GroupTableRow, RequestRow, TableRow, CASE_COLUMNS,
    GROUP_COLUMNS, REQUEST_COLUMNS,
};

use crate::error::Result;
use crate::method::projections::State;

/// The format tag of the JSON form.
pub const REPORT_FORMAT: &str = "benchledger.report.v1";

/// The chart's file name, linked from the markdown.
pub const CHART_FILE: &str = "chart.svg";

/// The report of `lineage` (or the only lineage) as the state gives it,
/// computed at the ledger head `head` (which the caller read with the
/// state). Pure.
pub fn build(state: &State, lineage: Option<&str>, head: LedgerHead) -> Result<Report> {
    let lineage = state.lineage(lineage)?;
    let ctx = sections::Ctx::new(state, lineage);
    Ok(sections::report(&ctx, head))
}

/// RFC 3339 text to ns since the epoch: the one parser of `schema::time`.
pub use crate::schema::time::parse_rfc3339_ns;

#[cfg(test)]
mod tests;
