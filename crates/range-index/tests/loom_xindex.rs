//! Loom models of XIndex-R's structural changes against foreground operations (digest §4.7 cases
//! 1–11, and 12: the sequential-insert append), on the real index. Cases 1–6: one group holding
//! keys 10 → 1 and 20 → 2, compacted on the main thread through the test hook while a worker thread
//! runs an operation. Cases 7–11: group split (in two, and in three), group merge (the two groups
//! in two root slots, so the slot publication order matters), root update over a split chain, model
//! split, and a reader racing the reclamation of the group it reads. Case 13: a maintenance pass
//! compacting two groups in one batch, their barriers shared, under a put and a get. Case 14: the
//! compaction passes of two background threads' shares of the groups, at the same time, each thread
//! also putting to or reading from the other's group. Case 15: reverse scans and ranges across a
//! group split and a merge. Case 16: a batched lookup (`get_many`) across a compaction that frees
//! the old group, a split, a merge and a sequential append. Case 17: updates in place (`update`) of
//! an array key and of a buffered key across a compaction, and an update racing a remove at every
//! phase (never reviving the key). Case 18: a maintenance pass splitting one group and compacting
//! another in one batch, under a put and a get. Case 19: scans skipping and raising an array's
//! removed prefix across a compaction. Everything the protocol touches (record cells, the delta
//! index's nodes, `buf_frozen`, `tmp_buf`, the group link, the grace-period barrier, the
//! restructure lock) is loom's, so every interleaving of the worker's operation with the
//! compaction's steps is explored up to the preemption bound.
//!
//! Cases that need two concurrent operations besides the compaction (3, 4 and 5) run the
//! second one on the compacting thread, inside the hook, at each phase boundary in turn (one
//! model per phase): it then overlaps the worker's operation anywhere, and falls between two
//! steps of the compaction. A third loom thread would be more general but does not finish:
//! every spin of the barriers' wait loops is a scheduling choice among the other threads, and
//! with three threads the exploration exceeded 15 minutes per model.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p range-index
//! --test loom_xindex`.
#![cfg(loom)]

use concurrency::sync::atomic::{AtomicBool, Ordering};
use concurrency::sync::{Arc, thread};
use range_index::OrderedIndex;
use range_index::xindex::{Config, Phase, Restructure, XIndex};
use test_support::loom_runs::{self, model};

/// Keys 10 → 1 and 20 → 2 in one group; no background thread.
fn tiny_index() -> Arc<XIndex<u64>> {
    let config = Config {
        background_threads: 0,
        ..Config::default()
    };
    Arc::new(XIndex::bulk_load(&[(10, 1), (20, 2)], config).expect("sorted pairs"))
}

/// Runs `op` on a new thread with the index. The spawning thread then yields, so the first
/// execution runs the new thread first: loom's exploration misses races whose first access is
/// the spawned thread's otherwise (tokio-rs/loom#166; see `loom_delta.rs`).
fn spawn<T: Send + 'static>(
    index: &Arc<XIndex<u64>>,
    op: impl FnOnce(&XIndex<u64>) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let index = Arc::clone(index);
    loom_runs::spawn(move || op(&index))
}

/// Compacts the only group on this thread, running `op` at phase `at`; returns its result.
fn compact_running<T>(index: &XIndex<u64>, at: Phase, op: impl Fn(&XIndex<u64>) -> T) -> T {
    let mut result = None;
    assert!(
        index.restructure_slot_with(0, Restructure::Compact, |phase| {
            if phase == at {
                result = Some(op(index));
            }
        })
    );
    result.expect("every phase is reached")
}

/// After the operations: one more compaction merges everything, then the invariants hold
/// (among them: at most one live record per key, the live count matches `len`).
fn settle(index: &XIndex<u64>) {
    assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
    index.validate();
}

#[test]
fn case1_put_of_a_new_key_during_compaction() {
    model("case1", || {
        let index = tiny_index();
        let put = spawn(&index, |index| index.insert(15, 3));
        assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), None);
        assert_eq!(index.get(&15), Some(3));
        assert_eq!(index.len(), 3);
        settle(&index);
        assert_eq!(index.scan(&0, 10), vec![(10, 1), (15, 3), (20, 2)]);
    });
}

