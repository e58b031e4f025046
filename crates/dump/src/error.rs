//! Errors of the writing side.

use std::path::Path;

use thiserror::Error;

/// Why a dump could not be written.
#[derive(Debug, Error)]
pub enum DumpError {
    /// A file or folder operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing the payload failed during the run.
    #[error("{0}")]
    Write(String),
    /// Unusable settings.
    #[error("invalid dump configuration: {0}")]
    Config(String),
}

impl DumpError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> DumpError {
        DumpError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
