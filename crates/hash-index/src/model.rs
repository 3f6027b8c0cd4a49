//! Placement models (§3.6, Algorithm 8's `model_t`; digest §2.6, §3.18): how a key picks a
//! group at the root and a bucket inside its group.
//!
//! A placement is either *learned*, a linear CDF model scaled to the slot count
//! (`slot = ⌊CDF(key) · slots⌋`, trained with [`learned_model::LinearModel`] on the model inputs
//! of the keys at hand), or *hashed*, a strong hash reduced to the slot count by a
//! multiply–shift. The paper always uses the learned model; on data no linear model learns
//! (anything but near-linear key sets) that gives far more conflicts than a hash, so every
//! time a placement is trained this module measures both on the keys at hand and keeps the
//! better one (the "no cliff" requirement; digest §6.5: 0.7 % conflicts learned vs 35 %
//! hashed on the linear set, and the reverse risk on skewed sets):
//!
//! - for a group's buckets, the *conflict rate*, the fraction of keys that do not get a bucket
//!   of their own (they go to a chain); ties go to the learned model. The learned line is also
//!   tried shifted by quarter buckets (the least-squares line can put bucket boundaries
//!   mid-way between evenly spaced keys' noise ranges) and over up to a quarter more buckets
//!   (a linear key set with gaps, such as 90 % of the keys of a linear set, maps one key per
//!   bucket only when there is a bucket per gap-free position); candidates of different sizes
//!   are compared by the bytes they cost, buckets plus chain nodes, which at one size orders
//!   them by conflict rate;
//! - for the root's groups, the *balance*, the largest group; the learned model is kept unless
//!   its largest group is more than twice the hashed one's.
//!
//! Groups under a hashed root are not trained (see `resize`): their keys are a hash-random
//! subset, which no model places better than the hash.
//!
//! Root and bucket hashes use different bits of the key's hash (the bucket hash is rotated),
//! so keys routed to one group by their hash still spread over its buckets.

use learned_model::{LinearModel, clamp_prediction, offset_from_pivot};

use crate::key::HashKey;
use crate::record::{BUCKET_BYTES, NODE_BYTES};

/// How keys are placed in slots (groups at the root, buckets in a group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// A linear CDF model over the keys' model inputs.
    Learned,
    /// A strong hash function.
    Hashed,
}

/// A trained map from keys to `0..slots`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    kind: PlacementKind,
    pivot: u64,
    slope: f64,
    intercept: f64,
    slots: usize,
    rotate: u32,
}

/// The bits the bucket hash rotates the key hash by (the root uses it unrotated).
pub(crate) const BUCKET_ROTATE: u32 = 29;

/// What training measured for the kind it kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Trained {
    pub(crate) placement: Placement,
    /// Keys without a slot of their own, over all keys (0 for no keys).
    pub(crate) conflict_rate: f64,
}

impl Trained {
    /// The hashed placement over `slots` (> 0) slots for `keys` keys, untrained: its conflict
    /// rate is the expected one of a random hash, `1 − (1 − e^−α)/α` at load factor `α`.
    pub(crate) fn hashed(slots: usize, keys: usize) -> Self {
        let alpha = keys as f64 / slots as f64;
        Self {
            placement: Placement::hashed(slots, BUCKET_ROTATE),
            conflict_rate: if keys == 0 {
                0.0
            } else {
                1.0 - (1.0 - (-alpha).exp()) / alpha
            },
        }
    }
}

impl Placement {
    /// A hashed placement over `slots` (> 0) slots.
    pub(crate) fn hashed(slots: usize, rotate: u32) -> Self {
        Self {
            kind: PlacementKind::Hashed,
            pivot: 0,
            slope: 0.0,
            intercept: 0.0,
            slots,
            rotate,
        }
    }

    /// The slot count.
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    /// The kind kept by training.
    pub(crate) fn kind(&self) -> PlacementKind {
        self.kind
    }

    /// The slot of `key`.
    #[inline]
    pub(crate) fn slot<K: HashKey>(&self, key: &K::Query) -> usize {
        match self.kind {
            PlacementKind::Learned => self.learned_slot(K::model_input(key)),
            PlacementKind::Hashed => self.hashed_slot(K::hash(key)),
        }
    }

