//! Benchmark workloads for learnkv: the data sets, operation streams and measurement loop used to
//! reproduce the experiments of the XIndex, FINEdex, HydraList, APEX and PLIN papers.
//!
//! The crate has four layers, each usable on its own:
//!
//! 1. [`dataset`]: sorted, unique key sets — the synthetic integer sets of XIndex Table 3
//!    (uniform, linear, normal, lognormal) plus sequential, clustered and an `osm`-like set built
//!    from real GeoNames points, SOSD binary files, and string sets (random bytes, e-mail-like,
//!    words, URL-like). [`Dataset`] parses the names the benchmark harness accepts.
//! 2. [`KeySpace`], [`Workload`], [`Shift`]: deterministic per-thread operation streams ([`Op`]) —
//!    YCSB A–F ([`Ycsb`]), read/write ratios with insert:remove:update = 1:1:2, hotspots,
//!    distribution shift, insert-only growth and read-only runs after a bulk load. Request
//!    distributions are in [`zipf`] and [`KeyDistribution`].
//! 3. [`runner`]: drives an [`IndexAdapter`] from N threads for a duration or an operation count,
//!    timing every operation into HDR histograms.
//! 4. [`report`]: the CSV file and the plain-text table with throughput ratios.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Mutex;
//! use workload::{runner, Dataset, IndexAdapter, KeySpace, RunConfig, Stop, Workload, Ycsb};
//!
//! /// The simplest possible index under test: a locked `BTreeMap`.
//! #[derive(Default)]
//! struct Locked(Mutex<BTreeMap<u64, u64>>);
//!
//! impl IndexAdapter<u64> for Locked {
//!     fn name(&self) -> &str { "mutex-btreemap" }
//!     fn bulk_load(&self, pairs: &[(u64, u64)]) { self.0.lock().unwrap().extend(pairs.iter().copied()); }
//!     fn get(&self, key: u64) -> Option<u64> { self.0.lock().unwrap().get(&key).copied() }
//!     fn insert(&self, key: u64, value: u64) -> Option<u64> { self.0.lock().unwrap().insert(key, value) }
//!     fn update(&self, key: u64, value: u64) -> bool {
//!         self.0.lock().unwrap().get_mut(&key).map(|v| *v = value).is_some()
//!     }
//!     fn remove(&self, key: u64) -> Option<u64> { self.0.lock().unwrap().remove(&key) }
//!     fn scan(&self, start: u64, n: usize) -> usize { self.0.lock().unwrap().range(start..).take(n).count() }
//! }
//!
//! let keys = "lognormal".parse::<Dataset>()?.u64_keys(Some(10_000), 7)?;
//! let space = KeySpace::split(keys, 8_000, 7)?; // 8,000 loaded, 2,000 left to insert
//! let index = Locked::default();
//! runner::bulk_load(&index, &space);
//! let workload = Workload::ycsb(Ycsb::D);
//! let config = RunConfig::new(2, Stop::Ops(20_000));
//! let result = runner::run(&config, &index, |thread| workload.generator(&space, thread, 2, 7))?;
//! assert_eq!(result.ops, 20_000);
//! # Ok::<(), workload::Error>(())
//! ```

pub mod dataset;
mod distribution;
mod error;
mod keyspace;
mod mix;
mod op;
mod permutation;
pub mod report;
pub mod runner;
mod seed;
mod shift;
mod ycsb;
pub mod zipf;

pub use dataset::{Dataset, KeyKind, Keys};
pub use distribution::KeyDistribution;
pub use error::{Error, Result};
pub use keyspace::KeySpace;
pub use mix::{Mix, OpGenerator, Workload};
pub use op::{Op, OpCounts, OpKind};
pub use permutation::Permutation;
pub use runner::{IndexAdapter, Latency, Outcomes, Progress, RunConfig, RunResult, Stop, Warmup};
pub use shift::{Shift, ShiftGenerator};
pub use ycsb::Ycsb;
