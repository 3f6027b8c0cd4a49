//! The pool header and the pool's geometry.
//!
//! Layout of a pool (all offsets from its start; DESIGN.md, "Files"):
//!
//! ```text
//! 0      header line: magic, format version, layout id, size, chunk size, lanes,
//!        log slots per lane, checksum of the seven words before it
//! 64     mutable line: global version, root offset (each an 8-byte failure-atomic word)
//! 4096   lanes: per lane, the allocator's redo-log line, then `log_slots` user log lines
//! ...    chunk table: per chunk, a header word and a bitmap (one bit per 64 B), whole lines
//! ...    heap: `chunks` chunks of `chunk_size` bytes, starting 4 KiB-aligned
//! ```
//!
//! The first line never changes after creation, so its checksum is computed once; the mutable
//! words are single aligned 8-byte stores and need none. Everything after the header is
//! derived from the header's fields by [`Geometry::new`], so a header that passes its checksum
//! and whose geometry fits the file describes the whole layout.

use crate::error::Corruption;

/// "LKVPOOL1" read as a little-endian word.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"LKVPOOL1");
/// The on-media format version this build reads and writes.
pub(crate) const FORMAT_VERSION: u64 = 1;
/// The bytes before the first lane (the header page).
pub(crate) const HEADER_BYTES: u64 = 4096;
/// Offset of the global version word.
pub(crate) const VERSION_OFFSET: u64 = 64;
/// Offset of the root pointer word.
pub(crate) const ROOT_OFFSET: u64 = 72;
/// Words of the immutable header line that the checksum covers.
pub(crate) const HEADER_WORDS: usize = 7;

/// The smallest chunk size.
pub const MIN_CHUNK_SIZE: u64 = 4096;
/// The largest chunk size.
pub const MAX_CHUNK_SIZE: u64 = 1 << 24;
/// The most lanes a pool can have.
pub const MAX_LANES: u32 = 1024;
/// The most user log slots per lane.
pub const MAX_LOG_SLOTS: u32 = 64;
/// The largest pool size (256 TiB, the reach of x86_64 user space).
pub const MAX_POOL_SIZE: u64 = 1 << 48;

/// FNV-1a over the little-endian bytes of `words`: the checksum of the header and log lines.
pub(crate) fn checksum(words: &[u64]) -> u64 {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Where everything of a pool lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) size: u64,
    pub(crate) chunk_size: u64,
    pub(crate) lanes: u32,
    pub(crate) log_slots: u32,
    pub(crate) lane_bytes: u64,
    pub(crate) chunk_table: u64,
    pub(crate) record_bytes: u64,
    pub(crate) heap: u64,
    pub(crate) chunks: u64,
}

