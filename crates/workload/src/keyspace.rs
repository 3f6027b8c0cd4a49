//! The key space of a run: the keys bulk-loaded into the index and the pool of keys kept out of it
//! for inserts (YCSB's "record count" and "insert start"; XIndex §6.3's read/write runs, whose
//! inserts need keys not yet loaded).
//!
//! Threads never coordinate: thread `t` of `T` owns the loaded keys of rank `t, t + T, t + 2T, …`
//! (the ones it may remove) and a contiguous `1/T` slice of the pool (the ones it may insert).
//! Its owned keys form a cyclic sequence — its loaded keys in a seeded random order, then its pool
//! slice in pool order — and the live ones are a window of that sequence: an insert appends the
//! key after the window, a remove takes the window's first key. With inserts and removes in equal
//! measure the window slides around the cycle forever and the index size stays stable; no key is
//! ever inserted while present or removed while absent, and two threads never touch the same key
//! through inserts or removes.

use rand::RngExt;
use rand::seq::SliceRandom;

use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::seed;

/// Loaded keys (sorted, unique) and the pool of keys to insert (distinct from them, in the order
/// they will be inserted).
///
/// ```
/// let space = workload::KeySpace::split((0..100u64).collect(), 80, 1)?;
/// assert_eq!((space.loaded().len(), space.pool().len()), (80, 20));
/// assert!(space.loaded().windows(2).all(|w| w[0] < w[1]));
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace<K> {
    loaded: Vec<K>,
    pool: Vec<K>,
}

impl<K: Copy + Ord> KeySpace<K> {
    /// A key space from explicit parts. `loaded` must be sorted and unique; `pool` unique and
    /// disjoint from `loaded` (checked: O(p log p) for a pool of `p` keys).
    pub fn new(loaded: Vec<K>, pool: Vec<K>) -> Result<Self> {
        if let Some(position) = loaded.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Error::Unsorted {
                source_name: "loaded keys (sorted and unique)".into(),
                position: position + 1,
            });
        }
        let mut sorted_pool = pool.clone();
        sorted_pool.sort_unstable();
        if sorted_pool.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::invalid("the insert pool holds a key twice"));
        }
        if sorted_pool
            .iter()
            .any(|key| loaded.binary_search(key).is_ok())
        {
            return Err(Error::invalid("the insert pool holds a loaded key"));
        }
        Ok(Self { loaded, pool })
    }

    /// Splits sorted unique `keys` into `load` keys chosen uniformly at random to bulk-load and
    /// the rest, shuffled, as the insert pool; both parts follow the data set's distribution.
    /// `load = 0` gives an empty index and every key to insert (insert-only growth); `load =
    /// keys.len()` a read-only key space.
    pub fn split(mut keys: Vec<K>, load: usize, seed: u64) -> Result<Self> {
        if let Some(position) = keys.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Error::Unsorted {
                source_name: "keys to split (sorted and unique)".into(),
                position: position + 1,
            });
        }
        if load > keys.len() {
            return Err(Error::invalid(format!(
                "cannot load {load} of {} keys",
                keys.len()
            )));
        }
        let mut rng = seed::rng(seed, seed::stream::SPLIT);
        let mut pool = Vec::with_capacity(keys.len() - load);
        let mut kept = 0;
        // Selection sampling in place: the loaded keys are compacted to the front, still sorted.
        for i in 0..keys.len() {
            if rng.random_range(0..keys.len() - i) < load - kept {
                keys[kept] = keys[i];
                kept += 1;
            } else {
                pool.push(keys[i]);
            }
        }
        keys.truncate(kept);
        pool.shuffle(&mut rng);
        Ok(Self { loaded: keys, pool })
    }
}

impl<K: Copy> KeySpace<K> {
    /// The keys to bulk-load, sorted.
    pub fn loaded(&self) -> &[K] {
        &self.loaded
    }

    /// The keys to insert, in insertion order.
    pub fn pool(&self) -> &[K] {
        &self.pool
    }

