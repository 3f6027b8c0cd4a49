//! Property tests of the string models: partial keys order-preserving and unique, exact
//! bounds, greedy grouping coverage, and lower bounds equal to a full binary search.

mod common;

use std::cmp::Ordering;

use common::{StringShape, string_key_sets, string_keys, string_queries};
use learned_model::search::lower_bound;
use learned_model::{
    Error, GreedyGrouping, KeyModel, MAX_FEATURES, PartialKeyLayout, PiecewiseRoot, StringModel,
    prefix_word,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn partial_keys_preserve_order_and_stay_unique(keys in string_key_sets(400)) {
        let layout = PartialKeyLayout::from_sorted(&keys).unwrap();
        for key in &keys {
            prop_assert_eq!(layout.compare_prefix(key), std::cmp::Ordering::Equal);
        }
        for pair in keys.windows(2) {
            let (a, b) = (layout.partial(&pair[0]), layout.partial(&pair[1]));
            prop_assert!(a < b, "partial keys {:?} and {:?} of {:?} out of order", a, b, pair);
        }
        // el is minimal: one byte shorter and some neighbours could no longer be told apart.
        if layout.effective_len() > 0 {
            let pl = layout.prefix_len();
            let shorter = |k: &Vec<u8>| k[pl..k.len().min(pl + layout.effective_len() - 1)].to_vec();
            prop_assert!(keys.windows(2).any(|p| shorter(&p[0]) == shorter(&p[1])));
        }
    }

    #[test]
    fn string_models_hold_every_key_and_find_every_lower_bound(
        keys in string_key_sets(400),
        seed in any::<u64>(),
    ) {
        let model = StringModel::fit(&keys).unwrap();
        prop_assert!(model.weights().len() <= MAX_FEATURES);
        let bounds = model.bounds();
        for (i, key) in keys.iter().enumerate() {
            let error = i as i64 - model.predict(key) as i64;
            prop_assert!(bounds.min <= error && error <= bounds.max);
        }
        for q in string_queries(&keys, seed) {
            prop_assert_eq!(model.lower_bound(&keys, &q), lower_bound(&keys, q.as_slice()), "query {:?}", q);
            let placed = match model.layout().compare_prefix(&q) {
                Ordering::Equal => Ok(model.predict(&q[..])),
                outside => Err(outside),
            };
            prop_assert_eq!(model.place_with_word(&q, prefix_word(&q)), placed);
        }
    }

    #[test]
    fn grouping_covers_every_key_and_piecewise_root_finds_every_lower_bound(
        keys in string_key_sets(600),
        forward_step in 2usize..100,
        max_partial_len in 1usize..12,
        max_group_len in 1usize..700,
        seed in any::<u64>(),
    ) {
        let grouping = GreedyGrouping {
            error_threshold: 8.0,
            max_partial_len,
            forward_step,
            backward_step: forward_step / 2,
            max_group_len,
        };
        let groups = grouping.groups(&keys).unwrap();
        let mut next = 0;
        for g in &groups {
            prop_assert_eq!(g.start, next);
            prop_assert!(g.end > g.start);
            prop_assert!(g.len() <= max_group_len);
            next = g.end;
        }
        prop_assert_eq!(next, keys.len());
        let root = PiecewiseRoot::build_grouped(&keys, &grouping).unwrap();
        prop_assert_eq!(root.piece_count(), groups.len());
        for q in string_queries(&keys, seed) {
            prop_assert_eq!(root.lower_bound(&keys, &q), lower_bound(&keys, q.as_slice()), "query {:?}", q);
        }
    }
}

#[test]
fn groups_respect_both_thresholds_where_they_can() {
    let keys = string_keys(StringShape::LongSharedPrefix, 5_000, 3);
    let grouping = GreedyGrouping {
        error_threshold: 4.0,
        max_partial_len: 6,
        forward_step: 32,
        backward_step: 4,
        max_group_len: 1 << 16,
    };
    for g in grouping.groups(&keys).unwrap() {
        let model = StringModel::fit(&keys[g.clone()]).unwrap();
        let fits = model.mean_abs_error() <= 4.0 && model.layout().effective_len() <= 6;
        assert!(
            fits || g.len() == 1,
            "group {g:?} breaks the thresholds with {} keys",
            g.len()
        );
    }
}

