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
    /// `upper_lf`: a group whose live keys per bucket exceed this grows (1.5).
    pub upper_load_factor: f64,
    /// `lower_lf`: a group whose live keys per bucket fall under this shrinks (0.5).
    pub lower_load_factor: f64,
    /// The keys per bucket a resized or bulk-loaded group starts with (1.0); must lie strictly
    /// between the two triggers.
    pub target_load_factor: f64,
    /// The fewest buckets a group has (8); small groups are never shrunk below it.
    pub min_buckets: usize,
    /// The number of groups of an index created empty by [`XIndexH::new`](crate::XIndexH::new)
    /// (64). The root is fixed at construction; groups grow and shrink. Fewer, larger groups
    /// keep the few cache lines of each group's header that every insert touches in cache (see
    /// the module comment).
    pub initial_groups: usize,
    /// The keys per group a bulk load aims at (1,048,576).
    pub group_size: usize,
    /// How many background threads the index owns (1); 0 runs no background work, leaving
    /// resizes to explicit [`maintenance_step`](crate::HashIndex::maintenance_step) and
    /// [`quiesce`](crate::HashIndex::quiesce) calls.
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

/// The largest accepted group count, and the largest `min_buckets`.
pub const MAX_GROUPS: usize = 1 << 24;

/// The most buckets an empty index may start with (`initial_groups × min_buckets`).
const MAX_INITIAL_BUCKETS: usize = 1 << 28;

impl Config {
    /// Checks every parameter against its accepted range.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        let finite_positive = |x: f64| x.is_finite() && x > 0.0;
        if !finite_positive(self.lower_load_factor) {
            return invalid("lower_load_factor", "must be positive and finite");
        }
        if !finite_positive(self.upper_load_factor) {
            return invalid("upper_load_factor", "must be positive and finite");
        }
        if !(self.target_load_factor > self.lower_load_factor
            && self.target_load_factor < self.upper_load_factor)
        {
            return invalid(
                "target_load_factor",
                "must lie strictly between lower_load_factor and upper_load_factor",
            );
        }
        if self.min_buckets == 0 || self.min_buckets > MAX_GROUPS {
            return invalid("min_buckets", "must lie in 1..=2^24");
        }
        if self.initial_groups == 0 || self.initial_groups > MAX_GROUPS {
            return invalid("initial_groups", "must lie in 1..=2^24");
        }
        if self.initial_groups.saturating_mul(self.min_buckets) > MAX_INITIAL_BUCKETS {
            return invalid(
                "initial_groups",
                "times min_buckets must be at most 2^28 (the buckets of an empty index)",
            );
        }
        if self.group_size == 0 {
            return invalid("group_size", "must be at least 1");
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
                    initial_groups: 1 << 20,
                    min_buckets: 1 << 20,
                    ..base.clone()
                },
                "initial_groups",
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
