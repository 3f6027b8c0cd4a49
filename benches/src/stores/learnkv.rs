//! `learnkv`: learnkv's embedded database (the `engine` crate) with one ordered byte-string table
//! (XIndex-R), the same table for gets and ranges. Default options except durability and one
//! log lane ([`LOG_LANES`]; the default is one per core): every write comes from one thread,
//! and each lane costs an fsync per group commit.
//!
//! - Bulk load: the database is opened with `Durability::None`; the pairs go in as
//!   [`WriteBatch`]es of [`LOAD_BATCH`] inserts, then `flush()` makes them durable (timed
//!   together). Untimed afterwards: a checkpoint (so that the log is not replayed at the next
//!   open), closing the database and reopening it with `Durability::Immediate`, which every
//!   later workload uses; the notes give both times and the bytes on disk before the checkpoint.
//! - Durable write: `insert` (it returns after the group commit's fsync).
//! - Batch: one `WriteBatch`, `db.write(batch)` (durable when it returns).
//! - Get: `get_with` compares the value with the expected bytes in place (no copy), as the
//!   peers compare the slices their read transactions lend.
//! - Range: `scan_with(start, n, visit)`, which copies the keys out of the index and reads the
//!   values in place (the peers lend both).
//! - Removal: one `WriteBatch` of removes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::{Db, Durability, IndexStats, Options, OrderedTable, WriteBatch};

use super::{Doing, KvReader, KvStore, Notes, Pair, StoreResult, disk_bytes, fold};

/// Inserts per write batch of the bulk load.
pub const LOAD_BATCH: usize = 10_000;

/// Log lanes: the benchmark writes from one thread.
pub const LOG_LANES: usize = 1;

/// The table's name.
const TABLE: &str = "engine";

/// learnkv in a directory.
pub struct Learnkv {
    dir: PathBuf,
    db: Db,
    table: OrderedTable<Vec<u8>>,
}

/// Opens the database in `dir` with `durability` and its table.
fn open_db(dir: &Path, durability: Durability) -> StoreResult<(Db, OrderedTable<Vec<u8>>)> {
    let db = Db::open(
        dir,
        Options::new().durability(durability).log_lanes(LOG_LANES),
    )
    .doing("opening learnkv")?;
    let table = db.ordered_table(TABLE).doing("opening the table")?;
    Ok((db, table))
}

impl Learnkv {
    /// Creates the database in `dir`, with `Durability::None` for the bulk load.
    pub fn open(dir: &Path) -> StoreResult<Box<dyn KvStore>> {
        let (db, table) = open_db(dir, Durability::None)?;
        Ok(Box::new(Self {
            dir: dir.to_owned(),
            db,
            table,
        }))
    }
}

impl KvStore for Learnkv {
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        for chunk in pairs.chunks(LOAD_BATCH) {
            let mut batch = WriteBatch::new();
            for (key, value) in chunk {
                batch.insert(&self.table, *key, value).doing("batching")?;
            }
            self.db.write(batch).doing("writing a batch")?;
        }
        self.db.flush().doing("flushing")
    }

    fn after_load(&mut self) -> StoreResult<Notes> {
        let logged = disk_bytes(&self.dir)?;
        let start = Instant::now();
        self.db.checkpoint().doing("checkpointing")?;
        let checkpoint = start.elapsed();
        // The table handle keeps the database open, and a directory admits one open database
        // at a time: both go before the reopen (an in-memory database holds their places).
        let placeholder = Db::open_in_memory().doing("opening a placeholder")?;
        self.table = placeholder
            .ordered_table(TABLE)
            .doing("opening the placeholder's table")?;
        self.db = placeholder;
        let start = Instant::now();
        (self.db, self.table) = open_db(&self.dir, Durability::Immediate)?;
        let reopen = start.elapsed();
        let mib = |bytes: u64| format!("{:.1}", bytes as f64 / (1 << 20) as f64);
        let stats = self.db.stats();
        let index = stats.tables.iter().find_map(|table| match &table.index {
            IndexStats::Ordered(index) if table.name == TABLE => Some(index.clone()),
            _ => None,
        });
        let index = index.ok_or("the table has no ordered index statistics")?;
        Ok(vec![
            ("groups".into(), index.groups.to_string()),
            ("models".into(), index.models.to_string()),
            ("mean_error".into(), format!("{:.1}", index.mean_error)),
            ("memory_mib".into(), mib(stats.memory_bytes as u64)),
            ("disk_mib_logged".into(), mib(logged)),
            (
                "checkpoint_s".into(),
                format!("{:.3}", checkpoint.as_secs_f64()),
            ),
            ("reopen_s".into(), format!("{:.3}", reopen.as_secs_f64())),
        ])
    }

    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.table.insert(key, value).doing("inserting").map(drop)
    }

    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()> {
        let mut batch = WriteBatch::new();
        for (key, value) in pairs {
            batch.insert(&self.table, *key, value).doing("batching")?;
        }
        self.db.write(batch).doing("writing a batch")
    }

    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>> {
        Ok(Box::new(Reader { table: &self.table }))
    }

    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()> {
        let mut batch = WriteBatch::new();
        for key in keys {
            batch.remove(&self.table, *key).doing("batching")?;
        }
        self.db.write(batch).doing("writing the removals")
    }

    fn notes(&self) -> Notes {
        vec![(
            "config".into(),
            format!(
                "defaults but {LOG_LANES} log lane; bulk load with Durability::None in \
                 WriteBatches of {LOAD_BATCH} + flush(), then checkpoint and reopen with \
                 Durability::Immediate"
            ),
        )]
    }
}

/// Reads through the table handle (no transaction: each read is consistent on its own).
struct Reader<'a> {
    table: &'a OrderedTable<Vec<u8>>,
}

impl KvReader for Reader<'_> {
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool> {
        Ok(self.table.get_with(key, |value| value == expected) == Some(true))
    }

    fn get_many(&mut self, keys: &[&[u8]], expected: &[&[u8]]) -> StoreResult<usize> {
        let mut found = 0;
        self.table.get_many_with(keys.iter().copied(), |i, value| {
            found += usize::from(value == Some(expected[i]));
        });
        Ok(found)
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize> {
        let visit = |key: &[u8], value: &[u8]| fold(checksum, key, value);
        Ok(if descending {
            self.table.scan_rev_with(start, n, visit)
        } else {
            self.table.scan_with(start, n, visit)
        })
    }
}
