//! Concurrent stress tests of XIndex-H on real threads (DESIGN "Testing layers" 4; digest §8
//! "Concurrent tests"), while a resizer thread grows and shrinks random groups back to back
//! (tiny groups, one to nine buckets, so chains and pointer records are everywhere) and the
//! background thread runs its own load-factor passes (one test runs three background threads,
//! whose shares of the groups are resized at the same time):
//!
//! - **per-key linearizability**: in rounds, workers run gets (single, and batched with
//!   `get_many`: one event per key spanning the call), upserts and updates of present keys
//!   (unique values) and removes on a few hot keys; each key is a register whose history
//!   (invoke and response times, operation, result) is checked by a Wing–Gong search with
//!   memoisation;
//! - **lost updates and resurrection**: each worker owns keys that it alone writes, with
//!   strictly increasing values (inserts, and updates adding one) and removes; every result
//!   must match its private model, and the final contents must equal it;
//! - **stable keys**: keys loaded and never written are found with their value by every get
//!   and appear exactly once in every concurrent iteration.
#![cfg(not(loom))]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use hash_index::{Config, HashIndex, HashKey, XIndexH};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use test_support::{Event, Kind, linearizable};

const WORKERS: u64 = 3;
const HOT_KEYS: usize = 4;
const OPS_PER_ROUND: u64 = 24;
/// Keys `0..KEY_SPACE`: multiples of 4 are stable (loaded, never written), the others are
/// hot-key candidates (even ones loaded, odd ones absent at first).
const KEY_SPACE: u64 = 2_000;
/// Worker `t` owns keys `OWNED_BASE + t * 100 + 0..OWNED_PER_WORKER`.
const OWNED_BASE: u64 = 100_000;
const OWNED_PER_WORKER: u64 = 8;

/// A key type under stress, built from a number.
trait StressKey: HashKey {
    fn make(n: u64) -> Self;
    fn number(&self) -> u64;
}

impl StressKey for u64 {
    fn make(n: u64) -> Self {
        n
    }
    fn number(&self) -> u64 {
        *self
    }
}

impl StressKey for Vec<u8> {
    fn make(n: u64) -> Self {
        format!("key:{n:07}").into_bytes()
    }
    fn number(&self) -> u64 {
        std::str::from_utf8(&self[4..])
            .expect("keys are ASCII")
            .parse()
            .expect("keys hold a number")
    }
}

