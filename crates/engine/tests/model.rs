//! Model-based tests of the engine: random writes, batches, checkpoints and reopens over four
//! tables (ordered and hash, `u64` and byte-string keys), checked against `BTreeMap`s.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{TempDir, value};
use engine::{
    CompareAndSwapError, Db, Durability, Error, HashTable, Options, OrderedTable, WriteBatch,
};
use proptest::prelude::*;

/// The four tables under test, opened by name.
struct Tables {
    ordered_u64: OrderedTable<u64>,
    ordered_bytes: OrderedTable<Vec<u8>>,
    hash_u64: HashTable<u64>,
    hash_bytes: HashTable<Vec<u8>>,
}

impl Tables {
    fn open(db: &Db) -> Self {
        Self {
            ordered_u64: db.ordered_table("ordered_u64").unwrap(),
            ordered_bytes: db.ordered_table("ordered_bytes").unwrap(),
            hash_u64: db.hash_table("hash_u64").unwrap(),
            hash_bytes: db.hash_table("hash_bytes").unwrap(),
        }
    }

    fn insert(&self, table: usize, key: u64, value: &[u8]) -> Option<Vec<u8>> {
        match table {
            0 => self.ordered_u64.insert(&key, value),
            1 => self.ordered_bytes.insert(&bytes_key(key), value),
            2 => self.hash_u64.insert(&key, value),
            _ => self.hash_bytes.insert(&bytes_key(key), value),
        }
        .unwrap()
    }

    fn remove(&self, table: usize, key: u64) -> Option<Vec<u8>> {
        match table {
            0 => self.ordered_u64.remove(&key),
            1 => self.ordered_bytes.remove(&bytes_key(key)),
            2 => self.hash_u64.remove(&key),
            _ => self.hash_bytes.remove(&bytes_key(key)),
        }
        .unwrap()
    }

