//! The grace-period barrier: XIndex's `rcu_barrier` (XIndex §4.3 of the digest; compaction
//! barriers B1–B3, §3.8) built as quiescent-state-based reclamation (QSBR) with an offline state.
//!
//! A [`GracePeriod`] is a domain (one per index). Threads take part through a [`Participant`]:
//! an operation marks its thread *online* for its duration ([`Participant::enter`] or, with a
//! per-thread participant cached for the domain, [`GracePeriod::enter`]) and *offline* when the
//! returned [`OnlineGuard`] drops; a retry loop announces a *quiescent point* each iteration
//! ([`OnlineGuard::quiescent`]). [`GracePeriod::synchronize`] returns once every participant that
//! was online when it started has gone offline or passed a quiescent point, so every operation
//! that could still see state unlinked before the call has finished. It never waits for an
//! offline (idle) thread, which fixes the reference code's barrier (a worker that stops issuing
//! operations stalled it forever), and it cannot deadlock with a thread that spins in a retry loop
//! waiting for the synchronizer's next step, because that loop announces quiescence.
//!
//! # Protocol
//!
//! The domain has a counter (starting at 1). Each participant publishes a state word: `OFFLINE`
//! (`u64::MAX`) or the counter value it read at its last quiescent point or online entry.
//!
//! - *online entry*: `c = counter.load(Acquire)`; `state.store(c, Release)`; light fence;
//!   then the operation reads shared data.
//! - *quiescent point*: `c = counter.load(Acquire)`; `state.store(c, Release)` (skipped when equal).
//! - *going offline*: `state.store(OFFLINE, Release)`.
//! - *synchronize*: the caller has unlinked some object `O`; `target = counter.fetch_add(1,
//!   Release) + 1`; heavy fence; snapshot the registered slots; wait (spinning briefly, then
//!   sleeping 20 µs, doubling up to 1 ms) until each slot's `state.load(Acquire) >= target`
//!   (`OFFLINE` is the maximum, so it always passes).
//!
//! The light and heavy fences are an asymmetric pair (`asymmetric_fence`): on Linux with
//! `membarrier`, a compiler fence and `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`; elsewhere,
//! and always under loom, `fence(SeqCst)` on both sides. A domain picks its pair once, at
//! creation, so every handshake in it uses one kind.
//!
//! Why a participant `P` can no longer hold `O` once `synchronize` returns, by the value it read:
//!
//! 1. `state >= target`, a counter value: `P` read the counter at or after the bump with
//!    `Acquire`, so the unlink (sequenced before the bump) happens before everything `P` reads
//!    after that point and `P` cannot find `O` any more. What `P` read before the point it
//!    published with `Release`, so those reads happen before the synchronizer's return.
//! 2. `OFFLINE`, stored when `P` left an operation: the `Release` store orders the operation's
//!    reads before the synchronizer's `Acquire` load.
//! 3. `OFFLINE`, although `P` has meanwhile gone online (the synchronizer read an older value):
//!    this is the Dekker pattern. `P` stores its state and then issues the light fence before
//!    reading shared data; the synchronizer unlinks, issues the heavy fence, then reads the
//!    state. With `SeqCst` fences on both sides: if the synchronizer's load missed `P`'s store,
//!    its fence precedes `P`'s fence in the single total order of `SeqCst` fences, so `P`'s
//!    later reads see the unlink. With `membarrier`: the system call makes `P` execute a full
//!    barrier at some point `M` of its execution (an interrupt if it is running, the context
//!    switch otherwise) before the call returns. If `M` follows `P`'s state store, the store is
//!    visible to the synchronizer's later load, which then reads `P`'s counter value (case 1) or
//!    a later state; so if the load missed it, `M` precedes the store, hence precedes `P`'s reads
//!    of shared data (the light fence keeps the compiler from hoisting them above the store, and
//!    the CPU completes them after `M`), and those reads see the unlink, which the synchronizer
//!    made before the call.
//!
//! A participant registered after the snapshot is not waited for: registration takes the
//! registry lock after the synchronizer released it, so it happens after the unlink. An
//! unregistering participant stores `OFFLINE` before leaving the registry, so a snapshot that
//! still holds its slot never waits on it.
//!
//! A participant that calls `synchronize` while online is treated as quiescent for its own call
//! (as liburcu-qsbr does): it goes offline for the wait and comes back online after, so it never
//! waits on itself; references it obtained before the call must not be used after it. Like a
//! quiescent point, that is refused inside nested online sections.
//!
//! # Thread-local participants
//!
//! [`GracePeriod::enter`] and [`GracePeriod::synchronize`] find the calling thread's participant
//! for the domain in a thread-local cache, registering it on first use. The cache entry is
//! dropped (and unregistered) when the thread exits. When the [`GracePeriod`] itself is dropped
//! the domain is marked closed; each thread drops its entries for closed domains the next time it
//! registers in any domain, and at exit. Until then an entry keeps the domain's (small) shared
//! state alive, never a dangling reference. Under loom the cache is loom's `thread_local!`, so
//! the same code is model-checked.
//!
//! # Cost
//!
//! Entering costs one load and one store, plus a `SeqCst` fence (`mfence` on x86-64) only where
//! `membarrier` is missing; a quiescent point one load and usually no store; leaving one store.
//! Only registration, unregistration and `synchronize` take the registry lock; `synchronize`
//! also makes one `membarrier` system call (a few microseconds: it interrupts the CPUs that run
//! the process's other threads).

