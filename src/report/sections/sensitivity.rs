//! Section 10: the cache-read sensitivity of every notional amount
//! (SETTLE-6). A notional amount is usage x a cited price, so it depends
//! on how much of the prompt a cache served; each amount is repriced with
//! the same frozen price table as if a given share of its prompt tokens had
//! been cache reads. At 0% every prompt token is uncached input: the
//! imputed zero-cache cost, an upper bound wherever a cache read costs no
//! more than an uncached token.

use std::collections::BTreeSet;

use crate::method::verdict::{request_rates, RequestSettlement, Series};
use crate::schema::manifest::is_non_evaluation;
use crate::schema::money::{Dec, Rates};

use super::basis::CostBasis;
use super::{Ctx, OpenedGroup};
use crate::report::model::{
    CacheSensitivity, EqualShareDelta, SensitivityRow, SensitivitySource, ShareCost, ShareDelta,
};
use crate::report::numbers::{delta_pct, Money, Ratio};

/// The shares of the prompt tokens read from a cache, percent: the table's
/// columns in order (0% first: the imputed zero-cache upper bound).
pub const CACHE_READ_SHARES_PCT: [u32; 6] = [0, 25, 50, 75, 90, 100];

/// The method, as the report states it.
const METHOD: &str = "each notional amount repriced with the same frozen price table as if the given share of its prompt tokens (uncached input + cache read + cache write) had been cache reads and the rest uncached input, with output and reasoning tokens as observed; each request in exact decimal, rounded half away from zero to the micro-USD as its charge is (SETTLE-2), then summed. At 0% every prompt token is uncached: the imputed zero-cache cost, an upper bound of every share's cost wherever a route's cache-read price is at most its uncached input price. Cache writes are not modelled. A what-if of notional amounts: never cash spent (CLASS-5, SETTLE-6)";

/// The tokens of one request at its frozen rates.
struct RequestTokens {
    route: String,
    rates: Rates,
    prompt: u64,
    completion: u64,
}

/// A notional amount's requests, repriceable one by one.
struct Repriced {
    requests: Vec<RequestTokens>,
    /// Routes of requests without frozen rates or buckets.
    unpriced: BTreeSet<String>,
    prompt: u64,
    cache_read: u64,
}

/// Section 10: one row per notional amount of the report, in target order
/// (canaries included): a group's cost on the frozen-price basis when the
/// report compares costs on it, else the group's own notional series.
pub(super) fn cache_sensitivity(ctx: &Ctx<'_>) -> CacheSensitivity {
    let rows: Vec<SensitivityRow> = ctx
        .opened_groups()
        .filter_map(|group| sensitivity_of(ctx, &group))
        .collect();
    let rounds: Vec<&str> = ctx.rounds().map(|round| round.name.as_str()).collect();
    CacheSensitivity {
        shares_pct: CACHE_READ_SHARES_PCT.to_vec(),
        method: METHOD.into(),
        equal_share_deltas: equal_share_deltas(&rows, &rounds),
        rows,
    }
}

/// Each round's row against control's at the same share: only rows on the
/// frozen-price basis (accepted, compared on one basis, REPORT-2).
fn equal_share_deltas(rows: &[SensitivityRow], rounds: &[&str]) -> Vec<EqualShareDelta> {
    let on_basis = |group: &str| {
        rows.iter().find(|row| {
            row.group == group
                && row.source == SensitivitySource::FrozenPriceBasis
                && !row.diagnostics_only
        })
    };
    let Some(control) = on_basis(super::CONTROL) else {
        return Vec::new();
    };
    rounds
        .iter()
        .filter_map(|round| on_basis(round))
        .map(|row| {
            assert_eq!(row.costs.len(), control.costs.len(), "one share list");
            let at = row
                .costs
                .iter()
                .zip(&control.costs)
                .map(|(r, c)| ShareDelta {
                    share_pct: r.share_pct,
                    delta_pct: r
                        .cost
                        .as_ref()
                        .zip(c.cost.as_ref())
                        .and_then(|(r, c)| delta_pct(r.micro_usd, c.micro_usd)),
                    round: r.cost.clone(),
                    control: c.cost.clone(),
                })
                .collect();
            EqualShareDelta {
                round: row.group.clone(),
                at,
            }
        })
        .collect()
}

