//! Loom models of XIndex-H's non-blocking resize against foreground operations (digest §4.7
//! case 12, and the list), on the real index: one group holding keys 10 → 1 and
//! 20 → 2 in two buckets, resized on the main thread through the test hook (to one bucket, so
//! the new group also exercises its chain) while a worker thread runs an operation (insert,
//! update in place, remove, get). Everything the protocol touches (meta words, key and value
//! words, chain heads, `tmp_group`, the root slot, the grace-period barrier, the restructure
//! lock) is loom's, so every interleaving of the worker's operation with the resize's steps is
//! explored up to the preemption bound.
//!
//! The last models check the probing of nearby buckets: in a crowded group whose keys all share
//! one home bucket, without a resize; and a key removed and put back during a migration, which
//! may place it in the bucket near its home while the migration adds its pointer record.
//! The last two have two inserts from different home buckets take chain nodes from one
//! group's arena at once, racing to install its next chunk; and a key pushed onto the chain
//! while another thread looks it up or inserts it too, through its home bucket's chain filter.
//! The next runs the passes of two background threads' shares of the groups at once, and the
//! very last a batched lookup (`get_many`) across a resize that frees the group it found.
//!
//! Models with two foreground operations run the second one on the resizing thread inside the
//! hook at one phase boundary per model: it then overlaps the worker's operation anywhere and
//! falls between two steps of the resize. The main thread yields right after spawning
//! (tokio-rs/loom#166: otherwise the first execution runs the main thread first and some
//! interleavings are never explored).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom cargo test
//! --release -p hash-index --test loom_resize`.
#![cfg(loom)]

use concurrency::sync::{Arc, thread};
use hash_index::{Config, HashIndex, Phase, XIndexH};
use test_support::loom_runs::{self, model};

/// Keys 10 → 1 and 20 → 2 in one group of two buckets; no background thread.
fn tiny_index() -> Arc<XIndexH<u64>> {
    let config = Config {
        background_threads: 0,
        initial_groups: 1,
        min_buckets: 1,
        ..Config::default()
    };
    Arc::new(XIndexH::bulk_load(&[(10, 1), (20, 2)], config).expect("unique keys"))
}

/// Runs `op` on a new thread with the index, then yields (loom#166).
fn spawn<T: Send + 'static>(
    index: &Arc<XIndexH<u64>>,
    op: impl FnOnce(&XIndexH<u64>) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let index = Arc::clone(index);
    loom_runs::spawn(move || op(&index))
}

/// Resizes the only group to one bucket on this thread.
fn resize(index: &XIndexH<u64>) {
    assert!(index.resize_slot_with(0, Some(1), |_| {}));
}

/// Resizes the only group to one bucket on this thread, running `op` at phase `at`.
fn resize_running<T>(index: &XIndexH<u64>, at: Phase, op: impl Fn(&XIndexH<u64>) -> T) -> T {
    let mut result = None;
    assert!(index.resize_slot_with(0, Some(1), |phase| {
        if phase == at {
            result = Some(op(index));
        }
    }));
    result.expect("every phase is reached")
}

/// The outcome of two operations `a` and `b` on one key and the key's final value must be one
/// of the two serial orders.
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
fn insert_of_a_new_key_during_migration() {
    model("insert ‖ resize", || {
        let index = tiny_index();
        let put = spawn(&index, |index| index.insert(15, 3));
        resize(&index);
        assert_eq!(put.join().expect("the put finishes"), None);
        assert_eq!(index.get(&15), Some(3));
        assert_eq!(index.get(&10), Some(1));
        index.validate(); // one record per key, counters exact
    });
}