use crate::asymmetric_fence::Fences;
use crate::backoff::Backoff;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::{Arc, Mutex, thread_local};
use crossbeam_utils::CachePadded;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

/// The state of a participant that holds no references and must not be waited for.
const OFFLINE: u64 = u64::MAX;

/// The shared part of a domain, co-owned by the handle and every participant.
struct Domain {
    /// Grace-period counter, starting at 1; every `synchronize` adds one.
    counter: CachePadded<AtomicU64>,
    /// Slots of the registered participants.
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Set when the `GracePeriod` handle is dropped, so thread-local caches can let go.
    closed: AtomicBool,
    /// The fences of the online-entry handshake (case 3 of the module comment), chosen once.
    fences: Fences,
}

/// One participant's published state: `OFFLINE` or the counter value of its last announcement.
struct Slot {
    state: CachePadded<AtomicU64>,
}

/// Registers a new, offline participant in `domain`. (A free function: loom's `Arc` cannot be a
/// method receiver.)
fn register(domain: &Arc<Domain>) -> Participant {
    let slot = Arc::new(Slot {
        state: CachePadded::new(AtomicU64::new(OFFLINE)),
    });
    domain.slots.lock().push(Arc::clone(&slot));
    Participant {
        domain: Arc::clone(domain),
        slot,
        depth: Cell::new(0),
        fences: domain.fences,
    }
}

/// The first sleep of a synchronizer whose participant is still online after the backoff's
/// spins: on a machine with no core to spare, that participant is usually a thread the
/// synchronizer has preempted, and yielding to it again and again (half of the background
/// thread's time in a 2-worker `rw` profile on 2 cores) costs more than sleeping until it ran.
/// Only restructurers synchronize, never a foreground operation.
const FIRST_NAP: Duration = Duration::from_micros(20);

/// The longest sleep between two checks (each sleep doubles the one before).
const LONGEST_NAP: Duration = Duration::from_millis(1);

impl Domain {
    /// Waits until every participant has been offline or passed a quiescent point since the
    /// call began. The caller's own participant, if any, must be offline.
    fn wait_for_readers(&self) {
        // Release: a participant that reads this bump (or a later one) with Acquire sees
        // everything the caller unlinked before calling (case 1 of the module comment).
        let target = self.counter.fetch_add(1, Ordering::Release) + 1;
        // Pairs with the light fence of online entry (case 3 of the module comment).
        self.fences.heavy();
        let slots = self.slots.lock().clone();
        for slot in &slots {
            let mut backoff = Backoff::new();
            let mut nap = FIRST_NAP;
            while slot.state.load(Ordering::Acquire) < target {
                if backoff.spun_out() && !cfg!(loom) {
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(LONGEST_NAP);
                } else {
                    backoff.snooze();
                }
            }
        }
    }
}

