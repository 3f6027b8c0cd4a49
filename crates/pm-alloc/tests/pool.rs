//! Pool behaviour: persistence across reopen in `Mapped` mode, the global version, the root,
//! user logs, the write costs the counters report, and the allocator under real threads.
#![cfg(not(loom))]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use common::assert_disjoint;
use pm_alloc::{
    CrashPlan, Error, Mode, PAtomicPtr, PPtr, Pool, PoolOptions, SimOptions, thread_counters,
};
use test_support::TempDir;

type Root = [PAtomicPtr<[AtomicU64; 8]>; 16];

#[test]
fn mapped_pool_survives_reopen() {
    let dir = TempDir::new("reopen");
    let path = dir.path().join("p");
    let options = PoolOptions::new(2 << 20)
        .chunk_size(16 << 10)
        .lanes(4)
        .log_slots(2);
    let (root, node, log_offset) = {
        let pool = options.create(&path, Mode::Mapped).expect("create");
        assert_eq!(pool.mode(), Mode::Mapped);
        assert_eq!(pool.global_version(), 1);
        let root = pool.root::<Root>().expect("root");
        let slots = pool.get(root).expect("root");
        let node = pool.alloc(&slots[3]).expect("alloc");
        pool.get(node).expect("node")[5].store(55, Ordering::Relaxed);
        pool.persist(node, 64).expect("persist");
        let log = pool.thread_log().expect("lane");
        let slot = log.slot(1).expect("two slots");
        slot.write([1, 2, 3, 4, 5, 6]).expect("log");
        (root, node, slot.as_pptr())
    };
    let pool = options.open(&path, Mode::Mapped).expect("reopen");
    assert_eq!(pool.global_version(), 2);
    assert_eq!(pool.root::<Root>().expect("root"), root);
    let slots = pool.get(root).expect("root");
    assert_eq!(slots[3].load(Ordering::Acquire), node);
    assert_eq!(pool.get(node).expect("node")[5].load(Ordering::Relaxed), 55);
    let logged: Vec<_> = pool
        .log_slots()
        .filter_map(|s| s.read().map(|e| (s.as_pptr(), e)))
        .collect();
    assert_eq!(logged, vec![(log_offset, [1, 2, 3, 4, 5, 6])]);
    let blocks: BTreeSet<u64> = pool
        .allocated_blocks()
        .iter()
        .map(|(p, _)| p.offset())
        .collect();
    assert_eq!(blocks, BTreeSet::from([root.offset(), node.offset()]));
    drop(pool);
    assert_eq!(
        options
            .open(&path, Mode::Mapped)
            .expect("again")
            .global_version(),
        3
    );
}

#[test]
fn write_costs_match_the_protocol() {
    for pool in [
        PoolOptions::new(1 << 20).volatile().expect("volatile"),
        PoolOptions::new(1 << 20)
            .simulated(SimOptions::default())
            .expect("simulated"),
    ] {
        let root = pool.root::<Root>().expect("root");
        let slots = pool.get(root).expect("root");
        let before = thread_counters();
        let r = pool.reserve(64, 64).expect("space");
        let reserve = thread_counters() - before;
        assert_eq!(
            (reserve.flushes, reserve.fences),
            (0, 0),
            "reserve touches no PM"
        );
        let before = thread_counters();
        pool.publish(r, &slots[0]).expect("publish");
        let publish = thread_counters() - before;
        // Contents 1 line; log, chunk header, bitmap word, destination, log clear: 5 lines.
        assert_eq!((publish.flushes, publish.fences), (6, 4));
        assert_eq!(publish.flushed_bytes, 6 * 64);
        let before = thread_counters();
        pool.free_at(&slots[0]).expect("free");
        let free = thread_counters() - before;
        assert_eq!((free.flushes, free.fences), (4, 3));
        let before = thread_counters();
        pool.free_at(&slots[0]).expect("null is a no-op");
        assert_eq!(thread_counters() - before, Default::default());
    }
}

#[test]
fn a_block_published_into_a_log_target_survives_a_crash() {
    // APEX's SMO step 1: the allocator publishes the new node into the thread's log entry.
    let options = PoolOptions::new(1 << 20)
        .chunk_size(4096)
        .lanes(2)
        .log_slots(1);
    let pool = options.simulated(SimOptions::default()).expect("pool");
    let log = pool.thread_log().expect("lane");
    let slot = log.slot(0).expect("one slot");
    slot.write([7, 0, 0, 0, 0, 0]).expect("undo entry");
    let r = pool.reserve(4096, 256).expect("space");
    let node: PPtr<u8> = pool
        .publish(r, slot.target())
        .expect("publish into the log");
    let image = pool.crash_image(3).expect("simulated");
    let recovered = options
        .open_image(&image, SimOptions::default())
        .expect("recover");
    let slots: Vec<_> = recovered
        .log_slots()
        .filter(|s| s.read().is_some())
        .collect();
    assert_eq!(slots.len(), 1);
    assert_eq!(slots[0].read(), Some([7, 0, 0, 0, 0, 0]));
    assert_eq!(slots[0].target::<u8>().load(Ordering::Acquire), node);
    assert_eq!(recovered.usable_size(node).expect("allocated"), 4096);
    // Rolling the SMO back frees the node and nulls the target in one step.
    recovered.free_at(slots[0].target::<u8>()).expect("free");
    slots[0].clear().expect("clear");
    assert_eq!(recovered.allocated_blocks().len(), 0);
}

