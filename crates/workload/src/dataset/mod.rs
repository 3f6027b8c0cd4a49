//! Key sets for the benchmarks: the synthetic and real data sets of XIndex Table 3 (§6.2) and the
//! SOSD benchmark, plus the string sets of XIndex (random `R{L}`) and HydraList (e-mail-like).
//!
//! Every generator is deterministic for its seed and returns keys **sorted and unique**, exactly as
//! many as requested. [`Dataset`] is the name parser the benchmark harness exposes as
//! `--dataset NAME`:
//!
//! | name | keys | generator |
//! |---|---|---|
//! | `uniform` | u64 | [`integer::uniform`] |
//! | `linear` | u64 | [`integer::linear`] |
//! | `normal` | u64 | [`integer::normal`] |
//! | `lognormal` | u64 | [`integer::lognormal`] |
//! | `sequential` | u64 | [`integer::sequential`] |
//! | `clustered` | u64 | [`integer::clustered`] |
//! | `osm` | u64 | [`osm::cells`] (real GeoNames points; scaled beyond their natural size) |
//! | `sosd:PATH` | u64 | [`sosd::read`] (a SOSD binary file such as `books_200M_uint32`) |
//! | `r{L}`, e.g. `r128` | bytes | [`string::random_bytes`] (XIndex's `R{L}`) |
//! | `email` | bytes | [`string::emails`] |
//! | `words` | bytes | [`string::words`] (the real SCOWL word list) |
//! | `url` | bytes | [`string::urls`] (a stand-in for XIndex's Memetracker quote URLs) |
//! | `lines:PATH` | bytes | [`string::lines`] (one key per line of a text file) |
//!
//! Real sets (`osm`, `sosd:`, `words`, `lines:`) have a natural size: asking for no count gives
//! all their distinct keys, asking for fewer gives a seeded uniform sample of them.

pub mod integer;
pub mod osm;
pub mod sosd;
pub mod string;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rand::RngExt;

use crate::error::{Error, Result};
use crate::seed;

/// The names [`Dataset`] accepts, for messages.
pub(crate) const NAMES: &str = "uniform, linear, normal, lognormal, sequential, clustered, osm, \
     sosd:PATH, r{LEN} (e.g. r128), email, words, url, lines:PATH";

/// A named data set, as given to the benchmark harness.
///
/// ```
/// use workload::{Dataset, KeyKind};
///
/// let dataset: Dataset = "normal".parse()?;
/// let keys = dataset.u64_keys(Some(1_000), 42)?;
/// assert_eq!(keys.len(), 1_000);
/// assert!(keys.windows(2).all(|w| w[0] < w[1]));
///
/// let strings: Dataset = "r16".parse()?;
/// assert_eq!(strings.key_kind(), KeyKind::Bytes);
/// assert_eq!(strings.to_string(), "r16");
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dataset {
    /// Uniform u64 keys ([`integer::uniform`]).
    Uniform,
    /// XIndex's `linear` ([`integer::linear`]).
    Linear,
    /// XIndex's `normal` ([`integer::normal`]).
    Normal,
    /// XIndex's `lognormal` ([`integer::lognormal`]).
    Lognormal,
    /// `0, 1, 2, …` ([`integer::sequential`]).
    Sequential,
    /// Dense runs separated by large random gaps ([`integer::clustered`]).
    Clustered,
    /// Hilbert cell ids of real GeoNames places ([`osm::cells`]).
    Osm,
    /// A SOSD binary file ([`sosd::read`]).
    Sosd(PathBuf),
    /// Random byte strings of the given length ([`string::random_bytes`]).
    RandomBytes(usize),
    /// E-mail-like strings ([`string::emails`]).
    Email,
    /// The real SCOWL word list ([`string::words`]).
    Words,
    /// URL-like strings with long shared prefixes ([`string::urls`]).
    Url,
    /// One string key per line of a text file ([`string::lines`]).
    Lines(PathBuf),
}

/// Whether a data set's keys are integers or byte strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// `u64` keys.
    U64,
    /// Byte-string keys.
    Bytes,
}

