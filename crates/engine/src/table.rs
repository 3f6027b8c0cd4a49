//! Table handles: [`OrderedTable`] (XIndex-R, with ranges) and [`HashTable`] (XIndex-H).
//!
//! A handle is cheap to clone, `Send + Sync`, and keeps its database open. Writes go through
//! the log when the database has one: the index write runs under the log's key lock right
//! after the record's timestamp is taken, so replay order is commit order per key.

use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use concurrency::prefetch::LOOKUP_BATCH;
use range_index::chunked::{ChunkSource, Chunked};

use crate::db::DbInner;
use crate::error::{CompareAndSwapError, Error, Result};
use crate::key::{MAX_KEY_LEN, TableKey};
use crate::store::{self, HashPairs, Store};
use crate::value;

/// The largest value a table accepts, in bytes (64 MiB).
pub const MAX_VALUE_LEN: usize = 64 << 20;

/// How many pairs a range iterator fetches first; each later fetch doubles, up to
/// [`RANGE_CHUNK_MAX`], so short ranges copy few values and long ones few chunks.
const RANGE_CHUNK_MIN: usize = 16;
/// The largest fetch of a range iterator.
const RANGE_CHUNK_MAX: usize = 1024;

/// Checks the sizes of a key and a value against the limits.
pub(crate) fn check_sizes(key_len: usize, value_len: usize) -> Result<()> {
    if key_len > MAX_KEY_LEN {
        return Err(Error::KeyTooLarge {
            len: key_len,
            max: MAX_KEY_LEN,
        });
    }
    if value_len > MAX_VALUE_LEN {
        return Err(Error::ValueTooLarge {
            len: value_len,
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// The handle both table kinds share.
struct Handle<K: TableKey> {
    db: Arc<DbInner>,
    id: u32,
    store: Arc<Store<K>>,
}

impl<K: TableKey> Clone for Handle<K> {
    fn clone(&self) -> Self {
        Self {
            db: Arc::clone(&self.db),
            id: self.id,
            store: Arc::clone(&self.store),
        }
    }
}

impl<K: TableKey> Handle<K> {
    /// Refuses writes to a deleted table. A write that passes just before the deletion is
    /// ordered before it: recovery ignores the deleted table's log records.
    fn check_live(&self) -> Result<()> {
        self.store.deleted().map_or(Ok(()), Err)
    }

    fn insert(&self, key: &K::Query, value: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.write(key, Some(value), || true, true)?.flatten())
    }

    fn remove(&self, key: &K::Query) -> Result<Option<Vec<u8>>> {
        Ok(self.write(key, None, || true, true)?.flatten())
    }

    fn compare_and_swap(
        &self,
        key: &K::Query,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        check_sizes(K::encoded_len(key), new.map_or(0, <[u8]>::len))?;
        self.check_live()?;
        // A mismatch seen before locking is already an answer: no lock is held while the
        // current value is copied. Under the lock the check runs again.
        if let Some(current) = self.store.mismatch(key, expected) {
            return Ok(Err(CompareAndSwapError { current }));
        }
        let mut conflict = None;
        let check = || {
            conflict = self
                .store
                .mismatch(key, expected)
                .map(|current| CompareAndSwapError { current });
            conflict.is_none()
        };
        self.write(key, new, check, false)?;
        Ok(conflict.map_or(Ok(()), Err))
    }

    /// Writes `value` at `key` (`None`: removes it) once `check` passes under the key's lock
    /// (see [`DbInner::write_key`]). `Some` of the previous value (read when `want_old` is
    /// set) when the write took effect; `None` when `check` failed.
    fn write(
        &self,
        key: &K::Query,
        value: Option<&[u8]>,
        check: impl FnOnce() -> bool,
        want_old: bool,
    ) -> Result<Option<Option<Vec<u8>>>> {
        check_sizes(K::encoded_len(key), value.map_or(0, <[u8]>::len))?;
        self.check_live()?;
        let word = value.map(value::encode);
        let owned = word.map(|_| K::owned(key));
        let mut applied = None;
        let written = self
            .db
            .write_key(self.id, &K::encode(key), value, check, || {
                applied = Some(match (owned, word) {
                    (Some(owned), Some(word)) => self.store.install(owned, word),
                    _ => self.store.uninstall(key),
                });
            });
        // The index may hold the write even when the log failed after it: release what it
        // gave back either way.
        let old = match (applied, word) {
            (Some(old), _) => Some(self.store.release(old, want_old)),
            (None, Some(word)) => {
                store::discard(word);
                None
            }
            (None, None) => None,
        };
        written?;
        Ok(old)
    }
}

/// `Clone`, `Debug` and the constructor of a table handle type.
macro_rules! handle_traits {
    ($name:ident) => {
        impl<K: TableKey> Clone for $name<K> {
            fn clone(&self) -> Self {
                Self {
                    handle: self.handle.clone(),
                }
            }
        }

        impl<K: TableKey> std::fmt::Debug for $name<K> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("id", &self.handle.id)
                    .finish_non_exhaustive()
            }
        }

        impl<K: TableKey> $name<K> {
            pub(crate) fn new(db: Arc<DbInner>, id: u32, store: Arc<Store<K>>) -> Self {
                Self {
                    handle: Handle { db, id, store },
                }
            }
        }
    };
}

/// The point operations both table kinds share.
macro_rules! point_operations {
    () => {
        /// The value at `key`.
        pub fn get<Q: Borrow<K::Query> + ?Sized>(&self, key: &Q) -> Option<Vec<u8>> {
            self.handle.store.get(key.borrow())
        }

        /// `f` applied to the value at `key`, read in place without a copy. The value stays
        /// pinned while `f` runs, which delays the reclamation of replaced values: keep `f`
        /// short.
        pub fn get_with<Q: Borrow<K::Query> + ?Sized, R>(
            &self,
            key: &Q,
            f: impl FnOnce(&[u8]) -> R,
        ) -> Option<R> {
            self.handle.store.get_with(key.borrow(), f)
        }

        /// The values at `keys`, in order (`None`: absent). The memory requests of the keys
        /// overlap (the index's lines of every key are requested before the first lookup, and
        /// every value before the first is read), so many keys read faster this way than one
        /// `get` at a time. Not a snapshot: each value is one a `get` during the call could
        /// have returned.
        pub fn get_many<'q, Q: Borrow<K::Query> + ?Sized + 'q>(
            &self,
            keys: impl IntoIterator<Item = &'q Q>,
        ) -> Vec<Option<Vec<u8>>> {
            let mut values = Vec::new();
            self.get_many_with(keys, |_, value| values.push(value.map(<[u8]>::to_vec)));
            values
        }

        /// [`get_many`](Self::get_many) without copies: `f(i, value)` for the value of the
        /// `i`-th key, read in place, in order. Values stay pinned while `f` runs, as for
        /// `get_with`: keep it short.
        pub fn get_many_with<'q, Q: Borrow<K::Query> + ?Sized + 'q>(
            &self,
            keys: impl IntoIterator<Item = &'q Q>,
            mut f: impl FnMut(usize, Option<&[u8]>),
        ) {
            let store = &self.handle.store;
            let mut chunk: Vec<&K::Query> = Vec::with_capacity(LOOKUP_BATCH);
            let mut done = 0;
            for key in keys {
                chunk.push(key.borrow());
                if chunk.len() == LOOKUP_BATCH {
                    store.get_many_with(&chunk, |i, value| f(done + i, value));
                    done += chunk.len();
                    chunk.clear();
                }
            }
            if !chunk.is_empty() {
                store.get_many_with(&chunk, |i, value| f(done + i, value));
            }
        }

        /// Whether `key` is present.
        pub fn contains_key<Q: Borrow<K::Query> + ?Sized>(&self, key: &Q) -> bool {
            self.handle.store.contains(key.borrow())
        }

        /// Inserts or replaces the value at `key`; the previous value. Durable as the
        /// database's [`crate::Durability`] says when it returns `Ok`.
        ///
        /// Errors: [`Error::KeyTooLarge`], [`Error::ValueTooLarge`], [`Error::TableDeleted`],
        /// and log failures (the write is then visible in memory but may not survive a crash).
        pub fn insert<Q: Borrow<K::Query> + ?Sized>(
            &self,
            key: &Q,
            value: impl AsRef<[u8]>,
        ) -> Result<Option<Vec<u8>>> {
            self.handle.insert(key.borrow(), value.as_ref())
        }

        /// Removes `key`; its value, if it was present. Errors as for `insert`.
        pub fn remove<Q: Borrow<K::Query> + ?Sized>(&self, key: &Q) -> Result<Option<Vec<u8>>> {
            self.handle.remove(key.borrow())
        }

        /// Writes `new` at `key` (`None`: removes it) if the key's value is `expected`
        /// (`None`: the key is absent), as one step against every other write of the key:
        /// `Ok(Ok(()))` once written, durable as for `insert`; `Ok(Err(conflict))` with the
        /// value found otherwise, and nothing is written or logged. Errors as for `insert`.
        ///
        /// Write `None::<&[u8]>` for an absent `expected` or `new` whose type the other
        /// argument does not give.
        pub fn compare_and_swap<Q: Borrow<K::Query> + ?Sized>(
            &self,
            key: &Q,
            expected: Option<impl AsRef<[u8]>>,
            new: Option<impl AsRef<[u8]>>,
        ) -> Result<std::result::Result<(), CompareAndSwapError>> {
            self.handle.compare_and_swap(
                key.borrow(),
                expected.as_ref().map(AsRef::as_ref),
                new.as_ref().map(AsRef::as_ref),
            )
        }

        /// Replaces the value at `key` by `f` of it (`None`: absent, or removes it), with
        /// [`compare_and_swap`](Self::compare_and_swap) retried until the key still holds the
        /// value `f` was given when the write is made; returns that value (the one replaced).
        /// `f` may run more than once under contention, and runs without any lock held. It
        /// writes even when `f` returns the value it was given. Errors as for `insert`.
        pub fn fetch_and_update<Q: Borrow<K::Query> + ?Sized, V: AsRef<[u8]>>(
            &self,
            key: &Q,
            mut f: impl FnMut(Option<&[u8]>) -> Option<V>,
        ) -> Result<Option<Vec<u8>>> {
            let key = key.borrow();
            let mut current = self.handle.store.get(key);
            loop {
                let new = f(current.as_deref());
                let new = new.as_ref().map(AsRef::as_ref);
                match self.handle.compare_and_swap(key, current.as_deref(), new)? {
                    Ok(()) => return Ok(current),
                    Err(conflict) => current = conflict.current,
                }
            }
        }

        /// The number of keys (exact when no write runs concurrently).
        pub fn len(&self) -> usize {
            self.handle.store.len()
        }

        /// Whether the table holds no key.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// The table's id in its database (used by [`crate::WriteBatch`]).
        pub(crate) fn parts(&self) -> (u64, u32, crate::store::AnyStore) {
            let handle = &self.handle;
            (handle.db.id, handle.id, K::wrap(Arc::clone(&handle.store)))
        }
    };
}

/// A table ordered by key, over XIndex-R. Keys are `u64` or `Vec<u8>` (queried as `[u8]`).
///
/// ```
/// use engine::Db;
/// let db = Db::open_in_memory()?;
/// let words = db.ordered_table::<Vec<u8>>("words")?;
/// for w in ["pear", "apple", "fig"] {
///     words.insert(w.as_bytes(), w.len().to_le_bytes())?;
/// }
/// let keys: Vec<Vec<u8>> = words.range(&b"b"[..]..).map(|(k, _)| k).collect();
/// assert_eq!(keys, [b"fig".to_vec(), b"pear".to_vec()]);
/// # Ok::<(), engine::Error>(())
/// ```
pub struct OrderedTable<K: TableKey> {
    handle: Handle<K>,
}

handle_traits!(OrderedTable);

impl<K: TableKey> OrderedTable<K> {
    point_operations!();

    /// The pairs whose keys lie in `range`, ascending, or descending from the back
    /// (`range(..).rev()`; the iterator is double-ended). It reads the table in chunks as it
    /// goes: each pair is read consistently, but the whole is not a snapshot.
    ///
    /// ```
    /// use engine::Db;
    /// let db = Db::open_in_memory()?;
    /// let events = db.ordered_table::<u64>("events")?;
    /// for at in [10, 20, 30, 40] {
    ///     events.insert(&at, b"e")?;
    /// }
    /// let latest: Vec<u64> = events.range(..40).rev().take(2).map(|(k, _)| k).collect();
    /// assert_eq!(latest, [30, 20]);
    /// # Ok::<(), engine::Error>(())
    /// ```
    pub fn range<Q, R>(&self, range: R) -> Range<'_, K>
    where
        Q: Borrow<K::Query> + ?Sized,
        R: RangeBounds<Q>,
    {
        let owned = |bound: Bound<&Q>| bound.map(|key| K::owned(key.borrow()));
        let bounds = (owned(range.start_bound()), owned(range.end_bound()));
        let scans = StoreScans(&*self.handle.store);
        Range(Chunked::new(
            scans,
            bounds,
            RANGE_CHUNK_MIN,
            RANGE_CHUNK_MAX,
        ))
    }

    /// The pair with the smallest key, if any.
    pub fn first(&self) -> Option<(K, Vec<u8>)> {
        self.end_pair(false)
    }

    /// The pair with the largest key, if any.
    pub fn last(&self) -> Option<(K, Vec<u8>)> {
        self.end_pair(true)
    }

    fn end_pair(&self, last: bool) -> Option<(K, Vec<u8>)> {
        let whole = (Bound::Unbounded, Bound::Unbounded);
        self.handle.store.scan_between(whole, 1, last).pop()
    }

    /// Up to `n` pairs with keys at or above `start`, ascending.
    pub fn scan<Q: Borrow<K::Query> + ?Sized>(&self, start: &Q, n: usize) -> Vec<(K, Vec<u8>)> {
        self.handle.store.scan(start.borrow(), n)
    }

    /// [`scan`](Self::scan) that calls `visit` with each pair, ascending, the value read in
    /// place without a copy; how many pairs it visited. The values stay pinned until the last
    /// call returns, which delays the reclamation of replaced values: keep `visit` short.
    pub fn scan_with<Q: Borrow<K::Query> + ?Sized>(
        &self,
        start: &Q,
        n: usize,
        visit: impl FnMut(&K::Query, &[u8]),
    ) -> usize {
        self.handle.store.scan_with(start.borrow(), n, false, visit)
    }

    /// [`scan_with`](Self::scan_with) backward: up to `n` pairs with keys at or below `end`,
    /// the largest first.
    ///
    /// ```
    /// use engine::Db;
    /// let db = Db::open_in_memory()?;
    /// let events = db.ordered_table::<u64>("events")?;
    /// for at in [10, 20, 30] {
    ///     events.insert(&at, at.to_le_bytes())?;
    /// }
    /// let mut latest = Vec::new();
    /// events.scan_rev_with(&25, 5, |&at, _| latest.push(at));
    /// assert_eq!(latest, [20, 10]);
    /// # Ok::<(), engine::Error>(())
    /// ```
    pub fn scan_rev_with<Q: Borrow<K::Query> + ?Sized>(
        &self,
        end: &Q,
        n: usize,
        visit: impl FnMut(&K::Query, &[u8]),
    ) -> usize {
        self.handle.store.scan_with(end.borrow(), n, true, visit)
    }

    /// Every pair, ascending.
    pub fn iter(&self) -> Range<'_, K> {
        self.range::<K::Query, _>(..)
    }
}

