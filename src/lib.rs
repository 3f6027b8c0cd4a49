//! learnkv: an embedded key-value storage engine built on concurrent learned indexes.
//!
//! The engine composes the concurrent learned indexes of XIndex, FINEdex, HydraList, APEX and
//! PLIN over DRAM or persistent memory. This facade re-exports the workspace's crates as they
//! land; today that is the foundation:
//!
//! - [`learned_model`]: keys as model input, linear models with exact error bounds, optimal
//!   and greedy segmentation, the two-stage RMI, the piecewise-linear root, partial keys for
//!   strings and the last-mile search;
//! - [`concurrency`]: the loom shim, optimistic version locks, the QSBR grace-period barrier,
//!   epoch helpers and backoff.
//!
//! ```
//! use learnkv::learned_model::{KeyModel, PiecewiseRoot};
//! let keys: Vec<u64> = (0..100_000u64).map(|i| i * i).collect();
//! let root = PiecewiseRoot::build_optimal(&keys, 32).unwrap();
//! assert_eq!(root.lower_bound(&keys, &keys[777]), 777);
//! ```

pub use concurrency;
pub use learned_model;
