//! A group (§2.3 `group_t`, §3.2 `get_position`): a sorted array of version-locked records
//! indexed by 1..`m` linear models, a delta index `buf` for inserts of new keys, and the
//! compaction state `buf_frozen` / `tmp_buf` (§3.2.1).
//!
//! The records ([`Records`]) are shared through an [`Arc`], so a model split can clone the
//! group node and share them (§3.3, digest §3.9); with the sequential-insert hint they have
//! spare capacity that appends fill (§3.5.2), beyond the models' training range. Model `i`
//! covers an even slice of the array, starting at the position stored with it; a lookup picks
//! the model with the largest start key `<=` the key.
//! A group whose every record was removed at compaction has no records and no models.
//!
//! # Lifetime of groups
//!
//! Group nodes are published as raw pointers (root slots, `next` chains) made by
//! [`Group::into_node`], which places them on huge pages like the groups' arrays: a lookup's
//! first miss after the root is its group's node, and on data sets that need many groups (osm:
//! 36K nodes, 14 MiB) the nodes no longer fit the caches, so each would also miss the TLB. A
//! `&Group` is only ever obtained from a [`Root`](crate::xindex::root::Root) or another group
//! that the caller reached while *protected*: online in the index's grace-period domain, or
//! holding the restructure lock (the only code that frees groups, and only a grace period after
//! unlinking them; a holder of one share of it reaches only the groups of its own root slots,
//! which no other holder frees), or owning the index. That is the invariant the `unsafe` blocks
//! below rely on; every such reference is borrowed from the protection, so it cannot outlive
//! it.

use std::mem::size_of;
use std::ptr;
use std::sync::Arc;

use concurrency::RecordCell;
use concurrency::large_array;
use concurrency::prefetch;
use concurrency::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use learned_model::{KeyModel, search};
use smallvec::SmallVec;

use crate::xindex::correction;
use crate::xindex::delta::DeltaIndex;
use crate::xindex::key::{IndexKey, tied_run};
pub(crate) use crate::xindex::records::Records;
use crate::xindex::records::{Bases, Prefix};

/// Where a lookup of one key searches a group's trained keys ([`Group::request_record`]).
pub(crate) struct Aim<'g, K: IndexKey> {
    trained: Prefix<'g, K>,
    /// The model's slice, where the key is searched in it and the key's hint ([`Group::place`]);
    /// or the trained keys' end, when the key lies above them.
    place: Result<(ModelSlice<'g, K>, usize, K::Hint), usize>,
}

/// A model, the trained keys it covers and its corrections, if its group keeps them:
/// `(start, end, model, corrections)`.
type ModelSlice<'g, K> = (
    usize,
    usize,
    &'g <K as learned_model::Key>::Model,
    Option<&'g correction::Table>,
);

/// How many records on each side of a model's prediction a lookup requests with the key
/// window: a key's actual error is mostly well under the model's bound (`e` = 32), and 25
/// cells of 16 bytes are 7 cache lines. Measured on 9M lognormal and uniform keys, a radius
/// of 8 to 16 took about 100 ns off a 500 ns lookup; one record (radius 0) rarely held the key,
/// and 32 was slower again.
const RECORD_PREFETCH_RADIUS: usize = 12;

/// How many keys (hints, for byte strings, whose key slots are requested as around any
/// prediction) and cells on each side of a corrected prediction ([`correction`]) a lookup
/// requests and searches first: within 8 positions for 99% of 10M lognormal keys, 2 to 3 lines
/// of keys and 3 to 4 of cells (`lookup` at 2 threads, alternated with the model's window:
/// lognormal 9–20% and uniform 5–18% faster; the measurement log, session 27).
const CORRECTED_KEY_RADIUS: usize = 8;
const CORRECTED_CELL_RADIUS: usize = 6;

/// How many key slots on each side of a model's prediction a lookup of a hinted (byte-string)
/// key requests with the hint window: its search runs on the hints, but it ends by comparing
/// the key at the position found, whose 32-byte slot would otherwise be a miss of its own
/// after the hints' (4 slots either way are 4 or 5 cache lines). On the word list at 1 thread
/// this took read-only lookups from 1.01 to 1.16 Mops/s (medians of 5 alternated runs).
const KEY_PREFETCH_RADIUS: usize = 4;

/// The longest run of equal hints that a group search compares key by key; a longer run is
/// left to the model's search (16 keys are 16 slots of 32 bytes: 8 cache lines).
const MAX_HINT_RUN: usize = 16;

/// How many models a group node holds inline (the paper's `m`, the default): a lookup then
/// reads its model from the node it already reached, instead of following one more pointer.
const INLINE_MODELS: usize = 4;

/// A group's models: `(start, model)`, model `i` covering `keys[start_i..start_{i+1}]`.
/// They also record how many keys they were trained on: the sequential-insert path appends
/// keys beyond those, which the models do not cover.
///
/// Beside them sit the summaries ([`IndexKey::summary`]) of each model's first key and of the
/// last trained key, so choosing a model reads this struct, not the keys' cache lines.
pub(crate) struct Models<K: IndexKey> {
    list: ModelList<K>,
    /// The summary of `keys[start_i]`, one per model.
    first_summaries: SmallVec<[u64; INLINE_MODELS]>,
    /// The summary of the last trained key (0 when none was trained).
    last_summary: u64,
    trained: usize,
    /// Each model's corrections ([`correction`]), or none.
    corrections: Box<[correction::Table]>,
}

