//! Concurrent stress tests of XIndex-R on real threads: `test_support::stress`'s run (per-key
//! linearizability of hot keys, lost updates and resurrection of owned keys, stable keys)
//! with the background thread running its policy continuously (compaction threshold 1, split
//! at 4 buffered keys, period 1 ms, tiny groups) and a churn thread forcing every kind of
//! structural change (compaction, model split and merge, group split and merge, root update)
//! on random groups; one test runs three background threads, whose shares of the groups are
//! compacted at the same time. The workers' own reads are scans: forward, reverse and from
//! both ends of a range, strictly ordered, no duplicates, and every stable key inside the
//! scanned interval returned with its value.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use range_index::OrderedIndex;
use range_index::xindex::{Config, IndexKey, Restructure, XIndex};
use test_support::stress::{self, NumberedKey, StressedMap, initial_pairs};

/// The run's keys are `0..KEY_SPACE`: the even ones loaded, the multiples of 4 stable, the
/// others hot-key candidates (`test_support::stress::initial_pairs`).
const KEY_SPACE: u64 = 4_000;
const SCAN_LEN: usize = 12;

/// XIndex-R under stress.
struct Stressed<K: IndexKey>(XIndex<K>);

impl<K: IndexKey + NumberedKey> StressedMap for Stressed<K> {
    test_support::stressed_point_ops!();

    fn check_reads(&self, rng: &mut SmallRng, _op: u64, _owned: &BTreeMap<u64, Option<u64>>) {
        let kinds = [
            ScanKind::Forward,
            ScanKind::Range,
            ScanKind::Reverse,
            ScanKind::RangeReversed,
            ScanKind::BothEnds,
        ];
        let kind = kinds[rng.random_range(0..kinds.len())];
        check_scan(&self.0, rng.random_range(0..KEY_SPACE), kind);
    }

    fn settle(&self) {
        self.0.quiesce();
        self.0.validate();
    }
}

fn stress<K: IndexKey + NumberedKey>(
    budget: Duration,
    sequential_inserts: bool,
    background_threads: usize,
) {
    let config = Config {
        error_bound: 4,
        delta_threshold: 4,
        compaction_threshold: 1,
        max_group_size: 32,
        period: Duration::from_millis(1),
        background_threads,
        sequential_inserts,
        ..Config::default()
    };
    let index = XIndex::bulk_load(&initial_pairs::<K>(KEY_SPACE), config)
        .expect("sorted pairs, valid config");
    let map = Stressed(index);
    let summary = stress::run(&map, KEY_SPACE, budget, |rng| restructure_any(&map.0, rng));
    let stats = map.0.stats();
    summary.check_contents(&map);
    assert!(
        stats.compactions > 0
            && stats.group_splits > 0
            && stats.group_merges > 0
            && stats.root_updates > 0,
        "groups were compacted, split and merged meanwhile: {stats:?}"
    );
    eprintln!(
        "{}: {} rounds, {} hot-key operations checked, {} compactions, {} group splits, {} \
         group merges, {} root updates",
        std::any::type_name::<K>(),
        summary.rounds,
        summary.checked,
        stats.compactions,
        stats.group_splits,
        stats.group_merges,
        stats.root_updates
    );
}

/// Forces a random structural change on a random root slot.
fn restructure_any<K: IndexKey>(index: &XIndex<K>, rng: &mut SmallRng) {
    let change = Restructure::ALL[rng.random_range(0..Restructure::ALL.len())];
    let slot = rng.random_range(0..index.slot_count());
    index.restructure_slot_with(slot, change, |_| {});
}

/// How [`check_scan`] reads the index.
#[derive(Clone, Copy, Debug)]
enum ScanKind {
    /// `scan(at, SCAN_LEN)`.
    Forward,
    /// `range(at..at + 64)`.
    Range,
    /// The last `SCAN_LEN` pairs below `at` (`scan_range_rev`).
    Reverse,
    /// `range(at - 64..at).rev()`.
    RangeReversed,
    /// `range(at..at + 64)` from both ends, in the pattern of the bits of `at * 0x9e37_79b9`.
    BothEnds,
}

