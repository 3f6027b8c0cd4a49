//! Software prefetch for the last mile of a lookup: once a model has predicted a key's
//! position, the cache lines the operation will touch next (XIndex-R's error window and the
//! records nearest the prediction, XIndex-H's bucket neighbourhood and chain head) are
//! requested together, so the dependent probes find them in flight instead of paying one memory
//! latency each. A hint only: it never changes a result.

/// The most cache lines one window prefetch requests.
pub const MAX_LINES: usize = 8;
/// How many lookups a batched read prepares (its keys' lines requested) before it runs their
/// searches: the requested lines must still be cached when their search comes (measured on
/// XIndex-R at 10M keys: 114–118 ns per key in batches of 8 to 32, 120–123 in batches of 64).
pub const LOOKUP_BATCH: usize = 32;
/// The size of a cache line.
pub const LINE: usize = 64;

/// Requests the cache lines `items` spans (at most [`MAX_LINES`], from its start).
#[inline]
pub fn slice<T>(items: &[T]) {
    bytes(items.as_ptr().cast(), std::mem::size_of_val(items));
}

/// Requests the cache lines of the `len` bytes from `start` (at most [`MAX_LINES`], from the
/// first): for an address that may no longer be valid, such as a hint kept beside a pointer
/// (nothing is read, so a stale one costs only the request).
#[inline]
pub fn bytes(start: *const u8, len: usize) {
    let lines = lines_spanned(start as usize, len).min(MAX_LINES);
    let first = start.wrapping_sub(start as usize % LINE);
    for index in 0..lines {
        line(first.wrapping_add(index * LINE));
    }
}

/// How many cache lines the `bytes` bytes from address `start` touch: from the line holding
/// the first byte to the one holding the last, so a range that starts within a line can span
/// one line more than its length in lines.
fn lines_spanned(start: usize, bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (start % LINE + bytes - 1) / LINE + 1
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

/// Requests the cache line of `items[index]`, if there is such an item.
#[inline]
pub fn at<T>(items: &[T], index: usize) {
    if let Some(item) = items.get(index) {
        line(item);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_spans_the_lines_of_its_first_and_last_bytes() {
        assert_eq!(lines_spanned(0, 0), 0);
        assert_eq!(lines_spanned(0, 1), 1);
        assert_eq!(lines_spanned(0, LINE), 1);
        assert_eq!(lines_spanned(0, LINE + 1), 2);
        assert_eq!(lines_spanned(LINE - 4, 8), 2);
        assert_eq!(lines_spanned(3 * LINE + 8, 2 * LINE), 3);
    }
}
