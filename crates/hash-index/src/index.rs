//! The index: a fixed root of groups and the public operations (§3.6, Algorithms 8–9; digest
//! §3.18).
//!
//! The root is a placement (learned or hashed, see `model`) over a fixed array of group
//! slots, chosen at construction: [`Config::initial_groups`] slots for an empty index (hashed,
//! since there is nothing to learn yet), `keys / group_size` for a bulk load (learned unless
//! the learned root is badly unbalanced). Groups grow and shrink on their own, so an index
//! that grows from empty to millions of keys resizes many small groups, each quickly and
//! without blocking, instead of one large table. Re-partitioning the root (the paper's root
//! retraining) is not implemented: a workload whose key distribution drifts keeps the root's
//! original routing, and a learned root can then leave groups unbalanced (each still resizes
//! to its own size).
//!
//! Every operation runs online in the index's grace-period domain
//! ([`concurrency::GracePeriod`]); resizes (see `resize`) hold the restructure lock, are the
//! only code that frees groups, and need not be online. The lock is a [`ShareLock`]: each
//! pass holds one [`Share`] of the slots and resizes only the groups there, so the background
//! threads' passes (distinct shares of one split) resize at once; the test hooks hold it
//! exclusively.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use concurrency::prefetch::LOOKUP_BATCH;
use concurrency::share_lock::{ExclusiveGuard, ShareGuard};
use concurrency::striped::StripedCount;
use concurrency::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use concurrency::{Demand, GracePeriod, OnlineGuard, Share, ShareLock, Workers};

use crate::background;
use crate::config::{Config, MAX_GROUPS};
use crate::error::Error;
use crate::group::{Group, Upsert};
use crate::key::HashKey;
use crate::model::{Placement, PlacementKind, Sample, Trained};
use crate::resize::Phase;
use crate::{HashIndex, Stats};

/// XIndex-H: a concurrent learned hash index from keys (`u64` or `Vec<u8>`) to one 64-bit
/// word (Wang et al., ACM TOS 2022, §3.6), with non-blocking resizes.
///
/// Every method takes `&self` and may be called from any number of threads; the operations
/// are those of the [`HashIndex`] trait. Background threads ([`Config::background_threads`])
/// resize groups whose load factor leaves `[lower_load_factor, upper_load_factor]`; no
/// foreground operation ever waits for a resize. They are stopped and joined when the index
/// is dropped. Byte-string keys work the same way with `XIndexH<Vec<u8>>`, queried by `&[u8]`.
///
/// ```
/// use hash_index::{Config, HashIndex, XIndexH};
///
/// let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|i| (i * 10, i)).collect();
/// let index = XIndexH::bulk_load(&pairs, Config::default()).expect("unique keys");
/// assert_eq!(index.get(&420), Some(42));
/// assert_eq!(index.get(&421), None);
///
/// assert_eq!(index.insert(421, 7), None);
/// assert_eq!(index.insert(420, 43), Some(42));
/// assert_eq!(index.remove(&0), Some(0));
/// assert_eq!(index.len(), 10_000);
///
/// let stats = index.stats();
/// assert!(stats.conflict_rate < 0.01); // linear keys: the learned model places them apart
/// assert_eq!(stats.hashed_groups, 0);
/// ```
pub struct XIndexH<K: HashKey> {
    // Declared first so it drops first: its threads hold `inner` and are joined before the
    // last reference to `inner` (whose drop frees the groups) goes away.
    _background: Workers,
    inner: Arc<Inner<K>>,
}

/// The state shared by the index handle and its background threads.
pub(crate) struct Inner<K: HashKey> {
    root: Placement,
    slots: Box<[AtomicPtr<Group<K>>]>,
    grace: GracePeriod,
    config: Config,
    /// Live keys.
    len: StripedCount,
    grows: AtomicU64,
    shrinks: AtomicU64,
    rebuilds: AtomicU64,
    /// Marked by every write that changes the number of keys, so that the background threads
    /// pass when a load factor may have moved (and otherwise only once a second).
    pub(crate) demand: Arc<Demand>,
    /// Held by whoever resizes groups, the only code that frees them: by passes over distinct
    /// shares of the slots, or exclusively by the test hooks.
    restructure: ShareLock,
}

