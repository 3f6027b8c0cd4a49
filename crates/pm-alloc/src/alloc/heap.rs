//! The allocator's volatile half: free chunks, per-class shared free lists and per-thread
//! caches ("lanes").
//!
//! Nothing here is persistent. It is rebuilt at every open from the persistent chunk table
//! (the `chunk` module) and only decides *which* free block a request gets; a block becomes
//! allocated only when the pool publishes it (which sets its persistent bit). A crash therefore
//! loses nothing but these caches.
//!
//! Layers, after the usual slab design (PMDK's per-thread caches over per-class runs):
//!
//! - each **lane** is owned by one thread at a time (claimed with a CAS on `taken`) and holds a
//!   small cache of free blocks per class behind an uncontended mutex;
//! - a cache that runs dry takes a batch from its class's **shared free list**, and one that
//!   overflows gives half back;
//! - a shared list that runs dry **carves** a free chunk into blocks of its class;
//! - large blocks are runs of contiguous free chunks (first fit) and go back to the free chunks
//!   as soon as they are freed.
//!
//! Decision: a small-class chunk whose blocks all become free is not handed back to the free
//! chunks while the pool is open (its blocks stay in the class's lists); recovery returns every
//! chunk with no allocated block to the free chunks at the next open. This keeps the free path
//! O(1) without per-chunk counters; the cost is that memory moves between classes only across
//! reopens (documented in the README).
//!
//! The protocol takes its atomics and locks from `concurrency::sync`; `tests/loom_heap.rs`
//! model-checks lane ownership and that no block is ever handed out twice.

use concurrency::sync::Mutex;
use concurrency::sync::atomic::{AtomicBool, Ordering};

/// The shape of a heap: where its chunks are and which classes it serves.
#[derive(Debug, Clone)]
pub struct HeapShape {
    /// The offset of chunk 0 in the pool.
    pub heap_offset: u64,
    /// The chunk size in bytes.
    pub chunk_size: u64,
    /// The number of chunks.
    pub chunks: u64,
    /// The block size of each small class, ascending.
    pub class_sizes: Vec<u64>,
    /// The number of lanes (threads that may use the heap at once).
    pub lanes: usize,
    /// How many free blocks of one class a lane caches before giving half back (at least 2).
    pub cache_capacity: usize,
}

struct Lane {
    taken: AtomicBool,
    cache: Mutex<Vec<Vec<u64>>>,
}

/// The volatile allocator state of one pool (see the module docs).
pub struct VolatileHeap {
    shape: HeapShape,
    free_chunks: Mutex<Vec<bool>>,
    shared: Vec<Mutex<Vec<u64>>>,
    lanes: Vec<Lane>,
}

impl VolatileHeap {
    /// A heap whose chunks are all free.
    pub fn new(shape: HeapShape) -> Self {
        let classes = shape.class_sizes.len();
        Self {
            free_chunks: Mutex::new(vec![true; shape.chunks as usize]),
            shared: (0..classes).map(|_| Mutex::new(Vec::new())).collect(),
            lanes: (0..shape.lanes)
                .map(|_| Lane {
                    taken: AtomicBool::new(false),
                    cache: Mutex::new(vec![Vec::new(); classes]),
                })
                .collect(),
            shape,
        }
    }

    /// The heap's shape.
    pub fn shape(&self) -> &HeapShape {
        &self.shape
    }

    /// Marks chunk `chunk` as in use (recovery: a chunk holding allocated blocks).
    pub fn mark_chunk_used(&self, chunk: u64) {
        self.free_chunks.lock()[chunk as usize] = false;
    }

    /// Adds a free block of `class` to the shared list (recovery: the free blocks of a chunk
    /// that holds allocated ones).
    pub fn add_free_block(&self, class: usize, offset: u64) {
        self.shared[class].lock().push(offset);
    }

    /// The number of free chunks.
    pub fn free_chunk_count(&self) -> u64 {
        self.free_chunks.lock().iter().filter(|&&f| f).count() as u64
    }

