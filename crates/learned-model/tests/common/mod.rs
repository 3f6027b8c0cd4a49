//! Key sets for the property tests: the distributions of DESIGN.md's Benchmarks section, drawn
//! from a seed that proptest chooses (and shrinks).

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::collections::BTreeSet;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal, Normal};

/// The integer key distributions under test.
#[derive(Debug, Clone, Copy)]
pub enum IntDistribution {
    Uniform,
    Normal,
    Lognormal,
    Sequential,
    ClusteredWithGaps,
    Around2Pow53,
    NearMax,
}

const INT_DISTRIBUTIONS: [IntDistribution; 7] = [
    IntDistribution::Uniform,
    IntDistribution::Normal,
    IntDistribution::Lognormal,
    IntDistribution::Sequential,
    IntDistribution::ClusteredWithGaps,
    IntDistribution::Around2Pow53,
    IntDistribution::NearMax,
];

/// `n` sorted unique keys of `distribution`, deterministic for `seed`.
pub fn int_keys(distribution: IntDistribution, n: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys = BTreeSet::new();
    let scale = 1e12;
    let normal = Normal::new(0.0, 1.0).expect("valid normal");
    let lognormal = LogNormal::new(0.0, 2.0).expect("valid lognormal");
    let mut cluster_base = 0u64;
    while keys.len() < n {
        let key = match distribution {
            IntDistribution::Uniform => rng.random::<u64>(),
            IntDistribution::Normal => ((normal.sample(&mut rng) + 6.0) / 12.0 * scale) as u64,
            IntDistribution::Lognormal => (lognormal.sample(&mut rng) * scale / 1e4) as u64,
            IntDistribution::Sequential => 1_000 + keys.len() as u64,
            IntDistribution::ClusteredWithGaps => {
                if rng.random_range(0..50) == 0 {
                    cluster_base += rng.random_range(1u64 << 20..1u64 << 40);
                }
                cluster_base + rng.random_range(0..4096)
            }
            IntDistribution::Around2Pow53 => (1u64 << 53) - 5_000 + rng.random_range(0..10_000),
            IntDistribution::NearMax => u64::MAX - rng.random_range(0..(n as u64 * 4).max(16)),
        };
        keys.insert(key);
    }
    keys.into_iter().collect()
}

/// A strategy for sorted unique integer key sets of 1..=`max_len` keys, every distribution.
pub fn int_key_sets(max_len: usize) -> impl Strategy<Value = Vec<u64>> {
    (0..INT_DISTRIBUTIONS.len(), 1..=max_len, any::<u64>())
        .prop_map(|(d, n, seed)| int_keys(INT_DISTRIBUTIONS[d], n, seed))
}

/// Queries for a key set: every key, its neighbours, the extremes and random values.
pub fn queries(keys: &[u64], seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = vec![0, 1, u64::MAX, u64::MAX - 1];
    for &k in keys {
        out.extend([k, k.wrapping_sub(1), k.wrapping_add(1)]);
    }
    out.extend((0..64).map(|_| rng.random::<u64>()));
    let (lo, hi) = (keys[0], keys[keys.len() - 1]);
    out.extend((0..64).map(|_| rng.random_range(lo..=hi)));
    out
}

/// The string key shapes under test.
#[derive(Debug, Clone, Copy)]
pub enum StringShape {
    /// Random bytes of a random length in 1..=24.
    Random,
    /// URL-like keys with a long shared prefix.
    LongSharedPrefix,
    /// Short keys over a tiny alphabet, many of them prefixes of others, holding `0x00` too.
    PrefixesOfEachOther,
    /// Keys identical in their first 40 bytes, differing beyond `MAX_FEATURES`.
    CollidingFeatures,
}

const STRING_SHAPES: [StringShape; 4] = [
    StringShape::Random,
    StringShape::LongSharedPrefix,
    StringShape::PrefixesOfEachOther,
    StringShape::CollidingFeatures,
];

/// Up to `n` sorted unique string keys of `shape` (small alphabets may yield fewer).
pub fn string_keys(shape: StringShape, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys = BTreeSet::new();
    let mut attempts = 0;
    while keys.len() < n && attempts < n * 20 {
        attempts += 1;
        let key: Vec<u8> = match shape {
            StringShape::Random => {
                let len = rng.random_range(1..=24);
                (0..len).map(|_| rng.random::<u8>()).collect()
            }
            StringShape::LongSharedPrefix => format!(
                "https://www.example.org/archive/{}/{}/item-{}",
                rng.random_range(2000..2003),
                rng.random_range(1..13),
                rng.random_range(0..100_000)
            )
            .into_bytes(),
            StringShape::PrefixesOfEachOther => {
                let len = rng.random_range(0..=5);
                (0..len).map(|_| rng.random_range(0u8..3)).collect()
            }
            StringShape::CollidingFeatures => {
                let mut key = vec![b'x'; 40];
                key.extend((0..3).map(|_| rng.random_range(b'a'..=b'z')));
                key
            }
        };
        keys.insert(key);
    }
    keys.into_iter().collect()
}

/// A strategy for sorted unique string key sets (at least one key).
pub fn string_key_sets(max_len: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    (0..STRING_SHAPES.len(), 1..=max_len, any::<u64>())
        .prop_map(|(s, n, seed)| string_keys(STRING_SHAPES[s], n, seed))
        .prop_filter("at least one key", |keys| !keys.is_empty())
}

/// Queries for a string key set: every key, its extensions and truncations, and random keys.
pub fn string_queries(keys: &[Vec<u8>], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = vec![Vec::new(), vec![0], vec![255; 3]];
    for k in keys {
        out.push(k.clone());
        let mut longer = k.clone();
        longer.push(0);
        out.push(longer);
        out.push(k[..k.len() / 2].to_vec());
        if let Some(last) = k.last() {
            let mut next = k.clone();
            *next.last_mut().expect("non-empty") = last.wrapping_add(1);
            out.push(next);
        }
    }
    out.extend((0..32).map(|_| {
        let len = rng.random_range(0..8);
        (0..len).map(|_| rng.random::<u8>()).collect()
    }));
    out
}