#[test]
fn update_of_a_migrated_key_is_not_lost() {
    // An upsert and an update in place of key 10 (→ 1), both writing 11.
    let writes: [(&str, fn(&XIndexH<u64>) -> Option<u64>); 2] = [
        ("update ‖ resize", |index| index.insert(10, 11)),
        ("update in place ‖ resize", |index| {
            index.update(&10, |old| old + 10)
        }),
    ];
    for (name, write) in writes {
        model(name, move || {
            let index = tiny_index();
            let write = spawn(&index, write);
            resize(&index);
            assert_eq!(write.join().expect("the write finishes"), Some(1));
            assert_eq!(
                index.get(&10),
                Some(11),
                "the update survived the copy phase"
            );
            index.validate();
        });
    }
}

#[test]
fn update_in_place_never_revives() {
    for at in Phase::ALL {
        model(&format!("update ‖ remove at {at:?}"), move || {
            let index = tiny_index();
            let update = spawn(&index, |index| index.update(&10, |old| old + 10));
            let remove = resize_running(&index, at, |index| index.remove(&10));
            let update = update.join().expect("the update finishes");
            assert_one_order(
                (update, remove, index.get(&10)),
                (Some(1), Some(11), None),
                (None, Some(1), None),
            );
            index.validate();
        });
    }
}

#[test]
fn remove_during_migration() {
    model("remove ‖ resize", || {
        let index = tiny_index();
        let remove = spawn(&index, |index| index.remove(&10));
        resize(&index);
        assert_eq!(remove.join().expect("the remove finishes"), Some(1));
        assert_eq!(index.get(&10), None, "no resurrection");
        assert_eq!(index.get(&20), Some(2));
        index.validate();
    });
}

#[test]
fn get_during_the_copy_phase_sees_old_or_new() {
    for at in [Phase::Swapped, Phase::AfterB2, Phase::MidCopy] {
        model(&format!("get ‖ put at {at:?}"), move || {
            let index = tiny_index();
            let get = spawn(&index, |index| index.get(&20));
            let put = resize_running(&index, at, |index| index.insert(20, 22));
            assert_eq!(put, Some(2));
            let seen = get.join().expect("the get finishes");
            assert!(seen == Some(2) || seen == Some(22), "get saw {seen:?}");
            assert_eq!(index.get(&20), Some(22));
            index.validate();
        });
    }
}

#[test]
fn two_inserts_of_one_new_key_during_a_resize_make_one_record() {
    for at in [
        Phase::Frozen,
        Phase::AfterB1,
        Phase::Migrated,
        Phase::AfterB2,
    ] {
        model(&format!("insert ‖ insert at {at:?}"), move || {
            let index = tiny_index();
            let worker = spawn(&index, |index| index.insert(15, 11));
            let main = resize_running(&index, at, |index| index.insert(15, 12));
            let worker = worker.join().expect("the put finishes");
            assert_one_order(
                (worker, main, index.get(&15)),
                (None, Some(11), Some(12)),
                (Some(12), None, Some(11)),
            );
            index.validate(); // never two records for key 15
        });
    }
}

#[test]
fn remove_and_reinsert_during_a_resize_are_linearizable() {
    for at in [Phase::Frozen, Phase::AfterB1, Phase::Swapped] {
        model(&format!("remove ‖ put at {at:?}"), move || {
            let index = tiny_index();
            let remove = spawn(&index, |index| index.remove(&10));
            let put = resize_running(&index, at, |index| index.insert(10, 12));
            let remove = remove.join().expect("the remove finishes");
            assert_one_order(
                (remove, put, index.get(&10)),
                (Some(1), None, Some(12)),
                (Some(12), Some(1), None),
            );
            index.validate();
        });
    }
}

/// Inserts `key` (absent) with 3 on a worker and 4 here at once: one insert finds the other's
/// value, the key ends with the later one's, and the index keeps one record for it.
fn two_inserts_of_one_new_key(index: &Arc<XIndexH<u64>>, key: u64) {
    let other = spawn(index, move |index| index.insert(key, 3));
    let mine = index.insert(key, 4);
    let other = other.join().expect("the put finishes");
    assert_one_order(
        (other, mine, index.get(&key)),
        (None, Some(3), Some(4)),
        (Some(4), None, Some(3)),
    );
    index.validate();
}

