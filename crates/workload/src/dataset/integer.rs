//! Synthetic integer key sets: XIndex Table 3 (§6.2) `linear`, `normal` and `lognormal`, SOSD's
//! uniform set, a sequential set (XIndex §3.5.2's fast sequential insertion) and a clustered set
//! that a piecewise-linear model finds hard to learn.
//!
//! Every function returns exactly `n` keys, sorted and unique, and the same keys for the same
//! seed on every platform. Random sets are drawn, deduplicated and topped up with fresh draws
//! until `n` distinct keys remain.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, LogNormal, StandardNormal};

use crate::dataset::unique_sorted;
use crate::error::{Error, Result};
use crate::seed;

/// The upper end of the `normal` and `lognormal` key range (XIndex Table 3: "scaled to
/// `[0, 1e12]`").
pub const SCALED_MAX: u64 = 1_000_000_000_000;

/// The span of the `linear` key set (XIndex Table 3: `A = 1e14 / n`).
pub const LINEAR_SPAN: u64 = 100_000_000_000_000;

/// The most keys `normal` and `lognormal` may be asked for: one per hundred integers of
/// `[0, 1e12]`, so the top-up rounds stay short.
pub const MAX_SCALED_KEYS: usize = (SCALED_MAX / 100) as usize;

/// `n` keys drawn uniformly from `[0, u64::MAX)` (SOSD's `uniform_sparse`).
///
/// ```
/// let keys = workload::dataset::integer::uniform(1_000, 1);
/// assert_eq!(keys.len(), 1_000);
/// assert!(keys.windows(2).all(|w| w[0] < w[1]));
/// ```
pub fn uniform(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = seed::rng(seed, seed::stream::UNIFORM);
    unique_sorted(Vec::new(), n, || rng.random_range(0..u64::MAX))
}

/// `n` keys of XIndex's `linear` set: key `i` (from 1) is `i·A` plus uniform noise in
/// `[−A/2, A/2)`, with `A = ⌊1e14 / n⌋`, so the keys lie in `[A/2, (n + 1/2)·A)`, which is within
/// `[0, 1e14 + A/2)`.
///
/// The noise intervals of neighbouring keys do not overlap, so the keys come out strictly
/// increasing without deduplication. More than `1e14` keys is [`Error::InvalidParameter`].
pub fn linear(n: usize, seed: u64) -> Result<Vec<u64>> {
    let n64 = u64::try_from(n).map_err(|_| Error::invalid("linear: too many keys"))?;
    if n64 > LINEAR_SPAN {
        return Err(Error::invalid(format!(
            "linear: at most {LINEAR_SPAN} keys, {n} requested"
        )));
    }
    let step = LINEAR_SPAN / n64.max(1);
    let mut rng = seed::rng(seed, seed::stream::LINEAR);
    Ok((1..=n64)
        .map(|i| i * step - step / 2 + rng.random_range(0..step))
        .collect())
}

/// `n` keys of XIndex's `normal` set: draws from Normal(μ = 0, σ = 1) scaled linearly to
/// `[0, 1e12]`, see [`lognormal`] for the scaling (which depends on `n`). At most
/// [`MAX_SCALED_KEYS`].
pub fn normal(n: usize, seed: u64) -> Result<Vec<u64>> {
    scaled(n, seed, seed::stream::NORMAL, StandardNormal, "normal")
}

/// `n` keys of XIndex's `lognormal` set: draws from LogNormal(μ = 0, σ = 2) scaled linearly to
/// `[0, 1e12]`. At most [`MAX_SCALED_KEYS`].
///
/// The keys are `n` random draws, not quantiles. The smallest and largest draw map to `0` and
/// `1e12` (two passes over the same seeded stream find them without storing the draws as
/// floats); each draw is rounded to an integer, and a draw that lands on an integer already taken
/// moves to the next free one (towards `1e12`; back from `1e12` at the very top). The shape
/// therefore depends on `n`: the extremes spread as `n` grows, so the dense core takes a smaller
/// part of `[0, 1e12]` (lognormal's median key is about 1.4·10^8 for 10^6 keys and 4·10^7 for
/// 4·10^6, with seed 1), and a smaller set is not a sample of a larger one.
///
/// Collisions are negligible for `normal`, but lognormal's dense core saturates: from about
/// 10^7 keys on, every integer near the mode is drawn several times, so the core becomes a run of
/// consecutive integers, a little wider than the raw draws. Redrawing instead would need a
/// coupon-collector's number of rounds there (two minutes for 200M keys, against seconds).
pub fn lognormal(n: usize, seed: u64) -> Result<Vec<u64>> {
    let dist = LogNormal::new(0.0, 2.0).expect("μ = 0 and σ = 2 are valid LogNormal parameters");
    scaled(n, seed, seed::stream::LOGNORMAL, dist, "lognormal")
}

