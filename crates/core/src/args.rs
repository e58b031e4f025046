//! Argument vocabulary shared by the runtime, the dumps and replay.

use crate::{ChipTensor, DType};

/// A scalar argument: raw 64-bit slot bits plus the dtype orchestration declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scalar {
    /// The slot's raw bits (f32 → its bits zero-extended).
    pub bits: u64,
    /// Declared dtype (`UINT64` when unknown).
    pub dtype: DType,
}

impl Scalar {
    /// An f32 scalar (bits zero-extended).
    pub fn f32(v: f32) -> Scalar {
        Scalar {
            bits: u64::from(v.to_bits()),
            dtype: DType::Float32,
        }
    }

    /// An i32 scalar (bits zero-extended, as the slot holds it).
    pub fn i32(v: i32) -> Scalar {
        Scalar {
            bits: u64::from(v as u32),
            dtype: DType::Int32,
        }
    }

    /// An i64 scalar.
    pub fn i64(v: i64) -> Scalar {
        Scalar {
            bits: v as u64,
            dtype: DType::Int64,
        }
    }

    /// A u64 scalar.
    pub fn u64(v: u64) -> Scalar {
        Scalar {
            bits: v,
            dtype: DType::Uint64,
        }
    }

    /// The value decoded by its dtype ([`crate::decode::bits_f64`]):
    /// floats of every width exactly, integers sign- or zero-extended from
    /// their width (exact up to 2^53).
    pub fn as_f64(&self) -> f64 {
        crate::decode::bits_f64(self.bits, self.dtype)
    }

    /// The value as i64 ([`crate::decode::bits_i64`]): integers extended
    /// from their width, floats truncated toward zero.
    pub fn as_i64(&self) -> i64 {
        crate::decode::bits_i64(self.bits, self.dtype)
    }
}

/// How a task uses a tensor; decides its dependencies and its dump stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArgRole {
    /// Read only.
    Input,
    /// Allocated by the runtime for this task, written by it.
    Output,
    /// An existing buffer the task overwrites.
    OutputExisting,
    /// Read and written.
    InOut,
    /// Passed through without dependency tracking.
    NoDep,
}

impl ArgRole {
    /// Lowercase name used in dumps (`input`, `output`, `inout`, …).
    pub fn name(self) -> &'static str {
        match self {
            ArgRole::Input => "input",
            ArgRole::Output => "output",
            ArgRole::OutputExisting => "output_existing",
            ArgRole::InOut => "inout",
            ArgRole::NoDep => "no_dep",
        }
    }

    /// True when the task reads the tensor (it depends on earlier writers).
    pub fn reads(self) -> bool {
        matches!(self, ArgRole::Input | ArgRole::InOut)
    }

    /// True when the task writes an existing buffer (it waits for earlier
    /// readers and writers of the region).
    pub fn writes_existing(self) -> bool {
        matches!(self, ArgRole::InOut | ArgRole::OutputExisting)
    }
}

/// One tensor argument of a submitted task, as the scheduler and the dumps
/// see it: the final descriptor, its role, and whether it was marked with
/// `.dump()` for selective dumping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTensor {
    /// Descriptor written into the dispatch payload.
    pub desc: ChipTensor,
    /// How the task uses it.
    pub role: ArgRole,
    /// Marked for selective dumping (levels 1 and 3).
    pub marked: bool,
}

/// One scalar argument of a submitted task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskScalar {
    /// Bits and declared dtype.
    pub scalar: Scalar,
    /// Marked for selective dumping (levels 1 and 3).
    pub marked: bool,
}
