//! The loom shim: the one place protocol code gets atomics, cells, locks and threads from.
//!
//! Under `cfg(loom)` every item is loom's model-checked version; otherwise it is `std` (and
//! `parking_lot` for [`Mutex`]). This is the pattern of tokio's `loom` module and sharded-slab's
//! `sync` module (see `peers.md` §E). Where the two differ in API, this module gives both builds
//! the same one:
//!
//! - [`cell::UnsafeCell`] has loom's closure API (`with`, `with_mut`) in both builds, so loom can
//!   check every access to a non-atomic cell for races;
//! - [`Mutex::lock`] returns the guard directly in both builds (parking_lot's API; lock poisoning
//!   is ignored under loom, as parking_lot has none).
//!
//! Loom's atomics have no `const fn new`, so `static` atomics do not build under loom: put shared
//! state in a value the caller owns.
//!
//! ```
//! use concurrency::sync::atomic::{AtomicU64, Ordering};
//! use concurrency::sync::{thread, Arc};
//!
//! let hits = Arc::new(AtomicU64::new(0));
//! let worker = {
//!     let hits = Arc::clone(&hits);
//!     thread::spawn(move || hits.fetch_add(1, Ordering::Relaxed))
//! };
//! worker.join().expect("the worker does not panic");
//! assert_eq!(hits.load(Ordering::Relaxed), 1);
//! ```

use std::fmt;

#[cfg(loom)]
pub use loom::sync::Arc;
#[cfg(loom)]
pub use loom::thread;
#[cfg(loom)]
pub use loom::thread_local;
#[cfg(not(loom))]
pub use std::sync::Arc;
#[cfg(not(loom))]
pub use std::thread;
#[cfg(not(loom))]
pub use std::thread_local;

pub mod atomic {
    //! Atomic integers, pointers, orderings and fences (`std::sync::atomic` or loom's).

    #[cfg(loom)]
    pub use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
    #[cfg(not(loom))]
    pub use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
}

pub mod hint {
    //! Processor hints: `spin_loop` (under loom it yields to the model scheduler).

    #[cfg(loom)]
    pub use loom::hint::spin_loop;
    #[cfg(not(loom))]
    pub use std::hint::spin_loop;
}

pub mod cell {
    //! Interior mutability with loom's closure API.

    #[cfg(loom)]
    pub use loom::cell::UnsafeCell;

    /// `std::cell::UnsafeCell` with loom's closure API, so that code written for loom builds
    /// unchanged without it.
    ///
    /// The closures receive raw pointers; dereferencing them is the caller's `unsafe` and the
    /// caller's proof that no conflicting access runs at the same time. Under loom the same calls
    /// are checked: overlapping `with_mut`/`with` calls from two threads fail the model.
    ///
    /// ```
    /// use concurrency::sync::cell::UnsafeCell;
    ///
    /// let cell = UnsafeCell::new(1_u32);
    /// // SAFETY: `cell` is local to this thread, so no other access can overlap.
    /// cell.with_mut(|p| unsafe { *p += 1 });
    /// // SAFETY: as above.
    /// assert_eq!(cell.with(|p| unsafe { *p }), 2);
    /// ```
    #[cfg(not(loom))]
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        pub fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Unwraps the value.
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    #[cfg(not(loom))]
    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a shared pointer to the value.
        #[inline]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a mutable pointer to the value.
        #[inline]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
type InnerMutex<T> = loom::sync::Mutex<T>;
#[cfg(not(loom))]
type InnerMutex<T> = parking_lot::Mutex<T>;

/// The guard of a locked [`Mutex`]; the lock is released when it is dropped.
#[cfg(loom)]
pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
/// The guard of a locked [`Mutex`]; the lock is released when it is dropped.
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

/// A blocking mutual-exclusion lock: `parking_lot::Mutex`, or loom's under `cfg(loom)`.
///
/// For the few places that block (registries, background hand-offs); hot paths use the
/// optimistic locks of this crate instead.
///
/// ```
/// use concurrency::sync::Mutex;
///
/// let names = Mutex::new(Vec::new());
/// names.lock().push("a");
/// assert_eq!(names.lock().len(), 1);
/// assert!(names.try_lock().is_some());
/// ```
pub struct Mutex<T> {
    inner: InnerMutex<T>,
}

impl<T> Mutex<T> {
    /// Creates an unlocked mutex holding `value`.
    pub fn new(value: T) -> Self {
        Self {
            inner: InnerMutex::new(value),
        }
    }