/// The scaling shared by [`normal`] and [`lognormal`].
fn scaled(
    n: usize,
    seed: u64,
    stream: u64,
    dist: impl Distribution<f64>,
    name: &str,
) -> Result<Vec<u64>> {
    if n > MAX_SCALED_KEYS {
        return Err(Error::invalid(format!(
            "{name}: at most {MAX_SCALED_KEYS} keys, {n} requested"
        )));
    }
    let mut rng = seed::rng(seed, stream);
    let (lo, hi) = (0..n).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), _| {
        let x: f64 = dist.sample(&mut rng);
        (lo.min(x), hi.max(x))
    });
    let scale = if hi > lo {
        SCALED_MAX as f64 / (hi - lo)
    } else {
        0.0
    };
    let mut rng = seed::rng(seed, stream);
    let mut keys: Vec<u64> = (0..n)
        .map(|_| {
            let x: f64 = dist.sample(&mut rng);
            // In [0, 1e12] by construction; the `min` only guards the last rounding step.
            (((x - lo) * scale).round() as u64).min(SCALED_MAX)
        })
        .collect();
    keys.sort_unstable();
    spread_collisions(&mut keys, SCALED_MAX);
    Ok(keys)
}

/// Makes sorted `keys` strictly increasing within `[0, max]` by moving each collision to the next
/// free integer, then, if the last key passed `max`, moving keys back from `max` as far as needed.
/// Needs `keys.len() <= max + 1`.
fn spread_collisions(keys: &mut [u64], max: u64) {
    for i in 1..keys.len() {
        keys[i] = keys[i].max(keys[i - 1] + 1);
    }
    let mut ceiling = max;
    for key in keys.iter_mut().rev() {
        if *key <= ceiling {
            break;
        }
        *key = ceiling;
        ceiling = ceiling.saturating_sub(1);
    }
}

/// The keys `0, 1, …, n − 1`.
pub fn sequential(n: usize) -> Vec<u64> {
    (0..n as u64).collect()
}

/// Mean length of a dense run in [`clustered`].
pub const CLUSTER_MEAN_RUN: u64 = 64;

/// `n` keys in dense runs of consecutive integers (run lengths uniform in `[1, 127]`, mean 64)
/// separated by log-uniform gaps in `[2^8, 2^40)`, starting at a random key below `2^32`.
///
/// The cumulative distribution is a staircase of steep steps and long flat stretches at every
/// scale, which is hard for a learned index: a model either fits a run and misses the gaps or
/// the reverse. Keys that would pass `u64::MAX` (only possible beyond about 10^9 keys) are
/// [`Error::InvalidParameter`].
pub fn clustered(n: usize, seed: u64) -> Result<Vec<u64>> {
    let mut rng = seed::rng(seed, seed::stream::CLUSTERED);
    let overflow = || Error::invalid(format!("clustered: {n} keys do not fit in u64"));
    let mut keys = Vec::with_capacity(n);
    let mut next = rng.random_range(0..1u64 << 32);
    while keys.len() < n {
        let run = rng.random_range(1..2 * CLUSTER_MEAN_RUN) as usize;
        for _ in 0..run.min(n - keys.len()) {
            keys.push(next);
            next = next.checked_add(1).ok_or_else(overflow)?;
        }
        next = next
            .checked_add(log_uniform_gap(&mut rng))
            .ok_or_else(overflow)?;
    }
    Ok(keys)
}

