//! A group rebuilt from published per-group figures (BitRouter's report 001,
//! issue 31): how many of its cases passed and, per route, how many
//! requests it served, their prompt and output token totals and the policy
//! decision reasons behind them. The scenario builder turns these into one
//! request list per case and one reward per case; nothing else about the
//! group (gates, results, cleanup, seal) differs from a synthesized one.

use crate::error::{Error, Result};
use crate::schema::events::CaseRef;
use crate::schema::manifest::{is_non_evaluation, Tier};

use super::scenario::{ReceiptMode, Req};

/// One group's published figures.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    pub group: String,
    /// How many of its cases passed (reward 1; the rest reward 0).
    pub passed: usize,
    /// Its requests per route.
    pub routes: Vec<RouteFigures>,
}

/// The requests a group sent to one route.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteFigures {
    /// The route's tier.
    pub tier: Tier,
    /// How many requests.
    pub requests: u64,
    /// Their prompt tokens in all, every one uncached (001's export kept no
    /// cache buckets).
    pub input_tokens: u64,
    /// Their output tokens in all.
    pub output_tokens: u64,
    /// Each request's prompt tokens are a multiple of this (the last
    /// request takes what is left), so a repricing at any cache-read share
    /// rounds nothing but that one request.
    pub input_quantum: u64,
    /// `[reason, count]` of the decisions of the first requests, in order;
    /// the rest are `static_table`.
    #[serde(default)]
    pub reasons: Vec<(String, u64)>,
}

/// What a group's figures become: each case's requests and whether it
/// passed.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The requests of each case, in the order of the group's identities.
    pub requests: Vec<Vec<Req>>,
    /// Whether each case passed.
    pub passes: Vec<bool>,
}

/// `total` in `n` parts, each a multiple of `quantum` but the last, as even
/// as that allows.
fn quantized(total: u64, n: u64, quantum: u64) -> Vec<u64> {
    assert!(n > 0 && quantum > 0, "a route with requests and a quantum");
    let base = total / n / quantum * quantum;
    let mut parts = vec![base; n as usize];
    let mut left = total - base * n;
    for part in parts.iter_mut() {
        if left < quantum {
            break;
        }
        *part += quantum;
        left -= quantum;
    }
    *parts.last_mut().expect("n > 0") += left;
    assert_eq!(parts.iter().sum::<u64>(), total, "the parts add up");
    parts
}

/// One route's requests as (position, tier, tokens, reason): positions
/// spread evenly over the group so routes interleave.
fn route_requests(r: &RouteFigures) -> Result<Vec<(u128, Req)>> {
    let listed: u64 = r.reasons.iter().map(|(_, n)| n).sum();
    if r.requests == 0 || listed > r.requests {
        return Err(Error::input(format!(
            "route {}: {} requests, {listed} with listed reasons",
            r.tier.as_str(),
            r.requests
        )));
    }
    let inputs = quantized(r.input_tokens, r.requests, r.input_quantum.max(1));
    let outputs = quantized(r.output_tokens, r.requests, 1);
    let reasons = r
        .reasons
        .iter()
        .flat_map(|(reason, n)| std::iter::repeat_n(reason.clone(), *n as usize));
    let reasons: Vec<String> = reasons
        .chain(std::iter::repeat("static_table".to_string()))
        .take(r.requests as usize)
        .collect();
    Ok((0..r.requests as usize)
        .map(|k| {
            // Position k + 1/2 of n, scaled to a common denominator.
            let at = (2 * k as u128 + 1) * (1u128 << 64) / (2 * u128::from(r.requests));
            let req = Req {
                id: String::new(),
                tier: r.tier,
                trace: true,
                usage: true,
                decision: true,
                receipt: ReceiptMode::None,
                tokens: Some([inputs[k], outputs[k]]),
                reason: Some(reasons[k].clone()),
            };
            (at, req)
        })
        .collect())
}

/// Whether each case passes: the `passed` cases first in the order of
/// BLAKE3(group, task), so each group passes its own set.
fn passes(f: &Figures, ids: &[CaseRef]) -> Result<Vec<bool>> {
    if f.passed > ids.len() {
        return Err(Error::input(format!(
            "{}: {} passed of {} cases",
            f.group,
            f.passed,
            ids.len()
        )));
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|i| {
        *blake3::hash(format!("{}/{}", f.group, ids[*i].task).as_bytes()).as_bytes()
    });
    let mut out = vec![false; ids.len()];
    for i in order.into_iter().take(f.passed) {
        out[i] = true;
    }
    Ok(out)
}

