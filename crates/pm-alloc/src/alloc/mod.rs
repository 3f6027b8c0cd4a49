//! The crash-safe allocator: size classes, the persistent chunk table and the volatile heap.
//!
//! - `size_class` (private): which block a request gets (64 B to a quarter chunk in
//!   ~1.5× steps, 64/256 B alignment), and large requests as whole-chunk runs;
//! - `chunk` (private): the persistent chunk table, the allocator's only persistent metadata;
//! - [`heap`]: the volatile free lists and per-thread caches, rebuilt at every open.
//!
//! The persistent protocol that ties them together (reserve → initialise → publish through a
//! per-thread redo log, and free the same way) lives in [`crate::pool`], whose docs explain why
//! no crash can leak, double-allocate or lose a published block, and what recovery costs.

#[cfg(not(loom))]
pub(crate) mod chunk;
pub mod heap;
#[cfg(not(loom))]
pub(crate) mod size_class;
