//! The index and its point operations (§3.2, Algorithm 2; digest §3.3–3.5): `get`, `put`
//! (upsert), `update` (a present key only; not in the paper) and `remove` over
//! `data_array → buf → tmp_buf`.
//!
//! The lookup order is the same for every operation, and only the last location can take a new
//! key: `buf` while it is not frozen, `tmp_buf` once a compaction published it. A removed array
//! record is never revived (the put falls through to the delta index), and a frozen `buf` is
//! update-only, so a key never has two live records (invariant I1, §3.2.4). A put that finds
//! `buf` frozen and `tmp_buf` not yet published retries, announcing a quiescent point each
//! time, so barrier B1 (which the publication waits for) is never blocked by it.
//!
//! Every operation runs online in the index's grace-period domain ([`Pinned`]); the
//! restructurer ([`Restructurer`]) holds the restructure lock, is the only code that frees
//! groups, and does not need to be online: nothing it reads can be freed under it. The lock is
//! a [`ShareLock`]: a restructurer holds it exclusively, or holds one [`Share`] of the root
//! slots, next to the holders of the split's other shares, when it only compacts the groups of
//! its share.

use std::collections::HashSet;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::Arc;

use concurrency::prefetch::LOOKUP_BATCH;
use concurrency::share_lock::{ExclusiveGuard, ShareGuard};
use concurrency::striped::StripedCount;
use concurrency::sync::atomic::{AtomicPtr, Ordering};
use concurrency::{Backoff, GracePeriod, OnlineGuard, RecordCell, Share, ShareLock, Workers};

use crate::xindex::background;
use crate::xindex::config::Config;
use crate::xindex::delta::DeltaIndex;
use crate::xindex::error::Error;
use crate::xindex::group::{Group, Models, Records, mean_error, train, train_within};
use crate::xindex::key::IndexKey;
use crate::xindex::policy::CompactionTrigger;
use crate::xindex::record;
use crate::xindex::restructure::{Phase, Restructure};
use crate::xindex::root::Root;
use crate::xindex::scan::Range;
use crate::xindex::stats::Counters;
use crate::{OrderedIndex, Stats};

/// XIndex-R: a concurrent learned ordered index from keys (`u64` or `Vec<u8>`) to one 64-bit
/// word (Wang et al., ACM TOS 2022).
///
/// Every method takes `&self` and may be called from any number of threads; the operations
/// are those of the [`OrderedIndex`] trait. Background threads
/// ([`Config::background_threads`]) compact the groups' delta indexes every
/// [`Config::period`] without blocking foreground operations; they are stopped and joined when
/// the index is dropped. Byte-string keys work the same way with `XIndex<Vec<u8>>`, queried by
/// `&[u8]`.
///
/// ```
/// use range_index::OrderedIndex;
/// use range_index::xindex::{Config, XIndex};
///
/// let pairs: Vec<(u64, u64)> = (0..1_000u64).map(|i| (i * 10, i)).collect();
/// let index = XIndex::bulk_load(&pairs, Config::default()).expect("sorted keys, valid config");
/// assert_eq!(index.get(&420), Some(42));
/// assert_eq!(index.get(&421), None);
///
/// assert_eq!(index.insert(421, 7), None); // a new key goes to the group's delta index
/// assert_eq!(index.insert(420, 43), Some(42)); // an existing key is updated in place
/// assert_eq!(index.remove(&0), Some(0));
/// assert_eq!(index.len(), 1_000);
///
/// assert_eq!(index.scan(&415, 3), vec![(420, 43), (421, 7), (430, 43)]);
/// let tail: Vec<u64> = index.range(9_975..).map(|(key, _)| key).collect();
/// assert_eq!(tail, vec![9_980, 9_990]);
///
/// index.quiesce(); // merges every delta index into its group's array
/// assert_eq!(index.stats().delta_keys, 0);
/// assert_eq!(index.get(&421), Some(7));
/// ```
pub struct XIndex<K: IndexKey> {
    // Declared first so it drops first: its threads hold `inner` and are joined before the
    // last reference to `inner` (whose drop frees the groups) goes away.
    _background: Workers,
    inner: Arc<Inner<K>>,
}

