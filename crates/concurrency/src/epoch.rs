//! Epoch-based memory reclamation for unlinked nodes, roots and arrays (XIndex frees old groups,
//! roots and data arrays after barrier B3; FINEdex, HydraList, APEX and PLIN retire replaced
//! models and nodes).
//!
//! The pointer types ([`Atomic`], [`Shared`], [`Owned`]) are this module's own, built on the
//! [`sync`](crate::sync) shim's `AtomicPtr`, so loom models every load, store and CAS of a
//! published pointer. Only pinning and deferred destruction differ between the builds:
//!
//! - normal builds: [`pin`] pins the thread in `crossbeam-epoch`'s default collector and
//!   [`Guard::defer_destroy`] hands the object to it;
//! - `cfg(loom)`: [`pin`] is free and deferred objects are destroyed when the model execution
//!   ends (loom drops its lazy statics once the model closure returns; models must join their
//!   threads first). Loom thus checks the protocol around the pointers, not the collector:
//!   `crossbeam-epoch`'s own loom build (`--cfg crossbeam_loom`) multiplies the state space of
//!   every model that pins (DESIGN: over 15 minutes unbounded), and its correctness is
//!   crossbeam's concern. An object is never freed early in a model, so a use-after-free cannot
//!   be found through this module; the ordering barriers are checked through
//!   [`GracePeriod`](crate::GracePeriod) models instead. The bag of deferred objects is a loom
//!   lazy static, whose first access adds one synchronisation edge from the thread that first
//!   deferred an object to later deferrers.
//!
//! Pointer tags are not supported.
//!
//! ```
//! use concurrency::epoch::{self, Atomic, Owned};
//! use std::sync::atomic::Ordering;
//!
//! let root = Atomic::new(1_u64);
//! let guard = epoch::pin();
//! let old = root.swap(Owned::new(2).into_shared(&guard), Ordering::AcqRel, &guard);
//! // SAFETY: `old` is unlinked; readers that loaded it are pinned and keep it alive until
//! // they unpin.
//! unsafe { guard.defer_destroy(old) };
//! // SAFETY: the root is non-null and only freed through `defer_destroy`.
//! assert_eq!(unsafe { *root.load(Ordering::Acquire, &guard).deref() }, 2);
//! drop(guard);
//!
//! let mut root = root;
//! // SAFETY: `root` owns its pointee and nothing else refers to it.
//! drop(unsafe { root.take() });
//! ```

use crate::sync::atomic::{AtomicPtr, Ordering};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr;

/// Pins the current thread: objects deferred through any guard are not destroyed while this
/// guard lives.
pub fn pin() -> Guard {
    Guard {
        #[cfg(not(loom))]
        inner: crossbeam_epoch::pin(),
        #[cfg(loom)]
        _not_send: PhantomData,
    }
}

/// A pinned thread. Pointers loaded through it ([`Shared<'g, T>`]) stay valid while it lives.
pub struct Guard {
    #[cfg(not(loom))]
    inner: crossbeam_epoch::Guard,
    #[cfg(loom)]
    _not_send: PhantomData<*mut ()>,
}

impl Guard {
    /// Destroys the object `ptr` points to once no pinned thread can still hold it.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Owned::into_shared`] (directly or through an [`Atomic`]), is non-null,
    /// is already unreachable for threads that pin after this call, and is deferred only once.
    /// The destructor may run on another thread (hence `T: Send`).
    pub unsafe fn defer_destroy<T: Send>(&self, ptr: Shared<'_, T>) {
        #[cfg(not(loom))]
        {
            let ptr = crossbeam_epoch::Shared::from(ptr.as_raw());
            // SAFETY: the pointer is a `Box` allocation (`Owned` is a `Box`), which is what
            // crossbeam's `Owned` drops; the caller guarantees unreachability and uniqueness.
            unsafe { self.inner.defer_destroy(ptr) };
        }
        #[cfg(loom)]
        loom_bag::defer_drop(ptr.ptr.cast_mut());
    }

    /// Pushes this thread's deferred objects to the collector, so they can be destroyed sooner.
    pub fn flush(&self) {
        #[cfg(not(loom))]
        self.inner.flush();
    }
}

/// Unpinning is free under loom, but the guard keeps `Drop` so that code which drops guards
/// explicitly reads (and lints) the same in both builds.
#[cfg(loom)]
impl Drop for Guard {
    fn drop(&mut self) {}
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").finish_non_exhaustive()
    }
}

/// An atomic pointer to a heap object reclaimed through [`Guard::defer_destroy`].
///
/// Dropping an `Atomic` does not free its pointee; see [`take`](Self::take).
pub struct Atomic<T> {
    ptr: AtomicPtr<T>,
    _owns: PhantomData<*mut T>,
}

// SAFETY: sharing an `Atomic<T>` lets other threads read the pointee (`T: Sync`) and take it
// over to drop it (`T: Send`); the pointer itself is an atomic.
unsafe impl<T: Send + Sync> Send for Atomic<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Atomic<T> {}

