//! `fjall`: fjall 3.1.13 (an LSM tree), one keyspace with default options, a 4 GiB block cache
//! (redb's benchmark's cache size; the data set stays cached). Writes go to the journal and the
//! memtable; `persist(PersistMode::SyncData)` makes the journal durable with `fdatasync`, as
//! learnkv's log, redb and LMDB do (`SyncAll`, an `fsync`, would also write metadata no recovery
//! needs, and cost fjall alone).
//!
//! - Bulk load: one write batch, committed with `SyncData` durability. Untimed afterwards, as
//!   learnkv's checkpoint after its load ([`KvStore::after_load`]): a wait until the memtables the
//!   load filled are flushed and level 0 stops changing (its compactions done), so that they do
//!   not run during the later workloads; the notes give the wait.
//! - Durable write: `insert`, then `persist(SyncData)`.
//! - Batch: one write batch per batch, committed with `SyncData` durability.
//! - Reads: `get` returns the value as a reference-counted `Slice`; `range(start..)` yields
//!   guards whose pairs are read with `into_inner`.
//! - Removal: one write batch of removes, committed with `SyncData` durability.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, PersistMode};

use super::{Doing, KvReader, KvStore, Notes, Pair, StoreResult, fold};

/// The block cache's capacity.
const CACHE_BYTES: u64 = 4 << 30;

/// How often the settling wait after the load looks at the tree.
const SETTLE_POLL: Duration = Duration::from_millis(100);
/// How many polls in a row must find the tree unchanged to end the wait.
const SETTLED_POLLS: usize = 10;
/// The longest settling wait.
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

/// fjall in a directory.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
}

impl Fjall {
    /// Creates the database in `dir`.
    pub fn open(dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        let db = Database::builder(dir)
            .cache_size(CACHE_BYTES)
            .open()
            .doing("opening fjall")?;
        let keyspace = db
            .keyspace("engine", KeyspaceCreateOptions::default)
            .doing("opening the keyspace")?;
        Ok(Box::new(Self { db, keyspace }))
    }

    /// A batch that syncs the journal when it commits.
    fn durable_batch(&self) -> OwnedWriteBatch {
        self.db.batch().durability(Some(PersistMode::SyncData))
    }

    /// Inserts `pairs` in one durable batch.
    fn insert_all(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        let mut batch = self.durable_batch();
        for (key, value) in pairs {
            batch.insert(&self.keyspace, *key, *value);
        }
        batch.commit().doing("committing a batch")
    }
}

impl KvStore for Fjall {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.insert_all(pairs)
    }

    fn after_load(&mut self) -> StoreResult<Notes> {
        let start = Instant::now();
        let shape = || {
            (
                self.keyspace.sealed_memtable_count(),
                self.keyspace.l0_table_count(),
                self.keyspace.table_count(),
            )
        };
        let (mut last, mut unchanged) = (shape(), 0);
        while unchanged < SETTLED_POLLS && start.elapsed() < SETTLE_LIMIT {
            thread::sleep(SETTLE_POLL);
            let now = shape();
            unchanged = if now == last && now.0 == 0 {
                unchanged + 1
            } else {
                0
            };
            last = now;
        }
        Ok(vec![
            (
                "settle_s".into(),
                format!("{:.3}", start.elapsed().as_secs_f64()),
            ),
            (
                "tables".into(),
                format!("{} ({} in level 0)", last.2, last.1),
            ),
        ])
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.keyspace.insert(key, value).doing("inserting")?;
        self.db.persist(PersistMode::SyncData).doing("persisting")
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        self.insert_all(pairs)
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        Ok(Box::new(Reader {
            keyspace: &self.keyspace,
        }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        let mut batch = self.durable_batch();
        for key in keys {
            batch.remove(&self.keyspace, *key);
        }
        batch.commit().doing("committing the removals")
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            "4 GiB cache; default keyspace options (LZ4); batches committed with \
             PersistMode::SyncData; a single write is insert + persist(SyncData)"
                .into(),
        )]
    }
}

/// Reads through the keyspace (each read sees the latest committed state).
struct Reader<'a> {
    keyspace: &'a Keyspace,
}

impl KvReader for Reader<'_> {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        let value = self.keyspace.get(key).doing("reading")?;
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
        let mut visit = |guard: fjall::Guard| -> StoreResult<()> {
            let (key, value) = guard.into_inner().doing("reading a pair")?;
            fold(checksum, &key, &value);
            read += 1;
            Ok(())
        };
        if descending {
            let pairs = self.keyspace.range(..=start);
            pairs.rev().take(n).try_for_each(&mut visit)?;
        } else {
            self.keyspace
                .range(start..)
                .take(n)
                .try_for_each(&mut visit)?;
        }
        Ok(read)
    }
}