/// The state shared by the index handle and its background threads.
pub(crate) struct Inner<K: IndexKey> {
    root: AtomicPtr<Root<K>>,
    grace: GracePeriod,
    config: Config,
    /// Live keys: a remove may be counted before the insert it removes.
    len: StripedCount,
    counters: Counters,
    /// Held by whoever restructures groups or the root, the only code that frees them:
    /// exclusively, or by partial restructurers of distinct shares of the root slots.
    restructure: ShareLock,
}

impl<K: IndexKey> XIndex<K> {
    /// An empty index: one empty group.
    pub fn new(config: Config) -> Result<Self, Error> {
        config.validate()?;
        let group = Group::new(
            K::min_key(),
            Records::new(Vec::new(), Vec::new(), config.spare_for(0)),
            train::<K>(&[], 1),
            Arc::new(DeltaIndex::new()),
            ptr::null_mut(),
        );
        Self::start(vec![group], 0, config)
    }

    /// An index over `pairs`, which must be sorted by strictly increasing key.
    ///
    /// Keys are split into groups (integers: optimal piecewise-linear segments under
    /// [`Config::error_bound`]; strings: greedy grouping, §3.4.2), at most
    /// [`Config::max_group_size`] keys each, each with the fewest models (up to
    /// [`Config::max_models`]) whose error is within the bound; a group whose models cannot reach
    /// the bound is cut into pieces until they do, as the adjustment policy would split it at run
    /// time (greedy grouping bounds the mean error of one model, the policy the largest errors of
    /// up to `m`). The first group's pivot is the smallest key, so later inserts below the first
    /// key have a group to go to.
    pub fn bulk_load(pairs: &[(K, u64)], config: Config) -> Result<Self, Error> {
        config.validate()?;
        if let Some(i) = pairs.windows(2).position(|w| w[0].0 >= w[1].0) {
            return Err(Error::NotStrictlyIncreasing { index: i + 1 });
        }
        if pairs.is_empty() {
            return Self::new(config);
        }
        let keys: Vec<K> = pairs.iter().map(|(key, _)| key.clone()).collect();
        let initial = K::initial_groups(&keys, &config);
        let keys: Vec<K::Stored> = keys.iter().map(|key| K::to_stored(key.borrow())).collect();
        let mut ranges = Vec::new();
        for range in initial {
            within_bound(&keys, range, &config, &mut ranges);
        }
        let mut keys = keys.into_iter();
        let groups = ranges
            .into_iter()
            .enumerate()
            .map(|(index, (range, models))| {
                let group_keys: Vec<K::Stored> = keys.by_ref().take(range.len()).collect();
                let cells = pairs[range].iter().map(|(_, v)| record::live(*v)).collect();
                let pivot = if index == 0 {
                    K::min_key()
                } else {
                    K::from_stored(&group_keys[0])
                };
                let spare = config.spare_for(group_keys.len());
                Group::new(
                    pivot,
                    Records::new(group_keys, cells, spare),
                    models,
                    Arc::new(DeltaIndex::new()),
                    ptr::null_mut(),
                )
            })
            .collect();
        Self::start(groups, pairs.len(), config)
    }

    fn start(groups: Vec<Group<K>>, len: usize, config: Config) -> Result<Self, Error> {
        for group in &groups {
            group.enable_appends();
        }
        let groups = groups.into_iter().map(Group::into_node).collect();
        let root = Root::new(groups, None, &config);
        let inner = Arc::new(Inner {
            root: AtomicPtr::new(Box::into_raw(Box::new(root))),
            grace: GracePeriod::new(),
            config,
            len: StripedCount::starting_at([len as i64]),
            counters: Counters::new(),
            restructure: ShareLock::new(),
        });
        let background = background::start(&inner)?;
        Ok(Self {
            _background: background,
            inner,
        })
    }

