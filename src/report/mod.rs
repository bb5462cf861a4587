//! The report of a lineage (REPORT-1..7, CLASS-2, CLASS-5): a pure function
//! of the replayed [`State`] and the ledger head the caller read.
//!
//! [`build`] computes a [`Report`] (serializable to JSON) from the
//! projections of `src/verdict.rs`; [`render_markdown`] and [`render_svg`]
//! render that struct and nothing else, so every number of the markdown is
//! a field of the JSON form (the `text` of a [`Ratio`], the `usd` of a
//! [`Money`], a count). No I/O, no clock, no env, no binary floats: money is
//! integer micro-USD shown through [`Dec`], ratios are exact integer
//! fractions rounded half away from zero only for display.
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
//!   quality within tolerance: official score delta (percentage points)
//!   >= -`quality_tolerance_pct`.
//! - The bootstrap (replicated runs, trials >= 3): [`SplitMix64`] seeded
//!   with the frozen `interval_seed`, `interval_resamples` resamples of the
//!   n case pairs with replacement (unbiased bounded draws), the mean delta
//!   of each; the interval is the sorted means at ⌊0.025 B⌋ and ⌈0.975 B⌉ − 1.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::method::projections::{CaseStatus, GroupState, LineageState, State};
use crate::method::verdict::{self, Series, SettlementState, Verdict};
use crate::schema::events::CaseRef;
use crate::schema::manifest::{is_non_evaluation, ManifestFile, RunClass, RunRole, Tier};
use crate::schema::money::Dec;
use crate::schema::rule::Rule;

/// The format tag of the JSON form.
pub const REPORT_FORMAT: &str = "benchledger.report.v1";

/// The chart's file name, linked from the markdown.
pub const CHART_FILE: &str = "chart.svg";

/// Micro-USD per USD.
const MICRO: i128 = 1_000_000;

// ---------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------

/// An amount of money: exact integer micro-USD and its exact USD text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Money {
    /// Micro-USD.
    pub micro_usd: u64,
    /// The same amount in USD, exact decimal text (via [`Dec`]).
    pub usd: String,
}

impl Money {
    /// An amount of `micro_usd`.
    pub fn new(micro_usd: u64) -> Money {
        Money {
            micro_usd,
            usd: usd(micro_usd),
        }
    }
}

/// Micro-USD as exact USD text (`4290000` -> `4.29`, `35831` -> `0.035831`).
pub fn usd(micro_usd: u64) -> String {
    Dec::from_parts(i128::from(micro_usd), 6)
        .map(|d| d.canonical())
        .unwrap_or_else(|_| format!("{micro_usd}e-6"))
}

/// An exact fraction `num / den` and its display text, rounded half away
/// from zero to a fixed number of places.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ratio {
    /// Numerator.
    pub num: i64,
    /// Denominator (> 0).
    pub den: i64,
    /// `num / den` rounded half away from zero for display.
    pub text: String,
}

impl Ratio {
    /// `num / den` shown with `places` decimals; `None` when `den` is 0 or
    /// a term does not fit an i64.
    pub fn new(num: i128, den: i128, places: u32) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let (num, den) = if den < 0 { (-num, -den) } else { (num, den) };
        Some(Ratio {
            num: i64::try_from(num).ok()?,
            den: i64::try_from(den).ok()?,
            text: ratio_text(num, den, places)?,
        })
    }
}

/// `num / den` (den > 0) rounded half away from zero to `places` decimals,
/// always with exactly `places` digits after the point (`-0.00` is `0.00`).
pub fn ratio_text(num: i128, den: i128, places: u32) -> Option<String> {
    if den <= 0 {
        return None;
    }
    let scale = 10i128.checked_pow(places)?;
    let n = num.checked_mul(scale)?;
    let mut q = n / den;
    let r = n % den;
    if r.unsigned_abs().checked_mul(2)? >= den.unsigned_abs() {
        q += n.signum();
    }
    let sign = if q < 0 { "-" } else { "" };
    let a = q.unsigned_abs();
    let scale = scale.unsigned_abs();
    Some(if places == 0 {
        format!("{sign}{a}")
    } else {
        format!("{sign}{}.{:0w$}", a / scale, a % scale, w = places as usize)
    })
}

/// Official score in percent (REPORT-1): `passed / n x 100`, two decimals.
pub fn score_pct(passed: u64, n: u64) -> Option<Ratio> {
    Ratio::new(i128::from(passed) * 100, i128::from(n), 2)
}

/// `(policy / control - 1) x 100` (REPORT-2: cost delta %, and likewise
/// the strong-call delta % on strong-route request counts), two decimals.
pub fn delta_pct(policy: u64, control: u64) -> Option<Ratio> {
    let (p, c) = (i128::from(policy), i128::from(control));
    Ratio::new((p - c) * 100, c, 2)
}

/// Cost per success in USD (REPORT-2): `C / successes`, shown to the cent,
/// kept exact (`num` micro-USD over `den` = successes x 10^6).
pub fn cost_per_success(cost_micro_usd: u64, successes: u64) -> Option<Ratio> {
    Ratio::new(i128::from(cost_micro_usd), i128::from(successes) * MICRO, 2)
}

/// Official score delta in percentage points: `100 (p_r/n_r - p_c/n_c)`.
pub fn score_delta_pp(p_round: u64, n_round: u64, p_control: u64, n_control: u64) -> Option<Ratio> {
    let (pr, nr, pc, nc) = (
        i128::from(p_round),
        i128::from(n_round),
        i128::from(p_control),
        i128::from(n_control),
    );
    Ratio::new(100 * (pr * nc - pc * nr), nr * nc, 2)
}

/// Quality within the predeclared tolerance: the score delta in percentage
/// points is at least `-tolerance_pp` (exact).
pub fn quality_within(
    p_round: u64,
    n_round: u64,
    p_control: u64,
    n_control: u64,
    tolerance_pp: Dec,
) -> bool {
    if n_round == 0 || n_control == 0 {
        return false;
    }
    let (pr, nr, pc, nc) = (
        i128::from(p_round),
        i128::from(n_round),
        i128::from(p_control),
        i128::from(n_control),
    );
    let Some(s) = 10i128.checked_pow(tolerance_pp.scale()) else {
        return false;
    };
    // 100 (pr nc - pc nr) / (nr nc) >= -m / s  <=>  100 (pr nc - pc nr) s >= -m nr nc
    100 * (pr * nc - pc * nr) * s >= -tolerance_pp.mantissa() * nr * nc
}

/// Cost within the predeclared tolerance: the cost delta % is at most
/// `tolerance_pct` (exact). A control without cost compares nothing.
pub fn cost_within(policy: u64, control: u64, tolerance_pct: Dec) -> bool {
    if control == 0 {
        return false;
    }
    let (p, c) = (i128::from(policy), i128::from(control));
    let Some(s) = 10i128.checked_pow(tolerance_pct.scale()) else {
        return false;
    };
    // (p - c) 100 / c <= m / s  <=>  (p - c) 100 s <= m c
    (p - c) * 100 * s <= tolerance_pct.mantissa() * c
}

/// One cumulative lifecycle row (REPORT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cumulative {
    /// Rounds 1..=k.
    pub k: u64,
    /// C_policy(1..k): the sum of the rounds' costs.
    pub policy: Money,
    /// C_control(1..k) = k x C_control.
    pub control: Money,
    /// `(C_policy(1..k) / C_control(1..k) - 1) x 100`.
    pub delta_pct: Option<Ratio>,
}

/// REPORT-3: the cumulative rows through each round, against k x control.
pub fn lifecycle(control: u64, rounds: &[u64]) -> Vec<Cumulative> {
    let mut sum = 0u64;
    rounds
        .iter()
        .enumerate()
        .map(|(i, c)| {
            sum = sum.saturating_add(*c);
            let k = i as u64 + 1;
            let ck = control.saturating_mul(k);
            Cumulative {
                k,
                policy: Money::new(sum),
                control: Money::new(ck),
                delta_pct: delta_pct(sum, ck),
            }
        })
        .collect()
}

/// A duration in ns as text: `1d 2h 3m 4s` (leading zero units left out).
pub fn duration_text(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let s = ns.unsigned_abs() / 1_000_000_000;
    let (d, h, m, sec) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60, s % 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d}d"));
    }
    if d > 0 || h > 0 {
        parts.push(format!("{h}h"));
    }
    if d > 0 || h > 0 || m > 0 {
        parts.push(format!("{m}m"));
    }
    parts.push(format!("{sec}s"));
    format!("{sign}{}", parts.join(" "))
}

/// Parses RFC 3339 UTC text as Harbor writes it (`2026-11-20T00:10:00Z`,
/// fractional seconds and a `+00:00` offset allowed) to ns since the epoch.
pub fn parse_rfc3339_ns(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac_ns: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            return None;
        }
        let mut ns = digits.clone();
        ns.truncate(9);
        while ns.len() < 9 {
            ns.push('0');
        }
        frac_ns = ns.parse().ok()?;
        rest = &r[digits.len()..];
    }
    let offset_s: i128 = match rest {
        "Z" | "z" | "+00:00" | "-00:00" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let oh: i128 = o[1..3].parse().ok()?;
            let om: i128 = o[4..6].parse().ok()?;
            let v = oh * 3600 + om * 60;
            if o.starts_with('+') {
                v
            } else {
                -v
            }
        }
        _ => return None,
    };
    // Days from civil (proleptic Gregorian).
    let (y, mo, d) = (i128::from(y), i128::from(mo), i128::from(d));
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs =
        days * 86_400 + i128::from(h) * 3600 + i128::from(mi) * 60 + i128::from(s) - offset_s;
    Some(secs * 1_000_000_000 + frac_ns)
}

// ---------------------------------------------------------------------------
// The bootstrap (REPORT-4)
// ---------------------------------------------------------------------------

/// SplitMix64 (Steele, Lea, Flood 2014): the deterministic generator of the
/// bootstrap. The state advances by the golden-ratio increment; each output
/// is the state mixed by two xor-shift-multiply rounds.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in `0..n` (n > 0) without modulo bias (Lemire's
    /// multiply-shift with rejection).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// A 95% bootstrap interval of the mean paired delta, in percentage points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interval {
    /// How it was computed.
    pub method: String,
    /// The frozen seed.
    pub seed: u64,
    /// The frozen resample count.
    pub resamples: u32,
    /// Case pairs resampled.
    pub pairs: u64,
    /// Lower bound (percentage points).
    pub lower_pp: Ratio,
    /// Upper bound (percentage points).
    pub upper_pp: Ratio,
}

/// The percentile bootstrap of the mean of `deltas` (one per case pair):
/// returns the (lower, upper) resample sums at ⌊0.025 B⌋ and ⌈0.975 B⌉ − 1 of
/// the sorted sums (each sum / n is a resample mean). `None` for no pairs
/// or no resamples. Deterministic for a seed.
pub fn bootstrap_sums(deltas: &[i64], seed: u64, resamples: u32) -> Option<(i64, i64)> {
    if deltas.is_empty() || resamples == 0 {
        return None;
    }
    let n = deltas.len() as u64;
    let mut rng = SplitMix64::new(seed);
    let mut sums: Vec<i64> = (0..resamples)
        .map(|_| {
            (0..n)
                .map(|_| deltas[rng.below(n) as usize])
                .fold(0i64, i64::saturating_add)
        })
        .collect();
    sums.sort_unstable();
    let b = u64::from(resamples);
    let lo = (b * 25 / 1000) as usize;
    let hi = ((b * 975).div_ceil(1000)).saturating_sub(1) as usize;
    Some((sums[lo], sums[hi.min(sums.len() - 1)]))
}

/// The bootstrap interval of paired deltas in percentage points.
pub fn bootstrap_interval(deltas: &[i64], seed: u64, resamples: u32) -> Option<Interval> {
    let (lo, hi) = bootstrap_sums(deltas, seed, resamples)?;
    let n = deltas.len() as i128;
    Some(Interval {
        method: "percentile bootstrap over case pairs (splitmix64, unbiased draws), 95%".into(),
        seed,
        resamples,
        pairs: deltas.len() as u64,
        lower_pp: Ratio::new(i128::from(lo) * 100, n, 2)?,
        upper_pp: Ratio::new(i128::from(hi) * 100, n, 2)?,
    })
}

// ---------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------

/// The ledger head the report was computed at (the caller reads it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LedgerHead {
    /// Seq of the head record.
    pub head_seq: u64,
    /// Its hash, hex.
    pub head_hash: String,
}

/// Section 1: hypothesis, class, allowed claim, tolerances (CLASS-2, CLASS-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// The frozen hypothesis.
    pub hypothesis: String,
    /// The frozen run class.
    pub run_class: String,
    /// Tasks in the manifest.
    pub tasks: u64,
    /// Trial identities per task.
    pub trials_per_task: u64,
    /// N: predeclared case identities per evaluation group.
    pub cases_per_group: u64,
    /// What the class allows the report to claim (CLASS-2).
    pub allowed_claim: String,
    /// Claims this report refuses, and why (CLASS-5, VERDICT-2).
    pub refused_claims: Vec<String>,
    /// Quality tolerance, percentage points of official score.
    pub quality_tolerance_pp: String,
    /// Cost tolerance, percent of control's cost.
    pub cost_tolerance_pct: String,
    /// The frozen interval method (REPORT-4).
    pub interval_method: String,
    /// The frozen bootstrap seed.
    pub interval_seed: u64,
    /// The frozen bootstrap resample count.
    pub interval_resamples: u32,
}

/// Section 2: tuning or held-out (LINEAGE-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Role {
    /// `tuning` or `held_out`.
    pub role: String,
    /// Tasks learning may use (empty: all, for tuning).
    pub tuning_tasks: Vec<String>,
    /// Tasks held out from learning.
    pub held_out_tasks: Vec<String>,
    /// What the role means for the claim.
    pub note: String,
}

/// One frozen route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteLine {
    /// strong, balanced, economy.
    pub tier: String,
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Wire protocol.
    pub protocol: String,
    /// Credential class.
    pub credential_class: String,
}

/// One frozen price record (USD per million tokens = micro-USD per token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriceLine {
    /// `provider:model`.
    pub route: String,
    /// Credential class.
    pub credential_class: String,
    /// actual or notional.
    pub basis: String,
    /// Uncached input rate.
    pub uncached_input: String,
    /// Cache read rate, if any.
    pub cache_read: Option<String>,
    /// Cache write rate, if any.
    pub cache_write: Option<String>,
    /// Output rate (reasoning billed at it).
    pub output: String,
    /// Where the price comes from.
    pub source: String,
    /// Effective period.
    pub effective: String,
}

