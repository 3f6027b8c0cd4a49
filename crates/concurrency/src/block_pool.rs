//! Small blocks in size classes, carved from the writers' [huge-page heap](crate::huge_heap), for
//! objects that readers reach at random through a pointer (the engine's out-of-line values).
//!
//! A block that `malloc` places on an ordinary 4 KiB page costs a reader a page walk on top of
//! its cache miss once the blocks span more memory than the TLB covers: 1M values of 150 bytes
//! take 150 MiB, and under virtualisation the walk is two-dimensional. A scratch probe of the
//! engine's random gets ran about 15% faster when glibc backed its whole heap with huge pages;
//! this pool gives the blocks that benefit without touching the process's allocator.
//!
//! Sizes are rounded up to a multiple of [`CLASS_STEP`] bytes, up to [`MAX_BLOCK`]; each size
//! class carves its blocks from chunks of [`CHUNK`] bytes taken from the huge-page heap, and
//! keeps its freed blocks on an intrusive free list (the first word of a free block links to the
//! next) that it serves first. A class is split into [`SHARDS`] shards, each behind its own
//! mutex, and a thread allocates and frees through the shard it was given at its first call,
//! so that threads seldom share a lock. Chunks go back to the heap only when the pool is
//! dropped (the process's pool never is): a freed block is reused by its size class, as in most
//! slab allocators.
//!
//! Blocks are often freed by threads that never allocate: the engine retires a replaced value
//! through the epoch collector, which frees it on whichever thread collects, mostly readers.
//! So a shard whose free list reaches a chunk's worth of bytes spills the list, whole, onto its
//! class's shared stack of lists, and a shard that has run out takes a list from that stack
//! before it takes a new chunk: a shard never holds more than a chunk's worth of free blocks.
//! Without that, a writer's shard took chunk after chunk while the blocks it had allocated
//! piled up freed in the readers' shards, without bound.

use std::alloc::Layout;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::huge_heap::HugeHeap;

/// The size classes' granularity, and the blocks' alignment.
pub const CLASS_STEP: usize = 16;

/// The largest block served; a larger size is the caller's to allocate elsewhere.
pub const MAX_BLOCK: usize = 1024;

/// The bytes a class takes from the huge-page heap at a time.
pub const CHUNK: usize = 64 << 10;

/// How many independently locked shards each class has.
pub const SHARDS: usize = 4;

const CLASSES: usize = MAX_BLOCK / CLASS_STEP;

/// A pool of blocks in size classes. See the module comment.
pub struct BlockPool {
    shards: [[Mutex<Class>; CLASSES]; SHARDS],
    /// Per class, the free lists that shards spilled: `(first block, length)`. Taken only while
    /// holding a shard's lock, never the other way round.
    spilled: [Mutex<Vec<(usize, usize)>>; CLASSES],
    /// The chunks taken from the heap, returned to it on drop.
    chunks: Mutex<Vec<usize>>,
}

/// One shard of one size class.
struct Class {
    /// The first free block (0: none); each free block's first word holds the next.
    free: usize,
    /// How many blocks the free list holds.
    free_len: usize,
    /// The unused part of the current chunk, `next..end`.
    next: usize,
    end: usize,
}

impl Class {
    const EMPTY: Self = Self {
        free: 0,
        free_len: 0,
        next: 0,
        end: 0,
    };
}

impl BlockPool {
    /// An empty pool.
    pub const fn new() -> Self {
        Self {
            shards: [const { [const { Mutex::new(Class::EMPTY) }; CLASSES] }; SHARDS],
            spilled: [const { Mutex::new(Vec::new()) }; CLASSES],
            chunks: Mutex::new(Vec::new()),
        }
    }

