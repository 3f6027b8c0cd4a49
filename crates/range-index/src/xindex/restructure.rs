//! XIndex-R's structural changes (§3.2–3.3; digest §3.8–3.12), the steps they share, and the
//! test hook's vocabulary.
//!
//! Every change is made by a holder of the restructure lock ([`Restructurer`]), so one group
//! is restructured by one actor at a time, and only that actor frees it: an exclusive holder
//! may change anything, and holders that share the lock only compact the groups of their own
//! root slots. The changes:
//!
//! - compaction (`compaction`): the delta index merged into a new array, in two phases;
//! - model split and merge (`retrain`): a new node sharing the records, with other models;
//! - group split (`split`): Algorithm 4, a logical split, then compaction into the pieces (one
//!   protocol with compaction, [`Restructurer::rebuild_all`], which a maintenance pass runs
//!   for a batch of groups at once);
//! - group merge (`merge`): two neighbours compacted into one;
//! - root update (`root_update`): a new root over every group, chains flattened.
//!
//! The shared steps are the merge phase's array of pointer records ([`pointer_records`]), the
//! copy phase ([`Restructurer::copy_phase`]) and the reclamation of unlinked groups after the
//! last barrier ([`Restructurer::retire`]). [`Phase`] names the boundaries at which the test
//! hook of [`XIndex::restructure_slot_with`](crate::xindex::XIndex::restructure_slot_with)
//! runs, and [`Restructure`] the change it asks for.

use std::cmp::Ordering as KeyOrdering;
use std::iter;

use concurrency::RecordCell;

use crate::xindex::config::Config;
use crate::xindex::group::{Group, Records};
use crate::xindex::index::Restructurer;
use crate::xindex::key::IndexKey;
use crate::xindex::record;

/// A boundary between two steps of a structural change, at which the test hook of
/// [`XIndex::restructure_slot_with`](crate::xindex::XIndex::restructure_slot_with) runs.
///
/// Compaction, group split and group merge reach all six, in order; model split, model merge
/// and root update reach only [`Swapped`](Phase::Swapped) and [`AfterB3`](Phase::AfterB3)
/// (their one barrier is the reclamation barrier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The delta indexes involved are frozen (for a group split: the frozen views are
    /// published); barrier B1 has not run.
    Frozen,
    /// B1 has passed and the `tmp_buf`s are published; the merge has not started.
    AfterB1,
    /// The new group(s) or root replaced the old; B2 (or the reclamation barrier) has not run.
    Swapped,
    /// B2 has passed; the copy phase has not started.
    AfterB2,
    /// The first half of the new records hold values, the second half still pointers.
    MidCopy,
    /// The last barrier has passed; the old groups or root are about to be freed.
    AfterB3,
}

impl Phase {
    /// Every phase boundary, in the order a compaction reaches them.
    pub const ALL: [Phase; 6] = [
        Phase::Frozen,
        Phase::AfterB1,
        Phase::Swapped,
        Phase::AfterB2,
        Phase::MidCopy,
        Phase::AfterB3,
    ];
}

/// A structural change, as run by the background policy or forced by
/// [`XIndex::restructure_slot_with`](crate::xindex::XIndex::restructure_slot_with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Restructure {
    /// Two-phase compaction of the group (§3.2.1).
    Compact,
    /// The group retrained with one more model (model split, §3.3).
    SplitModel,
    /// The group retrained with one model fewer (model merge, §3.3).
    MergeModel,
    /// The group split in two (Algorithm 4), or in pieces of at most `max_group_size` live keys.
    SplitGroup,
    /// The group merged with the group that follows it (§3.3).
    MergeGroup,
    /// A new root over every group (§3.3); the slot is ignored.
    UpdateRoot,
}

impl Restructure {
    /// Every kind of change.
    pub const ALL: [Restructure; 6] = [
        Restructure::Compact,
        Restructure::SplitModel,
        Restructure::MergeModel,
        Restructure::SplitGroup,
        Restructure::MergeGroup,
        Restructure::UpdateRoot,
    ];
}

