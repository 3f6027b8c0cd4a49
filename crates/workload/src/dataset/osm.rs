//! An `osm`-like real key set: 64-bit Hilbert-curve cell ids of the 144,563 GeoNames places in
//! `datasets/cities1000.csv`, a stand-in for SOSD's `osm_cellids` (OpenStreetMap S2 cell ids)
//! and for XIndex Table 3's `osm` set.
//!
//! A point (latitude, longitude) becomes a cell on a `2^32 × 2^32` grid (longitude on x,
//! latitude on y, each scaled linearly to 32 bits) and the cell its index along the order-32
//! Hilbert curve, so nearby places get nearby keys and the keys inherit the clustering of the
//! world's towns. The CSV file is embedded in the crate, so the set needs no path at run time.
//!
//! The real set has 144,327 distinct cells (some places share coordinates). Larger sets are
//! scaled by **jittering around real cells**: each extra key takes a real cell chosen uniformly
//! at random and replaces its low `2b` bits by random bits, with `b` uniform in `7..=19` — a
//! random point of the Hilbert block of `2^b × 2^b` grid cells that holds the real place. A cell
//! spans 40,075 km / 2^32 ≈ 9.33 mm of longitude at the equator (less by the cosine of the
//! latitude) and 20,004 km / 2^32 ≈ 4.66 mm of latitude, so the blocks range from 2^7 cells ≈
//! 1.2 m × 0.6 m to 2^19 cells ≈ 4.9 km × 2.4 km. The result keeps the real set's large-scale
//! shape and adds clusters at every scale from a building to a town, as real OpenStreetMap nodes
//! do around settlements.

use rand::{Rng, RngExt};

use crate::dataset::{sample_sorted, unique_sorted};
use crate::error::{Error, Result};
use crate::seed;

/// The GeoNames places, `lat,lon,name,cc` (CC BY 4.0, see `datasets/README.md`).
const CITIES_CSV: &str = include_str!("../../../../datasets/cities1000.csv");

/// The name used for the embedded file in error messages.
const CITIES_NAME: &str = "datasets/cities1000.csv";

/// The most keys [`cells`] can scale to.
pub const MAX_KEYS: usize = 1 << 36;

/// The grid's bits per axis.
const AXIS_BITS: u32 = 32;

/// The side of a jitter block is `2^b` cells for `b` uniform in this range (see the module
/// comment: about 1.2 m to 4.9 km east–west at the equator).
const JITTER_LEVELS: std::ops::RangeInclusive<u32> = 7..=19;

