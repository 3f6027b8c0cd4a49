//! The root (§2.4 `root_t`, §3.1 `get_group`): the groups' pivots, one atomically replaceable
//! group pointer per pivot, and a learned model over the pivots (an RMI for integers, a
//! piecewise-linear root for strings; see [`IndexKey`]).
//!
//! A slot keeps a copy of an integer pivot beside its group pointer (learnkv's addition), and
//! the RMI's search runs over the slots: the pointer it ends at lies in the line it compared
//! last, where a separate array of pointers cost a dependent miss after the search (9M osm
//! keys, 34K groups: single-threaded gets about 10% faster, the harness's 2-thread lookups
//! 19%).
//!
//! [`Root::locate`] predicts the slot, corrects it to the last pivot `<=` the key (slot 0 for
//! keys below every pivot), steps left over NULL slots (left behind by group merges), then
//! follows `next` chains while the next group's pivot is `<=` the key (groups created by a
//! split that the root does not index yet). The root is published through the index's
//! `AtomicPtr` and, like groups, is only dereferenced under protection (see
//! [`group`](crate::xindex::group)'s module comment).
//!
//! Beside each slot the root keeps where its group's correction tables lie (learnkv's
//! addition; README design notes, "Corrected predictions"), so that a lookup requests them
//! together with the group node instead of after it: the node names the table's address only
//! once it has arrived, and with a thousand groups the nodes and tables together (about 660 KiB
//! for 10M lognormal keys) outgrow a core's L2 cache, so each is a miss of its own. The hints
//! are only ever requested, never read through, so a stale one (a group compacted since) costs
//! a wasted request and nothing else; the passes that replace groups refresh them
//! ([`Root::refresh_hints`]), a root update builds them anew. A root of many slots keeps
//! window hints beside them too ([`window_hint`](crate::xindex::window_hint)): where its
//! group's key window lies, so that window is requested with the node as well.

use std::cmp::Ordering as KeyOrder;
use std::mem::size_of;
use std::ops::Bound;
// Plain atomics for the table hints, not the loom shim's: the hints take no part in any
// protocol (they are requested, never read through), so loom models need not explore them.
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use concurrency::prefetch;
use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::config::Config;
use crate::xindex::group::Group;
use crate::xindex::key::{IndexKey, tied_run};
use crate::xindex::window_hint::WindowHint;

/// The longest run of pivots with equal hints and tie hints that a lookup searches directly (a
/// binary search of about four comparisons); a longer one is left to the root model.
const MAX_PIVOT_RUN: usize = 16;

/// The fewest slots for which a root keeps window hints: below, the group nodes stay cached
/// and a lookup's window requests already follow the node's arrival closely.
const WINDOW_HINT_MIN_SLOTS: usize = 4096;

/// The root of XIndex-R.
pub(crate) struct Root<K: IndexKey> {
    pivots: Box<[K]>,
    /// The length of the prefix every pivot after the first shares (`pivots[0]` is the
    /// smallest key, below them all): their hints are taken past it, so that pivots sharing
    /// long prefixes (`ts/000000…`) still differ in their hints.
    hint_skip: usize,
    /// The hints ([`IndexKey::hint`] past the shared prefix) of `pivots[1..]`, searched before
    /// the pivots themselves.
    hints: Box<[K::Hint]>,
    /// The tie hints ([`IndexKey::tie_hint`]) of `pivots[1..]`, which order runs of equal
    /// hints (pivots of one site in URL-like keys).
    tie_hints: Box<[K::Hint]>,
    slots: Box<[Slot<K>]>,
    /// The model over `pivots[1..]` (none with one group): the first group's pivot is the
    /// smallest key, minus infinity for routing, and would only skew the model.
    model: Option<K::RootModel>,
    /// One per slot, where the slot's group keeps its correction tables (module comment); none
    /// when no group kept tables as the root was built (osm's 36K groups: no array to load).
    table_hints: Box<[TableHint]>,
    /// One per slot, where the slot's group keeps its keys and cells and its models' lines
    /// ([`window_hint`](crate::xindex::window_hint)); none below [`WINDOW_HINT_MIN_SLOTS`]
    /// slots, nor for key types without window lines.
    window_hints: Box<[WindowHint]>,
}

/// A root slot: its group (NULL after a merge) and the key type's copy of its pivot.
pub struct Slot<K: IndexKey> {
    key: K::SlotKey,
    group: AtomicPtr<Group<K>>,
}