impl<K: IndexKey> Clone for Models<K> {
    fn clone(&self) -> Self {
        Self {
            list: self.list.clone(),
            first_summaries: self.first_summaries.clone(),
            last_summary: self.last_summary,
            trained: self.trained,
            corrections: self.corrections.clone(),
        }
    }
}

impl<K: IndexKey> std::ops::Deref for Models<K> {
    type Target = [(usize, K::Model)];

    fn deref(&self) -> &Self::Target {
        &self.list
    }
}

/// One group of XIndex-R.
pub(crate) struct Group<K: IndexKey> {
    pivot: K,
    records: Arc<Records<K>>,
    /// The addresses of `records`' arrays: a lookup of a trained key reaches its window
    /// through them and the models, without reading `records` itself.
    bases: Bases<K>,
    /// `(start, model)`: model `i` covers `keys[start_i..start_{i+1}]`.
    models: Models<K>,
    buf: Arc<DeltaIndex<K>>,
    buf_frozen: AtomicBool,
    /// Whether the sequential-insert path may append to the records through this node: not
    /// before the restructure that built the node is over, while a replaced node can still
    /// insert into this node's `buf` without the append lock (§3.5.2: "disabled during split,
    /// merge and compaction").
    appendable: AtomicBool,
    /// Null, or `Arc::into_raw` of the delta index that buffers inserts during a compaction
    /// (set once, after barrier B1); released when the group is dropped.
    tmp_buf: AtomicPtr<DeltaIndex<K>>,
    /// A group created by a split that the root does not index yet (§3.3), or null.
    next: AtomicPtr<Group<K>>,
}

impl<K: IndexKey> Group<K> {
    /// A group with pivot `pivot` over `records` (keys strictly increasing and `>= pivot`,
    /// except in the first group), with `models` trained over them (see [`train`]).
    pub(crate) fn new(
        pivot: K,
        mut records: Records<K>,
        models: Models<K>,
        buf: Arc<DeltaIndex<K>>,
        next: *mut Group<K>,
    ) -> Self {
        records.index_hints();
        Self::from_parts(pivot, Arc::new(records), models, buf, false, next)
    }

    fn from_parts(
        pivot: K,
        records: Arc<Records<K>>,
        models: Models<K>,
        buf: Arc<DeltaIndex<K>>,
        frozen: bool,
        next: *mut Group<K>,
    ) -> Self {
        assert!(
            models.trained <= records.keys().len(),
            "models are trained on a prefix of their records"
        );
        Self {
            pivot,
            bases: records.bases(),
            records,
            models,
            buf,
            buf_frozen: AtomicBool::new(frozen),
            appendable: AtomicBool::new(false),
            tmp_buf: AtomicPtr::new(ptr::null_mut()),
            next: AtomicPtr::new(next),
        }
    }

    /// Moves the node to its own memory ([`large_array::into_raw`]: on the huge heap where it
    /// serves) and returns the pointer that root slots and `next` links publish; release it
    /// with [`Group::free`].
    pub(crate) fn into_node(self) -> *mut Self {
        large_array::into_raw(self)
    }

    /// Drops a node and frees its memory.
    ///
    /// # Safety
    ///
    /// `node` came from [`Group::into_node`], is released once, and nothing can reach it any
    /// more.
    pub(crate) unsafe fn free(node: *mut Self) {
        // SAFETY: by the function's contract.
        unsafe { large_array::drop_raw(node) }
    }

    /// A new node for this group with other `models` over the same records and delta index
    /// (model split and merge, digest §3.9): the two nodes share the records, so updates
    /// through either reach the same cells.
    pub(crate) fn with_models(&self, models: Models<K>) -> Self {
        debug_assert!(
            !self.is_frozen() && self.tmp_buf().is_none(),
            "no compaction runs while models are retrained"
        );
        let node = Self::from_parts(
            self.pivot.clone(),
            Arc::clone(&self.records),
            models,
            Arc::clone(&self.buf),
            false,
            self.next_ptr(),
        );
        // Both nodes take the same append lock, so the old one cannot race an append.
        if self.appends_enabled() {
            node.enable_appends();
        }
        node
    }

    /// Whether appends through this node are allowed.
    pub(crate) fn appends_enabled(&self) -> bool {
        self.appendable.load(Ordering::Acquire)
    }

    /// Allows appends through this node: at creation by a bulk load, or by the restructurer
    /// once no replaced node can reach this node's `buf` any more (after its last barrier).
    pub(crate) fn enable_appends(&self) {
        self.appendable.store(true, Ordering::Release);
    }

    /// A frozen view of this group's records, models and delta index, responsible for the
    /// keys from `pivot` on and followed by `next` (the logical step of a group split,
    /// Algorithm 4 lines 1–5).
    pub(crate) fn frozen_view(&self, pivot: K, next: *mut Group<K>) -> Self {
        Self::from_parts(
            pivot,
            Arc::clone(&self.records),
            self.models.clone(),
            Arc::clone(&self.buf),
            true,
            next,
        )
    }

    /// The smallest key of the group's range (minus infinity for the first group).
    pub(crate) fn pivot(&self) -> &K {
        &self.pivot
    }

    /// The array's keys, strictly increasing.
    #[inline]
    pub(crate) fn keys(&self) -> &[K::Stored] {
        self.records.keys()
    }

    /// The array's records, one per key.
    #[inline]
    pub(crate) fn cells(&self) -> &[RecordCell] {
        self.records.cells()
    }

