//! The measurement loop of every throughput/latency experiment (XIndex §6, YCSB's client): N
//! threads (`std::thread::scope`) drive an [`IndexAdapter`] with their operation streams for an
//! operation count or a duration after an optional warm-up, and the run's throughput, latency
//! percentiles and per-interval timeline are collected.
//!
//! **Timing.** Each thread generates its operations in batches of [`BATCH`] (so drawing keys,
//! including the cache misses of reading them from large key arrays, stays outside the timed
//! region) and then executes the batch reading the clock once per operation: an operation's
//! latency is the time between the clock reading that ends it and the one before, which includes
//! the recording of the previous operation's latency (a few nanoseconds). Every operation is timed
//! and recorded in a per-thread HDR histogram (3 significant digits, so percentiles are within
//! 0.1 %); the maximum is additionally tracked exactly, over every operation and per kind, so
//! stalls (resizes, compactions) show as they are. Throughput is each thread's measured
//! operations over the time it spent executing them (its batches, from the clock reading before
//! the first operation to the one after the last), summed over the threads: drawing the next
//! batch is the harness's work, not the index's, and for a stream with writes, generated as it
//! runs, it took 135–145 ns an operation (session 37's audit), a third of a fast index's time,
//! the same for every index, which pulled every ratio towards 1. A pregenerated run draws
//! nothing between its batches, so there the two agree. The wall-clock time from the common
//! start, after every thread's warm-up, to the last thread's end is reported beside it.
//!
//! A run may time only one operation in [`RunConfig::latency_sample`]: each batch is then timed
//! as a whole for the throughput, and a sampled operation between two clock readings of its own,
//! and the latency figures describe the sample. Timing every operation costs more than the clock
//! reads (about 25 ns with the histogram's record): on x86 a clock read waits for every earlier
//! load, so no operation's cache misses overlap the next one's, and the throughput is one
//! operation's latency after another (session 37: the lookup oracle's 36 Mops/s read as 10.7).
//! Runs that bound the worst operation time every one.

use std::hint::black_box;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{Error, Result};
use crate::keyspace::KeySpace;
use crate::op::{Op, OpCounts, OpKind};

/// An index under test, seen by the runner. `K` is `u64` or `&[u8]`; values are one word.
///
/// Every method takes `&self` and is called from many threads at once; an adapter for a
/// single-threaded structure wraps it in a lock. Implement it in the benchmark harness for each
/// of our indexes and each peer.
pub trait IndexAdapter<K: Copy>: Send + Sync {
    /// The name in reports.
    fn name(&self) -> &str;
    /// Loads sorted, unique pairs into the empty index.
    fn bulk_load(&self, pairs: &[(K, u64)]);
    /// The key's value.
    fn get(&self, key: K) -> Option<u64>;
    /// Inserts or overwrites; returns the previous value.
    fn insert(&self, key: K, value: u64) -> Option<u64>;
    /// Overwrites the value of a present key; returns whether the key was present.
    fn update(&self, key: K, value: u64) -> bool;
    /// Removes a key; returns its value.
    fn remove(&self, key: K) -> Option<u64>;
    /// Visits up to `n` pairs in key order from the first key at or after `start`; returns how
    /// many it visited.
    fn scan(&self, start: K, n: usize) -> usize;
    /// Reads a key's value and writes back `old ^ value` (YCSB F); returns whether the key was
    /// present. The default is a `get` followed by an `update`; override it with an atomic
    /// version where the index has one.
    fn read_modify_write(&self, key: K, value: u64) -> bool {
        self.get(key)
            .is_some_and(|old| self.update(key, old ^ value))
    }
    /// Index-specific figures for the report's notes (`key`, `value`), read once after the
    /// measured run (for example a learned hash index's conflict rate). None by default.
    fn notes(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Bulk-loads the key space's loaded keys (with their ranks as values) and returns the time it
/// took.
pub fn bulk_load<K: Copy, I: IndexAdapter<K> + ?Sized>(index: &I, space: &KeySpace<K>) -> Duration {
    let pairs = space.bulk_pairs();
    let start = Instant::now();
    index.bulk_load(&pairs);
    start.elapsed()
}

/// Operations generated ahead of their timed execution, per thread.
pub const BATCH: usize = 256;

/// The longest latency the histograms resolve (longer ones count as this much there; the exact
/// maximum is tracked apart).
pub const MAX_TRACKED_LATENCY: Duration = Duration::from_secs(60);

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many operations over all threads (split evenly); a thread whose stream ends
    /// earlier stops earlier.
    Ops(u64),
    /// After this long.
    Duration(Duration),
    /// When every thread's stream has ended (for finite streams: insert-only, a distribution
    /// shift with a bounded stage 3).
    Exhausted,
}

/// What runs before the measurement, unmeasured, on the same streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// No warm-up.
    None,
    /// This many operations over all threads.
    Ops(u64),
    /// This long.
    Duration(Duration),
}

