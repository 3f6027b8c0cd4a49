//! A heap for arrays smaller than a huge page, carved out of regions advised for transparent
//! huge pages ([`large_array`](crate::large_array) gives an array of 2 MiB or more huge pages of
//! its own).
//!
//! An index that reads its arrays at random pays a TLB miss per probe when they lie on 4 KiB
//! pages, and under virtualisation the page walk is two-dimensional. XIndex-R's group arrays
//! (60–200 KiB for 10M keys) are far too small for pages of their own, so `malloc` places them
//! on ordinary pages; backing the whole `malloc` heap with huge pages (glibc's `hugetlb=1`
//! tunable) made single-threaded gets 10–15% faster. This heap gives the index that benefit
//! without touching the process's allocator: it maps regions of [`REGION`] bytes aligned to a
//! huge page, advises them with `madvise(MADV_HUGEPAGE)`, and hands out extents of whole
//! [`GRANULE`]s from them.
//!
//! Free extents are kept coalesced, indexed by address and by length; an allocation takes the
//! smallest free extent that fits (best fit) and returns the rest. Regions are never unmapped:
//! memory freed here is reused here, never returned to the system, like most allocators' arenas.
//! A mutex serialises the heap. Its users allocate when they build an array (a bulk load, a
//! compaction) and when an [`Arena`](crate::arena::Arena) fills its newest chunk, which about
//! one insert in fifty does in the `rw` mix at write ratio 0.5 (the measurement log, session
//! 33): the lock is taken often but held briefly. In a heap that populates ahead (below), each
//! allocation has the `prefault` thread populate up to [`POPULATE_AHEAD`] bytes of its region
//! beyond it, so a growing user mostly writes pages that are already there.
//!
//! The process has two such heaps. [`HugeHeap::writers`] holds what an operation allocates on
//! its own path (arena chunks of delta indexes, the engine's value blocks), and populates ahead
//! as above: it grows slowly enough for the `prefault` thread to stay ahead of the writes.
//! [`HugeHeap::global`] holds the arrays that bulk loads and restructurings build, in bursts (a
//! maintenance pass over 10M keys allocates tens of megabytes within milliseconds), and leaves
//! their pages to the threads that write them. With one heap for both, an insert whose arena
//! chunk landed among a pass's fresh allocations took the fault itself, and a fresh huge page
//! took 4.7 ms to fault in on the virtual machines of the measurement log; and populating the
//! pass's arrays ahead kept the `prefault` thread busy while the pass ran, a third thread
//! taking turns on two cores with the worker (XIndex-R's `rw` mix at 1 worker: the first pass
//! of every process had operations of 4–8 ms; session 38).

use std::alloc::Layout;
use std::collections::{BTreeMap, BTreeSet};
use std::ptr::NonNull;

use parking_lot::Mutex;

use crate::large_array::HUGE_PAGE;

/// The unit of allocation, and the largest alignment served: a cache line.
pub const GRANULE: usize = 64;

/// The size of the regions the heap maps (a larger request maps a region of its own size,
/// rounded up to huge pages).
pub const REGION: usize = 64 << 20;

/// How far beyond an allocation's end a heap that populates ahead has its region populated.
pub const POPULATE_AHEAD: usize = 4 * HUGE_PAGE;

/// A heap of extents in huge-page regions. See the module comment.
pub struct HugeHeap {
    free: Mutex<Extents>,
    /// Whether each allocation has the `prefault` thread populate the pages beyond it.
    populates_ahead: bool,
}

/// The free extents, coalesced: no two are adjacent (extents of two regions that the system
/// happened to map side by side merge too; both stay mapped for good).
struct Extents {
    /// Start address → length.
    by_start: BTreeMap<usize, usize>,
    /// (length, start), for best fit.
    by_len: BTreeSet<(usize, usize)>,
    /// The regions mapped from the system.
    regions: Vec<Region>,
    /// Bytes handed out and not freed (whole granules).
    allocated: usize,
}

/// A region mapped from the system.
struct Region {
    start: usize,
    len: usize,
    /// The end of the part of the region handed to the prefault thread so far.
    populated: usize,
}

impl Region {
    fn contains(&self, address: usize) -> bool {
        (self.start..self.start + self.len).contains(&address)
    }
}

