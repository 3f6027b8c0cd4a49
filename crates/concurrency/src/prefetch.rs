//! Software prefetch for the last mile of a lookup: once a model has predicted a key's
//! position, the cache lines the operation will touch next (XIndex-R's error window and the
//! records nearest the prediction, XIndex-H's bucket neighbourhood and chain head) are
//! requested together, so the dependent probes find them in flight instead of paying one memory
//! latency each. A hint only: it never changes a result.

/// The most cache lines one window prefetch requests.
pub const MAX_LINES: usize = 8;
/// The size of a cache line.
pub const LINE: usize = 64;

/// Requests the cache lines of `items` (at most [`MAX_LINES`], from its start).
#[inline]
pub fn slice<T>(items: &[T]) {
    let bytes = std::mem::size_of_val(items).min(MAX_LINES * LINE);
    let start = items.as_ptr().cast::<u8>();
    for offset in (0..bytes).step_by(LINE) {
        line(start.wrapping_add(offset));
    }
}

/// Requests the cache lines of the items within `radius` positions of `items[center]` (at
/// most [`MAX_LINES`], from the first of them).
#[inline]
pub fn around<T>(items: &[T], center: usize, radius: usize) {
    let start = center.saturating_sub(radius).min(items.len());
    let end = center.saturating_add(radius + 1).clamp(start, items.len());
    slice(&items[start..end]);
}

/// Requests the cache line holding `address`.
#[inline]
pub fn line<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint that never faults and has no observable effect, whatever
        // the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
