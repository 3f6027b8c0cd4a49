//! The optimal piecewise-linear approximation under a maximum error (PGM-index, O'Rourke
//! 1981): one pass keeps the two extreme feasible lines (steepest and flattest) and the convex
//! hulls they pivot on; a key that no feasible line can reach starts a new segment.
//!
//! A floored prediction of the key at position `i` is within ε exactly when the line passes
//! through `[i − ε, i + ε + 1)`. Geometry runs on exact integers: a point is the key's offset
//! from the segment's first key (as `i128`) and that interval with positions scaled by
//! [`SCALE`], so its open end becomes the integer `SCALE·(i + ε + 1) − 1` and cross products
//! never round (they stay below 2^120). The final `f64` line of each segment is checked key by
//! key, and a key that rounding pushed out of bounds (not ruled out by `f64`) closes the
//! segment before it.

use crate::error::{Result, check_sorted};
use crate::linear::LinearModel;
use crate::model::KeyModel;
use crate::segmentation::Segment;

/// Positions are scaled by this factor inside the hull.
const SCALE: i128 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    x: i128,
    y: i128,
}

impl Point {
    fn minus(self, other: Point) -> Point {
        Point {
            x: self.x - other.x,
            y: self.y - other.y,
        }
    }

    /// The z-component of `self × other`: positive when `other` turns counter-clockwise.
    fn cross(self, other: Point) -> i128 {
        self.x * other.y - self.y * other.x
    }
}

/// Whether `p` lies strictly above the line through `a` and `b` (`a.x < b.x`).
fn above(a: Point, b: Point, p: Point) -> bool {
    b.minus(a).cross(p.minus(a)) > 0
}

/// Whether `p` lies strictly below the line through `a` and `b` (`a.x < b.x`).
fn below(a: Point, b: Point, p: Point) -> bool {
    b.minus(a).cross(p.minus(a)) < 0
}

/// The state of one growing segment.
struct Cone {
    /// The scaled distance from a position to its lowest allowed prediction (`−SCALE·ε`).
    low_offset: i128,
    /// The scaled distance from a position to its highest allowed prediction
    /// (`SCALE·(ε + 1) − 1`).
    high_offset: i128,
    /// Upper constraint points `(x, y + high_offset)`; their lower convex hull, from
    /// `upper_start`.
    upper: Vec<Point>,
    upper_start: usize,
    /// Lower constraint points `(x, y + low_offset)`; their upper convex hull, from
    /// `lower_start`.
    lower: Vec<Point>,
    lower_start: usize,
    /// The steepest feasible line passes through `steep.0` (a lower point) and `steep.1`.
    steep: (Point, Point),
    /// The flattest feasible line passes through `flat.0` (an upper point) and `flat.1`.
    flat: (Point, Point),
    points: usize,
}

impl Cone {
    fn new(epsilon: u64) -> Self {
        let origin = Point { x: 0, y: 0 };
        let epsilon = i128::from(epsilon);
        Self {
            low_offset: -SCALE * epsilon,
            high_offset: SCALE * (epsilon + 1) - 1,
            upper: Vec::new(),
            upper_start: 0,
            lower: Vec::new(),
            lower_start: 0,
            steep: (origin, origin),
            flat: (origin, origin),
            points: 0,
        }
    }

    fn reset(&mut self) {
        self.upper.clear();
        self.lower.clear();
        self.upper_start = 0;
        self.lower_start = 0;
        self.points = 0;
    }

    /// Adds the key at offset `x` (greater than every earlier one) and `position`; returns
    /// false, leaving the cone unchanged, when no line within ε of every key so far reaches it.
    fn add(&mut self, x: i128, position: i128) -> bool {
        let y = position * SCALE;
        let up = Point {
            x,
            y: y + self.high_offset,
        };
        let low = Point {
            x,
            y: y + self.low_offset,
        };
        match self.points {
            0 => {
                self.upper.push(up);
                self.lower.push(low);
            }
            1 => {
                self.steep = (self.lower[0], up);
                self.flat = (self.upper[0], low);
                self.upper.push(up);
                self.lower.push(low);
            }
            _ => {
                if above(self.steep.0, self.steep.1, low) || below(self.flat.0, self.flat.1, up) {
                    return false;
                }
                if below(self.steep.0, self.steep.1, up) {
                    self.tighten_steep(up);
                }
                if above(self.flat.0, self.flat.1, low) {
                    self.tighten_flat(low);
                }
            }
        }
        self.points += 1;
        true
    }

