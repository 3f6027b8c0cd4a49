//! learnkv's embedded database: named tables over concurrent learned indexes, made durable by
//! a write-ahead log with fuzzy checkpoints.
//!
//! - [`Db::open`] creates or recovers a database in a directory; [`Db::open_in_memory`] keeps
//!   it in memory only. One process at a time may open a directory.
//! - Tables are created on demand and recorded in a persistent catalog:
//!   [`Db::ordered_table`] (XIndex-R, XIndex §3) with `u64` or byte-string keys, and
//!   [`Db::hash_table`] (XIndex-H, §4). Both offer `get`, `get_many` (many keys with their
//!   memory requests overlapped), `insert` (returning the old value), `remove`,
//!   `contains_key`, `len`, `iter`; ordered tables add double-ended `range`,
//!   `first`, `last` and `scan` (and `prefix` for byte-string keys). [`Db::delete_table`]
//!   deletes a table durably.
//! - Values are byte strings of up to [`MAX_VALUE_LEN`] bytes: up to seven bytes inline in the
//!   index's value word, longer ones out of line, reclaimed through crossbeam-epoch.
//! - `compare_and_swap` and `fetch_and_update` write a key only if it holds what the caller
//!   read, as one step against every other write of the key (see below);
//!   [`WriteBatch::require`] puts such conditions on a batch, over any of its keys.
//! - [`WriteBatch`] groups writes across tables atomically with respect to crashes;
//!   [`Durability`] picks when a write is durable; [`Db::flush`] and [`Db::checkpoint`] force
//!   the log and a checkpoint; background checkpoints run every 30 s by default.
//! - Dropping the last handle shuts down cleanly: the log is synced and the threads joined.
//!
//! ```
//! use engine::{Db, Durability, Options};
//! let dir = std::env::temp_dir().join(format!("learnkv-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! {
//!     let db = Db::open(&dir, Options::new().durability(Durability::Immediate))?;
//!     let cities = db.ordered_table::<Vec<u8>>("cities")?;
//!     cities.insert(b"lyon", b"513,275")?;
//!     cities.insert(b"oslo", b"709,037")?;
//! }
//! let db = Db::open(&dir, Options::new())?;
//! let cities = db.ordered_table::<Vec<u8>>("cities")?;
//! assert_eq!(cities.get(b"oslo"), Some(b"709,037".to_vec()));
//! assert_eq!(cities.range(&b"m"[..]..).count(), 1);
//! # drop((cities, db));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), engine::Error>(())
//! ```
//!
//! Conditional writes: a counter that concurrent clients increment without losing a count,
//! and a claim that only one client can win.
//!
//! ```
//! use engine::{CompareAndSwapError, Db};
//! let db = Db::open_in_memory()?;
//! let hits = db.hash_table::<Vec<u8>>("hits")?;
//! let count = |v: Option<&[u8]>| v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
//! let before = hits.fetch_and_update(b"/index.html", |v| Some((count(v) + 1).to_le_bytes()))?;
//! assert_eq!(count(before.as_deref()), 0);
//! assert_eq!(count(hits.get(b"/index.html").as_deref()), 1);
//!
//! let leases = db.ordered_table::<u64>("leases")?;
//! assert_eq!(leases.compare_and_swap(&9, None::<&[u8]>, Some(b"worker-1"))?, Ok(()));
//! let lost = leases.compare_and_swap(&9, None::<&[u8]>, Some(b"worker-2"))?;
//! assert_eq!(lost, Err(CompareAndSwapError { current: Some(b"worker-1".to_vec()) }));
//! # Ok::<(), engine::Error>(())
//! ```

mod batch;
mod catalog;
mod db;
mod error;
mod key;
mod options;
mod stats;
mod store;
mod table;
mod value;

pub use batch::{BatchTable, MAX_BATCH_LEN, WriteBatch};
pub use catalog::MAX_TABLE_NAME;
pub use db::Db;
pub use error::{CompareAndSwapError, Error, Result};
pub use key::{EncodedKey, KeyType, MAX_KEY_LEN, TableKey, TableKind};
pub use options::{Durability, Options};
pub use stats::{CheckpointInfo, DbStats, IndexStats, TableStats};
pub use table::{HashIter, HashTable, MAX_VALUE_LEN, OrderedTable, Range};
pub use wal_checkpoint::RecoveryStats;

/// The parameters of ordered tables' index (XIndex-R), for [`Options::ordered_index`].
pub use range_index::xindex::Config as OrderedConfig;

/// The parameters of hash tables' index (XIndex-H), for [`Options::hash_index`].
pub use hash_index::Config as HashConfig;
