//! Multi-feature linear models over byte-string keys (XIndex §2.2, §3.4.1): a weight per
//! partial-key byte plus a bias, fitted by least squares.
//!
//! Training streams over the keys (no feature matrix is materialised): one pass for the
//! feature means, one for the centred normal equations, one for the exact error bounds. The
//! normal equations carry a tiny ridge term, which gives constant features (bytes every key
//! shares) a zero weight instead of a singular system — the role the paper's SVD solver plays.
//! At most [`MAX_FEATURES`] leading partial-key bytes become features.
//!
//! The model is not monotone in the key order (weights may be negative), so lookups rely on the
//! self-correcting window search of [`crate::search`].

use std::cmp::Ordering;

use crate::error::Result;
use crate::model::{ErrorBounds, KeyModel, clamp_prediction};
use crate::partial_key::PartialKeyLayout;
use crate::search;

/// The most partial-key bytes a string model uses as features.
pub const MAX_FEATURES: usize = 32;

/// A linear model over the partial-key bytes of sorted byte-string keys.
///
/// ```
/// use learned_model::{KeyModel, StringModel};
/// let keys: Vec<Vec<u8>> = (0..500u32).map(|i| format!("item-{i:05}").into_bytes()).collect();
/// let model = StringModel::fit(&keys).unwrap();
/// assert_eq!(model.layout().prefix(), b"item-00");
/// assert_eq!(model.lower_bound(&keys, b"item-00250"), 250);
/// assert_eq!(model.lower_bound(&keys, b"item-002505"), 251);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StringModel {
    layout: PartialKeyLayout,
    weights: Vec<f64>,
    bias: f64,
    len: usize,
    bounds: ErrorBounds,
    mean_abs_error: f64,
}

impl StringModel {
    /// Fits by least squares over `keys[i] -> i`.
    pub fn fit<K: AsRef<[u8]> + Ord>(keys: &[K]) -> Result<Self> {
        // The layout checks that the keys are sorted.
        Ok(Self::fit_with_layout(
            keys,
            PartialKeyLayout::from_sorted(keys)?,
        ))
    }

