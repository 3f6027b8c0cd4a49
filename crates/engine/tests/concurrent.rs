//! Concurrent clients on one database: writers on their own keys and on shared keys, readers
//! running point reads and ranges (forward and backward) meanwhile, checked for lost or
//! invented writes, then reopened and checked again.

mod common;

use std::collections::BTreeMap;
use std::sync::Barrier;
use std::time::Duration;

use common::TempDir;
use engine::{Db, Durability, Options, WriteBatch};

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
