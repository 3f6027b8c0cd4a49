//! Memory that overwrites leave behind while a hash table is iterated (a checkpoint's scan
//! iterates it the same way): the iterator pins an epoch for the values it reads, and renews
//! the pin between the index's groups, so the values that a writer replaces meanwhile can be
//! freed before the iteration ends. In a process of its own, so that the pool's footprint
//! counts this test's blocks only.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use concurrency::block_pool::BlockPool;
use engine::Db;

/// Keys iterated, spread over the hash index's 64 initial groups; their values are inline.
const KEYS: u64 = 12_800;

/// Overwrites of another key per key iterated, each with a new 150-byte value (a block of 160
/// bytes): 100 MB of blocks in all if none were freed before the iteration ends.
const OVERWRITES_PER_STEP: u64 = 50;

#[test]
fn values_replaced_during_a_long_iteration_are_freed_before_it_ends() {
    let db = Db::open_in_memory().expect("a database");
    let table = db.hash_table::<u64>("values").expect("a table");
    for key in 0..KEYS {
        table
            .insert(&key, &key.to_le_bytes()[..7])
            .expect("an insert");
    }
    let hot = KEYS;
    table.insert(&hot, [0; 150]).expect("an insert");
    let before = BlockPool::global().footprint();
    // The writer makes exactly OVERWRITES_PER_STEP overwrites per step of the iteration, and
    // the iteration waits for them: the interleaving does not depend on the scheduler.
    let (steps, written, finished) = (AtomicU64::new(0), AtomicU64::new(0), AtomicBool::new(false));
    let seen = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut count = 0;
            while !finished.load(Ordering::Acquire) {
                let target = steps.load(Ordering::Acquire) * OVERWRITES_PER_STEP;
                while count < target {
                    table
                        .insert(&hot, [count as u8; 150])
                        .expect("an overwrite");
                    count += 1;
                }
                written.store(count, Ordering::Release);
                std::hint::spin_loop();
            }
        });
        let mut seen = 0;
        for (key, value) in table.iter() {
            if key != hot {
                assert_eq!(value, key.to_le_bytes()[..7]);
                seen += 1;
            }
            let target = (steps.fetch_add(1, Ordering::AcqRel) + 1) * OVERWRITES_PER_STEP;
            while written.load(Ordering::Acquire) < target {
                std::thread::yield_now();
            }
        }
        finished.store(true, Ordering::Release);
        seen
    });
    assert_eq!(seen, KEYS);
    let grown = BlockPool::global().footprint() - before;
    assert!(
        grown < 32 << 20,
        "the pool grew by {} MiB for one live value",
        grown >> 20
    );
}
