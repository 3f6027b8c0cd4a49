//! `sled`: sled 0.34.7, the default tree, a 4 GiB cache (redb's benchmark's cache size; sled's
//! default is 1 GiB), default background flushing every 500 ms; `flush()` makes every earlier
//! write durable.
//!
//! - Bulk load: one `apply_batch` (atomic), then `flush()`.
//! - Durable write: `insert`, then `flush()`.
//! - Batch: `apply_batch`, then `flush()`.
//! - Reads: `get` returns the value as an `IVec` (inline or reference-counted); `range(start..)`
//!   yields `(IVec, IVec)` pairs.
//! - Removal: one `apply_batch` of removes, then `flush()`.

use std::path::Path;

use sled::{Batch, Db};

use super::{Doing, KvReader, KvStore, Notes, Pair, StoreResult, fold};

/// The cache's capacity.
const CACHE_BYTES: u64 = 4 << 30;

/// sled in a directory.
pub struct Sled {
    db: Db,
}

impl Sled {
    /// Creates the database in `dir`.
    pub fn open(dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_BYTES)
            .open()
            .doing("opening sled")?;
        Ok(Box::new(Self { db }))
    }

    /// Applies `batch` atomically and flushes.
    fn apply_durable(&self, batch: Batch) -> StoreResult<()> {
        self.db.apply_batch(batch).doing("applying a batch")?;
        self.db.flush().doing("flushing").map(drop)
    }

    /// Inserts `pairs` in one batch and flushes.
    fn insert_all(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        let mut batch = Batch::default();
        for (key, value) in pairs {
            batch.insert(*key, *value);
        }
        self.apply_durable(batch)
    }
}

impl KvStore for Sled {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.insert_all(pairs)
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.db.insert(key, value).doing("inserting")?;
        self.db.flush().doing("flushing").map(drop)
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.insert_all(pairs)
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        Ok(Box::new(Reader { db: &self.db }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        let mut batch = Batch::default();
        for key in keys {
            batch.remove(*key);
        }
        self.apply_durable(batch)
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "4 GiB cache; default flush_every_ms (500); apply_batch or insert, then flush()".into(),
        )]
    }
}

/// Reads through the tree (each read sees the latest state).
struct Reader<'a> {
    db: &'a Db,
}

impl KvReader for Reader<'_> {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        let value = self.db.get(key).doing("reading")?;
        Ok(value.is_some_and(|value| *value == *expected))
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize> {
        let mut read = 0;
        let mut visit = |pair: sled::Result<(sled::IVec, sled::IVec)>| -> StoreResult<()> {
            let (key, value) = pair.doing("reading a pair")?;
            fold(checksum, &key, &value);
            read += 1;
            Ok(())
        };
        if descending {
            self.db
                .range(..=start)
                .rev()
                .take(n)
                .try_for_each(&mut visit)?;
        } else {
            self.db.range(start..).take(n).try_for_each(&mut visit)?;
        }
        Ok(read)
    }
}
