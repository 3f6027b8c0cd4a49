//! The errors of opening, creating and using a pool.
//!
//! One enum for the crate (DESIGN.md, "Errors"). Everything that comes from outside the process
//! (a file, a size, an offset handed back by a caller) is checked and reported here; the crate
//! never panics on bad input.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Why a pool file was judged corrupt, truncated or foreign.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Corruption {
    /// The file does not start with the pool magic number: it is not a learnkv pool.
    #[error("the magic number is {found:#018x}, not a learnkv pool's")]
    BadMagic {
        /// The first eight bytes, little-endian.
        found: u64,
    },
    /// The file is a learnkv pool of a format version this build does not read.
    #[error("format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u64,
        /// The version this build reads and writes.
        supported: u64,
    },
    /// The header's checksum does not match its contents.
    #[error(
        "the header checksum does not match (stored {stored:#018x}, computed {computed:#018x})"
    )]
    BadChecksum {
        /// The checksum stored in the header.
        stored: u64,
        /// The checksum of the header as read.
        computed: u64,
    },
    /// The file is shorter than a pool header.
    #[error("the file holds {len} bytes, fewer than the {needed} of a pool header")]
    Truncated {
        /// The file's length.
        len: u64,
        /// The smallest length a pool can have.
        needed: u64,
    },
    /// The header's size field disagrees with the file's length.
    #[error("the header says the pool holds {header} bytes, but the file holds {file}")]
    SizeMismatch {
        /// The size the header records.
        header: u64,
        /// The file's length.
        file: u64,
    },
    /// The header's geometry (chunk size, lanes, log slots) is outside the accepted ranges.
    #[error("the header's geometry is invalid: {0}")]
    BadGeometry(String),
    /// A chunk's record holds allocated bits that its header cannot explain.
    #[error("the record of chunk {chunk} is inconsistent (header {header:#x})")]
    BadChunk {
        /// The chunk's index.
        chunk: u64,
        /// Its header word.
        header: u64,
    },
    /// A lane's allocator log holds a checksummed entry that names no valid block or place.
    #[error("the allocator log of lane {lane} holds an invalid entry")]
    BadLog {
        /// The lane's index.
        lane: usize,
    },
}

/// The errors of this crate.
#[derive(Debug, Error)]
pub enum Error {
    /// An operating-system call on the pool file failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("open", "map", ...).
        op: &'static str,
        /// The pool file (empty for anonymous pools).
        path: PathBuf,
        /// The error the operating system returned.
        source: io::Error,
    },
    /// The pool file is corrupt, truncated or not a pool at all.
    #[error("{path} is not a valid pool: {reason}")]
    Corrupt {
        /// The pool file (`<image>` for an in-memory crash image).
        path: PathBuf,
        /// What is wrong with it.
        reason: Corruption,
    },
    /// The pool was created for another layout than the one the opener asked for.
    #[error(
        "{path} was created with layout id {found:#x}, but layout id {expected:#x} was asked for"
    )]
    LayoutMismatch {
        /// The pool file.
        path: PathBuf,
        /// The layout id the opener passed.
        expected: u64,
        /// The layout id stored in the header.
        found: u64,
    },
    /// Another open pool (in this process or another one) holds the file's lock.
    #[error("{path} is already open (its lock is held by another pool handle or process)")]
    Locked {
        /// The pool file.
        path: PathBuf,
    },
    /// `Mode::Dax` was asked for, but the file system does not support `MAP_SYNC`.
    #[error("{path} is not on a DAX file system (MAP_SYNC was refused: {source})")]
    NotDax {
        /// The pool file.
        path: PathBuf,
        /// The error `mmap` returned (usually `EOPNOTSUPP`).
        source: io::Error,
    },
    /// The mode is not available on this platform.
    #[error("{0} is not supported on this platform")]
    Unsupported(&'static str),
    /// An option passed to create a pool is outside its accepted range.
    #[error("invalid pool option: {field} {reason}")]
    InvalidOption {
        /// The option's name.
        field: &'static str,
        /// The accepted range.
        reason: String,
    },
    /// The file exists already where a new pool was to be created.
    #[error("{path} exists already; open it instead of creating it")]
    AlreadyExists {
        /// The pool file.
        path: PathBuf,
    },
    /// No free block or run of chunks is large enough for the request.
    #[error("out of pool space: no free block of {size} bytes aligned to {align}")]
    OutOfSpace {
        /// The requested size in bytes.
        size: usize,
        /// The requested alignment in bytes.
        align: usize,
    },
    /// The request cannot be served at all (a zero size, an alignment that is not a power of two
    /// or above the chunk size, a size above the pool's).
    #[error("cannot allocate {size} bytes aligned to {align}: {reason}")]
    BadRequest {
        /// The requested size in bytes.
        size: usize,
        /// The requested alignment in bytes.
        align: usize,
        /// Why the request is refused.
        reason: &'static str,
    },
    /// More threads use the pool at once than it has lanes (per-thread caches and logs).
    #[error("all {lanes} lanes of the pool are taken by other threads")]
    NoFreeLane {
        /// The number of lanes the pool was created with.
        lanes: u32,
    },
    /// An offset or reference does not point to a suitably aligned place inside the pool.
    #[error("offset {offset:#x} ({len} bytes) is outside the pool or misaligned")]
    InvalidPointer {
        /// The offset from the pool's start.
        offset: u64,
        /// The length of the access in bytes.
        len: u64,
    },
    /// A free of an offset that is not the start of an allocated block (a double free, or a
    /// pointer into the middle of a block).
    #[error("offset {offset:#x} is not the start of an allocated block")]
    NotAllocated {
        /// The offset passed to free.
        offset: u64,
    },
    /// The root object exists with a smaller size than the one asked for.
    #[error("the root object holds {found} bytes, fewer than the {requested} asked for")]
    RootSize {
        /// The size asked for.
        requested: usize,
        /// The size of the existing root block.
        found: usize,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
