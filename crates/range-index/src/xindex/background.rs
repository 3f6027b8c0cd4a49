//! Background work (§3.3; digest §3.13): the index's own threads, named `xindex-bg-N`, each
//! running a maintenance pass every [`Config::period`](crate::xindex::Config::period), and
//! the pass itself, which [`maintenance_step`](crate::OrderedIndex::maintenance_step) and
//! [`quiesce`](crate::OrderedIndex::quiesce) also run synchronously.
//!
//! A pass applies the adjustment policy ([`policy`](crate::xindex::policy)) to every group.
//! With several threads, the groups' compactions (the bulk of the work: copying arrays and
//! training models) are shared out as the paper shares its groups (digest §3.13): thread `i`
//! of `n` compacts the groups of the root slots `s` with `s % n == i`, holding its share of the
//! restructure lock ([`concurrency::ShareLock`]), so the threads compact at the same time.
//! Thread 0 also runs the rest of the policy (model and group splits and merges, root
//! updates), holding the lock exclusively; one thread runs the whole policy in one pass.

use std::sync::Arc;

use concurrency::{Share, Workers};

use crate::xindex::error::Error;
use crate::xindex::index::Inner;
use crate::xindex::key::IndexKey;
use crate::xindex::policy::CompactionTrigger;

/// Starts `inner`'s configured number of background threads, named `xindex-bg-N`; dropping
/// the result stops and joins them.
pub(crate) fn start<K: IndexKey>(inner: &Arc<Inner<K>>) -> Result<Workers, Error> {
    let config = inner.config();
    let (count, period) = (config.background_threads, config.period);
    let inner = Arc::clone(inner);
    let workers = Workers::start("xindex-bg", count, period, move |share: Share| {
        let trigger = CompactionTrigger::of(inner.config());
        if share.part() == 0 {
            inner.maintenance_pass(trigger, share);
        } else {
            inner.compaction_pass(trigger, share);
        }
    })?;
    Ok(workers)
}
