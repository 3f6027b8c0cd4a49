//! XIndex's record meta word: flags, a lock bit and a version in one `AtomicU64`, read
//! optimistically (XIndex §3.2 "record_t", §4.1 of the digest; XIndex-H buckets, §3.18).
//!
//! Layout of the word (the reference code's layout, with XIndex-H's `uninitialized` bit and eight
//! tag bits taken from the top of the version):
//!
//! | bit   | 63       | 62        | 61              | 60     | 59..52 | 51..0     |
//! |-------|----------|-----------|-----------------|--------|--------|-----------|
//! | field | `is_ptr` | `removed` | `uninitialized` | `lock` | `tag`  | `version` |
//!
//! The tag belongs to the record's owner, which may only add bits to it under the lock; they are
//! published with the unlock like the flags. XIndex-H keeps a filter of its bucket's chained keys
//! there. 52 bits of version wrap after 4.5 · 10^15 writes to one record: a stale snapshot could
//! validate only for a reader stalled through exactly that many writes.
//!
//! Protocol:
//!
//! - **Writer**: CAS the lock bit on ([`RecordLock::lock`], [`RecordLock::try_lock`],
//!   [`RecordLock::try_upgrade`]), then a `Release` fence; modify the protected atomics (any
//!   ordering, `Relaxed` is enough) and the flags through the [`RecordGuard`]; dropping the guard
//!   publishes flags, `version + 1` and the cleared lock bit in **one** `Release` store.
//! - **Reader**: [`RecordLock::read_begin`] (an `Acquire` load that waits while locked), `Relaxed`
//!   loads of the protected atomics, then [`RecordLock::validate`] (an `Acquire` fence and a
//!   reload): the read is consistent iff the word is unchanged.
//!
//! Why a validated read is never torn: suppose a reader's data load returned a value stored by a
//! writer `W` inside its critical section. `W`'s release fence (after its lock CAS) precedes that
//! store, and the reader's acquire fence follows the load, so the fences synchronise and `W`'s
//! lock CAS happens before the reader's reload. The reload therefore sees `W`'s locked word or a
//! later one, all different from the unlocked snapshot the reader started from (versions only
//! grow), and validation fails. If every data load returned a value stored before the snapshot's
//! release store, the data is exactly what that snapshot published.
//!
//! Protected data must itself be atomic (DESIGN: "anything read without a lock is an atomic"):
//! an optimistic reader never reads non-atomic memory that a writer may be changing. The common
//! pairing with the one-word value is [`RecordCell`](crate::RecordCell).

use crate::backoff::Backoff;
use crate::sync::atomic::{AtomicU64, Ordering, fence};
use std::fmt;

const IS_PTR: u64 = 1 << 63;
const REMOVED: u64 = 1 << 62;
const UNINITIALIZED: u64 = 1 << 61;
const LOCKED: u64 = 1 << 60;
const FLAGS: u64 = IS_PTR | REMOVED | UNINITIALIZED;
const TAG_SHIFT: u32 = 52;
const TAG_MASK: u64 = 0xff << TAG_SHIFT;
const VERSION_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// A snapshot of a record's meta word.
///
/// ```
/// use concurrency::RecordMeta;
///
/// let meta = RecordMeta::new().with_uninitialized(true);
/// assert!(meta.is_uninitialized());
/// assert!(!meta.is_ptr() && !meta.is_removed() && !meta.is_locked());
/// assert_eq!(meta.version(), 0);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecordMeta(u64);

impl RecordMeta {
    /// All flags clear, version 0.
    pub const fn new() -> Self {
        Self(0)
    }

    /// The record's value is a reference to the authoritative record (XIndex compaction).
    pub const fn is_ptr(self) -> bool {
        self.0 & IS_PTR != 0
    }

    /// The record is logically deleted.
    pub const fn is_removed(self) -> bool {
        self.0 & REMOVED != 0
    }

    /// The slot holds no record yet (XIndex-H buckets).
    pub const fn is_uninitialized(self) -> bool {
        self.0 & UNINITIALIZED != 0
    }

    /// A writer held the lock when this snapshot was taken.
    pub const fn is_locked(self) -> bool {
        self.0 & LOCKED != 0
    }

    /// The modification count (52 bits, wrapping).
    pub const fn version(self) -> u64 {
        self.0 & VERSION_MASK
    }

    /// The owner's tag bits (see the module comment).
    pub const fn tag(self) -> u8 {
        ((self.0 & TAG_MASK) >> TAG_SHIFT) as u8
    }

    /// This snapshot with `is_ptr` set to `on`.
    #[must_use]
    pub const fn with_ptr(self, on: bool) -> Self {
        Self(set_bit(self.0, IS_PTR, on))
    }

    /// This snapshot with `removed` set to `on`.
    #[must_use]
    pub const fn with_removed(self, on: bool) -> Self {
        Self(set_bit(self.0, REMOVED, on))
    }

    /// This snapshot with `uninitialized` set to `on`.
    #[must_use]
    pub const fn with_uninitialized(self, on: bool) -> Self {
        Self(set_bit(self.0, UNINITIALIZED, on))
    }
}

