//! Loom model of the epoch helpers' loom build: a pinned reader never observes a deferred object
//! destroyed, and pointer publication is modelled by loom.
#![cfg(loom)]

use concurrency::epoch::{self, Atomic, Owned};
use concurrency::sync::Arc;
use concurrency::sync::atomic::{AtomicBool, Ordering};
use test_support::loom_runs;

struct Node {
    value: u64,
    destroyed: Arc<AtomicBool>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.destroyed.store(true, Ordering::Relaxed);
    }
}

#[test]
fn pinned_reader_never_sees_a_deferred_object_destroyed() {
    loom_runs::check(|| {
        let first_destroyed = Arc::new(AtomicBool::new(false));
        let root = Arc::new(Atomic::new(Node {
            value: 1,
            destroyed: Arc::clone(&first_destroyed),
        }));
        let reader = {
            let root = Arc::clone(&root);
            loom_runs::spawn(move || {
                let guard = epoch::pin();
                let shared = root.load(Ordering::Acquire, &guard);
                // SAFETY: loaded under `guard`; nodes are destroyed only through
                // `defer_destroy`.
                let node = unsafe { shared.deref() };
                assert!(
                    matches!(node.value, 1 | 2),
                    "a published node is fully initialised"
                );
                assert!(
                    !node.destroyed.load(Ordering::Relaxed),
                    "a node was destroyed while a pinned reader held it"
                );
            })
        };
        let guard = epoch::pin();
        let fresh = Owned::new(Node {
            value: 2,
            destroyed: Arc::new(AtomicBool::new(false)),
        });
        let old = root.swap(fresh.into_shared(&guard), Ordering::AcqRel, &guard);
        // SAFETY: `old` is unlinked and deferred once.
        unsafe { guard.defer_destroy(old) };
        drop(guard);
        reader.join().expect("the reader does not panic");
        let mut root = Arc::try_unwrap(root).expect("the reader has exited");
        // SAFETY: `root` owns its current node.
        let last = unsafe { root.take() }.expect("the root is not null");
        assert_eq!(last.value, 2);
    });
}
