//! XIndex §6.3's data-distribution shift (Fig. 14 and 15), in three stages:
//!
//! 1. a read/write mix (90:10, writes insert : remove : update = 1 : 1 : 2) on the keys of
//!    distribution 1;
//! 2. 100 % writes, half inserts and half removes, that replace every key of distribution 1 with
//!    the keys of distribution 2;
//! 3. the read/write mix again, on distribution 2.
//!
//! Each thread replaces the keys it owns (see [`KeySpace`]), so the stages need no coordination:
//! a thread moves to stage 2 after its share of the stage-1 operations, and to stage 3 once it
//! has removed all its old keys and inserted all its new ones. The runner's throughput timeline
//! shows the stages (stage 2 has only inserts and removes).

use rand::{Rng, RngExt};

use crate::distribution::KeyDistribution;
use crate::error::{Error, Result};
use crate::keyspace::{KeySpace, ThreadKeys};
use crate::mix::{OpGenerator, Workload, check_thread};
use crate::op::Op;
use crate::runner::share;
use crate::seed;

/// A distribution-shift experiment.
///
/// ```
/// use workload::{Dataset, Op, Shift};
///
/// let normal = Dataset::Normal.u64_keys(Some(2_200), 1)?;
/// let linear = Dataset::Linear.u64_keys(Some(2_200), 1)?;
/// let (from, to) = Shift::key_spaces(normal, linear, 2_000, 1)?;
/// let shift = Shift::new(1_000, Some(1_000));
/// let ops: Vec<_> = shift.generator(&from, &to, 0, 1, 1)?.collect();
/// // Stage 2 inserts all 2,000 new keys; stages 1 and 3 add a few dozen inserts each.
/// let inserts = ops.iter().filter(|op| matches!(op, Op::Insert(..))).count();
/// assert!((2_000..2_100).contains(&inserts));
/// # Ok::<(), workload::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// The read fraction of stages 1 and 3 (XIndex: 0.9).
    pub read: f64,
    /// The request distribution of stages 1 and 3.
    pub distribution: KeyDistribution,
    /// Operations in stage 1, over all threads.
    pub before_ops: u64,
    /// Operations in stage 3, over all threads; `None` runs stage 3 until the runner stops.
    pub after_ops: Option<u64>,
}

impl Shift {
    /// XIndex's setting: 90:10 with uniform requests, `before_ops` operations before the shift and
    /// `after_ops` after it.
    pub fn new(before_ops: u64, after_ops: Option<u64>) -> Self {
        Self {
            read: 0.9,
            distribution: KeyDistribution::Uniform,
            before_ops,
            after_ops,
        }
    }

    /// The key spaces of the two distributions: `load` keys of each loaded (`to`'s are inserted in
    /// stage 2), the rest of each kept as its insert pool. Keys of `to` that also occur in `from`
    /// are dropped first, so no key is removed as an old key and inserted as a new one at once;
    /// `to` may therefore load slightly fewer keys. Both inputs must be sorted and unique.
    pub fn key_spaces<K: Copy + Ord>(
        from: Vec<K>,
        to: Vec<K>,
        load: usize,
        seed: u64,
    ) -> Result<(KeySpace<K>, KeySpace<K>)> {
        if let Some(position) = from.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Error::Unsorted {
                source_name: "keys of distribution 1".into(),
                position: position + 1,
            });
        }
        let mut to = to;
        to.retain(|key| from.binary_search(key).is_err());
        let to_load = load.min(to.len());
        let from = KeySpace::split(from, load, seed)?;
        let to = KeySpace::split(to, to_load, seed::mix64(seed))?;
        Ok((from, to))
    }

    /// The stream of thread `thread` of `threads`. `from` holds distribution 1's keys, loaded
    /// before the run; `to` holds distribution 2's, whose loaded part stage 2 inserts.
    pub fn generator<'a, K: Copy>(
        &self,
        from: &'a KeySpace<K>,
        to: &'a KeySpace<K>,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Result<ShiftGenerator<'a, K>> {
        check_thread(thread, threads)?;
        let workload = Workload::read_write(self.read, self.distribution)?;
        let before = workload.generator(from, thread, threads, seed)?;
        let new_keys = ThreadKeys::new(to, thread, threads, seed::mix64(seed));
        // Stage 3's stream, built now so that its errors surface before the run.
        let after = OpGenerator::new(
            &workload,
            to,
            new_keys.clone(),
            thread,
            seed::mix64(seed ^ 3),
        )?;
        Ok(ShiftGenerator {
            stage: Stage::Before {
                ops: before,
                left: share(self.before_ops, thread, threads),
            },
            new_keys,
            after: Some((after, self.after_ops.map(|ops| share(ops, thread, threads)))),
            rng: seed::rng(seed, seed::stream::THREADS + thread as u64 + (1 << 31)),
        })
    }
}

