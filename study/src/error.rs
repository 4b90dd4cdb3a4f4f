//! Why a study did not run: options the user must fix, or a failure of ours or of the disk.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Options out of range: sizes, instance counts, the constraint.
    #[error("{0}")]
    Usage(String),
    /// An algorithm or the max flow failed on a generated (so valid) instance: a bug.
    #[error("{0}")]
    Internal(String),
    /// The output files could not be written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }
}
