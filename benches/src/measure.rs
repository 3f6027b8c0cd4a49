//! How every configuration of every experiment is measured, identically for all indexes: a fresh
//! index per (configuration, index, thread count, run); its bulk load timed and its memory
//! counted ([`crate::alloc_counter`]); a brief warm-up; the measured run. Repeated runs are
//! interleaved over the indexes, so the shared machine's noise spreads over all of them, and the
//! median run by throughput is reported (DESIGN.md: medians of several runs, ratios within one
//! run).
//!
//! Read-only runs are pregenerated ([`workload::RunConfig::with_pregenerate`]): drawing a key
//! costs 50–150 ns, as much as the fastest lookups, and would otherwise compress every ratio
//! towards 1 and hide the oracle. A pregenerated run needs an operation count, so a short probe
//! and the warm-up (separate, unmeasured runs on other seeds; reads do not change the index)
//! measure the rate, and the measured run gets the count that lasts `--duration` at that rate,
//! at most [`MAX_PREGENERATED_OPS`]. Runs with writes keep their stream across the warm-up (a
//! second stream would re-insert and re-remove the same keys), so they run for `--duration`
//! after a warm-up inside the same run, generating operations as they go, in batches between
//! the timed ones (the runner's throughput counts only the time spent executing operations).
//! Read-only runs also time one operation in [`LATENCY_SAMPLE`] on its own and each batch as a
//! whole, so the per-operation clock reads, which keep lookups from overlapping, stay out of
//! their throughput; runs with writes, whose worst operations the issues bound, time every one.

use std::time::{Duration, Instant};

use workload::report::Record;
use workload::{
    IndexAdapter, KeySpace, Op, OpKind, Progress, RunConfig, RunResult, Stop, Warmup, runner,
};

use crate::alloc_counter::live_bytes;
use crate::args::Options;
use crate::error::Error;

/// A read-only run times one operation in this many on its own (the latency columns describe
/// that sample; [`workload::RunConfig::latency_sample`]).
pub const LATENCY_SAMPLE: u32 = 16;

/// Operations per thread of the probe that sizes the warm-up of a read-only run.
const PROBE_OPS_PER_THREAD: u64 = 20_000;

/// The most operations a read-only run pregenerates over all threads (24 bytes each for `u64`
/// keys, 32 for byte strings).
pub const MAX_PREGENERATED_OPS: u64 = 32_000_000;

/// Mixed into the seed of the calibration runs, so the measured run does not replay them.
const CALIBRATION_SEED: u64 = 0x5EED_CA1B;

/// How a run is stopped and warmed up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// Read-only: calibrated, pregenerated, measured for about `duration`.
    ReadOnly {
        /// Measured time.
        duration: Duration,
        /// Unmeasured time before.
        warmup: Duration,
    },
    /// With writes: `warmup` then `duration` on the same streams.
    Timed {
        /// Measured time.
        duration: Duration,
        /// Unmeasured time before.
        warmup: Duration,
        /// One operation in this many timed on its own (`--latency-sample`).
        latency_sample: u32,
    },
    /// Until every stream ends, without warm-up; throughput recorded per `interval`.
    Exhausted {
        /// The timeline's interval.
        interval: Duration,
    },
}

impl Timing {
    /// Read-only timing for `--duration`.
    pub fn read_only(options: &Options) -> Self {
        Self::ReadOnly {
            duration: options.duration,
            warmup: warmup(options.duration),
        }
    }

    /// Timing with writes for `--duration`.
    pub fn timed(options: &Options) -> Self {
        Self::Timed {
            duration: options.duration,
            warmup: warmup(options.duration),
            latency_sample: options.latency_sample,
        }
    }

    /// [`read_only`](Self::read_only) or [`timed`](Self::timed) timing, as the run needs.
    pub fn for_run(read_only: bool, options: &Options) -> Self {
        if read_only {
            Self::read_only(options)
        } else {
            Self::timed(options)
        }
    }
}