/// One thread's stream through the three stages of a [`Shift`].
#[derive(Debug, Clone)]
pub struct ShiftGenerator<'a, K> {
    stage: Stage<'a, K>,
    /// The thread's keys of distribution 2, all live from stage 3 on.
    new_keys: ThreadKeys<'a, K>,
    /// Stage 3's stream and operation budget, until it starts.
    after: Option<(OpGenerator<'a, K>, Option<u64>)>,
    rng: seed::Rng,
}

/// Where a [`ShiftGenerator`] is.
#[derive(Debug, Clone)]
enum Stage<'a, K> {
    /// Stage 1, with its remaining operations.
    Before { ops: OpGenerator<'a, K>, left: u64 },
    /// Stage 2: the old keys still to remove, and the next of the new keys to insert.
    Replace {
        old: ThreadKeys<'a, K>,
        next_new: u64,
    },
    /// Stage 3, with its remaining operations (`None`: endless).
    After {
        ops: OpGenerator<'a, K>,
        left: Option<u64>,
    },
    /// Every stage is over.
    Done,
}

impl<K: Copy> ShiftGenerator<'_, K> {
    /// The current stage, 1 to 3 (4 once the stream has ended).
    pub fn stage(&self) -> u8 {
        match self.stage {
            Stage::Before { .. } => 1,
            Stage::Replace { .. } => 2,
            Stage::After { .. } => 3,
            Stage::Done => 4,
        }
    }
}

impl<K: Copy> Iterator for ShiftGenerator<'_, K> {
    type Item = Op<K>;

    fn next(&mut self) -> Option<Op<K>> {
        loop {
            match &mut self.stage {
                Stage::Before { ops, left } => {
                    if *left > 0
                        && let Some(op) = ops.next()
                    {
                        *left -= 1;
                        return Some(op);
                    }
                    if let Stage::Before { ops, .. } =
                        std::mem::replace(&mut self.stage, Stage::Done)
                    {
                        self.stage = Stage::Replace {
                            old: ops.into_keys(),
                            next_new: 0,
                        };
                    }
                }
                Stage::Replace { old, next_new } => {
                    let removes = old.live();
                    let inserts = self.new_keys.owned_loaded() - *next_new;
                    if removes + inserts > 0 {
                        return Some(if self.rng.random_range(0..removes + inserts) < removes {
                            Op::Remove(
                                old.next_remove()
                                    .expect("the window holds `removes` live keys"),
                            )
                        } else {
                            let key = self.new_keys.nth(*next_new);
                            *next_new += 1;
                            Op::Insert(key, self.rng.next_u64())
                        });
                    }
                    self.stage = match self.after.take() {
                        Some((ops, left)) => Stage::After { ops, left },
                        None => Stage::Done,
                    };
                }
                Stage::After { ops, left } => {
                    if left.is_none_or(|left| left > 0)
                        && let Some(op) = ops.next()
                    {
                        if let Some(left) = left {
                            *left -= 1;
                        }
                        return Some(op);
                    }
                    self.stage = Stage::Done;
                }
                Stage::Done => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::OpKind;
    use std::collections::BTreeSet;

    #[test]
    fn the_index_ends_up_holding_exactly_the_new_keys_plus_stage_3_changes() {
        let from_keys: Vec<u64> = (0..6_000).map(|i| i * 2).collect();
        let to_keys: Vec<u64> = (0..6_000).map(|i| i * 2 + 1).collect();
        let (from, to) = Shift::key_spaces(from_keys, to_keys, 5_000, 4).expect("valid");
        let shift = Shift::new(4_000, Some(0));
        let threads = 3;
        let mut generators: Vec<_> = (0..threads)
            .map(|t| shift.generator(&from, &to, t, threads, 4).expect("valid"))
            .collect();
        let mut live: BTreeSet<u64> = from.loaded().iter().copied().collect();
        let mut stage_2_kinds = BTreeSet::new();
        loop {
            let mut progressed = false;
            for generator in &mut generators {
                if let Some(op) = generator.next() {
                    progressed = true;
                    if generator.stage() == 2 {
                        stage_2_kinds.insert(op.kind());
                    }
                    match op {
                        Op::Insert(key, _) => assert!(live.insert(key), "insert of a present key"),
                        Op::Remove(key) => assert!(live.remove(&key), "remove of an absent key"),
                        _ => {}
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        let expected: BTreeSet<u64> = to.loaded().iter().copied().collect();
        assert_eq!(
            live, expected,
            "after the shift the index holds exactly distribution 2"
        );
        assert_eq!(
            stage_2_kinds,
            BTreeSet::from([OpKind::Insert, OpKind::Remove])
        );
    }

    #[test]
    fn overlapping_keys_are_dropped_from_the_new_distribution() {
        let (from, to) =
            Shift::key_spaces(vec![1u64, 2, 3, 4], vec![3u64, 4, 5, 6, 7], 3, 1).expect("valid");
        let new: BTreeSet<u64> = to.loaded().iter().chain(to.pool()).copied().collect();
        assert_eq!(new, BTreeSet::from([5, 6, 7]));
        assert_eq!(from.loaded().len(), 3);
        assert!(Shift::key_spaces(vec![2u64, 1], vec![], 1, 1).is_err());
    }
}
