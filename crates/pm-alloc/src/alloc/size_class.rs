//! Size classes: which block a request gets.
//!
//! Small requests are served from chunks cut into equal blocks of one class; the classes grow
//! by about 1.5× (64, 128, 192, 256, 384, 512, 768, ...), so internal waste stays under a
//! third. Every class is a multiple of 64 B and blocks start at a chunk's (4 KiB-aligned) start
//! plus a multiple of the class size, so every block is 64 B-aligned, and blocks of the classes
//! that are multiples of 256 B are 256 B-aligned: the APEX stash blocks and PLIN's 256 B node
//! blocks (APEX digest §2.3, PLIN digest §2.2) ask for `align = 256` and get such a class. A
//! class is small when a chunk holds at least four of its blocks; anything larger is a *large*
//! allocation of whole contiguous chunks (chunk-aligned), such as APEX's 256 KB data nodes.

/// Every class size the allocator knows, in bytes; a pool uses those up to a quarter chunk.
const CLASS_SIZES: [u64; 20] = [
    64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768, 49152, 65536,
];

/// The smallest alignment of every block.
pub(crate) const MIN_ALIGN: u64 = 64;

/// The block sizes of the small classes of a pool with `chunk_size`-byte chunks.
pub(crate) fn class_sizes(chunk_size: u64) -> Vec<u64> {
    CLASS_SIZES
        .iter()
        .copied()
        .filter(|&c| c * 4 <= chunk_size)
        .collect()
}

/// What a request of `size` bytes aligned to `align` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// A block of small class `class`.
    Small(usize),
    /// A run of this many whole chunks.
    Large(u64),
}

/// The largest alignment a block can have in memory: chunks lie at multiples of the chunk size
/// from the heap's start, which is 4 KiB-aligned in the file, and the file is mapped at a page
/// boundary.
pub(crate) const MAX_ALIGN: u64 = 4096;

/// The fit for a request; `None` if `align` is not a power of two or exceeds [`MAX_ALIGN`].
pub(crate) fn fit(classes: &[u64], chunk_size: u64, size: u64, align: u64) -> Option<Fit> {
    if !align.is_power_of_two() || align > MAX_ALIGN.min(chunk_size) || size == 0 {
        return None;
    }
    let align = align.max(MIN_ALIGN);
    if let Some(class) = classes.iter().position(|&c| c >= size && c % align == 0) {
        return Some(Fit::Small(class));
    }
    Some(Fit::Large(size.div_ceil(chunk_size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_aligned_and_fit_four_per_chunk() {
        for chunk in [4096_u64, 1 << 18] {
            let classes = class_sizes(chunk);
            assert!(classes.iter().all(|&c| c % 64 == 0 && c * 4 <= chunk));
            assert!(classes.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(class_sizes(4096).last(), Some(&1024));
    }

    #[test]
    fn fit_respects_size_and_alignment() {
        let classes = class_sizes(4096);
        assert_eq!(fit(&classes, 4096, 1, 8), Some(Fit::Small(0)));
        assert_eq!(fit(&classes, 4096, 65, 64), Some(Fit::Small(1)));
        assert_eq!(fit(&classes, 4096, 100, 256), Some(Fit::Small(3)));
        assert_eq!(fit(&classes, 4096, 300, 256), Some(Fit::Small(5)));
        assert_eq!(fit(&classes, 4096, 1025, 64), Some(Fit::Large(1)));
        assert_eq!(fit(&classes, 4096, 8193, 64), Some(Fit::Large(3)));
        assert_eq!(fit(&classes, 4096, 64, 4096), Some(Fit::Large(1)));
        assert_eq!(fit(&classes, 4096, 64, 8192), None);
        // Chunks of 256 KiB are still only 4 KiB-aligned in memory.
        let large = class_sizes(1 << 18);
        assert!(fit(&large, 1 << 18, 64, 4096).is_some());
        assert_eq!(fit(&large, 1 << 18, 64, 8192), None);
        assert_eq!(fit(&large, 1 << 18, 64, 1 << 18), None);
        assert_eq!(fit(&classes, 4096, 64, 48), None);
        assert_eq!(fit(&classes, 4096, 0, 64), None);
    }
}