/// Section 3: the frozen tuple, hashes and topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frozen {
    /// Benchmark name and version.
    pub benchmark: String,
    /// Dataset repository and revision.
    pub dataset: String,
    /// Ordered target groups.
    pub groups: Vec<String>,
    /// Trial identities.
    pub trials: Vec<String>,
    /// Routes by tier.
    pub routes: Vec<RouteLine>,
    /// Price records.
    pub prices: Vec<PriceLine>,
    /// Pinned software and sources: (what, value).
    pub software: Vec<(String, String)>,
    /// Topology: (what, value).
    pub topology: Vec<(String, String)>,
    /// Limits: (what, value).
    pub limits: Vec<(String, String)>,
    /// Frozen hashes and keys: (what, hex).
    pub hashes: Vec<(String, String)>,
    /// Sign-offs: (role, name, seq).
    pub sign_offs: Vec<(String, String, u64)>,
    /// Seq of `manifest_frozen`.
    pub frozen_seq: u64,
}

/// An identity excluded from a comparison, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Excluded {
    /// `task/trial`.
    pub case: String,
    /// Why.
    pub why: String,
}

/// The exact case intersection of a round with its control (LINEAGE-9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntersectionLine {
    /// The round.
    pub round: String,
    /// Identities valid in both.
    pub included: u64,
    /// Predeclared identities of the round.
    pub predeclared: u64,
    /// Excluded identities and why.
    pub excluded: Vec<Excluded>,
}

/// Section 4: which control the rounds compare to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControlResolution {
    /// `lineage/control` compared against, if any.
    pub source: Option<String>,
    /// Whether it is reused from another lineage (LINEAGE-6).
    pub reused: bool,
    /// Seq of the reuse record.
    pub reuse_seq: Option<u64>,
    /// Its status (sealed, or as the log gives it now).
    pub status: String,
    /// Seq of its control-catalog registration.
    pub registered_seq: Option<u64>,
    /// Its registered artifact checksum.
    pub artifact_blake3: Option<String>,
    /// The control key (FREEZE-6).
    pub control_key: String,
    /// Per round: the exact intersection.
    pub intersections: Vec<IntersectionLine>,
}

/// The cost basis of every cost claim of the report (SETTLE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Basis {
    /// `series`, `frozen_prices` or `none`.
    pub kind: String,
    /// The series its amounts belong to (`actual`, `notional`, ...), if any.
    pub series: Option<String>,
    /// How the report names it.
    pub label: String,
    /// Why this basis (or why none).
    pub note: String,
}

/// The runnable-only score (REPORT-1), always with its denominator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runnable {
    /// |accepted|: terminal-valid original identities.
    pub accepted_cases: u64,
    /// Validated security-policy skips.
    pub skipped: u64,
    /// passed / |accepted| x 100.
    pub score_pct: Option<Ratio>,
}

/// Section 5: one row of the table of control and every predeclared round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// The group name in this lineage.
    pub group: String,
    /// `lineage/group` the numbers come from (a reused control's own).
    pub source: String,
    /// Sealed status, `unsealed (now X)`, `not_opened`.
    pub status: String,
    /// Seq of its seal.
    pub sealed_seq: Option<u64>,
    /// Sealed `accepted`.
    pub accepted: bool,
    /// Rejected or unsealed: shown as diagnostics, never in a claim (VERDICT-2).
    pub diagnostics_only: bool,
    /// Passed trials (reward 1).
    pub passed: u64,
    /// N: predeclared identities (the official denominator).
    pub total: u64,
    /// Official score, percent over N with skips as 0 (REPORT-1).
    pub score_pct: Option<Ratio>,
    /// Runnable-only score with its denominator.
    pub runnable: Runnable,
    /// Requests settled (T u U).
    pub requests: u64,
    /// Requests served by the strong route.
    pub strong_requests: u64,
    /// Cost on the report's basis (claims only when accepted).
    pub cost: Option<Money>,
    /// Cost per success, USD (REPORT-2).
    pub cost_per_success: Option<Ratio>,
    /// Comparable with its control (REPORT-2, REPORT-4); always false for control.
    pub comparable: bool,
    /// Why not comparable.
    pub not_comparable: Option<String>,
    /// Official score delta vs control, percentage points.
    pub score_delta_pp: Option<Ratio>,
    /// Cost delta vs control, percent.
    pub cost_delta_pct: Option<Ratio>,
    /// Strong-call delta vs control, percent.
    pub strong_call_delta_pct: Option<Ratio>,
}

/// One point of the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChartPoint {
    /// The group.
    pub group: String,
    /// `accepted`, `rejected` or `unsealed`.
    pub marker: String,
    /// Official score, percent.
    pub score_pct: Option<Ratio>,
    /// Cost on the basis (a diagnostic amount for rejected groups).
    pub cost: Option<Money>,
}

/// One case pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairLine {
    /// `task/trial`.
    pub case: String,
    /// q of control (1 passed, 0 not).
    pub control_q: u8,
    /// q of the round.
    pub round_q: u8,
    /// round_q - control_q.
    pub delta: i8,
}

/// Section 6: paired per-case deltas of a round (REPORT-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Paired {
    /// The round.
    pub round: String,
    /// Whether the round is accepted (else diagnostics only).
    pub diagnostics_only: bool,
    /// Case pairs on the exact intersection.
    pub pairs: u64,
    /// Pairs where the round passed and control did not.
    pub improved: u64,
    /// Pairs where control passed and the round did not.
    pub worsened: u64,
    /// Pairs with equal q.
    pub unchanged: u64,
    /// Mean delta, percentage points.
    pub mean_delta_pp: Option<Ratio>,
    /// The 95% bootstrap interval (replicated runs only).
    pub interval: Option<Interval>,
    /// Why there is no interval, or how it was computed.
    pub interval_note: String,
    /// Every pair.
    pub cases: Vec<PairLine>,
    /// Identities excluded from the pairs, and why.
    pub excluded: Vec<Excluded>,
}

/// Section 7: requests by tier and decision reason (REPORT-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionCounts {
    /// The group.
    pub group: String,
    /// Rejected or unsealed.
    pub diagnostics_only: bool,
    /// Requests (T u U).
    pub requests: u64,
    /// By the tier of the route that served it (usage provider/model).
    pub served_tier: BTreeMap<String, u64>,
    /// By the tier the policy selected.
    pub selected_tier: BTreeMap<String, u64>,
    /// By REPORT-5 category: exploration, learned_replacement,
    /// static_route, fallback, escalation, other, no_decision.
    pub by_category: BTreeMap<String, u64>,
    /// By the raw decision reason.
    pub by_reason: BTreeMap<String, u64>,
    /// Fallbacks seen only as served model != selected model.
    pub fallback_model_mismatch: u64,
}

/// Token buckets and charges of one served route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteUsage {
    /// `provider:model`, or `(no usage row)`.
    pub route: String,
    /// Its frozen tier, or `unresolved`.
    pub tier: String,
    /// Requests.
    pub requests: u64,
    /// Uncached input tokens.
    pub uncached_input_tokens: u64,
    /// Cache read tokens.
    pub cache_read_tokens: u64,
    /// Cache write tokens.
    pub cache_write_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Reasoning tokens (billed at the output rate).
    pub reasoning_tokens: u64,
    /// Charges by series, never summed.
    pub series: BTreeMap<String, Money>,
    /// Requests without an amount (pending, unknown, unpriced).
    pub incomplete: u64,
}

/// One gate row as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowLine {
    /// The gate.
    pub gate: String,
    /// Holds.
    pub holds: bool,
    /// Its evidence text.
    pub evidence: String,
}

/// Section 8: four-bucket settlement and join audit of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettlementAudit {
    /// The group.
    pub group: String,
    /// Rejected or unsealed.
    pub diagnostics_only: bool,
    /// Requests by settlement state.
    pub states: BTreeMap<String, u64>,
    /// Amounts by series (SETTLE-6), never summed.
    pub series: BTreeMap<String, Money>,
    /// Requests in the incomplete series (pending, unknown).
    pub incomplete_requests: u64,
    /// Requests without a frozen-price recomputation.
    pub unpriced_requests: u64,
    /// Usage x the frozen price snapshot, when every request has it.
    pub frozen_price_total: Option<Money>,
    /// By served route.
    pub routes: Vec<RouteUsage>,
    /// |T|, |U|, |D|, |R| (traces, usage rows, decisions, request
    /// outcomes), in that order.
    pub sets: Vec<(String, u64)>,
    /// The join and settlement rows of the verdict.
    pub rows: Vec<RowLine>,
}

/// Section 9: runtime, provider, retry, concurrency and cleanup evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeEvidence {
    /// The group (canaries included).
    pub group: String,
    /// Its status.
    pub status: String,
    /// Case identities by state.
    pub cases: BTreeMap<String, u64>,
    /// `replacement-01` identities started.
    pub replacements_started: u64,
    /// Validated skips.
    pub skipped: u64,
    /// Traces by non-2xx HTTP status.
    pub http_non_2xx: BTreeMap<String, u64>,
    /// Traces `failed`.
    pub traces_failed: u64,
    /// Traces `client_cancelled`.
    pub traces_cancelled: u64,
    /// Usage rows `failed`.
    pub usage_failed: u64,
    /// Latency evidence.
    pub latency: String,
    /// Harbor retries (frozen; CASE-5).
    pub harbor_retries: u32,
    /// Frozen concurrency.
    pub concurrency: u64,
    /// Highest sampled sandbox count.
    pub monitor_peak: Option<u64>,
    /// Monitor samples.
    pub monitor_samples: u64,
    /// The cleanup row.
    pub cleanup: RowLine,
    /// Failing gate rows.
    pub failing_rows: Vec<String>,
}

/// A steady-state row (REPORT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SteadyRow {
    /// The round.
    pub round: String,
    /// Its cost on the basis.
    pub cost: Option<Money>,
    /// Control's cost on the basis.
    pub control: Option<Money>,
    /// Cost delta %.
    pub delta_pct: Option<Ratio>,
    /// Why no delta.
    pub note: Option<String>,
}

/// A cumulative lifecycle row through a round (REPORT-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CumulativeRow {
    /// Through this round.
    pub through: String,
    /// The row, when every round through it is comparable.
    pub row: Option<Cumulative>,
    /// Why not.
    pub note: Option<String>,
}

/// Section 10: steady-state and cumulative economics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Economics {
    /// The basis label.
    pub basis: String,
    /// One per round.
    pub steady: Vec<SteadyRow>,
    /// Through each round.
    pub cumulative: Vec<CumulativeRow>,
}

/// A failed, invalid or unfinished case attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedCase {
    /// The group.
    pub group: String,
    /// The identity.
    pub case: String,
    /// Its state.
    pub status: String,
    /// Why, as recorded.
    pub why: String,
}

/// A validated security-policy skip (REPORT-1, CASE-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkipLine {
    /// The group.
    pub group: String,
    /// The original identity.
    pub case: String,
    /// The shared class.
    pub class: String,
    /// Both evidence hashes (original, replacement-01).
    pub evidence_blake3: Vec<String>,
    /// The cost of both failed attempts.
    pub failed_attempts_cost: String,
}

/// The time between control and a round (stale controls show here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeGap {
    /// The round.
    pub round: String,
    /// Seq of the control's seal.
    pub control_sealed_seq: u64,
    /// Seq of the round's daemon start.
    pub round_opened_seq: u64,
    /// recorded_at(round opened) - recorded_at(control sealed), ns.
    pub gap_ns: i64,
    /// The same, as text.
    pub text: String,
}

/// A group shown as diagnostics (VERDICT-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The group.
    pub group: String,
    /// Its status.
    pub status: String,
    /// Its failing rows.
    pub failing: Vec<RowLine>,
}

/// Section 11: failures, limitations and the control-to-policy time gap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failures {
    /// Rejected or unsealed groups.
    pub diagnostics: Vec<Diagnostic>,
    /// Predeclared groups never opened (they count 0 of N).
    pub not_opened: Vec<String>,
    /// Every case attempt that is not terminal-valid.
    pub failed_cases: Vec<FailedCase>,
    /// Validated skips.
    pub skips: Vec<SkipLine>,
    /// The lineage's hard stop: (seq, rule, reason).
    pub stopped: Option<(u64, String, String)>,
    /// Control-to-round time gaps.
    pub time_gaps: Vec<TimeGap>,
    /// What the evidence cannot show.
    pub limitations: Vec<String>,
}

/// The go/no-go checks of one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoundCheck {
    /// The round.
    pub round: String,
    /// Accepted and comparable with control.
    pub comparable: bool,
    /// Official score delta within the quality tolerance.
    pub quality_within: Option<bool>,
    /// Cost delta within the cost tolerance.
    pub cost_within: Option<bool>,
    /// Cumulative cost delta through this round within the cost tolerance.
    pub cumulative_cost_within: Option<bool>,
}

/// Section 12: the go/no-go line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoNoGo {
    /// `GO`, `NO-GO` or `UNDECIDED`.
    pub decision: String,
    /// The one line.
    pub line: String,
    /// The rule applied.
    pub rule: String,
    /// Per round.
    pub rounds: Vec<RoundCheck>,
    /// Why not GO.
    pub reasons: Vec<String>,
}

/// Section 12: artifact and ledger checksums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checksums {
    /// The ledger head the report was computed at.
    pub ledger: LedgerHead,
    /// (what, hex).
    pub hashes: Vec<(String, String)>,
    /// Sealed verdicts: (group, seq, status).
    pub sealed: Vec<(String, u64, String)>,
}

/// The report of one lineage: the twelve sections of REPORT-6 in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// [`REPORT_FORMAT`].
    pub format: String,
    /// The lineage.
    pub lineage: String,
    /// The projection version that computed the verdicts.
    pub projection_version: u32,
    /// 1. Hypothesis, class, allowed claim, tolerances.
    pub claim: Claim,
    /// 2. Tuning/held-out role.
    pub role: Role,
    /// 3. The frozen tuple, hashes and topology.
    pub frozen: Frozen,
    /// 4. Control resolution and case intersection.
    pub control: ControlResolution,
    /// The cost basis of 5 and 10.
    pub basis: Basis,
    /// 5. Control and every predeclared round.
    pub groups: Vec<GroupRow>,
    /// 5. The chart's points.
    pub chart: Vec<ChartPoint>,
    /// 6. Paired per-case deltas.
    pub paired: Vec<Paired>,
    /// 7. Decisions by tier and reason.
    pub decisions: Vec<DecisionCounts>,
    /// 8. Four-bucket settlement and join audit.
    pub settlement: Vec<SettlementAudit>,
    /// 9. Runtime/provider/retry/concurrency/cleanup evidence.
    pub runtime: Vec<RuntimeEvidence>,
    /// 10. Steady-state and cumulative economics.
    pub economics: Economics,
    /// 11. Failures, limitations and the time gap.
    pub failures: Failures,
    /// 12. Go/no-go.
    pub go_no_go: GoNoGo,
    /// 12. Artifact and ledger checksums.
    pub checksums: Checksums,
}

