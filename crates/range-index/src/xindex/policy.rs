//! The runtime adjustment policy (§3.3, Table 2; digest §3.13): one maintenance pass over every
//! group, and the forced changes of the test hook.
//!
//! Per group, at most one change per pass (the reference code's guard against ping-pong), in
//! this order, with `err` the mean over the group's models of their largest error:
//!
//! | change | trigger |
//! |---|---|
//! | group split | `buf` holds more than `s` keys, or `err > e` with `m` models, or (not in Table 2) the array holds more than [`max_group_size`](crate::xindex::Config::max_group_size) keys; in two, or in pieces of at most `max_group_size` live keys (`split`) |
//! | compaction, for removed records | a sample says more than half of the array's records are removed (not in Table 2) |
//! | model split | `err > e` with fewer than `m` models |
//! | model merge | `err <= e·f` with more than one model, if one model fewer stays within `e` |
//! | group merge | with the next group: both one model (or none), `err <= e·f`, `buf <= s·f`, together at most [`max_group_size`](crate::xindex::Config::max_group_size) keys, and one model over both within `e` |
//! | compaction | `buf` holds more than the compaction limit ([`CompactionTrigger`]), or as many keys were appended since the models were trained (§3.5.2) |
//!
//! A pass that split or merged groups ends with a root update. The pieces of a split and the
//! result of a merge are not revisited in the same pass.
//!
//! Decisions on the digest's gaps (§9): the error metric is the mean of the models' largest
//! errors, in positions (reference code); the group-merge buffer condition is the paper's
//! `s·f`; model and group merges are checked against a trial fit, so a merge never produces
//! a group that the next pass would split again. Every condition reads a group that no one
//! else restructures (the pass holds the restructure lock), so its figures are stable except
//! `buf`'s size, which only grows, and which of its records are removed.

use concurrency::Share;
use concurrency::sync::atomic::AtomicPtr;

use crate::xindex::compaction::Rebuild;
use crate::xindex::config::Config;
use crate::xindex::group::{Group, fit, mean_error, train};
use crate::xindex::index::{Inner, Restructurer};
use crate::xindex::key::IndexKey;
use crate::xindex::merge::Successor;
use crate::xindex::record;
use crate::xindex::restructure::{Phase, Restructure};
use crate::xindex::split::planned_split;

/// The most rebuilds (compactions and group splits) a maintenance pass runs together, sharing
/// their three grace periods: enough to make the barriers' cost small next to the copying, few
/// enough that the new arrays of one batch (built before the old ones are freed) stay a small
/// part of the index.
const REBUILD_BATCH: usize = 64;

impl<K: IndexKey> Inner<K> {
    /// One maintenance pass: every group checked against the policy, the delta index
    /// compacted when `trigger` says so, but only in the root slots `compacts` holds (the
    /// others' compactions are left to the passes of their shares, [`compaction_pass`]). True
    /// if it changed anything.
    ///
    /// Compactions and group splits of groups held by root slots wait in a batch of up to
    /// [`REBUILD_BATCH`], run together ([`Restructurer::rebuild_all`]) when it is full,
    /// before any other change, and at the end of the pass. A deferred group keeps its link:
    /// a later change touches only groups after it, and the root update runs after the last
    /// batch. A pass that changed groups without a root update refreshes the root's table
    /// and window hints ([`Root::refresh_hints`](crate::xindex::root::Root::refresh_hints)).
    /// A group linked from another's `next` (a later piece of a split the root does not index
    /// yet), or that has a `next`, is rebuilt at once.
    ///
    /// [`compaction_pass`]: Self::compaction_pass
    pub(crate) fn maintenance_pass(&self, trigger: CompactionTrigger, compacts: Share) -> bool {
        let restructurer = self.restructurer();
        let mut changed = false;
        let mut regrouped = false;
        let root = restructurer.root();
        let mut batch = Batch::new(&restructurer);
        for slot in 0..root.slot_count() {
            let mut link = root.link(slot);
            let mut from_slot = true;
            while let Some(group) = restructurer.group_at(link) {
                let after = group.next_ptr();
                let mut change =
                    restructurer.decide(root_successor(&restructurer, slot, group), group, trigger);
                let mut done = match change {
                    Some(Restructure::Compact) if !compacts.holds(slot) => false,
                    Some(Restructure::Compact) => {
                        batch.compact(link, from_slot, group);
                        true
                    }
                    Some(Restructure::SplitGroup) => batch.split(link, from_slot, group),
                    Some(change) => {
                        batch.flush();
                        restructurer.apply(link, slot, change, &mut |_| {})
                    }
                    None => false,
                };
                // A group with no key to split at still has its delta index merged.
                if !done && change == Some(Restructure::SplitGroup) && trigger.due(group) {
                    change = Some(Restructure::Compact);
                    batch.compact(link, from_slot, group);
                    done = true;
                }
                changed |= done;
                regrouped |= done
                    && matches!(
                        change,
                        Some(Restructure::SplitGroup | Restructure::MergeGroup)
                    );
                let current = restructurer
                    .group_at(link)
                    .expect("changes replace a group, never unlink its link");
                link = match (done, change) {
                    // Skip the other pieces.
                    (true, Some(Restructure::SplitGroup)) => {
                        let mut piece = current;
                        while piece.next_ptr() != after {
                            piece = piece.next().expect("a split links its pieces");
                        }
                        piece.next_link()
                    }
                    _ => current.next_link(),
                };
                from_slot = false;
            }
        }
        batch.flush();
        if regrouped {
            restructurer.update_root(&mut |_| {});
        } else if changed {
            let root = restructurer.root();
            root.refresh_hints(0..root.slot_count());
        }
        changed
    }

