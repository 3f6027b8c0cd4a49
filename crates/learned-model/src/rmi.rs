//! The two-stage recursive model index over integer keys (XIndex §3.1.1 root, after Kraska et
//! al.): a linear root picks one of N linear leaves, and the leaf predicts the position with
//! its own exact error bounds.
//!
//! The root is the least-squares model of the whole key set, scaled to the leaf count, so its
//! routing is monotone: leaf `j` holds a contiguous run of keys, and an absent key routed to
//! leaf `j` has its lower bound between the first key of leaf `j` and the first key of leaf
//! `j + 1`. A leaf that no key reaches keeps only that position.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::linear::LinearModel;
use crate::model::{ErrorBounds, KeyModel, clamp_prediction};
use crate::search;

/// One second-stage model and the keys it covers.
#[derive(Debug, Clone, PartialEq)]
struct Leaf {
    /// The first position of the leaf's keys.
    start: usize,
    /// The leaf's model, or `None` when the root routes no key here.
    model: Option<LinearModel>,
}

/// A two-stage RMI over sorted `u64` keys.
///
/// ```
/// use learned_model::Rmi;
/// let keys: Vec<u64> = (0..100_000u64).map(|i| i * 10 + (i % 7)).collect();
/// let rmi = Rmi::build(&keys, 1_000).unwrap();
/// assert_eq!(rmi.lower_bound(&keys, keys[4242]), 4242);
/// assert_eq!(rmi.lower_bound(&keys, u64::MAX), keys.len());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Rmi {
    root: LinearModel,
    /// `leaf_count / len`: scales the root's position to a leaf (one multiplication per
    /// lookup instead of a multiplication, a division and two conversions).
    leaf_scale: f64,
    leaf_count: usize,
    leaves: Vec<Leaf>,
    len: usize,
}

impl Rmi {
    /// Builds an RMI with `leaf_count` second-stage models over strictly increasing `keys`.
    pub fn build(keys: &[u64], leaf_count: usize) -> Result<Self> {
        if leaf_count == 0 {
            return Err(Error::InvalidParameter {
                name: "leaf_count",
                reason: "must be at least 1",
            });
        }
        let root = LinearModel::fit(keys)?;
        let mut rmi = Self {
            root,
            leaf_scale: leaf_count as f64 / keys.len() as f64,
            leaf_count,
            leaves: Vec::with_capacity(leaf_count),
            len: keys.len(),
        };
        let mut start = 0;
        for leaf in 0..leaf_count {
            let end = start + keys[start..].partition_point(|&k| rmi.leaf_of(k) <= leaf);
            let model = (end > start)
                .then(|| LinearModel::fit(&keys[start..end]).expect("a run of sorted keys fits"));
            rmi.leaves.push(Leaf { start, model });
            start = end;
        }
        Ok(rmi)
    }

    /// The number of second-stage models.
    pub fn leaf_count(&self) -> usize {
        self.leaf_count
    }

    /// The number of keys the RMI was built on.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the RMI indexes no key (never true for a built RMI).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The leaf the root routes `key` to.
    #[inline]
    fn leaf_of(&self, key: u64) -> usize {
        let scaled = self.root.raw(key) * self.leaf_scale;
        clamp_prediction(scaled, self.leaf_count)
    }

    /// The predicted position of `key` and the window of positions that holds its lower
    /// bound according to the models.
    #[inline]
    pub fn predict(&self, key: u64) -> (usize, Range<usize>) {
        let leaf_index = self.leaf_of(key);
        let leaf = &self.leaves[leaf_index];
        let end = self
            .leaves
            .get(leaf_index + 1)
            .map_or(self.len, |next| next.start);
        match &leaf.model {
            Some(model) => {
                let predicted = model.predict(&key);
                let local = model.bounds().window(predicted, end - leaf.start);
                (
                    leaf.start + predicted,
                    leaf.start + local.start..leaf.start + local.end,
                )
            }
            None => (leaf.start, leaf.start..leaf.start),
        }
    }

    /// The lower bound of `key` in `keys`, the keys the RMI was built on, by exponential
    /// search from the leaf's prediction (measured faster than a binary search of the leaf's
    /// error window, as for [`LinearModel`]).
    #[inline]
    pub fn lower_bound(&self, keys: &[u64], key: u64) -> usize {
        search::exponential_lower_bound(keys, &key, self.predict(key).0)
    }

    /// The mean over non-empty leaves of their largest absolute error.
    pub fn mean_leaf_error(&self) -> f64 {
        let errors: Vec<u64> = self
            .leaves
            .iter()
            .filter_map(|leaf| leaf.model.as_ref().map(|m| m.bounds().max_abs()))
            .collect();
        errors.iter().sum::<u64>() as f64 / errors.len().max(1) as f64
    }

    /// The error bounds of each non-empty leaf, in leaf order.
    pub fn leaf_bounds(&self) -> impl Iterator<Item = ErrorBounds> + '_ {
        self.leaves
            .iter()
            .filter_map(|leaf| leaf.model.as_ref().map(|m| m.bounds()))
    }
}