impl<K: HashKey> XIndexH<K> {
    /// An empty index: [`Config::initial_groups`] groups of [`Config::min_buckets`] buckets,
    /// routed by hash.
    pub fn new(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let groups = (0..config.initial_groups)
            .map(|_| empty_group(&config))
            .collect();
        Self::start(
            Placement::hashed(config.initial_groups, 0),
            groups,
            0,
            config,
        )
    }

    /// An index over `pairs` (any order; keys must be unique): `len / group_size` groups,
    /// each with `keys / target_load_factor` buckets, learned or hashed by measured conflicts.
    pub fn bulk_load(pairs: &[(K, u64)], config: Config) -> Result<Self, Error> {
        config.validate()?;
        if pairs.is_empty() {
            return Self::new(config);
        }
        let group_count = pairs.len().div_ceil(config.group_size).clamp(1, MAX_GROUPS);
        let root = Sample::of::<K>(pairs.iter().map(|(k, _)| k.borrow())).train_root(group_count);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); group_count];
        for (i, (key, _)) in pairs.iter().enumerate() {
            members[root.slot::<K>(key.borrow())].push(i);
        }
        let mut groups = Vec::with_capacity(group_count);
        for member in members {
            if member.is_empty() {
                groups.push(empty_group(&config));
                continue;
            }
            let buckets = buckets_for(member.len(), &config);
            let sample = Sample::of::<K>(member.iter().map(|&i| pairs[i].0.borrow()));
            let group = Group::new(sample.train_buckets(buckets, false));
            for &i in &member {
                let (key, value) = &pairs[i];
                match group.upsert(key.borrow(), *value) {
                    Upsert::Done(None) => {}
                    Upsert::Done(Some(_)) => return Err(Error::DuplicateKey { index: i }),
                    Upsert::Frozen(_) => unreachable!("a group under construction is never frozen"),
                }
            }
            groups.push(group);
        }
        Self::start(root, groups, pairs.len(), config)
    }

    fn start(
        root: Placement,
        groups: Vec<Group<K>>,
        len: usize,
        config: Config,
    ) -> Result<Self, Error> {
        let slots = groups
            .into_iter()
            .map(|g| AtomicPtr::new(Box::into_raw(Box::new(g))))
            .collect();
        let demand = Arc::new(Demand::new(config.background_threads));
        let inner = Arc::new(Inner {
            root,
            slots,
            grace: GracePeriod::new(),
            config,
            len: StripedCount::starting_at([len as i64]),
            grows: AtomicU64::new(0),
            shrinks: AtomicU64::new(0),
            rebuilds: AtomicU64::new(0),
            demand,
            restructure: ShareLock::new(),
        });
        let background = background::start(&inner)?;
        Ok(Self {
            _background: background,
            inner,
        })
    }

    /// The values of `keys`, in order, as [`HashIndex::get`] of each would give them (not a
    /// snapshot: each is read at its own moment of the call), with their memory requests
    /// overlapped: every key's group is found and its bucket neighbourhood requested before
    /// the first search runs, [`LOOKUP_BATCH`] keys to an online section. Not in the paper.
    ///
    /// ```
    /// use hash_index::{Config, XIndexH};
    ///
    /// let pairs: Vec<(u64, u64)> = (1..=9).map(|k| (k, k * 10)).collect();
    /// let index = XIndexH::bulk_load(&pairs, Config::default())?;
    /// assert_eq!(index.get_many(&[&3, &42, &9]), [Some(30), None, Some(90)]);
    /// # Ok::<(), hash_index::Error>(())
    /// ```
    pub fn get_many(&self, keys: &[&K::Query]) -> Vec<Option<u64>> {
        let mut values = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(LOOKUP_BATCH) {
            let online = self.inner.grace.enter();
            let homes: Vec<(&Group<K>, usize)> = chunk
                .iter()
                .map(|&key| {
                    let group = self.inner.group_of(key, &online);
                    (group, group.request(key))
                })
                .collect();
            values.extend(
                chunk
                    .iter()
                    .zip(homes)
                    .map(|(&key, (group, b))| group.get_at(b, key)),
            );
        }
        values
    }

    /// The configuration the index was built with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// How the root routes keys to groups.
    pub fn root_kind(&self) -> PlacementKind {
        self.inner.root.kind()
    }

    /// Resizes the group in root slot `slot` now to `buckets` buckets (`None`: by the load
    /// factor target), calling `hook` at each phase boundary (for tests: run foreground
    /// operations inside every phase). Returns false if there is no such slot.
    ///
    /// The hook runs on the resizing thread with the restructure lock held: it must not call
    /// [`maintenance_step`](HashIndex::maintenance_step) or [`quiesce`](HashIndex::quiesce).
    #[doc(hidden)]
    pub fn resize_slot_with(
        &self,
        slot: usize,
        buckets: Option<usize>,
        mut hook: impl FnMut(Phase),
    ) -> bool {
        if slot >= self.inner.slot_count() {
            return false;
        }
        self.inner
            .restructurer()
            .resize(&[(slot, buckets.map(|b| b.max(1)))], &mut hook);
        true
    }

    /// Runs now the pass that background thread `part` of `parts` runs every period when
    /// [`Config::background_threads`] is `parts`: every group of the slots `s` with
    /// `s % parts == part` whose load factor left `[lower_load_factor, upper_load_factor]` is
    /// resized. Several threads calling it with different `part`s of one `parts` resize at the
    /// same time, so an index run with `background_threads: 0` can resize on threads of its
    /// user's own; a call for a share being resized, or for another `parts`, waits for the
    /// passes running (so does any call while the background threads run theirs). True if it
    /// resized anything.
    ///
    /// # Panics
    ///
    /// If `part >= parts`.
    ///
    /// ```
    /// use hash_index::{Config, HashIndex, XIndexH};
    ///
    /// let index = XIndexH::<u64>::new(Config { background_threads: 0, ..Config::default() })
    ///     .expect("valid config");
    /// for key in 0..100_000u64 {
    ///     index.insert(key, key);
    /// }
    /// std::thread::scope(|scope| {
    ///     for part in 0..2 {
    ///         let index = &index;
    ///         scope.spawn(move || while index.resize_share(part, 2) {});
    ///     }
    /// });
    /// assert!(index.stats().max_load_factor <= index.config().upper_load_factor);
    /// ```
    pub fn resize_share(&self, part: usize, parts: usize) -> bool {
        let share = Share::of(part, parts);
        self.inner.maintenance_pass(share)
    }

    /// The number of root slots (for tests).
    #[doc(hidden)]
    pub fn slot_count(&self) -> usize {
        self.inner.slot_count()
    }

    /// The root slot of `key` (for tests).
    #[doc(hidden)]
    pub fn slot_of(&self, key: &K::Query) -> usize {
        self.inner.root.slot::<K>(key)
    }

    /// Checks the invariants of digest §8 (XIndex-H part) and panics with a description of
    /// the first violation (for tests). Call it while no other thread uses the index.
    ///
    /// Checks: no group frozen; no record locked or left a pointer; every record in the
    /// bucket or chain its group's placement gives its key, in the slot the root gives it; at
    /// most one record per key in the whole index; the live records equal
    /// [`len`](HashIndex::len) and each group's live counter.
    #[doc(hidden)]
    pub fn validate(&self) {
        let restructurer = self.inner.restructurer();
        let mut seen = BTreeSet::new();
        let mut live_total = 0usize;
        for slot in 0..self.inner.slot_count() {
            let group = restructurer.group(slot);
            let live = group.check(
                |key| self.inner.root.slot::<K>(key) == slot,
                |key| assert!(seen.insert(key), "a key has two records"),
            );
            assert_eq!(live as i64, group.live(), "slot {slot}: live counter");
            live_total += live;
        }
        assert_eq!(live_total, self.len(), "live records vs len");
    }
}