    /// The process's pool.
    pub fn global() -> &'static Self {
        static GLOBAL: BlockPool = BlockPool::new();
        &GLOBAL
    }

    /// The size of the block that serves `size` bytes, if the pool serves it (`1..=MAX_BLOCK`).
    pub fn block_size(size: usize) -> Option<usize> {
        (1..=MAX_BLOCK)
            .contains(&size)
            .then(|| size.next_multiple_of(CLASS_STEP))
    }

    /// A block of at least `size` bytes, aligned to [`CLASS_STEP`]; `None` if the pool does not
    /// serve `size` or the heap refuses a chunk. The block is valid until it is freed or the
    /// pool is dropped.
    pub fn alloc(&self, size: usize) -> Option<*mut u8> {
        self.alloc_in(thread_shard(), size)
    }

    /// [`alloc`](Self::alloc) through shard `shard`.
    fn alloc_in(&self, shard: usize, size: usize) -> Option<*mut u8> {
        let block = Self::block_size(size)?;
        let mut class = self.class(shard, block).lock();
        if class.free == 0
            && class.end - class.next < block
            && let Some((list, len)) = self.spilled[class_index(block)].lock().pop()
        {
            (class.free, class.free_len) = (list, len);
        }
        if class.free != 0 {
            let taken = class.free;
            // SAFETY: `free` heads the class's list of free blocks: each is a live, 16-aligned
            // part of a chunk that only this list refers to, its first word the next block.
            class.free = unsafe { (taken as *const usize).read() };
            class.free_len -= 1;
            return Some(taken as *mut u8);
        }
        if class.end - class.next < block {
            let chunk = HugeHeap::writers().alloc(chunk_layout())?.as_ptr() as usize;
            self.chunks.lock().push(chunk);
            // The rest of the old chunk (less than one block) is left unused.
            class.next = chunk;
            class.end = chunk + CHUNK;
        }
        let taken = class.next;
        class.next += block;
        Some(taken as *mut u8)
    }

    /// Returns a block to its class.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`alloc`](Self::alloc) of this pool with this `size`, is freed once, and
    /// nothing reads or writes it afterwards.
    pub unsafe fn dealloc(&self, ptr: *mut u8, size: usize) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.dealloc_in(thread_shard(), ptr, size) }
    }

    /// [`dealloc`](Self::dealloc) through shard `shard`.
    ///
    /// # Safety
    ///
    /// As for [`dealloc`](Self::dealloc).
    unsafe fn dealloc_in(&self, shard: usize, ptr: *mut u8, size: usize) {
        let block = Self::block_size(size).expect("a block of the pool has a served size");
        let mut class = self.class(shard, block).lock();
        // SAFETY: the caller hands the block over: it is at least 16 bytes, 16-aligned, and
        // nothing else uses it, so its first word may hold the link.
        unsafe { ptr.cast::<usize>().write(class.free) };
        class.free = ptr as usize;
        class.free_len += 1;
        if class.free_len * block >= CHUNK {
            let list = (class.free, class.free_len);
            self.spilled[class_index(block)].lock().push(list);
            (class.free, class.free_len) = (0, 0);
        }
    }

    /// Bytes taken from the huge-page heap (blocks in use, free blocks and the unused rest of
    /// each class's current chunk): the pool's footprint, which never shrinks.
    pub fn footprint(&self) -> usize {
        self.chunks.lock().len() * CHUNK
    }

    /// Shard `shard` of the class of `block`-byte blocks.
    fn class(&self, shard: usize, block: usize) -> &Mutex<Class> {
        &self.shards[shard][class_index(block)]
    }
}