impl Extents {
    /// Takes `size` bytes (a multiple of [`GRANULE`]) from the smallest free extent that holds
    /// them, if any.
    fn take(&mut self, size: usize) -> Option<usize> {
        let &(len, start) = self.by_len.range((size, 0)..).next()?;
        self.by_len.remove(&(len, start));
        self.by_start.remove(&start);
        if len > size {
            self.insert(start + size, len - size);
        }
        Some(start)
    }

    /// Returns the extent `start..start + len` to the free extents, merging it with its free
    /// neighbours.
    fn give(&mut self, mut start: usize, mut len: usize) {
        if let Some((&before, &before_len)) = self.by_start.range(..start).next_back()
            && before + before_len == start
        {
            self.remove(before, before_len);
            start = before;
            len += before_len;
        }
        if let Some(&after_len) = self.by_start.get(&(start + len)) {
            self.remove(start + len, after_len);
            len += after_len;
        }
        self.insert(start, len);
    }

    /// Has the region that holds the allocation ending at `end` populated at least
    /// [`POPULATE_AHEAD`] bytes beyond it (whole huge pages, within the region), unless it was
    /// asked already.
    fn populate_beyond(&mut self, end: usize) {
        let Some(region) = self.regions.iter_mut().find(|r| r.contains(end - 1)) else {
            return;
        };
        let target = (end + POPULATE_AHEAD)
            .next_multiple_of(HUGE_PAGE)
            .min(region.start + region.len);
        if target <= region.populated {
            return;
        }
        let from = region.populated.max(end - end % HUGE_PAGE);
        region.populated = target;
        if from < target {
            crate::prefault::populate(from..target);
        }
    }

    fn insert(&mut self, start: usize, len: usize) {
        self.by_start.insert(start, len);
        self.by_len.insert((len, start));
    }

    fn remove(&mut self, start: usize, len: usize) {
        self.by_start.remove(&start);
        self.by_len.remove(&(len, start));
    }
}

impl HugeHeap {
    /// An empty heap that populates ahead of its allocations; it maps its first region on its
    /// first allocation.
    pub const fn new() -> Self {
        Self::with_population(true)
    }

    const fn with_population(populates_ahead: bool) -> Self {
        Self {
            free: Mutex::new(Extents {
                by_start: BTreeMap::new(),
                by_len: BTreeSet::new(),
                regions: Vec::new(),
                allocated: 0,
            }),
            populates_ahead,
        }
    }

    /// The process's heap for arrays: those of bulk loads and restructurings. Their threads
    /// fault its pages themselves (see the module comment).
    pub fn global() -> &'static Self {
        static GLOBAL: HugeHeap = HugeHeap::with_population(false);
        &GLOBAL
    }

    /// The process's heap for what operations allocate on their own path, kept apart from
    /// [`global`](Self::global)'s bursts so that its pages are populated ahead of the writes
    /// (see the module comment).
    pub fn writers() -> &'static Self {
        static WRITERS: HugeHeap = HugeHeap::new();
        &WRITERS
    }

    /// Allocates `layout` (size above 0, alignment at most [`GRANULE`]); `None` if the layout
    /// is not served here or the system refuses a new region.
    pub fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        if layout.size() == 0 || layout.align() > GRANULE {
            return None;
        }
        let size = layout.size().checked_next_multiple_of(GRANULE)?;
        let mut free = self.free.lock();
        let start = match free.take(size) {
            Some(start) => start,
            None => {
                let len = size.max(REGION).checked_next_multiple_of(HUGE_PAGE)?;
                let region = map_region(len)?;
                free.regions.push(Region {
                    start: region,
                    len,
                    populated: region,
                });
                free.give(region, len);
                free.take(size)?
            }
        };
        free.allocated += size;
        if self.populates_ahead {
            free.populate_beyond(start + size);
        }
        NonNull::new(start as *mut u8)
    }

    /// Frees an allocation.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`alloc`](Self::alloc) of this heap with this `layout`, and is freed
    /// once; nothing reads or writes it afterwards.
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        let size = layout.size().next_multiple_of(GRANULE);
        let mut free = self.free.lock();
        free.give(ptr.as_ptr() as usize, size);
        free.allocated -= size;
    }

    /// Bytes mapped from the system so far (the heap's footprint; it never shrinks).
    pub fn mapped(&self) -> usize {
        self.free.lock().regions.iter().map(|r| r.len).sum()
    }

    /// Bytes allocated and not freed, in whole granules: what the heap's users hold, as a
    /// counting global allocator would report it (the heap's memory bypasses the global
    /// allocator, so memory measurements add this).
    pub fn allocated(&self) -> usize {
        self.free.lock().allocated
    }

    /// Whether `ptr` lies in one of the heap's regions (so an allocation that holds it came
    /// from this heap).
    pub fn contains(&self, ptr: *const u8) -> bool {
        let address = ptr as usize;
        self.free.lock().regions.iter().any(|r| r.contains(address))
    }
}