// ---------------------------------------------------------------------------
// Building the report from the projections
// ---------------------------------------------------------------------------

fn class_name(c: RunClass) -> &'static str {
    match c {
        RunClass::Canary => "canary",
        RunClass::MechanismIteration => "mechanism_iteration",
        RunClass::ReplicatedExperiment => "replicated_experiment",
        RunClass::PublicReproduction => "public_reproduction",
    }
}

fn series_name(s: Series) -> &'static str {
    match s {
        Series::Actual => "actual",
        Series::Notional => "notional",
        Series::SubscriptionCounterfactual => "subscription_counterfactual",
        Series::Incomplete => "incomplete",
    }
}

fn state_name(s: SettlementState) -> &'static str {
    match s {
        SettlementState::Computed => "computed",
        SettlementState::NotCharged => "not_charged",
        SettlementState::Pending => "pending",
        SettlementState::Unknown => "unknown",
    }
}

fn case_status_name(s: CaseStatus) -> &'static str {
    match s {
        CaseStatus::NotStarted => "not_started",
        CaseStatus::Started => "started",
        CaseStatus::TerminalValid => "terminal_valid",
        CaseStatus::TerminalInvalid => "terminal_invalid",
    }
}

fn tier_text(t: Option<Tier>) -> String {
    t.map_or("unresolved".to_string(), |t| {
        verdict::tier_name(t).to_string()
    })
}

fn snake<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|x| x.as_str().map(String::from))
        .unwrap_or_else(|| "?".into())
}

/// The REPORT-5 category of a BitRouter decision reason
/// (bitrouter-formats section 3): `static_table` is the operator-authored
/// static route, `exploration_trial` exploration (learning cost),
/// `exploration_locked` a learned replacement, `adequacy_pin` and
/// `progress_guard` escalation, `reliability_*` fallback. Everything else
/// (`tool_guardrail`, `continuation_pin`, `no_match`, ...) is `other`. A
/// served model that differs from the selected one is a fallback whatever
/// the reason (see [`decision_counts`]).
pub fn category(reason: &str) -> &'static str {
    match reason {
        "static_table" => "static_route",
        "exploration_trial" => "exploration",
        "exploration_locked" => "learned_replacement",
        "adequacy_pin" | "progress_guard" => "escalation",
        r if r.starts_with("reliability_") => "fallback",
        _ => "other",
    }
}

/// Whether a case line passed: terminal-valid original with reward 1.
fn passed(c: &verdict::CaseLine) -> bool {
    c.case.replacement == 0
        && c.status == CaseStatus::TerminalValid
        && c.reward
            .as_deref()
            .and_then(|r| Dec::parse(r).ok())
            .is_some_and(|r| r == Dec::from(1u64))
}

/// A group of the lineage with its verdict (a reused control resolves to
/// the lineage that ran it).
struct Eval<'a> {
    name: String,
    src: Option<&'a LineageState>,
    src_group: String,
    reused: bool,
    g: Option<&'a GroupState>,
    v: Option<Verdict>,
    /// (seq, utc ns, status)
    sealed: Option<(u64, u64, String)>,
    /// (seq, utc ns)
    opened: Option<(u64, u64)>,
}

impl Eval<'_> {
    fn accepted(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|(_, _, s)| verdict::VerdictStatus::Accepted.is(s))
    }

    fn rejected(&self) -> bool {
        self.sealed
            .as_ref()
            .is_some_and(|(_, _, s)| !verdict::VerdictStatus::Accepted.is(s))
    }

    fn source(&self) -> String {
        match self.src {
            Some(l) => format!("{}/{}", l.frozen.lineage, self.src_group),
            None => format!("(missing)/{}", self.src_group),
        }
    }

    fn status(&self) -> String {
        match (&self.sealed, &self.v) {
            (Some((_, _, s)), _) => s.clone(),
            (None, Some(v)) => format!("unsealed (now {})", v.status),
            (None, None) if self.src.is_none() => "reused control not in this ledger".into(),
            (None, None) => "not_opened".into(),
        }
    }
}

fn eval<'a>(state: &'a State, l: &'a LineageState, name: &str) -> Eval<'a> {
    let (src, src_group, reused) = match (&l.control_reused, name) {
        (Some((_, r)), "control") => (
            state.lineages.get(&r.control.lineage),
            r.control.group.clone(),
            true,
        ),
        _ => (Some(l), name.to_string(), false),
    };
    let g = src.and_then(|s| s.groups.get(&src_group));
    let v = match (src, g) {
        (Some(s), Some(_)) => Some(verdict::group_verdict(state, s, &src_group)),
        _ => None,
    };
    Eval {
        name: name.to_string(),
        src,
        src_group,
        reused,
        g,
        v,
        sealed: g
            .and_then(|g| g.sealed.as_ref())
            .map(|(at, s)| (at.seq, at.utc_ns, s.status.clone())),
        opened: g
            .and_then(|g| g.opened.as_ref())
            .map(|(at, _)| (at.seq, at.utc_ns)),
    }
}

/// Which series a group's amounts belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Single {
    /// No request with an amount.
    Empty,
    /// Every amount in one series.
    One(Series),
    /// Amounts in several series.
    Mixed,
}

/// A group's settlement reduced to what the cost claims need.
#[derive(Debug, Clone)]
struct CostSummary {
    series: BTreeMap<Series, u64>,
    states: BTreeMap<String, u64>,
    incomplete: u64,
    unpriced: u64,
    frozen: Option<u64>,
    single: Single,
    subscription: bool,
    strong: u64,
    requests: u64,
}

fn cost_summary(v: &Verdict) -> CostSummary {
    let s = &v.settlement;
    let mut states = BTreeMap::new();
    for (k, n) in &s.states {
        states.insert(state_name(*k).to_string(), *n);
    }
    let charged: BTreeSet<Series> = s
        .requests
        .iter()
        .filter(|r| r.state.accepted() && r.charge_micro_usd.is_some_and(|c| c > 0))
        .map(|r| r.series)
        .collect();
    let charged = if charged.is_empty() {
        s.requests
            .iter()
            .filter(|r| r.state.accepted())
            .map(|r| r.series)
            .collect()
    } else {
        charged
    };
    let single = match charged.len() {
        0 => Single::Empty,
        1 => Single::One(*charged.iter().next().expect("one")),
        _ => Single::Mixed,
    };
    let frozen = s
        .requests
        .iter()
        .map(|r| r.recomputed_micro_usd)
        .try_fold(0u64, |acc, x| x.map(|x| acc.saturating_add(x)));
    CostSummary {
        series: s.series_micro_usd.clone(),
        states,
        incomplete: s
            .requests
            .iter()
            .filter(|r| r.series == Series::Incomplete)
            .count() as u64,
        unpriced: s
            .requests
            .iter()
            .filter(|r| r.recomputed_micro_usd.is_none())
            .count() as u64,
        frozen,
        single,
        subscription: s
            .requests
            .iter()
            .any(|r| r.series == Series::SubscriptionCounterfactual),
        strong: s
            .requests
            .iter()
            .filter(|r| r.tier == Some(Tier::Strong))
            .count() as u64,
        requests: s.requests.len() as u64,
    }
}

/// The chosen basis (internal form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BasisKind {
    Series(Series),
    Frozen,
    None,
}

fn choose_basis(compared: &[(&str, &CostSummary)]) -> (BasisKind, Basis) {
    let none = |note: String| {
        (
            BasisKind::None,
            Basis {
                kind: "none".into(),
                series: None,
                label: "no common cost basis".into(),
                note,
            },
        )
    };
    if compared.is_empty() {
        return none("No accepted evaluation group to compare.".into());
    }
    if let Some((g, _)) = compared.iter().find(|(_, c)| c.incomplete > 0) {
        return none(format!(
            "Group {g} has requests without an amount (pending/unknown)."
        ));
    }
    let singles: BTreeSet<Option<Series>> = compared
        .iter()
        .filter(|(_, c)| c.single != Single::Empty)
        .map(|(_, c)| match c.single {
            Single::One(s) => Some(s),
            _ => None,
        })
        .collect();
    if singles.len() == 1 {
        if let Some(Some(s)) = singles.iter().next() {
            return (
                BasisKind::Series(*s),
                Basis {
                    kind: "series".into(),
                    series: Some(series_name(*s).into()),
                    label: format!("the {} series", series_name(*s)),
                    note: format!(
                        "Every charged request of every compared group is in the {} series (SETTLE-6).",
                        series_name(*s)
                    ),
                },
            );
        }
    }
    let described: Vec<String> = compared
        .iter()
        .map(|(g, c)| {
            let s = match c.single {
                Single::Empty => "no charges".to_string(),
                Single::One(s) => series_name(s).to_string(),
                Single::Mixed => "mixed series".to_string(),
            };
            format!("{g} {s}")
        })
        .collect();
    if compared
        .iter()
        .all(|(_, c)| c.frozen.is_some() && !c.subscription)
    {
        return (
            BasisKind::Frozen,
            Basis {
                kind: "frozen_prices".into(),
                series: Some("notional".into()),
                label: "notional at the frozen price snapshot (usage x frozen prices)".into(),
                note: format!(
                    "The compared groups' charges are in different series ({}), which are never added or compared (SETTLE-6); every request of every compared group has a recomputation from its archived four buckets at the frozen price snapshot (SETTLE-2/3, as repricing does, SETTLE-7), so costs are compared on that notional basis: not cash spent.",
                    described.join(", ")
                ),
            },
        );
    }
    none(format!(
        "The compared groups' charges are in different series ({}) and not every request has a frozen-price recomputation.",
        described.join(", ")
    ))
}

fn cost_on(basis: BasisKind, c: &CostSummary) -> Option<u64> {
    if c.incomplete > 0 {
        return None;
    }
    match basis {
        BasisKind::Series(s) => match c.single {
            Single::Empty => Some(0),
            Single::One(x) if x == s => Some(c.series.get(&s).copied().unwrap_or(0)),
            _ => None,
        },
        BasisKind::Frozen => c.frozen,
        BasisKind::None => None,
    }
}

fn money_map(m: &BTreeMap<Series, u64>) -> BTreeMap<String, Money> {
    m.iter()
        .map(|(s, v)| (series_name(*s).to_string(), Money::new(*v)))
        .collect()
}

fn row_line(r: &crate::schema::events::GateRow) -> RowLine {
    RowLine {
        gate: r.gate.clone(),
        holds: r.holds,
        evidence: r.evidence.clone(),
    }
}

fn allowed_claim(m: &ManifestFile) -> String {
    let tasks = m.cases.tasks.len();
    let trials = m.cases.trials.len();
    match m.run.class {
        RunClass::Canary => "canary (non-evaluation): the path works end to end; nothing about quality or cost (CLASS-2)".into(),
        RunClass::MechanismIteration => format!(
            "mechanism iteration ({tasks} predeclared tasks x {trials} trial): evidence that the routing mechanism works on these tasks, never a public score (CLASS-2)"
        ),
        RunClass::ReplicatedExperiment => format!(
            "replicated experiment ({tasks} tasks x {trials} trials): paired per-case deltas with the predeclared 95% interval on these tasks; not a reproducible Terminal-Bench result, which only the full 89 x 5 run is (CLASS-2)"
        ),
        RunClass::PublicReproduction => format!(
            "public reproduction ({tasks} tasks x {trials} trials): a reproducible Terminal-Bench {} result; the official score is over N = {} with skips as 0 (CLASS-2, REPORT-1)",
            m.benchmark.version,
            tasks * trials
        ),
    }
}

/// The excluded identities of an intersection (states in snake_case, as
/// everywhere else in the report).
fn excluded_of(i: &verdict::Intersection) -> Vec<Excluded> {
    i.excluded
        .iter()
        .map(|(c, w)| Excluded {
            case: c.clone(),
            why: w.clone(),
        })
        .collect()
}

/// Section 7 for one group (REPORT-5).
fn decision_counts(name: &str, diag: bool, g: &GroupState, v: &Verdict) -> DecisionCounts {
    let mut out = DecisionCounts {
        group: name.to_string(),
        diagnostics_only: diag,
        requests: v.settlement.requests.len() as u64,
        served_tier: BTreeMap::new(),
        selected_tier: BTreeMap::new(),
        by_category: BTreeMap::new(),
        by_reason: BTreeMap::new(),
        fallback_model_mismatch: 0,
    };
    for r in &v.settlement.requests {
        *out.served_tier.entry(tier_text(r.tier)).or_default() += 1;
        let d = v
            .joins
            .decision_of
            .get(&r.request_id)
            .and_then(|ix| ix.first())
            .and_then(|i| g.decisions.get(*i))
            .map(|(_, d)| d);
        let Some(d) = d else {
            *out.by_category.entry("no_decision".into()).or_default() += 1;
            continue;
        };
        *out.by_reason.entry(d.reason.to_string()).or_default() += 1;
        *out.selected_tier
            .entry(d.selected_tier.as_deref().unwrap_or("none").to_string())
            .or_default() += 1;
        let mismatch = match (&d.selected_model, &r.provider_model) {
            (Some(sel), Some((_, model))) => !verdict::names_model(sel, model),
            _ => false,
        };
        let cat = if mismatch {
            out.fallback_model_mismatch += 1;
            "fallback"
        } else {
            category(&d.reason)
        };
        *out.by_category.entry(cat.into()).or_default() += 1;
    }
    out
}

