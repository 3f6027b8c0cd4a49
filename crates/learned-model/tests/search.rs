//! Property tests of the last-mile searches: whatever the window or hint, every search returns
//! the lower bound a full binary search returns.

use learned_model::search::{
    branchless_lower_bound, exponential_lower_bound, lower_bound, lower_bound_in,
};
use proptest::collection::btree_set;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_search_agrees_with_binary_search(
        keys in btree_set(any::<u16>(), 0..200),
        query in any::<u16>(),
        a in 0usize..220,
        b in 0usize..220,
    ) {
        let keys: Vec<u16> = keys.into_iter().collect();
        let expected = lower_bound(&keys, &query);
        let window = a.min(b)..a.max(b);
        prop_assert_eq!(lower_bound_in(&keys, &query, window.clone()), expected);
        prop_assert_eq!(branchless_lower_bound(&keys, query, window), expected);
        prop_assert_eq!(exponential_lower_bound(&keys, &query, a), expected);
    }
}

#[test]
fn reversed_and_empty_windows_are_harmless() {
    let keys = [2u64, 4, 6, 8];
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 3..1;
    assert_eq!(lower_bound_in(&keys, &5, reversed), 2);
    assert_eq!(branchless_lower_bound(&keys, 7, 9..9), 3);
    assert_eq!(branchless_lower_bound::<u64>(&[], 7, 0..3), 0);
    assert_eq!(exponential_lower_bound::<u64, u64>(&[], &7, 5), 0);
}
