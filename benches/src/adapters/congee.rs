//! `congee`: congee 0.4.1, an adaptive radix tree with optimistic lock coupling (ART-OLC) and
//! crossbeam-epoch reclamation — peers.md's fastest random point lookups; `u64` keys only (its
//! keys are 8 bytes).
//!
//! Every call pins an epoch guard (`Congee::pin`), as a user would per operation. Updates and
//! read-modify-writes are one atomic `compute_if_present`. Scans copy pairs into a caller buffer
//! (`range(start, end, buffer)`, `end` exclusive), so a scan fills a stack buffer in chunks and
//! continues after the last key of a full chunk; the key `u64::MAX` itself can never be scanned.
//! There is no bulk load: the sorted pairs are inserted one by one under one guard.

use congee::Congee;
use workload::IndexAdapter;

use super::visit;

/// Pairs a scan copies out per call of `Congee::range`.
const SCAN_CHUNK: usize = 128;

// Congee's keys and values are `usize`: the `u64` ↔ `usize` casts below are lossless only on
// 64-bit targets.
const _: () = assert!(
    usize::BITS == 64,
    "the congee adapter needs a 64-bit target"
);

/// `congee::Congee<usize, usize>` as an adapter.
pub struct CongeeArt {
    tree: Congee<usize, usize>,
}

impl CongeeArt {
    /// An empty tree.
    pub fn new() -> Self {
        Self {
            tree: Congee::default(),
        }
    }
}

impl Default for CongeeArt {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for CongeeArt {
    fn name(&self) -> &str {
        "congee"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        let guard = self.tree.pin();
        for &(key, value) in pairs {
            self.tree
                .insert(key as usize, value as usize, &guard)
                .expect("congee's default allocator panics rather than report out-of-memory");
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        let guard = self.tree.pin();
        self.tree
            .get(&(key as usize), &guard)
            .map(|value| value as u64)
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        let guard = self.tree.pin();
        self.tree
            .insert(key as usize, value as usize, &guard)
            .expect("congee's default allocator panics rather than report out-of-memory")
            .map(|old| old as u64)
    }

    fn update(&self, key: u64, value: u64) -> bool {
        let guard = self.tree.pin();
        self.tree
            .compute_if_present(&(key as usize), |_| Some(value as usize), &guard)
            .is_some()
    }

    fn remove(&self, key: u64) -> Option<u64> {
        let guard = self.tree.pin();
        self.tree
            .remove(&(key as usize), &guard)
            .map(|old| old as u64)
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        let guard = self.tree.pin();
        let mut buffer = [(0usize, 0usize); SCAN_CHUNK];
        let mut from = start as usize;
        let mut visited = 0;
        while visited < n {
            let want = (n - visited).min(SCAN_CHUNK);
            let got = self
                .tree
                .range(&from, &usize::MAX, &mut buffer[..want], &guard);
            visited += visit(buffer[..got].iter().map(|&(_, value)| value as u64));
            match buffer[..got].last() {
                // `last < usize::MAX` (the exclusive end), so `last + 1` does not overflow.
                Some(&(last, _)) if got == want => from = last + 1,
                _ => break,
            }
        }
        visited
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        let guard = self.tree.pin();
        self.tree
            .compute_if_present(&(key as usize), |old| Some(old ^ value as usize), &guard)
            .is_some()
    }
}
