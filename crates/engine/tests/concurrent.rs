//! Concurrent clients on one database: writers on their own keys and on shared keys, readers
//! running point reads, batched reads and ranges (forward and backward) meanwhile, checked for
//! lost or invented writes, then reopened and checked again.

mod common;

use std::collections::BTreeMap;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::TempDir;
use engine::{Db, Durability, Error, Options, WriteBatch};

const WRITERS: u64 = 3;
const WRITES: u64 = 3_000;
const SHARED: u64 = 64;

/// The value thread `t` writes for its `i`-th write: readers can tell who wrote it.
fn stamp(thread: u64, i: u64) -> Vec<u8> {
    let mut v = thread.to_le_bytes().to_vec();
    v.extend_from_slice(&i.to_le_bytes());
    v
}

fn decode(v: &[u8]) -> (u64, u64) {
    assert_eq!(v.len(), 16, "a value no writer wrote: {v:?}");
    (
        u64::from_le_bytes(v[..8].try_into().unwrap()),
        u64::from_le_bytes(v[8..].try_into().unwrap()),
    )
}

#[test]
fn concurrent_clients_lose_nothing() {
    let dir = TempDir::new("concurrent");
    let options = Options::new()
        .durability(Durability::Periodic(Duration::from_millis(2)))
        .checkpoint_interval(Some(Duration::from_millis(50)));
    let mut expected = BTreeMap::new();
    {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let own = db.ordered_table::<u64>("own").unwrap();
        let shared = db.hash_table::<u64>("shared").unwrap();
        let start = Barrier::new(WRITERS as usize + 2);
        std::thread::scope(|scope| {
            for t in 0..WRITERS {
                let (db, own, shared, start) = (&db, &own, &shared, &start);
                scope.spawn(move || {
                    start.wait();
                    let mut last_shared = BTreeMap::new();
                    for i in 0..WRITES {
                        let key = t << 32 | i;
                        if i % 10 == 9 {
                            let mut batch = WriteBatch::new();
                            batch.insert(own, &key, stamp(t, i)).unwrap();
                            batch.remove(own, &(key - 5)).unwrap();
                            db.write(batch).unwrap();
                        } else {
                            assert_eq!(own.insert(&key, stamp(t, i)).unwrap(), None);
                        }
                        let s = i % SHARED;
                        // Each writer only moves its own stamps forward on a shared key.
                        if let Some(old) = shared.insert(&s, stamp(t, i)).unwrap() {
                            let (writer, n) = decode(&old);
                            if writer == t {
                                assert_eq!(last_shared.get(&s), Some(&n), "a lost update");
                            }
                        }
                        last_shared.insert(s, i);
                    }
                });
            }
            for _ in 0..2 {
                let (own, shared, start) = (&own, &shared, &start);
                scope.spawn(move || {
                    start.wait();
                    for round in 0..200u64 {
                        let t = round % WRITERS;
                        let from = t << 32 | (round * 13 % WRITES);
                        let mut previous = None;
                        for (key, value) in own.range(from..(t << 32 | WRITES)).take(50) {
                            assert!(previous < Some(key), "range out of order");
                            previous = Some(key);
                            assert_eq!(decode(&value), (t, key & 0xffff_ffff));
                        }
                        // The same from the end down, on the reader's other rounds.
                        let mut previous = None;
                        for (key, value) in own.range(t << 32..from).rev().take(50) {
                            assert!(previous.is_none_or(|p| key < p), "reverse out of order");
                            previous = Some(key);
                            assert_eq!(decode(&value), (t, key & 0xffff_ffff));
                        }
                        if let Some(v) = shared.get(&(round % SHARED)) {
                            let (writer, i) = decode(&v);
                            assert!(writer < WRITERS && i % SHARED == round % SHARED);
                        }
                        // Batched reads of keys being written: each value found is the one
                        // its writer wrote for that key, in both tables.
                        let keys: Vec<u64> = (0..40)
                            .map(|j| (t << 32) | (((from & 0xffff_ffff) + j * 7) % WRITES))
                            .collect();
                        own.get_many_with(&keys, |j, value| {
                            if let Some(value) = value {
                                assert_eq!(decode(value), (t, keys[j] & 0xffff_ffff));
                            }
                        });
                        let slots: Vec<u64> = (0..SHARED).collect();
                        shared.get_many_with(&slots, |j, value| {
                            if let Some(value) = value {
                                let (writer, i) = decode(value);
                                assert!(writer < WRITERS && i % SHARED == slots[j]);
                            }
                        });
                    }
                });
            }
        });
        for t in 0..WRITERS {
            for i in 0..WRITES {
                let removed = (i + 5) % 10 == 9 && i + 5 < WRITES;
                if !removed {
                    expected.insert(t << 32 | i, stamp(t, i));
                }
            }
        }
        let got: BTreeMap<u64, Vec<u8>> = own.iter().collect();
        assert_eq!(got.len(), expected.len());
        assert!(
            got == expected,
            "the ordered table holds exactly the writes"
        );
        assert_eq!(shared.len(), SHARED as usize);
    }
    let db = Db::open(dir.path(), options).unwrap();
    let own = db.ordered_table::<u64>("own").unwrap();
    let got: BTreeMap<u64, Vec<u8>> = own.iter().collect();
    assert!(
        got == expected,
        "the reopened table holds exactly the writes"
    );
    assert_eq!(
        db.hash_table::<u64>("shared").unwrap().len(),
        SHARED as usize
    );
    let stats = db.stats();
    assert_eq!(stats.keys, expected.len() + SHARED as usize);
    assert!(stats.memory_bytes > 0);
}

