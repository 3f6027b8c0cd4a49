//! A table's index together with the values its words name: the one place, besides
//! [`crate::value`], that turns index words into value bytes. Every read of a word happens
//! under an epoch guard pinned before the word was loaded, and every word a write gets back
//! from the index is retired through that guard (see the ownership rules in `value`).

use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use concurrency::striped::StripedCount;
use crossbeam_epoch as epoch;
use hash_index::{HashIndex, XIndexH};
use range_index::OrderedIndex;
use range_index::xindex::XIndex;

use crate::error::{Error, Result};
use crate::key::{TableKey, TableKind};
use crate::options::Options;
use crate::stats::IndexStats;
use crate::value;

/// The index of one table.
enum Index<K: TableKey> {
    Ordered(XIndex<K>),
    Hash(XIndexH<K>),
}

/// A table's index and the heap bytes of its out-of-line values.
#[doc(hidden)]
pub struct Store<K: TableKey> {
    index: Index<K>,
    /// Heap bytes of the out-of-line values the index holds (approximate while writers run).
    heap_bytes: StripedCount,
    /// The table's name once it was deleted: writes are refused.
    deleted: OnceLock<String>,
}

/// A [`Store`] of either key type.
#[doc(hidden)]
#[derive(Clone)]
pub enum AnyStore {
    /// A table with `u64` keys.
    U64(Arc<Store<u64>>),
    /// A table with byte-string keys.
    Bytes(Arc<Store<Vec<u8>>>),
}

impl<K: TableKey> Store<K> {
    /// A table of `kind` holding `pairs` (strictly increasing keys; the store takes the words).
    pub(crate) fn load(kind: TableKind, pairs: Vec<(K, u64)>, options: &Options) -> Result<Self> {
        // SAFETY: the words are owned by `pairs`, which nothing else can read.
        let heap: usize = pairs
            .iter()
            .map(|(_, w)| unsafe { value::heap_len(*w) })
            .sum();
        let built = match kind {
            TableKind::Ordered if pairs.is_empty() => XIndex::new(options.ordered.clone())
                .map(Index::Ordered)
                .map_err(Error::from),
            TableKind::Ordered => XIndex::bulk_load(&pairs, options.ordered.clone())
                .map(Index::Ordered)
                .map_err(Error::from),
            TableKind::Hash if pairs.is_empty() => XIndexH::new(options.hash.clone())
                .map(Index::Hash)
                .map_err(Error::from),
            TableKind::Hash => XIndexH::bulk_load(&pairs, options.hash.clone())
                .map(Index::Hash)
                .map_err(Error::from),
        };
        match built {
            Ok(index) => Ok(Self {
                index,
                heap_bytes: StripedCount::starting_at([heap as i64]),
                deleted: OnceLock::new(),
            }),
            Err(error) => {
                for (_, word) in pairs {
                    // SAFETY: the index was not built, so `pairs` still owns every word.
                    unsafe { value::free(word) };
                }
                Err(error)
            }
        }
    }

    /// Marks the table, called `name`, deleted: later writes are refused
    /// ([`deleted`](Self::deleted)).
    pub(crate) fn mark_deleted(&self, name: &str) {
        // A table is deleted once: the catalog no longer finds it afterwards.
        let _ = self.deleted.set(name.to_owned());
    }

    /// The error of a write to the table, if it was deleted.
    pub(crate) fn deleted(&self) -> Option<Error> {
        let name = self.deleted.get()?;
        Some(Error::TableDeleted { name: name.clone() })
    }

    /// The value at `key`.
    pub(crate) fn get(&self, key: &K::Query) -> Option<Vec<u8>> {
        let _guard = epoch::pin();
        let word = self.word(key)?;
        // SAFETY: loaded from the index while `_guard` is pinned.
        Some(unsafe { value::read(word) })
    }

    /// `f` applied to the value at `key`, read in place under a pin.
    pub(crate) fn get_with<R>(&self, key: &K::Query, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let _guard = epoch::pin();
        let word = self.word(key)?;
        // SAFETY: loaded from the index while `_guard` is pinned, which outlives `f`.
        Some(unsafe { value::with(word, f) })
    }

