//! The piecewise-linear root (XIndex §3.4.3): a sequence of models over disjoint key ranges,
//! found by binary search over the ranges' first keys, each predicting positions with its own
//! error bounds (and, for strings, its own partial keys).
//!
//! XIndex builds it over group pivots for string keys, where one RMI leaf would span distant
//! pivots and lose their common prefixes. Integer pieces come from the optimal PLA, string
//! pieces from greedy grouping.

use std::ops::Range;

use crate::error::{Error, Result, check_sorted};
use crate::grouping::GreedyGrouping;
use crate::key::Key;
use crate::model::KeyModel;
use crate::segmentation::optimal_segments;

/// A piecewise-linear model over sorted keys.
///
/// ```
/// use learned_model::PiecewiseRoot;
/// let keys: Vec<u64> = (0..50_000u64).map(|i| i * i).collect();
/// let root = PiecewiseRoot::build_optimal(&keys, 16).unwrap();
/// assert_eq!(root.lower_bound(&keys, &keys[31_337]), 31_337);
/// assert_eq!(root.lower_bound(&keys, &(keys[100] + 1)), 101);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PiecewiseRoot<K: Key> {
    first_keys: Vec<K>,
    starts: Vec<usize>,
    models: Vec<K::Model>,
    len: usize,
}

impl<K: Key> PiecewiseRoot<K> {
    /// Builds one piece per range of `keys`; the ranges must be non-empty, contiguous and
    /// cover `0..keys.len()` in order.
    pub fn from_ranges(keys: &[K], ranges: &[Range<usize>]) -> Result<Self> {
        check_sorted(keys)?;
        let mut expected_start = 0;
        for range in ranges {
            if range.start != expected_start || range.end <= range.start {
                return Err(Error::InvalidParameter {
                    name: "ranges",
                    reason: "must be non-empty, contiguous and in order",
                });
            }
            expected_start = range.end;
        }
        if expected_start != keys.len() {
            return Err(Error::InvalidParameter {
                name: "ranges",
                reason: "must cover every key",
            });
        }
        let models = ranges
            .iter()
            .map(|range| K::Model::fit(&keys[range.clone()]))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::from_pieces(keys, ranges, models))
    }

    fn from_pieces(keys: &[K], ranges: &[Range<usize>], models: Vec<K::Model>) -> Self {
        Self {
            first_keys: ranges.iter().map(|r| keys[r.start].clone()).collect(),
            starts: ranges.iter().map(|r| r.start).collect(),
            models,
            len: keys.len(),
        }
    }

    /// The number of pieces.
    pub fn piece_count(&self) -> usize {
        self.models.len()
    }

    /// The models of the pieces, in key order.
    pub fn models(&self) -> &[K::Model] {
        &self.models
    }

    /// The positions covered by piece `index`.
    pub fn piece_range(&self, index: usize) -> Range<usize> {
        let end = self.starts.get(index + 1).copied().unwrap_or(self.len);
        self.starts[index]..end
    }

    /// The lower bound of `key` in `keys`, the keys the root was built on.
    pub fn lower_bound(&self, keys: &[K], key: &K::Query) -> usize {
        let after = self.first_keys.partition_point(|f| f.borrow() <= key);
        let Some(piece) = after.checked_sub(1) else {
            return 0;
        };
        let range = self.piece_range(piece);
        range.start + self.models[piece].lower_bound(&keys[range], key)
    }
}

impl PiecewiseRoot<u64> {
    /// Builds the root from the optimal piecewise-linear segmentation of `keys` under
    /// `epsilon` ([`optimal_segments`]).
    pub fn build_optimal(keys: &[u64], epsilon: u64) -> Result<Self> {
        let segments = optimal_segments(keys, epsilon)?;
        let ranges: Vec<_> = segments.iter().map(|s| s.range.clone()).collect();
        let models = segments.into_iter().map(|s| s.model).collect();
        Ok(Self::from_pieces(keys, &ranges, models))
    }
}

impl PiecewiseRoot<Vec<u8>> {
    /// Builds the root from the greedy grouping of `keys` (XIndex Algorithm 7).
    pub fn build_grouped(keys: &[Vec<u8>], grouping: &GreedyGrouping) -> Result<Self> {
        let ranges = grouping.groups(keys)?;
        Self::from_ranges(keys, &ranges)
    }
}
