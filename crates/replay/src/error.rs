//! Why a replay could not be built or run.

use std::path::PathBuf;

use crate::ExportError;

/// Everything that can stop an insight-trace replay. Each message names the
/// file, the field or the argument at fault and what was expected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A replay spec field is missing, mistyped or has a bad value.
    #[error("{file}: field {field}: {msg}")]
    Spec {
        /// The spec file (or `replay spec` for one built in memory).
        file: String,
        /// Field path (`args[2].shape`).
        field: String,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// The spec file is not JSON, or not complete JSON.
    #[error("{file}: {msg}")]
    SpecJson {
        /// The spec file.
        file: String,
        /// Position and what went wrong.
        msg: String,
    },
    /// No dispatch matches the selection, or it belongs to another kernel.
    #[error("{0}")]
    Selection(String),
    /// The dumps do not allow building a spec (contradicting records, …).
    #[error("{0}")]
    Rebuild(String),
    /// A `--set-arg SLOT=VALUE` that cannot be applied.
    #[error("--set-arg {}: {msg}", simpler_format::echo(arg))]
    SetArg {
        /// The argument as given.
        arg: String,
        /// What is wrong.
        msg: String,
    },
    /// The kernel failed (returned an error or panicked) during the replay.
    #[error("kernel '{kernel}' (func id {func_id}, {member} on core {core_id}) failed in the replay: {msg}")]
    Kernel {
        /// Kernel name.
        kernel: String,
        /// Its func id.
        func_id: u32,
        /// Cluster member (`aic`, `aiv0`, `aiv1`).
        member: &'static str,
        /// Core id it ran as.
        core_id: u32,
        /// The kernel's error or panic message.
        msg: String,
    },
    /// Setting up the replay's private global memory failed.
    #[error("replay global memory: {0}")]
    Gm(String),
    /// A file could not be read or written.
    #[error("{}: {msg}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed (includes the OS error).
        msg: String,
    },
    /// A dump (kernel args or tensor) could not be read.
    #[error(transparent)]
    Read(#[from] simpler_format::Error),
    /// The trace could not be exported.
    #[error(transparent)]
    Export(#[from] ExportError),
}

impl ReplayError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, e: &std::io::Error) -> ReplayError {
        ReplayError::Io {
            path: path.into(),
            msg: e.to_string(),
        }
    }
}
