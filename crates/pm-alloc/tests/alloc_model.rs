//! Model-based tests of the allocator: random reserve / publish / free / reopen sequences
//! against a model of the live blocks. After every step: no two allocated blocks overlap,
//! every block is aligned as asked and at least as large, the persistent chunk table holds
//! exactly the model's blocks, contents are intact, a freed block is reusable at once (free
//! lists), and a double free is refused.
#![cfg(not(loom))]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use common::{assert_disjoint, pattern};
use pm_alloc::{Error, PAtomicPtr, PPtr, Pool, PoolOptions, SimOptions};
use proptest::prelude::*;

const SLOTS: usize = 32;
type Root = [PAtomicPtr<u8>; SLOTS];

const SHAPES: [(usize, usize); 10] = [
    (1, 1),
    (64, 64),
    (65, 8),
    (190, 64),
    (256, 256),
    (300, 256),
    (1000, 64),
    (1024, 1024),
    (3000, 64),
    (9000, 4096),
];

#[derive(Debug, Clone)]
enum Op {
    Alloc { slot: usize, shape: usize },
    FreeAt { slot: usize },
    FreePtr { slot: usize },
    DoubleFree { slot: usize },
    Cancel { shape: usize },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..SLOTS, 0..SHAPES.len()).prop_map(|(slot, shape)| Op::Alloc { slot, shape }),
        3 => (0..SLOTS).prop_map(|slot| Op::FreeAt { slot }),
        1 => (0..SLOTS).prop_map(|slot| Op::FreePtr { slot }),
        1 => (0..SLOTS).prop_map(|slot| Op::DoubleFree { slot }),
        1 => (0..SHAPES.len()).prop_map(|shape| Op::Cancel { shape }),
        1 => Just(Op::Reopen),
    ]
}

#[derive(Debug, Clone, Copy)]
struct Live {
    offset: u64,
    size: usize,
    align: usize,
    stamp: u64,
}

fn options() -> PoolOptions {
    PoolOptions::new(128 << 10)
        .chunk_size(4096)
        .lanes(2)
        .cache_capacity(4)
}

fn check(pool: &Pool, model: &[Option<Live>; SLOTS], root: PPtr<Root>) {
    let allocated: BTreeMap<u64, usize> = pool
        .allocated_blocks()
        .into_iter()
        .map(|(p, size)| (p.offset(), size))
        .collect();
    let intervals: Vec<(u64, u64)> = allocated.iter().map(|(&o, &s)| (o, s as u64)).collect();
    assert_disjoint(&intervals);
    let mut expected: BTreeMap<u64, usize> = BTreeMap::new();
    expected.insert(
        root.offset(),
        pool.usable_size(root).expect("root allocated"),
    );
    let slots = pool.get(root).expect("root");
    for (s, live) in model.iter().enumerate() {
        let held = slots[s].load(Ordering::Acquire).offset();
        assert_eq!(held, live.map_or(0, |l| l.offset), "slot {s}");
        if let Some(l) = live {
            let usable = pool
                .usable_size(PPtr::<u8>::from_offset(l.offset))
                .expect("live");
            assert!(usable >= l.size);
            assert_eq!(l.offset % l.align as u64, 0, "alignment");
            assert_eq!(l.offset % 64, 0, "every block is 64 B-aligned");
            expected.insert(l.offset, usable);
            let words = pool
                .words(PPtr::<u64>::from_offset(l.offset), l.size.div_ceil(8))
                .expect("resolves");
            for (i, w) in words.iter().enumerate() {
                assert_eq!(w.load(Ordering::Relaxed), pattern(l.stamp, i));
            }
        }
    }
    assert_eq!(allocated, expected);
}

fn run(ops: &[Op]) {
    let mut pool = options().simulated(SimOptions::default()).expect("pool");
    let mut root = pool.root::<Root>().expect("root");
    let mut model: [Option<Live>; SLOTS] = [None; SLOTS];
    for (step, op) in ops.iter().enumerate() {
        let slots = pool.get(root).expect("root");
        match *op {
            Op::Alloc { slot, shape } if model[slot].is_none() => {
                let (size, align) = SHAPES[shape];
                match pool.reserve(size, align) {
                    Ok(r) => {
                        let stamp = step as u64;
                        for (i, w) in r.words()[..size.div_ceil(8)].iter().enumerate() {
                            w.store(pattern(stamp, i), Ordering::Relaxed);
                        }
                        let p = pool.publish(r, &slots[slot]).expect("publish");
                        model[slot] = Some(Live {
                            offset: p.offset(),
                            size,
                            align,
                            stamp,
                        });
                    }
                    Err(Error::OutOfSpace { .. }) => {}
                    Err(e) => panic!("reserve failed: {e}"),
                }
            }
            Op::FreeAt { slot } => {
                pool.free_at(&slots[slot]).expect("free_at");
                if let Some(l) = model[slot].take() {
                    // The freed block is immediately reusable (a small block comes straight
                    // back from this thread's cache).
                    let r = pool
                        .reserve(l.size, l.align)
                        .expect("a just-freed block can be reserved again");
                    if l.size <= 1024 {
                        assert_eq!(r.ptr::<u8>().offset(), l.offset);
                    }
                }
            }
            Op::FreePtr { slot } | Op::DoubleFree { slot } => {
                if let Some(l) = model[slot].take() {
                    let p = PPtr::<u8>::from_offset(l.offset);
                    pool.free(p).expect("free");
                    if matches!(op, Op::DoubleFree { .. }) {
                        assert!(matches!(pool.free(p), Err(Error::NotAllocated { .. })));
                    }
                    slots[slot].store(PPtr::null(), Ordering::Release);
                    pool.persist_ref(&slots[slot]).expect("persist");
                }
            }
            Op::Cancel { shape } => {
                let (size, align) = SHAPES[shape];
                drop(pool.reserve(size, align));
            }
            Op::Reopen => {
                let image = pool.persisted_image().expect("simulated");
                pool = options()
                    .open_image(&image, SimOptions::default())
                    .expect("reopen");
                assert_eq!(pool.root::<Root>().expect("root"), root);
                root = pool.root::<Root>().expect("root");
            }
            Op::Alloc { .. } => {}
        }
        check(&pool, &model, root);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn allocator_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(&ops);
    }
}

#[test]
fn exhaustion_and_reuse() {
    let pool = options().volatile().expect("pool");
    let root = pool.root::<Root>().expect("root");
    let slots = pool.get(root).expect("root");
    let mut n = 0;
    // Fill the pool with 1000 B blocks (1024 class) through one slot chain: publish into the
    // slot, then move the pointer out of it into a DRAM list.
    let mut held = Vec::new();
    loop {
        match pool.reserve(1000, 64) {
            Ok(r) => {
                let p = pool.publish(r, &slots[0]).expect("publish");
                held.push(p);
                n += 1;
            }
            Err(Error::OutOfSpace { .. }) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        n > 50,
        "a 128 KiB pool holds more than 50 blocks of 1 KiB, got {n}"
    );
    for p in held.drain(..) {
        pool.free(p).expect("free");
    }
    for _ in 0..n {
        let r = pool
            .reserve(1000, 64)
            .expect("every freed block is reusable");
        held.push(pool.publish(r, &slots[0]).expect("publish"));
    }
    let intervals: Vec<(u64, u64)> = held.iter().map(|p| (p.offset(), 1024)).collect();
    assert_disjoint(&intervals);
}
