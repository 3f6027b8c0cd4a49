//! XIndex-R's per-group delta index (`buffer_t`; XIndex §3.5.1, digest §2.5): a concurrent
//! ordered map from keys to record cells that buffers the inserts of new keys between two
//! compactions of a group.
//!
//! # Role in XIndex
//!
//! `get` reads `data_array → buf → tmp_buf` (digest §3.3); `put` upserts into `buf`, or into
//! `tmp_buf` while `buf` is frozen (§3.4), through [`DeltaIndex::get_or_insert`], whose insert
//! is the linearization point of "insert into buffer"; `remove` marks the entry's cell removed
//! under the cell's lock (§3.5): entries are never physically removed. The merge phase of a
//! compaction (§3.8) walks a frozen buffer in key order ([`DeltaIndex::iter`]) and stores the
//! addresses of its cells in the new array as pointer records. The whole structure is freed at
//! once when the group that owns it is reclaimed, and [`DeltaIndex::len`] counts inserted keys
//! and never goes down (the reference code's `size()`).
//!
//! # Design
//!
//! The paper's optimised delta index is a B+-tree with optimistic reads and per-node write
//! locks. This one is the B-tree variant of optimistic lock coupling (OLC; Leis et al., "The ART
//! of Practical Synchronization", DaMoN 2016), with every node field an atomic so that each racy
//! read is defined behaviour (DESIGN.md, "Concurrency"):
//!
//! - **Entries are immutable in their key and never move.** Each key lives in an entry of its
//!   own next to its [`RecordCell`], placed in the index's entry [`Arena`]; nodes hold pointers
//!   to entries. A split moves the pointers, never the entries, and no entry is freed before
//!   the tree is dropped. So the
//!   `&RecordCell` that [`DeltaIndex::get`] returns has a stable address for the life of `&self`,
//!   at all times. That is stronger than the reference code, whose leaf splits move entries so
//!   that addresses are stable only while the buffer is frozen (digest §2.5, "bug-risk").
//! - **Nothing is retired.** Splits happen in place: the left node keeps the first half, a new
//!   right sibling takes the second, the parent gains a separator (or a new root is published).
//!   No node is ever unlinked, so nothing needs a grace period or an epoch: nodes and entries
//!   come from two [`Arena`]s, dropped with the index (which has `&mut self` then). An insert
//!   never calls `malloc` for a node or an entry of its own, and dropping a buffer frees a few
//!   chunks, not a block per key (see the arena's docs for the stalls this avoids). A
//!   consequence used below: the leftmost leaf never changes, and neither does any inner
//!   node's first child, so descending through first children always ends at that leaf.
//! - **No node until the first insert.** An empty delta index holds no node: its root pointer
//!   is null, and lookups and iterations of it end there. The first insert plants the root leaf
//!   with a compare-and-swap on that pointer; an insert that loses the race leaves its leaf
//!   unused in the arena (freed with the tree) and descends into the winner's. A group's buffer
//!   starts empty at every compaction, so at the fanout below an eager first leaf (1.5 KiB per
//!   group) would cost osm's 36K groups about 54 MiB.
//! - **Separators are entries.** An inner node's separator is a pointer to the entry whose key
//!   is the smallest of the right subtree; entries are immutable and immortal, so separators
//!   are too. Inner nodes route `key` to the child after the last separator `<= key`.
//! - **Readers never write shared memory.** A lookup loads the root pointer, takes the root's
//!   version, checks that it is still the root (a root split would otherwise hide the right
//!   half), and descends: it reads the child pointer, takes the child's version, then validates
//!   the parent's version (lock coupling: a split of the child locks the parent, so the child
//!   reached is the right one for the version read). At the leaf it binary-searches the entry
//!   pointers, comparing the keys they point to. A **match needs no validation**: an entry is
//!   created only by the insert that found its key absent under the leaf's lock, so a key has
//!   at most one entry ever, and that entry is never freed. A **miss** is returned only after
//!   the leaf's version validates. Any failure (including an empty slot below the count, which
//!   only a torn read shows) restarts from the root after a [`Backoff`] step. A node never
//!   changes level, so even a torn descent reaches a leaf in at most the root's height steps.
//! - **Scans** read one leaf at a time: its entries and `next` pointer, validated against the
//!   leaf's version, then the next leaf. Leaf ranges only shrink, from the right, by splits, so
//!   every key of the leaves after a validated snapshot is above the snapshot's keys: keys come
//!   out ascending without filtering, and a key present throughout is never skipped (if its
//!   leaf splits after being read, its upper half was in the snapshot already).
//! - **Backward scans** ([`DeltaIndex::iter_rev`], for XIndex-R's reverse scans) descend to
//!   the leaf holding the largest keys within their bound, noting on the way its lower fence
//!   (the separator left of the path's last turn right), read that leaf's keys below the bound,
//!   and then descend again for the keys below the fence. Separators are immortal and a split
//!   divides a leaf's range at a key above its fence, so every key below a fence stays in
//!   leaves below it: each step yields keys below the previous one's, and a key present
//!   throughout is never skipped. Each leaf costs a descent (forward scans follow `next`
//!   links instead), which is cheap for a buffer of a few hundred keys.
//! - **Writers lock only the nodes they change**, by upgrading the versions they read
//!   ([`NodeLock::try_upgrade`]), never by waiting while holding a lock, so writers cannot
//!   deadlock. An insert descends like a lookup and splits every full node it meets on the way
//!   down (eager top-down splitting, as in Leis's OLC B-tree), so the parent of a splitting node
//!   always has room; after a split it restarts. A plain insert locks only its leaf.
//! - **Memory ordering.** Every store of an entry or node pointer is `Release` and every load of
//!   one is `Acquire`, so whoever loads a pointer sees the pointee fully initialised (entries and
//!   new nodes are initialised before they are published, and entries' keys never change).
//!   Counts are `Relaxed`: they are only trusted once the node's version validates
//!   ([`NodeLock`] supplies the fences).
//! - **Fanout.** `FANOUT` is the most children of an inner node (`FANOUT - 1` separators) and
//!   the most entries of a leaf; it defaults to 64, where the reference code has 16. A group's
//!   buffer gathers a few hundred keys between two compactions: three levels at 16, two at 64,
//!   and each level is a miss once the arrays' windows have pushed the buffers out of the caches
//!   (inserts of the `rw` mix at write ratio 0.5 took a sixth less time; the measurement log,
//!   session 31). Loom models use 4 so that a few inserts split.
//!
//! - **Summaries beside the pointers.** Each key slot also holds the key's 64-bit order summary
//!   ([`IndexKey::summary`]: the key itself for `u64`, the first eight bytes of a byte string),
//!   written with the pointer under the node's lock. Descents compare summaries and dereference
//!   an entry only on a tie of a key type whose summary is not the whole key; a leaf match is
//!   always confirmed on the entry's key, so a torn summary can at worst cause a miss that the
//!   leaf's validation then rejects.
//!
//! Costs: a descent touches one node per level and, for byte strings, an entry (and its key's
//! bytes) only on summary ties and for the final match; each key costs one entry (the key plus
//! a 16-byte cell) and one slot (pointer and summary) in a leaf.

