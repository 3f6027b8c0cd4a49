//! The errors of model construction.

use thiserror::Error;

/// Why a model, a segmentation or a root could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// The input held no key: no model can be trained on nothing.
    #[error("cannot build a model over an empty key set")]
    EmptyInput,
    /// The keys were not strictly increasing: `keys[index]` is not greater than the key before it.
    #[error(
        "keys must be strictly increasing, but the key at index {index} is not greater than the one before it"
    )]
    NotStrictlyIncreasing {
        /// The index of the first key that breaks the order.
        index: usize,
    },
    /// A parameter is outside the range the algorithm accepts.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What the accepted range is.
        reason: &'static str,
    },
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Checks that `keys` is non-empty and strictly increasing.
pub(crate) fn check_sorted<K: Ord>(keys: &[K]) -> Result<()> {
    if keys.is_empty() {
        return Err(Error::EmptyInput);
    }
    match keys.windows(2).position(|pair| pair[0] >= pair[1]) {
        Some(i) => Err(Error::NotStrictlyIncreasing { index: i + 1 }),
        None => Ok(()),
    }
}
