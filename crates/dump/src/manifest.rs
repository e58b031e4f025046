//! The writer's serde structs of `tensor_dump.json`, `args_dump.json` and
//! `kernel_args_dump.json` (DESIGN §6). Readers use `simpler-format`'s
//! types; a test (`kept_format_check`) checks that what this writer writes
//! is what those types describe, byte for byte. Switching the writer to
//! the format types is a later step.
//!
//! Changing a field here changes the format: bump [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};

/// Version written into every file this crate produces.
pub const SCHEMA_VERSION: u32 = simpler_format::SCHEMA_VERSION;

/// `bin_format` of the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinFormat {
    /// Always `logical_contiguous`: each record's view gathered row-major.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `little_endian`.
    pub byte_order: String,
}

impl Default for BinFormat {
    fn default() -> Self {
        BinFormat {
            kind: "logical_contiguous".into(),
            byte_order: "little_endian".into(),
        }
    }
}

/// The whole `tensor_dump.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version; absent in reference-runtime dumps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// Folder name (`tensor_dump`).
    #[serde(default)]
    pub run_dir: String,
    /// `complete`, or `incomplete` when the run ended abnormally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why the dump is incomplete (kernel error, panic, timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Payload file name, relative to the manifest.
    pub bin_file: String,
    /// Payload layout.
    #[serde(default)]
    pub bin_format: BinFormat,
    /// `--dump-tensor` level (0–3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump_level: Option<u8>,
    /// `block` or `drop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump_policy: Option<String>,
    /// Records in `tensors` (tensors and scalars).
    pub total_tensors: u64,
    /// Records at stage `before_dispatch`.
    pub before_dispatch: u64,
    /// Records at stage `after_completion`.
    pub after_completion: u64,
    /// Records at stage `hang_snapshot` (written always; absent in older
    /// and reference dumps).
    #[serde(default)]
    pub hang_snapshot: u64,
    /// Tensor records with role `input`.
    pub input_tensors: u64,
    /// Tensor records with role `output`.
    pub output_tensors: u64,
    /// Tensor records with role `inout`.
    pub inout_tensors: u64,
    /// Scalar records.
    #[serde(default)]
    pub scalar_args: u64,
    /// Records whose payload was cut short (drop policy only).
    pub truncated_tensors: u64,
    /// Records lost entirely (drop policy only).
    pub dropped_records: u64,
    /// Records whose payload was overwritten before it was written out.
    pub dropped_overwrite: u64,
    /// Every task submitted and not completed when the run stopped (written
    /// only when `status` is `incomplete`; empty when every task finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_tasks: Option<Vec<UnfinishedTaskJson>>,
    /// The records, sorted by (task_id, stage, arg_index, role).
    #[serde(alias = "args")]
    pub tensors: Vec<RecordJson>,
}

/// One entry of `unfinished_tasks`: a task the run stopped before it
/// completed, and why it had not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnfinishedTaskJson {
    /// Task id, `0x%016x`.
    pub task_id: String,
    /// Func ids of the task's members (MIX: all).
    pub func_id: Vec<u32>,
    /// `running` (a kernel of it was executing), `ready` (every producer
    /// done, waiting for a core) or `waiting` (on unfinished producers).
    pub state: String,
    /// Running: the cores executing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<Vec<u32>>,
    /// Running: milliseconds since its longest-running kernel started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_for_ms: Option<f64>,
    /// Blocks whose every member finished.
    pub blocks_done: u32,
    /// Blocks of the task.
    pub block_num: u32,
    /// Waiting: the unfinished tasks it depends on, `0x%016x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<Vec<String>>,
}

/// One record of `tensors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordJson {
    /// Task id, `0x%016x`.
    pub task_id: String,
    /// Func ids of the task's members (MIX: all); absent in reference dumps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub func_id: Option<Vec<u32>>,
    /// `input`, `output`, `inout` (or `no_dep`).
    pub role: String,
    /// `before_dispatch`, `after_completion` or `hang_snapshot`.
    pub stage: String,
    /// Argument slot (scalars: tensor count + j).
    pub arg_index: u32,
    /// `tensor` or `scalar`.
    pub kind: String,
    /// Element type, UPPERCASE.
    pub dtype: String,
    /// View shape (`[]` for scalars).
    pub shape: Vec<u64>,
    /// View strides in elements (`[]` for scalars).
    pub strides: Vec<u64>,
    /// View offset in elements from the buffer start.
    pub start_offset: u64,
    /// Dense row-major view.
    pub is_contiguous: bool,
    /// Elements of the view (1 for scalars).
    pub numel: u64,
    /// GM address of the buffer, hex; absent for scalars and reference dumps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Offset of the payload in the `.bin` file.
    pub bin_offset: u64,
    /// Payload bytes in the `.bin` file (0 for scalars and metadata-only records).
    pub bin_size: u64,
    /// The payload is shorter than the view.
    pub truncated: bool,
    /// The payload was overwritten before it reached the file.
    pub overwritten: bool,
    /// Scalar value, exact (see [`ScalarValue`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
    /// Scalar slot's raw 64 bits, `0x%016x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
}

