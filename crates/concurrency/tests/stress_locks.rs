//! Real-thread stress tests of the optimistic locks: validated reads are never torn and no update
//! is lost. All threads start together and readers run until the writers finish; bounded by the
//! writers' operation counts (well under a second each in debug builds).
#![cfg(not(loom))]

use concurrency::{NodeLock, RecordCell, RecordLock, RecordMeta, Restart};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

const WRITERS: u64 = 2;
const READERS: u64 = 2;
const WRITES_PER_WRITER: u64 = 20_000;

/// Start and stop signals shared by the writers and readers of one test.
struct Run {
    start: Barrier,
    writers_left: AtomicU64,
    done: AtomicBool,
}

impl Run {
    fn new() -> Self {
        Self {
            start: Barrier::new((WRITERS + READERS) as usize),
            writers_left: AtomicU64::new(WRITERS),
            done: AtomicBool::new(false),
        }
    }

    fn writer(&self, mut write: impl FnMut()) {
        self.start.wait();
        for _ in 0..WRITES_PER_WRITER {
            write();
        }
        if self.writers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.store(true, Ordering::Release);
        }
    }

    /// Runs `read` until the writers are done; returns how many reads validated.
    fn reader(&self, mut read: impl FnMut() -> bool) -> u64 {
        self.start.wait();
        let mut validated = 0;
        while !self.done.load(Ordering::Acquire) {
            validated += u64::from(read());
        }
        validated
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
    let validated = thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                run.writer(|| {
                    let _guard = lock.lock();
                    let (a, _) = pair.load();
                    pair.store(a + 1);
                })
            });
        }
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
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
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().expect("readers pass"))
            .sum::<u64>()
    });
    assert!(validated > 0);
    let total = WRITERS * WRITES_PER_WRITER;
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
    let (meta, value) = cell.read();
    assert_eq!(value, WRITERS * WRITES_PER_WRITER);
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
    let validated = thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| run.writer(|| while olc_increment(&lock, &pair).is_err() {}));
        }
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
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
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().expect("readers pass"))
            .sum::<u64>()
    });
    assert!(validated > 0);
    let total = WRITERS * WRITES_PER_WRITER;
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
