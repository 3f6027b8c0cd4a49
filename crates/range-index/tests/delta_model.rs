//! Model-based property tests of XIndex's delta index (digest §2.5) against `BTreeMap`: random
//! sequences of inserts, lookups, updates and removals through the cells' locks, and iterations
//! forward and backward, with `u64` and byte-string keys, at the default fanout (16; the longer
//! sequences build 3 levels) and at the smallest one (4; many levels). Every step checks the
//! results, the `inserted` flags, `len`, and that a key's cell never changes address.
#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Bound;
use std::ptr;

use concurrency::RecordCell;
use proptest::prelude::*;
use range_index::xindex::{DeltaIndex, IndexKey};

#[derive(Debug, Clone)]
enum Op<K> {
    /// `get_or_insert(key, value)`.
    Insert(K, u64),
    /// `get(key)`.
    Get(K),
    /// Set the value of an existing key under its cell's lock (XIndex's in-buffer update).
    Update(K, u64),
    /// Mark an existing key removed under its cell's lock (XIndex's in-buffer remove).
    Remove(K),
    /// The first `n` entries from `key`.
    IterFrom(K, usize),
    /// The first `n` entries.
    Iter(usize),
    /// The last `n` entries at or below the key (`true`) or below it, descending.
    IterRevTo(K, bool, usize),
    /// The last `n` entries, descending.
    IterRev(usize),
}

/// What the model knows of one key.
#[derive(Debug, Clone, Copy)]
struct Slot {
    value: u64,
    removed: bool,
    cell: *const RecordCell,
}

fn query<K: IndexKey>(key: &K) -> &K::Query {
    key.borrow()
}

/// The cell matches the model's slot: same address, value and removed flag.
fn same_cell(cell: &RecordCell, slot: &Slot) -> bool {
    let (meta, value) = cell.read();
    ptr::eq(cell, slot.cell) && value == slot.value && meta.is_removed() == slot.removed
}

fn run<K: IndexKey, const FANOUT: usize>(ops: &[Op<K>]) -> Result<(), TestCaseError> {
    let index = DeltaIndex::<K, FANOUT>::new();
    let mut model: BTreeMap<K, Slot> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(key, value) => {
                let (cell, inserted) = index.get_or_insert(key.clone(), *value);
                match model.get::<K>(key) {
                    Some(slot) => {
                        prop_assert!(!inserted, "{key:?} inserted twice");
                        prop_assert!(same_cell(cell, slot), "{key:?}: {cell:?} vs {slot:?}");
                    }
                    None => {
                        prop_assert!(inserted, "{key:?} found before its insert");
                        prop_assert_eq!(cell.read().1, *value);
                        let slot = Slot {
                            value: *value,
                            removed: false,
                            cell: cell as *const RecordCell,
                        };
                        model.insert(key.clone(), slot);
                    }
                }
            }
            Op::Get(key) => match (index.get(query(key)), model.get::<K>(key)) {
                (Some(cell), Some(slot)) => {
                    prop_assert!(same_cell(cell, slot), "{key:?}: {cell:?} vs {slot:?}")
                }
                (None, None) => {}
                (found, expected) => {
                    prop_assert!(false, "get({key:?}) = {found:?}, expected {expected:?}")
                }
            },
            Op::Update(key, value) => {
                let cell = index.get(query(key));
                prop_assert_eq!(cell.is_some(), model.contains_key::<K>(key));
                if let (Some(cell), Some(slot)) = (cell, model.get_mut::<K>(key)) {
                    cell.lock().set_value(*value);
                    slot.value = *value;
                }
            }
            Op::Remove(key) => {
                let cell = index.get(query(key));
                prop_assert_eq!(cell.is_some(), model.contains_key::<K>(key));
                if let (Some(cell), Some(slot)) = (cell, model.get_mut::<K>(key)) {
                    cell.lock().set_removed(true);
                    slot.removed = true;
                }
            }
            Op::IterFrom(start, n) => {
                let got = index.iter_from(query(start)).take(*n);
                let want = model.range::<K, _>(start..).take(*n);
                check_iteration(got, want)?;
            }
            Op::Iter(n) => check_iteration(index.iter().take(*n), model.iter().take(*n))?,
            Op::IterRevTo(end, inclusive, n) => {
                let (end, model_end) = if *inclusive {
                    (Bound::Included(query(end)), Bound::Included(end))
                } else {
                    (Bound::Excluded(query(end)), Bound::Excluded(end))
                };
                let got = index.iter_rev(end).take(*n);
                let want = model.range::<K, _>((Bound::Unbounded, model_end));
                check_iteration(got, want.rev().take(*n))?;
            }
            Op::IterRev(n) => check_iteration(
                index.iter_rev(Bound::Unbounded).take(*n),
                model.iter().rev().take(*n),
            )?,
        }
        prop_assert_eq!(index.len(), model.len());
        prop_assert_eq!(index.is_empty(), model.is_empty());
    }
    check_iteration(index.iter(), model.iter())?;
    check_iteration(index.iter_rev(Bound::Unbounded), model.iter().rev())?;
    for (key, slot) in &model {
        let cell = index.get(query(key));
        prop_assert!(
            cell.is_some_and(|cell| same_cell(cell, slot)),
            "{key:?} moved"
        );
    }
    Ok(())
}

