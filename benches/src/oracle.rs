//! `oracle`: the physical limit of a point lookup (DESIGN.md, "Benchmarks"): one random access
//! into a sorted array of pairs whose position for each key is known exactly. Every index of a
//! read-only run is reported next to it.
//!
//! Honest by construction: the oracle's run uses the key space of *positions*
//! ([`position_space`]: the same number of loaded keys and pool keys as the real run, the loaded
//! position `r` standing for the loaded key of rank `r`), so the workload draws exactly the same
//! ranks with the same distribution as for the other indexes ([`check_same_draws`] verifies it
//! before every oracle run). `get(p)` reads the pair at index `p` — the key (into
//! [`black_box`]) and the value, one cache line — and returns the value. It pays the same
//! harness overhead as every adapter (a virtual call per operation, the runner's timing). The
//! array is a [`LargeArray`], advised for transparent huge pages as XIndex's arrays are, so that
//! the oracle's accesses do not also pay the TLB misses the indexes' avoid (until session 37 it
//! was a `Box<[Slot]>` on 4 KiB pages).
//!
//! The array is static: it holds exactly the loaded keys. Updates and read-modify-writes change a
//! value in place, but keys cannot be inserted or removed, so the oracle runs only read-only
//! workloads (lookup, YCSB C, hash point gets); the experiments never give it writes.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use concurrency::large_array::LargeArray;
use workload::{IndexAdapter, KeySpace, Op, Workload};

use crate::adapters::visit;

/// Operations per thread that [`check_same_draws`] compares.
const CHECKED_OPS: usize = 10_000;

/// One slot of the oracle's array: a key and its value, side by side.
struct Slot {
    key: u64,
    value: AtomicU64,
}

/// The oracle over the loaded keys it was made with.
pub struct Oracle {
    /// The real run's loaded keys, in order; copied into the array by the bulk load (so the copy
    /// counts as the oracle's memory).
    loaded: Arc<[u64]>,
    slots: OnceLock<LargeArray<Slot>>,
}

impl Oracle {
    /// An oracle for the run whose loaded keys are `loaded` (sorted).
    pub fn new(loaded: Arc<[u64]>) -> Self {
        Self {
            loaded,
            slots: OnceLock::new(),
        }
    }

    /// The slot at position `p`, if the array has been loaded and holds it.
    fn slot(&self, p: u64) -> Option<&Slot> {
        self.slots.get()?.get(usize::try_from(p).ok()?)
    }

    /// Panics for an operation a static array cannot do.
    fn static_array(operation: &str) -> ! {
        panic!(
            "the oracle is a static sorted array and runs only read-only workloads; \
             the experiments never give it {operation}"
        )
    }
}

/// The oracle's key space for a run that loads `loaded` of `total` keys: positions
/// `0..loaded` are loaded (position `r` stands for the loaded key of rank `r`), positions
/// `loaded..total` form the pool.
pub fn position_space(loaded: usize, total: usize) -> workload::Result<KeySpace<u64>> {
    KeySpace::new(
        (0..loaded as u64).collect(),
        (loaded as u64..total.max(loaded) as u64).collect(),
    )
}

/// Checks that `workload` draws the same ranks over `positions` as over `space`: for the first
/// operations of every thread's stream, each position's loaded key is the key the real stream
/// addresses. Errors describe the first difference.
pub fn check_same_draws(
    workload: &Workload,
    space: &KeySpace<u64>,
    positions: &KeySpace<u64>,
    threads: usize,
    seed: u64,
) -> Result<(), String> {
    let describe = |error: workload::Error| error.to_string();
    for thread in 0..threads {
        let keys = workload
            .generator(space, thread, threads, seed)
            .map_err(describe)?;
        let ranks = workload
            .generator(positions, thread, threads, seed)
            .map_err(describe)?;
        for (i, pair) in keys.zip(ranks).take(CHECKED_OPS).enumerate() {
            let same = match pair {
                (Op::Get(key), Op::Get(p)) => usize::try_from(p)
                    .ok()
                    .and_then(|p| space.loaded().get(p))
                    .is_some_and(|&loaded| loaded == key),
                _ => false,
            };
            if !same {
                return Err(format!(
                    "oracle: operation {i} of thread {thread} differs between the keys and the \
                     positions ({pair:?}); the oracle only runs read-only workloads"
                ));
            }
        }
    }
    Ok(())
}

impl IndexAdapter<u64> for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    /// Copies the loaded keys into the array and sets each position's value.
    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        let slots = LargeArray::from_fn(self.loaded.len(), |i| Slot {
            key: self.loaded[i],
            value: AtomicU64::new(0),
        });
        for &(p, value) in pairs {
            if let Some(slot) = usize::try_from(p).ok().and_then(|p| slots.get(p)) {
                slot.value.store(value, Ordering::Relaxed);
            }
        }
        if self.slots.set(slots).is_err() {
            Self::static_array("a second bulk load");
        }
    }

    fn get(&self, p: u64) -> Option<u64> {
        let slot = self.slot(p)?;
        black_box(slot.key);
        Some(slot.value.load(Ordering::Relaxed))
    }

    fn insert(&self, p: u64, value: u64) -> Option<u64> {
        match self.slot(p) {
            Some(slot) => Some(slot.value.swap(value, Ordering::Relaxed)),
            None => Self::static_array("inserts of new keys"),
        }
    }

    fn update(&self, p: u64, value: u64) -> bool {
        self.slot(p)
            .map(|slot| slot.value.store(value, Ordering::Relaxed))
            .is_some()
    }

    fn remove(&self, _p: u64) -> Option<u64> {
        Self::static_array("removes")
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        let slots = self.slots.get().map_or(&[][..], |slots| &slots[..]);
        let from = usize::try_from(start).map_or(slots.len(), |start| start.min(slots.len()));
        visit(
            slots[from..]
                .iter()
                .take(n)
                .map(|slot| slot.value.load(Ordering::Relaxed)),
        )
    }

    fn read_modify_write(&self, p: u64, value: u64) -> bool {
        self.slot(p)
            .map(|slot| slot.value.fetch_xor(value, Ordering::Relaxed))
            .is_some()
    }
}