    /// `f(i, value)` for the value of `keys[i]` (`None`: absent), read in place, in order:
    /// the index's lines for every key are requested before the first lookup
    /// ([`XIndex::get_many`], [`XIndexH::get_many`]), and every value block before the first
    /// value is read.
    pub(crate) fn get_many_with(
        &self,
        keys: &[&K::Query],
        mut f: impl FnMut(usize, Option<&[u8]>),
    ) {
        let _guard = epoch::pin();
        let words = match &self.index {
            Index::Ordered(index) => index.get_many(keys),
            Index::Hash(index) => index.get_many(keys),
        };
        for &word in words.iter().flatten() {
            value::prefetch(word);
        }
        for (i, word) in words.into_iter().enumerate() {
            match word {
                // SAFETY: loaded from the index while `_guard` is pinned, which outlives `f`.
                Some(word) => unsafe { value::with(word, |value| f(i, Some(value))) },
                None => f(i, None),
            }
        }
    }

    /// Whether `key` is present.
    pub(crate) fn contains(&self, key: &K::Query) -> bool {
        self.word(key).is_some()
    }

    /// `None` when `key` holds `expected` (`None`: `key` is absent); otherwise `Some` of the
    /// value it holds, from the same read as the comparison.
    pub(crate) fn mismatch(
        &self,
        key: &K::Query,
        expected: Option<&[u8]>,
    ) -> Option<Option<Vec<u8>>> {
        match self.get_with(key, |v| (Some(v) != expected).then(|| v.to_vec())) {
            Some(differs) => differs.map(Some),
            None => expected.is_some().then_some(None),
        }
    }

    fn word(&self, key: &K::Query) -> Option<u64> {
        match &self.index {
            Index::Ordered(index) => index.get(key),
            Index::Hash(index) => index.get(key),
        }
    }

    /// The number of keys.
    pub(crate) fn len(&self) -> usize {
        match &self.index {
            Index::Ordered(index) => index.len(),
            Index::Hash(index) => index.len(),
        }
    }

    /// Puts `word` (from [`value::encode`]; the store takes it) at `key`; the previous word,
    /// which the caller now owns and passes to [`Store::release`].
    pub(crate) fn install(&self, key: K, word: u64) -> Option<u64> {
        // SAFETY: the caller owns `word` until the insert below.
        let heap = unsafe { value::heap_len(word) } as i64;
        self.heap_bytes.adjust(heap);
        match &self.index {
            Index::Ordered(index) => index.insert(key, word),
            Index::Hash(index) => index.insert(key, word),
        }
    }

    /// Removes `key`; the removed word, which the caller now owns and passes to
    /// [`Store::release`].
    pub(crate) fn uninstall(&self, key: &K::Query) -> Option<u64> {
        match &self.index {
            Index::Ordered(index) => index.remove(key),
            Index::Hash(index) => index.remove(key),
        }
    }

    /// Retires a word that [`Store::install`] or [`Store::uninstall`] returned, returning its
    /// value when `want` is set.
    pub(crate) fn release(&self, old: Option<u64>, want: bool) -> Option<Vec<u8>> {
        let word = old?;
        let guard = epoch::pin();
        // SAFETY: the index gave the word back, so the caller owned it and passes it once.
        unsafe {
            self.heap_bytes.adjust(-(value::heap_len(word) as i64));
            let value = want.then(|| value::read(word));
            value::retire(word, &guard);
            value
        }
    }

    /// Up to `n` pairs from `start` on, in key order (ordered tables; empty for hash tables).
    pub(crate) fn scan(&self, start: &K::Query, n: usize) -> Vec<(K, Vec<u8>)> {
        self.scan_between((Bound::Included(start), Bound::Unbounded), n, false)
    }

