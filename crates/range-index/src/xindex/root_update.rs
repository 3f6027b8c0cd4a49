//! Root update (§3.3 op f; digest §3.12): a new root over every group, in key order.
//!
//! The new root flattens the old one: each slot's group and its `next` chain (groups created
//! by splits), NULL slots (left by merges) dropped. Its model is retrained, adapting its size
//! to the error bound (see [`IndexKey::train_root`]). It is swapped in with one atomic store;
//! after a grace period no operation holds the old root, which is freed (not its groups), and
//! every `next` link is cleared (the reference code's `trim_root`): the root now indexes the
//! chained groups itself, and a later split or merge starts from short chains.

use std::ptr;

use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure};
use crate::xindex::root::Root;

impl<K: IndexKey> Restructurer<'_, K> {
    /// Replaces the root by one over every group, calling `hook` after the swap and after the
    /// reclamation barrier.
    pub(crate) fn update_root(&self, hook: &mut dyn FnMut(Phase)) {
        let new = {
            let old = self.root();
            let groups = old
                .groups()
                .map(|group| ptr::from_ref(group).cast_mut())
                .collect();
            Root::new(groups, Some(old), self.inner().config())
        };
        let old = self.replace_root(new);
        hook(Phase::Swapped);
        self.synchronize();
        hook(Phase::AfterB3);
        // SAFETY: `old` was unlinked by `replace_root` and a grace period has passed, so no
        // operation holds it; the restructurer's own borrow of it ended above.
        unsafe { self.retire_root(old) };
        let root = self.root();
        for slot in 0..root.slot_count() {
            if let Some(group) = root.group(slot) {
                group.next_link().store(
                    ptr::null_mut(),
                    concurrency::sync::atomic::Ordering::Release,
                );
            }
        }
        self.inner().count(Restructure::UpdateRoot);
    }
}
