//! Greedy grouping of sorted byte-string keys (XIndex §3.4.2, Algorithm 7): grow a group by
//! `fs` keys while its model's mean error stays under `et` and its partial key under `pt`
//! bytes, then shrink it by `bs` keys until both hold again.
//!
//! The paper leaves `fs` and `bs` open; the defaults here (64 and 8) keep the backward step a
//! fraction of the forward one. Progress is guaranteed as the digest asks: a group keeps at
//! least one key, never steps back past its start, and stops at the end of the input.

use std::ops::Range;

use crate::error::{Error, Result, check_sorted};
use crate::model::KeyModel;
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
    /// `bs`: how many keys a backward step removes (less than `fs`).
    pub backward_step: usize,
}

impl Default for GreedyGrouping {
    /// The paper's parameters for random strings (`et = 50`, `pt = 4`).
    fn default() -> Self {
        Self {
            error_threshold: 50.0,
            max_partial_len: 4,
            forward_step: 64,
            backward_step: 8,
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
        check_sorted(keys)?;
        let measure = |range: Range<usize>| {
            let model = StringModel::fit(&keys[range]).expect("a run of sorted keys fits");
            (model.mean_abs_error(), model.layout().effective_len())
        };
        let mut groups = Vec::new();
        let mut start = 0;
        while start < keys.len() {
            let mut end = start;
            let (mut error, mut partial_len) = (0.0, 0);
            while error < self.error_threshold
                && partial_len < self.max_partial_len
                && end < keys.len()
            {
                end = (end + self.forward_step).min(keys.len());
                (error, partial_len) = measure(start..end);
            }
            while (error > self.error_threshold || partial_len > self.max_partial_len)
                && end - start > 1
            {
                end = end.saturating_sub(self.backward_step).max(start + 1);
                (error, partial_len) = measure(start..end);
            }
            groups.push(start..end);
            start = end;
        }
        Ok(groups)
    }
}
