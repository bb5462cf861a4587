//! The bootstrap of REPORT-4: a deterministic generator ([`SplitMix64`])
//! and the percentile bootstrap of the mean paired delta.

use serde::Serialize;

use super::numbers::Ratio;

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
        let mut product = u128::from(self.next_u64()) * u128::from(n);
        if (product as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (product as u64) < threshold {
                product = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (product >> 64) as u64
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