/// A grace-period domain (XIndex's `rcu_barrier`), one per index.
///
/// ```
/// use concurrency::GracePeriod;
/// use std::sync::atomic::{AtomicPtr, Ordering};
///
/// let domain = GracePeriod::new();
/// let current = AtomicPtr::new(Box::into_raw(Box::new(1_u64)));
///
/// // An operation is online for its duration; a retry loop announces quiescent points.
/// {
///     let mut online = domain.enter();
///     // SAFETY: the pointee is freed only after a grace period, and this thread is online.
///     let value = unsafe { *current.load(Ordering::Acquire) };
///     assert_eq!(value, 1);
///     online.quiescent(); // no reference obtained above is used after this point
/// }
///
/// // A writer unlinks, waits for a grace period, then frees.
/// let old = current.swap(Box::into_raw(Box::new(2)), Ordering::AcqRel);
/// domain.synchronize();
/// // SAFETY: `old` was unlinked before `synchronize`, so no online reader can still hold it.
/// drop(unsafe { Box::from_raw(old) });
/// # // SAFETY: no other thread exists.
/// # drop(unsafe { Box::from_raw(current.load(Ordering::Relaxed)) });
/// ```
pub struct GracePeriod {
    domain: Arc<Domain>,
}

impl GracePeriod {
    /// A new domain with no participants.
    pub fn new() -> Self {
        Self {
            domain: Arc::new(Domain {
                counter: CachePadded::new(AtomicU64::new(1)),
                slots: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                fences: Fences::new(),
            }),
        }
    }

    /// Registers an explicit participant (offline until it [`enter`](Participant::enter)s).
    /// It unregisters when dropped.
    pub fn register(&self) -> Participant {
        register(&self.domain)
    }

    /// Marks the calling thread online in this domain until the guard drops, using the thread's
    /// cached participant (registered on first use, unregistered at thread exit). Nested calls
    /// are allowed; the thread goes offline when the outermost guard drops.
    pub fn enter(&self) -> OnlineGuard<'static> {
        let participant = self.local_participant();
        participant.go_online();
        OnlineGuard {
            holder: Holder::Cached(participant),
        }
    }

    /// Waits for a grace period: returns once every participant that was online when the call
    /// began has gone offline or announced a quiescent point.
    ///
    /// If the calling thread is online in this domain through [`enter`](Self::enter), the call
    /// is a quiescent point for it (it goes offline for the wait). A thread that is online
    /// through an explicit [`Participant`] must call [`Participant::synchronize`] instead, or
    /// it waits for itself forever.
    ///
    /// # Panics
    ///
    /// Inside nested online sections of the calling thread, as [`OnlineGuard::quiescent`] does.
    pub fn synchronize(&self) {
        let cached = LOCAL_PARTICIPANTS
            .try_with(|cache| {
                cache
                    .borrow()
                    .iter()
                    .find(|p| Arc::ptr_eq(&p.domain, &self.domain))
                    .cloned()
            })
            .ok()
            .flatten();
        match cached {
            Some(participant) => participant.synchronize(),
            None => self.domain.wait_for_readers(),
        }
    }

    /// The number of registered participants (explicit and thread-local), for diagnostics.
    pub fn participants(&self) -> usize {
        self.domain.slots.lock().len()
    }

    /// The calling thread's cached participant for this domain, registering it if needed.
    fn local_participant(&self) -> Rc<Participant> {
        let cached = LOCAL_PARTICIPANTS.try_with(|cache| {
            if let Some(found) = cache
                .borrow()
                .iter()
                .find(|p| Arc::ptr_eq(&p.domain, &self.domain))
            {
                return (Rc::clone(found), Vec::new());
            }
            let mut cache = cache.borrow_mut();
            let closed: Vec<_> = cache
                .extract_if(.., |p| p.domain.closed.load(Ordering::Relaxed))
                .collect();
            let participant = Rc::new(register(&self.domain));
            cache.push(Rc::clone(&participant));
            (participant, closed)
        });
        match cached {
            // `closed` entries are dropped here, outside the cache borrow: they unregister.
            Ok((participant, _closed)) => participant,
            // The thread is exiting and its cache is gone: an uncached participant that
            // unregisters when the guard drops.
            Err(_) => Rc::new(register(&self.domain)),
        }
    }
}

