//! Statistics of an XIndex-R (digest §7 item 26): groups, models and their mean error, delta
//! index sizes, counts of each structural change and of the grace periods they waited for, and an
//! estimate of the memory footprint.

use concurrency::sync::atomic::{AtomicU64, Ordering};

use crate::Stats;
use crate::xindex::index::Pinned;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::Restructure;

/// How many structural changes of each kind have finished, and how many grace periods the
/// changes waited for.
pub(crate) struct Counters {
    counts: [AtomicU64; Restructure::ALL.len()],
    grace_periods: AtomicU64,
}

impl Counters {
    /// All zero.
    pub(crate) fn new() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            grace_periods: AtomicU64::new(0),
        }
    }

    /// Counts one finished `change`.
    pub(crate) fn count(&self, change: Restructure) {
        self.counts[change as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one grace period waited for.
    pub(crate) fn count_grace_period(&self) {
        self.grace_periods.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes the counts into `stats`.
    pub(crate) fn fill(&self, stats: &mut Stats) {
        let count = |change: Restructure| self.counts[change as usize].load(Ordering::Relaxed);
        stats.compactions = count(Restructure::Compact);
        stats.model_splits = count(Restructure::SplitModel);
        stats.model_merges = count(Restructure::MergeModel);
        stats.group_splits = count(Restructure::SplitGroup);
        stats.group_merges = count(Restructure::MergeGroup);
        stats.root_updates = count(Restructure::UpdateRoot);
        stats.grace_periods = self.grace_periods.load(Ordering::Relaxed);
    }
}

impl<K: IndexKey> Pinned<'_, K> {
    /// The structural statistics (the caller fills in the counters).
    pub(crate) fn stats(&self) -> Stats {
        let root = self.root();
        let mut stats = Stats {
            bytes: root.bytes(),
            ..Stats::default()
        };
        let mut error_sum = 0.0;
        let mut previous = None;
        for group in root.groups() {
            stats.groups += 1;
            stats.models += group.models().len();
            stats.corrected_models += group.corrections().len();
            error_sum += group.mean_error() * group.models().len() as f64;
            let tmp = group.tmp_buf();
            let mut delta = tmp.map_or(0, |t| t.len());
            stats.bytes += tmp.map_or(0, |t| t.memory_bytes());
            // The frozen views of a split in progress share one array and delta index, counted
            // once; each view counts as a group, with its copy of the old models.
            if !previous.is_some_and(|previous| group.shares_records(previous)) {
                stats.records += group.keys().len();
                delta += group.buf().len();
                stats.bytes += group.bytes() + group.buf().memory_bytes();
            }
            stats.delta_keys += delta;
            stats.max_delta_keys = stats.max_delta_keys.max(delta);
            previous = Some(group);
        }
        stats.mean_error = error_sum / stats.models.max(1) as f64;
        stats
    }
}