impl Default for HugeHeap {
    fn default() -> Self {
        Self::new()
    }
}

/// Maps `len` bytes (a multiple of [`HUGE_PAGE`]) aligned to a huge page and advised for huge
/// pages; `None` if the system refuses.
fn map_region(len: usize) -> Option<usize> {
    let padded = len.checked_add(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no existing
    // memory; the result is checked before use.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            padded,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw as usize;
    let start = raw.next_multiple_of(HUGE_PAGE);
    let (head, tail) = (start - raw, padded - (start - raw) - len);
    // SAFETY: the head and the tail are the parts of this fresh mapping outside the aligned
    // region, page-aligned (the mapping and the huge-page boundary both are) and never used;
    // unmapping them cannot fail on a valid range, and a failure would only leave them mapped.
    // The advice changes how the region is backed, never its contents, and may be refused.
    unsafe {
        if head > 0 {
            libc::munmap(raw as *mut libc::c_void, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_writable() {
        let heap = HugeHeap::new();
        let layouts = [1usize, 64, 65, 4096, 100_000, 3 << 20]
            .map(|size| Layout::from_size_align(size, 8).expect("a valid layout"));
        let blocks: Vec<(NonNull<u8>, Layout)> = layouts
            .iter()
            .map(|&layout| (heap.alloc(layout).expect("memory"), layout))
            .collect();
        for (i, &(ptr, layout)) in blocks.iter().enumerate() {
            assert_eq!(ptr.as_ptr() as usize % GRANULE, 0);
            // SAFETY: the block is this test's, `layout.size()` bytes long.
            unsafe { ptr.as_ptr().write_bytes(i as u8, layout.size()) };
        }
        for (i, &(ptr, layout)) in blocks.iter().enumerate() {
            // SAFETY: as above; every block was filled with its own byte.
            let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), layout.size()) };
            assert!(
                bytes.iter().all(|&b| b == i as u8),
                "block {i} was overwritten"
            );
        }
        // All of them fit the first region; a request larger than a region maps one of its
        // own, rounded up to huge pages.
        assert_eq!(heap.mapped(), REGION);
        let big = Layout::from_size_align(REGION + 1, 8).expect("a valid layout");
        let big_ptr = heap.alloc(big).expect("memory");
        assert_eq!(heap.mapped(), 2 * REGION + HUGE_PAGE);
        assert!(heap.contains(big_ptr.as_ptr().wrapping_add(REGION)));
        assert!(blocks.iter().all(|&(ptr, _)| heap.contains(ptr.as_ptr())));
        let elsewhere = Box::new(0u8);
        assert!(!heap.contains(&raw const *elsewhere));
        // SAFETY: the block is this test's, `REGION + 1` bytes long; its ends are written.
        unsafe {
            big_ptr.as_ptr().write(1);
            big_ptr.as_ptr().add(REGION).write(2);
            heap.dealloc(big_ptr, big);
        }
        for (ptr, layout) in blocks {
            // SAFETY: each block came from this heap with this layout and is freed once.
            unsafe { heap.dealloc(ptr, layout) };
        }
    }

    #[test]
    fn freed_extents_coalesce_and_are_reused() {
        let heap = HugeHeap::new();
        let layout = Layout::from_size_align(REGION / 4, 64).expect("a valid layout");
        let blocks: Vec<NonNull<u8>> = (0..4)
            .map(|_| heap.alloc(layout).expect("memory"))
            .collect();
        assert_eq!(heap.mapped(), REGION);
        assert_eq!(heap.allocated(), REGION);
        for &ptr in &blocks {
            // SAFETY: each block came from this heap with this layout and is freed once.
            unsafe { heap.dealloc(ptr, layout) };
        }
        assert_eq!(heap.allocated(), 0);
        // The four quarters merged back into one extent: the whole region fits again.
        let whole = Layout::from_size_align(REGION, 64).expect("a valid layout");
        let ptr = heap.alloc(whole).expect("memory");
        assert_eq!(heap.mapped(), REGION, "a new region was mapped");
        // SAFETY: as above.
        unsafe { heap.dealloc(ptr, whole) };
    }

    #[test]
    fn allocations_have_their_region_populated_ahead_once() {
        let heap = HugeHeap::new();
        let populated = || {
            let free = heap.free.lock();
            free.regions
                .iter()
                .map(|r| (r.start, r.populated))
                .collect::<Vec<_>>()
        };
        let small = Layout::from_size_align(100, 8).expect("a valid layout");
        let first = heap.alloc(small).expect("memory");
        let [(start, ahead)] = populated()[..] else {
            panic!("one region is mapped")
        };
        assert_eq!(first.as_ptr() as usize, start);
        assert_eq!(ahead, start + POPULATE_AHEAD + HUGE_PAGE);
        // Allocations within what was asked for ask nothing more.
        let second = heap.alloc(small).expect("memory");
        assert_eq!(populated(), [(start, ahead)]);
        // One that reaches past it moves the mark, never past the region's end.
        let most = Layout::from_size_align(REGION - 2 * HUGE_PAGE, 8).expect("a valid layout");
        let rest = heap.alloc(most).expect("memory");
        assert_eq!(populated(), [(start, start + REGION)]);
        // SAFETY: each block came from this heap with its layout and is freed once.
        unsafe {
            heap.dealloc(first, small);
            heap.dealloc(second, small);
            heap.dealloc(rest, most);
        }
    }

    #[test]
    fn populating_pages_keeps_their_bytes() {
        let heap = HugeHeap::new();
        let layout = Layout::from_size_align(3 * HUGE_PAGE / 2, 8).expect("a valid layout");
        let block = heap.alloc(layout).expect("memory");
        let start = block.as_ptr() as usize;
        // SAFETY: the block is this test's, `layout.size()` bytes long.
        unsafe { block.as_ptr().write_bytes(0xa5, HUGE_PAGE / 2) };
        crate::prefault::populate_now(start..start + layout.size());
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), layout.size()) };
        let (written, fresh) = bytes.split_at(HUGE_PAGE / 2);
        assert!(
            written.iter().all(|&b| b == 0xa5),
            "populating changed bytes"
        );
        assert!(fresh.iter().all(|&b| b == 0), "fresh pages are not zero");
        // SAFETY: the block came from this heap with this layout and is freed once.
        unsafe { heap.dealloc(block, layout) };
    }

    #[test]
    fn unserved_layouts_are_refused() {
        let heap = HugeHeap::new();
        assert!(
            heap.alloc(Layout::from_size_align(0, 1).expect("valid"))
                .is_none()
        );
        assert!(
            heap.alloc(Layout::from_size_align(64, 128).expect("valid"))
                .is_none()
        );
        assert_eq!(heap.mapped(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random allocations and frees against a model of the live blocks: live blocks never
        /// overlap, and once everything is freed the free extents are exactly the mapped
        /// regions (coalescing lost nothing and invented nothing).
        #[test]
        fn live_blocks_never_overlap(ops in prop::collection::vec((any::<bool>(), 1usize..300_000), 1..200)) {
            let heap = HugeHeap::new();
            let mut live: Vec<(usize, usize, Layout)> = Vec::new();
            for (free_one, size) in ops {
                if free_one && !live.is_empty() {
                    let (start, _, layout) = live.swap_remove(size % live.len());
                    // SAFETY: a live block of this heap with its layout, freed once.
                    unsafe { heap.dealloc(NonNull::new(start as *mut u8).expect("non-null"), layout) };
                } else {
                    let layout = Layout::from_size_align(size, 8).expect("a valid layout");
                    let start = heap.alloc(layout).expect("memory").as_ptr() as usize;
                    let end = start + size.next_multiple_of(GRANULE);
                    prop_assert!(live.iter().all(|&(s, e, _)| end <= s || e <= start));
                    live.push((start, end, layout));
                }
            }
            for (start, _, layout) in live {
                // SAFETY: as above.
                unsafe { heap.dealloc(NonNull::new(start as *mut u8).expect("non-null"), layout) };
            }
            let free = heap.free.lock();
            prop_assert_eq!(free.allocated, 0);
            prop_assert_eq!(
                free.by_start.values().sum::<usize>(),
                free.regions.iter().map(|r| r.len).sum::<usize>()
            );
            prop_assert_eq!(free.by_start.len(), free.by_len.len());
        }
    }
}