/// The merge phase's array: one pointer record per live record of the `groups`' arrays and of
/// their `buf`s (frozen and insert-free since barrier B1), in key order (the groups are
/// neighbours, in key order), with `spare` spare slots. Removed records and entries are left
/// out: neither is ever revived. The records are written straight into the new arrays.
pub(crate) fn pointer_records<K: IndexKey>(groups: &[&Group<K>], spare: usize) -> Records<K> {
    // The live records are at most these; slots that removed records leave unused stay spare.
    let most: usize = groups
        .iter()
        .map(|group| group.keys().len() + group.buf().len())
        .sum();
    let mut records = Records::with_capacity(most + spare);
    for group in groups {
        for (key, cell) in live_records(group) {
            records.push(K::to_stored(key), record::pointer_to(cell));
        }
    }
    records
}

/// The merge phase of a group split at `pivots` (ascending, above the group's pivot; none for a
/// compaction, whose one piece is the whole group): the pointer records of [`pointer_records`]
/// written straight into one array per piece, the keys below the first pivot, those from each
/// pivot to the next, and those from the last one on, each array with `config`'s spare slots
/// for its size.
pub(crate) fn split_pointer_records<K: IndexKey>(
    group: &Group<K>,
    pivots: &[K],
    config: &Config,
) -> Vec<Records<K>> {
    // Each piece's array keys and delta entries, removed ones included: at least its records.
    let mut sizes = vec![0; pivots.len() + 1];
    let mut cut = 0;
    for (size, pivot) in sizes.iter_mut().zip(pivots) {
        let end = group
            .keys()
            .partition_point(|key| K::query(key) < pivot.borrow());
        *size = end - cut;
        cut = end;
    }
    sizes[pivots.len()] = group.keys().len() - cut;
    if pivots.is_empty() {
        // A compaction: one piece, no walk of the delta index to share out.
        sizes[0] += group.buf().len();
    } else {
        let mut piece = Pieces::new(pivots);
        for (key, _) in group.buf().iter() {
            sizes[piece.of((*key).borrow())] += 1;
        }
    }
    let mut pieces: Vec<Records<K>> = sizes
        .iter()
        .map(|&size| Records::with_capacity(size + config.spare_for(size)))
        .collect();
    let mut piece = Pieces::new(pivots);
    for (key, cell) in live_records(group) {
        pieces[piece.of(key)].push(K::to_stored(key), record::pointer_to(cell));
    }
    pieces
}

/// The piece of a split that each key of an ascending sequence falls in.
struct Pieces<'p, K> {
    pivots: &'p [K],
    current: usize,
}

impl<'p, K: IndexKey> Pieces<'p, K> {
    fn new(pivots: &'p [K]) -> Self {
        Self { pivots, current: 0 }
    }

    /// The piece of `key`, not below the previous key's.
    fn of(&mut self, key: &K::Query) -> usize {
        while self
            .pivots
            .get(self.current)
            .is_some_and(|pivot| key >= pivot.borrow())
        {
            self.current += 1;
        }
        self.current
    }
}

/// The live records of `group`'s array and of its `buf`, in key order: the merge phase's walk.
pub(crate) fn live_records<K: IndexKey>(
    group: &Group<K>,
) -> impl Iterator<Item = (&K::Query, &RecordCell)> {
    merged_records(group).filter(|(_, cell)| record::read(cell).is_some())
}

/// The records of `group`'s array and of its `buf`, in key order, removed ones included, each
/// key once: a key whose array record was removed and which was inserted again into `buf`
/// comes with its live record (at most one of the two is live, I1), or with the delta's.
fn merged_records<K: IndexKey>(group: &Group<K>) -> impl Iterator<Item = (&K::Query, &RecordCell)> {
    let mut array = group.keys().iter().zip(group.cells()).peekable();
    let mut delta = group.buf().iter().peekable();
    iter::from_fn(move || {
        let order = match (array.peek(), delta.peek()) {
            (None, None) => return None,
            (Some(_), None) => KeyOrdering::Less,
            (None, Some(_)) => KeyOrdering::Greater,
            (Some((a, _)), Some((d, _))) => K::query(a).cmp((*d).borrow()),
        };
        let (key, cell) = match order {
            KeyOrdering::Less => array.next().map(|(key, cell)| (K::query(key), cell))?,
            KeyOrdering::Greater => delta.next().map(|(key, cell)| (key.borrow(), cell))?,
            KeyOrdering::Equal => {
                let (key, array_cell) = array.next()?;
                let (_, delta_cell) = delta.next()?;
                let live = if record::read(array_cell).is_some() {
                    array_cell
                } else {
                    delta_cell
                };
                (K::query(key), live)
            }
        };
        debug_assert!(
            !cell.read().0.is_ptr(),
            "the previous copy phase left no pointer (pointer depth is 1)"
        );
        Some((key, cell))
    })
}

