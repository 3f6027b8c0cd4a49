//! [`Db`]: a directory (or nothing, in memory) holding named tables, with the log, the
//! checkpoints, the catalog and the lock that keeps out a second opener.
//!
//! Files in the directory: `LOCK` (held with an advisory lock while open), `catalog` (see
//! [`crate::catalog`]), `wal/` (the log's segments) and `checkpoint-*.ckpt` (see the
//! `wal-checkpoint` crate). Opening recovers the newest valid checkpoint plus the log up to its
//! safe timestamp and bulk-loads every table from the result.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::iter::Peekable;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use concurrency::workers::Workers;
use parking_lot::{Mutex, MutexGuard, RwLock};
use wal_checkpoint::{CheckpointWriter, KeyLocks, Recovery, RecoveryStats, Wal};

use crate::batch::WriteBatch;
use crate::catalog::{self, Catalog};
use crate::error::{Error, Result};
use crate::key::{KeyType, MAX_KEY_LEN, TableKey, TableKind};
use crate::options::Options;
use crate::stats::{CheckpointInfo, DbStats, TableStats};
use crate::store::{self, AnyStore, Store};
use crate::table::{HashTable, MAX_VALUE_LEN, OrderedTable};
use crate::value;

/// The lock file's name.
const LOCK_FILE: &str = "LOCK";

/// Key-lock stripes of a database without a log (as many as the log's default).
const MEMORY_KEY_LOCKS: usize = 1 << 16;

/// Tells databases apart, so a batch cannot name another database's table.
static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

/// An embedded database of named tables over learned indexes.
///
/// Every method takes `&self`; share a `Db` between threads with an `Arc` (or share its table
/// handles, which keep it alive). Dropping the last handle syncs the log and stops the
/// background threads: a clean shutdown.
///
/// ```
/// use engine::Db;
/// let db = Db::open_in_memory()?;
/// let users = db.ordered_table::<u64>("users")?;
/// users.insert(&7, b"ada")?;
/// assert_eq!(users.get(&7), Some(b"ada".to_vec()));
/// # Ok::<(), engine::Error>(())
/// ```
pub struct Db {
    inner: Arc<DbInner>,
}

/// The shared state behind a [`Db`] and its table handles.
pub(crate) struct DbInner {
    pub(crate) id: u64,
    dir: Option<PathBuf>,
    options: Options,
    catalog: Mutex<Catalog>,
    /// Each live table's store, by id.
    tables: Arc<RwLock<BTreeMap<u32, AnyStore>>>,
    pub(crate) wal: Option<Arc<Wal>>,
    /// The key locks of a database without a log (a logged one's writes take the log's).
    memory_locks: KeyLocks,
    checkpointer: Mutex<Option<Workers>>,
    last_checkpoint: Arc<Mutex<Option<CheckpointInfo>>>,
    recovery: Option<RecoveryStats>,
    /// Held (locked) for the life of the database; closing the file releases the lock.
    _lock: Option<File>,
}

/// Whether recovery read a log long enough that the open checkpoints before it returns: four
/// segments a lane (each open starts one in every lane, so a process that never lives one
/// checkpoint interval would otherwise leave the next open more files, and more records, to
/// replay every time), or at least as many ops as the checkpoint held and at least
/// [`LONG_REPLAY`] (the checkpoint then costs no more than the replay it saves the next open).
fn recovered_a_long_log(stats: &RecoveryStats, lanes: usize) -> bool {
    stats.segments >= 4 * lanes || stats.ops_replayed >= stats.checkpoint_entries.max(LONG_REPLAY)
}

