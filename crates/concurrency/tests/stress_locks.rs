//! Real-thread stress tests of the optimistic locks: validated reads are never torn and no update
//! is lost. All threads start together and readers run until the writers finish. Each writer
//! makes its share of writes and then goes on until the readers have validated
//! [`MIN_VALIDATED`] reads between them, so that a run on two busy cores, where the writers can
//! finish before a reader is scheduled, still tests reads that race writes; a deadline bounds
//! that wait, after which the count is checked (a validation that never succeeds fails there).
#![cfg(not(loom))]

use concurrency::{NodeLock, RecordCell, RecordLock, RecordMeta, Restart};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const WRITERS: u64 = 2;
const READERS: u64 = 2;
const WRITES_PER_WRITER: u64 = 20_000;
/// How many reads the readers must validate, together, while writers still run.
const MIN_VALIDATED: u64 = 100;
/// How long writers go on writing, beyond their share, for the readers to validate that many.
const VALIDATION_DEADLINE: Duration = Duration::from_secs(30);

/// Start and stop signals and counts shared by the writers and readers of one test.
struct Run {
    start: Barrier,
    writers_left: AtomicU64,
    done: AtomicBool,
    /// Reads validated before the last writer finished.
    validated: AtomicU64,
    /// Writes made, every writer's together.
    written: AtomicU64,
}

impl Run {
    fn new() -> Self {
        Self {
            start: Barrier::new((WRITERS + READERS) as usize),
            writers_left: AtomicU64::new(WRITERS),
            done: AtomicBool::new(false),
            validated: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    fn writer(&self, mut write: impl FnMut()) {
        self.start.wait();
        let deadline = Instant::now() + VALIDATION_DEADLINE;
        let mut written = 0;
        while written < WRITES_PER_WRITER
            || (self.validated.load(Ordering::Relaxed) < MIN_VALIDATED && Instant::now() < deadline)
        {
            write();
            written += 1;
        }
        self.written.fetch_add(written, Ordering::Relaxed);
        if self.writers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.store(true, Ordering::Release);
        }
    }

    /// Runs `read` until the writers are done, counting the reads that validated.
    fn reader(&self, mut read: impl FnMut() -> bool) {
        self.start.wait();
        while !self.done.load(Ordering::Acquire) {
            if read() {
                self.validated.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// After every thread has joined: checks that the readers validated enough reads during
    /// the writes, and returns the number of writes.
    fn finish(&self) -> u64 {
        let validated = self.validated.load(Ordering::Relaxed);
        assert!(
            validated >= MIN_VALIDATED,
            "only {validated} reads validated while the writers ran"
        );
        self.written.load(Ordering::Relaxed)
    }
}

/// Two words that writers keep equal; a reader that validates must see them equal.
#[derive(Default)]
struct Pair {
    a: AtomicU64,
    b: AtomicU64,
}

impl Pair {
    fn load(&self) -> (u64, u64) {
        (
            self.a.load(Ordering::Relaxed),
            self.b.load(Ordering::Relaxed),
        )
    }

    fn store(&self, v: u64) {
        self.a.store(v, Ordering::Relaxed);
        // A gap between the two stores makes torn reads likely if validation were broken.
        for _ in 0..16 {
            std::hint::spin_loop();
        }
        self.b.store(v, Ordering::Relaxed);
    }
}

#[test]
fn record_lock_reads_are_never_torn_and_no_update_is_lost() {
    let lock = RecordLock::default();
    let pair = Pair::default();
    let run = Run::new();
    thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                run.writer(|| {
                    let _guard = lock.lock();
                    let (a, _) = pair.load();
                    pair.store(a + 1);
                })
            });
        }
        for _ in 0..READERS {
            s.spawn(|| {
                let mut last = 0;
                run.reader(|| {
                    let snapshot = lock.read_begin();
                    let (a, b) = pair.load();
                    if !lock.validate(snapshot) {
                        return false;
                    }
                    assert_eq!(a, b, "a validated read saw a torn pair");
                    assert!(a >= last, "values only grow");
                    assert_eq!(snapshot.version(), a, "one version per write");
                    last = a;
                    true
                })
            });
        }
    });
    let total = run.finish();
    assert_eq!(pair.load(), (total, total));
    assert_eq!(lock.read_begin().version(), total);
}

#[test]
fn record_cell_value_and_flags_change_together() {
    let cell = RecordCell::new(RecordMeta::new(), 0);
    let run = Run::new();
    thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                run.writer(|| {
                    // Upgrade path when uncontended, plain lock otherwise.
                    let (meta, _) = cell.read();
                    let mut guard = match cell.try_upgrade(meta) {
                        Some(guard) => guard,
                        None => cell.lock(),
                    };
                    let next = guard.value() + 1;
                    guard.set_value(next);
                    guard.set_removed(next % 2 == 1);
                    guard.set_ptr(next % 3 == 0);
                })
            });
        }
        for _ in 0..READERS {
            s.spawn(|| {
                run.reader(|| {
                    let (meta, value) = cell.read();
                    assert_eq!(meta.is_removed(), value % 2 == 1);
                    assert_eq!(meta.is_ptr(), value % 3 == 0 && value > 0);
                    assert_eq!(meta.version(), value);
                    true
                })
            });
        }
    });
    let total = run.finish();
    let (meta, value) = cell.read();
    assert_eq!(value, total);
    assert_eq!(meta.version(), value);
}

fn olc_increment(lock: &NodeLock, pair: &Pair) -> Result<(), Restart> {
    let version = lock.read_lock()?;
    let (a, _) = pair.load();
    lock.validate(version)?;
    let _guard = lock.try_upgrade(version)?;
    pair.store(a + 1);
    Ok(())
}

#[test]
fn node_lock_upgrades_lose_no_update_and_reads_are_never_torn() {
    let lock = NodeLock::new();
    let pair = Pair::default();
    let run = Run::new();
    thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| run.writer(|| while olc_increment(&lock, &pair).is_err() {}));
        }
        for _ in 0..READERS {
            s.spawn(|| {
                run.reader(|| {
                    let Ok(version) = lock.read_lock() else {
                        panic!("nobody marks the node obsolete");
                    };
                    let (a, b) = pair.load();
                    if lock.validate(version).is_err() {
                        return false;
                    }
                    assert_eq!(a, b, "a validated read saw a torn pair");
                    true
                })
            });
        }
    });
    let total = run.finish();
    assert_eq!(pair.load(), (total, total));
}

#[test]
fn node_lock_obsolete_stops_every_reader_and_writer() {
    let lock = NodeLock::new();
    let pair = Pair::default();
    let unlinked = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                // Writers stop at the first restart caused by obsolescence.
                while let Ok(guard) = lock.lock() {
                    let (a, _) = pair.load();
                    if a == 5_000 && unlinked.fetch_add(1, Ordering::Relaxed) == 0 {
                        guard.unlock_obsolete();
                        return;
                    }
                    pair.store(a + 1);
                }
            });
        }
        s.spawn(|| {
            while let Ok(version) = lock.read_lock() {
                let (a, b) = pair.load();
                if lock.validate(version).is_ok() {
                    assert_eq!(a, b);
                }
            }
        });
    });
    assert!(lock.is_obsolete());
    assert_eq!(
        pair.load(),
        (5_000, 5_000),
        "no write after the node became obsolete"
    );
}
