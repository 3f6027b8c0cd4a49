//! Range scans (§3.2, "scan"; digest §3.6): a k-way merge, per group, of the array (from the
//! start key's lower bound), `buf` and `tmp_buf`, taking for each key the first live value in
//! the lookup order `data_array → buf → tmp_buf` and stopping at the end of the group's range;
//! then the group found from that end by the root
//! ([`Root::locate_with_end`](crate::xindex::root::Root::locate_with_end)), so a group that a
//! merge made stale is never asked for keys beyond its own range.
//!
//! Scans read each record consistently but are not snapshots: a pair is returned if its
//! record was live when the scan read it.

use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};

use concurrency::{RecordCell, prefetch};

use crate::xindex::group::Group;
use crate::xindex::index::Inner;
use crate::xindex::key::IndexKey;
use crate::xindex::record;

/// How many pairs a [`Range`] fetches per online section.
const RANGE_CHUNK: usize = 128;

/// The most pairs a scan reserves room for up front: a short scan (YCSB E asks for up to 100)
/// then fills its vector without growing it, and a long one grows it as it goes.
const MAX_RESERVED: usize = 1024;

impl<K: IndexKey> Inner<K> {
    /// Up to `n` live pairs with keys within `(start, end)`, ascending, in one online
    /// section.
    pub(crate) fn scan(
        &self,
        start: Bound<&K::Query>,
        end: Bound<&K::Query>,
        n: usize,
    ) -> Vec<(K, u64)> {
        self.scan_as(start, end, n, K::from_query)
    }

