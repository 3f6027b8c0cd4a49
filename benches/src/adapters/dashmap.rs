//! `dashmap`: dashmap 6.2.1, the de-facto standard concurrent hash map: shards of
//! `RwLock<hashbrown::HashMap>`, each resized under its write lock (peers.md: the resize stalls of
//! XIndex-H Fig. 26's blocking baseline, per shard). Hasher: `rustc-hash`'s `FxBuildHasher`, like
//! every hash peer here: a fast unkeyed hash, the class of XIndex-H's own (`mix64`), so the
//! comparison is of the maps, not of their hashers (the default, SipHash, costs ~11 ns a key).
//!
//! Updates and read-modify-writes change the value through `get_mut` under the shard's write
//! lock. The map cannot reserve capacity through a shared reference, so the bulk load inserts one
//! by one. Hash maps cannot scan: `scan` returns 0.

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;
use workload::IndexAdapter;

/// `dashmap::DashMap<u64, u64>` as an adapter.
pub struct DashMapAdapter {
    map: DashMap<u64, u64, FxBuildHasher>,
}

impl DashMapAdapter {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            map: DashMap::with_hasher(FxBuildHasher),
        }
    }
}

impl Default for DashMapAdapter {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for DashMapAdapter {
    fn name(&self) -> &str {
        "dashmap"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        for &(key, value) in pairs {
            self.map.insert(key, value);
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map.get(&key).map(|value| *value)
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        self.map.insert(key, value)
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.map
            .get_mut(&key)
            .map(|mut slot| *slot = value)
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.map.remove(&key).map(|(_, value)| value)
    }

    fn scan(&self, _start: u64, _n: usize) -> usize {
        0
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.map
            .get_mut(&key)
            .map(|mut slot| *slot ^= value)
            .is_some()
    }
}
