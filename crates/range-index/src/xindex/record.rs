//! XIndex-R's record protocol (§3.2, Algorithm 5): reading, updating, removing and reviving a
//! record, and the copy phase's `replace_pointer`.
//!
//! A record is a [`RecordCell`]: a version-locked meta word and a one-word value. While the
//! merge phase of a compaction has made a record a *pointer* (`is_ptr`), its value word holds
//! the address of the authoritative cell — a record of the old array or an entry of the old
//! delta index — and every operation goes through it. Lock order is always outer (new record)
//! before inner (pointer target), so two operations never deadlock; a pointer target is never a
//! pointer itself (depth 1), and a pointer record is never `removed`.
//!
//! The targets stay allocated until barrier B3 of the compaction that created the pointers,
//! and every foreground operation runs online in the index's grace-period domain, so a target
//! read through a pointer is never freed under a reader.

use concurrency::{RecordCell, RecordMeta};

const _: () = assert!(
    usize::BITS == 64,
    "record pointers are stored in 64-bit words"
);

/// A new live record holding `value`.
pub(crate) fn live(value: u64) -> RecordCell {
    RecordCell::new(RecordMeta::new(), value)
}

/// A new pointer record whose value lives in `target` (the merge phase).
pub(crate) fn pointer_to(target: &RecordCell) -> RecordCell {
    RecordCell::new(
        RecordMeta::new().with_ptr(true),
        target as *const RecordCell as usize as u64,
    )
}

/// The cell a pointer record's value word designates.
///
/// # Safety
///
/// `word` must be the value of a pointer record read under its lock or validated, and the
/// caller must be online in the index's grace-period domain (or own the index exclusively):
/// targets are freed only after barrier B3 of the compaction that made the pointer.
unsafe fn target<'a>(word: u64) -> &'a RecordCell {
    // SAFETY: by the caller's contract `word` is the address of a live `RecordCell` that
    // outlives the caller's online section.
    unsafe { &*(word as usize as *const RecordCell) }
}

/// The record's value, or `None` when it is removed (`read_record`).
#[inline]
pub(crate) fn read(cell: &RecordCell) -> Option<u64> {
    let (meta, value) = cell.read();
    if meta.is_removed() {
        return None;
    }
    if !meta.is_ptr() {
        return Some(value);
    }
    read_through_pointer(cell)
}

/// [`read`] of a record that was a pointer when last read (while a compaction runs).
fn read_through_pointer(cell: &RecordCell) -> Option<u64> {
    loop {
        let (meta, value) = cell.read();
        if meta.is_removed() {
            return None;
        }
        if !meta.is_ptr() {
            return Some(value);
        }
        // SAFETY: `value` comes from a validated snapshot with `is_ptr`, and record functions
        // are only called by online operations (module comment).
        let inner = read(unsafe { target(value) });
        // Re-validating the outer record makes the pair (pointer, target value) one snapshot.
        if cell.validate(meta) {
            return inner;
        }
    }
}

/// Updates a live record in place to `new(old)`, called under the record's lock, and returns
/// the old value; `None` when it is removed, in which case nothing changes and `new` is not
/// called (`update_record`: a removed record is never revived here).
pub(crate) fn update(cell: &RecordCell, new: &mut impl FnMut(u64) -> u64) -> Option<u64> {
    let mut guard = cell.lock();
    if guard.meta().is_ptr() {
        // SAFETY: read under the outer lock; the caller is online (module comment).
        return update(unsafe { target(guard.value()) }, new);
    }
    if guard.meta().is_removed() {
        return None;
    }
    let old = guard.value();
    guard.set_value(new(old));
    Some(old)
}

/// Marks a live record removed and returns its old value; `None` when it was already removed.
pub(crate) fn remove(cell: &RecordCell) -> Option<u64> {
    let mut guard = cell.lock();
    if guard.meta().is_ptr() {
        // SAFETY: read under the outer lock; the caller is online (module comment).
        return remove(unsafe { target(guard.value()) });
    }
    if guard.meta().is_removed() {
        return None;
    }
    guard.set_removed(true);
    Some(guard.value())
}

/// Writes `value` into a record of the currently insertable location (a delta index that is
/// not frozen), reviving it if it was removed; returns the old value if it was live.
pub(crate) fn upsert(cell: &RecordCell, value: u64) -> Option<u64> {
    let mut guard = cell.lock();
    debug_assert!(
        !guard.meta().is_ptr(),
        "delta-index entries are never pointers"
    );
    let old = (!guard.meta().is_removed()).then(|| guard.value());
    guard.set_removed(false);
    guard.set_value(value);
    old
}

/// The copy phase: replaces a pointer record by the current value of its target, or marks it
/// removed if the target was removed (`replace_pointer`).
pub(crate) fn replace_pointer(cell: &RecordCell) {
    let mut guard = cell.lock();
    if !guard.meta().is_ptr() {
        return;
    }
    // SAFETY: read under the outer lock during the copy phase, before barrier B3.
    match read(unsafe { target(guard.value()) }) {
        Some(value) => guard.set_value(value),
        None => {
            guard.set_removed(true);
            guard.set_value(0);
        }
    }
    guard.set_ptr(false);
}