#[test]
fn case2_update_of_an_existing_key_is_not_lost() {
    model("case2", || {
        let index = tiny_index();
        let put = spawn(&index, |index| index.insert(10, 11));
        assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), Some(1));
        assert_eq!(
            index.get(&10),
            Some(11),
            "the update survived the copy phase"
        );
        settle(&index);
    });
}

/// The outcome of two concurrent operations `a` and `b` on one key and the key's final value
/// must be one of the two serial orders.
fn assert_one_order<T: PartialEq + std::fmt::Debug>(
    observed: (T, T, Option<u64>),
    a_then_b: (T, T, Option<u64>),
    b_then_a: (T, T, Option<u64>),
) {
    assert!(
        observed == a_then_b || observed == b_then_a,
        "not linearizable: observed {observed:?}, expected {a_then_b:?} or {b_then_a:?}"
    );
}

#[test]
fn case3_two_puts_of_one_key_during_compaction() {
    for key in [10, 15] {
        let old = (key == 10).then_some(1);
        for at in Phase::ALL {
            // A put of the new key 15 on the compacting thread at `Frozen` would wait for
            // `tmp_buf` forever (only a worker may wait there).
            if key == 15 && at == Phase::Frozen {
                continue;
            }
            model(&format!("case3 key {key} at {at:?}"), move || {
                let index = tiny_index();
                let worker = spawn(&index, move |index| index.insert(key, 11));
                let main = compact_running(&index, at, |index| index.insert(key, 12));
                let worker = worker.join().expect("the put finishes");
                assert_one_order(
                    (worker, main, index.get(&key)),
                    (old, Some(11), Some(12)),
                    (Some(12), old, Some(11)),
                );
                settle(&index);
            });
        }
    }
}

#[test]
fn case4_remove_and_put_during_compaction_are_linearizable() {
    for at in Phase::ALL {
        // A put after the remove lands in a delta index: at `Frozen` it would wait for
        // `tmp_buf` on the compacting thread, so that order is covered by the second model
        // (put on the worker, which may wait there) only.
        if at != Phase::Frozen {
            model(&format!("case4 remove ‖ put at {at:?}"), move || {
                let index = tiny_index();
                let remove = spawn(&index, |index| index.remove(&10));
                let put = compact_running(&index, at, |index| index.insert(10, 12));
                let remove = remove.join().expect("the remove finishes");
                assert_one_order(
                    (remove, put, index.get(&10)),
                    (Some(1), None, Some(12)),
                    (Some(12), Some(1), None),
                );
                settle(&index);
            });
        }
        model(&format!("case4 put ‖ remove at {at:?}"), move || {
            let index = tiny_index();
            let put = spawn(&index, |index| index.insert(10, 12));
            let remove = compact_running(&index, at, |index| index.remove(&10));
            let put = put.join().expect("the put finishes");
            assert_one_order(
                (put, remove, index.get(&10)),
                (Some(1), Some(12), None),
                (None, Some(1), Some(12)),
            );
            settle(&index);
        });
    }
}

#[test]
fn case17_updates_in_place_survive_compaction_and_never_insert() {
    // An array key (10 → 1) the copy phase moves, and a buffered key (15 → 3) in the buffer
    // the compaction freezes.
    for (place, key, old) in [("an array key", 10, 1), ("a buffered key", 15, 3)] {
        model(&format!("case17 update of {place}"), move || {
            let index = tiny_index();
            if key == 15 {
                index.insert(15, 3);
            }
            let update = spawn(&index, move |index| index.update(&key, |old| old + 10));
            assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
            assert_eq!(update.join().expect("the update finishes"), Some(old));
            assert_eq!(
                index.get(&key),
                Some(old + 10),
                "the update of {place} survived the compaction"
            );
            settle(&index);
        });
    }
    for at in Phase::ALL {
        model(&format!("case17 update ‖ remove at {at:?}"), move || {
            let index = tiny_index();
            let update = spawn(&index, |index| index.update(&10, |old| old + 10));
            let remove = compact_running(&index, at, |index| index.remove(&10));
            let update = update.join().expect("the update finishes");
            assert_one_order(
                (update, remove, index.get(&10)),
                (Some(1), Some(11), None),
                (None, Some(1), None),
            );
            settle(&index);
        });
    }
}