impl OrderedTable<Vec<u8>> {
    /// The pairs whose keys start with `prefix`, ascending (double-ended, as
    /// [`range`](Self::range)).
    ///
    /// ```
    /// use engine::Db;
    /// let db = Db::open_in_memory()?;
    /// let t = db.ordered_table::<Vec<u8>>("t")?;
    /// for key in ["user:1", "user:2", "users", "video:1"] {
    ///     t.insert(key.as_bytes(), b"")?;
    /// }
    /// let users: Vec<Vec<u8>> = t.prefix(b"user:").rev().map(|(k, _)| k).collect();
    /// assert_eq!(users, [b"user:2".to_vec(), b"user:1".to_vec()]);
    /// # Ok::<(), engine::Error>(())
    /// ```
    pub fn prefix(&self, prefix: &[u8]) -> Range<'_, Vec<u8>> {
        let end = prefix_end(prefix);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.range::<[u8], _>((Bound::Included(prefix), end))
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix without its trailing
/// `0xff` bytes, its last byte incremented; `None` when there is none (the prefix is empty or
/// all `0xff`).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&byte| byte != u8::MAX)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The iterator of [`OrderedTable::range`], double-ended: each end reads the table in chunks
/// of 16 pairs at first, twice as many each time after, up to 1,024, and no pair comes out
/// twice ([`Chunked`]).
#[derive(Debug)]
pub struct Range<'a, K: TableKey>(Chunked<K, StoreScans<'a, K>>);