/// Key 10 in a group of three buckets whose placement sends every key to bucket 0 (a line
/// trained on one key is flat), so new keys take the nearby buckets 1 and 2 (with `try_lock`)
/// or go to the chain.
fn crowded_index() -> Arc<XIndexH<u64>> {
    let config = Config {
        background_threads: 0,
        initial_groups: 1,
        min_buckets: 1,
        ..Config::default()
    };
    let index = XIndexH::bulk_load(&[(10, 1)], config).expect("unique keys");
    assert!(index.resize_slot_with(0, Some(3), |_| {}));
    Arc::new(index)
}

#[test]
fn inserts_probing_the_same_buckets_keep_one_record_per_key() {
    model(
        "insert 15 ‖ insert 25, 35, nearby buckets and chain",
        || {
            let index = crowded_index();
            let other = spawn(&index, |index| index.insert(15, 3));
            assert_eq!(index.insert(25, 4), None);
            assert_eq!(index.insert(35, 5), None);
            assert_eq!(other.join().expect("the put finishes"), None);
            assert_eq!(
                (
                    index.get(&10),
                    index.get(&15),
                    index.get(&25),
                    index.get(&35)
                ),
                (Some(1), Some(3), Some(4), Some(5))
            );
            index.validate();
        },
    );
    model("insert 15 ‖ insert 15, nearby buckets", || {
        two_inserts_of_one_new_key(&crowded_index(), 15);
    });
}

/// Keys 1 → 1 and 2 → 2 in an empty index's one hashed group of four buckets, where both keys
/// have home bucket 0: key 2 takes the nearby bucket 1. A resize to four buckets keeps that
/// placement (groups under a hashed root are not trained).
fn shared_home_index() -> Arc<XIndexH<u64>> {
    let config = Config {
        background_threads: 0,
        initial_groups: 1,
        min_buckets: 4,
        ..Config::default()
    };
    let index = XIndexH::new(config).expect("a valid configuration");
    assert_eq!((index.insert(1, 1), index.insert(2, 2)), (None, None));
    assert_eq!(
        index.stats().chain_nodes,
        0,
        "key 2 is in a bucket near its home"
    );
    Arc::new(index)
}

#[test]
fn reinsert_during_migration_into_a_nearby_bucket_keeps_one_record() {
    model("remove 2, put 2 ‖ resize", || {
        let index = shared_home_index();
        let worker = spawn(&index, |index| (index.remove(&2), index.insert(2, 12)));
        assert!(index.resize_slot_with(0, Some(4), |_| {}));
        let (removed, put) = worker.join().expect("the operations finish");
        assert_eq!((removed, put, index.get(&2)), (Some(2), None, Some(12)));
        // The worker's put may land in the new group's bucket near key 2's home after the
        // migration read key 2 live: the migration must then not add a pointer record too.
        index.validate();
    });
}

#[test]
fn chain_inserts_from_two_buckets_share_the_arena() {
    // In the tiny index, key 5 has home bucket 0 and, both buckets being taken, goes to the
    // chain, filling the group's arena chunk (one node in so small a group). Keys 6 (home 0)
    // and 30 (home 1) then go to the chain under different home locks, each taking a node from
    // the full chunk: they race to install the next chunk and push onto the shared chain head.
    model(
        "insert 6 ‖ insert 30, chain nodes from a full arena",
        || {
            let index = tiny_index();
            assert_eq!(index.insert(5, 5), None);
            assert_eq!(index.stats().chain_nodes, 1);
            let other = spawn(&index, |index| index.insert(6, 6));
            assert_eq!(index.insert(30, 30), None);
            assert_eq!(other.join().expect("the put finishes"), None);
            assert_eq!(
                (index.get(&5), index.get(&6), index.get(&30)),
                (Some(5), Some(6), Some(30))
            );
            assert_eq!(index.stats().chain_nodes, 3);
            index.validate();
        },
    );
}