impl Default for BlockPool {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for BlockPool {
    fn drop(&mut self) {
        for &chunk in self.chunks.get_mut().iter() {
            // SAFETY: each chunk came from the heap's `alloc` with this layout and is returned
            // once; every block carved from it ends its validity with the pool (`alloc`).
            unsafe {
                HugeHeap::writers().dealloc(
                    std::ptr::NonNull::new_unchecked(chunk as *mut u8),
                    chunk_layout(),
                );
            }
        }
    }
}

/// The index of the size class of `block`-byte blocks.
fn class_index(block: usize) -> usize {
    block / CLASS_STEP - 1
}

/// The layout of a chunk.
fn chunk_layout() -> Layout {
    Layout::from_size_align(CHUNK, CLASS_STEP).expect("a chunk's layout is valid")
}

/// The shard the calling thread uses, handed out round-robin at each thread's first call.
fn thread_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SHARD.with(|shard| {
        if shard.get() == usize::MAX {
            shard.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
        }
        shard.get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_round_up_to_their_class_and_large_ones_are_refused() {
        assert_eq!(BlockPool::block_size(1), Some(16));
        assert_eq!(BlockPool::block_size(158), Some(160));
        assert_eq!(BlockPool::block_size(MAX_BLOCK), Some(MAX_BLOCK));
        assert_eq!(BlockPool::block_size(MAX_BLOCK + 1), None);
        assert_eq!(BlockPool::block_size(0), None);
        assert!(BlockPool::new().alloc(MAX_BLOCK + 1).is_none());
    }

    #[test]
    fn blocks_live_on_the_huge_heap_and_freed_ones_are_reused() {
        let pool = BlockPool::new();
        let a = pool.alloc(100).unwrap();
        let b = pool.alloc(100).unwrap();
        assert_ne!(a, b);
        assert_eq!(a as usize % CLASS_STEP, 0);
        assert!(HugeHeap::writers().contains(a));
        assert_eq!(pool.footprint(), CHUNK);
        // SAFETY: `a` came from this pool with this size and is not used again.
        unsafe { pool.dealloc(a, 100) };
        assert_eq!(
            pool.alloc(112),
            Some(a),
            "a freed block serves its class first"
        );
        assert_ne!(pool.alloc(100), Some(a));
    }

    #[test]
    fn blocks_freed_through_another_shard_are_reused() {
        let pool = BlockPool::new();
        // A writer allocating through shard 0, its blocks freed through shard 1 (a reader
        // collecting them), at most 100 alive at a time: 20K blocks of 160 bytes would take
        // 49 chunks if none were reused.
        let mut alive = std::collections::VecDeque::new();
        for _ in 0..20_000 {
            alive.push_back(pool.alloc_in(0, 150).unwrap());
            if alive.len() == 100 {
                let oldest = alive.pop_front().unwrap();
                // SAFETY: it came from this pool with this size and is not used again.
                unsafe { pool.dealloc_in(1, oldest, 150) };
            }
        }
        assert!(
            pool.footprint() <= 2 * CHUNK,
            "{} chunks",
            pool.footprint() / CHUNK
        );
    }

    #[test]
    fn blocks_of_concurrent_threads_stay_disjoint() {
        let pool = BlockPool::new();
        let blocks: Vec<(usize, usize, u8)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..SHARDS + 1)
                .map(|t| {
                    let pool = &pool;
                    scope.spawn(move || {
                        (0..2_000)
                            .map(|i| {
                                let size = 24 + (i * 7 + t) % 200;
                                let ptr = pool.alloc(size).unwrap();
                                // SAFETY: a fresh block of at least `size` bytes.
                                unsafe { ptr.write_bytes(t as u8, size) };
                                (ptr as usize, size, t as u8)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_live_blocks_intact(blocks);
    }

    /// Asserts that no two blocks overlap and that each still holds its fill byte.
    fn assert_live_blocks_intact(mut live: Vec<(usize, usize, u8)>) {
        live.sort_unstable();
        for pair in live.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "blocks overlap");
        }
        for &(ptr, size, fill) in &live {
            assert_eq!(ptr % CLASS_STEP, 0);
            // SAFETY: a live block of `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, size) };
            assert!(bytes.iter().all(|&b| b == fill), "a block lost its bytes");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn live_blocks_never_overlap_and_keep_their_bytes_across_reuse(
            ops in prop::collection::vec((any::<bool>(), 1usize..=MAX_BLOCK), 1..300)
        ) {
            let pool = BlockPool::new();
            let mut live: Vec<(usize, usize, u8)> = Vec::new();
            for (n, (free, size)) in ops.into_iter().enumerate() {
                if free && !live.is_empty() {
                    let (ptr, size, _) = live.swap_remove(n % live.len());
                    // SAFETY: it came from this pool with this size and is not used again.
                    unsafe { pool.dealloc(ptr as *mut u8, size) };
                } else {
                    let ptr = pool.alloc(size).unwrap() as usize;
                    let fill = n as u8;
                    // SAFETY: a fresh block of at least `size` bytes.
                    unsafe { (ptr as *mut u8).write_bytes(fill, size) };
                    live.push((ptr, size, fill));
                }
            }
            assert_live_blocks_intact(live);
        }
    }
}
