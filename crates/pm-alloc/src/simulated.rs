//! The `Simulated` backend: a power-failure simulator for crash tests.
//!
//! It keeps two images of the pool (DESIGN.md, "Persistent memory"; PLIN digest §5.3 "Crash
//! simulator"; APEX digest §5.4):
//!
//! - the **live image** is the memory the pool hands out, what the program sees;
//! - the **persisted image** is what would survive a power failure. A line reaches it only
//!   through a flush followed by a fence *of the same thread*: a flush snapshots the line into
//!   the thread's pending set, the thread's next fence copies its pending lines in, unless a
//!   later snapshot of the line already got there (another thread flushed and fenced it
//!   meanwhile): a write-back never takes a line back to older contents.
//!
//! A **crash image** is the persisted image plus, for every line whose live content differs
//! from it (stored but not persisted: the cache may have evicted it early), the live line with
//! a probability of `evict_percent`%, drawn from a seeded generator. Decision: line granularity
//! without a per-store trace. Real hardware may also persist a line's stores partially, in
//! program order at 8-byte granularity; no structure of this crate relies on the order of
//! stores within an unpersisted line (log lines carry a checksum over their payload), so
//! whole-line eviction exercises the same recovery paths for a fraction of the cost.
//!
//! Every fence has an index (0, 1, 2, ... in program order, across threads). A
//! [`CrashPlan`] makes the backend take a crash image just *before* chosen fences take effect
//! (the lines flushed for that fence are then still only "maybe persisted"); tests collect them
//! with [`Pool::take_crash_images`](crate::Pool::take_crash_images), reopen each with
//! [`PoolOptions::open_image`](crate::PoolOptions::open_image) and check the recovered state.

use std::collections::HashMap;
use std::thread::{self, ThreadId};

use concurrency::sync::Mutex;

use crate::flush::CACHE_LINE;
use crate::mapping::Mapping;

/// When the simulated backend takes crash images.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CrashPlan {
    /// Never (images can still be taken on demand with
    /// [`Pool::crash_image`](crate::Pool::crash_image)).
    #[default]
    Never,
    /// Before every fence.
    EveryFence,
    /// Before the fences with these indices.
    AtFences(Vec<u64>),
}

/// The settings of a simulated pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimOptions {
    /// The seed of the eviction choices.
    pub seed: u64,
    /// The chance, in percent, that an unpersisted dirty line is in a crash image.
    pub evict_percent: u8,
    /// When to take crash images automatically.
    pub crash_plan: CrashPlan,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            evict_percent: 50,
            crash_plan: CrashPlan::Never,
        }
    }
}

/// A crash image: the bytes a pool would hold after a power failure at one fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashImage {
    /// The index of the fence the image was taken before.
    pub fence: u64,
    /// The pool's bytes.
    pub bytes: Vec<u8>,
}

struct Pending {
    thread: ThreadId,
    line: u64,
    data: [u64; 8],
    /// The snapshot's place among all flushes (from 1).
    seq: u64,
}

struct State {
    persisted: Vec<u8>,
    /// The `seq` of the snapshot each line last took into `persisted` (none: 0).
    persisted_seq: HashMap<u64, u64>,
    pending: Vec<Pending>,
    flushes: u64,
    fences: u64,
    options: SimOptions,
    images: Vec<CrashImage>,
}

/// The simulator of one pool.
pub(crate) struct Simulator {
    state: Mutex<State>,
}

/// SplitMix64: a tiny, well-mixed generator for the eviction choices.
fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn read_line(map: &Mapping, line: u64) -> [u64; 8] {
    std::array::from_fn(|i| {
        map.word(line + 8 * i as u64)
            .load(std::sync::atomic::Ordering::Relaxed)
    })
}

impl Simulator {
    /// A simulator whose persisted image starts as `persisted` (the live image's bytes).
    pub(crate) fn new(persisted: Vec<u8>, options: SimOptions) -> Self {
        Self {
            state: Mutex::new(State {
                persisted,
                persisted_seq: HashMap::new(),
                pending: Vec::new(),
                flushes: 0,
                fences: 0,
                options,
                images: Vec::new(),
            }),
        }
    }

    /// Snapshots line `line` (a 64-aligned offset) into the calling thread's pending set.
    pub(crate) fn flush_line(&self, map: &Mapping, line: u64) {
        let mut state = self.state.lock();
        state.flushes += 1;
        let seq = state.flushes;
        state.pending.push(Pending {
            thread: thread::current().id(),
            line,
            data: read_line(map, line),
            seq,
        });
    }

