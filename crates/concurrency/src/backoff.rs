//! Backoff for spin loops: exponential busy-waiting, then yielding the CPU.
//!
//! Every retry loop of the lock-free protocols (version-lock spins, CAS retries, barrier waits)
//! goes through [`Backoff`]. Under `cfg(loom)` each step yields to the model scheduler instead of
//! spinning: a loom thread that spins without yielding makes the explored state space explode.

use crate::sync::{hint, thread};

/// Steps that busy-wait: step `i` spins `2^i` times.
const SPIN_LIMIT: u32 = 6;
/// Steps after which [`Backoff::is_completed`] reports that blocking would be better.
const YIELD_LIMIT: u32 = 10;

/// Exponential backoff for one retry loop; create a new one per loop.
///
/// [`spin`](Backoff::spin) is for contention on a CAS (the other thread is making progress, retry
/// soon); [`snooze`](Backoff::snooze) is for waiting on another thread (a lock holder, a
/// lagging participant): it spins briefly, then yields.
///
/// ```
/// use concurrency::Backoff;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let counter = AtomicU64::new(0);
/// let mut backoff = Backoff::new();
/// let mut current = counter.load(Ordering::Relaxed);
/// while let Err(actual) =
///     counter.compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Relaxed)
/// {
///     current = actual;
///     backoff.spin();
/// }
/// assert_eq!(counter.load(Ordering::Relaxed), 1);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    /// A fresh backoff at its shortest step.
    pub fn new() -> Self {
        Self { step: 0 }
    }

    /// Back off after a failed CAS: busy-waits a little longer each time (capped).
    pub fn spin(&mut self) {
        if cfg!(loom) {
            thread::yield_now();
        } else {
            for _ in 0..1_u32 << self.step.min(SPIN_LIMIT) {
                hint::spin_loop();
            }
        }
        if self.step <= SPIN_LIMIT {
            self.step += 1;
        }
    }

    /// Back off while waiting for another thread: busy-waits for the first steps, then yields.
    pub fn snooze(&mut self) {
        if cfg!(loom) || self.step > SPIN_LIMIT {
            thread::yield_now();
        } else {
            for _ in 0..1_u32 << self.step {
                hint::spin_loop();
            }
        }
        if self.step <= YIELD_LIMIT {
            self.step += 1;
        }
    }

    /// True once the busy-waiting steps are over.
    pub fn spun_out(&self) -> bool {
        self.step > SPIN_LIMIT
    }

    /// True once the backoff has reached its longest step: a caller that can block (park, sleep)
    /// should do so now rather than keep snoozing.
    pub fn is_completed(&self) -> bool {
        self.step > YIELD_LIMIT
    }

    /// Returns to the shortest step, for reuse after progress was made.
    pub fn reset(&mut self) {
        self.step = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn snooze_spins_then_yields_then_completes() {
        let mut b = Backoff::new();
        for step in 0..=YIELD_LIMIT {
            assert_eq!(b.spun_out(), step > SPIN_LIMIT, "step {step}");
            assert!(!b.is_completed());
            b.snooze();
        }
        assert!(b.spun_out() && b.is_completed());
        b.snooze();
        assert!(b.is_completed());
        b.reset();
        assert!(!b.is_completed() && !b.spun_out());
    }

    #[test]
    fn spin_never_completes() {
        let mut b = Backoff::new();
        for _ in 0..100 {
            b.spin();
        }
        assert!(!b.is_completed());
    }
}