/// Section 8 for one group.
fn settlement_audit(name: &str, diag: bool, v: &Verdict, c: &CostSummary) -> SettlementAudit {
    let mut routes: BTreeMap<(String, String), RouteUsage> = BTreeMap::new();
    for r in &v.settlement.requests {
        let route = r
            .provider_model
            .as_ref()
            .map_or("(no usage row)".to_string(), |(p, m)| format!("{p}:{m}"));
        let tier = tier_text(r.tier);
        let e = routes
            .entry((tier.clone(), route.clone()))
            .or_insert_with(|| RouteUsage {
                route,
                tier,
                requests: 0,
                uncached_input_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 0,
                reasoning_tokens: 0,
                series: BTreeMap::new(),
                incomplete: 0,
            });
        e.requests += 1;
        if let Some(b) = &r.buckets {
            e.uncached_input_tokens = e
                .uncached_input_tokens
                .saturating_add(b.uncached_input_tokens);
            e.cache_read_tokens = e.cache_read_tokens.saturating_add(b.cache_read_tokens);
            e.cache_write_tokens = e.cache_write_tokens.saturating_add(b.cache_write_tokens);
            e.output_tokens = e.output_tokens.saturating_add(b.output_tokens);
            e.reasoning_tokens = e.reasoning_tokens.saturating_add(b.reasoning_tokens);
        }
        match r.charge_micro_usd {
            Some(ch) if r.series != Series::Incomplete => {
                let m = e
                    .series
                    .entry(series_name(r.series).to_string())
                    .or_insert_with(|| Money::new(0));
                *m = Money::new(m.micro_usd.saturating_add(ch));
            }
            _ => e.incomplete += 1,
        }
    }
    let j = &v.joins;
    let sets = vec![
        ("T".to_string(), j.traces as u64),
        ("U".to_string(), j.usage as u64),
        ("D".to_string(), j.decisions as u64),
        ("R".to_string(), j.outcomes as u64),
    ];
    SettlementAudit {
        group: name.to_string(),
        diagnostics_only: diag,
        states: c.states.clone(),
        series: money_map(&c.series),
        incomplete_requests: c.incomplete,
        unpriced_requests: c.unpriced,
        frozen_price_total: c.frozen.map(Money::new),
        routes: routes.into_values().collect(),
        sets,
        rows: v
            .rows
            .iter()
            .filter(|r| {
                matches!(
                    r.gate.as_str(),
                    "requests"
                        | "decisions"
                        | "cost join"
                        | "reward join"
                        | "replay"
                        | "settlement"
                )
            })
            .map(row_line)
            .collect(),
    }
}

/// Section 9 for one group.
fn runtime_evidence(e: &Eval<'_>, m: &ManifestFile) -> Option<RuntimeEvidence> {
    let (g, v) = (e.g?, e.v.as_ref()?);
    let mut cases = BTreeMap::new();
    let mut replacements = 0;
    for c in &v.cases {
        *cases
            .entry(case_status_name(c.status).to_string())
            .or_default() += 1;
        if c.case.replacement > 0 && c.starts > 0 {
            replacements += 1;
        }
    }
    let (mut non2xx, mut failed, mut cancelled, mut usage_failed) = (BTreeMap::new(), 0, 0, 0);
    for r in g.requests.values() {
        for (_, t) in &r.traces {
            if !(200..300).contains(&t.http_status) {
                *non2xx.entry(t.http_status.to_string()).or_default() += 1;
            }
            match t.status {
                crate::schema::events::TraceStatus::Failed => failed += 1,
                crate::schema::events::TraceStatus::ClientCancelled => cancelled += 1,
                crate::schema::events::TraceStatus::Completed => {}
            }
        }
        for (_, u) in &r.usage {
            if u.status.as_deref() == Some("failed") {
                usage_failed += 1;
            }
        }
    }
    let cleanup = v
        .rows
        .iter()
        .find(|r| r.gate == "cleanup")
        .map(row_line)
        .unwrap_or(RowLine {
            gate: "cleanup".into(),
            holds: false,
            evidence: "no cleanup row".into(),
        });
    Some(RuntimeEvidence {
        group: e.name.clone(),
        status: e.status(),
        cases,
        replacements_started: replacements,
        skipped: v.skipped_security_policy.len() as u64,
        http_non_2xx: non2xx,
        traces_failed: failed,
        traces_cancelled: cancelled,
        usage_failed,
        latency: "not in the evidence (BitRouter traces carry no latency; it lives only in the daemon's SQLite)".into(),
        harbor_retries: m.harbor.retries,
        concurrency: v.cleanup.concurrency,
        monitor_peak: v.cleanup.monitor_peak,
        monitor_samples: g.monitor_samples,
        cleanup,
        failing_rows: v.failing().iter().map(|r| r.gate.clone()).collect(),
    })
}

/// Why a case is not terminal-valid, from its recorded evidence.
fn why_failed(g: &GroupState, c: &verdict::CaseLine, skipped: &BTreeSet<CaseRef>) -> String {
    let original = CaseRef {
        replacement: 0,
        ..c.case.clone()
    };
    let mut why = Vec::new();
    if skipped.contains(&original) {
        why.push("validated security-policy skip (CASE-6), counts 0".to_string());
    }
    if let Some(cs) = g.cases.get(&c.case) {
        if let Some((at, inv)) = &cs.invalidated {
            why.push(format!(
                "invalidated at seq {}: {}",
                at.seq,
                snake(&inv.reason)
            ));
        }
        if let Some((at, r)) = &cs.result {
            if let Some(x) = &r.exception_type {
                why.push(format!("TrialResult at seq {} raised {x}", at.seq));
            }
            if r.rewards.as_ref().is_none_or(|m| m.is_empty()) {
                why.push(format!("TrialResult at seq {} has no reward", at.seq));
            }
        }
        for (at, r) in &cs.refusals {
            why.push(format!(
                "HTTP {} {} evidence at seq {}",
                r.http_status,
                snake(&r.class),
                at.seq
            ));
        }
    }
    match c.status {
        CaseStatus::NotStarted => why.push("never started".into()),
        CaseStatus::Started => why.push("started, no terminal evidence".into()),
        _ => {}
    }
    if c.starts > 1 {
        why.push(format!("started {} times", c.starts));
    }
    if why.is_empty() {
        why.push("no valid TrialResult".into());
    }
    why.join("; ")
}