impl Default for GracePeriod {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for GracePeriod {
    fn drop(&mut self) {
        self.domain.closed.store(true, Ordering::Relaxed);
    }
}

impl fmt::Debug for GracePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GracePeriod")
            .field("counter", &self.domain.counter.load(Ordering::Relaxed))
            .field("participants", &self.participants())
            .field("membarrier", &self.domain.fences.is_expedited())
            .finish()
    }
}

thread_local! {
    /// This thread's participants, one per domain it has entered.
    #[allow(
        clippy::missing_const_for_thread_local,
        reason = "loom's thread_local! has no const initialiser, and both builds share this line"
    )]
    static LOCAL_PARTICIPANTS: LocalParticipants = LocalParticipants(RefCell::new(Vec::new()));
}

/// The thread-local cache of participants.
struct LocalParticipants(RefCell<Vec<Rc<Participant>>>);

impl std::ops::Deref for LocalParticipants {
    type Target = RefCell<Vec<Rc<Participant>>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for LocalParticipants {
    fn drop(&mut self) {
        // When a loom model fails, loom drops the execution's thread-locals outside the model
        // while the panic unwinds; dropping a participant there (its loom `Arc`s) panics
        // again, which aborts the whole test binary instead of failing the model's test.
        if cfg!(loom) && std::thread::panicking() {
            std::mem::forget(self.0.take());
        }
    }
}

/// One thread's membership in a [`GracePeriod`] domain.
///
/// `Send` but not `Sync`: it belongs to one thread at a time. Dropping it unregisters it.
///
/// ```
/// use concurrency::GracePeriod;
/// use std::thread;
///
/// let domain = GracePeriod::new();
/// let reader = domain.register();
/// let idle = domain.register(); // registered but offline: never waited for
/// thread::scope(|s| {
///     s.spawn(move || {
///         for _ in 0..100 {
///             let _online = reader.enter();
///             // ... read the index ...
///         }
///     });
///     domain.synchronize();
/// });
/// drop(idle);
/// assert_eq!(domain.participants(), 0);
/// ```
pub struct Participant {
    domain: Arc<Domain>,
    slot: Arc<Slot>,
    /// Number of live `OnlineGuard`s; online iff non-zero.
    depth: Cell<usize>,
    /// The domain's fences, copied here so online entry reads only this participant.
    fences: Fences,
}

impl Participant {
    /// Marks this participant online until the guard drops (nesting allowed).
    pub fn enter(&self) -> OnlineGuard<'_> {
        self.go_online();
        OnlineGuard {
            holder: Holder::Borrowed(self),
        }
    }

    /// Announces a quiescent point (see [`OnlineGuard::quiescent`]). No effect while offline.
    ///
    /// # Panics
    ///
    /// Inside nested online sections: it would end the outer ones' protection too.
    fn quiescent(&self) {
        if self.depth.get() == 0 {
            return;
        }
        assert_eq!(
            self.depth.get(),
            1,
            "a quiescent point inside a nested online section"
        );
        let now = self.domain.counter.load(Ordering::Acquire);
        // Skipping an equal store is safe: everything read since the previous store of `now`
        // was read after acquiring `now` (case 1 of the module comment).
        if self.slot.state.load(Ordering::Relaxed) != now {
            self.slot.state.store(now, Ordering::Release);
        }
    }

    /// True while at least one [`OnlineGuard`] of this participant is alive.
    pub fn is_online(&self) -> bool {
        self.depth.get() > 0
    }

    /// Waits for a grace period (see [`GracePeriod::synchronize`]). If this participant is
    /// online, the call is a quiescent point for it: it goes offline for the wait and comes back
    /// online afterwards, so it never waits for itself.
    ///
    /// # Panics
    ///
    /// Inside nested online sections, as [`OnlineGuard::quiescent`] does.
    pub fn synchronize(&self) {
        assert!(
            self.depth.get() <= 1,
            "a synchronize inside a nested online section"
        );
        let online = self.is_online();
        if online {
            self.slot.state.store(OFFLINE, Ordering::Release);
        }
        self.domain.wait_for_readers();
        if online {
            self.announce_online();
        }
    }