fn stress<K: StressKey>(budget: Duration, background_threads: usize) {
    let pairs: Vec<(K, u64)> = (0..KEY_SPACE)
        .filter(|n| n % 2 == 0)
        .map(|n| (K::make(n), n))
        .collect();
    let config = Config {
        min_buckets: 1,
        group_size: 64,
        period: Duration::from_millis(1),
        background_threads,
        ..Config::default()
    };
    let index = XIndexH::bulk_load(&pairs, config).expect("unique keys, valid config");
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_nanos() as u64;
    let mut owned: Vec<BTreeMap<u64, Option<u64>>> = (0..WORKERS)
        .map(|t| {
            (0..OWNED_PER_WORKER)
                .map(|j| (OWNED_BASE + t * 100 + j, None))
                .collect()
        })
        .collect();
    let stop = AtomicBool::new(false);
    let forced = AtomicU64::new(0);
    let (mut rounds, mut checked) = (0_u64, 0_usize);
    thread::scope(|scope| {
        scope.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(7);
            while !stop.load(Ordering::Relaxed) {
                let slot = rng.random_range(0..index.slot_count());
                index.resize_slot_with(slot, Some(rng.random_range(1..10)), |_| {});
                forced.fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        while epoch.elapsed() < budget {
            rounds += 1;
            let hot: Vec<u64> = (0..HOT_KEYS)
                .map(|_| {
                    loop {
                        let n = rng.random_range(0..KEY_SPACE);
                        if n % 4 != 0 {
                            break n;
                        }
                    }
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let initial: Vec<Option<u64>> = hot
                .iter()
                .map(|&n| index.get(K::make(n).borrow()))
                .collect();
            let barrier = Barrier::new(WORKERS as usize);
            let histories: Vec<Vec<Event>> = thread::scope(|inner| {
                let workers: Vec<_> = owned
                    .iter_mut()
                    .enumerate()
                    .map(|(t, mine)| {
                        let (index, hot, barrier, now) = (&index, &hot, &barrier, &now);
                        let seed = rounds * 31 + t as u64;
                        inner.spawn(move || {
                            worker::<K>(index, hot, mine, barrier, (t as u64, rounds), seed, now)
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("worker checks passed"))
                    .collect()
            });
            for (k, &n) in hot.iter().enumerate() {
                let ops: Vec<Event> = histories
                    .iter()
                    .flatten()
                    .filter(|e| e.key == k)
                    .copied()
                    .collect();
                checked += ops.len();
                assert!(
                    linearizable(initial[k], &ops),
                    "round {rounds}: history of key {n} (initially {:?}) is not linearizable: {ops:#?}",
                    initial[k]
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let forced = forced.load(Ordering::Relaxed);
    assert!(forced > 0, "the resizer resized meanwhile");
    index.quiesce();
    index.validate();
    for mine in &owned {
        for (&n, &value) in mine {
            assert_eq!(index.get(K::make(n).borrow()), value, "owned key {n}");
        }
    }
    for n in (0..KEY_SPACE).step_by(4) {
        assert_eq!(index.get(K::make(n).borrow()), Some(n), "stable key {n}");
    }
    eprintln!(
        "{}: {rounds} rounds, {checked} hot-key operations checked, {forced} forced resizes",
        std::any::type_name::<K>()
    );
}

/// One worker's round: hot-key operations (recorded), owned-key operations (checked against
/// `mine`), stable-key gets and, once per round, an iteration (checked for stable keys).
fn worker<K: StressKey>(
    index: &XIndexH<K>,
    hot: &[u64],
    mine: &mut BTreeMap<u64, Option<u64>>,
    barrier: &Barrier,
    (thread, round): (u64, u64),
    seed: u64,
    now: &dyn Fn() -> u64,
) -> Vec<Event> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut events = Vec::new();
    barrier.wait();
    for i in 0..OPS_PER_ROUND {
        let unique = (thread + 1) << 48 | round << 16 | i;
        match rng.random_range(0..20) {
            0..=7 => {
                let k = rng.random_range(0..hot.len());
                let key = K::make(hot[k]);
                let kind = match rng.random_range(0..10) {
                    0..=3 => Kind::Get,
                    4..=6 => Kind::Insert(unique),
                    7..=8 => Kind::Update(unique),
                    _ => Kind::Remove,
                };
                if kind == Kind::Get && rng.random_bool(0.5) {
                    // A batched read of this key and up to three more: each key's read is one
                    // event spanning the whole call.
                    let more = rng.random_range(0..4);
                    let picked: Vec<usize> = std::iter::once(k)
                        .chain((0..more).map(|_| rng.random_range(0..hot.len())))
                        .collect();
                    let keys: Vec<K> = picked.iter().map(|&p| K::make(hot[p])).collect();
                    let queries: Vec<&K::Query> = keys.iter().map(|key| key.borrow()).collect();
                    events.extend(Event::batched_gets(&picked, now, || {
                        index.get_many(&queries)
                    }));
                    continue;
                }
                let invoke = now();
                let result = match kind {
                    Kind::Get => index.get(key.borrow()),
                    Kind::Insert(v) => index.insert(key, v),
                    Kind::Update(v) => index.update(key.borrow(), |_| v),
                    Kind::Remove => index.remove(key.borrow()),
                };
                let response = now();
                events.push(Event {
                    key: k,
                    invoke,
                    response,
                    kind,
                    result,
                });
            }
            8..=15 => {
                let n = *mine
                    .keys()
                    .nth(rng.random_range(0..mine.len()))
                    .expect("in range");
                let key = K::make(n);
                let expected = mine[&n];
                match rng.random_range(0..5) {
                    0 => assert_eq!(index.get(key.borrow()), expected, "get of owned {n}"),
                    1 => {
                        assert_eq!(index.remove(key.borrow()), expected, "remove of owned {n}");
                        mine.insert(n, None);
                    }
                    2 => {
                        let old = index.update(key.borrow(), |old| old + 1);
                        assert_eq!(old, expected, "update of owned {n}");
                        mine.insert(n, expected.map(|v| v + 1));
                    }
                    _ => {
                        let value = expected.map_or(1, |v| v + 1).max(unique);
                        assert_eq!(index.insert(key, value), expected, "insert of owned {n}");
                        mine.insert(n, Some(value));
                    }
                }
            }
            16..=18 => {
                let n = rng.random_range(0..KEY_SPACE / 4) * 4;
                assert_eq!(index.get(K::make(n).borrow()), Some(n), "stable key {n}");
                // Stable keys and owned keys in one batched read.
                let owned = *mine
                    .keys()
                    .nth(rng.random_range(0..mine.len()))
                    .expect("in range");
                let numbers = [n, owned, rng.random_range(0..KEY_SPACE / 4) * 4];
                let keys: Vec<K> = numbers.iter().map(|&m| K::make(m)).collect();
                let queries: Vec<&K::Query> = keys.iter().map(|key| key.borrow()).collect();
                let want = [Some(numbers[0]), mine[&owned], Some(numbers[2])];
                assert_eq!(index.get_many(&queries), want, "get_many of {numbers:?}");
            }
            _ => {
                if i % 8 == 0 {
                    let mut stable = BTreeSet::new();
                    for (key, value) in index.iter() {
                        let n = key.number();
                        if n % 4 == 0 && n < KEY_SPACE {
                            assert_eq!(n, value, "stable key {n} keeps its value");
                            assert!(stable.insert(n), "stable key {n} iterated twice");
                        }
                    }
                    assert_eq!(
                        stable.len() as u64,
                        KEY_SPACE / 4,
                        "every stable key iterated"
                    );
                }
            }
        }
    }
    events
}

#[test]
fn integer_keys_are_linearizable_under_continuous_resizing() {
    stress::<u64>(Duration::from_millis(1_500), 1);
}

#[test]
fn integer_keys_are_linearizable_with_three_background_threads() {
    stress::<u64>(Duration::from_millis(1_000), 3);
}

#[test]
fn string_keys_are_linearizable_under_continuous_resizing() {
    stress::<Vec<u8>>(Duration::from_millis(1_000), 1);
}
