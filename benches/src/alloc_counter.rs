//! A counting global allocator for the reproduction binary: it forwards every call to the system
//! allocator and keeps the number of live heap bytes, so each run can report the index's memory
//! per key (`bytes_per_key`: the bytes its bulk load allocated, net of what it freed, divided by
//! the keys loaded) — the space column of XIndex §6 and the learned-index papers. Memory that
//! `learnkv` takes from its huge-page heap (`concurrency::huge_heap`) bypasses the global
//! allocator; [`live_bytes`] adds the heap's own count of it.
//!
//! Install it in a binary with
//! `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;` and read
//! [`live_bytes`] before and after the code to measure. Without it installed, [`live_bytes`]
//! counts the huge-page heap only.
//!
//! The count is split over a few cache-line-sized shards picked from the calling thread's stack
//! address, so threads that allocate at the same time (peers that allocate per operation) rarely
//! share a counter's cache line; the total is the shards' sum, exact once the threads whose
//! allocations it should include have been joined.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Counter shards; a power of two.
const SHARDS: usize = 16;

/// One counter on its own cache lines.
#[repr(align(128))]
struct Shard(AtomicIsize);

/// Live bytes allocated through [`CountingAllocator`], split over shards.
static LIVE: [Shard; SHARDS] = [const { Shard(AtomicIsize::new(0)) }; SHARDS];

/// The system allocator, counting live bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

/// Adds `bytes` (negative for frees) to the calling thread's shard.
fn count(bytes: isize) {
    let marker = 0u8;
    // Thread stacks lie megabytes apart; a Fibonacci hash of the 64 KiB page of a local variable
    // spreads them over the shards. Any shard is correct: only contention depends on the choice.
    let page = (std::ptr::addr_of!(marker) as usize >> 16) as u64;
    let shard =
        (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros())) as usize;
    LIVE[shard].0.fetch_add(bytes, Ordering::Relaxed);
}

/// A layout's size as a signed byte count (allocations never exceed `isize::MAX` bytes).
fn signed(size: usize) -> isize {
    size as isize
}

/// The bytes currently allocated through [`CountingAllocator`] (0 if it is not installed), plus
/// those held in the process's huge-page heap, which `learnkv`'s indexes allocate from without
/// going through the global allocator (`concurrency::huge_heap`).
pub fn live_bytes() -> isize {
    let global: isize = LIVE
        .iter()
        .map(|shard| shard.0.load(Ordering::Relaxed))
        .sum();
    global + signed(huge_heap_bytes())
}

/// The bytes allocated from the huge-page heap and not freed.
#[cfg(target_os = "linux")]
fn huge_heap_bytes() -> usize {
    concurrency::huge_heap::HugeHeap::global().allocated()
}

/// No huge-page heap off Linux.
#[cfg(not(target_os = "linux"))]
fn huge_heap_bytes() -> usize {
    0
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the memory
// blocks, layouts and errors are exactly the system allocator's; the counting touches no memory
// handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System.alloc` shares.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract, which
        // `System.alloc_zeroed` shares.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator, i.e. by `System`, for `layout`, as the
        // caller guarantees.
        unsafe { System.dealloc(ptr, layout) };
        count(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was returned by `System` for `layout` and `new_size` is valid, as the
        // caller guarantees.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(signed(new_size) - signed(layout.size()));
        }
        new
    }
}
