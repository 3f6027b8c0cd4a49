//! learnkv's embedded database: named tables over concurrent learned indexes, made durable by
//! a write-ahead log with fuzzy checkpoints.
//!
//! - [`Db::open`] creates or recovers a database in a directory; [`Db::open_in_memory`] keeps
//!   it in memory only. One process at a time may open a directory.
//! - Tables are created on demand and recorded in a persistent catalog:
//!   [`Db::ordered_table`] (XIndex-R, XIndex §3) with `u64` or byte-string keys, and
//!   [`Db::hash_table`] (XIndex-H, §4). Both offer `get`, `insert` (returning the old value),
//!   `remove`, `contains_key`, `len`, `iter`; ordered tables add double-ended `range`,
//!   `first`, `last` and `scan` (and `prefix` for byte-string keys). [`Db::delete_table`]
//!   deletes a table durably.
//! - Values are byte strings of up to [`MAX_VALUE_LEN`] bytes: up to seven bytes inline in the
//!   index's value word, longer ones out of line, reclaimed through crossbeam-epoch.
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

pub use batch::{BatchTable, WriteBatch};
pub use catalog::MAX_TABLE_NAME;
pub use db::Db;
pub use error::{Error, Result};
pub use key::{KeyType, MAX_KEY_LEN, TableKey, TableKind};
pub use options::{Durability, Options};
pub use stats::{CheckpointInfo, DbStats, IndexStats, TableStats};
pub use table::{HashIter, HashTable, MAX_VALUE_LEN, OrderedTable, Range};
pub use wal_checkpoint::RecoveryStats;

/// The parameters of ordered tables' index (XIndex-R), for [`Options::ordered_index`].
pub use range_index::xindex::Config as OrderedConfig;

/// The parameters of hash tables' index (XIndex-H), for [`Options::hash_index`].
pub use hash_index::Config as HashConfig;
