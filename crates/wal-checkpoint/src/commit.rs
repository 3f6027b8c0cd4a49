//! The group-commit hand-off (XIndex §5's background logger, with `Immediate` durability added):
//! writers that need durability *request* a round and wait; one committer thread runs rounds
//! (drain every lane, write, fsync), or a writer leads one itself (below), and the round's end
//! wakes the writers it covers. Concurrent writers share a round, and so one fsync per lane.
//!
//! Round numbers make "a round covering my append" precise: `started` counts rounds that have
//! begun, `done` rounds that have finished. A writer that appended before calling
//! [`GroupCommit::request`] waits for round `started + 1` as read under the lock: that
//! round begins after the call, so it drains the writer's record. One round runs at a time
//! (`started` is `done` or `done + 1`), so rounds finish in order.
//!
//! A writer that finds no round running may run the next one itself
//! ([`GroupCommit::request_or_lead`], not in the paper): a lone durable write then costs its own
//! write and fsync, without waking the committer and being woken by it (two thread hand-offs,
//! tens of microseconds here). Writers that arrive meanwhile wait for the round after it, which
//! the committer runs as before.
//!
//! Protocol code: it takes its mutex, condition variables and threads from
//! `concurrency::sync`, so the loom model in `tests/loom_group_commit.rs` checks this code.

use std::time::Duration;

use concurrency::sync::atomic::{AtomicBool, Ordering};
use concurrency::sync::{Condvar, Mutex};

#[derive(Debug, Default)]
struct State {
    /// The highest round a writer waits for.
    requested: u64,
    /// Rounds begun.
    started: u64,
    /// Rounds finished (in order).
    done: u64,
    /// Why a round failed; once set, every wait fails.
    failed: Option<String>,
    /// The committer stops once no requested round is left.
    shutdown: bool,
}

/// What a writer that asked for a round does next ([`GroupCommit::request_or_lead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// No round was running: the writer runs this round itself, then reports it.
    Lead(u64),
    /// The committer runs this round; the writer waits for it.
    Wait(u64),
}

/// The shared state of the writers and the committer.
#[derive(Debug, Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    /// The committer waits here for requests.
    committer: Condvar,
    /// Writers wait here for their round.
    writers: Condvar,
    /// Mirrors `state.failed.is_some()` for a lock-free check on the write path.
    failed: AtomicBool,
}

impl GroupCommit {
    /// A hand-off with no round run yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for a round that starts after this call. When no round is running, the caller
    /// takes it: [`Turn::Lead`], and it must run the round and report it with
    /// [`finish_round`](Self::finish_round). Otherwise the committer will run it:
    /// [`Turn::Wait`].
    pub fn request_or_lead(&self) -> Turn {
        let mut state = self.state.lock();
        let target = state.started + 1;
        if state.started == state.done {
            state.started = target;
            state.requested = state.requested.max(target);
            return Turn::Lead(target);
        }
        if state.requested < target {
            state.requested = target;
            self.committer.notify_one();
        }
        Turn::Wait(target)
    }

    /// Asks for a round that starts after this call, without waiting for it: returns the
    /// round to [`wait`](Self::wait) for.
    pub fn request(&self) -> u64 {
        let mut state = self.state.lock();
        let target = state.started + 1;
        if state.requested < target {
            state.requested = target;
            self.committer.notify_one();
        }
        target
    }

    /// Blocks until round `target` has finished. Errors with the failure message once any
    /// round or flush has failed (the log is failed for good), even one after `target`.
    pub fn wait(&self, target: u64) -> Result<(), String> {
        let mut state = self.state.lock();
        loop {
            if let Some(message) = &state.failed {
                return Err(message.clone());
            }
            if state.done >= target {
                return Ok(());
            }
            state = self.writers.wait(state);
        }
    }

    /// The committer's wait for work: returns the number of the round to run now, or `None`
    /// when shut down with nothing requested. With a `period`, a round also starts when the
    /// period passes without a request.
    pub fn next_round(&self, period: Option<Duration>) -> Option<u64> {
        let mut state = self.state.lock();
        loop {
            // A round a writer leads is running: the next one waits for its end.
            let idle = state.started == state.done;
            if idle && state.requested > state.started {
                break;
            }
            if state.shutdown && state.requested <= state.started {
                return None;
            }
            match period {
                Some(period) => {
                    let (guard, timed_out) = self.committer.wait_for(state, period);
                    state = guard;
                    if timed_out {
                        if state.started == state.done {
                            break;
                        }
                        // A writer's round is running: the periodic one is due right after it
                        // (`finish_round` wakes the committer for a later request).
                        state.requested = state.requested.max(state.started + 1);
                    }
                }
                None => state = self.committer.wait(state),
            }
        }
        state.started += 1;
        Some(state.started)
    }

