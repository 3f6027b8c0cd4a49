//! `skiplist`: crossbeam-skiplist 0.1.3's `SkipMap`, the most-used "concurrent `BTreeMap`": a
//! lock-free skip list with crossbeam-epoch reclamation and reference-counted entries.
//!
//! A `SkipMap` entry's value never moves, so values are `AtomicU64`: updates and
//! read-modify-writes change them in place after one `get` (the usual way to mutate a value in a
//! `SkipMap`), instead of re-inserting a node. Inserts use `compare_insert`, whose comparison
//! closure sees the old value when the key is present: one descent that reports it. There is no
//! bulk load: the sorted pairs are inserted one by one.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_skiplist::SkipMap;
use workload::IndexAdapter;

use super::visit;

/// `crossbeam_skiplist::SkipMap<u64, AtomicU64>` as an adapter.
pub struct Skiplist {
    map: SkipMap<u64, AtomicU64>,
}

impl Skiplist {
    /// An empty skip list.
    pub fn new() -> Self {
        Self {
            map: SkipMap::new(),
        }
    }
}

impl Default for Skiplist {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for Skiplist {
    fn name(&self) -> &str {
        "skiplist"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        for &(key, value) in pairs {
            self.map.insert(key, AtomicU64::new(value));
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.map
            .get(&key)
            .map(|entry| entry.value().load(Ordering::Acquire))
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        let old = Cell::new(None);
        self.map
            .compare_insert(key, AtomicU64::new(value), |present| {
                old.set(Some(present.load(Ordering::Acquire)));
                true
            });
        old.get()
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.map
            .get(&key)
            .map(|entry| entry.value().store(value, Ordering::Release))
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.map
            .remove(&key)
            .map(|entry| entry.value().load(Ordering::Acquire))
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        visit(
            self.map
                .range(start..)
                .take(n)
                .map(|entry| entry.value().load(Ordering::Acquire)),
        )
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.map
            .get(&key)
            .map(|entry| entry.value().fetch_xor(value, Ordering::AcqRel))
            .is_some()
    }
}
