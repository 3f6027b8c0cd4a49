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
//! them. The steps are those of [`Restructurer::rebuild_all`], which a maintenance pass runs
//! for several splits and compactions at once, sharing the barriers.
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

use concurrency::sync::atomic::AtomicPtr;

use crate::xindex::compaction::Rebuild;
use crate::xindex::group::Group;
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, live_records};

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
        let old = self
            .group_at(link)
            .expect("a split is asked for a non-NULL link");
        let Some(split) = planned_split(link, old, self.inner().config().max_group_size) else {
            return false;
        };
        self.rebuild_all(&[split], hook);
        true
    }
}

/// The split of `group`, held by `link`, at its [`split_pivots`]; `None` when it has no live
/// key above its pivot to split at.
pub(crate) fn planned_split<'l, K: IndexKey>(
    link: &'l AtomicPtr<Group<K>>,
    group: &Group<K>,
    max_group_size: usize,
) -> Option<Rebuild<'l, K>> {
    let split_pivots = split_pivots(group, max_group_size);
    (!split_pivots.is_empty()).then(|| Rebuild::split(link, split_pivots))
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
