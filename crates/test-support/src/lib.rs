//! Test helpers shared by learnkv's crates (DESIGN.md "Testing layers" 4): the per-key
//! linearizability check of the stress tests. Each key is a register; threads record, for every
//! operation on it, when it was invoked and when it returned, what it did and what it saw, and
//! [`linearizable`] decides whether some order of those operations, consistent with real time,
//! explains every result; [`stress`] is the stress run built on it that the indexes share.
//! Under `--cfg loom`, `loom_runs` runs the crates' loom models with the workspace's
//! settings. [`TempDir`] gives the file-based tests a fresh directory;
//! [`calls_per_second`], [`resident_mib`] and [`median`] serve the examples that measure.

#[cfg(loom)]
pub mod loom_runs;
pub mod stress;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs `op` over and over for about one second, reading the clock after every 1,000 calls;
/// returns how many times a second it ran, or its first error.
pub fn calls_per_second<E>(mut op: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = std::time::Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < std::time::Duration::from_secs(1) {
        for _ in 0..1_000 {
            op()?;
        }
        calls += 1_000;
    }
    Ok(calls as f64 / start.elapsed().as_secs_f64())
}

/// The process's resident memory in MiB (0 where `/proc/self/status` cannot be read).
pub fn resident_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The median of `values`: the upper middle one of an even count.
///
/// # Panics
///
/// If `values` is empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A fresh, empty directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new directory whose name starts with `label` (unique per process and call).
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "learnkv-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
        Self(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What an operation did to its key's register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Read the value.
    Get,
    /// Wrote this value (insert or update).
    Insert(u64),
    /// Wrote this value if the key was present; left it absent otherwise.
    Update(u64),
    /// Removed the key.
    Remove,
}

/// One completed operation on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The key's index in the caller's set of checked keys.
    pub key: usize,
    /// When the operation was invoked (any monotonic clock).
    pub invoke: u64,
    /// When it returned, on the same clock.
    pub response: u64,
    /// What it did.
    pub kind: Kind,
    /// What it returned: the value seen by a get, the previous value for a write or remove.
    pub result: Option<u64>,
}

impl Event {
    /// Runs `read`, a batched read of `keys` (indices into the caller's set), timed by `now`,
    /// and returns its events: a get of each key returning its entry of the results, each
    /// spanning the whole call (a batch promises each key's value at some moment of it, not a
    /// snapshot).
    pub fn batched_gets(
        keys: &[usize],
        now: impl Fn() -> u64,
        read: impl FnOnce() -> Vec<Option<u64>>,
    ) -> impl Iterator<Item = Event> + '_ {
        let invoke = now();
        let results = read();
        let response = now();
        keys.iter().zip(results).map(move |(&key, result)| Event {
            key,
            invoke,
            response,
            kind: Kind::Get,
            result,
        })
    }
}

/// The most operations [`linearizable`] checks in one history.
pub const MAX_OPERATIONS: usize = 128;

/// Whether the history `ops` of one register starting at `init` is linearizable (Wing & Gong's
/// search with memoisation of (linearized set, state), as in Lowe's and Porcupine's checkers).
///
/// # Panics
///
/// If `ops` holds more than [`MAX_OPERATIONS`] operations.
pub fn linearizable(init: Option<u64>, ops: &[Event]) -> bool {
    assert!(
        ops.len() <= MAX_OPERATIONS,
        "the checker handles up to {MAX_OPERATIONS} operations per key"
    );
    let all = if ops.len() == MAX_OPERATIONS {
        u128::MAX
    } else {
        (1u128 << ops.len()) - 1
    };
    search(0, all, init, ops, &mut HashSet::new())
}

/// Whether the operations not in `done` can follow, from `state`, in some real-time order.
fn search(
    done: u128,
    all: u128,
    state: Option<u64>,
    ops: &[Event],
    seen: &mut HashSet<(u128, Option<u64>)>,
) -> bool {
    if done == all {
        return true;
    }
    if !seen.insert((done, state)) {
        return false;
    }
    let pending = || (0..ops.len()).filter(move |i| done & (1 << i) == 0);
    let first_response = pending()
        .map(|i| ops[i].response)
        .min()
        .expect("some operation is pending");
    for i in pending().filter(|&i| ops[i].invoke <= first_response) {
        let op = ops[i];
        if op.result != state {
            continue;
        }
        let next = match op.kind {
            Kind::Get => state,
            Kind::Insert(v) => Some(v),
            Kind::Update(v) => state.map(|_| v),
            Kind::Remove => None,
        };
        if search(done | (1 << i), all, next, ops, seen) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn the_resident_memory_is_read_on_linux() {
        let mib = resident_mib();
        if cfg!(target_os = "linux") {
            assert!(mib > 0.0 && mib < 1_000_000.0, "{mib}");
        }
    }

    fn op(invoke: u64, response: u64, kind: Kind, result: Option<u64>) -> Event {
        Event {
            key: 0,
            invoke,
            response,
            kind,
            result,
        }
    }

    #[test]
    fn checker_rejects_a_stale_read_and_a_lost_update() {
        let write_then_read = [op(0, 1, Kind::Insert(5), None), op(2, 3, Kind::Get, None)];
        assert!(!linearizable(None, &write_then_read));
        let overlapping = [op(0, 3, Kind::Insert(5), None), op(1, 2, Kind::Get, None)];
        assert!(linearizable(None, &overlapping));
        let lost_update = [
            op(0, 1, Kind::Insert(5), None),
            op(2, 3, Kind::Insert(6), None),
        ];
        assert!(!linearizable(None, &lost_update));
        let removed_then_read = [
            op(0, 1, Kind::Remove, Some(1)),
            op(2, 3, Kind::Get, Some(1)),
        ];
        assert!(!linearizable(Some(1), &removed_then_read));
    }

    #[test]
    fn an_update_writes_a_present_key_only() {
        let absent = [op(0, 1, Kind::Update(5), None), op(2, 3, Kind::Get, None)];
        assert!(linearizable(None, &absent));
        let revived = [
            op(0, 1, Kind::Update(5), None),
            op(2, 3, Kind::Get, Some(5)),
        ];
        assert!(!linearizable(None, &revived), "an update never inserts");
        let present = [
            op(0, 1, Kind::Update(5), Some(1)),
            op(2, 3, Kind::Get, Some(5)),
        ];
        assert!(linearizable(Some(1), &present));
        assert!(
            !linearizable(None, &present),
            "an absent key has no old value"
        );
    }
}