    fn go_online(&self) {
        let depth = self.depth.get();
        if depth == 0 {
            self.announce_online();
        }
        self.depth.set(depth + 1);
    }

    fn go_offline(&self) {
        let depth = self.depth.get() - 1;
        self.depth.set(depth);
        if depth == 0 {
            self.slot.state.store(OFFLINE, Ordering::Release);
        }
    }

    fn announce_online(&self) {
        let now = self.domain.counter.load(Ordering::Acquire);
        self.slot.state.store(now, Ordering::Release);
        // Dekker handshake with `wait_for_readers` (case 3 of the module comment): the state
        // store is ordered before every read of shared data that follows.
        self.fences.light();
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        // Offline first, so a synchronizer whose snapshot still holds the slot never waits on
        // it; this also covers a guard that was leaked with `mem::forget`.
        self.slot.state.store(OFFLINE, Ordering::Release);
        self.domain
            .slots
            .lock()
            .retain(|slot| !Arc::ptr_eq(slot, &self.slot));
    }
}

impl fmt::Debug for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Participant")
            .field("online", &self.is_online())
            .finish_non_exhaustive()
    }
}

/// Keeps a participant online; dropping it takes the participant offline (when it is the
/// outermost guard).
#[must_use = "the thread goes offline as soon as the guard is dropped"]
pub struct OnlineGuard<'a> {
    holder: Holder<'a>,
}

enum Holder<'a> {
    Borrowed(&'a Participant),
    Cached(Rc<Participant>),
}

impl OnlineGuard<'_> {
    /// The participant this guard keeps online.
    pub fn participant(&self) -> &Participant {
        match &self.holder {
            Holder::Borrowed(p) => p,
            Holder::Cached(p) => p,
        }
    }

    /// Announces a quiescent point: this thread holds no reference obtained in this domain
    /// before the call. A retry loop calls it each iteration.
    ///
    /// It takes `&mut self`, so a reference borrowed from the guard (a lookup that returns
    /// `&'a T` for an `&'a OnlineGuard`) cannot be used after it:
    ///
    /// ```compile_fail,E0502
    /// use concurrency::{GracePeriod, OnlineGuard};
    ///
    /// /// What an operation reached while online: valid as long as the guard's borrow.
    /// fn reach<'a>(_online: &'a OnlineGuard<'_>, object: &'a u64) -> &'a u64 {
    ///     object
    /// }
    ///
    /// let domain = GracePeriod::new();
    /// let object = 1;
    /// let mut online = domain.enter();
    /// let reached = reach(&online, &object);
    /// online.quiescent();
    /// assert_eq!(*reached, 1);
    /// ```
    ///
    /// # Panics
    ///
    /// Inside nested online sections: it would end the outer ones' protection too.
    pub fn quiescent(&mut self) {
        self.participant().quiescent();
    }
}

impl Drop for OnlineGuard<'_> {
    fn drop(&mut self) {
        self.participant().go_offline();
    }
}