/// Whether to draw a progress bar on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Drawn when standard error is a terminal and the measurement has lasted 2 seconds.
    Auto,
    /// Never drawn.
    Hidden,
}

/// How long a run must last before [`Progress::Auto`] draws its bar.
const PROGRESS_DELAY: Duration = Duration::from_secs(2);

/// How often the progress bar is refreshed.
const PROGRESS_TICK: Duration = Duration::from_millis(100);

/// The parameters of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// Worker threads.
    pub threads: usize,
    /// When to stop.
    pub stop: Stop,
    /// Unmeasured operations first.
    pub warmup: Warmup,
    /// Progress bar.
    pub progress: Progress,
    /// The timeline's interval (1 s by default).
    pub interval: Duration,
    /// Generate each thread's whole share of a [`Stop::Ops`] run before the start, so that the
    /// throughput excludes operation generation (drawing from the request distribution and
    /// reading keys from the key arrays: 50–150 ns per operation on this machine). Costs about
    /// 24 bytes per operation for `u64` keys. Off by default.
    pub pregenerate: bool,
    /// Time one measured operation in this many (at least 1; 1, every operation, by default).
    /// Above 1 each batch is timed as a whole for the throughput and only every
    /// `latency_sample`-th operation on its own, so the clock reads, which also keep operations
    /// from overlapping (module comment), mostly stay out of the throughput; the latencies,
    /// their percentiles and maxima then cover the sampled operations only.
    pub latency_sample: u32,
}

impl RunConfig {
    /// `threads` threads until `stop`, no warm-up, automatic progress bar, 1-second timeline.
    pub fn new(threads: usize, stop: Stop) -> Self {
        Self {
            threads,
            stop,
            warmup: Warmup::None,
            progress: Progress::Auto,
            interval: Duration::from_secs(1),
            pregenerate: false,
            latency_sample: 1,
        }
    }

    /// The same with a warm-up.
    pub fn with_warmup(mut self, warmup: Warmup) -> Self {
        self.warmup = warmup;
        self
    }

    /// The same with the given progress bar setting.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// The same with another timeline interval.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The same with operations generated before the start (see [`RunConfig::pregenerate`]).
    pub fn with_pregenerate(mut self, pregenerate: bool) -> Self {
        self.pregenerate = pregenerate;
        self
    }

    /// The same timing one operation in `every` (see [`RunConfig::latency_sample`]).
    pub fn with_latency_sample(mut self, every: u32) -> Self {
        self.latency_sample = every;
        self
    }

    /// Checks the parameters.
    fn validate(&self) -> Result<()> {
        if self.latency_sample == 0 {
            return Err(Error::invalid("a run times one operation in at least 1"));
        }
        if self.threads == 0 {
            return Err(Error::invalid("a run needs at least one thread"));
        }
        if self.interval.is_zero() {
            return Err(Error::invalid("the timeline interval must be positive"));
        }
        if self.pregenerate && !matches!(self.stop, Stop::Ops(_)) {
            return Err(Error::invalid(
                "only runs that stop after an operation count can pregenerate",
            ));
        }
        Ok(())
    }
}

/// Latency percentiles and extremes over the measured operations, in nanoseconds (0 when none
/// was measured).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// 99.99th percentile.
    pub p9999_ns: u64,
    /// The exact maximum.
    pub max_ns: u64,
}

/// What the measured operations found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Gets that found their key.
    pub get_hits: u64,
    /// Updates that found their key.
    pub update_hits: u64,
    /// Removes that found their key.
    pub remove_hits: u64,
    /// Inserts whose key was already present (an upsert).
    pub insert_overwrites: u64,
    /// Read-modify-writes that found their key.
    pub read_modify_write_hits: u64,
    /// Keys visited by scans.
    pub scanned: u64,
}

