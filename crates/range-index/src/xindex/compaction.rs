//! Two-phase compaction (§3.2.1, Algorithm 3 as rebuilt in digest §3.8): merges a group's
//! delta index into a new sorted array without blocking foreground operations.
//!
//! 1. *Merge phase*: freeze `buf`; barrier **B1** (every put that saw `buf` unfrozen has
//!    finished, so `buf` is now insert-free and its entries stay put); publish a fresh
//!    `tmp_buf`, which takes the inserts from now on; merge the array and `buf` into an array
//!    of *pointer* records to the live ones (removed records and entries are skipped: neither
//!    is ever revived); train the models; build the new group (same pivot, same `next`, its
//!    `buf` is the `tmp_buf`) and swap it into its link; barrier **B2** (no writer still
//!    updates an old record through the old group, bypassing the new record's lock).
//! 2. *Copy phase*: `replace_pointer` on every new record (it holds the new record's lock, so
//!    it copies the latest value); barrier **B3** (no reader still dereferences into the old
//!    group); free the old group, whose `tmp_buf` reference is released with it while the new
//!    group keeps its own.
//!
//! Only the holder of the restructure lock compacts, so one group is restructured by one
//! actor at a time, and only it frees groups. It does not need to be online: what it reads
//! cannot be freed under it. [`Phase`] names the boundaries at which the test hook runs.

use std::cmp::Ordering as KeyOrdering;
use std::sync::Arc;

use concurrency::RecordCell;
use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::delta::DeltaIndex;
use crate::xindex::group::{Group, Records};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::record;

/// A boundary between two steps of a compaction, at which the test hook of
/// [`XIndex::compact_slot_with`](crate::xindex::XIndex::compact_slot_with) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `buf` is frozen; barrier B1 has not run.
    Frozen,
    /// B1 has passed and `tmp_buf` is published; the merge has not started.
    AfterB1,
    /// The new group (pointer records) has replaced the old one; B2 has not run.
    Swapped,
    /// B2 has passed; the copy phase has not started.
    AfterB2,
    /// The first half of the new records hold values, the second half still pointers.
    MidCopy,
    /// B3 has passed; the old group is about to be freed.
    AfterB3,
}

impl Phase {
    /// Every phase boundary of a compaction, in the order they are reached.
    pub const ALL: [Phase; 6] = [
        Phase::Frozen,
        Phase::AfterB1,
        Phase::Swapped,
        Phase::AfterB2,
        Phase::MidCopy,
        Phase::AfterB3,
    ];
}

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
            let new = Group::new(
                old.pivot().clone(),
                merge(old),
                old.models().len(),
                tmp,
                old.next_ptr(),
            );
            Box::into_raw(Box::new(new))
        };
        link.store(new_ptr, Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        {
            let new = self
                .group_at(link)
                .expect("the new group was just published");
            debug_assert!(
                std::ptr::eq(new, new_ptr),
                "only this restructurer swaps links"
            );
            let (first, second) = new.cells().split_at(new.cells().len() / 2);
            first.iter().for_each(record::replace_pointer);
            hook(Phase::MidCopy);
            second.iter().for_each(record::replace_pointer);
        }
        self.synchronize(); // B3
        hook(Phase::AfterB3);
        // SAFETY: `old_ptr` came from `Box::into_raw` and was unlinked by the swap above; B2
        // and B3 have passed since, so no operation can still reach it, and pointer records
        // into it were all replaced before B3. This restructurer made no reference to it that
        // is still in use (its borrow ended with the merge phase's block).
        drop(unsafe { Box::from_raw(old_ptr) });
        self.inner().count_compaction();
    }
}

/// The merge phase's array: one pointer record per live record of `group`'s array and
/// (frozen, insert-free) `buf`, in key order.
fn merge<K: IndexKey>(group: &Group<K>) -> Records<K> {
    let capacity = group.keys().len() + group.buf().len();
    let mut keys = Vec::with_capacity(capacity);
    let mut cells = Vec::with_capacity(capacity);
    let mut push = |key: &K, cell: &RecordCell| {
        debug_assert!(
            !cell.read().0.is_ptr(),
            "the previous copy phase left no pointer (pointer depth is 1)"
        );
        if record::read(cell).is_some() {
            keys.push(key.clone());
            cells.push(record::pointer_to(cell));
        }
    };
    let mut array = group.keys().iter().zip(group.cells()).peekable();
    let mut delta = group.buf().iter().peekable();
    loop {
        let order = match (array.peek(), delta.peek()) {
            (None, None) => break,
            (Some(_), None) => KeyOrdering::Less,
            (None, Some(_)) => KeyOrdering::Greater,
            (Some((a, _)), Some((d, _))) => (*a).cmp(*d),
        };
        match order {
            KeyOrdering::Less => {
                let (key, cell) = array.next().expect("peeked");
                push(key, cell);
            }
            KeyOrdering::Greater => {
                let (key, cell) = delta.next().expect("peeked");
                push(key, cell);
            }
            KeyOrdering::Equal => {
                // A removed array record whose key was inserted again into `buf`: at most one
                // of the two is live (I1), and that one is kept.
                let (key, array_cell) = array.next().expect("peeked");
                let (_, delta_cell) = delta.next().expect("peeked");
                let live = if record::read(array_cell).is_some() {
                    array_cell
                } else {
                    delta_cell
                };
                push(key, live);
            }
        }
    }
    Records::new(keys, cells)
}
