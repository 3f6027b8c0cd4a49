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
//! A group split (`split`) runs the same steps, each group's `buf` frozen through views of
//! the pieces instead of in place, its merge phase cutting the records at the split pivots. A
//! maintenance pass rebuilds groups in batches ([`Restructurer::rebuild_all`]), compactions
//! and splits together: every step above is applied to each group of the batch, and each
//! barrier is passed once for all of them. A group's steps keep their order relative to the
//! barriers, and the groups share nothing but the barriers (each is held by its own root
//! slot), so the argument for one group holds for each. A grace period costs a `membarrier`
//! system call and its inter-processor interrupts, which had been 28% of the background
//! thread's time in the `rw` mix at write ratio 0.5 before compactions were batched, and 26%
//! before splits joined them (README design notes, "XIndex-R's structural changes").

use std::iter;
use std::sync::Arc;

use concurrency::abort_on_unwind::AbortOnUnwind;
use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, train};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure, split_pointer_records};

/// One group's rebuild in a batch: a compaction, or a split at `split_pivots`.
pub(crate) struct Rebuild<'l, K: IndexKey> {
    /// The link holding the group (a root slot or a group's `next`).
    link: &'l AtomicPtr<Group<K>>,
    /// Where the split cuts the group (ascending, above its pivot); none for a compaction.
    split_pivots: Vec<K>,
}

impl<'l, K: IndexKey> Rebuild<'l, K> {
    /// The compaction of the group held by `link`.
    pub(crate) fn compaction(link: &'l AtomicPtr<Group<K>>) -> Self {
        Self {
            link,
            split_pivots: Vec::new(),
        }
    }

    /// The split of the group held by `link` at `split_pivots` (not empty; see
    /// [`planned_split`](crate::xindex::split::planned_split)).
    pub(crate) fn split(link: &'l AtomicPtr<Group<K>>, split_pivots: Vec<K>) -> Self {
        debug_assert!(!split_pivots.is_empty(), "a split cuts the group somewhere");
        Self { link, split_pivots }
    }

    /// The change the rebuild makes.
    fn change(&self) -> Restructure {
        if self.split_pivots.is_empty() {
            Restructure::Compact
        } else {
            Restructure::SplitGroup
        }
    }

    /// The groups the rebuild makes.
    fn pieces(&self) -> usize {
        self.split_pivots.len() + 1
    }
}

impl<K: IndexKey> Restructurer<'_, K> {
    /// Compacts the group held by `link` (a root slot or a group's `next`), calling `hook` at
    /// every phase boundary.
    pub(crate) fn compact(&self, link: &AtomicPtr<Group<K>>, hook: &mut dyn FnMut(Phase)) {
        self.rebuild_all(&[Rebuild::compaction(link)], hook);
    }

    /// Runs `rebuilds` together, passing each barrier once for all of them and calling `hook`
    /// once at every phase boundary. No group of the batch may be linked from another's
    /// `next`: a rebuild copies its group's `next` into the last group it makes.
    pub(crate) fn rebuild_all(&self, rebuilds: &[Rebuild<'_, K>], hook: &mut dyn FnMut(Phase)) {
        let config = self.inner().config();
        let olds: Vec<(*mut Group<K>, &Group<K>)> = rebuilds
            .iter()
            .map(|rebuild| {
                let old = self
                    .group_at(rebuild.link)
                    .expect("a rebuild is asked for a non-NULL link");
                (rebuild.link.load(Ordering::Acquire), old)
            })
            .collect();

        // From the freeze on, a panic would leave inserts waiting for a buffer never published.
        let _unfinished = AbortOnUnwind::new("a compaction or group split");
        // A compaction freezes its group in place; a split links one frozen view of the group
        // per piece (built from the last to the first) in its place.
        let mut views = Vec::new();
        for (rebuild, &(_, old)) in rebuilds.iter().zip(&olds) {
            if rebuild.split_pivots.is_empty() {
                old.freeze();
                continue;
            }
            let mut next = old.next_ptr();
            for pivot in rebuild.split_pivots.iter().rev() {
                next = old.frozen_view(pivot.clone(), next).into_node();
                views.push(next);
            }
            let first_view = old.frozen_view(old.pivot().clone(), next).into_node();
            views.push(first_view);
            rebuild.link.store(first_view, Ordering::Release);
        }
        hook(Phase::Frozen);
        self.synchronize(); // B1
        let tmps: Vec<Vec<Arc<DeltaIndex<K>>>> = rebuilds
            .iter()
            .map(|rebuild| {
                self.chain(rebuild.link, rebuild.pieces())
                    .into_iter()
                    .map(|frozen| {
                        let tmp = Arc::new(DeltaIndex::new());
                        frozen.publish_tmp_buf(&tmp);
                        tmp
                    })
                    .collect()
            })
            .collect();
        hook(Phase::AfterB1);

        // The merge phase: each piece's groups built from the last to the first.
        for ((rebuild, &(_, old)), tmps) in rebuilds.iter().zip(&olds).zip(tmps) {
            let records = split_pointer_records(old, &rebuild.split_pivots, config);
            let models_each = old.models().len().div_ceil(rebuild.pieces());
            let pivots: Vec<&K> = iter::once(old.pivot())
                .chain(&rebuild.split_pivots)
                .collect();
            let mut next = old.next_ptr();
            for ((pivot, records), tmp) in pivots.into_iter().zip(records).zip(tmps).rev() {
                let models = train(records.keys(), models_each);
                next = Group::new(pivot.clone(), records, models, tmp, next).into_node();
            }
            rebuild.link.store(next, Ordering::Release);
        }
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);

        // The copy phase.
        let news: Vec<&Group<K>> = rebuilds
            .iter()
            .flat_map(|rebuild| self.chain(rebuild.link, rebuild.pieces()))
            .collect();
        self.copy_phase(&news, hook);
        self.synchronize(); // B3
        for new in &news {
            new.enable_appends();
        }
        hook(Phase::AfterB3);
        // SAFETY: each old group was unlinked by its swap or its first view's store, and each
        // view by its piece's swap; B2 and B3 have passed since, and the copy phase replaced
        // every pointer into the old groups' records and delta indexes before B3. The borrows
        // of the old groups end here.
        unsafe { self.retire(olds.into_iter().map(|(old, _)| old).chain(views)) };
        for rebuild in rebuilds {
            self.inner().count(rebuild.change());
        }
    }

    /// The first `count` groups of the chain that starts at `link`.
    fn chain<'a>(&'a self, link: &'a AtomicPtr<Group<K>>, count: usize) -> Vec<&'a Group<K>> {
        let chain: Vec<&Group<K>> = iter::successors(self.group_at(link), |group| group.next())
            .take(count)
            .collect();
        debug_assert_eq!(chain.len(), count, "the rebuild linked every piece");
        chain
    }
}