impl<K: IndexKey> Restructurer<'_, K> {
    /// The copy phase: `replace_pointer` on every record of `groups` (which the restructurer
    /// published after merging, and which B2 has passed since), with the
    /// [`MidCopy`](Phase::MidCopy) hook halfway.
    pub(crate) fn copy_phase(&self, groups: &[&Group<K>], hook: &mut dyn FnMut(Phase)) {
        let total: usize = groups.iter().map(|group| group.cells().len()).sum();
        let mut cells = groups.iter().flat_map(|group| group.cells());
        cells
            .by_ref()
            .take(total / 2)
            .for_each(record::replace_pointer);
        hook(Phase::MidCopy);
        cells.for_each(record::replace_pointer);
    }

    /// Frees groups this restructurer unlinked.
    ///
    /// # Safety
    ///
    /// Each pointer came from [`Group::into_node`], appears once, is reachable from no link of
    /// the index any more, and a grace period ([`synchronize`](Self::synchronize)) has passed
    /// since it was unlinked and since the copy phase replaced the last pointer record into
    /// it; the restructurer holds no reference to it any more.
    pub(crate) unsafe fn retire(&self, groups: impl IntoIterator<Item = *mut Group<K>>) {
        for group in groups {
            // SAFETY: by the function's contract, no operation can reach `group` any more and
            // this is its only release.
            unsafe { Group::free(group) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::xindex::group::test_group;

    /// A group over the array keys `0, 10, …, 90` whose keys 20 and 50 are removed, with 50 and
    /// 55 inserted again into its (then frozen) delta index: the merge phase's input.
    fn group_with_removed_and_buffered() -> Group<u64> {
        let group = test_group((0..10).map(|i| i * 10).collect(), 1);
        for removed in [20, 50] {
            let cell = group.record(&removed).expect("an array key");
            assert_eq!(record::remove(cell), Some(removed));
        }
        for key in [50, 55] {
            group.buf().get_or_insert(key, key + 1);
        }
        group.freeze();
        group
    }

    /// The keys of `records` and the values their pointer records lead to.
    fn pairs(records: &Records<u64>) -> Vec<(u64, u64)> {
        records
            .keys()
            .iter()
            .zip(records.cells())
            .map(|(&key, cell)| {
                assert!(cell.read().0.is_ptr(), "merge records are pointers");
                (key, record::read(cell).expect("live target"))
            })
            .collect()
    }

    #[test]
    fn the_merge_keeps_live_records_once_in_key_order() {
        let group = group_with_removed_and_buffered();
        let expected = vec![
            (0, 0),
            (10, 10),
            (30, 30),
            (40, 40),
            (50, 51),
            (55, 56),
            (60, 60),
            (70, 70),
            (80, 80),
            (90, 90),
        ];
        let records = pointer_records(&[&group], 3);
        assert_eq!(pairs(&records), expected);
        assert!(records.capacity() >= expected.len() + 3);
    }

    #[test]
    fn a_split_merge_cuts_at_the_pivots_whatever_side_their_keys_live_on() {
        let group = group_with_removed_and_buffered();
        let config = Config::default();
        let all = pairs(&pointer_records(&[&group], 0));
        // 50: a removed array key revived in the delta index; 55: a delta key only; 20: a
        // removed array key; 60 and 0: array keys, the latter cutting off nothing.
        for pivots in [
            vec![0u64],
            vec![50],
            vec![55],
            vec![60],
            vec![95],
            vec![20, 50, 55],
            vec![0, 55, 60, 95],
        ] {
            let pieces = split_pointer_records(&group, &pivots, &config);
            assert_eq!(pieces.len(), pivots.len() + 1, "pivots {pivots:?}");
            let bounds: Vec<u64> = [0].into_iter().chain(pivots.iter().copied()).collect();
            for (i, piece) in pieces.iter().enumerate() {
                let expected: Vec<(u64, u64)> = all
                    .iter()
                    .copied()
                    .filter(|&(key, _)| {
                        key >= bounds[i] && bounds.get(i + 1).is_none_or(|&end| key < end)
                    })
                    .collect();
                assert_eq!(pairs(piece), expected, "pivots {pivots:?}, piece {i}");
            }
        }
    }
}
