//! Per-group storage for chain nodes: chunks of vacant nodes that writers take from
//! concurrently, freed in one piece with their group.
//!
//! A chain node used to be a heap allocation of its own, freed one by one when its group was
//! dropped: with an index growing from empty, every conflict cost a `malloc` on the insert path
//! and every resize a `free` per chain node of the old group (about a tenth of the CPU time of
//! the `grow` experiment). An arena takes a node with one `fetch_add` on its newest chunk and
//! allocates a chunk (of a size set by the group's bucket count) only when that one is used up;
//! dropping the group frees its few chunks. Nodes taken together also sit together, so a chain
//! scan touches fewer pages.
//!
//! A full chunk is replaced by a new one whose first node its allocator keeps, installed with
//! a CAS on the newest-chunk pointer; a writer that loses the race frees its chunk, never
//! published, and takes a node from the winner's. Chunks are linked newest first and never
//! unlinked before the arena is dropped, so a node lives as long as its group. This module
//! holds the `unsafe` code that follows chunk pointers.

use std::mem::size_of;
use std::ptr;

use concurrency::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::record::{NODE_BYTES, Node};

/// Buckets of a group per node of one of its chunks: with chunks of `buckets / 32` nodes, an
/// arena leaves at most one byte per bucket unused (a node is 32 bytes), and a group of a
/// thousand buckets or more allocates once per 32 conflicts or more.
const BUCKETS_PER_NODE: usize = 32;

/// The most nodes of a chunk (32 KiB): the insert that finds a chunk used up allocates and
/// initialises the next one, which must stay a matter of microseconds however large the group.
const MAX_CHUNK_NODES: usize = 1024;

/// The chain nodes of one group.
pub(crate) struct Arena {
    /// The newest chunk; NULL before the first node is taken.
    newest: AtomicPtr<Chunk>,
    /// The nodes of each chunk.
    chunk_nodes: usize,
}

/// A block of nodes, taken in order.
struct Chunk {
    nodes: Box<[Node]>,
    /// How many nodes were handed out (it passes `nodes.len()` once the chunk is used up).
    taken: AtomicUsize,
    /// The chunk installed before this one, owned by this one.
    older: *mut Chunk,
}

impl Arena {
    /// An empty arena for a group of `buckets` buckets.
    pub(crate) fn new(buckets: usize) -> Self {
        Self {
            newest: AtomicPtr::new(ptr::null_mut()),
            chunk_nodes: (buckets / BUCKETS_PER_NODE).clamp(1, MAX_CHUNK_NODES),
        }
    }

    /// A vacant node that no one else is given, living as long as the arena.
    pub(crate) fn take(&self) -> &Node {
        let mut newest = self.newest.load(Ordering::Acquire);
        loop {
            // SAFETY: a chunk is published fully built (the CAS below with `Release`, loads
            // with `Acquire`) and freed only when the arena is dropped, which `&self` excludes.
            if let Some(chunk) = unsafe { newest.as_ref() } {
                // Distinct `fetch_add` results give distinct nodes.
                let i = chunk.taken.fetch_add(1, Ordering::Relaxed);
                if let Some(node) = chunk.nodes.get(i) {
                    return node;
                }
            }
            let fresh = Box::into_raw(Box::new(Chunk {
                nodes: (0..self.chunk_nodes).map(|_| Node::vacant()).collect(),
                taken: AtomicUsize::new(1),
                older: newest,
            }));
            match self
                .newest
                .compare_exchange(newest, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // SAFETY: `fresh` is now owned by the arena, which outlives `&self`, and its
                // first node was kept for this caller by `taken: 1`.
                Ok(_) => return &unsafe { &*fresh }.nodes[0],
                Err(seen) => {
                    // SAFETY: the CAS failed, so `fresh` was never published: this thread
                    // still owns the box it came from, and frees it once.
                    drop(unsafe { Box::from_raw(fresh) });
                    newest = seen;
                }
            }
        }
    }

    /// Heap bytes of the chunks.
    pub(crate) fn bytes(&self) -> usize {
        let mut chunks = 0;
        let mut next = self.newest.load(Ordering::Acquire);
        // SAFETY: as in `take`: chunks live until the arena is dropped.
        while let Some(chunk) = unsafe { next.as_ref() } {
            chunks += 1;
            next = chunk.older;
        }
        chunks * (size_of::<Chunk>() + self.chunk_nodes * NODE_BYTES)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let mut next = self.newest.load(Ordering::Acquire);
        while !next.is_null() {
            // SAFETY: exclusive access; every chunk came from `Box::into_raw` in `take` and is
            // reachable once, from the newest chunk or its successor, so it is freed once.
            let chunk = unsafe { Box::from_raw(next) };
            next = chunk.older;
        }
    }
}
