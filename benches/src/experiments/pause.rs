//! `pause`: how long the platform itself stops a thread that does nothing but read the clock,
//! the floor under every maximum-latency figure (`grow`, `rw`) as the oracle is the ceiling over
//! every lookup (DESIGN.md, Benchmarks). Each of `--threads` probe threads reads the monotonic
//! clock in a loop for `--duration`, and each gap between two reads counts as one operation's
//! latency. A long gap is time the thread did not run: an interrupt, the scheduler giving the
//! core to another thread, or, in a virtual machine, the hypervisor taking the virtual CPU away
//! (which the guest's scheduler never sees). Two rows per thread count:
//!
//! - `clock`: the other cores left to whatever else the machine runs;
//! - `clock+busy`: every other core (the available parallelism less the probes) kept busy by a
//!   spinning thread, as an index's background thread keeps one while `grow` or `rw` runs one
//!   worker.
//!
//! The table gives the medians of `--runs` runs; each row's notes count the gaps over 1 ms (the
//! bound of the issues' worst-operation targets) and, on the median run by maximum, list every
//! run's maximum.

use std::hint::spin_loop;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use workload::report::Record;
use workload::runner::MAX_TRACKED_LATENCY;

use super::Outcome;
use crate::args::{Experiment, Options};
use crate::error::Error;
use crate::plot::Metric;

/// The gap that the notes count, in nanoseconds: the issues' bound on a worst operation.
const LONG_GAP_NS: u64 = 1_000_000;

/// Whether the machine's other cores are kept busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Siblings {
    Idle,
    Busy,
}

impl Siblings {
    /// The `index` column.
    fn name(self) -> &'static str {
        match self {
            Self::Idle => "clock",
            Self::Busy => "clock+busy",
        }
    }
}

/// One probe thread's gaps.
struct Gaps {
    histogram: Histogram<u64>,
    reads: u64,
    long: u64,
    max_ns: u64,
}

impl Gaps {
    fn new() -> Self {
        Self {
            // The runner's bounds: gaps resolve as operations do (the exact maximum apart).
            histogram: Histogram::new_with_bounds(1, MAX_TRACKED_LATENCY.as_nanos() as u64, 3)
                .expect("1 ns to 60 s at 3 significant digits are valid histogram bounds"),
            reads: 0,
            long: 0,
            max_ns: 0,
        }
    }

    fn merge(&mut self, other: &Self) {
        self.histogram
            .add(&other.histogram)
            .expect("every histogram has the same bounds");
        self.reads += other.reads;
        self.long += other.long;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// Reads the clock until `duration` has passed since the first read.
fn probe(duration: Duration) -> Gaps {
    let mut gaps = Gaps::new();
    let start = Instant::now();
    let mut last = start;
    loop {
        let now = Instant::now();
        let gap = u64::try_from(now.duration_since(last).as_nanos()).unwrap_or(u64::MAX);
        last = now;
        gaps.histogram.saturating_record(gap.max(1));
        gaps.reads += 1;
        gaps.long += u64::from(gap > LONG_GAP_NS);
        gaps.max_ns = gaps.max_ns.max(gap);
        if now.duration_since(start) >= duration {
            return gaps;
        }
    }
}

/// The threads that keep the cores the probes leave busy: as many as the available parallelism
/// exceeds `probes`.
fn busy_threads(probes: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .saturating_sub(probes)
}

/// One run: `probes` threads read the clock together for `duration`, next to `spinners`
/// spinning threads; the probes' gaps merged and the wall-clock time.
fn run_once(probes: usize, spinners: usize, duration: Duration) -> (Gaps, f64) {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(probes + spinners + 1);
    std::thread::scope(|scope| {
        for _ in 0..spinners {
            scope.spawn(|| {
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    spin_loop();
                }
            });
        }
        let handles: Vec<_> = (0..probes)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    probe(duration)
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let mut gaps = Gaps::new();
        for handle in handles {
            gaps.merge(&handle.join().expect("a probe thread panicked"));
        }
        let seconds = began.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        (gaps, seconds)
    })
}

/// A run's row.
fn record(siblings: Siblings, probes: usize, spinners: usize, gaps: &Gaps, seconds: f64) -> Record {
    let quantile = |q| gaps.histogram.value_at_quantile(q);
    Record {
        experiment: Experiment::Pause.name().to_owned(),
        workload: "clock-reads".to_owned(),
        dataset: "none".to_owned(),
        index: siblings.name().to_owned(),
        threads: probes,
        keys: 0,
        ops: gaps.reads,
        seconds,
        mops: gaps.reads as f64 / seconds / 1e6,
        p50_ns: quantile(0.5),
        p99_ns: quantile(0.99),
        p999_ns: quantile(0.999),
        max_ns: gaps.max_ns,
        notes: Vec::new(),
    }
    .note("p9999_ns", quantile(0.9999))
    .note("gaps_over_1ms", gaps.long)
    .note("busy_threads", spinners)
}

/// Runs the experiment.
pub fn run(options: &Options) -> Result<Outcome, Error> {
    let mut records = Vec::new();
    let mut runs = Vec::new();
    let mut remarks = Vec::new();
    for &probes in &options.threads {
        for siblings in [Siblings::Idle, Siblings::Busy] {
            let spinners = match siblings {
                Siblings::Idle => 0,
                Siblings::Busy => busy_threads(probes),
            };
            let mut mine: Vec<Record> = (0..options.runs)
                .map(|run| {
                    let (gaps, seconds) = run_once(probes, spinners, options.duration);
                    let record = record(siblings, probes, spinners, &gaps, seconds);
                    eprintln!(
                        "  pause | {probes} threads | run {}/{} | {:<10} max {:>8.3} ms  \
                         {} gaps over 1 ms  ({spinners} busy)",
                        run + 1,
                        options.runs,
                        siblings.name(),
                        gaps.max_ns as f64 / 1e6,
                        gaps.long,
                    );
                    record
                })
                .collect();
            let over = mine
                .iter()
                .filter(|record| record.max_ns > LONG_GAP_NS)
                .count();
            remarks.push(format!(
                "pause: {}, {probes} threads: a gap over 1 ms in {over} of {} runs",
                siblings.name(),
                mine.len()
            ));
            runs.extend(mine.iter().cloned());
            mine.sort_by_key(|record| record.max_ns);
            let maxima: Vec<String> = mine
                .iter()
                .map(|record| format!("{:.3}", record.max_ns as f64 / 1e6))
                .collect();
            let median = mine[(mine.len() - 1) / 2].clone();
            records.push(
                median
                    .note("runs", mine.len())
                    .note("max_ms_runs", maxima.join("/")),
            );
        }
    }
    Ok(Outcome {
        experiment: Experiment::Pause,
        records,
        runs,
        remarks,
        timelines: Vec::new(),
        metrics: vec![Metric::MaxLatencyMs],
    })
}