impl<K: IndexKey> Slot<K> {
    /// A slot with `pivot` holding `group`.
    pub(crate) fn new(pivot: &K, group: *mut Group<K>) -> Self {
        Self {
            key: K::slot_key(pivot),
            group: AtomicPtr::new(group),
        }
    }

    /// The slot's copy of its pivot ([`IndexKey::slot_key`]).
    #[inline]
    pub(crate) fn key(&self) -> K::SlotKey {
        self.key
    }
}

/// Where a group's correction tables lie, as last seen: a prefetch hint, never dereferenced.
#[derive(Default)]
struct TableHint {
    address: AtomicUsize,
    len: AtomicUsize,
}

impl TableHint {
    /// Notes where `group`'s tables lie (none: no group).
    fn set<K: IndexKey>(&self, group: Option<&Group<K>>) {
        let tables = group.map_or(&[][..], Group::corrections);
        self.address.store(tables.as_ptr() as usize, Relaxed);
        self.len.store(std::mem::size_of_val(tables), Relaxed);
    }

    /// Requests the lines of the tables last noted.
    #[inline]
    fn request(&self) {
        let address = self.address.load(Relaxed) as *const u8;
        prefetch::bytes(address, self.len.load(Relaxed));
    }
}

impl<K: IndexKey> Root<K> {
    /// A root over `groups`: non-empty, pivots strictly increasing, each from
    /// [`Group::into_node`] and owned by the index. A root update passes the `previous` root, whose
    /// model size the new model adapts.
    pub(crate) fn new(
        groups: Vec<*mut Group<K>>,
        previous: Option<&Self>,
        config: &Config,
    ) -> Self {
        assert!(!groups.is_empty(), "a root indexes at least one group");
        let pivots: Box<[K]> = groups
            .iter()
            // SAFETY: the caller passes live groups of the index (function comment) and holds
            // the protection under which they were reached or built.
            .map(|&group| unsafe { &*group }.pivot().clone())
            .collect();
        let hint_skip = match &pivots[1..] {
            [first, .., last] => K::shared_prefix_len(first.borrow(), last.borrow()),
            _ => 0,
        };
        let hints = pivots[1..]
            .iter()
            .map(|pivot| K::hint(pivot.borrow(), hint_skip))
            .collect();
        let tie_hints = pivots[1..]
            .iter()
            .map(|pivot| K::tie_hint(pivot.borrow(), hint_skip))
            .collect();
        let previous = previous.and_then(|root| root.model.as_ref());
        let model = (pivots.len() > 1).then(|| K::train_root(&pivots[1..], previous, config));
        let slots: Box<[_]> = groups
            .into_iter()
            .zip(&pivots)
            .map(|(group, pivot)| Slot::new(pivot, group))
            .collect();
        let mut root = Self {
            pivots,
            hint_skip,
            hints,
            tie_hints,
            slots,
            model,
            table_hints: Box::default(),
            window_hints: Box::default(),
        };
        let keeps_tables = |slot| {
            root.group(slot)
                .is_some_and(|g| !g.corrections().is_empty())
        };
        if (0..root.slots.len()).any(keeps_tables) {
            root.table_hints = (0..root.slots.len())
                .map(|_| TableHint::default())
                .collect();
        }
        if !K::HINTED && root.slots.len() >= WINDOW_HINT_MIN_SLOTS {
            root.window_hints = (0..root.slots.len())
                .map(|_| WindowHint::default())
                .collect();
        }
        root.refresh_hints(0..root.slots.len());
        root
    }

    /// Notes where the groups of `slots` keep their correction tables, arrays and models now
    /// (the root must have been reached under protection, as for [`Root::group`]), in the
    /// table and window hints the root keeps.
    pub(crate) fn refresh_hints(&self, slots: impl Iterator<Item = usize>) {
        for slot in slots {
            if let Some(hint) = self.table_hints.get(slot) {
                hint.set(self.group(slot));
            }
            if let Some(hint) = self.window_hints.get(slot) {
                hint.set(self.group(slot), self.slots[slot].key);
            }
        }
    }

    /// The number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The pivots, strictly increasing.
    pub(crate) fn pivots(&self) -> &[K] {
        &self.pivots
    }

