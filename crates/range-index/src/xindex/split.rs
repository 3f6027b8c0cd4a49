//! Group split (Algorithm 4, digest §3.10): one group becomes two or more, in two steps,
//! without blocking foreground operations.
//!
//! 1. *Logical split*: one frozen view of the group per piece (the first from the old pivot,
//!    each other from its split pivot, linked by `next` in key order, the last one's `next` the
//!    old `next`) share its records and delta index; the first replaces the group in its link.
//!    Barrier **B1** drains the puts that still hold the old, unfrozen node, after which `buf`
//!    is insert-free; then each view gets its own `tmp_buf`, so a put of a new key lands in the
//!    piece that owns it.
//! 2. *Merge, then copy* as in a compaction: the old array and `buf` merged into pointer
//!    records, cut at the split pivots into the new groups (linked by `next` the same way),
//!    whose delta indexes are the views' `tmp_buf`s; the first replaces the first view; **B2**;
//!    the copy phase over all of them; **B3**; the old node and the views are freed.
//!
//! The pieces after the first are reachable through `next` until the next root update indexes
//! them.
//!
//! Algorithm 4 splits in two. A group holding more live keys than
//! [`max_group_size`](crate::xindex::Config::max_group_size) is cut into as many pieces of at
//! most that size (up to [`MAX_PIECES`]): keys inserted in ascending order (a time series)
//! all land in the last group's delta index, which a policy making one change per group and
//! pass would only halve once a second (README design notes, "Multi-way group split").
//!
//! Decision on the digest's flaw (§3.10, "pivot of a small array"): the split pivots cut the
//! group's live keys (array and delta together) into pieces of equal size, each moved up to
//! the first live key above the group's pivot and the previous split pivot when needed; a
//! group with no such key is not split. So every piece is a non-empty range and pivots stay
//! strictly increasing along the chain.

use std::iter;
use std::sync::Arc;

use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, train};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure, live_records, split_pointer_records};

/// The most pieces one split makes: until the root update at the end of the pass, a lookup
/// walks the pieces' `next` links one by one.
pub(crate) const MAX_PIECES: usize = 16;

impl<K: IndexKey> Restructurer<'_, K> {
    /// Splits the group held by `link` into pieces, calling `hook` at every phase boundary;
    /// false (and nothing done) when the group has no live key above its pivot to split at.
    pub(crate) fn split_group(
        &self,
        link: &AtomicPtr<Group<K>>,
        hook: &mut dyn FnMut(Phase),
    ) -> bool {
        let old_ptr = link.load(Ordering::Acquire);
        let old = self
            .group_at(link)
            .expect("a split is asked for a non-NULL link");
        let config = self.inner().config();
        let split_pivots = split_pivots(old, config.max_group_size);
        if split_pivots.is_empty() {
            return false;
        }
        let pieces = split_pivots.len() + 1;
        let models_each = old.models().len().div_ceil(pieces);

        // Step 1: the logical split, views built from the last to the first.
        let mut views = Vec::with_capacity(pieces);
        let mut next = old.next_ptr();
        for pivot in split_pivots.iter().rev() {
            next = old.frozen_view(pivot.clone(), next).into_node();
            views.push(next);
        }
        let first_view = old.frozen_view(old.pivot().clone(), next).into_node();
        views.push(first_view);
        link.store(first_view, Ordering::Release);
        hook(Phase::Frozen);
        self.synchronize(); // B1
        let tmps: Vec<Arc<DeltaIndex<K>>> = self
            .chain(link, pieces)
            .into_iter()
            .map(|view| {
                let tmp = Arc::new(DeltaIndex::new());
                view.publish_tmp_buf(&tmp);
                tmp
            })
            .collect();
        hook(Phase::AfterB1);

        // Step 2.1: the merge phase, cut at the split pivots.
        let records = split_pointer_records(old, &split_pivots, config);
        let piece_pivots: Vec<K> = iter::once(old.pivot().clone())
            .chain(split_pivots)
            .collect();
        let mut next = old.next_ptr();
        for ((pivot, records), tmp) in piece_pivots.into_iter().zip(records).zip(tmps).rev() {
            let models = train(records.keys(), models_each);
            next = Group::new(pivot, records, models, tmp, next).into_node();
        }
        link.store(next, Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);

        // Step 2.2: the copy phase.
        let new = self.chain(link, pieces);
        self.copy_phase(&new, hook);
        self.synchronize(); // B3
        for group in &new {
            group.enable_appends();
        }
        hook(Phase::AfterB3);
        // SAFETY: the old node was unlinked at step 1 and the views at step 2.1; B2 and B3
        // have passed since, and the copy phase replaced every pointer into the old node's
        // records and delta index before B3. `old` is not used after this point.
        unsafe { self.retire(iter::once(old_ptr).chain(views)) };
        self.inner().count(Restructure::SplitGroup);
        true
    }

    /// The first `count` groups of the chain that starts at `link`.
    fn chain<'a>(&'a self, link: &'a AtomicPtr<Group<K>>, count: usize) -> Vec<&'a Group<K>> {
        let chain: Vec<&Group<K>> = iter::successors(self.group_at(link), |group| group.next())
            .take(count)
            .collect();
        debug_assert_eq!(chain.len(), count, "the split linked every piece");
        chain
    }
}

/// The pivots at which to split `group`: its live keys (array and delta) cut into two
/// pieces, or into as many pieces of at most `max_group_size` keys (up to [`MAX_PIECES`]), each
/// pivot moved up to the first live key above the group's pivot (which its first key may equal)
/// and above the previous split pivot when needed; empty when there is no such key.
///
/// Removed records are not counted: a group whose buffered keys were mostly removed again (a
/// queue) would otherwise be cut into pieces that the next pass merges back.
fn split_pivots<K: IndexKey>(group: &Group<K>, max_group_size: usize) -> Vec<K> {
    let live = live_records(group).count();
    let pieces = live.div_ceil(max_group_size).clamp(2, MAX_PIECES);
    let mut pivots = Vec::with_capacity(pieces - 1);
    let mut above = group.pivot().borrow();
    for (rank, (key, _)) in live_records(group).enumerate() {
        if pivots.len() == pieces - 1 {
            break;
        }
        if rank >= (pivots.len() + 1) * live / pieces && key > above {
            pivots.push(K::from_query(key));
            above = key;
        }
    }
    pivots
}
