//! Model-based property tests of XIndex-R against `BTreeMap` (DESIGN "Testing layers" 2;
//! digest §8): random operation sequences on `u64` and byte-string keys under extreme
//! configurations (`e` = 1, `s` = 1, `m` = 1..4, tiny groups), with forced maintenance passes
//! between operations, and every structural change (compaction, model split and merge, group
//! split and merge, root update) forced and stepped phase by phase with foreground operations
//! inside every phase; the structural invariants are checked after every change and at the
//! end.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Bound;
use std::thread;

use proptest::prelude::*;
use range_index::OrderedIndex;
use range_index::xindex::{Config, IndexKey, Phase, Restructure, XIndex};

/// One foreground or maintenance operation.
#[derive(Debug, Clone)]
enum Op<K> {
    Get(K),
    Insert(K, u64),
    Remove(K),
    /// `update(key, |old| old ^ mask)`: a read-modify-write of a present key only.
    Update(K, u64),
    Scan(K, usize),
    /// One batched lookup of several keys (`XIndex::get_many`).
    GetMany(Vec<K>),
    /// A range read forward, then read again from both ends: from the back at each step
    /// whose bit is set in the pattern.
    Range(Bound<K>, Bound<K>, u64),
    Len,
    Maintain,
    /// The compaction pass of background thread `part` of `parts` (modulo `parts`).
    CompactShare {
        part: usize,
        parts: usize,
    },
    Quiesce,
    /// Run `change` on root slot `slot` (modulo the slot count), running `batches[phase]` at
    /// each phase boundary.
    Restructure {
        slot: usize,
        change: Restructure,
        batches: Vec<Vec<Op<K>>>,
    },
}

/// A key type under test: how to borrow it as a query.
trait TestKey: IndexKey + Debug {
    fn query(&self) -> &Self::Query;
}

impl TestKey for u64 {
    fn query(&self) -> &u64 {
        self
    }
}

impl TestKey for Vec<u8> {
    fn query(&self) -> &[u8] {
        self
    }
}

/// Runs `op` on `index` and `model`, checking that both answer alike.
fn apply<K: TestKey>(index: &XIndex<K>, model: &mut BTreeMap<K, u64>, op: &Op<K>) {
    match op {
        Op::Get(key) => assert_eq!(
            index.get(key.query()),
            model.get::<K>(key).copied(),
            "get {key:?}"
        ),
        Op::GetMany(keys) => {
            let queries: Vec<&K::Query> = keys.iter().map(TestKey::query).collect();
            let want: Vec<Option<u64>> = keys.iter().map(|k| model.get::<K>(k).copied()).collect();
            assert_eq!(index.get_many(&queries), want, "get_many {keys:?}");
        }
        Op::Insert(key, value) => assert_eq!(
            index.insert(key.clone(), *value),
            model.insert(key.clone(), *value),
            "insert {key:?}"
        ),
        Op::Remove(key) => assert_eq!(
            index.remove(key.query()),
            model.remove::<K>(key),
            "remove {key:?}"
        ),
        Op::Update(key, mask) => {
            let mut calls = 0;
            let old = index.update(key.query(), |old| {
                calls += 1;
                old ^ mask
            });
            let want = model.get_mut::<K>(key).map(|value| {
                let old = *value;
                *value ^= mask;
                old
            });
            assert_eq!(old, want, "update {key:?}");
            assert_eq!(calls, usize::from(want.is_some()), "update {key:?} calls");
        }
        Op::Scan(start, n) => {
            let expected: Vec<_> = model
                .range::<K, _>(start.clone()..)
                .take(*n)
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            assert_eq!(
                index.scan(start.query(), *n),
                expected,
                "scan {start:?} {n}"
            );
        }
        Op::Range(start, end, pattern) => {
            let bounds = (
                start.as_ref().map(TestKey::query),
                end.as_ref().map(TestKey::query),
            );
            let owned = (start.clone(), end.clone());
            let expected = || {
                model
                    .iter()
                    .filter(|(k, _)| std::ops::RangeBounds::contains(&owned, *k))
                    .map(|(k, v)| (k.clone(), *v))
            };
            let got: Vec<_> = index.range(bounds).collect();
            assert_eq!(
                got,
                expected().collect::<Vec<_>>(),
                "range {start:?}..{end:?}"
            );
            assert_same_from_both_ends(
                index.range(bounds),
                expected(),
                *pattern,
                &format!("range {start:?}..{end:?} from both ends, pattern {pattern:#x}"),
            );
        }
        Op::Len => assert_eq!(index.len(), model.len(), "len"),
        Op::Maintain => {
            index.maintenance_step();
            index.validate();
        }
        Op::CompactShare { part, parts } => {
            index.compact_share(part % parts, *parts);
            index.validate();
        }
        Op::Quiesce => {
            index.quiesce();
            index.validate();
            assert_eq!(index.stats().delta_keys, 0, "quiesce merges every delta");
        }
        Op::Restructure {
            slot,
            change,
            batches,
        } => restructure_in_phases(index, model, *slot, *change, batches),
    }
}

