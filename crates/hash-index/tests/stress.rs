//! Concurrent stress tests of XIndex-H on real threads: `test_support::stress`'s run
//! (per-key linearizability of hot keys, lost updates and resurrection of owned keys, stable
//! keys) while a resizer thread grows and shrinks random groups back to back (tiny groups, one
//! to nine buckets, so chains and pointer records are everywhere) and the background thread
//! runs its own load-factor passes (one test runs three background threads, whose shares of
//! the groups are resized at the same time). The workers' own reads are batched reads of
//! stable and owned keys and iterations, in which every stable key appears exactly once with
//! its value.
#![cfg(not(loom))]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hash_index::{Config, HashIndex, HashKey, XIndexH};
use rand::RngExt;
use rand::rngs::SmallRng;
use test_support::stress::{self, NumberedKey, StressedMap, initial_pairs, pick_owned};

/// The run's keys are `0..KEY_SPACE`: the even ones loaded, the multiples of 4 stable, the
/// others hot-key candidates (`test_support::stress::initial_pairs`).
const KEY_SPACE: u64 = 2_000;

/// XIndex-H under stress.
struct Stressed<K: HashKey>(XIndexH<K>);

impl<K: HashKey + NumberedKey> StressedMap for Stressed<K> {
    test_support::stressed_point_ops!();

    /// Three times in four, a stable key's get and a batched read of stable keys and an owned
    /// one; otherwise, on every eighth operation of a round, an iteration.
    fn check_reads(&self, rng: &mut SmallRng, op: u64, owned: &BTreeMap<u64, Option<u64>>) {
        if rng.random_range(0..4) < 3 {
            let n = rng.random_range(0..KEY_SPACE / 4) * 4;
            assert_eq!(self.get(n), Some(n), "stable key {n}");
            let mine = pick_owned(rng, owned);
            let numbers = [n, mine, rng.random_range(0..KEY_SPACE / 4) * 4];
            let want = [Some(numbers[0]), owned[&mine], Some(numbers[2])];
            assert_eq!(self.get_many(&numbers), want, "get_many of {numbers:?}");
        } else if op.is_multiple_of(8) {
            let mut stable = BTreeSet::new();
            for (key, value) in self.0.iter() {
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

    fn settle(&self) {
        self.0.quiesce();
        self.0.validate();
    }
}

fn stress<K: HashKey + NumberedKey>(budget: Duration, background_threads: usize) {
    let config = Config {
        min_buckets: 1,
        group_size: 64,
        period: Duration::from_millis(1),
        background_threads,
        ..Config::default()
    };
    let index = XIndexH::bulk_load(&initial_pairs::<K>(KEY_SPACE), config)
        .expect("unique keys, valid config");
    let map = Stressed(index);
    let forced = AtomicU64::new(0);
    let summary = stress::run(&map, KEY_SPACE, budget, |rng| {
        let slot = rng.random_range(0..map.0.slot_count());
        map.0
            .resize_slot_with(slot, Some(rng.random_range(1..10)), |_| {});
        forced.fetch_add(1, Ordering::Relaxed);
    });
    summary.check_contents(&map);
    let forced = forced.load(Ordering::Relaxed);
    assert!(forced > 0, "the resizer resized meanwhile");
    eprintln!(
        "{}: {} rounds, {} hot-key operations checked, {forced} forced resizes",
        std::any::type_name::<K>(),
        summary.rounds,
        summary.checked
    );
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
