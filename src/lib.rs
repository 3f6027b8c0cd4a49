//! learnkv: an embedded key-value storage engine built on concurrent learned indexes.
//!
//! Add it as a dependency and open a [`Db`]: named tables over XIndex-R (ordered, `u64` or
//! byte-string keys) and XIndex-H (hash), values of any size up to [`MAX_VALUE_LEN`], atomic
//! [`WriteBatch`]es, and durability from a write-ahead log with group commit and fuzzy
//! checkpoints ([`Durability`]). Everything in the [`engine`] crate is re-exported here; the
//! crates below it are available too, for those who want an index by itself:
//!
//! - XIndex-R in [`range_index`] (`XIndex::<u64>::bulk_load`, concurrent `&self` methods);
//! - XIndex-H in [`hash_index`];
//! - the write-ahead log and checkpoints, for any index, in [`wal_checkpoint`];
//! - the models and the concurrency primitives in [`learned_model`] and [`concurrency`].
//!
//! ```
//! use learnkv::{Db, WriteBatch};
//! let db = Db::open_in_memory()?;
//! let users = db.ordered_table::<u64>("users")?;
//! let mut batch = WriteBatch::new();
//! batch.insert(&users, &1, b"ada")?;
//! batch.insert(&users, &2, b"grace")?;
//! db.write(batch)?;
//! let names: Vec<Vec<u8>> = users.range(1..).map(|(_, name)| name).collect();
//! assert_eq!(names, [b"ada".to_vec(), b"grace".to_vec()]);
//! # Ok::<(), learnkv::Error>(())
//! ```

pub use engine::*;

pub use concurrency;
pub use engine;
pub use hash_index;
pub use learned_model;
pub use range_index;
pub use wal_checkpoint;
