//! Periodic background workers owned by an index (DESIGN.md "Core decisions": background work
//! runs on threads the index owns, names, and joins on drop): `count` named threads, each
//! running a task every `period` until the [`Workers`] value is dropped, which stops and joins
//! them. Each task learns its thread's [`Share`] of the work, so threads can split items
//! (an index's groups) among them. XIndex-R's compaction and adjustment passes and XIndex-H's
//! resizes run on them.
//!
//! Workers started [on demand](Workers::on_demand) run their task when a writer has
//! [marked](Demand::mark) work since their last pass, and back off while none comes: an idle
//! worker sleeps twice as long after each period without work, up to a maximum pause (then
//! it passes once every such pause), and once it sleeps long the first mark wakes it. So a
//! hash index with a short period (XIndex-H's 2 ms) costs next to nothing while nobody
//! writes to it (not in the paper, whose threads poll; a database of many idle tables would
//! otherwise keep the cores busy with empty passes). The handshake that keeps a mark
//! from being lost to a worker going idle ([`Demand::announce`], [`Demand::rest`]) has loom
//! models in `tests/loom_workers.rs`.

use std::io;
use std::sync::atomic::AtomicBool as StdAtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::share_lock::Share;
use crate::sync::atomic::{AtomicBool, Ordering, fence};

/// The most threads an index's configuration may ask [`Workers`] for: far more than any core
/// count gains from, few enough that a database of a few tables cannot exhaust the process's
/// threads.
pub const MAX_THREADS: usize = 256;

/// Named threads running one task periodically; dropping the value stops and joins them.
///
/// The drop joins every thread, then panics if any of them panicked (unless the dropping thread
/// is already unwinding). Dropped by one of its own tasks (which held the last owner), it joins
/// the others and leaves that task's thread, which cannot join itself, to stop on its own once
/// the task returns.
#[derive(Debug)]
pub struct Workers {
    /// One per thread: how it is told to stop.
    signals: Vec<Arc<Signal>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `count` threads named `{name}-{i}`, thread `i` calling `task` with share `i` of
    /// `count` every `period` (after a first pause of `period`). An error from the operating
    /// system stops the threads already started.
    pub fn start(
        name: &str,
        count: usize,
        period: Duration,
        task: impl Fn(Share) + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let signals = (0..count).map(|_| Arc::new(Signal::default())).collect();
        Self::spawn(name, signals, move |share, signal| {
            while signal.sleep(period) {
                task(share);
            }
        })
    }

    /// Starts one thread per worker of `demand`, named `{name}-{i}`, thread `i` calling `task`
    /// with its share of the work at most every `period`: when a writer has marked work
    /// ([`Demand::mark`]) since its last call, or its last call returned true (it did
    /// something, so there may be more), and otherwise once every `max_pause`. After each
    /// period without work it sleeps twice as long, up to `max_pause`; from [`WAKE_AFTER`]
    /// periods on, a mark wakes it at once.
    ///
    /// The call every `max_pause` is what bounds the wait for a write whose mark found the
    /// flag already set: the pass that took the flag need not see that write on a processor
    /// that reorders memory accesses (a fence per mark would rule it out, at a cost to every
    /// writer).
    ///
    /// # Panics
    ///
    /// If `demand` already serves another `Workers` (its threads' signals are its own). A
    /// start that failed (an error, or a panic) leaves `demand` free to serve another.
    pub fn on_demand(
        name: &str,
        demand: &Arc<Demand>,
        period: Duration,
        max_pause: Duration,
        task: impl Fn(Share) -> bool + Send + Sync + 'static,
    ) -> io::Result<Self> {
        assert!(
            !demand
                .served
                .swap(true, std::sync::atomic::Ordering::Relaxed),
            "a Demand serves one Workers"
        );
        let claim = Claim(demand);
        let signals = demand
            .workers
            .iter()
            .map(|w| Arc::clone(&w.signal))
            .collect();
        let demand = Arc::clone(demand);
        let wake_from = period.saturating_mul(WAKE_AFTER);
        let workers = Self::spawn(name, signals, move |share, signal| {
            let part = share.part();
            let mut pause = period;
            while signal.sleep(pause) {
                let marked = demand.take(part);
                let worked = (marked || pause >= max_pause) && task(share);
                if worked {
                    demand.leave(part);
                }
                pause = if marked || worked {
                    period
                } else {
                    pause.saturating_mul(2).min(max_pause).max(period)
                };
                if demand.rest(part, pause >= wake_from) {
                    pause = period;
                }
            }
        })?;
        claim.keep();
        Ok(workers)
    }