/// The fewest ops replayed that make an open checkpoint ([`recovered_a_long_log`]).
const LONG_REPLAY: u64 = 1 << 16;

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .field("tables", &self.inner.tables.read().len())
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Opens the database in `dir`, creating the directory and an empty database if needed,
    /// or recovering the existing one (newest valid checkpoint plus the log).
    ///
    /// Fails with [`Error::AlreadyOpen`] while another handle has the directory open,
    /// [`Error::Corrupt`] for damaged or foreign files (see
    /// [`Options::tolerate_corruption`]), and [`Error::Io`] for a path that cannot be created
    /// or written (or an empty one, which names no directory: use `"."` for the current one).
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Self> {
        options.validate()?;
        let dir = dir.as_ref().to_owned();
        if dir.as_os_str().is_empty() {
            let empty = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an empty path names no directory",
            );
            return Err(Error::io(&dir, empty));
        }
        fs::create_dir_all(&dir).map_err(|e| {
            let e = if dir.exists() && !dir.is_dir() {
                std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    "the path names a file, not a directory",
                )
            } else {
                e
            };
            Error::io(&dir, e)
        })?;
        let lock = lock_dir(&dir)?;
        let catalog = Catalog::read(&dir)?;
        let (wal, recovery) = Wal::open(&dir, options.wal())?;
        let tables = load_tables(&dir, &catalog, &recovery, &options)?;
        let long_log = options.checkpoint_interval.is_some()
            && recovered_a_long_log(&recovery.stats, wal.lanes());
        let inner = Arc::new(DbInner {
            id: NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
            dir: Some(dir),
            catalog: Mutex::new(catalog),
            tables: Arc::new(RwLock::new(tables)),
            wal: Some(Arc::new(wal)),
            memory_locks: KeyLocks::new(1),
            checkpointer: Mutex::new(None),
            last_checkpoint: Arc::new(Mutex::new(None)),
            recovery: Some(recovery.stats),
            _lock: Some(lock),
            options,
        });
        if long_log {
            // Best effort: a failed checkpoint leaves the log as it was (the next open, or the
            // first periodic checkpoint, tries again), and an open must not fail for want of
            // room for one: a full disk is what the database may be opened to clear.
            let _ = inner.checkpoint();
        }
        inner.start_checkpointer()?;
        Ok(Self { inner })
    }

    /// A database that lives in memory only, with the default options.
    pub fn open_in_memory() -> Result<Self> {
        Self::open_in_memory_with(Options::default())
    }

    /// A database that lives in memory only. The durability and log options have no effect,
    /// but every option is still validated, as [`Db::open`] does: an `Options` value that a
    /// test opens in memory is one that opens a directory too.
    pub fn open_in_memory_with(options: Options) -> Result<Self> {
        options.validate()?;
        Ok(Self {
            inner: Arc::new(DbInner {
                id: NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
                dir: None,
                catalog: Mutex::new(Catalog::default()),
                tables: Arc::new(RwLock::new(BTreeMap::new())),
                wal: None,
                memory_locks: KeyLocks::new(MEMORY_KEY_LOCKS),
                checkpointer: Mutex::new(None),
                last_checkpoint: Arc::new(Mutex::new(None)),
                recovery: None,
                _lock: None,
                options,
            }),
        })
    }

    /// The ordered table (XIndex-R) called `name` with keys of type `K` (`u64` or `Vec<u8>`),
    /// created (and recorded in the catalog) if it does not exist.
    pub fn ordered_table<K: TableKey>(&self, name: &str) -> Result<OrderedTable<K>> {
        let (id, store) = self.inner.table::<K>(name, TableKind::Ordered)?;
        Ok(OrderedTable::new(Arc::clone(&self.inner), id, store))
    }

    /// The hash table (XIndex-H) called `name` with keys of type `K`, created if needed.
    pub fn hash_table<K: TableKey>(&self, name: &str) -> Result<HashTable<K>> {
        let (id, store) = self.inner.table::<K>(name, TableKind::Hash)?;
        Ok(HashTable::new(Arc::clone(&self.inner), id, store))
    }

    /// The tables: name, kind and key type, in creation order.
    pub fn tables(&self) -> Vec<(String, TableKind, KeyType)> {
        let catalog = self.inner.catalog.lock();
        catalog
            .entries()
            .iter()
            .map(|e| (e.name.clone(), e.kind, e.key))
            .collect()
    }

    /// Deletes the table called `name` with every pair in it; false if there is no such
    /// table.
    ///
    /// The deletion is durable when this returns, and so is every write that returned
    /// before the call (it syncs the log first): a reopened database does not have the
    /// table, although the log and older checkpoints may still hold its pairs. Writes through
    /// handles of the deleted table, and batches naming it, then fail with
    /// [`Error::TableDeleted`] (one racing the deletion may succeed, ordered before it);
    /// reads through those handles still see what it held, and its memory and background
    /// threads are released when its last handle is dropped. A table created later under the
    /// same name starts empty, under a new id (ids are never reused).
    ///
    /// If writing the catalog fails, the error is returned but the table is deleted in this
    /// process all the same; a reopen may or may not show it (with what it held before the
    /// call).
    ///
    /// ```
    /// use engine::{Db, Error};
    /// let db = Db::open_in_memory()?;
    /// let old = db.ordered_table::<u64>("jobs")?;
    /// old.insert(&1, b"done")?;
    /// assert!(db.delete_table("jobs")?);
    /// assert!(matches!(old.insert(&2, b"late"), Err(Error::TableDeleted { .. })));
    /// assert!(db.ordered_table::<u64>("jobs")?.is_empty());
    /// assert!(!db.delete_table("no such table")?);
    /// # Ok::<(), engine::Error>(())
    /// ```
    pub fn delete_table(&self, name: &str) -> Result<bool> {
        self.inner.delete_table(name)
    }

    /// Applies `batch`: after a crash, recovery holds all of it or none of it. Concurrent
    /// readers may see it half applied. A batch naming a deleted table fails with
    /// [`Error::TableDeleted`] and applies nothing; so does a batch one of whose conditions
    /// ([`WriteBatch::require`]) does not hold, with [`Error::Conflict`].
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        batch.apply(&self.inner)
    }

    /// Makes every write that returned before this call durable, whatever the durability mode.
    pub fn flush(&self) -> Result<()> {
        match &self.inner.wal {
            Some(wal) => Ok(wal.sync()?),
            None => Ok(()),
        }
    }

    /// Writes a checkpoint now (fuzzy: concurrent writes go on) and lets the log drop the
    /// segments it covers. Does nothing in memory.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }

    /// Keys, memory, index counters, log bytes and the last checkpoint.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// The database's directory (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.inner.dir.as_deref()
    }
}

