//! The bootstrap of REPORT-4: the percentile bootstrap of the mean paired
//! delta, drawn from the crate's one seeded generator ([`SplitMix64`]).

use serde::Serialize;

use super::numbers::Ratio;
use crate::rng::SplitMix64;

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

/// The resample sums at the two percentiles of a 95% interval (each sum
/// over n pairs is n times a resample mean).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PercentileSums {
    /// The sum at ⌊0.025 B⌋ of the sorted sums.
    pub lower: i64,
    /// The sum at ⌈0.975 B⌉ − 1 of the sorted sums.
    pub upper: i64,
}

/// The percentile bootstrap of the mean of `deltas` (one per case pair):
/// returns the resample sums at ⌊0.025 B⌋ and ⌈0.975 B⌉ − 1 of the sorted
/// sums (each sum / n is a resample mean). `None` for no pairs or no
/// resamples. Deterministic for a seed.
pub fn bootstrap_sums(deltas: &[i64], seed: u64, resamples: u32) -> Option<PercentileSums> {
    if deltas.is_empty() || resamples == 0 {
        return None;
    }
    let pairs = deltas.len() as u64;
    let mut rng = SplitMix64::new(seed);
    let mut sums: Vec<i64> = (0..resamples)
        .map(|_| {
            (0..pairs)
                .map(|_| deltas[rng.below(pairs) as usize])
                .fold(0i64, i64::saturating_add)
        })
        .collect();
    sums.sort_unstable();
    let resamples = u64::from(resamples);
    let lower_index = (resamples * 25 / 1000) as usize;
    let upper_index = ((resamples * 975).div_ceil(1000)).saturating_sub(1) as usize;
    Some(PercentileSums {
        lower: sums[lower_index],
        upper: sums[upper_index.min(sums.len() - 1)],
    })
}

/// The bootstrap interval of paired deltas in percentage points.
pub fn bootstrap_interval(deltas: &[i64], seed: u64, resamples: u32) -> Option<Interval> {
    let sums = bootstrap_sums(deltas, seed, resamples)?;
    let pairs = deltas.len() as i128;
    Some(Interval {
        method: "percentile bootstrap over case pairs (splitmix64, unbiased draws), 95%".into(),
        seed,
        resamples,
        pairs: deltas.len() as u64,
        lower_pp: Ratio::new(i128::from(sums.lower) * 100, pairs, 2)?,
        upper_pp: Ratio::new(i128::from(sums.upper) * 100, pairs, 2)?,
    })
}