/// The keys of a data set, sorted and unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    /// Integer keys.
    U64(Vec<u64>),
    /// Byte-string keys.
    Bytes(Vec<Vec<u8>>),
}

impl Keys {
    /// The number of keys.
    pub fn len(&self) -> usize {
        match self {
            Self::U64(keys) => keys.len(),
            Self::Bytes(keys) => keys.len(),
        }
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Dataset {
    /// Whether the data set's keys are integers or byte strings.
    pub fn key_kind(&self) -> KeyKind {
        match self {
            Self::Uniform
            | Self::Linear
            | Self::Normal
            | Self::Lognormal
            | Self::Sequential
            | Self::Clustered
            | Self::Osm
            | Self::Sosd(_) => KeyKind::U64,
            Self::RandomBytes(_) | Self::Email | Self::Words | Self::Url | Self::Lines(_) => {
                KeyKind::Bytes
            }
        }
    }

    /// A short label for reports: the name, with only the file name of a path.
    ///
    /// ```
    /// let dataset: workload::Dataset = "sosd:datasets/sosd/books_200M_uint32".parse()?;
    /// assert_eq!(dataset.label(), "sosd:books_200M_uint32");
    /// # Ok::<(), workload::Error>(())
    /// ```
    pub fn label(&self) -> String {
        let file = |path: &Path| {
            path.file_name().map_or_else(
                || path.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            )
        };
        match self {
            Self::Sosd(path) => format!("sosd:{}", file(path)),
            Self::Lines(path) => format!("lines:{}", file(path)),
            other => other.to_string(),
        }
    }

    /// The data set's keys, sorted and unique.
    ///
    /// `count` is required for synthetic sets. For real sets `None` means all their distinct
    /// keys and `Some(n)` a seeded uniform sample of `n` of them (the `osm` set is scaled up
    /// beyond its natural size instead, see [`osm::cells`]); asking a real set for more keys than
    /// it holds is [`Error::NotEnoughKeys`].
    pub fn keys(&self, count: Option<usize>, seed: u64) -> Result<Keys> {
        let sized = || count.ok_or_else(|| Error::SizeRequired(self.to_string()));
        Ok(match self {
            Self::Uniform => Keys::U64(integer::uniform(sized()?, seed)),
            Self::Linear => Keys::U64(integer::linear(sized()?, seed)?),
            Self::Normal => Keys::U64(integer::normal(sized()?, seed)?),
            Self::Lognormal => Keys::U64(integer::lognormal(sized()?, seed)?),
            Self::Sequential => Keys::U64(integer::sequential(sized()?)),
            Self::Clustered => Keys::U64(integer::clustered(sized()?, seed)?),
            Self::Osm => Keys::U64(osm::cells(count, seed)?),
            Self::Sosd(path) => {
                let mut keys = sosd::read(path)?;
                keys.dedup();
                Keys::U64(take(self, keys, count, seed)?)
            }
            Self::RandomBytes(len) => Keys::Bytes(string::random_bytes(sized()?, *len, seed)?),
            Self::Email => Keys::Bytes(string::emails(sized()?, seed)),
            Self::Words => Keys::Bytes(take(self, string::words(), count, seed)?),
            Self::Url => Keys::Bytes(string::urls(sized()?, seed)),
            Self::Lines(path) => Keys::Bytes(take(self, string::lines(path)?, count, seed)?),
        })
    }

    /// The keys as integers; [`Error::StringKeys`] for a string data set.
    pub fn u64_keys(&self, count: Option<usize>, seed: u64) -> Result<Vec<u64>> {
        match self.keys(count, seed)? {
            Keys::U64(keys) => Ok(keys),
            Keys::Bytes(_) => Err(Error::StringKeys(self.to_string())),
        }
    }

    /// The keys as byte strings; integer keys become their 8-byte big-endian encoding, which
    /// keeps their order, so string indexes can run on the integer data sets too.
    pub fn byte_keys(&self, count: Option<usize>, seed: u64) -> Result<Vec<Vec<u8>>> {
        Ok(match self.keys(count, seed)? {
            Keys::U64(keys) => keys.iter().map(|k| k.to_be_bytes().to_vec()).collect(),
            Keys::Bytes(keys) => keys,
        })
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uniform => f.write_str("uniform"),
            Self::Linear => f.write_str("linear"),
            Self::Normal => f.write_str("normal"),
            Self::Lognormal => f.write_str("lognormal"),
            Self::Sequential => f.write_str("sequential"),
            Self::Clustered => f.write_str("clustered"),
            Self::Osm => f.write_str("osm"),
            Self::Sosd(path) => write!(f, "sosd:{}", path.display()),
            Self::RandomBytes(len) => write!(f, "r{len}"),
            Self::Email => f.write_str("email"),
            Self::Words => f.write_str("words"),
            Self::Url => f.write_str("url"),
            Self::Lines(path) => write!(f, "lines:{}", path.display()),
        }
    }
}

impl FromStr for Dataset {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        let unknown = || Error::UnknownDataset(name.to_owned());
        if let Some(path) = name.strip_prefix("sosd:") {
            return if path.is_empty() {
                Err(unknown())
            } else {
                Ok(Self::Sosd(path.into()))
            };
        }
        if let Some(path) = name.strip_prefix("lines:") {
            return if path.is_empty() {
                Err(unknown())
            } else {
                Ok(Self::Lines(path.into()))
            };
        }
        Ok(match name {
            "uniform" => Self::Uniform,
            "linear" => Self::Linear,
            "normal" => Self::Normal,
            "lognormal" => Self::Lognormal,
            "sequential" => Self::Sequential,
            "clustered" => Self::Clustered,
            "osm" => Self::Osm,
            "email" => Self::Email,
            "words" => Self::Words,
            "url" => Self::Url,
            _ => {
                let len = name
                    .strip_prefix('r')
                    .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|digits| digits.parse::<usize>().ok())
                    .filter(|&len| len > 0)
                    .ok_or_else(unknown)?;
                Self::RandomBytes(len)
            }
        })
    }
}

