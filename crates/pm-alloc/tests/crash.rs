//! Crash enumeration: random reserve / write / publish / free sequences on a `Simulated` pool,
//! crashed before every fence (and, for some crash images, again before every fence of their
//! recovery); each crash image is recovered and checked: every published object is intact,
//! every allocated block is reachable from the root (no leak), no block is reachable twice or
//! overlaps another (no double allocation), and the recovered allocator keeps working.
//!
//! Prints `crash points: N` (run with `--nocapture`); N must be at least 10,000.
#![cfg(not(loom))]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use common::{Rng, assert_disjoint, pattern};
use pm_alloc::{CrashPlan, PAtomicPtr, PPtr, Pool, PoolOptions, SimOptions};

const SLOTS: usize = 12;
const STEPS: usize = 24;
const MIN_CRASH_POINTS: usize = 10_000;

type Root = [PAtomicPtr<u8>; SLOTS];

/// A published object: where it is, its requested size and the stamp of its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Object {
    offset: u64,
    size: usize,
    stamp: u64,
}

type Model = [Option<Object>; SLOTS];

fn options() -> PoolOptions {
    PoolOptions::new(64 << 10)
        .chunk_size(4096)
        .lanes(2)
        .log_slots(1)
        .cache_capacity(4)
        .layout(0xc4a5)
}

/// (size, align) choices: several small classes, a 256 B-aligned one, one- and two-chunk
/// large blocks.
const SHAPES: [(usize, usize); 7] = [
    (8, 8),
    (64, 64),
    (200, 64),
    (256, 256),
    (700, 64),
    (1500, 64),
    (5000, 4096),
];

/// What a crash image may show for each slot: the state before the interrupted operation or,
/// for the slot it changes, the state after it.
struct Expect<'a> {
    before: &'a Model,
    after: &'a Model,
    root_exists: bool,
}

fn check_image(bytes: &[u8], expect: &Expect<'_>, probe_recovery: bool) -> usize {
    let sim = SimOptions {
        crash_plan: if probe_recovery {
            CrashPlan::EveryFence
        } else {
            CrashPlan::Never
        },
        ..SimOptions::default()
    };
    let pool = options()
        .open_image(bytes, sim)
        .expect("every crash image recovers");
    let mut points = 1;
    if probe_recovery {
        // Crashes inside recovery: recovery must be idempotent.
        for image in pool.take_crash_images() {
            check_recovered(
                &options()
                    .open_image(&image.bytes, SimOptions::default())
                    .expect("recovers"),
                expect,
            );
            points += 1;
        }
    }
    check_recovered(&pool, expect);
    points
}

fn check_recovered(pool: &Pool, expect: &Expect<'_>) {
    let allocated: Vec<(u64, u64)> = pool
        .allocated_blocks()
        .into_iter()
        .map(|(p, size)| (p.offset(), size as u64))
        .collect();
    assert_disjoint(&allocated);
    let allocated_set: BTreeSet<u64> = allocated.iter().map(|&(o, _)| o).collect();
    if !expect.root_exists && allocated.is_empty() {
        return;
    }
    let root = pool
        .root::<Root>()
        .expect("the root is there or can be made");
    let mut reachable = BTreeSet::from([root.offset()]);
    let slots = pool.get(root).expect("the root resolves");
    for (s, slot) in slots.iter().enumerate() {
        let value = slot.load(Ordering::Acquire).offset();
        let allowed = [expect.before[s], expect.after[s]];
        let object = allowed
            .iter()
            .find(|o| o.map_or(0, |o| o.offset) == value)
            .unwrap_or_else(|| panic!("slot {s} holds {value:#x}, expected one of {allowed:?}"));
        if let Some(object) = object {
            assert!(
                reachable.insert(object.offset),
                "block {value:#x} reachable twice"
            );
            let words = pool
                .words(
                    PPtr::<u64>::from_offset(object.offset),
                    object.size.div_ceil(8),
                )
                .expect("a published block resolves");
            for (i, w) in words.iter().enumerate() {
                assert_eq!(
                    w.load(Ordering::Relaxed),
                    pattern(object.stamp, i),
                    "object in slot {s} damaged"
                );
            }
        }
    }
    assert_eq!(
        allocated_set, reachable,
        "allocated blocks differ from reachable blocks (leak or lost object)"
    );
    // The recovered allocator still works and never hands out an allocated block.
    if let Some(slot) = slots.iter().find(|s| s.load(Ordering::Acquire).is_null()) {
        let reservation = pool
            .reserve(64, 64)
            .expect("a 64 B block is free after recovery");
        assert!(!allocated_set.contains(&reservation.ptr::<u8>().offset()));
        pool.publish(reservation, slot)
            .expect("publishing works after recovery");
        let again: Vec<(u64, u64)> = pool
            .allocated_blocks()
            .into_iter()
            .map(|(p, size)| (p.offset(), size as u64))
            .collect();
        assert_disjoint(&again);
        assert_eq!(again.len(), allocated.len() + 1);
    }
}

