//! Fixed-size records producers append.

use simpler_core::{topology::Subtask, ArgRole, ChipTensor, DType, Scalar, TaskId};

pub use simpler_format::vocab::{role_name, Stage};

/// Does a tensor with `role` get a record at `stage`? Before dispatch:
/// what the kernel reads (inputs, inouts, no-dep tensors); after
/// completion: what it may have written; a hang snapshot: what a stuck
/// kernel was writing.
pub fn takes(stage: Stage, role: ArgRole) -> bool {
    match stage {
        Stage::BeforeDispatch => matches!(role, ArgRole::Input | ArgRole::InOut | ArgRole::NoDep),
        Stage::AfterCompletion => !matches!(role, ArgRole::Input),
        Stage::HangSnapshot => matches!(
            role,
            ArgRole::Output | ArgRole::OutputExisting | ArgRole::InOut
        ),
    }
}

/// Sort rank of a role inside one (task, stage, arg) key: ours puts
/// inouts before outputs; the upstream layout sorts input < output <
/// inout (and writes a no-dep tensor as an inout, [`upstream_role`]).
pub(crate) fn role_rank(role: ArgRole, upstream: bool) -> u8 {
    match (role, upstream) {
        (ArgRole::Input, _) => 0,
        (ArgRole::InOut, false) => 1,
        (ArgRole::Output | ArgRole::OutputExisting, false) => 2,
        (ArgRole::NoDep, false) => 3,
        (ArgRole::Output | ArgRole::OutputExisting, true) => 1,
        (ArgRole::InOut | ArgRole::NoDep, true) => 2,
    }
}

/// The role the upstream layout writes: it knows only `input`, `output`
/// and `inout`; a no-dep tensor is read and written like an inout (it is
/// dumped at both stages), so it is written as one.
pub fn upstream_role(role: ArgRole) -> ArgRole {
    match role {
        ArgRole::OutputExisting => ArgRole::Output,
        ArgRole::NoDep => ArgRole::InOut,
        r => r,
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

/// One tensor-dump record, with its payload's place in the producer's
/// arena, as a producer describes it (and compacts it at once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorRecord {
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

impl TensorRecord {
    /// Element type of the subject.
    pub fn dtype(&self) -> DType {
        match self.subject {
            Subject::Tensor(t) => t.dtype,
            Subject::Scalar(s) => s.dtype,
        }
    }
}

/// One argument of the orchestration itself (`args_dump.json`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrchArgRecord {
    /// Position in the orchestration's argument list.
    pub arg_index: u32,
    /// Declared use (tensors).
    pub role: ArgRole,
    /// Tensor or scalar.
    pub subject: Subject,
}

/// One dispatch's argument array, captured from GM after the scheduler
/// wrote it (`kernel_args_dump.json`). The captured bytes live in the
/// batch's side buffer: the 50 slots, the two contexts, then one 128-byte
/// descriptor per tensor slot, each read from the address in its slot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DispatchRecord {
    /// Unique, increasing per run.
    pub dispatch_id: u64,
    /// Task.
    pub task_id: TaskId,
    /// Kernel of this member.
    pub func_id: u32,
    /// Cluster member it ran as.
    pub subtask: Subtask,
    /// Core it ran on.
    pub core_id: u32,
    /// Block index.
    pub block_idx: u32,
    /// Blocks of the task.
    pub block_num: u32,
    /// GM address of slot 0.
    pub args_addr: u64,
    /// Tensor slots.
    pub n_tensors: u8,
    /// Scalar slots (after the tensors).
    pub n_scalars: u8,
    /// Declared dtype of each scalar.
    pub scalar_dtypes: [DType; simpler_core::abi::MAX_SCALARS],
    /// Offset of the captured bytes in the side buffer.
    pub side_offset: u64,
}

/// Bytes captured per dispatch before the descriptors: slots and contexts.
pub const CAPTURE_HEAD: usize = simpler_core::abi::ARG_SLOTS * 8 + 16;

/// A side-file record a producer appends (a task's tensors and scalars
/// travel compact, as the collector keeps them: `kept.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    /// An orchestration argument (`args_dump.json`).
    OrchArg(OrchArgRecord),
    /// A dispatch's argument array (`kernel_args_dump.json`).
    Dispatch(DispatchRecord),
}

/// A task the run stopped before it completed, as the runtime saw it at
/// that moment (written to the manifest's `unfinished_tasks`).
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedTask {
    /// Task.
    pub task_id: TaskId,
    /// Member func ids (MIX: all).
    pub func_ids: Vec<u32>,
    /// Why it had not completed.
    pub state: TaskState,
    /// Blocks whose every member finished.
    pub blocks_done: u32,
    /// Blocks of the task.
    pub block_num: u32,
}

/// Where an unfinished task stood.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// A kernel of it was executing.
    Running {
        /// Cores executing it.
        cores: Vec<u32>,
        /// Milliseconds since its longest-running kernel started.
        for_ms: f64,
    },
    /// Every producer finished; it waited for a core (possibly queued on one).
    Ready,
    /// It waited for these unfinished tasks.
    Waiting {
        /// Producer task ids, ascending.
        on: Vec<TaskId>,
    },
}

impl TaskState {
    /// `running`, `ready` or `waiting`.
    pub fn name(&self) -> &'static str {
        match self {
            TaskState::Running { .. } => "running",
            TaskState::Ready => "ready",
            TaskState::Waiting { .. } => "waiting",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hang_snapshot_takes_outputs_and_inouts_only() {
        let roles = crate::kept::ROLES;
        let taken: Vec<bool> = roles
            .iter()
            .map(|&r| takes(Stage::HangSnapshot, r))
            .collect();
        assert_eq!(taken, [false, true, true, true, false]);
    }
}