    fn compare_and_swap(
        &self,
        table: usize,
        key: u64,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<(), CompareAndSwapError> {
        match table {
            0 => self.ordered_u64.compare_and_swap(&key, expected, new),
            1 => self
                .ordered_bytes
                .compare_and_swap(&bytes_key(key), expected, new),
            2 => self.hash_u64.compare_and_swap(&key, expected, new),
            _ => self
                .hash_bytes
                .compare_and_swap(&bytes_key(key), expected, new),
        }
        .unwrap()
    }

    fn get_many(&self, table: usize, keys: &[u64]) -> Vec<Option<Vec<u8>>> {
        let byte_keys: Vec<Vec<u8>> = keys.iter().map(|&k| bytes_key(k)).collect();
        match table {
            0 => self.ordered_u64.get_many(keys),
            1 => self.ordered_bytes.get_many(&byte_keys),
            2 => self.hash_u64.get_many(keys),
            _ => self.hash_bytes.get_many(&byte_keys),
        }
    }

    fn get(&self, table: usize, key: u64) -> Option<Vec<u8>> {
        match table {
            0 => self.ordered_u64.get(&key),
            1 => self.ordered_bytes.get(&bytes_key(key)),
            2 => self.hash_u64.get(&key),
            _ => self.hash_bytes.get(&bytes_key(key)),
        }
    }

    fn add_to_batch(&self, batch: &mut WriteBatch, table: usize, key: u64, value: Option<&[u8]>) {
        match (table, value) {
            (0, Some(v)) => batch.insert(&self.ordered_u64, &key, v),
            (0, None) => batch.remove(&self.ordered_u64, &key),
            (1, Some(v)) => batch.insert(&self.ordered_bytes, &bytes_key(key), v),
            (1, None) => batch.remove(&self.ordered_bytes, &bytes_key(key)),
            (2, Some(v)) => batch.insert(&self.hash_u64, &key, v),
            (2, None) => batch.remove(&self.hash_u64, &key),
            (_, Some(v)) => batch.insert(&self.hash_bytes, &bytes_key(key), v),
            (_, None) => batch.remove(&self.hash_bytes, &bytes_key(key)),
        }
        .unwrap()
    }

    fn require_in_batch(
        &self,
        batch: &mut WriteBatch,
        table: usize,
        key: u64,
        expected: Option<&[u8]>,
    ) {
        match table {
            0 => batch.require(&self.ordered_u64, &key, expected),
            1 => batch.require(&self.ordered_bytes, &bytes_key(key), expected),
            2 => batch.require(&self.hash_u64, &key, expected),
            _ => batch.require(&self.hash_bytes, &bytes_key(key), expected),
        }
        .unwrap()
    }

    /// Every pair of `table`, keys in the model's encoding, sorted.
    fn contents(&self, table: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = match table {
            0 => self
                .ordered_u64
                .iter()
                .map(|(k, v)| (model_key(0, k), v))
                .collect(),
            1 => self.ordered_bytes.iter().collect(),
            2 => self
                .hash_u64
                .iter()
                .map(|(k, v)| (model_key(2, k), v))
                .collect(),
            _ => self.hash_bytes.iter().collect(),
        };
        if table >= 2 {
            pairs.sort();
        } else {
            assert!(
                pairs.is_sorted(),
                "ordered table {table} iterates in key order"
            );
            let backward: Vec<(Vec<u8>, Vec<u8>)> = match table {
                0 => self
                    .ordered_u64
                    .iter()
                    .rev()
                    .map(|(k, v)| (model_key(0, k), v))
                    .collect(),
                _ => self.ordered_bytes.iter().rev().collect(),
            };
            assert!(
                backward.iter().rev().eq(&pairs),
                "ordered table {table} iterates backward in reverse key order"
            );
        }
        pairs
    }

    fn len(&self, table: usize) -> usize {
        match table {
            0 => self.ordered_u64.len(),
            1 => self.ordered_bytes.len(),
            2 => self.hash_u64.len(),
            _ => self.hash_bytes.len(),
        }
    }
}

/// Byte-string keys are decimal strings, so their order differs from the numbers'.
fn bytes_key(key: u64) -> Vec<u8> {
    key.to_string().into_bytes()
}

/// The model's key for `key` in `table`: big-endian bytes for `u64` tables (which sort like
/// the numbers), the decimal string for byte-string tables.
fn model_key(table: usize, key: u64) -> Vec<u8> {
    if table.is_multiple_of(2) {
        key.to_be_bytes().to_vec()
    } else {
        bytes_key(key)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        table: usize,
        key: u64,
        len: usize,
    },
    Remove {
        table: usize,
        key: u64,
    },
    /// A compare-and-swap expecting the key's current value, absence, or another value; it
    /// writes a value of the length given, or removes the key.
    CompareAndSwap {
        table: usize,
        key: u64,
        expect: Expect,
        new: Option<usize>,
    },
    Batch(Vec<(usize, u64, Option<usize>)>),
    /// A batch with conditions (table, key, expectation) on top of its writes.
    ConditionalBatch {
        conditions: Vec<(usize, u64, Expect)>,
        writes: Vec<(usize, u64, Option<usize>)>,
    },
    Checkpoint,
    Reopen,
}

#[derive(Debug, Clone)]
enum Expect {
    Current,
    Absent,
    Other(usize),
}

impl Expect {
    /// The value expected of a key holding `current`; `seed` makes another value.
    fn value(&self, current: Option<&Vec<u8>>, seed: u64) -> Option<Vec<u8>> {
        match *self {
            Expect::Current => current.cloned(),
            Expect::Absent => None,
            Expect::Other(len) => Some(value(seed + 1_000_000, len)),
        }
    }
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![
        4 => Just(Expect::Current),
        1 => Just(Expect::Absent),
        1 => (0usize..20).prop_map(Expect::Other),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let table = 0usize..4;
    let key = 0u64..150;
    // Inline values, pooled blocks, and blocks past the pool's limit (1 KiB with the header).
    let len = prop_oneof![4 => 0usize..=9, 4 => 10usize..300, 1 => 1000usize..1100];
    prop_oneof![
        10 => (table.clone(), key.clone(), len.clone()).prop_map(|(table, key, len)| Op::Insert { table, key, len }),
        4 => (table.clone(), key.clone()).prop_map(|(table, key)| Op::Remove { table, key }),
        4 => (
            table.clone(),
            key.clone(),
            expect(),
            prop::option::of(len.clone()),
        )
            .prop_map(|(table, key, expect, new)| Op::CompareAndSwap { table, key, expect, new }),
        2 => prop::collection::vec((table.clone(), key.clone(), prop::option::of(len.clone())), 1..12).prop_map(Op::Batch),
        3 => (
            prop::collection::vec((table.clone(), key.clone(), expect()), 1..4),
            prop::collection::vec((table, key, prop::option::of(len)), 0..6),
        )
            .prop_map(|(conditions, writes)| Op::ConditionalBatch { conditions, writes }),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

fn options() -> Options {
    Options::new()
        .durability(Durability::Periodic(Duration::from_millis(5)))
        .checkpoint_interval(None)
        .log_lanes(2)
}

fn check_all(tables: &Tables, model: &[BTreeMap<Vec<u8>, Vec<u8>>; 4]) {
    for (t, map) in model.iter().enumerate() {
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(tables.contents(t), expected, "table {t}");
        assert_eq!(tables.len(t), map.len(), "len of table {t}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_a_model_across_checkpoints_and_reopens(ops in prop::collection::vec(op(), 1..120)) {
        let dir = TempDir::new("model");
        let mut db = Db::open(dir.path(), options()).unwrap();
        let mut tables = Tables::open(&db);
        let mut model: [BTreeMap<Vec<u8>, Vec<u8>>; 4] = Default::default();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert { table, key, len } => {
                    let v = value(step as u64, len);
                    let old = tables.insert(table, key, &v);
                    prop_assert_eq!(old, model[table].insert(model_key(table, key), v));
                }
                Op::Remove { table, key } => {
                    prop_assert_eq!(tables.remove(table, key), model[table].remove(&model_key(table, key)));
                }
                Op::CompareAndSwap { table, key, expect, new } => {
                    let model_key = model_key(table, key);
                    let current = model[table].get(&model_key).cloned();
                    let expected = expect.value(current.as_ref(), step as u64);
                    let new = new.map(|len| value(step as u64, len));
                    let got = tables.compare_and_swap(table, key, expected.as_deref(), new.as_deref());
                    if expected == current {
                        prop_assert_eq!(got, Ok(()));
                        match new {
                            Some(new) => model[table].insert(model_key, new),
                            None => model[table].remove(&model_key),
                        };
                    } else {
                        prop_assert_eq!(got, Err(CompareAndSwapError { current }));
                    }
                }
                Op::Batch(writes) => {
                    let mut batch = WriteBatch::new();
                    for (i, &(table, key, len)) in writes.iter().enumerate() {
                        let v = len.map(|len| value(step as u64 * 100 + i as u64, len));
                        tables.add_to_batch(&mut batch, table, key, v.as_deref());
                        match v {
                            Some(v) => model[table].insert(model_key(table, key), v),
                            None => model[table].remove(&model_key(table, key)),
                        };
                    }
                    db.write(batch).unwrap();
                }
                Op::ConditionalBatch { conditions, writes } => {
                    let mut batch = WriteBatch::new();
                    let mut conflict = None;
                    for (i, (table, key, expect)) in conditions.into_iter().enumerate() {
                        let current = model[table].get(&model_key(table, key)).cloned();
                        let expected = expect.value(current.as_ref(), step as u64 * 100 + i as u64);
                        tables.require_in_batch(&mut batch, table, key, expected.as_deref());
                        if conflict.is_none() && expected != current {
                            conflict = Some((i, current));
                        }
                    }
                    let mut written = model.clone();
                    for (i, &(table, key, len)) in writes.iter().enumerate() {
                        let v = len.map(|len| value(step as u64 * 100 + i as u64, len));
                        tables.add_to_batch(&mut batch, table, key, v.as_deref());
                        match v {
                            Some(v) => written[table].insert(model_key(table, key), v),
                            None => written[table].remove(&model_key(table, key)),
                        };
                    }
                    match (db.write(batch), conflict) {
                        (Ok(()), None) => model = written,
                        (Err(Error::Conflict { condition, current }), Some(want)) => {
                            prop_assert_eq!((condition, current), want);
                        }
                        (got, want) => prop_assert!(false, "{got:?}, expected conflict {want:?}"),
                    }
                }
                Op::Checkpoint => db.checkpoint().unwrap(),
                Op::Reopen => {
                    drop(tables);
                    drop(db);
                    db = Db::open(dir.path(), options()).unwrap();
                    tables = Tables::open(&db);
                    check_all(&tables, &model);
                }
            }
            for key in [0, 7, 77, 149] {
                for (t, map) in model.iter().enumerate() {
                    prop_assert_eq!(tables.get(t, key), map.get(&model_key(t, key)).cloned());
                }
            }
            // A batched read of more keys than one index pass takes (32), repeats included.
            let batch: Vec<u64> = (0..40).map(|i| (step as u64 * 37 + i * 11) % 150 % 30 * 5).collect();
            for (t, map) in model.iter().enumerate() {
                let want: Vec<Option<Vec<u8>>> =
                    batch.iter().map(|&k| map.get(&model_key(t, k)).cloned()).collect();
                prop_assert_eq!(tables.get_many(t, &batch), want, "get_many of table {}", t);
            }
        }
        check_all(&tables, &model);
        drop(tables);
        drop(db);
        let db = Db::open(dir.path(), options()).unwrap();
        check_all(&Tables::open(&db), &model);
    }

    #[test]
    fn ordered_ranges_match_the_model(
        keys in prop::collection::btree_set(0u64..2_000, 0..600),
        bounds in prop::collection::vec(
            (0u64..2_100, 0u64..2_100, 0u8..3, 0u8..3, any::<u64>()),
            1..20,
        ),
    ) {
        use std::ops::Bound::{self, Excluded, Included, Unbounded};
        let db = Db::open_in_memory().unwrap();
        let table = db.ordered_table::<u64>("t").unwrap();
        for &k in &keys {
            table.insert(&k, k.to_le_bytes()).unwrap();
        }
        let bound = |kind: u8, key: u64| -> Bound<u64> {
            match kind { 0 => Included(key), 1 => Excluded(key), _ => Unbounded }
        };
        prop_assert_eq!(table.first().map(|(k, _)| k), keys.first().copied());
        prop_assert_eq!(table.last(), keys.last().map(|&k| (k, k.to_le_bytes().to_vec())));
        for (a, b, ka, kb, pattern) in bounds {
            let range = (bound(ka, a), bound(kb, b));
            let got: Vec<u64> = table.range(range).map(|(k, _)| k).collect();
            let valid = match (range.0, range.1) {
                (Included(s) | Excluded(s), Included(e) | Excluded(e)) => s <= e,
                _ => true,
            };
            if valid && !(matches!(range, (Excluded(s), Excluded(e)) if s == e)) {
                let want: Vec<u64> = keys.range(range).copied().collect();
                prop_assert_eq!(got, want);
                // Both ends: from the back at each step whose bit is set in `pattern`.
                let mut both = table.range(range);
                let mut model = keys.range(range);
                for step in 0usize.. {
                    let (pair, expected) = if pattern >> (step % 64) & 1 == 1 {
                        (both.next_back(), model.next_back())
                    } else {
                        (both.next(), model.next())
                    };
                    let expected = expected.map(|&k| (k, k.to_le_bytes().to_vec()));
                    prop_assert_eq!(&pair, &expected, "step {} of pattern {:#x}", step, pattern);
                    if expected.is_none() {
                        prop_assert!(both.next().is_none() && both.next_back().is_none());
                        break;
                    }
                }
            } else {
                prop_assert!(got.is_empty(), "an empty or reversed range yields nothing");
                prop_assert!(table.range(range).next_back().is_none(), "also from the back");
            }
            let scanned: Vec<u64> = table.scan(&a, 5).into_iter().map(|(k, _)| k).collect();
            let want: Vec<u64> = keys.range(a..).take(5).copied().collect();
            prop_assert_eq!(&scanned, &want);
            let mut visited = Vec::new();
            let count = table.scan_with(&a, 5, |&k, v| visited.push((k, v.to_vec())));
            prop_assert_eq!(count, want.len());
            let want_pairs: Vec<(u64, Vec<u8>)> =
                want.iter().map(|&k| (k, k.to_le_bytes().to_vec())).collect();
            prop_assert_eq!(visited, want_pairs);
            let mut visited = Vec::new();
            let count = table.scan_rev_with(&a, 5, |&k, v| visited.push((k, v.to_vec())));
            let want: Vec<(u64, Vec<u8>)> = keys
                .range(..=a)
                .rev()
                .take(5)
                .map(|&k| (k, k.to_le_bytes().to_vec()))
                .collect();
            prop_assert_eq!(count, want.len());
            prop_assert_eq!(visited, want);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prefixes_match_the_model(
        keys in prop::collection::btree_set(prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xfe, 0xff]), 0..5), 0..200),
        prefixes in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xfe, 0xff]), 0..4), 1..10),
    ) {
        let db = Db::open_in_memory().unwrap();
        let table = db.ordered_table::<Vec<u8>>("t").unwrap();
        for key in &keys {
            table.insert(key, key).unwrap();
        }
        for prefix in prefixes {
            let want: Vec<Vec<u8>> = keys.iter().filter(|k| k.starts_with(&prefix)).cloned().collect();
            let got: Vec<Vec<u8>> = table.prefix(&prefix).map(|(k, _)| k).collect();
            prop_assert_eq!(&got, &want, "prefix {:?}", prefix);
            let backward: Vec<Vec<u8>> = table.prefix(&prefix).rev().map(|(k, _)| k).collect();
            prop_assert!(backward.iter().rev().eq(&want), "prefix {:?} backward", prefix);
        }
    }
}