/// The bucket count for `keys` keys.
pub(crate) fn buckets_for(keys: usize, config: &Config) -> usize {
    ((keys as f64 / config.target_load_factor).ceil() as usize).max(config.min_buckets)
}

fn empty_group<K: HashKey>(config: &Config) -> Group<K> {
    Group::new(Trained::hashed(config.min_buckets, 0))
}

impl<K: HashKey> fmt::Debug for XIndexH<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XIndexH")
            .field("len", &self.len())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<K: HashKey> HashIndex<K> for XIndexH<K> {
    type Iter<'a> = Iter<'a, K>;

    #[inline]
    fn get(&self, key: &K::Query) -> Option<u64> {
        let online = self.inner.grace.enter();
        self.inner.group_of(key, &online).get(key)
    }

    fn insert(&self, key: K, value: u64) -> Option<u64> {
        let online = self.inner.grace.enter();
        let query = key.borrow();
        let mut group = self.inner.group_of(query, &online);
        let old = loop {
            match group.upsert(query, value) {
                Upsert::Done(old) => break old,
                Upsert::Frozen(tmp) => group = tmp,
            }
        };
        if old.is_none() {
            self.inner.keys_changed(1);
        }
        old
    }

    fn update(&self, key: &K::Query, new: impl FnMut(u64) -> u64) -> Option<u64> {
        let online = self.inner.grace.enter();
        self.inner.group_of(key, &online).update(key, new)
    }

    fn remove(&self, key: &K::Query) -> Option<u64> {
        let online = self.inner.grace.enter();
        let old = self.inner.group_of(key, &online).remove(key);
        if old.is_some() {
            self.inner.keys_changed(-1);
        }
        old
    }

    fn len(&self) -> usize {
        // A transiently negative count (a remove counted before its insert) reads as 0.
        self.inner.len.total().max(0) as usize
    }

    fn iter(&self) -> Iter<'_, K> {
        Iter {
            inner: &self.inner,
            slot: 0,
            buffer: Vec::new().into_iter(),
        }
    }

    fn stats(&self) -> Stats {
        let online = self.inner.grace.enter();
        let mut stats = Stats {
            keys: self.len(),
            groups: self.inner.slot_count(),
            min_load_factor: f64::INFINITY,
            grows: self.inner.grows.load(Ordering::Relaxed),
            shrinks: self.inner.shrinks.load(Ordering::Relaxed),
            rebuilds: self.inner.rebuilds.load(Ordering::Relaxed),
            bytes: std::mem::size_of_val(&*self.inner.slots),
            ..Stats::default()
        };
        let (mut live, mut trained) = (0i64, 0.0);
        for slot in 0..self.inner.slot_count() {
            let group = self.inner.group(slot, &online);
            match group.placement_kind() {
                PlacementKind::Learned => stats.learned_groups += 1,
                PlacementKind::Hashed => stats.hashed_groups += 1,
            }
            let load = group.live().max(0) as f64 / group.bucket_count() as f64;
            stats.min_load_factor = stats.min_load_factor.min(load);
            stats.max_load_factor = stats.max_load_factor.max(load);
            stats.buckets += group.bucket_count();
            stats.chain_nodes += group.chain_nodes().max(0) as usize;
            live += group.live().max(0);
            trained += group.trained_conflict_rate() * group.bucket_count() as f64;
            stats.bytes += group.bytes();
        }
        if stats.buckets > 0 {
            stats.load_factor = live as f64 / stats.buckets as f64;
            stats.trained_conflict_rate = trained / stats.buckets as f64;
        }
        if live > 0 {
            stats.conflict_rate = stats.chain_nodes as f64 / live as f64;
        }
        stats
    }

    fn maintenance_step(&self) -> bool {
        self.inner.maintenance_pass(Share::ALL)
    }

    fn quiesce(&self) {
        while self.inner.maintenance_pass(Share::ALL) {}
    }
}

