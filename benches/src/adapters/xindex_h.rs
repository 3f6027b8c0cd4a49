//! `xindex-h`: learnkv's XIndex-H (`hash_index::XIndexH`) with the paper's load factors and
//! one background resize thread, for `u64` and byte-string keys.
//!
//! XIndex-H trains its root and bucket models on the loaded keys, so the bulk load builds the
//! index; an adapter that is never bulk-loaded (growth from empty) starts from an empty index
//! whose groups grow by non-blocking resizes. `update` and `read_modify_write` are one
//! `XIndexH::update` each (the key's record changed in place under its lock). The notes carry
//! the index's own figures: the conflict rate now and at training (`conflict_pct`,
//! `trained_conflict_pct`), groups placed by the learned model and by the hash, the load
//! factor, resizes, and the index's own count of heap bytes per key.

use std::sync::OnceLock;

use hash_index::{Config, HashIndex, HashKey, XIndexH};
use learned_model::Key;

use super::{OwnedKeyMap, StoredKey, owned_key_adapter};

/// A key type that XIndex-H and the adapters' key storage both take, with one query type.
pub trait XIndexHKey: HashKey + StoredKey<Query = <Self as Key>::Query> {}

impl<K: HashKey + StoredKey<Query = <K as Key>::Query>> XIndexHKey for K {}

/// The query form of a key.
type Query<K> = <K as StoredKey>::Query;

/// XIndex-H as an adapter.
pub struct XIndexHAdapter<K: XIndexHKey> {
    index: OnceLock<XIndexH<K>>,
}

impl<K: XIndexHKey> XIndexHAdapter<K> {
    /// An adapter whose index is built by the bulk load (or empty at first use).
    pub fn new() -> Self {
        Self {
            index: OnceLock::new(),
        }
    }

    fn index(&self) -> &XIndexH<K> {
        self.index.get_or_init(|| {
            XIndexH::new(Config::default()).expect("the default configuration is valid")
        })
    }
}

impl<K: XIndexHKey> Default for XIndexHAdapter<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: XIndexHKey> OwnedKeyMap<K> for XIndexHAdapter<K> {
    const NAME: &'static str = "xindex-h";

    fn load<'q>(&self, pairs: impl Iterator<Item = (&'q Query<K>, u64)>)
    where
        Query<K>: 'q,
    {
        let pairs: Vec<(K, u64)> = pairs.map(|(key, value)| (K::store(key), value)).collect();
        if self.index.get().is_none() {
            let built = XIndexH::bulk_load(&pairs, Config::default())
                .expect("the harness loads unique keys with the default configuration");
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

    fn range_visit(&self, _start: &Query<K>, _n: usize) -> usize {
        0
    }

    fn xor_value(&self, key: &Query<K>, value: u64) -> bool {
        self.index().update(key, |old| old ^ value).is_some()
    }

    fn map_notes(&self) -> Vec<(String, String)> {
        let stats = self.index().stats();
        let per_key = stats.bytes as f64 / stats.keys.max(1) as f64;
        vec![
            (
                "conflict_pct".into(),
                format!("{:.2}", stats.conflict_rate * 100.0),
            ),
            (
                "trained_conflict_pct".into(),
                format!("{:.2}", stats.trained_conflict_rate * 100.0),
            ),
            ("learned_groups".into(), stats.learned_groups.to_string()),
            ("hashed_groups".into(), stats.hashed_groups.to_string()),
            ("load_factor".into(), format!("{:.2}", stats.load_factor)),
            ("grows".into(), stats.grows.to_string()),
            ("shrinks".into(), stats.shrinks.to_string()),
            ("index_bytes_per_key".into(), format!("{per_key:.1}")),
        ]
    }
}

owned_key_adapter!(XIndexHAdapter);