use std::cmp;
use std::fmt;
use std::mem;
use std::ops::Bound;
use std::ptr;

use concurrency::arena::Arena;
use concurrency::prefetch;
use concurrency::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use concurrency::{Backoff, NodeLock, NodeWriteGuard, RecordCell, RecordMeta, Restart, Version};
use learned_model::{Key, search};

use crate::xindex::key::IndexKey;

/// A key being searched for with its summary ([`IndexKey::summary`]), computed once per
/// operation and compared at every level.
type Probe<'a, K> = (&'a <K as Key>::Query, u64);

/// The probe of `key`.
fn probe<K: IndexKey>(key: &K::Query) -> Probe<'_, K> {
    (key, K::summary(key))
}

/// A leaf, the version it was read at, and its lower fence (see
/// [`DeltaIndex::find_leaf_within`]).
type FencedLeaf<'a, K, const FANOUT: usize> = (&'a Node<K, FANOUT>, Version, Option<&'a Entry<K>>);

/// One key and its record cell, placed once and never moved or freed before the tree is dropped.
struct Entry<K> {
    key: K,
    cell: RecordCell,
}

impl<K: IndexKey> Entry<K> {
    /// The key in its lookup form.
    fn query(&self) -> &K::Query {
        self.key.borrow()
    }
}

/// A leaf or inner node. Every field a reader may race with a writer on is atomic. The fields
/// a search reads first (lock, count, summaries) come first, in this order, and then a leaf's
/// entry pointers.
#[repr(C)]
struct Node<K, const FANOUT: usize> {
    /// The OLC version lock.
    lock: NodeLock,
    /// Entries in a leaf (at most `FANOUT`), separators in an inner node (at most `FANOUT - 1`).
    count: AtomicUsize,
    /// Set at creation and never changed: a node stays at its level for its whole life.
    is_leaf: bool,
    /// The summary ([`IndexKey::summary`]) of the key in each key slot, stored with it.
    summaries: [AtomicU64; FANOUT],
    /// Leaf: the entries, in key order. Inner: the separators, in key order.
    keys: [AtomicPtr<Entry<K>>; FANOUT],
    /// Inner only: `count + 1` children; child `i` holds the keys in `[keys[i - 1], keys[i])`.
    children: [AtomicPtr<Node<K, FANOUT>>; FANOUT],
    /// Leaf only: the next leaf in key order (null for the last one).
    next: AtomicPtr<Node<K, FANOUT>>,
}