/// The iterator of [`XIndexH::iter`](HashIndex::iter): one group at a time, each read while
/// online and buffered.
pub struct Iter<'a, K: HashKey> {
    inner: &'a Inner<K>,
    slot: usize,
    buffer: std::vec::IntoIter<(K, u64)>,
}

impl<K: HashKey> Iter<'_, K> {
    /// The pairs read from the current group and not yet returned. At 0 the next call reads
    /// the next group: every word returned before was loaded earlier, so a caller that pins
    /// an epoch for the values behind the words may re-pin there.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }
}

impl<K: HashKey> Iterator for Iter<'_, K> {
    type Item = (K, u64);

    fn next(&mut self) -> Option<(K, u64)> {
        loop {
            if let Some(pair) = self.buffer.next() {
                return Some(pair);
            }
            if self.slot >= self.inner.slot_count() {
                return None;
            }
            let online = self.inner.grace.enter();
            let group = self.inner.group(self.slot, &online);
            let mut pairs = Vec::new();
            group.collect(false, &mut pairs);
            if let Some(tmp) = group.tmp() {
                tmp.collect(true, &mut pairs);
            }
            self.buffer = pairs.into_iter();
            self.slot += 1;
        }
    }
}

impl<K: HashKey> fmt::Debug for Iter<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

impl<K: HashKey> Inner<K> {
    /// Counts `delta` keys added (or removed, if negative) and tells the background threads
    /// that a load factor may have moved.
    fn keys_changed(&self, delta: i64) {
        self.len.adjust(delta);
        self.demand.mark();
    }

    /// The number of root slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// How the root routes keys.
    pub(crate) fn root_kind(&self) -> PlacementKind {
        self.root.kind()
    }

