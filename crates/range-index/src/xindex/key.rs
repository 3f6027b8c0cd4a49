//! What XIndex-R needs of a key type beyond [`Key`]: the root model over group pivots (§3.1.1
//! for integers: a two-stage RMI; §3.4.3 for strings: a piecewise-linear root) and the
//! initial grouping of a bulk load (integers: optimal piecewise-linear segments under the error
//! bound `e`; strings: greedy grouping, Algorithm 7).
//!
//! The group-level models are the key's own [`Key::Model`]: [`learned_model::LinearModel`]
//! for `u64`, [`learned_model::StringModel`] for byte strings, which carries its partial-key
//! layout (§3.4.1), so partial keys are per model and therefore per group.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt::Debug;
use std::ops::Range;

use learned_model::search::exponential_lower_bound_by;
use learned_model::{
    GreedyGrouping, Key, KeyModel, LinearModel, PiecewiseRoot, Rmi, StringModel, common_prefix_len,
    optimal_segments, prefix_word,
};

use crate::xindex::byte_key::ByteKey;
use crate::xindex::config::Config;
use crate::xindex::root::Slot;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for Vec<u8> {}
}

/// A key type XIndex-R can index: `u64` or `Vec<u8>` (sealed).
pub trait IndexKey: Key<Model: Clone> + sealed::Sealed {
    /// The root model that predicts a group from a key.
    type RootModel: Debug + Send + Sync;

    /// Trains the root model over the groups' pivots (non-empty, strictly increasing); a root
    /// update passes the `previous` model, whose size the new one adapts (§3.3, root update).
    fn train_root(
        pivots: &[Self],
        previous: Option<&Self::RootModel>,
        config: &Config,
    ) -> Self::RootModel;

    /// What a root slot keeps of its group's pivot beside the group pointer: `u64` the pivot
    /// itself, so that the root's search of the slots reads the pointer it ends at in the
    /// line it compared last; byte strings nothing (their root searches the pivots' hints).
    type SlotKey: Copy + PartialEq + Debug + Send + Sync + 'static;

    /// The copy of `pivot` its root slot keeps.
    fn slot_key(pivot: &Self) -> Self::SlotKey;

    /// `model`'s line in the offsets of [`window_offset`](Self::window_offset) from the slot
    /// key `base`, with positions counted from the group's first record (the model's first is
    /// `start`): `position ≈ slope · offset + intercept`, for the root's window hints; `None`
    /// for key types whose root keeps none.
    fn window_line(model: &Self::Model, start: usize, base: Self::SlotKey) -> Option<(f64, f64)>;

    /// How far `query` lies above the slot key `base`, in the units of
    /// [`window_line`](Self::window_line).
    fn window_offset(query: &Self::Query, base: Self::SlotKey) -> f64;

    /// How many of the pivots the model was trained on are `<= key`: `slots` are their root
    /// slots (with the copies of [`IndexKey::slot_key`]), `pivots` the pivots themselves;
    /// each key type searches the one that holds what it compares.
    fn count_at_or_below(
        model: &Self::RootModel,
        pivots: &[Self],
        slots: &[Slot<Self>],
        key: &Self::Query,
    ) -> usize;

    /// Splits the strictly increasing `keys` of a bulk load into the key ranges of the initial
    /// groups, in order, covering every key (each range non-empty).
    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>>;

    /// The smallest key: the pivot of the one group of an empty index.
    fn min_key() -> Self;

    /// An owned key equal to `query`.
    fn from_query(query: &Self::Query) -> Self;

    /// Heap bytes the key owns beyond `size_of::<Self>()`, for memory statistics.
    fn heap_bytes(&self) -> usize;

    /// How a group's records hold a key: `u64` as itself, a byte string as a `ByteKey`
    /// (inline when short, so the final comparison of a lookup is one cache miss).
    type Stored: Ord + Clone + Debug + Send + Sync + Borrow<Self::Query> + 'static;

