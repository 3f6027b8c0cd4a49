//! The node-level optimistic version lock of optimistic lock coupling (OLC; Leis et al., "The ART
//! of practical synchronization", DaMoN 2016), used by HydraList's data and search-layer nodes,
//! APEX's data nodes and PLIN's leaves.
//!
//! One `AtomicU64` per node: bit 0 `obsolete` (the node was unlinked; readers must restart),
//! bit 1 `locked`, bits 63..2 the version. Readers take a [`Version`] with
//! [`NodeLock::read_lock`], read the node's atomics, and call [`NodeLock::validate`]; any write in
//! between makes validation fail with [`Restart`]. Writers lock directly or upgrade a read
//! ([`NodeLock::try_upgrade`]); unlocking adds one to the version, and
//! [`NodeWriteGuard::unlock_obsolete`] also marks the node obsolete.
//!
//! Memory ordering is the same as the record lock's (see [`record_lock`](crate::record_lock)):
//! the lock CAS is followed by a `Release` fence, readers end with an `Acquire` fence and a
//! reload, and the unlock is a single `Release` store. Node contents read optimistically must be
//! atomics.

use crate::backoff::Backoff;
use crate::sync::atomic::{AtomicU64, Ordering, fence};
use std::fmt;

const OBSOLETE: u64 = 0b01;
const LOCKED: u64 = 0b10;

/// A version observed by an optimistic reader; opaque, compared by [`NodeLock::validate`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Version(u64);

/// The optimistic read or upgrade failed: the node changed, is locked, or is obsolete. The
/// caller restarts its operation (typically from the root).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Restart;

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("optimistic read invalidated; restart the operation")
    }
}

impl std::error::Error for Restart {}

/// An OLC version lock for one node.
///
/// ```
/// use concurrency::node_lock::{NodeLock, Restart};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// struct Node {
///     lock: NodeLock,
///     keys: [AtomicU64; 2],
/// }
///
/// fn first_key(node: &Node) -> Result<u64, Restart> {
///     let version = node.lock.read_lock()?;
///     let key = node.keys[0].load(Ordering::Relaxed);
///     node.lock.validate(version)?;
///     Ok(key)
/// }
///
/// let node = Node { lock: NodeLock::new(), keys: [AtomicU64::new(3), AtomicU64::new(9)] };
/// let version = node.lock.read_lock().expect("a fresh node is not obsolete");
/// let guard = node.lock.try_upgrade(version).expect("nobody wrote since");
/// node.keys[0].store(4, Ordering::Relaxed);
/// guard.unlock();
/// assert_eq!(first_key(&node), Ok(4));
/// assert_eq!(node.lock.validate(version), Err(Restart));
///
/// node.lock.lock().expect("not obsolete yet").unlock_obsolete();
/// assert_eq!(first_key(&node), Err(Restart));
/// ```
pub struct NodeLock {
    word: AtomicU64,
}

impl NodeLock {
    /// An unlocked, live node lock at version 0.
    pub fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
        }
    }

    /// Starts an optimistic read: waits (with backoff) while a writer holds the lock; fails if
    /// the node is obsolete.
    pub fn read_lock(&self) -> Result<Version, Restart> {
        let mut backoff = Backoff::new();
        loop {
            let word = self.word.load(Ordering::Acquire);
            if word & OBSOLETE != 0 {
                return Err(Restart);
            }
            if word & LOCKED == 0 {
                return Ok(Version(word));
            }
            backoff.snooze();
        }
    }

    /// Ends (or checks midway) an optimistic read begun at `version`: `Ok` iff no writer locked
    /// the node since, so every atomic read in between belongs to that version.
    pub fn validate(&self, version: Version) -> Result<(), Restart> {
        // Orders the node's loads before the reload (see `record_lock`'s module comment).
        fence(Ordering::Acquire);
        if self.word.load(Ordering::Relaxed) == version.0 {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// True if the node was unlocked with [`NodeWriteGuard::unlock_obsolete`].
    pub fn is_obsolete(&self) -> bool {
        self.word.load(Ordering::Acquire) & OBSOLETE != 0
    }

    /// Upgrades an optimistic read to the write lock: succeeds only if the node is still at
    /// `version` (one CAS, no waiting).
    pub fn try_upgrade(&self, version: Version) -> Result<NodeWriteGuard<'_>, Restart> {
        let locked = version.0 | LOCKED;
        self.word
            .compare_exchange(version.0, locked, Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| Restart)?;
        // Orders the lock CAS before the writer's stores (see `record_lock`'s module comment).
        fence(Ordering::Release);
        Ok(NodeWriteGuard {
            word: &self.word,
            locked,
            obsolete: false,
        })
    }

    /// Takes the write lock, waiting for other writers; fails only if the node is (or becomes)
    /// obsolete.
    pub fn lock(&self) -> Result<NodeWriteGuard<'_>, Restart> {
        let mut backoff = Backoff::new();
        loop {
            let version = self.read_lock()?;
            if let Ok(guard) = self.try_upgrade(version) {
                return Ok(guard);
            }
            backoff.spin();
        }
    }
}

