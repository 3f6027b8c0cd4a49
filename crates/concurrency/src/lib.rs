//! Concurrency primitives shared by every learnkv index.
//!
//! The layers, bottom up:
//!
//! - [`sync`]: the loom shim. Protocol code takes its atomics, cells, locks and threads from here,
//!   so the same source is model-checked by `loom` under `--cfg loom` and runs on `std` otherwise.
//! - [`backoff`]: bounded exponential spinning, then yielding (always yielding under loom).
//! - [`record_lock`] and [`record_cell`]: XIndex's per-record meta word (§3.2, §4.1 of the digest):
//!   `is_ptr`, `removed`, `uninitialized`, a lock bit and a version in one `AtomicU64`, read
//!   optimistically and validated; the cell pairs it with the one-word value.
//! - [`node_lock`]: the optimistic lock coupling (OLC) version lock of Leis et al., used by the
//!   nodes of HydraList, APEX and PLIN.
//! - [`grace_period`]: XIndex's `rcu_barrier` (§4.3) built as quiescent-state-based reclamation
//!   with an offline state, so idle threads never stall a barrier; its online entry pairs a
//!   compiler fence with a `membarrier` system call in `synchronize` where Linux has it
//!   (`asymmetric_fence`).
//! - [`epoch`]: epoch-based reclamation over `crossbeam-epoch`, with a loom build that frees at
//!   the end of each model execution.
//! - [`workers`]: the periodic background threads an index owns and joins on drop, optionally
//!   run on demand: only after writers mark work, backing off while none comes.
//! - [`abort_on_unwind`]: the guard that stops the process when a panic would leave a structural
//!   change half done.
//! - [`share_lock`]: the restructure lock, held exclusively or by background threads owning
//!   disjoint shares of an index's groups.
//! - [`arena`]: append-only concurrent arenas for index parts that die with their container
//!   (delta-index entries and nodes, hash chains), so inserts do not `malloc` one block each;
//!   their chunks come from `huge_heap` where it serves, already populated.
//! - [`large_array`]: fixed arrays advised for transparent huge pages once they span one (hash
//!   buckets), so random lookups do not also miss the TLB; smaller ones, and single nodes
//!   (`into_raw`), come from `huge_heap`, a heap of huge-page regions (Linux only), which has
//!   `prefault`'s thread populate the pages just beyond what it has handed out.
//! - [`block_pool`]: small blocks in size classes carved from `huge_heap`, for objects readers
//!   reach at random through a pointer (the engine's out-of-line values; Linux only).
//! - [`prefetch`]: cache-line prefetch hints for the lines a lookup is about to probe.
//! - [`striped`]: counters split into cache-padded stripes that threads take round robin (an
//!   index's length), so that writers on different cores do not take one cache line in turn.
//!
//! Loom models live in `tests/loom_*.rs` and run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p concurrency --test <name>`.

pub mod abort_on_unwind;
pub mod arena;
mod asymmetric_fence;
pub mod backoff;
#[cfg(all(target_os = "linux", not(loom)))]
pub mod block_pool;
pub mod epoch;
pub mod grace_period;
#[cfg(all(target_os = "linux", not(loom)))]
pub mod huge_heap;
pub mod large_array;
pub mod node_lock;
#[cfg(all(target_os = "linux", not(loom)))]
mod prefault;
pub mod prefetch;
pub mod record_cell;
pub mod record_lock;
pub mod share_lock;
pub mod striped;
pub mod sync;
pub mod workers;

pub use backoff::Backoff;
pub use grace_period::{GracePeriod, OnlineGuard, Participant};
pub use node_lock::{NodeLock, NodeWriteGuard, Restart, Version};
pub use record_cell::{RecordCell, RecordCellGuard};
pub use record_lock::{RecordGuard, RecordLock, RecordMeta};
pub use share_lock::{Share, ShareLock};
pub use workers::{Demand, Workers};