impl DbInner {
    /// Runs `apply`, the index write of `value` (`None`: a removal) at the encoded `key` of
    /// `table`, under the key's lock once `check` passes there: through the log when the
    /// database has one, so that the log orders the key's writes as they were applied. Every
    /// write of a key holds its lock, so nothing changes the key between `check` and `apply`.
    /// `Ok(None)` when `check` fails (nothing is written).
    pub(crate) fn write_key<R>(
        &self,
        table: u32,
        key: &[u8],
        value: Option<&[u8]>,
        check: impl FnOnce() -> bool,
        apply: impl FnOnce() -> R,
    ) -> Result<Option<R>> {
        match &self.wal {
            Some(wal) => Ok(wal.write_if(table, key, value, check, apply)?),
            None => {
                let _key = self.memory_locks.lock(table, key);
                Ok(check().then(apply))
            }
        }
    }

    /// Locks `keys` together for a batch in a database without a log (a logged batch takes
    /// the log's key locks).
    pub(crate) fn lock_memory_keys<'k>(
        &self,
        keys: impl IntoIterator<Item = (u32, &'k [u8])>,
    ) -> Vec<MutexGuard<'_, ()>> {
        self.memory_locks.lock_all(keys)
    }

    /// The store of table `name`, created if needed; refuses another kind or key type.
    fn table<K: TableKey>(&self, name: &str, kind: TableKind) -> Result<(u32, Arc<Store<K>>)> {
        catalog::check_name(name)?;
        let mut catalog = self.catalog.lock();
        if let Some(entry) = catalog.find(name) {
            let id = entry.id;
            if entry.kind != kind || entry.key != K::TYPE {
                return Err(Error::TableMismatch {
                    name: name.to_owned(),
                    kind,
                    key: K::TYPE,
                    found_kind: entry.kind,
                    found_key: entry.key,
                });
            }
            let tables = self.tables.read();
            let store = tables
                .get(&id)
                .and_then(K::unwrap)
                .expect("a live table's store has the catalog's key type")
                .clone();
            return Ok((id, store));
        }
        let store = Arc::new(Store::<K>::load(kind, Vec::new(), &self.options)?);
        let mut grown = catalog.clone();
        let id = grown.add(name, kind, K::TYPE)?;
        if let Some(dir) = &self.dir {
            grown.write(dir)?;
        }
        *catalog = grown;
        self.tables.write().insert(id, K::wrap(Arc::clone(&store)));
        Ok((id, store))
    }

    /// Deletes table `name`, if it exists: the log synced (so no earlier write is lost with a
    /// deletion that reached the disk before it), the catalog rewritten, then its store leaves
    /// the list that checkpoints read and refuses writes from then on. The catalog lock is held
    /// throughout, as a table's creation holds it over its catalog write.
    ///
    /// A failed catalog write still deletes the table in memory, and returns the error: the
    /// table refuses writes either way, so none is acknowledged that a reopen could lose,
    /// whether or not the file on disk shows the deletion.
    fn delete_table(&self, name: &str) -> Result<bool> {
        catalog::check_name(name)?;
        let mut catalog = self.catalog.lock();
        let Some(id) = catalog.find(name).map(|entry| entry.id) else {
            return Ok(false);
        };
        if let Some(wal) = &self.wal {
            wal.sync()?;
        }
        catalog.delete(id);
        let written = match &self.dir {
            Some(dir) => catalog.write(dir),
            None => Ok(()),
        };
        let store = self
            .tables
            .write()
            .remove(&id)
            .expect("a live table has a store");
        store.mark_deleted(name);
        // The store may be the table's last reference: free it without the catalog held.
        drop(catalog);
        drop(store);
        written.map(|()| true)
    }

    fn start_checkpointer(&self) -> Result<()> {
        let (Some(wal), Some(interval)) = (&self.wal, self.options.checkpoint_interval) else {
            return Ok(());
        };
        let wal = Arc::clone(wal);
        let tables = Arc::clone(&self.tables);
        let last = Arc::clone(&self.last_checkpoint);
        let dir = self.dir.clone().unwrap_or_default();
        let workers = Workers::start("learnkv-checkpoint", 1, interval, move |_| {
            // A failed background checkpoint leaves the previous one in place; the next
            // period retries, and a failed log fails the writers themselves.
            let _ = checkpoint(&wal, &tables, &last);
        })
        .map_err(|e| Error::io(dir, e))?;
        *self.checkpointer.lock() = Some(workers);
        Ok(())
    }

    fn checkpoint(&self) -> Result<()> {
        match &self.wal {
            Some(wal) => checkpoint(wal, &self.tables, &self.last_checkpoint),
            None => Ok(()),
        }
    }

    fn stats(&self) -> DbStats {
        let catalog = self.catalog.lock().clone();
        let stores = self.tables.read().clone();
        let mut tables = Vec::with_capacity(stores.len());
        for entry in catalog.entries() {
            let Some(store) = stores.get(&entry.id) else {
                continue;
            };
            let (keys, index, value_bytes) = store.stats();
            tables.push(TableStats {
                name: entry.name.clone(),
                kind: entry.kind,
                key_type: entry.key,
                keys,
                value_bytes,
                index,
            });
        }
        let wal = self.wal.as_ref().map(|wal| wal.stats()).unwrap_or_default();
        DbStats {
            keys: tables.iter().map(|t| t.keys).sum(),
            memory_bytes: tables.iter().map(|t| t.index.bytes() + t.value_bytes).sum(),
            tables,
            log_bytes: wal.bytes_written,
            log_rounds: wal.rounds,
            checkpoints: wal.checkpoints,
            last_checkpoint: self.last_checkpoint.lock().clone(),
            recovery: self.recovery.clone(),
        }
    }
}