impl Default for NodeLock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for NodeLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.word.load(Ordering::Relaxed);
        f.debug_struct("NodeLock")
            .field("version", &(word >> 2))
            .field("locked", &(word & LOCKED != 0))
            .field("obsolete", &(word & OBSOLETE != 0))
            .finish()
    }
}

/// The write lock on a node; dropping it (or [`unlock`](Self::unlock)) unlocks with a new
/// version.
#[must_use = "the node is unlocked as soon as the guard is dropped"]
pub struct NodeWriteGuard<'a> {
    word: &'a AtomicU64,
    locked: u64,
    obsolete: bool,
}

impl NodeWriteGuard<'_> {
    /// Unlocks with a new version (same as dropping the guard).
    pub fn unlock(self) {}

    /// Unlocks with a new version and marks the node obsolete: every current and future reader
    /// restarts, and the node can no longer be locked. Use it when unlinking the node.
    pub fn unlock_obsolete(mut self) {
        self.obsolete = true;
    }
}

impl Drop for NodeWriteGuard<'_> {
    fn drop(&mut self) {
        // `locked` has bit 1 set and bit 0 clear: adding LOCKED clears bit 1 and carries one into
        // the version, in a single Release store.
        let next = self.locked.wrapping_add(LOCKED);
        let next = if self.obsolete { next | OBSOLETE } else { next };
        self.word.store(next, Ordering::Release);
    }
}

impl fmt::Debug for NodeWriteGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeWriteGuard")
            .field("version", &(self.locked >> 2))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn unlock_advances_version_and_invalidates_readers() {
        let lock = NodeLock::new();
        let v0 = lock.read_lock().expect("live");
        assert_eq!(lock.validate(v0), Ok(()));
        let g = lock.lock().expect("live");
        assert_eq!(
            lock.validate(v0),
            Err(Restart),
            "a locked node fails validation"
        );
        assert_eq!(lock.try_upgrade(v0).err(), Some(Restart));
        g.unlock();
        let v1 = lock.read_lock().expect("live");
        assert_ne!(v0, v1);
        assert_eq!(lock.validate(v0), Err(Restart));
        assert_eq!(lock.validate(v1), Ok(()));
        assert_eq!(lock.try_upgrade(v0).err(), Some(Restart), "stale version");
        drop(lock.try_upgrade(v1).expect("current version"));
        assert!(!lock.is_obsolete());
    }

    #[test]
    fn obsolete_node_refuses_readers_and_writers() {
        let lock = NodeLock::default();
        let v = lock.read_lock().expect("live");
        lock.try_upgrade(v).expect("current").unlock_obsolete();
        assert!(lock.is_obsolete());
        assert_eq!(lock.read_lock(), Err(Restart));
        assert_eq!(lock.lock().err(), Some(Restart));
        assert_eq!(lock.validate(v), Err(Restart));
        assert!(!Restart.to_string().is_empty());
    }

    #[test]
    fn many_unlocks_count_up() {
        let lock = NodeLock::new();
        for _ in 0..1000 {
            drop(lock.lock().expect("live"));
        }
        assert_eq!(lock.read_lock(), Ok(Version(1000 << 2)));
    }
}