impl<K: IndexKey, const FANOUT: usize> Node<K, FANOUT> {
    fn new(is_leaf: bool) -> Self {
        Self {
            lock: NodeLock::new(),
            count: AtomicUsize::new(0),
            is_leaf,
            summaries: std::array::from_fn(|_| AtomicU64::new(0)),
            keys: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            children: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The count, as of some version (readers validate it afterwards).
    fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The raw pointer in key slot `i` (a writer moving it, or [`Drop`] freeing it).
    fn entry_ptr(&self, i: usize) -> *mut Entry<K> {
        self.keys[i].load(Ordering::Acquire)
    }

    /// Key slot `i`: its pointer and summary (a writer moving it).
    fn slot(&self, i: usize) -> (*mut Entry<K>, u64) {
        (self.entry_ptr(i), self.summaries[i].load(Ordering::Relaxed))
    }

    /// Stores `(entry, summary)` in key slot `i` (write-locked node, or one not yet published).
    fn set_slot(&self, i: usize, (entry, summary): (*mut Entry<K>, u64)) {
        self.summaries[i].store(summary, Ordering::Relaxed);
        self.keys[i].store(entry, Ordering::Release);
    }

    /// The raw pointer in child slot `i`.
    fn child_ptr(&self, i: usize) -> *mut Self {
        self.children[i].load(Ordering::Acquire)
    }

    /// The entry in key slot `i`; `None` for an empty slot (or an index past the array), which
    /// only a reader racing a writer can meet below `count`.
    fn entry(&self, i: usize) -> Option<&Entry<K>> {
        let entry = self.keys.get(i)?.load(Ordering::Acquire);
        // SAFETY: every non-null pointer ever stored in a key slot is an entry of this tree,
        // placed in its arena, fully initialised, before a `Release` store published it (this
        // `Acquire` load makes that initialisation visible); its key is never written again and
        // its cell is all atomics. Entries are freed only when the tree's arenas are dropped,
        // with the tree, which cannot happen while `self`, borrowed from the tree, is alive.
        unsafe { entry.as_ref() }
    }

    /// The node in child slot `i`, its search fields and key slots requested from memory
    /// together; `None` as for [`entry`](Self::entry). Most children are leaves (a buffer's
    /// tree has two levels), whose key slots hold the entry a match returns and the pointers
    /// an insert shifts: left to the search's end, they were one more miss (`rw` at write
    /// ratio 0.5: inserts about a seventh faster, the measurement log, session 31).
    fn child(&self, i: usize) -> Option<&Self> {
        let child = self.children.get(i)?.load(Ordering::Acquire);
        for offset in (0..mem::offset_of!(Self, children)).step_by(prefetch::LINE) {
            prefetch::line(child.cast::<u8>().wrapping_add(offset));
        }
        // SAFETY: every non-null pointer ever stored in a child slot is a node of this tree,
        // placed in its arena, initialised, before a `Release` store published it; nodes are
        // never retired and are freed only with the tree's arenas, as for `entry`.
        unsafe { child.as_ref() }
    }

    /// The next leaf, if any.
    fn next_leaf(&self) -> Option<&Self> {
        let next = self.next.load(Ordering::Acquire);
        // SAFETY: `next` only ever holds null or a published leaf of this tree (see `child`).
        unsafe { next.as_ref() }
    }

    /// How the key in slot `i` compares with `key` (of summary `summary`): by the summaries,
    /// and on a tie by the entry's key unless the summaries are the keys. Fails on an empty
    /// slot, which only a reader of an inconsistent state can meet.
    fn compare(&self, i: usize, key: &K::Query, summary: u64) -> Result<cmp::Ordering, Restart> {
        match self.summaries[i].load(Ordering::Relaxed).cmp(&summary) {
            cmp::Ordering::Equal if !K::SUMMARY_IS_KEY => {
                Ok(self.entry(i).ok_or(Restart)?.query().cmp(key))
            }
            order => Ok(order),
        }
    }

    /// The number of leading keys among the first `count` that are below the probed key (with
    /// `inclusive`, at or below it). A reader must validate before trusting the result.
    ///
    /// Where the summaries are the keys (`u64`), the search is branch-free: each step picks the
    /// next base with a conditional move, and its loop runs a number of times set by `count`
    /// alone, so the six comparisons of a full node cost no mispredicted branches. Against the
    /// branching search, `rw` at write ratio 0.5 (10M lognormal keys, 2 threads, nine alternated
    /// pairs): inserts 574 against 600 ns (medians of six), the mix ahead in seven pairs of nine
    /// by about 1.5%, near the runs' spread (the measurement log, session 33).
    fn partition_point(
        &self,
        count: usize,
        (key, summary): Probe<'_, K>,
        inclusive: bool,
    ) -> Result<usize, Restart> {
        if K::SUMMARY_IS_KEY {
            // `count` never exceeds the node's slots; capping it keeps the slice in bounds.
            let summaries = &self.summaries[..count.min(FANOUT)];
            return Ok(search::branchless_partition_point(summaries, |at| {
                let at = at.load(Ordering::Relaxed);
                if inclusive {
                    at <= summary
                } else {
                    at < summary
                }
            }));
        }
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = self.compare(mid, key, summary)?;
            if order.is_lt() || (inclusive && order.is_eq()) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Inner node: the slot of the child whose range holds the probed key.
    fn child_index(&self, probe: Probe<'_, K>) -> Result<usize, Restart> {
        self.partition_point(self.count(), probe, true)
    }

    /// Leaf: the position of the probed key among the first `count` entries, and its entry if
    /// present (confirmed on the entry's own key).
    fn search(
        &self,
        count: usize,
        probe @ (key, summary): Probe<'_, K>,
    ) -> Result<(usize, Option<&Entry<K>>), Restart> {
        let pos = self.partition_point(count, probe, false)?;
        // Only an equal summary can be the key's entry: a different one needs no dereference.
        if pos < count && self.summaries[pos].load(Ordering::Relaxed) == summary {
            let entry = self.entry(pos).ok_or(Restart)?;
            if entry.query() == key {
                return Ok((pos, Some(entry)));
            }
        }
        Ok((pos, None))
    }

    /// Leaf: reads into `out` its entries (from the first `>= start` if `start` is given; the
    /// rest of `out` cleared) and returns the next leaf, all as of `version`, which it
    /// validates.
    fn read_leaf<'a>(
        &'a self,
        version: Version,
        start: Option<Probe<'_, K>>,
        out: &mut [Option<&'a Entry<K>>; FANOUT],
    ) -> Result<Option<&'a Self>, Restart> {
        let count = self.count();
        let from = match start {
            Some(start) => self.partition_point(count, start, false)?,
            None => 0,
        };
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = if from + i < count {
                Some(self.entry(from + i).ok_or(Restart)?)
            } else {
                None
            };
        }
        let next = self.next_leaf();
        self.lock.validate(version)?;
        Ok(next)
    }

    /// The number of leading keys among the first `count` that lie within the upper bound
    /// `end`. A reader must validate before trusting the result.
    fn within(&self, count: usize, end: Bound<Probe<'_, K>>) -> Result<usize, Restart> {
        match end {
            Bound::Included(probe) => self.partition_point(count, probe, true),
            Bound::Excluded(probe) => self.partition_point(count, probe, false),
            Bound::Unbounded => Ok(count),
        }
    }

    /// Leaf: reads into `out` its entries within `end` and returns how many, as of `version`,
    /// which it validates.
    fn read_leaf_within<'a>(
        &'a self,
        version: Version,
        end: Bound<Probe<'_, K>>,
        out: &mut [Option<&'a Entry<K>>; FANOUT],
    ) -> Result<usize, Restart> {
        let taken = self.within(self.count(), end)?;
        for (i, slot) in out.iter_mut().enumerate().take(taken) {
            *slot = Some(self.entry(i).ok_or(Restart)?);
        }
        self.lock.validate(version)?;
        Ok(taken.min(FANOUT))
    }

    /// Leaf, write-locked and not full: puts `entry` (with its summary) at `pos`, shifting the
    /// entries after it.
    fn insert_entry(&self, pos: usize, entry: (*mut Entry<K>, u64)) {
        let count = self.count();
        for i in (pos..count).rev() {
            self.set_slot(i + 1, self.slot(i));
        }
        self.set_slot(pos, entry);
        self.count.store(count + 1, Ordering::Relaxed);
    }

    /// Inner node, write-locked and not full: puts `separator` at `pos` and `child` right of it.
    fn insert_child(&self, pos: usize, separator: (*mut Entry<K>, u64), child: *mut Self) {
        let count = self.count();
        for i in (pos..count).rev() {
            self.set_slot(i + 1, self.slot(i));
            self.children[i + 2].store(self.child_ptr(i + 1), Ordering::Release);
        }
        self.set_slot(pos, separator);
        self.children[pos + 1].store(child, Ordering::Release);
        self.count.store(count + 1, Ordering::Relaxed);
    }

    /// Write-locked and full: keeps the keys (and children) below `mid` and moves the rest
    /// into a new right sibling placed in `nodes`, returned unpublished except through a leaf's
    /// `next`. The key at `mid` is the separator: a leaf's right sibling starts with it, an inner
    /// node hands it to its parent.
    fn split_off(&self, mid: usize, nodes: &Arena<Self>) -> *mut Self {
        let count = self.count();
        let right = Self::new(self.is_leaf);
        if self.is_leaf {
            for (to, from) in (mid..count).enumerate() {
                right.set_slot(to, self.slot(from));
            }
            right.count.store(count - mid, Ordering::Relaxed);
            right
                .next
                .store(self.next.load(Ordering::Acquire), Ordering::Release);
        } else {
            for (to, from) in (mid + 1..count).enumerate() {
                right.set_slot(to, self.slot(from));
            }
            for (to, from) in (mid + 1..=count).enumerate() {
                right.children[to].store(self.child_ptr(from), Ordering::Release);
            }
            right.count.store(count - mid - 1, Ordering::Relaxed);
        }
        let right = ptr::from_ref(nodes.alloc(right)).cast_mut();
        if self.is_leaf {
            self.next.store(right, Ordering::Release);
        }
        self.count.store(mid, Ordering::Relaxed);
        right
    }
}

/// What an insert attempt found.
enum Step<'a, K, const FANOUT: usize> {
    /// The key is present.
    Found(&'a Entry<K>),
    /// The key is absent; its leaf is write-locked and has room at `pos`.
    Vacant {
        leaf: &'a Node<K, FANOUT>,
        pos: usize,
        guard: NodeWriteGuard<'a>,
    },
    /// The tree grew (its root leaf planted, or a full node on the way split); start again.
    Grown,
}

/// A group's delta index (XIndex §3.5.1): a concurrent ordered map from keys to
/// [`RecordCell`]s, built as an optimistic-lock-coupling B+-tree whose entries are never removed
/// and never move, so a returned `&RecordCell` keeps its address for the life of the index (the
/// merge phase of a compaction stores these addresses as pointer records).
///
/// All methods take `&self` and may run on any number of threads. The cells are XIndex
/// records: the caller reads them optimistically ([`RecordCell::read`]) and updates, removes or
/// revives them under their lock; the index itself only inserts.
///
/// `FANOUT` is the most children of an inner node and the most entries of a leaf (at least 4;
/// 64 by default, four times the reference code's: see the module docs).
///
/// ```
/// use range_index::xindex::DeltaIndex;
///
/// let buffer = DeltaIndex::<u64>::new();
/// let (cell, inserted) = buffer.get_or_insert(7, 70);
/// assert!(inserted);
/// assert_eq!(cell.read().1, 70);
///
/// // A second insert finds the entry; updates go through the cell's lock.
/// let (same, inserted) = buffer.get_or_insert(7, 71);
/// assert!(!inserted && std::ptr::eq(cell, same));
/// same.lock().set_value(72);
/// assert_eq!(buffer.get(&7).map(|c| c.read().1), Some(72));
///
/// // Removing marks the cell; the entry stays and `len` does not go down.
/// cell.lock().set_removed(true);
/// assert!(buffer.get(&7).is_some_and(|c| c.read().0.is_removed()));
/// assert_eq!(buffer.len(), 1);
/// ```
pub struct DeltaIndex<K: IndexKey, const FANOUT: usize = 64> {
    /// The root node, null until the first insert; replaced (never freed) when the root splits.
    root: AtomicPtr<Node<K, FANOUT>>,
    /// Every entry, which owns its key.
    entries: Arena<Entry<K>>,
    /// Every node.
    nodes: Arena<Node<K, FANOUT>>,
}

/// Entries of a delta index's first arena chunk; chunks double up to [`MAX_ENTRY_CHUNK`].
const FIRST_ENTRY_CHUNK: usize = 8;

/// The most entries of one arena chunk (24 KiB for `u64` keys).
const MAX_ENTRY_CHUNK: usize = 1024;

/// The most nodes of one arena chunk (24 KiB at the default fanout and `u64` keys); the first
/// chunk holds the first leaf alone.
const MAX_NODE_CHUNK: usize = 16;

impl<K: IndexKey, const FANOUT: usize> DeltaIndex<K, FANOUT> {
    /// An empty delta index (no node until the first insert).
    pub fn new() -> Self {
        const {
            assert!(FANOUT >= 4, "a delta index needs a fanout of at least 4");
        }
        Self {
            root: AtomicPtr::new(ptr::null_mut()),
            entries: Arena::new(FIRST_ENTRY_CHUNK, MAX_ENTRY_CHUNK),
            nodes: Arena::new(1, MAX_NODE_CHUNK),
        }
    }

