//! The crate's one error enum (DESIGN.md "Errors"). Everything read back from disk is checked
//! and reported here; the crate never panics on bad input.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// What can go wrong in the log, a checkpoint or recovery.
#[derive(Debug, Error)]
pub enum Error {
    /// An operating-system call on `path` failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A file holds bytes that are not a valid log segment or checkpoint at `offset`.
    #[error("corrupt file {} at offset {offset}: {reason}", file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// The byte offset of the first bad byte (of the frame or header that failed).
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// An earlier write or fsync of the log failed, so the log may no longer hold what was
    /// acknowledged; every later call fails with this error. Reopen the directory to recover
    /// (fsync failures cannot be retried safely: the kernel may have dropped the dirty pages).
    #[error("the log failed earlier and refuses further work: {0}")]
    Failed(String),
    /// A key, value or batch is larger than the log's frame limit.
    #[error("record of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The encoded size asked for.
        size: u64,
        /// The largest frame the log writes.
        limit: u64,
    },
    /// The caller's checkpoint source gave up; its message.
    #[error("checkpoint source failed: {0}")]
    Source(String),
    /// The options cannot work (for example zero lanes).
    #[error("invalid options: {0}")]
    InvalidOptions(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::Corrupt`] for `file` at `offset`.
    pub(crate) fn corrupt(
        file: impl Into<PathBuf>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Self::Corrupt {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
