//! Linear models over integer keys (XIndex §2.2 `model_t`, FINEdex §2.1 Eq. 1).
//!
//! A model maps a key to `slope · (key − pivot) + intercept`, where the pivot is the smallest
//! trained key, then floors and clamps the result to a position in `0..len`. Its error bounds
//! are measured exactly on the training keys against that same clamped prediction, so a
//! trained key at position `i` always lies in `[p + min, p + max]`.
//!
//! Predictions are monotone in the key (the slope is never negative and flooring, clamping
//! and the pivot offset all preserve order), which is what lets the search window of an
//! absent key bracket its lower bound too.

use crate::error::{Result, check_sorted};
use crate::key::offset_from_pivot;
use crate::model::{ErrorBounds, KeyModel, clamp_prediction};
use crate::search;

/// A linear model over sorted `u64` keys, with exact error bounds.
///
/// ```
/// use learned_model::{KeyModel, LinearModel};
/// let keys: Vec<u64> = (0..1000).map(|i| 1_000 + i * 7).collect();
/// let model = LinearModel::fit(&keys).unwrap();
/// assert_eq!(model.predict(&(1_000 + 70)), 10);
/// assert_eq!(model.lower_bound(&keys, &1_071), 11);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearModel {
    pivot: u64,
    slope: f64,
    intercept: f64,
    len: usize,
    bounds: ErrorBounds,
    mean_abs_error: f64,
}

impl LinearModel {
    /// Fits by least squares over `keys[i] -> i`.
    pub fn fit(keys: &[u64]) -> Result<Self> {
        check_sorted(keys)?;
        let pivot = keys[0];
        let n = keys.len() as f64;
        let [sum_x] = lane_sums(keys, |_, k| [offset_above(k, pivot)]);
        let (mean_x, mean_y) = (sum_x / n, (n - 1.0) / 2.0);
        let [sxx, sxy] = lane_sums(keys, |i, k| {
            let dx = offset_above(k, pivot) - mean_x;
            [dx * dx, dx * (i as f64 - mean_y)]
        });
        // Distinct keys whose offsets round to the same f64 leave no spread: a flat model
        // is then the best line.
        let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
        Ok(Self::from_line(keys, pivot, slope, mean_y - slope * mean_x))
    }

    /// Fits the line through the first and the last key (`keys[0] -> 0`,
    /// `keys[n-1] -> n-1`), the cheap model of the original learned index's leaves.
    pub fn fit_endpoints(keys: &[u64]) -> Result<Self> {
        check_sorted(keys)?;
        let pivot = keys[0];
        let span = offset_from_pivot(keys[keys.len() - 1], pivot);
        let slope = if span > 0.0 {
            (keys.len() - 1) as f64 / span
        } else {
            0.0
        };
        Ok(Self::from_line(keys, pivot, slope, 0.0))
    }

    /// The model of a given line over `keys` (which must be non-empty and sorted, none below
    /// `pivot`), with its exact error bounds measured on them.
    pub(crate) fn from_line(keys: &[u64], pivot: u64, slope: f64, intercept: f64) -> Self {
        let len = keys.len();
        // The prediction below is `predict_key`'s, term for term (`offset_above` equals
        // `offset_from_pivot` for keys at or above the pivot), so the bounds are exact for it.
        let (mut min, mut max, mut total) = (i64::MAX, i64::MIN, 0u64);
        for (i, &k) in keys.iter().enumerate() {
            let predicted = clamp_prediction(slope * offset_above(k, pivot) + intercept, len);
            let error = i as i64 - predicted as i64;
            min = min.min(error);
            max = max.max(error);
            total += error.unsigned_abs();
        }
        let mut bounds = ErrorBounds::default();
        bounds.include(min);
        bounds.include(max);
        Self {
            pivot,
            slope,
            intercept,
            len,
            bounds,
            mean_abs_error: total as f64 / len as f64,
        }
    }

    /// The smallest trained key: model input is the offset from it.
    pub fn pivot(&self) -> u64 {
        self.pivot
    }

    /// The slope, in positions per key unit.
    pub fn slope(&self) -> f64 {
        self.slope
    }

    /// The predicted position of the pivot, before clamping.
    pub fn intercept(&self) -> f64 {
        self.intercept
    }

    /// The unclamped, unrounded prediction for `key`.
    #[inline]
    pub fn raw(&self, key: u64) -> f64 {
        self.slope * offset_from_pivot(key, self.pivot) + self.intercept
    }

    #[inline]
    fn predict_key(&self, key: u64) -> usize {
        clamp_prediction(self.raw(key), self.len)
    }
}

/// `key - pivot` as a float, for a key at or above the pivot (what [`offset_from_pivot`]
/// gives there, without its branches for keys below).
#[inline]
fn offset_above(key: u64, pivot: u64) -> f64 {
    debug_assert!(key >= pivot, "trained keys are at or above the pivot");
    (key - pivot) as f64
}

/// `Σ terms(i, keys[i])`, each of the `N` terms summed in four interleaved lanes: one running
/// sum is a chain of dependent additions, four let them overlap (training is the bulk of a
/// compaction's work besides copying, XIndex §3.2.1).
#[inline]
fn lane_sums<const N: usize>(keys: &[u64], terms: impl Fn(usize, u64) -> [f64; N]) -> [f64; N] {
    const LANES: usize = 4;
    let mut lanes = [[0.0; N]; LANES];
    let mut add = |lane: usize, i: usize, key: u64| {
        for (sum, term) in lanes[lane].iter_mut().zip(terms(i, key)) {
            *sum += term;
        }
    };
    let chunks = keys.chunks_exact(LANES);
    let rest = chunks.remainder();
    for (c, chunk) in chunks.enumerate() {
        for (lane, &key) in chunk.iter().enumerate() {
            add(lane, c * LANES + lane, key);
        }
    }
    for (lane, &key) in rest.iter().enumerate() {
        add(lane, keys.len() - rest.len() + lane, key);
    }
    std::array::from_fn(|t| (lanes[0][t] + lanes[1][t]) + (lanes[2][t] + lanes[3][t]))
}

impl KeyModel<u64> for LinearModel {
    fn fit(keys: &[u64]) -> Result<Self> {
        LinearModel::fit(keys)
    }

    #[inline]
    fn predict(&self, key: &u64) -> usize {
        self.predict_key(*key)
    }

    fn bounds(&self) -> ErrorBounds {
        self.bounds
    }

    fn mean_abs_error(&self) -> f64 {
        self.mean_abs_error
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The lower bound by exponential search from the prediction: it finds a trained key
    /// within `log2(error)` steps, and measured faster than a binary search of the whole error
    /// window (it mostly stays within one or two cache lines of the prediction).
    #[inline]
    fn lower_bound(&self, keys: &[u64], key: &u64) -> usize {
        search::exponential_lower_bound(keys, key, self.predict_key(*key))
    }
}
