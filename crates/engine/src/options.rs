//! How a [`crate::Db`] runs: durability, the background work, and the indexes' parameters.

use std::time::Duration;

pub use wal_checkpoint::Durability;

use crate::error::{Error, Result};

/// The options of [`crate::Db::open`], built by chaining setters on the defaults.
///
/// ```
/// use std::time::Duration;
/// use engine::{Durability, Options};
/// let options = Options::new()
///     .durability(Durability::Immediate)
///     .checkpoint_interval(Some(Duration::from_secs(60)))
///     .index_threads(1);
/// assert_eq!(options.get_durability(), Durability::Immediate);
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) durability: Durability,
    pub(crate) checkpoint_interval: Option<Duration>,
    pub(crate) log_lanes: usize,
    pub(crate) segment_bytes: u64,
    pub(crate) tolerate_corruption: bool,
    pub(crate) ordered: range_index::xindex::Config,
    pub(crate) hash: hash_index::Config,
}

impl Default for Options {
    /// `Periodic(200 ms)` durability (the paper's logger), a checkpoint every 30 s, one
    /// background thread per index, one log lane per core, 64 MiB log segments.
    fn default() -> Self {
        Self {
            durability: Durability::Periodic(Duration::from_millis(200)),
            checkpoint_interval: Some(Duration::from_secs(30)),
            log_lanes: std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(wal_checkpoint::MAX_LANES),
            segment_bytes: 64 << 20,
            tolerate_corruption: false,
            ordered: range_index::xindex::Config::default(),
            hash: hash_index::Config::default(),
        }
    }
}

impl Options {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// When a write is durable: `None` (only at [`crate::Db::flush`], checkpoints and a clean
    /// close), `Periodic(interval)` (within about one interval) or `Immediate` (before the
    /// write returns; concurrent writers share the fsync).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The period of background checkpoints; `None` disables them (the log then grows until
    /// [`crate::Db::checkpoint`] is called). With them, an open that recovered a long log (four
    /// segments a lane, left by opens and segment rotations since the last checkpoint, or at least
    /// as many ops as that checkpoint held and at least 65,536) checkpoints before it returns (if
    /// it can: one that fails leaves the open to succeed), so that processes that close before an
    /// interval has passed do not leave each open a longer log to replay.
    pub fn checkpoint_interval(mut self, interval: Option<Duration>) -> Self {
        self.checkpoint_interval = interval;
        self
    }

    /// The number of log lanes (per-thread buffers, each with its own files), in
    /// `1..=`[`wal_checkpoint::MAX_LANES`]. Default: the machine's available parallelism.
    pub fn log_lanes(mut self, lanes: usize) -> Self {
        self.log_lanes = lanes;
        self
    }

    /// The size at which a log lane starts a new segment file.
    pub fn segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes;
        self
    }

    /// Open past corruption in the log: each damaged log lane ends at its first bad record
    /// instead of the open failing with [`Error::Corrupt`]. What was cut is reported in
    /// [`crate::DbStats::recovery`].
    pub fn tolerate_corruption(mut self, tolerate: bool) -> Self {
        self.tolerate_corruption = tolerate;
        self
    }

    /// Background threads per table index (XIndex-R's compaction and structure changes, XIndex-H's
    /// resizes; at most 256, or the open fails with [`Error::InvalidOptions`]); 0 leaves that work
    /// undone (not recommended). Each table's index owns its threads, so a database of many tables
    /// runs that many threads, mostly asleep: an ordered table's wake once a second, and so do an
    /// idle hash table's (every 2 ms while writes change its number of keys); 1,000 idle tables of
    /// either kind cost 1–2% of a core.
    pub fn index_threads(mut self, threads: usize) -> Self {
        self.ordered.background_threads = threads;
        self.hash.background_threads = threads;
        self
    }

    /// The parameters of ordered tables' XIndex-R.
    pub fn ordered_index(mut self, config: range_index::xindex::Config) -> Self {
        self.ordered = config;
        self
    }

    /// The parameters of hash tables' XIndex-H.
    pub fn hash_index(mut self, config: hash_index::Config) -> Self {
        self.hash = config;
        self
    }

    /// The durability mode.
    pub fn get_durability(&self) -> Durability {
        self.durability
    }

    /// Checks everything an open would otherwise find out late.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Durability::Periodic(interval) = self.durability
            && interval.is_zero()
        {
            return Err(Error::InvalidOptions("a zero flush interval".into()));
        }
        if self.checkpoint_interval.is_some_and(|i| i.is_zero()) {
            return Err(Error::InvalidOptions("a zero checkpoint interval".into()));
        }
        if self.log_lanes == 0 || self.log_lanes > wal_checkpoint::MAX_LANES {
            return Err(Error::InvalidOptions(format!(
                "log lanes must be in 1..={}",
                wal_checkpoint::MAX_LANES
            )));
        }
        if self.segment_bytes < 4096 {
            return Err(Error::InvalidOptions(
                "segments must hold at least 4 KiB".into(),
            ));
        }
        let max_threads = concurrency::workers::MAX_THREADS;
        if self
            .ordered
            .background_threads
            .max(self.hash.background_threads)
            > max_threads
        {
            return Err(Error::InvalidOptions(format!(
                "index threads must be at most {max_threads} per table"
            )));
        }
        self.ordered.validate()?;
        self.hash.validate()?;
        Ok(())
    }

    pub(crate) fn wal(&self) -> wal_checkpoint::Options {
        wal_checkpoint::Options {
            durability: self.durability,
            lanes: self.log_lanes,
            segment_bytes: self.segment_bytes,
            checkpoint_interval: None,
            tolerate_corruption: self.tolerate_corruption,
            ..wal_checkpoint::Options::default()
        }
    }
}
