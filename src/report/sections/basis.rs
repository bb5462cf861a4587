//! The cost basis of the report (SETTLE-6: series are never added): the
//! one series every compared group's charges belong to, else the
//! frozen-price basis when every request of every compared group has a
//! recomputation (a subscription route's at its counterfactual list
//! price), else none and no cost claim.

use std::collections::{BTreeMap, BTreeSet};

use crate::method::verdict::{RequestSettlement, Series, Verdict};
use crate::schema::manifest::Tier;

use crate::report::model::{Basis, BasisKind};

/// Which series a group's amounts belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeriesMix {
    /// No request with an amount.
    Empty,
    /// Every amount in one series.
    One(Series),
    /// Amounts in several series.
    Mixed,
}

/// A group's settlement reduced to what the cost claims need.
#[derive(Debug, Clone)]
pub(crate) struct CostSummary {
    /// Micro-USD per series.
    pub series: BTreeMap<Series, u64>,
    /// Requests per settlement state, by its name.
    pub states: BTreeMap<String, u64>,
    /// Requests in the incomplete series (pending, unknown).
    pub incomplete: u64,
    /// Requests without a frozen-price recomputation.
    pub unpriced: u64,
    /// Usage x the frozen prices, when every request has it.
    pub frozen_prices: Option<u64>,
    /// Which series its charges are in.
    pub mix: SeriesMix,
    /// Any request in the subscription-counterfactual series.
    pub subscription: bool,
    /// Requests served by the strong route.
    pub strong: u64,
    /// Requests settled.
    pub requests: u64,
}

impl CostSummary {
    /// The summary of a verdict's settlement.
    pub fn of(verdict: &Verdict) -> CostSummary {
        let settlement = &verdict.settlement;
        let requests = &settlement.requests;
        let states = settlement
            .states
            .iter()
            .map(|(state, count)| (state.as_str().to_string(), *count))
            .collect();
        let accepted = || requests.iter().filter(|request| request.state.accepted());
        let charged: BTreeSet<Series> = accepted()
            .filter(|request| request.charge_micro_usd.is_some_and(|charge| charge > 0))
            .map(|request| request.series)
            .collect();
        let charged = if charged.is_empty() {
            accepted().map(|request| request.series).collect()
        } else {
            charged
        };
        let mix = match charged.len() {
            0 => SeriesMix::Empty,
            1 => SeriesMix::One(*charged.iter().next().expect("one series")),
            _ => SeriesMix::Mixed,
        };
        let frozen_prices = requests
            .iter()
            .map(|request| request.recomputed_micro_usd)
            .try_fold(0u64, |sum, amount| {
                amount.map(|amount| sum.saturating_add(amount))
            });
        let count = |keep: &dyn Fn(&RequestSettlement) -> bool| {
            requests.iter().filter(|request| keep(request)).count() as u64
        };
        CostSummary {
            series: settlement.series_micro_usd.clone(),
            states,
            incomplete: count(&|request| request.series == Series::Incomplete),
            unpriced: count(&|request| request.recomputed_micro_usd.is_none()),
            frozen_prices,
            mix,
            subscription: requests
                .iter()
                .any(|request| request.series == Series::SubscriptionCounterfactual),
            strong: count(&|request| request.tier == Some(Tier::Strong)),
            requests: requests.len() as u64,
        }
    }

    /// How the basis note describes its series.
    fn described(&self) -> String {
        match self.mix {
            SeriesMix::Empty => "no charges".to_string(),
            SeriesMix::One(series) => series.as_str().to_string(),
            SeriesMix::Mixed => "mixed series".to_string(),
        }
    }
}

/// The chosen basis, as the cost claims apply it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CostBasis {
    /// The amounts of one series.
    Series(Series),
    /// Usage x the frozen price snapshot.
    FrozenPrices,
    /// No basis: no cost claim.
    None,
}

