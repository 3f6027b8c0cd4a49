//! The errors of building an XIndex-H.

use thiserror::Error;

/// Why an [`XIndexH`](crate::XIndexH) could not be built.
#[derive(Debug, Error)]
pub enum Error {
    /// A [`Config`](crate::Config) field is outside its accepted range.
    #[error("invalid XIndex-H configuration: {field} {reason}")]
    InvalidConfig {
        /// The field's name.
        field: &'static str,
        /// What the accepted range is.
        reason: &'static str,
    },
    /// The pairs given to a bulk load hold the same key twice.
    #[error("bulk-load keys must be unique, but the pair at index {index} repeats a key")]
    DuplicateKey {
        /// The index (in the caller's slice) of a pair whose key appeared before.
        index: usize,
    },
    /// The operating system refused to start a background thread.
    #[error("cannot start an XIndex-H background thread: {0}")]
    Spawn(#[from] std::io::Error),
}
