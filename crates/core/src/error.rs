//! Errors a kernel or a descriptor decode can produce.

use thiserror::Error;

/// Result of a kernel or of a tile instruction.
pub type KResult<T> = Result<T, KernelError>;

/// Why a kernel failed. The runtime wraps it with the task id, func id and core.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum KernelError {
    /// A global-memory access touched bytes outside every live allocation.
    #[error("global memory access out of bounds: {len} bytes at 0x{addr:016x} are not inside a live allocation")]
    GmOutOfBounds {
        /// First byte of the access.
        addr: u64,
        /// Length of the access in bytes.
        len: u64,
    },
    /// A local buffer (L1, L0A, L0B, L0C, UB) ran out of capacity.
    #[error("local buffer {buffer} overflow: requested {requested} bytes, {used} of {capacity} already in use")]
    LocalBufferOverflow {
        /// Buffer name (`L1`, `UB`, …).
        buffer: &'static str,
        /// Bytes requested by the allocation.
        requested: usize,
        /// Bytes already allocated.
        used: usize,
        /// Capacity of the buffer in bytes.
        capacity: usize,
    },
    /// The kernel read an argument slot that does not hold what it asked for.
    #[error("argument slot {slot}: {msg}")]
    BadArg {
        /// Slot index in the 50-slot array.
        slot: usize,
        /// What was wrong.
        msg: String,
    },
    /// An instruction was given operands it cannot take (shape, dtype, buffer).
    #[error("{instr}: {msg}")]
    BadOperand {
        /// Instruction mnemonic.
        instr: &'static str,
        /// What was wrong.
        msg: String,
    },
    /// A tensor descriptor in GM could not be decoded.
    #[error(transparent)]
    Desc(#[from] DescError),
    /// The kernel reported a failure of its own.
    #[error("{0}")]
    Failed(String),
}

impl KernelError {
    /// A kernel-reported failure with a message.
    pub fn msg(msg: impl Into<String>) -> KernelError {
        KernelError::Failed(msg.into())
    }
}

/// A 128-byte tensor descriptor that does not describe a valid view.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DescError {
    /// `ndims` is 0 or above [`crate::MAX_DIMS`].
    #[error("tensor descriptor: ndims {0} is not in 1..=5")]
    BadNdims(u32),
    /// The dtype byte is not a known code.
    #[error("tensor descriptor: dtype code {0} is unknown")]
    BadDtype(u8),
    /// The element count overflows.
    #[error("tensor descriptor: shape {0:?} overflows the element count")]
    Overflow(Vec<u32>),
    /// Fewer than 128 bytes were given.
    #[error("tensor descriptor: need 128 bytes, got {0}")]
    Short(usize),
}
