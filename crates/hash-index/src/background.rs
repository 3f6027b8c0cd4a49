//! Background work (§3.6: resizes are triggered by background threads; digest §2.7): the
//! index's own threads, named `xindex-h-bg-N`, each running a maintenance pass every
//! [`Config::period`](crate::Config::period), and the pass itself, which
//! [`maintenance_step`](crate::HashIndex::maintenance_step) and
//! [`quiesce`](crate::HashIndex::quiesce) also run synchronously.
//!
//! A pass reads every group's live-key counter and resizes the groups whose load factor is
//! above `upper_load_factor` or below `lower_load_factor` (never below `min_buckets`) to
//! `live / target_load_factor` buckets, all in one batch (see `resize`). Passes are serialised
//! by the restructure lock, so one
//! group is resized by one actor at a time; several threads give no parallelism yet (the
//! paper gives each thread a disjoint set of groups), only a shorter reaction time.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{self, JoinHandle};

use crate::error::Error;
use crate::index::{Inner, buckets_for};
use crate::key::HashKey;
use crate::resize::Request;

/// The background threads of one index; dropping it stops and joins them.
pub(crate) struct Background {
    /// One channel per thread; dropping the sender tells the thread to stop.
    stops: Vec<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts `inner`'s configured number of background threads.
    pub(crate) fn start<K: HashKey>(inner: &Arc<Inner<K>>) -> Result<Self, Error> {
        let mut background = Self {
            stops: Vec::new(),
            threads: Vec::new(),
        };
        let period = inner.config().period;
        for i in 0..inner.config().background_threads {
            let (stop, stopped) = mpsc::channel::<()>();
            let inner = Arc::clone(inner);
            let thread = thread::Builder::new()
                .name(format!("xindex-h-bg-{i}"))
                .spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                        inner.maintenance_pass();
                    }
                })?;
            background.stops.push(stop);
            background.threads.push(thread);
        }
        Ok(background)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stops.clear();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() && !thread::panicking() {
                panic!("an XIndex-H background thread panicked");
            }
        }
    }
}

impl<K: HashKey> Inner<K> {
    /// One maintenance pass: resizes every group whose load factor left
    /// `[lower_load_factor, upper_load_factor]`. True if it resized any.
    pub(crate) fn maintenance_pass(&self) -> bool {
        let restructurer = self.restructurer();
        let config = self.config();
        let requests: Vec<Request> = (0..self.slot_count())
            .filter(|&slot| {
                let group = restructurer.group(slot);
                let live = group.live().max(0) as f64;
                let buckets = group.bucket_count();
                let load = live / buckets as f64;
                load > config.upper_load_factor
                    || (load < config.lower_load_factor
                        && buckets > buckets_for(live as usize, config))
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
