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
//!
//! A maintenance pass compacts groups in batches ([`Restructurer::compact_all`]): every step
//! above is applied to each group of the batch, and each barrier is passed once for all of
//! them. A group's steps keep their order relative to the barriers, and the groups share
//! nothing but the barriers (each is held by its own root slot), so the argument for one group
//! holds for each. A grace period costs a `membarrier` system call and its inter-processor
//! interrupts, which had been 28% of the background thread's time in the `rw` mix at write
//! ratio 0.5.

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
        self.compact_all(&[link], hook);
    }

    /// Compacts the groups held by `links` together, passing each barrier once for all of them
    /// and calling `hook` once at every phase boundary. No group of the batch may be linked from
    /// another's `next`: a compaction copies its group's `next` into the new group.
    pub(crate) fn compact_all(&self, links: &[&AtomicPtr<Group<K>>], hook: &mut dyn FnMut(Phase)) {
        let group = |link| {
            self.group_at(link)
                .expect("compaction is asked for a non-NULL link")
        };
        let old_ptrs: Vec<*mut Group<K>> = links
            .iter()
            .map(|link| link.load(Ordering::Acquire))
            .collect();
        for &link in links {
            group(link).freeze();
        }
        hook(Phase::Frozen);
        self.synchronize(); // B1
        let tmps: Vec<Arc<DeltaIndex<K>>> = links
            .iter()
            .map(|&link| {
                let tmp = Arc::new(DeltaIndex::new());
                group(link).publish_tmp_buf(&tmp);
                tmp
            })
            .collect();
        hook(Phase::AfterB1);
        let config = self.inner().config();
        for (&link, tmp) in links.iter().zip(tmps) {
            let new_ptr = {
                let old = group(link);
                let len = old.keys().len() + old.buf().len();
                let records = pointer_records(&[old], config.spare_for(len));
                let models = train(records.keys(), old.models().len());
                let new = Group::new(old.pivot().clone(), records, models, tmp, old.next_ptr());
                new.into_node()
            };
            link.store(new_ptr, Ordering::Release);
        }
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        let news: Vec<&Group<K>> = links
            .iter()
            .map(|&link| {
                self.group_at(link)
                    .expect("the new group was just published")
            })
            .collect();
        self.copy_phase(&news, hook);
        self.synchronize(); // B3
        for new in &news {
            new.enable_appends();
        }
        hook(Phase::AfterB3);
        // SAFETY: each old group was unlinked by its swap above, B2 and B3 have passed since,
        // and the copy phase replaced every pointer into them before B3; the borrows of them
        // ended with the merge phase's blocks.
        unsafe { self.retire(old_ptrs) };
        for _ in links {
            self.inner().count(Restructure::Compact);
        }
    }
}