#[test]
fn values_are_lent_in_place_inline_and_out_of_line() {
    let db = Db::open_in_memory().unwrap();
    let table = db.hash_table::<Vec<u8>>("t").unwrap();
    for len in [0usize, 7, 8, 150] {
        let v = value(len as u64, len);
        table.insert(b"k", &v).unwrap();
        assert_eq!(
            table.get_with(b"k", |lent| lent == v.as_slice()),
            Some(true)
        );
        assert_eq!(table.get_with(b"k", <[u8]>::len), Some(len));
    }
    assert_eq!(table.get_with(b"absent", <[u8]>::len), None);
}

#[test]
fn batched_reads_visit_every_key_in_order() {
    let db = Db::open_in_memory().unwrap();
    let ordered = db.ordered_table::<u64>("o").unwrap();
    let hash = db.hash_table::<u64>("h").unwrap();
    for k in (0..200u64).step_by(2) {
        ordered.insert(&k, value(k, (k % 20) as usize)).unwrap();
        hash.insert(&k, value(k, 150)).unwrap();
    }
    // More keys than one index pass reads, in no order, present and absent, repeated.
    let keys: Vec<u64> = (0..100u64).map(|i| (i * 73) % 210 % 70 * 3).collect();
    let mut seen = Vec::new();
    ordered.get_many_with(&keys, |i, v| seen.push((i, v.map(<[u8]>::to_vec))));
    let want: Vec<(usize, Option<Vec<u8>>)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            (
                i,
                (k % 2 == 0 && k < 200).then(|| value(k, (k % 20) as usize)),
            )
        })
        .collect();
    assert_eq!(seen, want, "ordered");
    let mut seen = Vec::new();
    hash.get_many_with(&keys, |i, v| seen.push((i, v.map(<[u8]>::to_vec))));
    let want: Vec<(usize, Option<Vec<u8>>)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (i, (k % 2 == 0 && k < 200).then(|| value(k, 150))))
        .collect();
    assert_eq!(seen, want, "hash");
    assert!(ordered.get_many::<u64>([]).is_empty());
}

