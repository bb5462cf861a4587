//! The report's exact numbers: money as integer micro-USD with its exact
//! USD text and its text to the cent, ratios as integer fractions rounded
//! half away from zero only for display, and the formulas of REPORT-1..3
//! (score, deltas, cost per success, tolerances, the cumulative lifecycle).
//! No binary floats.
//!
//! The money rule: people read cents, rounded half away from zero (the
//! markdown, the chart, the terminal); the JSON form keeps exact micro-USD
//! (`micro_usd`, and `usd` as exact decimal text), and the markdown adds a
//! footnote wherever rounding to the cent hides a difference.

use serde::Serialize;

use crate::schema::money::Dec;

/// Micro-USD per USD.
pub(crate) const MICRO: i128 = 1_000_000;

/// An amount of money: exact integer micro-USD, its exact USD text and
/// its USD text to the cent (what people read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Money {
    pub micro_usd: u64,
    /// The same amount in USD, exact decimal text (via [`Dec`]).
    pub usd: String,
    /// The same amount in USD rounded half away from zero to the cent,
    /// always two decimals (`303.60`): the text the markdown shows.
    pub usd_cents: String,
}

impl Money {
    /// An amount of `micro_usd`.
    pub fn new(micro_usd: u64) -> Money {
        Money {
            micro_usd,
            usd: usd(micro_usd),
            usd_cents: cents(micro_usd),
        }
    }
}

/// Micro-USD as USD to the cent, rounded half away from zero, always two
/// decimals (`303600000` -> `303.60`, `661394290` -> `661.39`, `5000` ->
/// `0.01`, `4999` -> `0.00`).
pub fn cents(micro_usd: u64) -> String {
    ratio_text(i128::from(micro_usd), MICRO, 2).expect("a u64 over 10^6 fits two places")
}

/// Micro-USD as exact USD text (`4290000` -> `4.29`, `35831` -> `0.035831`).
pub fn usd(micro_usd: u64) -> String {
    Dec::from_parts(i128::from(micro_usd), 6)
        .map(|amount| amount.canonical())
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
    let scaled = num.checked_mul(scale)?;
    let mut quotient = scaled / den;
    let remainder = scaled % den;
    if remainder.unsigned_abs().checked_mul(2)? >= den.unsigned_abs() {
        quotient += scaled.signum();
    }
    let sign = if quotient < 0 { "-" } else { "" };
    let magnitude = quotient.unsigned_abs();
    let scale = scale.unsigned_abs();
    Some(if places == 0 {
        format!("{sign}{magnitude}")
    } else {
        format!(
            "{sign}{}.{:0width$}",
            magnitude / scale,
            magnitude % scale,
            width = places as usize
        )
    })
}

/// Official score in percent (REPORT-1): `passed / n x 100`, two decimals.
pub fn score_pct(passed: u64, n: u64) -> Option<Ratio> {
    Ratio::new(i128::from(passed) * 100, i128::from(n), 2)
}

/// `(policy / control - 1) x 100` (REPORT-2: cost delta %, and likewise
/// the strong-call delta % on strong-route request counts), two decimals.
pub fn delta_pct(policy: u64, control: u64) -> Option<Ratio> {
    let (policy, control) = (i128::from(policy), i128::from(control));
    Ratio::new((policy - control) * 100, control, 2)
}

/// Cost per success in USD (REPORT-2): `C / successes`, shown to the cent,
/// kept exact (`num` micro-USD over `den` = successes x 10^6).
pub fn cost_per_success(cost_micro_usd: u64, successes: u64) -> Option<Ratio> {
    Ratio::new(i128::from(cost_micro_usd), i128::from(successes) * MICRO, 2)
}

/// Official score delta in percentage points: `100 (p_r/n_r - p_c/n_c)`.
pub fn score_delta_pp(p_round: u64, n_round: u64, p_control: u64, n_control: u64) -> Option<Ratio> {
    let (p_round, n_round) = (i128::from(p_round), i128::from(n_round));
    let (p_control, n_control) = (i128::from(p_control), i128::from(n_control));
    Ratio::new(
        100 * (p_round * n_control - p_control * n_round),
        n_round * n_control,
        2,
    )
}