/// All of a real set's sorted unique `keys`, or a seeded sample of `count` of them.
fn take<T: Clone>(
    dataset: &Dataset,
    keys: Vec<T>,
    count: Option<usize>,
    seed: u64,
) -> Result<Vec<T>> {
    match count {
        None => Ok(keys),
        Some(n) if n > keys.len() => Err(Error::NotEnoughKeys {
            dataset: dataset.to_string(),
            available: keys.len(),
            requested: n,
        }),
        Some(n) => Ok(sample_sorted(&keys, n, seed)),
    }
}

/// A uniform random subset of exactly `n` of `keys` (`n <= keys.len()`), in the original order
/// (selection sampling, Knuth's Algorithm S: one sequential pass, no extra memory).
pub fn sample_sorted<T: Clone>(keys: &[T], n: usize, seed: u64) -> Vec<T> {
    let mut rng = seed::rng(seed, seed::stream::SAMPLE);
    let n = n.min(keys.len());
    let mut chosen = Vec::with_capacity(n);
    for (i, key) in keys.iter().enumerate() {
        let needed = n - chosen.len();
        if needed == 0 {
            break;
        }
        if rng.random_range(0..keys.len() - i) < needed {
            chosen.push(key.clone());
        }
    }
    chosen
}

/// Draws until exactly `n` distinct values are collected, then returns them sorted. `keys` holds
/// values already collected (in any order). The caller guarantees that `draw` can reach far more
/// than `n` distinct values, so the top-up rounds end.
///
/// The first round draws all missing values and sorts them; each later round sorts only its own
/// draws and merges them into the sorted keys in place, so crowded distributions (lognormal's
/// dense low end needs a dozen rounds) cost O(n) per round rather than a full sort.
pub(crate) fn unique_sorted<T: Ord + Default>(
    mut keys: Vec<T>,
    n: usize,
    mut draw: impl FnMut() -> T,
) -> Vec<T> {
    keys.sort_unstable();
    keys.dedup();
    keys.truncate(n);
    keys.reserve(n - keys.len());
    while keys.len() < n {
        let mut fresh: Vec<T> = (0..n - keys.len()).map(|_| draw()).collect();
        fresh.sort_unstable();
        fresh.dedup();
        if keys.is_empty() {
            keys = fresh;
        } else {
            merge_unique(&mut keys, fresh);
        }
    }
    keys
}

