//! What every position model offers: prediction, exact error bounds and a lower-bound search
//! (XIndex §2.2 `model_t`, §3.2 `get_position`).

use std::fmt::Debug;
use std::ops::Range;

use crate::error::Result;
use crate::key::Key;
use crate::search;

/// The exact error of a model over its training keys: for every trained key at position `i`
/// with predicted position `p`, `min <= i - p <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorBounds {
    /// The smallest `actual - predicted` over the training keys (never positive).
    pub min: i64,
    /// The largest `actual - predicted` over the training keys (never negative).
    pub max: i64,
}

impl ErrorBounds {
    /// The largest absolute error, `max(|min|, |max|)`: FINEdex's symmetric bound and XIndex's
    /// `get_error_bound`.
    pub fn max_abs(&self) -> u64 {
        self.min.unsigned_abs().max(self.max.unsigned_abs())
    }

    /// Widens the bounds to cover one more observed error.
    pub(crate) fn include(&mut self, error: i64) {
        self.min = self.min.min(error);
        self.max = self.max.max(error);
    }

    /// The window of positions that holds the lower bound of any key predicted at `predicted`,
    /// clamped to `0..=len`: `[predicted + min, predicted + max + 1]`.
    ///
    /// The extra position at the end covers an absent key greater than every key in the window.
    #[inline]
    pub fn window(&self, predicted: usize, len: usize) -> Range<usize> {
        let p = predicted as i64;
        let start = (p + self.min).clamp(0, len as i64) as usize;
        let end = (p + self.max + 1).clamp(0, len as i64) as usize;
        start..end.max(start)
    }
}

/// Turns a raw prediction into a position in `0..len` (`len > 0`): NaN and negative values
/// give 0, values past the end `len - 1`.
///
/// It converts through `i64`, which x86-64 does in one instruction (a conversion to `usize`
/// needs a longer sequence for values of 2^63 and more); no slice is that long, so the
/// clamp's result is the same.
///
/// ```
/// use learned_model::clamp_prediction;
/// assert_eq!(clamp_prediction(2.7, 10), 2);
/// assert_eq!(clamp_prediction(-3.0, 10), 0);
/// assert_eq!(clamp_prediction(f64::NAN, 10), 0);
/// assert_eq!(clamp_prediction(1e300, 10), 9);
/// ```
#[inline]
pub fn clamp_prediction(raw: f64, len: usize) -> usize {
    (raw as i64).max(0).min(len as i64 - 1) as usize
}

/// A model that learns the position of each key in a sorted, duplicate-free array.
///
/// Positions are local to the trained slice: the first trained key is at position 0.
pub trait KeyModel<K: Key>: Clone + Debug + Send + Sync + Sized {
    /// Trains the model on `keys[i] -> i` with exact error bounds.
    ///
    /// Fails on empty input and on keys that are not strictly increasing.
    fn fit(keys: &[K]) -> Result<Self>;

    /// The predicted position of `key`, clamped to `0..len`.
    fn predict(&self, key: &K::Query) -> usize;

    /// The exact error bounds over the training keys.
    fn bounds(&self) -> ErrorBounds;

    /// The mean absolute error over the training keys (XIndex's greedy grouping threshold).
    fn mean_abs_error(&self) -> f64;

    /// The number of keys the model was trained on.
    fn len(&self) -> usize;

    /// Whether the model was trained on no key (never true for a fitted model).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lower bound of `key` in `keys` (the first position whose key is `>= key`), where
    /// `keys` are the keys the model was trained on.
    ///
    /// Searches the error window around the prediction and widens the search only if the
    /// window does not hold the answer (possible for absent keys when the model is not
    /// monotone), so the result always equals a full binary search.
    fn lower_bound(&self, keys: &[K], key: &K::Query) -> usize {
        let window = self.bounds().window(self.predict(key), keys.len());
        search::lower_bound_in(keys, key, window)
    }
}