/// The report of `lineage` (or the only lineage) as the state gives it,
/// computed at the ledger head `head` (which the caller read with the
/// state). Pure.
pub fn build(state: &State, lineage: Option<&str>, head: LedgerHead) -> Result<Report> {
    let l = state.lineage(lineage)?;
    let m = &l.frozen.manifest.public;
    let label = l.frozen.lineage.clone();
    let names = m.group_names();
    let evals: Vec<Eval<'_>> = names.iter().map(|n| eval(state, l, n)).collect();
    let eval_groups: Vec<&Eval<'_>> = evals
        .iter()
        .filter(|e| !is_non_evaluation(&e.name))
        .collect();
    let control = eval_groups.iter().copied().find(|e| e.name == "control");
    let rounds: Vec<&Eval<'_>> = eval_groups
        .iter()
        .copied()
        .filter(|e| e.name != "control")
        .collect();
    let summaries: BTreeMap<String, CostSummary> = evals
        .iter()
        .filter_map(|e| e.v.as_ref().map(|v| (e.name.clone(), cost_summary(v))))
        .collect();
    let n_cases = (m.cases.tasks.len() * m.cases.trials.len()) as u64;
    let tol_q = m.method.quality_tolerance_pct;
    let tol_c = m.method.cost_tolerance_pct;

    // The basis: over the accepted evaluation groups.
    let compared: Vec<(&str, &CostSummary)> = eval_groups
        .iter()
        .filter(|e| e.accepted())
        .filter_map(|e| summaries.get(&e.name).map(|c| (e.name.as_str(), c)))
        .collect();
    let (basis_kind, basis) = choose_basis(&compared);
    let cost_of = |e: &Eval<'_>| summaries.get(&e.name).and_then(|c| cost_on(basis_kind, c));

    // Section 4: control resolution and intersections.
    let intersections: BTreeMap<String, verdict::Intersection> = rounds
        .iter()
        .filter(|r| r.g.is_some())
        .map(|r| (r.name.clone(), verdict::intersection(state, l, &r.name)))
        .collect();
    let registration = control.and_then(|c| {
        let src = c.src?;
        state
            .controls
            .get(&src.frozen.control_key)?
            .iter()
            .find(|(_, r)| r.group.lineage == src.frozen.lineage && r.group.group == c.src_group)
            .map(|(at, r)| (at.seq, r.artifact_blake3.clone()))
    });
    let control_res = ControlResolution {
        source: control.map(|c| c.source()),
        reused: control.is_some_and(|c| c.reused),
        reuse_seq: l.control_reused.as_ref().map(|(at, _)| at.seq),
        status: control.map_or("no control in the target list".into(), |c| c.status()),
        registered_seq: registration.as_ref().map(|(s, _)| *s),
        artifact_blake3: registration.map(|(_, a)| a),
        control_key: l.frozen.control_key.clone(),
        intersections: rounds
            .iter()
            .filter_map(|r| {
                let i = intersections.get(&r.name)?;
                Some(IntersectionLine {
                    round: r.name.clone(),
                    included: i.included.len() as u64,
                    predeclared: (i.included.len() + i.excluded.len()) as u64,
                    excluded: excluded_of(i),
                })
            })
            .collect(),
    };

    // Section 5: the table.
    let control_cost = control.and_then(|c| c.accepted().then(|| cost_of(c)).flatten());
    let control_summary = control.and_then(|c| summaries.get(&c.name));
    let mut groups = Vec::new();
    for e in &eval_groups {
        let v = e.v.as_ref();
        let c = summaries.get(&e.name);
        let passed = v.map_or(0, |v| v.passed);
        let total = v.map_or(n_cases, |v| v.total);
        let accepted_cases = v.map_or(0, |v| {
            v.cases
                .iter()
                .filter(|c| c.case.replacement == 0 && c.status == CaseStatus::TerminalValid)
                .count() as u64
        });
        let cost = if e.accepted() { cost_of(e) } else { None };
        let mut row = GroupRow {
            group: e.name.clone(),
            source: e.source(),
            status: e.status(),
            sealed_seq: e.sealed.as_ref().map(|(s, _, _)| *s),
            accepted: e.accepted(),
            diagnostics_only: !e.accepted(),
            passed,
            total,
            score_pct: v.and_then(|_| score_pct(passed, total)),
            runnable: Runnable {
                accepted_cases,
                skipped: v.map_or(0, |v| v.skipped_security_policy.len() as u64),
                score_pct: score_pct(passed, accepted_cases),
            },
            requests: c.map_or(0, |c| c.requests),
            strong_requests: c.map_or(0, |c| c.strong),
            cost: cost.map(Money::new),
            cost_per_success: cost.and_then(|c| cost_per_success(c, passed)),
            comparable: false,
            not_comparable: None,
            score_delta_pp: None,
            cost_delta_pct: None,
            strong_call_delta_pct: None,
        };
        if e.name != "control" {
            let why = match control {
                None => Some("no control".to_string()),
                Some(ctl) if !ctl.accepted() => Some(format!("control is {}", ctl.status())),
                Some(_) if !e.accepted() => Some(format!("{} is {}", e.name, e.status())),
                Some(_) => {
                    let excluded = intersections.get(&e.name).map_or(0, |i| i.excluded.len());
                    if excluded > 0 {
                        Some(format!(
                            "{excluded} {} not valid in both groups: not the same identities (REPORT-2, REPORT-4)",
                            if excluded == 1 { "identity is" } else { "identities are" }
                        ))
                    } else if cost.is_none() || control_cost.is_none() {
                        Some(format!("no cost on the basis ({})", basis.label))
                    } else if control_cost == Some(0) {
                        Some("control cost is zero".to_string())
                    } else {
                        None
                    }
                }
            };
            if let Some(ctl) = control.filter(|c| c.accepted()) {
                if e.accepted() {
                    let cv = ctl.v.as_ref();
                    row.score_delta_pp = score_delta_pp(
                        passed,
                        total,
                        cv.map_or(0, |v| v.passed),
                        cv.map_or(n_cases, |v| v.total),
                    );
                }
            }
            row.comparable = why.is_none();
            row.not_comparable = why;
            if row.comparable {
                let (cr, cc) = (cost.unwrap_or(0), control_cost.unwrap_or(0));
                row.cost_delta_pct = delta_pct(cr, cc);
                if let Some(cs) = control_summary {
                    row.strong_call_delta_pct = delta_pct(row.strong_requests, cs.strong);
                }
            }
        }
        groups.push(row);
    }
    let chart = eval_groups
        .iter()
        .filter(|e| e.v.is_some())
        .map(|e| {
            let v = e.v.as_ref().expect("filtered");
            ChartPoint {
                group: e.name.clone(),
                marker: if e.accepted() {
                    "accepted"
                } else if e.rejected() {
                    "rejected"
                } else {
                    "unsealed"
                }
                .into(),
                score_pct: score_pct(v.passed, v.total),
                cost: cost_of(e).map(Money::new),
            }
        })
        .collect();

    // Section 6: paired per-case deltas.
    let replicated = m.cases.trials.len() >= crate::schema::manifest::REPLICATED_TRIALS_MIN;
    let q_of = |e: &Eval<'_>| -> BTreeMap<String, u8> {
        e.v.as_ref().map_or_else(BTreeMap::new, |v| {
            v.cases
                .iter()
                .filter(|c| c.case.replacement == 0)
                .map(|c| (c.case.label(), u8::from(passed(c))))
                .collect()
        })
    };
    let control_q = control.map(q_of).unwrap_or_default();
    let mut paired = Vec::new();
    for r in &rounds {
        let Some(i) = intersections.get(&r.name) else {
            continue;
        };
        let rq = q_of(r);
        let cases: Vec<PairLine> = i
            .included
            .iter()
            .map(|c| {
                let (a, b) = (
                    control_q.get(c).copied().unwrap_or(0),
                    rq.get(c).copied().unwrap_or(0),
                );
                PairLine {
                    case: c.clone(),
                    control_q: a,
                    round_q: b,
                    delta: b as i8 - a as i8,
                }
            })
            .collect();
        let deltas: Vec<i64> = cases.iter().map(|c| i64::from(c.delta)).collect();
        let n = deltas.len() as i128;
        let sum: i128 = deltas.iter().map(|d| i128::from(*d)).sum();
        let usable = r.accepted() && control.is_some_and(|c| c.accepted());
        let (interval, interval_note) = if !replicated {
            (
                None,
                format!(
                    "{} trial per case: no interval; the deltas are mechanism evidence and requests are not samples (REPORT-4)",
                    m.cases.trials.len()
                ),
            )
        } else if !usable {
            (
                None,
                "no interval: the round or its control is not accepted (VERDICT-2)".into(),
            )
        } else if m.method.interval_resamples == 0 {
            (None, "no interval: the manifest froze 0 resamples".into())
        } else {
            match bootstrap_interval(&deltas, m.method.interval_seed, m.method.interval_resamples) {
                Some(iv) => {
                    let note = format!(
                        "95% percentile bootstrap over {} case pairs, seed {}, {} resamples (frozen method: {})",
                        iv.pairs, iv.seed, iv.resamples, m.method.interval_method
                    );
                    (Some(iv), note)
                }
                None => (None, "no interval: no case pairs".into()),
            }
        };
        paired.push(Paired {
            round: r.name.clone(),
            diagnostics_only: !usable,
            pairs: cases.len() as u64,
            improved: cases.iter().filter(|c| c.delta > 0).count() as u64,
            worsened: cases.iter().filter(|c| c.delta < 0).count() as u64,
            unchanged: cases.iter().filter(|c| c.delta == 0).count() as u64,
            mean_delta_pp: Ratio::new(sum * 100, n, 2),
            interval,
            interval_note,
            cases,
            excluded: excluded_of(i),
        });
    }

    // Sections 7, 8, 9 over every group with evidence (canaries included).
    let mut decisions = Vec::new();
    let mut settlement = Vec::new();
    let mut runtime = Vec::new();
    for e in &evals {
        let (Some(g), Some(v), Some(c)) = (e.g, e.v.as_ref(), summaries.get(&e.name)) else {
            continue;
        };
        decisions.push(decision_counts(&e.name, !e.accepted(), g, v));
        settlement.push(settlement_audit(&e.name, !e.accepted(), v, c));
        if let Some(rt) = runtime_evidence(e, m) {
            runtime.push(rt);
        }
    }

    // Section 10: steady state and cumulative.
    let mut steady = Vec::new();
    let mut cumulative = Vec::new();
    let mut round_costs: Vec<u64> = Vec::new();
    let mut broken: Option<String> = None;
    for r in &rounds {
        let row = groups
            .iter()
            .find(|g| g.group == r.name)
            .expect("a row per group");
        steady.push(SteadyRow {
            round: r.name.clone(),
            cost: row.cost.clone(),
            control: control_cost.map(Money::new),
            delta_pct: row.cost_delta_pct.clone(),
            note: row.not_comparable.clone(),
        });
        if broken.is_none() {
            match (row.comparable, row.cost.as_ref()) {
                (true, Some(c)) => round_costs.push(c.micro_usd),
                _ => {
                    broken = Some(format!(
                        "{} is not comparable: {}",
                        r.name,
                        row.not_comparable.as_deref().unwrap_or("no cost")
                    ))
                }
            }
        }
        let rows = lifecycle(control_cost.unwrap_or(0), &round_costs);
        cumulative.push(CumulativeRow {
            through: r.name.clone(),
            row: if broken.is_none() {
                rows.last().cloned()
            } else {
                None
            },
            note: broken.clone(),
        });
    }

    // Section 11: failures, limitations, time gaps.
    let mut diagnostics = Vec::new();
    let mut failed_cases = Vec::new();
    let mut skips = Vec::new();
    for e in &evals {
        let (Some(g), Some(v)) = (e.g, e.v.as_ref()) else {
            continue;
        };
        if !e.accepted() {
            diagnostics.push(Diagnostic {
                group: e.name.clone(),
                status: e.status(),
                failing: v.failing().into_iter().map(row_line).collect(),
            });
        }
        let skipped: BTreeSet<CaseRef> = v.skipped_cases().into_iter().collect();
        for c in &v.cases {
            if c.status != CaseStatus::TerminalValid {
                failed_cases.push(FailedCase {
                    group: e.name.clone(),
                    case: c.case.label(),
                    status: case_status_name(c.status).into(),
                    why: why_failed(g, c, &skipped),
                });
            }
        }
        for s in &v.skipped_security_policy {
            skips.push(SkipLine {
                group: e.name.clone(),
                case: s.case.label(),
                class: snake(&s.class),
                evidence_blake3: s.evidence_blake3.to_vec(),
                failed_attempts_cost: "not attributable: requests carry no case identity, and the join never uses sessions or trial ids (JOIN-2, JOIN-4)".into(),
            });
        }
    }
    let mut time_gaps = Vec::new();
    if let Some((cseq, cns, _)) = control.and_then(|c| c.sealed.clone()) {
        for r in &rounds {
            if let Some((oseq, ons)) = r.opened {
                let gap = i128::from(ons) - i128::from(cns);
                time_gaps.push(TimeGap {
                    round: r.name.clone(),
                    control_sealed_seq: cseq,
                    round_opened_seq: oseq,
                    gap_ns: i64::try_from(gap).unwrap_or(i64::MAX),
                    text: duration_text(gap),
                });
            }
        }
    }
    let mut limitations = vec![
        "Latency is not in the evidence: BitRouter traces carry no latency (it lives only in the daemon's SQLite); provider errors are counted from trace HTTP statuses and usage status.".to_string(),
        "Requests carry no case identity (JOIN-2): per-case cost and the cost of failed attempts are not attributable; costs are per group.".to_string(),
    ];
    if !replicated {
        limitations.push(format!(
            "{} trial per case: per-case deltas have no interval and are not a sample of the task distribution (CLASS-2, REPORT-4).",
            m.cases.trials.len()
        ));
    }
    if basis_kind != BasisKind::Series(Series::Actual) {
        limitations.push(format!("Cost basis: {}. {}", basis.label, basis.note));
    }
    if m.run.role == RunRole::Tuning {
        limitations.push(
            "The rounds tune on these tasks: results are not held-out generalization (CLASS-2)."
                .into(),
        );
    }

    // Claims (CLASS-2, CLASS-5) and go/no-go.
    let mut refused = Vec::new();
    match m.run.class {
        RunClass::PublicReproduction => {}
        RunClass::ReplicatedExperiment => refused.push(
            "a reproducible Terminal-Bench result: only the full 89 x 5 run is one (CLASS-2)"
                .to_string(),
        ),
        _ => refused
            .push("a public score: one trial per case is mechanism evidence (CLASS-2)".to_string()),
    }
    match m.run.role {
        RunRole::Tuning => {
            refused.push("held-out generalization: these are tuning rounds (CLASS-2)".to_string())
        }
        RunRole::HeldOut => {
            refused.push("broad production performance from a held-out run (CLASS-5)".to_string())
        }
    }
    match basis_kind {
        BasisKind::Series(Series::Actual) => {}
        BasisKind::None => refused.push(format!(
            "any routing-economics claim: {} (CLASS-5, SETTLE-6)",
            basis.note.trim_end_matches('.')
        )),
        _ => refused.push(format!(
            "a cash-spend claim: costs are compared on {} (CLASS-5)",
            basis.label
        )),
    }
    for e in &eval_groups {
        if e.rejected() {
            refused.push(format!(
                "any quality or cost claim from {} ({}): diagnostics only (VERDICT-2)",
                e.name,
                e.status()
            ));
        }
    }
    let mut checks = Vec::new();
    let ctl_v = control.and_then(|c| c.v.as_ref());
    for r in &rounds {
        let row = groups
            .iter()
            .find(|g| g.group == r.name)
            .expect("a row per group");
        let quality = (r.accepted() && control.is_some_and(|c| c.accepted())).then(|| {
            quality_within(
                row.passed,
                row.total,
                ctl_v.map_or(0, |v| v.passed),
                ctl_v.map_or(n_cases, |v| v.total),
                tol_q,
            )
        });
        if r.accepted() && row.cost.is_none() {
            refused.push(format!(
                "a routing-economics claim for {}: no cost on the basis (CLASS-5)",
                r.name
            ));
        }
        if quality == Some(false) {
            refused.push(format!(
                "success for {}: its score is outside the predeclared quality tolerance of {} points (CLASS-5)",
                r.name,
                tol_q.canonical()
            ));
        }
        let d = decisions.iter().find(|d| d.group == r.name);
        if let (true, Some(d)) = (row.comparable, d) {
            let non_strong = row.requests.saturating_sub(row.strong_requests);
            let fallbacks = d.by_category.get("fallback").copied().unwrap_or(0);
            if row.cost_delta_pct.as_ref().is_some_and(|x| x.num < 0)
                && non_strong > 0
                && fallbacks >= non_strong
            {
                refused.push(format!(
                    "learned savings for {}: every non-strong request is a fallback, which is reliability (CLASS-5)",
                    r.name
                ));
            }
        }
        let cum = cumulative
            .iter()
            .find(|c| c.through == r.name)
            .and_then(|c| c.row.as_ref());
        checks.push(RoundCheck {
            round: r.name.clone(),
            comparable: row.comparable,
            quality_within: quality,
            cost_within: row.comparable.then(|| {
                cost_within(
                    row.cost.as_ref().map_or(0, |c| c.micro_usd),
                    control_cost.unwrap_or(0),
                    tol_c,
                )
            }),
            cumulative_cost_within: cum
                .map(|c| cost_within(c.policy.micro_usd, c.control.micro_usd, tol_c)),
        });
    }
    if l.groups.values().any(|g| g.feedback.is_some()) {
        refused.push("learning from a production reward source: feedback came from benchmark verifier rewards, so this is reward-supervised policy optimization (CLASS-5)".to_string());
    }
    refused.push("anything from local Docker, direct probes or fixtures (CLASS-5)".to_string());

    let rule = format!(
        "GO only when every predeclared round is sealed accepted and comparable with an accepted control (same identities, one cost basis), every round's official score is within {} points of control, and the last round's cost delta and the cumulative cost delta through it are each at most {}% (REPORT-2, REPORT-3, CLASS-5)",
        tol_q.canonical(),
        tol_c.canonical()
    );
    let mut reasons = Vec::new();
    let any_rejected = eval_groups.iter().any(|e| e.rejected()) || l.stopped.is_some();
    let any_open = eval_groups.iter().any(|e| e.sealed.is_none());
    if rounds.is_empty() {
        reasons.push("no predeclared policy round".to_string());
    }
    for e in &eval_groups {
        if !e.accepted() {
            reasons.push(format!("{} is {}", e.name, e.status()));
        }
    }
    if let Some((seq, rule, why)) = l
        .stopped
        .as_ref()
        .map(|(at, s)| (at.seq, &s.rule, &s.reason))
    {
        reasons.push(format!("the lineage stopped at seq {seq} ({rule}): {why}"));
    }
    for (i, c) in checks.iter().enumerate() {
        let last = i + 1 == checks.len();
        if !c.comparable && c.quality_within.is_some() {
            reasons.push(format!(
                "{} is not comparable: {}",
                c.round,
                groups
                    .iter()
                    .find(|g| g.group == c.round)
                    .and_then(|g| g.not_comparable.clone())
                    .unwrap_or_default()
            ));
        }
        if c.quality_within == Some(false) {
            reasons.push(format!("{}: quality outside the tolerance", c.round));
        }
        if last && c.cost_within == Some(false) {
            reasons.push(format!(
                "{}: steady-state cost delta above the tolerance",
                c.round
            ));
        }
        if last && c.cumulative_cost_within == Some(false) {
            reasons.push(format!(
                "{}: cumulative cost delta above the tolerance",
                c.round
            ));
        }
    }
    let decision = if reasons.is_empty() {
        "GO"
    } else if any_open && !any_rejected {
        "UNDECIDED"
    } else {
        "NO-GO"
    };
    let scope = match m.run.class {
        RunClass::PublicReproduction => "",
        _ => " (as mechanism evidence on these tasks, not a public score)",
    };
    let line = match decision {
        "GO" => format!(
            "GO{scope}: every round accepted and comparable, quality within {} points, steady-state and cumulative cost within {}%",
            tol_q.canonical(),
            tol_c.canonical()
        ),
        d => format!("{d}{scope}: {}", reasons.join("; ")),
    };

    let mut hashes = vec![
        (
            "manifest_blake3".to_string(),
            l.frozen.manifest_blake3.clone(),
        ),
        (
            "manifest source file blake3".to_string(),
            l.frozen.source_file_blake3.clone(),
        ),
        (
            "task_manifest_blake3".to_string(),
            l.frozen.task_manifest_blake3.clone(),
        ),
        ("lineage_key".to_string(), l.frozen.lineage_key.clone()),
        ("control_key".to_string(), l.frozen.control_key.clone()),
    ];
    if let Some(a) = &control_res.artifact_blake3 {
        hashes.push(("control artifact blake3".to_string(), a.clone()));
    }
    let sealed: Vec<(String, u64, String)> = evals
        .iter()
        .filter_map(|e| {
            e.sealed
                .as_ref()
                .map(|(s, _, st)| (e.name.clone(), *s, st.clone()))
        })
        .collect();

    let sw = &m.software;
    let mut software = vec![
        (
            "BitRouter binary sha256".to_string(),
            sw.bitrouter_binary_sha256.clone(),
        ),
        (
            "BitRouter architecture".to_string(),
            sw.bitrouter_arch.clone(),
        ),
        ("Harbor".to_string(), sw.harbor_version.clone()),
        (
            format!("agent {}", m.harbor.agent),
            sw.terminus_version.clone(),
        ),
    ];
    for (g, h) in &sw.bitrouter_config_sha256 {
        software.push((format!("BitRouter config sha256 ({g})"), h.clone()));
    }
    for s in &sw.sources {
        software.push((
            format!("source {}", s.name),
            format!("{} @ {}", s.repo, s.commit),
        ));
    }
    let sb = &m.sandbox;
    let ce = &m.central;
    let topology = vec![
        ("region".to_string(), m.aws.region.clone()),
        (
            "sandbox".to_string(),
            format!(
                "{} {} ({} vCPU), network {}",
                sb.ami, sb.instance_type, sb.vcpu, sb.network
            ),
        ),
        (
            "central BitRouter host".to_string(),
            format!(
                "{} {} {} ({} vCPU)",
                snake(&ce.mode),
                ce.ami,
                ce.instance_type,
                ce.vcpu
            ),
        ),
        (
            "policy model requested by rounds".to_string(),
            m.harbor.policy_model.clone(),
        ),
    ];
    let li = &m.limits;
    let limits = vec![
        ("concurrency".to_string(), li.concurrency.to_string()),
        ("Harbor retries".to_string(), m.harbor.retries.to_string()),
        (
            "agent timeout".to_string(),
            format!("{} s", m.harbor.agent_timeout_sec),
        ),
        (
            "verifier timeout".to_string(),
            format!("{} s", m.harbor.verifier_timeout_sec),
        ),
        (
            "settlement grace".to_string(),
            format!("{} s", li.settlement_grace_sec),
        ),
        (
            "reconciliation attempts".to_string(),
            li.reconciliation_attempts.to_string(),
        ),
        (
            "spend stop".to_string(),
            format!("${}", usd(li.spend_stop_micro_usd)),
        ),
        (
            "severe-quality stop".to_string(),
            format!("{}%", li.severe_quality_stop_pct.canonical()),
        ),
        (
            "security-policy skip".to_string(),
            if m.method.security_skip_enabled {
                "enabled"
            } else {
                "disabled"
            }
            .to_string(),
        ),
    ];

    Ok(Report {
        format: REPORT_FORMAT.into(),
        lineage: label,
        projection_version: crate::method::projections::PROJECTION_VERSION,
        claim: Claim {
            hypothesis: m.run.hypothesis.clone(),
            run_class: class_name(m.run.class).into(),
            tasks: m.cases.tasks.len() as u64,
            trials_per_task: m.cases.trials.len() as u64,
            cases_per_group: n_cases,
            allowed_claim: allowed_claim(m),
            refused_claims: refused,
            quality_tolerance_pp: tol_q.canonical(),
            cost_tolerance_pct: tol_c.canonical(),
            interval_method: m.method.interval_method.clone(),
            interval_seed: m.method.interval_seed,
            interval_resamples: m.method.interval_resamples,
        },
        role: Role {
            role: snake(&m.run.role),
            tuning_tasks: m.method.tuning_tasks.clone(),
            held_out_tasks: m.method.held_out_tasks.clone(),
            note: match m.run.role {
                RunRole::Tuning => "the policy learns from these tasks between rounds; the rounds are never held-out generalization (CLASS-2, LINEAGE-7)".into(),
                RunRole::HeldOut => "a frozen policy evaluated without learning; no held-out reward is applied (LINEAGE-7)".into(),
            },
        },
        frozen: Frozen {
            benchmark: format!("{} {}", m.benchmark.name, m.benchmark.version),
            dataset: format!("{} @ {}", m.benchmark.dataset_repo, m.benchmark.dataset_revision),
            groups: names.iter().map(|s| s.to_string()).collect(),
            trials: m.cases.trials.clone(),
            routes: m
                .routes
                .iter()
                .map(|r| RouteLine {
                    tier: verdict::tier_name(r.tier).into(),
                    provider: r.provider.clone(),
                    model: r.model.clone(),
                    protocol: snake(&r.protocol),
                    credential_class: r.credential_class.clone(),
                })
                .collect(),
            prices: m
                .prices
                .iter()
                .map(|p| PriceLine {
                    route: format!("{}:{}", p.provider, p.model),
                    credential_class: p.credential_class.clone(),
                    basis: snake(&p.basis),
                    uncached_input: p.uncached_input.canonical(),
                    cache_read: p.cache_read.map(|d| d.canonical()),
                    cache_write: p.cache_write.map(|d| d.canonical()),
                    output: p.output.canonical(),
                    source: p.source.clone(),
                    effective: format!(
                        "from {}{}",
                        p.effective_from,
                        p.effective_to.as_deref().map_or(String::new(), |t| format!(" until {t}"))
                    ),
                })
                .collect(),
            software,
            topology,
            limits,
            hashes: hashes.clone(),
            sign_offs: l
                .sign_offs
                .iter()
                .map(|(r, (n, s))| (snake(r), n.clone(), *s))
                .collect(),
            frozen_seq: l.frozen_seq,
        },
        control: control_res,
        basis: basis.clone(),
        groups,
        chart,
        paired,
        decisions,
        settlement,
        runtime,
        economics: Economics {
            basis: basis.label.clone(),
            steady,
            cumulative,
        },
        failures: Failures {
            diagnostics,
            not_opened: evals
                .iter()
                .filter(|e| e.g.is_none())
                .map(|e| e.name.clone())
                .collect(),
            failed_cases,
            skips,
            stopped: l
                .stopped
                .as_ref()
                .map(|(at, s)| (at.seq, s.rule.clone(), s.reason.clone())),
            time_gaps,
            limitations,
        },
        go_no_go: GoNoGo {
            decision: decision.into(),
            line,
            rule,
            rounds: checks,
            reasons,
        },
        checksums: Checksums {
            ledger: head,
            hashes,
            sealed,
        },
    })
}

