//! CRC32C of any range of one buffer, in time independent of the range's length.
//!
//! Recovery tries every offset after a bad frame for a valid frame (`recovery`, step 1). Each
//! offset's length word names a range to checksum, and checksumming each afresh costs the sum
//! of those lengths: for a tail that repeats a small length word (binary data in a torn value,
//! say), that is the tail's length squared, hours for a segment of tens of megabytes.
//!
//! CRC32C's register is affine in its input: running it from register `r` over bytes `d` gives
//! `Z(|d|, r) ⊕ run(0, d)`, where `Z(n, ·)`, the run over `n` zero bytes, is linear. So the
//! register after `bytes[s..e]` from `r` is `Z(e − s, r ⊕ P(s)) ⊕ P(e)`, where `P(k)` is the
//! register after `bytes[..k]` from zero. [`RangeCrc`] samples `P` every [`STRIDE`] bytes and
//! finishes the run to `k` from the sample below it; `Z` comes from tables of the runs over
//! `2^i` zero bytes, one per bit of the length, each split by the register's four bytes.

use std::ops::Range;
use std::sync::OnceLock;

/// The distance between two samples of the prefix register.
const STRIDE: usize = 256;

/// The registers after each buffer prefix a multiple of [`STRIDE`] long.
pub(crate) struct RangeCrc<'a> {
    bytes: &'a [u8],
    samples: Vec<u32>,
}

impl<'a> RangeCrc<'a> {
    /// Samples `bytes` (one pass over them).
    pub fn new(bytes: &'a [u8]) -> Self {
        let mut samples = Vec::with_capacity(bytes.len() / STRIDE + 1);
        let mut register = 0;
        samples.push(register);
        for chunk in bytes.chunks_exact(STRIDE) {
            register = run(register, chunk);
            samples.push(register);
        }
        Self { bytes, samples }
    }

    /// The buffer.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `crc32c::crc32c_append(crc, &bytes[range])`.
    pub fn append(&self, crc: u32, range: Range<usize>) -> u32 {
        let start = self.prefix(range.start);
        let end = self.prefix(range.end);
        !(zeros(range.end - range.start, !crc ^ start) ^ end)
    }

    /// The register after `bytes[..k]`, run from zero.
    fn prefix(&self, k: usize) -> u32 {
        let sample = k / STRIDE;
        run(self.samples[sample], &self.bytes[sample * STRIDE..k])
    }
}

/// The register after running from `register` over `bytes`.
fn run(register: u32, bytes: &[u8]) -> u32 {
    !crc32c::crc32c_append(!register, bytes)
}

/// `Z(n, register)`: the register after running from `register` over `n` zero bytes.
fn zeros(n: usize, register: u32) -> u32 {
    let tables = zero_tables();
    let mut register = register;
    let mut rest = n;
    while rest != 0 {
        let bit = rest.trailing_zeros() as usize;
        register = apply(&tables[bit], register);
        rest &= rest - 1;
    }
    register
}

/// The linear map `Z(2^i, ·)`, as its images of each value of each of the register's bytes.
type ZeroTable = [[u32; 256]; 4];

/// `Z(2^i, ·)` for every bit `i` of a length.
fn zero_tables() -> &'static [ZeroTable] {
    static TABLES: OnceLock<Vec<ZeroTable>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut tables: Vec<ZeroTable> = Vec::with_capacity(usize::BITS as usize);
        for _ in 0..usize::BITS {
            let mut table = [[0; 256]; 4];
            for (shift, images) in table.iter_mut().enumerate() {
                for (byte, image) in images.iter_mut().enumerate() {
                    let register = (byte as u32) << (8 * shift);
                    *image = match tables.last() {
                        None => run(register, &[0]),
                        Some(half) => apply(half, apply(half, register)),
                    };
                }
            }
            tables.push(table);
        }
        tables
    })
}

/// The image of `register` under the linear map `table` describes.
fn apply(table: &ZeroTable, register: u32) -> u32 {
    let [b0, b1, b2, b3] = register.to_le_bytes();
    table[0][usize::from(b0)]
        ^ table[1][usize::from(b1)]
        ^ table[2][usize::from(b2)]
        ^ table[3][usize::from(b3)]
}

#[cfg(all(test, not(loom)))]
mod tests {
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    use super::*;

    #[test]
    fn ranges_checksum_as_crc32c_append_does() {
        let mut rng = StdRng::seed_from_u64(7);
        for len in [0, 1, STRIDE - 1, STRIDE, STRIDE + 1, 3 * STRIDE + 17, 5_000] {
            let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let crc = RangeCrc::new(&bytes);
            let mut ranges = vec![0..0, 0..len, len..len];
            for _ in 0..300 {
                let a = rng.random_range(0..=len);
                let b = rng.random_range(0..=len);
                ranges.push(a.min(b)..a.max(b));
            }
            for range in ranges {
                let seed: u32 = rng.random();
                assert_eq!(
                    crc.append(seed, range.clone()),
                    crc32c::crc32c_append(seed, &bytes[range.clone()]),
                    "{range:?} of {len} bytes"
                );
            }
        }
    }

    #[test]
    fn runs_over_zeros_match_the_tables() {
        let zeros_run = vec![0; 70_000];
        for n in [0, 1, 2, 3, 255, 256, 4_097, 65_536, 69_999] {
            for register in [0, 1, 0x8000_0000, 0xdead_beef] {
                assert_eq!(zeros(n, register), run(register, &zeros_run[..n]), "{n}");
            }
        }
    }
}