    /// One compaction pass over `share` of the root slots (digest §3.13: each background thread
    /// owns a disjoint set of groups): every group of those slots' chains whose delta index,
    /// appended keys or removed records call for it (`trigger`) is compacted, batched as in
    /// [`maintenance_pass`](Self::maintenance_pass). It holds its share of the
    /// restructure lock, so the passes of the split's other shares run at the same time (a pass
    /// of the same share, or of another split, waits); it makes no other change (splits,
    /// merges and root updates need the lock exclusively), then refreshes the root's table
    /// hints of its slots. True if it compacted anything.
    pub(crate) fn compaction_pass(&self, trigger: CompactionTrigger, share: Share) -> bool {
        let restructurer = self.partial_restructurer(share);
        let root = restructurer.root();
        let mut batch = Batch::new(&restructurer);
        let mut changed = false;
        for slot in share.items(root.slot_count()) {
            let mut link = root.link(slot);
            let mut from_slot = true;
            while let Some(group) = restructurer.group_at(link) {
                if trigger.due(group) {
                    batch.compact(link, from_slot, group);
                    changed = true;
                }
                link = restructurer
                    .group_at(link)
                    .expect("a compaction replaces a group, never unlinks its link")
                    .next_link();
                from_slot = false;
            }
        }
        batch.flush();
        if changed {
            root.refresh_hints(share.items(root.slot_count()));
        }
        changed
    }
}

/// When a group is compacted: once its delta index, or the keys appended to its array since
/// its models were trained (§3.5.2), number more than the larger of `threshold` and
/// `1/ratio` of its array's keys (`ratio` 0: `threshold` alone).
///
/// A compaction copies the whole array, so a fixed threshold (the reference code's 8) makes a
/// group of 8,000 keys copy a thousand records per buffered key, and under a steady trickle of
/// inserts every group of a large index is copied on every pass (10M keys, 10% writes, one
/// worker: the background thread busy 1.37 s of a 6-second run; 0.50 s with the proportional
/// part, README design notes). The proportional part bounds the copying per buffered key
/// by `ratio`; small groups still compact at `threshold`, and `s` (the split trigger) is not
/// affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompactionTrigger {
    threshold: usize,
    ratio: usize,
}

impl CompactionTrigger {
    /// Every non-empty delta index (and every appended key) is merged: `quiesce`.
    pub(crate) const ALWAYS: Self = Self {
        threshold: 0,
        ratio: 0,
    };

    /// The configured trigger.
    pub(crate) fn of(config: &Config) -> Self {
        Self {
            threshold: config.compaction_threshold,
            ratio: config.compaction_ratio,
        }
    }

    /// Whether `group` is due for a compaction: for its delta index or appended keys
    /// ([`buffered_due`](Self::buffered_due)), or for its removed records
    /// ([`purge_due`](Self::purge_due)).
    fn due<K: IndexKey>(self, group: &Group<K>) -> bool {
        self.buffered_due(group) || self.purge_due(group)
    }

    /// Whether `group`'s delta index or its keys appended since the models were trained
    /// number more than the larger of `threshold` and `1/ratio` of its array.
    fn buffered_due<K: IndexKey>(self, group: &Group<K>) -> bool {
        let proportional = group.keys().len().checked_div(self.ratio).unwrap_or(0);
        let limit = self.threshold.max(proportional);
        group.buf().len() > limit || group.appended() > limit
    }

