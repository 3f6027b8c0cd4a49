//! The root (§2.4 `root_t`, §3.1 `get_group`): the groups' pivots, one atomically replaceable
//! group pointer per pivot, and a learned model over the pivots (an RMI for integers, a
//! piecewise-linear root for strings; see [`IndexKey`]).
//!
//! [`Root::locate`] predicts the slot, corrects it to the last pivot `<=` the key (slot 0 for
//! keys below every pivot), steps left over NULL slots (left behind by group merges), then
//! follows `next` chains while the next group's pivot is `<=` the key (groups created by a
//! split that the root does not index yet). The root is published through the index's
//! `AtomicPtr` and, like groups, is only dereferenced under protection (see
//! [`group`](crate::xindex::group)'s module comment).

use std::mem::size_of;

use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::config::Config;
use crate::xindex::group::Group;
use crate::xindex::key::IndexKey;

/// The root of XIndex-R.
pub(crate) struct Root<K: IndexKey> {
    pivots: Box<[K]>,
    slots: Box<[AtomicPtr<Group<K>>]>,
    model: K::RootModel,
}

impl<K: IndexKey> Root<K> {
    /// A root over `groups` (non-empty, pivots strictly increasing), published as raw
    /// pointers; the index owns them from now on.
    pub(crate) fn new(groups: Vec<Box<Group<K>>>, config: &Config) -> Self {
        assert!(!groups.is_empty(), "a root indexes at least one group");
        let pivots: Box<[K]> = groups.iter().map(|g| g.pivot().clone()).collect();
        let model = K::train_root(&pivots, config);
        let slots = groups
            .into_iter()
            .map(|g| AtomicPtr::new(Box::into_raw(g)))
            .collect();
        Self {
            pivots,
            slots,
            model,
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

    /// The slot whose pivot is the last one `<= key` (0 below every pivot).
    #[inline]
    pub(crate) fn slot_of(&self, key: &K::Query) -> usize {
        K::route(&self.model, &self.pivots, key)
    }

    /// The group in slot `index`, unless the slot is NULL.
    #[inline]
    pub(crate) fn group(&self, index: usize) -> Option<&Group<K>> {
        let group = self.slots[index].load(Ordering::Acquire);
        // SAFETY: `self` was reached under protection (online, restructurer or owner; see the
        // module comment of `group`), and `group` was reachable from it at the time of the load,
        // so it is freed only after a grace period that the protection spans.
        (!group.is_null()).then(|| unsafe { &*group })
    }

    /// The link holding slot `index`'s group, for the restructurer.
    pub(crate) fn link(&self, index: usize) -> &AtomicPtr<Group<K>> {
        &self.slots[index]
    }

    /// The group responsible for `key` (`get_group`).
    #[inline]
    pub(crate) fn locate(&self, key: &K::Query) -> &Group<K> {
        self.locate_with_slot(key).1
    }

    /// The group responsible for `key` and the slot whose `next` chain holds it.
    #[inline]
    pub(crate) fn locate_with_slot(&self, key: &K::Query) -> (usize, &Group<K>) {
        let (slot, mut group) = (0..=self.slot_of(key))
            .rev()
            .find_map(|i| Some((i, self.group(i)?)))
            .expect("slot 0 always holds a group");
        while let Some(next) = group.next()
            && next.pivot().borrow() <= key
        {
            group = next;
        }
        (slot, group)
    }

    /// Every reachable group once, in key order: each slot's group and its `next` chain,
    /// skipping NULL slots and groups already reached through a chain.
    pub(crate) fn groups(&self) -> impl Iterator<Item = &Group<K>> {
        let mut last: Option<&Group<K>> = None;
        (0..self.slot_count())
            .filter_map(|i| self.group(i))
            .flat_map(|first| std::iter::successors(Some(first), |g| g.next()))
            .filter(move |group| {
                let fresh = last.is_none_or(|last| group.pivot() > last.pivot());
                if fresh {
                    last = Some(group);
                }
                fresh
            })
    }

    /// An estimate of the bytes the root owns (not its groups).
    pub(crate) fn bytes(&self) -> usize {
        let pivots: usize = self.pivots.iter().map(IndexKey::heap_bytes).sum();
        size_of::<Self>()
            + pivots
            + self.pivots.len() * (size_of::<K>() + size_of::<AtomicPtr<Group<K>>>())
    }
}
