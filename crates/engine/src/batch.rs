//! [`WriteBatch`]: puts and removes across tables, logged as one record so that recovery
//! replays all of them or none (XIndex's log extended with batches; see the `wal-checkpoint`
//! crate). Each write still takes effect in the index on its own, in order: concurrent readers
//! may see a batch half applied.
//!
//! A batch with conditions ([`WriteBatch::require`]) takes the key locks of all its keys,
//! written or required, together (in stripe order), checks every condition, and writes only if
//! all hold, still under those locks: no other write of those keys comes between the check and
//! the batch's last write.

use std::ops::Range;

use wal_checkpoint::BatchOp;

use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::key::TableKey;
use crate::store::{self, AnyStore};
use crate::table::{HashTable, OrderedTable, check_sizes};
use crate::value;

mod sealed {
    pub trait Sealed {}
}

/// A table a [`WriteBatch`] can write to: an [`OrderedTable`] or a [`HashTable`].
pub trait BatchTable<K: TableKey>: sealed::Sealed {
    #[doc(hidden)]
    fn batch_parts(&self) -> (u64, u32, AnyStore);
}

impl<K: TableKey> sealed::Sealed for OrderedTable<K> {}
impl<K: TableKey> sealed::Sealed for HashTable<K> {}

impl<K: TableKey> BatchTable<K> for OrderedTable<K> {
    fn batch_parts(&self) -> (u64, u32, AnyStore) {
        self.parts()
    }
}

impl<K: TableKey> BatchTable<K> for HashTable<K> {
    fn batch_parts(&self) -> (u64, u32, AnyStore) {
        self.parts()
    }
}

/// A key of a batch with a value or none: a write (the value to put; `None`, a remove) or a
/// condition (the value expected; `None`, absence). Key and value lie in the batch's byte
/// buffer.
struct Entry {
    table: u32,
    store: AnyStore,
    /// The encoded key's place in the buffer.
    key: Range<usize>,
    /// The value's place in the buffer.
    value: Option<Range<usize>>,
}

/// The largest [`WriteBatch`] [`Db::write`](crate::Db::write) accepts, in bytes of its
/// record in the log (keys, values and 21 bytes of header per write): 1 GiB, in memory
/// as on disk.
pub const MAX_BATCH_LEN: usize = wal_checkpoint::format::MAX_PAYLOAD;

/// Puts and removes over any tables of one database, applied by [`crate::Db::write`] and
/// atomic with respect to crashes; with conditions, applied only if they hold (see
/// [`WriteBatch::require`]).
///
/// ```
/// use engine::{Db, WriteBatch};
/// let db = Db::open_in_memory()?;
/// let (accounts, audit) = (db.ordered_table::<u64>("accounts")?, db.hash_table::<u64>("audit")?);
/// let mut batch = WriteBatch::new();
/// batch.insert(&accounts, &1, b"90")?;
/// batch.insert(&accounts, &2, b"110")?;
/// batch.insert(&audit, &1, b"moved 10 from 1 to 2")?;
/// db.write(batch)?;
/// assert_eq!(accounts.get(&2), Some(b"110".to_vec()));
/// # Ok::<(), engine::Error>(())
/// ```
#[derive(Default)]
pub struct WriteBatch {
    db: Option<u64>,
    writes: Vec<Entry>,
    conditions: Vec<Entry>,
    /// Every write's and condition's encoded key and value, back to back (one allocation for
    /// the batch).
    bytes: Vec<u8>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("writes", &self.writes.len())
            .field("conditions", &self.conditions.len())
            .finish_non_exhaustive()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a put of `value` at `key` in `table`.
    pub fn insert<K, Q>(
        &mut self,
        table: &impl BatchTable<K>,
        key: &Q,
        value: impl AsRef<[u8]>,
    ) -> Result<()>
    where
        K: TableKey,
        Q: std::borrow::Borrow<K::Query> + ?Sized,
    {
        let value = value.as_ref();
        self.push::<K>(table, key.borrow(), Some(value))
    }