    /// Whether every slot's copy of its pivot is the pivot's ([`IndexKey::slot_key`]).
    pub(crate) fn slots_copy_their_pivots(&self) -> bool {
        self.slots
            .iter()
            .zip(&self.pivots)
            .all(|(slot, pivot)| slot.key == K::slot_key(pivot))
    }

    /// The slot whose pivot is the last one `<= key`.
    #[inline]
    pub(crate) fn slot_of(&self, key: &K::Query) -> usize {
        self.model.as_ref().map_or(0, |model| {
            if !K::HINTED {
                return K::count_at_or_below(model, &self.pivots[1..], &self.slots[1..], key);
            }
            // The hints of `pivots[1..]` are one contiguous array: a binary search there finds
            // the pivots below `key` without touching the pivots' heap blocks. A key outside
            // their shared prefix is below or above them all. A run of equal hints narrows on
            // the tie hints; what still ties (pivots that share sixteen bytes past the shared
            // prefix, as a URL's site) is searched among those pivots alone, or by the root
            // model when they are more than `MAX_PIVOT_RUN`.
            let hints = &self.hints;
            let hint = match K::hint_past(key, self.pivots[1].borrow(), self.hint_skip) {
                Ok(hint) => hint,
                Err(KeyOrder::Less) => return 0,
                Err(_) => return hints.len(),
            };
            let pos = hints.partition_point(|&h| h < hint);
            if hints.get(pos) != Some(&hint) {
                return pos;
            }
            let run_end = pos + hints[pos..].partition_point(|&h| h <= hint);
            let tied = tied_run(
                &self.tie_hints,
                pos..run_end,
                K::tie_hint(key, self.hint_skip),
            );
            if tied.len() > MAX_PIVOT_RUN {
                return K::count_at_or_below(model, &self.pivots[1..], &self.slots[1..], key);
            }
            tied.start
                + self.pivots[1 + tied.start..1 + tied.end]
                    .partition_point(|pivot| pivot.borrow() <= key)
        })
    }

    /// The group in slot `index`, unless the slot is NULL.
    #[inline]
    pub(crate) fn group(&self, index: usize) -> Option<&Group<K>> {
        let group = self.slots[index].group.load(Ordering::Acquire);
        // SAFETY: `self` was reached under protection (online, restructurer or owner; see the
        // module comment of `group`), and `group` was reachable from it at the time of the load,
        // so it is freed only after a grace period that the protection spans.
        (!group.is_null()).then(|| unsafe { &*group })
    }

    /// The link holding slot `index`'s group, for the restructurer.
    pub(crate) fn link(&self, index: usize) -> &AtomicPtr<Group<K>> {
        &self.slots[index].group
    }

    /// The group responsible for `key` (`get_group`).
    #[inline]
    pub(crate) fn locate(&self, key: &K::Query) -> &Group<K> {
        self.locate_with_end(key).0
    }

    /// The group responsible for `key`, and the end (exclusive; `None`: unbounded) of the key
    /// range it answers for: the pivot of the next group of its chain or, at the chain's end,
    /// of the root slot after the one `key` falls in. A NULL slot was merged into the chain
    /// on its left, so walking left over it and ending at the next slot is right even when
    /// the group in hand is a stale node that a merge has replaced: the end is then that of the
    /// node's own range, never beyond it.
    #[inline]
    pub(crate) fn locate_with_end(&self, key: &K::Query) -> (&Group<K>, Option<&K>) {
        let slot = self.slot_of(key);
        if let Some(hint) = self.table_hints.get(slot) {
            hint.request();
        }
        let mut group = (0..=slot)
            .rev()
            .find_map(|i| self.group(i))
            .expect("slot 0 always holds a group");
        // The node's fields a lookup reads next (its `next` link here, then its models and
        // array bases) span its lines: request them together, as one miss instead of two
        // dependent ones (osm, 36K nodes beyond the caches: single-threaded gets 10% faster).
        prefetch::slice(std::slice::from_ref(group));
        if let Some(hint) = self.window_hints.get(slot) {
            hint.request::<K>(K::window_offset(key, self.slots[slot].key));
        }
        while let Some(next) = group.next() {
            if next.pivot().borrow() > key {
                return (group, Some(next.pivot()));
            }
            group = next;
        }
        (group, self.pivots.get(slot + 1))
    }

