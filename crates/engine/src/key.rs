//! The key types a table may have, and how keys become log bytes and back.
//!
//! Ordered tables hold `u64` or byte-string keys in XIndex-R, hash tables in XIndex-H. In the
//! log and in checkpoints a `u64` key is its 8 big-endian bytes, so the byte order of encoded
//! keys is the key order, and recovery can bulk-load tables straight from its sorted output.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use hash_index::HashKey;
use range_index::xindex::IndexKey;

use crate::store::{AnyStore, Store};

/// The longest key a table accepts, in bytes.
pub const MAX_KEY_LEN: usize = 4096;

/// The key type of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `u64` keys.
    U64,
    /// Byte-string keys (`Vec<u8>`, queried as `[u8]`).
    Bytes,
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyType::U64 => "u64",
            KeyType::Bytes => "byte-string",
        })
    }
}

/// The index behind a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// XIndex-R: ordered, with range scans.
    Ordered,
    /// XIndex-H: point operations and unordered iteration.
    Hash,
}

impl fmt::Display for TableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TableKind::Ordered => "ordered",
            TableKind::Hash => "hash",
        })
    }
}

/// A key's bytes in the log: a byte-string key's own bytes, or a `u64` key's eight big-endian
/// bytes held inline (encoding a key allocates nothing).
#[derive(Debug, Clone, Copy)]
pub enum EncodedKey<'a> {
    /// A byte-string key, borrowed.
    Bytes(&'a [u8]),
    /// A `u64` key's big-endian bytes.
    Word([u8; 8]),
}

impl AsRef<[u8]> for EncodedKey<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Deref for EncodedKey<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            EncodedKey::Bytes(bytes) => bytes,
            EncodedKey::Word(word) => word,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for Vec<u8> {}
}

/// A key type tables accept: `u64` or `Vec<u8>`. Lookups take the borrowed form
/// (`&u64`, or anything that borrows as `[u8]`, such as `b"key"`).
pub trait TableKey: IndexKey + HashKey + sealed::Sealed {
    /// This key type's tag in the catalog.
    const TYPE: KeyType;

    /// The owned key for `query`.
    fn owned(query: &Self::Query) -> Self;

    /// The key's bytes in the log (order-preserving).
    fn encode(query: &Self::Query) -> EncodedKey<'_>;

    /// The key whose encoding is `bytes`; `None` when `bytes` encode no key of this type.
    fn decode(bytes: &[u8]) -> Option<Self>;

    /// The encoded length of `query`, checked against [`MAX_KEY_LEN`].
    fn encoded_len(query: &Self::Query) -> usize;

    #[doc(hidden)]
    fn wrap(store: Arc<Store<Self>>) -> AnyStore;

    #[doc(hidden)]
    fn unwrap(store: &AnyStore) -> Option<&Arc<Store<Self>>>;
}

impl TableKey for u64 {
    const TYPE: KeyType = KeyType::U64;

    fn owned(query: &u64) -> Self {
        *query
    }

    fn encode(query: &u64) -> EncodedKey<'_> {
        EncodedKey::Word(query.to_be_bytes())
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(u64::from_be_bytes(bytes.try_into().ok()?))
    }

    fn encoded_len(_: &u64) -> usize {
        size_of::<u64>()
    }

    fn wrap(store: Arc<Store<Self>>) -> AnyStore {
        AnyStore::U64(store)
    }

    fn unwrap(store: &AnyStore) -> Option<&Arc<Store<Self>>> {
        match store {
            AnyStore::U64(store) => Some(store),
            AnyStore::Bytes(_) => None,
        }
    }
}

impl TableKey for Vec<u8> {
    const TYPE: KeyType = KeyType::Bytes;

    fn owned(query: &[u8]) -> Self {
        query.to_vec()
    }

    fn encode(query: &[u8]) -> EncodedKey<'_> {
        EncodedKey::Bytes(query)
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(bytes.to_vec())
    }

    fn encoded_len(query: &[u8]) -> usize {
        query.len()
    }

    fn wrap(store: Arc<Store<Self>>) -> AnyStore {
        AnyStore::Bytes(store)
    }

    fn unwrap(store: &AnyStore) -> Option<&Arc<Store<Self>>> {
        match store {
            AnyStore::Bytes(store) => Some(store),
            AnyStore::U64(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_encoding_preserves_order() {
        let keys = [0u64, 1, 255, 256, 1 << 40, u64::MAX];
        for pair in keys.windows(2) {
            assert!(*u64::encode(&pair[0]) < *u64::encode(&pair[1]));
        }
        for key in keys {
            assert_eq!(u64::decode(&u64::encode(&key)), Some(key));
        }
        assert_eq!(u64::decode(b"short"), None);
    }
}