impl Geometry {
    /// The geometry of a pool with these parameters, or why there is none.
    pub(crate) fn new(
        size: u64,
        chunk_size: u64,
        lanes: u32,
        log_slots: u32,
    ) -> Result<Self, String> {
        if !chunk_size.is_power_of_two() || !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&chunk_size)
        {
            return Err(format!(
                "chunk size {chunk_size} is not a power of two in {MIN_CHUNK_SIZE}..={MAX_CHUNK_SIZE}"
            ));
        }
        if !(1..=MAX_LANES).contains(&lanes) {
            return Err(format!("{lanes} lanes is outside 1..={MAX_LANES}"));
        }
        if log_slots > MAX_LOG_SLOTS {
            return Err(format!(
                "{log_slots} log slots per lane is above {MAX_LOG_SLOTS}"
            ));
        }
        if !size.is_multiple_of(4096) || size > MAX_POOL_SIZE {
            return Err(format!(
                "size {size} is not a multiple of 4096 of at most {MAX_POOL_SIZE}"
            ));
        }
        let lane_bytes = 64 * (1 + u64::from(log_slots));
        let chunk_table = HEADER_BYTES + u64::from(lanes) * lane_bytes;
        let record_bytes = (8 + chunk_size / 512).next_multiple_of(64);
        let heap_for = |chunks: u64| (chunk_table + chunks * record_bytes).next_multiple_of(4096);
        let mut chunks = size.saturating_sub(chunk_table) / (chunk_size + record_bytes);
        while chunks > 0 && heap_for(chunks) + chunks * chunk_size > size {
            chunks -= 1;
        }
        if chunks == 0 {
            return Err(format!(
                "size {size} leaves no room for one {chunk_size}-byte chunk after the metadata"
            ));
        }
        Ok(Self {
            size,
            chunk_size,
            lanes,
            log_slots,
            lane_bytes,
            chunk_table,
            record_bytes,
            heap: heap_for(chunks),
            chunks,
        })
    }

    /// The header line of a pool with this geometry and `layout`, checksum included.
    pub(crate) fn header_words(&self, layout: u64) -> [u64; 8] {
        let mut words = [
            MAGIC,
            FORMAT_VERSION,
            layout,
            self.size,
            self.chunk_size,
            u64::from(self.lanes),
            u64::from(self.log_slots),
            0,
        ];
        words[HEADER_WORDS] = checksum(&words[..HEADER_WORDS]);
        words
    }

    /// Checks a header line against a file of `file_len` bytes; returns the geometry and the
    /// layout id.
    pub(crate) fn from_header(words: &[u64; 8], file_len: u64) -> Result<(Self, u64), Corruption> {
        if words[0] != MAGIC {
            return Err(Corruption::BadMagic { found: words[0] });
        }
        if words[1] != FORMAT_VERSION {
            return Err(Corruption::UnsupportedVersion {
                found: words[1],
                supported: FORMAT_VERSION,
            });
        }
        let computed = checksum(&words[..HEADER_WORDS]);
        if words[HEADER_WORDS] != computed {
            return Err(Corruption::BadChecksum {
                stored: words[HEADER_WORDS],
                computed,
            });
        }
        if words[3] != file_len {
            return Err(Corruption::SizeMismatch {
                header: words[3],
                file: file_len,
            });
        }
        let lanes = u32::try_from(words[5]).unwrap_or(u32::MAX);
        let log_slots = u32::try_from(words[6]).unwrap_or(u32::MAX);
        let geometry =
            Self::new(words[3], words[4], lanes, log_slots).map_err(Corruption::BadGeometry)?;
        Ok((geometry, words[2]))
    }

    /// The offset of lane `lane`'s allocator log line.
    pub(crate) fn alloc_log(&self, lane: usize) -> u64 {
        HEADER_BYTES + lane as u64 * self.lane_bytes
    }

    /// The offset of user log slot `slot` of lane `lane`.
    pub(crate) fn user_log(&self, lane: usize, slot: usize) -> u64 {
        self.alloc_log(lane) + 64 * (1 + slot as u64)
    }

    /// The offset of chunk `chunk`'s record in the chunk table.
    pub(crate) fn record(&self, chunk: u64) -> u64 {
        self.chunk_table + chunk * self.record_bytes
    }

    /// The offset of chunk `chunk` in the heap.
    pub(crate) fn chunk_offset(&self, chunk: u64) -> u64 {
        self.heap + chunk * self.chunk_size
    }

    /// The chunk holding heap offset `offset`, if it is in the heap.
    pub(crate) fn chunk_of(&self, offset: u64) -> Option<u64> {
        let chunk = offset.checked_sub(self.heap)? / self.chunk_size;
        (chunk < self.chunks).then_some(chunk)
    }

    /// The number of bitmap words of each chunk record.
    pub(crate) fn bitmap_words(&self) -> u64 {
        self.chunk_size / 4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_fits_the_size() {
        for (size, chunk) in [(64 << 10, 4096), (1 << 30, 1 << 18), (12 << 10, 4096)] {
            let g = Geometry::new(size, chunk, 4, 2).expect("fits");
            assert!(g.heap + g.chunks * g.chunk_size <= size);
            assert!(g.record(g.chunks) <= g.heap);
            assert_eq!(g.heap % 4096, 0);
            assert!(g.record_bytes >= 8 + 8 * g.bitmap_words());
        }
        assert!(Geometry::new(8 << 10, 4096, 4, 2).is_err());
        assert!(Geometry::new(1 << 20, 3000, 4, 2).is_err());
        assert!(Geometry::new(1 << 20, 4096, 0, 2).is_err());
        assert!(Geometry::new(1 << 20, 4096, 4, 65).is_err());
        assert!(Geometry::new(u64::MAX - 4095, 4096, 4, 2).is_err());
    }

    #[test]
    fn header_round_trips_and_detects_damage() {
        let g = Geometry::new(1 << 20, 4096, 4, 2).expect("fits");
        let words = g.header_words(42);
        assert_eq!(Geometry::from_header(&words, 1 << 20), Ok((g, 42)));
        let mut bad = words;
        bad[4] ^= 1;
        assert!(matches!(
            Geometry::from_header(&bad, 1 << 20),
            Err(Corruption::BadChecksum { .. })
        ));
        assert!(matches!(
            Geometry::from_header(&words, 2 << 20),
            Err(Corruption::SizeMismatch { .. })
        ));
        bad = words;
        bad[0] = 0;
        assert!(matches!(
            Geometry::from_header(&bad, 1 << 20),
            Err(Corruption::BadMagic { .. })
        ));
    }
}
