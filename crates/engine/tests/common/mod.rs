//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

pub use test_support::TempDir;

/// A value of `len` bytes that depends on `seed`.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7)) as u8)
        .collect()
}
