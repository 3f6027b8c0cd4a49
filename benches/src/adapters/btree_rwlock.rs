//! `btree-rwlock`: `parking_lot::RwLock<std::collections::BTreeMap<K, u64>>`, the baseline any
//! user has at hand (peers.md: on 2 cores a serious contender for reads and scans), for `u64` and
//! byte-string keys.
//!
//! Reads and scans take the read lock, writes the write lock; the bulk load builds the map from
//! the sorted pairs (`BTreeMap`'s bulk construction) under one write lock.

use std::collections::BTreeMap;
use std::ops::Bound;

use parking_lot::RwLock;

use super::{OwnedKeyMap, StoredKey, owned_key_adapter, visit};

/// A `BTreeMap` behind a reader-writer lock, as an adapter.
pub struct BTreeRwLock<K: StoredKey> {
    map: RwLock<BTreeMap<K, u64>>,
}

impl<K: StoredKey> BTreeRwLock<K> {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            map: RwLock::new(BTreeMap::new()),
        }
    }
}

impl<K: StoredKey> Default for BTreeRwLock<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: StoredKey> OwnedKeyMap<K> for BTreeRwLock<K> {
    const NAME: &'static str = "btree-rwlock";

    fn load<'q>(&self, pairs: impl Iterator<Item = (&'q K::Query, u64)>)
    where
        K::Query: 'q,
    {
        let mut map = self.map.write();
        if map.is_empty() {
            *map = pairs.map(|(key, value)| (K::store(key), value)).collect();
        } else {
            map.extend(pairs.map(|(key, value)| (K::store(key), value)));
        }
    }

    fn lookup(&self, key: &K::Query) -> Option<u64> {
        self.map.read().get(key).copied()
    }

    fn upsert(&self, key: &K::Query, value: u64) -> Option<u64> {
        self.map.write().insert(K::store(key), value)
    }

    fn overwrite(&self, key: &K::Query, value: u64) -> bool {
        self.map
            .write()
            .get_mut(key)
            .map(|slot| *slot = value)
            .is_some()
    }

    fn delete(&self, key: &K::Query) -> Option<u64> {
        self.map.write().remove(key)
    }

    fn range_visit(&self, start: &K::Query, n: usize) -> usize {
        let map = self.map.read();
        let range = map.range::<K::Query, _>((Bound::Included(start), Bound::Unbounded));
        visit(range.take(n).map(|(_, value)| *value))
    }

    fn xor_value(&self, key: &K::Query, value: u64) -> bool {
        self.map
            .write()
            .get_mut(key)
            .map(|slot| *slot ^= value)
            .is_some()
    }
}

owned_key_adapter!(BTreeRwLock);