    /// Whether more than the larger of `threshold` and `1/`[`REMOVED_SHARE`] of `group`'s
    /// array records are removed, as a sample estimates ([`removed_estimate`]).
    ///
    /// Not in Table 2: without it, a group whose keys are removed and never replaced (the
    /// oldest keys of a time series) would keep its records forever (README design notes,
    /// "Multi-way group split").
    fn purge_due<K: IndexKey>(self, group: &Group<K>) -> bool {
        removed_estimate(group) > self.threshold.max(group.keys().len() / REMOVED_SHARE)
    }
}

/// A group is compacted once more than one in this many of its array's records are removed.
const REMOVED_SHARE: usize = 2;

/// How many of a group's array records [`removed_estimate`] reads.
const REMOVED_SAMPLE: usize = 64;

/// How many of `group`'s array records are removed, estimated from up to [`REMOVED_SAMPLE`]
/// of them, evenly spaced: a pass reads a few cache lines per group, not its whole array.
fn removed_estimate<K: IndexKey>(group: &Group<K>) -> usize {
    let cells = group.cells();
    let len = cells.len();
    let sampled = len.min(REMOVED_SAMPLE);
    let removed = (0..sampled)
        .filter(|i| record::read(&cells[i * len / sampled]).is_none())
        .count();
    (removed * len).checked_div(sampled).unwrap_or(0)
}

/// Compactions and group splits of groups held by root slots, waiting to run together.
struct Batch<'r, 'i, K: IndexKey> {
    restructurer: &'r Restructurer<'i, K>,
    rebuilds: Vec<Rebuild<'r, K>>,
}

impl<'r, 'i, K: IndexKey> Batch<'r, 'i, K> {
    fn new(restructurer: &'r Restructurer<'i, K>) -> Self {
        Self {
            restructurer,
            rebuilds: Vec::new(),
        }
    }

    /// Compacts `group`, held by `link` ([`add`](Self::add)).
    fn compact(&mut self, link: &'r AtomicPtr<Group<K>>, from_slot: bool, group: &Group<K>) {
        self.add(Rebuild::compaction(link), from_slot, group);
    }

    /// Splits `group`, held by `link` ([`add`](Self::add)); false (and nothing done) when it
    /// has no live key above its pivot to split at.
    fn split(&mut self, link: &'r AtomicPtr<Group<K>>, from_slot: bool, group: &Group<K>) -> bool {
        let max_group_size = self.restructurer.inner().config().max_group_size;
        let Some(split) = planned_split(link, group, max_group_size) else {
            return false;
        };
        self.add(split, from_slot, group);
        true
    }

    /// Runs `rebuild` of `group`: later, with the batch, if the group's link is a root slot
    /// (`from_slot`) and it has no `next`; else now.
    fn add(&mut self, rebuild: Rebuild<'r, K>, from_slot: bool, group: &Group<K>) {
        if from_slot && group.next().is_none() {
            self.rebuilds.push(rebuild);
            if self.rebuilds.len() == REBUILD_BATCH {
                self.flush();
            }
        } else {
            self.restructurer.rebuild_all(&[rebuild], &mut |_| {});
        }
    }

    /// Runs the waiting rebuilds.
    fn flush(&mut self) {
        if !self.rebuilds.is_empty() {
            self.restructurer.rebuild_all(&self.rebuilds, &mut |_| {});
            self.rebuilds.clear();
        }
    }
}

/// The group after `group` (in slot `slot`'s chain), and where it is linked from.
fn root_successor<'a, K: IndexKey>(
    restructurer: &'a Restructurer<'_, K>,
    slot: usize,
    group: &'a Group<K>,
) -> Option<(Successor<'a, K>, &'a Group<K>)> {
    if let Some(next) = group.next() {
        return Some((Successor::Chained, next));
    }
    let root = restructurer.root();
    (slot + 1..root.slot_count()).find_map(|index| {
        let link = root.link(index);
        restructurer
            .group_at(link)
            .map(|next| (Successor::Slot(link), next))
    })
}

