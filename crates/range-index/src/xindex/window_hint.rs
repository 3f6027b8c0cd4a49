//! Window hints (learnkv's addition; README design notes, "Window hints"): where a group's
//! trained keys and cells lie and a copy of its models' lines, kept by the root beside each
//! slot, so that a lookup requests the key window and the cells its group's model will point
//! at together with the group node, instead of after the node has arrived.
//!
//! With many groups (osm's 36K, whose nodes do not stay cached) a lookup otherwise pays the
//! node's miss and then the window's, one after the other: the window's address needs the
//! node's model. A hint is only ever requested, never read through: a stale one (its group
//! compacted or split since) costs wasted requests and nothing else, and the passes that
//! replace groups refresh them as they do the table hints.

// Plain atomics, not the loom shim's: the hints take no part in any protocol (they are
// requested, never read through), so loom models need not explore them.
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use concurrency::RecordCell;
use concurrency::prefetch;

use crate::xindex::group::Group;
use crate::xindex::key::IndexKey;

/// How many of a group's models a hint copies; keys above the last copied model's start are
/// predicted by its line.
const HINTED_MODELS: usize = 4;

/// How many keys on each side of the hinted position are requested.
const KEY_RADIUS: usize = 32;

/// How many cells on each side of the hinted position are requested.
const CELL_RADIUS: usize = 12;

/// One slot's window hint: a cache line.
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct WindowHint {
    /// The address of the group's first key (0: no hint).
    keys: AtomicUsize,
    /// The address of the group's first cell.
    cells: AtomicUsize,
    /// The offsets (`f32` bits) at which models 1.. start; `+∞` past the last.
    starts: [AtomicU32; HINTED_MODELS - 1],
    /// Each model's line: the slope's `f32` bits above, the intercept's below.
    lines: [AtomicU64; HINTED_MODELS],
}

impl WindowHint {
    /// Notes where `group` (in a slot whose key is `base`) keeps its trained keys and cells and
    /// its models' lines; clears the hint for no group or a key type without window lines.
    pub(crate) fn set<K: IndexKey>(&self, group: Option<&Group<K>>, base: K::SlotKey) {
        let Some(group) = group else {
            self.keys.store(0, Relaxed);
            return;
        };
        let models = group.models();
        let keys = group.keys();
        if models.is_empty() {
            self.keys.store(0, Relaxed);
            return;
        }
        for (i, line) in self.lines.iter().enumerate() {
            // A line past the group's last model is never chosen: its start is `+∞`.
            let (slope, intercept) = match models.get(i) {
                Some((start, model)) => match K::window_line(model, *start, base) {
                    Some(line) => line,
                    None => {
                        self.keys.store(0, Relaxed);
                        return;
                    }
                },
                None => (0.0, 0.0),
            };
            let bits =
                u64::from((slope as f32).to_bits()) << 32 | u64::from((intercept as f32).to_bits());
            line.store(bits, Relaxed);
        }
        for (i, start) in self.starts.iter().enumerate() {
            let offset = models.get(i + 1).map_or(f32::INFINITY, |(first, _)| {
                K::window_offset(K::query(&keys[*first]), base) as f32
            });
            start.store(offset.to_bits(), Relaxed);
        }
        self.cells.store(group.cells().as_ptr() as usize, Relaxed);
        self.keys.store(keys.as_ptr() as usize, Relaxed);
    }

    /// The position the hinted models predict for a key `offset` above the slot's key
    /// ([`IndexKey::window_offset`]), with the addresses of the keys and the cells; `None`
    /// without a hint.
    #[inline]
    fn predict(&self, offset: f64) -> Option<(usize, usize, usize)> {
        let keys = self.keys.load(Relaxed);
        if keys == 0 {
            return None;
        }
        let offset = offset as f32;
        let model = self
            .starts
            .iter()
            .filter(|start| offset >= f32::from_bits(start.load(Relaxed)))
            .count();
        let line = self.lines[model].load(Relaxed);
        let slope = f32::from_bits((line >> 32) as u32);
        let intercept = f32::from_bits(line as u32);
        // Saturating: a negative (or NaN) prediction requests from the first key.
        let predicted = (slope * offset + intercept) as usize;
        Some((keys, self.cells.load(Relaxed), predicted))
    }

    /// Requests the key and cell lines around the position the hinted models predict for a
    /// key `offset` above the slot's key ([`IndexKey::window_offset`]).
    #[inline]
    pub(crate) fn request<K: IndexKey>(&self, offset: f64) {
        let Some((keys, cells, predicted)) = self.predict(offset) else {
            return;
        };
        let key_size = size_of::<K::Stored>();
        let cell_size = size_of::<RecordCell>();
        let at = |base: usize, size: usize, pos: usize| {
            base.wrapping_add(pos.wrapping_mul(size)) as *const u8
        };
        prefetch::line(at(keys, key_size, predicted));
        prefetch::line(at(cells, cell_size, predicted));
        let first_key = predicted.saturating_sub(KEY_RADIUS);
        prefetch::bytes(
            at(keys, key_size, first_key),
            (2 * KEY_RADIUS + 1) * key_size,
        );
        let first_cell = predicted.saturating_sub(CELL_RADIUS);
        prefetch::bytes(
            at(cells, cell_size, first_cell),
            (2 * CELL_RADIUS + 1) * cell_size,
        );
    }

    /// The addresses of the keys and cells noted (zeros: no hint), for tests.
    #[cfg(test)]
    pub(crate) fn addresses(&self) -> (usize, usize) {
        (self.keys.load(Relaxed), self.cells.load(Relaxed))
    }

    /// The hinted position for `offset`, for tests.
    #[cfg(test)]
    pub(crate) fn predicted(&self, offset: f64) -> Option<usize> {
        self.predict(offset).map(|(_, _, pos)| pos)
    }
}