    /// The bulk-load input: each loaded key with its rank as value.
    pub fn bulk_pairs(&self) -> Vec<(K, u64)> {
        self.loaded
            .iter()
            .zip(0..)
            .map(|(&key, rank)| (key, rank))
            .collect()
    }

    /// The slice of the pool that thread `thread` of `threads` inserts from: empty for a thread
    /// that does not exist (`thread >= threads`, e.g. any thread of 0).
    pub fn pool_slice(&self, thread: usize, threads: usize) -> &[K] {
        if thread >= threads {
            return &[];
        }
        let (base, extra) = (self.pool.len() / threads, self.pool.len() % threads);
        let start = thread * base + thread.min(extra);
        &self.pool[start..start + base + usize::from(thread < extra)]
    }
}

/// The seed of the order in which thread `thread` removes its loaded keys: a labelled stream of
/// its own, so that no two (seed, thread) pairs share it and it differs from the load order of
/// [`crate::KeyDistribution::Latest`].
pub(crate) fn remove_order_seed(seed: u64, thread: usize) -> u64 {
    seed::derive(seed, seed::stream::REMOVE_ORDERS + thread as u64)
}

/// One thread's owned keys and its window of live ones (see the module comment).
#[derive(Debug, Clone)]
pub(crate) struct ThreadKeys<'a, K> {
    loaded: &'a [K],
    pool: &'a [K],
    thread: usize,
    threads: usize,
    /// How many loaded keys the thread owns.
    owned_loaded: u64,
    /// The order in which the thread removes its loaded keys.
    order: Permutation,
    /// The live window `[start, end)` of the cyclic sequence, as ever-increasing counters.
    start: u64,
    end: u64,
}

impl<'a, K: Copy> ThreadKeys<'a, K> {
    /// Thread `thread`'s keys, its loaded ones all live. `thread < threads` is checked by the
    /// caller.
    pub(crate) fn new(space: &'a KeySpace<K>, thread: usize, threads: usize, seed: u64) -> Self {
        let owned_loaded = space.loaded.len().saturating_sub(thread).div_ceil(threads) as u64;
        Self {
            loaded: &space.loaded,
            pool: space.pool_slice(thread, threads),
            thread,
            threads,
            owned_loaded,
            order: Permutation::new(owned_loaded, remove_order_seed(seed, thread)),
            start: 0,
            end: owned_loaded,
        }
    }

    /// The length of the cyclic sequence.
    fn cycle(&self) -> u64 {
        self.owned_loaded + self.pool.len() as u64
    }

    /// The `i`-th key of the cyclic sequence (`i` taken modulo its length, which is not 0).
    pub(crate) fn nth(&self, i: u64) -> K {
        let i = i % self.cycle();
        if i < self.owned_loaded {
            self.loaded[self.thread + self.threads * self.order.apply(i) as usize]
        } else {
            self.pool[(i - self.owned_loaded) as usize]
        }
    }

    /// The next key to insert, or `None` when every owned key is live.
    pub(crate) fn next_insert(&mut self) -> Option<K> {
        if self.end - self.start == self.cycle() {
            return None;
        }
        let key = self.nth(self.end);
        self.end += 1;
        Some(key)
    }

    /// The next key to remove, or `None` when no owned key is live.
    pub(crate) fn next_remove(&mut self) -> Option<K> {
        if self.start == self.end {
            return None;
        }
        let key = self.nth(self.start);
        self.start += 1;
        Some(key)
    }

    /// The number of owned keys that are live.
    pub(crate) fn live(&self) -> u64 {
        self.end - self.start
    }

    /// The number of inserts so far.
    pub(crate) fn inserted(&self) -> u64 {
        self.end - self.owned_loaded
    }