    #[inline]
    fn learned_slot(&self, input: u64) -> usize {
        let raw = offset_from_pivot(input, self.pivot) * self.slope + self.intercept;
        clamp_prediction(raw, self.slots)
    }

    #[inline]
    fn hashed_slot(&self, hash: u64) -> usize {
        ((u128::from(hash.rotate_left(self.rotate)) * self.slots as u128) >> 64) as usize
    }

    /// The learned placement of `inputs` (sorted model inputs, duplicates allowed) over
    /// `slots` slots, if the inputs can be learned at all.
    fn learned(inputs: &[u64], slots: usize, rotate: u32) -> Option<Self> {
        let mut unique = inputs.to_vec();
        unique.dedup();
        let model = LinearModel::fit(&unique).ok()?;
        let scale = slots as f64 / unique.len() as f64;
        Some(Self {
            kind: PlacementKind::Learned,
            pivot: model.pivot(),
            slope: model.slope() * scale,
            intercept: model.intercept() * scale,
            slots,
            rotate,
        })
    }

    /// How many keys land in each slot.
    fn loads(&self, inputs: &[u64], hashes: &[u64]) -> Vec<u32> {
        let mut loads = vec![0u32; self.slots];
        for (&input, &hash) in inputs.iter().zip(hashes) {
            let slot = match self.kind {
                PlacementKind::Learned => self.learned_slot(input),
                PlacementKind::Hashed => self.hashed_slot(hash),
            };
            loads[slot] = loads[slot].saturating_add(1);
        }
        loads
    }
}

/// The keys a placement is trained on: model inputs sorted ascending, with each key's hash at
/// the same position.
pub(crate) struct Sample {
    inputs: Vec<u64>,
    hashes: Vec<u64>,
}

/// The most buckets a placement trained for `slots` may take, as a multiple of them: a learned
/// placement tries up to a quarter more when that costs fewer bytes
/// ([`Sample::train_buckets`]).
pub(crate) const LARGEST_SCALE: f64 = 1.25;

/// The most buckets a resize that asks for `slots` gives a group under a `root` placement
/// (learned groups only under a learned root).
pub(crate) fn most_trained_slots(slots: usize, root: PlacementKind) -> usize {
    match root {
        PlacementKind::Learned => (slots as f64 * LARGEST_SCALE).ceil() as usize,
        PlacementKind::Hashed => slots,
    }
}

/// The most buckets a resize may ask for `live` keys under a `root` placement and still have
/// every placement trained for them, up to [`most_trained_slots`] buckets, keep a load factor
/// of at least `lower`.
pub(crate) fn most_slots_at_load(live: usize, lower: f64, root: PlacementKind) -> usize {
    let at_lower = (live as f64 / lower) as usize;
    match root {
        PlacementKind::Learned => (at_lower as f64 / LARGEST_SCALE) as usize,
        PlacementKind::Hashed => at_lower,
    }
}