/// The plan of a group: every route's requests interleaved, dealt to the
/// cases in order as evenly as the count allows, ids as the builder names
/// them (`{group}-{task}-{trial}-{replacement}-{k}`).
pub fn plan(f: &Figures, ids: &[CaseRef]) -> Result<Plan> {
    if ids.is_empty() {
        return Err(Error::input(format!("{}: no cases", f.group)));
    }
    let mut all = Vec::new();
    for r in &f.routes {
        all.extend(route_requests(r)?);
    }
    all.sort_by_key(|(at, req)| (*at, req.tier.as_str()));
    let n = all.len();
    let mut requests = Vec::with_capacity(ids.len());
    let mut it = all.into_iter().map(|(_, req)| req);
    for (i, case) in ids.iter().enumerate() {
        let take = (i + 1) * n / ids.len() - i * n / ids.len();
        let base = format!(
            "{}-{}-{}-{}",
            f.group, case.task, case.trial, case.replacement
        );
        let reqs: Vec<Req> = it
            .by_ref()
            .take(take)
            .enumerate()
            .map(|(k, req)| Req {
                id: format!("{base}-{}", k + 1),
                ..req
            })
            .collect();
        requests.push(reqs);
    }
    assert!(it.next().is_none(), "every request dealt to a case");
    // A canary proves the path with an authoritatively settled request
    // (BIND-4): its first.
    if is_non_evaluation(&f.group) {
        if let Some(first) = requests.iter_mut().flatten().next() {
            first.receipt = ReceiptMode::Computed;
        }
    }
    Ok(Plan {
        requests,
        passes: passes(f, ids)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_parts_add_up_and_only_the_last_breaks_the_quantum() {
        let parts = quantized(59_855_443, 1_666, 40);
        assert_eq!(parts.iter().sum::<u64>(), 59_855_443);
        assert!(parts[..parts.len() - 1].iter().all(|p| p % 40 == 0));
        let (lo, hi) = (
            parts.iter().min().unwrap(),
            parts[..1_665].iter().max().unwrap(),
        );
        assert!(hi - lo <= 40, "{lo}..{hi}");
        assert_eq!(quantized(7, 3, 1), vec![3, 2, 2]);
    }

    #[test]
    fn a_plan_deals_every_request_once_and_passes_the_count() {
        let f = Figures {
            group: "r2".into(),
            passed: 2,
            routes: vec![
                RouteFigures {
                    tier: Tier::Strong,
                    requests: 7,
                    input_tokens: 700,
                    output_tokens: 70,
                    input_quantum: 10,
                    reasons: vec![],
                },
                RouteFigures {
                    tier: Tier::Balanced,
                    requests: 3,
                    input_tokens: 30,
                    output_tokens: 3,
                    input_quantum: 1,
                    reasons: vec![("exploration_locked".into(), 2)],
                },
            ],
        };
        let ids: Vec<CaseRef> = ["a", "b", "c"]
            .iter()
            .map(|t| CaseRef {
                task: t.to_string(),
                trial: "t1".into(),
                replacement: 0,
            })
            .collect();
        let p = plan(&f, &ids).unwrap();
        let all: Vec<&Req> = p.requests.iter().flatten().collect();
        assert_eq!(all.len(), 10);
        assert_eq!(
            p.requests.iter().map(Vec::len).collect::<Vec<_>>(),
            [3, 3, 4]
        );
        let weak: Vec<&&Req> = all.iter().filter(|r| r.tier == Tier::Balanced).collect();
        assert_eq!(weak.len(), 3);
        let locked = weak
            .iter()
            .filter(|r| r.reason.as_deref() == Some("exploration_locked"))
            .count();
        assert_eq!(locked, 2);
        let input: u64 = all.iter().map(|r| r.tokens.unwrap()[0]).sum();
        assert_eq!(input, 730);
        assert_eq!(p.passes.iter().filter(|p| **p).count(), 2);
        assert!(
            plan(&Figures { passed: 4, ..f }, &ids).is_err(),
            "more passed than cases"
        );
    }
}