/// A scan of one kind near `at`: ascending (descending from the back) strictly, and every
/// stable key of the interval it covers present with its value.
fn check_scan<K: IndexKey + NumberedKey>(index: &XIndex<K>, at: u64, kind: ScanKind) {
    let key = K::make;
    let (lo, hi) = match kind {
        ScanKind::Forward | ScanKind::Range | ScanKind::BothEnds => (at, at + 64),
        ScanKind::Reverse | ScanKind::RangeReversed => (at.saturating_sub(64), at),
    };
    let (from, to) = (key(lo), key(hi));
    let bounds = (Bound::Included(from.borrow()), Bound::Excluded(to.borrow()));
    let mut pairs: Vec<(K, u64)> = match kind {
        ScanKind::Forward => index.scan(from.borrow(), SCAN_LEN),
        ScanKind::Range => index.range(bounds).collect(),
        ScanKind::Reverse => index.scan_range_rev((Bound::Unbounded, bounds.1), SCAN_LEN),
        ScanKind::RangeReversed => index.range(bounds).rev().collect(),
        ScanKind::BothEnds => {
            let pattern = at.wrapping_mul(0x9e37_79b9);
            let mut range = index.range(bounds);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            for step in 0.. {
                let (side, pair) = if pattern >> (step % 64) & 1 == 1 {
                    (&mut back, range.next_back())
                } else {
                    (&mut front, range.next())
                };
                match pair {
                    Some(pair) => side.push(pair),
                    None => break,
                }
            }
            assert!(range.next().is_none() && range.next_back().is_none());
            front.extend(back.into_iter().rev());
            front
        }
    };
    let descending = matches!(kind, ScanKind::Reverse | ScanKind::RangeReversed);
    if descending {
        pairs.reverse();
    }
    let numbers: Vec<u64> = pairs.iter().map(|(k, _)| k.number()).collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "{kind:?} scan at {at} is strictly ordered: {numbers:?}"
    );
    // The interval the scan covers: a full scan stops at its last key.
    let (covered_lo, covered_hi) = match kind {
        ScanKind::Forward if pairs.len() == SCAN_LEN => (lo, numbers[SCAN_LEN - 1] + 1),
        ScanKind::Forward => (lo, u64::MAX),
        ScanKind::Reverse if pairs.len() == SCAN_LEN => (numbers[0], hi),
        ScanKind::Reverse => (0, hi),
        _ => (lo, hi),
    };
    assert!(
        numbers
            .iter()
            .all(|&n| (covered_lo..covered_hi).contains(&n)),
        "{kind:?} scan at {at} stays within its bounds: {numbers:?}"
    );
    let stable_in_scan: Vec<u64> = pairs
        .iter()
        .filter(|(k, _)| k.number() % 4 == 0 && k.number() < KEY_SPACE)
        .map(|(k, v)| {
            assert_eq!(k.number(), *v, "stable key {} keeps its value", k.number());
            *v
        })
        .collect();
    let expected: Vec<u64> = (covered_lo.next_multiple_of(4)..covered_hi.min(KEY_SPACE))
        .step_by(4)
        .collect();
    assert_eq!(
        stable_in_scan, expected,
        "{kind:?} scan at {at} returns every stable key it covers"
    );
}

#[test]
fn integer_keys_are_linearizable_under_continuous_compaction() {
    stress::<u64>(Duration::from_millis(1_500), false, 1);
}

/// Threads 1 and 2 compact their shares of the groups at once, holding the restructure lock
/// shared, between thread 0's exclusive passes and the churn thread's forced changes.
#[test]
fn integer_keys_are_linearizable_with_three_background_threads() {
    stress::<u64>(Duration::from_millis(1_000), false, 3);
}

