//! Partial keys of byte-string keys (XIndex §3.4.1, Algorithm 6).
//!
//! Within a group of sorted keys, every key shares the group's longest common prefix (length
//! `pl`), and the `el` bytes after it tell all keys of the group apart. The partial key of `k`
//! is `k[pl .. min(|k|, pl + el)]`; comparing partial keys gives the order of the full keys.
//!
//! Two corrections to the paper's algorithm (see the XIndex digest, §3.17.1):
//! - `el` is one byte longer than Algorithm 6 computes: two keys whose common prefix is the
//!   longest in the group differ only at the byte *after* it, so that byte must be included:
//!   `el = max_prefix − pl + 1`, capped at the longest key.
//! - Keys shorter than `pl + el` are not zero-padded (ambiguous when keys may hold `0x00`): a
//!   partial key is a shorter slice, and a missing byte sorts before every byte value. As a
//!   model feature, byte `b` becomes `b + 1` and a missing byte `0`.

use std::cmp::Ordering;

use crate::error::{Result, check_sorted};
use crate::key::prefix_word;

/// The `(pl, el)` layout of a group's partial keys, with the common prefix itself.
///
/// ```
/// use learned_model::PartialKeyLayout;
/// let keys = [b"user:1001".to_vec(), b"user:1002".to_vec(), b"user:1105".to_vec()];
/// let layout = PartialKeyLayout::from_sorted(&keys).unwrap();
/// assert_eq!(layout.prefix(), b"user:1");
/// assert_eq!(layout.effective_len(), 3);
/// assert_eq!(layout.partial(b"user:1002"), b"002");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartialKeyLayout {
    prefix: Vec<u8>,
    /// [`prefix_word`] of the prefix: a prefix of up to eight bytes compares through it.
    prefix_word: u64,
    effective_len: usize,
}

impl PartialKeyLayout {
    /// Computes the layout of strictly increasing `keys`.
    pub fn from_sorted<K: AsRef<[u8]> + Ord>(keys: &[K]) -> Result<Self> {
        check_sorted(keys)?;
        Ok(Self::of_sorted(keys))
    }

    /// [`from_sorted`](Self::from_sorted) for keys the caller has checked: non-empty and
    /// strictly increasing.
    pub(crate) fn of_sorted<K: AsRef<[u8]>>(keys: &[K]) -> Self {
        let first = keys[0].as_ref();
        if keys.len() == 1 {
            return Self::new(first.to_vec(), 0);
        }
        let mut common = usize::MAX;
        let mut longest_shared = 0;
        let mut longest_key = 0;
        for pair in keys.windows(2) {
            let (a, b) = (pair[0].as_ref(), pair[1].as_ref());
            let shared = common_prefix_len(a, b);
            common = common.min(shared);
            longest_shared = longest_shared.max(shared);
            longest_key = longest_key.max(a.len()).max(b.len());
        }
        Self::new(
            first[..common].to_vec(),
            (longest_shared + 1).min(longest_key) - common,
        )
    }

    fn new(prefix: Vec<u8>, effective_len: usize) -> Self {
        Self {
            prefix_word: prefix_word(&prefix),
            prefix,
            effective_len,
        }
    }

    /// `pl`: the length of the prefix every key of the group shares.
    pub fn prefix_len(&self) -> usize {
        self.prefix.len()
    }

    /// `el`: how many bytes after the prefix tell the group's keys apart.
    pub fn effective_len(&self) -> usize {
        self.effective_len
    }

    /// The common prefix.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// How `key` compares with the group's prefix: `Equal` when `key` starts with it, `Less`
    /// or `Greater` when `key` sorts before or after every key that does.
    #[inline]
    pub fn compare_prefix(&self, key: &[u8]) -> Ordering {
        key[..key.len().min(self.prefix.len())].cmp(&self.prefix)
    }

    /// [`compare_prefix`](Self::compare_prefix) for a caller that holds `key_word`, the
    /// [`prefix_word`] of `key` (an index's search hint): a prefix of up to eight bytes
    /// compares as a masked word, with neither a `memcmp` call nor a read of the prefix's heap
    /// block.
    #[inline]
    pub fn compare_prefix_with_word(&self, key: &[u8], key_word: u64) -> Ordering {
        let prefix_len = self.prefix.len();
        if prefix_len > 8 {
            return self.compare_prefix(key);
        }
        // The first `shared` bytes of both, as the high bytes of their words.
        let shared = key.len().min(prefix_len);
        let mask = u64::MAX.checked_shl(64 - 8 * shared as u32).unwrap_or(0);
        (key_word & mask)
            .cmp(&(self.prefix_word & mask))
            .then(if key.len() < prefix_len {
                Ordering::Less
            } else {
                Ordering::Equal
            })
    }

    /// The partial key of `key`, which must start with the prefix
    /// (`compare_prefix(key) == Equal`).
    #[inline]
    pub fn partial<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        let start = self.prefix.len().min(key.len());
        &key[start..key.len().min(self.prefix.len() + self.effective_len)]
    }

    /// Writes the first `out.len()` partial-key bytes of `key` as model features: byte `b` as
    /// `b + 1`, a byte past the end of the key as `0`.
    #[inline]
    pub fn features(&self, key: &[u8], out: &mut [f64]) {
        let partial = self.partial(key);
        for (i, feature) in out.iter_mut().enumerate() {
            *feature = partial.get(i).map_or(0.0, |&b| f64::from(b) + 1.0);
        }
    }
}

/// The length of the longest common prefix of `a` and `b`.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
