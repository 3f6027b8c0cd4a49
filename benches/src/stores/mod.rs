//! Embedded key-value stores as the `engine` experiment drives them: learnkv's [`engine`] crate,
//! the peers a user would pick instead (`../shared/peers.md` §C): redb, heed (LMDB), fjall and
//! sled, and the in-memory `oracle` that bounds what the loops can reach, one module each. Keys and
//! values are byte strings; each store lives in a directory of its own and is measured through
//! [`KvStore`] and, per reading thread, [`KvReader`].
//!
//! Every module uses its store's fastest honest path for each workload of redb's benchmark
//! (bulk load, single durable writes, durable batches, reads, removals) and says which: one write
//! transaction where the store has transactions, its batch API where it has one, and exactly the
//! call its documentation gives for making a write durable. Reads compare every value they get
//! with the expected bytes, and range reads fold every key and value they visit into a checksum,
//! so no store can skip the work of reading.

pub mod fjall;
pub mod heed;
pub mod learnkv;
pub mod oracle;
pub mod redb;
pub mod sled;

use std::fmt::Display;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A store failure, as text (each store has its own error type).
pub type StoreResult<T> = Result<T, String>;

/// A `(key, value)` pair.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// `key=value` notes for the report.
pub type Notes = Vec<(String, String)>;

/// Turns a store's error into a [`StoreResult`] error that says what was being done.
pub(crate) trait Doing<T> {
    /// The result, its error prefixed by `what`.
    fn doing(self, what: &str) -> StoreResult<T>;
}

impl<T, E: Display> Doing<T> for Result<T, E> {
    fn doing(self, what: &str) -> StoreResult<T> {
        self.map_err(|error| format!("{what}: {error}"))
    }
}

/// An embedded store over one directory.
pub trait KvStore: Sync {
    /// Writes every pair (fresh keys, in the given order), durable when this returns.
    fn bulk_load(&mut self, pairs: &[Pair<'_>]) -> StoreResult<()>;

    /// Untimed work between the bulk load and the other workloads, which the store would
    /// otherwise do during them (learnkv's checkpoint, fjall's flushes and compactions); notes
    /// on it. None by default.
    fn after_load(&mut self) -> StoreResult<Notes> {
        Ok(Notes::new())
    }

    /// Writes one pair, durable (fsynced) when this returns.
    fn put_durable(&self, key: &[u8], value: &[u8]) -> StoreResult<()>;

    /// Writes `pairs` as one batch or transaction, durable when this returns.
    fn put_batch_durable(&self, pairs: &[Pair<'_>]) -> StoreResult<()>;

    /// A reader for the calling thread (a read transaction where the store has them).
    fn reader(&self) -> StoreResult<Box<dyn KvReader + '_>>;

    /// Removes `keys` (all present) as one batch or transaction, durable when this returns.
    fn remove_all(&self, keys: &[&[u8]]) -> StoreResult<()>;

    /// How the store is configured and what its bulk load does, for the report.
    fn notes(&self) -> Notes;
}

/// One thread's reads.
pub trait KvReader {
    /// Reads the value at `key`; whether it is present and equal to `expected`.
    fn get(&mut self, key: &[u8], expected: &[u8]) -> StoreResult<bool>;

    /// Reads the values at `keys`; how many are present and equal to their `expected`. The
    /// stores without a batched read loop over [`KvReader::get`].
    fn get_many(&mut self, keys: &[&[u8]], expected: &[&[u8]]) -> StoreResult<usize> {
        let mut found = 0;
        for (key, value) in keys.iter().zip(expected) {
            found += usize::from(self.get(key, value)?);
        }
        Ok(found)
    }

    /// Reads up to `n` pairs from the first key at or after `start` upward (with `descending`,
    /// from the last key at or before it downward), folding each into `checksum` with
    /// [`fold`]; how many it read.
    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        descending: bool,
        checksum: &mut u64,
    ) -> StoreResult<usize>;
}

/// Folds a pair into a range read's checksum: its lengths and the first and last byte of each.
pub fn fold(checksum: &mut u64, key: &[u8], value: &[u8]) {
    let ends = |bytes: &[u8]| {
        u64::from(bytes.first().copied().unwrap_or(0)) << 8
            | u64::from(bytes.last().copied().unwrap_or(0))
    };
    *checksum = checksum
        .rotate_left(5)
        .wrapping_add((key.len() + value.len()) as u64)
        .wrapping_add(ends(key) << 16 | ends(value));
}

/// One store the experiment can measure.
pub struct StoreEntry {
    /// The name in reports and in `--index`.
    pub name: &'static str,
    /// Opens (creates) the store in an empty directory.
    pub open: fn(&Path) -> StoreResult<Box<dyn KvStore>>,
}

/// Every store, learnkv first and sled last (the engine experiment runs them in this order, and
/// sled leaves threads and cache behind after its drop).
pub static STORES: &[StoreEntry] = &[
    StoreEntry {
        name: "learnkv",
        open: learnkv::Learnkv::open,
    },
    StoreEntry {
        name: "oracle",
        open: oracle::Oracle::open,
    },
    StoreEntry {
        name: "redb",
        open: redb::Redb::open,
    },
    StoreEntry {
        name: "heed",
        open: heed::Heed::open,
    },
    StoreEntry {
        name: "fjall",
        open: fjall::Fjall::open,
    },
    StoreEntry {
        name: "sled",
        open: sled::Sled::open,
    },
];

/// The store with this name.
pub fn find(name: &str) -> Option<&'static StoreEntry> {
    STORES.iter().find(|entry| entry.name == name)
}

/// The bytes the files under `dir` occupy on disk (allocated blocks, as `du` counts them, so
/// sparse and preallocated files count what they really hold). A file or directory that a
/// store's background work deletes during the walk counts nothing (fjall's compactions did,
/// between the listing and the file's metadata).
pub fn disk_bytes(dir: &Path) -> StoreResult<u64> {
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let mut total = 0;
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if gone(&e) => return Ok(0),
        Err(e) => return Err(format!("listing {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("listing {}: {e}", dir.display()))?;
        let path = entry.path();
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if gone(&e) => continue,
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        total += if meta.is_dir() {
            disk_bytes(&path)?
        } else {
            meta.blocks() * 512
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_bytes_counts_allocated_blocks_and_nothing_for_what_is_gone() {
        let dir = std::env::temp_dir().join(format!("learnkv-disk-bytes-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).expect("a directory");
        fs::write(dir.join("sub").join("data"), vec![7u8; 64 << 10]).expect("a file");
        let sparse = fs::File::create(dir.join("sparse")).expect("a file");
        sparse.set_len(1 << 30).expect("a sparse length");
        let bytes = disk_bytes(&dir).expect("a walk");
        assert!(
            (64 << 10..1 << 20).contains(&bytes),
            "64 KiB of data and a sparse file: {bytes}"
        );
        fs::remove_dir_all(&dir).expect("cleanup");
        assert_eq!(disk_bytes(&dir).expect("a vanished directory"), 0);
    }
}