/// Quality no more than the predeclared tolerance below control: the score
/// delta in percentage points is at least `-tolerance_pp` (exact,
/// one-sided). Without a case on either side it does not hold.
pub fn quality_within(
    p_round: u64,
    n_round: u64,
    p_control: u64,
    n_control: u64,
    tolerance_pp: Dec,
) -> bool {
    score_delta_pp(p_round, n_round, p_control, n_control)
        .is_some_and(|delta| not_below_tolerance(&delta, tolerance_pp))
}

/// Whether `delta_pp` is no more than `tolerance_pp` points below zero
/// (exact): `num / den >= -m / 10^s`.
pub fn not_below_tolerance(delta_pp: &Ratio, tolerance_pp: Dec) -> bool {
    let Some(scale) = 10i128.checked_pow(tolerance_pp.scale()) else {
        return false;
    };
    i128::from(delta_pp.num) * scale >= -tolerance_pp.mantissa() * i128::from(delta_pp.den)
}

/// Cost within the predeclared tolerance: the cost delta % is at most
/// `tolerance_pct` (exact). A control without cost compares nothing.
pub fn cost_within(policy: u64, control: u64, tolerance_pct: Dec) -> bool {
    if control == 0 {
        return false;
    }
    let (policy, control) = (i128::from(policy), i128::from(control));
    let Some(scale) = 10i128.checked_pow(tolerance_pct.scale()) else {
        return false;
    };
    // (p - c) 100 / c <= m / s  <=>  (p - c) 100 s <= m c
    (policy - control) * 100 * scale <= tolerance_pct.mantissa() * control
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
    /// The rounds' successes, 1..k added.
    pub successes: u64,
    /// k x control's successes.
    pub control_successes: u64,
    /// `C_policy(1..k) / successes`, in USD.
    pub cost_per_success: Option<Ratio>,
    /// `C_control(1..k) / (k x control's successes)`: control's own.
    pub control_cost_per_success: Option<Ratio>,
}

/// REPORT-3: the cumulative rows through each round, against k x control;
/// each cost with its successes (`(cost, passed)`).
pub fn lifecycle(control: (u64, u64), rounds: &[(u64, u64)]) -> Vec<Cumulative> {
    let (mut policy_sum, mut successes) = (0u64, 0u64);
    rounds
        .iter()
        .enumerate()
        .map(|(index, (round_cost, passed))| {
            policy_sum = policy_sum.saturating_add(*round_cost);
            successes = successes.saturating_add(*passed);
            let k = index as u64 + 1;
            let control_sum = control.0.saturating_mul(k);
            let control_successes = control.1.saturating_mul(k);
            Cumulative {
                k,
                policy: Money::new(policy_sum),
                control: Money::new(control_sum),
                delta_pct: delta_pct(policy_sum, control_sum),
                successes,
                control_successes,
                cost_per_success: cost_per_success(policy_sum, successes),
                control_cost_per_success: cost_per_success(control_sum, control_successes),
            }
        })
        .collect()
}

/// A duration in ns as text: `1d 2h 3m 4s` (leading zero units left out).
pub fn duration_text(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let total_seconds = ns.unsigned_abs() / 1_000_000_000;
    let days = total_seconds / 86_400;
    let hours = (total_seconds % 86_400) / 3600;
    let minutes = (total_seconds % 3600) / 60;
    let seconds = total_seconds % 60;
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days}d"));
    }
    if days > 0 || hours > 0 {
        parts.push(format!("{hours}h"));
    }
    if days > 0 || hours > 0 || minutes > 0 {
        parts.push(format!("{minutes}m"));
    }
    parts.push(format!("{seconds}s"));
    format!("{sign}{}", parts.join(" "))
}
