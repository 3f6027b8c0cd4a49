//! Greedy grouping of sorted byte-string keys (XIndex §3.4.2, Algorithm 7): grow a group while
//! its model's mean error stays within `et` and its partial key within `pt` bytes, then step
//! back until both hold again.
//!
//! Algorithm 7 grows a group by a fixed `fs` keys and shrinks it by a fixed `bs`, refitting the
//! model after each step: a group of `n` keys costs `n / fs` fits of up to `n` keys each, which
//! made 1M random 16-byte keys take over seven minutes with `pt = 16`. Here the forward step
//! doubles after each step that fits (`fs`, `2fs`, `4fs`, ...), and the backward walk is a
//! binary search, down to `bs` keys, between the last size that fit and the first that did not;
//! a group also stops at `max_group_len` keys. Progress is guaranteed as the digest asks: a
//! group keeps at least one key (one key always fits), never steps back past its start, and
//! stops at the end of the input. Every group of more than one key meets both thresholds.

use std::ops::Range;

use crate::error::{Error, Result, check_sorted};
use crate::model::KeyModel;
use crate::partial_key::PartialKeyLayout;
use crate::string_model::StringModel;

/// The parameters `(et, pt, fs, bs)` of greedy grouping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GreedyGrouping {
    /// `et`: the largest mean absolute error of a group's model, in positions.
    pub error_threshold: f64,
    /// `pt`: the longest partial key a group may have, in bytes.
    pub max_partial_len: usize,
    /// `fs`: how many keys a forward step adds.
    pub forward_step: usize,
    /// `bs`: the resolution of the backward search, in keys (less than `fs`).
    pub backward_step: usize,
    /// The most keys one group may hold.
    pub max_group_len: usize,
}

impl Default for GreedyGrouping {
    /// The paper's parameters for random strings (`et = 50`, `pt = 4`).
    fn default() -> Self {
        Self {
            error_threshold: 50.0,
            max_partial_len: 4,
            forward_step: 64,
            backward_step: 8,
            max_group_len: 1 << 16,
        }
    }
}

impl GreedyGrouping {
    /// Groups strictly increasing `keys`; the ranges are contiguous and cover every key.
    ///
    /// ```
    /// use learned_model::GreedyGrouping;
    /// let keys: Vec<Vec<u8>> = (0..2_000u32).map(|i| format!("k{i:06}").into_bytes()).collect();
    /// let groups = GreedyGrouping::default().groups(&keys).unwrap();
    /// assert_eq!(groups.first().unwrap().start, 0);
    /// assert_eq!(groups.last().unwrap().end, keys.len());
    /// ```
    pub fn groups<K: AsRef<[u8]> + Ord>(&self, keys: &[K]) -> Result<Vec<Range<usize>>> {
        if self.forward_step == 0 || self.backward_step == 0 {
            return Err(Error::InvalidParameter {
                name: "forward_step/backward_step",
                reason: "must be at least 1",
            });
        }
        if self.backward_step >= self.forward_step {
            return Err(Error::InvalidParameter {
                name: "backward_step",
                reason: "must be smaller than forward_step",
            });
        }
        if self.max_group_len == 0 {
            return Err(Error::InvalidParameter {
                name: "max_group_len",
                reason: "must be at least 1",
            });
        }
        check_sorted(keys)?;
        // The layout alone decides the partial-key threshold: a run whose partial keys are too
        // long is refused before a model is fitted to it. Every run is a non-empty slice of the
        // keys checked above.
        let fits = |range: Range<usize>| {
            let keys = &keys[range];
            let layout = PartialKeyLayout::of_sorted(keys);
            layout.effective_len() <= self.max_partial_len
                && StringModel::fit_with_layout(keys, layout).mean_abs_error()
                    <= self.error_threshold
        };
        let mut groups = Vec::new();
        let mut start = 0;
        while start < keys.len() {
            let limit = (keys.len() - start).min(self.max_group_len);
            // One key always fits: its model is exact and its partial key empty.
            let mut good = 1;
            let mut failed = None;
            let mut step = self.forward_step;
            while good < limit {
                let len = (good + step).min(limit);
                if !fits(start..start + len) {
                    failed = Some(len);
                    break;
                }
                good = len;
                step = step.saturating_mul(2);
            }
            if let Some(mut bad) = failed {
                while bad - good > self.backward_step {
                    let mid = good + (bad - good) / 2;
                    if fits(start..start + mid) {
                        good = mid;
                    } else {
                        bad = mid;
                    }
                }
            }
            groups.push(start..start + good);
            start += good;
        }
        Ok(groups)
    }
}
