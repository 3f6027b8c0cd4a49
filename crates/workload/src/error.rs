//! The crate's one error type: every bad input (file, name, size or parameter) ends here instead
//! of in a panic.

use std::io;
use std::path::PathBuf;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while loading or generating a data set, building a workload,
/// running it or writing its report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing a report to a stream failed.
    #[error("writing the report: {0}")]
    Write(#[from] io::Error),
    /// A SOSD file name does not say its key width.
    #[error("{}: a SOSD file name must end in `_uint32` or `_uint64`", path.display())]
    SosdName {
        /// The file.
        path: PathBuf,
    },
    /// A SOSD file is shorter than its 8-byte header.
    #[error("{}: {len} bytes is too short for the 8-byte SOSD header", path.display())]
    SosdHeader {
        /// The file.
        path: PathBuf,
        /// The file's length in bytes.
        len: u64,
    },
    /// A SOSD file's length does not match the key count in its header (truncated, padded, the
    /// wrong width, or not a SOSD file at all).
    #[error(
        "{}: the header promises {count} keys of {width} bytes, but the file holds {len} bytes \
         (truncated, wrong key width, or not a SOSD file)",
        path.display()
    )]
    SosdLength {
        /// The file.
        path: PathBuf,
        /// The key count in the header.
        count: u64,
        /// The key width in bytes, from the file name.
        width: u64,
        /// The file's length in bytes.
        len: u64,
    },
    /// Keys that must be sorted are not.
    #[error("{source_name}: keys are not sorted at position {position}")]
    Unsorted {
        /// The file or argument holding the keys.
        source_name: String,
        /// The first position whose key is smaller than its predecessor.
        position: usize,
    },
    /// A key does not fit the SOSD file's 32-bit width.
    #[error("key {key} at position {position} does not fit a `_uint32` SOSD file")]
    KeyTooWide {
        /// The key.
        key: u64,
        /// Its position.
        position: usize,
    },
    /// A line of a text data set could not be parsed.
    #[error("{source_name}, line {line}: {reason}")]
    Parse {
        /// The file or embedded data set.
        source_name: String,
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A data set name that [`Dataset`](crate::Dataset) does not know.
    #[error("unknown data set `{0}`; expected one of {names}", names = crate::dataset::NAMES)]
    UnknownDataset(String),
    /// A real data set holds fewer distinct keys than requested.
    #[error("data set `{dataset}` holds {available} distinct keys, but {requested} were requested")]
    NotEnoughKeys {
        /// The data set.
        dataset: String,
        /// Its distinct keys.
        available: usize,
        /// The requested count.
        requested: usize,
    },
    /// A synthetic data set was asked for without a key count.
    #[error("data set `{0}` is synthetic: give the number of keys to generate")]
    SizeRequired(String),
    /// A data set of string keys was asked for as integers.
    #[error("data set `{0}` has string keys; it cannot be used where u64 keys are needed")]
    StringKeys(String),
    /// A parameter is out of its range (the message says which and why).
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
}

impl Error {
    /// Wraps an I/O error with the file it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::InvalidParameter`] with the given message.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidParameter(message.into())
    }
}
