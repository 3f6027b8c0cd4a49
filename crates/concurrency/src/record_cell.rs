//! An optimistic record cell: XIndex's `record_t` value and meta word (§3.2, §4.1 of the digest).
//!
//! Index values are one 64-bit word (DESIGN, "Index values are one 64-bit word"), so a record is
//! a [`RecordLock`] plus an `AtomicU64`. Readers get a consistent `(meta, value)` pair without
//! writing shared memory; writers update value and flags under the lock. While `is_ptr` is set the
//! value word holds a reference to the authoritative record (compaction); interpreting it is the
//! index's business.

use crate::record_lock::{RecordGuard, RecordLock, RecordMeta};
use crate::sync::atomic::{AtomicU64, Ordering};
use std::fmt;
use std::ops::{Deref, DerefMut};

/// A record's meta word and one-word value, read optimistically.
///
/// ```
/// use concurrency::{RecordCell, RecordMeta};
///
/// let cell = RecordCell::new(RecordMeta::new(), 10);
/// {
///     let mut guard = cell.lock();
///     guard.set_value(guard.value() + 1);
/// }
/// let (meta, value) = cell.read();
/// assert_eq!((meta.version(), value), (1, 11));
///
/// // Removing: flag and value change together for every reader.
/// let mut guard = cell.lock();
/// guard.set_removed(true);
/// guard.set_value(0);
/// drop(guard);
/// assert_eq!(cell.read().1, 0);
/// assert!(cell.read().0.is_removed());
/// ```
pub struct RecordCell {
    lock: RecordLock,
    value: AtomicU64,
}

impl RecordCell {
    /// A cell holding `value` with meta word `meta` (unlocked).
    pub fn new(meta: RecordMeta, value: u64) -> Self {
        Self {
            lock: RecordLock::new(meta),
            value: AtomicU64::new(value),
        }
    }

    /// A consistent snapshot of the meta word and the value; waits while a writer holds the lock.
    #[inline]
    pub fn read(&self) -> (RecordMeta, u64) {
        loop {
            let meta = self.lock.read_begin();
            let value = self.value.load(Ordering::Relaxed);
            if self.lock.validate(meta) {
                return (meta, value);
            }
        }
    }

    /// True iff no writer touched the cell since `meta` was read: lets a reader that followed
    /// the value (for example an `is_ptr` reference) check that it still holds.
    pub fn validate(&self, meta: RecordMeta) -> bool {
        self.lock.validate(meta)
    }

    /// The meta word's lock, for protocols that protect more atomics than the value.
    pub fn record_lock(&self) -> &RecordLock {
        &self.lock
    }

    /// Locks the cell, spinning with backoff while another writer holds it.
    pub fn lock(&self) -> RecordCellGuard<'_> {
        self.guard(self.lock.lock())
    }

    /// Locks the cell if it is free.
    pub fn try_lock(&self) -> Option<RecordCellGuard<'_>> {
        self.lock.try_lock().map(|g| self.guard(g))
    }

    /// Locks the cell only if its meta word still equals `meta` (from [`read`](Self::read)).
    pub fn try_upgrade(&self, meta: RecordMeta) -> Option<RecordCellGuard<'_>> {
        self.lock.try_upgrade(meta).map(|g| self.guard(g))
    }

    fn guard<'a>(&'a self, record: RecordGuard<'a>) -> RecordCellGuard<'a> {
        RecordCellGuard {
            record,
            value: &self.value,
        }
    }
}

impl Default for RecordCell {
    /// Flags clear, version 0, value 0.
    fn default() -> Self {
        Self::new(RecordMeta::new(), 0)
    }
}

impl fmt::Debug for RecordCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Unvalidated on purpose: formatting must not wait on a writer (possibly this thread).
        f.debug_struct("RecordCell")
            .field("meta", &self.lock.load())
            .field("value", &self.value.load(Ordering::Relaxed))
            .finish()
    }
}

/// Exclusive access to a [`RecordCell`]; dropping it unlocks with `version + 1`.
///
/// Dereferences to the [`RecordGuard`] for the flags.
#[must_use = "the record is unlocked as soon as the guard is dropped"]
pub struct RecordCellGuard<'a> {
    record: RecordGuard<'a>,
    value: &'a AtomicU64,
}

impl RecordCellGuard<'_> {
    /// The current value.
    pub fn value(&self) -> u64 {
        // The lock's Acquire CAS ordered this after every earlier writer's stores.
        self.value.load(Ordering::Relaxed)
    }

    /// Replaces the value; readers see it once the guard is dropped.
    pub fn set_value(&mut self, value: u64) {
        // Relaxed is enough: the release fence taken with the lock orders this store after the
        // lock CAS, which is what makes a concurrent reader's validation fail.
        self.value.store(value, Ordering::Relaxed);
    }
}

impl<'a> Deref for RecordCellGuard<'a> {
    type Target = RecordGuard<'a>;

    fn deref(&self) -> &Self::Target {
        &self.record
    }
}

impl DerefMut for RecordCellGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.record
    }
}

impl fmt::Debug for RecordCellGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordCellGuard")
            .field("meta", &self.record.meta())
            .field("value", &self.value())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn read_sees_the_last_write_and_version() {
        let cell = RecordCell::default();
        assert_eq!(cell.read(), (RecordMeta::new(), 0));
        for i in 1..=5 {
            cell.lock().set_value(i * 10);
        }
        let (meta, value) = cell.read();
        assert_eq!((meta.version(), value), (5, 50));
        assert!(cell.validate(meta));
    }

    #[test]
    fn try_upgrade_fails_after_an_intervening_write() {
        let cell = RecordCell::new(RecordMeta::new().with_ptr(true), 99);
        let (meta, value) = cell.read();
        assert!(meta.is_ptr());
        assert_eq!(value, 99);
        let mut g = cell.try_lock().expect("the cell is free");
        assert!(cell.try_lock().is_none());
        g.set_ptr(false);
        g.set_value(7);
        drop(g);
        assert!(cell.try_upgrade(meta).is_none());
        assert!(!cell.validate(meta));
        let (meta, value) = cell.read();
        assert!(!meta.is_ptr());
        assert_eq!(value, 7);
        assert!(cell.try_upgrade(meta).is_some());
        assert!(cell.record_lock().try_lock().is_some());
    }
}