/// Takes from `got` and `want` alike, from the back at each step whose bit is set in
/// `pattern` (cycling through its 64 bits) and from the front otherwise, checking every answer,
/// until `want` ends; then `got` must have ended at both ends too.
fn assert_same_from_both_ends<T: PartialEq + Debug>(
    mut got: impl DoubleEndedIterator<Item = T>,
    mut want: impl DoubleEndedIterator<Item = T>,
    pattern: u64,
    what: &str,
) {
    for step in 0usize.. {
        let (item, expected) = if pattern >> (step % 64) & 1 == 1 {
            (got.next_back(), want.next_back())
        } else {
            (got.next(), want.next())
        };
        let end = expected.is_none();
        assert_eq!(item, expected, "{what}: step {step}");
        if end {
            assert_eq!(got.next(), None, "{what}: front after the end");
            assert_eq!(got.next_back(), None, "{what}: back after the end");
            return;
        }
    }
}

/// Runs `change` on one group, running a batch of operations at every phase boundary. The
/// batch of `Frozen` runs on another thread (a put of a new key waits there for `tmp_buf`,
/// which is published after barrier B1) and is joined at `AfterB1`; the others run inline.
fn restructure_in_phases<K: TestKey>(
    index: &XIndex<K>,
    model: &mut BTreeMap<K, u64>,
    slot: usize,
    change: Restructure,
    batches: &[Vec<Op<K>>],
) {
    let slot = slot % index.slot_count();
    let mut current = Some(std::mem::take(model));
    thread::scope(|scope| {
        let mut pending: Option<thread::ScopedJoinHandle<'_, BTreeMap<K, u64>>> = None;
        let applied = index.restructure_slot_with(slot, change, |phase| {
            if let Some(worker) = pending.take() {
                current = Some(worker.join().expect("the frozen-phase batch passed"));
            }
            let batch = &batches[phase as usize];
            let mut state = current.take().expect("the model is home between phases");
            if phase == Phase::Frozen {
                pending = Some(scope.spawn(move || {
                    batch.iter().for_each(|op| apply(index, &mut state, op));
                    state
                }));
            } else {
                batch.iter().for_each(|op| apply(index, &mut state, op));
                current = Some(state);
            }
        });
        if change == Restructure::UpdateRoot {
            assert!(applied, "a root update always applies");
        }
        if let Some(worker) = pending.take() {
            current = Some(worker.join().expect("the frozen-phase batch passed"));
        }
    });
    *model = current.expect("the model came home");
    index.validate();
}

/// Loads `initial`, runs `ops`, then merges everything and compares full contents.
fn run<K: TestKey>(initial: BTreeMap<K, u64>, config: Config, ops: &[Op<K>]) {
    let pairs: Vec<(K, u64)> = initial.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("valid config and sorted pairs");
    index.validate();
    let mut model = initial;
    for op in ops {
        apply(&index, &mut model, op);
    }
    index.quiesce();
    index.validate();
    let all: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(
        index
            .range::<(Bound<&K::Query>, Bound<&K::Query>)>((Bound::Unbounded, Bound::Unbounded))
            .collect::<Vec<_>>(),
        all
    );
    assert_eq!(index.len(), model.len());
    for (key, value) in &model {
        assert_eq!(index.get(key.query()), Some(*value));
    }
}

