//! `kernel_args_dump.json`: every dispatch's argument array (DESIGN §6).
//! Ours: unknown fields are refused, hex is canonical.

use serde::{Deserialize, Serialize};

use crate::hex::Hex64;
use crate::scalar::ScalarValue;
use crate::vocab::Kind;

/// The whole `kernel_args_dump.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    pub dispatches: Vec<Dispatch>,
}

/// One dispatch: its identity and the slots the kernel saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    /// Unique, increasing per run.
    pub dispatch_id: u64,
    /// Task.
    pub task_id: Hex64,
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
    /// GM address of slot 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_addr: Option<Hex64>,
    /// Tensor and scalar slots in slot order.
    pub args: Vec<Slot>,
    /// Slots 48 and 49.
    pub context: Vec<Context>,
}

/// One tensor or scalar slot of a dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Slot index.
    pub arg_index: u32,
    /// Tensor or scalar.
    pub kind: Kind,
    /// GM address of the 128-byte descriptor (the slot's content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc_addr: Option<Hex64>,
    /// Descriptor `addr`: the buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<Hex64>,
    /// Element type (scalars: as declared; `UINT64` when unknown); for a
    /// slot that held no valid descriptor, `INVALID (<why>)`.
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
    /// Descriptor `owner_task_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_task_id: Option<Hex64>,
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
    /// Raw slot bits (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<Hex64>,
    /// Exact value (scalars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
}

/// Slot 48 or 49 and what it points at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// 48 or 49.
    pub arg_index: u32,
    /// `local_context` or `global_context`.
    pub kind: ContextKind,
    /// GM address of the context.
    pub addr: Hex64,
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

/// Which context a context slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// Slot 48: `LocalContext { block_idx, block_num }`.
    LocalContext,
    /// Slot 49: `GlobalContext { sub_block_id }`.
    GlobalContext,
}

impl ContextKind {
    /// The name the files use.
    pub fn name(self) -> &'static str {
        match self {
            ContextKind::LocalContext => "local_context",
            ContextKind::GlobalContext => "global_context",
        }
    }
}

impl std::fmt::Display for ContextKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}