const COUNTERS: u64 = 4;
const INCREMENTS: u64 = 4_000;

/// A counter's value: its count, padded to an out-of-line value for odd counters.
fn counter_value(counter: u64, count: u64) -> Vec<u8> {
    let mut v = count.to_le_bytes().to_vec();
    if counter % 2 == 1 {
        v.resize(100, counter as u8);
    }
    v
}

fn counter_count(counter: u64, v: Option<&[u8]>) -> u64 {
    let count = v.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
    if let Some(v) = v {
        assert_eq!(v, counter_value(counter, count), "a value no writer wrote");
    }
    count
}

/// Threads increment shared counters with `fetch_and_update` while others overwrite and
/// remove keys beside them: each increment must see a distinct predecessor, so the counts
/// each counter's increments saw are exactly `0..total`, and no increment is lost.
fn increments_lose_nothing(db: &Db) {
    let ordered = db.ordered_table::<u64>("counters").unwrap();
    let hash = db.hash_table::<Vec<u8>>("counters-by-name").unwrap();
    let start = Barrier::new(WRITERS as usize + 1);
    let seen: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let incrementers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (ordered, hash, start) = (&ordered, &hash, &start);
                scope.spawn(move || {
                    start.wait();
                    let mut seen = Vec::new();
                    for i in 0..INCREMENTS {
                        let counter = (t + i / 2) % COUNTERS;
                        let bump = |v: Option<&[u8]>| {
                            Some(counter_value(counter, counter_count(counter, v) + 1))
                        };
                        let before = if i % 2 == 0 {
                            ordered.fetch_and_update(&counter, bump).unwrap()
                        } else {
                            let name = format!("counter-{counter}").into_bytes();
                            hash.fetch_and_update(&name, bump).unwrap()
                        };
                        let table = (i % 2) * COUNTERS;
                        seen.push(
                            (table + counter) << 32 | counter_count(counter, before.as_deref()),
                        );
                    }
                    seen
                })
            })
            .collect();
        // Plain writes and compare-and-swaps of other keys of the same tables meanwhile.
        start.wait();
        for i in 0..INCREMENTS {
            let key = COUNTERS + i % 16;
            ordered.insert(&key, i.to_le_bytes()).unwrap();
            assert_eq!(
                ordered
                    .compare_and_swap(&key, Some(i.to_le_bytes()), None::<&[u8]>)
                    .unwrap(),
                Ok(())
            );
            let conflict = ordered
                .compare_and_swap(&key, Some(b"absent"), Some(b"never"))
                .unwrap()
                .unwrap_err();
            assert_eq!(conflict.current, None);
        }
        incrementers
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect()
    });
    let mut seen: Vec<u64> = seen.into_iter().flatten().collect();
    seen.sort_unstable();
    let mut want = Vec::new();
    for table in 0..2 {
        for counter in 0..COUNTERS {
            let total = WRITERS * INCREMENTS / 2 / COUNTERS;
            want.extend((0..total).map(|count| (table * COUNTERS + counter) << 32 | count));
        }
    }
    let first_difference = seen.iter().zip(&want).position(|(a, b)| a != b);
    assert!(
        seen == want,
        "each increment saw a distinct count: {} seen, {} wanted, first difference at {:?}",
        seen.len(),
        want.len(),
        first_difference
    );
    let total = WRITERS * INCREMENTS / 2 / COUNTERS;
    for counter in 0..COUNTERS {
        let name = format!("counter-{counter}").into_bytes();
        assert_eq!(ordered.get(&counter), Some(counter_value(counter, total)));
        assert_eq!(hash.get(&name), Some(counter_value(counter, total)));
    }
}