    /// The records' form of the key equal to `query`.
    fn to_stored(query: &Self::Query) -> Self::Stored;

    /// The borrowed form of a stored key, for comparisons with a query.
    #[inline]
    fn query(stored: &Self::Stored) -> &Self::Query {
        stored.borrow()
    }

    /// An owned key equal to `stored`.
    fn from_stored(stored: &Self::Stored) -> Self;

    /// Heap bytes `stored` owns beyond `size_of::<Self::Stored>()`.
    fn stored_heap_bytes(stored: &Self::Stored) -> usize;

    /// A model trained on `keys` (non-empty, strictly increasing): see [`KeyModel::fit`].
    fn fit_stored(keys: &[Self::Stored]) -> Self::Model;

    /// The lower bound of `key` in `keys`, the keys `model` was trained on: see
    /// [`KeyModel::lower_bound`].
    fn stored_lower_bound(model: &Self::Model, keys: &[Self::Stored], key: &Self::Query) -> usize;

    /// A small summary of a key kept beside it in the records, which group searches compare
    /// before the key itself (`()` where the key is as cheap to compare as its summary).
    type Hint: Copy + Ord + Default + Debug + Send + Sync + 'static;

    /// Whether group searches go through the hints.
    const HINTED: bool;

    /// The largest hint (the smallest is the default).
    const MAX_HINT: Self::Hint;

    /// The hint of `query` past its first `skip` bytes, which it shares with the keys whose
    /// hints it is compared with (byte strings; `skip` is 0 for other keys). Among keys that
    /// share them, hints are monotone in the key order: `hint(a) < hint(b)` implies `a < b`.
    fn hint(query: &Self::Query, skip: usize) -> Self::Hint;

    /// The hint of the bytes that follow those [`hint`](Self::hint)`(query, skip)` covers
    /// (byte strings: the eight bytes from `skip + 8`; `0` for a key that ends before them).
    /// Among keys whose hints past `skip` tie, these order their keys as hints do, so a run of
    /// equal hints narrows on them before any key is compared.
    fn tie_hint(query: &Self::Query, skip: usize) -> Self::Hint;

    /// The length of the prefix that `first` and `last` share, past which hints are taken
    /// (`0` for keys without hints). Keys between the two share it too.
    fn shared_prefix_len(first: &Self::Query, last: &Self::Query) -> usize;

    /// Where `query` stands against the keys that share the first `skip` bytes of `like`:
    /// among them, with its [`hint`](Self::hint) past them, or below (`Err(Less)`) or above
    /// (`Err(Greater)`) them all.
    fn hint_past(
        query: &Self::Query,
        like: &Self::Query,
        skip: usize,
    ) -> Result<Self::Hint, Ordering>;

    /// The length of the prefix that every key `model` was trained on shares (`0` for keys
    /// without hints): a group's search relies on it holding the prefix its records' hints
    /// skip.
    fn model_prefix_len(model: &Self::Model) -> usize;

    /// `model`'s prediction for `query`, whose whole-key hint (`hint(query, 0)`) the caller has
    /// computed; or, when `query` lies outside the prefix that the model's keys share (byte
    /// strings), whether it is below (`Err(Less)`) or above (`Err(Greater)`) them all.
    fn predict(
        model: &Self::Model,
        query: &Self::Query,
        word: Self::Hint,
    ) -> Result<usize, Ordering>;

    /// Whether equal summaries ([`summary`](Self::summary)) mean equal keys.
    const SUMMARY_IS_KEY: bool;

    /// A 64-bit summary of `query`, monotone in the key order (`summary(a) < summary(b)`
    /// implies `a < b`), which the delta index keeps beside its pointers to out-of-line keys.
    fn summary(query: &Self::Query) -> u64;
}

