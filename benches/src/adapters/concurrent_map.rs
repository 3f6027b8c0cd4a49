//! `concurrent-map`: concurrent-map 5.0.37 (by sled's author), a lock-free B+tree with
//! read-copy-update leaves and its own epoch reclamation (`ebr`) — peers.md's best 2-thread
//! scans.
//!
//! The map is `Send` but not `Sync`: its reclamation state is per handle, and a handle must be
//! cloned for each thread. The adapter keeps the original handle behind a mutex and each thread
//! keeps its own clone in a thread-local slot tagged with the adapter's id, made on the thread's
//! first operation (a user would clone once per thread the same way). The bulk load uses the
//! original handle, so no thread-local clone outlives a run on the loading thread.
//!
//! `get`, `insert` and `remove` return the old value; updates and read-modify-writes are a `get`
//! then a compare-and-swap (`cas`, which installs a copied leaf), retried on a race. There is no
//! bulk load: the sorted pairs are inserted one by one.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use concurrent_map::ConcurrentMap;
use parking_lot::Mutex;
use workload::IndexAdapter;

use super::visit;

/// The map type: the crate's default fan-out and garbage buffer.
type Map = ConcurrentMap<u64, u64>;

/// Adapter ids, so a thread-local clone is never used with another adapter.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's clone of the last adapter it used, with that adapter's id.
    static HANDLE: RefCell<Option<(u64, Map)>> = const { RefCell::new(None) };
}

/// `concurrent_map::ConcurrentMap<u64, u64>` as an adapter, with a handle per thread.
pub struct ConcurrentMapAdapter {
    id: u64,
    original: Mutex<Map>,
}

impl ConcurrentMapAdapter {
    /// An empty map.
    pub fn new() -> Self {
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            original: Mutex::new(Map::default()),
        }
    }

    /// Runs `f` on this thread's handle, cloning it from the original on first use.
    fn with<R>(&self, f: impl FnOnce(&Map) -> R) -> R {
        HANDLE.with(|slot| {
            let mut slot = slot.borrow_mut();
            let (_, map) = match &mut *slot {
                Some(handle) if handle.0 == self.id => handle,
                stale => stale.insert((self.id, self.original.lock().clone())),
            };
            f(map)
        })
    }
}

impl Default for ConcurrentMapAdapter {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexAdapter<u64> for ConcurrentMapAdapter {
    fn name(&self) -> &str {
        "concurrent-map"
    }

    fn bulk_load(&self, pairs: &[(u64, u64)]) {
        let map = self.original.lock();
        for &(key, value) in pairs {
            map.insert(key, value);
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        self.with(|map| map.get(&key))
    }

    fn insert(&self, key: u64, value: u64) -> Option<u64> {
        self.with(|map| map.insert(key, value))
    }

    fn update(&self, key: u64, value: u64) -> bool {
        self.with(|map| replace_present(map, key, |_| value))
    }

    fn remove(&self, key: u64) -> Option<u64> {
        self.with(|map| map.remove(&key))
    }

    fn scan(&self, start: u64, n: usize) -> usize {
        self.with(|map| visit(map.range(start..).take(n).map(|(_, value)| value)))
    }

    fn read_modify_write(&self, key: u64, value: u64) -> bool {
        self.with(|map| replace_present(map, key, |old| old ^ value))
    }
}

/// Replaces a present key's value `old` with `new(old)` by compare-and-swap, retrying on races;
/// returns whether the key was present. Unlike `fetch_and_update`, an absent key costs one `get`
/// and no write.
fn replace_present(map: &Map, key: u64, new: impl Fn(u64) -> u64) -> bool {
    let mut current = map.get(&key);
    while let Some(old) = current {
        match map.cas(key, Some(&old), Some(new(old))) {
            Ok(_) => return true,
            Err(failure) => current = failure.actual,
        }
    }
    false
}
