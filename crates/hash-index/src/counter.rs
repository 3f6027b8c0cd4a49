//! Striped counters: a group's live keys and chain nodes, and the index's length, counted
//! without one shared cache line that every inserting thread writes (which would bounce
//! between cores on every insert).
//!
//! Each thread adds to one stripe, picked once per thread; readers sum the stripes, so a sum
//! taken while writers run is approximate (each stripe is exact). Values are two's-complement
//! `u64`s, so a stripe may go "negative" (a key counted in by one thread and out by another).
//!
//! The counters are `std` atomics, not the loom shim's, on purpose: they only feed the
//! load-factor triggers, `len` and statistics, never a decision any protocol's correctness
//! rests on, and keeping them out of loom's model keeps the models' state space small.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

/// Stripes per counter.
const STRIPES: usize = 4;

/// Hands out stripe numbers to threads.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The calling thread's stripe.
#[inline]
fn stripe() -> usize {
    STRIPE.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(i);
        }
        i
    })
}

/// One stripe: two counts on one cache line.
#[derive(Default)]
struct Stripe {
    first: AtomicU64,
    second: AtomicU64,
}

/// A pair of striped counters (for a group: live keys and chain nodes).
pub(crate) struct Counters {
    stripes: [CachePadded<Stripe>; STRIPES],
}

impl Counters {
    /// Both counts zero.
    pub(crate) fn new() -> Self {
        Self {
            stripes: std::array::from_fn(|_| CachePadded::new(Stripe::default())),
        }
    }

    /// Adds `delta` to the first count.
    #[inline]
    pub(crate) fn add_first(&self, delta: i64) {
        self.stripes[stripe()]
            .first
            .fetch_add(delta as u64, Ordering::Relaxed);
    }

    /// Adds `delta` to the second count.
    #[inline]
    pub(crate) fn add_second(&self, delta: i64) {
        self.stripes[stripe()]
            .second
            .fetch_add(delta as u64, Ordering::Relaxed);
    }

    /// The first count (approximate while writers run).
    pub(crate) fn first(&self) -> i64 {
        self.stripes.iter().fold(0u64, |sum, s| {
            sum.wrapping_add(s.first.load(Ordering::Relaxed))
        }) as i64
    }

    /// The second count (approximate while writers run).
    pub(crate) fn second(&self) -> i64 {
        self.stripes.iter().fold(0u64, |sum, s| {
            sum.wrapping_add(s.second.load(Ordering::Relaxed))
        }) as i64
    }
}

/// Heap bytes of one [`Counters`].
pub(crate) const COUNTERS_BYTES: usize = std::mem::size_of::<Counters>();
