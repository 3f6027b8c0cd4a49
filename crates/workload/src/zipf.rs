//! YCSB's request distributions (Cooper et al., "Benchmarking Cloud Serving Systems with YCSB",
//! SoCC 2010): the Zipfian distribution with θ = 0.99 and its *scrambled* variant, which spreads
//! the popular items over the key space with the FNV hash.
//!
//! [`Zipfian`] draws rank `k` (from 0) with probability `(k + 1)^−θ / ζ(n, θ)`. YCSB computes ranks
//! with the closed-form approximation of Gray et al. ("Quickly Generating Billion-Record Synthetic
//! Databases", SIGMOD 1994), which is exact for the two most popular ranks but over-weights ranks
//! 2–10 by 2–19 % at θ = 0.99. This module draws ranks *exactly* instead, by rejection-inversion
//! (Hörmann and Derflinger, "Rejection-inversion to generate variates from monotone discrete
//! distributions", ACM TOMACS 1996): O(1) expected time for any `n` up to `2^53`, no `O(n)` zeta
//! sum, and changing `n` (YCSB's "latest" distribution grows with every insert) costs O(1).
//!
//! [`ScrambledZipfian`] follows YCSB's `ScrambledZipfianGenerator` otherwise exactly: a rank over
//! [`YCSB_ITEM_COUNT`] = 10^10 items, hashed with YCSB's 64-bit FNV hash ([`fnv64`]), modulo the
//! number of records.

use rand::{Rng, RngExt};

use crate::error::{Error, Result};

/// YCSB's Zipfian constant θ (`ZIPFIAN_CONSTANT`).
pub const YCSB_THETA: f64 = 0.99;

/// The item count over which YCSB's scrambled Zipfian draws its ranks (`ITEM_COUNT`).
pub const YCSB_ITEM_COUNT: u64 = 10_000_000_000;

/// The largest item count [`Zipfian`] accepts (ranks are computed in `f64`).
pub const MAX_ITEMS: u64 = 1 << 53;

/// Zipf-distributed ranks in `[0, n)`: rank `k` has probability `(k + 1)^−θ / ζ(n, θ)`.
///
/// ```
/// use workload::zipf::{Zipfian, YCSB_THETA};
/// use rand::SeedableRng;
///
/// let zipf = Zipfian::new(1_000, YCSB_THETA)?;
/// let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
/// let hits = (0..10_000).filter(|_| zipf.sample(&mut rng) == 0).count();
/// assert!((1_200..1_500).contains(&hits)); // rank 0 has probability 1 / ζ(1000, 0.99) ≈ 12.9 %
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    /// `H(1.5) − h(1)`: the lower end of the inversion interval.
    h_integral_x1: f64,
    /// `H(n + 0.5)`: the upper end of the inversion interval.
    h_integral_n: f64,
    /// The squeeze constant: a candidate closer than this to its integer needs no test.
    squeeze: f64,
}

impl Zipfian {
    /// The distribution over `items` ranks with exponent `theta`. Errors unless
    /// `1 <= items <= 2^53` and `theta` is finite and positive.
    pub fn new(items: u64, theta: f64) -> Result<Self> {
        if !(theta.is_finite() && theta > 0.0) {
            return Err(Error::invalid(format!(
                "zipfian: θ must be finite and positive, not {theta}"
            )));
        }
        check_items(items)?;
        let mut zipf = Self {
            items,
            theta,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            squeeze: 0.0,
        };
        zipf.h_integral_x1 = zipf.h_integral(1.5) - 1.0;
        zipf.h_integral_n = zipf.h_integral(items as f64 + 0.5);
        zipf.squeeze = 2.0 - zipf.h_integral_inverse(zipf.h_integral(2.5) - zipf.h(2.0));
        Ok(zipf)
    }

    /// The number of ranks, `n`.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The exponent θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Changes the number of ranks in O(1) (YCSB's "latest" distribution grows with each insert).
    /// Errors unless `1 <= items <= 2^53`.
    pub fn set_items(&mut self, items: u64) -> Result<()> {
        check_items(items)?;
        if items != self.items {
            self.items = items;
            self.h_integral_n = self.h_integral(items as f64 + 0.5);
        }
        Ok(())
    }

