//! The errors of building an XIndex-R.

use thiserror::Error;

/// Why an [`XIndex`](crate::xindex::XIndex) could not be built.
#[derive(Debug, Error)]
pub enum Error {
    /// A [`Config`](crate::xindex::Config) field is outside its accepted range.
    #[error("invalid XIndex configuration: {field} {reason}")]
    InvalidConfig {
        /// The field's name.
        field: &'static str,
        /// What the accepted range is.
        reason: &'static str,
    },
    /// The pairs given to a bulk load were not sorted by strictly increasing key.
    #[error(
        "bulk-load keys must be strictly increasing, but the key at index {index} is not greater than the one before it"
    )]
    NotStrictlyIncreasing {
        /// The index of the first pair that breaks the order.
        index: usize,
    },
    /// The operating system refused to start a background thread.
    #[error("cannot start an XIndex background thread: {0}")]
    Spawn(#[from] std::io::Error),
}
