//! Group split (Algorithm 4, digest §3.10): one group becomes two, in two steps, without
//! blocking foreground operations.
//!
//! 1. *Logical split*: two frozen views of the group (`g'a` from the old pivot, `g'b` from the
//!    split pivot, `g'a.next = g'b`, `g'b.next` = the old `next`) share its records and delta
//!    index; `g'a` replaces the group in its link. Barrier **B1** drains the puts that still
//!    hold the old, unfrozen node, after which `buf` is insert-free; then each view gets its
//!    own `tmp_buf`, so a put of a new key lands in the half that owns it.
//! 2. *Merge, then copy* as in a compaction: the old array and `buf` merged into pointer
//!    records, cut at the split pivot into `ga` and `gb` (`ga.next = gb`), whose delta indexes
//!    are the views' `tmp_buf`s; `ga` replaces `g'a`; **B2**; the copy phase over both;
//!    **B3**; the old node and both views are freed.
//!
//! `gb` is reachable through `ga.next` until the next root update indexes it.
//!
//! Decision on the digest's flaw (§3.10, "pivot of a small array"): the split pivot is the
//! median of the group's array and delta keys together, moved up to the first key above the
//! group's pivot when needed (the first group may hold keys below its pivot); a group with no
//! such key is not split. So both halves are non-empty ranges and pivots stay strictly
//! increasing along the chain.

use std::cmp::Ordering as KeyOrdering;
use std::iter::Peekable;
use std::sync::Arc;

use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, train};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure, split_pointer_records};

impl<K: IndexKey> Restructurer<'_, K> {
    /// Splits the group held by `link` in two, calling `hook` at every phase boundary; false
    /// (and nothing done) when the group has no key above its pivot to split at.
    pub(crate) fn split_group(
        &self,
        link: &AtomicPtr<Group<K>>,
        hook: &mut dyn FnMut(Phase),
    ) -> bool {
        let old_ptr = link.load(Ordering::Acquire);
        let old = self
            .group_at(link)
            .expect("a split is asked for a non-NULL link");
        let Some(pivot) = split_pivot(old) else {
            return false;
        };
        let half_models = old.models().len().div_ceil(2);

        // Step 1: the logical split.
        let right_view = old.frozen_view(pivot.clone(), old.next_ptr()).into_node();
        let left_view = old.frozen_view(old.pivot().clone(), right_view).into_node();
        link.store(left_view, Ordering::Release);
        hook(Phase::Frozen);
        self.synchronize(); // B1
        let left_tmp = Arc::new(DeltaIndex::new());
        let right_tmp = Arc::new(DeltaIndex::new());
        {
            let left = self
                .group_at(link)
                .expect("the left view was just published");
            let right = left.next().expect("the left view links the right one");
            left.publish_tmp_buf(&left_tmp);
            right.publish_tmp_buf(&right_tmp);
        }
        hook(Phase::AfterB1);

        // Step 2.1: the merge phase, cut at the pivot.
        let (left_records, right_records) =
            split_pointer_records(old, pivot.borrow(), self.inner().config());
        let right_models = train(right_records.keys(), half_models);
        let right = Group::new(
            pivot,
            right_records,
            right_models,
            right_tmp,
            old.next_ptr(),
        )
        .into_node();
        let left_models = train(left_records.keys(), half_models);
        let left = Group::new(
            old.pivot().clone(),
            left_records,
            left_models,
            left_tmp,
            right,
        );
        link.store(left.into_node(), Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);

        // Step 2.2: the copy phase.
        let left = self
            .group_at(link)
            .expect("the left half was just published");
        let right = left.next().expect("the left half links the right one");
        self.copy_phase(&[left, right], hook);
        self.synchronize(); // B3
        left.enable_appends();
        right.enable_appends();
        hook(Phase::AfterB3);
        // SAFETY: the old node was unlinked at step 1 and the views at step 2.1; B2 and B3
        // have passed since, and the copy phase replaced every pointer into the old node's
        // records and delta index before B3. `old` is not used after this point.
        unsafe { self.retire([old_ptr, left_view, right_view]) };
        self.inner().count(Restructure::SplitGroup);
        true
    }
}

/// The pivot at which to split `group`: the median of its array and delta keys, or the first
/// such key above the group's pivot if the median is not; `None` when there is none.
fn split_pivot<K: IndexKey>(group: &Group<K>) -> Option<K> {
    let total = group.keys().len() + group.buf().len();
    let mut keys = MergedKeys {
        array: group.keys().iter().map(K::query).peekable(),
        delta: group.buf().iter().map(|(key, _)| key.borrow()).peekable(),
    };
    let pivot = group.pivot().borrow();
    let median = keys.by_ref().nth(total / 2)?;
    if median > pivot {
        return Some(K::from_query(median));
    }
    keys.find(|&key| key > pivot).map(K::from_query)
}

/// The items of two ascending sequences, merged in ascending order.
struct MergedKeys<A: Iterator, D: Iterator<Item = A::Item>> {
    array: Peekable<A>,
    delta: Peekable<D>,
}

impl<A, D> Iterator for MergedKeys<A, D>
where
    A: Iterator<Item: Ord>,
    D: Iterator<Item = A::Item>,
{
    type Item = A::Item;

    fn next(&mut self) -> Option<A::Item> {
        match (self.array.peek(), self.delta.peek()) {
            (Some(a), Some(d)) if a.cmp(d) == KeyOrdering::Greater => self.delta.next(),
            (Some(_), _) => self.array.next(),
            (None, _) => self.delta.next(),
        }
    }
}
