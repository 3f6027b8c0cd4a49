//! Which loaded key a read, update, scan or read-modify-write addresses: YCSB's request
//! distributions (uniform, Zipfian, scrambled Zipfian, latest) and the hotspots of XIndex §6.3
//! (Table 1: 95 % of queries on 5 % of the keys; Fig. 13: 90 % of queries on a hotspot of varying
//! size starting at the same key).
//!
//! Positions are ranks in the sorted loaded keys, so a hotspot is a contiguous key range and an
//! unscrambled Zipfian makes the smallest keys the hottest.

use rand::{Rng, RngExt};

use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::seed;
use crate::zipf::{ScrambledZipfian, YCSB_THETA, Zipfian};

/// The request distribution over the loaded keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    /// Every loaded key equally likely.
    Uniform,
    /// Zipfian over the key ranks: the smallest key is the hottest, hot keys are adjacent.
    Zipfian {
        /// The exponent (YCSB: 0.99).
        theta: f64,
    },
    /// YCSB's default: Zipfian popularity, scattered over the key space with the FNV hash.
    ScrambledZipfian {
        /// The exponent (YCSB: 0.99).
        theta: f64,
    },
    /// YCSB's "latest" (workload D): Zipfian over insertion order, the newest record hottest. The
    /// loaded keys count as inserted in a seeded random order before the run; each thread then
    /// sees its own inserts as the newest (threads do not share their insert counters). "Latest"
    /// is per thread: no thread ever reads a key another thread inserted, so with several threads
    /// the globally newest records are not the hottest.
    Latest {
        /// The exponent (YCSB: 0.99).
        theta: f64,
    },
    /// A fraction `probability` of the requests go uniformly to the keys of rank
    /// `[start, start + size) × n`, the rest uniformly to the other keys.
    Hotspot {
        /// Where the hot range begins, as a fraction of the key ranks.
        start: f64,
        /// The hot range's size, as a fraction of the key ranks (XIndex's "hotspot ratio").
        size: f64,
        /// The fraction of requests that go to the hot range.
        probability: f64,
    },
}

impl KeyDistribution {
    /// YCSB's default request distribution: scrambled Zipfian with θ = 0.99.
    pub const YCSB: Self = Self::ScrambledZipfian { theta: YCSB_THETA };

    /// XIndex Fig. 13's hotspot: 90 % of the requests on the first `size` fraction of the keys.
    pub fn hotspot(size: f64) -> Self {
        Self::Hotspot {
            start: 0.0,
            size,
            probability: 0.9,
        }
    }

    /// A short label for reports, e.g. `zipf0.99`, `hot0.05@0.94:0.9`.
    pub fn label(&self) -> String {
        match self {
            Self::Uniform => "uniform".into(),
            Self::Zipfian { theta } => format!("zipf{theta}"),
            Self::ScrambledZipfian { theta } => format!("scrambled-zipf{theta}"),
            Self::Latest { theta } => format!("latest{theta}"),
            Self::Hotspot {
                start,
                size,
                probability,
            } => format!("hot{size}@{start}:{probability}"),
        }
    }
}

/// The outcome of a draw: a loaded key's rank, or (for [`KeyDistribution::Latest`]) the `j`-th key
/// this thread inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The loaded key of this rank.
    Loaded(usize),
    /// The thread's `j`-th insert.
    Inserted(u64),
}

/// A thread's sampler for a [`KeyDistribution`] over `n` loaded keys.
#[derive(Debug, Clone)]
pub(crate) enum Chooser {
    Uniform {
        n: usize,
    },
    Zipfian(Zipfian),
    Scrambled(ScrambledZipfian),
    Latest {
        loaded: u64,
        zipf: Zipfian,
        order: Permutation,
    },
    Hotspot {
        n: usize,
        hot_start: usize,
        hot_len: usize,
        probability: f64,
    },
}

