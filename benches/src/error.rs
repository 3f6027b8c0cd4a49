//! The reproduction harness's error: what went wrong and the exit code it earns — 2 for bad input
//! (options, values, data set names and files), 1 for a failure while running or writing the
//! reports. Nothing a user types ends in a panic.

use std::fmt;

/// Why a reproduction run stopped.
#[derive(Debug)]
pub enum Error {
    /// A bad option or value on the command line.
    Usage(String),
    /// A data set the workload crate could not provide (unknown name, unreadable or malformed
    /// file, not enough keys).
    Input(workload::Error),
    /// A failure while running the experiment or writing its reports.
    Failed(String),
}

impl Error {
    /// The process exit code: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::Input(_) => 2,
            Self::Failed(_) => 1,
        }
    }

    /// A [`Error::Usage`] with this message.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    /// A [`Error::Failed`] from anything printable.
    pub fn failed(error: impl fmt::Display) -> Self {
        Self::Failed(error.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(message) | Self::Failed(message) => f.write_str(message),
            Self::Input(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for Error {}
