//! The non-blocking resize of one group (§3.6, Algorithm 10; digest §3.18, §4.6 cases 17–18).
//!
//! 1. *Train* (line 2): read the group's live keys; size the new group at
//!    `keys / target_load_factor` buckets (or as asked) and train its placement, learned or
//!    hashed by measured conflicts (see `model`); allocate the new group, all buckets
//!    uninitialised.
//! 2. *Freeze* (lines 3, 9): publish the new group as the old group's `tmp_group`. The
//!    paper sets `frozen`, waits for barrier B1 and only then allocates and publishes
//!    `tmp_group`, so puts of new keys retry (wait) meanwhile; here the new group exists
//!    before the freeze and the non-NULL `tmp_group` *is* the frozen flag, so no put ever
//!    waits. Duplicates are still impossible: an old-group insert re-checks `tmp_group` under
//!    the key's home-bucket lock (see `group`).
//! 3. *B1*: every operation that might still insert into the old group (it read `tmp_group`
//!    NULL) has finished, so the old group's set of records is final.
//! 4. *Migrate* (lines 10–11): for each live record of the old group, add a pointer record to
//!    the new group under the new group's bucket locks, unless the new group already holds the
//!    key (a worker inserted it after the old record was removed: digest bug-risk "must not
//!    overwrite a live key"); removed records are skipped (never revived).
//! 5. *Swap* (line 13): the root slot now holds the new group.
//! 6. *B2*: no operation still works in the old group, so every write to a migrated record
//!    goes through its pointer record's lock.
//! 7. *Copy* (lines 15–16): `replace_pointer` on every pointer record, under its lock.
//! 8. *B3*: no reader still dereferences a pointer into the old group; free it (line 18).
//!
//! Only the holder of the restructure lock resizes, so a group is resized by one actor at a
//! time, and a new group is never frozen again before its copy phase ended. [`Phase`] names
//! the boundaries at which the test hook runs.

use std::borrow::Borrow;

use concurrency::sync::atomic::Ordering;

use crate::group::Group;
use crate::index::{Restructurer, buckets_for};
use crate::key::HashKey;
use crate::model::Sample;
use crate::record::Seen;

/// A boundary between two steps of a resize, at which the test hook of
/// [`XIndexH::resize_slot_with`](crate::XIndexH::resize_slot_with) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// `tmp_group` is published (the group is frozen); barrier B1 has not run.
    Frozen,
    /// B1 has passed; the migration has not started.
    AfterB1,
    /// Every live record has a pointer record in the new group; the slot still holds the old.
    Migrated,
    /// The new group has replaced the old one in its slot; B2 has not run.
    Swapped,
    /// B2 has passed; the copy phase has not started.
    AfterB2,
    /// The first half of the new group's records hold values, the second half may still
    /// hold pointers.
    MidCopy,
    /// B3 has passed; the old group is about to be freed.
    AfterB3,
}

impl Phase {
    /// Every phase boundary of a resize, in the order they are reached.
    pub const ALL: [Phase; 7] = [
        Phase::Frozen,
        Phase::AfterB1,
        Phase::Migrated,
        Phase::Swapped,
        Phase::AfterB2,
        Phase::MidCopy,
        Phase::AfterB3,
    ];
}

impl<K: HashKey> Restructurer<'_, K> {
    /// Resizes the group in `slot` to `buckets` buckets (`None`: by the load-factor target),
    /// calling `hook` at every phase boundary.
    pub(crate) fn resize(&self, slot: usize, buckets: Option<usize>, hook: &mut dyn FnMut(Phase)) {
        let old = self.group(slot);
        let old_ptr = self.link(slot).load(Ordering::Acquire);
        let old_buckets = old.bucket_count();
        let mut keys: Vec<K> = Vec::new();
        old.visit(0..old.chain_count(), |record| {
            if let Seen::Live(_) = record.read() {
                // SAFETY: the record is initialised, so its key word is live while the group
                // is, and only this restructurer frees it.
                keys.push(unsafe { K::word_key(record.key_word()) });
            }
        });
        let exact = buckets.is_some();
        let buckets = buckets.unwrap_or_else(|| buckets_for(keys.len(), self.inner().config()));
        let trained =
            Sample::of::<K>(keys.iter().map(Borrow::borrow)).train_buckets(buckets, exact);
        let buckets = trained.placement.slots();
        drop(keys);
        let new_ptr = Box::into_raw(Box::new(Group::<K>::new(trained)));
        // SAFETY: just allocated; freed only by a later resize of its slot or the index's
        // drop, neither of which can run while this restructurer holds the lock.
        let new = unsafe { &*new_ptr };

        old.tmp_link().store(new_ptr, Ordering::Release);
        hook(Phase::Frozen);
        self.synchronize(); // B1
        hook(Phase::AfterB1);
        old.visit(0..old.chain_count(), |record| {
            if let Seen::Live(_) = record.read() {
                // SAFETY: as above.
                let key = unsafe { K::word_key(record.key_word()) };
                new.place_pointer(key.borrow(), record);
            }
        });
        hook(Phase::Migrated);
        self.link(slot).store(new_ptr, Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        let heads = new.chain_count();
        new.replace_pointers(0..heads / 2);
        hook(Phase::MidCopy);
        new.replace_pointers(heads / 2..heads);
        self.synchronize(); // B3
        hook(Phase::AfterB3);
        // SAFETY: `old_ptr` came from `Box::into_raw`, left its slot before B2 and no reader
        // can reach it after B3 (its pointer records are all replaced); it is freed once.
        drop(unsafe { Box::from_raw(old_ptr) });
        self.count_resize(buckets >= old_buckets);
    }
}
