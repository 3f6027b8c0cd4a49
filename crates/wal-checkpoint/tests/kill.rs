//! Kill tests (DESIGN.md "Testing layers" 5): a child process (this test binary, re-executed)
//! writes with `Immediate` durability from two threads and prints an `ack` line after every
//! write returns; the parent SIGKILLs it at a random moment, recovers, and checks that every
//! acknowledged write is there and that each thread's keys hold exactly the state after some
//! prefix of that thread's writes (batches all or nothing, removes included). The same
//! directory is carried through every cycle, so recovery also runs over earlier recoveries'
//! files. A background checkpointer and tiny segments make checkpoints and rotation race with
//! the kills.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Model, TempDir};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use wal_checkpoint::{BatchOp, Durability, Options, Wal};

const CHILD_DIR: &str = "WAL_KILL_CHILD_DIR";
const CHILD_START: &str = "WAL_KILL_CHILD_START";
const THREADS: u32 = 2;
const KEYS: u8 = 8;
const CYCLES: usize = 60;

fn child_options() -> Options {
    Options {
        durability: Durability::Immediate,
        lanes: 2,
        segment_bytes: 8 << 10,
        checkpoint_interval: Some(Duration::from_millis(15)),
        ..Options::default()
    }
}

/// What write `j` of thread `t` does: key `t:(j % KEYS)` gets `j`, except every 7th write
/// removes it; every 5th write is a batch that also sets key `t:(KEYS + j % KEYS)` to `j`.
fn ops(t: u32, j: u64) -> Vec<(u32, Vec<u8>, Option<Vec<u8>>)> {
    let key = vec![(j % u64::from(KEYS)) as u8];
    let value = (!j.is_multiple_of(7)).then(|| j.to_le_bytes().to_vec());
    let mut out = vec![(t, key, value)];
    if j.is_multiple_of(5) {
        out.push((
            t,
            vec![KEYS + (j % u64::from(KEYS)) as u8],
            Some(j.to_le_bytes().to_vec()),
        ));
    }
    out
}

fn apply(model: &mut Model, op: &(u32, Vec<u8>, Option<Vec<u8>>)) {
    let (t, key, value) = op;
    match value {
        Some(v) => model.insert((*t, key.clone()), v.clone()),
        None => model.remove(&(*t, key.clone())),
    };
}

/// The child: resumes each thread at its start and writes until killed.
#[test]
fn kill_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return; // Only runs as the child of `kill_cycles_keep_every_acknowledged_write`.
    };
    let starts: Vec<u64> = std::env::var(CHILD_START)
        .expect("starts")
        .split(',')
        .map(|s| s.parse().expect("a start"))
        .collect();
    let (wal, recovery) = Wal::open(Path::new(&dir), child_options()).expect("child open");
    let model = Arc::new(Mutex::new(recovery.to_map()));
    let wal = Arc::new(wal);
    {
        let model = Arc::clone(&model);
        wal.start_checkpointer(move |w| {
            let snapshot = model.lock().clone();
            for ((table, key), value) in &snapshot {
                w.put(*table, key, value)?;
            }
            Ok(())
        })
        .expect("checkpointer");
    }
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let wal = Arc::clone(&wal);
            let model = Arc::clone(&model);
            let start = starts[t as usize];
            std::thread::spawn(move || {
                for j in start.. {
                    let ops = ops(t, j);
                    if ops.len() == 1 {
                        let (table, key, value) = &ops[0];
                        let apply_one = || apply(&mut model.lock(), &ops[0]);
                        match value {
                            Some(v) => wal.put(*table, key, v, apply_one),
                            None => wal.remove(*table, key, apply_one),
                        }
                        .expect("write");
                    } else {
                        let batch: Vec<BatchOp<'_>> = ops
                            .iter()
                            .map(|(table, key, value)| match value {
                                Some(value) => BatchOp::Put {
                                    table: *table,
                                    key,
                                    value,
                                },
                                None => BatchOp::Remove { table: *table, key },
                            })
                            .collect();
                        wal.batch(&batch, |op| {
                            let i = batch.iter().position(|b| b == op).expect("op of the batch");
                            apply(&mut model.lock(), &ops[i]);
                        })
                        .expect("batch");
                    }
                    writeln!(std::io::stdout().lock(), "ack {t} {j}").expect("stdout");
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// Thread `t`'s keys in `state`.
fn thread_state(state: &Model, t: u32) -> Model {
    state
        .iter()
        .filter(|((table, _), _)| *table == t)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The smallest `m >= lower` such that thread `t`'s writes `1..=m` give `got`.
fn prefix_length(got: &Model, t: u32, lower: u64) -> Option<u64> {
    let mut model = Model::new();
    for j in 1..=lower {
        ops(t, j).iter().for_each(|op| apply(&mut model, op));
    }
    for m in lower..lower + 1_000_000 {
        if m > lower {
            ops(t, m).iter().for_each(|op| apply(&mut model, op));
        }
        if &model == got {
            return Some(m);
        }
    }
    None
}

#[test]
fn kill_cycles_keep_every_acknowledged_write() {
    let dir = TempDir::new("kill");
    let seed = std::env::var("WAL_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("kill test seed {seed} (set WAL_KILL_SEED to repeat)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut done = [0u64; THREADS as usize];
    let started = Instant::now();
    let mut total_acks = 0;
    for cycle in 0..CYCLES {
        let starts: Vec<String> = done.iter().map(|m| (m + 1).to_string()).collect();
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "kill_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, dir.path())
            .env(CHILD_START, starts.join(","))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, acks) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut words = line.split_whitespace();
                if words.next() == Some("ack") {
                    let t: usize = words.next().and_then(|w| w.parse().ok()).expect("thread");
                    let j: u64 = words.next().and_then(|w| w.parse().ok()).expect("write");
                    if lines.send((t, j)).is_err() {
                        break;
                    }
                }
            }
        });
        // Kill after a random number of acknowledgements (sometimes none: during recovery).
        let wait_for = rng.random_range(0..150usize);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut acked = done;
        let mut seen = 0;
        while seen < wait_for && Instant::now() < deadline {
            if let Ok((t, j)) = acks.recv_timeout(Duration::from_millis(50)) {
                acked[t] = acked[t].max(j);
                seen += 1;
            }
        }
        if wait_for == 0 {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..15)));
        }
        child.kill().expect("SIGKILL the child");
        let status = child.wait().expect("reap the child");
        assert!(!status.success(), "the child was killed, not finished");
        reader.join().expect("reader");
        for (t, j) in acks.try_iter() {
            acked[t] = acked[t].max(j);
            seen += 1;
        }
        total_acks += seen;

        let (wal, recovery) = Wal::open(dir.path(), child_options())
            .unwrap_or_else(|e| panic!("cycle {cycle}: recovery failed: {e}"));
        let state = recovery.to_map();
        for t in 0..THREADS {
            let got = thread_state(&state, t);
            let m = prefix_length(&got, t, acked[t as usize]).unwrap_or_else(|| {
                panic!(
                    "cycle {cycle}: thread {t}'s keys are no prefix of its writes holding every \
                     acknowledged one (acked through {}): {got:?}",
                    acked[t as usize]
                )
            });
            done[t as usize] = m;
        }
        drop(wal);
    }
    eprintln!(
        "{CYCLES} kill cycles, {total_acks} acknowledged writes, writes per thread {:?}, {:.1} s",
        done,
        started.elapsed().as_secs_f64()
    );
    assert!(done.iter().all(|&m| m > 0), "the children made progress");
}