#[test]
fn case5_get_during_put_and_copy_phase_sees_old_or_new() {
    for at in Phase::ALL {
        model(&format!("case5 put ‖ get at {at:?}"), move || {
            let index = tiny_index();
            let put = spawn(&index, |index| index.insert(20, 22));
            let seen = compact_running(&index, at, |index| index.get(&20));
            assert!(seen == Some(2) || seen == Some(22), "get saw {seen:?}");
            assert_eq!(put.join().expect("the put finishes"), Some(2));
            assert_eq!(index.get(&20), Some(22));
        });
        model(&format!("case5 get ‖ put at {at:?}"), move || {
            let index = tiny_index();
            let get = spawn(&index, |index| index.get(&20));
            let put = compact_running(&index, at, |index| index.insert(20, 22));
            assert_eq!(put, Some(2));
            let seen = get.join().expect("the get finishes");
            assert!(seen == Some(2) || seen == Some(22), "get saw {seen:?}");
            assert_eq!(index.get(&20), Some(22));
        });
    }
}

#[test]
fn case6_put_retrying_on_a_frozen_buffer_does_not_deadlock_with_the_barrier() {
    model("case6", || {
        let index = tiny_index();
        let frozen = Arc::new(AtomicBool::new(false));
        let put = {
            let frozen = Arc::clone(&frozen);
            spawn(&index, move |index| {
                while !frozen.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // `buf` is frozen: this put of a new key retries until `tmp_buf` appears,
                // which happens only after barrier B1, which must not wait for it forever.
                index.insert(15, 3)
            })
        };
        assert!(
            index.restructure_slot_with(0, Restructure::Compact, |phase| {
                if phase == Phase::Frozen {
                    frozen.store(true, Ordering::Release);
                }
            })
        );
        assert_eq!(put.join().expect("the put finishes"), None);
        assert_eq!(index.get(&15), Some(3));
    });
}

/// Keys 10, 20, 30, 40 (values 1–4) in one group, or in two root slots of two keys each.
fn four_keys(two_groups: bool) -> Arc<XIndex<u64>> {
    let config = Config {
        background_threads: 0,
        max_group_size: if two_groups { 2 } else { 4 },
        ..Config::default()
    };
    let pairs = [(10, 1), (20, 2), (30, 3), (40, 4)];
    let index = XIndex::bulk_load(&pairs, config).expect("sorted pairs");
    assert_eq!(index.slot_count(), if two_groups { 2 } else { 1 });
    Arc::new(index)
}

/// Every key and value, by a full scan.
fn contents(index: &XIndex<u64>) -> Vec<(u64, u64)> {
    index.scan(&0, 100)
}

#[test]
fn case7_group_split_with_puts_on_both_sides_and_gets() {
    // The split pivot is 30: 15 lands left, 35 right; a new key, an update and a read.
    model("case7 insert right ‖ split", || {
        let index = four_keys(false);
        let put = spawn(&index, |index| index.insert(35, 5));
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), None);
        assert_eq!(index.get(&35), Some(5));
        settle(&index);
        assert_eq!(
            contents(&index),
            vec![(10, 1), (20, 2), (30, 3), (35, 5), (40, 4)]
        );
    });
    model("case7 insert left and get right ‖ split", || {
        let index = four_keys(false);
        let ops = spawn(&index, |index| (index.insert(15, 5), index.get(&40)));
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        assert_eq!(ops.join().expect("the ops finish"), (None, Some(4)));
        assert_eq!(index.get(&15), Some(5));
        settle(&index);
        assert_eq!(index.len(), 5);
    });
    model("case7 update right ‖ split", || {
        let index = four_keys(false);
        let put = spawn(&index, |index| index.insert(30, 33));
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), Some(3));
        assert_eq!(index.get(&30), Some(33), "the update survived the split");
        settle(&index);
    });
}

/// Keys 10, 12, 15, 17, 20 with `max_group_size` 2: a split cuts them into three pieces,
/// [10], [12, 15] and [17, 20] (README design notes, "Multi-way group split").
#[test]
fn case7_three_way_group_split_with_a_put_and_a_get() {
    model(
        "case7 insert middle and get last ‖ three-way split",
        || {
            let config = Config {
                background_threads: 0,
                max_group_size: 2,
                ..Config::default()
            };
            let index = XIndex::bulk_load(&[(10, 1), (20, 2)], config).expect("sorted pairs");
            for key in [12, 15, 17] {
                index.insert(key, key);
            }
            let index = Arc::new(index);
            let ops = spawn(&index, |index| (index.insert(16, 5), index.get(&20)));
            assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
            assert_eq!(ops.join().expect("the ops finish"), (None, Some(2)));
            assert_eq!(
                contents(&index),
                vec![(10, 1), (12, 12), (15, 15), (16, 5), (17, 17), (20, 2)]
            );
        },
    );
}

