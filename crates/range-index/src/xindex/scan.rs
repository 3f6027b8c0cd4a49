//! Range scans (§3.2, "scan"; digest §3.6): a k-way merge, per group, of the array (from the
//! start key's lower bound), `buf` and `tmp_buf`, taking for each key the first live value in
//! the lookup order `data_array → buf → tmp_buf` and stopping at the end of the group's range;
//! then the group found from that end by the root
//! ([`Root::locate_with_end`](crate::xindex::root::Root::locate_with_end)), so a group that a
//! merge made stale is never asked for keys beyond its own range.
//!
//! Reverse scans (an addition: the paper scans forward only) walk the groups from the end
//! bound down: the group answering for the largest wanted keys
//! ([`Root::locate_end`](crate::xindex::root::Root::locate_end)), its array read downward from
//! the bound and its delta indexes backward from it
//! ([`DeltaIndex::iter_rev`](crate::xindex::DeltaIndex::iter_rev)), then the group answering
//! for the keys below its pivot. Each group is asked only for keys between its pivot and the
//! bound, which lies within its own range, so neighbours' keys held by the views of a split or
//! by a merge's shared `tmp_buf` are never taken twice.
//!
//! A forward scan from below a group's removed prefix starts past it, and raises it over the
//! removed array records it reads next ([`RemovedRun`]; records module comment): an addition,
//! so that taking the smallest key over and over does not read every removed one each time.
//!
//! Scans read each record consistently but are not snapshots: a pair is returned if its
//! record was live when the scan read it.

use std::borrow::Borrow;
use std::ops::{Bound, RangeBounds};

use concurrency::{RecordCell, prefetch};

use crate::chunked::{ChunkSource, Chunked};
use crate::xindex::group::Group;
use crate::xindex::index::Inner;
use crate::xindex::key::IndexKey;
use crate::xindex::record;
use crate::xindex::records::Records;

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

    /// Up to `n` live pairs with keys within `(start, end)`, the largest first, in one online
    /// section.
    pub(crate) fn scan_rev(
        &self,
        start: Bound<&K::Query>,
        end: Bound<&K::Query>,
        n: usize,
    ) -> Vec<(K, u64)> {
        self.scan_rev_as(start, end, n, K::from_query)
    }

    /// [`scan_rev`](Self::scan_rev) with each key made by `make` from the index's own copy.
    pub(crate) fn scan_rev_as<T: Borrow<K::Query>>(
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
        let min_key = K::min_key();
        let mut upper = end;
        loop {
            let group = root.locate_end(upper);
            if scan_group_rev(group, start, upper, n, &make, &mut out) {
                return out;
            }
            let pivot = group.pivot().borrow();
            let start_above = match start {
                Bound::Included(key) | Bound::Excluded(key) => key >= pivot,
                Bound::Unbounded => false,
            };
            if start_above || pivot == min_key.borrow() {
                return out;
            }
            upper = Bound::Excluded(pivot);
        }
    }
}

/// Appends to `out`, the largest first, the live pairs of `group` within `(start, end)` and
/// at or above its pivot (`end` lies within the group's range) until `out` holds `limit`
/// pairs; true if `out` is full.
fn scan_group_rev<K: IndexKey, T: Borrow<K::Query>>(
    group: &Group<K>,
    start: Bound<&K::Query>,
    end: Bound<&K::Query>,
    limit: usize,
    make: &impl Fn(&K::Query) -> T,
    out: &mut Vec<(T, u64)>,
) -> bool {
    let (keys, cells) = (group.keys(), group.cells());
    let pivot = group.pivot().borrow();
    let from = match start {
        Bound::Included(key) | Bound::Excluded(key) if key > pivot => key,
        _ => pivot,
    };
    // One past the last array position within `end`. The search may see keys appended after
    // `keys` was read (sequential inserts), which the scan may leave out.
    let mut upper = match end {
        Bound::Included(key) => {
            let pos = group.lower_bound(key);
            pos + usize::from(keys.get(pos).is_some_and(|k| K::query(k) == key))
        }
        Bound::Excluded(key) => group.lower_bound(key),
        Bound::Unbounded => keys.len(),
    }
    .min(keys.len());
    // As a forward scan does: request the lines of the records the scan may take together.
    let wanted = upper.saturating_sub(limit.saturating_sub(out.len()))..upper;
    prefetch::slice(&keys[wanted.clone()]);
    prefetch::slice(&cells[wanted]);
    let mut buf = group.buf().iter_rev(end).peekable();
    let mut tmp = group.tmp_buf().map(|tmp| tmp.iter_rev(end).peekable());
    loop {
        let in_array = upper
            .checked_sub(1)
            .map(|pos| K::query(&keys[pos]))
            .filter(|&key| key >= from);
        let in_buf = buf
            .peek()
            .map(|&(key, _)| key.borrow())
            .filter(|&key| key >= from);
        let in_tmp = tmp
            .as_mut()
            .and_then(|t| t.peek().map(|&(key, _)| key.borrow()))
            .filter(|&key| key >= from);
        let Some(key) = [in_array, in_buf, in_tmp].into_iter().flatten().max() else {
            return false;
        };
        let in_array = (in_array == Some(key)).then(|| {
            upper -= 1;
            &cells[upper]
        });
        let in_buf = (in_buf == Some(key)).then(|| buf.next().expect("peeked").1);
        let in_tmp =
            (in_tmp == Some(key)).then(|| tmp.as_mut().and_then(Iterator::next).expect("peeked").1);
        if let Some(value) = first_live([in_array, in_buf, in_tmp])
            && !matches!(start, Bound::Excluded(s) if s == key)
        {
            debug_assert!(
                out.last().is_none_or(|(last, _)| last.borrow() > key),
                "groups hold disjoint, descending key ranges"
            );
            out.push((make(key), value));
            if out.len() >= limit {
                return true;
            }
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
    // The search may see keys appended after `keys` was read, which the scan may leave out.
    let (mut run, mut next) =
        RemovedRun::start(group.records(), group.lower_bound(from), keys.len());
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
            if emit(key, run.read(next - 1, &cells[next - 1])) {
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
        let in_array = (in_array == Some(key))
            .then(|| {
                next += 1;
                run.read(next - 1, &cells[next - 1])
            })
            .flatten();
        let in_buf = (in_buf == Some(key)).then(|| buf.next().expect("peeked").1);
        let in_tmp =
            (in_tmp == Some(key)).then(|| tmp.as_mut().and_then(Iterator::next).expect("peeked").1);
        if emit(key, in_array.or_else(|| first_live([in_buf, in_tmp]))) {
            return true;
        }
    }
}

/// The run of removed array records that a forward scan reads from the records' removed prefix
/// on (records module comment); when the scan leaves the group, the prefix grows by it.
struct RemovedRun<'g, K: IndexKey> {
    records: &'g Records<K>,
    /// The prefix loaded at the start.
    loaded: usize,
    /// The position after the run: the next record to read, while every record read was
    /// removed; `None` for a scan that started above the prefix.
    end: Option<usize>,
}

impl<'g, K: IndexKey> RemovedRun<'g, K> {
    /// The run of a scan whose first record is at `from` among `len`, and where the scan
    /// starts reading: past the removed prefix.
    fn start(records: &'g Records<K>, from: usize, len: usize) -> (Self, usize) {
        let loaded = records.removed_prefix().min(len);
        let from = from.min(len);
        let end = (from <= loaded).then_some(loaded);
        (
            Self {
                records,
                loaded,
                end,
            },
            from.max(loaded),
        )
    }

    /// The value of `cell`, the record at `position`, read in ascending order.
    fn read(&mut self, position: usize, cell: &RecordCell) -> Option<u64> {
        let value = record::read(cell);
        if value.is_none() && self.end == Some(position) {
            self.end = Some(position + 1);
        }
        value
    }
}

impl<K: IndexKey> Drop for RemovedRun<'_, K> {
    fn drop(&mut self) {
        if let Some(end) = self.end
            && end > self.loaded
        {
            self.records.extend_removed_prefix(end);
        }
    }
}