fn configs() -> impl Strategy<Value = Config> {
    (
        prop_oneof![Just(1usize), Just(2), Just(32)],
        prop_oneof![Just(0usize), Just(1), Just(8)],
        prop_oneof![Just(1usize), Just(2), Just(3), Just(64)],
        prop_oneof![Just(1.0f64), Just(50.0)],
        prop_oneof![Just(1usize), Just(4)],
        (
            prop_oneof![Just(1usize), Just(3), Just(256)],
            1..=4usize,
            any::<bool>(),
        ),
    )
        .prop_map(
            |(e, threshold, max_group, et, pt, (s, m, sequential))| Config {
                sequential_inserts: sequential,
                error_bound: e,
                delta_threshold: s,
                max_models: m,
                compaction_threshold: threshold,
                max_group_size: max_group,
                string_error_threshold: et,
                string_partial_len: pt,
                background_threads: 0,
                ..Config::default()
            },
        )
}

fn int_keys() -> BoxedStrategy<u64> {
    prop_oneof![
        6 => 0..16u64,
        2 => (0..16u64).prop_map(|x| x * x * 1_009 + 7),
        1 => (0..4u64).prop_map(|x| u64::MAX - x),
    ]
    .boxed()
}

fn string_keys() -> BoxedStrategy<Vec<u8>> {
    // Short strings over a tiny alphabet: many keys are prefixes of others ("", "a", "ab");
    // the same behind a shared 8-byte prefix, so that the records' and the delta index's
    // 8-byte hints tie and the keys decide; and behind a 29-byte prefix with the same first
    // eight bytes, so that keys of 29 and 30 bytes (held inline in the records) and of 31
    // (held on the heap) meet in one group; and above those, keys sharing only `prefix:`, so
    // that keys outside the prefix a group's hints skip are looked up, inserted and appended;
    // and, URL-like, keys of 29 to 38 bytes whose hints tie past a long prefix and whose tie
    // hints then order them (or tie too).
    let short = prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8)], 0..3);
    let long_prefix = [b"prefix:a".as_slice(), &[b'z'; 21]].concat();
    let url_prefix = [b"prefix:c".as_slice(), &[b'y'; 20]].concat();
    let url = (short.clone(), prop::option::of(short.clone())).prop_map(move |(site, page)| {
        let mut key = [url_prefix.as_slice(), &site].concat();
        if let Some(page) = page {
            key.extend([b"-xxxxxx".as_slice(), &page].concat());
        }
        key
    });
    prop_oneof![
        url,
        short.clone(),
        short
            .clone()
            .prop_map(|tail| [b"prefix:a".as_slice(), &tail].concat()),
        short
            .clone()
            .prop_map(move |tail| [long_prefix.as_slice(), &tail].concat()),
        short.prop_map(|tail| [b"prefix:b".as_slice(), &tail].concat()),
    ]
    .boxed()
}