/// The positions of `run` (a run of equal hints) whose tie hints equal `tie`, the tie hint of
/// a key with that hint: the keys before them are below the key, those after above it.
pub(crate) fn tied_run<H: Ord + Copy>(ties: &[H], run: Range<usize>, tie: H) -> Range<usize> {
    let from = run.start + ties[run.clone()].partition_point(|&t| t < tie);
    from..from + ties[from..run.end].partition_point(|&t| t <= tie)
}

/// How many of the ascending `items` are `<= key`, given the lower bound `lb` of `key` among
/// them and whether an item `is_key`.
fn count_at_or_below<T>(items: &[T], lb: usize, is_key: impl FnOnce(&T) -> bool) -> usize {
    lb + usize::from(items.get(lb).is_some_and(is_key))
}

/// `ranges` with every range longer than `max` cut into pieces of at most `max` keys.
fn cap_ranges(ranges: impl IntoIterator<Item = Range<usize>>, max: usize) -> Vec<Range<usize>> {
    ranges
        .into_iter()
        .flat_map(|range| {
            range
                .clone()
                .step_by(max)
                .map(move |start| start..(start + max).min(range.end))
        })
        .collect()
}

impl IndexKey for u64 {
    type RootModel = Rmi;

    /// Starts from the previous leaf count (a quarter of the pivots at first), then doubles
    /// the leaves while their mean error exceeds `e` and halves them while it stays within
    /// `e·f`, keeping a halving only if the error stays within `e` (so the two rules cannot
    /// ping-pong), at most ten times (the reference code's limit).
    fn train_root(pivots: &[Self], previous: Option<&Rmi>, config: &Config) -> Rmi {
        let build = |leaves: usize| {
            Rmi::build(pivots, leaves).expect("pivots are non-empty and strictly increasing")
        };
        let most = pivots.len();
        let start = previous.map_or(pivots.len() / 4, Rmi::leaf_count);
        let mut rmi = build(start.clamp(1, most));
        let (high, low) = (
            config.error_bound as f64,
            config.error_bound as f64 * config.tolerance,
        );
        for _ in 0..10 {
            let (error, leaves) = (rmi.mean_leaf_error(), rmi.leaf_count());
            if error > high && leaves < most {
                rmi = build((leaves * 2).min(most));
            } else if error <= low && leaves > 1 {
                let smaller = build(leaves / 2);
                if smaller.mean_leaf_error() > high {
                    break;
                }
                rmi = smaller;
            } else {
                break;
            }
        }
        rmi
    }

    type SlotKey = u64;

    fn slot_key(pivot: &u64) -> u64 {
        *pivot
    }

    fn window_line(model: &LinearModel, start: usize, base: u64) -> Option<(f64, f64)> {
        let shift = model.slope() * model.pivot().saturating_sub(base) as f64;
        Some((model.slope(), start as f64 + model.intercept() - shift))
    }

    #[inline]
    fn window_offset(query: &u64, base: u64) -> f64 {
        query.saturating_sub(base) as f64
    }

    /// The RMI's search ([`Rmi::lower_bound`]: an exponential search from its prediction), on
    /// the slots' copies of the pivots.
    #[inline]
    fn count_at_or_below(model: &Rmi, _: &[Self], slots: &[Slot<Self>], key: &u64) -> usize {
        let predicted = model.predict(*key).0;
        let lb = exponential_lower_bound_by(slots, predicted, |slot| slot.key() < *key);
        count_at_or_below(slots, lb, |slot| slot.key() == *key)
    }

    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>> {
        let segments = optimal_segments(keys, config.error_bound as u64)
            .expect("bulk-load keys are non-empty and strictly increasing");
        // A group holds up to `m` models, so it starts with up to `m` segments; the bulk load
        // cuts any group whose models then miss `e`. One segment per group gave hard data
        // (osm) a group per 114 keys, each with its node and empty delta index.
        let runs = segments
            .chunks(config.max_models)
            .map(|run| run[0].range.start..run[run.len() - 1].range.end);
        cap_ranges(runs, config.max_group_size)
    }

    fn min_key() -> Self {
        0
    }

    fn from_query(query: &u64) -> Self {
        *query
    }