    /// The cell of `key`, if `key` was inserted; removed entries included (the caller reads the
    /// cell's flags).
    ///
    /// Optimistic: it never writes shared memory and retries while a writer changes the nodes
    /// on its path. The returned reference keeps its address for as long as the index lives.
    pub fn get(&self, key: &K::Query) -> Option<&RecordCell> {
        let mut backoff = Backoff::new();
        loop {
            match self.try_get(probe::<K>(key)) {
                Ok(found) => return found.map(|entry| &entry.cell),
                Err(Restart) => backoff.snooze(),
            }
        }
    }

    /// The cell of `key`, inserting `key` with a fresh live cell holding `value` if it is
    /// absent; the flag is true iff this call inserted it.
    ///
    /// Two concurrent calls for the same absent key insert it once: the other call returns the
    /// same cell with `false`. An existing entry is returned as it is, even if removed: updating
    /// or reviving it under its lock is the caller's business. The insert is the linearization
    /// point of XIndex's "insert into buffer".
    pub fn get_or_insert(&self, key: K, value: u64) -> (&RecordCell, bool) {
        let mut backoff = Backoff::new();
        let summary = K::summary(key.borrow());
        loop {
            match self.find_or_lock((key.borrow(), summary)) {
                Ok(Step::Found(entry)) => return (&entry.cell, false),
                Ok(Step::Vacant { leaf, pos, guard }) => {
                    let cell = RecordCell::new(RecordMeta::new(), value);
                    let entry = self.entries.alloc(Entry { key, cell });
                    leaf.insert_entry(pos, (ptr::from_ref(entry).cast_mut(), summary));
                    guard.unlock();
                    return (&entry.cell, true);
                }
                Ok(Step::Grown) => {}
                Err(Restart) => backoff.snooze(),
            }
        }
    }