    /// A rank in `[0, n)`; 0 is the most popular.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        loop {
            let u =
                self.h_integral_n + rng.random::<f64>() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.items as f64);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }

    /// `h(x) = x^−θ`, the unnormalised probability of the value `x` (rank `x − 1`).
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// `H(x) = (x^(1−θ) − 1) / (1 − θ)`, an antiderivative of `h` (`ln x` at θ = 1), in a form
    /// that stays accurate near θ = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over((1.0 - self.theta) * log_x) * log_x
    }

    /// The inverse of [`Self::h_integral`].
    fn h_integral_inverse(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.theta)).max(-1.0);
        (ln1p_over(t) * y).exp()
    }
}

/// Checks an item count for [`Zipfian`].
fn check_items(items: u64) -> Result<()> {
    if (1..=MAX_ITEMS).contains(&items) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "zipfian: the item count must be in [1, 2^53], not {items}"
        )))
    }
}

/// `(e^t − 1) / t`, continuous at 0.
fn expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.exp_m1() / t
    } else {
        1.0 + t / 2.0 * (1.0 + t / 3.0)
    }
}

/// `ln(1 + t) / t`, continuous at 0.
fn ln1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.ln_1p() / t
    } else {
        1.0 - t * (0.5 - t / 3.0)
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the value's 8 little-endian bytes, then the absolute value
/// of the result read as a signed number.
///
/// ```
/// assert_eq!(workload::zipf::fnv64(0), 0x5738_07cd_d7e5_c63b);
/// ```
pub fn fnv64(value: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = value
        .to_le_bytes()
        .iter()
        .fold(OFFSET_BASIS, |hash, &octet| {
            (hash ^ u64::from(octet)).wrapping_mul(PRIME)
        });
    (hash as i64).unsigned_abs()
}

/// YCSB's scrambled Zipfian: item `fnv64(rank) mod n` for a Zipfian rank over 10^10 items, so the
/// popular items are scattered over the whole key space instead of being its first keys.
///
/// ```
/// use workload::zipf::{ScrambledZipfian, YCSB_THETA};
/// use rand::SeedableRng;
///
/// let zipf = ScrambledZipfian::new(1_000_000, YCSB_THETA)?;
/// let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
/// assert!((0..1_000).all(|_| zipf.sample(&mut rng) < 1_000_000));
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    items: u64,
    ranks: Zipfian,
}

impl ScrambledZipfian {
    /// The distribution over `items` records with exponent `theta` (YCSB: 0.99). Errors unless
    /// `items >= 1` and `theta` is finite and positive.
    pub fn new(items: u64, theta: f64) -> Result<Self> {
        if items == 0 {
            return Err(Error::invalid(
                "scrambled zipfian: at least one item is needed",
            ));
        }
        Ok(Self {
            items,
            ranks: Zipfian::new(YCSB_ITEM_COUNT, theta)?,
        })
    }

    /// The number of records.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// A record in `[0, n)`.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        fnv64(self.ranks.sample(rng)) % self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed;