    fn heap_bytes(&self) -> usize {
        0
    }

    type Stored = u64;

    fn to_stored(query: &u64) -> u64 {
        *query
    }

    fn from_stored(stored: &u64) -> Self {
        *stored
    }

    fn stored_heap_bytes(_: &u64) -> usize {
        0
    }

    fn fit_stored(keys: &[u64]) -> LinearModel {
        LinearModel::fit(keys).expect("a non-empty slice of strictly increasing keys fits")
    }

    #[inline]
    fn stored_lower_bound(model: &LinearModel, keys: &[u64], key: &u64) -> usize {
        model.lower_bound(keys, key)
    }

    type Hint = ();

    const HINTED: bool = false;

    const MAX_HINT: () = ();

    #[inline]
    fn hint(_: &u64, _: usize) {}

    #[inline]
    fn tie_hint(_: &u64, _: usize) {}

    fn shared_prefix_len(_: &u64, _: &u64) -> usize {
        0
    }

    #[inline]
    fn hint_past(_: &u64, _: &u64, _: usize) -> Result<(), Ordering> {
        Ok(())
    }

    fn model_prefix_len(_: &LinearModel) -> usize {
        0
    }

    #[inline]
    fn predict(model: &LinearModel, query: &u64, (): ()) -> Result<usize, Ordering> {
        Ok(model.predict(query))
    }

    const SUMMARY_IS_KEY: bool = true;

    #[inline]
    fn summary(query: &u64) -> u64 {
        *query
    }
}

/// The greedy grouping parameters of `config` (`et`, `pt`, the group size cap; the crate's
/// default steps).
fn grouping(config: &Config) -> GreedyGrouping {
    GreedyGrouping {
        error_threshold: config.string_error_threshold,
        max_partial_len: config.string_partial_len,
        max_group_len: config.max_group_size,
        ..GreedyGrouping::default()
    }
}

impl IndexKey for Vec<u8> {
    type RootModel = PiecewiseRoot<Vec<u8>>;

    /// The piecewise-linear root adapts itself: greedy grouping sizes its pieces by error.
    fn train_root(
        pivots: &[Self],
        _previous: Option<&Self::RootModel>,
        config: &Config,
    ) -> Self::RootModel {
        PiecewiseRoot::build_grouped(pivots, &grouping(config))
            .expect("pivots are non-empty and strictly increasing; the steps are valid")
    }

    type SlotKey = ();

    fn slot_key(_: &Self) {}

    fn window_line(_: &StringModel, _: usize, (): ()) -> Option<(f64, f64)> {
        None
    }

    fn window_offset(_: &[u8], (): ()) -> f64 {
        0.0
    }

    /// The piecewise root's search of the pivots; `prepare` is not called (the root searches
    /// the pivots' hints first, and this model only where they tie).
    #[inline]
    fn count_at_or_below(
        model: &Self::RootModel,
        pivots: &[Self],
        _: &[Slot<Self>],
        key: &[u8],
    ) -> usize {
        let lb = model.lower_bound(pivots, key);
        count_at_or_below(pivots, lb, |pivot| pivot.as_slice() == key)
    }

    fn initial_groups(keys: &[Self], config: &Config) -> Vec<Range<usize>> {
        grouping(config).groups(keys).expect(
            "bulk-load keys are non-empty and strictly increasing; the parameters are valid",
        )
    }

    fn min_key() -> Self {
        Vec::new()
    }

    fn from_query(query: &[u8]) -> Self {
        query.to_vec()
    }

    fn heap_bytes(&self) -> usize {
        self.capacity()
    }

    type Stored = ByteKey;

    fn to_stored(query: &[u8]) -> ByteKey {
        ByteKey::from(query)
    }

    fn from_stored(stored: &ByteKey) -> Self {
        stored.as_bytes().to_vec()
    }

    fn stored_heap_bytes(stored: &ByteKey) -> usize {
        stored.heap_bytes()
    }

