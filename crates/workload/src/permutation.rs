//! A seeded pseudo-random permutation of `[0, n)` computed on the fly: a balanced four-round
//! Feistel network over the smallest even-bit power of two covering `n`, with cycle walking. It
//! gives each thread a random order over its keys (the order of its removes, YCSB's "insertion
//! order" of the loaded records) without materialising a shuffled array of 200M positions.

use crate::seed;

/// A bijection of `[0, n)` chosen by a seed.
///
/// ```
/// let permutation = workload::Permutation::new(10, 3);
/// let mut image: Vec<u64> = (0..10).map(|i| permutation.apply(i)).collect();
/// image.sort_unstable();
/// assert_eq!(image, (0..10).collect::<Vec<_>>());
/// ```
#[derive(Debug, Clone)]
pub struct Permutation {
    len: u64,
    half_bits: u32,
    round_keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `[0, len)` determined by `seed`.
    pub fn new(len: u64, seed: u64) -> Self {
        let bits = u64::BITS - len.saturating_sub(1).leading_zeros();
        let mut rng = seed::rng(seed, seed::stream::PERMUTATION);
        Self {
            len,
            half_bits: bits.div_ceil(2).max(1),
            round_keys: std::array::from_fn(|_| rand::Rng::next_u64(&mut rng)),
        }
    }

    /// The permutation's domain size `n`.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The image of `i`, for `i < n` (larger values are reduced modulo `n` first).
    pub fn apply(&self, i: u64) -> u64 {
        if self.len <= 1 {
            return 0;
        }
        // Cycle walking: the Feistel network permutes a domain at most 4× larger than `n`; the
        // orbit of a value below `n` comes back below `n` after 4 steps on average.
        let mut x = i % self.len;
        loop {
            x = self.feistel(x);
            if x < self.len {
                return x;
            }
        }
    }

    /// One pass of the network over `[0, 4^half_bits)`.
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.round_keys {
            let mixed = seed::mix64(right ^ key) & mask;
            (left, right) = (right, left ^ mixed);
        }
        (left << self.half_bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_bijection_for_every_small_size() {
        for len in 0..300u64 {
            let permutation = Permutation::new(len, len);
            let mut seen = vec![false; len as usize];
            for i in 0..len {
                let image = permutation.apply(i);
                assert!(image < len && !seen[image as usize], "len {len}, i {i}");
                seen[image as usize] = true;
            }
        }
    }

    #[test]
    fn depends_on_the_seed_and_is_not_the_identity() {
        let (a, b) = (Permutation::new(1_000, 1), Permutation::new(1_000, 2));
        let fixed = (0..1_000).filter(|&i| a.apply(i) == i).count();
        assert!(fixed < 20, "{fixed} fixed points");
        assert!((0..1_000).any(|i| a.apply(i) != b.apply(i)));
    }

    #[test]
    fn covers_large_domains() {
        let permutation = Permutation::new(u64::MAX, 1);
        assert!(permutation.apply(u64::MAX - 1) < u64::MAX);
        let permutation = Permutation::new(200_000_000, 1);
        assert!((0..1_000).all(|i| permutation.apply(i) < 200_000_000));
    }
}
