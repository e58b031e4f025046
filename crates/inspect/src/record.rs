//! One validated record of a tensor dump, either layout.

use simpler_core::{decode, ArgRole, DType, TaskId};
use simpler_format::scalar::{BitsOrigin, WireValue};
use simpler_format::vocab::{Kind, Stage};

/// A record after validation: typed, its numbers consistent with each
/// other and its payload range inside the payload file.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Position in the manifest's record list.
    pub index: usize,
    /// The task the record belongs to.
    pub task_id: TaskId,
    /// Func ids of the task's members (MIX: all); empty when the dump does
    /// not record them (reference dumps, upstream `[-1]`).
    pub func_ids: Vec<u32>,
    /// How the task uses the argument.
    pub role: ArgRole,
    /// When it was captured.
    pub stage: Stage,
    /// Argument slot (scalars: tensor count + j).
    pub arg_index: u32,
    /// Tensor or scalar.
    pub kind: Kind,
    /// Element type.
    pub dtype: DType,
    /// View shape (empty for scalars).
    pub shape: Vec<u64>,
    /// View strides in elements (empty for scalars).
    pub strides: Vec<u64>,
    /// View offset in elements from the buffer start.
    pub start_offset: u64,
    /// Dense row-major view.
    pub is_contiguous: bool,
    /// Elements of the view (product of `shape`; 1 for scalars).
    pub numel: u64,
    /// GM address of the buffer, when the dump recorded it.
    pub addr: Option<u64>,
    /// Offset of the payload in the payload file.
    pub bin_offset: u64,
    /// Payload bytes (0 for scalars and metadata-only records).
    pub bin_size: u64,
    /// The payload is shorter than the view (drop policy).
    pub truncated: bool,
    /// The payload was overwritten before it reached the file.
    pub overwritten: bool,
    /// A scalar's value as the manifest wrote it.
    pub value: Option<WireValue>,
    /// A scalar's raw 64-bit slot bits: `bits` from the manifest, or
    /// derived from `value` ([`Record::bits_origin`] says which).
    pub bits: Option<u64>,
    /// Where [`Record::bits`] came from.
    pub bits_origin: Option<BitsOrigin>,
}

/// The pairing key of a record: (task, stage, arg, role).
pub type Key = (TaskId, Stage, u32, ArgRole);

impl Record {
    /// True for scalar records.
    pub fn is_scalar(&self) -> bool {
        self.kind == Kind::Scalar
    }

    /// (task, stage, arg, role).
    pub fn key(&self) -> Key {
        (self.task_id, self.stage, self.arg_index, self.role)
    }

    /// Bytes the full view occupies (`numel × element size`; validated not
    /// to overflow).
    pub fn expected_bytes(&self) -> u64 {
        self.numel.saturating_mul(self.dtype.size() as u64)
    }

    /// A tensor record without payload (dump level 3 records metadata for
    /// every argument but payload only for marked ones).
    pub fn is_metadata_only(&self) -> bool {
        self.kind == Kind::Tensor
            && self.bin_size == 0
            && self.expected_bytes() > 0
            && !self.truncated
    }

    /// Complete elements present in the payload.
    pub fn payload_elements(&self) -> u64 {
        self.bin_size / self.dtype.size() as u64
    }

    /// `task 0x…, arg N`: how messages name the record besides its index.
    pub fn label(&self) -> String {
        format!("task {}, arg {}", self.task_id, self.arg_index)
    }

    /// The scalar decoded by its dtype from [`Record::bits`]. `None` for
    /// tensors.
    pub fn scalar_f64(&self) -> Option<f64> {
        Some(decode::bits_f64(self.bits?, self.dtype))
    }

    /// The scalar formatted by its dtype (`1.0`, `-3`), `None` for tensors.
    pub fn scalar_display(&self) -> Option<String> {
        Some(decode::format_bits(self.bits?, self.dtype))
    }

    /// For reference dumps (scalars typed `UINT64` holding the raw slot):
    /// the low 32 bits read as an f32 when they plausibly are one (the upper
    /// half is zero and the f32 is a normal number of moderate magnitude).
    /// A hint for humans; the dump does not say what the slot held.
    pub fn f32_hint(&self) -> Option<f32> {
        if self.kind != Kind::Scalar || self.dtype != DType::Uint64 {
            return None;
        }
        let bits = self.bits?;
        if bits >> 32 != 0 || bits < 0x0080_0000 {
            return None;
        }
        let f = f32::from_bits(bits as u32);
        let a = f.abs();
        (f.is_normal() && (1e-8..=1e12).contains(&a)).then_some(f)
    }
}