    /// Up to `n` live pairs with keys in `range`, ascending, read in one online section: one
    /// chunk of [`range`](OrderedIndex::range), for callers that read what the values point
    /// to under a protection of their own.
    ///
    /// ```
    /// use range_index::OrderedIndex;
    /// use range_index::xindex::{Config, XIndex};
    ///
    /// let pairs: Vec<(u64, u64)> = (1..=9).map(|k| (k, k * 10)).collect();
    /// let index = XIndex::bulk_load(&pairs, Config::default())?;
    /// assert_eq!(index.scan_range(3..7, 2), [(3, 30), (4, 40)]);
    /// assert_eq!(index.scan_range_rev(3..7, 2), [(6, 60), (5, 50)]);
    /// # Ok::<(), range_index::xindex::Error>(())
    /// ```
    pub fn scan_range<R: RangeBounds<K::Query>>(&self, range: R, n: usize) -> Vec<(K, u64)> {
        self.inner.scan(range.start_bound(), range.end_bound(), n)
    }

    /// Up to `n` live pairs with keys in `range`, the largest first, read in one online
    /// section (see [`scan_range`](Self::scan_range)).
    pub fn scan_range_rev<R: RangeBounds<K::Query>>(&self, range: R, n: usize) -> Vec<(K, u64)> {
        self.inner
            .scan_rev(range.start_bound(), range.end_bound(), n)
    }

    /// The values of `keys`, in order, as [`OrderedIndex::get`] of each would give them (not
    /// a snapshot: each is read at its own moment of the call), with their memory requests
    /// overlapped: every key's group is located and the lines its search will read requested
    /// before the first search runs. Not in the paper; faster per key than single gets once
    /// the index outgrows the caches. The keys are taken [`LOOKUP_BATCH`] at a time, each
    /// chunk in an online section of its own (the requested lines must still be cached when
    /// their search comes, and a long section would hold back the restructurers' barriers).
    ///
    /// ```
    /// use range_index::xindex::{Config, XIndex};
    ///
    /// let pairs: Vec<(u64, u64)> = (1..=9).map(|k| (k, k * 10)).collect();
    /// let index = XIndex::bulk_load(&pairs, Config::default())?;
    /// assert_eq!(index.get_many(&[&3, &42, &9]), [Some(30), None, Some(90)]);
    /// # Ok::<(), range_index::xindex::Error>(())
    /// ```
    pub fn get_many(&self, keys: &[&K::Query]) -> Vec<Option<u64>> {
        let mut values = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(LOOKUP_BATCH) {
            let pinned = self.inner.pin();
            let root = pinned.root();
            let aimed: Vec<_> = chunk
                .iter()
                .map(|&key| {
                    let group = root.locate(key);
                    (group, group.request_record(key))
                })
                .collect();
            values.extend(
                chunk.iter().zip(aimed).map(|(&key, (group, aim))| {
                    lookup_from(group, key, group.aimed_record(key, aim))
                }),
            );
        }
        values
    }

    /// The last `n` live pairs with keys at or below `end`, the largest first, with the keys
    /// in the records' own form (see [`scan_stored`](Self::scan_stored)).
    pub fn scan_rev_stored(&self, end: &K::Query, n: usize) -> Vec<(K::Stored, u64)> {
        self.inner
            .scan_rev_as(Bound::Unbounded, Bound::Included(end), n, K::to_stored)
    }

    /// [`OrderedIndex::scan`] with the keys in the records' own form ([`IndexKey::Stored`]:
    /// `u64` itself; for byte strings a [`ByteKey`](crate::xindex::ByteKey), inline up to 30
    /// bytes), which spares a scan of short byte-string keys one allocation per key.
    pub fn scan_stored(&self, start: &K::Query, n: usize) -> Vec<(K::Stored, u64)> {
        self.inner
            .scan_as(Bound::Included(start), Bound::Unbounded, n, K::to_stored)
    }

