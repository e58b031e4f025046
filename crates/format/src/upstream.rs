//! The upstream runtime's per-task dump as it writes it (DESIGN §6b,
//! UPSTREAM_FORMATS A): `<run>/args_dump/args_dump.json` in the upstream
//! field order, for `--dump-layout upstream`. Readers read these files
//! through [`crate::tensor_dump::Header`] and [`crate::tensor_dump::Record`],
//! which accept both layouts; a test checks that everything written here
//! reads back there.

use serde::{Deserialize, Serialize};
use simpler_core::{ArgRole, DType};

use crate::hex::Hex64;
use crate::scalar::WireValue;
use crate::tensor_dump::{BinFormat, UnfinishedTask};
use crate::vocab::{dtype, role, Kind, Stage, Status};

/// Header and records of `args_dump.json`, upstream order. Our extra
/// fields (`schema_version`, `status`, `reason`) go where the upstream
/// tools ignore them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgsDumpFile {
    /// `args_dump`.
    pub run_dir: String,
    /// Payload layout.
    pub bin_format: BinFormat,
    /// 1 marked args only, 2 all, 3 metadata for all + payload for marked.
    pub dump_args_level: u8,
    /// Records.
    pub total_args: u64,
    /// Records at `before_dispatch`.
    pub before_dispatch: u64,
    /// Records at `after_completion`.
    pub after_completion: u64,
    /// Input records, scalars included.
    pub input_args: u64,
    /// Output records.
    pub output_args: u64,
    /// Inout records.
    pub inout_args: u64,
    /// Truncated records.
    pub truncated_args: u64,
    /// Records lost.
    pub dropped_records: u64,
    /// Records overwritten.
    pub dropped_overwrite: u64,
    /// Ours: format version (the upstream tools ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// Ours: run status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Ours: why incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Ours: `block` or `drop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump_policy: Option<String>,
    /// Ours: records of tasks that had not finished when the run stopped,
    /// written as `after_completion` records marked `hang_snapshot: true`
    /// (also counted in `after_completion`, as the upstream runtime's own
    /// hang dump does with its unmarked ones).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hang_snapshot: u64,
    /// Ours: tasks not finished when an incomplete run stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_tasks: Option<Vec<UnfinishedTask>>,
    /// `args.bin`, or `null` at level 3 when no byte was written.
    pub bin_file: Option<String>,
    /// Sorted by (task_id, stage, arg_index, role input<output<inout).
    pub args: Vec<ArgsRecord>,
}

/// One upstream record, upstream field order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgsRecord {
    /// Task id.
    pub task_id: Hex64,
    /// Active members' func ids (AIC, AIV0, AIV1); `[-1]` unknown.
    pub func_id: Vec<i64>,
    /// Tensor slot, or tensor count + j for a scalar.
    pub arg_index: u32,
    /// `input`, `output`, `inout`.
    #[serde(with = "role")]
    pub role: ArgRole,
    /// `before_dispatch` or `after_completion`.
    pub stage: Stage,
    /// `tensor` or `scalar`.
    pub kind: Kind,
    /// Element type.
    #[serde(with = "dtype")]
    pub dtype: DType,
    /// Scalars only ([`crate::scalar::encode_upstream`]); `null` (a NaN)
    /// reads back as `Some(WireValue::Null)`.
    #[serde(
        default,
        deserialize_with = "crate::tensor_dump::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<WireValue>,
    /// Row-major strides (ignoring the offset).
    pub is_contiguous: bool,
    /// At most 5 dims; `[]` for scalars.
    pub shape: Vec<u64>,
    /// Elements; `[]` for scalars.
    pub strides: Vec<u64>,
    /// Elements.
    pub start_offset: u64,
    /// 1 for scalars.
    pub numel: u64,
    /// Only when a `dump(lvalue)` matched several scalar slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg_index_ambiguous: Option<bool>,
    /// Payload offset.
    pub bin_offset: u64,
    /// Payload bytes.
    pub bin_size: u64,
    /// Payload cut short.
    pub truncated: bool,
    /// Payload overwritten.
    pub overwritten: bool,
    /// Ours: the raw slot (ignored upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<Hex64>,
    /// Ours: the GM address (ignored upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<Hex64>,
    /// Ours: `true` on a hang snapshot (stage `after_completion` here, the
    /// only stage after dispatch the upstream tools know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_snapshot: Option<bool>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
