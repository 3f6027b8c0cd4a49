//! Real-thread stress tests of the grace-period barrier: retired objects are never seen dead by
//! online readers, and idle, spinning or exiting threads never block `synchronize`. Every wait is
//! bounded by a timeout so a bug fails the test instead of hanging it.
#![cfg(not(loom))]

use concurrency::GracePeriod;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(5);

/// A published object; the writer clears `alive` after the grace period that follows its unlink.
struct Object {
    alive: AtomicBool,
}

fn new_object() -> *mut Object {
    Box::into_raw(Box::new(Object {
        alive: AtomicBool::new(true),
    }))
}

/// Runs `f` on a helper thread and fails the test if it does not finish within `TIMEOUT`.
fn within_timeout(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        f();
        // The receiver is gone only if the test already failed on the timeout.
        let _ = done.send(());
    });
    if finished.recv_timeout(TIMEOUT).is_err() {
        panic!("{what} did not finish within {TIMEOUT:?}");
    }
}

#[test]
fn retired_object_is_never_seen_dead_by_online_readers() {
    let domain = Arc::new(GracePeriod::new());
    let current = Arc::new(AtomicPtr::new(new_object()));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(4));

    let readers: Vec<_> = (0..3)
        .map(|reader| {
            let (domain, current, stop, reads, start) = (
                Arc::clone(&domain),
                Arc::clone(&current),
                Arc::clone(&stop),
                Arc::clone(&reads),
                Arc::clone(&start),
            );
            thread::spawn(move || {
                // Reader 0 uses an explicit participant, the others the thread-local one.
                let explicit = (reader == 0).then(|| domain.register());
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let mut online = match &explicit {
                        Some(participant) => participant.enter(),
                        None => domain.enter(),
                    };
                    // An operation with a retry loop: re-read after each quiescent point.
                    for attempt in 0..3 {
                        let object = current.load(Ordering::Acquire);
                        // Widen the window between finding the object and using it, so that a
                        // barrier that does not wait is caught.
                        if attempt == 2 {
                            thread::yield_now();
                        } else {
                            for _ in 0..64 {
                                std::hint::spin_loop();
                            }
                        }
                        // SAFETY: objects are freed only after every reader thread is joined.
                        let alive = unsafe { (*object).alive.load(Ordering::Relaxed) };
                        assert!(
                            alive,
                            "an online reader saw a retired object after its grace period"
                        );
                        if attempt == 1 {
                            online.quiescent();
                        }
                    }
                    drop(online);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let mut retired = Vec::new();
    start.wait();
    let deadline = Instant::now() + Duration::from_millis(400);
    while retired.len() < 20_000 && Instant::now() < deadline {
        let old = current.swap(new_object(), Ordering::AcqRel);
        domain.synchronize();
        // SAFETY: `old` stays allocated until the end of the test.
        unsafe { (*old).alive.store(false, Ordering::Relaxed) };
        retired.push(old);
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().expect("readers never see a dead object");
    }
    assert!(
        retired.len() > 10,
        "the writer made progress: {}",
        retired.len()
    );
    assert!(
        reads.load(Ordering::Relaxed) > 10,
        "the readers made progress"
    );
    retired.push(current.load(Ordering::Relaxed));
    for object in retired {
        // SAFETY: every thread that could read it has been joined.
        drop(unsafe { Box::from_raw(object) });
    }
}

#[test]
fn idle_and_spinning_threads_do_not_block_synchronize() {
    let domain = Arc::new(GracePeriod::new());
    let published = Arc::new(AtomicBool::new(false));

    // An idle thread: registered (explicitly and thread-locally), offline, blocked elsewhere.
    let (wake_idle, idle_wait) = mpsc::channel::<()>();
    let (idle_ready, idle_registered) = mpsc::channel();
    let idle = {
        let domain = Arc::clone(&domain);
        thread::spawn(move || {
            let participant = domain.register();
            drop(participant.enter());
            drop(domain.enter());
            idle_ready
                .send(())
                .expect("the test waits for registration");
            idle_wait.recv().expect("the test wakes the idle thread");
        })
    };
    idle_registered
        .recv_timeout(TIMEOUT)
        .expect("the idle thread registered");

    // A spinning thread: online, retrying until the synchronizer publishes (XIndex: a put that
    // waits for `tmp_buf`, which compaction sets only after barrier B1).
    let spinner = {
        let (domain, published) = (Arc::clone(&domain), Arc::clone(&published));
        thread::spawn(move || {
            let mut online = domain.enter();
            while !published.load(Ordering::Acquire) {
                online.quiescent();
                thread::yield_now();
            }
        })
    };

    within_timeout("synchronize with idle and spinning threads", {
        let (domain, published) = (Arc::clone(&domain), Arc::clone(&published));
        move || {
            for _ in 0..100 {
                domain.synchronize();
            }
            published.store(true, Ordering::Release);
        }
    });
    spinner.join().expect("the spinner stops once published");
    wake_idle.send(()).expect("the idle thread is waiting");
    idle.join().expect("the idle thread exits");
    assert_eq!(domain.participants(), 0, "exited threads unregistered");
}

#[test]
fn synchronize_waits_for_an_online_reader_and_not_for_an_exiting_one() {
    let domain = Arc::new(GracePeriod::new());
    let (online_tx, online_rx) = mpsc::channel();
    let (leave_tx, leave_rx) = mpsc::channel::<()>();
    let reader = {
        let domain = Arc::clone(&domain);
        thread::spawn(move || {
            let _online = domain.enter();
            online_tx.send(()).expect("the test waits");
            leave_rx.recv().expect("the test releases the reader");
            // The thread exits while still online: the guard drops, then the cached
            // participant unregisters.
        })
    };
    online_rx
        .recv_timeout(TIMEOUT)
        .expect("the reader is online");

    let (synced_tx, synced_rx) = mpsc::channel();
    let synchronizer = {
        let domain = Arc::clone(&domain);
        thread::spawn(move || {
            domain.synchronize();
            synced_tx.send(()).expect("the test waits");
        })
    };
    assert!(
        synced_rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "synchronize returned while a reader was online"
    );
    leave_tx.send(()).expect("the reader is waiting");
    synced_rx
        .recv_timeout(TIMEOUT)
        .expect("synchronize returns once the reader left");
    reader.join().expect("the reader exits");
    synchronizer.join().expect("the synchronizer exits");
}

#[test]
fn concurrent_synchronizers_and_churning_participants_make_progress() {
    let domain = Arc::new(GracePeriod::new());
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2)
        .map(|_| {
            let (domain, stop) = (Arc::clone(&domain), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Short-lived threads and participants: registration races synchronize.
                    let participant = domain.register();
                    for _ in 0..10 {
                        let mut online = participant.enter();
                        online.quiescent();
                        // An online participant may synchronize itself.
                        if stop.load(Ordering::Relaxed) {
                            participant.synchronize();
                        }
                    }
                    let domain = Arc::clone(&domain);
                    thread::spawn(move || drop(domain.enter()))
                        .join()
                        .expect("the short-lived thread exits");
                }
            })
        })
        .collect();
    within_timeout("concurrent synchronizers", {
        let domain = Arc::clone(&domain);
        move || {
            thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..200 {
                            domain.synchronize();
                        }
                    });
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    for churner in churners {
        churner.join().expect("churners exit");
    }
    assert_eq!(domain.participants(), 0);
}
