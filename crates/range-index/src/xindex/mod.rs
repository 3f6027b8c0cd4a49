//! XIndex-R: the concurrent learned ordered index of Wang et al. (ACM TOS 2022, PPoPP'20).
//!
//! Keys live in groups, each a sorted array of version-locked records indexed by linear models
//! plus a small concurrent *delta index* that buffers inserts of new keys (§3.1); a learned root
//! over the groups' pivots finds a key's group. Background compaction merges each delta into
//! its array in two phases without blocking foreground work (§3.2).
//!
//! Groups adapt at run time (§3.3): a background policy splits and merges models and
//! groups by their error and delta size and rebuilds the root over the new groups.
//!
//! Modules, one per concept: [`config`](Config), `error`, `key` (what a key type provides:
//! root model, initial grouping, the records' key form), `byte_key` (byte strings as records
//! hold them), `records` (a group's sorted array with the sequential-insert spare slots,
//! §3.5.2), `record` (Algorithm 5), `group`, `correction` (tables that move a model's
//! predictions next to their keys, not in the paper), `root`, `index` (the index and its point
//! operations), `scan`, the structural changes — `restructure` (what they share),
//! `compaction` (Algorithm 3), `retrain` (model split and merge), `split` (Algorithm 4),
//! `merge` (group merge), `root_update` — then `policy` (Table 2), `background`, `stats`,
//! `validate` (the invariants of digest §8), and the delta index `delta`.
//!
//! Several background threads share the compactions out by root slot, each compacting the
//! groups of its own slots at the same time as the others (see `background`).

mod background;
mod byte_key;
mod compaction;
mod config;
mod correction;
mod delta;
mod error;
mod group;
mod index;
mod key;
mod merge;
mod policy;
mod record;
mod records;
mod restructure;
mod retrain;
mod root;
mod root_update;
mod scan;
mod split;
mod stats;
mod validate;
mod window_hint;

pub use byte_key::ByteKey;
pub use config::{Config, MAX_MODELS};
pub use delta::{DeltaIndex, DeltaIter, DeltaRevIter};
pub use error::Error;
pub use index::XIndex;
pub use key::IndexKey;
pub use restructure::{Phase, Restructure};
pub use scan::Range;
