//! Model split and model merge (§3.3, digest §3.9): a group retrained with one model more or
//! fewer, without copying its data.
//!
//! The new node shares the old one's records and delta index (both behind [`Arc`]s), so
//! operations through either node lock and update the same cells; the swap is one atomic
//! store into the group's link, and the old node alone is freed a grace period later, its
//! shared data living on in the new node (digest §4.6 case 14).
//!
//! [`Arc`]: std::sync::Arc

use concurrency::sync::atomic::{AtomicPtr, Ordering};

use crate::xindex::group::{Group, Models};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::restructure::{Phase, Restructure};

impl<K: IndexKey> Restructurer<'_, K> {
    /// Replaces the group held by `link` by a node with `models` over the same records
    /// (`change` is [`Restructure::SplitModel`] or [`Restructure::MergeModel`], for the
    /// counters), calling `hook` after the swap and after the reclamation barrier.
    pub(crate) fn retrain(
        &self,
        link: &AtomicPtr<Group<K>>,
        models: Models<K>,
        change: Restructure,
        hook: &mut dyn FnMut(Phase),
    ) {
        let old_ptr = link.load(Ordering::Acquire);
        let new = {
            let old = self
                .group_at(link)
                .expect("retraining is asked for a non-NULL link");
            old.with_models(models)
        };
        link.store(new.into_node(), Ordering::Release);
        hook(Phase::Swapped);
        self.synchronize();
        hook(Phase::AfterB3);
        // SAFETY: `old_ptr` was unlinked by the swap above and a grace period has passed; it
        // holds no pointer record (no compaction was running), and its borrow ended above.
        unsafe { self.retire([old_ptr]) };
        self.inner().count(change);
    }
}
