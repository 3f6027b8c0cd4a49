//! `redb`: redb 4.5.0, one table `&[u8] -> &[u8]` in one file, a 4 GiB cache (redb's own
//! benchmark's; a cap, so the data set stays cached), commits at the default
//! `Durability::Immediate` (fsync before `commit` returns).
//!
//! - Bulk load: one write transaction, committed.
//! - Durable write: one write transaction per pair.
//! - Batch: one write transaction per batch.
//! - Reads: one read transaction and table per thread; `get` and `range(start..)` give guards
//!   into the cached pages, read in place (no copy).
//! - Removal: one write transaction.

use std::path::Path;

use redb::{Database, ReadOnlyTable, ReadableDatabase, TableDefinition};

use super::{Doing, KvReader, KvStore, Notes, Pair, StoreResult, fold};

/// The table.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("engine");

/// The page cache's cap.
const CACHE_BYTES: usize = 4 << 30;

/// redb in a directory.
pub struct Redb {
    db: Database,
}

impl Redb {
    /// Creates the database file in `dir`.
    pub fn open(dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(dir.join("redb"))
            .doing("creating redb")?;
        Ok(Box::new(Self { db }))
    }

    /// Applies `write` to the table in one write transaction and commits it.
    fn transaction(
        &self,
        write: impl FnOnce(&mut redb::Table<'_, &[u8], &[u8]>) -> Result<(), redb::Error>,
    ) -> StoreResult<()> {
        let txn = self.db.begin_write().doing("beginning a write")?;
        {
            let mut table = txn.open_table(TABLE).doing("opening the table")?;
            write(&mut table).doing("writing")?;
        }
        txn.commit().doing("committing")
    }
}

/// Inserts every pair into `table`.
fn insert_all(
    table: &mut redb::Table<'_, &[u8], &[u8]>,
    pairs: &[Pair<'_>],
) -> Result<(), redb::Error> {
    for (key, value) in pairs {
        table.insert(*key, *value)?;
    }
    Ok(())
}

impl KvStore for Redb {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.transaction(|table| insert_all(table, pairs))
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.transaction(|table| insert_all(table, &[(key, value)]))
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.transaction(|table| insert_all(table, pairs))
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        let txn = self.db.begin_read().doing("beginning a read")?;
        let table = txn.open_table(TABLE).doing("opening the table")?;
        Ok(Box::new(Reader { table }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        self.transaction(|table| {
            for key in keys {
                table.remove(*key)?;
            }
            Ok(())
        })
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "4 GiB cache; Durability::Immediate; one write transaction per load, write, \
             batch and removal"
                .into(),
        )]
    }
}

/// A read transaction's table.
struct Reader {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
}

impl KvReader for Reader {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        let value = self.table.get(key).doing("reading")?;
        Ok(value.is_some_and(|value| value.value() == expected))
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize> {
        let mut read = 0;
        type Guards<'a> = (
            redb::AccessGuard<'a, &'static [u8]>,
            redb::AccessGuard<'a, &'static [u8]>,
        );
        let mut visit = |pair: Result<Guards<'_>, redb::StorageError>| -> StoreResult<()> {
            let (key, value) = pair.doing("reading a pair")?;
            fold(checksum, key.value(), value.value());
            read += 1;
            Ok(())
        };
        if descending {
            let pairs = self.table.range(..=start).doing("ranging")?;
            pairs.rev().take(n).try_for_each(&mut visit)?;
        } else {
            let pairs = self.table.range(start..).doing("ranging")?;
            pairs.take(n).try_for_each(&mut visit)?;
        }
        Ok(read)
    }
}