/// Foreground operations only (allowed inside compaction phases).
fn foreground<K: TestKey>(keys: BoxedStrategy<K>) -> BoxedStrategy<Op<K>> {
    let bound = {
        let keys = keys.clone();
        prop_oneof![
            keys.clone().prop_map(Bound::Included),
            keys.prop_map(Bound::Excluded),
            Just(Bound::Unbounded),
        ]
    };
    prop_oneof![
        3 => keys.clone().prop_map(Op::Get),
        4 => (keys.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => keys.clone().prop_map(Op::Remove),
        2 => (keys.clone(), any::<u64>()).prop_map(|(k, m)| Op::Update(k, m)),
        1 => prop::collection::vec(keys.clone(), 0..40).prop_map(Op::GetMany),
        1 => (keys, 0..6usize).prop_map(|(k, n)| Op::Scan(k, n)),
        1 => (bound.clone(), bound, any::<u64>()).prop_map(|(s, e, p)| Op::Range(s, e, p)),
        1 => Just(Op::Len),
    ]
    .boxed()
}

fn ops<K: TestKey>(keys: BoxedStrategy<K>, phases: bool) -> BoxedStrategy<Vec<Op<K>>> {
    let fg = foreground(keys);
    let batch = prop::collection::vec(fg.clone(), 0..6);
    let restructure = (
        any::<usize>(),
        prop::sample::select(Restructure::ALL.to_vec()),
        prop::collection::vec(batch, Phase::ALL.len()),
    )
        .prop_map(|(slot, change, batches)| Op::Restructure {
            slot,
            change,
            batches,
        });
    let share = (0..4usize, 1..4usize).prop_map(|(part, parts)| Op::CompactShare { part, parts });
    let op = if phases {
        prop_oneof![6 => fg, 1 => Just(Op::Maintain), 3 => restructure].boxed()
    } else {
        prop_oneof![
            12 => fg,
            2 => Just(Op::Maintain),
            1 => share,
            1 => Just(Op::Quiesce)
        ]
        .boxed()
    };
    prop::collection::vec(op, 0..48).boxed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn integer_ops_match_btreemap(
        initial in prop::collection::btree_map(int_keys(), any::<u64>(), 0..24),
        config in configs(),
        ops in ops(int_keys(), false),
    ) {
        run(initial, config, &ops);
    }

    #[test]
    fn string_ops_match_btreemap(
        initial in prop::collection::btree_map(string_keys(), any::<u64>(), 0..16),
        config in configs(),
        ops in ops(string_keys(), false),
    ) {
        run(initial, config, &ops);
    }

    #[test]
    fn integer_ops_inside_every_phase(
        initial in prop::collection::btree_map(int_keys(), any::<u64>(), 0..24),
        config in configs(),
        ops in ops(int_keys(), true),
    ) {
        run(initial, config, &ops);
    }

    #[test]
    fn string_ops_inside_every_phase(
        initial in prop::collection::btree_map(string_keys(), any::<u64>(), 0..16),
        config in configs(),
        ops in ops(string_keys(), true),
    ) {
        run(initial, config, &ops);
    }
}

#[test]
fn empty_index_grows_and_shrinks() {
    let config = Config {
        background_threads: 0,
        compaction_threshold: 0,
        ..Config::default()
    };
    let index = XIndex::<u64>::new(config).expect("valid config");
    assert!(index.is_empty());
    assert_eq!(index.scan(&0, 10), vec![]);
    for key in (0..200u64).rev() {
        assert_eq!(index.insert(key * 3, key), None);
    }
    index.quiesce();
    index.validate();
    assert_eq!(index.len(), 200);
    assert_eq!(index.get(&9), Some(3));
    for key in 0..200u64 {
        assert_eq!(index.remove(&(key * 3)), Some(key));
    }
    // Removes leave tombstones in the array; a compaction drops them.
    assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
    index.validate();
    assert!(index.is_empty());
    let stats = index.stats();
    assert_eq!((stats.groups, stats.records, stats.models), (1, 0, 0));
    assert_eq!(index.insert(5, 5), None);
    assert_eq!(index.get(&5), Some(5));
}

#[test]
fn sequential_inserts_append_to_the_arrays() {
    let config = Config {
        background_threads: 0,
        sequential_inserts: true,
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..1_000u64).map(|i| (i * 2, i)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("sorted");
    for key in 2_000..3_000u64 {
        assert_eq!(index.insert(key, key), None);
    }
    let stats = index.stats();
    assert_eq!(
        stats.delta_keys, 0,
        "ascending inserts bypass the delta index"
    );
    assert_eq!(stats.records, 2_000);
    // A key below the last one goes to the delta index; an appended key can be updated.
    assert_eq!(index.insert(1, 1), None);
    assert_eq!(index.insert(2_500, 7), Some(2_500));
    assert_eq!(index.stats().delta_keys, 1);
    index.quiesce();
    index.validate();
    assert_eq!(index.len(), 2_001);
    assert_eq!(index.get(&2_999), Some(2_999));
    assert_eq!(
        index.scan(&1_998, 3),
        vec![(1_998, 999), (2_000, 2_000), (2_001, 2_001)]
    );
}

#[test]
fn bulk_load_rejects_unsorted_keys_and_bad_configs() {
    let unsorted = [(2u64, 0), (1, 0)];
    assert!(matches!(
        XIndex::bulk_load(&unsorted, Config::default()),
        Err(range_index::xindex::Error::NotStrictlyIncreasing { index: 1 })
    ));
    let duplicate = [(b"a".to_vec(), 0), (b"a".to_vec(), 1)];
    assert!(XIndex::bulk_load(&duplicate, Config::default()).is_err());
    let bad = Config {
        max_models: 0,
        ..Config::default()
    };
    let err = XIndex::<u64>::new(bad).expect_err("invalid config");
    assert!(err.to_string().contains("max_models"), "{err}");
}

#[test]
fn the_largest_parameters_are_accepted() {
    let pairs: Vec<(u64, u64)> = (0..2_000u64).map(|i| (i * i * 31, i)).collect();
    let strings: Vec<(Vec<u8>, u64)> = (0..2_000u64)
        .map(|i| (format!("key:{:07}", i * i).into_bytes(), i))
        .collect();
    let config = Config {
        error_bound: usize::MAX,
        delta_threshold: usize::MAX,
        max_group_size: usize::MAX,
        background_threads: 0,
        ..Config::default()
    };
    let numbers = XIndex::bulk_load(&pairs, config.clone()).expect("valid");
    let words = XIndex::bulk_load(&strings, config).expect("valid");
    for i in (0..2_000u64).step_by(97) {
        assert_eq!(numbers.get(&(i * i * 31)), Some(i));
        assert_eq!(words.get(format!("key:{:07}", i * i).as_bytes()), Some(i));
    }
    numbers.insert(5, 5);
    words.insert(b"key:".to_vec(), 5);
    numbers.quiesce();
    words.quiesce();
    assert_eq!((numbers.len(), words.len()), (2_001, 2_001));
}

#[test]
fn stats_describe_the_structure() {
    let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|i| (i * i, i)).collect();
    let config = Config {
        background_threads: 0,
        max_group_size: 1_000,
        ..Config::default()
    };
    let index = XIndex::bulk_load(&pairs, config).expect("sorted");
    let stats = index.stats();
    assert!(stats.groups >= 10, "{stats:?}");
    assert!(
        (stats.groups..=4 * stats.groups).contains(&stats.models),
        "{stats:?}"
    );
    assert_eq!(
        (stats.keys, stats.records, stats.delta_keys),
        (10_000, 10_000, 0)
    );
    assert!(stats.mean_error <= 32.0 + 1.0, "{stats:?}");
    assert!(stats.bytes >= 10_000 * 16, "{stats:?}");
    for i in 0..100u64 {
        index.insert(i * i + 2, i);
    }
    let stats = index.stats();
    assert_eq!(stats.delta_keys, 100);
    assert!(stats.max_delta_keys >= 1);
    index.quiesce();
    let stats = index.stats();
    assert_eq!((stats.delta_keys, stats.records), (0, 10_100));
    assert!(stats.compactions >= 1);
}

/// Random 24-byte keys defeat greedy grouping's single-model error threshold (its groups of
/// up to 65,536 keys have mean errors near 70 even with `m` models): the bulk load halves such
/// groups until their models are within `e`, so the adjustment policy finds nothing to split.
#[test]
fn bulk_loaded_string_groups_satisfy_the_policy() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut keys: Vec<Vec<u8>> = (0..200_000)
        .map(|_| (0..3).flat_map(|_| next().to_le_bytes()).collect())
        .collect();
    keys.sort();
    keys.dedup();
    let pairs: Vec<(Vec<u8>, u64)> = keys.into_iter().zip(0..).collect();
    let config = Config {
        background_threads: 0,
        ..Config::default()
    };
    let index = XIndex::bulk_load(&pairs, config).expect("sorted");
    let loaded = index.stats();
    assert!(loaded.mean_error <= 32.0, "{loaded:?}");
    index.quiesce();
    let after = index.stats();
    assert_eq!(
        (after.model_splits, after.group_splits, after.groups),
        (0, 0, loaded.groups),
        "{after:?}"
    );
}