#[test]
fn unpersisted_stores_are_lost_and_persisted_ones_kept() {
    let options = PoolOptions::new(1 << 20).chunk_size(4096);
    let pool = options
        .simulated(SimOptions {
            evict_percent: 0,
            ..SimOptions::default()
        })
        .expect("pool");
    let root = pool.root::<[AtomicU64; 16]>().expect("root");
    let words = pool.get(root).expect("root");
    words[0].store(1, Ordering::Relaxed);
    pool.persist_ref(&words[0]).expect("persist");
    words[8].store(2, Ordering::Relaxed);
    pool.flush_ref(&words[8]).expect("flush without fence");
    let image = pool.crash_image(0).expect("simulated");
    let after = options
        .open_image(&image, SimOptions::default())
        .expect("recover");
    let words = after
        .get(after.root::<[AtomicU64; 16]>().expect("root"))
        .expect("root");
    assert_eq!(words[0].load(Ordering::Relaxed), 1);
    assert_eq!(words[8].load(Ordering::Relaxed), 0);
    assert_eq!(after.global_version(), 2);
}

#[test]
fn crash_plans_take_images_at_chosen_fences() {
    let pool = PoolOptions::new(1 << 20)
        .simulated(SimOptions {
            crash_plan: CrashPlan::AtFences(vec![2, 4]),
            ..SimOptions::default()
        })
        .expect("pool");
    pool.root::<[AtomicU64; 8]>().expect("root");
    let fences: Vec<u64> = pool.take_crash_images().iter().map(|i| i.fence).collect();
    assert_eq!(fences, vec![2, 4]);
    assert!(pool.fence_count().expect("simulated") >= 5);
    assert!(pool.take_crash_images().is_empty());
}

fn worker(pool: &Pool, slots: &[PAtomicPtr<[AtomicU64; 8]>], rounds: usize) {
    for round in 0..rounds {
        let slot = &slots[round % slots.len()];
        if slot.load(Ordering::Acquire).is_null() {
            let size = [8, 64, 200, 512, 3000][round % 5];
            let r = pool.reserve(size, 64).expect("space");
            r.words()[0].store(round as u64, Ordering::Relaxed);
            pool.publish(r, slot).expect("publish");
        } else {
            pool.free_at(slot).expect("free");
        }
    }
}

#[test]
fn threads_allocate_disjoint_blocks() {
    const THREADS: usize = 4;
    let pool = PoolOptions::new(4 << 20)
        .chunk_size(16 << 10)
        // One lane per worker, and one for this thread, which allocates the root.
        .lanes(THREADS as u32 + 1)
        .volatile()
        .expect("pool");
    let root = pool
        .root::<[PAtomicPtr<[AtomicU64; 8]>; 64]>()
        .expect("root");
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let pool = &pool;
            s.spawn(move || {
                let slots = &pool.get(root).expect("root")[t * 16..(t + 1) * 16];
                worker(pool, slots, 600);
            });
        }
    });
    let slots = pool.get(root).expect("root");
    let mut live: BTreeSet<u64> = slots
        .iter()
        .map(|s| s.load(Ordering::Acquire).offset())
        .filter(|&o| o != 0)
        .collect();
    live.insert(root.offset());
    let blocks = pool.allocated_blocks();
    let intervals: Vec<(u64, u64)> = blocks
        .iter()
        .map(|(p, s)| (p.offset(), *s as u64))
        .collect();
    assert_disjoint(&intervals);
    assert_eq!(
        blocks
            .iter()
            .map(|(p, _)| p.offset())
            .collect::<BTreeSet<_>>(),
        live
    );
}

#[test]
fn lanes_are_returned_when_threads_exit() {
    let pool = PoolOptions::new(1 << 20).lanes(2).volatile().expect("pool");
    let root = pool
        .root::<[PAtomicPtr<[AtomicU64; 8]>; 8]>()
        .expect("root");
    for t in 0..8 {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let slots = pool.get(root).expect("root");
            worker(&pool, &slots[t..=t], 3);
        })
        .join()
        .expect("worker");
    }
    // Two lanes: the main thread holds one, so of two concurrent threads one finds none.
    let barrier = Arc::new(Barrier::new(2));
    let results: Vec<bool> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let got = pool.thread_log().map(|_| ());
                barrier.wait();
                match got {
                    Ok(()) => true,
                    Err(Error::NoFreeLane { lanes: 2 }) => false,
                    Err(e) => panic!("{e}"),
                }
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(results.iter().filter(|&&ok| ok).count(), 1);
}

#[test]
fn a_publish_that_finds_no_lane_gives_its_block_back() {
    // One lane, held by this thread (its root's publish claimed it): another thread's publish
    // finds none, and its reservation must not keep the block.
    let pool = PoolOptions::new(1 << 20).lanes(1).volatile().expect("pool");
    let root = pool.root::<PAtomicPtr<[u8; 65_536]>>().expect("root");
    let free = pool.stats().free_chunks;
    let other = pool.clone();
    std::thread::spawn(move || {
        let slot = other.get(root).expect("root");
        for _ in 0..3 {
            let reservation = other.reserve(65_536, 64).expect("a large block");
            assert!(matches!(
                other.publish(reservation, slot),
                Err(Error::NoFreeLane { lanes: 1 })
            ));
        }
    })
    .join()
    .expect("the other thread");
    assert_eq!(pool.stats().free_chunks, free);
}
