//! The crates' loom runs (DESIGN.md "Testing layers" 2): one runner with the workspace's
//! settings, and the spawn that every model uses.
//!
//! Preemptions are bounded to 2 when `LOOM_MAX_PREEMPTIONS` is unset (unbounded exploration
//! does not finish in useful time). An execution may take up to 10,000 scheduling branches
//! (loom's default is 1,000): a maintenance pass over two groups, with its barriers' wait
//! loops and the operations racing it, or a delta index built by several splits inside the
//! model, takes more. The branch limit bounds one execution's length, not which executions
//! are explored.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Scheduling branches one execution may take.
const MAX_BRANCHES: usize = 10_000;

/// Runs `f` under loom and prints, as `name`, the executions explored and the time taken
/// (visible with `--nocapture`).
pub fn model(name: &str, f: impl Fn() + Send + Sync + 'static) {
    run(name, usize::MAX, f);
}

/// [`model`] named after the running test.
pub fn check(f: impl Fn() + Send + Sync + 'static) {
    run(&test_name(), usize::MAX, f);
}

/// [`check`] with the preemption bound capped at `cap` whatever the environment says.
pub fn check_with_max_preemptions(cap: usize, f: impl Fn() + Send + Sync + 'static) {
    run(&test_name(), cap, f);
}

/// Spawns `f` on a new loom thread, then yields, so that the first execution runs the new
/// thread first: loom remembers only the last access to each atomic and misses races whose
/// first access is the spawned thread's otherwise (tokio-rs/loom#166).
pub fn spawn<T: 'static>(f: impl FnOnce() -> T + 'static) -> loom::thread::JoinHandle<T> {
    let handle = loom::thread::spawn(f);
    loom::thread::yield_now();
    handle
}

/// The test harness names each test's thread after the test.
fn test_name() -> String {
    std::thread::current().name().unwrap_or("model").to_owned()
}

fn run(name: &str, cap: usize, f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.unwrap_or(2).min(cap));
    builder.max_branches = builder.max_branches.max(MAX_BRANCHES);
    // A std atomic on purpose: it counts executions and is no part of the model.
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    let started = Instant::now();
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    eprintln!(
        "{name}: {} executions explored in {:.1} s",
        executions.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}