// ---------------------------------------------------------------------------
// Rendering: markdown and SVG from the Report only
// ---------------------------------------------------------------------------

fn pct(r: &Option<Ratio>) -> String {
    r.as_ref().map_or("—".into(), |r| format!("{}%", r.text))
}

fn pp(r: &Option<Ratio>) -> String {
    r.as_ref().map_or("—".into(), |r| {
        let sign = if r.num > 0 { "+" } else { "" };
        format!("{sign}{} pp", r.text)
    })
}

fn signed_pct(r: &Option<Ratio>) -> String {
    r.as_ref().map_or("—".into(), |r| {
        let sign = if r.num > 0 { "+" } else { "" };
        format!("{sign}{}%", r.text)
    })
}

fn dollars(m: &Option<Money>) -> String {
    m.as_ref().map_or("—".into(), |m| format!("${}", m.usd))
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn counts(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

/// The report as markdown: the twelve REPORT-6 sections in order, every
/// number taken from a field of `r` (its JSON form).
pub fn render_markdown(r: &Report) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "# Benchmark report: lineage `{}`", r.lineage);
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Rendered from the ledger at head seq {} (hash `{}`) by projection v{}; the JSON form (`{}`) holds every number shown here.",
        r.checksums.ledger.head_seq, r.checksums.ledger.head_hash, r.projection_version, r.format
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "**Go/no-go:** {}", r.go_no_go.line);
    let _ = writeln!(w);

    // 1
    let c = &r.claim;
    let _ = writeln!(w, "## 1. Hypothesis, class, allowed claim, tolerances");
    let _ = writeln!(w);
    let _ = writeln!(w, "- Hypothesis: {}", c.hypothesis);
    let _ = writeln!(
        w,
        "- Run class: `{}` ({} tasks x {} trial identities = N {} case identities per group)",
        c.run_class, c.tasks, c.trials_per_task, c.cases_per_group
    );
    let _ = writeln!(w, "- Allowed claim: {}", c.allowed_claim);
    let _ = writeln!(
        w,
        "- Tolerances (frozen): quality within {} percentage points of control's official score; cost delta at most {}%",
        c.quality_tolerance_pp, c.cost_tolerance_pct
    );
    let _ = writeln!(
        w,
        "- Interval method (frozen): {} (seed {}, {} resamples)",
        c.interval_method, c.interval_seed, c.interval_resamples
    );
    let _ = writeln!(w, "- This report refuses to claim:");
    for x in &c.refused_claims {
        let _ = writeln!(w, "  - {x}");
    }
    let _ = writeln!(w);

    // 2
    let _ = writeln!(w, "## 2. Tuning / held-out role");
    let _ = writeln!(w);
    let _ = writeln!(w, "- Role: `{}`: {}", r.role.role, r.role.note);
    let list = |v: &[String]| {
        if v.is_empty() {
            "none declared".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(w, "- Tuning tasks: {}", list(&r.role.tuning_tasks));
    let _ = writeln!(w, "- Held-out tasks: {}", list(&r.role.held_out_tasks));
    let _ = writeln!(w);

    // 3
    let f = &r.frozen;
    let _ = writeln!(w, "## 3. The frozen tuple, hashes and topology");
    let _ = writeln!(w);
    let _ = writeln!(w, "- Benchmark: {}; dataset {}", f.benchmark, f.dataset);
    let _ = writeln!(
        w,
        "- Target groups, in order: {}; trials {}",
        f.groups.join(", "),
        f.trials.join(", ")
    );
    let _ = writeln!(w, "- Frozen at seq {}; sign-offs: {}", f.frozen_seq, {
        let s: Vec<String> = f
            .sign_offs
            .iter()
            .map(|(role, name, seq)| format!("{role} {name} (seq {seq})"))
            .collect();
        if s.is_empty() {
            "none".to_string()
        } else {
            s.join(", ")
        }
    });
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| tier | provider | model | protocol | credential class |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- |");
    for x in &f.routes {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            x.tier,
            cell(&x.provider),
            cell(&x.model),
            x.protocol,
            cell(&x.credential_class)
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| price (USD per million tokens) | class | basis | uncached input | cache read | cache write | output | source | effective |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for p in &f.prices {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&p.route),
            cell(&p.credential_class),
            p.basis,
            p.uncached_input,
            p.cache_read.as_deref().unwrap_or("—"),
            p.cache_write.as_deref().unwrap_or("—"),
            p.output,
            cell(&p.source),
            p.effective
        );
    }
    let _ = writeln!(w);
    for (title, items) in [
        ("Software", &f.software),
        ("Topology", &f.topology),
        ("Limits", &f.limits),
        ("Hashes and keys", &f.hashes),
    ] {
        let _ = writeln!(w, "{title}:");
        for (k, v) in items {
            let _ = writeln!(w, "- {k}: `{v}`");
        }
        let _ = writeln!(w);
    }

    // 4
    let cr = &r.control;
    let _ = writeln!(w, "## 4. Control resolution and case intersection");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "- Control compared against: {} ({}), status {}",
        cr.source.as_deref().unwrap_or("none"),
        if cr.reused {
            format!(
                "reused at seq {}, LINEAGE-6 and LINEAGE-9",
                cr.reuse_seq.map_or("?".into(), |s| s.to_string())
            )
        } else {
            "run by this lineage".to_string()
        },
        cr.status
    );
    let _ = writeln!(
        w,
        "- Control key `{}`; catalog registration {}; artifact `{}`",
        cr.control_key,
        cr.registered_seq
            .map_or("none".into(), |s| format!("at seq {s}")),
        cr.artifact_blake3.as_deref().unwrap_or("none")
    );
    for i in &cr.intersections {
        let _ = writeln!(
            w,
            "- {}: exact intersection {} of {} predeclared identities; excluded {}",
            i.round,
            i.included,
            i.predeclared,
            i.excluded.len()
        );
        for x in &i.excluded {
            let _ = writeln!(w, "  - excluded {}: {}", x.case, x.why);
        }
    }
    let _ = writeln!(w);

    // 5
    let _ = writeln!(w, "## 5. Control and every predeclared round");
    let _ = writeln!(w);
    let _ = writeln!(w, "Cost basis: {}. {}", r.basis.label, r.basis.note);
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| group | status | passed / N | official score | runnable-only | requests | strong-route requests | cost | cost per success | score delta | cost delta | strong-call delta |"
    );
    let _ = writeln!(
        w,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for g in &r.groups {
        let status = if g.accepted {
            g.status.clone()
        } else {
            format!("**{}** (diagnostics only)", g.status)
        };
        let runnable = format!(
            "{} (over {} accepted, {} skipped)",
            pct(&g.runnable.score_pct),
            g.runnable.accepted_cases,
            g.runnable.skipped
        );
        let _ = writeln!(
            w,
            "| {}{} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            g.group,
            if g.source == format!("{}/{}", r.lineage, g.group) {
                String::new()
            } else {
                format!(" (= {})", g.source)
            },
            status,
            g.passed,
            g.total,
            pct(&g.score_pct),
            runnable,
            g.requests,
            g.strong_requests,
            dollars(&g.cost),
            g.cost_per_success
                .as_ref()
                .map_or("—".into(), |x| format!("${}", x.text)),
            pp(&g.score_delta_pp),
            signed_pct(&g.cost_delta_pct),
            signed_pct(&g.strong_call_delta_pct),
        );
    }
    let _ = writeln!(w);
    for g in r.groups.iter().filter(|g| g.not_comparable.is_some()) {
        let _ = writeln!(
            w,
            "- {} has no cost comparison: {}",
            g.group,
            g.not_comparable.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(
        w,
        "- Official score = passed / N x 100 with skips and failures as 0 (REPORT-1); runnable-only = passed / |accepted|, never compared without its denominator. Cost delta = (C_round / C_control - 1) x 100; strong-call delta likewise on strong-route request counts; cost per success = C / passed, exact and shown to the cent (REPORT-2)."
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "![score vs cost per group]({CHART_FILE})  \n[{CHART_FILE}]({CHART_FILE}): official score vs cost on the basis; rejected groups are marked and their costs are diagnostics."
    );
    let _ = writeln!(w);

    // 6
    let _ = writeln!(w, "## 6. Paired per-case deltas");
    let _ = writeln!(w);
    if r.paired.is_empty() {
        let _ = writeln!(w, "No policy round has evidence.");
        let _ = writeln!(w);
    }
    for p in &r.paired {
        let _ = writeln!(
            w,
            "### {} vs control{}",
            p.round,
            if p.diagnostics_only {
                " (diagnostics only)"
            } else {
                ""
            }
        );
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "- {} case pairs on the exact intersection: {} improved, {} worsened, {} unchanged; mean delta {}",
            p.pairs,
            p.improved,
            p.worsened,
            p.unchanged,
            pp(&p.mean_delta_pp)
        );
        match &p.interval {
            Some(iv) => {
                let _ = writeln!(
                    w,
                    "- 95% interval of the mean delta: [{}, {}] pp ({}; seed {}, {} resamples, {} pairs)",
                    iv.lower_pp.text, iv.upper_pp.text, iv.method, iv.seed, iv.resamples, iv.pairs
                );
            }
            None => {
                let _ = writeln!(w, "- {}", p.interval_note);
            }
        }
        for x in &p.excluded {
            let _ = writeln!(w, "- excluded {}: {}", x.case, x.why);
        }
        let changed: Vec<&PairLine> = p.cases.iter().filter(|c| c.delta != 0).collect();
        if changed.is_empty() {
            let _ = writeln!(w, "- no case changed outcome");
        } else {
            let _ = writeln!(w);
            let _ = writeln!(
                w,
                "| case (changed only; the JSON lists all) | control q | round q | delta |"
            );
            let _ = writeln!(w, "| --- | --- | --- | --- |");
            for c in changed {
                let _ = writeln!(
                    w,
                    "| {} | {} | {} | {:+} |",
                    c.case, c.control_q, c.round_q, c.delta
                );
            }
        }
        let _ = writeln!(w);
    }

    // 7
    let _ = writeln!(w, "## 7. Decisions by tier and reason");
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| group | requests | served tier | selected tier | by category (REPORT-5) | by reason | fallback (served model != selected) |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- | --- | --- |");
    for d in &r.decisions {
        let _ = writeln!(
            w,
            "| {}{} | {} | {} | {} | {} | {} | {} |",
            d.group,
            if d.diagnostics_only {
                " (diagnostics)"
            } else {
                ""
            },
            d.requests,
            counts(&d.served_tier),
            counts(&d.selected_tier),
            counts(&d.by_category),
            counts(&d.by_reason),
            d.fallback_model_mismatch
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Categories: exploration (learning cost), learned_replacement (a learned lock), static_route (operator-authored), fallback (reliability), escalation; no_decision: a request without a policy decision (control's schema emits none)."
    );
    let _ = writeln!(w);

    // 8
    let _ = writeln!(w, "## 8. Four-bucket settlement and join audit");
    let _ = writeln!(w);
    for s in &r.settlement {
        let _ = writeln!(
            w,
            "### {}{}",
            s.group,
            if s.diagnostics_only {
                " (diagnostics only)"
            } else {
                ""
            }
        );
        let _ = writeln!(w);
        let series: Vec<String> = s
            .series
            .iter()
            .map(|(k, m)| format!("{k} ${}", m.usd))
            .collect();
        let _ = writeln!(
            w,
            "- Series (never added together): {}; incomplete requests {}; unpriced requests {}; frozen-price total {}",
            if series.is_empty() {
                "none".to_string()
            } else {
                series.join(", ")
            },
            s.incomplete_requests,
            s.unpriced_requests,
            dollars(&s.frozen_price_total)
        );
        let _ = writeln!(w, "- Settlement states: {}", counts(&s.states));
        let sets: Vec<String> = s.sets.iter().map(|(k, n)| format!("|{k}| = {n}")).collect();
        let _ = writeln!(
            w,
            "- Request-id sets (traces T, usage U, decisions D, request outcomes R): {}",
            sets.join(", ")
        );
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "| route | tier | requests | uncached input | cache read | cache write | output | reasoning | charges | incomplete |"
        );
        let _ = writeln!(
            w,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        );
        for x in &s.routes {
            let ch: Vec<String> = x
                .series
                .iter()
                .map(|(k, m)| format!("{k} ${}", m.usd))
                .collect();
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&x.route),
                x.tier,
                x.requests,
                x.uncached_input_tokens,
                x.cache_read_tokens,
                x.cache_write_tokens,
                x.output_tokens,
                x.reasoning_tokens,
                if ch.is_empty() {
                    "—".into()
                } else {
                    ch.join(", ")
                },
                x.incomplete
            );
        }
        let _ = writeln!(w);
        for row in &s.rows {
            let _ = writeln!(
                w,
                "- {} {}: {}",
                row.gate,
                if row.holds { "holds" } else { "FAILS" },
                row.evidence
            );
        }
        let _ = writeln!(w);
    }

    // 9
    let _ = writeln!(
        w,
        "## 9. Runtime, provider, retry, concurrency and cleanup evidence"
    );
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| group | status | cases | replacements | skips | non-2xx traces | failed / cancelled traces | failed usage rows | retries | peak / concurrency (samples) | cleanup |"
    );
    let _ = writeln!(
        w,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for x in &r.runtime {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} / {} ({}) | {}: {} |",
            x.group,
            x.status,
            counts(&x.cases),
            x.replacements_started,
            x.skipped,
            counts(&x.http_non_2xx),
            x.traces_failed,
            x.traces_cancelled,
            x.usage_failed,
            x.harbor_retries,
            x.monitor_peak.map_or("—".into(), |p| p.to_string()),
            x.concurrency,
            x.monitor_samples,
            if x.cleanup.holds { "holds" } else { "FAILS" },
            cell(&x.cleanup.evidence)
        );
    }
    let _ = writeln!(w);
    if let Some(x) = r.runtime.first() {
        let _ = writeln!(w, "Latency: {}.", x.latency);
        let _ = writeln!(w);
    }

    // 10
    let e = &r.economics;
    let _ = writeln!(w, "## 10. Steady-state and cumulative economics");
    let _ = writeln!(w);
    let _ = writeln!(w, "Basis: {}.", e.basis);
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| steady state | round cost | control cost | cost delta | note |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- |");
    for s in &e.steady {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            s.round,
            dollars(&s.cost),
            dollars(&s.control),
            signed_pct(&s.delta_pct),
            s.note.as_deref().map_or(String::new(), cell)
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "| cumulative through | rounds K | C_policy(1..K) | C_control(1..K) = K x C_control | cumulative delta | note |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- | --- |");
    for c in &e.cumulative {
        match &c.row {
            Some(x) => {
                let _ = writeln!(
                    w,
                    "| {} | {} | ${} | ${} | {} | |",
                    c.through,
                    x.k,
                    x.policy.usd,
                    x.control.usd,
                    signed_pct(&x.delta_pct)
                );
            }
            None => {
                let _ = writeln!(
                    w,
                    "| {} | — | — | — | — | {} |",
                    c.through,
                    c.note.as_deref().map_or(String::new(), cell)
                );
            }
        }
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Steady-state and cumulative rows are separate: a cheap late round does not erase the cost of earlier ones (REPORT-3)."
    );
    let _ = writeln!(w);

    // 11
    let fl = &r.failures;
    let _ = writeln!(
        w,
        "## 11. Failures, limitations and the control-to-policy time gap"
    );
    let _ = writeln!(w);
    if let Some((seq, rule, why)) = &fl.stopped {
        let _ = writeln!(w, "- **Lineage stopped** at seq {seq} ({rule}): {why}");
    }
    if fl.diagnostics.is_empty() {
        let _ = writeln!(w, "- No rejected or unsealed group.");
    }
    if !fl.not_opened.is_empty() {
        let _ = writeln!(
            w,
            "- Never opened (each counts 0 of N, never dropped): {}",
            fl.not_opened.join(", ")
        );
    }
    for d in &fl.diagnostics {
        let _ = writeln!(
            w,
            "- **{}: {}** (diagnostics only, VERDICT-2)",
            d.group, d.status
        );
        for row in &d.failing {
            let _ = writeln!(w, "  - {} FAILS: {}", row.gate, row.evidence);
        }
    }
    if fl.failed_cases.is_empty() {
        let _ = writeln!(w, "- No failed, invalid or unfinished case attempt.");
    } else {
        let _ = writeln!(
            w,
            "- Failed, invalid or unfinished case attempts (kept in every denominator):"
        );
        for x in &fl.failed_cases {
            let _ = writeln!(w, "  - {} {}: {} ({})", x.group, x.case, x.status, x.why);
        }
    }
    for s in &fl.skips {
        let _ = writeln!(
            w,
            "- Skipped {} {} ({}): evidence `{}`; cost of both failed attempts: {}",
            s.group,
            s.case,
            s.class,
            s.evidence_blake3.join("`, `"),
            s.failed_attempts_cost
        );
    }
    for g in &fl.time_gaps {
        let _ = writeln!(
            w,
            "- Time gap control -> {}: {} (control sealed at seq {}, {} opened at seq {})",
            g.round, g.text, g.control_sealed_seq, g.round, g.round_opened_seq
        );
    }
    for x in &fl.limitations {
        let _ = writeln!(w, "- Limitation: {x}");
    }
    let _ = writeln!(w);

    // 12
    let gn = &r.go_no_go;
    let _ = writeln!(w, "## 12. Go/no-go and artifact checksums");
    let _ = writeln!(w);
    let _ = writeln!(w, "**{}**", gn.line);
    let _ = writeln!(w);
    let _ = writeln!(w, "Rule: {}.", gn.rule);
    let _ = writeln!(w);
    if !gn.rounds.is_empty() {
        let _ = writeln!(
            w,
            "| round | comparable | quality within | cost within | cumulative cost within |"
        );
        let _ = writeln!(w, "| --- | --- | --- | --- | --- |");
        for x in &gn.rounds {
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} |",
                x.round,
                if x.comparable { "yes" } else { "no" },
                yes_no(x.quality_within),
                yes_no(x.cost_within),
                yes_no(x.cumulative_cost_within)
            );
        }
        let _ = writeln!(w);
    }
    let ck = &r.checksums;
    let _ = writeln!(
        w,
        "- Ledger head: seq {} hash `{}`",
        ck.ledger.head_seq, ck.ledger.head_hash
    );
    for (k, v) in &ck.hashes {
        let _ = writeln!(w, "- {k}: `{v}`");
    }
    for (g, seq, st) in &ck.sealed {
        let _ = writeln!(w, "- sealed {g}: {st} at seq {seq}");
    }
    o
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The smallest 1-2-5 x 10^k step of which at most 5 multiples cover
/// `max` micro-USD, and how many.
fn nice_step(max: u64) -> (u64, u64) {
    let max = max.max(1);
    let mut p = 1u64;
    loop {
        for m in [1u64, 2, 5] {
            let step = m.saturating_mul(p);
            let n = max.div_ceil(step);
            if n <= 5 {
                return (step, n.max(1));
            }
        }
        p = p.saturating_mul(10);
    }
}

