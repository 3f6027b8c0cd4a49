//! Concurrent learned hash indexes for learnkv.
//!
//! Every index here maps keys (`u64` or byte strings, [`HashKey`]) to one 64-bit word, takes
//! `&self` in every method and is safe to share between threads (DESIGN.md, "Core
//! decisions"); all of them implement [`HashIndex`]. Today it holds [`XIndexH`], the learned
//! hash index of XIndex (Wang et al., ACM TOS 2022, §3.6) with its non-blocking resize.
//!
//! Modules, one per concept: `config` ([`Config`]), `error` ([`Error`]), `key` ([`HashKey`]),
//! `model` (learned or hashed placement, chosen by measured conflicts), `record` (buckets,
//! chain nodes, the meta-word operations), `group` (Algorithm 9 on one group), `resize`
//! (Algorithm 10), `index` (the root and the public operations), `background`; the groups'
//! counts and the length are [`concurrency::striped`] counters.
//!
//! Decisions on the digest's flaws and gaps (§3.18, §4.6, §9), each explained in its module:
//!
//! - *Frozen without `tmp_group`* (§4.6 case 18): the new group is allocated before the freeze
//!   and published as the freeze itself, so no put ever retries or waits for a resize; inserts
//!   into the old group re-check `tmp_group` under the key's home-bucket lock (`group`).
//! - *Barrier on idle threads* (§4.3): the barriers are [`concurrency::GracePeriod`] (QSBR
//!   with an offline state); resizes of one background pass share them (`resize`).
//! - *Migration racing workers* (§3.18 bug-risk): pointer records are placed under the new
//!   group's bucket locks, never over a key a worker inserted, removed records skipped.
//! - *Racy reads in Rust*: every word a reader touches is atomic; a pointer record is
//!   validated before its target is followed and again after (`record`).
//! - *Remove semantics* (a gap): a remove updates the key's record in lookup order (bucket,
//!   nearby buckets, chain, then `tmp_group`) and never inserts; removed records are revived
//!   only in the group that takes inserts.
//! - *Chain design* (a gap): a key first tries buckets up to two away, then a chain shared by two
//!   buckets, pushed under the home bucket's lock (`record`).
//! - *Resize target size* (a gap): `live / target_load_factor` buckets; when growing, up to four
//!   times the buckets, but no load factor under `lower_load_factor` (`resize`).
//! - *Learned or hash* (the issue): each group's placement is trained on its keys and kept
//!   only if it conflicts less than the hash (`model`); groups under a hashed root use the
//!   hash untrained.
//! - *Root*: fixed at construction (learned or hashed); groups grow and shrink on their own.
//!   Retraining or re-partitioning the root is not implemented (`index`).

#![deny(unsafe_op_in_unsafe_fn)]

mod background;
mod config;
mod error;
mod group;
mod index;
mod key;
mod model;
mod record;
mod resize;

pub use config::{Config, MAX_GROUPS};
pub use error::Error;
pub use index::{Iter, XIndexH};
pub use key::HashKey;
pub use model::PlacementKind;
pub use resize::Phase;

/// A concurrent hash map from keys to one 64-bit word.
///
/// Every method takes `&self` and may be called from any number of threads. Point
/// operations are linearizable; [`iter`](Self::iter) reads each pair consistently but is not
/// a snapshot.
pub trait HashIndex<K: HashKey>: Send + Sync {
    /// The iterator [`iter`](Self::iter) returns.
    type Iter<'a>: Iterator<Item = (K, u64)>
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

    /// The number of keys present (exact when no operation runs concurrently).
    fn len(&self) -> usize;

    /// Whether no key is present.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every pair, in no particular order. A key present and unchanged during the whole
    /// iteration is returned exactly once with its value; keys written meanwhile may be
    /// missed or (when re-inserted during a resize) returned twice.
    fn iter(&self) -> Self::Iter<'_>;

    /// Statistics about the index's structure and background work.
    fn stats(&self) -> Stats;

    /// Runs one pass of the background work synchronously on the calling thread; true if it
    /// changed the structure.
    fn maintenance_step(&self) -> bool;

    /// Runs background passes until a pass finds nothing to do.
    fn quiesce(&self);
}

/// Statistics of a [`HashIndex`]. Load factors are live keys per bucket.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Keys present ([`HashIndex::len`]).
    pub keys: usize,
    /// Groups.
    pub groups: usize,
    /// Groups placing keys with a learned model.
    pub learned_groups: usize,
    /// Groups placing keys with the hash function (the learned model conflicted more).
    pub hashed_groups: usize,
    /// Buckets over all groups.
    pub buckets: usize,
    /// Records in chains over all groups (removed ones included).
    pub chain_nodes: usize,
    /// The conflict rate now: records in chains over live keys (0 when empty). Keys placed in
    /// a neighbour of their home bucket do not count: their lookup costs no extra miss.
    pub conflict_rate: f64,
    /// The conflict rate the groups' placements had on the keys they were trained on (keys
    /// whose home bucket another key took), averaged over groups weighted by their buckets.
    pub trained_conflict_rate: f64,
    /// The whole index's load factor.
    pub load_factor: f64,
    /// The smallest load factor of a group.
    pub min_load_factor: f64,
    /// The largest load factor of a group.
    pub max_load_factor: f64,
    /// Finished resizes that grew a group.
    pub grows: u64,
    /// Finished resizes that shrank a group.
    pub shrinks: u64,
    /// Finished resizes that kept a group's bucket count (rebuilding its chains, or retraining
    /// its placement).
    pub rebuilds: u64,
    /// Heap bytes held by the index (groups, buckets, chains, byte-string keys).
    pub bytes: usize,
}