    /// Requests the lines an insert of a new key reads first: the root node's and the entry
    /// arena's newest chunk head. A caller that will insert after other misses (XIndex's put
    /// searches the array first) takes these in the same round instead of two more rounds.
    #[inline]
    pub fn request_insert(&self) {
        if let Some(root) = self.root_node() {
            prefetch::slice(std::slice::from_ref(root));
        }
        self.entries.request_alloc();
    }

    /// The number of keys ever inserted; removing (marking cells) does not decrease it. It
    /// counts the entries placed in the arena, so while inserts run it may count one whose
    /// insert has not returned yet: an insert keeps no count of its own (a locked add on the
    /// tree's first line had 16% of the insert's profile samples; the measurement log,
    /// session 31).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True iff no key was ever inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries in key order, removed ones included.
    ///
    /// Read leaf by leaf, each leaf's snapshot validated: keys come out strictly ascending with
    /// no duplicates, every key present for the whole iteration is returned, and a key inserted
    /// meanwhile may or may not be. On a buffer nobody inserts into (XIndex's frozen `buf`), it
    /// is exactly the buffer's contents.
    pub fn iter(&self) -> DeltaIter<'_, K, FANOUT> {
        DeltaIter {
            snapshot: [None; FANOUT],
            pos: 0,
            next_leaf: self.first_leaf(),
        }
    }