impl<T> Atomic<T> {
    /// Allocates `value` and points to it.
    pub fn new(value: T) -> Self {
        Self::from(Owned::new(value))
    }

    /// A null pointer.
    pub fn null() -> Self {
        Self {
            ptr: AtomicPtr::new(ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// Loads the pointer; it stays valid while `guard` lives.
    pub fn load<'g>(&self, order: Ordering, _guard: &'g Guard) -> Shared<'g, T> {
        Shared::from_raw(self.ptr.load(order))
    }

    /// Stores `new`.
    pub fn store(&self, new: Shared<'_, T>, order: Ordering) {
        self.ptr.store(new.ptr.cast_mut(), order);
    }

    /// Stores `new` and returns the previous pointer.
    pub fn swap<'g>(
        &self,
        new: Shared<'_, T>,
        order: Ordering,
        _guard: &'g Guard,
    ) -> Shared<'g, T> {
        Shared::from_raw(self.ptr.swap(new.ptr.cast_mut(), order))
    }

    /// Stores `new` if the pointer equals `current`; returns the previous pointer on success
    /// and the actual one on failure.
    pub fn compare_exchange<'g>(
        &self,
        current: Shared<'_, T>,
        new: Shared<'_, T>,
        success: Ordering,
        failure: Ordering,
        _guard: &'g Guard,
    ) -> Result<Shared<'g, T>, Shared<'g, T>> {
        self.ptr
            .compare_exchange(current.ptr.cast_mut(), new.ptr.cast_mut(), success, failure)
            .map(Shared::from_raw)
            .map_err(Shared::from_raw)
    }

    /// Takes the pointee out through exclusive access, leaving null; for `Drop` impls.
    ///
    /// # Safety
    ///
    /// The pointee is owned by this `Atomic`: no other `Atomic` points to it and it was not
    /// (and will not be) passed to [`Guard::defer_destroy`].
    pub unsafe fn take(&mut self) -> Option<Owned<T>> {
        let raw = self.ptr.swap(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: non-null pointers stored here come from `Owned` (a `Box`), and the caller
        // guarantees this `Atomic` owns it.
        (!raw.is_null()).then(|| unsafe { Shared::from_raw(raw).into_owned() })
    }
}

impl<T> From<Owned<T>> for Atomic<T> {
    fn from(owned: Owned<T>) -> Self {
        Self {
            ptr: AtomicPtr::new(Box::into_raw(owned.boxed)),
            _owns: PhantomData,
        }
    }
}

impl<T> Default for Atomic<T> {
    fn default() -> Self {
        Self::null()
    }
}

impl<T> fmt::Debug for Atomic<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Atomic")
            .field(&self.ptr.load(Ordering::Relaxed))
            .finish()
    }
}

/// An owned heap object not yet published (a `Box`).
pub struct Owned<T> {
    boxed: Box<T>,
}

impl<T> Owned<T> {
    /// Allocates `value`.
    pub fn new(value: T) -> Self {
        Self {
            boxed: Box::new(value),
        }
    }

    /// Gives up ownership to a shared pointer, to be published through an [`Atomic`].
    pub fn into_shared<'g>(self, _guard: &'g Guard) -> Shared<'g, T> {
        Shared::from_raw(Box::into_raw(self.boxed))
    }

    /// The underlying box.
    pub fn into_box(self) -> Box<T> {
        self.boxed
    }
}

impl<T> Deref for Owned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.boxed
    }
}

impl<T> DerefMut for Owned<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.boxed
    }
}

impl<T: fmt::Debug> fmt::Debug for Owned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Owned").field(&self.boxed).finish()
    }
}

/// A pointer loaded under a guard, valid for the guard's lifetime `'g` (or null).
pub struct Shared<'g, T> {
    ptr: *const T,
    _guard: PhantomData<(&'g (), *const T)>,
}

impl<'g, T> Shared<'g, T> {
    /// The null pointer.
    pub fn null() -> Self {
        Self::from_raw(ptr::null_mut())
    }

    fn from_raw(ptr: *mut T) -> Self {
        Self {
            ptr,
            _guard: PhantomData,
        }
    }

    /// True for the null pointer.
    pub fn is_null(self) -> bool {
        self.ptr.is_null()
    }

    /// The raw pointer.
    pub fn as_raw(self) -> *const T {
        self.ptr
    }

    /// A reference to the pointee, or `None` for null.
    ///
    /// # Safety
    ///
    /// A non-null pointer was loaded under the guard `'g` borrows from (or is otherwise kept
    /// alive for `'g`), and its object is destroyed only through [`Guard::defer_destroy`].
    pub unsafe fn as_ref(self) -> Option<&'g T> {
        // SAFETY: the caller guarantees the pointee lives for `'g`.
        unsafe { self.ptr.as_ref() }
    }

    /// A reference to the pointee.
    ///
    /// # Safety
    ///
    /// As for [`as_ref`](Self::as_ref), and the pointer is non-null.
    pub unsafe fn deref(self) -> &'g T {
        // SAFETY: the caller guarantees a non-null pointee that lives for `'g`.
        unsafe { &*self.ptr }
    }

    /// Takes ownership of the pointee.
    ///
    /// # Safety
    ///
    /// The pointer is non-null, came from [`Owned`], and no other thread can reach or free it.
    pub unsafe fn into_owned(self) -> Owned<T> {
        Owned {
            // SAFETY: the caller guarantees a unique, non-null `Box` allocation.
            boxed: unsafe { Box::from_raw(self.ptr.cast_mut()) },
        }
    }
}