    /// The records, for the sequential-insert path.
    pub(crate) fn records(&self) -> &Records<K> {
        &self.records
    }

    /// How many keys were appended since the models were trained.
    pub(crate) fn appended(&self) -> usize {
        self.keys().len() - self.models.trained
    }

    /// The records the models were trained on.
    #[inline]
    fn trained(&self) -> Prefix<'_, K> {
        // SAFETY: `bases` come from `self.records`, which `self` keeps alive; `from_parts`
        // checked that the models' keys are at most the length the records had published then,
        // and that length only grows.
        unsafe { self.bases.prefix(self.models.trained) }
    }

    /// The tie hints of the keys the models were trained on, as the node reads them (none
    /// where the records keep none), for checks.
    pub(crate) fn trained_tie_hints(&self) -> &[K::Hint] {
        self.trained().tie_hints
    }

    /// The models and the position each starts at.
    pub(crate) fn models(&self) -> &[(usize, K::Model)] {
        &self.models
    }

    /// The models' corrections ([`correction`]): one table per model, or none.
    pub(crate) fn corrections(&self) -> &[correction::Table] {
        &self.models.corrections
    }

    /// Where to search for `key` among the trained `keys`: `Ok((start, end, model,
    /// corrections))`, the slice of them and the model responsible for it; or `Err(from)` when
    /// `key` lies above the trained keys (or nothing was trained), so its lower bound is at
    /// `from` or among the keys appended from there on (§3.5.2: a group's models do not cover
    /// its appended keys, whose prefixes may even differ from the trained keys' common prefix).
    #[inline]
    fn model_for(&self, keys: &[K::Stored], key: &K::Query) -> Result<ModelSlice<'_, K>, usize> {
        let models = &self.models;
        let trained = keys.len();
        let summary = K::summary(key);
        // How the key at `pos`, whose summary is `at`, compares with `key`: by the summaries,
        // and by the keys only when the summaries tie and do not decide.
        let order = |pos: usize, at: u64| match at.cmp(&summary) {
            std::cmp::Ordering::Equal if !K::SUMMARY_IS_KEY => K::query(&keys[pos]).cmp(key),
            decided => decided,
        };
        if trained == 0 || order(trained - 1, models.last_summary).is_lt() {
            return Err(trained);
        }
        let mut chosen = 0;
        for (i, (start, _)) in models.iter().enumerate().skip(1) {
            if order(*start, models.first_summaries[i]).is_le() {
                chosen = i;
            } else {
                break;
            }
        }
        let Some((start, model)) = self.models.get(chosen) else {
            return Err(0);
        };
        let end = self.models.get(chosen + 1).map_or(trained, |m| m.0);
        Ok((*start, end, model, self.models.corrections.get(chosen)))
    }

    /// The first position of `keys[start..end]` (a model's slice) whose key is `>= key`,
    /// relative to `start`, by a binary search of the window around `predicted` (widened when
    /// the key lies beyond it): on the hints when the key type has them (the keys themselves
    /// only on a tie), else on the keys. Its steps are conditional moves, not branches on the
    /// keys it waits for, so the next lookup's misses can be issued meanwhile (an exponential
    /// search from the prediction branched on each probe: 10M keys, 1 thread, 275 → 239 ns a
    /// get on lognormal keys, 430 → 380 on osm; the measurement log, session 38).
    #[inline]
    fn model_lower_bound(
        trained: &Prefix<'_, K>,
        found @ (start, end, model, _): ModelSlice<'_, K>,
        predicted: usize,
        key: &K::Query,
        hint: K::Hint,
    ) -> usize {
        let slice = &trained.keys[start..end];
        if !K::HINTED {
            let window = Self::search_window(found, predicted);
            return search::lower_bound_in_by(slice, window, |k| K::query(k) < key);
        }
        let hints = &trained.hints[start..end];
        let window = Self::search_window(found, predicted);
        let pos = search::lower_bound_in_by(hints, window.clone(), |&h| h < hint);
        // Every hint before `pos` is below `hint`, so its key is below `key`; a greater hint at
        // `pos` means a greater key. Equal hints leave the order to the keys, and only the
        // keys of the run of equal hints from `pos` can be compared with `key`: a short run
        // (words sharing eight bytes) is searched directly, in a few neighbouring slots; a long
        // one (keys sharing a long prefix) by the model.
        if hints.get(pos) != Some(&hint) {
            return pos;
        }
        // A run of one (keys that differ in their first eight bytes): one key comparison,
        // without searching for the run's end.
        if hints.get(pos + 1) != Some(&hint) {
            return pos + usize::from(K::query(&slice[pos]) < key);
        }
        let run_end =
            search::lower_bound_in_by(hints, pos..window.end.max(pos + 1), |&h| h <= hint);
        // Records that keep tie hints narrow the run on them first. A key placed below its
        // model's prefix, with the smallest hint, may lie below the records' prefix too, and
        // then its bytes past the hint are no tie hint: runs of the smallest hint are left to
        // the keys. (A key placed above its model's prefix lies below the next model's keys,
        // so within the records' prefix: where the model's keys end in a run of the largest
        // hint, that is the key's own hint too, and its tie hint valid.)
        let ties = trained.tie_hints.get(start..end).unwrap_or_default();
        let run = if ties.is_empty() || hint == K::Hint::default() {
            pos..run_end
        } else {
            tied_run(ties, pos..run_end, K::tie_hint(key, trained.hint_skip))
        };
        if run.len() > MAX_HINT_RUN {
            return K::stored_lower_bound(model, slice, key);
        }
        run.start + slice[run].partition_point(|k| K::query(k) < key)
    }

    /// The first array position whose key is `>= key` (`keys().len()` if none).
    #[inline]
    pub(crate) fn lower_bound(&self, key: &K::Query) -> usize {
        let trained = self.trained();
        match self.model_for(trained.keys, key) {
            Ok(found @ (start, ..)) => {
                let (predicted, hint) = Self::place(&trained, found, key);
                start + Self::model_lower_bound(&trained, found, predicted, key, hint)
            }
            Err(from) => self.appended_lower_bound(from, key),
        }
    }

    /// Where to search for `key` in the slice of the model `found` chose for it (the model's
    /// prediction, corrected where the group keeps corrections), and the hint to search with.
    /// A key its model predicts starts with the prefix that the model's keys share, which holds
    /// the prefix the records' hints skip (every key of the records shares that one), so its
    /// hint compares with theirs. A key outside the model's prefix is
    /// searched for at the slice's first position with the smallest hint (below the prefix) or
    /// at its last with the largest (above it): hints that tie with those are settled by the
    /// keys, so the search ends at the slice's start or end, as it must.
    #[inline]
    fn place(
        trained: &Prefix<'_, K>,
        (start, end, model, corrections): ModelSlice<'_, K>,
        key: &K::Query,
    ) -> (usize, K::Hint) {
        let word = K::hint(key, 0);
        let at = match K::predict(model, key, word) {
            Ok(at) => corrections.map_or(at, |table| correction::apply(table, at, end - start)),
            Err(std::cmp::Ordering::Less) => return (0, K::Hint::default()),
            Err(_) => return (end - start - 1, K::MAX_HINT),
        };
        match trained.hint_skip {
            0 => (at, word),
            skip => (at, K::hint(key, skip)),
        }
    }

    /// The positions of a model's slice where a search from `predicted` starts, relative to
    /// the slice (the search widens past them when the key lies beyond): the few nearest a
    /// corrected prediction, else the model's error window.
    #[inline]
    fn search_window(
        (start, end, model, corrections): ModelSlice<'_, K>,
        predicted: usize,
    ) -> std::ops::Range<usize> {
        let len = end - start;
        match corrections {
            Some(_) => {
                predicted.saturating_sub(CORRECTED_KEY_RADIUS)
                    ..predicted.saturating_add(CORRECTED_KEY_RADIUS + 1).min(len)
            }
            None => model.bounds().window(predicted, len),
        }
    }

    /// The first position from `from` on (the trained keys' end) whose key is `>= key`.
    fn appended_lower_bound(&self, from: usize, key: &K::Query) -> usize {
        from + self.keys()[from..].partition_point(|k| K::query(k) < key)
    }

    /// The array's record of `key`, if the array holds it (`get_position`).
    #[inline]
    pub(crate) fn record(&self, key: &K::Query) -> Option<&RecordCell> {
        self.aimed_record(key, self.request_record(key))
    }

    /// Where a lookup of `key` searches the trained keys, its lines requested: the model's
    /// prediction, or the trained keys' end when `key` lies above them. A batch of lookups
    /// aims every key first, so that their misses overlap, then finds each record with
    /// [`Group::aimed_record`].
    #[inline]
    pub(crate) fn request_record(&self, key: &K::Query) -> Aim<'_, K> {
        let trained = self.trained();
        let place = self.model_for(trained.keys, key).map(|found| {
            let (predicted, hint) = Self::place(&trained, found, key);
            Self::request_lines(&trained, found, predicted);
            (found, predicted, hint)
        });
        Aim { trained, place }
    }

    /// The array's record of `key`, searched where `aim` (this group's, for `key`) points.
    #[inline]
    pub(crate) fn aimed_record<'g>(
        &'g self,
        key: &K::Query,
        aim: Aim<'g, K>,
    ) -> Option<&'g RecordCell> {
        let Aim { trained, place } = aim;
        debug_assert!(
            std::ptr::eq(trained.keys.as_ptr(), self.trained().keys.as_ptr()),
            "an aim is searched in the records it was made for"
        );
        let (found @ (start, ..), predicted, hint) = match place {
            Ok(place) => place,
            Err(from) => return self.appended_record(from, key),
        };
        let pos = start + Self::model_lower_bound(&trained, found, predicted, key, hint);
        if K::HINTED {
            // A different hint is a different key: no need to touch the key's slot.
            if trained.hints.get(pos) != Some(&hint) {
                return None;
            }
            // The cell may lie beyond those requested around the prediction: request it before
            // the key comparison below (the tie's search has brought the key's slot in).
            prefetch::line(&trained.cells[pos]);
        }
        trained
            .keys
            .get(pos)
            .is_some_and(|k| K::query(k) == key)
            .then(|| &trained.cells[pos])
    }

    /// Requests the lines a search around `predicted` reads: the model's window (of the hints,
    /// or of the keys) and the cells nearest the prediction; around a corrected prediction, the
    /// few keys and cells nearest it.
    ///
    /// The lines at the prediction itself go first: they are the likeliest to hold the key
    /// and its cell, and a core tracks only so many outstanding misses (a window and its cells
    /// are up to 15 lines for `u64` keys, about 20 with byte strings' hints and key slots), so
    /// requested last they could wait for lines the search never reads. The window's and the
    /// cells' requests that follow name those lines again, one instruction each, which keeps
    /// them plain ranges (ordering the whole window outward from the prediction measured the
    /// same). Single-threaded gets of 9M keys (a scratch probe, alternated runs): lognormal
    /// 370–405 ns → 356–380, osm 514–572 → 481–552; the harness's `lookup` at 2 threads gained
    /// 1–2% on lognormal and osm, `strings` on the word list 2–5%.
    #[inline]
    fn request_lines(
        trained: &Prefix<'_, K>,
        found @ (start, end, model, corrections): ModelSlice<'_, K>,
        predicted: usize,
    ) {
        let (keys, cells) = (&trained.keys[start..end], &trained.cells[start..end]);
        if K::HINTED {
            let window = Self::search_window(found, predicted);
            let hints = &trained.hints[start..end];
            prefetch::at(hints, predicted);
            prefetch::at(keys, predicted);
            prefetch::at(cells, predicted);
            prefetch::slice(&hints[window.clone()]);
            if let Some(ties) = trained.tie_hints.get(start..end) {
                prefetch::slice(&ties[window]);
            }
            prefetch::around(keys, predicted, KEY_PREFETCH_RADIUS);
            let cell_radius = match corrections {
                Some(_) => CORRECTED_CELL_RADIUS,
                None => RECORD_PREFETCH_RADIUS,
            };
            prefetch::around(cells, predicted, cell_radius);
        } else if corrections.is_some() {
            prefetch::at(keys, predicted);
            prefetch::at(cells, predicted);
            prefetch::around(keys, predicted, CORRECTED_KEY_RADIUS);
            prefetch::around(cells, predicted, CORRECTED_CELL_RADIUS);
        } else {
            prefetch::at(keys, predicted);
            prefetch::at(cells, predicted);
            prefetch::slice(&keys[model.bounds().window(predicted, end - start)]);
            prefetch::around(cells, predicted, RECORD_PREFETCH_RADIUS);
        }
    }

    /// The record of `key` among the keys appended from `from` on (the trained keys' end).
    fn appended_record(&self, from: usize, key: &K::Query) -> Option<&RecordCell> {
        let pos = self.appended_lower_bound(from, key);
        self.keys()
            .get(pos)
            .is_some_and(|k| K::query(k) == key)
            .then(|| &self.cells()[pos])
    }

    /// The delta index of this group.
    pub(crate) fn buf(&self) -> &DeltaIndex<K> {
        &self.buf
    }

    /// Whether a compaction froze `buf` (no new key may enter it any more).
    pub(crate) fn is_frozen(&self) -> bool {
        self.buf_frozen.load(Ordering::Acquire)
    }

    /// Freezes `buf` (compaction step 1).
    pub(crate) fn freeze(&self) {
        self.buf_frozen.store(true, Ordering::Release);
    }

    /// The temporary delta index of a running compaction, once published.
    pub(crate) fn tmp_buf(&self) -> Option<&DeltaIndex<K>> {
        let tmp = self.tmp_buf.load(Ordering::Acquire);
        // SAFETY: a non-null `tmp_buf` comes from `Arc::into_raw` in `publish_tmp_buf`; that
        // reference count is released only by `Drop for Group`, so the delta index outlives
        // `&self`.
        (!tmp.is_null()).then(|| unsafe { &*tmp })
    }

    /// Publishes `tmp` as this group's `tmp_buf` (compaction, after barrier B1). The group
    /// keeps its own reference count on it.
    pub(crate) fn publish_tmp_buf(&self, tmp: &Arc<DeltaIndex<K>>) {
        debug_assert!(self.is_frozen(), "tmp_buf != null implies buf_frozen");
        let raw = Arc::into_raw(Arc::clone(tmp)).cast_mut();
        let previous = self.tmp_buf.swap(raw, Ordering::Release);
        assert!(
            previous.is_null(),
            "a group is compacted at most once (one restructurer at a time)"
        );
    }

    /// The next group of a split chain, if any.
    pub(crate) fn next(&self) -> Option<&Group<K>> {
        let next = self.next.load(Ordering::Acquire);
        // SAFETY: `self` was reached under protection (module comment) and `next` was reachable
        // from it at the time of the load, so it is freed only after a grace period that the
        // protection spans.
        (!next.is_null()).then(|| unsafe { &*next })
    }

    /// The raw `next` pointer, for the restructurer.
    pub(crate) fn next_ptr(&self) -> *mut Group<K> {
        self.next.load(Ordering::Acquire)
    }

    /// The link that holds the next group of the chain, for the restructurer.
    pub(crate) fn next_link(&self) -> &AtomicPtr<Group<K>> {
        &self.next
    }

    /// The mean over the group's models of their largest absolute error (0 with no model).
    pub(crate) fn mean_error(&self) -> f64 {
        mean_error::<K>(&self.models)
    }

    /// Whether this node and `other` share their records (and delta index): the frozen views
    /// of one split.
    pub(crate) fn shares_records(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.records, &other.records)
    }

    /// An estimate of the bytes the group owns, without its delta indexes.
    pub(crate) fn bytes(&self) -> usize {
        let keys: usize = self.keys().iter().map(K::stored_heap_bytes).sum();
        size_of::<Self>()
            + self.pivot.heap_bytes()
            + keys
            + self.records.capacity() * (size_of::<K::Stored>() + size_of::<RecordCell>())
            + self.records.hint_bytes()
            + self.models.corrections.len() * size_of::<correction::Table>()
            + if self.models.list.spilled() {
                self.models.len() * (size_of::<(usize, K::Model)>() + size_of::<u64>())
            } else {
                0
            }
    }
}

