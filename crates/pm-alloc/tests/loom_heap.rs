//! Loom models of the allocator's volatile heap: lanes (per-thread caches) are owned by one
//! thread at a time, and no block is ever handed out to two holders at once, while blocks move
//! between per-thread caches, the shared free lists and fresh chunks.
#![cfg(loom)]

use std::collections::BTreeSet;

use concurrency::sync::{Arc, Mutex};
use pm_alloc::alloc::heap::{HeapShape, VolatileHeap};
use test_support::loom_runs;

/// One 256-byte chunk of four 64 B blocks, caches of two: every path (cache hit, refill from
/// the shared list, carving, spilling back) is reached within a few operations.
fn heap(lanes: usize) -> VolatileHeap {
    VolatileHeap::new(HeapShape {
        heap_offset: 4096,
        chunk_size: 256,
        chunks: 1,
        class_sizes: vec![64],
        lanes,
        cache_capacity: 2,
    })
}

/// Takes, returns and takes again, recording holdings in `held` (a block may be in it once).
fn churn(heap: &VolatileHeap, held: &Mutex<BTreeSet<u64>>) {
    let lane = heap.claim_lane().expect("one lane per thread");
    let a = heap
        .reserve_small(lane, 0)
        .expect("four blocks for two threads");
    assert!(held.lock().insert(a), "block {a:#x} handed out twice");
    let b = heap
        .reserve_small(lane, 0)
        .expect("four blocks for two threads");
    assert!(held.lock().insert(b), "block {b:#x} handed out twice");
    assert!(held.lock().remove(&a));
    heap.release_small(lane, 0, a);
    heap.release_lane(lane);
    let lane = heap.claim_lane().expect("the lane came back");
    let c = heap.reserve_small(lane, 0).expect("a block is free");
    assert!(held.lock().insert(c), "block {c:#x} handed out twice");
}

#[test]
fn no_block_is_handed_out_twice() {
    loom_runs::check(|| {
        let heap = Arc::new(heap(2));
        let held = Arc::new(Mutex::new(BTreeSet::new()));
        let other = {
            let heap = Arc::clone(&heap);
            let held = Arc::clone(&held);
            loom_runs::spawn(move || churn(&heap, &held))
        };
        churn(&heap, &held);
        other.join().expect("no panic");
        assert_eq!(held.lock().len(), 4);
        assert_eq!(heap.free_chunk_count(), 0);
    });
}

#[test]
fn a_lane_has_one_owner_at_a_time() {
    loom_runs::check(|| {
        let heap = Arc::new(heap(1));
        let owners = Arc::new(Mutex::new(0_usize));
        let claim = |heap: &VolatileHeap, owners: &Mutex<usize>| {
            if let Some(lane) = heap.claim_lane() {
                {
                    let mut n = owners.lock();
                    *n += 1;
                    assert_eq!(*n, 1, "two owners of one lane");
                }
                *owners.lock() -= 1;
                heap.release_lane(lane);
                true
            } else {
                false
            }
        };
        let other = {
            let heap = Arc::clone(&heap);
            let owners = Arc::clone(&owners);
            loom_runs::spawn(move || claim(&heap, &owners))
        };
        let mine = claim(&heap, &owners);
        let theirs = other.join().expect("no panic");
        assert!(mine || theirs, "a free lane is always claimable by someone");
        assert!(heap.claim_lane().is_some(), "released lanes are free again");
    });
}
