//! Keys as model input (XIndex §2.2, §3.4).
//!
//! Integer keys enter a model as their signed offset from a pivot (the smallest key the model
//! was trained on), so two 64-bit keys above 2^53 that differ in their low bits still map to
//! different `f64` inputs as long as the model's own range is below 2^53. Byte-string keys enter
//! a model as the bytes of their partial key ([`crate::PartialKeyLayout`]).

use std::borrow::Borrow;
use std::fmt::Debug;

use crate::linear::LinearModel;
use crate::model::KeyModel;
use crate::string_model::StringModel;

/// A key type that learned indexes can index: `u64` or a byte string (`Vec<u8>`).
///
/// Keys are compared by their [`Ord`] order; lookups take the borrowed [`Key::Query`] form
/// (`u64` or `[u8]`), whose order must agree with the key's.
pub trait Key: Ord + Clone + Debug + Send + Sync + Borrow<Self::Query> + 'static {
    /// The borrowed form a lookup takes (`u64` for `u64`, `[u8]` for `Vec<u8>`).
    type Query: ?Sized + Ord + Debug;
    /// The model family that learns the position of this key type in a sorted array.
    type Model: KeyModel<Self>;
}

impl Key for u64 {
    type Query = u64;
    type Model = LinearModel;
}

impl Key for Vec<u8> {
    type Query = [u8];
    type Model = StringModel;
}

/// The model input of an integer key: its signed distance from `pivot`, as `f64`.
///
/// Subtracting before converting keeps the precision of keys above 2^53: only the distance,
/// not the key itself, has to fit the 53-bit mantissa. A distance under 2^63 either way (every
/// distance a model sees in practice) converts as an `i64`, in one x86-64 instruction; the
/// conversion from `u64` takes a sequence of them, on every lookup's path.
///
/// ```
/// use learned_model::offset_from_pivot;
/// let pivot = (1u64 << 60) + 1;
/// assert_eq!(offset_from_pivot(pivot + 3, pivot), 3.0);
/// assert_eq!(offset_from_pivot(pivot - 2, pivot), -2.0);
/// ```
#[inline]
pub fn offset_from_pivot(key: u64, pivot: u64) -> f64 {
    let (wrapped, below) = key.overflowing_sub(pivot);
    let signed = wrapped as i64;
    if below == (signed < 0) {
        signed as f64
    } else if below {
        -((pivot - key) as f64)
    } else {
        (key - pivot) as f64
    }
}

/// The first eight bytes of `bytes`, big-endian, zero-padded: a `u64` monotone in the byte
/// order (`prefix_word(a) < prefix_word(b)` implies `a < b`), equal for strings that agree on
/// their first eight bytes up to trailing zeros. Indexes use it as a cheap summary of a byte
/// key that orders most pairs without touching the key.
///
/// ```
/// use learned_model::prefix_word;
/// assert!(prefix_word(b"apple") < prefix_word(b"apricot"));
/// assert_eq!(prefix_word(b"a"), prefix_word(b"a\0"));
/// assert_eq!(prefix_word(b"abcdefgh1"), prefix_word(b"abcdefgh2"));
/// ```
#[inline]
pub fn prefix_word(bytes: &[u8]) -> u64 {
    // A few fixed-size loads instead of a copy of a variable length, which compiles to a call
    // of `memcpy` (a sixth of a word-list lookup's time went there). A byte `i` belongs at bits
    // `56 - 8i ..= 63 - 8i`; loads that overlap write the same byte to the same place.
    let len = bytes.len();
    let byte = |i: usize| u64::from(bytes[i]) << (56 - 8 * i);
    match len {
        0 => 0,
        1..=3 => byte(0) | byte(len / 2) | byte(len - 1),
        4..=7 => {
            let word = |from: usize| {
                let four: [u8; 4] = bytes[from..from + 4].try_into().expect("four bytes");
                u64::from(u32::from_be_bytes(four)) << (32 - 8 * from)
            };
            word(0) | word(len - 4)
        }
        _ => u64::from_be_bytes(bytes[..8].try_into().expect("eight bytes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: the distance converted as an unsigned number, negated below the pivot.
    fn by_definition(key: u64, pivot: u64) -> f64 {
        if key >= pivot {
            (key - pivot) as f64
        } else {
            -((pivot - key) as f64)
        }
    }

    #[test]
    fn offsets_match_the_definition_at_every_boundary_of_the_signed_range() {
        let half = 1u64 << 63;
        let values = [
            0,
            1,
            2,
            (1 << 53) + 1,
            half - 2,
            half - 1,
            half,
            half + 1,
            half + 2,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &key in &values {
            for &pivot in &values {
                let got = offset_from_pivot(key, pivot);
                let want = by_definition(key, pivot);
                assert_eq!(got.to_bits(), want.to_bits(), "key {key}, pivot {pivot}");
            }
        }
    }

    #[test]
    fn prefix_words_are_the_zero_padded_first_eight_bytes_at_every_length() {
        let bytes: Vec<u8> = (1..=12u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        for len in 0..=bytes.len() {
            let key = &bytes[..len];
            let mut padded = [0u8; 8];
            let head = len.min(8);
            padded[..head].copy_from_slice(&key[..head]);
            assert_eq!(prefix_word(key), u64::from_be_bytes(padded), "length {len}");
        }
    }
}