fn run_sequence(seed: u64) -> usize {
    let evict_percent = [50, 0, 100][(seed % 3) as usize];
    let pool = options()
        .simulated(SimOptions {
            seed,
            evict_percent,
            crash_plan: CrashPlan::EveryFence,
        })
        .expect("a simulated pool");
    let mut rng = Rng(seed);
    let empty: Model = [None; SLOTS];
    let mut points = 0;
    // Creation and the root's allocation.
    let root = pool.root::<Root>().expect("root");
    for image in pool.take_crash_images() {
        if image.fence == 0 {
            // Before the header's own fence: creation is not crash-atomic, so the image is
            // either a pool or refused with a clear error, never a panic.
            let opened = options().open_image(&image.bytes, SimOptions::default());
            assert!(matches!(
                opened,
                Ok(_) | Err(pm_alloc::Error::Corrupt { .. })
            ));
            points += 1;
            continue;
        }
        let expect = Expect {
            before: &empty,
            after: &empty,
            root_exists: false,
        };
        points += check_image(&image.bytes, &expect, false);
    }
    let slots = pool.get(root).expect("root resolves");
    let mut model = empty;
    for step in 0..STEPS {
        let before = model;
        let s = rng.below(SLOTS as u64) as usize;
        match model[s] {
            None => {
                let (size, align) = SHAPES[rng.below(SHAPES.len() as u64) as usize];
                // Sometimes a reservation is abandoned first (nothing persistent happens).
                if rng.below(4) == 0 {
                    drop(
                        pool.reserve(size, align)
                            .expect("space for an abandoned reservation"),
                    );
                }
                let Ok(reservation) = pool.reserve(size, align) else {
                    continue;
                };
                let stamp = seed << 16 | step as u64;
                for (i, w) in reservation.words()[..size.div_ceil(8)].iter().enumerate() {
                    w.store(pattern(stamp, i), Ordering::Relaxed);
                }
                let offset = reservation.ptr::<u8>().offset();
                let published = pool.publish(reservation, &slots[s]).expect("publish");
                assert_eq!(published.offset(), offset);
                assert_eq!(offset % align as u64, 0);
                model[s] = Some(Object {
                    offset,
                    size,
                    stamp,
                });
            }
            Some(_) => {
                pool.free_at(&slots[s]).expect("free");
                model[s] = None;
            }
        }
        let probe = step % 8 == 0;
        for (k, image) in pool.take_crash_images().into_iter().enumerate() {
            let expect = Expect {
                before: &before,
                after: &model,
                root_exists: true,
            };
            points += check_image(&image.bytes, &expect, probe && k == 1);
        }
    }
    // A clean crash after the run: the persisted image holds exactly the model.
    let image = pool.persisted_image().expect("simulated");
    let expect = Expect {
        before: &model,
        after: &model,
        root_exists: true,
    };
    points + check_image(&image, &expect, false)
}

#[test]
fn every_fence_of_random_sequences_recovers() {
    let mut points = 0;
    let mut sequences = 0;
    while points < MIN_CRASH_POINTS {
        points += run_sequence(sequences);
        sequences += 1;
    }
    println!("crash points: {points} ({sequences} sequences)");
    assert!(points >= MIN_CRASH_POINTS);
}