impl Outcomes {
    fn merge(&mut self, other: &Self) {
        self.get_hits += other.get_hits;
        self.update_hits += other.update_hits;
        self.remove_hits += other.remove_hits;
        self.insert_overwrites += other.insert_overwrites;
        self.read_modify_write_hits += other.read_modify_write_hits;
        self.scanned += other.scanned;
    }
}

/// The measurements of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The adapter's name.
    pub index: String,
    /// Worker threads.
    pub threads: usize,
    /// Measured operations.
    pub ops: u64,
    /// Measured operations per kind.
    pub counts: OpCounts,
    /// Warm-up operations (not measured).
    pub warmup_ops: u64,
    /// Measured wall-clock time in seconds, from the common start to the last thread's end.
    pub seconds: f64,
    /// Throughput in millions of operations per second: each thread's operations over the time
    /// it spent executing them, summed over the threads (module comment).
    pub mops: f64,
    /// Latency over all measured operations.
    pub latency: Latency,
    /// The exact maximum latency per kind, in [`OpKind::ALL`] order, in nanoseconds.
    pub max_ns_by_kind: [u64; 6],
    /// What the operations found.
    pub outcomes: Outcomes,
    /// Operations completed in each interval since the start (index `i` covers
    /// `[i, i + 1) × interval`), per kind.
    pub timeline: Vec<OpCounts>,
    /// The timeline's interval.
    pub interval: Duration,
    /// Threads whose stream ended before the stop condition (a pool too small for the run;
    /// always 0 under [`Stop::Exhausted`]).
    pub exhausted_threads: usize,
    /// The latency histogram of all measured operations, in nanoseconds.
    pub histogram: Histogram<u64>,
}

impl RunResult {
    /// The exact maximum latency of one kind, in nanoseconds.
    pub fn max_ns(&self, kind: OpKind) -> u64 {
        self.max_ns_by_kind[kind as usize]
    }

    /// Throughput per timeline interval, in millions of operations per second.
    pub fn mops_timeline(&self) -> Vec<f64> {
        let seconds = self.interval.as_secs_f64();
        self.timeline
            .iter()
            .map(|counts| counts.total() as f64 / seconds / 1e6)
            .collect()
    }
}

/// Thread `thread`'s share of `total` split over `threads`.
pub(crate) fn share(total: u64, thread: usize, threads: usize) -> u64 {
    let threads = threads as u64;
    total / threads + u64::from((thread as u64) < total % threads)
}

/// Runs `config.threads` threads over `index`, thread `t` executing the stream `make(t)`.
///
/// Every stream is built (and its errors returned) before any thread starts. A panic of the
/// adapter in a worker propagates to the caller after the other workers have stopped.
///
/// ```
/// use workload::{runner, IndexAdapter, Op, RunConfig, Stop};
///
/// /// An index that holds nothing, to show the runner alone.
/// struct Empty;
/// impl IndexAdapter<u64> for Empty {
///     fn name(&self) -> &str { "empty" }
///     fn bulk_load(&self, _: &[(u64, u64)]) {}
///     fn get(&self, _: u64) -> Option<u64> { None }
///     fn insert(&self, _: u64, _: u64) -> Option<u64> { None }
///     fn update(&self, _: u64, _: u64) -> bool { false }
///     fn remove(&self, _: u64) -> Option<u64> { None }
///     fn scan(&self, _: u64, _: usize) -> usize { 0 }
/// }
///
/// let result = runner::run(&RunConfig::new(2, Stop::Ops(1_000)), &Empty, |thread| {
///     Ok((0..).map(move |i| Op::Get(i * 2 + thread as u64)))
/// })?;
/// assert_eq!((result.ops, result.outcomes.get_hits), (1_000, 0));
/// # Ok::<(), workload::Error>(())
/// ```
pub fn run<K, I, G, F>(config: &RunConfig, index: &I, mut make: F) -> Result<RunResult>
where
    K: Copy,
    I: IndexAdapter<K> + ?Sized,
    G: Iterator<Item = Op<K>> + Send,
    F: FnMut(usize) -> Result<G>,
{
    config.validate()?;
    let streams = (0..config.threads)
        .map(&mut make)
        .collect::<Result<Vec<G>>>()?;
    let shared = Shared {
        gate: Gate::new(config.threads + 1),
        done: AtomicU64::new(0),
        finished: AtomicUsize::new(0),
        main: thread::current(),
    };
    let (start, reports) = thread::scope(|scope| {
        let workers: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(thread, stream)| {
                let shared = &shared;
                scope.spawn(move || worker(config, index, stream, thread, shared))
            })
            .collect();
        let start = shared.gate.wait();
        if start.is_some() {
            watch(config, &shared);
        }
        let reports: Vec<ThreadReport> = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (start, reports)
    });
    let start =
        start.expect("the start gate only fails when a worker panicked, which was resumed above");
    Ok(merge(config, index.name(), start, reports))
}

