//! `hashmap-rwlock`: `parking_lot::RwLock<std::collections::HashMap<u64, u64>>`, the hash-map
//! baseline any user has at hand; a resize rehashes the whole table under the write lock (the
//! blocking resize of XIndex-H Fig. 26's LH+Block, in its plainest form). Hasher `rustc-hash`'s
//! `FxBuildHasher` (`dashmap` module).
//!
//! Reads take the read lock, writes the write lock; the bulk load reserves the capacity and
//! inserts under one write lock. Hash maps cannot scan: `scan` returns 0.

use std::collections::HashMap;

use parking_lot::RwLock;
use rustc_hash::FxBuildHasher;
use workload::IndexAdapter;

/// A `HashMap` behind a reader-writer lock, as an adapter.
pub struct HashMapRwLock {
    map: RwLock<HashMap<u64, u64, FxBuildHasher>>,
}

impl HashMapRwLock {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            map: RwLock::new(HashMap::with_hasher(FxBuildHasher)),
        }
    }
}

impl Default for HashMapRwLock {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for HashMapRwLock {
    fn name(&self) -> &str {
        "hashmap-rwlock"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        let mut map = self.map.write();
        map.reserve(pairs.len());
        map.extend(pairs.iter().copied());
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map.read().get(&key).copied()
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        self.map.write().insert(key, value)
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.map
            .write()
            .get_mut(&key)
            .map(|slot| *slot = value)
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.map.write().remove(&key)
    }

    fn scan(&self, _start: u64, _n: usize) -> usize {
        0
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.map
            .write()
            .get_mut(&key)
            .map(|slot| *slot ^= value)
            .is_some()
    }
}