    /// As [`iter`](Self::iter), from the first key `>= start`.
    pub fn iter_from(&self, start: &K::Query) -> DeltaIter<'_, K, FANOUT> {
        let mut snapshot = [None; FANOUT];
        let mut backoff = Backoff::new();
        // The first leaf is read at the version its lookup validated, so it is the leaf whose
        // range holds `start`, and every key of the leaves after it is above `start`.
        let start = probe::<K>(start);
        let next_leaf = loop {
            let attempt = self.find_leaf(start).and_then(|found| match found {
                Some((leaf, version)) => leaf.read_leaf(version, Some(start), &mut snapshot),
                None => Ok(None),
            });
            match attempt {
                Ok(next) => break next,
                Err(Restart) => backoff.snooze(),
            }
        };
        DeltaIter {
            snapshot,
            pos: 0,
            next_leaf,
        }
    }

    /// The entries with keys within the upper bound `end`, in descending key order, removed
    /// entries included: as [`iter`](Self::iter) backward (see the module docs, "Backward
    /// scans").
    pub fn iter_rev(&self, end: Bound<&K::Query>) -> DeltaRevIter<'_, K, FANOUT> {
        let mut iter = DeltaRevIter {
            index: self,
            snapshot: [None; FANOUT],
            len: 0,
            fence: None,
        };
        iter.read(end.map(probe::<K>));
        iter
    }

    /// The heap memory of the nodes and entries (their arenas' chunks, unused slots included),
    /// in bytes; memory the keys own (the bytes of a `Vec<u8>` key) is not counted.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.bytes() + self.entries.bytes()
    }

    /// The root, unless no insert has planted it yet.
    fn root_node(&self) -> Option<&Node<K, FANOUT>> {
        let root = self.root.load(Ordering::Acquire);
        // SAFETY: the root is null or a published node of this tree (the `Acquire` load pairs
        // with the `Release` CAS or store that published it), freed only with the tree's arenas.
        unsafe { root.as_ref() }
    }

    /// The leftmost leaf, reached through first children (module docs: neither ever changes);
    /// none while the tree is empty.
    fn first_leaf(&self) -> Option<&Node<K, FANOUT>> {
        let mut node = self.root_node()?;
        while !node.is_leaf {
            node = node
                .child(0)
                .expect("an inner node's first child is set before the node is published");
        }
        Some(node)
    }

    /// Plants the root leaf of an empty tree, unless another insert has planted it meanwhile.
    fn plant_root(&self) {
        let leaf = ptr::from_ref(self.nodes.alloc(Node::new(true))).cast_mut();
        let empty = ptr::null_mut();
        // A lost race leaves `leaf` unused in the arena, freed with the tree.
        let _ = (self.root).compare_exchange(empty, leaf, Ordering::Release, Ordering::Relaxed);
    }

    /// The root and its version, checked to be the root at that version; `None` if the tree
    /// was empty (no root) when the root pointer was read.
    fn read_root(&self) -> Result<Option<(&Node<K, FANOUT>, Version)>, Restart> {
        let Some(root) = self.root_node() else {
            return Ok(None);
        };
        let version = root.lock.read_lock()?;
        // If the root split before `version`, the new root was published before that split
        // unlocked the old one, so this load sees it; if it splits after, `version` is stale.
        if !ptr::eq(self.root.load(Ordering::Acquire), root) {
            return Err(Restart);
        }
        Ok(Some((root, version)))
    }

    /// The leaf whose range holds the probed key, and its version (lock coupling from the
    /// root); `None` for an empty tree.
    fn find_leaf(
        &self,
        probe: Probe<'_, K>,
    ) -> Result<Option<(&Node<K, FANOUT>, Version)>, Restart> {
        let Some((mut node, mut version)) = self.read_root()? else {
            return Ok(None);
        };
        while !node.is_leaf {
            let child = node.child(node.child_index(probe)?).ok_or(Restart)?;
            let child_version = child.lock.read_lock()?;
            node.lock.validate(version)?;
            (node, version) = (child, child_version);
        }
        Ok(Some((node, version)))
    }

    /// The leaf holding the largest keys within the upper bound `end`, its version, and its
    /// lower fence: the separator left of the last child the descent took that was not its
    /// node's first (none for the first leaf), read under the same lock coupling; `None` for an
    /// empty tree.
    fn find_leaf_within(
        &self,
        end: Bound<Probe<'_, K>>,
    ) -> Result<Option<FencedLeaf<'_, K, FANOUT>>, Restart> {
        let Some((mut node, mut version)) = self.read_root()? else {
            return Ok(None);
        };
        let mut fence = None;
        while !node.is_leaf {
            let index = node.within(node.count(), end)?;
            if index > 0 {
                fence = Some(node.entry(index - 1).ok_or(Restart)?);
            }
            let child = node.child(index).ok_or(Restart)?;
            let child_version = child.lock.read_lock()?;
            node.lock.validate(version)?;
            (node, version) = (child, child_version);
        }
        Ok(Some((node, version, fence)))
    }

    fn try_get(&self, probe: Probe<'_, K>) -> Result<Option<&Entry<K>>, Restart> {
        let Some((leaf, version)) = self.find_leaf(probe)? else {
            return Ok(None);
        };
        let (_, found) = leaf.search(leaf.count(), probe)?;
        // A matched entry is the key's only entry, immortal: no validation needed. A miss is
        // only true of a consistent leaf.
        if found.is_none() {
            leaf.lock.validate(version)?;
        }
        Ok(found)
    }

    /// One insert attempt: the key's entry, or its leaf locked with room for it, or the tree
    /// grown on the way (its root leaf planted, or a full node split), after which the caller
    /// restarts.
    fn find_or_lock(&self, probe: Probe<'_, K>) -> Result<Step<'_, K, FANOUT>, Restart> {
        let Some((mut node, mut version)) = self.read_root()? else {
            self.plant_root();
            return Ok(Step::Grown);
        };
        let mut parent = None;
        while !node.is_leaf {
            if node.count() == FANOUT - 1 {
                self.split(parent, node, version)?;
                return Ok(Step::Grown);
            }
            let child = node.child(node.child_index(probe)?).ok_or(Restart)?;
            let child_version = child.lock.read_lock()?;
            node.lock.validate(version)?;
            parent = Some((node, version));
            (node, version) = (child, child_version);
        }
        let count = node.count();
        let (pos, found) = node.search(count, probe)?;
        if let Some(entry) = found {
            return Ok(Step::Found(entry));
        }
        if count == FANOUT {
            self.split(parent, node, version)?;
            return Ok(Step::Grown);
        }
        // The upgrade succeeds only if the leaf is still at `version`: then `pos` and the miss
        // hold, and the leaf still covers `key` (its range only shrinks by a split, which would
        // have changed its version).
        let guard = node.lock.try_upgrade(version)?;
        Ok(Step::Vacant {
            leaf: node,
            pos,
            guard,
        })
    }

    /// Splits the full `node`, read at `version`, under `parent` (read at its version; `None`
    /// when `node` is the root). Fails, changing no node's contents, if either changed since.
    fn split(
        &self,
        parent: Option<(&Node<K, FANOUT>, Version)>,
        node: &Node<K, FANOUT>,
        version: Version,
    ) -> Result<(), Restart> {
        let parent = match parent {
            Some((parent, parent_version)) => {
                Some((parent, parent.lock.try_upgrade(parent_version)?))
            }
            None => None,
        };
        let node_guard = node.lock.try_upgrade(version)?;
        // Both versions held, so `node` is full and `parent` is not (the descent checked both).
        // Everything that can fail is done before the first store.
        let mid = node.count() / 2;
        let separator = node.slot(mid);
        let parent = match parent {
            Some((parent, parent_guard)) => {
                let key = node.entry(mid).ok_or(Restart)?.query();
                Some((
                    parent,
                    parent_guard,
                    parent.child_index((key, separator.1))?,
                ))
            }
            None => None,
        };
        let right = node.split_off(mid, &self.nodes);
        if let Some((parent, parent_guard, slot)) = parent {
            parent.insert_child(slot, separator, right);
            parent_guard.unlock();
        } else {
            // `node` was the root at `version` (`read_root`), and a root changes only when it
            // splits, under its lock, which is held here: the root pointer still holds the
            // pointer to `node`.
            let old_root = self.root.load(Ordering::Acquire);
            let root = Node::new(false);
            root.set_slot(0, separator);
            root.children[0].store(old_root, Ordering::Release);
            root.children[1].store(right, Ordering::Release);
            root.count.store(1, Ordering::Relaxed);
            let root = ptr::from_ref(self.nodes.alloc(root)).cast_mut();
            self.root.store(root, Ordering::Release);
        }
        node_guard.unlock();
        Ok(())
    }
}

