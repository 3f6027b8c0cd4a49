//! A byte-string key as a group's records hold it (§2.3 `data_array`, §3.4 string keys): up
//! to [`INLINE_LEN`] bytes inline in a 32-byte slot, a longer key in a heap block.
//!
//! A lookup ends by comparing the key at the position its search found (§3.2
//! `get_position`). Held as a `Vec<u8>`, that comparison costs two dependent cache misses, the
//! slot with the `Vec`'s pointer and then the bytes; held inline, one. The slot is also
//! smaller than a `Vec` plus its heap block for every inline key.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// The longest key held inline.
pub(crate) const INLINE_LEN: usize = 30;

/// A byte-string key as the records hold it: inline when it is at most 30 bytes long, else in a
/// heap block of its own.
#[derive(Clone)]
pub struct ByteKey(Repr);

/// Where a [`ByteKey`]'s bytes are.
#[derive(Clone)]
enum Repr {
    /// The first `len` bytes of `bytes` (`len <= INLINE_LEN`).
    Inline { len: u8, bytes: [u8; INLINE_LEN] },
    /// A key longer than [`INLINE_LEN`] bytes.
    Heap(Box<[u8]>),
}

const _: () = assert!(
    size_of::<ByteKey>() == 32,
    "a key slot is half a cache line"
);

impl ByteKey {
    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(bytes) => bytes,
        }
    }

    /// Heap bytes the key owns beyond its slot.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Heap(bytes) => bytes.len(),
        }
    }
}

impl From<&[u8]> for ByteKey {
    fn from(key: &[u8]) -> Self {
        if key.len() > INLINE_LEN {
            return Self(Repr::Heap(key.into()));
        }
        let mut bytes = [0; INLINE_LEN];
        bytes[..key.len()].copy_from_slice(key);
        Self(Repr::Inline {
            len: key.len() as u8,
            bytes,
        })
    }
}

impl Borrow<[u8]> for ByteKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for ByteKey {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for ByteKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ByteKey {}

impl PartialOrd for ByteKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByteKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for ByteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_bytes(), f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_order_as_their_bytes() {
        let keys: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0],
            vec![0; INLINE_LEN],
            vec![0; INLINE_LEN + 1],
            vec![1],
            vec![1; INLINE_LEN],
            [vec![1; INLINE_LEN], vec![0]].concat(),
            vec![255; 100],
        ];
        let stored: Vec<ByteKey> = keys.iter().map(|k| ByteKey::from(&k[..])).collect();
        for (key, slot) in keys.iter().zip(&stored) {
            assert_eq!(slot.as_bytes(), &key[..]);
            assert_eq!(slot.heap_bytes() > 0, key.len() > INLINE_LEN);
        }
        for (a, sa) in keys.iter().zip(&stored) {
            for (b, sb) in keys.iter().zip(&stored) {
                assert_eq!(sa.cmp(sb), a.cmp(b), "{a:?} {b:?}");
                assert_eq!(sa == sb, a == b);
            }
        }
    }
}
