//! A persistent-memory pool for learnkv: mapping modes, offset pointers, a crash-safe
//! allocator, flush and fence, per-thread persistent logs, a global version, and a simulated
//! power-failure backend for crash tests.
//!
//! APEX (`range-index::apex`), PLIN (`range-index::plin`) and the engine's PM mode are built on
//! it (DESIGN.md, "Persistent memory"; APEX digest §2.1, §4.3–4.4; PLIN digest §3.10, §5.3).
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use pm_alloc::{PAtomicPtr, PoolOptions};
//!
//! // A root with one pointer slot; a 256 B-aligned block published into it.
//! let pool = PoolOptions::new(1 << 20).volatile()?;
//! let root = pool.root::<[PAtomicPtr<[AtomicU64; 32]>; 8]>()?;
//! let slot = &pool.get(root)?[0];
//! let block = pool.reserve(256, 256)?;
//! block.words()[0].store(42, Ordering::Relaxed);
//! let node = pool.publish(block, slot)?;
//! assert_eq!(node.offset() % 256, 0);
//! assert_eq!(pool.get(slot.load(Ordering::Acquire))?[0].load(Ordering::Relaxed), 42);
//! pool.free_at(slot)?;
//! assert!(slot.load(Ordering::Acquire).is_null());
//! # Ok::<(), pm_alloc::Error>(())
//! ```
//!
//! Modules, one per concept:
//!
//! - [`pool`]: the [`Pool`], its [`Mode`]s and what each guarantees on a process crash and on a
//!   power failure, recovery, the root object, and the allocation protocol;
//! - `header` and `mapping` (private): the file format and the mapping of each mode;
//! - [`pptr`]: [`PPtr`] offset pointers and [`PAtomicPtr`] publish cells;
//! - [`flush`]: `clwb`/`clflushopt`/`clflush` + `sfence` by CPUID, per-thread counters;
//! - [`alloc`]: size classes, the persistent chunk table, the volatile heap with per-thread caches;
//! - [`log`]: one-line per-thread persistent logs (APEX's SMO log, PLIN's redo entries);
//! - [`version`]: the global version bumped at each open;
//! - [`simulated`]: the crash simulator.
//!
//! Under `cfg(loom)` only the modules without mapped memory are built (the volatile heap is
//! what the loom models check).

pub mod alloc;
pub mod error;
pub mod flush;
#[cfg(not(loom))]
mod header;
#[cfg(not(loom))]
pub mod log;
#[cfg(not(loom))]
mod mapping;
#[cfg(not(loom))]
pub mod pool;
pub mod pptr;
#[cfg(not(loom))]
pub mod simulated;
#[cfg(not(loom))]
pub mod version;

pub use error::{Corruption, Error, Result};
pub use flush::{FlushInstruction, PersistCounters, flush_instruction, thread_counters};
#[cfg(not(loom))]
pub use header::{MAX_CHUNK_SIZE, MAX_LANES, MAX_LOG_SLOTS, MAX_POOL_SIZE, MIN_CHUNK_SIZE};
#[cfg(not(loom))]
pub use log::{LOG_PAYLOAD_WORDS, LogSlot, ThreadLog};
#[cfg(not(loom))]
pub use pool::{Mode, Pool, PoolOptions, PoolStats, Reservation};
pub use pptr::{PAtomicPtr, PPtr, Persistent};
#[cfg(not(loom))]
pub use simulated::{CrashImage, CrashPlan, SimOptions};