impl Drop for DbInner {
    fn drop(&mut self) {
        drop(self.checkpointer.lock().take());
        if let Some(wal) = self.wal.take() {
            // The checkpointer, the only other owner, has been joined.
            if let Ok(wal) = Arc::try_unwrap(wal) {
                // Nobody is left to tell: a failed final sync loses only what `Periodic` or
                // `None` durability allowed to lose, and the next open recovers the rest.
                let _ = wal.close();
            }
        }
    }
}

/// Takes the directory's advisory lock.
fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Error::AlreadyOpen {
            path: dir.to_owned(),
        }),
        Err(TryLockError::Error(e)) => Err(Error::io(path, e)),
    }
}

/// Writes one checkpoint of every table. The list of tables is taken inside the log's
/// checkpoint, after its start stamp: a table joins the list before any write to it, so the
/// list then holds every table with a write stamped before the start, which recovery replays
/// no more. (Taken before, while another checkpoint held the log's, it missed a table created
/// meanwhile, and reopening lost that table's acknowledged writes.)
fn checkpoint(
    wal: &Wal,
    tables: &RwLock<BTreeMap<u32, AnyStore>>,
    last: &Mutex<Option<CheckpointInfo>>,
) -> Result<()> {
    let written = wal.checkpoint(|writer: &mut CheckpointWriter| {
        let stores = tables.read().clone();
        for (&id, store) in &stores {
            store.for_each_encoded(|key, value| writer.put(id, key, value))?;
        }
        Ok(())
    })?;
    *last.lock() = Some(CheckpointInfo {
        finished: SystemTime::now(),
        entries: written.entries,
        bytes: written.bytes,
        elapsed: written.elapsed,
        segments_deleted: written.segments_deleted,
    });
    Ok(())
}

