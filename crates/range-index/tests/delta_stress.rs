//! Stress tests of XIndex's delta index on real threads (digest §2.5, §4.4 I1): writers insert
//! overlapping key sets in different orders while an updater increments neighbouring cells under
//! their locks and readers look keys up and iterate.
//!
//! Checked: every key is inserted exactly once (one `inserted == true` across writers) and keeps
//! one cell address, which later lookups return; a key whose insert has returned is always found,
//! with the inserting writer's value; iterations, forward and backward, are strictly ordered and
//! see every key inserted before they began; no update is lost. Each test runs rounds on fresh
//! indexes for about a second.
#![cfg(not(loom))]

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use range_index::xindex::DeltaIndex;

const WRITERS: usize = 3;
const READERS: usize = 2;
/// Writer keys are the even numbers below `2 * KEYS`; writer `w` inserts key `2i` iff
/// `i % WRITERS != w`, so every key has two writers.
const KEYS: u64 = 8_000;
/// Pre-filled odd keys (every `PREFILL_STEP`-th), updated in place while the writers split the
/// leaves around them.
const PREFILL_STEP: u64 = 40;
const ROUND_BUDGET: Duration = Duration::from_millis(900);

/// A small xorshift generator: deterministic, and no dependency on `rand`'s API.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn writers_of(key: u64) -> impl Iterator<Item = usize> {
    (0..WRITERS).filter(move |&w| (key / 2) as usize % WRITERS != w)
}

/// The value writer `w` inserts for `key`: the key and the writer's tag.
fn value_of(key: u64, writer: usize) -> u64 {
    key * 8 + writer as u64
}

fn prefilled() -> impl Iterator<Item = u64> {
    (0..KEYS).step_by(PREFILL_STEP as usize).map(|i| 2 * i + 1)
}

struct Shared<const FANOUT: usize> {
    index: DeltaIndex<u64, FANOUT>,
    /// Each writer's insert order.
    orders: Vec<Vec<u64>>,
    /// How many of its keys each writer has inserted (and returned from).
    progress: Vec<AtomicUsize>,
    writers_done: AtomicBool,
    start: Barrier,
}

fn round<const FANOUT: usize>(seed: u64) {
    let orders = (0..WRITERS)
        .map(|w| {
            let mut keys: Vec<u64> = (0..KEYS)
                .filter(|i| *i as usize % WRITERS != w)
                .map(|i| 2 * i)
                .collect();
            let mut rng = XorShift::new(seed * 31 + w as u64);
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.below(i + 1));
            }
            keys
        })
        .collect();
    let shared = Arc::new(Shared::<FANOUT> {
        index: DeltaIndex::new(),
        orders,
        progress: (0..WRITERS).map(|_| AtomicUsize::new(0)).collect(),
        writers_done: AtomicBool::new(false),
        start: Barrier::new(WRITERS + READERS + 2),
    });
    for key in prefilled() {
        shared.index.get_or_insert(key, 0);
    }

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                shared.start.wait();
                let mut results = Vec::with_capacity(shared.orders[w].len());
                for (j, &key) in shared.orders[w].iter().enumerate() {
                    let (cell, inserted) = shared.index.get_or_insert(key, value_of(key, w));
                    results.push((key, inserted, cell as *const _ as usize));
                    shared.progress[w].store(j + 1, Ordering::Release);
                }
                results
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                shared.start.wait();
                read_while_writing(&shared, XorShift::new(seed * 131 + r as u64))
            })
        })
        .collect();
    let updater = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || update_while_writing(&shared, XorShift::new(seed * 7 + 3)))
    };
    shared.start.wait();

    let results: Vec<Vec<(u64, bool, usize)>> = writers
        .into_iter()
        .map(|w| w.join().expect("writers do not panic"))
        .collect();
    shared.writers_done.store(true, Ordering::Release);
    let increments = updater.join().expect("the updater does not panic");
    let iterations: usize = readers
        .into_iter()
        .map(|r| r.join().expect("readers do not panic"))
        .sum();
    assert!(iterations > 0, "the readers iterated at least once");

    // Exactly one insert per key, one address per key, and lookups agree.
    let mut by_key: Vec<(u64, bool, usize, usize)> = results
        .iter()
        .enumerate()
        .flat_map(|(w, r)| r.iter().map(move |&(k, ins, addr)| (k, ins, addr, w)))
        .collect();
    by_key.sort_unstable();
    let index = &shared.index;
    for same_key in by_key.chunk_by(|a, b| a.0 == b.0) {
        let key = same_key[0].0;
        let inserters: Vec<usize> = same_key.iter().filter(|e| e.1).map(|e| e.3).collect();
        assert_eq!(
            inserters.len(),
            1,
            "key {key} inserted by writers {inserters:?}"
        );
        let addr = same_key[0].2;
        assert!(same_key.iter().all(|e| e.2 == addr), "key {key}: two cells");
        let cell = index.get(&key).expect("an inserted key is found");
        assert_eq!(cell as *const _ as usize, addr, "key {key} moved");
        assert_eq!(cell.read().1, value_of(key, inserters[0]));
    }
    let prefilled_count = prefilled().count();
    assert_eq!(by_key.len(), 2 * KEYS as usize);
    assert_eq!(index.len(), KEYS as usize + prefilled_count);

    // The final iteration is exactly the key set; no update was lost.
    let mut expected: Vec<u64> = (0..KEYS).map(|i| 2 * i).chain(prefilled()).collect();
    expected.sort_unstable();
    let keys: Vec<u64> = index.iter().map(|(k, _)| *k).collect();
    assert!(
        keys == expected,
        "the final iteration differs from the key set"
    );
    let updated: u64 = prefilled()
        .map(|k| index.get(&k).expect("pre-filled").read().1)
        .sum();
    assert_eq!(updated, increments, "an update was lost");
}