impl<K: IndexKey> Drop for Group<K> {
    fn drop(&mut self) {
        let tmp = self.tmp_buf.load(Ordering::Acquire);
        if !tmp.is_null() {
            // SAFETY: `tmp` came from `Arc::into_raw` in `publish_tmp_buf`, and this is the only
            // place that gives that reference count back.
            drop(unsafe { Arc::from_raw(tmp) });
        }
    }
}

/// A group's models without their corrections: `(start, model)`, as [`Models`] lists them.
pub(crate) type ModelList<K> = SmallVec<[(usize, <K as learned_model::Key>::Model); INLINE_MODELS]>;

/// Up to `count` models over even slices of `keys` (none when `keys` is empty), without
/// corrections: what the policy's error checks weigh, and what [`train`] completes.
pub(crate) fn fit<K: IndexKey>(keys: &[K::Stored], count: usize) -> ModelList<K> {
    let count = count.max(1).min(keys.len());
    (0..count)
        .map(|i| {
            let start = i * keys.len() / count;
            (
                start,
                K::fit_stored(&keys[start..(i + 1) * keys.len() / count]),
            )
        })
        .collect()
}

/// Up to `count` models over even slices of `keys` (none when `keys` is empty).
pub(crate) fn train<K: IndexKey>(keys: &[K::Stored], count: usize) -> Models<K> {
    completed(keys, fit::<K>(keys, count))
}

