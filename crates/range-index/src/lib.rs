//! Concurrent learned ordered indexes for learnkv.
//!
//! Every index here maps keys ([`learned_model::Key`]: `u64` or byte strings) to one 64-bit
//! word, takes `&self` in every method and is safe to share between threads (DESIGN.md, "Core
//! decisions"); all of them implement [`OrderedIndex`]. This crate is being built issue by
//! issue; today it holds [`xindex`], XIndex-R.

use std::ops::RangeBounds;

use learned_model::Key;

pub mod chunked;
pub mod xindex;

pub use xindex::XIndex;

/// A concurrent ordered map from keys to one 64-bit word.
///
/// Every method takes `&self` and may be called from any number of threads. Point operations
/// are linearizable; [`scan`](Self::scan) and [`range`](Self::range) read each pair
/// consistently but are not snapshots.
pub trait OrderedIndex<K: Key>: Send + Sync {
    /// The iterator [`range`](Self::range) returns; it also runs backward, from the range's
    /// end (`range(..).rev()`).
    type Range<'a>: DoubleEndedIterator<Item = (K, u64)>
    where
        Self: 'a;

    /// The value of `key`, if present.
    fn get(&self, key: &K::Query) -> Option<u64>;

    /// Inserts `key` or updates its value (upsert); returns the previous value.
    fn insert(&self, key: K, value: u64) -> Option<u64>;

    /// Replaces the value of `key`, if present, by `new` of it (called at most once, under the
    /// key's record lock, so the read and the write are one step against every other write of
    /// the key); returns the value replaced. An absent key is left absent: `None`, and `new` is
    /// not called. `new` must be short and must not call into the index: readers of the key
    /// wait for it, and a call back for a key whose lock is held deadlocks.
    fn update(&self, key: &K::Query, new: impl FnMut(u64) -> u64) -> Option<u64>;

    /// Removes `key`; returns its value if it was present.
    fn remove(&self, key: &K::Query) -> Option<u64>;

    /// Up to `n` pairs with keys `>= start`, in ascending key order.
    fn scan(&self, start: &K::Query, n: usize) -> Vec<(K, u64)>;

    /// The pairs whose keys lie in `range`, in ascending key order, or descending through
    /// [`DoubleEndedIterator`] (empty when the range is empty or reversed).
    fn range<R: RangeBounds<K::Query>>(&self, range: R) -> Self::Range<'_>;

    /// The number of keys present (exact when no operation runs concurrently).
    fn len(&self) -> usize;

    /// Whether no key is present.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Statistics about the index's structure and background work.
    fn stats(&self) -> Stats;

    /// Runs one pass of the background work synchronously on the calling thread; true if it
    /// changed the structure.
    fn maintenance_step(&self) -> bool;

    /// Runs background passes until nothing is left to do (for XIndex: every delta index is
    /// merged). With writers running concurrently it returns once a pass finds no work.
    fn quiesce(&self);
}

/// Statistics of an [`OrderedIndex`]. Fields an index does not have stay 0.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Keys present ([`OrderedIndex::len`]).
    pub keys: usize,
    /// Leaf-level nodes (XIndex: groups).
    pub groups: usize,
    /// Learned models at the leaf level.
    pub models: usize,
    /// Records in the sorted arrays, removed ones included.
    pub records: usize,
    /// The mean over models of their largest absolute error, in positions.
    pub mean_error: f64,
    /// Models whose predictions a table of residuals corrects (XIndex-R: learnkv's addition,
    /// not in the paper; the README's design notes, "Corrected predictions").
    pub corrected_models: usize,
    /// Keys held in delta indexes (buffers not yet merged), over all groups, removed ones
    /// included: a removal marks its entry, and the entry leaves with the next compaction.
    pub delta_keys: usize,
    /// The largest number of keys held by one group's delta indexes.
    pub max_delta_keys: usize,
    /// Compactions completed.
    pub compactions: u64,
    /// Model splits completed.
    pub model_splits: u64,
    /// Model merges completed.
    pub model_merges: u64,
    /// Group splits completed.
    pub group_splits: u64,
    /// Group merges completed.
    pub group_merges: u64,
    /// Root updates completed.
    pub root_updates: u64,
    /// Grace periods the structural changes waited for (XIndex-R: each costs a `membarrier`
    /// system call on Linux; a maintenance pass shares them among the rebuilds of a batch).
    pub grace_periods: u64,
    /// An estimate of the memory the index owns, in bytes.
    pub bytes: usize,
}