impl<T> Clone for Shared<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<'_, T> {}

impl<T> PartialEq for Shared<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        ptr::eq(self.ptr, other.ptr)
    }
}

impl<T> Eq for Shared<'_, T> {}

impl<T> fmt::Debug for Shared<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Shared").field(&self.ptr).finish()
    }
}

/// Under loom: deferred objects wait in a per-execution bag destroyed when the model ends.
#[cfg(loom)]
mod loom_bag {
    use std::sync::{Mutex, PoisonError};

    /// A type-erased `Box` allocation and the function that drops it.
    struct Deferred {
        ptr: *mut (),
        drop: unsafe fn(*mut ()),
    }

    /// Deferred objects of one model execution; dropping the bag destroys them.
    ///
    /// A std mutex, invisible to loom: loom runs all model threads on one OS thread and never
    /// switches inside the critical section (it has no loom operation), so it adds no
    /// interleavings.
    struct Bag(Mutex<Vec<Deferred>>);

    impl Drop for Bag {
        fn drop(&mut self) {
            let deferred = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
            for item in deferred.drain(..) {
                // SAFETY: `item` was built by `defer_drop` from a unique `Box<T>` allocation with
                // `drop_box::<T>`, and each item is drained, hence dropped, once.
                unsafe { (item.drop)(item.ptr) };
            }
        }
    }

    loom::lazy_static! {
        static ref BAG: Bag = Bag(Mutex::new(Vec::new()));
    }

    /// # Safety
    ///
    /// `ptr` must be a `Box<T>` allocation that nothing else frees.
    unsafe fn drop_box<T>(ptr: *mut ()) {
        // SAFETY: guaranteed by the caller.
        drop(unsafe { Box::from_raw(ptr.cast::<T>()) });
    }

    /// Queues the `Box<T>` at `ptr` for destruction at the end of the execution (the caller
    /// upholds `Guard::defer_destroy`'s contract).
    pub(super) fn defer_drop<T>(ptr: *mut T) {
        BAG.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Deferred {
                ptr: ptr.cast(),
                drop: drop_box::<T>,
            });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, Instant};

    struct Tracked(Arc<AtomicUsize>);

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn compare_exchange_reports_actual_pointer() {
        let a = Atomic::new(1_u32);
        let guard = pin();
        let cur = a.load(Ordering::Acquire, &guard);
        let fresh = Owned::new(2).into_shared(&guard);
        let stale = Shared::null();
        assert_eq!(
            a.compare_exchange(stale, fresh, Ordering::AcqRel, Ordering::Acquire, &guard),
            Err(cur)
        );
        assert_eq!(
            a.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire, &guard),
            Ok(cur)
        );
        // SAFETY: loaded under `guard`, non-null, freed only through `defer_destroy`.
        let value = unsafe { a.load(Ordering::Acquire, &guard).as_ref() };
        assert_eq!(value, Some(&2));
        // SAFETY: `cur` is unlinked and deferred once.
        unsafe { guard.defer_destroy(cur) };
        drop(guard);
        let mut a = a;
        // SAFETY: `a` owns `fresh`.
        assert_eq!(unsafe { a.take() }.map(|o| *o.into_box()), Some(2));
        // SAFETY: now null.
        assert!(unsafe { a.take() }.is_none());
    }

    #[test]
    fn deferred_objects_are_destroyed_eventually() {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Atomic::new(Tracked(Arc::clone(&drops)));
        for _ in 0..10 {
            let guard = pin();
            let fresh = Owned::new(Tracked(Arc::clone(&drops))).into_shared(&guard);
            let old = slot.swap(fresh, Ordering::AcqRel, &guard);
            // SAFETY: `old` is unlinked and deferred once.
            unsafe { guard.defer_destroy(old) };
            guard.flush();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while drops.load(Ordering::Relaxed) < 10 && Instant::now() < deadline {
            pin().flush();
        }
        assert_eq!(drops.load(Ordering::Relaxed), 10);
        let mut slot = slot;
        // SAFETY: `slot` owns the last object.
        drop(unsafe { slot.take() });
        assert_eq!(drops.load(Ordering::Relaxed), 11);
    }

    #[test]
    fn null_and_debug() {
        let a: Atomic<u8> = Atomic::default();
        let guard = pin();
        assert!(a.load(Ordering::Relaxed, &guard).is_null());
        // SAFETY: null pointers are allowed in `as_ref`.
        assert!(unsafe { a.load(Ordering::Relaxed, &guard).as_ref() }.is_none());
        assert!(format!("{a:?} {guard:?} {:?}", Owned::new(3)).contains("Owned(3)"));
    }
}
