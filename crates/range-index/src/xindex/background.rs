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
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{self, JoinHandle};

use crate::xindex::error::Error;
use crate::xindex::index::Inner;
use crate::xindex::key::IndexKey;

/// The background threads of one index; dropping it stops and joins them.
pub(crate) struct Background {
    /// One channel per thread; dropping the sender tells the thread to stop.
    stops: Vec<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts `inner`'s configured number of background threads.
    pub(crate) fn start<K: IndexKey>(inner: &Arc<Inner<K>>) -> Result<Self, Error> {
        let mut background = Self {
            stops: Vec::new(),
            threads: Vec::new(),
        };
        let period = inner.config().period;
        for i in 0..inner.config().background_threads {
            let (stop, stopped) = mpsc::channel::<()>();
            let inner = Arc::clone(inner);
            let thread = thread::Builder::new()
                .name(format!("xindex-bg-{i}"))
                .spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                        inner.maintenance_pass(inner.config().compaction_threshold);
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
                panic!("an XIndex background thread panicked");
            }
        }
    }
}