/// Point lookups of keys already inserted, and iterations checked against the keys inserted
/// before they began. Returns the number of iterations.
fn read_while_writing<const FANOUT: usize>(shared: &Shared<FANOUT>, mut rng: XorShift) -> usize {
    let mut iterations = 0;
    loop {
        let done = shared.writers_done.load(Ordering::Acquire);
        for _ in 0..100 {
            let w = rng.below(WRITERS);
            let inserted = shared.progress[w].load(Ordering::Acquire);
            if inserted == 0 {
                continue;
            }
            let key = shared.orders[w][rng.below(inserted)];
            let cell = shared.index.get(&key).expect("an inserted key is found");
            let value = cell.read().1;
            assert!(
                writers_of(key).any(|w| value == value_of(key, w)),
                "key {key}: value {value}"
            );
        }

        let before: Vec<usize> = shared
            .progress
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .collect();
        let bound = rng.next() % (2 * KEYS);
        // Forward from the start of the keys or from `bound`, or backward from the end or
        // from below `bound`; `keys` ascending in the end, `covered` the keys it must see.
        let kind = rng.below(4);
        let (mut keys, covered): (Vec<u64>, std::ops::Range<u64>) = match kind {
            0 => (shared.index.iter().map(|(k, _)| *k).collect(), 0..u64::MAX),
            1 => (
                shared.index.iter_from(&bound).map(|(k, _)| *k).collect(),
                bound..u64::MAX,
            ),
            2 => (
                shared
                    .index
                    .iter_rev(Bound::Unbounded)
                    .map(|(k, _)| *k)
                    .collect(),
                0..u64::MAX,
            ),
            _ => (
                shared
                    .index
                    .iter_rev(Bound::Excluded(&bound))
                    .map(|(k, _)| *k)
                    .collect(),
                0..bound,
            ),
        };
        if kind >= 2 {
            keys.reverse();
        }
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "iteration not strictly ordered"
        );
        assert!(
            keys.iter().all(|k| covered.contains(k)),
            "key outside the iteration's bounds"
        );
        let must_see = before
            .iter()
            .enumerate()
            .flat_map(|(w, &n)| shared.orders[w][..n].iter().copied())
            .chain(prefilled());
        for key in must_see.filter(|k| covered.contains(k)) {
            assert!(
                keys.binary_search(&key).is_ok(),
                "iteration missed key {key}"
            );
        }
        iterations += 1;
        if done {
            return iterations;
        }
    }
}

/// Increments random pre-filled cells under their locks until the writers finish; returns the
/// number of increments.
fn update_while_writing<const FANOUT: usize>(shared: &Shared<FANOUT>, mut rng: XorShift) -> u64 {
    shared.start.wait();
    let keys: Vec<u64> = prefilled().collect();
    let mut increments = 0;
    while !shared.writers_done.load(Ordering::Acquire) {
        let key = keys[rng.below(keys.len())];
        let cell = shared.index.get(&key).expect("pre-filled");
        let mut guard = cell.lock();
        let value = guard.value();
        guard.set_value(value + 1);
        drop(guard);
        increments += 1;
    }
    increments
}

fn rounds<const FANOUT: usize>() {
    let started = Instant::now();
    let mut seed = 1;
    while seed == 1 || started.elapsed() < ROUND_BUDGET {
        round::<FANOUT>(seed);
        seed += 1;
    }
}

#[test]
fn concurrent_inserts_lookups_updates_and_scans_fanout_16() {
    rounds::<16>();
}

#[test]
fn concurrent_inserts_lookups_updates_and_scans_fanout_4() {
    rounds::<4>();
}
