//! Group merge (§3.3 op e; digest §3.11, which the paper leaves without pseudocode): two
//! neighbouring groups A and B become one group N, without blocking foreground operations.
//!
//! 1. Freeze both delta indexes; barrier **B1**; publish *one* `tmp_buf` T as the `tmp_buf`
//!    of both, so a put of a new key lands in T whichever group routed it.
//! 2. Merge A's array and `buf`, then B's, into pointer records; N takes A's pivot, B's `next`
//!    and T as its `buf`, and `min(A's + B's models, m)` models.
//! 3. Publish N in A's link, *then* clear B's link when it is a root slot (a lookup that finds
//!    the slot NULL walks left and, by the release/acquire pair on the slots, finds N; B's
//!    range is never routed to A alone, which would let an insert duplicate one of B's keys:
//!    the digest's §3.11 bug risk). When B is A's `next`, A's node is simply no longer
//!    reachable and its link is left alone for the operations still holding it.
//! 4. **B2**, the copy phase over N, **B3**, then A and B are freed (T lives on in N).
//!
//! The NULL slot stays until the root update that the policy runs after every pass that
//! created or removed groups.

use std::ptr;
use std::sync::Arc;

use concurrency::abort_on_unwind::AbortOnUnwind;
use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, train};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure, pointer_records};

/// Where the group B that follows a group A is linked from.
pub(crate) enum Successor<'a, K: IndexKey> {
    /// A's own `next`.
    Chained,
    /// A root slot (A ends its slot's chain).
    Slot(&'a AtomicPtr<Group<K>>),
}

impl<K: IndexKey> Restructurer<'_, K> {
    /// Merges the group held by `link` with the group that follows it, linked as `successor`
    /// says, calling `hook` at every phase boundary.
    pub(crate) fn merge_groups(
        &self,
        link: &AtomicPtr<Group<K>>,
        successor: Successor<'_, K>,
        hook: &mut dyn FnMut(Phase),
    ) {
        let first_ptr = link.load(Ordering::Acquire);
        let first = self
            .group_at(link)
            .expect("a merge is asked for a non-NULL link");
        let second_link = match successor {
            Successor::Chained => first.next_link(),
            Successor::Slot(slot) => slot,
        };
        let second_ptr = second_link.load(Ordering::Acquire);
        let second = self
            .group_at(second_link)
            .expect("a merge is asked for a group with a successor");
        debug_assert!(second.pivot() > first.pivot(), "groups are neighbours");

        // From the freeze on, a panic would leave inserts waiting for a buffer never published.
        let _unfinished = AbortOnUnwind::new("a group merge");
        first.freeze();
        second.freeze();
        hook(Phase::Frozen);
        self.synchronize(); // B1
        let tmp = Arc::new(DeltaIndex::new());
        first.publish_tmp_buf(&tmp);
        second.publish_tmp_buf(&tmp);
        hook(Phase::AfterB1);

        let spare = self
            .inner()
            .config()
            .spare_for(first.keys().len() + second.keys().len());
        let records = pointer_records(&[first, second], spare);
        let model_count = (first.models().len() + second.models().len())
            .clamp(1, self.inner().config().max_models);
        let models = train(records.keys(), model_count);
        let merged = Group::new(
            first.pivot().clone(),
            records,
            models,
            tmp,
            second.next_ptr(),
        );
        link.store(merged.into_node(), Ordering::Release);
        if let Successor::Slot(slot) = successor {
            slot.store(ptr::null_mut(), Ordering::Release);
        }
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        let merged = self
            .group_at(link)
            .expect("the merged group was just published");
        self.copy_phase(&[merged], hook);
        self.synchronize(); // B3
        merged.enable_appends();
        hook(Phase::AfterB3);
        // SAFETY: both groups were unlinked by the publication above (the second through its
        // slot, or through the first's `next`); B2 and B3 have passed since, and the copy
        // phase replaced every pointer into them before B3. Neither is used after this point.
        unsafe { self.retire([first_ptr, second_ptr]) };
        self.inner().count(Restructure::MergeGroup);
    }
}