impl fmt::Debug for OnlineGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnlineGuard").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    #[test]
    #[should_panic(expected = "a quiescent point inside a nested online section")]
    fn a_quiescent_point_inside_a_nested_section_is_refused() {
        let domain = GracePeriod::new();
        let participant = domain.register();
        let _outer = participant.enter();
        participant.enter().quiescent();
    }

    #[test]
    #[should_panic(expected = "a synchronize inside a nested online section")]
    fn a_synchronize_inside_a_nested_section_is_refused() {
        let domain = GracePeriod::new();
        let participant = domain.register();
        let _outer = participant.enter();
        let _inner = participant.enter();
        participant.synchronize();
    }

    #[test]
    #[should_panic(expected = "a synchronize inside a nested online section")]
    fn a_thread_local_synchronize_inside_a_nested_section_is_refused() {
        let domain = GracePeriod::new();
        let _outer = domain.enter();
        let _inner = domain.enter();
        domain.synchronize();
    }

    fn cached_domains() -> usize {
        LOCAL_PARTICIPANTS.with(|c| c.borrow().len())
    }

    #[test]
    fn synchronize_without_participants_returns() {
        let domain = GracePeriod::new();
        domain.synchronize();
        domain.synchronize();
        assert_eq!(domain.domain.counter.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn states_follow_enter_quiescent_and_exit() {
        let domain = GracePeriod::new();
        let p = domain.register();
        assert_eq!(p.slot.state.load(Ordering::Relaxed), OFFLINE);
        p.quiescent();
        assert_eq!(
            p.slot.state.load(Ordering::Relaxed),
            OFFLINE,
            "offline stays offline"
        );
        let mut outer = p.enter();
        assert_eq!(p.slot.state.load(Ordering::Relaxed), 1);
        drop(p.enter());
        assert!(p.is_online(), "the outer guard still holds it online");
        domain.domain.counter.fetch_add(1, Ordering::Relaxed);
        outer.quiescent();
        assert_eq!(p.slot.state.load(Ordering::Relaxed), 2);
        drop(outer);
        assert!(!p.is_online());
        assert_eq!(p.slot.state.load(Ordering::Relaxed), OFFLINE);
    }

    #[test]
    fn synchronize_sleeps_until_a_long_reader_leaves() {
        let domain = GracePeriod::new();
        let entered = std::sync::Barrier::new(2);
        let left = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let p = domain.register();
                let online = p.enter();
                entered.wait();
                // Online far longer than the backoff spins: the synchronizer must sleep.
                std::thread::sleep(Duration::from_millis(30));
                left.store(true, Ordering::Release);
                drop(online);
            });
            entered.wait();
            domain.synchronize();
            assert!(
                left.load(Ordering::Acquire),
                "returned while the reader was online"
            );
        });
    }

    #[test]
    fn online_participant_synchronizing_does_not_wait_for_itself() {
        let domain = GracePeriod::new();
        let p = domain.register();
        let g = p.enter();
        p.synchronize();
        assert!(p.is_online());
        assert_eq!(
            p.slot.state.load(Ordering::Relaxed),
            2,
            "back online after the wait"
        );
        drop(g);

        // The same through the thread-local participant.
        let _g = domain.enter();
        domain.synchronize();
        assert!(domain.enter().participant().is_online());
    }

    #[test]
    fn thread_local_participant_is_reused_and_unregistered_at_exit() {
        let domain = Arc::new(GracePeriod::new());
        let (entered, wait) = mpsc::channel();
        let (release, done) = mpsc::channel::<()>();
        let worker = {
            let domain = Arc::clone(&domain);
            thread::spawn(move || {
                for _ in 0..3 {
                    drop(domain.enter());
                }
                entered.send(()).expect("the test thread is waiting");
                done.recv().expect("the test thread releases the worker");
            })
        };
        wait.recv_timeout(Duration::from_secs(5))
            .expect("the worker entered");
        assert_eq!(domain.participants(), 1, "one cached participant, reused");
        release.send(()).expect("the worker is waiting");
        worker.join().expect("the worker does not panic");
        assert_eq!(domain.participants(), 0, "thread exit unregisters it");
    }

    #[test]
    fn dropped_domains_are_pruned_from_the_cache() {
        let before = cached_domains();
        let first = GracePeriod::new();
        drop(first.enter());
        let shared = Arc::downgrade(&first.domain);
        assert_eq!(cached_domains(), before + 1);
        drop(first);
        assert!(
            shared.upgrade().is_some(),
            "the cache keeps the domain state alive"
        );

        let second = GracePeriod::new();
        drop(second.enter());
        assert_eq!(
            cached_domains(),
            before + 1,
            "the closed domain's entry was dropped"
        );
        assert!(
            shared.upgrade().is_none(),
            "and with it the closed domain's state"
        );
    }

    #[test]
    fn dropping_a_participant_unregisters_it() {
        let domain = GracePeriod::new();
        let a = domain.register();
        let b = domain.register();
        assert_eq!(domain.participants(), 2);
        drop(a);
        assert_eq!(domain.participants(), 1);
        drop(b);
        assert_eq!(domain.participants(), 0);
        assert!(format!("{domain:?}").contains("participants: 0"));
    }

    #[test]
    fn leaked_guard_is_released_when_the_participant_drops() {
        let domain = GracePeriod::new();
        let p = domain.register();
        std::mem::forget(p.enter());
        assert!(p.is_online());
        drop(p);
        domain.synchronize();
    }
}
