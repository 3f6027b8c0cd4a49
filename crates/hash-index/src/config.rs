//! XIndex-H's configuration (§3.6, §6.1.4 of the paper; digest §5): the load factors that
//! trigger a resize, the group layout, and the background schedule.
//!
//! Decisions on the digest's gaps (§3.18, §9): the resize target size, which the paper leaves
//! open, is `records / target_load_factor` buckets (1.0 by default, the digest's
//! recommendation); the background pass interval is much shorter than the paper's 1 s because
//! XIndex-H's groups fill up within milliseconds when an index grows from empty at millions of
//! inserts per second, and a pass that finds nothing to do costs one read of each group's
//! counters. The paper leaves the group size open too: a bulk load aims at about a million keys
//! per group, so that each bucket array spans many 2 MiB pages and takes transparent huge pages
//! (`concurrency::large_array`); with groups of 16,384 keys (arrays of about 400 KiB) every
//! lookup's bucket miss also missed the TLB, and point gets on 10M keys ran at 6.8 Mops/s
//! instead of 7.4. An empty index starts with 64 groups: every insert touches its group's
//! header, counters and chain-arena lines, and with 1,024 groups growing to 10M keys those
//! lines left the cache between two inserts into a group (inserts took 10–20% longer, in a
//! single-threaded growth with resizes run inline).

use std::time::Duration;

use crate::error::Error;

/// The parameters of an [`XIndexH`](crate::XIndexH); [`Config::default`] gives the paper's
/// load factors.
///
/// ```
/// use hash_index::Config;
///
/// let config = Config { background_threads: 0, ..Config::default() };
/// assert!(config.validate().is_ok());
/// assert!(Config { upper_load_factor: 0.4, ..config }.validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `upper_lf`: a group whose live keys per bucket exceed this grows (1.5). Every load
    /// factor lies in 1/64..=64.
    pub upper_load_factor: f64,
    /// `lower_lf`: a group whose live keys per bucket fall under this shrinks (0.5).
    pub lower_load_factor: f64,
    /// The keys per bucket a resized or bulk-loaded group starts with (1.0); must lie strictly
    /// between the two triggers.
    pub target_load_factor: f64,
    /// The fewest buckets a group has (8, at most 2^16); small groups are never shrunk below
    /// it.
    pub min_buckets: usize,
    /// The number of groups of an index created empty by [`XIndexH::new`](crate::XIndexH::new)
    /// (64, at most 2^16, and at most 2^24 buckets in all). The root is fixed at
    /// construction; groups grow and shrink. Fewer, larger groups keep the few cache lines of
    /// each group's header that every insert touches in cache (see the module comment).
    pub initial_groups: usize,
    /// The keys per group a bulk load aims at (1,048,576).
    pub group_size: usize,
    /// How many background threads the index owns (1, at most 256); 0 runs no background
    /// work, leaving resizes to explicit [`maintenance_step`](crate::HashIndex::maintenance_step)
    /// and [`quiesce`](crate::HashIndex::quiesce) calls.
    pub background_threads: usize,
    /// The pause between two background passes (2 ms) while inserts and removes change the
    /// number of keys; with none, a thread sleeps twice as long after each period without
    /// work, up to a second (then it passes once a second), and such a write wakes it.
    pub period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            upper_load_factor: 1.5,
            lower_load_factor: 0.5,
            target_load_factor: 1.0,
            min_buckets: 8,
            initial_groups: 64,
            group_size: 1 << 20,
            background_threads: 1,
            period: Duration::from_millis(2),
        }
    }
}

/// The most groups a bulk load makes.
pub const MAX_GROUPS: usize = 1 << 24;

/// The most groups an empty index may start with (each costs about 1 KiB while empty).
const MAX_INITIAL_GROUPS: usize = 1 << 16;

/// The largest accepted `min_buckets`.
const MAX_MIN_BUCKETS: usize = 1 << 16;

/// The most buckets an empty index may start with (`initial_groups × min_buckets`).
const MAX_INITIAL_BUCKETS: usize = 1 << 24;