/// What the workers share with the coordinating thread.
struct Shared {
    gate: Gate,
    /// Measured operations so far, for the progress bar.
    done: AtomicU64,
    /// Workers that have stopped, normally or by panicking.
    finished: AtomicUsize,
    /// The coordinating thread, woken when a worker stops.
    main: Thread,
}

/// A start barrier that opens when every party has arrived, or fails everyone once a party
/// panicked (a plain `Barrier` would leave the others waiting forever).
///
/// The last party to arrive stamps the start instant that every party then uses, so all
/// deadlines and the measured wall-clock time share one origin whatever the scheduler does.
struct Gate {
    state: Mutex<GateState>,
    opened: Condvar,
    parties: usize,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    aborted: bool,
    start: Option<Instant>,
}

impl Gate {
    fn new(parties: usize) -> Self {
        Self {
            state: Mutex::new(GateState::default()),
            opened: Condvar::new(),
            parties,
        }
    }

    /// Waits for every party and returns the common start instant; `None` if a party panicked
    /// instead.
    fn wait(&self) -> Option<Instant> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.arrived += 1;
        if state.arrived == self.parties {
            state.start = Some(Instant::now());
            self.opened.notify_all();
        }
        while state.start.is_none() && !state.aborted {
            state = self
                .opened
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.aborted { None } else { state.start }
    }

    /// Fails the gate for everyone.
    fn abort(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .aborted = true;
        self.opened.notify_all();
    }
}

/// Marks a worker as stopped when it returns or unwinds.
struct Finish<'a>(&'a Shared);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.gate.abort();
        }
        self.0.finished.fetch_add(1, Ordering::Release);
        self.0.main.unpark();
    }
}

/// One worker's measurements.
struct ThreadReport {
    counts: OpCounts,
    warmup_ops: u64,
    outcomes: Outcomes,
    histogram: Histogram<u64>,
    max_ns_by_kind: [u64; 6],
    timeline: Vec<OpCounts>,
    end: Instant,
    /// The time spent executing the measured operations (stream generation excluded).
    busy: Duration,
    exhausted: bool,
}

