//! Background work (§3.6: resizes are triggered by background threads; digest §2.7): the
//! index's own threads, named `xindex-h-bg-N`, each running a maintenance pass every
//! [`Config::period`](crate::Config::period) while writes change the number of keys (and
//! backing off, up to a second, while none does: `concurrency::workers`, on demand), and the
//! pass itself, which
//! [`maintenance_step`](crate::HashIndex::maintenance_step) and
//! [`quiesce`](crate::HashIndex::quiesce) also run synchronously.
//!
//! A pass reads every group's live-key counter and resizes the groups whose load factor is above
//! `upper_load_factor` or below `lower_load_factor` (never below `min_buckets`) to `live /
//! target_load_factor` buckets, all in one batch (see `resize`). A group below `lower_load_factor`
//! is left alone if a resize could give it as many buckets again (a learned placement may take up
//! to a quarter more than it is asked for): a group of a few keys under `min_buckets`, trained each
//! time to a quarter more buckets, was otherwise shrunk by every pass, for ever. It also rebuilds a
//! group cluttered by removed keys (not in the paper): a removed key's chain node stays in the
//! group's arena, and its removed record keeps other keys out of its bucket (only the same key
//! revives it), so under churn at a steady size (remove one key, insert another) new keys go to
//! chains without end. Session 23's probe of the engine: 20 chain nodes per live key after four
//! minutes, and puts and gets 20 times slower. A group whose chain nodes exceed what its placement
//! gave its keys by more than its live keys (or `min_buckets`) is resized at its target size, which
//! drops them: amortized, each insert pays for moving one key.
//!
//! With several threads, thread `i` of `n` looks after the groups of the slots `s` with
//! `s % n == i` (the paper gives each thread a disjoint set of groups), holding its share of the
//! restructure lock ([`concurrency::ShareLock`]), so the threads resize at the same time and
//! one group is still resized by one actor at a time.

use std::sync::Arc;
use std::time::Duration;

use concurrency::{Share, Workers};

use crate::error::Error;
use crate::index::{Inner, buckets_for};
use crate::key::HashKey;
use crate::model::most_trained_slots;
use crate::resize::Request;

/// The longest an idle background thread sleeps, and how often it passes while no write
/// marks it; a write that changes the number of keys wakes it sooner.
const IDLE_PAUSE: Duration = Duration::from_secs(1);

/// Starts `inner`'s configured number of background threads, named `xindex-h-bg-N`;
/// dropping the result stops and joins them. They pass every period while writes change the
/// number of keys (`Inner::demand`), and back off while none does.
pub(crate) fn start<K: HashKey>(inner: &Arc<Inner<K>>) -> Result<Workers, Error> {
    let (demand, period) = (&inner.demand, inner.config().period);
    let inner = Arc::clone(inner);
    let workers = Workers::on_demand("xindex-h-bg", demand, period, IDLE_PAUSE, move |share| {
        inner.maintenance_pass(share)
    })?;
    Ok(workers)
}

impl<K: HashKey> Inner<K> {
    /// One maintenance pass over `share` of the slots: resizes every group there whose load
    /// factor left `[lower_load_factor, upper_load_factor]`, or whose chains are cluttered
    /// (module docs). True if it resized any.
    pub(crate) fn maintenance_pass(&self, share: Share) -> bool {
        let restructurer = self.partial_restructurer(share);
        let config = self.config();
        let root = self.root_kind();
        let requests: Vec<Request> = share
            .items(self.slot_count())
            .filter(|&slot| {
                let group = restructurer.group(slot);
                let live = group.live().max(0) as f64;
                let buckets = group.bucket_count();
                let load = live / buckets as f64;
                let chains = group.chain_nodes().max(0) as f64;
                let expected = group.trained_conflict_rate() * live;
                let cluttered = chains > expected + live.max(config.min_buckets as f64);
                // A shrink only where a resize makes the group smaller: one to its target may
                // give a learned placement more buckets than that, up to `LARGEST_SCALE` times.
                let smaller =
                    buckets > most_trained_slots(buckets_for(live as usize, config), root);
                load > config.upper_load_factor
                    || (load < config.lower_load_factor && smaller)
                    || cluttered
            })
            .map(|slot| (slot, None))
            .collect();
        if requests.is_empty() {
            return false;
        }
        restructurer.resize(&requests, &mut |_| {});
        true
    }
}
