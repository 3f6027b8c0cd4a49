//! Concurrent stress tests of XIndex-R on real threads (DESIGN "Testing layers" 4; digest §8
//! "Concurrent tests"), with the background thread running its policy continuously
//! (compaction threshold 1, split at 4 buffered keys, period 1 ms, tiny groups) and a churn
//! thread forcing every kind of structural change (compaction, model split and merge, group
//! split and merge, root update) on random groups; one test runs three background threads,
//! whose shares of the groups are compacted at the same time:
//!
//! - **per-key linearizability**: in rounds, workers run gets (single, and batched with
//!   `get_many`: one event per key spanning the call), upserts and updates of present keys
//!   (unique values) and removes on a few hot keys; each key is a register whose history
//!   (invoke and response times, operation, result) is checked by a Wing–Gong search with
//!   memoisation;
//! - **lost updates and resurrection**: each worker owns keys it alone writes, with strictly
//!   increasing values (inserts, and updates adding one) and removes; every result (of gets,
//!   batched gets and writes) must match its private model, and the final contents must equal
//!   it;
//! - **scans**: forward, reverse and from both ends of a range, strictly ordered, no
//!   duplicates, and every key that exists throughout (the stable keys, never written) inside
//!   the scanned interval is returned with its value.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use range_index::OrderedIndex;
use range_index::xindex::{Config, IndexKey, Restructure, XIndex};
use test_support::{Event, Kind, linearizable};

const WORKERS: u64 = 3;
const HOT_KEYS: usize = 4;
const OPS_PER_ROUND: u64 = 24;
/// Keys `0..KEY_SPACE`: multiples of 4 are stable (loaded, never written), the others are
/// hot-key candidates (those `≡ 2 mod 4` loaded, those `≡ 1, 3 mod 4` absent at first).
const KEY_SPACE: u64 = 4_000;
/// Worker `t` owns keys `OWNED_BASE + t * 100 + 0..OWNED_PER_WORKER`.
const OWNED_BASE: u64 = 100_000;
const OWNED_PER_WORKER: u64 = 8;
const SCAN_LEN: usize = 12;

/// A key type under stress, built from a number in an order-preserving way.
trait StressKey: IndexKey {
    fn make(n: u64) -> Self;
    fn number(&self) -> u64;
    fn query(&self) -> &Self::Query;
}