/// The warm-up before `duration` of measurement: an eighth of it, within 50–500 ms.
pub fn warmup(duration: Duration) -> Duration {
    (duration / 8).clamp(Duration::from_millis(50), Duration::from_millis(500))
}

/// One measured run of one index.
pub struct Measured {
    /// The runner's measurements.
    pub run: RunResult,
    /// Heap bytes per key: net bytes allocated by the bulk load per loaded key, or, for an index
    /// grown from empty, by the run per inserted key.
    pub bytes_per_key: f64,
    /// The bulk load's wall-clock time (`None` for an index grown from empty).
    pub load_seconds: Option<f64>,
    /// Whether the operations were generated before the start.
    pub pregenerated: bool,
    /// One operation in this many was timed on its own (1: every one).
    pub latency_sample: u32,
    /// The index's own notes ([`IndexAdapter::notes`]), read after the run.
    pub notes: Vec<(String, String)>,
}

/// Lets deferred frees of earlier runs (crossbeam-epoch garbage of the previous index) happen
/// now, so they do not count against the next bulk load.
fn settle() {
    for _ in 0..4 {
        crossbeam_epoch::pin().flush();
    }
}

/// Bulk-loads `pairs` into the fresh `index` and runs `threads` threads over it, thread `t`
/// executing `streams(t, seed)`.
pub fn measure<K, A, G, F>(
    index: &A,
    pairs: &[(K, u64)],
    timing: Timing,
    threads: usize,
    seed: u64,
    mut streams: F,
) -> Result<Measured, Error>
where
    K: Copy,
    A: IndexAdapter<K> + ?Sized,
    G: Iterator<Item = Op<K>> + Send,
    F: FnMut(usize, u64) -> workload::Result<G>,
{
    settle();
    let before = live_bytes();
    let start = Instant::now();
    index.bulk_load(pairs);
    let load_seconds = (!pairs.is_empty()).then(|| start.elapsed().as_secs_f64());
    let loaded_bytes = live_bytes() - before;
    let mut run_once = |config: RunConfig, seed: u64| {
        runner::run(&config, index, |thread| streams(thread, seed)).map_err(Error::failed)
    };
    let (run, pregenerated, latency_sample) = match timing {
        Timing::ReadOnly { duration, warmup } => {
            let calibrate = |ops: u64| {
                RunConfig::new(threads, Stop::Ops(ops.max(threads as u64)))
                    .with_pregenerate(true)
                    .with_latency_sample(LATENCY_SAMPLE)
                    .with_progress(Progress::Hidden)
            };
            let calibration_seed = seed ^ CALIBRATION_SEED;
            let probe = run_once(
                calibrate(PROBE_OPS_PER_THREAD * threads as u64),
                calibration_seed,
            )?;
            let warm_ops = ops_for(probe.mops, warmup);
            let warm = run_once(calibrate(warm_ops), calibration_seed.rotate_left(17))?;
            let config = RunConfig::new(threads, Stop::Ops(ops_for(warm.mops, duration)))
                .with_pregenerate(true)
                .with_latency_sample(LATENCY_SAMPLE);
            let mut run = run_once(config, seed)?;
            run.warmup_ops = probe.ops + warm.ops;
            (run, true, LATENCY_SAMPLE)
        }
        Timing::Timed {
            duration,
            warmup,
            latency_sample,
        } => {
            let config = RunConfig::new(threads, Stop::Duration(duration))
                .with_warmup(Warmup::Duration(warmup))
                .with_latency_sample(latency_sample);
            (run_once(config, seed)?, false, latency_sample)
        }
        Timing::Exhausted { interval } => {
            let config = RunConfig::new(threads, Stop::Exhausted).with_interval(interval);
            (run_once(config, seed)?, false, 1)
        }
    };
    let bytes_per_key = if pairs.is_empty() {
        // Grown from empty: what the run left allocated, less the run's own bookkeeping.
        let grown = live_bytes() - before - bookkeeping_bytes(&run);
        let inserted = run.counts[OpKind::Insert] - run.outcomes.insert_overwrites;
        grown as f64 / inserted.max(1) as f64
    } else {
        loaded_bytes as f64 / pairs.len() as f64
    };
    let notes = index.notes();
    Ok(Measured {
        notes,
        run,
        bytes_per_key,
        load_seconds,
        pregenerated,
        latency_sample,
    })
}