    /// The configuration the index was built with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Runs `change` on the group in root slot `slot` now, whatever the policy says, calling
    /// `hook` at each phase boundary (for tests: run foreground operations inside every
    /// phase). Returns false, having done nothing, if there is no such group or the change does
    /// not apply to it (a model split at [`Config::max_models`] or at one model per key, a
    /// model merge of one model, a group split without a key above the pivot, a group merge
    /// of the last group). [`Restructure::UpdateRoot`] ignores `slot`.
    ///
    /// The hook runs on the restructuring thread with the restructure lock held: it must not
    /// call [`maintenance_step`](OrderedIndex::maintenance_step) or
    /// [`quiesce`](OrderedIndex::quiesce), and must not wait for anything that needs the
    /// change to progress (at [`Phase::Frozen`] a put of a new key waits for `tmp_buf`: run it
    /// on another thread).
    #[doc(hidden)]
    pub fn restructure_slot_with(
        &self,
        slot: usize,
        change: Restructure,
        mut hook: impl FnMut(Phase),
    ) -> bool {
        self.inner.restructurer().force(slot, change, &mut hook)
    }

    /// Runs now the compaction pass that background thread `part` of `parts` runs every
    /// period when [`Config::background_threads`] is `parts`: every group of the root slots
    /// `s` with `s % parts == part` whose delta index holds more keys than
    /// [`Config::compaction_threshold`] and [`Config::compaction_ratio`] allow is merged into
    /// its array, and so is every group of theirs whose array records are mostly removed.
    /// Several threads calling it with different `part`s of one `parts` compact at
    /// the same time, so an index run with `background_threads: 0` can do its compactions on
    /// threads of its user's own; a call for a share that is being compacted, or for another
    /// `parts`, waits for the passes running (so does any call while the background threads
    /// run theirs). True if it compacted anything.
    ///
    /// # Panics
    ///
    /// If `part >= parts`.
    ///
    /// ```
    /// use range_index::OrderedIndex;
    /// use range_index::xindex::{Config, XIndex};
    ///
    /// let config = Config { background_threads: 0, max_group_size: 64, ..Config::default() };
    /// let pairs: Vec<(u64, u64)> = (0..1_000u64).map(|i| (i * 2, i)).collect();
    /// let index = XIndex::bulk_load(&pairs, config).expect("sorted keys, valid config");
    /// for key in (1..2_000u64).step_by(2) {
    ///     index.insert(key, key);
    /// }
    /// std::thread::scope(|scope| {
    ///     for part in 0..2 {
    ///         let index = &index;
    ///         scope.spawn(move || index.compact_share(part, 2));
    ///     }
    /// });
    /// assert_eq!(index.stats().delta_keys, 0);
    /// ```
    pub fn compact_share(&self, part: usize, parts: usize) -> bool {
        let share = Share::of(part, parts);
        self.inner
            .compaction_pass(CompactionTrigger::of(&self.inner.config), share)
    }

    /// The number of root slots (for tests: the valid arguments of
    /// [`restructure_slot_with`](Self::restructure_slot_with)).
    #[doc(hidden)]
    pub fn slot_count(&self) -> usize {
        self.inner.pin().root().slot_count()
    }

    /// The index pinned for the calling thread (unit tests of the crate's internals).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pin(&self) -> Pinned<'_, K> {
        self.inner.pin()
    }

    /// Checks the structural invariants of digest §8 and panics with a description of the
    /// first violation (for tests). Call it while no other thread uses the index: it takes the
    /// restructure lock, but foreground operations running meanwhile could make its
    /// cross-record checks fail spuriously.
    ///
    /// Checks: pivots strictly increasing and equal to the groups'; array keys strictly
    /// increasing, inside their group's range, and found by the models at their position;
    /// delta keys ascending and inside the group's range; no record locked or left a pointer;
    /// no group frozen or with a `tmp_buf`; at most one live record per key; the live count
    /// equals [`len`](OrderedIndex::len).
    #[doc(hidden)]
    pub fn validate(&self) {
        self.inner.restructurer().validate();
    }
}