    /// Spawns one thread per signal, thread `i` running `body` with share `i` and its signal.
    fn spawn(
        name: &str,
        signals: Vec<Arc<Signal>>,
        body: impl Fn(Share, &Signal) + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let body = Arc::new(body);
        let count = signals.len();
        let mut workers = Self {
            signals: Vec::new(),
            threads: Vec::new(),
        };
        for (i, signal) in signals.into_iter().enumerate() {
            let share = Share::of(i, count);
            let (body, mine) = (Arc::clone(&body), Arc::clone(&signal));
            let thread = thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || body(share, &mine))?;
            workers.signals.push(signal);
            workers.threads.push(thread);
        }
        Ok(workers)
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for signal in self.signals.drain(..) {
            signal.wake(|state| state.stop = true);
        }
        let me = thread::current().id();
        let mut panicked = Vec::new();
        for thread in self.threads.drain(..) {
            if thread.thread().id() == me {
                continue;
            }
            let name = thread.thread().name().unwrap_or("worker").to_owned();
            if thread.join().is_err() {
                panicked.push(name);
            }
        }
        if !panicked.is_empty() && !thread::panicking() {
            panic!("background thread(s) {} panicked", panicked.join(", "));
        }
    }
}

/// The pause, in periods, from which an on-demand thread counts as idle: a mark wakes it
/// (shorter pauses end soon enough; a wake costs the writer a system call).
pub const WAKE_AFTER: u32 = 8;

/// Work announced to the threads of [`Workers::on_demand`]: one flag per thread, set by
/// writers, taken by the thread's next pass.
#[derive(Debug)]
pub struct Demand {
    workers: Box<[CachePadded<DemandWorker>]>,
    /// Whether a `Workers` runs on it (whose threads the signals belong to); a `std` atomic,
    /// no part of the loom models.
    served: StdAtomicBool,
}

#[derive(Debug)]
struct DemandWorker {
    /// A writer marked work since the thread's last pass.
    pending: AtomicBool,
    /// The thread's pause has reached [`WAKE_AFTER`] periods: a writer's mark must wake it.
    idle: AtomicBool,
    signal: Arc<Signal>,
}

impl Demand {
    /// Demand for `count` threads, each with work pending (their first pass runs).
    pub fn new(count: usize) -> Self {
        let workers = (0..count)
            .map(|_| {
                CachePadded::new(DemandWorker {
                    pending: AtomicBool::new(true),
                    idle: AtomicBool::new(false),
                    signal: Arc::new(Signal::default()),
                })
            })
            .collect();
        Self {
            workers,
            served: StdAtomicBool::new(false),
        }
    }

    /// Announces work to every thread: each runs its next pass, woken now if it sleeps long.
    /// Costs a writer one load of each thread's flag while the flags are already set (its work
    /// is then left to the pass that takes the flag, or to the pass every `max_pause`).
    #[inline]
    pub fn mark(&self) {
        for (part, worker) in self.workers.iter().enumerate() {
            if self.announce(part) {
                worker.signal.wake(|state| state.nudged = true);
            }
        }
    }

    /// Marks thread `part`'s flag; true if this set it while the thread sleeps long, so the
    /// caller must wake it. Release: the pass that takes the flag sees the writes before it.
    ///
    /// The flag is set before `idle` is read, and [`Demand::rest`] sets `idle` before it reads
    /// the flag, each pair split by a sequentially consistent fence, so one of the two sees
    /// the other's store (the fences, not SeqCst accesses, so that loom checks it too).
    #[doc(hidden)]
    #[inline]
    pub fn announce(&self, part: usize) -> bool {
        let worker = &self.workers[part];
        if worker.pending.load(Ordering::Relaxed) || worker.pending.swap(true, Ordering::Release) {
            return false;
        }
        fence(Ordering::SeqCst);
        worker.idle.load(Ordering::Relaxed)
    }

    /// Takes thread `part`'s flag: true if work was marked since it was last taken.
    #[doc(hidden)]
    pub fn take(&self, part: usize) -> bool {
        self.workers[part].pending.swap(false, Ordering::Acquire)
    }

    /// Sets thread `part`'s flag again: its last pass did work, so there may be more.
    fn leave(&self, part: usize) {
        self.workers[part].pending.store(true, Ordering::Release);
    }

    /// Records whether thread `part` is about to sleep so long that a mark must wake it
    /// (`idle`); if so, true if work was marked meanwhile, which no writer may wake it for
    /// (see [`Demand::announce`]): the thread should then pass after its period.
    #[doc(hidden)]
    pub fn rest(&self, part: usize, idle: bool) -> bool {
        let worker = &self.workers[part];
        worker.idle.store(idle, Ordering::Relaxed);
        if !idle {
            return false;
        }
        fence(Ordering::SeqCst);
        worker.pending.load(Ordering::Relaxed)
    }
}