    /// The number of loaded keys the thread owns (the start of its pool keys in the sequence).
    pub(crate) fn owned_loaded(&self) -> u64 {
        self.owned_loaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn split_is_exact_disjoint_and_deterministic() {
        let keys: Vec<u64> = (0..10_000).map(|i| i * 3).collect();
        let space = KeySpace::split(keys.clone(), 7_000, 4).expect("valid split");
        assert_eq!(space.loaded().len(), 7_000);
        assert_eq!(space.pool().len(), 3_000);
        let mut all: Vec<u64> = space.loaded().iter().chain(space.pool()).copied().collect();
        all.sort_unstable();
        assert_eq!(all, keys);
        assert!(
            space.pool().windows(2).any(|w| w[0] > w[1]),
            "the pool is shuffled"
        );
        assert_eq!(
            space,
            KeySpace::split(keys.clone(), 7_000, 4).expect("valid split")
        );
        assert!(KeySpace::split(keys.clone(), 10_001, 4).is_err());
        assert!(KeySpace::split(vec![2u64, 1], 1, 4).is_err());
        assert_eq!(
            KeySpace::split(keys.clone(), 0, 4)
                .expect("valid")
                .pool()
                .len(),
            10_000
        );
    }

    #[test]
    fn explicit_parts_are_checked() {
        assert!(KeySpace::new(vec![1u64, 2], vec![3, 4]).is_ok());
        assert!(KeySpace::new(vec![2u64, 1], vec![]).is_err());
        assert!(KeySpace::new(vec![1u64, 2], vec![3, 3]).is_err());
        assert!(KeySpace::new(vec![1u64, 2], vec![2]).is_err());
    }

    #[test]
    fn pool_slices_partition_the_pool() {
        let space = KeySpace::new(vec![], (0..10u64).collect()).expect("valid");
        let slices: Vec<&[u64]> = (0..3).map(|t| space.pool_slice(t, 3)).collect();
        assert_eq!(slices.concat(), (0..10).collect::<Vec<_>>());
        assert_eq!(
            slices.iter().map(|s| s.len()).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert!(space.pool_slice(0, 0).is_empty(), "no thread of 0 threads");
        assert!(space.pool_slice(5, 3).is_empty(), "no thread 5 of 3");
    }

    #[test]
    fn remove_orders_are_separate_streams() {
        let load_order = crate::distribution::load_order_seed(7);
        for thread in 0..64 {
            assert_ne!(remove_order_seed(7, thread), load_order, "thread {thread}");
            assert_ne!(
                remove_order_seed(7, thread),
                remove_order_seed(7 ^ 1, thread ^ 1),
                "seeds s and s ^ 1 must not swap threads {thread} and {}",
                thread ^ 1
            );
        }
        // The same check on the streams: thread 1 of seed 6 does not replay thread 0 of seed 7.
        let space = KeySpace::split((0..2_000u64).collect(), 2_000, 1).expect("valid");
        let removes = |thread, seed| -> Vec<u64> {
            let mut keys = ThreadKeys::new(&space, thread, 2, seed);
            std::iter::from_fn(|| keys.next_remove())
                .map(|key| key / 2)
                .collect()
        };
        assert_ne!(removes(0, 7), removes(1, 6));
    }

    #[test]
    fn thread_windows_never_collide_and_cycle_through_owned_keys() {
        let space = KeySpace::split((0..1_000u64).collect(), 700, 2).expect("valid");
        let threads = 3;
        let mut live: BTreeSet<u64> = space.loaded().iter().copied().collect();
        let mut owners: Vec<ThreadKeys<'_, u64>> = (0..threads)
            .map(|t| ThreadKeys::new(&space, t, threads, 9))
            .collect();
        assert_eq!(owners.iter().map(|o| o.live()).sum::<u64>(), 700);
        for step in 0..5_000 {
            let owner = &mut owners[step % threads];
            if (step / threads) % 2 == 0 {
                let key = owner.next_remove().expect("live keys remain");
                assert!(live.remove(&key), "removed key {key} was live");
            } else {
                let key = owner.next_insert().expect("room remains");
                assert!(live.insert(key), "inserted key {key} was absent");
            }
        }
        let mut owner = ThreadKeys::new(&space, 0, 1, 9);
        while owner.next_insert().is_some() {}
        assert_eq!(owner.live(), 1_000);
        assert_eq!(owner.inserted(), 300);
        while owner.next_remove().is_some() {}
        assert_eq!(owner.live(), 0);
    }
}