#[test]
fn case8_group_merge_with_puts_to_both_groups() {
    model("case8 insert into the second group ‖ merge", || {
        let index = four_keys(true);
        let put = spawn(&index, |index| index.insert(35, 5));
        assert!(index.restructure_slot_with(0, Restructure::MergeGroup, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), None);
        assert_eq!(index.get(&35), Some(5));
        settle(&index);
        assert_eq!(index.len(), 5);
    });
    model(
        "case8 get from the second group and insert into the first ‖ merge",
        || {
            let index = four_keys(true);
            let ops = spawn(&index, |index| (index.get(&40), index.insert(15, 5)));
            assert!(index.restructure_slot_with(0, Restructure::MergeGroup, |_| {}));
            assert_eq!(ops.join().expect("the ops finish"), (Some(4), None));
            assert_eq!(index.get(&15), Some(5));
            settle(&index);
            assert_eq!(index.len(), 5);
        },
    );
    model("case8 update in the second group ‖ merge", || {
        let index = four_keys(true);
        let put = spawn(&index, |index| index.insert(30, 33));
        assert!(index.restructure_slot_with(0, Restructure::MergeGroup, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), Some(3));
        assert_eq!(index.get(&30), Some(33), "the update survived the merge");
        settle(&index);
    });
}

#[test]
fn case9_root_update_with_the_old_root_in_hand() {
    // After a split the right half is reachable only through the left half's `next`; the
    // root update indexes it and clears the chain while operations run on the old root.
    model("case9 get and insert ‖ root update", || {
        let index = four_keys(false);
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        let ops = spawn(&index, |index| (index.get(&40), index.insert(35, 5)));
        assert!(index.restructure_slot_with(0, Restructure::UpdateRoot, |_| {}));
        assert_eq!(ops.join().expect("the ops finish"), (Some(4), None));
        assert_eq!(index.slot_count(), 2);
        assert_eq!(index.get(&35), Some(5));
        index.validate();
    });
}

#[test]
fn case10_model_split_shares_records_with_the_freed_node() {
    model("case10 update ‖ model split", || {
        let index = four_keys(false);
        let put = spawn(&index, |index| index.insert(20, 22));
        assert!(index.restructure_slot_with(0, Restructure::SplitModel, |_| {}));
        assert_eq!(put.join().expect("the put finishes"), Some(2));
        assert_eq!(index.get(&20), Some(22));
        assert_eq!(index.stats().models, 2);
        index.validate();
    });
}

#[test]
fn case11_reader_racing_the_reclamation_of_its_group() {
    model("case11 get ‖ compaction and free", || {
        let index = tiny_index();
        index.insert(15, 3);
        let get = spawn(&index, |index| (index.get(&15), index.get(&20)));
        assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
        assert_eq!(get.join().expect("the gets finish"), (Some(3), Some(2)));
    });
}

#[test]
fn case12_sequential_append_during_compaction() {
    // With the sequential hint a new key above the last is appended to the array under the
    // group's lock; the append must land in the array the compaction merges, or in `tmp_buf`.
    model("case12 append ‖ compaction", || {
        let config = Config {
            background_threads: 0,
            sequential_inserts: true,
            ..Config::default()
        };
        let index = Arc::new(XIndex::bulk_load(&[(10, 1), (20, 2)], config).expect("sorted"));
        let put = spawn(&index, |index| (index.insert(30, 3), index.insert(20, 22)));
        assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
        assert_eq!(put.join().expect("the puts finish"), (None, Some(2)));
        assert_eq!(index.get(&30), Some(3));
        assert_eq!(index.get(&20), Some(22));
        settle(&index);
        assert_eq!(index.len(), 3);
    });
}

/// Keys 10, 20 and 30, 40 in two groups (two root slots), with 15 and 35 waiting in their
/// delta indexes, and a compaction threshold of 0; no background thread.
fn two_groups_with_buffered_keys() -> Arc<XIndex<u64>> {
    let index = two_groups(Config::default().delta_threshold);
    assert_eq!((index.insert(15, 5), index.insert(35, 6)), (None, None));
    index
}