fn sensitivity_of(ctx: &Ctx<'_>, group: &OpenedGroup<'_, '_>) -> Option<SensitivityRow> {
    let costs = ctx.costs.get(&group.eval.name)?;
    let requests = &group.verdict.settlement.requests;
    let on_frozen_basis = ctx.cost_basis == CostBasis::FrozenPrices
        && !is_non_evaluation(&group.eval.name)
        && group.eval.accepted()
        && ctx.cost_on_basis(group.eval).is_some();
    let (source, chosen, observed): (_, Vec<&RequestSettlement>, u64) = if on_frozen_basis {
        (
            SensitivitySource::FrozenPriceBasis,
            requests.iter().collect(),
            costs.frozen_prices?,
        )
    } else {
        let notional: Vec<&RequestSettlement> = requests
            .iter()
            .filter(|request| request.series == Series::Notional && request.state.accepted())
            .collect();
        if notional.is_empty() {
            return None;
        }
        (
            SensitivitySource::NotionalSeries,
            notional,
            costs.series.get(&Series::Notional).copied().unwrap_or(0),
        )
    };
    let repriced = repriced(group, &chosen);
    Some(row(group, source, &chosen, observed, &repriced))
}

/// Each request's tokens and frozen rates.
fn repriced(group: &OpenedGroup<'_, '_>, requests: &[&RequestSettlement]) -> Repriced {
    let manifest = group
        .eval
        .source_lineage
        .map(|lineage| &lineage.frozen.manifest.public);
    let mut out = Repriced {
        requests: Vec::new(),
        unpriced: BTreeSet::new(),
        prompt: 0,
        cache_read: 0,
    };
    for request in requests {
        let route = request
            .provider_model
            .as_ref()
            .map_or("(no usage row)".to_string(), |(provider, model)| {
                format!("{provider}:{model}")
            });
        let rates = manifest.zip(group.state.requests.get(request.request_id.as_str()));
        let rates = rates.and_then(|(manifest, state)| request_rates(manifest, state));
        let (Some(buckets), Some(rates)) = (request.buckets.as_ref(), rates) else {
            out.unpriced.insert(route);
            continue;
        };
        let prompt = buckets
            .uncached_input_tokens
            .saturating_add(buckets.cache_read_tokens)
            .saturating_add(buckets.cache_write_tokens);
        let completion = buckets
            .output_tokens
            .saturating_add(buckets.reasoning_tokens);
        out.prompt = out.prompt.saturating_add(prompt);
        out.cache_read = out.cache_read.saturating_add(buckets.cache_read_tokens);
        out.requests.push(RequestTokens {
            route,
            rates,
            prompt,
            completion,
        });
    }
    out
}