/// Merges sorted unique `fresh` into sorted unique `keys`, dropping duplicates, in place: from the
/// back, into slots appended to `keys`.
fn merge_unique<T: Ord + Default>(keys: &mut Vec<T>, mut fresh: Vec<T>) {
    let mut old = keys.len();
    keys.resize_with(old + fresh.len(), T::default);
    // Invariant: `keys[..old]` are the unmerged old keys, `keys[old..out]` spare slots (as many as
    // `fresh` has left) and `keys[out..]` the merged tail, sorted.
    let mut out = keys.len();
    while let Some(next) = fresh.pop() {
        while old > 0 && keys[old - 1] > next {
            out -= 1;
            old -= 1;
            keys.swap(old, out);
        }
        out -= 1;
        keys[out] = next;
    }
    keys.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "uniform",
            "linear",
            "normal",
            "lognormal",
            "sequential",
            "clustered",
            "osm",
            "r8",
            "r128",
            "email",
            "words",
            "url",
            "sosd:a/b_uint64",
            "lines:x.txt",
        ] {
            let dataset: Dataset = name.parse().expect("a known name");
            assert_eq!(dataset.to_string(), name);
        }
    }

    #[test]
    fn bad_names_are_errors() {
        for name in [
            "", "r", "r0", "rx", "r-1", "sosd:", "lines:", "Uniform", "zipf",
        ] {
            assert!(
                matches!(name.parse::<Dataset>(), Err(Error::UnknownDataset(_))),
                "{name}"
            );
        }
    }

    #[test]
    fn synthetic_sets_need_a_size() {
        assert!(matches!(
            Dataset::Uniform.keys(None, 1),
            Err(Error::SizeRequired(_))
        ));
    }

    #[test]
    fn string_sets_are_not_integers() {
        assert!(matches!(
            Dataset::Email.u64_keys(Some(3), 1),
            Err(Error::StringKeys(_))
        ));
        let bytes = Dataset::Sequential
            .byte_keys(Some(300), 1)
            .expect("sequential keys");
        assert!(bytes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn top_up_merges_rounds_into_one_sorted_unique_set() {
        // Draws from 0..50 reach every value: the rounds must converge on exactly 0..50.
        let mut state = 7u64;
        let mut draw = || {
            state = seed::mix64(state);
            state % 50
        };
        assert_eq!(
            unique_sorted(vec![49, 3, 3], 50, &mut draw),
            (0..50).collect::<Vec<_>>()
        );
        assert_eq!(unique_sorted(vec![5, 1, 9], 2, &mut draw), [1, 5]);
        let mut merged = vec![1u64, 4, 6, 9];
        merge_unique(&mut merged, vec![0, 4, 5, 10]);
        assert_eq!(merged, [0, 1, 4, 5, 6, 9, 10]);
    }

    #[test]
    fn sampling_is_exact_and_ordered() {
        let keys: Vec<u64> = (0..10_000).collect();
        let sample = sample_sorted(&keys, 1_234, 9);
        assert_eq!(sample.len(), 1_234);
        assert!(sample.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample, sample_sorted(&keys, 1_234, 9));
        assert_ne!(sample, sample_sorted(&keys, 1_234, 10));
        assert_eq!(sample_sorted(&keys, 20_000, 9), keys);
    }

    #[test]
    fn real_sets_refuse_more_keys_than_they_hold() {
        let err = Dataset::Words
            .keys(Some(10_000_000), 1)
            .expect_err("the word list is smaller");
        assert!(matches!(
            err,
            Error::NotEnoughKeys {
                requested: 10_000_000,
                ..
            }
        ));
    }
}