impl Chooser {
    /// A sampler over `n > 0` loaded keys; parameters out of range are errors.
    pub(crate) fn new(distribution: &KeyDistribution, n: usize, seed: u64) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid(
                "reads, updates and scans need at least one loaded key",
            ));
        }
        Ok(match *distribution {
            KeyDistribution::Uniform => Self::Uniform { n },
            KeyDistribution::Zipfian { theta } => Self::Zipfian(Zipfian::new(n as u64, theta)?),
            KeyDistribution::ScrambledZipfian { theta } => {
                Self::Scrambled(ScrambledZipfian::new(n as u64, theta)?)
            }
            KeyDistribution::Latest { theta } => Self::Latest {
                loaded: n as u64,
                zipf: Zipfian::new(n as u64, theta)?,
                // The same order in every thread: the records' shared load history.
                order: Permutation::new(n as u64, seed),
            },
            KeyDistribution::Hotspot {
                start,
                size,
                probability,
            } => {
                let fraction = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
                if !(fraction(start)
                    && fraction(size)
                    && fraction(probability)
                    && start + size <= 1.0
                    && size > 0.0)
                {
                    return Err(Error::invalid(format!(
                        "hotspot: need 0 <= start, 0 < size, start + size <= 1 and 0 <= probability <= 1 \
                         (got start {start}, size {size}, probability {probability})"
                    )));
                }
                let hot_start = ((start * n as f64) as usize).min(n - 1);
                let hot_len = ((size * n as f64).round() as usize).clamp(1, n - hot_start);
                Self::Hotspot {
                    n,
                    hot_start,
                    hot_len,
                    probability,
                }
            }
        })
    }

    /// A key, given how many keys this thread has inserted so far.
    pub(crate) fn pick(&mut self, rng: &mut impl Rng, inserted: u64) -> Pick {
        match self {
            Self::Uniform { n } => Pick::Loaded(rng.random_range(0..*n)),
            Self::Zipfian(zipf) => Pick::Loaded(zipf.sample(rng) as usize),
            Self::Scrambled(zipf) => Pick::Loaded(zipf.sample(rng) as usize),
            Self::Latest {
                loaded,
                zipf,
                order,
            } => {
                let count = (*loaded + inserted).min(crate::zipf::MAX_ITEMS);
                zipf.set_items(count)
                    .expect("1 <= count <= MAX_ITEMS: at least one key is loaded");
                let newest_first = count - 1 - zipf.sample(rng);
                if newest_first < *loaded {
                    Pick::Loaded(order.apply(newest_first) as usize)
                } else {
                    Pick::Inserted(newest_first - *loaded)
                }
            }
            Self::Hotspot {
                n,
                hot_start,
                hot_len,
                probability,
            } => {
                let cold = *n - *hot_len;
                if cold == 0 || rng.random_bool(*probability) {
                    Pick::Loaded(*hot_start + rng.random_range(0..*hot_len))
                } else {
                    let rank = rng.random_range(0..cold);
                    Pick::Loaded(if rank < *hot_start {
                        rank
                    } else {
                        rank + *hot_len
                    })
                }
            }
        }
    }
}

/// The seed of the load order shared by every thread's [`KeyDistribution::Latest`] sampler.
pub(crate) fn load_order_seed(seed: u64) -> u64 {
    seed::derive(seed, seed::stream::LOAD_ORDER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(distribution: KeyDistribution, n: usize, count: usize, inserted: u64) -> Vec<Pick> {
        let mut chooser = Chooser::new(&distribution, n, 1).expect("valid distribution");
        let mut rng = seed::rng(3, 0);
        (0..count)
            .map(|_| chooser.pick(&mut rng, inserted))
            .collect()
    }

    #[test]
    fn every_pick_is_in_range() {
        for distribution in [
            KeyDistribution::Uniform,
            KeyDistribution::Zipfian { theta: 0.99 },
            KeyDistribution::YCSB,
            KeyDistribution::Latest { theta: 0.99 },
            KeyDistribution::hotspot(0.05),
            KeyDistribution::Hotspot {
                start: 0.95,
                size: 0.05,
                probability: 0.95,
            },
        ] {
            for n in [1, 2, 1_000] {
                for pick in draws(distribution, n, 10_000, 0) {
                    assert!(
                        matches!(pick, Pick::Loaded(rank) if rank < n),
                        "{distribution:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn hotspot_gets_its_share() {
        let n = 100_000;
        let hot = KeyDistribution::Hotspot {
            start: 0.35,
            size: 0.05,
            probability: 0.9,
        };
        let picks = draws(hot, n, 100_000, 0);
        let in_hot = picks
            .iter()
            .filter(|p| matches!(p, Pick::Loaded(r) if (35_000..40_000).contains(r)))
            .count();
        assert!((89_000..91_000).contains(&in_hot), "{in_hot} hot picks");
    }

    #[test]
    fn latest_prefers_the_newest_inserts() {
        let picks = draws(
            KeyDistribution::Latest { theta: 0.99 },
            1_000,
            100_000,
            1_000,
        );
        let newest = picks.iter().filter(|&&p| p == Pick::Inserted(999)).count();
        let inserted = picks
            .iter()
            .filter(|p| matches!(p, Pick::Inserted(j) if *j < 1_000))
            .count();
        // Rank 0 of 2,000 has probability 1 / ζ(2000, 0.99) ≈ 11.8 %; the newest half ≈ 91 %.
        assert!(
            (11_000..13_500).contains(&newest),
            "{newest} picks of the newest key"
        );
        assert!(inserted > 88_000, "{inserted} picks of inserted keys");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let bad = [
            KeyDistribution::Hotspot {
                start: 0.9,
                size: 0.2,
                probability: 0.9,
            },
            KeyDistribution::Hotspot {
                start: 0.0,
                size: 0.0,
                probability: 0.9,
            },
            KeyDistribution::Hotspot {
                start: 0.0,
                size: 0.1,
                probability: 1.5,
            },
            KeyDistribution::Hotspot {
                start: f64::NAN,
                size: 0.1,
                probability: 0.5,
            },
            KeyDistribution::Zipfian { theta: -1.0 },
        ];
        for distribution in bad {
            assert!(
                Chooser::new(&distribution, 10, 1).is_err(),
                "{distribution:?}"
            );
        }
        assert!(Chooser::new(&KeyDistribution::Uniform, 0, 1).is_err());
    }
}
