//! Memory that overwrites under concurrent reads leave behind: the out-of-line values that a
//! writer replaces are freed by whichever thread collects the epoch's garbage, mostly the
//! readers, and the block pool must hand those blocks back to the writer. In a process of its
//! own, so that the pool's footprint counts this test's blocks only.

use std::sync::atomic::{AtomicBool, Ordering};

use concurrency::block_pool::BlockPool;
use engine::Db;

/// Overwrites of the one key, each with a new 150-byte value (a block of 160 bytes): 160 MB of
/// blocks if none were reused.
const OVERWRITES: u32 = 1_000_000;

/// Readers beside the writer: the pool gives threads their shards in turn, so at least one of
/// them collects into a shard other than the writer's.
const READERS: usize = 3;

/// The most one pass of overwrites may grow the pool by: a fifth of what it would take with no
/// block reused.
const GROWTH_LIMIT: usize = 32 << 20;

/// Passes of [`OVERWRITES`], of which at least one must stay within [`GROWTH_LIMIT`]. While the
/// platform pauses one core (for up to 100 ms; README, "The platform's pauses") a reader pinned
/// there holds the epoch back, and the writer on the other core retires blocks that nobody may
/// free yet, about 340 MB a second: a pass that meets such a pause leaves the pool larger by that
/// backlog, and the next pass reuses it (a single pass grew it by 40 MiB once in 61 soak rounds,
/// about 120 ms of the writer's retirements; in 150 runs of this test alone, first passes grew it
/// by 3–11 MiB but twice 24 and once 35, whose second pass grew it by 0). Without reuse every
/// pass grows the pool by 160 MB.
const PASSES: usize = 3;

#[test]
fn overwrites_under_concurrent_reads_reuse_the_freed_blocks() {
    let db = Db::open_in_memory().expect("a database");
    let table = db.ordered_table::<u64>("values").expect("a table");
    table.insert(&1, [0; 150]).expect("an insert");
    let mut growths = Vec::new();
    for _ in 0..PASSES {
        let before = BlockPool::global().footprint();
        overwrite_while_reading(&table);
        let grown = BlockPool::global().footprint() - before;
        if grown < GROWTH_LIMIT {
            return;
        }
        growths.push(grown >> 20);
    }
    panic!("every pass grew the pool by 32 MiB or more for one live value: {growths:?} MiB");
}

/// [`OVERWRITES`] of key 1 while [`READERS`] threads read it, checking each value they read.
fn overwrite_while_reading(table: &engine::OrderedTable<u64>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..READERS {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    let value = table.get(&1).expect("the key is present");
                    assert_eq!(value.len(), 150);
                    assert!(value.iter().all(|&b| b == value[0]), "a torn value");
                }
            });
        }
        scope.spawn(|| {
            for i in 0..OVERWRITES {
                table.insert(&1, [i as u8; 150]).expect("an overwrite");
            }
            done.store(true, Ordering::Relaxed);
        });
    });
}
