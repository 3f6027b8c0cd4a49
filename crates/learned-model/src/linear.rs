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
        let mean_x = keys
            .iter()
            .map(|&k| offset_from_pivot(k, pivot))
            .sum::<f64>()
            / n;
        let mean_y = (n - 1.0) / 2.0;
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for (i, &k) in keys.iter().enumerate() {
            let dx = offset_from_pivot(k, pivot) - mean_x;
            sxx += dx * dx;
            sxy += dx * (i as f64 - mean_y);
        }
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

    /// The model of a given line over `keys` (which must be non-empty and sorted), with its
    /// exact error bounds measured on them.
    pub(crate) fn from_line(keys: &[u64], pivot: u64, slope: f64, intercept: f64) -> Self {
        let mut model = Self {
            pivot,
            slope,
            intercept,
            len: keys.len(),
            bounds: ErrorBounds::default(),
            mean_abs_error: 0.0,
        };
        let mut total = 0u64;
        for (i, &k) in keys.iter().enumerate() {
            let error = i as i64 - model.predict_key(k) as i64;
            model.bounds.include(error);
            total += error.unsigned_abs();
        }
        model.mean_abs_error = total as f64 / keys.len() as f64;
        model
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