    /// Adds a removal of `key` from `table`.
    pub fn remove<K, Q>(&mut self, table: &impl BatchTable<K>, key: &Q) -> Result<()>
    where
        K: TableKey,
        Q: std::borrow::Borrow<K::Query> + ?Sized,
    {
        self.push::<K>(table, key.borrow(), None)
    }

    /// Adds a condition: the batch writes nothing unless `key` of `table` holds `expected`
    /// (`None`: is absent) when it is applied. The keys of every condition and every write are
    /// locked together while the conditions are checked and the writes applied, so no other
    /// write of them comes between. [`crate::Db::write`] fails with [`Error::Conflict`], naming
    /// the first condition (in the order added) that does not hold, and writes nothing.
    ///
    /// ```
    /// use engine::{Db, Error, WriteBatch};
    /// let db = Db::open_in_memory()?;
    /// let accounts = db.ordered_table::<u64>("accounts")?;
    /// accounts.insert(&1, 100u64.to_le_bytes())?;
    /// accounts.insert(&2, 0u64.to_le_bytes())?;
    /// // Move 30 from account 1 to account 2, unless either changed since it was read.
    /// let balance = |v: Vec<u8>| u64::from_le_bytes(v.try_into().unwrap());
    /// let (from, to) = (accounts.get(&1).unwrap(), accounts.get(&2).unwrap());
    /// let mut batch = WriteBatch::new();
    /// batch.require(&accounts, &1, Some(&from))?;
    /// batch.require(&accounts, &2, Some(&to))?;
    /// batch.insert(&accounts, &1, (balance(from) - 30).to_le_bytes())?;
    /// batch.insert(&accounts, &2, (balance(to) + 30).to_le_bytes())?;
    /// db.write(batch)?;
    /// let mut stale = WriteBatch::new();
    /// stale.require(&accounts, &2, Some(0u64.to_le_bytes()))?;
    /// stale.remove(&accounts, &2)?;
    /// assert!(matches!(db.write(stale), Err(Error::Conflict { condition: 0, .. })));
    /// assert_eq!(accounts.get(&2), Some(30u64.to_le_bytes().to_vec()));
    /// # Ok::<(), engine::Error>(())
    /// ```
    pub fn require<K, Q>(
        &mut self,
        table: &impl BatchTable<K>,
        key: &Q,
        expected: Option<impl AsRef<[u8]>>,
    ) -> Result<()>
    where
        K: TableKey,
        Q: std::borrow::Borrow<K::Query> + ?Sized,
    {
        let condition = self.entry(table, key.borrow(), expected.as_ref().map(AsRef::as_ref))?;
        self.conditions.push(condition);
        Ok(())
    }

    /// The number of writes in the batch.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether the batch holds no write (conditions aside).
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    fn push<K: TableKey>(
        &mut self,
        table: &impl BatchTable<K>,
        key: &K::Query,
        value: Option<&[u8]>,
    ) -> Result<()> {
        let write = self.entry(table, key, value)?;
        self.writes.push(write);
        Ok(())
    }

    /// The entry of `key` in `table` with `value`, its bytes appended to the buffer, once the
    /// sizes are within the limits and `table` belongs to the database of the batch's other
    /// tables.
    fn entry<K: TableKey>(
        &mut self,
        table: &impl BatchTable<K>,
        key: &K::Query,
        value: Option<&[u8]>,
    ) -> Result<Entry> {
        check_sizes(K::encoded_len(key), value.map_or(0, <[u8]>::len))?;
        let (db, id, store) = table.batch_parts();
        if self.db.is_some_and(|own| own != db) {
            return Err(Error::ForeignTable);
        }
        self.db = Some(db);
        Ok(Entry {
            table: id,
            store,
            key: self.append(&K::encode(key)),
            value: value.map(|value| self.append(value)),
        })
    }

