//! The inputs of the `learned_model` benchmark: 10M sorted unique keys of a distribution and
//! random existing keys to look up, generated once per process.

use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// How many keys each input holds.
pub const KEYS: usize = 10_000_000;

/// How many lookups an input prepares (a power of two, cycled through by the benchmark).
pub const QUERIES: usize = 1 << 20;

/// A named key set with the keys to look up in it.
pub struct Input {
    /// The benchmark input's name, e.g. `lognormal_10M`.
    pub name: &'static str,
    /// Sorted unique keys.
    pub keys: &'static [u64],
    /// Random keys of `keys`.
    pub queries: &'static [u64],
}

/// The inputs `lognormal_10M` and `uniform_10M`.
pub fn inputs() -> [Input; 2] {
    static LOGNORMAL: OnceLock<(Vec<u64>, Vec<u64>)> = OnceLock::new();
    static UNIFORM: OnceLock<(Vec<u64>, Vec<u64>)> = OnceLock::new();
    let lognormal = LOGNORMAL.get_or_init(|| {
        with_queries(workload::dataset::integer::lognormal(KEYS, 1).expect("lognormal keys"))
    });
    let uniform =
        UNIFORM.get_or_init(|| with_queries(workload::dataset::integer::uniform(KEYS, 2)));
    [
        Input {
            name: "lognormal_10M",
            keys: &lognormal.0,
            queries: &lognormal.1,
        },
        Input {
            name: "uniform_10M",
            keys: &uniform.0,
            queries: &uniform.1,
        },
    ]
}

fn with_queries(keys: Vec<u64>) -> (Vec<u64>, Vec<u64>) {
    let mut rng = StdRng::seed_from_u64(42);
    let queries = (0..QUERIES)
        .map(|_| keys[rng.random_range(0..keys.len())])
        .collect();
    (keys, queries)
}