#[test]
fn chained_keys_are_found_through_the_home_filter() {
    // In the tiny index both buckets are taken, so key 5 (home 0) goes to the chain: a get
    // running meanwhile sees it absent or present, never anything else, and a second insert of
    // it meets the first on the home bucket's lock and its chain filter.
    model("insert 5 ‖ get 5, chained", || {
        let index = tiny_index();
        let reader = spawn(&index, |index| index.get(&5));
        assert_eq!(index.insert(5, 5), None);
        let seen = reader.join().expect("the get finishes");
        assert!(seen.is_none() || seen == Some(5), "get saw {seen:?}");
        assert_eq!(index.get(&5), Some(5));
        index.validate();
    });
    model("insert 5 ‖ insert 5, chained", || {
        let index = tiny_index();
        two_inserts_of_one_new_key(&index, 5);
        assert_eq!(index.stats().chain_nodes, 1);
    });
}

#[test]
fn two_shares_resize_their_groups_at_once() {
    // Two groups of one bucket, each over its load factor with two keys; the passes of shares
    // 0 and 1 of 2 (one group each) run at once, each thread also writing to or reading from
    // the other's group before or after its own pass.
    model("shares 0 and 1 resize ‖ a put and a get", || {
        let config = Config {
            background_threads: 0,
            initial_groups: 2,
            min_buckets: 1,
            ..Config::default()
        };
        let index = Arc::new(XIndexH::<u64>::new(config).expect("valid config"));
        let in_slot = |slot: usize| -> Vec<u64> {
            (1..100u64)
                .filter(|key| index.slot_of(key) == slot)
                .take(3)
                .collect()
        };
        let (first, second) = (in_slot(0), in_slot(1));
        for &key in first[..2].iter().chain(&second[..2]) {
            assert_eq!(index.insert(key, key), None);
        }
        let (read, written) = (first[0], second[2]);
        let other = spawn(&index, move |index| {
            (index.resize_share(1, 2), index.get(&read))
        });
        let put = index.insert(written, written);
        let resized = index.resize_share(0, 2);
        assert_eq!(put, None);
        assert!(resized, "share 0 resizes the first group");
        assert_eq!(
            other.join().expect("the second share finishes"),
            (true, Some(read)),
            "share 1 resizes the second group; the get sees its key"
        );
        assert_eq!(index.stats().grows, 2, "one resize per group");
        for &key in first[..2].iter().chain(&second) {
            assert_eq!(index.get(&key), Some(key));
        }
        index.validate();
    });
}

/// A batched lookup finds every key's group first and searches them later, under the same
/// online section: a resize that replaces (and then frees) the group between the two steps
/// leaves it a stale group, which must still answer as a single `get` would.
#[test]
fn batched_gets_across_a_resize() {
    model("get_many ‖ resize", || {
        let index = tiny_index();
        let gets = spawn(&index, |index| index.get_many(&[&10, &99, &20]));
        resize(&index);
        assert_eq!(
            gets.join().expect("the gets finish"),
            [Some(1), None, Some(2)]
        );
        index.validate();
    });
    // An update racing the batch and the resize: the batch sees the old or the new value.
    for at in [Phase::Swapped, Phase::MidCopy] {
        model(
            &format!("get_many ‖ resize with an update at {at:?}"),
            move || {
                let index = tiny_index();
                let gets = spawn(&index, |index| index.get_many(&[&10, &20]));
                let old = resize_running(&index, at, |index| index.insert(10, 11));
                assert_eq!(old, Some(1));
                let seen = gets.join().expect("the gets finish");
                assert!(matches!(seen[0], Some(1 | 11)), "saw {seen:?}");
                assert_eq!(seen[1], Some(2));
            },
        );
    }
}