/// Owned keys lie above every loaded key: with the hint they are appended to the last group's
/// array, racing its compactions, splits and merges.
#[test]
fn integer_keys_are_linearizable_with_sequential_appends() {
    stress::<u64>(Duration::from_millis(1_000), true, 1);
}

#[test]
fn string_keys_are_linearizable_under_continuous_compaction() {
    stress::<Vec<u8>>(Duration::from_millis(1_000), false, 1);
}

/// Two threads take the smallest key over and over (scan from the start, then remove what it
/// returned) while a third forces structural changes and the background thread compacts:
/// scans skip the arrays' removed prefixes and raise them concurrently (README design notes,
/// "Scans skip the removed prefix"). Every key below the half is taken exactly once, and a
/// scan never returns a key above the smallest one left, the half, which nobody removes.
#[test]
fn queue_takers_race_restructures() {
    const KEYS: u64 = 100_000;
    let config = Config {
        delta_threshold: 4,
        compaction_threshold: 1,
        max_group_size: 64,
        period: Duration::from_millis(1),
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..KEYS).map(|k| (k, k)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs, valid config");
    let done = AtomicBool::new(false);
    let taken: Vec<Vec<u64>> = thread::scope(|scope| {
        scope.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(7);
            while !done.load(Ordering::Relaxed) {
                restructure_any(&index, &mut rng);
            }
        });
        let takers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let first = index.scan(&0, 1);
                        let &[(key, value)] = first.as_slice() else {
                            panic!("the upper half stays: {first:?}");
                        };
                        assert_eq!(key, value);
                        assert!(key <= KEYS / 2, "{key} skips the smallest key left");
                        if key == KEYS / 2 {
                            return mine;
                        }
                        if index.remove(&key).is_some() {
                            mine.push(key);
                        }
                    }
                })
            })
            .collect();
        let taken: Vec<_> = takers.into_iter().map(|t| t.join()).collect();
        // Before a taker's panic goes on: the churn thread stops, and the scope ends.
        done.store(true, Ordering::Relaxed);
        taken.into_iter().map(|t| t.expect("a taker")).collect()
    });
    let mut all: Vec<u64> = taken.concat();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..KEYS / 2).collect::<Vec<_>>(),
        "each key taken once"
    );
    assert_eq!(index.len(), (KEYS / 2) as usize);
    let stats = index.stats();
    assert!(
        stats.compactions > 0 && stats.group_splits > 0 && stats.group_merges > 0,
        "groups were compacted, split and merged meanwhile: {stats:?}"
    );
    index.quiesce();
    index.validate();
}

/// Scans at the tail of the last group while another thread appends above it (the
/// sequential-insert path): a scan's searches may see keys appended after it read the array's
/// length, and must leave them out rather than index past that length. Forward scans from just
/// above the last key and reverse scans from above every key check their order and bounds.
#[test]
fn tail_scans_race_sequential_appends() {
    // The background thread compacts the last group as it fills, giving it new spare slots.
    let config = Config {
        sequential_inserts: true,
        period: Duration::from_millis(1),
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..1_000u64).map(|k| (k, k)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs, valid config");
    let appended = AtomicU64::new(1_000);
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        scope.spawn(|| {
            for key in 1_000..2_000_000u64 {
                index.insert(key, key);
                appended.store(key + 1, Ordering::Release);
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            let known = appended.load(Ordering::Acquire);
            let forward = index.scan(&known, 4);
            assert!(forward.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(forward.iter().all(|&(k, v)| k >= known && k == v));
            let backward = index.scan_range_rev(..u64::MAX, 4);
            assert!(backward.windows(2).all(|w| w[0].0 > w[1].0));
            assert!(backward.first().is_some_and(|&(k, _)| k + 1 >= known));
        }
        stop.store(true, Ordering::Relaxed);
    });
}
