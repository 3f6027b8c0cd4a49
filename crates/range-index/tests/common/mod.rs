//! Shared helpers of the loom models.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Runs `f` under loom with the environment's settings, bounding preemptions to 2 when
/// `LOOM_MAX_PREEMPTIONS` is unset (unbounded exploration does not finish in useful time).
/// Prints the number of executions explored and the time taken (visible with `--nocapture`).
pub fn model(f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.unwrap_or(2));
    // Every value a delta index places in its arenas is a few atomic operations, and a model
    // builds its trees inside the model: loom's default of 1,000 branches per execution is
    // too few for the trees of several splits.
    builder.max_branches = 10_000;
    // A std atomic on purpose: it counts executions and is no part of the model.
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    let started = Instant::now();
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "{}: {} executions explored in {:.1} s",
        std::thread::current().name().unwrap_or("model"),
        executions.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}