/// A scalar's value, written exactly: the one codec's type
/// ([`simpler_format::scalar`]).
pub use simpler_format::scalar::ScalarValue;

/// `args_dump.json`: the orchestration's own arguments, metadata only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgsDump {
    /// Format version.
    pub schema_version: u32,
    /// Workload name.
    pub workload: String,
    /// Case name.
    pub case: String,
    /// Entries in `args`.
    pub total_args: u64,
    /// Arguments lost (drop policy only; always 0 with `block`).
    #[serde(default)]
    pub dropped_args: u64,
    /// The arguments in order.
    pub args: Vec<OrchArgJson>,
}

/// One orchestration argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrchArgJson {
    /// Position in the orchestration's argument list.
    pub arg_index: u32,
    /// `tensor` or `scalar`.
    pub kind: String,
    /// `input`, `output` or `inout` (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Element type, UPPERCASE.
    pub dtype: String,
    /// Shape (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Strides in elements (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u64>>,
    /// View offset in elements (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset: Option<u64>,
    /// GM address of the buffer (tensors), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Bytes of the view (tensors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbytes: Option<u64>,
    /// Exact value (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
    /// Raw 64-bit slot bits (scalars), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
}

/// `kernel_args_dump.json`: every dispatch's argument array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelArgsDump {
    /// Format version.
    pub schema_version: u32,
    /// Entries in `dispatches`.
    pub total_dispatches: u64,
    /// Tensor and scalar slots over all dispatches (contexts not counted).
    pub total_args: u64,
    /// Dispatches lost (drop policy only; always 0 with `block`).
    #[serde(default)]
    pub dropped_dispatches: u64,
    /// In `dispatch_id` order.
    pub dispatches: Vec<DispatchJson>,
}

/// One dispatch: its identity and the slots the kernel saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchJson {
    /// Unique, increasing per run.
    pub dispatch_id: u64,
    /// Task, hex.
    pub task_id: String,
    /// Kernel of this member.
    pub func_id: u32,
    /// 0 aic, 1 aiv0, 2 aiv1.
    pub subtask_id: u32,
    /// `aic`, `aiv0` or `aiv1`.
    pub subtask: String,
    /// `aic` or `aiv`.
    pub core_type: String,
    /// Core id.
    pub core_id: u32,
    /// Block index.
    pub block_idx: u32,
    /// Blocks of the task.
    pub block_num: u32,
    /// Always `before_dispatch`: captured after the payload was written.
    pub stage: String,
    /// GM address of slot 0, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_addr: Option<String>,
    /// Tensor and scalar slots in slot order.
    pub args: Vec<SlotJson>,
    /// Slots 48 and 49.
    pub context: Vec<ContextJson>,
}

/// One tensor or scalar slot of a dispatch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SlotJson {
    /// Slot index.
    pub arg_index: u32,
    /// `tensor` or `scalar`.
    pub kind: String,
    /// GM address of the 128-byte descriptor (the slot's content), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc_addr: Option<String>,
    /// Descriptor `addr`: the buffer, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Element type (scalars: as declared; `UINT64` when unknown).
    pub dtype: String,
    /// Descriptor `ndims`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ndims: Option<u32>,
    /// Descriptor shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Descriptor strides (elements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u64>>,
    /// Descriptor `start_offset` (elements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset: Option<u64>,
    /// Descriptor `is_contiguous`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_contiguous: Option<bool>,
    /// Descriptor `size`: bytes of the underlying buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Descriptor `owner_task_id`, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_task_id: Option<String>,
    /// Descriptor `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// Descriptor `manual_dep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_dep: Option<bool>,
    /// Descriptor `address_space`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_space: Option<u8>,
    /// Descriptor `extent_elems`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extent_elems: Option<u64>,
    /// Raw slot bits (scalars), hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
    /// Exact value (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
}

/// Slot 48 or 49 and what it points at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextJson {
    /// 48 or 49.
    pub arg_index: u32,
    /// `local_context` or `global_context`.
    pub kind: String,
    /// GM address of the context, hex.
    pub addr: String,
    /// Local context: block index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_idx: Option<i32>,
    /// Local context: block count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_num: Option<i32>,
    /// Global context: 0 for AIC/AIV0, 1 for AIV1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_block_id: Option<i32>,
}
