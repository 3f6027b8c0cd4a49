//! The non-blocking resize of one group (§3.6, Algorithm 10; digest §3.18, §4.6 cases 17–18).
//!
//! 1. *Train* (line 2): read the group's live keys (under a hashed root only their count);
//!    size the new group at `keys / target_load_factor` buckets (or as asked) and train its
//!    placement, learned or hashed by measured conflicts (see `model`); allocate the new
//!    group, all buckets uninitialised.
//! 2. *Freeze* (lines 3, 9): publish the new group as the old group's `tmp_group`. The
//!    paper sets `frozen`, waits for barrier B1 and only then allocates and publishes
//!    `tmp_group`, so puts of new keys retry (wait) meanwhile; here the new group exists
//!    before the freeze and the non-NULL `tmp_group` *is* the frozen flag, so no put ever
//!    waits. Duplicates are still impossible: an old-group insert re-checks `tmp_group` under
//!    the key's home-bucket lock (see `group`).
//! 3. *B1*: every operation that might still insert into the old group (it read `tmp_group`
//!    NULL) has finished, so the old group's set of records is final.
//! 4. *Migrate* (lines 10–11): for each live record of the old group, read in memory order
//!    (the buckets, then the chain nodes as their arena holds them: the record set is final
//!    after B1, so no chain link need be followed), add a pointer record to the new group
//!    under the new group's bucket locks, unless the new group already holds the key (a
//!    worker inserted it after the old record was removed: digest bug-risk "must not
//!    overwrite a live key"); removed records are skipped (never revived).
//! 5. *Swap* (line 13): the root slot now holds the new group.
//! 6. *B2*: no operation still works in the old group, so every write to a migrated record
//!    goes through its pointer record's lock.
//! 7. *Copy* (lines 15–16): `replace_pointer` on every pointer record, under its lock.
//! 8. *B3*: no reader still dereferences a pointer into the old group; free it (line 18).
//!
//! Only a holder of the restructure lock resizes, and only the groups of its share of the
//! slots, so a group is resized by one actor at a time, and a new group is never frozen again
//! before its copy phase ended. A background pass
//! resizes all the groups it found out of range as one batch that shares the three barriers
//! (each step above runs for every group of the batch before the next). A growing group gets
//! up to [`GROWTH`] times its buckets, as long as its load factor stays at least
//! `lower_load_factor` (the digest's open question of the target size, §3.18: the load-factor
//! target alone would leave a group that keeps taking inserts during its resize full again at
//! once). [`Phase`] names the boundaries at which the test hook runs.

use std::borrow::Borrow;

use concurrency::abort_on_unwind::AbortOnUnwind;
use concurrency::sync::atomic::Ordering;

use crate::group::Group;
use crate::index::{Restructurer, buckets_for};
use crate::key::HashKey;
use crate::model::{PlacementKind, Sample, Trained, most_slots_at_load};
use crate::record::{Record, Seen};

/// The least factor by which a resize that grows a group multiplies its bucket count.
pub(crate) const GROWTH: usize = 4;

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

/// One group's resize within a batch.
struct Job<K: HashKey> {
    slot: usize,
    old: *mut Group<K>,
    new: *mut Group<K>,
    /// The new bucket count against the old.
    change: std::cmp::Ordering,
}

/// A resize request: the slot, and the bucket count (`None`: by the load-factor target).
pub(crate) type Request = (usize, Option<usize>);