    /// [`fit`](Self::fit) given the keys' layout, for a caller that has computed it.
    pub(crate) fn fit_with_layout<K: AsRef<[u8]>>(keys: &[K], layout: PartialKeyLayout) -> Self {
        let dims = layout.effective_len().min(MAX_FEATURES);
        let n = keys.len() as f64;
        let mut x = vec![0.0; dims];

        let mut mean = vec![0.0; dims];
        for key in keys {
            layout.features(key.as_ref(), &mut x);
            mean.iter_mut().zip(&x).for_each(|(m, v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mean_y = (n - 1.0) / 2.0;

        let mut gram = vec![0.0; dims * dims];
        let mut rhs = vec![0.0; dims];
        for (i, key) in keys.iter().enumerate() {
            layout.features(key.as_ref(), &mut x);
            x.iter_mut().zip(&mean).for_each(|(v, m)| *v -= m);
            let dy = i as f64 - mean_y;
            for r in 0..dims {
                rhs[r] += x[r] * dy;
                for c in 0..=r {
                    gram[r * dims + c] += x[r] * x[c];
                }
            }
        }
        let weights = solve_ridge(&mut gram, rhs, dims);
        let bias = mean_y - weights.iter().zip(&mean).map(|(w, m)| w * m).sum::<f64>();

        let mut model = Self {
            layout,
            weights,
            bias,
            len: keys.len(),
            bounds: ErrorBounds::default(),
            mean_abs_error: 0.0,
        };
        let mut total = 0u64;
        for (i, key) in keys.iter().enumerate() {
            // Every trained key starts with the common prefix: its prediction is the model's
            // own, without comparing the prefix again.
            let error = i as i64 - model.predict_ordered(key.as_ref(), Ordering::Equal) as i64;
            model.bounds.include(error);
            total += error.unsigned_abs();
        }
        model.mean_abs_error = total as f64 / n;
        model
    }

    /// The partial-key layout of the trained keys.
    pub fn layout(&self) -> &PartialKeyLayout {
        &self.layout
    }

    /// The weight of each feature (partial-key byte), in order.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// [`KeyModel::lower_bound`] over any slice holding the trained keys' bytes: compares
    /// only the bytes after the common prefix.
    pub fn lower_bound_of<S: AsRef<[u8]>>(&self, keys: &[S], key: &[u8]) -> usize {
        match self.layout.compare_prefix(key) {
            Ordering::Less => 0,
            Ordering::Greater => keys.len(),
            Ordering::Equal => {
                let skip = self.layout.prefix_len();
                let suffix = &key[skip..];
                let window = self.bounds.window(self.predict_bytes(key), keys.len());
                search::lower_bound_in_by(keys, window, |k| &k.as_ref()[skip..] < suffix)
            }
        }
    }

    #[inline]
    fn predict_bytes(&self, key: &[u8]) -> usize {
        self.predict_ordered(key, self.layout.compare_prefix(key))
    }

    /// Where `key` stands against the trained keys, for a caller that holds its
    /// [`prefix_word`](crate::prefix_word) (an index's search hint): `Ok` with the prediction
    /// of [`KeyModel::predict`] when `key` starts with the keys' common prefix, else `Err` with
    /// how it compares with that prefix (below or above every trained key). A prefix of at
    /// most eight bytes compares without a `memcmp`.
    #[inline]
    pub fn place_with_word(
        &self,
        key: &[u8],
        key_word: u64,
    ) -> std::result::Result<usize, Ordering> {
        match self.layout.compare_prefix_with_word(key, key_word) {
            Ordering::Equal => Ok(self.predict_ordered(key, Ordering::Equal)),
            outside => Err(outside),
        }
    }

    /// The prediction for `key`, given how it compares with the model's prefix.
    #[inline]
    fn predict_ordered(&self, key: &[u8], to_prefix: Ordering) -> usize {
        match to_prefix {
            Ordering::Less => 0,
            Ordering::Greater => self.len - 1,
            Ordering::Equal => clamp_prediction(
                self.bias + weighted_sum(&self.weights, self.layout.partial(key)),
                self.len,
            ),
        }
    }
}

/// `Σ weights[i] · (partial[i] + 1)` over the bytes the key has (a byte past its end is the
/// feature 0): the dot product of [`PartialKeyLayout::features`] with the weights. It runs in
/// four independent sums, so a lookup waits for a quarter of the chain of dependent additions
/// that one running sum makes (up to [`MAX_FEATURES`] of them); training measures the error
/// bounds with this same function, so its rounding is the model's.
#[inline]
fn weighted_sum(weights: &[f64], partial: &[u8]) -> f64 {
    let used = weights.len().min(partial.len());
    let (weights, partial) = (&weights[..used], &partial[..used]);
    let feature = |b: u8| f64::from(b) + 1.0;
    let mut lanes = [0.0; 4];
    let mut chunks = weights.chunks_exact(4).zip(partial.chunks_exact(4));
    for (w, p) in &mut chunks {
        for lane in 0..4 {
            lanes[lane] += w[lane] * feature(p[lane]);
        }
    }
    let tail_start = used - used % 4;
    let tail: f64 = weights[tail_start..]
        .iter()
        .zip(&partial[tail_start..])
        .map(|(w, &b)| w * feature(b))
        .sum();
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// Solves `(G + λI) w = rhs` for the symmetric positive semi-definite `G` whose lower triangle
/// is in `gram` (row-major, `dims × dims`), by Cholesky factorisation in place. `λ` is a
/// vanishing fraction of the mean diagonal, enough to make the system definite.
fn solve_ridge(gram: &mut [f64], mut rhs: Vec<f64>, dims: usize) -> Vec<f64> {
    let trace: f64 = (0..dims).map(|i| gram[i * dims + i]).sum();
    let ridge = 1e-9 * (trace / dims.max(1) as f64).max(1.0);
    for i in 0..dims {
        gram[i * dims + i] += ridge;
    }
    for j in 0..dims {
        let mut diagonal = gram[j * dims + j];
        for k in 0..j {
            diagonal -= gram[j * dims + k] * gram[j * dims + k];
        }
        let diagonal = diagonal.max(ridge).sqrt();
        gram[j * dims + j] = diagonal;
        for i in j + 1..dims {
            let mut value = gram[i * dims + j];
            for k in 0..j {
                value -= gram[i * dims + k] * gram[j * dims + k];
            }
            gram[i * dims + j] = value / diagonal;
        }
    }
    for i in 0..dims {
        for k in 0..i {
            rhs[i] -= gram[i * dims + k] * rhs[k];
        }
        rhs[i] /= gram[i * dims + i];
    }
    for i in (0..dims).rev() {
        for k in i + 1..dims {
            rhs[i] -= gram[k * dims + i] * rhs[k];
        }
        rhs[i] /= gram[i * dims + i];
    }
    rhs
}

impl KeyModel<Vec<u8>> for StringModel {
    fn fit(keys: &[Vec<u8>]) -> Result<Self> {
        StringModel::fit(keys)
    }

    #[inline]
    fn predict(&self, key: &[u8]) -> usize {
        self.predict_bytes(key)
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

    /// The lower bound, comparing only the bytes after the group's common prefix.
    #[inline]
    fn lower_bound(&self, keys: &[Vec<u8>], key: &[u8]) -> usize {
        self.lower_bound_of(keys, key)
    }
}