/// A table's bounded scans, as a [`ChunkSource`].
struct StoreScans<'a, K: TableKey>(&'a Store<K>);

impl<K: TableKey> ChunkSource<K> for StoreScans<'_, K> {
    type Value = Vec<u8>;

    fn fetch(
        &self,
        lower: Bound<&K>,
        upper: Bound<&K>,
        n: usize,
        from_back: bool,
    ) -> Vec<(K, Vec<u8>)> {
        let bounds = (lower.map(Borrow::borrow), upper.map(Borrow::borrow));
        self.0.scan_between(bounds, n, from_back)
    }
}

impl<K: TableKey> Iterator for Range<'_, K> {
    type Item = (K, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }

    /// The range's largest pair, read from the back.
    fn last(self) -> Option<Self::Item> {
        self.0.last()
    }
}

impl<K: TableKey> DoubleEndedIterator for Range<'_, K> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}

impl<K: TableKey> std::iter::FusedIterator for Range<'_, K> {}

/// A hash table over XIndex-H: point operations and unordered iteration.
///
/// ```
/// use engine::Db;
/// let db = Db::open_in_memory()?;
/// let sessions = db.hash_table::<u64>("sessions")?;
/// sessions.insert(&42, b"token")?;
/// assert!(sessions.contains_key(&42));
/// assert_eq!(sessions.remove(&42)?, Some(b"token".to_vec()));
/// # Ok::<(), engine::Error>(())
/// ```
pub struct HashTable<K: TableKey> {
    handle: Handle<K>,
}

handle_traits!(HashTable);

impl<K: TableKey> HashTable<K> {
    point_operations!();

    /// Every pair, in no particular order. Not a snapshot: a key present and unchanged during
    /// the whole iteration comes once with its value, but a key written meanwhile may be missed
    /// or, removed and inserted again while its group is resized, come twice. The iterator
    /// reads one group of the index at a time (tens to a million keys), and values replaced
    /// while it is within a group stay in memory until it moves on to the next or is dropped.
    pub fn iter(&self) -> HashIter<'_, K> {
        HashIter {
            pairs: self.handle.store.hash_pairs(),
        }
    }
}

/// The iterator of [`HashTable::iter`].
pub struct HashIter<'a, K: TableKey> {
    pairs: HashPairs<'a, K>,
}

impl<K: TableKey> Iterator for HashIter<'_, K> {
    type Item = (K, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        self.pairs.next()
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn a_prefix_ends_at_its_last_byte_below_0xff_incremented() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(b""), None);
    }
}
