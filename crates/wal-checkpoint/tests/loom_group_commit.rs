//! Loom model of the group-commit hand-off (`commit` module): writers append to their lanes and
//! request a round; the committer drains every lane to "disk" and wakes them. A writer whose
//! wait returned finds its record on disk (an `Immediate` write is never acknowledged before
//! its round), and rounds shared by concurrent writers cover all of them; one writer requests
//! its round and waits for it later, as a batch does around applying its ops, the other runs
//! the round itself when none is running, as a single write does.
#![cfg(loom)]

use concurrency::sync::{Arc, Mutex, thread};
use wal_checkpoint::{GroupCommit, Turn};

struct Log {
    commit: GroupCommit,
    lanes: [Mutex<Vec<u32>>; 2],
    disk: Mutex<Vec<u32>>,
}

/// Drains every lane to "disk" and reports `round` (the committer's work, or a leader's).
fn run_round(log: &Log, round: u64) {
    for lane in &log.lanes {
        let drained: Vec<u32> = std::mem::take(&mut *lane.lock());
        log.disk.lock().extend(drained);
    }
    log.commit.finish_round(round, Ok(()));
}

fn committer(log: Arc<Log>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while let Some(round) = log.commit.next_round(None) {
            run_round(&log, round);
        }
    })
}

#[test]
fn an_acknowledged_write_is_on_disk() {
    test_support::loom_runs::model("group commit: two writers", || {
        let log = Arc::new(Log {
            commit: GroupCommit::new(),
            lanes: [Mutex::new(Vec::new()), Mutex::new(Vec::new())],
            disk: Mutex::new(Vec::new()),
        });
        let committer = committer(Arc::clone(&log));
        let writers: Vec<_> = (0..2u32)
            .map(|id| {
                let log = Arc::clone(&log);
                thread::spawn(move || {
                    log.lanes[id as usize].lock().push(id);
                    if id == 0 {
                        // A single write: it runs the round itself when none is running.
                        let round = match log.commit.request_or_lead() {
                            Turn::Lead(round) => {
                                run_round(&log, round);
                                round
                            }
                            Turn::Wait(round) => round,
                        };
                        log.commit.wait(round).expect("no failure");
                    } else {
                        // A batch requests its round, applies its ops, then waits.
                        let round = log.commit.request();
                        thread::yield_now();
                        log.commit.wait(round).expect("no failure");
                    }
                    assert!(log.disk.lock().contains(&id), "acknowledged before durable");
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        log.commit.shutdown();
        committer.join().expect("committer");
    });
}

#[test]
fn a_failed_round_reaches_its_waiter() {
    test_support::loom_runs::model("group commit: failure", || {
        let commit = Arc::new(GroupCommit::new());
        let committer = {
            let commit = Arc::clone(&commit);
            thread::spawn(move || {
                while let Some(round) = commit.next_round(None) {
                    commit.finish_round(round, Err("fsync failed".into()));
                }
            })
        };
        assert_eq!(
            commit.wait(commit.request()),
            Err("fsync failed".to_string())
        );
        assert!(commit.failure().is_some());
        commit.shutdown();
        committer.join().expect("committer");
    });
}