    fn fit_stored(keys: &[ByteKey]) -> StringModel {
        StringModel::fit(keys).expect("a non-empty slice of strictly increasing keys fits")
    }

    #[inline]
    fn stored_lower_bound(model: &StringModel, keys: &[ByteKey], key: &[u8]) -> usize {
        model.lower_bound_of(keys, key)
    }

    type Hint = u64;

    const HINTED: bool = true;

    const MAX_HINT: u64 = u64::MAX;

    /// The eight bytes past the first `skip` ([`prefix_word`]): among keys sharing those
    /// `skip` bytes, unequal hints order their keys.
    #[inline]
    fn hint(query: &[u8], skip: usize) -> u64 {
        debug_assert!(query.len() >= skip, "a hinted key holds the shared prefix");
        query.get(skip..).map_or(0, prefix_word)
    }

    /// The eight bytes past the hint's ([`prefix_word`]).
    #[inline]
    fn tie_hint(query: &[u8], skip: usize) -> u64 {
        query.get(skip + size_of::<u64>()..).map_or(0, prefix_word)
    }

    fn shared_prefix_len(first: &[u8], last: &[u8]) -> usize {
        common_prefix_len(first, last)
    }

    #[inline]
    fn hint_past(query: &[u8], like: &[u8], skip: usize) -> Result<u64, Ordering> {
        if skip == 0 {
            // No prefix to compare: not even a `memcmp` call of no bytes.
            return Ok(prefix_word(query));
        }
        let prefix = &like[..skip];
        match query.strip_prefix(prefix) {
            Some(rest) => Ok(prefix_word(rest)),
            None => Err(query.cmp(prefix)),
        }
    }

    fn model_prefix_len(model: &StringModel) -> usize {
        model.layout().prefix_len()
    }

    /// Through the key's [`prefix_word`], its whole-key hint: a model's prefix of up to eight
    /// bytes compares without a `memcmp` ([`StringModel::place_with_word`]).
    #[inline]
    fn predict(model: &StringModel, query: &[u8], word: u64) -> Result<usize, Ordering> {
        model.place_with_word(query, word)
    }

    const SUMMARY_IS_KEY: bool = false;