    /// The group in `slot`, valid while `online` is.
    #[inline]
    fn group<'a>(&'a self, slot: usize, _online: &'a OnlineGuard<'static>) -> &'a Group<K> {
        let group = self.slots[slot].load(Ordering::Acquire);
        // SAFETY: groups are freed only a grace period after they leave their slot, and this
        // thread is online for the borrow of `_online`.
        unsafe { &*group }
    }

    /// The group `key` routes to, valid while `online` is.
    #[inline]
    fn group_of<'a>(&'a self, key: &K::Query, online: &'a OnlineGuard<'static>) -> &'a Group<K> {
        self.group(self.root.slot::<K>(key), online)
    }

    /// Takes the restructure lock exclusively: every slot's group may be resized.
    pub(crate) fn restructurer(&self) -> Restructurer<'_, K> {
        Restructurer {
            inner: self,
            lock: Lock::Exclusive {
                _guard: self.restructure.exclusive(),
            },
        }
    }

    /// Takes `share` of the restructure lock, next to the holders of the split's other shares:
    /// only the groups of `share` of the slots may be resized.
    pub(crate) fn partial_restructurer(&self, share: Share) -> Restructurer<'_, K> {
        Restructurer {
            inner: self,
            lock: Lock::Shared(self.restructure.share(share)),
        }
    }
}

impl<K: HashKey> Drop for Inner<K> {
    fn drop(&mut self) {
        for slot in self.slots.iter() {
            let group = slot.load(Ordering::Acquire);
            // SAFETY: the index is being dropped, so nothing else refers to it and no resize
            // runs (background threads hold an `Arc`); every slot holds a group from
            // `Box::into_raw`, freed only here or by a resize that replaced it.
            drop(unsafe { Box::from_raw(group) });
        }
    }
}

/// The resizer's protection: the restructure lock, held by the only code that frees groups.
/// An exclusive holder may resize any group; the holders of shares (which the lock admits only
/// distinct, of one split) each reach only the slots of their own [`Share`] (checked by
/// [`group`](Self::group)), so no two of them resize, read or free the same group. The root
/// never changes.
pub(crate) struct Restructurer<'i, K: HashKey> {
    inner: &'i Inner<K>,
    lock: Lock<'i>,
}

/// How a restructurer holds the restructure lock; the guard releases it when dropped.
enum Lock<'i> {
    Exclusive { _guard: ExclusiveGuard<'i> },
    Shared(ShareGuard<'i>),
}

impl<'i, K: HashKey> Restructurer<'i, K> {
    /// The index.
    pub(crate) fn inner(&self) -> &'i Inner<K> {
        self.inner
    }

    /// The slots whose groups this restructurer may resize: every slot when it holds the lock
    /// exclusively.
    fn share(&self) -> Share {
        match &self.lock {
            Lock::Exclusive { .. } => Share::ALL,
            Lock::Shared(guard) => guard.share(),
        }
    }

    /// The group in `slot`, which must be in the restructurer's share; not freed while the
    /// lock is held, except by this restructurer.
    pub(crate) fn group(&self, slot: usize) -> &Group<K> {
        assert!(
            self.share().holds(slot),
            "slot {slot} is outside the restructurer's share"
        );
        let group = self.inner.slots[slot].load(Ordering::Acquire);
        // SAFETY: groups are freed only by a restructurer, which frees a group it unlinked
        // itself only after its last use of it; an exclusive one excludes every other, and
        // one that holds a share reaches only its share's slots (checked above), which no
        // other holder reaches.
        unsafe { &*group }
    }

    /// The slot link itself, for a slot in the restructurer's share.
    pub(crate) fn link(&self, slot: usize) -> &AtomicPtr<Group<K>> {
        assert!(
            self.share().holds(slot),
            "slot {slot} is outside the restructurer's share"
        );
        &self.inner.slots[slot]
    }

    /// Waits for a grace period.
    pub(crate) fn synchronize(&self) {
        self.inner.grace.synchronize();
    }

    /// Counts a finished resize, by its new bucket count against the old.
    pub(crate) fn count_resize(&self, change: std::cmp::Ordering) {
        let counter = match change {
            std::cmp::Ordering::Greater => &self.inner.grows,
            std::cmp::Ordering::Less => &self.inner.shrinks,
            std::cmp::Ordering::Equal => &self.inner.rebuilds,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