/// The models of `list`, fitted over even slices of `keys` ([`fit`]), with their corrections
/// and summaries.
fn completed<K: IndexKey>(keys: &[K::Stored], list: ModelList<K>) -> Models<K> {
    let ends = list
        .iter()
        .skip(1)
        .map(|(start, _)| *start)
        .chain([keys.len()]);
    // The slices are even: every one holds at least the minimum when all of them together hold
    // the minimum once for every model.
    let corrections = if keys.len() < list.len() * correction::MIN_CORRECTED_KEYS {
        Box::default()
    } else {
        let (tables, near): (Vec<_>, Vec<_>) = list
            .iter()
            .zip(ends)
            .map(|((start, model), end)| corrections::<K>(&keys[*start..end], model))
            .unzip();
        let near: usize = near.into_iter().sum();
        if near * 10 >= keys.len() * correction::MIN_NEAR_TENTHS {
            tables.into_boxed_slice()
        } else {
            Box::default()
        }
    };
    let summary_at = |pos: usize| K::summary(K::query(&keys[pos]));
    Models {
        corrections,
        first_summaries: list.iter().map(|(start, _)| summary_at(*start)).collect(),
        last_summary: keys.len().checked_sub(1).map_or(0, summary_at),
        list,
        trained: keys.len(),
    }
}