/// A [`Demand`] taken by a [`Workers`] being started. Dropped before [`keep`](Self::keep) (the
/// start failed: an error from the system, or a panic), it frees the demand, as new, for
/// another start.
struct Claim<'a>(&'a Demand);

impl Claim<'_> {
    /// The start succeeded: the demand stays taken.
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        // The threads already started were stopped and joined; a writer's mark meanwhile only
        // sets what this sets.
        for worker in &self.0.workers {
            worker.pending.store(true, Ordering::Relaxed);
            worker.idle.store(false, Ordering::Relaxed);
            *worker.signal.state() = Wake::default();
        }
        self.0
            .served
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How a sleeping worker is woken: told to stop, or nudged by a writer's mark.
#[derive(Debug, Default)]
struct Signal {
    state: Mutex<Wake>,
    woken: Condvar,
}

#[derive(Debug, Default)]
struct Wake {
    stop: bool,
    nudged: bool,
}

impl Signal {
    /// Sleeps for `pause`, or until nudged or stopped; false once stopped.
    fn sleep(&self, pause: Duration) -> bool {
        let (mut state, _) = self
            .woken
            .wait_timeout_while(self.state(), pause, |state| !state.stop && !state.nudged)
            .unwrap_or_else(PoisonError::into_inner);
        state.nudged = false;
        !state.stop
    }

    /// Changes the state with `change` and wakes the sleeper.
    fn wake(&self, change: impl FnOnce(&mut Wake)) {
        change(&mut self.state());
        self.woken.notify_one();
    }

    fn state(&self) -> MutexGuard<'_, Wake> {
        // The state is two flags, valid whatever a panicking holder left.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Instant;

    #[test]
    fn workers_run_their_task_and_stop_on_drop() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
        let threads_seen = Arc::clone(&seen);
        let workers = Workers::start("test-worker", 2, Duration::from_millis(1), move |share| {
            assert_eq!(share.parts(), 2, "one share per thread");
            threads_seen.lock().expect("no panic").insert(share.part());
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .expect("threads start");
        while runs.load(Ordering::Relaxed) < 4 || seen.lock().expect("no panic").len() < 2 {
            thread::sleep(Duration::from_millis(1));
        }
        drop(workers);
        assert_eq!(
            *seen.lock().expect("no panic"),
            [0, 1].into(),
            "each thread runs the task with its own share"
        );
        let after = runs.load(Ordering::Relaxed);
        thread::sleep(Duration::from_millis(20));
        assert_eq!(
            runs.load(Ordering::Relaxed),
            after,
            "no task runs after the drop"
        );
    }

    /// Waits up to 10 s for `done` to hold, panicking with `what` otherwise; the time it took.
    fn wait_until(what: &str, done: impl Fn() -> bool) -> Duration {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            thread::sleep(Duration::from_micros(200));
        }
        start.elapsed()
    }

    /// Waits up to 10 s for `runs` to reach `target`; the time it took.
    fn wait_for(runs: &AtomicUsize, target: usize) -> Duration {
        wait_until("no pass came", || runs.load(Ordering::SeqCst) >= target)
    }

    /// Threads of `demand` on demand, counting their passes; pass `n` (from 0) says it did
    /// work if `did_work(n)`.
    fn counting_passes(
        demand: &Arc<Demand>,
        period: Duration,
        max_pause: Duration,
        did_work: impl Fn(usize) -> bool + Send + Sync + 'static,
    ) -> (Workers, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let task = move |_| did_work(counter.fetch_add(1, Ordering::SeqCst));
        let workers = Workers::on_demand("test-demand", demand, period, max_pause, task)
            .expect("threads start");
        (workers, runs)
    }

    /// A maximum pause that no test waits for: only a mark brings a pass soon.
    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn on_demand_workers_pass_only_after_a_mark_and_a_mark_wakes_an_idle_one() {
        let demand = Arc::new(Demand::new(2));
        let (workers, runs) = counting_passes(&demand, Duration::from_millis(50), LONG, |_| false);
        wait_for(&runs, 2);
        // Both threads' first passes are done. Without a mark no thread passes again, while
        // their pauses grow: 50, 100, 200, 400, 800 ms, then a pause of 1.6 s that began about
        // 1.55 s after the first pass. A mark 1.7 s after it must wake them: their timers would
        // only end more than a second later.
        thread::sleep(Duration::from_millis(1_700));
        assert_eq!(runs.load(Ordering::SeqCst), 2, "no pass without a mark");
        demand.mark();
        let took = wait_for(&runs, 4);
        assert!(
            took < Duration::from_millis(500),
            "idle threads passed {took:?} after a mark"
        );
        // Back at their period, each mark brings one pass of each thread.
        for round in 1..=5 {
            demand.mark();
            wait_for(&runs, 4 + 2 * round);
            thread::sleep(Duration::from_millis(10));
            assert_eq!(
                runs.load(Ordering::SeqCst),
                4 + 2 * round,
                "one pass a mark"
            );
        }
        drop(workers);
    }