    /// [`scan`](Self::scan) with each key made by `make` from the index's own copy.
    pub(crate) fn scan_as<T: Borrow<K::Query>>(
        &self,
        start: Bound<&K::Query>,
        end: Bound<&K::Query>,
        n: usize,
        make: impl Fn(&K::Query) -> T,
    ) -> Vec<(T, u64)> {
        if n == 0 {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(n.min(MAX_RESERVED));
        let pinned = self.pin();
        let root = pinned.root();
        // Every key is >= the smallest key, so an unbounded start is a start from it.
        let min_key = K::min_key();
        let mut position = match start {
            Bound::Included(key) | Bound::Excluded(key) => key,
            Bound::Unbounded => min_key.borrow(),
        };
        let mut from = start;
        loop {
            let (group, group_end) = root.locate_with_end(position);
            if scan_group(group, from, end, group_end, n, &make, &mut out) {
                return out;
            }
            let Some(group_end) = group_end else {
                return out;
            };
            // From the next group's pivot: the views of a group being split, and the groups
            // being merged (through their shared `tmp_buf`), hold keys of their neighbours'
            // ranges too.
            position = group_end.borrow();
            from = Bound::Included(position);
        }
    }
}

/// Appends to `out` the live pairs of `group` within `(start, end)` and below `group_end`
/// (the next group's pivot) until
/// `out` holds `limit` pairs; true if the scan is complete (limit reached or a key past `end`
/// seen).
fn scan_group<K: IndexKey, T: Borrow<K::Query>>(
    group: &Group<K>,
    start: Bound<&K::Query>,
    end: Bound<&K::Query>,
    group_end: Option<&K>,
    limit: usize,
    make: &impl Fn(&K::Query) -> T,
    out: &mut Vec<(T, u64)>,
) -> bool {
    let (keys, cells) = (group.keys(), group.cells());
    // Every key is >= the smallest key, so an unbounded start is a start from it.
    let min_key = K::min_key();
    let from = match start {
        Bound::Included(key) | Bound::Excluded(key) => key,
        Bound::Unbounded => min_key.borrow(),
    };
    let mut next = group.lower_bound(from);
    // The array records the scan may still take are read in order: request their first lines
    // together, instead of one miss after the other until the hardware prefetcher catches on.
    let wanted = next..keys
        .len()
        .min(next.saturating_add(limit.saturating_sub(out.len())));
    prefetch::slice(&keys[wanted.clone()]);
    prefetch::slice(&cells[wanted]);
    let mut buf = group.buf().iter_from(from).peekable();
    let mut tmp = group.tmp_buf().map(|t| t.iter_from(from).peekable());
    // Whether `key` ends the group's part of the scan: `Some(false)` at the group's range's end
    // (the next group goes on), `Some(true)` past the scan's end. The group's range first: a
    // `tmp_buf` shared by groups being merged holds keys of the next group, which say nothing
    // about where the scan ends.
    let stop = |key: &K::Query| {
        if group_end.is_some_and(|group_end| key >= group_end.borrow()) {
            Some(false)
        } else {
            past_end(key, end).then_some(true)
        }
    };
    // Appends a live pair unless it is the excluded start; true once `out` is full.
    let mut emit = |key: &K::Query, value: Option<u64>| {
        if let Some(value) = value
            && !matches!(start, Bound::Excluded(s) if s == key)
        {
            debug_assert!(
                out.last().is_none_or(|(last, _)| last.borrow() < key),
                "groups hold disjoint, ascending key ranges"
            );
            out.push((make(key), value));
        }
        out.len() >= limit
    };
    loop {
        let in_buf = buf.peek().map(|&(key, _)| key.borrow());
        let in_tmp = tmp
            .as_mut()
            .and_then(|t| t.peek().map(|&(key, _)| key.borrow()));
        let in_delta = [in_buf, in_tmp].into_iter().flatten().min();
        // The array's keys below the delta indexes' next key are the run's only candidates:
        // take them without looking at the delta indexes again.
        while let Some(key) = keys.get(next).map(K::query)
            && in_delta.is_none_or(|delta| key < delta)
        {
            if let Some(done) = stop(key) {
                return done;
            }
            next += 1;
            if emit(key, record::read(&cells[next - 1])) {
                return true;
            }
        }
        let in_array = keys.get(next).map(K::query);
        let Some(key) = [in_array, in_delta].into_iter().flatten().min() else {
            return false;
        };
        if let Some(done) = stop(key) {
            return done;
        }
        let mut value = None;
        let mut take = |cell: &RecordCell| {
            if value.is_none() {
                value = record::read(cell);
            }
        };
        if in_array == Some(key) {
            take(&cells[next]);
            next += 1;
        }
        if in_buf == Some(key) {
            take(buf.next().expect("peeked").1);
        }
        if in_tmp == Some(key) {
            take(tmp.as_mut().and_then(Iterator::next).expect("peeked").1);
        }
        if emit(key, value) {
            return true;
        }
    }
}

/// Whether `key` lies beyond the end bound.
fn past_end<Q: ?Sized + Ord>(key: &Q, end: Bound<&Q>) -> bool {
    match end {
        Bound::Included(last) => key > last,
        Bound::Excluded(last) => key >= last,
        Bound::Unbounded => false,
    }
}

/// An iterator over the live pairs of a key range, ascending
/// ([`OrderedIndex::range`](crate::OrderedIndex::range) of [`XIndex`](crate::xindex::XIndex)).
///
/// It fetches 128 pairs at a time, each chunk in one short online section, so a
/// long iteration never holds back the index's background work. Like a scan it is not a
/// snapshot: each pair was live when its chunk was read, keys strictly ascend across chunks,
/// and writes made between chunks are seen or not depending on their keys' position.
pub struct Range<'a, K: IndexKey> {
    inner: &'a Inner<K>,
    next: Bound<K>,
    end: Bound<K>,
    chunk: std::vec::IntoIter<(K, u64)>,
    exhausted: bool,
}

impl<'a, K: IndexKey> Range<'a, K> {
    pub(crate) fn new<R: RangeBounds<K::Query>>(inner: &'a Inner<K>, range: R) -> Self {
        let owned = |bound: Bound<&K::Query>| bound.map(K::from_query);
        Self {
            inner,
            next: owned(range.start_bound()),
            end: owned(range.end_bound()),
            chunk: Vec::new().into_iter(),
            exhausted: false,
        }
    }
}

impl<K: IndexKey> Iterator for Range<'_, K> {
    type Item = (K, u64);

    fn next(&mut self) -> Option<(K, u64)> {
        loop {
            if let Some(pair) = self.chunk.next() {
                return Some(pair);
            }
            if self.exhausted {
                return None;
            }
            let batch = self.inner.scan(
                self.next.as_ref().map(Borrow::borrow),
                self.end.as_ref().map(Borrow::borrow),
                RANGE_CHUNK,
            );
            self.exhausted = batch.len() < RANGE_CHUNK;
            if let Some((last, _)) = batch.last() {
                self.next = Bound::Excluded(last.clone());
            }
            self.chunk = batch.into_iter();
        }
    }
}

impl<K: IndexKey> std::fmt::Debug for Range<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("next", &self.next)
            .field("end", &self.end)
            .field("exhausted", &self.exhausted)
            .finish_non_exhaustive()
    }
}