/// One worker: warm-up, start gate, measured batches.
fn worker<K, I, G>(
    config: &RunConfig,
    index: &I,
    stream: G,
    thread: usize,
    shared: &Shared,
) -> ThreadReport
where
    K: Copy,
    I: IndexAdapter<K> + ?Sized,
    G: Iterator<Item = Op<K>>,
{
    let _finish = Finish(shared);
    let mut stream = stream.fuse();
    let mut scratch = Outcomes::default();
    let mut warmup_ops = 0;
    match config.warmup {
        Warmup::None => {}
        Warmup::Ops(total) => {
            for op in stream
                .by_ref()
                .take(share(total, thread, config.threads) as usize)
            {
                execute(index, op, &mut scratch);
                warmup_ops += 1;
            }
        }
        Warmup::Duration(duration) => {
            let end = Instant::now() + duration;
            while Instant::now() < end {
                let before = warmup_ops;
                for op in stream.by_ref().take(BATCH) {
                    execute(index, op, &mut scratch);
                    warmup_ops += 1;
                }
                if warmup_ops == before {
                    break;
                }
            }
        }
    }
    let histogram = Histogram::new_with_bounds(1, MAX_TRACKED_LATENCY.as_nanos() as u64, 3)
        .expect("1 ns to 60 s at 3 significant digits are valid histogram bounds");
    let mut report = ThreadReport {
        counts: OpCounts::default(),
        warmup_ops,
        outcomes: Outcomes::default(),
        histogram,
        max_ns_by_kind: [0; 6],
        timeline: Vec::new(),
        end: Instant::now(),
        busy: Duration::ZERO,
        exhausted: false,
    };
    let mut budget = match config.stop {
        Stop::Ops(total) => share(total, thread, config.threads),
        Stop::Duration(_) | Stop::Exhausted => u64::MAX,
    };
    let pregenerated: Vec<Op<K>> = if config.pregenerate {
        stream.by_ref().take(budget as usize).collect()
    } else {
        Vec::new()
    };
    let mut pregenerated = pregenerated.into_iter();
    let Some(start) = shared.gate.wait() else {
        return report;
    };
    let deadline = match config.stop {
        Stop::Duration(duration) => Some(start + duration),
        Stop::Ops(_) | Stop::Exhausted => None,
    };
    let mut timeline = Timeline::new(start, config.interval);
    let mut batch = Vec::with_capacity(BATCH);
    let sample = u64::from(config.latency_sample);
    'run: while budget > 0 {
        let want = budget.min(BATCH as u64) as usize;
        batch.extend(pregenerated.by_ref().take(want));
        if !config.pregenerate {
            batch.extend(stream.by_ref().take(want));
        }
        if batch.is_empty() {
            report.exhausted = config.stop != Stop::Exhausted;
            break;
        }
        let began = Instant::now();
        // The latest clock reading: with every operation timed, the end of the one before.
        let mut last = began;
        let mut executed = 0;
        // Operations left before the next timed one.
        let mut untimed = 0;
        for op in batch.drain(..) {
            let kind = op.kind();
            let timed = untimed == 0;
            if timed {
                untimed = sample;
                if sample > 1 {
                    last = Instant::now();
                }
            }
            untimed -= 1;
            execute(index, op, &mut report.outcomes);
            report.counts[kind] += 1;
            executed += 1;
            if timed {
                let after = Instant::now();
                let nanos = after.duration_since(last).as_nanos() as u64;
                last = after;
                report.histogram.saturating_record(nanos);
                let max = &mut report.max_ns_by_kind[kind as usize];
                *max = (*max).max(nanos);
                if deadline.is_some_and(|deadline| after >= deadline) {
                    timeline.add(after, kind);
                    report.busy += after.duration_since(began);
                    shared.done.fetch_add(executed, Ordering::Relaxed);
                    break 'run;
                }
            }
            timeline.add(last, kind);
        }
        let ended = if sample > 1 { Instant::now() } else { last };
        report.busy += ended.duration_since(began);
        budget -= executed;
        shared.done.fetch_add(executed, Ordering::Relaxed);
    }
    report.timeline = timeline.slots;
    report.end = Instant::now();
    report
}

/// One thread's operations per interval, cheap to update per operation: the slot is recomputed
/// only when an operation ends past the current slot's end.
struct Timeline {
    start: Instant,
    interval: Duration,
    slot: usize,
    slot_end: Instant,
    slots: Vec<OpCounts>,
}

impl Timeline {
    fn new(start: Instant, interval: Duration) -> Self {
        Self {
            start,
            interval,
            slot: 0,
            slot_end: start,
            slots: Vec::new(),
        }
    }

    /// Counts an operation of `kind` that ended at `at`.
    fn add(&mut self, at: Instant, kind: OpKind) {
        if at >= self.slot_end {
            // Runs last far less than 2^64 intervals, so the cast keeps the value.
            self.slot =
                (at.duration_since(self.start).as_nanos() / self.interval.as_nanos()) as usize;
            let slots_passed = u32::try_from(self.slot + 1).unwrap_or(u32::MAX);
            self.slot_end = self.start + self.interval.saturating_mul(slots_passed);
            if self.slots.len() <= self.slot {
                self.slots.resize(self.slot + 1, OpCounts::default());
            }
        }
        self.slots[self.slot][kind] += 1;
    }
}

/// Executes one operation and notes what it found.
fn execute<K: Copy, I: IndexAdapter<K> + ?Sized>(index: &I, op: Op<K>, outcomes: &mut Outcomes) {
    match op {
        Op::Get(key) => outcomes.get_hits += u64::from(black_box(index.get(key)).is_some()),
        Op::Insert(key, value) => {
            outcomes.insert_overwrites += u64::from(index.insert(key, value).is_some())
        }
        Op::Update(key, value) => outcomes.update_hits += u64::from(index.update(key, value)),
        Op::Remove(key) => outcomes.remove_hits += u64::from(index.remove(key).is_some()),
        Op::Scan(start, n) => outcomes.scanned += index.scan(start, n) as u64,
        Op::ReadModifyWrite(key, value) => {
            outcomes.read_modify_write_hits += u64::from(index.read_modify_write(key, value))
        }
    }
}