    #[test]
    fn an_on_demand_task_that_did_work_runs_again() {
        let demand = Arc::new(Demand::new(1));
        let (workers, runs) = counting_passes(&demand, Duration::from_millis(1), LONG, |n| n < 4);
        // Five passes from one initial demand: four that did work, then one that did not.
        wait_for(&runs, 5);
        thread::sleep(Duration::from_millis(50));
        assert_eq!(runs.load(Ordering::SeqCst), 5);
        drop(workers);
    }

    #[test]
    fn an_idle_on_demand_thread_still_passes_every_max_pause() {
        let demand = Arc::new(Demand::new(1));
        let max_pause = Duration::from_millis(20);
        let (workers, runs) =
            counting_passes(&demand, Duration::from_millis(1), max_pause, |_| false);
        // The first pass takes the initial demand; the next ones come unmarked.
        wait_for(&runs, 4);
        drop(workers);
    }

    #[test]
    fn a_panicked_worker_fails_the_drop_only_after_every_thread_is_joined() {
        let flags: Arc<[AtomicBool; 3]> = Arc::default();
        let [panicking, in_task, task_done] = [0, 1, 2];
        let seen = Arc::clone(&flags);
        let workers = Workers::start("test-panic", 2, Duration::from_millis(1), move |share| {
            if share.part() == 0 {
                seen[panicking].store(true, Ordering::SeqCst);
                panic!("worker 0 fails");
            }
            if !seen[in_task].swap(true, Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(200));
                seen[task_done].store(true, Ordering::SeqCst);
            }
        })
        .expect("threads start");
        wait_until("no panic came", || flags[panicking].load(Ordering::SeqCst));
        wait_until("no task began", || flags[in_task].load(Ordering::SeqCst));
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(workers)));
        let message = *dropped
            .expect_err("the drop reports the panic")
            .downcast::<String>()
            .expect("a formatted message");
        assert_eq!(message, "background thread(s) test-panic-0 panicked");
        assert!(
            flags[task_done].load(Ordering::SeqCst),
            "the drop returned while the other thread was still in its task"
        );
    }

    #[test]
    fn workers_dropped_by_their_own_task_stop_without_joining_that_thread() {
        let owner: Arc<Mutex<Option<Workers>>> = Arc::default();
        let dropped = Arc::new(AtomicBool::new(false));
        let (mine, done) = (Arc::clone(&owner), Arc::clone(&dropped));
        let workers = Workers::start("test-self", 2, Duration::from_millis(1), move |share| {
            if share.part() != 0 {
                return;
            }
            let last = mine.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(workers) = last {
                drop(workers);
                done.store(true, Ordering::SeqCst);
            }
        })
        .expect("threads start");
        *owner.lock().expect("no panic") = Some(workers);
        wait_until("no drop came", || dropped.load(Ordering::SeqCst));
        // The task holds a clone of `owner` until both threads have ended: the drop joined the
        // other one, and the dropping one stops once its task returns.
        wait_until("a thread runs on", || Arc::strong_count(&owner) == 1);
    }

    #[test]
    fn a_demand_whose_workers_failed_to_start_serves_the_next() {
        let demand = Arc::new(Demand::new(1));
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let task = move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            false
        };
        let period = Duration::from_millis(1);
        // A thread name with a NUL byte makes the spawn panic.
        let failed = std::panic::catch_unwind(|| {
            Workers::on_demand("nul\0name", &demand, period, LONG, |_| false)
        });
        assert!(failed.is_err(), "the start failed");
        let workers =
            Workers::on_demand("test-retry", &demand, period, LONG, task).expect("threads start");
        wait_for(&runs, 1);
        drop(workers);
    }

    #[test]
    #[should_panic(expected = "a Demand serves one Workers")]
    fn a_demand_serves_one_workers() {
        let demand = Arc::new(Demand::new(1));
        let _first = counting_passes(&demand, Duration::from_millis(1), LONG, |_| false);
        let _second = counting_passes(&demand, Duration::from_millis(1), LONG, |_| false);
    }
}