impl StressKey for u64 {
    fn make(n: u64) -> Self {
        n
    }
    fn number(&self) -> u64 {
        *self
    }
    fn query(&self) -> &u64 {
        self
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
    fn query(&self) -> &[u8] {
        self
    }
}

fn stress<K: StressKey>(budget: Duration, sequential_inserts: bool, background_threads: usize) {
    let pairs: Vec<(K, u64)> = (0..KEY_SPACE)
        .filter(|n| n % 2 == 0)
        .map(|n| (K::make(n), n))
        .collect();
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
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs, valid config");
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_nanos() as u64;
    let mut owned: Vec<BTreeMap<u64, Option<u64>>> = (0..WORKERS)
        .map(|t| {
            (0..OWNED_PER_WORKER)
                .map(|j| (OWNED_BASE + t * 100 + j, None))
                .collect()
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let (mut rounds, mut checked) = (0_u64, 0_usize);
    let stop = AtomicBool::new(false);
    thread::scope(|outer| {
        outer.spawn(|| churn(&index, &stop, epoch + budget + Duration::from_secs(5)));
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
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let initial: Vec<Option<u64>> =
                hot.iter().map(|&n| index.get(K::make(n).query())).collect();
            let barrier = Barrier::new(WORKERS as usize);
            let histories: Vec<Vec<Event>> = thread::scope(|scope| {
                let workers: Vec<_> = owned
                    .iter_mut()
                    .enumerate()
                    .map(|(t, mine)| {
                        let (index, hot, barrier) = (&index, &hot, &barrier);
                        let seed = rounds * 31 + t as u64;
                        scope.spawn(move || {
                            worker::<K>(index, hot, mine, barrier, t as u64, rounds, seed, &now)
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
    let stats = index.stats();
    let compactions = stats.compactions;
    assert!(
        compactions > 0
            && stats.group_splits > 0
            && stats.group_merges > 0
            && stats.root_updates > 0,
        "groups were compacted, split and merged meanwhile: {stats:?}"
    );
    index.quiesce();
    index.validate();
    for mine in &owned {
        for (&n, &value) in mine {
            assert_eq!(index.get(K::make(n).query()), value, "owned key {n}");
        }
    }
    for n in (0..KEY_SPACE).step_by(4) {
        assert_eq!(index.get(K::make(n).query()), Some(n), "stable key {n}");
    }
    eprintln!(
        "{}: {rounds} rounds, {checked} hot-key operations checked, {compactions} compactions, \
         {} group splits, {} group merges, {} root updates",
        std::any::type_name::<K>(),
        stats.group_splits,
        stats.group_merges,
        stats.root_updates
    );
}

/// Forces structural changes on random groups until `stop` is set or `deadline` passes (so a
/// failing check on the main thread does not leave it running).
fn churn<K: StressKey>(index: &XIndex<K>, stop: &AtomicBool, deadline: Instant) {
    let mut rng = SmallRng::seed_from_u64(0xc4u64);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let change = Restructure::ALL[rng.random_range(0..Restructure::ALL.len())];
        let slot = rng.random_range(0..index.slot_count());
        index.restructure_slot_with(slot, change, |_| {});
    }
}

/// One worker's round: hot-key operations (recorded), owned-key operations (checked against
/// `mine`) and scans (checked for order and stable keys).
#[allow(clippy::too_many_arguments)]
fn worker<K: StressKey>(
    index: &XIndex<K>,
    hot: &[u64],
    mine: &mut BTreeMap<u64, Option<u64>>,
    barrier: &Barrier,
    thread: u64,
    round: u64,
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
                    let queries: Vec<&K::Query> = keys.iter().map(StressKey::query).collect();
                    events.extend(Event::batched_gets(&picked, now, || {
                        index.get_many(&queries)
                    }));
                    continue;
                }
                let invoke = now();
                let result = match kind {
                    Kind::Get => index.get(key.query()),
                    Kind::Insert(v) => index.insert(key, v),
                    Kind::Update(v) => index.update(key.query(), |_| v),
                    Kind::Remove => index.remove(key.query()),
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
                match rng.random_range(0..6) {
                    0 => assert_eq!(index.get(key.query()), expected, "get of owned {n}"),
                    1 => {
                        // Several owned keys at once, which no other thread writes.
                        let picked: Vec<u64> = (0..rng.random_range(1..8))
                            .map(|_| {
                                *mine
                                    .keys()
                                    .nth(rng.random_range(0..mine.len()))
                                    .expect("in range")
                            })
                            .collect();
                        let keys: Vec<K> = picked.iter().map(|&p| K::make(p)).collect();
                        let queries: Vec<&K::Query> = keys.iter().map(StressKey::query).collect();
                        let want: Vec<Option<u64>> = picked.iter().map(|p| mine[p]).collect();
                        assert_eq!(
                            index.get_many(&queries),
                            want,
                            "get_many of owned {picked:?}"
                        );
                    }
                    2 => {
                        assert_eq!(index.remove(key.query()), expected, "remove of owned {n}");
                        mine.insert(n, None);
                    }
                    3 => {
                        let old = index.update(key.query(), |old| old + 1);
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
            _ => {
                let kinds = [
                    ScanKind::Forward,
                    ScanKind::Range,
                    ScanKind::Reverse,
                    ScanKind::RangeReversed,
                    ScanKind::BothEnds,
                ];
                let kind = kinds[rng.random_range(0..kinds.len())];
                check_scan(index, rng.random_range(0..KEY_SPACE), kind);
            }
        }
    }
    events
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
fn check_scan<K: StressKey>(index: &XIndex<K>, at: u64, kind: ScanKind) {
    let key = K::make;
    let (lo, hi) = match kind {
        ScanKind::Forward | ScanKind::Range | ScanKind::BothEnds => (at, at + 64),
        ScanKind::Reverse | ScanKind::RangeReversed => (at.saturating_sub(64), at),
    };
    let (from, to) = (key(lo), key(hi));
    let bounds = (Bound::Included(from.query()), Bound::Excluded(to.query()));
    let mut pairs: Vec<(K, u64)> = match kind {
        ScanKind::Forward => index.scan(from.query(), SCAN_LEN),
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
