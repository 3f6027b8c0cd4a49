//! Background work (§3.3; digest §3.13): the index's own threads, named `xindex-bg-N`, each
//! running a maintenance pass every [`Config::period`](crate::xindex::Config::period), and
//! the pass itself, which [`maintenance_step`](crate::OrderedIndex::maintenance_step) and
//! [`quiesce`](crate::OrderedIndex::quiesce) also run synchronously.
//!
//! A pass applies the adjustment policy ([`policy`](crate::xindex::policy)) to every group.
//! Passes are serialised by the restructure lock, so one group is restructured by one actor
//! at a time; with several threads this gives no parallelism yet (the paper gives each thread
//! a disjoint set of groups).

use std::sync::Arc;

use concurrency::Workers;

use crate::xindex::error::Error;
use crate::xindex::index::Inner;
use crate::xindex::key::IndexKey;

/// Starts `inner`'s configured number of background threads, named `xindex-bg-N`; dropping
/// the result stops and joins them.
pub(crate) fn start<K: IndexKey>(inner: &Arc<Inner<K>>) -> Result<Workers, Error> {
    let config = inner.config();
    let (count, period) = (config.background_threads, config.period);
    let inner = Arc::clone(inner);
    let workers = Workers::start("xindex-bg", count, period, move || {
        inner.maintenance_pass(inner.config().compaction_threshold);
    })?;
    Ok(workers)
}
