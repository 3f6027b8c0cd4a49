//! Shares of a numbered set of items and the lock that hands them out: the restructure lock of
//! XIndex-R and XIndex-H, whose background threads each own a disjoint set of groups (XIndex
//! §3.3 and §3.6; digest §3.13).
//!
//! A [`ShareLock`] is held either exclusively, or by any number of holders of distinct
//! [`Share`]s of one split: `share(part, parts)` waits while the lock is held exclusively,
//! while the same share is held, and while shares of another split (another `parts`) are held,
//! so the items that concurrent holders own never overlap, whoever calls. An exclusive request
//! waits for every holder to leave and keeps new shares out meanwhile, so a stream of shares
//! cannot starve it. Waiting blocks on a condition variable; the lock guards passes that take
//! milliseconds, never a foreground operation.

use std::fmt;

use crate::sync::{Condvar, Mutex};

/// Share `part` of `parts` of a set of items numbered 0, 1, 2, …: the items `i` with
/// `i % parts == part`. The shares of one `parts` are disjoint and together hold every item.
///
/// ```
/// use concurrency::share_lock::Share;
///
/// let second = Share::new(1, 3).expect("share 1 of 3 exists");
/// assert_eq!(second.items(8).collect::<Vec<_>>(), vec![1, 4, 7]);
/// assert!(second.holds(4) && !second.holds(5));
/// assert!((0..8).all(|i| Share::ALL.holds(i)));
/// assert_eq!(Share::new(3, 3), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    part: usize,
    parts: usize,
}

impl Share {
    /// The one share of one: every item.
    pub const ALL: Self = Self { part: 0, parts: 1 };

    /// Share `part` of `parts`; `None` unless `part < parts`.
    pub fn new(part: usize, parts: usize) -> Option<Self> {
        (part < parts).then_some(Self { part, parts })
    }

    /// Whether item `item` is in the share.
    #[inline]
    pub fn holds(self, item: usize) -> bool {
        item % self.parts == self.part
    }

    /// The items of the share below `len`, in order.
    pub fn items(self, len: usize) -> impl Iterator<Item = usize> {
        (self.part..len).step_by(self.parts)
    }

    /// Share `part` of `parts`, for callers whose `part < parts` is a precondition of their
    /// own.
    ///
    /// # Panics
    ///
    /// If `part >= parts`.
    pub fn of(part: usize, parts: usize) -> Self {
        Self::new(part, parts).unwrap_or_else(|| panic!("share {part} of {parts} does not exist"))
    }

    /// Which share this is, from 0.
    pub fn part(self) -> usize {
        self.part
    }

    /// How many shares the items are split into.
    pub fn parts(self) -> usize {
        self.parts
    }
}

/// Who holds the lock.
#[derive(Default)]
struct Holders {
    exclusive: bool,
    /// Exclusive requests waiting; new shares wait behind them.
    exclusive_waiting: usize,
    /// The shares held, all of one `parts`.
    shares: Vec<Share>,
}

impl Holders {
    /// Whether `share` may be taken now.
    fn admits(&self, share: Share) -> bool {
        !self.exclusive
            && self.exclusive_waiting == 0
            && self
                .shares
                .iter()
                .all(|held| held.parts == share.parts && held.part != share.part)
    }
}

/// A lock held exclusively or by holders of distinct shares of one split (module comment).
///
/// ```
/// use concurrency::share_lock::{Share, ShareLock};
///
/// let lock = ShareLock::new();
/// let first = lock.share(Share::new(0, 2).unwrap());
/// let second = lock.share(Share::new(1, 2).unwrap()); // a distinct share: no wait
/// assert_eq!((first.share().part(), second.share().part()), (0, 1));
/// drop((first, second));
/// let _all = lock.exclusive();
/// ```
#[derive(Default)]
pub struct ShareLock {
    holders: Mutex<Holders>,
    changed: Condvar,
}