impl<K: IndexKey> fmt::Debug for XIndex<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XIndex")
            .field("len", &self.len())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<K: IndexKey> OrderedIndex<K> for XIndex<K> {
    type Range<'a> = Range<'a, K>;

    fn get(&self, key: &K::Query) -> Option<u64> {
        let pinned = self.inner.pin();
        lookup(pinned.root().locate(key), key)
    }

    fn insert(&self, key: K, value: u64) -> Option<u64> {
        let mut pinned = self.inner.pin();
        let mut backoff = Backoff::new();
        let sequential = self.inner.config.sequential_inserts;
        let mut key = key;
        let old = loop {
            let group = pinned.root().locate(key.borrow());
            match put(group, key, value, sequential) {
                Put::Done(old) => break old,
                // `buf` is frozen and `tmp_buf` not yet published: let barrier B1 pass.
                Put::Retry(returned) => key = returned,
            }
            pinned.quiescent();
            backoff.snooze();
        };
        if old.is_none() {
            self.inner.len.adjust(1);
        }
        old
    }

    fn update(&self, key: &K::Query, new: impl FnMut(u64) -> u64) -> Option<u64> {
        let pinned = self.inner.pin();
        update(pinned.root().locate(key), key, new)
    }

    fn remove(&self, key: &K::Query) -> Option<u64> {
        let pinned = self.inner.pin();
        let old = remove(pinned.root().locate(key), key);
        if old.is_some() {
            self.inner.len.adjust(-1);
        }
        old
    }

    fn scan(&self, start: &K::Query, n: usize) -> Vec<(K, u64)> {
        self.inner.scan(Bound::Included(start), Bound::Unbounded, n)
    }

    /// The live pairs in `range`, ascending, fetched in chunks (see [`Range`]).
    fn range<R: RangeBounds<K::Query>>(&self, range: R) -> Range<'_, K> {
        Range::new(&self.inner, range)
    }

    fn len(&self) -> usize {
        // A transiently negative count (a remove counted before its insert) reads as 0.
        self.inner.live_count().max(0) as usize
    }

    fn stats(&self) -> Stats {
        let mut stats = self.inner.pin().stats();
        stats.keys = self.len();
        self.inner.counters.fill(&mut stats);
        stats
    }

    fn maintenance_step(&self) -> bool {
        self.inner
            .maintenance_pass(CompactionTrigger::of(&self.inner.config), Share::ALL)
    }

    fn quiesce(&self) {
        while self
            .inner
            .maintenance_pass(CompactionTrigger::ALWAYS, Share::ALL)
        {}
    }
}

/// Appends to `out` the groups of `range` (of `keys`) with their models: the range itself if
/// its models (at most `m`) stay within `e`, else its equal pieces, each refined the same way.
/// A model's error grows about as the square root of the keys it covers (exactly so on random
/// keys), so `(error / e)²` pieces are cut at once instead of halving level by level.
fn within_bound<K: IndexKey>(
    keys: &[K::Stored],
    range: std::ops::Range<usize>,
    config: &Config,
    out: &mut Vec<(std::ops::Range<usize>, Models<K>)>,
) {
    let bound = config.error_bound.max(1);
    let models = train_within::<K>(&keys[range.clone()], bound, config.max_models);
    let error = mean_error::<K>(&models);
    if range.len() / 2 < bound || error <= bound as f64 {
        out.push((range, models));
        return;
    }
    let pieces = ((error / bound as f64).powi(2).ceil() as usize).clamp(2, range.len() / bound);
    for piece in 0..pieces {
        let start = range.start + piece * range.len() / pieces;
        let end = range.start + (piece + 1) * range.len() / pieces;
        within_bound::<K>(keys, start..end, config, out);
    }
}

/// The value of `key` in `group`, looking in `data_array`, then `buf`, then `tmp_buf`.
#[inline]
pub(crate) fn lookup<K: IndexKey>(group: &Group<K>, key: &K::Query) -> Option<u64> {
    lookup_from(group, key, group.record(key))
}