/// The chart: official score (y) vs cost on the basis (x) for control and
/// every round, written by hand from `r.chart` (no plotting crate).
/// Rejected groups are drawn as a red cross and labelled; groups without a
/// cost on the basis sit in a separate "no cost" lane left of the axis.
pub fn render_svg(r: &Report) -> String {
    use std::fmt::Write;
    const W: i128 = 720;
    const H: i128 = 440;
    const L: i128 = 130;
    const R: i128 = 690;
    const T: i128 = 60;
    const B: i128 = 370;
    let max = r
        .chart
        .iter()
        .filter_map(|p| p.cost.as_ref().map(|c| c.micro_usd))
        .max()
        .unwrap_or(0);
    // 10% headroom right of the most expensive group.
    let (step, ticks) = nice_step(max.saturating_add(max / 10));
    let xmax = i128::from(step) * i128::from(ticks);
    let x_of = |m: u64| L + i128::from(m) * (R - L) / xmax;
    let y_of = |s: &Ratio| B - i128::from(s.num) * (B - T) / (i128::from(s.den) * 100);
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(
        w,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(w, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        w,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2,
        xml(&format!(
            "Official score vs cost per group: lineage {}",
            r.lineage
        ))
    );
    let _ = writeln!(
        w,
        r##"<text x="{}" y="42" text-anchor="middle" fill="#555">{}</text>"##,
        W / 2,
        xml(&format!("cost basis: {}", r.basis.label))
    );
    // Axes and grid.
    let _ = writeln!(
        w,
        r#"<line x1="{L}" y1="{B}" x2="{R}" y2="{B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{B}" stroke="black"/>"#
    );
    for i in 0..=5i128 {
        let y = B - i * (B - T) / 5;
        let _ = writeln!(
            w,
            r##"<line x1="{L}" y1="{y}" x2="{R}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}%</text>"##,
            L - 6,
            y + 4,
            i * 20
        );
    }
    for i in 0..=ticks {
        let m = step.saturating_mul(i);
        let x = x_of(m);
        let _ = writeln!(
            w,
            r##"<line x1="{x}" y1="{B}" x2="{x}" y2="{}" stroke="black"/><text x="{x}" y="{}" text-anchor="middle">${}</text>"##,
            B + 5,
            B + 20,
            usd(m)
        );
    }
    let _ = writeln!(
        w,
        r#"<text x="{}" y="{}" text-anchor="middle">cost (USD)</text>"#,
        (L + R) / 2,
        B + 38
    );
    let _ = writeln!(
        w,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">official score (% of N)</text>"#,
        (T + B) / 2,
        (T + B) / 2
    );
    let lane = L - 70;
    if r.chart.iter().any(|p| p.cost.is_none()) {
        let _ = writeln!(
            w,
            r##"<line x1="{lane}" y1="{T}" x2="{lane}" y2="{B}" stroke="#bbb" stroke-dasharray="4 3"/><text x="{lane}" y="{}" text-anchor="middle" fill="#777">no cost</text>"##,
            B + 20
        );
    }
    // Points.
    for (i, p) in r.chart.iter().enumerate() {
        let Some(s) = &p.score_pct else { continue };
        let x = p.cost.as_ref().map_or(lane, |c| x_of(c.micro_usd));
        let y = y_of(s);
        let color = match (p.marker.as_str(), p.group.as_str()) {
            ("rejected", _) => "#c62828",
            ("unsealed", _) => "#888888",
            (_, "control") => "#222222",
            _ => "#1565c0",
        };
        match p.marker.as_str() {
            "rejected" => {
                let _ = writeln!(
                    w,
                    r#"<path d="M{} {} L{} {} M{} {} L{} {}" stroke="{color}" stroke-width="3"/>"#,
                    x - 6,
                    y - 6,
                    x + 6,
                    y + 6,
                    x - 6,
                    y + 6,
                    x + 6,
                    y - 6
                );
            }
            "unsealed" => {
                let _ = writeln!(
                    w,
                    r#"<circle cx="{x}" cy="{y}" r="6" fill="white" stroke="{color}" stroke-width="2"/>"#
                );
            }
            _ => {
                let _ = writeln!(w, r#"<circle cx="{x}" cy="{y}" r="6" fill="{color}"/>"#);
            }
        }
        let label = format!(
            "{} {}% {}{}",
            p.group,
            s.text,
            p.cost
                .as_ref()
                .map_or("no cost".to_string(), |c| format!("${}", c.usd)),
            match p.marker.as_str() {
                "rejected" => " (rejected: diagnostics)",
                "unsealed" => " (unsealed)",
                _ => "",
            }
        );
        // Stagger labels so coinciding points stay readable; labels of
        // points right of the middle extend to the left.
        let ly = y - 10 - (i as i128 % 3) * 14;
        let (lx, anchor) = if x > (L + R) / 2 {
            (x - 9, "end")
        } else {
            (x + 9, "start")
        };
        let _ = writeln!(
            w,
            r#"<text x="{lx}" y="{ly}" text-anchor="{anchor}" fill="{color}">{}</text>"#,
            xml(&label)
        );
    }
    // Legend.
    let ly = H - 12;
    let _ = writeln!(
        w,
        r##"<circle cx="{}" cy="{}" r="5" fill="#222222"/><text x="{}" y="{}">control</text><circle cx="{}" cy="{}" r="5" fill="#1565c0"/><text x="{}" y="{}">accepted round</text><path d="M{} {} L{} {} M{} {} L{} {}" stroke="#c62828" stroke-width="3"/><text x="{}" y="{}">rejected (diagnostics only)</text><circle cx="{}" cy="{}" r="5" fill="white" stroke="#888888" stroke-width="2"/><text x="{}" y="{}">unsealed</text>"##,
        L,
        ly,
        L + 10,
        ly + 4,
        L + 90,
        ly,
        L + 100,
        ly + 4,
        L + 225,
        ly - 5,
        L + 235,
        ly + 5,
        L + 225,
        ly + 5,
        L + 235,
        ly - 5,
        L + 245,
        ly + 4,
        L + 430,
        ly,
        L + 440,
        ly + 4
    );
    let _ = writeln!(w, "</svg>");
    o
}

// ---------------------------------------------------------------------------
// The registry entry (REPORT-7)
// ---------------------------------------------------------------------------

/// A `terminal_bench_2_1` registry entry, only from accepted evidence of a
/// public-reproduction lineage; metrics that cannot be proven are omitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registry {
    /// The lineage.
    pub lineage: String,
    /// The group the entry describes.
    pub group: String,
    /// Seq of its accepted seal.
    pub sealed_seq: u64,
    /// Official score in percent (0-100) over N with skips as 0.
    pub accuracy: Ratio,
    /// Passed trials.
    pub passed: u64,
    /// N.
    pub total: u64,
    /// USD per task trial on the actual series, if provable.
    pub cost_per_task: Option<Ratio>,
    /// Minutes per task trial (mean over accepted cases), if provable.
    pub time_per_task: Option<Ratio>,
    /// Who measured it.
    pub measured_by: String,
    /// The harness.
    pub harness: String,
    /// The configuration measured.
    pub config: String,
    /// The date of the accepted seal (UTC).
    pub as_of: String,
    /// Where the evidence is published, when the caller gave it.
    pub source_url: Option<String>,
    /// Metrics left out and why.
    pub omitted: Vec<(String, String)>,
    /// The ledger head.
    pub ledger: LedgerHead,
}

/// The registry entry of `group` (default: the last predeclared round) of
/// a public-reproduction lineage. Refused (REPORT-7, CLASS-2) for any other
/// class and for a group that is not sealed `accepted`.
pub fn registry(
    state: &State,
    lineage: Option<&str>,
    group: Option<&str>,
    head: LedgerHead,
    source_url: Option<&str>,
) -> Result<Registry> {
    let l = state.lineage(lineage)?;
    let m = &l.frozen.manifest.public;
    if m.run.class != RunClass::PublicReproduction {
        return Err(Error::Refused {
            rule: Rule::Report7,
            message: format!(
                "a terminal_bench_2_1 registry entry comes only from accepted evidence of a public-reproduction lineage (all 89 tasks x 5 trials); lineage {} is {}: {} (CLASS-2)",
                l.frozen.lineage,
                class_name(m.run.class),
                allowed_claim(m)
            ),
        });
    }
    let evals = m.evaluation_groups();
    let name = match group {
        Some(g) => g.to_string(),
        None => evals
            .last()
            .map(|s| s.to_string())
            .ok_or_else(|| Error::input("the lineage has no evaluation group"))?,
    };
    if !evals.contains(&name.as_str()) {
        return Err(Error::input(format!(
            "{name:?} is not an evaluation group of lineage {} ({:?})",
            l.frozen.lineage, evals
        )));
    }
    let e = eval(state, l, &name);
    let Some((sealed_seq, sealed_ns, _)) = e.sealed.clone().filter(|_| e.accepted()) else {
        return Err(Error::Refused {
            rule: Rule::Report7,
            message: format!(
                "{}/{name} is {}: a registry entry is emitted only from accepted evidence",
                l.frozen.lineage,
                e.status()
            ),
        });
    };
    let v = e.v.as_ref().expect("a sealed group has a verdict");
    let report = build(state, Some(&l.frozen.lineage), head.clone())?;
    let row = report
        .groups
        .iter()
        .find(|g| g.group == name)
        .expect("a row per evaluation group");
    let mut omitted = Vec::new();
    let accuracy = score_pct(v.passed, v.total)
        .ok_or_else(|| Error::input("the group has no predeclared identities"))?;
    let cost_per_task = match (
        &row.cost,
        report.basis.kind.as_str(),
        report.basis.series.as_deref(),
    ) {
        (Some(c), "series", Some("actual")) => {
            Ratio::new(i128::from(c.micro_usd), i128::from(v.total) * MICRO, 4)
        }
        (Some(_), _, _) => {
            omitted.push((
                "cost_per_task".to_string(),
                format!(
                    "the cost basis is {}, not the actual series: no cash-spend claim (CLASS-5, SETTLE-6)",
                    report.basis.label
                ),
            ));
            None
        }
        (None, _, _) => {
            omitted.push((
                "cost_per_task".to_string(),
                format!("no cost on a single basis: {}", report.basis.note),
            ));
            None
        }
    };
    // Time per task: every accepted case needs both timestamps.
    let g = e.g.expect("a sealed group exists");
    let mut sum: i128 = 0;
    let mut count: i128 = 0;
    let mut missing = 0u64;
    for c in v
        .cases
        .iter()
        .filter(|c| c.case.replacement == 0 && c.status == CaseStatus::TerminalValid)
    {
        let span = g
            .cases
            .get(&c.case)
            .and_then(|cs| cs.result.as_ref())
            .and_then(|(_, r)| {
                let a = parse_rfc3339_ns(r.started_at.as_deref()?)?;
                let b = parse_rfc3339_ns(r.finished_at.as_deref()?)?;
                (b >= a).then_some(b - a)
            });
        match span {
            Some(d) => {
                sum += d;
                count += 1;
            }
            None => missing += 1,
        }
    }
    let time_per_task = if missing == 0 && count > 0 {
        Ratio::new(sum, count * 60_000_000_000, 2)
    } else {
        omitted.push((
            "time_per_task".to_string(),
            format!(
                "{missing} accepted TrialResults lack started_at/finished_at (or end before they start)"
            ),
        ));
        None
    };
    if source_url.is_none() {
        omitted.push((
            "source_url".to_string(),
            "not given (`--source-url URL`: where the report and the ledger export are published)"
                .to_string(),
        ));
    }
    let sw = &m.software;
    let routes: Vec<String> = m
        .routes
        .iter()
        .map(|r| format!("{}={}:{}", verdict::tier_name(r.tier), r.provider, r.model))
        .collect();
    let config = if name == "control" {
        format!(
            "{}/{name}: fixed strong route {}",
            l.frozen.lineage,
            m.route(Tier::Strong)
                .map_or("?".to_string(), |r| format!("{}:{}", r.provider, r.model))
        )
    } else {
        format!(
            "{}/{name}: BitRouter binary sha256 {}, config sha256 {}; routes {}",
            l.frozen.lineage,
            sw.bitrouter_binary_sha256,
            sw.bitrouter_config_sha256
                .get(&name)
                .map_or("?", |s| s.as_str()),
            routes.join(", ")
        )
    };
    Ok(Registry {
        lineage: l.frozen.lineage.clone(),
        group: name,
        sealed_seq,
        accuracy,
        passed: v.passed,
        total: v.total,
        cost_per_task,
        time_per_task,
        measured_by: format!(
            "benchledger {} from ledger head seq {} hash {}",
            env!("CARGO_PKG_VERSION"),
            head.head_seq,
            head.head_hash
        ),
        harness: format!(
            "harbor {} + {} {}",
            sw.harbor_version, m.harbor.agent, sw.terminus_version
        ),
        config,
        as_of: crate::schema::time::rfc3339_utc_ns(sealed_ns)[..10].to_string(),
        source_url: source_url.map(String::from),
        omitted,
        ledger: head,
    })
}

fn yaml_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if c.is_control() => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The registry entry as a YAML block; omitted metrics are listed in
/// comments with the reason.
pub fn render_registry_yaml(r: &Registry) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(
        w,
        "# terminal_bench_2_1 registry entry (REPORT-7), from accepted evidence only"
    );
    let _ = writeln!(
        w,
        "# {}/{} sealed accepted at seq {}; accuracy = {} passed / N {} x 100, skips as 0 (REPORT-1)",
        r.lineage, r.group, r.sealed_seq, r.passed, r.total
    );
    let _ = writeln!(w, "terminal_bench_2_1:");
    let _ = writeln!(w, "  accuracy: {}", r.accuracy.text);
    if let Some(c) = &r.cost_per_task {
        let _ = writeln!(w, "  cost_per_task: {}", c.text);
    }
    if let Some(t) = &r.time_per_task {
        let _ = writeln!(w, "  time_per_task: {}", t.text);
    }
    let _ = writeln!(w, "  measured_by: {}", yaml_str(&r.measured_by));
    let _ = writeln!(w, "  harness: {}", yaml_str(&r.harness));
    let _ = writeln!(w, "  config: {}", yaml_str(&r.config));
    let _ = writeln!(w, "  as_of: {}", yaml_str(&r.as_of));
    if let Some(u) = &r.source_url {
        let _ = writeln!(w, "  source_url: {}", yaml_str(u));
    }
    if !r.omitted.is_empty() {
        let _ = writeln!(w, "# omitted (not provable from this ledger):");
        for (k, why) in &r.omitted {
            let _ = writeln!(w, "#   {k}: {}", why.replace('\n', " "));
        }
    }
    o
}

