//! The engine's one error type (DESIGN.md, "Errors"): it wraps the errors of the crates below
//! and adds what only the engine can say (a directory already open, a table of the wrong kind,
//! sizes over the limits).

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::key::{KeyType, TableKind};

/// What can go wrong in a [`crate::Db`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call on `path` failed (a path that cannot be created or written, a
    /// full disk, a failing device).
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A file of the database is corrupt, truncated or not a learnkv file.
    #[error("corrupt file {} at offset {offset}: {reason}", file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// The byte offset of the first bad byte.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// Another [`crate::Db`], in this process or another, has the directory open.
    #[error("the database in {} is already open", path.display())]
    AlreadyOpen {
        /// The directory.
        path: PathBuf,
    },
    /// A key longer than [`crate::MAX_KEY_LEN`].
    #[error("a key of {len} bytes is over the limit of {max} bytes")]
    KeyTooLarge {
        /// The key's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A value longer than [`crate::MAX_VALUE_LEN`].
    #[error("a value of {len} bytes is over the limit of {max} bytes")]
    ValueTooLarge {
        /// The value's size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A [`crate::WriteBatch`] too large for one log record ([`crate::MAX_BATCH_LEN`] bytes of
    /// keys, values and their headers), in memory as on disk: nothing of it was written.
    #[error("a batch of {len} bytes is over the limit of {max} bytes")]
    BatchTooLarge {
        /// The batch's size as one log record.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A table exists with another kind or key type than the one asked for.
    #[error("table {name:?} is {found_kind} with {found_key} keys, not {kind} with {key} keys")]
    TableMismatch {
        /// The table.
        name: String,
        /// The kind asked for.
        kind: TableKind,
        /// The key type asked for.
        key: KeyType,
        /// The table's kind.
        found_kind: TableKind,
        /// The table's key type.
        found_key: KeyType,
    },
    /// A table name that is empty or longer than 255 bytes. The message quotes at most the
    /// first 64 bytes of a long name, and its length.
    #[error("invalid table name {}: {reason}", shown_name(name))]
    InvalidTableName {
        /// The name, whole.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A write through a handle (or a batch naming a table) that
    /// [`Db::delete_table`](crate::Db::delete_table) deleted.
    #[error("table {name:?} was deleted")]
    TableDeleted {
        /// The table.
        name: String,
    },
    /// A condition of a [`crate::WriteBatch`] (added by
    /// [`WriteBatch::require`](crate::WriteBatch::require)) did not hold: nothing of the
    /// batch was written.
    #[error("condition {condition} of the batch does not hold")]
    Conflict {
        /// The condition's position among the batch's conditions, from 0.
        condition: usize,
        /// The value its key held (`None`: absent).
        current: Option<Vec<u8>>,
    },
    /// A [`crate::WriteBatch`] names a table of another database.
    #[error("the batch names a table of another database")]
    ForeignTable,
    /// Options that cannot work.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// An earlier write or fsync of the log failed; reopen the database to recover.
    #[error("the log failed earlier and refuses further writes: {0}")]
    LogFailed(String),
    /// The ordered index refused its configuration or could not start.
    #[error(transparent)]
    OrderedIndex(#[from] range_index::xindex::Error),
    /// The hash index refused its configuration or could not start.
    #[error(transparent)]
    HashIndex(#[from] hash_index::Error),
}

/// The outcome of a `compare_and_swap` that found another value than the one expected:
/// nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("compare and swap found another value than the one expected")]
pub struct CompareAndSwapError {
    /// The value found (`None`: the key was absent).
    pub current: Option<Vec<u8>>,
}

impl From<wal_checkpoint::Error> for Error {
    fn from(error: wal_checkpoint::Error) -> Self {
        use wal_checkpoint::Error as Wal;
        match error {
            Wal::Io { path, source } => Error::Io { path, source },
            Wal::Corrupt {
                file,
                offset,
                reason,
            } => Error::Corrupt {
                file,
                offset,
                reason,
            },
            Wal::Failed(message) => Error::LogFailed(message),
            Wal::TooLarge { size, limit } => Error::ValueTooLarge {
                len: usize::try_from(size).unwrap_or(usize::MAX),
                max: usize::try_from(limit).unwrap_or(usize::MAX),
            },
            Wal::Source(message) => Error::LogFailed(message),
            Wal::InvalidOptions(message) => Error::InvalidOptions(message),
        }
    }
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(
        file: impl Into<PathBuf>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }
}

/// How much of a refused table name an error message quotes: a name can be as long as the
/// caller's string, and a message that ends up in a service's log should not be.
const SHOWN_NAME_BYTES: usize = 64;

/// `name` quoted for a message: whole if it is short, else its first [`SHOWN_NAME_BYTES`]
/// bytes (cut at a character boundary) and its length.
fn shown_name(name: &str) -> String {
    if name.len() <= SHOWN_NAME_BYTES {
        return format!("{name:?}");
    }
    let cut = name.floor_char_boundary(SHOWN_NAME_BYTES);
    format!("{:?}… ({} bytes)", &name[..cut], name.len())
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