/// [`lookup`] with the array's record of `key` already found (`None`: not in the array).
#[inline]
fn lookup_from<K: IndexKey>(
    group: &Group<K>,
    key: &K::Query,
    array: Option<&RecordCell>,
) -> Option<u64> {
    if let Some(cell) = array
        && let Some(value) = record::read(cell)
    {
        return Some(value);
    }
    if let Some(cell) = group.buf().get(key)
        && let Some(value) = record::read(cell)
    {
        return Some(value);
    }
    group.tmp_buf()?.get(key).and_then(record::read)
}

/// The outcome of one attempt of a put.
enum Put<K> {
    /// The put took effect; the key's previous value, if it was live.
    Done(Option<u64>),
    /// `buf` is frozen and `tmp_buf` not yet published: the key, for the next attempt.
    Retry(K),
}

/// One attempt of `put(key, value)` on `group` (Algorithm 2), with the sequential-insert path
/// when `sequential` is set. The key moves into the delta index or the array that takes it
/// (no copy), or comes back with [`Put::Retry`].
#[inline]
fn put<K: IndexKey>(group: &Group<K>, key: K, value: u64, sequential: bool) -> Put<K> {
    let aim = group.request_record(key.borrow());
    // A new key goes on into the delta index: its first lines are requested while the array's
    // arrive (an overwrite leaves them unused).
    if !sequential && !group.is_frozen() {
        group.buf().request_insert();
    }
    if let Some(cell) = group.aimed_record(key.borrow(), aim)
        && let Some(old) = record::update(cell, &mut |_| value)
    {
        return Put::Done(Some(old));
    }
    let key = if sequential {
        match put_sequential(group, key, value) {
            Ok(done) => return done,
            Err(key) => key,
        }
    } else if !group.is_frozen() {
        return Put::Done(upsert(group.buf(), key, value));
    } else {
        key
    };
    // Frozen: update only; a removed entry is not revived (a live copy may follow).
    if let Some(cell) = group.buf().get(key.borrow())
        && let Some(old) = record::update(cell, &mut |_| value)
    {
        return Put::Done(Some(old));
    }
    match group.tmp_buf() {
        Some(tmp) => Put::Done(upsert(tmp, key, value)),
        None => Put::Retry(key),
    }
}

/// The sequential-insert path (§3.5.2; digest §3.14): under the group's append lock, which
/// every insert of a new key into the group takes when the hint is set, the key is appended to
/// the array if it is above the last key and absent from `buf`, or else put into `buf`. Under
/// the lock no other insert of a new key runs, so the two places never both take the key (I1).
/// `Err` with the key when `buf` is frozen (the caller goes on with its frozen path; the check
/// under the lock orders the append before barrier B1). A node that a
/// restructure is still building does not append: a replaced node may insert into its `buf`
/// without the lock until the restructure's last barrier.
fn put_sequential<K: IndexKey>(group: &Group<K>, key: K, value: u64) -> Result<Put<K>, K> {
    let appending = group.records().lock_appends();
    if group.is_frozen() {
        return Err(key);
    }
    if !group.appends_enabled() {
        return Ok(Put::Done(upsert(group.buf(), key, value)));
    }
    if let Some(cell) = group.record(key.borrow())
        && let Some(old) = record::update(cell, &mut |_| value)
    {
        return Ok(Put::Done(Some(old)));
    }
    if group.buf().get(key.borrow()).is_none()
        && group
            .records()
            .append(&appending, key.borrow(), value)
            .is_ok()
    {
        return Ok(Put::Done(None));
    }
    Ok(Put::Done(upsert(group.buf(), key, value)))
}

/// Inserts or updates `key` in the insertable delta index `delta`, reviving a removed entry.
fn upsert<K: IndexKey>(delta: &DeltaIndex<K>, key: K, value: u64) -> Option<u64> {
    let (cell, inserted) = delta.get_or_insert(key, value);
    if inserted {
        None
    } else {
        record::upsert(cell, value)
    }
}

