//! `heed`: LMDB through heed 0.22.1, one unnamed database of raw bytes (`Bytes`, `Bytes`), a
//! 4 GiB map, default environment flags (each commit fsyncs before it returns).
//!
//! - Bulk load: one write transaction, committed.
//! - Durable write: one write transaction per pair.
//! - Batch: one write transaction per batch.
//! - Reads: one read transaction per thread; `get` and `range` return slices of the memory
//!   map, read in place (no copy).
//! - Removal: one write transaction.

use std::ops::Bound;
use std::path::Path;

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions, RoTxn, RwTxn, WithTls};

use super::{Doing, KvReader, KvStore, Notes, Pair, StoreResult, fold};

/// The memory map's size (LMDB's file grows into it; the map only reserves address space).
const MAP_BYTES: usize = 4 << 30;

/// LMDB in a directory.
pub struct Heed {
    env: Env<WithTls>,
    db: Database<Bytes, Bytes>,
}

impl Heed {
    /// Creates the environment in `dir`.
    pub fn open(dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        // SAFETY: the directory is fresh and private to this run; nothing else opens or
        // truncates its files while the environment is open (heed's requirement for `open`).
        let env = unsafe { EnvOpenOptions::new().map_size(MAP_BYTES).open(dir) }
            .doing("opening the LMDB environment")?;
        let mut txn = env.write_txn().doing("beginning a write")?;
        let db = env
            .create_database(&mut txn, None)
            .doing("creating the database")?;
        txn.commit().doing("committing")?;
        Ok(Box::new(Self { env, db }))
    }

    /// Applies `write` in one write transaction and commits it.
    fn transaction(
        &self,
        write: impl FnOnce(&mut RwTxn<'_>) -> heed::Result<()>,
    ) -> StoreResult<()> {
        let mut txn = self.env.write_txn().doing("beginning a write")?;
        write(&mut txn).doing("writing")?;
        txn.commit().doing("committing")
    }

    /// Puts every pair in `txn`.
    fn put_all(&self, txn: &mut RwTxn<'_>, pairs: &[Pair<'_>]) -> heed::Result<()> {
        for (key, value) in pairs {
            self.db.put(txn, key, value)?;
        }
        Ok(())
    }
}

impl KvStore for Heed {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.transaction(|txn| self.put_all(txn, pairs))
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.transaction(|txn| self.put_all(txn, &[(key, value)]))
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.transaction(|txn| self.put_all(txn, pairs))
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        let txn = self.env.read_txn().doing("beginning a read")?;
        Ok(Box::new(Reader { txn, db: self.db }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        self.transaction(|txn| {
            for key in keys {
                self.db.delete(txn, key)?;
            }
            Ok(())
        })
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "4 GiB map; default flags (fsync per commit); one write transaction per load, \
             write, batch and removal"
                .into(),
        )]
    }
}

/// A read transaction.
struct Reader<'e> {
    txn: RoTxn<'e, WithTls>,
    db: Database<Bytes, Bytes>,
}

impl KvReader for Reader<'_> {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        let value = self.db.get(&self.txn, key).doing("reading")?;
        Ok(value == Some(expected))
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize> {
        let mut read = 0;
        let mut visit = |pair: heed::Result<(&[u8], &[u8])>| -> StoreResult<()> {
            let (key, value) = pair.doing("reading a pair")?;
            fold(checksum, key, value);
            read += 1;
            Ok(())
        };
        if descending {
            let bounds = (Bound::Unbounded, Bound::Included(start));
            let pairs = self.db.rev_range(&self.txn, &bounds).doing("ranging")?;
            pairs.take(n).try_for_each(&mut visit)?;
        } else {
            let bounds = (Bound::Included(start), Bound::Unbounded);
            let pairs = self.db.range(&self.txn, &bounds).doing("ranging")?;
            pairs.take(n).try_for_each(&mut visit)?;
        }
        Ok(read)
    }
}
