//! Every index the reproduction runs can measure, by name (the `index` column of the reports and
//! the values of `--index`): learnkv's indexes, the peers' adapters and the oracle. Adding an index
//! is one entry here; each experiment picks its indexes by [`Family`].

use std::sync::Arc;

use workload::IndexAdapter;

use crate::adapters::btree_rwlock::BTreeRwLock;
use crate::adapters::concurrent_map::ConcurrentMapAdapter;
use crate::adapters::congee::CongeeArt;
use crate::adapters::dashmap::DashMapAdapter;
use crate::adapters::hashmap_rwlock::HashMapRwLock;
use crate::adapters::papaya::Papaya;
use crate::adapters::scc_hash::SccHash;
use crate::adapters::scc_tree::SccTree;
use crate::adapters::scry::Scry;
use crate::adapters::skiplist::Skiplist;
use crate::adapters::xindex::XIndexAdapter;
use crate::adapters::xindex_h::XIndexHAdapter;
use crate::adapters::xindex_wal::XIndexWal;
use crate::oracle::Oracle;

/// An adapter for byte-string keys of any lifetime.
pub type ByteAdapter = dyn for<'k> IndexAdapter<&'k [u8]>;

/// Makes a fresh, empty index over `u64` keys from the run's loaded keys (which only the
/// oracle uses).
pub type MakeInteger = fn(&Arc<[u64]>) -> Box<dyn IndexAdapter<u64>>;

/// Makes a fresh, empty index over byte-string keys.
pub type MakeBytes = fn() -> Box<ByteAdapter>;

/// What kind of index an entry is, which decides the experiments it takes part in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A sorted map: point operations and scans.
    Ordered,
    /// A hash map: point operations only.
    Hash,
    /// The lookup oracle: read-only runs only.
    Oracle,
    /// An index whose writes go through the write-ahead log: the `wal` experiment only.
    Logged,
}

/// One index that the runs can measure.
pub struct Entry {
    /// The name in reports and in `--index`.
    pub name: &'static str,
    /// Its family.
    pub family: Family,
    /// A fresh, empty index over `u64` keys. The argument is the run's loaded keys, which only
    /// the oracle uses.
    pub integer: MakeInteger,
    /// A fresh, empty index over byte-string keys, for the peers that take them.
    pub bytes: Option<MakeBytes>,
}

/// Every index, in report order: learnkv's, the ordered peers, the hash peers, the oracle.
pub static ENTRIES: &[Entry] = &[
    Entry {
        name: "xindex",
        family: Family::Ordered,
        integer: |_| Box::new(XIndexAdapter::<u64>::new()),
        bytes: Some(|| Box::new(XIndexAdapter::<Vec<u8>>::new())),
    },
    Entry {
        name: "scc-tree",
        family: Family::Ordered,
        integer: |_| Box::new(SccTree::<u64>::new()),
        bytes: Some(|| Box::new(SccTree::<Vec<u8>>::new())),
    },
    Entry {
        name: "congee",
        family: Family::Ordered,
        integer: |_| Box::new(CongeeArt::new()),
        bytes: None,
    },
    Entry {
        name: "skiplist",
        family: Family::Ordered,
        integer: |_| Box::new(Skiplist::new()),
        bytes: None,
    },
    Entry {
        name: "concurrent-map",
        family: Family::Ordered,
        integer: |_| Box::new(ConcurrentMapAdapter::new()),
        bytes: None,
    },
    Entry {
        name: "scry",
        family: Family::Ordered,
        integer: |_| Box::new(Scry::new()),
        bytes: None,
    },
    Entry {
        name: "btree-rwlock",
        family: Family::Ordered,
        integer: |_| Box::new(BTreeRwLock::<u64>::new()),
        bytes: Some(|| Box::new(BTreeRwLock::<Vec<u8>>::new())),
    },
    Entry {
        name: "xindex-wal-periodic",
        family: Family::Logged,
        integer: |_| Box::new(XIndexWal::periodic()),
        bytes: None,
    },
    Entry {
        name: "xindex-wal-immediate",
        family: Family::Logged,
        integer: |_| Box::new(XIndexWal::immediate()),
        bytes: None,
    },
    Entry {
        name: "xindex-h",
        family: Family::Hash,
        integer: |_| Box::new(XIndexHAdapter::<u64>::new()),
        bytes: Some(|| Box::new(XIndexHAdapter::<Vec<u8>>::new())),
    },
    Entry {
        name: "dashmap",
        family: Family::Hash,
        integer: |_| Box::new(DashMapAdapter::new()),
        bytes: None,
    },
    Entry {
        name: "scc-hash",
        family: Family::Hash,
        integer: |_| Box::new(SccHash::new()),
        bytes: None,
    },
    Entry {
        name: "papaya",
        family: Family::Hash,
        integer: |_| Box::new(Papaya::new()),
        bytes: None,
    },
    Entry {
        name: "hashmap-rwlock",
        family: Family::Hash,
        integer: |_| Box::new(HashMapRwLock::new()),
        bytes: None,
    },
    Entry {
        name: "oracle",
        family: Family::Oracle,
        integer: |loaded| Box::new(Oracle::new(Arc::clone(loaded))),
        bytes: None,
    },
];

/// The entry with this name.
pub fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|entry| entry.name == name)
}

/// Every name, comma-separated, for messages.
pub fn names() -> String {
    ENTRIES
        .iter()
        .map(|entry| entry.name)
        .collect::<Vec<_>>()
        .join(", ")
}
