//! `xindex`: learnkv's XIndex-R (`range_index::XIndex`) with the paper's default configuration
//! and one background thread, for `u64` and byte-string keys.
//!
//! XIndex builds its groups and root from the sorted pairs, so the bulk load constructs the
//! index; an adapter that is never bulk-loaded (growth from empty) starts from an empty index.
//! `update` and `read_modify_write` are one `XIndex::update` each (the key's record changed in
//! place under its lock, as congee's `compute_if_present`).

use std::sync::OnceLock;

use learned_model::Key;
use range_index::OrderedIndex;
use range_index::xindex::{Config, IndexKey, XIndex};

use super::{OwnedKeyMap, StoredKey, owned_key_adapter, visit};

/// A key type that XIndex and the adapters' key storage both take, with one query type.
pub trait XIndexKey: IndexKey + StoredKey<Query = <Self as Key>::Query> {}

impl<K: IndexKey + StoredKey<Query = <K as Key>::Query>> XIndexKey for K {}

/// The query form of a key.
type Query<K> = <K as StoredKey>::Query;

/// XIndex-R as an adapter.
pub struct XIndexAdapter<K: XIndexKey> {
    index: OnceLock<XIndex<K>>,
}

impl<K: XIndexKey> XIndexAdapter<K> {
    /// An adapter whose index is built by the bulk load (or empty at first use).
    pub fn new() -> Self {
        Self {
            index: OnceLock::new(),
        }
    }

    fn index(&self) -> &XIndex<K> {
        self.index.get_or_init(|| {
            XIndex::new(Config::default()).expect("the default configuration is valid")
        })
    }
}

impl<K: XIndexKey> Default for XIndexAdapter<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: XIndexKey> OwnedKeyMap<K> for XIndexAdapter<K> {
    const NAME: &'static str = "xindex";

    fn load<'q>(&self, pairs: impl Iterator<Item = (&'q Query<K>, u64)>)
    where
        Query<K>: 'q,
    {
        let pairs: Vec<(K, u64)> = pairs.map(|(key, value)| (K::store(key), value)).collect();
        if self.index.get().is_none() {
            let built = XIndex::bulk_load(&pairs, Config::default())
                .expect("the harness loads sorted unique keys with the default configuration");
            if self.index.set(built).is_ok() {
                return;
            }
        }
        for (key, value) in pairs {
            self.index().insert(key, value);
        }
    }

    fn lookup(&self, key: &Query<K>) -> Option<u64> {
        self.index().get(key)
    }

    fn upsert(&self, key: &Query<K>, value: u64) -> Option<u64> {
        self.index().insert(K::store(key), value)
    }

    fn overwrite(&self, key: &Query<K>, value: u64) -> bool {
        self.index().update(key, |_| value).is_some()
    }

    fn delete(&self, key: &Query<K>) -> Option<u64> {
        self.index().remove(key)
    }

    fn range_visit(&self, start: &Query<K>, n: usize) -> usize {
        visit(
            self.index()
                .scan(start, n)
                .into_iter()
                .map(|(_, value)| value),
        )
    }

    fn xor_value(&self, key: &Query<K>, value: u64) -> bool {
        self.index().update(key, |old| old ^ value).is_some()
    }
}

owned_key_adapter!(XIndexAdapter);