// ---------------------------------------------------------------------------
// Dataset tables (request level and case level)
// ---------------------------------------------------------------------------

/// One request of a group: its buckets, charge, tier, reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRow {
    /// The lineage.
    pub lineage: String,
    /// The group.
    pub group: String,
    /// The group's status.
    pub group_status: String,
    /// The persisted request id.
    pub request_id: String,
    /// The served route's tier.
    pub tier: String,
    /// Served provider, if a usage row exists.
    pub provider: Option<String>,
    /// Served model, if a usage row exists.
    pub model: Option<String>,
    /// The decision reason, if any.
    pub reason: Option<String>,
    /// The REPORT-5 category.
    pub category: String,
    /// The selected tier, if a decision exists.
    pub selected_tier: Option<String>,
    /// Uncached input tokens.
    pub uncached_input_tokens: Option<u64>,
    /// Cache read tokens.
    pub cache_read_tokens: Option<u64>,
    /// Cache write tokens.
    pub cache_write_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Reasoning tokens.
    pub reasoning_tokens: Option<u64>,
    /// Settlement state.
    pub settlement_state: String,
    /// Cost series.
    pub series: String,
    /// The charge counted, micro-USD.
    pub charge_micro_usd: Option<u64>,
    /// Usage x the frozen prices, micro-USD.
    pub recomputed_micro_usd: Option<u64>,
    /// The trace's HTTP status.
    pub http_status: Option<u16>,
}

/// One case identity of a group: reward and status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseRow {
    /// The lineage.
    pub lineage: String,
    /// The group.
    pub group: String,
    /// The group's status.
    pub group_status: String,
    /// The task.
    pub task: String,
    /// The trial identity.
    pub trial: String,
    /// 0 original, 1 replacement-01.
    pub replacement: u8,
    /// The case state.
    pub status: String,
    /// The reward as Harbor wrote it.
    pub reward: Option<String>,
    /// Passed (reward exactly 1, terminal-valid original).
    pub passed: bool,
    /// A validated security-policy skip.
    pub skipped: bool,
    /// Seq of its start.
    pub started_seq: Option<u64>,
}

/// Every request and case of every lineage of the state (the
/// dataset-publication tables). Pure.
pub fn tables(state: &State) -> (Vec<RequestRow>, Vec<CaseRow>) {
    let mut requests = Vec::new();
    let mut cases = Vec::new();
    for l in state.lineages.values() {
        for name in l.frozen.manifest.public.group_names() {
            let Some(g) = l.groups.get(name) else {
                continue;
            };
            let v = verdict::group_verdict(state, l, name);
            let status = g
                .sealed
                .as_ref()
                .map_or(format!("unsealed (now {})", v.status), |(_, s)| {
                    s.status.clone()
                });
            for r in &v.settlement.requests {
                let d = v
                    .joins
                    .decision_of
                    .get(&r.request_id)
                    .and_then(|ix| ix.first())
                    .and_then(|i| g.decisions.get(*i))
                    .map(|(_, d)| d);
                let mismatch = match (
                    d.and_then(|d| d.selected_model.as_deref()),
                    &r.provider_model,
                ) {
                    (Some(sel), Some((_, model))) => !verdict::names_model(sel, model),
                    _ => false,
                };
                let category = match d {
                    None => "no_decision",
                    Some(_) if mismatch => "fallback",
                    Some(d) => category(&d.reason),
                };
                let b = r.buckets.as_ref();
                requests.push(RequestRow {
                    lineage: l.frozen.lineage.clone(),
                    group: name.to_string(),
                    group_status: status.clone(),
                    request_id: r.request_id.clone(),
                    tier: tier_text(r.tier),
                    provider: r.provider_model.as_ref().map(|(p, _)| p.clone()),
                    model: r.provider_model.as_ref().map(|(_, m)| m.clone()),
                    reason: d.map(|d| d.reason.to_string()),
                    category: category.to_string(),
                    selected_tier: d.and_then(|d| d.selected_tier.as_deref().map(String::from)),
                    uncached_input_tokens: b.map(|b| b.uncached_input_tokens),
                    cache_read_tokens: b.map(|b| b.cache_read_tokens),
                    cache_write_tokens: b.map(|b| b.cache_write_tokens),
                    output_tokens: b.map(|b| b.output_tokens),
                    reasoning_tokens: b.map(|b| b.reasoning_tokens),
                    settlement_state: state_name(r.state).to_string(),
                    series: series_name(r.series).to_string(),
                    charge_micro_usd: r.charge_micro_usd,
                    recomputed_micro_usd: r.recomputed_micro_usd,
                    http_status: g
                        .requests
                        .get(r.request_id.as_str())
                        .and_then(|x| x.traces.first())
                        .map(|(_, t)| t.http_status),
                });
            }
            let skipped: BTreeSet<CaseRef> = v.skipped_cases().into_iter().collect();
            for c in &v.cases {
                cases.push(CaseRow {
                    lineage: l.frozen.lineage.clone(),
                    group: name.to_string(),
                    group_status: status.clone(),
                    task: c.case.task.clone(),
                    trial: c.case.trial.clone(),
                    replacement: c.case.replacement,
                    status: case_status_name(c.status).to_string(),
                    reward: c.reward.clone(),
                    passed: passed(c),
                    skipped: skipped.contains(&CaseRef {
                        replacement: 0,
                        ..c.case.clone()
                    }),
                    started_seq: c.started_seq,
                });
            }
        }
    }
    (requests, cases)
}

/// Rows as CSV (RFC 4180: fields quoted when they hold a comma, quote or
/// newline; absent values empty), header from the JSON field names.
pub fn to_csv<T: Serialize>(rows: &[T], header: &[&str]) -> String {
    let mut o = String::new();
    o.push_str(&header.join(","));
    o.push('\n');
    for row in rows {
        let v = serde_json::to_value(row).unwrap_or_default();
        let fields: Vec<String> = header
            .iter()
            .map(|h| match v.get(*h) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(s)) => csv_field(s),
                Some(x) => csv_field(&x.to_string()),
            })
            .collect();
        o.push_str(&fields.join(","));
        o.push('\n');
    }
    o
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns of the request table, in order.
pub const REQUEST_COLUMNS: [&str; 20] = [
    "lineage",
    "group",
    "group_status",
    "request_id",
    "tier",
    "provider",
    "model",
    "reason",
    "category",
    "selected_tier",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "settlement_state",
    "series",
    "charge_micro_usd",
    "recomputed_micro_usd",
    "http_status",
];

/// The columns of the case table, in order.
pub const CASE_COLUMNS: [&str; 11] = [
    "lineage",
    "group",
    "group_status",
    "task",
    "trial",
    "replacement",
    "status",
    "reward",
    "passed",
    "skipped",
    "started_seq",
];

#[cfg(test)]
mod tests;