    /// Up to `n` pairs with keys between `lower` and `upper`, ascending, or the last `n`
    /// descending when `reverse` is set (ordered tables; empty for hash tables).
    pub(crate) fn scan_between(
        &self,
        (lower, upper): (Bound<&K::Query>, Bound<&K::Query>),
        n: usize,
        reverse: bool,
    ) -> Vec<(K, Vec<u8>)> {
        let Index::Ordered(index) = &self.index else {
            return Vec::new();
        };
        let _guard = epoch::pin();
        let words = if reverse {
            index.scan_range_rev((lower, upper), n)
        } else {
            index.scan_range((lower, upper), n)
        };
        let mut pairs = Vec::with_capacity(words.len());
        // SAFETY: the scan loads the words while `_guard` is pinned, which outlives the reads.
        unsafe {
            read_scanned(words, |key, value| pairs.push((key, value.to_vec())));
        }
        pairs
    }

    /// Calls `visit` with up to `n` pairs with keys at or above `start`, ascending (with
    /// `reverse`, at or below it, descending), each value read in place; how many it visited.
    /// The keys come in the index's own form, so a short byte-string key costs no allocation.
    pub(crate) fn scan_with(
        &self,
        start: &K::Query,
        n: usize,
        reverse: bool,
        mut visit: impl FnMut(&K::Query, &[u8]),
    ) -> usize {
        let Index::Ordered(index) = &self.index else {
            return 0;
        };
        let _guard = epoch::pin();
        let pairs = if reverse {
            index.scan_rev_stored(start, n)
        } else {
            index.scan_stored(start, n)
        };
        let visited = pairs.len();
        // SAFETY: the scan loads the words while `_guard` is pinned, which outlives the reads.
        unsafe { read_scanned(pairs, |key, value| visit(K::query(&key), value)) };
        visited
    }

    /// Calls `visit` with every pair: in key order for an ordered table, in chunks each read
    /// under its own pin; in index order for a hash table, each group under its own pin.
    pub(crate) fn for_each<E>(
        &self,
        mut visit: impl FnMut(&K, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        const CHUNK: usize = 1024;
        match &self.index {
            Index::Ordered(_) => {
                let mut after: Option<K> = None;
                loop {
                    let lower = after
                        .as_ref()
                        .map_or(Bound::Unbounded, |key| Bound::Excluded(key.borrow()));
                    let chunk = self.scan_between((lower, Bound::Unbounded), CHUNK, false);
                    for (key, value) in &chunk {
                        visit(key, value)?;
                    }
                    if chunk.len() < CHUNK {
                        return Ok(());
                    }
                    after = chunk.into_iter().next_back().map(|(key, _)| key);
                }
            }
            Index::Hash(_) => {
                for (key, value) in self.hash_pairs() {
                    visit(&key, &value)?;
                }
                Ok(())
            }
        }
    }

    /// Every pair of a hash table, read lazily, each group under its own pin (nothing for an
    /// ordered table).
    pub(crate) fn hash_pairs(&self) -> HashPairs<'_, K> {
        HashPairs {
            guard: epoch::pin(),
            pairs: match &self.index {
                Index::Hash(index) => Some(index.iter()),
                Index::Ordered(_) => None,
            },
        }
    }

    /// The index's statistics and the values' heap bytes.
    pub(crate) fn stats(&self) -> (IndexStats, usize) {
        let index = match &self.index {
            Index::Ordered(index) => IndexStats::Ordered(index.stats()),
            Index::Hash(index) => IndexStats::Hash(index.stats()),
        };
        let heap = self.heap_bytes.total().max(0) as usize;
        (index, heap)
    }
}

impl<K: TableKey> Drop for Store<K> {
    fn drop(&mut self) {
        let words: Vec<u64> = match &self.index {
            Index::Ordered(index) => index.range(..).map(|(_, word)| word).collect(),
            Index::Hash(index) => index.iter().map(|(_, word)| word).collect(),
        };
        for word in words {
            // SAFETY: the store is being dropped, so no reader or writer can reach its index,
            // and each word sits in exactly one slot.
            unsafe { value::free(word) };
        }
    }
}

/// The pairs of a hash table with their values, read under the pin the iterator holds,
/// renewed between groups.
pub(crate) struct HashPairs<'a, K: TableKey> {
    guard: epoch::Guard,
    pairs: Option<hash_index::Iter<'a, K>>,
}

