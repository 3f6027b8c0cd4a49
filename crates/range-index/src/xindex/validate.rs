//! Structural invariant checks (digest §8, "Invariant checks"), run by
//! [`XIndex::validate`](crate::xindex::XIndex::validate) while the index is quiet.

use std::collections::BTreeMap;
use std::fmt::Debug;

use concurrency::RecordCell;

use crate::xindex::group::Group;
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::record;

impl<K: IndexKey> Restructurer<'_, K> {
    /// Panics with a description of the first broken invariant.
    pub(crate) fn validate(&self) {
        let root = self.root();
        let pivots = root.pivots();
        assert!(
            pivots.windows(2).all(|w| w[0] < w[1]),
            "root pivots are strictly increasing"
        );
        assert!(
            root.slots_copy_their_pivots(),
            "root slots keep their pivots' copies"
        );
        assert!(root.group(0).is_some(), "slot 0 holds a group");
        for (slot, pivot) in pivots.iter().enumerate() {
            if let Some(group) = root.group(slot) {
                assert_eq!(
                    group.pivot(),
                    pivot,
                    "slot {slot}'s group has the slot's pivot"
                );
            }
        }
        let groups: Vec<&Group<K>> = root.groups().collect();
        let mut live = 0_i64;
        for (index, group) in groups.iter().enumerate() {
            let lower = (index > 0).then(|| group.pivot());
            let upper = groups.get(index + 1).map(|g| g.pivot());
            let in_range = |key: &K::Query| {
                lower.is_none_or(|l| key >= l.borrow()) && upper.is_none_or(|u| key < u.borrow())
            };
            live += self.validate_group(group, &in_range);
        }
        assert_eq!(
            live,
            self.inner().live_count(),
            "the live-key counter equals the number of live records"
        );
    }

    /// Checks one group; returns its number of live keys.
    fn validate_group(&self, group: &Group<K>, in_range: &dyn Fn(&K::Query) -> bool) -> i64 {
        let pivot = group.pivot();
        assert!(
            !group.is_frozen() && group.tmp_buf().is_none(),
            "group {pivot:?}: no compaction is in progress"
        );
        let keys = group.keys();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "group {pivot:?}: array keys are strictly increasing"
        );
        let models = group.models();
        let max_models = self.inner().config().max_models;
        // The models cover the keys they were trained on; appended keys follow them.
        let trained = keys.len() - group.appended();
        if trained == 0 {
            assert!(
                models.is_empty(),
                "group {pivot:?}: no trained keys, no models"
            );
        } else {
            assert!(
                (1..=max_models).contains(&models.len()),
                "group {pivot:?}: 1..=m models"
            );
            assert_eq!(models[0].0, 0, "group {pivot:?}: model 0 starts the array");
            assert!(
                models.windows(2).all(|w| w[0].0 < w[1].0)
                    && models.last().expect("non-empty: checked above").0 < trained,
                "group {pivot:?}: model slices are non-empty and ordered"
            );
        }
        // Every key holds the prefix its records' hints skip, and its hint is the one past it;
        // every model's keys share at least that prefix (a lookup its model places takes its
        // hint past it).
        let (records, skip) = (group.records(), group.records().hint_skip());
        for (start, model) in models {
            assert!(
                K::model_prefix_len(model) >= skip,
                "group {pivot:?}: the model at {start} holds the {skip} bytes the hints skip"
            );
        }
        for (key, hint) in keys.iter().map(K::query).zip(records.hints()) {
            assert_eq!(
                K::hint_past(key, K::query(&keys[0]), skip),
                Ok(*hint),
                "group {pivot:?}: the hint of {key:?} past {skip} bytes"
            );
        }
        // Tie hints, where the records keep them, are each key's own, and the node finds the
        // same ones through its bases (where its searches read them).
        let ties = records.tie_hints();
        let seen = group.trained_tie_hints();
        assert!(
            seen.is_empty() == ties.is_empty() && ties.starts_with(seen),
            "group {pivot:?}: the node's tie hints are its records'"
        );
        for (key, tie) in keys.iter().map(K::query).zip(ties) {
            assert_eq!(
                K::tie_hint(key, skip),
                *tie,
                "group {pivot:?}: the tie hint of {key:?} past {skip} bytes"
            );
        }
        // Every key and its liveness, array first: at most one live record per key (I1).
        let mut liveness: BTreeMap<&K::Query, usize> = BTreeMap::new();
        for (key, cell) in keys.iter().map(K::query).zip(group.cells()) {
            assert!(in_range(key), "group {pivot:?}: array key {key:?} in range");
            assert!(
                group
                    .record(key)
                    .is_some_and(|found| std::ptr::eq(found, cell)),
                "group {pivot:?}: the models find {key:?}"
            );
            check_cell(cell, key);
            *liveness.entry(key).or_default() += usize::from(record::read(cell).is_some());
        }
        let mut previous: Option<&K::Query> = None;
        for (key, cell) in group.buf().iter().map(|(key, cell)| (key.borrow(), cell)) {
            assert!(in_range(key), "group {pivot:?}: delta key {key:?} in range");
            assert!(
                previous.is_none_or(|p| p < key),
                "group {pivot:?}: delta keys ascend strictly"
            );
            previous = Some(key);
            check_cell(cell, key);
            *liveness.entry(key).or_default() += usize::from(record::read(cell).is_some());
        }
        if let Some((key, _)) = liveness.iter().find(|(_, count)| **count > 1) {
            panic!("group {pivot:?}: key {key:?} has more than one live record");
        }
        liveness.values().sum::<usize>() as i64
    }
}

/// A quiet record: not locked and not a pointer.
fn check_cell<Q: Debug + ?Sized>(cell: &RecordCell, key: &Q) {
    let meta = cell.record_lock().load();
    assert!(!meta.is_locked(), "record {key:?} is not left locked");
    assert!(!meta.is_ptr(), "record {key:?} is not left a pointer");
}
