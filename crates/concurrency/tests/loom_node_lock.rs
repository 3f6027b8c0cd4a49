//! Loom models of the OLC node lock (HydraList, APEX, PLIN nodes): a validated read is never
//! torn, writers exclude each other, and an obsolete node admits no valid read of later state.
#![cfg(loom)]

use concurrency::sync::atomic::{AtomicU64, Ordering};
use concurrency::sync::cell::UnsafeCell;
use concurrency::sync::{Arc, thread};
use concurrency::{NodeLock, Restart};
use test_support::loom_runs;

#[derive(Default)]
struct Node {
    lock: NodeLock,
    a: AtomicU64,
    b: AtomicU64,
}

impl Node {
    fn read(&self) -> Result<(u64, u64), Restart> {
        let version = self.lock.read_lock()?;
        let pair = (
            self.a.load(Ordering::Relaxed),
            self.b.load(Ordering::Relaxed),
        );
        self.lock.validate(version)?;
        Ok(pair)
    }

    fn write_locked(&self, v: u64) {
        self.a.store(v, Ordering::Relaxed);
        self.b.store(v, Ordering::Relaxed);
    }
}

#[test]
fn validated_read_is_never_torn() {
    loom_runs::check(|| {
        let node = Arc::new(Node::default());
        let writer = {
            let node = Arc::clone(&node);
            loom_runs::spawn(move || {
                for v in 1..=2 {
                    let guard = node.lock.lock().expect("the node is live");
                    node.write_locked(v);
                    guard.unlock();
                }
            })
        };
        let (a, b) = loop {
            if let Ok(pair) = node.read() {
                break pair;
            }
        };
        assert_eq!(a, b, "a validated read saw a torn pair");
        writer.join().expect("the writer does not panic");
        assert_eq!(node.read(), Ok((2, 2)));
    });
}

struct Counter {
    lock: NodeLock,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is only accessed under the write lock.
unsafe impl Sync for Counter {}

impl Counter {
    fn increment_locked(&self) {
        // SAFETY: the caller holds the write lock.
        self.count.with_mut(|count| unsafe { *count += 1 });
    }
}

#[test]
fn writers_exclude_each_other() {
    loom_runs::check(|| {
        let counter = Arc::new(Counter {
            lock: NodeLock::new(),
            count: UnsafeCell::new(0),
        });
        let other = {
            let counter = Arc::clone(&counter);
            loom_runs::spawn(move || {
                let _guard = counter.lock.lock().expect("the node is live");
                counter.increment_locked();
            })
        };
        loop {
            let version = counter.lock.read_lock().expect("the node is live");
            if let Ok(_guard) = counter.lock.try_upgrade(version) {
                counter.increment_locked();
                break;
            }
            thread::yield_now();
        }
        other.join().expect("the other writer does not panic");
        let _guard = counter.lock.lock().expect("the node is live");
        // SAFETY: the write lock is held.
        assert_eq!(counter.count.with(|count| unsafe { *count }), 2);
    });
}

#[test]
fn obsolete_node_admits_no_valid_read_of_its_last_write() {
    loom_runs::check(|| {
        let node = Arc::new(Node::default());
        let unlinker = {
            let node = Arc::clone(&node);
            loom_runs::spawn(move || {
                let guard = node.lock.lock().expect("the node is live");
                node.write_locked(1);
                guard.unlock_obsolete();
            })
        };
        // Either the read validated before the unlinker locked (and saw the initial pair), or it
        // restarts.
        if let Ok(pair) = node.read() {
            assert_eq!(pair, (0, 0), "a read validated against an obsolete node");
        }
        unlinker.join().expect("the unlinker does not panic");
        assert_eq!(node.read(), Err(Restart));
        assert!(node.lock.lock().is_err());
    });
}
