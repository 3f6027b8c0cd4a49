//! What XIndex-H needs from a key type (§3.6; digest §2.6, feature 21): a model input, a
//! strong hash, and a one-word encoding that optimistic readers can load atomically.
//!
//! A record's key lives in an `AtomicU64` *key word* (DESIGN: anything read without a lock is
//! an atomic). A `u64` key is its own word. A byte-string key is a pointer to an immutable,
//! heap-allocated copy owned by the record's group: it is written once, before the record's
//! `uninitialized` flag is cleared by a `Release` store, never changed afterwards, and freed
//! only with the group, a grace period after the group was unlinked; so a reader that saw the
//! record initialised (`Acquire`) may dereference it while it is online.
//!
//! Model input: integers are their own input; byte strings enter the models as a partial key,
//! their first 8 bytes read big-endian and zero-padded (order-preserving, the paper's partial
//! key idea of §3.4 at a fixed length). Keys sharing those 8 bytes collide in a learned model;
//! the per-group choice of the hash function (see `model`) keeps such data off the cliff.
//!
//! This module holds the `unsafe` code of byte-string key words.

use learned_model::Key;

mod sealed {
    /// Only this crate implements [`HashKey`](super::HashKey).
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for Vec<u8> {}
}

/// A key type XIndex-H can index: `u64` or `Vec<u8>` (queried as `&[u8]`). Sealed.
pub trait HashKey: Key + sealed::Sealed {
    /// The key's input to learned models: monotone in the key order.
    fn model_input(key: &Self::Query) -> u64;

    /// A strong 64-bit hash of the key.
    fn hash(key: &Self::Query) -> u64;

    /// A new key word holding `key` (a byte string is copied to the heap); release it with
    /// [`release_word`](Self::release_word).
    #[doc(hidden)]
    fn new_word(key: &Self::Query) -> u64;

    /// Whether `word` holds `key`.
    ///
    /// # Safety
    /// `word` came from [`new_word`](Self::new_word) and has not been released.
    #[doc(hidden)]
    unsafe fn word_eq(word: u64, key: &Self::Query) -> bool;

    /// An owned copy of the key `word` holds.
    ///
    /// # Safety
    /// As for [`word_eq`](Self::word_eq).
    #[doc(hidden)]
    unsafe fn word_key(word: u64) -> Self;

    /// Frees what `word` owns.
    ///
    /// # Safety
    /// As for [`word_eq`](Self::word_eq); no one uses `word` afterwards.
    #[doc(hidden)]
    unsafe fn release_word(word: u64);

    /// Heap bytes owned by `word` (for [`Stats::bytes`](crate::Stats::bytes)).
    ///
    /// # Safety
    /// As for [`word_eq`](Self::word_eq).
    #[doc(hidden)]
    unsafe fn word_heap_bytes(word: u64) -> usize;
}

/// The 64-bit finaliser of a multiply–xorshift hash: every input bit affects every output bit.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^ (x >> 32)
}

impl HashKey for u64 {
    #[inline]
    fn model_input(key: &u64) -> u64 {
        *key
    }

    #[inline]
    fn hash(key: &u64) -> u64 {
        mix64(*key)
    }

    #[inline]
    fn new_word(key: &u64) -> u64 {
        *key
    }

    #[inline]
    unsafe fn word_eq(word: u64, key: &u64) -> bool {
        word == *key
    }

    unsafe fn word_key(word: u64) -> u64 {
        word
    }

    unsafe fn release_word(_word: u64) {}

    unsafe fn word_heap_bytes(_word: u64) -> usize {
        0
    }
}

/// The byte string behind a key word.
///
/// # Safety
/// `word` came from `<Vec<u8> as HashKey>::new_word` and has not been released.
unsafe fn bytes<'a>(word: u64) -> &'a Vec<u8> {
    // SAFETY: by the caller's contract `word` is a live `Box<Vec<u8>>` pointer, immutable
    // since it was created.
    unsafe { &*(word as usize as *const Vec<u8>) }
}

impl HashKey for Vec<u8> {
    #[inline]
    fn model_input(key: &[u8]) -> u64 {
        learned_model::prefix_word(key)
    }

    fn hash(key: &[u8]) -> u64 {
        let mut h = mix64(key.len() as u64 ^ 0x9e37_79b9_7f4a_7c15);
        let mut chunks = key.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes"));
            h = mix64(h ^ word);
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        mix64(h ^ u64::from_le_bytes(tail))
    }

    fn new_word(key: &[u8]) -> u64 {
        Box::into_raw(Box::new(key.to_vec())) as usize as u64
    }

    unsafe fn word_eq(word: u64, key: &[u8]) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe { bytes(word) }.as_slice() == key
    }

    unsafe fn word_key(word: u64) -> Vec<u8> {
        // SAFETY: forwarded from the caller.
        unsafe { bytes(word) }.clone()
    }

    unsafe fn release_word(word: u64) {
        // SAFETY: `word` came from `Box::into_raw` in `new_word` and is released once.
        drop(unsafe { Box::from_raw(word as usize as *mut Vec<u8>) });
    }

    unsafe fn word_heap_bytes(word: u64) -> usize {
        // SAFETY: forwarded from the caller.
        std::mem::size_of::<Vec<u8>>() + unsafe { bytes(word) }.capacity()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn byte_words_round_trip_and_compare() {
        let word = <Vec<u8> as HashKey>::new_word(b"hello");
        // SAFETY: `word` is live until released below.
        unsafe {
            assert!(<Vec<u8> as HashKey>::word_eq(word, b"hello"));
            assert!(!<Vec<u8> as HashKey>::word_eq(word, b"hell"));
            assert_eq!(<Vec<u8> as HashKey>::word_key(word), b"hello".to_vec());
            assert!(<Vec<u8> as HashKey>::word_heap_bytes(word) >= 5);
            <Vec<u8> as HashKey>::release_word(word);
        }
    }

    #[test]
    fn model_input_preserves_order_and_hash_spreads() {
        let keys: [&[u8]; 4] = [b"", b"a", b"ab", b"b"];
        for w in keys.windows(2) {
            assert!(<Vec<u8>>::model_input(w[0]) <= <Vec<u8>>::model_input(w[1]));
        }
        assert_ne!(<Vec<u8>>::hash(b"a"), <Vec<u8>>::hash(b"a\0"));
        assert_ne!(u64::hash(&1), u64::hash(&2));
        assert_eq!(u64::model_input(&7), 7);
    }
}
