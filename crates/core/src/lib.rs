//! Shared vocabulary of simpler-rs.
//!
//! Every other crate speaks in these types: [`DType`] (with the u8 codes the
//! file formats use), [`TaskId`] (`ring << 32 | local`), [`ChipTensor`] (the
//! 128-byte tensor descriptor kernels decode from global memory), the
//! dispatch-ABI layout in [`abi`], core topology in [`topology`] and the
//! [`KernelError`] a kernel returns.
//!
//! ```
//! use simpler_core::{ChipTensor, DType};
//! let t = ChipTensor::contiguous(0x1000, &[4, 8], DType::Float32);
//! let bytes = t.to_bytes();
//! assert_eq!(ChipTensor::from_bytes(&bytes).unwrap(), t);
//! assert_eq!(t.numel(), 32);
//! ```
#![deny(missing_docs)]

pub mod abi;
mod args;
pub mod decode;
mod dtype;
mod error;
mod race;
mod task_id;
mod tensor;
pub mod topology;

pub use args::{ArgRole, Scalar, TaskScalar, TaskTensor};
pub use dtype::DType;
pub use error::{DescError, GmAlloc, KResult, KernelError, ShapeError, ViewError};
pub use race::{RaceWriter, WriteRace};
pub use task_id::TaskId;
pub use tensor::{ByteSpan, ChipTensor, MAX_DIMS};
