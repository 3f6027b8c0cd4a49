//! Two-phase compaction (§3.2.1, Algorithm 3 as rebuilt in digest §3.8): merges a group's
//! delta index into a new sorted array without blocking foreground operations.
//!
//! 1. *Merge phase*: freeze `buf`; barrier **B1** (every put that saw `buf` unfrozen has
//!    finished, so `buf` is now insert-free and its entries stay put); publish a fresh
//!    `tmp_buf`, which takes the inserts from now on; merge the array and `buf` into an array
//!    of *pointer* records to the live ones; train the models; build the new group (same pivot,
//!    same `next`, its `buf` is the `tmp_buf`) and swap it into its link; barrier **B2** (no
//!    writer still updates an old record through the old group, bypassing the new record's
//!    lock).
//! 2. *Copy phase*: `replace_pointer` on every new record (it holds the new record's lock, so
//!    it copies the latest value); barrier **B3** (no reader still dereferences into the old
//!    group); free the old group, whose `tmp_buf` reference is released with it while the new
//!    group keeps its own.

use std::sync::Arc;

use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, train};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure, pointer_records};

impl<K: IndexKey> Restructurer<'_, K> {
    /// Compacts the group held by `link` (a root slot or a group's `next`), calling `hook` at
    /// every phase boundary.
    pub(crate) fn compact(&self, link: &AtomicPtr<Group<K>>, hook: &mut dyn FnMut(Phase)) {
        let old_ptr = link.load(Ordering::Acquire);
        let new_ptr = {
            let old = self
                .group_at(link)
                .expect("compaction is asked for a non-NULL link");
            old.freeze();
            hook(Phase::Frozen);
            self.synchronize(); // B1
            let tmp = Arc::new(DeltaIndex::new());
            old.publish_tmp_buf(&tmp);
            hook(Phase::AfterB1);
            let config = self.inner().config();
            let len = old.keys().len() + old.buf().len();
            let records = pointer_records(old, config.spare_for(len));
            let models = train(records.keys(), old.models().len());
            let new = Group::new(old.pivot().clone(), records, models, tmp, old.next_ptr());
            Box::into_raw(Box::new(new))
        };
        link.store(new_ptr, Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        let new = self
            .group_at(link)
            .expect("the new group was just published");
        self.copy_phase(&[new], hook);
        self.synchronize(); // B3
        new.enable_appends();
        hook(Phase::AfterB3);
        // SAFETY: `old_ptr` was unlinked by the swap above, B2 and B3 have passed since, and
        // the copy phase replaced every pointer into it before B3; the borrow of it ended with
        // the merge phase's block.
        unsafe { self.retire([old_ptr]) };
        self.inner().count(Restructure::Compact);
    }
}
