//! Fixed-size records producers append.

use simpler_core::{ArgRole, ChipTensor, DType, Scalar, TaskId};

/// When a record was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// Inputs, inouts and scalars, once per task before its first block runs.
    BeforeDispatch = 0,
    /// Outputs and inouts, once per task after its last subtask finished.
    AfterCompletion = 1,
}

impl Stage {
    /// `before_dispatch` / `after_completion`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::BeforeDispatch => "before_dispatch",
            Stage::AfterCompletion => "after_completion",
        }
    }

    /// Does a tensor with `role` get a record at this stage?
    pub fn takes(self, role: ArgRole) -> bool {
        match self {
            Stage::BeforeDispatch => {
                matches!(role, ArgRole::Input | ArgRole::InOut | ArgRole::NoDep)
            }
            Stage::AfterCompletion => !matches!(role, ArgRole::Input),
        }
    }
}

/// Role name as the dump writes it: `output_existing` is an output to the
/// kernel, so it is dumped as `output`.
pub fn role_name(role: ArgRole) -> &'static str {
    match role {
        ArgRole::OutputExisting => "output",
        r => r.name(),
    }
}

/// Sort rank of a role inside one (task, stage, arg) key.
pub(crate) fn role_rank(role: ArgRole) -> u8 {
    match role {
        ArgRole::Input => 0,
        ArgRole::InOut => 1,
        ArgRole::Output | ArgRole::OutputExisting => 2,
        ArgRole::NoDep => 3,
    }
}

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Subject {
    /// A tensor view (payload: the view gathered row-major).
    Tensor(ChipTensor),
    /// A scalar slot.
    Scalar(Scalar),
}

/// One record, with its payload's place in the producer's arena.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    /// Task.
    pub task_id: TaskId,
    /// Func ids of the task's members (MIX: up to three).
    pub func_ids: [u32; 3],
    /// How many of `func_ids` are used.
    pub n_funcs: u8,
    /// Stage.
    pub stage: Stage,
    /// Role.
    pub role: ArgRole,
    /// Argument slot.
    pub arg_index: u32,
    /// Tensor or scalar.
    pub subject: Subject,
    /// Offset of the payload in the arena.
    pub arena_offset: u64,
    /// Payload bytes kept (0 for scalars and metadata-only records).
    pub payload_len: u64,
    /// The payload is shorter than the view (drop policy only).
    pub truncated: bool,
}

impl Record {
    /// Element type of the subject.
    pub fn dtype(&self) -> DType {
        match self.subject {
            Subject::Tensor(t) => t.dtype,
            Subject::Scalar(s) => s.dtype,
        }
    }

    /// Sort key: (task_id, stage, arg_index, role).
    pub fn key(&self) -> (u64, u8, u32, u8) {
        (
            self.task_id.0,
            self.stage as u8,
            self.arg_index,
            role_rank(self.role),
        )
    }
}