/// A gap of `2^x` with `x` uniform in `[8, 40)`.
fn log_uniform_gap(rng: &mut impl Rng) -> u64 {
    let exponent: f64 = rng.random_range(8.0..40.0);
    exponent.exp2() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: &[u64], n: usize) {
        assert_eq!(keys.len(), n);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    }

    #[test]
    fn every_generator_is_sorted_unique_exact_and_deterministic() {
        type Gen = fn(usize, u64) -> Result<Vec<u64>>;
        let gens: [(&str, Gen); 6] = [
            ("uniform", |n, s| Ok(uniform(n, s))),
            ("linear", linear),
            ("normal", normal),
            ("lognormal", lognormal),
            ("sequential", |n, _| Ok(sequential(n))),
            ("clustered", clustered),
        ];
        for (name, generate) in gens {
            for n in [0, 1, 2, 1_000, 100_000] {
                let keys = generate(n, 5).expect(name);
                check(&keys, n);
                assert!(
                    keys.last().is_none_or(|&last| last < u64::MAX),
                    "{name}: u64::MAX is never a key"
                );
                assert_eq!(keys, generate(n, 5).expect(name), "{name} is deterministic");
            }
            if name != "sequential" {
                assert_ne!(
                    generate(1_000, 5).expect(name),
                    generate(1_000, 6).expect(name),
                    "{name} seeds"
                );
            }
        }
    }

    #[test]
    fn linear_stays_in_its_declared_range() {
        let n = 100_000;
        let keys = linear(n, 3).expect("valid size");
        let step = LINEAR_SPAN / n as u64;
        for (i, &key) in keys.iter().enumerate() {
            let centre = (i as u64 + 1) * step;
            assert!(
                key >= centre - step / 2 && key < centre + step / 2 + step % 2,
                "key {i}"
            );
        }
        assert_eq!(linear(10, 1).expect("small"), linear(10, 1).expect("small"));
        assert!(linear(usize::MAX, 1).is_err());
    }

    #[test]
    fn scaled_sets_span_exactly_zero_to_1e12() {
        for keys in [
            normal(100_000, 8).expect("normal"),
            lognormal(100_000, 8).expect("lognormal"),
        ] {
            assert_eq!(keys[0], 0);
            assert_eq!(*keys.last().expect("non-empty"), SCALED_MAX);
        }
        assert!(normal(MAX_SCALED_KEYS + 1, 1).is_err());
    }

    #[test]
    fn collisions_move_to_the_next_free_integer() {
        let mut keys = [0, 0, 0, 5, 5, 9, 10, 10];
        spread_collisions(&mut keys, 10);
        assert_eq!(keys, [0, 1, 2, 5, 6, 8, 9, 10]);
        let mut full = [3, 3, 3, 3];
        spread_collisions(&mut full, 3);
        assert_eq!(full, [0, 1, 2, 3]);
    }

    #[test]
    fn normal_is_bell_shaped_and_lognormal_is_skewed() {
        let keys = normal(100_000, 2).expect("normal");
        let median = keys[keys.len() / 2] as f64 / SCALED_MAX as f64;
        assert!((median - 0.5).abs() < 0.05, "normal median at {median}");
        let keys = lognormal(100_000, 2).expect("lognormal");
        let median = keys[keys.len() / 2] as f64 / SCALED_MAX as f64;
        assert!(median < 0.01, "lognormal median at {median}");
    }

    #[test]
    fn clustered_has_runs_and_large_gaps() {
        let keys = clustered(100_000, 4).expect("clustered");
        let gaps: Vec<u64> = keys.windows(2).map(|w| w[1] - w[0]).collect();
        let unit = gaps.iter().filter(|&&g| g == 1).count();
        let large = gaps.iter().filter(|&&g| g >= 256).count();
        assert_eq!(
            unit + large,
            gaps.len(),
            "a gap is either inside a run or between runs"
        );
        let runs = large as f64;
        let mean_run = keys.len() as f64 / (runs + 1.0);
        assert!((50.0..80.0).contains(&mean_run), "mean run {mean_run}");
    }
}
