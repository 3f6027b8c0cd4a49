//! FINEdex's learning probe algorithm (FINEdex §3.1.1, Algorithm 1): grow a least-squares
//! model forward by a step while its error stays under the threshold, then shrink it from the
//! end in smaller steps until it fits.
//!
//! The paper's backward step `L·rⁿ` reaches zero after a few rounds; as the digest advises,
//! this follows the authors' code instead: a fixed backward step `L·r`, divided by `1/r`
//! whenever it would empty the segment, never below 1, so the probe always terminates (one or
//! two keys always fit). After each segment the forward step adapts to its size
//! (`L = 10^digits(⌊size/10⌋)`), as in the authors' code.

use crate::error::{Error, Result, check_sorted};
use crate::linear::LinearModel;
use crate::model::KeyModel;
use crate::segmentation::Segment;

/// The parameters of the learning probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LearningProbe {
    /// The largest error τ a model may have, in positions (FINEdex: 32).
    pub threshold: u64,
    /// The initial forward step `L`, in keys (the authors' code: 1000).
    pub initial_step: usize,
    /// The factor `r` in `(0, 1)` that shrinks the backward step (the authors' code: 0.1).
    pub learning_rate: f64,
}

impl Default for LearningProbe {
    fn default() -> Self {
        Self {
            threshold: 32,
            initial_step: 1000,
            learning_rate: 0.1,
        }
    }
}

impl LearningProbe {
    /// Segments `keys` with this probe. See [`probe_segments`].
    pub fn segments(&self, keys: &[u64]) -> Result<Vec<Segment>> {
        probe_segments(keys, self)
    }
}

/// Splits strictly increasing `keys` into segments whose least-squares models have a maximum
/// absolute error of at most `probe.threshold`.
///
/// ```
/// use learned_model::{KeyModel, LearningProbe, probe_segments};
/// let keys: Vec<u64> = (0..5_000u64).map(|i| i * i).collect();
/// let segments = probe_segments(&keys, &LearningProbe::default()).unwrap();
/// assert!(segments.iter().all(|s| s.model.bounds().max_abs() <= 32));
/// ```
pub fn probe_segments(keys: &[u64], probe: &LearningProbe) -> Result<Vec<Segment>> {
    if probe.initial_step == 0 {
        return Err(Error::InvalidParameter {
            name: "initial_step",
            reason: "must be at least 1",
        });
    }
    if !(probe.learning_rate > 0.0 && probe.learning_rate < 1.0) {
        return Err(Error::InvalidParameter {
            name: "learning_rate",
            reason: "must lie strictly between 0 and 1",
        });
    }
    check_sorted(keys)?;
    let fit = |start: usize, end: usize| {
        LinearModel::fit(&keys[start..end]).expect("a non-empty slice of sorted keys fits")
    };
    let mut segments = Vec::new();
    let mut step = probe.initial_step;
    let mut start = 0;
    while start < keys.len() {
        let mut end = (start + step).min(keys.len());
        let mut model = fit(start, end);
        while model.bounds().max_abs() < probe.threshold && end < keys.len() {
            end = (end + step).min(keys.len());
            model = fit(start, end);
        }
        let mut back = shrink(step, probe.learning_rate);
        while model.bounds().max_abs() > probe.threshold {
            while back > 1 && back >= end - start {
                back = shrink(back, probe.learning_rate);
            }
            end -= back.min(end - start - 1);
            model = fit(start, end);
        }
        step = adapted_step(end - start);
        segments.push(Segment {
            range: start..end,
            model,
        });
        start = end;
    }
    Ok(segments)
}

/// `⌊step · rate⌋`, at least 1.
fn shrink(step: usize, rate: f64) -> usize {
    ((step as f64 * rate) as usize).max(1)
}

/// The next forward step after a segment of `size` keys: `10^digits(⌊size/10⌋)`, 1 when
/// `size < 10`.
fn adapted_step(size: usize) -> usize {
    match size / 10 {
        0 => 1,
        tenth => 10usize.pow(tenth.ilog10() + 1),
    }
}