#[test]
fn compare_and_swap_loses_no_increment_in_memory() {
    increments_lose_nothing(&Db::open_in_memory().unwrap());
}

#[test]
fn compare_and_swap_loses_no_increment_on_disk_and_after_reopen() {
    let dir = TempDir::new("counters");
    let options = Options::new()
        .durability(Durability::Periodic(Duration::from_millis(2)))
        .checkpoint_interval(Some(Duration::from_millis(20)));
    increments_lose_nothing(&Db::open(dir.path(), options.clone()).unwrap());
    let db = Db::open(dir.path(), options).unwrap();
    let total = WRITERS * INCREMENTS / 2 / COUNTERS;
    let (ordered, hash) = (
        db.ordered_table::<u64>("counters").unwrap(),
        db.hash_table::<Vec<u8>>("counters-by-name").unwrap(),
    );
    for counter in 0..COUNTERS {
        let name = format!("counter-{counter}").into_bytes();
        assert_eq!(ordered.get(&counter), Some(counter_value(counter, total)));
        assert_eq!(hash.get(&name), Some(counter_value(counter, total)));
    }
    assert_eq!(
        ordered.len(),
        COUNTERS as usize,
        "the other keys were removed"
    );
}

/// Counts a thread out of `.0` when it drops, so that a panicking thread cannot leave the
/// others waiting for it.
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Threads increment counters while another removes them, with `remove` (which returns the
/// count removed) and with batches conditioned on the count it read (which also write it to an
/// audit table): no increment may be lost or counted twice, so the increments equal the counts
/// left plus the counts removed, and the audit holds exactly what the batches removed.
fn removals_race_increments(db: &Db) {
    const ROUNDS: u64 = 5 * INCREMENTS;
    let counters = db.ordered_table::<u64>("removed-counters").unwrap();
    let audit = db.hash_table::<u64>("audit").unwrap();
    let start = Barrier::new(WRITERS as usize);
    let incrementing = AtomicU64::new(WRITERS - 1);
    let (removed, batch_removed) = std::thread::scope(|scope| {
        for t in 0..WRITERS - 1 {
            let (counters, start, incrementing) = (&counters, &start, &incrementing);
            scope.spawn(move || {
                // Counted out when the thread ends, panicking or not: the remover waits for it.
                let _done = Finished(incrementing);
                start.wait();
                for i in 0..ROUNDS {
                    let counter = (t + i) % COUNTERS;
                    counters
                        .fetch_and_update(&counter, |v| {
                            Some((counter_count(0, v) + 1).to_le_bytes())
                        })
                        .unwrap();
                }
            });
        }
        start.wait();
        let (mut removed, mut batch_removed) = (0, 0);
        // Removals go on as long as any increment does, and for two rounds of the counters
        // after the last one (so both kinds of removal take counts however the threads are
        // scheduled).
        let mut after = 0;
        for i in 0.. {
            if incrementing.load(Ordering::Acquire) == 0 {
                if after == 2 * COUNTERS {
                    break;
                }
                after += 1;
            }
            let counter = i % COUNTERS;
            if i % 2 == 0 {
                removed += counter_count(0, counters.remove(&counter).unwrap().as_deref());
                continue;
            }
            let Some(seen) = counters.get(&counter) else {
                continue;
            };
            let mut batch = WriteBatch::new();
            batch.require(&counters, &counter, Some(&seen)).unwrap();
            batch.remove(&counters, &counter).unwrap();
            batch.insert(&audit, &i, &seen).unwrap();
            match db.write(batch) {
                Ok(()) => batch_removed += counter_count(0, Some(&seen)),
                Err(Error::Conflict {
                    condition: 0,
                    current,
                }) => {
                    assert_ne!(current.as_ref(), Some(&seen));
                    assert_eq!(audit.get(&i), None, "a refused batch wrote nothing");
                }
                Err(other) => panic!("{other}"),
            }
        }
        (removed, batch_removed)
    });
    let left: u64 = counters
        .iter()
        .map(|(_, v)| counter_count(0, Some(&v)))
        .sum();
    assert_eq!(
        left + removed + batch_removed,
        (WRITERS - 1) * ROUNDS,
        "{left} left, {removed} removed, {batch_removed} removed by batches"
    );
    let audited: u64 = audit.iter().map(|(_, v)| counter_count(0, Some(&v))).sum();
    assert_eq!(
        audited, batch_removed,
        "the audit holds what the batches removed"
    );
    assert!(
        removed > 0 && batch_removed > 0,
        "both kinds of removal took counts"
    );
}

#[test]
fn removals_race_increments_in_memory() {
    removals_race_increments(&Db::open_in_memory().unwrap());
}

#[test]
fn removals_race_increments_on_disk() {
    let dir = TempDir::new("removals");
    let options = Options::new().durability(Durability::Periodic(Duration::from_millis(2)));
    removals_race_increments(&Db::open(dir.path(), options).unwrap());
}

/// Two threads each claim one of two keys with a batch conditioned on neither being claimed:
/// the batch writes its own key and only requires the other's, which must be locked too, or
/// both could pass their checks (write skew). Exactly one claim wins each round.
fn write_skew_is_prevented(db: &Db) {
    const ROUNDS: u64 = 2_000;
    let (ordered, hash) = (
        db.ordered_table::<u64>("claims").unwrap(),
        db.hash_table::<Vec<u8>>("claims-by-name").unwrap(),
    );
    // The claimers meet three times a round, released by spinning (a barrier's wake-ups lie
    // microseconds apart, and the window between a claim's check of the other key and its
    // writes is a few microseconds); a claimer that panics lets the other one out.
    let (arrived, failed) = (AtomicU64::new(0), AtomicBool::new(false));
    let wins: Vec<u64> = std::thread::scope(|scope| {
        let claimers: Vec<_> = (0..2u64)
            .map(|own| {
                let (db, ordered, hash) = (db, &ordered, &hash);
                let (arrived, failed) = (&arrived, &failed);
                scope.spawn(move || {
                    let _flag = FailFlag(failed);
                    let meet = |point: u64| meet(arrived, failed, point);
                    let name = format!("claim-{own}").into_bytes();
                    let other = 1 - own;
                    let mut wins = 0;
                    for r in 0..ROUNDS {
                        meet(3 * r + 1);
                        let mut batch = WriteBatch::new();
                        batch.require(ordered, &other, None::<&[u8]>).unwrap();
                        // More conditions after the other's key: its check comes well before
                        // the writes, a window the other claim's check falls in.
                        for key in [own].into_iter().chain(100..164) {
                            batch.require(ordered, &key, None::<&[u8]>).unwrap();
                        }
                        batch.insert(ordered, &own, b"claimed").unwrap();
                        batch.insert(hash, &name, b"claimed").unwrap();
                        match db.write(batch) {
                            Ok(()) => wins += 1,
                            Err(Error::Conflict { condition: 0, .. }) => {}
                            Err(other) => panic!("{other}"),
                        }
                        meet(3 * r + 2);
                        assert!(ordered.len() <= 1, "both keys claimed");
                        assert_eq!(hash.len(), ordered.len(), "a batch half written");
                        meet(3 * r + 3);
                        ordered.remove(&own).unwrap();
                        hash.remove(&name).unwrap();
                    }
                    wins
                })
            })
            .collect();
        claimers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(
        wins.iter().sum::<u64>(),
        ROUNDS,
        "one claim per round: {wins:?}"
    );
}

/// Sets its flag when its thread panics.
struct FailFlag<'a>(&'a AtomicBool);

impl Drop for FailFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

/// Waits until both of two threads have reached meeting point `point` (numbered from 1),
/// spinning while the other runs and yielding if it waits for a core; panics if the other
/// thread panicked.
fn meet(arrived: &AtomicU64, failed: &AtomicBool, point: u64) {
    arrived.fetch_add(1, Ordering::AcqRel);
    for spins in 0u32.. {
        if arrived.load(Ordering::Acquire) >= 2 * point {
            return;
        }
        assert!(!failed.load(Ordering::Acquire), "the other thread failed");
        if spins < 10_000 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[test]
fn write_skew_is_prevented_in_memory() {
    write_skew_is_prevented(&Db::open_in_memory().unwrap());
}

#[test]
fn write_skew_is_prevented_on_disk() {
    let dir = TempDir::new("skew");
    let options = Options::new().durability(Durability::None).log_lanes(64);
    write_skew_is_prevented(&Db::open(dir.path(), options).unwrap());
}

/// A table created while a checkpoint waits for another one to finish, and written then: the
/// waiting checkpoint starts after the write, so recovery replays the write only if that
/// checkpoint holds the table (it once copied the list of tables before waiting, and lost it).
#[test]
fn a_table_created_while_a_checkpoint_waits_keeps_its_writes() {
    let dir = TempDir::new("checkpoint-wait");
    let options = Options::new().checkpoint_interval(None);
    {
        let db = Db::open(dir.path(), options.clone()).unwrap();
        let big = db.ordered_table::<u64>("big").unwrap();
        let mut batch = WriteBatch::new();
        for i in 0..200_000u64 {
            batch.insert(&big, &i, [7u8; 100]).unwrap();
        }
        db.write(batch).unwrap();
        let first_done = AtomicBool::new(false);
        let window = std::thread::scope(|s| {
            s.spawn(|| {
                db.checkpoint().unwrap();
                first_done.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(20));
            s.spawn(|| db.checkpoint().unwrap());
            std::thread::sleep(Duration::from_millis(20));
            let late = db.ordered_table::<u64>("late").unwrap();
            late.insert(&1, b"acknowledged").unwrap();
            !first_done.load(Ordering::SeqCst)
        });
        assert!(
            window,
            "the first checkpoint ran past the write, so the second one waited over it"
        );
        db.flush().unwrap();
    }
    let db = Db::open(dir.path(), options).unwrap();
    let late = db.ordered_table::<u64>("late").unwrap();
    assert_eq!(late.get(&1).as_deref(), Some(&b"acknowledged"[..]));
    assert_eq!(db.ordered_table::<u64>("big").unwrap().len(), 200_000);
}
