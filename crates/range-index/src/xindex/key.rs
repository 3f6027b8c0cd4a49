//! What XIndex-R needs of a key type beyond [`Key`]: the root model over group pivots (§3.1.1
//! for integers: a two-stage RMI; §3.4.3 for strings: a piecewise-linear root) and the
//! initial grouping of a bulk load (integers: optimal piecewise-linear segments under the error
//! bound `e`; strings: greedy grouping, Algorithm 7).
//!
//! The group-level models are the key's own [`Key::Model`]: [`learned_model::LinearModel`]
//! for `u64`, [`learned_model::StringModel`] for byte strings, which carries its partial-key
//! layout (§3.4.1), so partial keys are per model and therefore per group.

use std::fmt::Debug;
use std::ops::Range;

use learned_model::{GreedyGrouping, Key, PiecewiseRoot, Rmi, optimal_segments};

use crate::xindex::config::Config;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for Vec<u8> {}
}

/// A key type XIndex-R can index: `u64` or `Vec<u8>` (sealed).
pub trait IndexKey: Key + sealed::Sealed {
    /// The root model that predicts a group from a key.
    type RootModel: Debug + Send + Sync;

    /// Trains the root model over the groups' pivots (non-empty, strictly increasing).
    fn train_root(pivots: &[Self], config: &Config) -> Self::RootModel;

    /// The index of the last pivot `<= key`, or 0 when `key` is below every pivot (the first
    /// group's pivot acts as minus infinity, §3.1).
    fn route(model: &Self::RootModel, pivots: &[Self], key: &Self::Query) -> usize;

    /// Splits the strictly increasing `keys` of a bulk load into the key ranges of the initial
    /// groups, in order, covering every key (each range non-empty).
    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>>;

    /// The smallest key: the pivot of the one group of an empty index.
    fn min_key() -> Self;

    /// An owned key equal to `query`.
    fn from_query(query: &Self::Query) -> Self;

    /// Heap bytes the key owns beyond `size_of::<Self>()`, for memory statistics.
    fn heap_bytes(&self) -> usize;
}

/// The index of the last pivot `<= key`, given the lower bound `lb` of `key` in `pivots`.
fn last_at_or_below<K: Key>(pivots: &[K], key: &K::Query, lb: usize) -> usize {
    if pivots.get(lb).is_some_and(|p| p.borrow() == key) {
        lb
    } else {
        lb.saturating_sub(1)
    }
}

/// `ranges` with every range longer than `max` cut into pieces of at most `max` keys.
fn cap_ranges(ranges: impl IntoIterator<Item = Range<usize>>, max: usize) -> Vec<Range<usize>> {
    ranges
        .into_iter()
        .flat_map(|range| {
            range
                .clone()
                .step_by(max)
                .map(move |start| start..(start + max).min(range.end))
        })
        .collect()
}

impl IndexKey for u64 {
    type RootModel = Rmi;

    fn train_root(pivots: &[Self], _config: &Config) -> Rmi {
        Rmi::build(pivots, (pivots.len() / 4).max(1))
            .expect("pivots are non-empty and strictly increasing")
    }

    #[inline]
    fn route(model: &Rmi, pivots: &[Self], key: &u64) -> usize {
        last_at_or_below(pivots, key, model.lower_bound(pivots, *key))
    }

    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>> {
        let segments = optimal_segments(keys, config.error_bound as u64)
            .expect("bulk-load keys are non-empty and strictly increasing");
        cap_ranges(
            segments.into_iter().map(|segment| segment.range),
            config.max_group_size,
        )
    }

    fn min_key() -> Self {
        0
    }

    fn from_query(query: &u64) -> Self {
        *query
    }

    fn heap_bytes(&self) -> usize {
        0
    }
}

/// The greedy grouping parameters of `config` (`et`, `pt`; the crate's default steps).
fn grouping(config: &Config) -> GreedyGrouping {
    GreedyGrouping {
        error_threshold: config.string_error_threshold,
        max_partial_len: config.string_partial_len,
        ..GreedyGrouping::default()
    }
}

impl IndexKey for Vec<u8> {
    type RootModel = PiecewiseRoot<Vec<u8>>;

    fn train_root(pivots: &[Self], config: &Config) -> Self::RootModel {
        PiecewiseRoot::build_grouped(pivots, &grouping(config))
            .expect("pivots are non-empty and strictly increasing; the steps are valid")
    }

    #[inline]
    fn route(model: &Self::RootModel, pivots: &[Self], key: &[u8]) -> usize {
        last_at_or_below(pivots, key, model.lower_bound(pivots, key))
    }

    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>> {
        let ranges = grouping(config)
            .groups(keys)
            .expect("bulk-load keys are non-empty and strictly increasing; the steps are valid");
        cap_ranges(ranges, config.max_group_size)
    }

    fn min_key() -> Self {
        Vec::new()
    }

    fn from_query(query: &[u8]) -> Self {
        query.to_vec()
    }

    fn heap_bytes(&self) -> usize {
        self.capacity()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn integer_routing_finds_the_last_pivot_at_or_below() {
        let pivots: Vec<u64> = vec![10, 20, 30, 1_000];
        let root = u64::train_root(&pivots, &Config::default());
        let route = |key| u64::route(&root, &pivots, &key);
        assert_eq!(route(0), 0, "below every pivot: the first group");
        assert_eq!(route(10), 0);
        assert_eq!(route(19), 0);
        assert_eq!(route(20), 1);
        assert_eq!(route(999), 2);
        assert_eq!(route(u64::MAX), 3);
    }

    #[test]
    fn string_routing_handles_prefixes() {
        let pivots: Vec<Vec<u8>> = vec![b"a".to_vec(), b"ab".to_vec(), b"b".to_vec()];
        let root = Vec::<u8>::train_root(&pivots, &Config::default());
        let route = |key: &[u8]| Vec::<u8>::route(&root, &pivots, key);
        assert_eq!(route(b""), 0);
        assert_eq!(route(b"a"), 0);
        assert_eq!(route(b"aa"), 0);
        assert_eq!(route(b"ab"), 1);
        assert_eq!(route(b"abz"), 1);
        assert_eq!(route(b"zz"), 2);
    }

    #[test]
    fn initial_groups_cover_every_key_within_the_cap() {
        let keys: Vec<u64> = (0..1_000u64).map(|i| i * i).collect();
        let config = Config {
            max_group_size: 7,
            error_bound: 2,
            ..Config::default()
        };
        let ranges = u64::initial_groups(&keys, &config);
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(keys.len()));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= 7));

        let strings: Vec<Vec<u8>> = (0..300u32)
            .map(|i| format!("k{i:05}").into_bytes())
            .collect();
        let ranges = Vec::<u8>::initial_groups(&strings, &config);
        assert_eq!(ranges.last().map(|r| r.end), Some(strings.len()));
        assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= 7));
    }
}