    /// Claims a free lane for the calling thread.
    pub fn claim_lane(&self) -> Option<usize> {
        self.lanes.iter().position(|lane| {
            lane.taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Gives lane `lane` back: its cached blocks go to the shared lists, then the lane is free.
    pub fn release_lane(&self, lane: usize) {
        let lane = &self.lanes[lane];
        {
            let mut cache = lane.cache.lock();
            for (class, blocks) in cache.iter_mut().enumerate() {
                if !blocks.is_empty() {
                    self.shared[class].lock().append(blocks);
                }
            }
        }
        lane.taken.store(false, Ordering::Release);
    }

    /// A free block of `class` for the owner of `lane`, or `None` if the heap has none left
    /// (other lanes' caches may still hold up to `cache_capacity` free blocks of the class).
    pub fn reserve_small(&self, lane: usize, class: usize) -> Option<u64> {
        let mut cache = self.lanes[lane].cache.lock();
        let blocks = &mut cache[class];
        if let Some(offset) = blocks.pop() {
            return Some(offset);
        }
        // Carving happens under the shared list's lock, so a thread that finds the list empty
        // while another carves waits for the new blocks instead of reporting no space.
        let mut shared = self.shared[class].lock();
        if shared.is_empty() {
            self.carve(class, &mut shared);
        }
        let keep = shared
            .len()
            .saturating_sub((self.shape.cache_capacity / 2).max(1));
        blocks.extend(shared.drain(keep..));
        blocks.pop()
    }

    /// Cuts a free chunk into blocks of `class`, pushed highest first so that the lowest
    /// offsets are taken first.
    fn carve(&self, class: usize, shared: &mut Vec<u64>) {
        let Some(chunk) = self.take_chunks(1) else {
            return;
        };
        let size = self.shape.class_sizes[class];
        let start = self.chunk_offset(chunk);
        let count = self.shape.chunk_size / size;
        shared.extend((0..count).rev().map(|i| start + i * size));
    }

    /// A free run of `chunks` whole chunks (first fit), or `None`.
    pub fn reserve_large(&self, chunks: u64) -> Option<u64> {
        self.take_chunks(chunks).map(|c| self.chunk_offset(c))
    }

    fn take_chunks(&self, run: u64) -> Option<u64> {
        let run = run as usize;
        let mut free = self.free_chunks.lock();
        let mut start = 0;
        while start + run <= free.len() {
            match free[start..start + run].iter().rposition(|&f| !f) {
                Some(used) => start += used + 1,
                None => {
                    free[start..start + run].fill(false);
                    return Some(start as u64);
                }
            }
        }
        None
    }

    /// Returns a free block of `class` to the cache of `lane`.
    pub fn release_small(&self, lane: usize, class: usize, offset: u64) {
        let mut cache = self.lanes[lane].cache.lock();
        let blocks = &mut cache[class];
        blocks.push(offset);
        if blocks.len() > self.shape.cache_capacity {
            let half = blocks.len() / 2;
            self.shared[class].lock().extend(blocks.drain(..half));
        }
    }

    /// Returns a large block of `chunks` chunks at `offset` to the free chunks.
    pub fn release_large(&self, offset: u64, chunks: u64) {
        let first = ((offset - self.shape.heap_offset) / self.shape.chunk_size) as usize;
        self.free_chunks.lock()[first..first + chunks as usize].fill(true);
    }

    fn chunk_offset(&self, chunk: u64) -> u64 {
        self.shape.heap_offset + chunk * self.shape.chunk_size
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn heap() -> VolatileHeap {
        VolatileHeap::new(HeapShape {
            heap_offset: 8192,
            chunk_size: 4096,
            chunks: 4,
            class_sizes: vec![64, 1024],
            lanes: 2,
            cache_capacity: 4,
        })
    }

    #[test]
    fn small_blocks_are_distinct_until_exhausted() {
        let h = heap();
        let lane = h.claim_lane().expect("a lane is free");
        let mut seen = std::collections::BTreeSet::new();
        while let Some(off) = h.reserve_small(lane, 1) {
            assert!(seen.insert(off));
            assert_eq!((off - 8192) % 1024, 0);
        }
        assert_eq!(seen.len(), 16);
        assert_eq!(h.free_chunk_count(), 0);
        assert_eq!(h.reserve_large(1), None);
        h.release_small(lane, 1, 8192);
        assert_eq!(h.reserve_small(lane, 1), Some(8192));
    }

    #[test]
    fn large_runs_are_first_fit_and_coalesce() {
        let h = heap();
        assert_eq!(h.reserve_large(2), Some(8192));
        assert_eq!(h.reserve_large(1), Some(8192 + 2 * 4096));
        assert_eq!(h.reserve_large(2), None);
        h.release_large(8192, 2);
        assert_eq!(h.reserve_large(2), Some(8192));
    }

    #[test]
    fn lanes_are_exclusive_and_released_caches_are_shared() {
        let h = heap();
        let a = h.claim_lane().expect("two lanes");
        let b = h.claim_lane().expect("two lanes");
        assert_ne!(a, b);
        assert_eq!(h.claim_lane(), None);
        let off = h.reserve_small(a, 0).expect("space");
        h.release_small(a, 0, off);
        h.release_lane(a);
        assert_eq!(h.claim_lane(), Some(a));
        let mut all = Vec::new();
        while let Some(o) = h.reserve_small(b, 0) {
            all.push(o);
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 64 * 4);
    }
}
