//! The operations of a workload, one per YCSB core operation (read, update, insert, scan,
//! read-modify-write) plus the remove of the papers' read/write micro-benchmarks.

use std::ops::{Index, IndexMut};

/// One operation on the index under test. `K` is `u64` or `&[u8]`; values are one 64-bit word,
/// like every learnkv index's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<K> {
    /// Point lookup.
    Get(K),
    /// Insert a key that is not in the index (an upsert for the adapter).
    Insert(K, u64),
    /// Overwrite the value of a key that should be in the index.
    Update(K, u64),
    /// Remove a key that is in the index.
    Remove(K),
    /// Visit up to `n` keys from the first key at or after `start`, in order.
    Scan(K, usize),
    /// Read a key's value, then write a new one (YCSB F).
    ReadModifyWrite(K, u64),
}

impl<K> Op<K> {
    /// The operation's kind.
    pub fn kind(&self) -> OpKind {
        match self {
            Self::Get(_) => OpKind::Get,
            Self::Insert(..) => OpKind::Insert,
            Self::Update(..) => OpKind::Update,
            Self::Remove(_) => OpKind::Remove,
            Self::Scan(..) => OpKind::Scan,
            Self::ReadModifyWrite(..) => OpKind::ReadModifyWrite,
        }
    }

    /// The key the operation addresses (a scan's start key).
    pub fn key(&self) -> &K {
        match self {
            Self::Get(key)
            | Self::Insert(key, _)
            | Self::Update(key, _)
            | Self::Remove(key)
            | Self::Scan(key, _)
            | Self::ReadModifyWrite(key, _) => key,
        }
    }
}

/// The kinds of [`Op`], for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// [`Op::Get`].
    Get,
    /// [`Op::Insert`].
    Insert,
    /// [`Op::Update`].
    Update,
    /// [`Op::Remove`].
    Remove,
    /// [`Op::Scan`].
    Scan,
    /// [`Op::ReadModifyWrite`].
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Get,
        Self::Insert,
        Self::Update,
        Self::Remove,
        Self::Scan,
        Self::ReadModifyWrite,
    ];

    /// A short lowercase name (`get`, `insert`, `update`, `remove`, `scan`, `rmw`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Insert => "insert",
            Self::Update => "update",
            Self::Remove => "remove",
            Self::Scan => "scan",
            Self::ReadModifyWrite => "rmw",
        }
    }
}

/// A count per [`OpKind`].
///
/// ```
/// use workload::{Op, OpCounts, OpKind};
/// let mut counts = OpCounts::default();
/// counts.add(&Op::Get(1u64));
/// counts.add(&Op::Scan(1u64, 10));
/// assert_eq!((counts[OpKind::Get], counts.total()), (1, 2));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts([u64; 6]);

impl OpCounts {
    /// Counts one operation.
    pub fn add<K>(&mut self, op: &Op<K>) {
        self[op.kind()] += 1;
    }

    /// The sum over all kinds.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds another count to this one.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    /// Each kind with its count, in [`OpKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (OpKind, u64)> + '_ {
        OpKind::ALL.into_iter().map(|kind| (kind, self[kind]))
    }
}

impl Index<OpKind> for OpCounts {
    type Output = u64;

    fn index(&self, kind: OpKind) -> &u64 {
        &self.0[kind as usize]
    }
}

impl IndexMut<OpKind> for OpCounts {
    fn index_mut(&mut self, kind: OpKind) -> &mut u64 {
        &mut self.0[kind as usize]
    }
}