    /// Marks `round` finished (with its outcome) and wakes the writers, and the committer when
    /// a later round is requested.
    pub fn finish_round(&self, round: u64, outcome: Result<(), String>) {
        let mut state = self.state.lock();
        state.done = state.done.max(round);
        if state.requested > round {
            self.committer.notify_one();
        }
        if let Err(message) = outcome {
            if state.failed.is_none() {
                state.failed = Some(message);
            }
            self.failed.store(true, Ordering::Release);
        }
        drop(state);
        self.writers.notify_all();
    }

    /// Records a failure seen outside a round (a writer's own flush): every later wait fails.
    pub fn fail(&self, message: String) {
        let mut state = self.state.lock();
        if state.failed.is_none() {
            state.failed = Some(message);
        }
        self.failed.store(true, Ordering::Release);
        drop(state);
        self.writers.notify_all();
    }

    /// The failure message, if any round or flush failed.
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.state.lock().failed.clone()
    }

    /// Tells the committer to stop once the requested rounds are done.
    pub fn shutdown(&self) {
        self.state.lock().shutdown = true;
        self.committer.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn a_writer_leads_a_round_only_while_none_runs() {
        let gc = GroupCommit::new();
        assert_eq!(gc.request_or_lead(), Turn::Lead(1));
        // Round 1 is running: later writers wait for round 2, the committer's.
        assert_eq!(gc.request_or_lead(), Turn::Wait(2));
        assert_eq!(gc.request(), 2);
        gc.finish_round(1, Ok(()));
        assert_eq!(gc.wait(1), Ok(()));
        assert_eq!(gc.next_round(None), Some(2));
        assert_eq!(gc.request_or_lead(), Turn::Wait(3));
        gc.finish_round(2, Ok(()));
        // Round 3 is requested but not begun: a writer may take it from the committer.
        assert_eq!(gc.request_or_lead(), Turn::Lead(3));
        gc.finish_round(3, Err("fsync failed".into()));
        assert_eq!(gc.wait(3), Err("fsync failed".to_string()));
        gc.shutdown();
        assert_eq!(gc.next_round(None), None, "nothing is left to run");
    }

    #[test]
    fn a_periodic_round_due_during_a_writers_round_runs_right_after_it() {
        let period = Duration::from_millis(400);
        let gc = Arc::new(GroupCommit::new());
        assert_eq!(gc.request_or_lead(), Turn::Lead(1));
        let committer = {
            let gc = Arc::clone(&gc);
            thread::spawn(move || (gc.next_round(Some(period)), std::time::Instant::now()))
        };
        // The period passes while the writer's round runs.
        thread::sleep(period + period / 4);
        let finished = std::time::Instant::now();
        gc.finish_round(1, Ok(()));
        let (round, started) = committer.join().expect("committer");
        assert_eq!(round, Some(2));
        assert!(
            started - finished < period / 2,
            "the due round waited for another period ({:?})",
            started - finished
        );
    }

    #[test]
    fn concurrent_writers_share_rounds_and_see_failures() {
        let gc = Arc::new(GroupCommit::new());
        let rounds = Arc::new(AtomicU64::new(0));
        let committer = {
            let gc = Arc::clone(&gc);
            let rounds = Arc::clone(&rounds);
            thread::spawn(move || {
                while let Some(round) = gc.next_round(None) {
                    rounds.fetch_add(1, Ordering::SeqCst);
                    gc.finish_round(round, Ok(()));
                }
            })
        };
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let gc = Arc::clone(&gc);
                thread::spawn(move || {
                    for _ in 0..100 {
                        gc.wait(gc.request()).expect("no round fails");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        assert!(rounds.load(Ordering::SeqCst) <= 400);
        gc.fail("disk on fire".into());
        assert_eq!(gc.wait(gc.request()), Err("disk on fire".into()));
        assert_eq!(gc.failure().as_deref(), Some("disk on fire"));
        gc.shutdown();
        committer.join().expect("committer");
    }
}