impl fmt::Debug for RecordMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordMeta")
            .field("is_ptr", &self.is_ptr())
            .field("removed", &self.is_removed())
            .field("uninitialized", &self.is_uninitialized())
            .field("locked", &self.is_locked())
            .field("tag", &self.tag())
            .field("version", &self.version())
            .finish()
    }
}

const fn set_bit(word: u64, bit: u64, on: bool) -> u64 {
    if on { word | bit } else { word & !bit }
}

/// An optimistic version lock over one record meta word.
///
/// ```
/// use concurrency::RecordLock;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let lock = RecordLock::default();
/// let (a, b) = (AtomicU64::new(0), AtomicU64::new(0));
///
/// {
///     let mut guard = lock.lock();
///     a.store(7, Ordering::Relaxed);
///     b.store(7, Ordering::Relaxed);
///     guard.set_removed(true);
/// } // one Release store: version + 1, flags, unlock
///
/// let (x, y) = loop {
///     let snapshot = lock.read_begin();
///     let (x, y) = (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
///     if lock.validate(snapshot) {
///         assert!(snapshot.is_removed());
///         break (x, y);
///     }
/// };
/// assert_eq!((x, y), (7, 7));
/// ```
pub struct RecordLock {
    word: AtomicU64,
}

impl RecordLock {
    /// A lock whose word starts as `initial`, unlocked (a lock bit in `initial` is ignored).
    pub fn new(initial: RecordMeta) -> Self {
        Self {
            word: AtomicU64::new(initial.0 & !LOCKED),
        }
    }

    /// The current word (`Acquire`), locked or not. For a consistent read use
    /// [`read_begin`](Self::read_begin) and [`validate`](Self::validate).
    pub fn load(&self) -> RecordMeta {
        RecordMeta(self.word.load(Ordering::Acquire))
    }

    /// Starts an optimistic read: waits (with backoff) until no writer holds the lock and returns
    /// the unlocked snapshot (`Acquire`).
    #[inline]
    pub fn read_begin(&self) -> RecordMeta {
        let mut backoff = Backoff::new();
        loop {
            let word = self.word.load(Ordering::Acquire);
            if word & LOCKED == 0 {
                return RecordMeta(word);
            }
            backoff.snooze();
        }
    }

    /// Ends an optimistic read begun with `snapshot`: true iff no writer locked the word since,
    /// so every protected atomic loaded in between belongs to the state `snapshot` describes.
    #[inline]
    pub fn validate(&self, snapshot: RecordMeta) -> bool {
        // Orders the protected loads before the reload (see the module comment).
        fence(Ordering::Acquire);
        !snapshot.is_locked() && self.word.load(Ordering::Relaxed) == snapshot.0
    }

    /// Takes the lock if it is free, without waiting.
    pub fn try_lock(&self) -> Option<RecordGuard<'_>> {
        let word = self.word.load(Ordering::Relaxed);
        if word & LOCKED != 0 {
            return None;
        }
        self.acquire_from(word)
    }

    /// Takes the lock only if the word still equals `snapshot` (from
    /// [`read_begin`](Self::read_begin)): an optimistic read upgraded to a write, failing if any
    /// writer intervened.
    pub fn try_upgrade(&self, snapshot: RecordMeta) -> Option<RecordGuard<'_>> {
        if snapshot.is_locked() {
            return None;
        }
        self.acquire_from(snapshot.0)
    }

    /// Takes the lock, spinning with backoff while another writer holds it.
    pub fn lock(&self) -> RecordGuard<'_> {
        let mut backoff = Backoff::new();
        loop {
            if let Some(guard) = self.try_lock() {
                return guard;
            }
            backoff.snooze();
        }
    }

    fn acquire_from(&self, unlocked: u64) -> Option<RecordGuard<'_>> {
        let locked = unlocked | LOCKED;
        self.word
            .compare_exchange(unlocked, locked, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // Orders the lock CAS before every store made under the lock, so that a reader who sees
        // one of those stores also sees the word locked (see the module comment).
        fence(Ordering::Release);
        Some(RecordGuard {
            word: &self.word,
            meta: locked,
        })
    }
}

impl Default for RecordLock {
    /// All flags clear, version 0, unlocked.
    fn default() -> Self {
        Self::new(RecordMeta::new())
    }
}

impl fmt::Debug for RecordLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RecordLock").field(&self.load()).finish()
    }
}

/// Exclusive access to a record; dropping it unlocks with `version + 1`.
///
/// Flag changes are kept in the guard and published together with the version bump and the
/// cleared lock bit in one `Release` store, so readers never see a half-updated word.
#[must_use = "the record is unlocked as soon as the guard is dropped"]
pub struct RecordGuard<'a> {
    word: &'a AtomicU64,
    meta: u64,
}

