//! Values in the index word (DESIGN.md, "Index values are one 64-bit word"): a value of up to
//! seven bytes lives inline in the word; a longer one lives out of line in a heap block whose
//! address is the word, and a replaced or removed block is freed through crossbeam-epoch once
//! no reader pinned before its unlinking can still hold it.
//!
//! # Word layout
//!
//! - Inline: bit 63 set, bits 56..59 the length (0..=7), the bytes little-endian in bits 0..56.
//! - Out of line: bit 63 clear, the address of a block (8-aligned): a `u64` length, then the
//!   bytes. User-space addresses on every supported 64-bit target stay below 2^63.
//!
//! # Blocks
//!
//! On Linux a block of up to [`MAX_BLOCK`](concurrency::block_pool::MAX_BLOCK) bytes comes
//! from the process's [`BlockPool`]: size classes carved from huge pages, so that a random get
//! does not pay a page walk on top of its miss on the block (a scratch probe of 1M random gets
//! of 150-byte values: 666–732 ns with `malloc`'s blocks, 574–594 with the pool's). A larger
//! block, and every block elsewhere, comes from the global allocator; the block's size, which
//! the length in its header gives, tells a free where the block came from.
//!
//! # Ownership
//!
//! A word belongs to exactly one place: the index slot that holds it, or the writer that got it
//! back from the index (`insert` or `remove` returned it, so no later reader can load it). A
//! reader may dereference a word it loaded from an index while pinned, until it unpins: the
//! owner retires a block only after unlinking it, and epoch reclamation frees it only once
//! every guard pinned before the retirement is gone.

use std::alloc::{self, Layout};

#[cfg(all(target_os = "linux", not(loom)))]
use concurrency::block_pool::BlockPool;
use concurrency::prefetch;
use crossbeam_epoch::Guard;

/// Set in a word that holds its value inline.
const INLINE: u64 = 1 << 63;
/// Where an inline word keeps the value's length.
const LEN_SHIFT: u32 = 56;
/// The longest value held inline.
pub(crate) const INLINE_MAX: usize = 7;
/// The block header: the value's length.
const HEADER: usize = size_of::<u64>();
/// How many cache lines of a block a read requests before it reads the length: 256 bytes,
/// the block of a value of up to 248 bytes.
const PREFETCH_LINES: usize = 4;

/// The word for `value`, allocating a block when it does not fit inline. The caller owns the
/// word until an index takes it.
pub(crate) fn encode(value: &[u8]) -> u64 {
    if value.len() <= INLINE_MAX {
        let mut bytes = [0u8; 8];
        bytes[..value.len()].copy_from_slice(value);
        return INLINE | (value.len() as u64) << LEN_SHIFT | u64::from_le_bytes(bytes);
    }
    let block = alloc_block(value.len());
    // SAFETY: `block` is a fresh allocation of `HEADER + value.len()` bytes, 8-aligned: the
    // header write is aligned and in bounds, and the bytes go right after it.
    unsafe {
        block.cast::<u64>().write(value.len() as u64);
        std::ptr::copy_nonoverlapping(value.as_ptr(), block.add(HEADER), value.len());
    }
    let word = block as usize as u64;
    assert_eq!(word & INLINE, 0, "user-space addresses stay below 2^63");
    word
}

/// The heap bytes `word` owns: its block's size, header and size-class rounding included (0
/// for an inline value).
///
/// # Safety
/// As for [`read`].
pub(crate) unsafe fn heap_len(word: u64) -> usize {
    if word & INLINE != 0 {
        0
    } else {
        // SAFETY: the caller guarantees the block is live; its header holds the length.
        block_size(unsafe { block_len(word) })
    }
}

/// Calls `f` with the value `word` holds, in place.
///
/// # Safety
/// `word` came from [`encode`] and its block (if any) is not freed while this runs: the caller
/// owns the word, or loaded it from an index while a guard it still holds was pinned.
pub(crate) unsafe fn with<R>(word: u64, f: impl FnOnce(&[u8]) -> R) -> R {
    if word & INLINE != 0 {
        let len = ((word >> LEN_SHIFT) & 0x7) as usize;
        return f(&word.to_le_bytes()[..len]);
    }
    // The header (the length) and the bytes are one block: request its first lines together,
    // so that reading the bytes after the length is not a second memory miss.
    self::prefetch(word);
    // SAFETY: the block is live (the caller's guarantee); the bytes follow the header.
    let bytes = unsafe {
        let len = block_len(word);
        std::slice::from_raw_parts((word as usize as *const u8).add(HEADER), len)
    };
    f(bytes)
}

/// Requests the first lines of `word`'s block, if it has one: a reader about to read several
/// values (a scan) requests them all before it reads the first, so that their misses overlap.
/// Nothing is read, and a prefetch never faults.
#[inline]
pub(crate) fn prefetch(word: u64) {
    if word & INLINE == 0 {
        let block = word as usize as *const u8;
        for line in 0..PREFETCH_LINES {
            prefetch::line(block.wrapping_add(line * prefetch::LINE));
        }
    }
}

