//! Corrected predictions (not in the paper; README design notes, "Corrected predictions").
//!
//! A group's models are trained until their largest error is within `e` (§3.3), and a model
//! stretched over its slice uses most of that bound: over 10M lognormal keys only 30% of the
//! keys lie within 4 positions of their prediction. Where keys curve within a model, its errors
//! drift with the position, so a table of the residuals' midpoints, one for each sixty-fourth of
//! the model's predicted positions, moves a prediction next to its key (91% within 4 positions
//! on the same keys). A lookup then requests a few lines around the corrected prediction
//! instead of the model's whole window. Only groups whose models all cover enough keys keep
//! tables: where models are small (osm's hold about 80 keys) and the nodes do not stay cached,
//! tables cost more than they save (up to 12% slower in a scratch build); nor do groups whose
//! errors scatter instead of drifting, where the tables would leave too many keys beyond the
//! few requested lines. A search from a corrected prediction finds the lower bound wherever it
//! starts, widening past the lines requested when the key lies beyond them.

/// How many parts of a model's predicted positions share a correction.
pub(crate) const BUCKETS: usize = 64;

/// The fewest keys a model covers for its group to keep corrections.
pub(crate) const MIN_CORRECTED_KEYS: usize = 256;

/// One model's corrections: the residual (actual minus predicted position) to add to a
/// prediction, by the part of the model's positions it falls in.
pub(crate) type Table = [i8; BUCKETS];

/// The part of a model over `len` keys that the prediction `predicted` (below `len`) falls in.
#[inline]
fn bucket(predicted: usize, len: usize) -> usize {
    (predicted * BUCKETS / len).min(BUCKETS - 1)
}

/// The share of a group's keys, in tenths, that its corrections must place near their
/// predictions for the group to keep them: where a model's errors do not drift smoothly (the
/// word list's), the midpoints move few keys closer, and a lookup would search outward from a
/// few requested lines instead of within the model's whole requested window.
pub(crate) const MIN_NEAR_TENTHS: usize = 9;

/// The corrections of a model over `len` keys from `(position, predicted)` of its trained
/// keys: each part's midpoint of the residuals predicted in it (0 where none is); and how many
/// of the keys lie in parts whose residuals all fall within `radius` of their midpoint (the
/// keys a lookup finds within `radius` of its corrected prediction).
pub(crate) fn table(
    len: usize,
    placed: impl IntoIterator<Item = (usize, usize)>,
    radius: usize,
) -> (Table, usize) {
    let mut lowest = [i64::MAX; BUCKETS];
    let mut highest = [i64::MIN; BUCKETS];
    let mut count = [0; BUCKETS];
    for (position, predicted) in placed {
        let part = bucket(predicted, len);
        let residual = position as i64 - predicted as i64;
        lowest[part] = lowest[part].min(residual);
        highest[part] = highest[part].max(residual);
        count[part] += 1;
    }
    let midpoint = |part: usize| lowest[part] + (highest[part] - lowest[part]) / 2;
    let table = std::array::from_fn(|part| {
        if count[part] == 0 {
            return 0;
        }
        midpoint(part).clamp(i8::MIN.into(), i8::MAX.into()) as i8
    });
    let near = (0..BUCKETS)
        .filter(|&part| {
            count[part] > 0
                && i64::from(table[part]) == midpoint(part)
                && highest[part] - midpoint(part) <= radius as i64
        })
        .map(|part| count[part])
        .sum();
    (table, near)
}

/// The corrected prediction, within the model's `len` positions, of a key the model predicts
/// at `predicted` (below `len`).
#[inline]
pub(crate) fn apply(table: &Table, predicted: usize, len: usize) -> usize {
    let residual = isize::from(table[bucket(predicted, len)]);
    predicted.saturating_add_signed(residual).min(len - 1)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Keys that bow away from their model's line (as lognormal keys do within a model): the
    /// key at position `i` is predicted up to a tenth of the model's length below it (within
    /// the corrections' range, as a model's errors are). How far each key is from its
    /// prediction, raw and corrected, and how many keys the corrections count near.
    fn errors(len: usize) -> (Vec<usize>, Vec<usize>, usize) {
        let predicted = |i: usize| {
            let x = i as f64 / len as f64;
            let bow = 0.4 * x * (1.0 - x) * len as f64;
            (i as f64 - bow) as usize
        };
        let placed: Vec<(usize, usize)> = (0..len).map(|i| (i, predicted(i))).collect();
        let (corrections, near) = table(len, placed.iter().copied(), 8);
        let raw = placed.iter().map(|&(i, p)| i.abs_diff(p)).collect();
        let corrected = placed
            .iter()
            .map(|&(i, p)| i.abs_diff(apply(&corrections, p, len)))
            .collect();
        (raw, corrected, near)
    }

    #[test]
    fn corrections_move_predictions_next_to_their_keys() {
        let (raw, corrected, near) = errors(1_024);
        let largest = |e: &[usize]| e.iter().copied().max().unwrap_or(0);
        assert!(largest(&raw) > 80, "the keys stray far from the line");
        assert!(
            largest(&corrected) <= 8,
            "corrected predictions stay within half a part's spread: {}",
            largest(&corrected)
        );
        assert_eq!(
            near, 1_024,
            "every key lies within 8 of its corrected prediction"
        );
    }

    #[test]
    fn scattered_residuals_count_no_key_near() {
        // Two keys at each prediction, 20 positions below and above it: every part's midpoint
        // leaves them 20 away.
        let placed = (20..1_004).flat_map(|p| [(p - 20, p), (p + 20, p)]);
        let (corrections, near) = table(1_024, placed, 8);
        assert_eq!(near, 0);
        assert!(corrections.iter().all(|&c| c.abs() <= 1));
        // Residuals beyond what a correction holds count as far, whatever their spread.
        let (corrections, near) = table(1_024, (0..500).map(|i| (i + 500, i)), 8);
        assert_eq!((corrections[0], near), (i8::MAX, 0));
    }

    #[test]
    fn corrected_predictions_stay_within_the_model() {
        let corrections = [i8::MAX; BUCKETS];
        assert_eq!(apply(&corrections, 999, 1_000), 999);
        let corrections = [i8::MIN; BUCKETS];
        assert_eq!(apply(&corrections, 3, 1_000), 0);
        assert_eq!(table(10, std::iter::empty(), 8), ([0; BUCKETS], 0));
    }
}
