//! Runtime errors.

use simpler_chip::GmError;
use simpler_core::{topology::CoreType, TaskId, WriteRace};
use thiserror::Error;

/// Everything that can stop a run or reject a submission.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A func id that no registered kernel has.
    #[error("unknown func id {func_id} (registered: {known})")]
    UnknownFunc {
        /// The id asked for.
        func_id: u32,
        /// The registered ids, for the message.
        known: String,
    },
    /// A kernel was submitted for the wrong core type.
    #[error("func id {func_id} ({name}) is a {actual} kernel but was submitted as {wanted}")]
    CoreTypeMismatch {
        /// The id.
        func_id: u32,
        /// Kernel name.
        name: &'static str,
        /// Its registered core type.
        actual: CoreType,
        /// The slot it was submitted for.
        wanted: CoreType,
    },
    /// Two kernels registered under one func id.
    #[error("func id {0} registered twice")]
    DuplicateFunc(u32),
    /// More tensors than the ABI's 32 slots.
    #[error("task has {0} tensor arguments; the dispatch ABI allows at most 32")]
    TooManyTensors(usize),
    /// More scalars than the ABI's 16 slots.
    #[error("task has {0} scalar arguments; the dispatch ABI allows at most 16")]
    TooManyScalars(usize),
    /// A submission that cannot be executed as written.
    #[error("invalid submission: {0}")]
    InvalidSubmit(String),
    /// A tensor whose buffer was already reclaimed (used after its scope ended).
    #[error("tensor at 0x{addr:016x} is used after its scope ended (its buffer was reclaimed)")]
    UseAfterScope {
        /// Buffer address.
        addr: u64,
    },
    /// Global memory failure.
    #[error(transparent)]
    Gm(#[from] GmError),
    /// A kernel returned an error or panicked.
    #[error("kernel error in task {task_id} (func id {func_id} '{kernel}', {core_type} core {core_id}, block {block_idx}): {msg}")]
    Kernel {
        /// Task.
        task_id: TaskId,
        /// Kernel func id.
        func_id: u32,
        /// Kernel name.
        kernel: &'static str,
        /// Core type.
        core_type: CoreType,
        /// Core id.
        core_id: u32,
        /// Block index.
        block_idx: u32,
        /// What went wrong.
        msg: String,
    },
    /// Two dispatches that may run at the same time wrote the same bytes
    /// (`--racecheck error`).
    #[error("{0}")]
    WriteRace(Box<WriteRace>),
    /// The run exceeded its time limit (seconds as configured).
    #[error("timeout after {0} s")]
    Timeout(f64),
    /// The run was stopped from outside through its [`crate::CancelToken`]
    /// (the CLI's reason: `interrupted by SIGINT`).
    #[error("{0}")]
    Cancelled(String),
    /// Writing the dump's payload failed (the OS message: `No space left
    /// on device`); what reached the disk is described as incomplete.
    #[error("write failed: {0}")]
    DumpWrite(String),
    /// The run was stopped by an earlier error; this submission was not accepted.
    #[error("run aborted: {0}")]
    Aborted(String),
    /// Bad configuration.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The dump could not be written.
    #[error("dump: {0}")]
    Dump(String),
    /// The orchestration itself failed.
    #[error("orchestration failed: {0}")]
    Orchestration(String),
}