/// Replaces the value of a live `key` in `group` by `new` of it; never inserts (see
/// [`write_live`]).
fn update<K: IndexKey>(
    group: &Group<K>,
    key: &K::Query,
    mut new: impl FnMut(u64) -> u64,
) -> Option<u64> {
    write_live(group, key, |cell| record::update(cell, &mut new))
}

/// Removes `key` from `group`; never inserts (see [`write_live`]).
fn remove<K: IndexKey>(group: &Group<K>, key: &K::Query) -> Option<u64> {
    write_live(group, key, record::remove)
}

/// Runs `write` (a record function that changes only a live record and returns its old value)
/// on `key`'s records in the same order as [`lookup`], until one holds the key live: a removed
/// record in the array may have a live copy in a delta index. A write that never inserts needs
/// no retry while `buf` is frozen.
fn write_live<K: IndexKey>(
    group: &Group<K>,
    key: &K::Query,
    mut write: impl FnMut(&RecordCell) -> Option<u64>,
) -> Option<u64> {
    if let Some(cell) = group.record(key)
        && let Some(old) = write(cell)
    {
        return Some(old);
    }
    if let Some(cell) = group.buf().get(key)
        && let Some(old) = write(cell)
    {
        return Some(old);
    }
    group.tmp_buf()?.get(key).and_then(write)
}

impl<K: IndexKey> Inner<K> {
    /// Marks the calling thread online for a foreground operation.
    pub(crate) fn pin(&self) -> Pinned<'_, K> {
        Pinned {
            inner: self,
            guard: self.grace.enter(),
        }
    }

    /// Takes the restructure lock exclusively.
    pub(crate) fn restructurer(&self) -> Restructurer<'_, K> {
        Restructurer {
            inner: self,
            lock: Lock::Exclusive {
                _guard: self.restructure.exclusive(),
            },
        }
    }

    /// Takes `share` of the restructure lock, to compact the groups of that share of the root
    /// slots; the holders of the split's other shares may hold theirs meanwhile.
    pub(crate) fn partial_restructurer(&self, share: Share) -> Restructurer<'_, K> {
        Restructurer {
            inner: self,
            lock: Lock::Shared {
                _guard: self.restructure.share(share),
            },
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Counts one finished structural change.
    pub(crate) fn count(&self, change: Restructure) {
        self.counters.count(change);
    }

    /// The live-key counter, as a signed number.
    pub(crate) fn live_count(&self) -> i64 {
        self.len.total()
    }
}

impl<K: IndexKey> Drop for Inner<K> {
    fn drop(&mut self) {
        let root = self.root.load(Ordering::Acquire);
        // SAFETY: the index is being dropped, so this is the only reference to it, and no
        // background thread runs any more (they hold an `Arc` to it); `root` came from
        // `Box::into_raw` and is freed only here.
        let root = unsafe { Box::from_raw(root) };
        // In structural order, so that drops are deterministic (loom replays them).
        let mut seen = HashSet::new();
        let mut groups = Vec::new();
        for slot in 0..root.slot_count() {
            let mut group = root.link(slot).load(Ordering::Acquire);
            while !group.is_null() && seen.insert(group) {
                groups.push(group);
                // SAFETY: exclusive access; every reachable group is allocated until freed
                // below, once (deduplicated by `seen`).
                group = unsafe { &*group }.next_ptr();
            }
        }
        for group in groups {
            // SAFETY: `group` came from `Group::into_node`, is reachable (so not freed by a
            // restructurer) and appears once in the list.
            unsafe { Group::free(group) };
        }
    }
}

/// A foreground operation's protection: online in the index's grace-period domain, so no
/// root or group it reaches is freed until it goes offline or passes a quiescent point.
pub(crate) struct Pinned<'i, K: IndexKey> {
    inner: &'i Inner<K>,
    guard: OnlineGuard<'static>,
}