    /// The exact probabilities of ranks `0..n`.
    fn pmf(n: u64, theta: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta)).collect();
        let zeta: f64 = weights.iter().sum();
        weights.iter().map(|w| w / zeta).collect()
    }

    /// Pearson's chi-square statistic of `counts` against `pmf` over `draws` draws.
    fn chi_square(counts: &[u64], pmf: &[f64], draws: u64) -> f64 {
        counts
            .iter()
            .zip(pmf)
            .map(|(&count, &p)| {
                let expected = p * draws as f64;
                (count as f64 - expected).powi(2) / expected
            })
            .sum()
    }

    fn histogram(zipf: &Zipfian, draws: u64, seed: u64) -> Vec<u64> {
        let mut rng = seed::rng(seed, 0);
        let mut counts = vec![0; zipf.items() as usize];
        for _ in 0..draws {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        counts
    }

    #[test]
    fn ycsb_zipfian_matches_its_theoretical_frequencies() {
        // 1M draws over 1,000 ranks: every expected count is at least 150. Gray's approximation,
        // used by YCSB, would fail both checks (rank 2 is 17 % too frequent there).
        let (n, draws) = (1_000, 1_000_000);
        let zipf = Zipfian::new(n, YCSB_THETA).expect("valid parameters");
        let counts = histogram(&zipf, draws, 1);
        let pmf = pmf(n, YCSB_THETA);
        for rank in 0..20 {
            let expected = pmf[rank] * draws as f64;
            let sigma = (expected * (1.0 - pmf[rank])).sqrt();
            let error = counts[rank] as f64 - expected;
            assert!(
                error.abs() < 5.0 * sigma,
                "rank {rank}: {} draws, {expected:.0} expected",
                counts[rank]
            );
        }
        // Chi-square with 999 degrees of freedom: mean 999, standard deviation 44.7; the bound is
        // the mean plus 6 standard deviations.
        let statistic = chi_square(&counts, &pmf, draws);
        assert!(statistic < 999.0 + 6.0 * 44.7, "chi-square {statistic}");
    }

    #[test]
    fn other_exponents_and_sizes_are_exact_too() {
        for theta in [0.5, 1.0, 1.5] {
            for n in [1, 2, 50] {
                let zipf = Zipfian::new(n, theta).expect("valid parameters");
                let draws = 200_000;
                let counts = histogram(&zipf, draws, 2);
                let dof = (n - 1).max(1) as f64;
                let statistic = chi_square(&counts, &pmf(n, theta), draws);
                assert!(
                    statistic < dof + 6.0 * (2.0 * dof).sqrt() + 10.0,
                    "θ {theta}, n {n}: {statistic}"
                );
            }
        }
    }

    #[test]
    fn resizing_changes_the_distribution_in_place() {
        let mut zipf = Zipfian::new(10, YCSB_THETA).expect("valid parameters");
        zipf.set_items(1_000).expect("valid size");
        let fresh = Zipfian::new(1_000, YCSB_THETA).expect("valid parameters");
        assert_eq!(histogram(&zipf, 10_000, 3), histogram(&fresh, 10_000, 3));
        assert!(zipf.set_items(0).is_err());
    }

    #[test]
    fn huge_item_counts_work() {
        let zipf = Zipfian::new(YCSB_ITEM_COUNT, YCSB_THETA).expect("valid parameters");
        let mut rng = seed::rng(4, 0);
        let draws = 1_000_000;
        let zeros = (0..draws).filter(|_| zipf.sample(&mut rng) == 0).count() as f64;
        // YCSB's precomputed ζ(10^10, 0.99).
        let p0 = 1.0 / 26.469_028_201_783_02;
        let sigma = (draws as f64 * p0 * (1.0 - p0)).sqrt();
        assert!(
            (zeros - p0 * draws as f64).abs() < 5.0 * sigma,
            "{zeros} zeros"
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        for theta in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Zipfian::new(10, theta).is_err());
        }
        assert!(Zipfian::new(0, YCSB_THETA).is_err());
        assert!(Zipfian::new(MAX_ITEMS + 1, YCSB_THETA).is_err());
        assert!(ScrambledZipfian::new(0, YCSB_THETA).is_err());
    }

    #[test]
    fn scrambled_spreads_the_hottest_record() {
        let n = 1_000;
        let zipf = ScrambledZipfian::new(n, YCSB_THETA).expect("valid parameters");
        let mut rng = seed::rng(5, 0);
        let draws = 1_000_000u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        let hottest = (0..n as usize).max_by_key(|&i| counts[i]).expect("n > 0");
        assert_eq!(hottest as u64, fnv64(0) % n, "rank 0 is the hottest record");
        // Its share is rank 0's 1/ζ(10^10) plus a thousandth of the ranks that share its slot.
        let share = counts[hottest] as f64 / draws as f64;
        let p0 = 1.0 / 26.469_028_201_783_02;
        assert!((p0..p0 + 0.004).contains(&share), "hottest share {share}");
        // The ten hottest records are spread over the key space, not packed at its start.
        let mut by_heat: Vec<usize> = (0..n as usize).collect();
        by_heat.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        let spread =
            by_heat[..10].iter().max().expect("ten") - by_heat[..10].iter().min().expect("ten");
        assert!(spread > n as usize / 2, "hot records span {spread}");
    }

    #[test]
    fn fnv_is_ycsbs() {
        // FNV-1a of eight zero bytes, 0xa8c7f832281a39c5, has its top bit set: YCSB takes its
        // absolute value as a signed number.
        assert_eq!(fnv64(0), 0xa8c7_f832_281a_39c5_u64.wrapping_neg());
        assert_ne!(fnv64(1), fnv64(2));
    }
}
