//! `scc-hash`: `scc::HashMap` 3.8.8: buckets of 32 entries with per-bucket locks, resized
//! incrementally and without blocking (a new bucket array is pushed and entries migrate on later
//! accesses) — the same promise as XIndex-H's non-blocking resize (XIndex-H Figs. 25–27). Hasher:
//! `rustc-hash`'s `FxBuildHasher`, like every hash peer here: a fast unkeyed hash, the class of
//! XIndex-H's own (`mix64`), so the comparison is of the maps, not of SipHash against a multiply
//! (`dashmap` module).
//!
//! Reads go through `read_sync` (shared bucket lock), inserts through `upsert_sync` (returns the
//! old value), updates and read-modify-writes through `update_sync` (one bucket write lock). The
//! bulk load inserts one by one. Hash maps cannot scan: `scan` returns 0.

use rustc_hash::FxBuildHasher;
use scc::HashMap;
use workload::IndexAdapter;

/// `scc::HashMap<u64, u64>` as an adapter.
pub struct SccHash {
    map: HashMap<u64, u64, FxBuildHasher>,
}

impl SccHash {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            map: HashMap::with_hasher(FxBuildHasher),
        }
    }
}

impl Default for SccHash {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for SccHash {
    fn name(&self) -> &str {
        "scc-hash"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        for &(key, value) in pairs {
            self.map.upsert_sync(key, value);
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map.read_sync(&key, |_, value| *value)
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        self.map.upsert_sync(key, value)
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.map
            .update_sync(&key, |_, slot| *slot = value)
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.map.remove_sync(&key).map(|(_, value)| value)
    }

    fn scan(&self, _start: u64, _n: usize) -> usize {
        0
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.map
            .update_sync(&key, |_, slot| *slot ^= value)
            .is_some()
    }
}
