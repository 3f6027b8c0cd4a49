//! Periodic background workers owned by an index (DESIGN.md "Core decisions": background work
//! runs on threads the index owns, names, and joins on drop): `count` named threads, each
//! running a task every `period` until the [`Workers`] value is dropped, which stops and joins
//! them. Each task learns its thread's [`Share`] of the work, so threads can split items
//! (an index's groups) among them. XIndex-R's compaction and adjustment passes and XIndex-H's
//! resizes run on them.

use std::io;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::share_lock::Share;

/// Named threads running one task periodically; dropping the value stops and joins them.
#[derive(Debug)]
pub struct Workers {
    /// One channel per thread; dropping the sender tells the thread to stop.
    stops: Vec<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `count` threads named `{name}-{i}`, thread `i` calling `task` with share `i` of
    /// `count` every `period` (after a first pause of `period`). An error from the operating
    /// system stops the threads already started.
    pub fn start(
        name: &str,
        count: usize,
        period: Duration,
        task: impl Fn(Share) + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let task = Arc::new(task);
        let mut workers = Self {
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..count {
            let share = Share::of(i, count);
            let (stop, stopped) = mpsc::channel::<()>();
            let task = Arc::clone(&task);
            let thread = thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                        task(share);
                    }
                })?;
            workers.stops.push(stop);
            workers.threads.push(thread);
        }
        Ok(workers)
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stops.clear();
        for thread in self.threads.drain(..) {
            let name = thread.thread().name().unwrap_or("worker").to_owned();
            if thread.join().is_err() && !thread::panicking() {
                panic!("background thread {name} panicked");
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn workers_run_their_task_and_stop_on_drop() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
        let threads_seen = Arc::clone(&seen);
        let workers = Workers::start("test-worker", 2, Duration::from_millis(1), move |share| {
            assert_eq!(share.parts(), 2, "one share per thread");
            threads_seen.lock().expect("no panic").insert(share.part());
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .expect("threads start");
        while runs.load(Ordering::Relaxed) < 4 || seen.lock().expect("no panic").len() < 2 {
            thread::sleep(Duration::from_millis(1));
        }
        drop(workers);
        assert_eq!(
            *seen.lock().expect("no panic"),
            [0, 1].into(),
            "each thread runs the task with its own share"
        );
        let after = runs.load(Ordering::Relaxed);
        thread::sleep(Duration::from_millis(20));
        assert_eq!(
            runs.load(Ordering::Relaxed),
            after,
            "no task runs after the drop"
        );
    }
}