impl<K: IndexKey> Restructurer<'_, K> {
    /// The change Table 2 asks for `group`, if any.
    fn decide(
        &self,
        successor: Option<(Successor<'_, K>, &Group<K>)>,
        group: &Group<K>,
        trigger: CompactionTrigger,
    ) -> Option<Restructure> {
        let config = self.inner().config();
        let (high, low) = (
            config.error_bound as f64,
            config.error_bound as f64 * config.tolerance,
        );
        let (error, models) = (group.mean_error(), group.models().len());
        let buffered = group.buf().len();
        if buffered > config.delta_threshold
            || (error > high && models >= config.max_models)
            || group.keys().len() > config.max_group_size
        {
            return Some(Restructure::SplitGroup);
        }
        // Before any retraining, which would fit the removed records too.
        if trigger.purge_due(group) {
            return Some(Restructure::Compact);
        }
        if error > high {
            return Some(Restructure::SplitModel);
        }
        if error <= low
            && models > 1
            && mean_error::<K>(&fit::<K>(group.keys(), models - 1)) <= high
        {
            return Some(Restructure::MergeModel);
        }
        if let Some((_, next)) = successor
            && self.mergeable(group, next)
        {
            return Some(Restructure::MergeGroup);
        }
        // Its removed records were weighed above.
        trigger.buffered_due(group).then_some(Restructure::Compact)
    }

    /// Whether two neighbouring groups satisfy Table 2's merge trigger and would make a group
    /// within the error bound.
    fn mergeable(&self, first: &Group<K>, second: &Group<K>) -> bool {
        let config = self.inner().config();
        let low = config.error_bound as f64 * config.tolerance;
        let buffer_limit = config.delta_threshold as f64 * config.tolerance;
        let quiet = |group: &Group<K>| {
            group.models().len() <= 1
                && group.mean_error() <= low
                && group.buf().len() as f64 <= buffer_limit
        };
        if !(quiet(first) && quiet(second))
            || first.keys().len() + second.keys().len() > config.max_group_size
        {
            return false;
        }
        let keys: Vec<K::Stored> = first.keys().iter().chain(second.keys()).cloned().collect();
        mean_error::<K>(&fit::<K>(&keys, 1)) <= config.error_bound as f64
    }

    /// Runs `change` on the group in root slot `slot` (the test hook); false if there is no
    /// such group or the change does not apply.
    pub(crate) fn force(
        &self,
        slot: usize,
        change: Restructure,
        hook: &mut dyn FnMut(Phase),
    ) -> bool {
        if change == Restructure::UpdateRoot {
            self.update_root(hook);
            return true;
        }
        let root = self.root();
        if slot >= root.slot_count() || root.group(slot).is_none() {
            return false;
        }
        self.apply(root.link(slot), slot, change, hook)
    }

    /// Runs `change` on the group held by `link`, in slot `slot`'s chain; false, having done
    /// nothing, if it does not apply.
    fn apply(
        &self,
        link: &AtomicPtr<Group<K>>,
        slot: usize,
        change: Restructure,
        hook: &mut dyn FnMut(Phase),
    ) -> bool {
        let group = self
            .group_at(link)
            .expect("changes apply to a non-NULL link");
        let models = group.models().len();
        let keys = group.keys().len();
        match change {
            Restructure::Compact => self.compact(link, hook),
            Restructure::SplitModel => {
                if models >= self.inner().config().max_models.min(keys) {
                    return false;
                }
                self.retrain(link, train(group.keys(), models + 1), change, hook);
            }
            Restructure::MergeModel => {
                if models <= 1 {
                    return false;
                }
                self.retrain(link, train(group.keys(), models - 1), change, hook);
            }
            Restructure::SplitGroup => return self.split_group(link, hook),
            Restructure::MergeGroup => match root_successor(self, slot, group) {
                Some((successor, _)) => self.merge_groups(link, successor, hook),
                None => return false,
            },
            Restructure::UpdateRoot => self.update_root(hook),
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::xindex::group::test_group;

    /// A group of 1,000 even keys with `buffered` odd keys in its delta index.
    fn group_with_buffered(buffered: u64) -> Group<u64> {
        let group = test_group((0..1_000).map(|i| i * 2).collect(), 1);
        for i in 0..buffered {
            group.buf().get_or_insert(2 * i + 1, i);
        }
        group
    }

    #[test]
    fn the_trigger_waits_for_the_larger_of_its_threshold_and_share() {
        let config = Config {
            compaction_threshold: 8,
            compaction_ratio: 64,
            ..Config::default()
        };
        let trigger = CompactionTrigger::of(&config);
        // 1,000 keys / 64: due above 15 buffered keys, not above 8.
        assert!(!trigger.due(&group_with_buffered(15)));
        assert!(trigger.due(&group_with_buffered(16)));
        let fixed = CompactionTrigger::of(&Config {
            compaction_ratio: 0,
            ..config
        });
        assert!(!fixed.due(&group_with_buffered(8)));
        assert!(fixed.due(&group_with_buffered(9)));
        assert!(!CompactionTrigger::ALWAYS.due(&group_with_buffered(0)));
        assert!(CompactionTrigger::ALWAYS.due(&group_with_buffered(1)));
    }
}
