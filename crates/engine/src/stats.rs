//! What [`crate::Db::stats`] reports.

use std::time::{Duration, SystemTime};

use crate::key::{KeyType, TableKind};

/// The statistics of a table's index.
#[derive(Debug, Clone)]
pub enum IndexStats {
    /// XIndex-R's counters and structure.
    Ordered(range_index::Stats),
    /// XIndex-H's counters and structure.
    Hash(hash_index::Stats),
}

impl IndexStats {
    /// The index's own memory (keys, words and structure; not the out-of-line values).
    pub fn bytes(&self) -> usize {
        match self {
            IndexStats::Ordered(stats) => stats.bytes,
            IndexStats::Hash(stats) => stats.bytes,
        }
    }
}

/// One table's statistics.
#[derive(Debug, Clone)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// Ordered or hash.
    pub kind: TableKind,
    /// `u64` or byte-string keys.
    pub key_type: KeyType,
    /// Keys present.
    pub keys: usize,
    /// Heap bytes of the blocks of values stored out of line, headers and size-class rounding
    /// included (values of up to 7 bytes live in the index).
    pub value_bytes: usize,
    /// The index's statistics.
    pub index: IndexStats,
}

/// The last checkpoint this handle wrote.
#[derive(Debug, Clone)]
pub struct CheckpointInfo {
    /// When it finished.
    pub finished: SystemTime,
    /// Pairs written.
    pub entries: u64,
    /// The file's size.
    pub bytes: u64,
    /// How long it took.
    pub elapsed: Duration,
    /// Log segments it let the log delete.
    pub segments_deleted: usize,
}

/// What [`crate::Db::stats`] returns.
#[derive(Debug, Clone)]
pub struct DbStats {
    /// Every table, in creation order.
    pub tables: Vec<TableStats>,
    /// Keys over all tables.
    pub keys: usize,
    /// Memory of the indexes and the out-of-line values, in bytes.
    pub memory_bytes: usize,
    /// Bytes written to the log files since the open (0 in memory). Records still in a lane's
    /// buffer do not count yet: under [`Durability::None`](crate::Durability::None) or
    /// `Periodic` they reach the files at the next round, [`Db::flush`](crate::Db::flush) or
    /// a full buffer.
    pub log_bytes: u64,
    /// Group-commit rounds since the open.
    pub log_rounds: u64,
    /// Checkpoints written since the open.
    pub checkpoints: u64,
    /// The last checkpoint written since the open.
    pub last_checkpoint: Option<CheckpointInfo>,
    /// What the open recovered (`None` in memory).
    pub recovery: Option<wal_checkpoint::RecoveryStats>,
}