/// A copy of the value `word` holds.
///
/// # Safety
/// As for [`with`].
pub(crate) unsafe fn read(word: u64) -> Vec<u8> {
    // SAFETY: forwarded from the caller.
    unsafe { with(word, <[u8]>::to_vec) }
}

/// Frees `word`'s block once every guard pinned now is gone.
///
/// # Safety
/// The caller owns `word` (it came back from the index that held it, so no new reader can load
/// it) and passes it here once.
pub(crate) unsafe fn retire(word: u64, guard: &Guard) {
    if word & INLINE == 0 {
        // SAFETY: the block is unlinked; readers that may still hold it were pinned before this
        // call, and the deferred free runs only after all of them unpinned.
        unsafe { guard.defer_unchecked(move || free_block(word)) };
    }
}

/// Frees `word`'s block now.
///
/// # Safety
/// The caller owns `word`, passes it here once, and no reader can hold it.
pub(crate) unsafe fn free(word: u64) {
    if word & INLINE == 0 {
        // SAFETY: forwarded from the caller.
        unsafe { free_block(word) };
    }
}

fn block_layout(len: usize) -> Layout {
    Layout::from_size_align(HEADER + len, align_of::<u64>())
        .expect("a value under the engine's size limit has a valid layout")
}

/// The bytes of the block that holds a value of `len` bytes.
fn block_size(len: usize) -> usize {
    let size = HEADER + len;
    #[cfg(all(target_os = "linux", not(loom)))]
    if let Some(pooled) = BlockPool::block_size(size) {
        return pooled;
    }
    size
}

/// A block for a value of `len` bytes: from the block pool when it serves the size, else from
/// the global allocator.
fn alloc_block(len: usize) -> *mut u8 {
    let layout = block_layout(len);
    #[cfg(all(target_os = "linux", not(loom)))]
    if BlockPool::block_size(layout.size()).is_some() {
        return BlockPool::global()
            .alloc(layout.size())
            .unwrap_or_else(|| alloc::handle_alloc_error(layout));
    }
    // SAFETY: the layout has a non-zero size (at least the header).
    let block = unsafe { alloc::alloc(layout) };
    if block.is_null() {
        alloc::handle_alloc_error(layout);
    }
    block
}

/// # Safety
/// `word` is the address of a live block.
unsafe fn block_len(word: u64) -> usize {
    // SAFETY: a live block starts with its aligned length header.
    unsafe { (word as usize as *const u64).read() as usize }
}

/// # Safety
/// `word` is the address of a live block that nothing will use again.
unsafe fn free_block(word: u64) {
    let block = word as usize as *mut u8;
    // SAFETY: the block is live; its header holds the length it was allocated for.
    let layout = block_layout(unsafe { block_len(word) });
    #[cfg(all(target_os = "linux", not(loom)))]
    if BlockPool::block_size(layout.size()).is_some() {
        // SAFETY: `alloc_block` took a block of this size from the pool, freed once here.
        unsafe { BlockPool::global().dealloc(block, layout.size()) };
        return;
    }
    // SAFETY: `alloc_block` allocated the block with exactly this layout.
    unsafe { alloc::dealloc(block, layout) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_inline_and_out_of_line() {
        let guard = crossbeam_epoch::pin();
        for len in [0usize, 1, 6, 7, 8, 9, 150, 4096] {
            let value: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let word = encode(&value);
            assert_eq!(word & INLINE != 0, len <= INLINE_MAX, "length {len}");
            // SAFETY: this test owns the word and retires it once, after the last read.
            unsafe {
                assert_eq!(read(word), value);
                let block = if len <= INLINE_MAX {
                    0
                } else {
                    block_size(len)
                };
                assert_eq!(heap_len(word), block);
                assert!(block == 0 || block >= HEADER + len);
                retire(word, &guard);
            }
        }
    }

    #[cfg(all(target_os = "linux", not(loom)))]
    #[test]
    fn blocks_up_to_the_pool_limit_come_from_the_pool_and_larger_ones_do_not() {
        use concurrency::block_pool::MAX_BLOCK;
        use concurrency::huge_heap::HugeHeap;

        let largest_pooled = MAX_BLOCK - HEADER;
        for len in [
            INLINE_MAX + 1,
            150,
            largest_pooled,
            largest_pooled + 1,
            1 << 20,
        ] {
            let value = vec![len as u8; len];
            let word = encode(&value);
            let pooled = HugeHeap::writers().contains(word as usize as *const u8);
            assert_eq!(pooled, len <= largest_pooled, "length {len}");
            let size = HEADER + len;
            let block = if pooled {
                size.next_multiple_of(16)
            } else {
                size
            };
            // SAFETY: this test owns the word, reads it, then frees it once; no reader holds it.
            unsafe {
                assert_eq!(heap_len(word), block, "length {len}");
                assert_eq!(read(word), value);
                free(word);
            }
        }
    }

    #[test]
    fn inline_values_keep_trailing_zero_bytes() {
        let word = encode(&[0, 0, 1, 0]);
        // SAFETY: inline words own no block.
        assert_eq!(unsafe { read(word) }, vec![0, 0, 1, 0]);
        assert_ne!(word, encode(&[0, 0, 1]));
    }
}