    /// The group answering for the largest keys within the upper bound `end`, for a reverse
    /// scan: the group responsible for the key itself (`Included`), for the keys just below it
    /// (`Excluded`: the last group whose pivot is below it), or the last group (`Unbounded`).
    /// Its range ends at or above `end`; it may begin above the keys the scan still wants.
    pub(crate) fn locate_end(&self, end: Bound<&K::Query>) -> &Group<K> {
        let slot = match end {
            Bound::Included(key) => self.slot_of(key),
            // A slot whose pivot is the key starts at it: the keys below lie in the slot before.
            Bound::Excluded(key) => {
                let slot = self.slot_of(key);
                slot - usize::from(slot > 0 && self.pivots[slot].borrow() == key)
            }
            Bound::Unbounded => self.slots.len() - 1,
        };
        let mut group = (0..=slot)
            .rev()
            .find_map(|i| self.group(i))
            .expect("slot 0 always holds a group");
        while let Some(next) = group.next() {
            let answers = match end {
                Bound::Included(key) => next.pivot().borrow() <= key,
                Bound::Excluded(key) => next.pivot().borrow() < key,
                Bound::Unbounded => true,
            };
            if !answers {
                break;
            }
            group = next;
        }
        group
    }

    /// Every reachable group once, in key order (each slot's group and its chain, NULL slots
    /// skipped: a group before NULL slots is reached once per slot it answers for, and
    /// reported once).
    pub(crate) fn groups(&self) -> impl Iterator<Item = &Group<K>> {
        let first = self.group(0).expect("slot 0 always holds a group");
        let first_end = first.next().map(Group::pivot).or(self.pivots.get(1));
        let mut previous: Option<&Group<K>> = None;
        std::iter::successors(Some((first, first_end)), |&(_, end)| {
            Some(self.locate_with_end(end?.borrow()))
        })
        .map(|(group, _)| group)
        .filter(move |&group| {
            let fresh = previous.is_none_or(|previous| !std::ptr::eq(previous, group));
            previous = Some(group);
            fresh
        })
    }