/// Builds every table of `catalog` from the recovered pairs, skipping those of deleted tables
/// (ids below the catalog's next id that it no longer holds).
fn load_tables(
    dir: &Path,
    catalog: &Catalog,
    recovery: &Recovery,
    options: &Options,
) -> Result<BTreeMap<u32, AnyStore>> {
    let mut pairs = recovery.iter().peekable();
    let mut tables = BTreeMap::new();
    for entry in catalog.entries() {
        while pairs.next_if(|&(table, _, _)| table < entry.id).is_some() {}
        let store = match entry.key {
            KeyType::U64 => load_table::<u64>(dir, entry.id, entry.kind, &mut pairs, options)?,
            KeyType::Bytes => {
                load_table::<Vec<u8>>(dir, entry.id, entry.kind, &mut pairs, options)?
            }
        };
        tables.insert(entry.id, store);
    }
    while pairs
        .next_if(|&(table, _, _)| table < catalog.next_id())
        .is_some()
    {}
    if let Some((table, _, _)) = pairs.next() {
        return Err(Error::corrupt(
            dir.join(catalog::FILE),
            0,
            format!("the log or checkpoint holds table {table}, which the catalog never had"),
        ));
    }
    Ok(tables)
}

/// Builds table `id` from the recovered pairs of that table at the front of `pairs`.
fn load_table<'a, K: TableKey>(
    dir: &Path,
    id: u32,
    kind: TableKind,
    pairs: &mut Peekable<impl Iterator<Item = (u32, &'a [u8], &'a [u8])>>,
    options: &Options,
) -> Result<AnyStore> {
    let mut loaded: Vec<(K, u64)> = Vec::new();
    while let Some((_, key, value)) = pairs.next_if(|(table, _, _)| *table == id) {
        match decode_recovered::<K>(key, value) {
            Ok(key) => loaded.push((key, value::encode(value))),
            Err(reason) => {
                for (_, word) in loaded {
                    store::discard(word);
                }
                return Err(Error::corrupt(
                    dir.join("wal"),
                    0,
                    format!("table {id} holds {reason}"),
                ));
            }
        }
    }
    Ok(K::wrap(Arc::new(Store::load(kind, loaded, options)?)))
}

/// The key of a recovered pair, or why the pair is none a table of key type `K` accepts: a key
/// or value over the limits (a log forged or written by another program), or a key that is no
/// `K`.
fn decode_recovered<K: TableKey>(key: &[u8], value: &[u8]) -> std::result::Result<K, String> {
    if key.len() > MAX_KEY_LEN {
        return Err(format!(
            "a key of {} bytes, over the limit of {MAX_KEY_LEN}",
            key.len()
        ));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(format!(
            "a value of {} bytes, over the limit of {MAX_VALUE_LEN}",
            value.len()
        ));
    }
    K::decode(key).ok_or_else(|| format!("a key of {} bytes, not a {} key", key.len(), K::TYPE))
}
