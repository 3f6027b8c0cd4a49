//! Loom models of the append-only arena: concurrent `alloc`s get distinct slots, holding their
//! own values, also when they race to install the next chunk, and every value is dropped once.
#![cfg(loom)]

use std::sync::atomic::AtomicUsize as StdAtomicUsize;

use concurrency::arena::Arena;
use concurrency::sync::Arc;
use concurrency::sync::atomic::{AtomicPtr, Ordering};
use concurrency::sync::cell::UnsafeCell;
use test_support::loom_runs;

/// A value as large as a whole minimal chunk, so that every chunk holds one slot and each
/// `alloc` after the first races to install a chunk. Counts its drops in a std atomic, which is
/// no part of the model.
struct Big {
    tag: u64,
    _fill: [u64; 31],
    drops: std::sync::Arc<StdAtomicUsize>,
}

impl Big {
    fn new(tag: u64, drops: &std::sync::Arc<StdAtomicUsize>) -> Self {
        Self {
            tag,
            _fill: [tag; 31],
            drops: std::sync::Arc::clone(drops),
        }
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn racing_allocs_get_distinct_slots_and_one_drop_each() {
    loom_runs::check(|| {
        let drops = std::sync::Arc::new(StdAtomicUsize::new(0));
        let arena = Arc::new(Arena::new(1, 1));
        let workers: Vec<_> = (1..=2)
            .map(|tag| {
                let arena = Arc::clone(&arena);
                let drops = std::sync::Arc::clone(&drops);
                loom_runs::spawn(move || {
                    let value = arena.alloc(Big::new(tag, &drops));
                    assert_eq!(value.tag, tag, "a slot holds another call's value");
                    std::ptr::from_ref(value) as usize
                })
            })
            .collect();
        let mine = arena.alloc(Big::new(3, &drops));
        assert_eq!(mine.tag, 3);
        let mut addresses = vec![std::ptr::from_ref(mine) as usize];
        for worker in workers {
            addresses.push(worker.join().expect("the worker does not panic"));
        }
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), 3, "two values shared a slot");
        assert_eq!(arena.len(), 3);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            0,
            "a value was dropped early"
        );
        // The workers are joined, so this is the last handle: it drops the arena.
        drop(arena);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            3,
            "a value was not dropped once"
        );
    });
}

#[test]
fn the_loser_of_the_first_chunk_takes_a_slot_in_the_winners() {
    loom_runs::check(|| {
        // Both calls may find the arena empty and race to install a first chunk (of many
        // 8-byte slots); the loser frees its own and takes the winner's second slot.
        let arena = Arc::new(Arena::<u64>::new(1, 1));
        let worker = {
            let arena = Arc::clone(&arena);
            loom_runs::spawn(move || *arena.alloc(1))
        };
        let mine = *arena.alloc(2);
        assert_eq!((worker.join().expect("no panic"), mine), (1, 2));
        assert_eq!(arena.len(), 2);
        assert_eq!(arena.bytes(), 256, "the losing chunk stayed linked");
    });
}

/// A value whose payload loom tracks (a cell), large enough that a minimal chunk holds at most
/// two: of three `alloc`s, one finds its chunk full and installs the next while others take
/// slots.
struct Tracked {
    payload: UnsafeCell<u64>,
    _fill: [u64; 15],
}

// SAFETY: the payload is written only by the thread that placed the value, before it publishes
// the value's address with `Release`; readers load that address with `Acquire` first. Loom
// checks exactly this: a read without the happens-before edge fails the model.
unsafe impl Sync for Tracked {}

#[test]
fn a_value_published_by_its_allocator_is_read_whole_by_another_thread() {
    loom_runs::check(|| {
        let arena = Arc::new(Arena::new(1, 2));
        let published = Arc::new(AtomicPtr::<Tracked>::new(std::ptr::null_mut()));
        let writers: Vec<_> = (1..=2_u64)
            .map(|tag| {
                let (arena, published) = (Arc::clone(&arena), Arc::clone(&published));
                loom_runs::spawn(move || {
                    let value = arena.alloc(Tracked {
                        payload: UnsafeCell::new(0),
                        _fill: [0; 15],
                    });
                    // SAFETY: the value is this thread's alone until it is published below.
                    value.payload.with_mut(|payload| unsafe { *payload = tag });
                    if tag == 1 {
                        published.store(std::ptr::from_ref(value).cast_mut(), Ordering::Release);
                    }
                })
            })
            .collect();
        arena.alloc(Tracked {
            payload: UnsafeCell::new(3),
            _fill: [0; 15],
        });
        assert!((1..=3).contains(&arena.len()));
        // SAFETY: a non-null pointer is a value of the arena, which outlives this scope.
        if let Some(value) = unsafe { published.load(Ordering::Acquire).as_ref() } {
            // SAFETY: the writer's store to the payload happens before its `Release` store of
            // the address, which this `Acquire` load read.
            assert_eq!(value.payload.with(|payload| unsafe { *payload }), 1);
        }
        for writer in writers {
            writer.join().expect("the writer does not panic");
        }
        assert_eq!(arena.len(), 3);
    });
}