impl<K: IndexKey, const FANOUT: usize> Default for DeltaIndex<K, FANOUT> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: IndexKey, const FANOUT: usize> fmt::Debug for DeltaIndex<K, FANOUT> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaIndex")
            .field("len", &self.len())
            .field("fanout", &FANOUT)
            .finish_non_exhaustive()
    }
}

/// An iterator over a [`DeltaIndex`] in key order, from [`DeltaIndex::iter`] or
/// [`DeltaIndex::iter_from`]: yields each key with its cell, removed entries included.
pub struct DeltaIter<'a, K: IndexKey, const FANOUT: usize = 64> {
    /// The validated entries of the current leaf not yet yielded, from `pos` on.
    snapshot: [Option<&'a Entry<K>>; FANOUT],
    pos: usize,
    /// The leaf to read after the snapshot, as of the snapshot's version.
    next_leaf: Option<&'a Node<K, FANOUT>>,
}

impl<'a, K: IndexKey, const FANOUT: usize> Iterator for DeltaIter<'a, K, FANOUT> {
    type Item = (&'a K, &'a RecordCell);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.snapshot.get_mut(self.pos).and_then(Option::take) {
                self.pos += 1;
                return Some((&entry.key, &entry.cell));
            }
            // Ranges of leaves only shrink, from the right, by splits, and a leaf's successor
            // (as of the version that yielded it) starts where the leaf's range ended: every key
            // that is or will be in `leaf` or the leaves after it is above every key yielded so
            // far. A split of a leaf already read moves only keys already yielded (or inserted
            // since) to a sibling this iterator skips; a split of `leaf` leaves its upper half in
            // a sibling reached through `next`.
            let leaf = self.next_leaf.take()?;
            let mut backoff = Backoff::new();
            self.next_leaf = loop {
                let attempt = leaf
                    .lock
                    .read_lock()
                    .and_then(|version| leaf.read_leaf(version, None, &mut self.snapshot));
                match attempt {
                    Ok(next) => break next,
                    Err(Restart) => backoff.snooze(),
                }
            };
            self.pos = 0;
        }
    }
}

/// An iterator over a [`DeltaIndex`] in descending key order, from [`DeltaIndex::iter_rev`]:
/// yields each key with its cell, removed entries included.
pub struct DeltaRevIter<'a, K: IndexKey, const FANOUT: usize = 64> {
    index: &'a DeltaIndex<K, FANOUT>,
    /// The validated entries of the current leaf, the first `len` not yet yielded.
    snapshot: [Option<&'a Entry<K>>; FANOUT],
    len: usize,
    /// The lower fence of the current leaf: the next leaf read holds the keys below it. `None`
    /// once the first leaf is read.
    fence: Option<&'a Entry<K>>,
}

impl<'a, K: IndexKey, const FANOUT: usize> DeltaRevIter<'a, K, FANOUT> {
    /// Reads the leaf holding the largest keys within `end`: its keys within `end` and its
    /// fence, retrying until a read validates.
    fn read(&mut self, end: Bound<Probe<'_, K>>) {
        let mut backoff = Backoff::new();
        loop {
            let attempt = self.index.find_leaf_within(end).and_then(|found| {
                let Some((leaf, version, fence)) = found else {
                    return Ok((0, None));
                };
                let len = leaf.read_leaf_within(version, end, &mut self.snapshot)?;
                Ok((len, fence))
            });
            match attempt {
                Ok((len, fence)) => {
                    (self.len, self.fence) = (len, fence);
                    return;
                }
                Err(Restart) => backoff.snooze(),
            }
        }
    }
}

impl<'a, K: IndexKey, const FANOUT: usize> Iterator for DeltaRevIter<'a, K, FANOUT> {
    type Item = (&'a K, &'a RecordCell);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(len) = self.len.checked_sub(1) {
                self.len = len;
                let entry = self.snapshot[len]
                    .take()
                    .expect("a validated read fills its slots");
                return Some((&entry.key, &entry.cell));
            }
            let fence = self.fence.take()?;
            self.read(Bound::Excluded(probe::<K>(fence.query())));
        }
    }
}

impl<K: IndexKey, const FANOUT: usize> std::iter::FusedIterator for DeltaRevIter<'_, K, FANOUT> {}

impl<K: IndexKey, const FANOUT: usize> fmt::Debug for DeltaRevIter<'_, K, FANOUT> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaRevIter")
            .field("pending_in_leaf", &self.len)
            .field("more_leaves", &self.fence.is_some())
            .finish()
    }
}