/// Waits for the workers, drawing the progress bar meanwhile.
fn watch(config: &RunConfig, shared: &Shared) {
    let start = Instant::now();
    let bar = match config.stop {
        Stop::Ops(total) => {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
        }
        Stop::Duration(duration) => ProgressBar::with_draw_target(
            Some(duration.as_millis() as u64),
            ProgressDrawTarget::hidden(),
        ),
        Stop::Exhausted => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
    };
    let template = match config.stop {
        Stop::Ops(_) => "{elapsed_precise} [{wide_bar}] {human_pos}/{human_len} ops, {msg}",
        Stop::Duration(_) => "{elapsed_precise} [{wide_bar}] {msg}",
        Stop::Exhausted => "{elapsed_precise} {spinner} {human_pos} ops, {msg}",
    };
    bar.set_style(
        ProgressStyle::with_template(template).expect("the progress templates are valid"),
    );
    let show = config.progress == Progress::Auto && std::io::stderr().is_terminal();
    while shared.finished.load(Ordering::Acquire) < config.threads {
        thread::park_timeout(PROGRESS_TICK);
        let done = shared.done.load(Ordering::Relaxed);
        let mops = done as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6;
        match config.stop {
            Stop::Duration(_) => {
                bar.set_position(start.elapsed().as_millis() as u64);
                bar.set_message(format!("{done} ops, {mops:.2} Mops/s"));
            }
            Stop::Ops(_) | Stop::Exhausted => {
                bar.set_position(done);
                bar.set_message(format!("{mops:.2} Mops/s"));
            }
        }
        if show && bar.is_hidden() && start.elapsed() >= PROGRESS_DELAY {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
    bar.finish_and_clear();
}

/// Combines the workers' reports.
fn merge(config: &RunConfig, index: &str, start: Instant, reports: Vec<ThreadReport>) -> RunResult {
    let mut histogram = Histogram::new_with_bounds(1, MAX_TRACKED_LATENCY.as_nanos() as u64, 3)
        .expect("1 ns to 60 s at 3 significant digits are valid histogram bounds");
    let mut counts = OpCounts::default();
    let mut outcomes = Outcomes::default();
    let mut max_ns_by_kind = [0; 6];
    let mut timeline: Vec<OpCounts> = Vec::new();
    let (mut warmup_ops, mut exhausted_threads, mut end) = (0, 0, start);
    let mut mops = 0.0;
    for report in reports {
        let busy = report.busy.as_secs_f64();
        if busy > 0.0 {
            mops += report.counts.total() as f64 / busy / 1e6;
        }
        histogram
            .add(&report.histogram)
            .expect("every histogram has the same bounds");
        counts.merge(&report.counts);
        outcomes.merge(&report.outcomes);
        for (max, theirs) in max_ns_by_kind.iter_mut().zip(report.max_ns_by_kind) {
            *max = (*max).max(theirs);
        }
        if timeline.len() < report.timeline.len() {
            timeline.resize(report.timeline.len(), OpCounts::default());
        }
        for (slot, theirs) in timeline.iter_mut().zip(&report.timeline) {
            slot.merge(theirs);
        }
        warmup_ops += report.warmup_ops;
        exhausted_threads += usize::from(report.exhausted);
        end = end.max(report.end);
    }
    let ops = counts.total();
    let seconds = end.duration_since(start).as_secs_f64();
    let latency = if ops == 0 {
        Latency::default()
    } else {
        Latency {
            mean_ns: histogram.mean(),
            p50_ns: histogram.value_at_quantile(0.5),
            p99_ns: histogram.value_at_quantile(0.99),
            p999_ns: histogram.value_at_quantile(0.999),
            p9999_ns: histogram.value_at_quantile(0.9999),
            max_ns: max_ns_by_kind.iter().copied().max().unwrap_or(0),
        }
    };
    RunResult {
        index: index.to_owned(),
        threads: config.threads,
        ops,
        counts,
        warmup_ops,
        seconds,
        mops,
        latency,
        max_ns_by_kind,
        outcomes,
        timeline,
        interval: config.interval,
        exhausted_threads,
        histogram,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for total in [0, 1, 10, 1_001] {
            assert_eq!((0..7).map(|t| share(total, t, 7)).sum::<u64>(), total);
        }
    }
}