impl ShareLock {
    /// An unheld lock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Blocks until `share` can be held: no exclusive holder or request, no holder of the
    /// same share, none of another split.
    pub fn share(&self, share: Share) -> ShareGuard<'_> {
        let mut holders = self.holders.lock();
        while !holders.admits(share) {
            holders = self.changed.wait(holders);
        }
        holders.shares.push(share);
        ShareGuard { lock: self, share }
    }

    /// Blocks until the lock is held by no one else, then holds it alone.
    pub fn exclusive(&self) -> ExclusiveGuard<'_> {
        let mut holders = self.holders.lock();
        holders.exclusive_waiting += 1;
        while holders.exclusive || !holders.shares.is_empty() {
            holders = self.changed.wait(holders);
        }
        holders.exclusive_waiting -= 1;
        holders.exclusive = true;
        ExclusiveGuard { lock: self }
    }
}

impl fmt::Debug for ShareLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShareLock").finish_non_exhaustive()
    }
}

/// A share of a [`ShareLock`], released when dropped.
#[derive(Debug)]
pub struct ShareGuard<'a> {
    lock: &'a ShareLock,
    share: Share,
}

impl ShareGuard<'_> {
    /// The share held.
    pub fn share(&self) -> Share {
        self.share
    }
}

impl Drop for ShareGuard<'_> {
    fn drop(&mut self) {
        let mut holders = self.lock.holders.lock();
        let at = holders
            .shares
            .iter()
            .position(|&held| held == self.share)
            .expect("a held share is listed until its guard drops");
        holders.shares.swap_remove(at);
        self.lock.changed.notify_all();
    }
}

/// A [`ShareLock`] held exclusively, released when dropped.
#[derive(Debug)]
pub struct ExclusiveGuard<'a> {
    lock: &'a ShareLock,
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        self.lock.holders.lock().exclusive = false;
        self.lock.changed.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread;
    use std::time::Duration;

    #[test]
    fn admission_keeps_held_items_disjoint() {
        let mut holders = Holders::default();
        assert!(holders.admits(Share::of(0, 2)));
        holders.shares.push(Share::of(0, 2));
        assert!(
            holders.admits(Share::of(1, 2)),
            "a distinct share of the same split"
        );
        assert!(!holders.admits(Share::of(0, 2)), "the same share");
        assert!(!holders.admits(Share::of(0, 3)), "another split overlaps");
        assert!(!holders.admits(Share::ALL), "every item overlaps");
        holders.shares.clear();
        holders.exclusive_waiting = 1;
        assert!(
            !holders.admits(Share::of(1, 2)),
            "behind a waiting exclusive request"
        );
        holders.exclusive_waiting = 0;
        holders.exclusive = true;
        assert!(!holders.admits(Share::of(1, 2)), "while held exclusively");
    }

    /// Threads taking random shares and exclusive holds never hold an item twice at once:
    /// each holder marks its items in a table and checks that no one else marked them.
    #[test]
    fn concurrent_holders_never_share_an_item() {
        const ITEMS: usize = 12;
        let lock = ShareLock::new();
        let owners: Vec<AtomicUsize> = (0..ITEMS).map(|_| AtomicUsize::new(0)).collect();
        let hold = |items: &[usize], me: usize| {
            for &item in items {
                let before = owners[item].swap(me, Ordering::SeqCst);
                assert_eq!(before, 0, "item {item} held by {before} and {me}");
            }
            thread::sleep(Duration::from_micros(50));
            for &item in items {
                owners[item].store(0, Ordering::SeqCst);
            }
        };
        thread::scope(|scope| {
            for me in 1..=4usize {
                let (lock, hold) = (&lock, &hold);
                scope.spawn(move || {
                    for round in 0..200 {
                        if (round + me) % 17 == 0 {
                            let _all = lock.exclusive();
                            hold(&(0..ITEMS).collect::<Vec<_>>(), me);
                        } else {
                            let parts = 1 + (round * me) % 3;
                            let mine = Share::of((round + me) % parts, parts);
                            let guard = lock.share(mine);
                            assert_eq!(guard.share(), mine);
                            let items: Vec<usize> = mine.items(ITEMS).collect();
                            hold(&items, me);
                        }
                    }
                });
            }
        });
    }
}