/// Keys 10, 20 and 30, 40 in two groups (two root slots), a compaction threshold of 0 and
/// `delta_threshold` as `s`; no background thread.
fn two_groups(delta_threshold: usize) -> Arc<XIndex<u64>> {
    let config = Config {
        background_threads: 0,
        max_group_size: 2,
        compaction_threshold: 0,
        delta_threshold,
        ..Config::default()
    };
    let pairs = [(10, 1), (20, 2), (30, 3), (40, 4)];
    let index = Arc::new(XIndex::bulk_load(&pairs, config).expect("sorted pairs"));
    assert_eq!(index.slot_count(), 2);
    index
}

/// After both groups of [`two_groups_with_buffered_keys`] were compacted once each, with key
/// 36 inserted meanwhile: the invariants hold and every key is there.
fn assert_both_compacted_once(index: &XIndex<u64>) {
    assert_eq!(index.stats().compactions, 2, "one compaction per group");
    index.validate();
    assert_eq!(
        contents(index),
        vec![
            (10, 1),
            (15, 5),
            (20, 2),
            (30, 3),
            (35, 6),
            (36, 7),
            (40, 4)
        ]
    );
}

#[test]
fn case13_one_batch_compacts_two_groups_under_a_put_and_a_get() {
    // One maintenance pass compacts both groups together while a worker inserts into the
    // second group and reads from the first.
    model("case13 insert and get ‖ batched compaction", || {
        let index = two_groups_with_buffered_keys();
        let ops = spawn(&index, |index| (index.insert(36, 7), index.get(&15)));
        assert!(index.maintenance_step(), "the pass compacts both groups");
        assert_eq!(ops.join().expect("the ops finish"), (None, Some(5)));
        assert_both_compacted_once(&index);
    });
}

#[test]
fn case18_one_batch_splits_one_group_and_compacts_another_under_a_put_and_a_get() {
    // With `s` = 1, the first group's two buffered keys make the pass split it and the
    // second's one make it compact it, both in one batch, while a worker inserts into the
    // split's left piece and reads a key buffered in the compacted group.
    model(
        "case18 put and get ‖ batched split and compaction",
        || {
            let index = two_groups(1);
            let buffered = (
                index.insert(15, 5),
                index.insert(17, 9),
                index.insert(35, 6),
            );
            assert_eq!(buffered, (None, None, None));
            let ops = spawn(&index, |index| (index.insert(16, 7), index.get(&35)));
            assert!(index.maintenance_step(), "the pass rebuilds both groups");
            assert_eq!(ops.join().expect("the ops finish"), (None, Some(6)));
            let stats = index.stats();
            assert_eq!((stats.group_splits, stats.compactions), (1, 1), "{stats:?}");
            // Four or five live keys in pieces of at most two: the put may come before the cut.
            assert!(
                matches!(index.slot_count(), 3 | 4),
                "the root update indexed the split's two or three pieces"
            );
            index.validate();
            assert_eq!(
                contents(&index),
                vec![
                    (10, 1),
                    (15, 5),
                    (16, 7),
                    (17, 9),
                    (20, 2),
                    (30, 3),
                    (35, 6),
                    (40, 4)
                ]
            );
        },
    );
}

#[test]
fn case14_two_background_shares_compact_at_once_under_a_put_and_a_get() {
    // Two background threads' compaction passes (shares 0 and 1 of 2: one group each) run at
    // the same time, each holding its share of the restructure lock; each thread also runs one
    // foreground operation on the other's group, before or after its own pass, so it overlaps
    // the other pass anywhere.
    model("case14 two shares' compactions ‖ a put and a get", || {
        let index = two_groups_with_buffered_keys();
        let second = spawn(&index, |index| {
            let compacted = index.compact_share(1, 2);
            (compacted, index.get(&15))
        });
        let put = index.insert(36, 7);
        let compacted = index.compact_share(0, 2);
        assert_eq!(put, None);
        assert!(compacted, "share 0 compacts the first group");
        assert_eq!(
            second.join().expect("the second share finishes"),
            (true, Some(5)),
            "share 1 compacts the second group; the get sees key 15"
        );
        assert_both_compacted_once(&index);
    });
}

