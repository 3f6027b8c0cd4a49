//! Property tests of the integer models: exact bounds, the ε guarantee of both segmentations
//! and lower bounds equal to a full binary search, over every test distribution.

mod common;

use common::{IntDistribution, int_key_sets, int_keys, queries};
use learned_model::search::lower_bound;
use learned_model::{
    Error, KeyModel, LearningProbe, LinearModel, PiecewiseRoot, Rmi, optimal_segments,
    probe_segments,
};
use proptest::prelude::*;

/// Every trained key lies within the model's bounds around its prediction.
fn assert_within_bounds(model: &LinearModel, keys: &[u64]) {
    let bounds = model.bounds();
    for (i, k) in keys.iter().enumerate() {
        let error = i as i64 - model.predict(k) as i64;
        assert!(
            bounds.min <= error && error <= bounds.max,
            "key {k} at {i}: error {error} outside {bounds:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn linear_models_hold_every_key_and_find_every_lower_bound(
        keys in int_key_sets(3_000),
        seed in any::<u64>(),
    ) {
        for model in [LinearModel::fit(&keys).unwrap(), LinearModel::fit_endpoints(&keys).unwrap()] {
            assert_within_bounds(&model, &keys);
            prop_assert_eq!(model.len(), keys.len());
            for q in queries(&keys, seed) {
                prop_assert_eq!(model.lower_bound(&keys, &q), lower_bound(&keys, &q), "query {}", q);
            }
        }
    }

    #[test]
    fn optimal_segments_respect_epsilon_and_cover_the_keys(
        keys in int_key_sets(3_000),
        epsilon in 0u64..64,
    ) {
        let segments = optimal_segments(&keys, epsilon).unwrap();
        let mut next = 0;
        for s in &segments {
            prop_assert_eq!(s.range.start, next);
            prop_assert!(s.range.end > s.range.start);
            prop_assert_eq!(s.first_key(), keys[s.range.start]);
            let slice = &keys[s.range.clone()];
            assert_within_bounds(&s.model, slice);
            prop_assert!(s.model.bounds().max_abs() <= epsilon);
            next = s.range.end;
        }
        prop_assert_eq!(next, keys.len());
    }

    #[test]
    fn probe_segments_respect_the_threshold(
        keys in int_key_sets(3_000),
        threshold in 1u64..64,
        initial_step in 1usize..2_000,
    ) {
        let probe = LearningProbe { threshold, initial_step, learning_rate: 0.1 };
        let segments = probe_segments(&keys, &probe).unwrap();
        let mut next = 0;
        for s in &segments {
            prop_assert_eq!(s.range.start, next);
            assert_within_bounds(&s.model, &keys[s.range.clone()]);
            prop_assert!(s.model.bounds().max_abs() <= threshold);
            next = s.range.end;
        }
        prop_assert_eq!(next, keys.len());
    }

    #[test]
    fn rmi_finds_every_lower_bound(
        keys in int_key_sets(3_000),
        leaves in 1usize..300,
        seed in any::<u64>(),
    ) {
        let rmi = Rmi::build(&keys, leaves).unwrap();
        prop_assert_eq!(rmi.leaf_count(), leaves);
        for q in queries(&keys, seed) {
            prop_assert_eq!(rmi.lower_bound(&keys, q), lower_bound(&keys, &q), "query {}", q);
        }
    }

    #[test]
    fn piecewise_root_finds_every_lower_bound(
        keys in int_key_sets(3_000),
        epsilon in 1u64..64,
        seed in any::<u64>(),
    ) {
        let root = PiecewiseRoot::build_optimal(&keys, epsilon).unwrap();
        for q in queries(&keys, seed) {
            prop_assert_eq!(root.lower_bound(&keys, &q), lower_bound(&keys, &q), "query {}", q);
        }
    }
}

/// The scale and bounds of the optimal PLA's criterion: the key at position `i` must be
/// predicted in `[i − ε, i + ε + 1 − 1/SCALE]`, so that its floor is within ε.
const SCALE: i128 = 1 << 20;

fn bounds(i: usize, eps: i128) -> (i128, i128) {
    let y = i as i128 * SCALE;
    (y - SCALE * eps, y + SCALE * (eps + 1) - 1)
}

/// Whether one line meets every point's interval (positions scaled by `SCALE`): the lines worth
/// trying pass through two corners of the intervals (a non-empty set of feasible lines always
/// has such a vertex), checked with exact integer arithmetic.
fn feasible(keys: &[u64], eps: i128) -> bool {
    if keys.len() <= 1 {
        return true;
    }
    let x: Vec<i128> = keys.iter().map(|&k| i128::from(k - keys[0])).collect();
    let corners: Vec<(i128, i128)> = (0..keys.len())
        .flat_map(|i| {
            let (lo, hi) = bounds(i, eps);
            [(x[i], lo), (x[i], hi)]
        })
        .collect();
    for (a, &(x1, y1)) in corners.iter().enumerate() {
        for &(x2, y2) in &corners[a + 1..] {
            if x1 == x2 {
                continue;
            }
            // The line through both corners: y(x) = y1 + (y2 - y1)(x - x1)/(x2 - x1).
            let (dy, dx) = (y2 - y1, x2 - x1);
            let fits = (0..keys.len()).all(|i| {
                let scaled = y1 * dx + dy * (x[i] - x1);
                let (lo, hi) = bounds(i, eps);
                if dx > 0 {
                    lo * dx <= scaled && scaled <= hi * dx
                } else {
                    hi * dx <= scaled && scaled <= lo * dx
                }
            });
            if fits {
                return true;
            }
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The optimal PLA makes exactly as many segments as the greedy longest-feasible-prefix
    /// cut with a brute-force feasibility oracle (which is optimal for this hereditary
    /// property).
    #[test]
    fn optimal_segments_are_optimal(keys in int_key_sets(24), epsilon in 0u64..4) {
        let eps = i128::from(epsilon);
        let mut expected = 0;
        let mut start = 0;
        while start < keys.len() {
            let mut end = start + 1;
            while end < keys.len() && feasible(&keys[start..=end], eps) {
                end += 1;
            }
            expected += 1;
            start = end;
        }
        prop_assert_eq!(optimal_segments(&keys, epsilon).unwrap().len(), expected);
    }
}

#[test]
fn empty_input_is_an_error() {
    assert_eq!(LinearModel::fit(&[]), Err(Error::EmptyInput));
    assert_eq!(LinearModel::fit_endpoints(&[]), Err(Error::EmptyInput));
    assert_eq!(optimal_segments(&[], 8), Err(Error::EmptyInput));
    assert_eq!(
        probe_segments(&[], &LearningProbe::default()),
        Err(Error::EmptyInput)
    );
    assert_eq!(Rmi::build(&[], 4), Err(Error::EmptyInput));
    assert_eq!(PiecewiseRoot::build_optimal(&[], 8), Err(Error::EmptyInput));
}

#[test]
fn unsorted_and_duplicate_keys_are_errors() {
    assert_eq!(
        LinearModel::fit(&[1, 3, 2]),
        Err(Error::NotStrictlyIncreasing { index: 2 })
    );
    assert_eq!(
        optimal_segments(&[5, 5], 4),
        Err(Error::NotStrictlyIncreasing { index: 1 })
    );
}

#[test]
fn invalid_parameters_are_errors() {
    assert!(matches!(
        Rmi::build(&[1, 2], 0),
        Err(Error::InvalidParameter { .. })
    ));
    for probe in [
        LearningProbe {
            initial_step: 0,
            ..LearningProbe::default()
        },
        LearningProbe {
            learning_rate: 1.0,
            ..LearningProbe::default()
        },
        LearningProbe {
            learning_rate: f64::NAN,
            ..LearningProbe::default()
        },
    ] {
        assert!(matches!(
            probe_segments(&[1, 2], &probe),
            Err(Error::InvalidParameter { .. })
        ));
    }
}

#[test]
fn one_key_and_the_extreme_keys() {
    for keys in [
        vec![0u64],
        vec![u64::MAX],
        vec![0, u64::MAX],
        vec![0, 1, u64::MAX - 1, u64::MAX],
    ] {
        let model = LinearModel::fit(&keys).unwrap();
        let rmi = Rmi::build(&keys, 3).unwrap();
        let root = PiecewiseRoot::build_optimal(&keys, 1).unwrap();
        for q in [0, 1, 2, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
            let expected = lower_bound(&keys, &q);
            assert_eq!(model.lower_bound(&keys, &q), expected, "{keys:?} {q}");
            assert_eq!(rmi.lower_bound(&keys, q), expected, "{keys:?} {q}");
            assert_eq!(root.lower_bound(&keys, &q), expected, "{keys:?} {q}");
        }
        assert!(
            optimal_segments(&keys, 1)
                .unwrap()
                .iter()
                .all(|s| s.model.bounds().max_abs() <= 1)
        );
    }
}

/// Consecutive keys above 2^53 are exactly learnable from the pivot offset, though `k as f64`
/// would merge neighbours.
#[test]
fn keys_above_2_pow_53_keep_their_precision() {
    let base = (1u64 << 60) + 12_345;
    let keys: Vec<u64> = (0..10_000).map(|i| base + i).collect();
    let model = LinearModel::fit(&keys).unwrap();
    assert_eq!(
        model.bounds().max_abs(),
        0,
        "a dense run is learned exactly"
    );
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(model.predict(k), i);
    }
    let segments = optimal_segments(&keys, 0).unwrap();
    assert_eq!(segments.len(), 1, "a dense run is one exact segment");
}

/// A 2M-key lognormal set: the segment counts of both algorithms stay close, as FINEdex
/// Table 2 reports (the probe within a few tens of percent of the optimum).
#[test]
fn probe_stays_near_the_optimum_on_lognormal_keys() {
    let keys = int_keys(IntDistribution::Lognormal, 200_000, 7);
    let optimal = optimal_segments(&keys, 32).unwrap().len();
    let probe = probe_segments(&keys, &LearningProbe::default())
        .unwrap()
        .len();
    assert!(optimal <= probe, "optimal {optimal}, probe {probe}");
    assert!(
        (probe as f64) < optimal as f64 * 2.0,
        "optimal {optimal}, probe {probe}"
    );
}
