//! Loom models of the share lock (`concurrency::share_lock`): holders of one item never meet,
//! whatever shares or exclusive holds two threads ask for, and distinct shares of one split
//! are held at the same time.
//!
//! Each holder writes its mark into the cells of the items it holds, checks that no one else's
//! mark is there, and clears them again: a loom `UnsafeCell` per item, so loom also reports any
//! access of two holders to one cell that the lock leaves unordered.
#![cfg(loom)]

use concurrency::sync::atomic::{AtomicUsize, Ordering};
use concurrency::sync::cell::UnsafeCell;
use concurrency::sync::{Arc, thread};
use concurrency::{Share, ShareLock};
use test_support::loom_runs;

/// Items 0..4 and the lock that hands out shares of them.
struct World {
    lock: ShareLock,
    items: [UnsafeCell<usize>; 4],
}

/// What a thread asks the lock for.
#[derive(Clone, Copy)]
enum Hold {
    Share(usize, usize),
    Exclusive,
}

impl World {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            lock: ShareLock::new(),
            items: std::array::from_fn(|_| UnsafeCell::new(0)),
        })
    }

    /// Holds `hold` and marks its items with `me` meanwhile.
    fn hold(&self, hold: Hold, me: usize) {
        match hold {
            Hold::Share(part, parts) => {
                let share = Share::of(part, parts);
                let _held = self.lock.share(share);
                self.mark(share, me);
            }
            Hold::Exclusive => {
                let _held = self.lock.exclusive();
                self.mark(Share::ALL, me);
            }
        }
    }

    /// Marks the items of `share`, checks that no one else marked them, and clears them.
    fn mark(&self, share: Share, me: usize) {
        let mine = || share.items(self.items.len());
        for item in mine() {
            self.items[item].with_mut(|cell| {
                // SAFETY: the lock gives this thread the only access to the item's cell (what
                // the model checks; loom reports the race otherwise).
                let before = unsafe { std::mem::replace(&mut *cell, me) };
                assert_eq!(before, 0, "item {item} held by {before} and {me}");
            });
        }
        for item in mine() {
            // SAFETY: as above.
            self.items[item].with_mut(|cell| unsafe { *cell = 0 });
        }
    }
}

/// Runs `a` on a spawned thread and `b` on this one.
fn race(a: Hold, b: Hold) {
    let world = World::new();
    let other = {
        let world = Arc::clone(&world);
        loom_runs::spawn(move || world.hold(a, 1))
    };
    world.hold(b, 2);
    other.join().expect("the other holder finishes");
}

#[test]
fn one_share_is_held_by_one_thread_at_a_time() {
    loom_runs::check(|| race(Hold::Share(0, 2), Hold::Share(0, 2)));
}

#[test]
fn shares_of_two_splits_do_not_overlap() {
    loom_runs::check(|| race(Hold::Share(1, 2), Hold::Share(1, 3)));
}

#[test]
fn an_exclusive_hold_excludes_every_share() {
    loom_runs::check(|| race(Hold::Exclusive, Hold::Share(1, 2)));
    loom_runs::check(|| race(Hold::Exclusive, Hold::Exclusive));
}

/// Two distinct shares of one split are held together: the second is taken while the first
/// waits for it to be taken (a lock that admitted one share at a time would deadlock here).
#[test]
fn distinct_shares_are_held_together() {
    loom_runs::check(|| {
        let world = World::new();
        let taken = Arc::new(AtomicUsize::new(0));
        let other = {
            let (world, taken) = (Arc::clone(&world), Arc::clone(&taken));
            loom_runs::spawn(move || {
                let _held = world.lock.share(Share::of(0, 2));
                taken.fetch_add(1, Ordering::SeqCst);
                while taken.load(Ordering::SeqCst) < 2 {
                    thread::yield_now();
                }
            })
        };
        let _held = world.lock.share(Share::of(1, 2));
        taken.fetch_add(1, Ordering::SeqCst);
        while taken.load(Ordering::SeqCst) < 2 {
            thread::yield_now();
        }
        other.join().expect("the other holder finishes");
    });
}