/// The value of the first live record among a key's records, given in the lookup order
/// `data_array → buf → tmp_buf` or its delta-index part (`None` where the key has no record).
fn first_live<const N: usize>(cells: [Option<&RecordCell>; N]) -> Option<u64> {
    cells.into_iter().flatten().find_map(record::read)
}

/// Whether `key` lies beyond the end bound.
fn past_end<Q: ?Sized + Ord>(key: &Q, end: Bound<&Q>) -> bool {
    match end {
        Bound::Included(last) => key > last,
        Bound::Excluded(last) => key >= last,
        Bound::Unbounded => false,
    }
}

/// An iterator over the live pairs of a key range, ascending, or descending from the back
/// ([`OrderedIndex::range`](crate::OrderedIndex::range) of [`XIndex`](crate::xindex::XIndex)).
///
/// It fetches 128 pairs at a time, each chunk in one short online section, so a
/// long iteration never holds back the index's background work. Like a scan it is not a
/// snapshot: each pair was live when its chunk was read, keys strictly ascend across chunks
/// (strictly descend from the back), and writes made between chunks are seen or not depending
/// on their keys' position. The two ends never yield a key twice ([`Chunked`]).
#[derive(Debug)]
pub struct Range<'a, K: IndexKey>(Chunked<K, Scans<'a, K>>);

/// The index's scans, as a [`ChunkSource`].
struct Scans<'a, K: IndexKey>(&'a Inner<K>);

impl<K: IndexKey> ChunkSource<K> for Scans<'_, K> {
    type Value = u64;

    fn fetch(
        &self,
        lower: Bound<&K>,
        upper: Bound<&K>,
        n: usize,
        from_back: bool,
    ) -> Vec<(K, u64)> {
        let (lower, upper) = (lower.map(Borrow::borrow), upper.map(Borrow::borrow));
        if from_back {
            self.0.scan_rev(lower, upper, n)
        } else {
            self.0.scan(lower, upper, n)
        }
    }
}

impl<'a, K: IndexKey> Range<'a, K> {
    pub(crate) fn new<R: RangeBounds<K::Query>>(inner: &'a Inner<K>, range: R) -> Self {
        let owned = |bound: Bound<&K::Query>| bound.map(K::from_query);
        let bounds = (owned(range.start_bound()), owned(range.end_bound()));
        Self(Chunked::new(Scans(inner), bounds, RANGE_CHUNK, RANGE_CHUNK))
    }
}

impl<K: IndexKey> Iterator for Range<'_, K> {
    type Item = (K, u64);

    fn next(&mut self) -> Option<(K, u64)> {
        self.0.next()
    }

    /// The range's largest pair, read from the back.
    fn last(self) -> Option<(K, u64)> {
        self.0.last()
    }
}

impl<K: IndexKey> DoubleEndedIterator for Range<'_, K> {
    fn next_back(&mut self) -> Option<(K, u64)> {
        self.0.next_back()
    }
}

impl<K: IndexKey> std::iter::FusedIterator for Range<'_, K> {}