/// The accepted load factors: from one key per 64 buckets to 64 keys per bucket (a resize
/// sizes a group at `keys / target_load_factor` buckets, so the lower bound bounds its
/// memory).
const LOAD_FACTORS: std::ops::RangeInclusive<f64> = (1.0 / 64.0)..=64.0;

impl Config {
    /// Checks every parameter against its accepted range.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if !LOAD_FACTORS.contains(&self.lower_load_factor) {
            return invalid("lower_load_factor", "must lie in 1/64..=64");
        }
        if !LOAD_FACTORS.contains(&self.upper_load_factor) {
            return invalid("upper_load_factor", "must lie in 1/64..=64");
        }
        if !(self.target_load_factor > self.lower_load_factor
            && self.target_load_factor < self.upper_load_factor)
        {
            return invalid(
                "target_load_factor",
                "must lie strictly between lower_load_factor and upper_load_factor",
            );
        }
        if self.min_buckets == 0 || self.min_buckets > MAX_MIN_BUCKETS {
            return invalid("min_buckets", "must lie in 1..=2^16");
        }
        if self.initial_groups == 0 || self.initial_groups > MAX_INITIAL_GROUPS {
            return invalid("initial_groups", "must lie in 1..=2^16");
        }
        if self.initial_groups * self.min_buckets > MAX_INITIAL_BUCKETS {
            return invalid(
                "initial_groups",
                "times min_buckets must be at most 2^24 (the buckets of an empty index)",
            );
        }
        if self.group_size == 0 {
            return invalid("group_size", "must be at least 1");
        }
        if self.background_threads > concurrency::workers::MAX_THREADS {
            return invalid("background_threads", "must be at most 256");
        }
        if self.background_threads > 0 && self.period.is_zero() {
            return invalid("period", "must be positive when background threads run");
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_papers_and_valid() {
        let config = Config::default();
        assert_eq!(
            (config.upper_load_factor, config.lower_load_factor),
            (1.5, 0.5)
        );
        config.validate().expect("the defaults are valid");
    }

    #[test]
    fn every_out_of_range_field_is_named() {
        let base = Config::default();
        let cases = [
            (
                Config {
                    lower_load_factor: f64::NAN,
                    ..base.clone()
                },
                "lower_load_factor",
            ),
            (
                Config {
                    upper_load_factor: 0.0,
                    ..base.clone()
                },
                "upper_load_factor",
            ),
            (
                Config {
                    upper_load_factor: 0.9,
                    ..base.clone()
                },
                "target_load_factor",
            ),
            (
                Config {
                    min_buckets: 0,
                    ..base.clone()
                },
                "min_buckets",
            ),
            (
                Config {
                    initial_groups: 0,
                    ..base.clone()
                },
                "initial_groups",
            ),
            (
                Config {
                    lower_load_factor: 1e-300,
                    target_load_factor: 1e-299,
                    ..base.clone()
                },
                "lower_load_factor",
            ),
            (
                Config {
                    upper_load_factor: 65.0,
                    ..base.clone()
                },
                "upper_load_factor",
            ),
            (
                Config {
                    min_buckets: 1 << 17,
                    ..base.clone()
                },
                "min_buckets",
            ),
            (
                Config {
                    initial_groups: 1 << 17,
                    ..base.clone()
                },
                "initial_groups",
            ),
            (
                Config {
                    initial_groups: 1 << 16,
                    min_buckets: 1 << 9,
                    ..base.clone()
                },
                "initial_groups",
            ),
            (
                Config {
                    background_threads: 257,
                    ..base.clone()
                },
                "background_threads",
            ),
            (
                Config {
                    group_size: 0,
                    ..base.clone()
                },
                "group_size",
            ),
            (
                Config {
                    period: Duration::ZERO,
                    ..base.clone()
                },
                "period",
            ),
        ];
        for (config, field) in cases {
            match config.validate() {
                Err(Error::InvalidConfig { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{field}: expected an error, got {other:?}"),
            }
        }
    }
}