#[test]
fn case15_reverse_scans_during_group_split_and_merge() {
    // A reverse scan walks the groups from the end down by their pivots: across a split's
    // right half (reachable only through `next` until the root update) and a merge's NULL slot
    // it must return every key once, descending.
    model("case15 reverse scan ‖ split", || {
        let index = four_keys(false);
        let scan = spawn(&index, |index| index.scan_range_rev(.., 10));
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        assert_eq!(
            scan.join().expect("the scan finishes"),
            vec![(40, 4), (30, 3), (20, 2), (10, 1)]
        );
        settle(&index);
    });
    model("case15 reverse range below a pivot ‖ merge", || {
        let index = four_keys(true);
        let scan = spawn(&index, |index| index.range(..35).rev().collect::<Vec<_>>());
        assert!(index.restructure_slot_with(0, Restructure::MergeGroup, |_| {}));
        assert_eq!(
            scan.join().expect("the scan finishes"),
            vec![(30, 3), (20, 2), (10, 1)]
        );
        settle(&index);
    });
}

/// A scan from below the array's removed prefix starts past it and raises it over the removed
/// records it reads (README design notes, "Scans skip the removed prefix"): across every phase
/// of a compaction (pointer records, then a new array), a key never removed is always
/// returned and a key removed before the scan never is; one put back after the prefix passed
/// it is found in the delta index.
#[test]
fn case19_scans_skip_and_raise_the_removed_prefix() {
    for at in Phase::ALL {
        model(
            &format!("case19 remove, scan ‖ scan at {at:?}"),
            move || {
                let index = tiny_index();
                let worker = spawn(&index, |index| {
                    assert_eq!(index.remove(&10), Some(1));
                    index.scan(&0, 2)
                });
                let seen = compact_running(&index, at, |index| index.scan(&0, 2));
                assert_eq!(worker.join().expect("the worker finishes"), vec![(20, 2)]);
                assert!(
                    [vec![(10, 1), (20, 2)], vec![(20, 2)]].contains(&seen),
                    "{seen:?}"
                );
                assert_eq!(index.scan(&0, 2), vec![(20, 2)]);
                index.insert(10, 4);
                assert_eq!(index.scan(&0, 2), vec![(10, 4), (20, 2)]);
                settle(&index);
                assert_eq!(index.scan(&0, 2), vec![(10, 4), (20, 2)]);
            },
        );
    }
}

/// A batched lookup locates every key's group first and searches them later, under the same
/// protection: a compaction (which frees the old group) or a split between the two steps
/// leaves it a stale group, which must still answer as a single `get` would.
#[test]
fn case16_batched_gets_across_restructures_and_an_append() {
    model("case16 get_many ‖ compaction and free", || {
        let index = tiny_index();
        index.insert(15, 3);
        let gets = spawn(&index, |index| index.get_many(&[&15, &20, &99]));
        assert!(index.restructure_slot_with(0, Restructure::Compact, |_| {}));
        assert_eq!(
            gets.join().expect("the gets finish"),
            [Some(3), Some(2), None]
        );
    });
    model("case16 get_many ‖ split", || {
        let index = four_keys(false);
        let gets = spawn(&index, |index| index.get_many(&[&10, &40, &35]));
        assert!(index.restructure_slot_with(0, Restructure::SplitGroup, |_| {}));
        assert_eq!(
            gets.join().expect("the gets finish"),
            [Some(1), Some(4), None]
        );
    });
    model("case16 get_many ‖ merge", || {
        let index = four_keys(true);
        let gets = spawn(&index, |index| index.get_many(&[&15, &30, &40]));
        assert!(index.restructure_slot_with(0, Restructure::MergeGroup, |_| {}));
        assert_eq!(
            gets.join().expect("the gets finish"),
            [None, Some(3), Some(4)]
        );
    });
    model("case16 get_many ‖ a sequential append", || {
        // The batch aims at the trained keys' end for 30; the append publishes 30 there.
        let config = Config {
            background_threads: 0,
            sequential_inserts: true,
            ..Config::default()
        };
        let index = Arc::new(XIndex::bulk_load(&[(10, 1), (20, 2)], config).expect("sorted"));
        let gets = spawn(&index, |index| index.get_many(&[&30, &20]));
        assert_eq!(index.insert(30, 3), None);
        let gets = gets.join().expect("the gets finish");
        assert!(
            matches!(gets[0], None | Some(3)),
            "30 absent or appended: {gets:?}"
        );
        assert_eq!(gets[1], Some(2));
        assert_eq!(index.get(&30), Some(3));
    });
}
