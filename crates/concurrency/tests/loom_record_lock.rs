//! Loom models of the record lock and record cell (XIndex §4.1): a validated read is never torn,
//! writers exclude each other, and a cell's value and flags change together.
#![cfg(loom)]

use concurrency::sync::atomic::{AtomicU64, Ordering};
use concurrency::sync::cell::UnsafeCell;
use concurrency::sync::{Arc, thread};
use concurrency::{RecordCell, RecordLock, RecordMeta};
use test_support::loom_runs;

/// Two words that writers set to equal values under the lock.
#[derive(Default)]
struct Pair {
    lock: RecordLock,
    a: AtomicU64,
    b: AtomicU64,
}

#[test]
fn validated_read_is_never_torn() {
    loom_runs::check(|| {
        let pair = Arc::new(Pair::default());
        let writer = {
            let pair = Arc::clone(&pair);
            loom_runs::spawn(move || {
                for v in 1..=2 {
                    let _guard = pair.lock.lock();
                    pair.a.store(v, Ordering::Relaxed);
                    pair.b.store(v, Ordering::Relaxed);
                }
            })
        };
        loop {
            let snapshot = pair.lock.read_begin();
            let a = pair.a.load(Ordering::Relaxed);
            let b = pair.b.load(Ordering::Relaxed);
            if pair.lock.validate(snapshot) {
                assert_eq!(a, b, "a validated read saw a torn pair");
                assert_eq!(snapshot.version(), a, "the version counts the writes");
                break;
            }
        }
        writer.join().expect("the writer does not panic");
    });
}

/// A non-atomic counter guarded by a record lock; loom flags any overlapping access.
struct Counter {
    lock: RecordLock,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is only accessed while `lock` is held.
unsafe impl Sync for Counter {}

impl Counter {
    fn increment_locked(&self) {
        // SAFETY: the caller holds `lock`.
        self.count.with_mut(|count| unsafe { *count += 1 });
    }
}

#[test]
fn writers_exclude_each_other() {
    loom_runs::check(|| {
        let counter = Arc::new(Counter {
            lock: RecordLock::default(),
            count: UnsafeCell::new(0),
        });
        let other = {
            let counter = Arc::clone(&counter);
            loom_runs::spawn(move || {
                let _guard = counter.lock.lock();
                counter.increment_locked();
            })
        };
        // This thread upgrades optimistic reads instead.
        loop {
            let snapshot = counter.lock.read_begin();
            if let Some(_guard) = counter.lock.try_upgrade(snapshot) {
                counter.increment_locked();
                break;
            }
            thread::yield_now();
        }
        other.join().expect("the other writer does not panic");
        let _guard = counter.lock.lock();
        // SAFETY: the lock is held.
        assert_eq!(counter.count.with(|count| unsafe { *count }), 2);
        assert_eq!(_guard.meta().version(), 2);
    });
}

#[test]
fn cell_value_and_flags_change_together() {
    loom_runs::check(|| {
        let cell = Arc::new(RecordCell::new(
            RecordMeta::new().with_uninitialized(true),
            0,
        ));
        let writer = {
            let cell = Arc::clone(&cell);
            loom_runs::spawn(move || {
                let mut guard = cell.lock();
                guard.set_value(7);
                guard.set_uninitialized(false);
                drop(guard);
                let mut guard = cell.lock();
                guard.set_value(0);
                guard.set_removed(true);
            })
        };
        let (meta, value) = cell.read();
        match meta.version() {
            0 => assert!(meta.is_uninitialized() && !meta.is_removed() && value == 0),
            1 => assert!(!meta.is_uninitialized() && !meta.is_removed() && value == 7),
            2 => assert!(!meta.is_uninitialized() && meta.is_removed() && value == 0),
            v => panic!("impossible version {v}"),
        }
        writer.join().expect("the writer does not panic");
        assert_eq!(cell.read().0.version(), 2);
    });
}

/// Capped at two preemptions: from three on, loom 0.7.2 explores executions in which the
/// reader, spinning in `read_begin` with `yield_now`, re-reads the stale locked word forever
/// after both writers have unlocked and finished (its rule that a load after a yield must move
/// on does not fire here), and the model stops at loom's branch limit. No real execution
/// does this: stores become visible in finite time.
#[test]
fn two_writers_and_a_reader_never_tear() {
    loom_runs::check_with_max_preemptions(2, || {
        let pair = Arc::new(Pair::default());
        let writers: Vec<_> = [1, 2]
            .into_iter()
            .map(|v| {
                let pair = Arc::clone(&pair);
                thread::spawn(move || {
                    let _guard = pair.lock.lock();
                    pair.a.store(v, Ordering::Relaxed);
                    pair.b.store(v, Ordering::Relaxed);
                })
            })
            .collect();
        // No yield after the spawns here (unlike `loom_runs::spawn`, tokio-rs/loom#166): with one,
        // the spinning reader runs into the branch limit described above even at two
        // preemptions. The single-writer models above cover the reader-first order.
        let (meta, a, b) = loop {
            let snapshot = pair.lock.read_begin();
            let a = pair.a.load(Ordering::Relaxed);
            let b = pair.b.load(Ordering::Relaxed);
            if pair.lock.validate(snapshot) {
                break (snapshot, a, b);
            }
        };
        assert_eq!(a, b, "a validated read saw a torn pair");
        assert_eq!(
            meta.version() == 0,
            a == 0,
            "version 0 is exactly the initial state"
        );
        for writer in writers {
            writer.join().expect("writers do not panic");
        }
        assert_eq!(pair.lock.read_begin().version(), 2);
    });
}
