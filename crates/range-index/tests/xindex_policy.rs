//! What XIndex-R's maintenance passes make of workloads that Table 2 alone handles poorly
//! (README design notes, "Multi-way group split"): a group far above `max_group_size` is cut
//! into pieces in one pass, removed records are dropped once they are most of a group, and a
//! time series (keys inserted at the end, removed at the front) or a queue keeps its records
//! and groups in proportion to its live keys.
#![cfg(not(loom))]

use range_index::OrderedIndex;
use range_index::xindex::{Config, Phase, Restructure, XIndex};

/// No background thread: the tests run the passes themselves.
fn config(max_group_size: usize) -> Config {
    Config {
        background_threads: 0,
        max_group_size,
        ..Config::default()
    }
}

#[test]
fn an_oversized_group_is_cut_into_pieces_in_one_pass() {
    let index = XIndex::<u64>::new(config(1_000)).expect("valid config");
    for key in 0..10_500u64 {
        index.insert(key * 3, key);
    }
    assert_eq!(index.stats().groups, 1);
    assert!(index.maintenance_step());
    let stats = index.stats();
    assert_eq!(stats.group_splits, 1, "{stats:?}");
    assert_eq!(
        stats.groups, 11,
        "10,500 keys in pieces of at most 1,000: {stats:?}"
    );
    assert_eq!((stats.records, stats.delta_keys), (10_500, 0), "{stats:?}");
    index.validate();
    assert!((0..10_500u64).all(|key| index.get(&(key * 3)) == Some(key)));
    assert_eq!(index.get(&1), None);
    // The pieces hold at most 1,000 keys each: none is split again for its size.
    index.quiesce();
    assert_eq!(index.stats().group_splits, 1);
}

/// One pass rebuilds the groups that ask for it in batches, splits and compactions together
/// (more groups than one batch holds): every group whose delta index passed `s` is split, every
/// other one with buffered keys compacted, and the root indexes the pieces.
#[test]
fn one_pass_splits_and_compacts_groups_in_shared_batches() {
    let pairs: Vec<(u64, u64)> = (0..100_000u64).map(|k| (k * 10, k)).collect();
    let index = XIndex::bulk_load(&pairs, config(1_000)).expect("sorted pairs");
    assert_eq!(index.stats().groups, 100);
    // Group `g` holds the keys from 10,000·g on: odd keys go into its delta index, past `s`
    // (256) in the even groups, past the compaction limit (1,000 / 64) in the odd ones.
    let buffered = |group: u64| if group.is_multiple_of(2) { 257 } else { 20 };
    let new_key = |group: u64, i: u64| group * 10_000 + i * 10 + 1;
    for group in 0..100 {
        for i in 0..buffered(group) {
            assert_eq!(index.insert(new_key(group, i), i), None);
        }
    }
    assert!(index.maintenance_step());
    let stats = index.stats();
    assert_eq!(
        (stats.group_splits, stats.compactions),
        (50, 50),
        "{stats:?}"
    );
    assert_eq!((stats.groups, stats.delta_keys), (150, 0), "{stats:?}");
    assert_eq!(index.slot_count(), 150, "the root indexes every piece");
    // Three barriers for each of the two batches (64 rebuilds, then 36) and one for the root
    // update, instead of three per rebuild.
    assert_eq!(stats.grace_periods, 7, "{stats:?}");
    index.validate();
    assert!(
        pairs
            .iter()
            .all(|&(key, value)| index.get(&key) == Some(value))
    );
    for group in 0..100 {
        assert!((0..buffered(group)).all(|i| index.get(&new_key(group, i)) == Some(i)));
    }
    assert_eq!(index.len(), 100_000 + 50 * 257 + 50 * 20);
}

/// The frozen views of a split in progress share the old group's array and delta index:
/// the statistics count them once.
#[test]
fn a_split_in_progress_counts_its_records_once() {
    let index = XIndex::<u64>::new(config(100)).expect("valid config");
    for key in 0..1_000u64 {
        index.insert(key, key);
    }
    let mut seen = Vec::new();
    assert!(
        index.restructure_slot_with(0, Restructure::SplitGroup, |phase| {
            let stats = index.stats();
            seen.push((phase, stats.groups, stats.records + stats.delta_keys));
        })
    );
    for &(phase, groups, records) in &seen {
        assert_eq!(groups, 10, "{phase:?}");
        assert_eq!(records, 1_000, "{phase:?}");
    }
    assert_eq!(seen.len(), Phase::ALL.len());
}

#[test]
fn a_group_is_compacted_once_most_of_its_records_are_removed() {
    let pairs: Vec<(u64, u64)> = (0..8_000u64).map(|key| (key, key)).collect();
    let index = XIndex::bulk_load(&pairs, config(1_000)).expect("sorted pairs");
    let loaded = index.stats();
    // One key in eight: below half of every group, which keeps its records.
    for key in (0..8_000u64).step_by(8) {
        assert_eq!(index.remove(&key), Some(key));
    }
    index.quiesce();
    let stats = index.stats();
    assert_eq!(stats.compactions, loaded.compactions, "{stats:?}");
    assert_eq!(stats.records, 8_000, "{stats:?}");
    // Then the first half: its groups are (almost) all removed records.
    for key in (0..4_000u64).filter(|key| key % 8 != 0) {
        assert_eq!(index.remove(&key), Some(key));
    }
    index.quiesce();
    let stats = index.stats();
    assert!(stats.compactions > loaded.compactions, "{stats:?}");
    assert!(
        stats.records <= 3_500 + 1_000,
        "the removed half's records are dropped: {stats:?}"
    );
    index.validate();
    assert_eq!(index.len(), 3_500);
    assert!((4_000..8_000u64).all(|key| index.get(&key) == (key % 8 != 0).then_some(key)));
}