impl CostBasis {
    /// A group's cost on this basis, if it has one.
    pub fn cost_of(self, summary: &CostSummary) -> Option<u64> {
        if summary.incomplete > 0 {
            return None;
        }
        match self {
            CostBasis::Series(series) => match summary.mix {
                SeriesMix::Empty => Some(0),
                SeriesMix::One(one) if one == series => {
                    Some(summary.series.get(&series).copied().unwrap_or(0))
                }
                _ => None,
            },
            CostBasis::FrozenPrices => summary.frozen_prices,
            CostBasis::None => None,
        }
    }
}

/// An accepted evaluation group whose costs the basis must cover.
pub(crate) struct Compared<'a> {
    pub group: &'a str,
    pub summary: &'a CostSummary,
}

/// The basis chosen, in both forms.
pub(crate) struct Chosen {
    /// As the cost claims apply it.
    pub cost_basis: CostBasis,
    /// As the report shows it.
    pub basis: Basis,
}

fn no_basis(note: String) -> Chosen {
    Chosen {
        cost_basis: CostBasis::None,
        basis: Basis {
            kind: BasisKind::None,
            series: None,
            label: "no common cost basis".into(),
            note,
        },
    }
}

/// Chooses the basis over the accepted evaluation groups.
pub(crate) fn choose(compared: &[Compared<'_>]) -> Chosen {
    if compared.is_empty() {
        return no_basis("No accepted evaluation group to compare.".into());
    }
    if let Some(group) = compared
        .iter()
        .find(|candidate| candidate.summary.incomplete > 0)
    {
        return no_basis(format!(
            "Group {} has requests without an amount (pending/unknown).",
            group.group
        ));
    }
    let singles: BTreeSet<Option<Series>> = compared
        .iter()
        .filter(|candidate| candidate.summary.mix != SeriesMix::Empty)
        .map(|candidate| match candidate.summary.mix {
            SeriesMix::One(series) => Some(series),
            _ => None,
        })
        .collect();
    if let [Some(series)] = singles.iter().copied().collect::<Vec<_>>()[..] {
        let name = series.as_str();
        return Chosen {
            cost_basis: CostBasis::Series(series),
            basis: Basis {
                kind: BasisKind::Series,
                series: Some(name.into()),
                label: format!("the {name} series"),
                note: format!(
                    "Every charged request of every compared group is in the {name} series (SETTLE-6)."
                ),
            },
        };
    }
    let described: Vec<String> = compared
        .iter()
        .map(|candidate| format!("{} {}", candidate.group, candidate.summary.described()))
        .collect();
    if compared
        .iter()
        .all(|candidate| candidate.summary.frozen_prices.is_some())
    {
        // A subscription route's requests join at their counterfactual
        // list price: on this basis every request is usage x its frozen
        // price, whatever series its charge is in (report 001's control
        // was a Codex subscription, its costs API-equivalent imputations).
        let counterfactual = if compared
            .iter()
            .any(|candidate| candidate.summary.subscription)
        {
            " A subscription route's requests are priced at its frozen counterfactual list price: what they would have cost, never what the subscription cost."
        } else {
            ""
        };
        return Chosen {
            cost_basis: CostBasis::FrozenPrices,
            basis: Basis {
                kind: BasisKind::FrozenPrices,
                series: Some(Series::Notional.as_str().into()),
                label: "notional at the frozen price snapshot (usage x frozen prices)".into(),
                note: format!(
                    "The compared groups' charges are in different series ({}), which are never added or compared (SETTLE-6); every request of every compared group has a recomputation from its archived four buckets at the frozen price snapshot (SETTLE-2/3, as repricing does, SETTLE-7), so costs are compared on that notional basis: not cash spent.{counterfactual}",
                    described.join(", ")
                ),
            },
        };
    }
    no_basis(format!(
        "The compared groups' charges are in different series ({}) and not every request has a frozen-price recomputation.",
        described.join(", ")
    ))
}