/// The index of cell `(x, y)` along the Hilbert curve that fills a `2^bits × 2^bits` grid
/// (`bits` ≤ 32, `x` and `y` below `2^bits`).
///
/// ```
/// use workload::dataset::osm::hilbert_index;
/// // The order-1 curve visits (0,0), (0,1), (1,1), (1,0).
/// let order1: Vec<u64> = [(0, 0), (0, 1), (1, 1), (1, 0)].map(|(x, y)| hilbert_index(x, y, 1)).into();
/// assert_eq!(order1, [0, 1, 2, 3]);
/// ```
pub fn hilbert_index(x: u32, y: u32, bits: u32) -> u64 {
    debug_assert!(bits <= AXIS_BITS, "at most 32 bits per axis");
    let last = if bits == AXIS_BITS {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    let (mut x, mut y) = (x & last, y & last);
    let mut index = 0u64;
    for level in (0..bits).rev() {
        let half = 1u32 << level;
        let rx = u64::from(x & half != 0);
        let ry = u64::from(y & half != 0);
        // The quadrant's rank along the curve, times the cells in a quadrant at this level.
        index += ((3 * rx) ^ ry) << (2 * level);
        // Rotate the quadrant so that the curve inside it starts at its lower left corner.
        if ry == 0 {
            if rx == 1 {
                x = last - x;
                y = last - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
    }
    index
}

/// The 64-bit Hilbert cell id of a point given in degrees.
///
/// Latitude `[-90, 90]` and longitude `[-180, 180]` are each mapped linearly onto `[0, 2^32)`
/// (the end points clamp into the last cell).
///
/// ```
/// use workload::dataset::osm::cell_id;
/// let paris = cell_id(48.8566, 2.3522);
/// let versailles = cell_id(48.8049, 2.1204);
/// let sydney = cell_id(-33.8688, 151.2093);
/// assert!(paris.abs_diff(versailles) < paris.abs_diff(sydney));
/// ```
pub fn cell_id(lat: f64, lon: f64) -> u64 {
    let axis = |value: f64, span: f64| {
        let cells = f64::from(u32::MAX) + 1.0;
        // Float-to-int casts saturate, so out-of-range values land in the edge cells.
        ((value / span + 0.5) * cells)
            .floor()
            .min(f64::from(u32::MAX)) as u32
    };
    hilbert_index(axis(lon, 360.0), axis(lat, 180.0), AXIS_BITS)
}

/// The distinct Hilbert cell ids of every place in the embedded GeoNames file, sorted.
pub fn real_cells() -> Result<Vec<u64>> {
    let mut cells = parse_points(CITIES_CSV, CITIES_NAME)?
        .into_iter()
        .map(|(lat, lon)| cell_id(lat, lon))
        .collect::<Vec<_>>();
    cells.sort_unstable();
    cells.dedup();
    Ok(cells)
}

/// The `osm` data set: all real cells for `None`, a seeded sample of them for a count up to the
/// real set's size, and the real cells topped up with jittered cells (see the module comment)
/// for larger counts, up to [`MAX_KEYS`].
pub fn cells(count: Option<usize>, seed: u64) -> Result<Vec<u64>> {
    resize(real_cells()?, count, seed)
}

/// [`cells`] from the sorted unique `real` cells.
fn resize(real: Vec<u64>, count: Option<usize>, seed: u64) -> Result<Vec<u64>> {
    let Some(n) = count else { return Ok(real) };
    if n <= real.len() {
        return Ok(sample_sorted(&real, n, seed));
    }
    if n > MAX_KEYS {
        return Err(Error::invalid(format!(
            "osm: at most {MAX_KEYS} keys, {n} requested"
        )));
    }
    let mut rng = seed::rng(seed, seed::stream::OSM);
    let anchors = real.clone();
    Ok(unique_sorted(real, n, || jitter(&anchors, &mut rng)))
}

/// A random cell in the Hilbert block of `4^b` cells, `b` uniform in [`JITTER_LEVELS`], around a
/// random real cell.
fn jitter(anchors: &[u64], rng: &mut impl Rng) -> u64 {
    let anchor = anchors[rng.random_range(0..anchors.len())];
    let bits = 2 * rng.random_range(JITTER_LEVELS);
    let low = (1u64 << bits) - 1;
    (anchor & !low) | (rng.next_u64() & low)
}

/// The `(lat, lon)` pairs of a `lat,lon,…` CSV text with a header line.
fn parse_points(text: &str, source_name: &str) -> Result<Vec<(f64, f64)>> {
    let mut points = Vec::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let error = |reason: String| Error::Parse {
            source_name: source_name.to_owned(),
            line: number + 1,
            reason,
        };
        let mut fields = line.splitn(3, ',');
        let mut coordinate = |what: &str, limit: f64| {
            let field = fields.next().unwrap_or_default();
            match field.trim().parse::<f64>() {
                Ok(value) if value.abs() <= limit => Ok(value),
                Ok(value) => Err(error(format!("{what} {value} is outside ±{limit}"))),
                Err(_) => Err(error(format!("{what} `{field}` is not a number"))),
            }
        };
        let lat = coordinate("latitude", 90.0)?;
        let lon = coordinate("longitude", 180.0)?;
        points.push((lat, lon));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hilbert_curve_is_a_continuous_bijection() {
        let bits = 4;
        let side = 1u32 << bits;
        let mut cells = vec![(0, 0); (side * side) as usize];
        for x in 0..side {
            for y in 0..side {
                cells[hilbert_index(x, y, bits) as usize] = (x, y);
            }
        }
        assert_eq!(cells[0], (0, 0));
        for pair in cells.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            assert_eq!(
                x0.abs_diff(x1) + y0.abs_diff(y1),
                1,
                "consecutive cells are neighbours"
            );
        }
    }

    #[test]
    fn full_resolution_corners() {
        assert_eq!(hilbert_index(0, 0, 32), 0);
        assert_eq!(hilbert_index(u32::MAX, 0, 32), u64::MAX);
        assert_eq!(cell_id(-90.0, -180.0), 0);
        assert_eq!(cell_id(-90.0, 180.0), u64::MAX);
    }

    #[test]
    fn real_set_is_large_sorted_and_unique() {
        let cells = real_cells().expect("the embedded file parses");
        assert!(
            cells.len() > 144_000 && cells.len() <= 144_563,
            "{} cells",
            cells.len()
        );
        assert!(cells.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(super::cells(None, 1).expect("natural size"), cells);
    }

    #[test]
    fn samples_and_scaled_sets_are_exact_and_deterministic() {
        let real = real_cells().expect("the embedded file parses");
        let resized = |n, seed| resize(real.clone(), Some(n), seed).expect("within limits");
        for n in [0, 1_000, 100_000, 200_000] {
            let keys = resized(n, 11);
            assert_eq!(keys.len(), n);
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(keys, resized(n, 11));
            if n > 0 {
                assert_ne!(keys, resized(n, 12));
            }
        }
        assert_eq!(
            cells(Some(1_000), 11).expect("within limits"),
            resized(1_000, 11)
        );
        let scaled = resized(200_000, 11);
        let kept = real
            .iter()
            .filter(|cell| scaled.binary_search(cell).is_ok())
            .count();
        assert_eq!(kept, real.len(), "a scaled set keeps every real cell");
        // Every jittered key lies in the Hilbert block of the largest jitter level around a
        // real cell.
        let block = (1u64 << (2 * JITTER_LEVELS.end())) - 1;
        for key in &scaled {
            let first = real.partition_point(|&cell| cell < key & !block);
            assert!(
                real.get(first).is_some_and(|&cell| cell <= key | block),
                "key {key:#x}"
            );
        }
        assert!(resize(real.clone(), Some(MAX_KEYS + 1), 1).is_err());
    }

    #[test]
    fn jitter_blocks_span_a_metre_to_a_few_kilometres() {
        // One grid cell at the equator, east–west and north–south, in metres.
        let cell = (
            40_075_016.686 / 2f64.powi(32),
            20_003_931.459 / 2f64.powi(32),
        );
        let side = |level: u32| f64::from(1u32 << level);
        let smallest = side(*JITTER_LEVELS.start());
        let largest = side(*JITTER_LEVELS.end());
        assert!(
            (1.1..1.3).contains(&(smallest * cell.0)),
            "{}",
            smallest * cell.0
        );
        assert!((0.5..0.7).contains(&(smallest * cell.1)));
        assert!((4_800.0..5_000.0).contains(&(largest * cell.0)));
        assert!((2_300.0..2_500.0).contains(&(largest * cell.1)));
        // The level of a jittered key: the side of the smallest aligned block holding it and its
        // anchor. Random low bits reach the block's top bit pair 3 times in 4, so every level of
        // the range shows up and none above it.
        let anchor = 0x5555_5555_5555_5555u64;
        let mut rng = seed::rng(1, 0);
        let mut seen = [0u32; 33];
        for _ in 0..10_000 {
            let differing = 64 - (jitter(&[anchor], &mut rng) ^ anchor).leading_zeros();
            seen[differing.div_ceil(2) as usize] += 1;
        }
        for level in JITTER_LEVELS {
            assert!(seen[level as usize] > 0, "level {level} missing: {seen:?}");
        }
        assert!(
            seen[*JITTER_LEVELS.end() as usize + 1..]
                .iter()
                .all(|&n| n == 0),
            "{seen:?}"
        );
    }

    #[test]
    fn bad_rows_are_errors_with_line_numbers() {
        let bad = "lat,lon,name,cc\n1.0,2.0,A,B\n95.0,2.0,C,D\n";
        assert!(matches!(
            parse_points(bad, "t"),
            Err(Error::Parse { line: 3, .. })
        ));
        let bad = "lat,lon\n1.0,abc\n";
        assert!(matches!(
            parse_points(bad, "t"),
            Err(Error::Parse { line: 2, .. })
        ));
        let bad = "lat,lon\n1.0\n";
        assert!(matches!(
            parse_points(bad, "t"),
            Err(Error::Parse { line: 2, .. })
        ));
        assert_eq!(
            parse_points("lat,lon\r\n1.5,-2.5,x\r\n", "t").expect("valid"),
            [(1.5, -2.5)]
        );
    }
}
