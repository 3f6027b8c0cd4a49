//! The persistent chunk table: one record per heap chunk, the allocator's only persistent
//! metadata.
//!
//! A record is one header word and a bitmap with one bit per 64 B unit of the chunk (so a chunk
//! of any class fits), padded to whole cache lines. The header says how the chunk is used:
//! free, cut into blocks of one small class, or the head of a run of whole chunks (a large
//! block). A bit is set exactly while its block is allocated (published and not freed); a large
//! block uses bit 0 of its head chunk. A chunk whose bitmap is all zero is free *whatever its
//! header says*: the header is rewritten (to the same value or a new one) by every publish into
//! the chunk, in the same redo-logged step that sets the bit, so a stale header on an empty
//! chunk is harmless and chunks never need a persistent "becomes free" step.

/// How a chunk is used, as recorded in its header word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkUse {
    /// Not in use.
    Free,
    /// Cut into blocks of small class `class`.
    Small {
        /// The class index.
        class: usize,
    },
    /// The head of a large block of `chunks` whole chunks.
    Large {
        /// The run's length in chunks.
        chunks: u64,
    },
}

const KIND_SMALL: u64 = 1;
const KIND_LARGE: u64 = 2;

impl ChunkUse {
    /// The header word.
    pub(crate) fn encode(self) -> u64 {
        match self {
            ChunkUse::Free => 0,
            ChunkUse::Small { class } => KIND_SMALL | (class as u64) << 8,
            ChunkUse::Large { chunks } => KIND_LARGE | chunks << 16,
        }
    }

    /// Reads a header word; `None` if it is not one this format writes.
    pub(crate) fn decode(word: u64) -> Option<Self> {
        match word & 0xff {
            0 if word == 0 => Some(ChunkUse::Free),
            KIND_SMALL if word >> 16 == 0 => Some(ChunkUse::Small {
                class: (word >> 8 & 0xff) as usize,
            }),
            KIND_LARGE if word >> 8 & 0xff == 0 && word >> 16 != 0 => {
                Some(ChunkUse::Large { chunks: word >> 16 })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_garbage_is_refused() {
        for u in [
            ChunkUse::Free,
            ChunkUse::Small { class: 0 },
            ChunkUse::Small { class: 19 },
            ChunkUse::Large { chunks: 1 },
            ChunkUse::Large { chunks: 1 << 30 },
        ] {
            assert_eq!(ChunkUse::decode(u.encode()), Some(u));
        }
        assert_eq!(ChunkUse::decode(7), None);
        assert_eq!(ChunkUse::decode(KIND_LARGE), None);
        assert_eq!(ChunkUse::decode(0x100), None);
        assert_eq!(ChunkUse::decode(KIND_SMALL | 1 << 20), None);
    }
}
