//! `oracle`: the limit the experiment's loops can reach, not a peer. The pairs live in process
//! memory only (nothing is written to disk, nothing is durable): a `std` `HashMap` answers gets
//! (one hash and one probe, the cheapest lookup by key a store can make) and a `BTreeMap` range
//! reads. The experiment reports every store against it and leaves it out of issue 8's targets.
//!
//! - Bulk load, writes, batches, removal: both maps under one write lock.
//! - Reads: one read lock per thread, held like a read transaction; values read in place.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::Path;

use parking_lot::{RwLock, RwLockReadGuard};

use super::{KvReader, KvStore, Notes, Pair, StoreResult, fold};

/// Both maps, always holding the same pairs.
#[derive(Default)]
struct Maps {
    hashed: HashMap<Vec<u8>, Vec<u8>>,
    ordered: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Maps {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.hashed.insert(key.to_vec(), value.to_vec());
        self.ordered.insert(key.to_vec(), value.to_vec());
    }
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
        self.maps.write().put(key, value);
        Ok(())
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        let mut maps = self.maps.write();
        for (key, value) in pairs {
            maps.put(key, value);
        }
        Ok(())
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        Ok(Box::new(Reader {
            maps: self.maps.read(),
        }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        let mut maps = self.maps.write();
        for key in keys {
            maps.hashed.remove(*key);
            maps.ordered.remove(*key);
        }
        Ok(())
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "in memory, not durable: std HashMap for gets, BTreeMap for ranges; the loops' \
             limit, not a peer"
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
        Ok(self.maps.hashed.get(key).map(Vec::as_slice) == Some(expected))
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