#[test]
fn short_lived_processes_do_not_leave_an_ever_longer_log() {
    let dir = TempDir::new("short-lived");
    // Opens that never live a checkpoint interval: each starts a segment in both lanes.
    let options = || options().checkpoint_interval(Some(Duration::from_secs(3_600)));
    let files = || std::fs::read_dir(dir.path().join("wal")).unwrap().count();
    for round in 0..20u64 {
        let db = Db::open(dir.path(), options()).unwrap();
        let table = db.ordered_table::<u64>("t").unwrap();
        assert_eq!(table.len() as u64, round);
        table.insert(&round, b"v").unwrap();
        assert!(files() <= 4 * 2, "round {round}: {} log files", files());
    }
    // A log of more ops than the last checkpoint held, and at least 65,536, is checkpointed by
    // the open that replays it; a short one is not.
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let table = db.ordered_table::<u64>("t").unwrap();
        for key in 100..70_100u64 {
            table.insert(&key, b"w").unwrap();
        }
    }
    let db = Db::open(dir.path(), options()).unwrap();
    let stats = db.stats();
    let recovery = stats.recovery.unwrap();
    assert_eq!(recovery.ops_replayed, 70_000);
    assert!(recovery.segments < 4 * 2, "{} segments", recovery.segments);
    assert_eq!(stats.checkpoints, 1);
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.stats().checkpoints, 0);
    assert_eq!(db.ordered_table::<u64>("t").unwrap().len(), 70_020);
}
