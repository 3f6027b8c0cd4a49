//! `papaya`: papaya 0.2.5, a lock-free open-addressing hash map with `seize` reclamation and
//! incremental resizing by default (writers copy a few entries each) — peers.md's best read-heavy
//! map, with the largest resize stall at 2 threads on 2 cores (XIndex-H Figs. 25–27's comparison).
//! Default resize mode; hasher `rustc-hash`'s `FxBuildHasher` (`dashmap` module).
//!
//! Every call pins a guard (`HashMap::pin`), as a user would per operation. Updates and
//! read-modify-writes are one atomic `update`. The bulk load reserves the capacity, then inserts
//! one by one. Hash maps cannot scan: `scan` returns 0.

use papaya::HashMap;
use rustc_hash::FxBuildHasher;
use workload::IndexAdapter;

/// `papaya::HashMap<u64, u64>` as an adapter.
pub struct Papaya {
    map: HashMap<u64, u64, FxBuildHasher>,
}

impl Papaya {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            map: HashMap::with_hasher(FxBuildHasher),
        }
    }
}

impl Default for Papaya {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for Papaya {
    fn name(&self) -> &str {
        "papaya"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        let map = self.map.pin();
        map.reserve(pairs.len());
        for &(key, value) in pairs {
            map.insert(key, value);
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map.pin().get(&key).copied()
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        self.map.pin().insert(key, value).copied()
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.map.pin().update(key, |_| value).is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.map.pin().remove(&key).copied()
    }

    fn scan(&self, _start: u64, _n: usize) -> usize {
        0
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.map.pin().update(key, |old| old ^ value).is_some()
    }
}
