//! `scry`: scry-index 0.1.0's `LearnedMap`, the only concurrent learned sorted map on crates.io
//! (LIPP's chain method after SALI, SIGMOD'24): lock-free reads, CAS writes, localized rebuilds,
//! crossbeam-epoch reclamation — peers.md's closest competitor to learnkv's range indexes.
//!
//! Its bulk load builds a new map (`LearnedMap::bulk_load`), so the adapter holds the map in a
//! `OnceLock`, filled by the bulk load or, for runs that start empty, by the first operation.
//! API costs: `insert` reports only whether the key was new and `remove` only whether it was
//! present, so
//! - an insert is one `get_or_insert`; when the key held a different value it is then
//!   overwritten and that value returned; when it held the very value inserted, the overwrite
//!   changes nothing and the insert reports no previous value;
//! - a remove is a `get` (for the value the adapter must return) then a `remove`;
//! - an update or read-modify-write is a `get` then an `insert` (values are cloned when nodes are
//!   rebuilt, so they cannot be changed in place).
//!
//! Every call pins an epoch guard (`LearnedMap::guard`), as a user would per operation.

use std::sync::OnceLock;

use scry_index::LearnedMap;
use workload::IndexAdapter;

use super::visit;

/// `scry_index::LearnedMap<u64, u64>` as an adapter.
pub struct Scry {
    map: OnceLock<LearnedMap<u64, u64>>,
}

impl Scry {
    /// An adapter whose map is made by the bulk load or the first operation.
    pub fn new() -> Self {
        Self {
            map: OnceLock::new(),
        }
    }

    /// The map, empty if it was not bulk-loaded.
    fn map(&self) -> &LearnedMap<u64, u64> {
        self.map.get_or_init(LearnedMap::new)
    }
}

impl Default for Scry {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for Scry {
    fn name(&self) -> &str {
        "scry"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        if self.map.get().is_none()
            && let Ok(loaded) = LearnedMap::bulk_load(pairs)
            && self.map.set(loaded).is_ok()
        {
            return;
        }
        // An empty input, or a map that already exists: insert one by one.
        let map = self.map();
        let guard = map.guard();
        for &(key, value) in pairs {
            map.insert(key, value, &guard);
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        let map = self.map();
        map.get(&key, &map.guard()).copied()
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        let map = self.map();
        let guard = map.guard();
        let present = *map.get_or_insert(key, value, &guard);
        if present == value {
            None
        } else {
            map.insert(key, value, &guard);
            Some(present)
        }
    }

    fn update(&self, key: u64, value: u64) -> bool {
        let map = self.map();
        let guard = map.guard();
        let present = map.get(&key, &guard).is_some();
        if present {
            map.insert(key, value, &guard);
        }
        present
    }

    fn remove(&self, key: u64) -> Option<u64> {
        let map = self.map();
        let guard = map.guard();
        let old = map.get(&key, &guard).copied()?;
        map.remove(&key, &guard).then_some(old)
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        let map = self.map();
        let guard = map.guard();
        visit(map.range(start.., &guard).take(n).map(|(_, value)| *value))
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        let map = self.map();
        let guard = map.guard();
        match map.get(&key, &guard).copied() {
            Some(old) => {
                map.insert(key, old ^ value, &guard);
                true
            }
            None => false,
        }
    }
}
