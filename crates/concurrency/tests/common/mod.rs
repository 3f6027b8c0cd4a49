//! Shared helpers of the loom models.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `f` under loom with the environment's settings, bounding preemptions to 2 when
/// `LOOM_MAX_PREEMPTIONS` is unset (unbounded exploration does not finish in useful time).
/// Prints the number of executions explored (visible with `--nocapture`).
pub fn model(f: impl Fn() + Send + Sync + 'static) {
    model_with_max_preemptions(usize::MAX, f);
}

/// As [`model`], with the preemption bound capped at `cap` whatever the environment says.
pub fn model_with_max_preemptions(cap: usize, f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.unwrap_or(2).min(cap));
    // A std atomic on purpose: it counts executions and is no part of the model.
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "{}: {} executions explored",
        std::thread::current().name().unwrap_or("model"),
        executions.load(Ordering::Relaxed)
    );
}

/// Spawns `f` on a new loom thread, then yields, so the first execution runs the new thread
/// first: loom remembers only the last access to each atomic and misses races whose first
/// access is the spawned thread's otherwise (tokio-rs/loom#166).
pub fn spawn<T: 'static>(f: impl FnOnce() -> T + 'static) -> loom::thread::JoinHandle<T> {
    let handle = loom::thread::spawn(f);
    loom::thread::yield_now();
    handle
}
