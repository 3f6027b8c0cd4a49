//! XIndex-R's configuration: the thresholds of the adjustment policy (§3.3, Table 2; defaults
//! from §6.1.4), the compaction trigger of the reference code, the background schedule, and the
//! initial grouping parameters (§3.4.2 for string keys).

use std::time::Duration;

use crate::xindex::error::Error;

/// The parameters of an [`XIndex`](crate::xindex::XIndex); [`Config::default`] gives the
/// paper's values.
///
/// ```
/// use range_index::xindex::Config;
///
/// let config = Config {
///     background_threads: 0, // only explicit `maintenance_step`/`quiesce`
///     ..Config::default()
/// };
/// assert!(config.validate().is_ok());
/// assert!(Config { error_bound: 0, ..config }.validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `e`: the error bound, in positions, a group's models should stay within (32).
    pub error_bound: usize,
    /// `s`: the delta-index size above which a group splits (256).
    pub delta_threshold: usize,
    /// `f`: the tolerance factor of the merge triggers, in `(0, 1)` (1/4).
    pub tolerance: f64,
    /// `m`: the most models one group may hold (4).
    pub max_models: usize,
    /// The pause between two background passes (1 s).
    pub period: Duration,
    /// How many background threads the index owns (1, at most 256); 0 runs no background
    /// work, leaving it to explicit [`maintenance_step`](crate::OrderedIndex::maintenance_step) and
    /// [`quiesce`](crate::OrderedIndex::quiesce) calls. Several threads compact disjoint
    /// shares of the groups at the same time; the first also runs the other changes.
    pub background_threads: usize,
    /// A group is compacted when its delta index holds more than this many keys (8, the
    /// reference code's `buffer_compact_threshold`) and more than its share set by
    /// `compaction_ratio`; 0 and 0 compact any non-empty delta. It is also compacted when more
    /// than this many of its array's records, and more than half of them, are removed.
    pub compaction_threshold: usize,
    /// A group is compacted only once its delta index holds more than `1/compaction_ratio` of
    /// its array's keys (64; 0: no such condition): a compaction copies the whole array, so
    /// this bounds the records copied per buffered key (README design notes, "Compaction
    /// trigger").
    pub compaction_ratio: usize,
    /// The most keys one group holds after a bulk load, the most two groups may hold together
    /// to be merged, and the most each piece of a split holds: a group holding more is split
    /// into as many pieces as it takes, up to 16 in one pass (65,536).
    pub max_group_size: usize,
    /// `et`: the largest mean model error of a group of string keys built by greedy grouping
    /// (50, the paper's value for random strings).
    pub string_error_threshold: f64,
    /// `pt`: the longest partial key, in bytes, of a group of string keys built by greedy
    /// grouping (16). The paper uses 4 for random strings and 40 for quotes; with 4, natural
    /// keys (words, e-mail addresses) whose neighbours share long prefixes fall into groups
    /// of one or two keys (663K words gave 437K groups), while 16 gives groups of hundreds of
    /// keys on words, e-mails and random strings alike.
    pub string_partial_len: usize,
    /// The user's hint that keys are mostly inserted in ascending order (§3.5.2; false):
    /// groups keep as much spare capacity as they hold keys (at least 64 slots), and a new key
    /// above a group's last key is appended to its array under a per-group lock instead of
    /// going through the delta index. Every insert of a new key then takes that lock.
    pub sequential_inserts: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            error_bound: 32,
            delta_threshold: 256,
            tolerance: 0.25,
            max_models: 4,
            period: Duration::from_secs(1),
            background_threads: 1,
            compaction_threshold: 8,
            compaction_ratio: 64,
            max_group_size: 1 << 16,
            string_error_threshold: 50.0,
            string_partial_len: 16,
            sequential_inserts: false,
        }
    }
}

/// The largest accepted `max_models`: models are scanned linearly on every lookup.
pub const MAX_MODELS: usize = 64;

impl Config {
    /// The spare slots a group of `len` keys is built with.
    pub(crate) fn spare_for(&self, len: usize) -> usize {
        if self.sequential_inserts {
            len.max(64)
        } else {
            0
        }
    }

    /// Checks every parameter against its accepted range.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::InvalidConfig { field, reason });
        if self.error_bound == 0 {
            return invalid("error_bound", "must be at least 1");
        }
        if self.delta_threshold == 0 {
            return invalid("delta_threshold", "must be at least 1");
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return invalid("tolerance", "must lie strictly between 0 and 1");
        }
        if self.max_models == 0 || self.max_models > MAX_MODELS {
            return invalid("max_models", "must lie in 1..=64");
        }
        if self.background_threads > concurrency::workers::MAX_THREADS {
            return invalid("background_threads", "must be at most 256");
        }
        if self.background_threads > 0 && self.period.is_zero() {
            return invalid("period", "must be positive when background threads run");
        }
        if self.max_group_size == 0 {
            return invalid("max_group_size", "must be at least 1");
        }
        if !(self.string_error_threshold.is_finite() && self.string_error_threshold > 0.0) {
            return invalid("string_error_threshold", "must be positive and finite");
        }
        if self.string_partial_len == 0 {
            return invalid("string_partial_len", "must be at least 1");
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
            (
                config.error_bound,
                config.delta_threshold,
                config.max_models
            ),
            (32, 256, 4)
        );
        assert_eq!(config.tolerance, 0.25);
        assert_eq!(config.period, Duration::from_secs(1));
        assert_eq!(
            (config.compaction_threshold, config.compaction_ratio),
            (8, 64)
        );
        config.validate().expect("the defaults are valid");
    }

    #[test]
    fn every_out_of_range_field_is_named() {
        let base = Config::default();
        let cases = [
            (
                Config {
                    error_bound: 0,
                    ..base.clone()
                },
                "error_bound",
            ),
            (
                Config {
                    delta_threshold: 0,
                    ..base.clone()
                },
                "delta_threshold",
            ),
            (
                Config {
                    tolerance: 1.0,
                    ..base.clone()
                },
                "tolerance",
            ),
            (
                Config {
                    tolerance: f64::NAN,
                    ..base.clone()
                },
                "tolerance",
            ),
            (
                Config {
                    max_models: 0,
                    ..base.clone()
                },
                "max_models",
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
                    max_models: MAX_MODELS + 1,
                    ..base.clone()
                },
                "max_models",
            ),
            (
                Config {
                    period: Duration::ZERO,
                    ..base.clone()
                },
                "period",
            ),
            (
                Config {
                    max_group_size: 0,
                    ..base.clone()
                },
                "max_group_size",
            ),
            (
                Config {
                    string_error_threshold: -1.0,
                    ..base.clone()
                },
                "string_error_threshold",
            ),
            (
                Config {
                    string_partial_len: 0,
                    ..base.clone()
                },
                "string_partial_len",
            ),
        ];
        for (config, field) in cases {
            match config.validate() {
                Err(Error::InvalidConfig { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{field}: expected an error, got {other:?}"),
            }
        }
        let no_threads = Config {
            period: Duration::ZERO,
            background_threads: 0,
            ..base
        };
        assert!(
            no_threads.validate().is_ok(),
            "no period needed without threads"
        );
    }
}