impl<K: IndexKey> Pinned<'_, K> {
    /// The current root; it and everything reached from it live as long as the borrow.
    pub(crate) fn root(&self) -> &Root<K> {
        let root = self.inner.root.load(Ordering::Acquire);
        // SAFETY: roots are freed only a grace period after being replaced, and this thread is
        // online for the lifetime of `&self` (a quiescent point needs `&mut self`).
        unsafe { &*root }
    }

    /// Announces a quiescent point; needs `&mut self`, so no reference obtained through
    /// [`root`](Self::root) survives it.
    pub(crate) fn quiescent(&mut self) {
        self.guard.quiescent();
    }
}

/// The restructurer's protection: the restructure lock, held by the only code that frees
/// groups and roots.
///
/// An exclusive restructurer may change anything. A partial one only compacts the groups of its
/// [`Share`] of the root slots: those reached from its slots, through their `next` chains. The
/// lock admits partial holders only of distinct shares of one split, and never next to an
/// exclusive one, so the root, its slots' partition and the chains stay as they are while they
/// work (chains are changed by group splits and merges, and both are exclusive); the chains of
/// two slots never share a group, so two partial restructurers never reach, change or free the
/// same group.
pub(crate) struct Restructurer<'i, K: IndexKey> {
    inner: &'i Inner<K>,
    lock: Lock<'i>,
}

/// How a restructurer holds the restructure lock.
enum Lock<'i> {
    Exclusive {
        _guard: ExclusiveGuard<'i>,
    },
    /// One share, next to the restructurers of the split's other shares: only compactions run
    /// (they change no chain and not the root).
    Shared {
        _guard: ShareGuard<'i>,
    },
}

impl<'i, K: IndexKey> Restructurer<'i, K> {
    /// The index.
    pub(crate) fn inner(&self) -> &'i Inner<K> {
        self.inner
    }

    /// The current root; nothing reachable from it is freed while the lock is held, except
    /// by this restructurer (or, for a partial one, by the restructurers of other shares, in
    /// their own slots' chains).
    pub(crate) fn root(&self) -> &Root<K> {
        let root = self.inner.root.load(Ordering::Acquire);
        // SAFETY: roots are freed only by an exclusive restructurer, which the lock, however
        // this one holds it, excludes.
        unsafe { &*root }
    }

    /// Publishes `new` as the root and returns the old one, which the caller frees with
    /// [`retire_root`](Self::retire_root) after a grace period. Exclusive restructurers only.
    pub(crate) fn replace_root(&self, new: Root<K>) -> *mut Root<K> {
        assert!(
            matches!(self.lock, Lock::Exclusive { .. }),
            "only an exclusive restructurer replaces the root"
        );
        self.inner
            .root
            .swap(Box::into_raw(Box::new(new)), Ordering::AcqRel)
    }

    /// Frees a root that [`replace_root`](Self::replace_root) returned.
    ///
    /// # Safety
    ///
    /// `root` came from `replace_root`, is freed once, a grace period has passed since it was
    /// replaced, and the restructurer holds no reference into it.
    pub(crate) unsafe fn retire_root(&self, root: *mut Root<K>) {
        // SAFETY: roots are published from `Box::into_raw`; by the contract no operation can
        // still hold this one and this is its only release.
        drop(unsafe { Box::from_raw(root) });
    }

    /// The group held by `link` (a root slot or a group's `next`), unless it is NULL. A partial
    /// restructurer passes only links of its own slots' chains.
    pub(crate) fn group_at<'a>(&'a self, link: &'a AtomicPtr<Group<K>>) -> Option<&'a Group<K>> {
        let group = link.load(Ordering::Acquire);
        // SAFETY: `link` belongs to the structure this restructurer reached, and groups are
        // freed only by a restructurer: an exclusive one excludes every other, and a partial
        // one reaches only its own slots' chains, whose groups no other restructurer holding
        // the lock can reach or free (see the type's comment). It frees a group it unlinked
        // itself only after its last use of it.
        (!group.is_null()).then(|| unsafe { &*group })
    }

    /// Waits for a grace period: every operation online now has finished or passed a
    /// quiescent point when it returns.
    pub(crate) fn synchronize(&self) {
        self.inner.grace.synchronize();
        self.inner.counters.count_grace_period();
    }
}