/// Two background threads: thread 0 compacts the groups of the even root slots, thread 1
/// those of the odd ones (at the same time), so every delta index is merged only if both work.
#[test]
fn background_threads_compact_on_their_own() {
    let config = Config {
        background_threads: 2,
        compaction_threshold: 0,
        max_group_size: 16,
        period: std::time::Duration::from_millis(1),
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..500u64).map(|i| (i * 2, i * 2)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs, valid config");
    assert!(index.slot_count() >= 2, "groups in both threads' shares");
    for key in (1..1_000u64).step_by(2) {
        index.insert(key, key);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while index.stats().delta_keys > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no compaction within 10 s"
        );
        thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!((0..1_000u64).all(|key| index.get(&key) == Some(key)));
    drop(index);
}

/// Scans and ranges of many lengths from starts all over the key range, with new keys waiting
/// in the delta indexes between the arrays' keys and some array records removed: a scan takes
/// the array records between two delta keys in one run (README design notes, "Scans take the
/// array in runs"), and must still merge them in key order, skip removed records, honour an
/// excluded start and stop at its limit, its end and each group's end.
#[test]
fn scans_merge_array_runs_with_delta_keys() {
    let (index, model) = small_groups_with_delta_keys();
    for start in (0..8_100u64).step_by(37) {
        for n in [1, 2, 7, 64, 100, 300] {
            let pairs = |range: (Bound<u64>, Bound<u64>)| -> Vec<(u64, u64)> {
                model.range(range).take(n).map(|(&k, &v)| (k, v)).collect()
            };
            let from = (Bound::Included(start), Bound::Unbounded);
            assert_eq!(index.scan(&start, n), pairs(from), "scan({start}, {n})");
            let after = (Bound::Excluded(start), Bound::Unbounded);
            let got: Vec<_> = index.range(after).take(n).collect();
            assert_eq!(got, pairs(after), "{n} after {start}");
            let span = start..start + 3 * n as u64;
            let got: Vec<_> = index.range(span.clone()).collect();
            let want: Vec<_> = model.range(span.clone()).map(|(&k, &v)| (k, v)).collect();
            assert_eq!(got, want, "{span:?}");
        }
    }
}

/// A queue's use: the smallest key taken and removed over and over, some keys put back below
/// the front (into the delta indexes, beside their removed records), scans from starts inside
/// the removed front, and restructures now and then. Scans skip the arrays' removed prefixes
/// and raise them as they go (README design notes, "Scans skip the removed prefix"); they must
/// still return exactly the model's pairs.
#[test]
fn taking_the_smallest_key_over_and_over_matches_btreemap() {
    let (index, mut model) = bulk_loaded(4_000, 2, 256);
    for step in 0..3_000u64 {
        let first = index.scan(&0, 1);
        let want: Vec<(u64, u64)> = model.iter().take(1).map(|(&k, &v)| (k, v)).collect();
        assert_eq!(first, want, "the smallest pair at step {step}");
        let (key, value) = first[0];
        assert_eq!(index.remove(&key), model.remove(&key), "remove {key}");
        if step % 7 == 3 {
            // Back in below the front: a live delta entry under a removed prefix.
            assert_eq!(index.insert(key, value + 1), None);
            model.insert(key, value + 1);
        }
        if step % 11 == 5 {
            let start = key.saturating_sub(step % 40);
            let want: Vec<(u64, u64)> = model
                .range(start..)
                .take(5)
                .map(|(&k, &v)| (k, v))
                .collect();
            assert_eq!(
                index.scan(&start, 5),
                want,
                "scan({start}, 5) at step {step}"
            );
        }
        if step % 500 == 499 {
            index.maintenance_step();
        }
    }
    index.validate();
}

/// Reverse scans over the same groups: the last `n` pairs below ends all over the key range,
/// included or excluded, above starts included or excluded, across many groups, their delta
/// keys and removed records; and ranges read from both ends in patterns that cross the
/// iterator's chunks of 128 pairs from either side.
#[test]
fn reverse_scans_and_ranges_read_from_both_ends() {
    let (index, model) = small_groups_with_delta_keys();
    let owned = |(k, v): (&u64, &u64)| (*k, *v);
    for end in (0..8_100u64).step_by(41) {
        for n in [1, 2, 7, 64, 300] {
            let start = end.saturating_sub(37 * n as u64);
            let bounds = [
                (Bound::Unbounded, Bound::Included(end)),
                (Bound::Included(start), Bound::Excluded(end)),
                (Bound::Excluded(start), Bound::Included(end)),
                (Bound::Excluded(end), Bound::Unbounded),
            ];
            for range in bounds {
                let want: Vec<_> = model.range(range).rev().take(n).map(owned).collect();
                assert_eq!(index.scan_range_rev(range, n), want, "{range:?}, last {n}");
            }
        }
    }
    let whole: Vec<_> = model.iter().map(owned).collect();
    let mut backward: Vec<_> = index.range(..).rev().collect();
    backward.reverse();
    assert_eq!(backward, whole, "the whole index, backward");
    for pattern in [
        0,
        u64::MAX,
        0xaaaa_aaaa_aaaa_aaaa,
        0x0f0f,
        1 << 63,
        0x1234_5678_9abc_def0,
    ] {
        for range in [
            (Bound::Unbounded, Bound::Unbounded),
            (Bound::Included(900), Bound::Excluded(7_000)),
        ] {
            assert_same_from_both_ends(
                index.range(range),
                model.range(range).map(owned),
                pattern,
                &format!("{range:?}, pattern {pattern:#x}"),
            );
        }
    }
    // Taking 128 from the back, then everything from the front: the front's fetches stop
    // below the back's chunk and then take its rest from the small end.
    let mut both = index.range(..);
    let back: Vec<_> = both.by_ref().rev().take(128).collect();
    let front: Vec<_> = both.collect();
    assert_eq!(front.len() + back.len(), whole.len());
    assert_eq!(front, whole[..front.len()]);
    assert!(back.iter().rev().eq(&whole[front.len()..]));
}

/// Keys `i * spacing → i` for `i` below `count`, bulk-loaded into groups of at most
/// `max_group_size` with no background thread; with the model of the same contents.
fn bulk_loaded(
    count: u64,
    spacing: u64,
    max_group_size: usize,
) -> (XIndex<u64>, BTreeMap<u64, u64>) {
    let config = Config {
        background_threads: 0,
        max_group_size,
        ..Config::default()
    };
    let pairs: Vec<(u64, u64)> = (0..count).map(|i| (i * spacing, i)).collect();
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs, valid config");
    (index, pairs.into_iter().collect())
}

/// 2,000 keys bulk-loaded into groups of at most 64, new keys between them in the delta
/// indexes, some array records removed, and some of those keys inserted again (a live delta
/// entry beside a dead record); with the model of the same contents.
fn small_groups_with_delta_keys() -> (XIndex<u64>, BTreeMap<u64, u64>) {
    let (index, mut model) = bulk_loaded(2_000, 4, 64);
    for key in (1..8_000u64).step_by(7).filter(|key| key % 4 != 0) {
        index.insert(key, key + 1);
        model.insert(key, key + 1);
    }
    for key in (0..8_000u64).step_by(52) {
        index.remove(&key);
        model.remove(&key);
    }
    // Removed array keys inserted again live in the delta indexes, beside their dead records.
    for key in (0..8_000u64).step_by(104) {
        index.insert(key, 7);
        model.insert(key, 7);
    }
    assert!(
        index.stats().delta_keys > 0,
        "new keys wait in the delta indexes"
    );
    (index, model)
}
