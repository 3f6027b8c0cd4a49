//! Loom models of the wake-up handshake of on-demand workers (`concurrency::workers::Demand`):
//! a writer's mark is never lost to a worker that is going to sleep long. The worker records
//! that it is idle, then looks at its flag once more ([`Demand::rest`]); the writer sets the
//! flag, then reads whether the worker is idle ([`Demand::announce`]). Either the worker sees
//! the mark (and passes after its period) or the writer sees the worker idle (and wakes it);
//! and the mark stays pending for the worker's next pass. And a pass that takes a writer's
//! mark sees what the writer wrote before marking (a loom cell, so that loom checks the order).
//!
//! The condition variable that carries the wake-up is `std`'s and no part of the models.
#![cfg(loom)]

use concurrency::Demand;
use concurrency::sync::Arc;
use concurrency::sync::cell::UnsafeCell;
use test_support::loom_runs;

/// A worker whose last pass took the work there was, now deciding to sleep long, and `writers`
/// threads marking work meanwhile.
fn idle_worker_and_writers(writers: usize) {
    let demand = Arc::new(Demand::new(1));
    assert!(demand.take(0), "a new worker has work pending");
    let marks: Vec<_> = (0..writers)
        .map(|_| {
            let demand = Arc::clone(&demand);
            loom_runs::spawn(move || demand.announce(0))
        })
        .collect();
    let saw_work = demand.rest(0, true);
    let woken = marks
        .into_iter()
        .map(|mark| mark.join().expect("no panic"))
        .filter(|&wake| wake)
        .count();
    assert!(
        saw_work || woken > 0,
        "a mark was lost: the worker sleeps long with work pending and nobody wakes it"
    );
    assert!(woken <= 1, "one mark sets the flag, and only it wakes");
    assert!(demand.take(0), "the marked work waits for the next pass");
}

#[test]
fn a_mark_reaches_a_worker_going_idle() {
    loom_runs::check(|| idle_worker_and_writers(1));
}

#[test]
fn marks_of_two_writers_reach_a_worker_going_idle() {
    loom_runs::check(|| idle_worker_and_writers(2));
}

/// A worker at its period (not idle) needs no wake: the mark waits for its next pass.
#[test]
fn a_worker_at_its_period_is_not_woken() {
    loom_runs::check(|| {
        let demand = Arc::new(Demand::new(1));
        assert!(demand.take(0));
        let mark = {
            let demand = Arc::clone(&demand);
            loom_runs::spawn(move || demand.announce(0))
        };
        assert!(
            !demand.rest(0, false),
            "a worker at its period does not look again"
        );
        assert!(!mark.join().expect("no panic"), "nor is it woken");
        assert!(demand.take(0), "the marked work waits for the next pass");
    });
}

/// What a writer wrote before marking, in a loom cell: loom fails the model if the pass that
/// took the mark reads it unordered with the write.
struct Written(UnsafeCell<usize>);

// SAFETY: written by the writer before it marks, read by the pass that took the mark (what the
// model checks).
unsafe impl Sync for Written {}

/// A pass that takes a writer's mark sees the writes the writer made before marking.
#[test]
fn a_pass_that_takes_a_mark_sees_the_writes_before_it() {
    loom_runs::check(|| {
        let demand = Arc::new(Demand::new(1));
        assert!(demand.take(0));
        let written = Arc::new(Written(UnsafeCell::new(0)));
        let writer = {
            let (demand, written) = (Arc::clone(&demand), Arc::clone(&written));
            loom_runs::spawn(move || {
                // SAFETY: nobody reads the cell before the mark below.
                written.0.with_mut(|value| unsafe { *value = 1 });
                demand.announce(0);
            })
        };
        if demand.take(0) {
            // SAFETY: the writer wrote the cell before its mark, which this pass took.
            let value = written.0.with(|value| unsafe { *value });
            assert_eq!(value, 1, "the pass missed the write that marked");
        }
        writer.join().expect("no panic");
    });
}