/// A window of 20,000 keys slides up: each step inserts 5,000 keys above the others and removes
/// the 5,000 oldest, then runs one pass. Split in two only, the newest keys make groups above
/// `max_group_size`, which can never be merged, and their records stay after their keys are
/// removed: the records grow without end.
#[test]
fn a_time_series_keeps_its_records_near_its_live_keys() {
    const WINDOW: u64 = 20_000;
    const STEP: u64 = 5_000;
    let index = XIndex::<u64>::new(config(1_000)).expect("valid config");
    let mut next = 0u64;
    let mut oldest = 0u64;
    for step in 0..60 {
        for _ in 0..STEP {
            index.insert(next * 7, next);
            next += 1;
        }
        while next - oldest > WINDOW {
            assert_eq!(index.remove(&(oldest * 7)), Some(oldest));
            oldest += 1;
        }
        index.maintenance_step();
        let stats = index.stats();
        if step >= 4 {
            assert!(
                stats.records + stats.delta_keys <= 2 * WINDOW as usize,
                "step {step}: {stats:?}"
            );
            assert!(stats.groups <= 100, "step {step}: {stats:?}");
        }
    }
    index.quiesce();
    index.validate();
    assert_eq!(index.len(), WINDOW as usize);
    let first = index.scan(&0, 1);
    assert_eq!(first, vec![(oldest * 7, oldest)]);
    assert!(index.stats().records <= WINDOW as usize + 1_000);
}

/// The sample of removed records spans the whole array: a group of 120 records whose last 70
/// are removed is compacted, one whose first 40 are removed is not.
#[test]
fn the_removed_records_are_sampled_across_the_whole_array() {
    let pairs: Vec<(u64, u64)> = (0..120u64).map(|key| (key, key)).collect();
    for (removed, compacted) in [(50..120u64, true), (0..40, false)] {
        let index = XIndex::bulk_load(&pairs, config(1_000)).expect("sorted pairs");
        assert_eq!(index.stats().groups, 1);
        for key in removed.clone() {
            assert_eq!(index.remove(&key), Some(key));
        }
        index.maintenance_step();
        let stats = index.stats();
        assert_eq!(stats.compactions == 1, compacted, "{removed:?}: {stats:?}");
        let live = 120 - (removed.end - removed.start) as usize;
        assert_eq!(stats.records == live, compacted, "{removed:?}: {stats:?}");
    }
}

/// A queue: each step inserts 5,000 keys above the others and removes all but the newest 100
/// before the pass. The pieces of a split are cut by the live keys, so the pass does not make
/// empty groups that the next one merges back.
#[test]
fn a_queue_is_not_cut_into_empty_pieces() {
    let index = XIndex::<u64>::new(config(1_000)).expect("valid config");
    let (mut next, mut oldest) = (0u64, 0u64);
    for step in 0..30 {
        for _ in 0..5_000 {
            index.insert(next, next);
            next += 1;
        }
        while next - oldest > 100 {
            assert_eq!(index.remove(&oldest), Some(oldest));
            oldest += 1;
        }
        index.maintenance_step();
        let stats = index.stats();
        assert!(stats.groups <= 3, "step {step}: {stats:?}");
        assert!(stats.group_merges <= step + 1, "step {step}: {stats:?}");
    }
    index.quiesce();
    index.validate();
    assert_eq!(index.len(), 100);
}

/// With sequential inserts, ascending keys are appended to the last group's array (into its
/// spare slots: as many as it holds keys, at least 64), never buffered: the array's size alone
/// makes the pass split it.
#[test]
fn an_array_above_max_group_size_is_split() {
    let config = Config {
        sequential_inserts: true,
        ..config(1_000)
    };
    let index = XIndex::<u64>::new(config).expect("valid config");
    index.insert(0, 0);
    // The compaction that merges the first key lets the next ones be appended.
    index.quiesce();
    let mut next = 1u64;
    for _ in 0..8 {
        let stats = index.stats();
        for _ in 0..stats.records.max(64) {
            index.insert(next * 3, next);
            next += 1;
        }
        if stats.groups == 1 {
            assert_eq!(index.stats().delta_keys, 0, "appended");
        }
        index.maintenance_step();
    }
    index.quiesce();
    let stats = index.stats();
    assert!(stats.records > 4_000, "{stats:?}");
    assert!(stats.groups >= stats.records / 1_000, "{stats:?}");
    assert_eq!(stats.delta_keys, 0, "{stats:?}");
    index.validate();
    assert!((0..next).all(|key| index.get(&(key * 3)) == Some(key)));
}