impl<K: TableKey> Iterator for HashPairs<'_, K> {
    type Item = (K, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        let pairs = self.pairs.as_mut()?;
        if pairs.buffered() == 0 {
            // Between two groups every word loaded so far was read: the pin moves on, so that
            // a checkpoint's scan or a long iteration does not hold back the reclamation of
            // the values replaced meanwhile (session 23's probe: a hash table's block pool
            // grew by a third during its checkpoints).
            self.guard.repin();
        }
        let (key, word) = pairs.next()?;
        // SAFETY: the iterator loaded the word after `self.guard` was last pinned (re-pinning
        // happens only before a group's words are loaded), and the guard stays pinned.
        Some((key, unsafe { value::read(word) }))
    }
}

impl AnyStore {
    /// [`Store::deleted`].
    pub(crate) fn deleted(&self) -> Option<Error> {
        match self {
            AnyStore::U64(store) => store.deleted(),
            AnyStore::Bytes(store) => store.deleted(),
        }
    }

    /// [`Store::mark_deleted`].
    pub(crate) fn mark_deleted(&self, name: &str) {
        match self {
            AnyStore::U64(store) => store.mark_deleted(name),
            AnyStore::Bytes(store) => store.mark_deleted(name),
        }
    }

    /// [`Store::install`] with a key encoded by [`TableKey::encode`] for this store's type.
    pub(crate) fn install_encoded(&self, key: &[u8], word: u64) -> Option<u64> {
        match self {
            AnyStore::U64(store) => store.install(decode_u64(key), word),
            AnyStore::Bytes(store) => store.install(key.to_vec(), word),
        }
    }

    /// [`Store::mismatch`] with a key encoded for this store's type.
    pub(crate) fn mismatch_encoded(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
    ) -> Option<Option<Vec<u8>>> {
        match self {
            AnyStore::U64(store) => store.mismatch(&decode_u64(key), expected),
            AnyStore::Bytes(store) => store.mismatch(key, expected),
        }
    }

    /// [`Store::uninstall`] with a key encoded for this store's type.
    pub(crate) fn uninstall_encoded(&self, key: &[u8]) -> Option<u64> {
        match self {
            AnyStore::U64(store) => store.uninstall(&decode_u64(key)),
            AnyStore::Bytes(store) => store.uninstall(key),
        }
    }

    /// [`Store::release`] without reading the value.
    pub(crate) fn release(&self, old: Option<u64>) {
        match self {
            AnyStore::U64(store) => store.release(old, false),
            AnyStore::Bytes(store) => store.release(old, false),
        };
    }

    /// Keys and statistics.
    pub(crate) fn stats(&self) -> (usize, IndexStats, usize) {
        match self {
            AnyStore::U64(store) => {
                let (index, heap) = store.stats();
                (store.len(), index, heap)
            }
            AnyStore::Bytes(store) => {
                let (index, heap) = store.stats();
                (store.len(), index, heap)
            }
        }
    }

    /// Every pair with its key in the log encoding (see [`Store::for_each`]).
    pub(crate) fn for_each_encoded<E>(
        &self,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            AnyStore::U64(store) => store.for_each(|key, value| visit(&key.to_be_bytes(), value)),
            AnyStore::Bytes(store) => store.for_each(|key, value| visit(key, value)),
        }
    }
}

/// Decodes a `u64` key the engine encoded itself.
fn decode_u64(key: &[u8]) -> u64 {
    u64::decode(key).expect("the engine encodes u64 keys as 8 bytes")
}

/// Frees a word from [`value::encode`] that no index ever held.
pub(crate) fn discard(word: u64) {
    // SAFETY: the caller owns the word and no index ever held it.
    unsafe { value::free(word) };
}

/// Calls `read` with each scanned key and its value, in place. The values' blocks lie wherever
/// they were allocated, not in key order: all of them are requested before the first is read,
/// so that their misses overlap.
///
/// # Safety
/// Every word was loaded from the index while a guard that the caller still holds was pinned.
unsafe fn read_scanned<T>(pairs: Vec<(T, u64)>, mut read: impl FnMut(T, &[u8])) {
    for &(_, word) in &pairs {
        value::prefetch(word);
    }
    for (key, word) in pairs {
        // SAFETY: the caller's guarantee.
        unsafe { value::with(word, |value| read(key, value)) };
    }
}
