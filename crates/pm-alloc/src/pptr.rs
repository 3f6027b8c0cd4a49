//! Offset pointers: the only kind of pointer stored in persistent memory.
//!
//! A pool may be mapped at a different address at every open, so PM never holds an address
//! (DESIGN.md, "Persistent memory"; APEX digest §2.1 "\[R\]: use 64-bit pool offsets instead" of
//! PMDK's fixed mapping address). [`PPtr<T>`] is a byte offset from the pool's start; offset 0
//! is the pool header, so it doubles as the null pointer. [`PAtomicPtr<T>`] is the persistent
//! cell holding one: an 8-byte atomic word, stored and persisted failure-atomically, and the
//! place the allocator publishes a new block into.
//!
//! [`Persistent`] marks the types a pool hands out shared references to: any bit pattern is a
//! valid value (the memory may hold anything after a crash) and all mutation goes through
//! atomics (several threads may touch a block). These words are `std` atomics in every build:
//! they live in mapped memory, where loom's atomics cannot be placed; the DRAM protocols around
//! them take their atomics from `concurrency::sync` and are model-checked there.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

/// A pointer to a `T` in a pool, as a byte offset from the pool's start (0 is null).
///
/// `PPtr` is plain data: it is `Copy`, `Send` and `Sync` whatever `T` is, and resolving it
/// needs the pool ([`Pool::get`](crate::Pool::get)).
///
/// ```
/// use pm_alloc::PPtr;
///
/// let p = PPtr::<u64>::from_offset(4096);
/// assert_eq!(p.offset(), 4096);
/// assert!(!p.is_null());
/// assert!(PPtr::<u64>::null().is_null());
/// assert_eq!(p.byte_add(8).offset(), 4104);
/// ```
#[repr(transparent)]
pub struct PPtr<T> {
    offset: u64,
    marker: PhantomData<fn() -> T>,
}

impl<T> PPtr<T> {
    /// The null pointer (offset 0).
    pub const fn null() -> Self {
        Self::from_offset(0)
    }

    /// A pointer to the byte `offset` of the pool.
    pub const fn from_offset(offset: u64) -> Self {
        Self {
            offset,
            marker: PhantomData,
        }
    }

    /// The byte offset from the pool's start.
    pub const fn offset(self) -> u64 {
        self.offset
    }

    /// Whether this is the null pointer.
    pub const fn is_null(self) -> bool {
        self.offset == 0
    }

    /// The same offset, read as a pointer to a `U`.
    pub const fn cast<U>(self) -> PPtr<U> {
        PPtr::from_offset(self.offset)
    }

    /// The pointer `bytes` further into the pool (wrapping; resolution checks the bounds).
    pub const fn byte_add(self, bytes: u64) -> Self {
        Self::from_offset(self.offset.wrapping_add(bytes))
    }
}

impl<T> Clone for PPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PPtr<T> {}

impl<T> PartialEq for PPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.offset == other.offset
    }
}

impl<T> Eq for PPtr<T> {}

impl<T> Hash for PPtr<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.offset.hash(state);
    }
}

impl<T> Default for PPtr<T> {
    fn default() -> Self {
        Self::null()
    }
}

impl<T> fmt::Debug for PPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PPtr({:#x})", self.offset)
    }
}

/// A persistent, atomically updated [`PPtr<T>`]: one aligned 8-byte word in the pool.
///
/// Stores to it are failure-atomic (an aligned 8-byte store never tears), so it is the place a
/// block is published into ([`Pool::publish`](crate::Pool::publish)) and the place a
/// structure's pointers live.
#[repr(transparent)]
pub struct PAtomicPtr<T> {
    word: AtomicU64,
    marker: PhantomData<fn() -> T>,
}

impl<T> PAtomicPtr<T> {
    /// A cell holding `p` (for DRAM copies and tests; cells in a pool are reached through it).
    pub const fn new(p: PPtr<T>) -> Self {
        Self {
            word: AtomicU64::new(p.offset),
            marker: PhantomData,
        }
    }

    /// Loads the pointer.
    pub fn load(&self, order: Ordering) -> PPtr<T> {
        PPtr::from_offset(self.word.load(order))
    }

    /// Stores `p` (not persisted: call [`Pool::persist_ref`](crate::Pool::persist_ref)).
    pub fn store(&self, p: PPtr<T>, order: Ordering) {
        self.word.store(p.offset, order);
    }

    /// Swaps in `new` if the cell holds `current`; returns the previous pointer either way.
    pub fn compare_exchange(
        &self,
        current: PPtr<T>,
        new: PPtr<T>,
        success: Ordering,
        failure: Ordering,
    ) -> Result<PPtr<T>, PPtr<T>> {
        self.word
            .compare_exchange(current.offset, new.offset, success, failure)
            .map(PPtr::from_offset)
            .map_err(PPtr::from_offset)
    }

    /// The underlying word.
    pub fn as_word(&self) -> &AtomicU64 {
        &self.word
    }

    /// Views an 8-byte word of the pool as a pointer cell.
    pub fn from_word(word: &AtomicU64) -> &Self {
        let cell = std::ptr::from_ref(word).cast::<Self>();
        // SAFETY: `PAtomicPtr<T>` is `repr(transparent)` over `AtomicU64` (the marker is a
        // zero-sized `PhantomData`), so the cast keeps size, alignment and validity, and the
        // lifetime is the word's.
        unsafe { &*cell }
    }
}

impl<T> fmt::Debug for PAtomicPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PAtomicPtr({:?})", self.load(Ordering::Relaxed))
    }
}

/// Types that may be viewed in place in a pool through a shared reference.
///
/// # Safety
///
/// An implementor must be valid for every bit pattern (after a crash a block holds whatever
/// reached the media), contain no pointers or references (only offsets), and allow mutation
/// only through atomics (the memory is shared between threads and with the pool's flushes).
pub unsafe trait Persistent: Sync {}

// SAFETY: an atomic integer is valid for every bit pattern and mutates only atomically.
unsafe impl Persistent for AtomicU64 {}
// SAFETY: as for `AtomicU64`.
unsafe impl Persistent for AtomicU32 {}
// SAFETY: as for `AtomicU64`.
unsafe impl Persistent for AtomicU16 {}
// SAFETY: as for `AtomicU64`.
unsafe impl Persistent for AtomicU8 {}
// SAFETY: a `repr(transparent)` `AtomicU64` holding an offset, never an address.
unsafe impl<T> Persistent for PAtomicPtr<T> {}
// SAFETY: an array of valid-for-all-bits, atomics-only elements is the same.
unsafe impl<T: Persistent, const N: usize> Persistent for [T; N] {}