/// The operations that last `duration` at `mops` million operations per second, within
/// [`MAX_PREGENERATED_OPS`].
fn ops_for(mops: f64, duration: Duration) -> u64 {
    let ops = mops * 1e6 * duration.as_secs_f64();
    if ops.is_finite() {
        (ops as u64).clamp(1, MAX_PREGENERATED_OPS)
    } else {
        MAX_PREGENERATED_OPS
    }
}

/// The heap bytes a run result holds (its histogram, timeline and name), measured on copies.
fn bookkeeping_bytes(run: &RunResult) -> isize {
    let before = live_bytes();
    let copies = (
        run.histogram.clone(),
        run.timeline.clone(),
        run.index.clone(),
    );
    let bytes = live_bytes() - before;
    drop(copies);
    bytes
}

/// An index to measure in a configuration.
pub struct Contender<'s, K, A: ?Sized> {
    /// Its name (the adapter's).
    pub name: &'static str,
    /// Makes a fresh, empty instance.
    pub make: Box<dyn Fn() -> Box<A> + 's>,
    /// The key space it runs on (the oracle's is the space of positions).
    pub space: &'s KeySpace<K>,
}

/// A configuration, less its thread count.
pub struct Case {
    /// The experiment's name.
    pub experiment: &'static str,
    /// The workload's name.
    pub workload: String,
    /// The data set's label.
    pub dataset: String,
    /// The `keys` column: keys loaded (for growth from empty: keys inserted).
    pub keys: u64,
    /// How runs are stopped.
    pub timing: Timing,
}

/// The reported (median) run of one index at one thread count.
pub struct Reported {
    /// Its CSV row.
    pub record: Record,
    /// Every run's row, in run order (the table takes medians over them).
    pub runs: Vec<Record>,
    /// Its throughput per timeline interval, in Mops/s.
    pub timeline: Vec<f64>,
    /// The timeline's interval.
    pub interval: Duration,
}

