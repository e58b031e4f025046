//! Errors a kernel or a descriptor decode can produce.

use thiserror::Error;

/// Result of a kernel or of a tile instruction.
pub type KResult<T> = Result<T, KernelError>;

/// Why a kernel failed. The runtime wraps it with the task id, func id and core.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum KernelError {
    /// A global-memory access touched bytes outside the requested size of
    /// every live allocation (allocator padding included).
    #[error("global memory access out of bounds: {len} bytes at 0x{addr:016x} {}", miss_detail(*addr, *len, near))]
    GmOutOfBounds {
        /// First byte of the access.
        addr: u64,
        /// Length of the access in bytes.
        len: u64,
        /// The live allocation at or below `addr` (the one the access
        /// missed), if any.
        near: Option<GmAlloc>,
    },
    /// A kernel tried to write GM the runtime reserved for itself (the
    /// dispatch argument areas).
    #[error("global memory write of {len} bytes at 0x{addr:016x} lands in the runtime's dispatch argument area (0x{area:016x}, {area_len} bytes), which kernels may read but not write")]
    GmReserved {
        /// First byte of the access.
        addr: u64,
        /// Length of the access in bytes.
        len: u64,
        /// Start of the reserved area.
        area: u64,
        /// Bytes of the reserved area.
        area_len: u64,
    },
    /// A tensor view whose fields do not describe bytes in GM.
    #[error(transparent)]
    View(#[from] ViewError),
    /// A sub-view or reshape the kernel asked for does not fit its tensor.
    #[error(transparent)]
    Shape(#[from] ShapeError),
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

/// A live GM allocation, as an out-of-bounds error names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GmAlloc {
    /// Address of its first byte.
    pub base: u64,
    /// Bytes requested (what may be accessed; padding excluded).
    pub size: u64,
    /// A region the runtime reserved for itself (dispatch arguments).
    pub reserved: bool,
}

/// Where an out-of-bounds access of `len` bytes at `addr` fell, relative to
/// the allocation below it.
fn miss_detail(addr: u64, len: u64, near: &Option<GmAlloc>) -> String {
    let Some(a) = near else {
        return "are not inside any live allocation".into();
    };
    let alloc_end = a.base.saturating_add(a.size);
    let what = format!(
        "the {} at 0x{:016x} ({} bytes{})",
        if a.reserved {
            "runtime's reserved dispatch argument area"
        } else {
            "allocation"
        },
        a.base,
        a.size,
        if a.reserved { "" } else { " requested" }
    );
    if addr < alloc_end {
        let over = addr.saturating_add(len).saturating_sub(alloc_end);
        format!("overrun {what} by {over} bytes")
    } else {
        format!("start {} bytes past the end of {what}", addr - alloc_end)
    }
}

/// A tensor view whose bytes cannot be located: shape, strides, start
/// offset or rank do not describe a span of the 64-bit address space.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("tensor view of the buffer at 0x{addr:016x}: {problem}")]
pub struct ViewError {
    /// The view's `addr` (its buffer).
    pub addr: u64,
    /// What is wrong, naming the field.
    pub problem: String,
}

impl KernelError {
    /// A kernel-reported failure with a message (anything printable, so
    /// `.map_err(KernelError::msg)` takes a string or another error).
    pub fn msg(msg: impl std::fmt::Display) -> KernelError {
        KernelError::Failed(msg.to_string())
    }
}

/// Why [`crate::ChipTensor::view`] or [`crate::ChipTensor::reshape`]
/// refused: the new view would not be a part of the old one.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeError {
    /// `offsets` and `shape` must both have one entry per dimension.
    #[error("view rank {offsets} / {shape} does not match tensor rank {rank}")]
    Rank {
        /// Entries in `offsets`.
        offsets: usize,
        /// Entries in `shape`.
        shape: usize,
        /// The tensor's dimensions.
        rank: u32,
    },
    /// The box leaves the tensor in dimension `dim`.
    #[error("view dim {dim}: {start}..{end} exceeds size {size}")]
    OutOfRange {
        /// The dimension.
        dim: usize,
        /// The box's first index in it.
        start: u32,
        /// One past the box's last index.
        end: u64,
        /// The tensor's size in it.
        size: u32,
    },
    /// The view's `start_offset` would not fit 64 bits.
    #[error("view dim {dim}: start_offset overflows 64 bits")]
    Overflow {
        /// The dimension whose offset overflowed.
        dim: usize,
    },
    /// Only a dense view can be reshaped.
    #[error("reshape of a non-contiguous view")]
    NotDense,
    /// A shape needs 1 to 5 dimensions.
    #[error("reshape to {0} dims")]
    Dims(usize),
    /// A reshape keeps the element count.
    #[error("reshape {from:?} -> {to:?} changes the element count")]
    Count {
        /// The old shape.
        from: Vec<u32>,
        /// The shape asked for.
        to: Vec<u32>,
    },
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
