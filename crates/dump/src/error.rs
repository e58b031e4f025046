//! Errors of the writing side.

use std::path::Path;

use thiserror::Error;

/// Why a dump could not be written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DumpError {
    /// A file or folder operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not even the manifest could be written: every file and folder the
    /// dump created was removed.
    #[error(
        "write failed: {} ({path}); nothing was kept: the dump's files and folders were removed",
        crate::durable::os_message(source)
    )]
    NothingKept {
        /// The file the last write failed on.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
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

impl From<crate::durable::WriteError> for DumpError {
    fn from(e: crate::durable::WriteError) -> DumpError {
        DumpError::io(&e.path, e.source)
    }
}