impl<K: HashKey> Restructurer<'_, K> {
    /// Resizes the groups of `requests` (distinct slots) together, sharing the three barriers,
    /// calling `hook` at every phase boundary (once per batch).
    ///
    /// Sharing the barriers matters when threads outnumber cores: a barrier waits for every
    /// online thread, and a preempted one holds it up for a scheduler time slice, so a pass
    /// that resized hundreds of groups one by one (three barriers each) could fall behind an
    /// index that grows by millions of keys per second.
    pub(crate) fn resize(&self, requests: &[Request], hook: &mut dyn FnMut(Phase)) {
        let jobs: Vec<Job<K>> = requests
            .iter()
            .map(|&(slot, buckets)| self.prepare(slot, buckets))
            .collect();
        let [old, new] = [|j: &Job<K>| j.old, |j: &Job<K>| j.new].map(|f| {
            jobs.iter()
                // SAFETY: the old groups are the current groups of slots in this restructurer's
                // share and the new ones were just allocated; none is freed before the end of
                // this function, and only the holder of a share (this restructurer, for these
                // slots) frees its groups.
                .map(|j| unsafe { &*f(j) })
                .collect::<Vec<&Group<K>>>()
        });
        // From the freeze on, a panic would leave pointer records that a later resize points
        // to in turn, which readers follow only one step.
        let _unfinished = AbortOnUnwind::new("a hash-index resize");
        for (job, old) in jobs.iter().zip(&old) {
            old.tmp_link().store(job.new, Ordering::Release);
        }
        hook(Phase::Frozen);
        self.synchronize(); // B1
        hook(Phase::AfterB1);
        for (old, new) in old.iter().zip(&new) {
            let migrate = |record: &Record| {
                if let Seen::Live(_) = record.read() {
                    // SAFETY: the record is initialised, so its key word is live while the
                    // group is, and only this restructurer frees it.
                    let key = unsafe { K::word_key(record.key_word()) };
                    new.place_pointer(key.borrow(), record);
                }
            };
            // SAFETY: the old group is frozen and B1 has passed: every placement into it
            // happened before, and none comes after.
            unsafe { old.visit_settled(migrate) };
        }
        hook(Phase::Migrated);
        for job in &jobs {
            self.link(job.slot).store(job.new, Ordering::Release);
        }
        hook(Phase::Swapped);
        self.synchronize(); // B2
        hook(Phase::AfterB2);
        for new in &new {
            new.replace_pointers(0..new.chain_count() / 2);
        }
        hook(Phase::MidCopy);
        for new in &new {
            new.replace_pointers(new.chain_count() / 2..new.chain_count());
        }
        self.synchronize(); // B3
        hook(Phase::AfterB3);
        drop(old);
        for job in jobs {
            // SAFETY: `job.old` came from `Box::into_raw`, left its slot before B2 and no
            // reader can reach it after B3 (its pointer records are all replaced); no
            // reference to it is left (`old` is dropped) and it is freed once.
            drop(unsafe { Box::from_raw(job.old) });
            self.count_resize(job.change);
        }
    }

    /// Step 1 for one group: reads its live keys, trains the new group's placement and
    /// allocates it.
    fn prepare(&self, slot: usize, buckets: Option<usize>) -> Job<K> {
        let old = self.group(slot);
        // Under a hashed root a group's keys are a hash-random subset of the key set, which no
        // linear model places better than the hash: skip collecting and training, and size the
        // new group by the live-key counter instead of a pass over the records.
        let root = self.inner().root_kind();
        let learnable = root == PlacementKind::Learned;
        let mut keys: Vec<K> = Vec::new();
        let live = if learnable {
            old.visit(0..old.chain_count(), |record| {
                if let Seen::Live(_) = record.read() {
                    // SAFETY: the record is initialised, so its key word is live while the
                    // group is, and only this restructurer frees it.
                    keys.push(unsafe { K::word_key(record.key_word()) });
                }
            });
            keys.len()
        } else {
            old.live().max(0) as usize
        };
        let exact = buckets.is_some();
        let buckets = buckets.unwrap_or_else(|| {
            let config = self.inner().config();
            let target = buckets_for(live, config);
            // A group that grows keeps growing while it is resized (inserts go to the new
            // group): give it up to `GROWTH` times its buckets, so that it is not full again at
            // once and an index growing from empty moves each key fewer times, but not so many
            // that its load factor starts under `lower_load_factor` (the next pass would shrink
            // it again), whatever the placement trained takes. With the default triggers that
            // is three times the buckets (2.4 times under a learned root, whose placements may
            // take a quarter more).
            if target > old.bucket_count() {
                let most = most_slots_at_load(live, config.lower_load_factor, root);
                target.max((GROWTH * old.bucket_count()).min(most))
            } else {
                target
            }
        });
        let trained = if learnable {
            Sample::of::<K>(keys.iter().map(Borrow::borrow)).train_buckets(buckets, exact)
        } else {
            Trained::hashed(buckets, live)
        };
        Job {
            slot,
            old: self.link(slot).load(Ordering::Acquire),
            change: trained.placement.slots().cmp(&old.bucket_count()),
            new: Box::into_raw(Box::new(Group::<K>::new(trained))),
        }
    }
}