/// The seed of the operation streams of run `run` (from 0) of a series under `--seed` `seed`:
/// the first run's is `seed` itself, each later run's its own, so that the runs a median is
/// taken over draw different operations, while every contender of one run draws the same.
pub fn run_seed(seed: u64, run: usize) -> u64 {
    seed ^ (run as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Measures every contender at every thread count of `options`, `--runs` times each (runs
/// interleaved over the contenders, each run on its own streams, [`run_seed`]), and reports each
/// median run. Thread `t` of a run over a contender's key space executes
/// `streams(space, t, threads, seed)`.
pub fn compare<'s, K, A, G, F>(
    options: &Options,
    case: &Case,
    contenders: &[Contender<'s, K, A>],
    streams: F,
) -> Result<Vec<Reported>, Error>
where
    K: Copy,
    A: IndexAdapter<K> + ?Sized,
    G: Iterator<Item = Op<K>> + Send,
    F: Fn(&'s KeySpace<K>, usize, usize, u64) -> workload::Result<G>,
{
    let mut reported = Vec::new();
    for &threads in &options.threads {
        let mut runs: Vec<Vec<Measured>> = contenders.iter().map(|_| Vec::new()).collect();
        for run in 0..options.runs {
            for (contender, measured) in contenders.iter().zip(&mut runs) {
                let pairs = contender.space.bulk_pairs();
                let index = (contender.make)();
                let result = measure(
                    &*index,
                    &pairs,
                    case.timing,
                    threads,
                    run_seed(options.seed, run),
                    |thread, seed| streams(contender.space, thread, threads, seed),
                )?;
                drop(index);
                let load = result
                    .load_seconds
                    .map_or(String::new(), |seconds| format!("load {seconds:.2} s  "));
                eprintln!(
                    "  {} | {} | {} | {threads} threads | run {}/{} | {:<14} {:>9.3} Mops/s  \
                     p50 {:>6} ns  max {:>10} ns  {load}{:.1} B/key",
                    case.experiment,
                    case.workload,
                    case.dataset,
                    run + 1,
                    options.runs,
                    contender.name,
                    result.run.mops,
                    result.run.latency.p50_ns,
                    result.run.latency.max_ns,
                    result.bytes_per_key,
                );
                measured.push(result);
            }
        }
        for measured in runs {
            reported.push(report(case, measured));
        }
    }
    Ok(reported)
}

/// The median run by throughput, as a record with its notes, next to every run's record.
fn report(case: &Case, runs: Vec<Measured>) -> Reported {
    let records: Vec<Record> = runs.iter().map(|measured| record(case, measured)).collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| runs[a].run.mops.total_cmp(&runs[b].run.mops));
    let median = order[(order.len() - 1) / 2];
    let mut record = records[median].clone();
    if runs.len() > 1 {
        let throughputs: Vec<String> = runs
            .iter()
            .map(|measured| format!("{:.3}", measured.run.mops))
            .collect();
        record = record
            .note("runs", runs.len())
            .note("mops_runs", throughputs.join("/"));
    }
    Reported {
        record,
        runs: records,
        timeline: timeline(&runs[median].run),
        interval: runs[median].run.interval,
    }
}

/// A run's record: the runner's figures, memory, and what the operations found.
fn record(case: &Case, measured: &Measured) -> Record {
    let run = &measured.run;
    let mut record = Record::from_run(
        case.experiment,
        &case.workload,
        &case.dataset,
        case.keys,
        run,
    )
    .note("bytes_per_key", format!("{:.1}", measured.bytes_per_key));
    if let Some(seconds) = measured.load_seconds {
        record = record.note("load_s", format!("{seconds:.3}"));
    }
    let counts = &run.counts;
    let outcomes = &run.outcomes;
    if counts[OpKind::Get] > 0 {
        record = record
            .note("get_hits", outcomes.get_hits)
            .note("get_misses", counts[OpKind::Get] - outcomes.get_hits);
    }
    if counts[OpKind::Update] > 0 {
        record = record.note(
            "update_misses",
            counts[OpKind::Update] - outcomes.update_hits,
        );
    }
    if counts[OpKind::Remove] > 0 {
        record = record.note(
            "remove_misses",
            counts[OpKind::Remove] - outcomes.remove_hits,
        );
    }
    if counts[OpKind::Insert] > 0 {
        record = record.note("insert_overwrites", outcomes.insert_overwrites);
    }
    if counts[OpKind::ReadModifyWrite] > 0 {
        record = record.note(
            "rmw_misses",
            counts[OpKind::ReadModifyWrite] - outcomes.read_modify_write_hits,
        );
    }
    if counts[OpKind::Scan] > 0 {
        record = record.note("scanned", outcomes.scanned);
    }
    if measured.pregenerated {
        record = record.note("pregenerated", true);
    }
    if measured.latency_sample > 1 {
        record = record.note("latency_sample", measured.latency_sample);
    }
    for (key, value) in &measured.notes {
        record = record.note(key.as_str(), value);
    }
    record
}

/// Throughput per timeline interval in Mops/s, the last (partial) interval over the time it
/// lasted; dropped when that is under a quarter of an interval (too short to say much).
fn timeline(run: &RunResult) -> Vec<f64> {
    let interval = run.interval.as_secs_f64();
    run.timeline
        .iter()
        .enumerate()
        .filter_map(|(slot, counts)| {
            let lasted = (run.seconds - slot as f64 * interval).min(interval);
            (lasted >= interval / 4.0).then(|| counts.total() as f64 / lasted / 1e6)
        })
        .collect()
}
