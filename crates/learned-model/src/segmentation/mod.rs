//! Segmentation of sorted integer keys into linear models under a maximum error ε.
//!
//! Two algorithms, both guaranteeing that every key lies within ε positions of its segment's
//! prediction:
//! - [`optimal_segments`]: the optimal piecewise-linear approximation (the fewest segments
//!   for ε), in one O(n) pass that keeps the cone of feasible lines and shrinks it with every
//!   key (PGM-index's streaming convex-hull algorithm, O'Rourke 1981);
//! - [`probe_segments`]: FINEdex's greedy learning probe (FINEdex §3.1.1, Algorithm 1), which
//!   fits least-squares models and probes forward and backward until the error fits.

mod optimal;
mod probe;

pub use optimal::optimal_segments;
pub use probe::{LearningProbe, probe_segments};

use std::ops::Range;

use crate::linear::LinearModel;

/// A contiguous run of keys and the model that predicts their positions.
///
/// Positions predicted by `model` are local: the key at `range.start` is at position 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The positions of the segment's keys in the segmented slice.
    pub range: Range<usize>,
    /// The model of those keys; its pivot is the segment's first key.
    pub model: LinearModel,
}

impl Segment {
    /// The segment's first key, by which segments are routed.
    pub fn first_key(&self) -> u64 {
        self.model.pivot()
    }
}