impl<K: IndexKey, const FANOUT: usize> fmt::Debug for DeltaIter<'_, K, FANOUT> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pending = self.snapshot.iter().flatten().count();
        f.debug_struct("DeltaIter")
            .field("pending_in_leaf", &pending)
            .field("more_leaves", &self.next_leaf.is_some())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Checks the tree's structure in a quiescent state and returns its height (0: no node).
    fn check<K: IndexKey, const FANOUT: usize>(index: &DeltaIndex<K, FANOUT>) -> usize {
        let Some(root) = index.root_node() else {
            assert_eq!(index.nodes.len(), 0, "an empty tree has no node");
            assert!(index.first_leaf().is_none());
            assert_eq!(index.len(), 0);
            return 0;
        };
        let mut leaves = Vec::new();
        let mut nodes = 0;
        let height = check_node(root, true, None, None, &mut leaves, &mut nodes);
        assert_eq!(nodes, index.nodes.len(), "node count");
        assert!(
            index
                .first_leaf()
                .is_some_and(|first| ptr::eq(leaves[0], first)),
            "the first children lead to the leftmost leaf"
        );
        for pair in leaves.windows(2) {
            assert!(ptr::eq(pair[0].next_leaf().expect("linked"), pair[1]));
        }
        assert!(leaves.last().expect("a leaf").next_leaf().is_none());
        let entries: usize = leaves.iter().map(|leaf| leaf.count()).sum();
        assert_eq!(entries, index.len(), "len counts the entries");
        height
    }

    /// Checks the subtree at `node` (keys in `[lo, hi)`), collecting its leaves in order;
    /// returns its height.
    fn check_node<'a, K: IndexKey, const FANOUT: usize>(
        node: &'a Node<K, FANOUT>,
        is_root: bool,
        lo: Option<&K>,
        hi: Option<&K>,
        leaves: &mut Vec<&'a Node<K, FANOUT>>,
        nodes: &mut usize,
    ) -> usize {
        *nodes += 1;
        let count = node.count();
        let keys: Vec<&K> = (0..count)
            .map(|i| &node.entry(i).expect("live slot").key)
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys ascend");
        if let (Some(lo), Some(first)) = (lo, keys.first()) {
            assert!(lo <= *first);
        }
        if let (Some(hi), Some(last)) = (hi, keys.last()) {
            assert!(*last < hi);
        }
        if node.is_leaf {
            assert!(count <= FANOUT);
            assert!(is_root || count >= FANOUT / 2, "leaves stay half full");
            leaves.push(node);
            return 1;
        }
        assert!(count < FANOUT);
        assert!(count >= 1 && (is_root || count >= (FANOUT - 2) / 2));
        let mut height = None;
        for i in 0..=count {
            let child = node.child(i).expect("live child");
            let first_leaf = leaves.len();
            let lo = if i == 0 { lo } else { Some(keys[i - 1]) };
            let hi = if i == count { hi } else { Some(keys[i]) };
            let h = check_node(child, false, lo, hi, leaves, nodes);
            assert_eq!(*height.get_or_insert(h), h, "leaves at one depth");
            if i > 0 {
                let smallest = leaves[first_leaf].entry_ptr(0);
                assert_eq!(
                    node.entry_ptr(i - 1),
                    smallest,
                    "a separator is the smallest entry of its right subtree"
                );
            }
        }
        height.expect("an inner node has children") + 1
    }

    /// A deterministic permutation-ish key stream (xorshift).
    fn scrambled(n: u64) -> impl Iterator<Item = u64> {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        (0..n).map(move |_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (n * 4)
        })
    }

    fn fill_and_check<const FANOUT: usize>(keys: impl Iterator<Item = u64>) -> usize {
        let index = DeltaIndex::<u64, FANOUT>::new();
        let mut model = std::collections::BTreeMap::new();
        for k in keys {
            let (cell, inserted) = index.get_or_insert(k, k + 1);
            assert_eq!(inserted, model.insert(k, ptr::from_ref(cell)).is_none());
        }
        let height = check(&index);
        for (k, cell) in index.iter() {
            assert!(ptr::eq(cell, model[k]));
        }
        assert!(index.iter().map(|(k, _)| *k).eq(model.keys().copied()));
        height
    }

    #[test]
    fn random_inserts_keep_the_structure() {
        assert!(
            fill_and_check::<16>(scrambled(1000)) >= 3,
            "3 levels at 1000 keys"
        );
        assert!(fill_and_check::<4>(scrambled(1000)) >= 5);
        assert!(fill_and_check::<5>(scrambled(300)) >= 3);
    }

    #[test]
    fn sequential_inserts_keep_the_structure() {
        assert!(fill_and_check::<16>(0..2000) >= 3);
        assert!(fill_and_check::<16>((0..2000).rev()) >= 3);
        assert!(fill_and_check::<4>(0..500) >= 4);
        assert!(fill_and_check::<4>((0..500).rev()) >= 4);
    }

    #[test]
    fn index_and_iterator_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<DeltaIndex<u64>>();
        send_sync::<DeltaIndex<Vec<u8>, 4>>();
        send_sync::<DeltaIter<'static, Vec<u8>>>();
        send_sync::<DeltaRevIter<'static, Vec<u8>>>();
    }

    #[test]
    fn empty_index_has_no_node_until_the_first_insert() {
        let index = DeltaIndex::<Vec<u8>>::default();
        assert_eq!(check(&index), 0);
        assert!(index.is_empty());
        assert!(index.get(b"".as_slice()).is_none());
        assert!(index.iter().next().is_none());
        assert!(index.iter_from(b"a".as_slice()).next().is_none());
        assert!(index.iter_rev(Bound::Unbounded).next().is_none());
        assert!(
            index
                .iter_rev(Bound::Included(b"a".as_slice()))
                .next()
                .is_none()
        );
        assert_eq!(index.memory_bytes(), 0);
        assert!(format!("{index:?}").contains("len: 0"));
        index.request_insert();
        let (cell, inserted) = index.get_or_insert(b"k".to_vec(), 7);
        assert!(inserted && cell.read().1 == 7);
        assert_eq!(check(&index), 1);
        assert!(index.memory_bytes() >= mem::size_of::<Node<Vec<u8>, 64>>());
        assert!(
            index
                .iter_rev(Bound::Unbounded)
                .map(|(k, _)| k.as_slice())
                .eq([b"k".as_slice()])
        );
    }

    #[test]
    fn byte_keys_keep_the_structure() {
        let index = DeltaIndex::<Vec<u8>, 4>::new();
        for k in scrambled(400) {
            let key = k.to_string().into_bytes();
            index.get_or_insert(key[..key.len() / 2].to_vec(), k);
            index.get_or_insert(key, k);
        }
        assert!(check(&index) >= 4);
        assert!(
            index.get(b"".as_slice()).is_some(),
            "the empty key is a key"
        );
    }
}