/// The corrections ([`correction`]) of `model`, trained on `keys`, and how many of the keys
/// they place within the positions a corrected lookup requests.
fn corrections<K: IndexKey>(keys: &[K::Stored], model: &K::Model) -> (correction::Table, usize) {
    let placed = keys.iter().enumerate().filter_map(|(position, key)| {
        let query = K::query(key);
        K::predict(model, query, K::hint(query, 0))
            .ok()
            .map(|predicted| (position, predicted))
    });
    correction::table(keys.len(), placed, CORRECTED_KEY_RADIUS)
}

/// The fewest models, at most `max_models`, whose mean error is within `error_bound` (or
/// `max_models` models when none is): how a bulk load trains its groups, so that they start
/// out satisfying the adjustment policy (§3.3).
pub(crate) fn train_within<K: IndexKey>(
    keys: &[K::Stored],
    error_bound: usize,
    max_models: usize,
) -> Models<K> {
    let mut count = 1;
    loop {
        let list = fit::<K>(keys, count);
        if count >= max_models.min(keys.len()) || mean_error::<K>(&list) <= error_bound as f64 {
            return completed(keys, list);
        }
        count += 1;
    }
}

/// The mean over `models` of their largest absolute error (0 with no model).
pub(crate) fn mean_error<K: IndexKey>(models: &[(usize, K::Model)]) -> f64 {
    if models.is_empty() {
        return 0.0;
    }
    let total: u64 = models.iter().map(|(_, m)| m.bounds().max_abs()).sum();
    total as f64 / models.len() as f64
}