impl Sample {
    /// The sample of `keys` (in any order).
    pub(crate) fn of<'a, K: HashKey>(keys: impl Iterator<Item = &'a K::Query>) -> Self {
        let mut pairs: Vec<(u64, u64)> = keys.map(|k| (K::model_input(k), K::hash(k))).collect();
        pairs.sort_unstable();
        let (inputs, hashes) = pairs.into_iter().unzip();
        Self { inputs, hashes }
    }

    /// The number of keys.
    pub(crate) fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Trains the bucket placement of a group for about `slots` buckets (at most
    /// [`most_trained_slots`]): the hashed placement
    /// over `slots` buckets and learned ones over `slots` (and, unless `exact`, up to a
    /// quarter more) buckets, each line also shifted by quarter buckets; keeps the one that
    /// costs the fewest bytes (buckets plus chain nodes for the conflicts). At one bucket count
    /// that is the lowest conflict rate; ties go to the learned model.
    pub(crate) fn train_buckets(&self, slots: usize, exact: bool) -> Trained {
        let conflicts = |p: &Placement| {
            let used = p
                .loads(&self.inputs, &self.hashes)
                .iter()
                .filter(|&&l| l > 0)
                .count();
            self.len() - used
        };
        let cost =
            |p: &Placement, conflicts: usize| p.slots * BUCKET_BYTES + conflicts * NODE_BYTES;
        let mut best = {
            let hashed = Placement::hashed(slots, BUCKET_ROTATE);
            let c = conflicts(&hashed);
            (cost(&hashed, c), c, hashed)
        };
        let scales: &[f64] = if exact {
            &[1.0]
        } else {
            &[1.0, 1.125, LARGEST_SCALE]
        };
        for (i, &scale) in scales.iter().enumerate() {
            // Larger learned placements are tried only when the learned model already won at
            // the nominal size (training runs on the background thread; keep it cheap).
            if i > 0 && best.2.kind == PlacementKind::Hashed {
                break;
            }
            let count = ((slots as f64 * scale).ceil() as usize).max(1);
            let Some(learned) = Placement::learned(&self.inputs, count, BUCKET_ROTATE) else {
                break;
            };
            // Shifting the line by a fraction of a bucket moves the bucket boundaries between
            // neighbouring keys: on near-linear data one shift separates them much better.
            for shift in [0.0, 0.25, 0.5, 0.75] {
                let candidate = Placement {
                    intercept: learned.intercept + shift,
                    ..learned
                };
                let c = conflicts(&candidate);
                if cost(&candidate, c) <= best.0 {
                    best = (cost(&candidate, c), c, candidate);
                }
            }
        }
        let (_, conflicts, placement) = best;
        Trained {
            placement,
            conflict_rate: if self.len() == 0 {
                0.0
            } else {
                conflicts as f64 / self.len() as f64
            },
        }
    }

    /// Trains the root placement over `groups` groups: learned unless its largest group is
    /// more than twice the hashed placement's.
    pub(crate) fn train_root(&self, groups: usize) -> Placement {
        let hashed = Placement::hashed(groups, 0);
        let largest = |p: &Placement| {
            p.loads(&self.inputs, &self.hashes)
                .into_iter()
                .max()
                .unwrap_or(0)
        };
        match Placement::learned(&self.inputs, groups, 0) {
            Some(learned) if largest(&learned) <= 2 * largest(&hashed) => learned,
            _ => hashed,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_slots_a_resize_may_ask_for_keep_the_load_factor_above_the_lower_one() {
        for root in [PlacementKind::Learned, PlacementKind::Hashed] {
            for lower in [0.3, 0.5, 0.7, 1.0, 1.3, 63.0] {
                for live in 1..3_000 {
                    let most = most_slots_at_load(live, lower, root);
                    if most > 0 {
                        let trained = most_trained_slots(most, root);
                        assert!(
                            live as f64 / trained as f64 >= lower,
                            "{root:?}, lower {lower}, {live} keys: {trained} buckets"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn linear_keys_are_learned_with_no_conflicts() {
        let keys: Vec<u64> = (0..10_000u64).map(|i| 1_000 + i * 97).collect();
        let trained = Sample::of::<u64>(keys.iter()).train_buckets(keys.len(), false);
        assert_eq!(trained.placement.kind(), PlacementKind::Learned);
        assert!(trained.conflict_rate < 0.01, "{}", trained.conflict_rate);
        for k in &keys {
            assert!(trained.placement.slot::<u64>(k) < keys.len());
        }
    }

    #[test]
    fn skewed_keys_fall_back_to_the_hash() {
        let keys: Vec<u64> = (0..4_096u64).map(|i| i * i * i * i).collect();
        let trained = Sample::of::<u64>(keys.iter()).train_buckets(keys.len(), false);
        assert_eq!(trained.placement.kind(), PlacementKind::Hashed);
        assert!(trained.conflict_rate < 0.45, "{}", trained.conflict_rate);
        let root = Sample::of::<u64>(keys.iter()).train_root(16);
        assert_eq!(root.kind(), PlacementKind::Hashed);
    }

    #[test]
    fn empty_samples_hash_and_slots_stay_in_range() {
        let sample = Sample::of::<u64>([].iter());
        let trained = sample.train_buckets(4, true);
        assert_eq!(trained.placement.kind(), PlacementKind::Hashed);
        assert_eq!(trained.conflict_rate, 0.0);
        for k in [0, u64::MAX, 12345] {
            assert!(trained.placement.slot::<u64>(&k) < 4);
        }
    }
}