impl RecordGuard<'_> {
    /// The word as it will be published, before the version bump (the lock bit is set).
    pub fn meta(&self) -> RecordMeta {
        RecordMeta(self.meta)
    }

    /// Sets or clears `is_ptr`.
    pub fn set_ptr(&mut self, on: bool) {
        self.meta = set_bit(self.meta, IS_PTR, on);
    }

    /// Sets or clears `removed`.
    pub fn set_removed(&mut self, on: bool) {
        self.meta = set_bit(self.meta, REMOVED, on);
    }

    /// Sets or clears `uninitialized`.
    pub fn set_uninitialized(&mut self, on: bool) {
        self.meta = set_bit(self.meta, UNINITIALIZED, on);
    }

    /// Adds `bits` to the tag; tag bits are never cleared.
    pub fn add_tag(&mut self, bits: u8) {
        self.meta |= u64::from(bits) << TAG_SHIFT;
    }
}

impl Drop for RecordGuard<'_> {
    fn drop(&mut self) {
        let version = (self.meta & VERSION_MASK).wrapping_add(1) & VERSION_MASK;
        self.word.store(
            (self.meta & (FLAGS | TAG_MASK)) | version,
            Ordering::Release,
        );
    }
}

impl fmt::Debug for RecordGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RecordGuard").field(&self.meta()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unlock_bumps_version_once_and_publishes_flags() {
        let lock = RecordLock::default();
        let before = lock.read_begin();
        {
            let mut g = lock.lock();
            assert!(g.meta().is_locked());
            assert!(lock.load().is_locked());
            g.set_ptr(true);
            g.set_removed(true);
            // Flags are published only at unlock.
            assert!(!lock.load().is_ptr());
        }
        let after = lock.read_begin();
        assert_eq!(after.version(), before.version() + 1);
        assert!(after.is_ptr() && after.is_removed() && !after.is_locked());
        assert!(!lock.validate(before));
        assert!(lock.validate(after));
    }

    #[test]
    fn tag_bits_accumulate_and_survive_later_writes() {
        let lock = RecordLock::default();
        lock.lock().add_tag(0b0000_0101);
        assert_eq!(lock.load().tag(), 0b0000_0101);
        lock.lock().add_tag(0b1000_0001);
        assert_eq!(lock.load().tag(), 0b1000_0101);
        {
            let mut g = lock.lock();
            g.set_removed(true);
        }
        let meta = lock.read_begin();
        assert_eq!((meta.tag(), meta.version()), (0b1000_0101, 3));
        assert!(meta.is_removed() && !meta.is_ptr() && !meta.is_uninitialized());
    }

    #[test]
    fn try_lock_and_try_upgrade_respect_holders_and_versions() {
        let lock = RecordLock::new(RecordMeta::new().with_uninitialized(true));
        let snap = lock.read_begin();
        assert!(snap.is_uninitialized());
        let g = lock.try_lock().expect("the lock is free");
        assert!(lock.try_lock().is_none());
        assert!(lock.try_upgrade(snap).is_none());
        assert!(!lock.validate(lock.load()), "a locked word never validates");
        drop(g);
        assert!(lock.try_upgrade(snap).is_none(), "the version moved on");
        let fresh = lock.read_begin();
        let mut g = lock
            .try_upgrade(fresh)
            .expect("nothing changed since the snapshot");
        g.set_uninitialized(false);
        drop(g);
        assert!(!lock.read_begin().is_uninitialized());
    }

    #[test]
    fn new_ignores_a_lock_bit() {
        let locked = {
            let lock = RecordLock::default();
            let _g = lock.lock();
            lock.load()
        };
        assert!(locked.is_locked());
        let lock = RecordLock::new(locked);
        assert!(!lock.load().is_locked());
        assert!(lock.try_lock().is_some());
    }

    #[test]
    fn version_wraps_without_touching_flags() {
        let lock = RecordLock::new(RecordMeta(VERSION_MASK | REMOVED));
        drop(lock.lock());
        let meta = lock.read_begin();
        assert_eq!(meta.version(), 0);
        assert!(meta.is_removed() && !meta.is_ptr() && !meta.is_uninitialized());
    }

    proptest! {
        #[test]
        fn builders_and_accessors_agree(
            ptr in any::<bool>(),
            removed in any::<bool>(),
            uninit in any::<bool>(),
            version in 0..=VERSION_MASK,
        ) {
            let meta = RecordMeta(version)
                .with_ptr(ptr)
                .with_removed(removed)
                .with_uninitialized(uninit);
            prop_assert_eq!(meta.is_ptr(), ptr);
            prop_assert_eq!(meta.is_removed(), removed);
            prop_assert_eq!(meta.is_uninitialized(), uninit);
            prop_assert!(!meta.is_locked());
            prop_assert_eq!(meta.version(), version);

            let lock = RecordLock::new(meta);
            let mut g = lock.lock();
            g.set_ptr(!ptr);
            drop(g);
            let next = lock.read_begin();
            prop_assert_eq!(next.is_ptr(), !ptr);
            prop_assert_eq!(next.is_removed(), removed);
            prop_assert_eq!(next.is_uninitialized(), uninit);
            prop_assert_eq!(next.version(), (version + 1) & VERSION_MASK);
        }
    }
}