    /// An estimate of the bytes the root owns (not its groups).
    pub(crate) fn bytes(&self) -> usize {
        let pivots: usize = self.pivots.iter().map(IndexKey::heap_bytes).sum();
        size_of::<Self>()
            + pivots
            + self.pivots.len() * (size_of::<K>() + 2 * size_of::<K::Hint>() + size_of::<Slot<K>>())
            + self.table_hints.len() * size_of::<TableHint>()
            + self.window_hints.len() * size_of::<WindowHint>()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::OrderedIndex;
    use crate::xindex::XIndex;

    /// For every slot, the table hint and where the slot's group keeps its tables.
    fn hints_and_tables(index: &XIndex<u64>) -> Vec<((usize, usize), (usize, usize))> {
        let pinned = index.pin();
        let root = pinned.root();
        assert_eq!(root.table_hints.len(), root.slot_count());
        (0..root.slot_count())
            .map(|slot| {
                let hint = &root.table_hints[slot];
                let tables = root.group(slot).map_or(&[][..], Group::corrections);
                (
                    (hint.address.load(Relaxed), hint.len.load(Relaxed)),
                    (tables.as_ptr() as usize, size_of_val(tables)),
                )
            })
            .collect()
    }

    #[test]
    fn table_hints_follow_the_groups_through_compactions() {
        // Keys that curve within every model, so that the groups keep corrections.
        let pairs: Vec<(u64, u64)> = (1..200_000u64).map(|i| (i * i * 4, i)).collect();
        let config = Config {
            background_threads: 0,
            compaction_ratio: 0,
            ..Config::default()
        };
        let index = XIndex::bulk_load(&pairs, config).expect("a valid load");
        assert!(index.stats().corrected_models > 0, "the groups keep tables");
        let loaded = hints_and_tables(&index);
        assert!(loaded.iter().all(|(hint, tables)| hint == tables));
        // Keys between the loaded ones in every group's delta index, enough for a compaction
        // of each (more than the threshold of 8) and too few for a split.
        for i in (1..200_000u64).step_by(200) {
            index.insert(i * i * 4 + 1, i);
        }
        assert!(index.maintenance_step());
        let compacted = hints_and_tables(&index);
        assert_eq!(compacted.len(), loaded.len(), "no group split or merged");
        assert!(compacted.iter().all(|(hint, tables)| hint == tables));
        let replaced = compacted
            .iter()
            .zip(&loaded)
            .filter(|(now, then)| now.1 != then.1)
            .count();
        assert!(
            replaced * 2 > loaded.len(),
            "most groups were compacted, their tables new: {replaced} of {}",
            loaded.len()
        );
        // The compaction passes of the background threads' shares refresh their own slots.
        for i in (100..200_000u64).step_by(200) {
            index.insert(i * i * 4 + 2, i);
        }
        assert!(index.compact_share(0, 2) && index.compact_share(1, 2));
        let shared = hints_and_tables(&index);
        assert!(shared.iter().all(|(hint, tables)| hint == tables));
        assert!(
            shared
                .iter()
                .zip(&compacted)
                .any(|(now, then)| now.1 != then.1)
        );
    }

    /// For every slot of `index`'s root with a group: whether its window hint names the
    /// group's arrays and predicts each trained key of the hinted models where the model does.
    fn window_hints_match_the_groups(index: &XIndex<u64>) -> bool {
        let pinned = index.pin();
        let root = pinned.root();
        assert_eq!(root.window_hints.len(), root.slot_count());
        (0..root.slot_count()).all(|slot| {
            let Some(group) = root.group(slot) else {
                return true;
            };
            let hint = &root.window_hints[slot];
            let base = root.slots[slot].key;
            let trained = group.keys().len() - group.appended();
            let models = group.models();
            hint.addresses()
                == (
                    group.keys().as_ptr() as usize,
                    group.cells().as_ptr() as usize,
                )
                && models
                    .iter()
                    .enumerate()
                    .take(3)
                    .all(|(i, (start, model))| {
                        let end = models.get(i + 1).map_or(trained, |m| m.0);
                        group.keys()[*start..end].iter().all(|&key| {
                            let expected = (*start as f64 + model.raw(key)).max(0.0);
                            let hinted = hint.predicted(u64::window_offset(&key, base)).unwrap();
                            (hinted as f64 - expected).abs() <= 1.0
                        })
                    })
        })
    }

    #[test]
    fn window_hints_follow_the_groups_through_compactions() {
        // Gaps that change every few keys, so that groups of up to 128 keys need several
        // models within an error bound of 2; 6,250 groups or more.
        let mut key = 0;
        let pairs: Vec<(u64, u64)> = (0..800_000u64)
            .map(|i| {
                key += 1 + (i / 7 % 5) * 3 + i % 3;
                (key * 8, i)
            })
            .collect();
        let config = Config {
            background_threads: 0,
            compaction_ratio: 0,
            compaction_threshold: 0,
            error_bound: 2,
            max_models: 3,
            max_group_size: 128,
            ..Config::default()
        };
        let index = XIndex::bulk_load(&pairs, config).expect("a valid load");
        let multi_model = index
            .pin()
            .root()
            .groups()
            .filter(|g| g.models().len() > 1)
            .count();
        assert!(
            multi_model > 1000,
            "{multi_model} groups with several models"
        );
        assert!(window_hints_match_the_groups(&index));
        // Keys between the loaded ones: any non-empty delta index is compacted.
        for &(key, value) in pairs.iter().step_by(8) {
            index.insert(key + 1, value);
        }
        assert!(index.maintenance_step());
        assert!(window_hints_match_the_groups(&index));
    }

    #[test]
    fn small_roots_and_byte_string_roots_keep_no_window_hints() {
        let config = Config {
            background_threads: 0,
            max_group_size: 16,
            ..Config::default()
        };
        let pairs: Vec<(u64, u64)> = (0..16 * 4000u64).map(|i| (i, i)).collect();
        let small = XIndex::bulk_load(&pairs, config.clone()).expect("a valid load");
        let pinned = small.pin();
        assert!(pinned.root().slot_count() < WINDOW_HINT_MIN_SLOTS);
        assert!(pinned.root().window_hints.is_empty());
        let strings: Vec<(Vec<u8>, u64)> = (0..16 * 5000u64)
            .map(|i| (format!("{i:08}").into_bytes(), i))
            .collect();
        let strings = XIndex::bulk_load(&strings, config).expect("a valid load");
        let pinned = strings.pin();
        assert!(pinned.root().slot_count() >= WINDOW_HINT_MIN_SLOTS);
        assert!(pinned.root().window_hints.is_empty());
    }
}