    /// A fence of the calling thread: takes a planned crash image, then persists the thread's
    /// pending lines.
    pub(crate) fn fence(&self, map: &Mapping) {
        let me = thread::current().id();
        let mut state = self.state.lock();
        let index = state.fences;
        state.fences += 1;
        let planned = match &state.options.crash_plan {
            CrashPlan::Never => false,
            CrashPlan::EveryFence => true,
            CrashPlan::AtFences(list) => list.contains(&index),
        };
        if planned {
            let seed = state.options.seed ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d);
            let bytes = Self::image(&state, map, seed);
            state.images.push(CrashImage {
                fence: index,
                bytes,
            });
        }
        let State {
            persisted,
            persisted_seq,
            pending,
            ..
        } = &mut *state;
        pending.retain(|p| {
            if p.thread != me {
                return true;
            }
            let newest = persisted_seq.entry(p.line).or_insert(0);
            if *newest < p.seq {
                *newest = p.seq;
                let start = p.line as usize;
                for (i, word) in p.data.iter().enumerate() {
                    persisted[start + 8 * i..start + 8 * i + 8]
                        .copy_from_slice(&word.to_le_bytes());
                }
            }
            false
        });
    }

    fn image(state: &State, map: &Mapping, seed: u64) -> Vec<u8> {
        let mut rng = seed;
        let mut bytes = state.persisted.clone();
        let percent = u64::from(state.options.evict_percent);
        for (index, line) in bytes.chunks_exact_mut(CACHE_LINE).enumerate() {
            let live = read_line(map, (index * CACHE_LINE) as u64);
            let differs = line
                .chunks_exact(8)
                .zip(live)
                .any(|(old, new)| old != new.to_le_bytes());
            if differs && split_mix(&mut rng) % 100 < percent {
                for (dst, word) in line.chunks_exact_mut(8).zip(live) {
                    dst.copy_from_slice(&word.to_le_bytes());
                }
            }
        }
        bytes
    }

    /// A crash image now, with the eviction choices drawn from `seed`.
    pub(crate) fn crash_image(&self, map: &Mapping, seed: u64) -> Vec<u8> {
        Self::image(&self.state.lock(), map, seed)
    }

    /// The persisted image.
    pub(crate) fn persisted(&self) -> Vec<u8> {
        self.state.lock().persisted.clone()
    }

    /// The fences issued so far.
    pub(crate) fn fences(&self) -> u64 {
        self.state.lock().fences
    }

    /// The planned crash images taken so far (removed from the simulator).
    pub(crate) fn take_images(&self) -> Vec<CrashImage> {
        std::mem::take(&mut self.state.lock().images)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn setup(plan: CrashPlan, evict: u8) -> (Mapping, Simulator) {
        let map = Mapping::anonymous(4096, None).expect("anonymous mapping");
        let sim = Simulator::new(
            vec![0; 4096],
            SimOptions {
                seed: 1,
                evict_percent: evict,
                crash_plan: plan,
            },
        );
        (map, sim)
    }

    #[test]
    fn only_flushed_and_fenced_lines_persist() {
        let (map, sim) = setup(CrashPlan::Never, 0);
        map.word(0).store(1, Ordering::Relaxed);
        map.word(64).store(2, Ordering::Relaxed);
        sim.flush_line(&map, 0);
        assert_eq!(sim.persisted()[0], 0, "a flush alone persists nothing");
        sim.fence(&map);
        let p = sim.persisted();
        assert_eq!((p[0], p[64]), (1, 0));
        assert_eq!(sim.crash_image(&map, 9)[64], 0, "no eviction at 0%");
    }

    #[test]
    fn a_fence_never_takes_a_line_back_to_an_older_snapshot() {
        // This thread flushes word 0's store; another stores word 1 in the same line and
        // persists it; this thread's fence then must not undo that persist.
        let (map, sim) = setup(CrashPlan::Never, 0);
        map.word(0).store(1, Ordering::Relaxed);
        sim.flush_line(&map, 0);
        thread::scope(|s| {
            s.spawn(|| {
                map.word(8).store(2, Ordering::Relaxed);
                sim.flush_line(&map, 0);
                sim.fence(&map);
            });
        });
        sim.fence(&map);
        let p = sim.persisted();
        assert_eq!((p[0], p[8]), (1, 2));
    }

    #[test]
    fn a_flush_snapshots_the_line() {
        let (map, sim) = setup(CrashPlan::Never, 0);
        map.word(0).store(1, Ordering::Relaxed);
        sim.flush_line(&map, 0);
        map.word(0).store(2, Ordering::Relaxed);
        sim.fence(&map);
        assert_eq!(sim.persisted()[0], 1);
    }

    #[test]
    fn planned_images_are_taken_before_the_fence() {
        let (map, sim) = setup(CrashPlan::AtFences(vec![1]), 100);
        for v in 1..=3 {
            map.word(0).store(v, Ordering::Relaxed);
            sim.flush_line(&map, 0);
            sim.fence(&map);
        }
        let images = sim.take_images();
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].fence, 1);
        assert_eq!(
            images[0].bytes[0], 2,
            "evict_percent 100 keeps every dirty line"
        );
        assert_eq!(sim.fences(), 3);
    }
}