    /// Consumes the mutex and returns the value.
    pub fn into_inner(self) -> T {
        #[cfg(loom)]
        {
            self.inner
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        #[cfg(not(loom))]
        {
            self.inner.into_inner()
        }
    }

    /// Returns the value through exclusive access, without locking.
    pub fn get_mut(&mut self) -> &mut T {
        #[cfg(loom)]
        {
            self.inner
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        #[cfg(not(loom))]
        {
            self.inner.get_mut()
        }
    }

    /// Blocks until the lock is acquired.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(loom)]
        {
            self.inner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        #[cfg(not(loom))]
        {
            self.inner.lock()
        }
    }

    /// Acquires the lock if it is free, without blocking.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        #[cfg(loom)]
        {
            match self.inner.try_lock() {
                Ok(guard) => Some(guard),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
        #[cfg(not(loom))]
        {
            self.inner.try_lock()
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex").finish_non_exhaustive()
    }
}

#[cfg(loom)]
type InnerCondvar = loom::sync::Condvar;
#[cfg(not(loom))]
type InnerCondvar = parking_lot::Condvar;

/// A condition variable for [`Mutex`]: `parking_lot::Condvar`, or loom's under `cfg(loom)`.
///
/// Both builds take the guard by value and hand it back, so waiting code is the same in both.
///
/// ```
/// use concurrency::sync::{Arc, Condvar, Mutex, thread};
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let setter = {
///     let pair = Arc::clone(&pair);
///     thread::spawn(move || {
///         *pair.0.lock() = true;
///         pair.1.notify_all();
///     })
/// };
/// let mut ready = pair.0.lock();
/// while !*ready {
///     ready = pair.1.wait(ready);
/// }
/// drop(ready);
/// setter.join().expect("the setter does not panic");
/// ```
pub struct Condvar {
    inner: InnerCondvar,
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub fn new() -> Self {
        Self {
            inner: InnerCondvar::new(),
        }
    }

    /// Releases the lock held by `guard`, blocks until notified (or spuriously woken), and
    /// returns the guard of the re-acquired lock.
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        #[cfg(loom)]
        {
            self.inner
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
        #[cfg(not(loom))]
        {
            let mut guard = guard;
            self.inner.wait(&mut guard);
            guard
        }
    }

    /// As [`Condvar::wait`], but gives up after `timeout`; the flag says whether it timed out.
    /// Under loom the timeout is a possible spurious wake-up at any point.
    pub fn wait_for<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        #[cfg(loom)]
        {
            let (guard, result) = self
                .inner
                .wait_timeout(guard, timeout)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (guard, result.timed_out())
        }
        #[cfg(not(loom))]
        {
            let mut guard = guard;
            let timed_out = self.inner.wait_for(&mut guard, timeout).timed_out();
            (guard, timed_out)
        }
    }

    /// Wakes one waiting thread.
    pub fn notify_one(&self) {
        self.inner.notify_one();
    }

    /// Wakes every waiting thread.
    pub fn notify_all(&self) {
        self.inner.notify_all();
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::cell::UnsafeCell;
    use super::*;

    #[test]
    fn unsafe_cell_closure_api_round_trips() {
        let cell = UnsafeCell::new(vec![1, 2]);
        // SAFETY: the cell is local to this test thread.
        cell.with_mut(|v| unsafe { (*v).push(3) });
        // SAFETY: as above.
        assert_eq!(cell.with(|v| unsafe { (*v).len() }), 3);
        assert_eq!(cell.into_inner(), vec![1, 2, 3]);
    }

    #[test]
    fn mutex_try_lock_fails_while_held() {
        let mut m = Mutex::new(5);
        {
            let guard = m.lock();
            assert!(m.try_lock().is_none());
            assert_eq!(*guard, 5);
        }
        *m.get_mut() += 1;
        assert_eq!(*m.try_lock().expect("nobody holds the lock"), 6);
        assert_eq!(m.into_inner(), 6);
    }

    #[test]
    fn mutex_serialises_threads() {
        let m = Arc::new(Mutex::new(0_u64));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let m = Arc::clone(&m);
                thread::spawn(move || {
                    for _ in 0..1000 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("workers do not panic");
        }
        assert_eq!(*m.lock(), 4000);
    }
}
