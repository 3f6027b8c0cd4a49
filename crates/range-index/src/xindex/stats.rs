//! Statistics of an XIndex-R (digest §7 item 26): groups, models and their mean error, delta
//! index sizes, compaction counts and an estimate of the memory footprint.

use crate::Stats;
use crate::xindex::index::Pinned;
use crate::xindex::key::IndexKey;

impl<K: IndexKey> Pinned<'_, K> {
    /// The structural statistics (the caller fills in the counters).
    pub(crate) fn stats(&self) -> Stats {
        let root = self.root();
        let mut stats = Stats {
            bytes: root.bytes(),
            ..Stats::default()
        };
        let mut error_sum = 0.0;
        for group in root.groups() {
            stats.groups += 1;
            stats.models += group.models().len();
            stats.records += group.keys().len();
            error_sum += group.mean_error() * group.models().len() as f64;
            let tmp = group.tmp_buf();
            let delta = group.buf().len() + tmp.map_or(0, |t| t.len());
            stats.delta_keys += delta;
            stats.max_delta_keys = stats.max_delta_keys.max(delta);
            stats.bytes +=
                group.bytes() + group.buf().memory_bytes() + tmp.map_or(0, |t| t.memory_bytes());
        }
        stats.mean_error = error_sum / stats.models.max(1) as f64;
        stats
    }
}