    /// Appends `bytes` to the buffer; their place there.
    fn append(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    /// The encoded key of `entry`.
    fn key(&self, entry: &Entry) -> &[u8] {
        &self.bytes[entry.key.clone()]
    }

    /// The value of `entry`; `None` for a remove or an absence.
    fn value(&self, entry: &Entry) -> Option<&[u8]> {
        entry.value.clone().map(|value| &self.bytes[value])
    }

    /// The first condition that does not hold now, as the error that reports it.
    fn first_conflict(&self) -> Option<Error> {
        self.conditions
            .iter()
            .enumerate()
            .find_map(|(condition, c)| {
                let current = c.store.mismatch_encoded(self.key(c), self.value(c))?;
                Some(Error::Conflict { condition, current })
            })
    }

    /// Applies the batch to `db` (through its log, when it has one).
    pub(crate) fn apply(self, db: &DbInner) -> Result<()> {
        if self.writes.is_empty() && self.conditions.is_empty() {
            return Ok(());
        }
        if self.db != Some(db.id) {
            return Err(Error::ForeignTable);
        }
        let stores = self.writes.iter().map(|w| &w.store);
        let required = self.conditions.iter().map(|c| &c.store);
        if let Some(deleted) = stores.chain(required).find_map(AnyStore::deleted) {
            return Err(deleted);
        }
        // A condition seen failing before locking is already an answer; under the locks the
        // conditions are checked again.
        if let Some(conflict) = self.first_conflict() {
            return Err(conflict);
        }
        let ops: Vec<BatchOp<'_>> = self
            .writes
            .iter()
            .map(|w| match self.value(w) {
                Some(value) => BatchOp::Put {
                    table: w.table,
                    key: self.key(w),
                    value,
                },
                None => BatchOp::Remove {
                    table: w.table,
                    key: self.key(w),
                },
            })
            .collect();
        // The log's limit on one record holds in memory too: a batch that works in a test in
        // memory works on disk.
        wal_checkpoint::check_batch(&ops).map_err(|error| match error {
            wal_checkpoint::Error::TooLarge { size, limit } => Error::BatchTooLarge {
                len: usize::try_from(size).unwrap_or(usize::MAX),
                max: usize::try_from(limit).unwrap_or(usize::MAX),
            },
            other => other.into(),
        })?;
        let words: Vec<Option<u64>> = self
            .writes
            .iter()
            .map(|w| self.value(w).map(value::encode))
            .collect();
        // `Some(old)` once write `i` took effect in its index.
        let mut applied: Vec<Option<Option<u64>>> = vec![None; self.writes.len()];
        let mut apply = |i: usize| {
            let write = &self.writes[i];
            let key = self.key(write);
            applied[i] = Some(match words[i] {
                Some(word) => write.store.install_encoded(key, word),
                None => write.store.uninstall_encoded(key),
            });
        };
        let mut conflict = None;
        let mut check = || {
            conflict = self.first_conflict();
            conflict.is_none()
        };
        let required: Vec<(u32, &[u8])> = self
            .conditions
            .iter()
            .map(|c| (c.table, self.key(c)))
            .collect();
        let logged = match &db.wal {
            None => {
                let written = self.writes.iter().map(|w| (w.table, self.key(w)));
                let _keys = db.lock_memory_keys(written.chain(required.iter().copied()));
                if check() {
                    (0..self.writes.len()).for_each(&mut apply);
                }
                Ok(())
            }
            Some(wal) => {
                let mut next = 0;
                let apply_next = |_: &BatchOp<'_>| {
                    apply(next);
                    next += 1;
                };
                if required.is_empty() {
                    wal.batch(&ops, apply_next).map(drop)
                } else {
                    wal.batch_if(&ops, &required, check, apply_next).map(drop)
                }
            }
        };
        for ((write, old), word) in self.writes.iter().zip(applied).zip(words) {
            match (old, word) {
                (Some(old), _) => write.store.release(old),
                (None, Some(word)) => store::discard(word),
                (None, None) => {}
            }
        }
        logged?;
        conflict.map_or(Ok(()), Err)
    }
}