/// For unit tests: a group with pivot 0 over `keys` (strictly increasing, each its own value),
/// `models` models and an empty delta index.
#[cfg(all(test, not(loom)))]
pub(crate) fn test_group(keys: Vec<u64>, models: usize) -> Group<u64> {
    let cells = keys
        .iter()
        .map(|&k| crate::xindex::record::live(k))
        .collect();
    let models = train(&keys, models);
    Group::new(
        0,
        Records::new(keys, cells, 0),
        models,
        Arc::new(DeltaIndex::new()),
        ptr::null_mut(),
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::xindex::record;

    #[test]
    fn record_and_lower_bound_agree_with_binary_search() {
        let keys: Vec<u64> = (0..500u64).map(|i| i * i + 3).collect();
        for models in 1..=4 {
            let g = test_group(keys.clone(), models);
            assert_eq!(g.models().len(), models);
            for probe in 0..260_000u64 {
                let expected = keys.partition_point(|&k| k < probe);
                assert_eq!(g.lower_bound(&probe), expected, "{models} models, {probe}");
                let found = keys.get(expected).is_some_and(|&k| k == probe);
                let value = g.record(&probe).map(|cell| cell.read().1);
                assert_eq!(value, found.then_some(probe));
            }
        }
    }

    /// 4,096 keys that bow away from the lines of four models over them, up to about 30
    /// positions (as lognormal keys curve within the error bound).
    fn bowed_keys() -> Vec<u64> {
        (0..4_096u64)
            .map(|i| {
                let bow = (i as f64 * std::f64::consts::PI / 1_024.0).sin();
                (64 * i as i64 + (64.0 * 30.0 * bow) as i64) as u64
            })
            .collect()
    }

    #[test]
    fn large_integer_models_keep_corrections_that_bring_predictions_closer() {
        let keys = bowed_keys();
        let g = test_group(keys.clone(), 4);
        assert_eq!(g.models.corrections.len(), 4);
        let trained = g.trained();
        let (mut raw, mut corrected) = (0, 0);
        for (i, key) in keys.iter().enumerate() {
            let found @ (start, _, model, _) = g.model_for(trained.keys, key).expect("trained");
            let (at, ()) = Group::place(&trained, found, key);
            corrected += (start + at).abs_diff(i);
            raw += (start + model.predict(key)).abs_diff(i);
        }
        assert!(
            corrected * 4 < raw,
            "corrected predictions are closer: {corrected} against {raw} positions in all"
        );
        for &key in &keys {
            for probe in [key.saturating_sub(1), key, key + 1] {
                let expected = keys.partition_point(|&k| k < probe);
                assert_eq!(g.lower_bound(&probe), expected, "{probe}");
                let value = g.record(&probe).map(|cell| cell.read().1);
                assert_eq!(value, (probe == key).then_some(probe));
            }
        }
        // Models of fewer keys keep none.
        let small = test_group((0..1_000u64).map(|i| i * i).collect(), 4);
        assert!(small.models.corrections.is_empty());
        // Nor do models whose keys come in clusters of 20 that each model predicts at about one
        // position: no midpoint brings a cluster's keys within 8 positions.
        let clustered = test_group((0..4_096u64).map(|i| i / 20 * 4_000 + i % 20).collect(), 4);
        assert!(clustered.models.corrections.is_empty());
    }

    #[test]
    fn large_byte_string_models_keep_corrections_and_find_every_key() {
        // The integer test's keys as big-endian words (their zero high bytes the records'
        // shared prefix, which the hints skip), each followed by a suffix; every seventh word
        // starts a run of three keys, which their suffixes order.
        let mut keys = Vec::new();
        for (i, key) in bowed_keys().into_iter().enumerate() {
            let word = key.to_be_bytes();
            for copy in 0..if i % 7 == 0 { 3 } else { 1 } {
                keys.push([word.as_slice(), b"/", &[b'a' + copy]].concat());
            }
        }
        let stored: Vec<_> = keys.iter().map(|k| Vec::<u8>::to_stored(k)).collect();
        let cells = (0..keys.len() as u64).map(record::live).collect();
        let g = Group::<Vec<u8>>::new(
            keys[0].clone(),
            Records::new(stored.clone(), cells, 0),
            train(&stored, 4),
            Arc::new(DeltaIndex::new()),
            ptr::null_mut(),
        );
        assert_eq!(g.models.corrections.len(), 4);
        let trained = g.trained();
        let (mut raw, mut corrected) = (0, 0);
        for (i, key) in keys.iter().enumerate() {
            let found @ (start, _, model, _) = g.model_for(trained.keys, key).expect("trained");
            let (at, _) = Group::place(&trained, found, key);
            let predicted = Vec::<u8>::predict(model, key, Vec::<u8>::hint(key, 0));
            corrected += (start + at).abs_diff(i);
            raw += (start + predicted.expect("within the model's prefix")).abs_diff(i);
        }
        assert!(
            corrected * 4 < raw,
            "corrected predictions are closer: {corrected} against {raw} positions in all"
        );
        check_hinted_group(&keys, &[], false);
    }

    #[test]
    fn runs_of_equal_hints_are_searched_by_their_keys() {
        // Runs of 1 to 40 keys sharing their first eight bytes, around the 16-key cap under
        // which a run is searched key by key instead of by the model.
        let mut keys = Vec::new();
        for (run, length) in [1usize, 2, 5, 16, 17, 40].into_iter().enumerate() {
            let prefix = [b'a' + run as u8; 8];
            for i in 0..length {
                keys.push([prefix.as_slice(), &[b'0' + (2 * i) as u8]].concat());
            }
        }
        // Each key's eight-byte prefix and the key one above it in its last byte are probed
        // too; the keys, held inline, keep no tie hints.
        check_hinted_group(&keys, &[], false);
    }

    /// A group over `keys` with 1 to 4 models, its lower bounds and records checked against
    /// binary search for `keys`, `probes` and keys around each key.
    fn check_hinted_group(keys: &[Vec<u8>], probes: &[Vec<u8>], tie_hinted: bool) {
        let stored: Vec<_> = keys.iter().map(|k| Vec::<u8>::to_stored(k)).collect();
        let mut probes = probes.to_vec();
        for key in keys {
            let mut next = key.clone();
            let last = next.last_mut().expect("non-empty");
            *last = last.wrapping_add(1);
            probes.extend([key.clone(), next, [key.as_slice(), b"+"].concat()]);
            probes.extend([8, 12, 16, 17].map(|len| key[..len.min(key.len())].to_vec()));
        }
        for models in 1..=4 {
            let cells = (0..keys.len() as u64).map(record::live).collect();
            let g = Group::<Vec<u8>>::new(
                keys[0].clone(),
                Records::new(stored.clone(), cells, 0),
                train(&stored, models),
                Arc::new(DeltaIndex::new()),
                ptr::null_mut(),
            );
            assert_eq!(!g.records().tie_hints().is_empty(), tie_hinted);
            for probe in &probes {
                let expected = keys.partition_point(|k| k < probe);
                assert_eq!(g.lower_bound(probe), expected, "{models} models, {probe:?}");
                let found = keys.get(expected).is_some_and(|k| k == probe);
                let value = g.record(probe).map(|cell| cell.read().1);
                assert_eq!(value, found.then_some(expected as u64), "{probe:?}");
            }
        }
    }

    #[test]
    fn runs_of_equal_hints_narrow_on_their_tie_hints() {
        // Long keys (held out of line) behind a shared prefix, in runs of 1 to 40 that share
        // their next eight bytes; within a run, sub-runs of 1 to 20 that share sixteen, around
        // the 16-key cap; and a short key (held inline) at the start of each run, whose tie
        // hint is padding.
        let mut keys = Vec::new();
        for (run, length) in [1usize, 2, 5, 16, 17, 40].into_iter().enumerate() {
            let prefix = [b"https://".as_slice(), &[b'a' + run as u8; 8]].concat();
            keys.push([prefix.as_slice(), b"0"].concat());
            for i in 0..length {
                let tie = format!("{:08}", i / (1 + run * run));
                let tail = format!("-{:024}", 2 * i);
                keys.push([prefix.as_slice(), tie.as_bytes(), tail.as_bytes()].concat());
            }
        }
        let probes = [
            &b""[..],
            b"a",
            b"https://",
            b"https://a\xff",
            b"zzzzzzzzzzzzzzzzz",
        ];
        check_hinted_group(&keys, &probes.map(<[u8]>::to_vec), true);
    }

    #[test]
    fn keys_below_the_records_prefix_skip_the_tie_hints() {
        // A run of the smallest hints (eight zero bytes): a key below the records' prefix is
        // placed with that hint, but its bytes past it are no tie hint to compare. And a run of
        // the largest (eight 0xff bytes), which keys inside it reach with hints of their own.
        let tied = |run: &[u8]| -> Vec<Vec<u8>> {
            (0..20)
                .map(|i| [run, format!("{i:08}-{:024}", 0).as_bytes()].concat())
                .collect()
        };
        let low: Vec<Vec<u8>> = [b"xyz\0\0\x01".to_vec()]
            .into_iter()
            .chain(tied(b"xyz\0\0\0\0\0\0\0\0"))
            .collect();
        let high: Vec<Vec<u8>> = [b"xyz\xff\xff\0".to_vec()]
            .into_iter()
            .chain(tied(b"xyz\xff\xff\xff\xff\xff\xff\xff\xff"))
            .collect();
        let outside = [b"a".repeat(30), [b"z".as_slice(), &[0; 30]].concat()];
        for mut keys in [low, high] {
            keys.sort();
            check_hinted_group(&keys, &outside, true);
        }
    }

    #[test]
    fn keys_above_a_model_in_a_run_of_the_largest_hints_compare_their_tie_hints() {
        // Three models over even thirds: short keys, then two runs of the largest hint (eight
        // 0xff bytes past `xyz`) that differ at their tie hints. A key above the second
        // model's prefix and below the third model's keys is placed at the second model's end
        // with the largest hint, which is its own, and narrows on its own tie hint.
        let run = |digit: char| -> Vec<Vec<u8>> {
            (0..20)
                .map(|i| {
                    [
                        &b"xyz"[..],
                        &[0xff; 8],
                        format!("{digit}{i:07}-{:024}", 0).as_bytes(),
                    ]
                    .concat()
                })
                .collect()
        };
        let mut keys: Vec<Vec<u8>> = (0..20u8)
            .map(|i| [&b"xyz\xff\xff\0"[..], &[i]].concat())
            .collect();
        keys.extend(run('0'));
        keys.extend(run('5'));
        let above = |tail: &[u8]| [&b"xyz"[..], &[0xff; 8], tail].concat();
        let probes = [
            above(b"1"),
            above(b"0000001"),
            above(b"4zzzzzzzz"),
            above(b"0\xff"),
        ];
        check_hinted_group(&keys, &probes, true);
    }

    #[test]
    fn empty_group_has_no_models_and_finds_nothing() {
        let g = test_group(Vec::new(), 4);
        assert!(g.models().is_empty());
        assert!(g.record(&7).is_none());
        assert_eq!(g.lower_bound(&7), 0);
        assert_eq!(g.mean_error(), 0.0);
    }

    #[test]
    fn tmp_buf_is_published_once_and_released_with_the_group() {
        let g = test_group(vec![1, 2, 3], 1);
        assert!(g.tmp_buf().is_none() && !g.is_frozen());
        g.freeze();
        let tmp = Arc::new(DeltaIndex::new());
        g.publish_tmp_buf(&tmp);
        assert_eq!(Arc::strong_count(&tmp), 2);
        assert!(g.tmp_buf().is_some());
        drop(g);
        assert_eq!(Arc::strong_count(&tmp), 1);
    }
}