    /// The first eight bytes ([`prefix_word`]), as the hint.
    #[inline]
    fn summary(query: &[u8]) -> u64 {
        prefix_word(query)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn integer_routing_counts_the_pivots_at_or_below() {
        let pivots: Vec<u64> = vec![10, 20, 30, 1_000];
        let root = u64::train_root(&pivots, None, &Config::default());
        let slots: Vec<Slot<u64>> = pivots
            .iter()
            .map(|pivot| Slot::new(pivot, std::ptr::null_mut()))
            .collect();
        let count = |key| u64::count_at_or_below(&root, &pivots, &slots, &key);
        assert_eq!(count(0), 0, "below every pivot");
        assert_eq!(count(10), 1);
        assert_eq!(count(19), 1);
        assert_eq!(count(20), 2);
        assert_eq!(count(999), 3);
        assert_eq!(count(u64::MAX), 4);
    }

    #[test]
    fn string_routing_handles_prefixes() {
        let pivots: Vec<Vec<u8>> = vec![b"a".to_vec(), b"ab".to_vec(), b"b".to_vec()];
        let root = Vec::<u8>::train_root(&pivots, None, &Config::default());
        let count = |key: &[u8]| Vec::<u8>::count_at_or_below(&root, &pivots, &[], key);
        assert_eq!(count(b""), 0);
        assert_eq!(count(b"a"), 1);
        assert_eq!(count(b"aa"), 1);
        assert_eq!(count(b"ab"), 2);
        assert_eq!(count(b"abz"), 2);
        assert_eq!(count(b"zz"), 3);
    }

    #[test]
    fn byte_hints_order_their_keys_or_tie() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgh\0\0\0\0\0\0\0\0\x01",
            b"abcdefghz",
            b"abcdefghz\0",
            b"abcdefghzzzzzzzz",
            b"abcdefghzzzzzzzza",
            b"b",
        ];
        for a in &keys {
            for b in &keys {
                let (ha, hb) = (Vec::<u8>::hint(a, 0), Vec::<u8>::hint(b, 0));
                if ha < hb {
                    assert!(a < b, "{a:?} {b:?}");
                }
                if a <= b {
                    assert!(ha <= hb, "{a:?} {b:?}");
                }
                // Where the hints tie, the tie hints order the keys the same way.
                let (ta, tb) = (Vec::<u8>::tie_hint(a, 0), Vec::<u8>::tie_hint(b, 0));
                if ha == hb && ta < tb {
                    assert!(a < b, "{a:?} {b:?}");
                }
                if ha == hb && a <= b {
                    assert!(ta <= tb, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn hinted_searches_match_a_sorted_array() {
        use crate::OrderedIndex;
        use crate::xindex::XIndex;
        // Random-looking keys (distinct hints), keys sharing a 12-byte prefix (runs of equal
        // hints) and short keys with zero bytes (hints equal through padding).
        let mut keys: Vec<Vec<u8>> = (0..3_000u64)
            .map(|i| {
                i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .to_be_bytes()
                    .repeat(3)
            })
            .chain((0..3_000u32).map(|i| [&b"shared-prefix"[..], &i.to_be_bytes()].concat()))
            .chain((0..=255u8).flat_map(|b| [vec![b], vec![b, 0], vec![b, 0, 0, 1]]))
            .chain((0..300u32).map(|i| [&[7u8; 36][..], &i.to_be_bytes()].concat()))
            .collect();
        keys.sort();
        keys.dedup();
        let (loaded, absent): (Vec<_>, Vec<_>) = keys
            .iter()
            .cloned()
            .enumerate()
            .partition(|(i, _)| i % 3 != 0);
        let pairs: Vec<(Vec<u8>, u64)> =
            loaded.iter().map(|(i, k)| (k.clone(), *i as u64)).collect();
        let index = XIndex::bulk_load(&pairs, Config::default()).expect("sorted, unique keys");
        for (i, key) in &loaded {
            assert_eq!(index.get(key), Some(*i as u64));
            assert_eq!(index.scan(key, 1).first().map(|(k, _)| k), Some(key));
        }
        for (_, key) in &absent {
            assert_eq!(index.get(key), None);
            let next = pairs.iter().find(|(k, _)| k > key).map(|(k, _)| k);
            assert_eq!(index.scan(key, 1).first().map(|(k, _)| k), next);
        }
        for key in keys.iter().step_by(7) {
            let stored: Vec<(Vec<u8>, u64)> = index
                .scan_stored(key, 5)
                .into_iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v))
                .collect();
            assert_eq!(stored, index.scan(key, 5), "scan_stored from {key:?}");
        }
    }

    #[test]
    fn keys_sharing_a_long_prefix_are_routed_and_found() {
        use std::collections::BTreeMap;

        use crate::OrderedIndex;
        use crate::xindex::XIndex;
        // Every pivot after the first and every group's keys share `ts/` and twelve zeros: the
        // root's hints start past them, the groups' hints two bytes before their end.
        let key = |i: u64| format!("ts/{i:016x}").into_bytes();
        let pairs: Vec<(Vec<u8>, u64)> = (0..20_000u64).map(|i| (key(i * 3), i)).collect();
        let config = Config {
            max_group_size: 256,
            background_threads: 0,
            ..Config::default()
        };
        let index = XIndex::bulk_load(&pairs, config).expect("sorted, unique keys");
        let mut model: BTreeMap<Vec<u8>, u64> = pairs.iter().cloned().collect();
        assert!(index.stats().groups > 50, "{:?}", index.stats());
        // Below the shared prefix (its proper prefixes, a smaller byte), above it, and keys
        // sharing it that lie between, below and above the loaded ones.
        let probes: Vec<Vec<u8>> = [&b""[..], b"a", b"ts", b"ts/0000000", b"ts/00000000"]
            .iter()
            .map(|k| k.to_vec())
            .chain([b"ts/1".to_vec(), b"ts/00000001".to_vec(), b"z".to_vec()])
            .chain((0..61_000u64).step_by(97).map(key))
            .collect();
        let check = |index: &XIndex<Vec<u8>>, model: &BTreeMap<Vec<u8>, u64>| {
            for probe in &probes {
                assert_eq!(index.get(probe), model.get(probe).copied(), "{probe:?}");
                let expected: Vec<(Vec<u8>, u64)> = model
                    .range(probe.clone()..)
                    .take(3)
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                assert_eq!(index.scan(probe, 3), expected, "from {probe:?}");
            }
        };
        check(&index, &model);
        // Keys outside the prefix join the first and the last group; once the passes have
        // split those and updated the root, its pivots share a shorter prefix or none.
        for (i, probe) in probes.iter().enumerate() {
            index.insert(probe.clone(), i as u64);
            model.insert(probe.clone(), i as u64);
        }
        for i in 0..2_000u64 {
            let low = format!("a{i:06}").into_bytes();
            let high = format!("ts/1{i:06}").into_bytes();
            index.insert(low.clone(), i);
            index.insert(high.clone(), i);
            model.insert(low, i);
            model.insert(high, i);
        }
        check(&index, &model);
        index.quiesce();
        index.validate();
        check(&index, &model);
        assert_eq!(index.scan(b"", usize::MAX).len(), model.len());
    }

    #[test]
    fn url_like_keys_are_routed_through_the_roots_tie_hints() {
        use crate::OrderedIndex;
        use crate::xindex::XIndex;
        // Small groups, so that one site's pivots tie on their hints and tie hints (both
        // within the site's name): a few pivots of one site, about 30 of another, which the
        // root searches among themselves and by its model.
        let key = |site: &str, i: u32| format!("https://www.{site}.com/{i:08}/page").into_bytes();
        let mut keys: Vec<Vec<u8>> = (0..200).map(|i| key("aaaaaaaaaaaaaaaa", 2 * i)).collect();
        keys.extend((0..2_000).map(|i| key("bbbbbbbbbbbbbbbb", 2 * i)));
        keys.extend((0..200).map(|i| key("c", 2 * i)));
        let pairs: Vec<(Vec<u8>, u64)> = keys.iter().cloned().zip(0..).collect();
        let config = Config {
            max_group_size: 64,
            background_threads: 0,
            ..Config::default()
        };
        let index = XIndex::bulk_load(&pairs, config).expect("sorted, unique keys");
        assert!(index.stats().groups > 36, "{:?}", index.stats());
        for site in ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "c"] {
            for i in 0..4_001 {
                let probe = key(site, i);
                let at = keys.partition_point(|k| *k < probe);
                let expected = keys.get(at).filter(|k| **k == probe).map(|_| at as u64);
                assert_eq!(index.get(&probe), expected, "{probe:?}");
                let next = index.scan(&probe, 1).pop().map(|(k, _)| k);
                assert_eq!(next.as_ref(), keys.get(at), "{probe:?}");
            }
        }
        index.validate();
    }

    #[test]
    fn initial_groups_cover_every_key_within_the_cap() {
        let keys: Vec<u64> = (0..1_000u64).map(|i| i * i).collect();
        let config = Config {
            max_group_size: 7,
            error_bound: 2,
            ..Config::default()
        };
        let ranges = u64::initial_groups(&keys, &config);
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(keys.len()));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= 7));

        let strings: Vec<Vec<u8>> = (0..300u32)
            .map(|i| format!("k{i:05}").into_bytes())
            .collect();
        let ranges = Vec::<u8>::initial_groups(&strings, &config);
        assert_eq!(ranges.last().map(|r| r.end), Some(strings.len()));
        assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= 7));
    }
}