#[test]
fn effective_length_counts_the_distinguishing_byte() {
    // Algorithm 6 as printed gives el = 0 here; the keys differ at the byte after the prefix.
    let layout = PartialKeyLayout::from_sorted(&[b"ab".to_vec(), b"ac".to_vec()]).unwrap();
    assert_eq!((layout.prefix_len(), layout.effective_len()), (1, 1));
    assert_ne!(layout.partial(b"ab"), layout.partial(b"ac"));
}

#[test]
fn keys_that_are_prefixes_of_each_other_or_hold_zero_bytes() {
    let keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"a\0\0".to_vec(),
        b"ab".to_vec(),
    ];
    let layout = PartialKeyLayout::from_sorted(&keys).unwrap();
    let partials: Vec<&[u8]> = keys.iter().map(|k| layout.partial(k)).collect();
    assert!(partials.windows(2).all(|p| p[0] < p[1]), "{partials:?}");
    let model = StringModel::fit(&keys).unwrap();
    for q in [&b""[..], b"\0", b"a", b"a\0\0\0", b"aa", b"b"] {
        assert_eq!(
            model.lower_bound(&keys, q),
            lower_bound(&keys, q),
            "query {q:?}"
        );
    }
}

#[test]
fn prefix_comparisons_follow_the_byte_order_at_every_prefix_length() {
    // Prefixes of 0 to 10 bytes, some ending in zero bytes (which the eight-byte word of a
    // short prefix pads with), against queries shorter, equal and longer, below and above.
    let bytes = b"ab\0c\0\0defgh\0";
    for len in 0..=10 {
        let prefix = &bytes[..len];
        let keys = [[prefix, b"\x01"].concat(), [prefix, b"\x02"].concat()];
        let layout = PartialKeyLayout::from_sorted(&keys).unwrap();
        assert_eq!(layout.prefix(), prefix);
        let mut queries: Vec<Vec<u8>> = (0..=bytes.len()).map(|n| bytes[..n].to_vec()).collect();
        for n in 0..=len {
            let mut below = bytes[..n].to_vec();
            below.push(0);
            queries.push(below);
            queries.push([&bytes[..n], b"\xff".as_slice()].concat());
        }
        for query in &queries {
            let expected = query[..query.len().min(len)].cmp(prefix);
            assert_eq!(
                layout.compare_prefix(query),
                expected,
                "{prefix:?} vs {query:?}"
            );
            assert_eq!(
                layout.compare_prefix_with_word(query, prefix_word(query)),
                expected,
                "{prefix:?} vs {query:?} through the words"
            );
        }
    }
}

#[test]
fn keys_whose_features_collide_are_still_found() {
    let keys = string_keys(StringShape::CollidingFeatures, 300, 11);
    let model = StringModel::fit(&keys).unwrap();
    assert!(model.layout().prefix_len() >= 40);
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(model.lower_bound(&keys, key), i);
    }
}

#[test]
fn one_key_and_empty_input() {
    let keys = vec![b"only".to_vec()];
    let model = StringModel::fit(&keys).unwrap();
    assert_eq!(model.lower_bound(&keys, b"only"), 0);
    assert_eq!(model.lower_bound(&keys, b"a"), 0);
    assert_eq!(model.lower_bound(&keys, b"z"), 1);
    let empty: Vec<Vec<u8>> = Vec::new();
    assert_eq!(StringModel::fit(&empty), Err(Error::EmptyInput));
    assert_eq!(
        PartialKeyLayout::from_sorted(&empty),
        Err(Error::EmptyInput)
    );
    assert_eq!(
        GreedyGrouping::default().groups(&empty),
        Err(Error::EmptyInput)
    );
    assert!(matches!(
        GreedyGrouping {
            backward_step: 64,
            ..GreedyGrouping::default()
        }
        .groups(&keys),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        GreedyGrouping {
            max_group_len: 0,
            ..GreedyGrouping::default()
        }
        .groups(&keys),
        Err(Error::InvalidParameter { .. })
    ));
}
