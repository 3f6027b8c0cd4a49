//! Shared helpers of the pool tests.
#![allow(dead_code)]

/// SplitMix64, the tests' deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Word `i` of the contents of an object stamped `stamp`.
pub fn pattern(stamp: u64, i: usize) -> u64 {
    stamp.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0xff51_afd7_ed55_8ccd) ^ 1
}

/// Checks that `[offset, offset + size)` intervals are pairwise disjoint.
pub fn assert_disjoint(blocks: &[(u64, u64)]) {
    let mut sorted = blocks.to_vec();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert!(
            w[0].0 + w[0].1 <= w[1].0,
            "blocks overlap: {:#x}+{} and {:#x}+{}",
            w[0].0,
            w[0].1,
            w[1].0,
            w[1].1
        );
    }
}
