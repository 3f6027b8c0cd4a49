//! Deterministic seeding: every random stream of the crate is a xoshiro256++ generator derived from
//! the user's seed and a stream number, so a data set or a thread's operations depend only on
//! (seed, stream) and never on the platform, the thread schedule or the other streams.

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

/// The generator used everywhere: portable (same output on every platform) and fast.
pub(crate) type Rng = Xoshiro256PlusPlus;

/// SplitMix64's finaliser: a bijective, well-mixing hash of a 64-bit word.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The 64-bit seed of `stream` under `seed`: distinct streams give distinct seeds for the same
/// `seed`, and nearby seeds (`s`, `s ^ 1`) do not swap streams.
pub(crate) fn derive(seed: u64, stream: u64) -> u64 {
    mix64(seed ^ mix64(stream.wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

/// The generator for `stream` under `seed`; distinct streams are independent.
pub(crate) fn rng(seed: u64, stream: u64) -> Rng {
    Rng::seed_from_u64(derive(seed, stream))
}

/// Stream numbers of the data set generators and of the per-thread streams (thread `t` uses
/// `THREADS + t` for its operations and `REMOVE_ORDERS + t` for the order of its removes).
pub(crate) mod stream {
    pub(crate) const UNIFORM: u64 = 1;
    pub(crate) const LINEAR: u64 = 2;
    pub(crate) const NORMAL: u64 = 3;
    pub(crate) const LOGNORMAL: u64 = 4;
    pub(crate) const CLUSTERED: u64 = 5;
    pub(crate) const OSM: u64 = 6;
    pub(crate) const SAMPLE: u64 = 7;
    pub(crate) const RANDOM_BYTES: u64 = 8;
    pub(crate) const EMAIL: u64 = 9;
    pub(crate) const URL: u64 = 10;
    pub(crate) const SPLIT: u64 = 11;
    pub(crate) const PERMUTATION: u64 = 12;
    pub(crate) const LOAD_ORDER: u64 = 13;
    pub(crate) const THREADS: u64 = 1 << 32;
    pub(crate) const REMOVE_ORDERS: u64 = 2 << 32;
}