/// The cost at `share_pct` percent cache reads, or why it has none.
fn cost_at(repriced: &Repriced, share_pct: u32) -> Result<u64, String> {
    if let Some(route) = repriced.unpriced.iter().next() {
        return Err(format!("{route} has no frozen price for its requests"));
    }
    let read = Dec::from_parts(i128::from(share_pct), 2).map_err(|e| e.to_string())?;
    let rest =
        Dec::from_parts(i128::from(100 - share_pct.min(100)), 2).map_err(|e| e.to_string())?;
    let overflow = |e: crate::schema::money::MoneyError| format!("the cost does not fit: {e}");
    let mut sum = 0u64;
    for tokens in &repriced.requests {
        let mut total = Dec::ZERO;
        if tokens.prompt > 0 {
            let uncached = tokens
                .rates
                .uncached_input
                .ok_or_else(|| format!("{} has no uncached input price", tokens.route))?;
            let mut rate = uncached.checked_mul(rest).map_err(overflow)?;
            if share_pct > 0 {
                let cache_read = tokens.rates.cache_read.ok_or_else(|| {
                    format!(
                        "{} has no cache-read price in the frozen table (SETTLE-3: never another price, never an estimate)",
                        tokens.route
                    )
                })?;
                rate = rate
                    .checked_add(cache_read.checked_mul(read).map_err(overflow)?)
                    .map_err(overflow)?;
            }
            let input = Dec::from(tokens.prompt)
                .checked_mul(rate)
                .map_err(overflow)?;
            total = total.checked_add(input).map_err(overflow)?;
        }
        if tokens.completion > 0 {
            let output = tokens
                .rates
                .output
                .ok_or_else(|| format!("{} has no output price", tokens.route))?;
            let completion = Dec::from(tokens.completion)
                .checked_mul(output)
                .map_err(overflow)?;
            total = total.checked_add(completion).map_err(overflow)?;
        }
        let charge = total
            .round_half_away_from_zero()
            .to_u64()
            .map_err(overflow)?;
        sum = sum
            .checked_add(charge)
            .ok_or_else(|| "the cost does not fit u64 micro-USD".to_string())?;
    }
    Ok(sum)
}

