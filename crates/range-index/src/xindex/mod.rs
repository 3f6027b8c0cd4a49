//! XIndex-R: the concurrent learned ordered index of Wang et al. (ACM TOS 2022, PPoPP'20).
//!
//! Keys live in groups, each a sorted array of version-locked records indexed by linear models
//! plus a small concurrent *delta index* that buffers inserts of new keys (§3.1); a learned root
//! over the groups' pivots finds a key's group. Background compaction merges each delta into
//! its array in two phases without blocking foreground work (§3.2).
//!
//! Modules, one per concept: [`config`](Config), `error`, `key` (what a key type provides:
//! root model and initial grouping), `record` (Algorithm 5), `group`, `root`, `index` (the
//! index and its point operations), `scan`, `compaction` (Algorithm 3), `background`, `stats`,
//! `validate` (the invariants of digest §8), and the delta index `delta`.
//!
//! This increment implements the core index with two-phase compaction; model split/merge,
//! group split/merge, root updates and the sequential-insert path come next (the structure
//! already honours `next` chains and NULL root slots).

mod background;
mod compaction;
mod config;
mod delta;
mod error;
mod group;
mod index;
mod key;
mod record;
mod root;
mod scan;
mod stats;
mod validate;

pub use compaction::Phase;
pub use config::{Config, MAX_MODELS};
pub use delta::{DeltaIndex, DeltaIter};
pub use error::Error;
pub use index::XIndex;
pub use key::IndexKey;
pub use scan::Range;
