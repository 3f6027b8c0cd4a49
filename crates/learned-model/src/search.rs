//! Last-mile search: finding a key's lower bound near a predicted position (XIndex §3.2,
//! FINEdex §2.1).
//!
//! Every function returns the **lower bound**: the first position whose key is not less than
//! the query (`keys.len()` when every key is less). The windowed searches check that the
//! answer really lies inside the window and widen the search exponentially when it does not,
//! so a model whose window misses an absent key (a non-monotone string model, a stale model)
//! costs time, never a wrong answer.

use std::borrow::Borrow;
use std::ops::Range;

/// The lower bound of `key` by binary search over the whole slice.
///
/// ```
/// use learned_model::search::lower_bound;
/// let keys = [10u64, 20, 30];
/// assert_eq!(lower_bound(&keys, &20), 1);
/// assert_eq!(lower_bound(&keys, &25), 2);
/// assert_eq!(lower_bound(&keys, &99), 3);
/// ```
pub fn lower_bound<K: Borrow<Q>, Q: ?Sized + Ord>(keys: &[K], key: &Q) -> usize {
    keys.partition_point(|k| k.borrow() < key)
}

/// The lower bound of `key`, searched by binary search in `window` (typically
/// `[pred + err_min, pred + err_max + 1]`) and widened when the answer lies outside it.
///
/// ```
/// use learned_model::search::lower_bound_in;
/// let keys = [10u64, 20, 30, 40, 50];
/// assert_eq!(lower_bound_in(&keys, &30, 1..4), 2);
/// // A window that misses the answer is widened, not trusted.
/// assert_eq!(lower_bound_in(&keys, &45, 0..2), 4);
/// ```
pub fn lower_bound_in<K: Borrow<Q>, Q: ?Sized + Ord>(
    keys: &[K],
    key: &Q,
    window: Range<usize>,
) -> usize {
    lower_bound_in_by(keys, window, |k| k.borrow() < key)
}

/// [`lower_bound_in`] with a predicate: `is_less(k)` must be `k < query` for a query that the
/// keys' order is consistent with (true on a prefix of `keys`, false after it).
pub fn lower_bound_in_by<K>(
    keys: &[K],
    window: Range<usize>,
    mut is_less: impl FnMut(&K) -> bool,
) -> usize {
    let window = clamp_window(window, keys.len());
    let pos = window.start + keys[window.clone()].partition_point(&mut is_less);
    widen(keys, window, pos, is_less)
}

/// The lower bound of `key` by exponential search outward from `hint` (XIndex's reference
/// code searches this way, which also tolerates stale models).
///
/// ```
/// use learned_model::search::exponential_lower_bound;
/// let keys: Vec<u64> = (0..100).map(|i| i * 2).collect();
/// assert_eq!(exponential_lower_bound(&keys, &51, 3), 26);
/// assert_eq!(exponential_lower_bound(&keys, &0, 99), 0);
/// ```
pub fn exponential_lower_bound<K: Borrow<Q>, Q: ?Sized + Ord>(
    keys: &[K],
    key: &Q,
    hint: usize,
) -> usize {
    exponential_lower_bound_by(keys, hint, |k| k.borrow() < key)
}

/// [`exponential_lower_bound`] with a predicate, as in [`lower_bound_in_by`].
#[inline]
pub fn exponential_lower_bound_by<K>(
    keys: &[K],
    hint: usize,
    mut is_less: impl FnMut(&K) -> bool,
) -> usize {
    let hint = hint.min(keys.len());
    if hint < keys.len() && is_less(&keys[hint]) {
        search_right(keys, hint, is_less)
    } else {
        search_left(keys, hint, is_less)
    }
}

/// The lower bound of `key` by a branchless binary search in `window` (the comparison selects
/// the next base with a conditional move instead of a branch), widened like
/// [`lower_bound_in`] when the answer lies outside the window.
///
/// ```
/// use learned_model::search::branchless_lower_bound;
/// let keys = [1u64, 3, 5, 7];
/// assert_eq!(branchless_lower_bound(&keys, 4, 0..4), 2);
/// assert_eq!(branchless_lower_bound(&keys, 9, 0..2), 4);
/// ```
pub fn branchless_lower_bound<T: Ord + Copy>(keys: &[T], key: T, window: Range<usize>) -> usize {
    let window = clamp_window(window, keys.len());
    let pos = window.start + branchless_partition_point(&keys[window.clone()], |k| *k < key);
    widen(keys, window, pos, |k| *k < key)
}

/// The number of leading `items` for which `is_below` holds (those must all come first), by a
/// binary search without a branch on the predicate: each step selects the next base with a
/// conditional move, and the loop runs a number of times set by the length alone.
///
/// ```
/// use learned_model::search::branchless_partition_point;
/// let keys = [1u64, 3, 5, 7];
/// assert_eq!(branchless_partition_point(&keys, |&k| k <= 5), 3);
/// assert_eq!(branchless_partition_point(&keys[..0], |&k| k <= 5), 0);
/// ```
#[inline]
pub fn branchless_partition_point<K>(items: &[K], mut is_below: impl FnMut(&K) -> bool) -> usize {
    if items.is_empty() {
        return 0;
    }
    let mut base = 0;
    let mut len = items.len();
    while len > 1 {
        let half = len / 2;
        base = if is_below(&items[base + half]) {
            base + half
        } else {
            base
        };
        len -= half;
    }
    base + usize::from(is_below(&items[base]))
}

fn clamp_window(window: Range<usize>, len: usize) -> Range<usize> {
    let end = window.end.min(len);
    window.start.min(end)..end
}

/// Given `pos`, the lower bound within `window`, returns the lower bound within `keys`.
fn widen<K>(
    keys: &[K],
    window: Range<usize>,
    pos: usize,
    mut is_less: impl FnMut(&K) -> bool,
) -> usize {
    if pos == window.start && pos > 0 && !is_less(&keys[pos - 1]) {
        search_left(keys, pos - 1, is_less)
    } else if pos == window.end && pos < keys.len() && is_less(&keys[pos]) {
        search_right(keys, pos, is_less)
    } else {
        pos
    }
}

/// The lower bound when `keys[from] < query`: gallop right, then binary search.
#[inline]
fn search_right<K>(keys: &[K], from: usize, mut is_less: impl FnMut(&K) -> bool) -> usize {
    let mut step = 1;
    while from + step < keys.len() && is_less(&keys[from + step]) {
        step *= 2;
    }
    let lo = from + step / 2 + 1;
    let hi = (from + step).min(keys.len());
    lo + keys[lo..hi].partition_point(is_less)
}

/// The lower bound when `keys[from] >= query` (or `from == keys.len()`): gallop left, then
/// binary search.
#[inline]
fn search_left<K>(keys: &[K], from: usize, mut is_less: impl FnMut(&K) -> bool) -> usize {
    let mut step = 1;
    while step <= from && !is_less(&keys[from - step]) {
        step *= 2;
    }
    let lo = if step > from { 0 } else { from - step + 1 };
    let hi = from - step / 2;
    lo + keys[lo..hi].partition_point(is_less)
}