    /// `up` cuts the steepest line: the new steepest line passes through `up` and is tangent
    /// to the hull of lower points; hull points left of the tangent can never bind again.
    fn tighten_steep(&mut self, up: Point) {
        let mut tangent = self.lower_start;
        for i in self.lower_start + 1..self.lower.len() {
            // Move right while the slope from the hull point to `up` keeps falling.
            if self.lower[i].minus(up).cross(self.lower[tangent].minus(up)) < 0 {
                break;
            }
            tangent = i;
        }
        self.steep = (self.lower[tangent], up);
        self.lower_start = tangent;
        while self.upper.len() - self.upper_start >= 2 {
            let n = self.upper.len();
            let (a, b) = (self.upper[n - 2], self.upper[n - 1]);
            if b.minus(a).cross(up.minus(a)) > 0 {
                break;
            }
            self.upper.pop();
        }
        self.upper.push(up);
    }

    /// `low` cuts the flattest line: mirror image of [`Cone::tighten_steep`].
    fn tighten_flat(&mut self, low: Point) {
        let mut tangent = self.upper_start;
        for i in self.upper_start + 1..self.upper.len() {
            // Move right while the slope from the hull point to `low` keeps rising.
            if self.upper[i]
                .minus(low)
                .cross(self.upper[tangent].minus(low))
                > 0
            {
                break;
            }
            tangent = i;
        }
        self.flat = (self.upper[tangent], low);
        self.upper_start = tangent;
        while self.lower.len() - self.lower_start >= 2 {
            let n = self.lower.len();
            let (a, b) = (self.lower[n - 2], self.lower[n - 1]);
            if b.minus(a).cross(low.minus(a)) < 0 {
                break;
            }
            self.lower.pop();
        }
        self.lower.push(low);
    }

    /// A line `(slope, intercept at x = 0)`, in unscaled positions, within the bounds of every
    /// point: it passes through the crossing of the two extreme lines with their mean slope, a
    /// convex combination of two feasible lines and so feasible itself.
    fn line(&self) -> (f64, f64) {
        let (slope, intercept) = self.scaled_line();
        (slope / SCALE as f64, intercept / SCALE as f64)
    }

    fn scaled_line(&self) -> (f64, f64) {
        if self.points < 2 {
            return (0.0, 0.0);
        }
        let slope_of = |(a, b): (Point, Point)| (b.y - a.y) as f64 / (b.x - a.x) as f64;
        let (steep, flat) = (slope_of(self.steep), slope_of(self.flat));
        let slope = (steep + flat) / 2.0;
        let d_steep = self.steep.1.minus(self.steep.0);
        let d_flat = self.flat.1.minus(self.flat.0);
        let denominator = d_steep.cross(d_flat);
        if denominator == 0 {
            // Parallel extremes: the line halfway between them.
            let at_zero = |(a, _): (Point, Point), s: f64| a.y as f64 - s * a.x as f64;
            return (
                slope,
                (at_zero(self.steep, steep) + at_zero(self.flat, flat)) / 2.0,
            );
        }
        let t = self.flat.0.minus(self.steep.0).cross(d_flat) as f64 / denominator as f64;
        let cross_x = self.steep.0.x as f64 + t * d_steep.x as f64;
        let cross_y = self.steep.0.y as f64 + t * d_steep.y as f64;
        (slope, cross_y - slope * cross_x)
    }
}

/// Splits strictly increasing `keys` into the fewest segments whose lines predict every key
/// within `epsilon` positions after flooring (clamping to the segment only brings predictions
/// closer).
///
/// Runs in O(n).
///
/// ```
/// use learned_model::{KeyModel, optimal_segments};
/// let keys: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
/// let segments = optimal_segments(&keys, 8).unwrap();
/// for s in &segments {
///     assert!(s.model.bounds().max_abs() <= 8);
/// }
/// assert_eq!(segments.last().unwrap().range.end, keys.len());
/// ```
pub fn optimal_segments(keys: &[u64], epsilon: u64) -> Result<Vec<Segment>> {
    check_sorted(keys)?;
    let mut cone = Cone::new(epsilon);
    let mut segments = Vec::new();
    let mut start = 0;
    while start < keys.len() {
        cone.reset();
        let first = keys[start];
        let mut end = start;
        while end < keys.len() && cone.add(i128::from(keys[end] - first), (end - start) as i128) {
            end += 1;
        }
        let (slope, intercept) = cone.line();
        let model = LinearModel::from_line(&keys[start..end], first, slope, intercept);
        let end = if model.bounds().max_abs() <= epsilon {
            end
        } else {
            first_out_of_bounds(&model, &keys[start..end], epsilon) + start
        };
        let model = LinearModel::from_line(&keys[start..end], first, slope, intercept);
        segments.push(Segment {
            range: start..end,
            model,
        });
        start = end;
    }
    Ok(segments)
}

/// The position of the first key that `model` predicts more than `epsilon` away (at least 1:
/// the first key of a segment is always predicted exactly enough to keep it).
fn first_out_of_bounds(model: &LinearModel, keys: &[u64], epsilon: u64) -> usize {
    keys.iter()
        .enumerate()
        .position(|(i, k)| (i as i64 - model.predict(k) as i64).unsigned_abs() > epsilon)
        .map_or(keys.len(), |i| i.max(1))
}
