//! `scc-tree`: `scc::TreeIndex` 3.8.8, a B+tree with lock-free reads (`peek`) whose leaves are
//! reclaimed by scc's own epoch scheme (`sdd`) — peers.md's first-ranked ordered peer, for `u64`
//! and byte-string keys.
//!
//! API costs: values cannot change in place (interior mutability may be lost when a leaf splits,
//! the crate warns), so an update is a `peek` then an `upsert_sync`, two descents; an insert of an
//! absent key is one `insert_sync`, and only an overwrite peeks for the old value first. A remove
//! captures the old value in `remove_if_sync`'s condition (one descent). There is no bulk load:
//! the sorted pairs are inserted one by one (sequential inserts are TreeIndex's fast path).

use std::borrow::Borrow;
use std::ops::Bound;

use scc::{Guard, TreeIndex};

use super::{OwnedKeyMap, StoredKey, owned_key_adapter, visit};

/// `scc::TreeIndex<K, u64>` as an adapter.
pub struct SccTree<K: StoredKey> {
    tree: TreeIndex<K, u64>,
}

impl<K: StoredKey> SccTree<K> {
    /// An empty tree.
    pub fn new() -> Self {
        Self {
            tree: TreeIndex::new(),
        }
    }
}

impl<K: StoredKey> Default for SccTree<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: StoredKey> OwnedKeyMap<K> for SccTree<K> {
    const NAME: &'static str = "scc-tree";

    fn load<'q>(&self, pairs: impl Iterator<Item = (&'q K::Query, u64)>)
    where
        K::Query: 'q,
    {
        for (key, value) in pairs {
            self.upsert(key, value);
        }
    }

    fn lookup(&self, key: &K::Query) -> Option<u64> {
        self.tree.peek(key, &Guard::new()).copied()
    }

    fn upsert(&self, key: &K::Query, value: u64) -> Option<u64> {
        match self.tree.insert_sync(K::store(key), value) {
            Ok(()) => None,
            Err((key, value)) => {
                let old = self.lookup(Borrow::<K::Query>::borrow(&key));
                self.tree.upsert_sync(key, value);
                old
            }
        }
    }

    fn overwrite(&self, key: &K::Query, value: u64) -> bool {
        let present = self.lookup(key).is_some();
        if present {
            self.tree.upsert_sync(K::store(key), value);
        }
        present
    }

    fn delete(&self, key: &K::Query) -> Option<u64> {
        let mut old = None;
        self.tree.remove_if_sync(key, |value| {
            old = Some(*value);
            true
        });
        old
    }

    fn range_visit(&self, start: &K::Query, n: usize) -> usize {
        let guard = Guard::new();
        let range = self
            .tree
            .range::<K::Query, _>((Bound::Included(start), Bound::Unbounded), &guard);
        visit(range.take(n).map(|(_, value)| *value))
    }

    fn xor_value(&self, key: &K::Query, value: u64) -> bool {
        match self.lookup(key) {
            Some(old) => {
                self.tree.upsert_sync(K::store(key), old ^ value);
                true
            }
            None => false,
        }
    }
}

owned_key_adapter!(SccTree);