fn row(
    group: &OpenedGroup<'_, '_>,
    source: SensitivitySource,
    requests: &[&RequestSettlement],
    observed: u64,
    repriced: &Repriced,
) -> SensitivityRow {
    let mut notes: Vec<String> = Vec::new();
    let costs: Vec<ShareCost> = CACHE_READ_SHARES_PCT
        .iter()
        .map(|share_pct| ShareCost {
            share_pct: *share_pct,
            cost: match cost_at(repriced, *share_pct) {
                Ok(cost) => Some(Money::new(cost)),
                Err(why) => {
                    let note = format!("not priced at {share_pct}% and above: {why}");
                    if !notes.iter().any(|seen| seen.ends_with(&why)) {
                        notes.push(note);
                    }
                    None
                }
            },
        })
        .collect();
    let mut above: Vec<&str> = repriced
        .requests
        .iter()
        .filter(|tokens| tokens.prompt > 0)
        .filter(|tokens| {
            matches!(
                (tokens.rates.cache_read, tokens.rates.uncached_input),
                (Some(read), Some(uncached)) if read > uncached
            )
        })
        .map(|tokens| tokens.route.as_str())
        .collect();
    above.sort_unstable();
    above.dedup();
    if !above.is_empty() {
        notes.push(format!(
            "not an upper bound: the cache-read price of {} is above its uncached input price",
            above.join(", ")
        ));
    }
    if let Some(zero) = costs.first().and_then(|share| share.cost.as_ref()) {
        if observed > zero.micro_usd {
            notes.push("the observed cost is above the zero-cache cost: its cache writes are priced above uncached input".into());
        }
    }
    SensitivityRow {
        group: group.eval.name.clone(),
        diagnostics_only: !group.eval.accepted(),
        source,
        requests: requests.len() as u64,
        prompt_tokens: repriced.prompt,
        cache_read_tokens: repriced.cache_read,
        observed_share_pct: Ratio::new(
            i128::from(repriced.cache_read) * 100,
            i128::from(repriced.prompt),
            2,
        ),
        observed: Money::new(observed),
        costs,
        zero_cache_upper_bound: above.is_empty(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Dec {
        Dec::parse(text).unwrap()
    }

    fn tokens(route: &str, read: Option<&str>, prompt: u64, completion: u64) -> RequestTokens {
        RequestTokens {
            route: route.into(),
            rates: Rates {
                uncached_input: Some(dec("5")),
                cache_read: read.map(dec),
                cache_write: None,
                output: Some(dec("30")),
            },
            prompt,
            completion,
        }
    }

    /// The published strong-only control: 59,855,443 input and 1,047,331
    /// output tokens at $5 / $30 per million, cache reads at $0.50.
    /// Zero cache: 299.277215 + 31.41993 = $330.697145; all cache reads:
    /// 29.9277215 + 31.41993 = $61.3476515 -> $61.347652 (half away).
    #[test]
    fn the_published_control_at_every_share() {
        // rule SETTLE-2, SETTLE-6
        let repriced = Repriced {
            requests: vec![tokens("a:strong", Some("0.5"), 59_855_443, 1_047_331)],
            unpriced: BTreeSet::new(),
            prompt: 59_855_443,
            cache_read: 0,
        };
        let costs: Vec<u64> = CACHE_READ_SHARES_PCT
            .iter()
            .map(|share| cost_at(&repriced, *share).unwrap())
            .collect();
        assert_eq!(costs[0], 330_697_145);
        assert_eq!(costs[5], 61_347_652);
        // 25%: 59,855,443 x (0.75 x 5 + 0.25 x 0.5) = 59,855,443 x 3.875
        // = 231,939,841.625 -> + 31,419,930 = 263,359,771.625 -> 263,359,772.
        assert_eq!(costs[1], 263_359_772);
        assert!(costs.windows(2).all(|pair| pair[0] >= pair[1]), "{costs:?}");
    }

    /// A route without a cache-read price prices only 0%; a route without
    /// any frozen price prices nothing (SETTLE-3).
    #[test]
    fn unpriced_cache_reads_are_never_estimated() {
        // rule SETTLE-3
        let mut repriced = Repriced {
            requests: vec![tokens("a:economy", None, 1_000, 10)],
            unpriced: BTreeSet::new(),
            prompt: 1_000,
            cache_read: 0,
        };
        assert_eq!(cost_at(&repriced, 0).unwrap(), 5_300);
        let why = cost_at(&repriced, 25).unwrap_err();
        assert!(why.contains("a:economy has no cache-read price"), "{why}");
        repriced.unpriced.insert("b:gone".into());
        assert!(cost_at(&repriced, 0).is_err());
    }
}

#[cfg(test)]
mod equal_share_tests {
    use super::*;

    fn row(group: &str, costs: [u64; 2], diagnostics_only: bool) -> SensitivityRow {
        SensitivityRow {
            group: group.into(),
            diagnostics_only,
            source: SensitivitySource::FrozenPriceBasis,
            requests: 1,
            prompt_tokens: 1,
            cache_read_tokens: 0,
            observed_share_pct: None,
            observed: Money::new(costs[0]),
            costs: [0, 100]
                .into_iter()
                .zip(costs)
                .map(|(share_pct, c)| ShareCost {
                    share_pct,
                    cost: Some(Money::new(c)),
                })
                .collect(),
            zero_cache_upper_bound: true,
            notes: Vec::new(),
        }
    }

    #[test]
    fn each_round_is_compared_with_control_at_the_same_share() {
        // 001's r2: -32.80% at 0% cache reads, -28.62% at equal shares.
        let rows = [
            row("control", [330_700_000, 100_000_000], false),
            row("r1", [222_230_400, 71_380_000], false),
            row("r2", [1, 1], true),
        ];
        let deltas = equal_share_deltas(&rows, &["r1", "r2"]);
        // rule REPORT-2: only accepted rounds on the one basis
        assert_eq!(
            deltas.len(),
            1,
            "REPORT-2: a diagnostics-only round is left out"
        );
        let at: Vec<&str> = deltas[0]
            .at
            .iter()
            .map(|a| a.delta_pct.as_ref().unwrap().text.as_str())
            .collect();
        assert_eq!(at, ["-32.80", "-28.62"], "REPORT-2");
        assert_eq!(
            deltas[0].at[0].control.as_ref().unwrap().usd_cents,
            "330.70"
        );
        assert!(
            equal_share_deltas(&rows[1..], &["r1"]).is_empty(),
            "no control"
        );
    }
}
