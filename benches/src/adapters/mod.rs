//! Adapters that let the workload runner drive the peers — the crates a user would pick instead of
//! learnkv (`../shared/peers.md`) — through [`workload::IndexAdapter`], one module per peer.
//!
//! Each adapter uses its peer's fastest sane path for every operation (what a careful user would
//! write), and its module comment says where the peer's API forces extra work. Values are one
//! `u64`, as in every learnkv index. Scans visit up to `n` pairs in key order and read each
//! value (folded into [`std::hint::black_box`]), so every scan pays for the data it returns; hash
//! maps cannot scan and return 0 (their experiments never scan).
//!
//! Ordered maps: [`scc_tree`], [`congee`], [`skiplist`], [`concurrent_map`], [`scry`],
//! [`btree_rwlock`]. Hash maps: [`dashmap`], [`scc_hash`], [`papaya`], [`hashmap_rwlock`].
//! learnkv's own indexes: [`xindex`] (XIndex-R), [`xindex_h`] (XIndex-H), [`xindex_wal`]
//! (XIndex-R behind the write-ahead log). The byte-string
//! peers ([`scc_tree`], [`btree_rwlock`]) and ours implement the adapter for `&[u8]` keys too.

pub mod btree_rwlock;
pub mod concurrent_map;
pub mod congee;
pub mod dashmap;
pub mod hashmap_rwlock;
pub mod papaya;
pub mod scc_hash;
pub mod scc_tree;
pub mod scry;
pub mod skiplist;
pub mod xindex;
pub mod xindex_h;
pub mod xindex_wal;

use std::borrow::Borrow;
use std::hint::black_box;

/// Counts the values of a scan and folds them into `black_box`, so the scan reads every value
/// it visits.
pub(crate) fn visit(values: impl Iterator<Item = u64>) -> usize {
    let (count, sum) = values.fold((0, 0u64), |(count, sum), value| {
        (count + 1, sum.wrapping_add(value))
    });
    black_box(sum);
    count
}

/// A key type stored by maps that own their keys: `u64`, or `Vec<u8>` for byte-string runs,
/// looked up by its borrowed form (`u64`, `[u8]`).
pub trait StoredKey: Ord + Clone + Send + Sync + Borrow<Self::Query> + 'static {
    /// The borrowed form the runner's keys take.
    type Query: Ord + ?Sized;

    /// An owned copy of a key, to insert.
    fn store(query: &Self::Query) -> Self;
}

impl StoredKey for u64 {
    type Query = u64;

    fn store(query: &u64) -> u64 {
        *query
    }
}

impl StoredKey for Vec<u8> {
    type Query = [u8];

    fn store(query: &[u8]) -> Vec<u8> {
        query.to_vec()
    }
}

/// An ordered map written once for both key types ([`StoredKey`]); the crate's
/// `owned_key_adapter!` macro turns it into the runner's adapters for `u64` and `&[u8]` keys.
/// The methods mirror [`workload::IndexAdapter`]'s.
pub trait OwnedKeyMap<K: StoredKey>: Send + Sync {
    /// The name in reports.
    const NAME: &'static str;
    /// Loads sorted, unique pairs into the empty map.
    fn load<'q>(&self, pairs: impl Iterator<Item = (&'q K::Query, u64)>)
    where
        K::Query: 'q;
    /// The key's value.
    fn lookup(&self, key: &K::Query) -> Option<u64>;
    /// Inserts or overwrites; returns the previous value.
    fn upsert(&self, key: &K::Query, value: u64) -> Option<u64>;
    /// Overwrites a present key's value; returns whether it was present.
    fn overwrite(&self, key: &K::Query, value: u64) -> bool;
    /// Removes a key; returns its value.
    fn delete(&self, key: &K::Query) -> Option<u64>;
    /// Visits up to `n` pairs from the first key at or after `start`; returns how many.
    fn range_visit(&self, start: &K::Query, n: usize) -> usize;
    /// Writes `old ^ value` over a present key's value; returns whether it was present.
    fn xor_value(&self, key: &K::Query, value: u64) -> bool;
    /// The map's own report notes ([`workload::IndexAdapter::notes`]); none by default.
    fn map_notes(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Implements [`workload::IndexAdapter`] for `$map<u64>` (keys `u64`) and `$map<Vec<u8>>` (keys
/// `&[u8]`) by forwarding to their [`OwnedKeyMap`] implementations.
macro_rules! owned_key_adapter {
    ($map:ident) => {
        impl workload::IndexAdapter<u64> for $map<u64> {
            fn name(&self) -> &str {
                <Self as $crate::adapters::OwnedKeyMap<u64>>::NAME
            }
            fn bulk_load(&self, pairs: &[(u64, u64)]) {
                $crate::adapters::OwnedKeyMap::<u64>::load(
                    self,
                    pairs.iter().map(|(key, value)| (key, *value)),
                )
            }
            fn get(&self, key: u64) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<u64>::lookup(self, &key)
            }
            fn insert(&self, key: u64, value: u64) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<u64>::upsert(self, &key, value)
            }
            fn update(&self, key: u64, value: u64) -> bool {
                $crate::adapters::OwnedKeyMap::<u64>::overwrite(self, &key, value)
            }
            fn remove(&self, key: u64) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<u64>::delete(self, &key)
            }
            fn scan(&self, start: u64, n: usize) -> usize {
                $crate::adapters::OwnedKeyMap::<u64>::range_visit(self, &start, n)
            }
            fn read_modify_write(&self, key: u64, value: u64) -> bool {
                $crate::adapters::OwnedKeyMap::<u64>::xor_value(self, &key, value)
            }
            fn notes(&self) -> Vec<(String, String)> {
                $crate::adapters::OwnedKeyMap::<u64>::map_notes(self)
            }
        }

        impl<'k> workload::IndexAdapter<&'k [u8]> for $map<Vec<u8>> {
            fn name(&self) -> &str {
                <Self as $crate::adapters::OwnedKeyMap<Vec<u8>>>::NAME
            }
            fn bulk_load(&self, pairs: &[(&'k [u8], u64)]) {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::load(
                    self,
                    pairs.iter().map(|(key, value)| (*key, *value)),
                )
            }
            fn get(&self, key: &'k [u8]) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::lookup(self, key)
            }
            fn insert(&self, key: &'k [u8], value: u64) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::upsert(self, key, value)
            }
            fn update(&self, key: &'k [u8], value: u64) -> bool {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::overwrite(self, key, value)
            }
            fn remove(&self, key: &'k [u8]) -> Option<u64> {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::delete(self, key)
            }
            fn scan(&self, start: &'k [u8], n: usize) -> usize {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::range_visit(self, start, n)
            }
            fn read_modify_write(&self, key: &'k [u8], value: u64) -> bool {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::xor_value(self, key, value)
            }
            fn notes(&self) -> Vec<(String, String)> {
                $crate::adapters::OwnedKeyMap::<Vec<u8>>::map_notes(self)
            }
        }
    };
}

pub(crate) use owned_key_adapter;
