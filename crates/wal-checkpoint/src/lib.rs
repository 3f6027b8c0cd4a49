//! Durability for learnkv's DRAM indexes (XIndex §5; DESIGN.md "Durability for DRAM
//! indexes"): per-thread write-ahead logs of CRC32C-framed, timestamped records, a group-commit
//! thread, fuzzy checkpoints and crash recovery. Index-agnostic: records carry a table number,
//! key bytes and value bytes.
//!
//! # Departure from the paper: timestamps under the key lock
//!
//! XIndex takes a put's log timestamp *after* releasing the record lock, so two puts to one key
//! can be stamped in the opposite order to the one they were applied in, and replay then
//! restores the older value (digest §3.19's bug risk). Here the log serializes writers of a key
//! itself, with a striped key lock: a write locks its lane, then its key's stripe, takes the
//! timestamp, runs the caller's index write (`apply`), unlocks the stripe and appends the
//! record. A batch locks the stripes of all its keys at once, stamps its ops, appends its
//! record and only then applies the ops, so that the group commit syncs the record while the
//! index is written; it unlocks the stripes after its last op. Either way a key's stripe is held
//! from its stamp to its index write: timestamp order is the order in which writes to a key
//! were applied, and replay in timestamp order ends with the last one.
//!
//! The same locks replace the paper's `rcu_barrier` in checkpoints: after stamping `t_begin`,
//! the checkpoint takes and releases every stripe, so every write stamped before `t_begin` has
//! been applied before the scan starts; every write is stamped before it is applied (a batch
//! stamps all its ops before applying any), so `t_end`, taken after the scan, is above every
//! stamp the scan saw. A value the scan sees was therefore stamped before `t_end`, and a value
//! it misses was stamped at or after `t_begin` and is replayed; a batch the scan saw part of
//! commits below `t_end` and is replayed whole.
//!
//! # Example
//!
//! See [`Wal`]. The modules: [`format`](mod@format) (bytes on disk), `lane` (per-thread buffers and
//! segment files), `key_locks` (the striped key locks), `commit` (the group-commit hand-off),
//! `checkpoint`, `recovery`, `cut_note` (what recovery writes down before it cuts a lane),
//! `range_crc` (checksums of a buffer's ranges, for recovery's scans), `faults` (fault injection,
//! and the file changes the power-loss tests track).

mod checkpoint;
mod commit;
mod cut_note;
mod error;
mod faults;
pub mod format;
mod key_locks;
mod lane;
mod range_crc;
mod recovery;
mod wal;

pub use checkpoint::CheckpointWriter;
#[doc(hidden)]
pub use commit::{GroupCommit, Turn};
pub use error::{Error, Result};
pub use faults::FaultPlan;
pub use format::BatchOp;
pub use key_locks::KeyLocks;
pub use recovery::{Recovery, RecoveryStats};
pub use wal::{
    CheckpointStats, Durability, MAX_LANES, Options, Wal, WalStats, check_batch, recover_read_only,
};