fn check_iteration<'a, K: IndexKey>(
    got: impl Iterator<Item = (&'a K, &'a RecordCell)>,
    want: impl Iterator<Item = (&'a K, &'a Slot)>,
) -> Result<(), TestCaseError> {
    let got: Vec<_> = got.collect();
    let want: Vec<_> = want.collect();
    prop_assert_eq!(got.len(), want.len(), "{:?} vs {:?}", got, want);
    for ((key, cell), (model_key, slot)) in got.iter().zip(&want) {
        prop_assert_eq!(key, model_key);
        prop_assert!(same_cell(cell, slot), "{key:?}: {cell:?} vs {slot:?}");
    }
    Ok(())
}

/// Dense small keys (many repeats), the extremes, and any `u64`.
fn u64_key() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![
        8 => 0..2_000_u64,
        1 => any::<u64>(),
        1 => Just(0),
        1 => Just(u64::MAX),
    ]
}

/// Strings over four bytes, the empty string included: many keys are prefixes of others, and
/// many share their first eight bytes (the nodes' summaries), so that summary ties go to the
/// keys.
fn byte_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    let bytes = |len| {
        prop::collection::vec(
            prop_oneof![Just(0_u8), Just(1), Just(b'a'), Just(0xff)],
            len,
        )
    };
    prop_oneof![
        bytes(0..6),
        bytes(0..5).prop_map(|tail| [b"aaaaaaa".as_slice(), &tail].concat()),
        bytes(0..12),
    ]
}

fn ops<S>(key: S, max_len: usize) -> impl Strategy<Value = Vec<Op<S::Value>>>
where
    S: Strategy + Clone,
    S::Value: Clone + Debug,
{
    let op = prop_oneof![
        8 => (key.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => key.clone().prop_map(Op::Get),
        1 => (key.clone(), any::<u64>()).prop_map(|(k, v)| Op::Update(k, v)),
        1 => key.clone().prop_map(Op::Remove),
        1 => (key.clone(), 0..40_usize).prop_map(|(k, n)| Op::IterFrom(k, n)),
        1 => (0..40_usize).prop_map(Op::Iter),
        1 => (key, any::<bool>(), 0..40_usize).prop_map(|(k, i, n)| Op::IterRevTo(k, i, n)),
        1 => (0..40_usize).prop_map(Op::IterRev),
    ];
    prop::collection::vec(op, 1..max_len)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn u64_keys_fanout_16(ops in ops(u64_key(), 1_500)) {
        run::<u64, 16>(&ops)?;
    }

    #[test]
    fn u64_keys_fanout_4(ops in ops(u64_key(), 600)) {
        run::<u64, 4>(&ops)?;
    }

    #[test]
    fn byte_keys_fanout_16(ops in ops(byte_key(), 1_500)) {
        run::<Vec<u8>, 16>(&ops)?;
    }

    #[test]
    fn byte_keys_fanout_4(ops in ops(byte_key(), 600)) {
        run::<Vec<u8>, 4>(&ops)?;
    }
}

#[test]
fn empty_key_and_prefixes_are_distinct_keys() {
    let index = DeltaIndex::<Vec<u8>, 4>::new();
    let keys: [&[u8]; 6] = [b"ab", b"", b"a", b"abc", b"a\0", b"b"];
    for (i, key) in keys.iter().enumerate() {
        assert!(index.get_or_insert(key.to_vec(), i as u64).1);
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(index.get(key).map(|cell| cell.read().1), Some(i as u64));
    }
    let order: Vec<&[u8]> = index.iter().map(|(key, _)| key.as_slice()).collect();
    assert_eq!(order, [b"".as_slice(), b"a", b"a\0", b"ab", b"abc", b"b"]);
    let from_a: Vec<&[u8]> = index.iter_from(b"a").map(|(k, _)| k.as_slice()).collect();
    assert_eq!(from_a, [b"a".as_slice(), b"a\0", b"ab", b"abc", b"b"]);
    assert!(index.iter_from(b"c").next().is_none());
    assert!(index.get(b"abcd").is_none());
}

#[test]
fn cells_keep_their_addresses_through_thousands_of_splits() {
    let index = DeltaIndex::<u64, 4>::new();
    let mut cells = Vec::new();
    // Interleave both ends so that splits happen all over the tree.
    for i in 0..3_000_u64 {
        let key = if i % 2 == 0 { i } else { u64::MAX - i };
        let (cell, inserted) = index.get_or_insert(key, i);
        assert!(inserted);
        cells.push((key, cell as *const RecordCell));
    }
    for (key, cell) in cells {
        assert!(
            index.get(&key).is_some_and(|c| ptr::eq(c, cell)),
            "{key} moved"
        );
    }
    assert_eq!(index.len(), 3_000);
    assert!(index.memory_bytes() > 3_000 * std::mem::size_of::<RecordCell>());
}
