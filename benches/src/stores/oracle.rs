//! `oracle`: the limit the experiment's loops can reach, not a peer. The pairs live in process
//! memory only (nothing is written to disk, nothing is durable): a `std` `HashMap` answers gets
//! and a `BTreeMap` range reads. The experiment reports every store against it and leaves it out
//! of issue 8's targets. The hash map holds the keys inline (the experiment's keys are all
//! [`KEY_LEN`] bytes) and hashes them with `rustc-hash`'s `FxBuildHasher`, so a get is one fast
//! hash, one probe whose bucket holds the key, and the value's line: the cheapest lookup by key a
//! store can make, where a `Vec` key and SipHash would add a miss and ~20 ns.
//!
//! - Bulk load, writes, batches, removal: both maps under one write lock.
//! - Reads: one read lock per thread, held like a read transaction; values read in place.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::Path;

use parking_lot::{RwLock, RwLockReadGuard};
use rustc_hash::FxBuildHasher;

use super::{KvReader, KvStore, Notes, Pair, StoreResult, fold};
use crate::experiments::engine::KEY_LEN;

/// Both maps, always holding the same pairs.
#[derive(Default)]
struct Maps {
    hashed: HashMap<[u8; KEY_LEN], Vec<u8>, FxBuildHasher>,
    ordered: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Maps {
    fn put(&mut self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.hashed.insert(inline(key)?, value.to_vec());
        self.ordered.insert(key.to_vec(), value.to_vec());
        Ok(())
    }
}

/// `key` as the hash map holds it.
fn inline(key: &[u8]) -> StoreResult<[u8; KEY_LEN]> {
    key.try_into()
        .map_err(|_| format!("the oracle takes {KEY_LEN}-byte keys, not {}", key.len()))
}

/// The in-memory limit.
#[derive(Default)]
pub struct Oracle {
    maps: RwLock<Maps>,
}

impl Oracle {
    /// An empty oracle; it keeps nothing in `_dir`.
    pub fn open(_dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        Ok(Box::new(Self::default()))
    }
}

impl KvStore for Oracle {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.put_batch_durable(pairs)
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.maps.write().put(key, value)
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        let mut maps = self.maps.write();
        pairs
            .iter()
            .try_for_each(|(key, value)| maps.put(key, value))
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        Ok(Box::new(Reader {
            maps: self.maps.read(),
        }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        let mut maps = self.maps.write();
        for key in keys {
            maps.hashed.remove(&inline(key)?);
            maps.ordered.remove(*key);
        }
        Ok(())
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "in memory, not durable: std HashMap (inline keys, FxBuildHasher) for gets, \
             BTreeMap for ranges; the loops' limit, not a peer"
                .into(),
        )]
    }
}

/// A thread's reads under a read lock.
struct Reader<'a> {
    maps: RwLockReadGuard<'a, Maps>,
}

impl KvReader for Reader<'_> {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        Ok(self.maps.hashed.get(&inline(key)?).map(Vec::as_slice) == Some(expected))
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize> {
        let mut read = 0;
        let mut visit = |(key, value): (&Vec<u8>, &Vec<u8>)| {
            fold(checksum, key, value);
            read += 1;
        };
        if descending {
            let bounds = (Bound::Unbounded, Bound::Included(start));
            let pairs = self.maps.ordered.range::<[u8], _>(bounds);
            pairs.rev().take(n).for_each(&mut visit);
        } else {
            let bounds = (Bound::Included(start), Bound::Unbounded);
            let pairs = self.maps.ordered.range::<[u8], _>(bounds);
            pairs.take(n).for_each(&mut visit);
        }
        Ok(read)
    }
}
