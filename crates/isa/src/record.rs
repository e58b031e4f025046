//! Instruction records: what the pipe timing model consumes.

use std::panic::Location;

use simpler_chip::BufKind;

/// Hardware pipes of a core; instructions on one pipe execute in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pipe {
    /// Scalar unit: address arithmetic, loop bookkeeping.
    Scalar,
    /// L1 → L0A/L0B moves.
    Mte1,
    /// GM → L1/UB loads.
    Mte2,
    /// UB → GM stores.
    Mte3,
    /// Matrix multiply unit.
    Cube,
    /// L0C → GM stores (fixpipe, with conversion).
    Fixp,
    /// Vector unit.
    Vector,
}

impl Pipe {
    /// All pipes in trace order.
    pub const ALL: [Pipe; 7] = [
        Pipe::Scalar,
        Pipe::Mte1,
        Pipe::Mte2,
        Pipe::Mte3,
        Pipe::Cube,
        Pipe::Fixp,
        Pipe::Vector,
    ];

    /// Upper-case name used in traces (`MTE2`, `VECTOR`, …).
    pub fn name(self) -> &'static str {
        match self {
            Pipe::Scalar => "SCALAR",
            Pipe::Mte1 => "MTE1",
            Pipe::Mte2 => "MTE2",
            Pipe::Mte3 => "MTE3",
            Pipe::Cube => "CUBE",
            Pipe::Fixp => "FIXP",
            Pipe::Vector => "VECTOR",
        }
    }
}

/// A byte range of a local buffer, for hazard tracking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufRange {
    /// Buffer.
    pub buf: BufKind,
    /// First byte.
    pub start: u32,
    /// Length in bytes.
    pub len: u32,
}

impl BufRange {
    /// True when the two ranges share a byte of the same buffer.
    pub fn overlaps(&self, other: &BufRange) -> bool {
        self.buf == other.buf
            && self.start < other.start + other.len
            && other.start < self.start + self.len
    }
}

/// One executed instruction, as recorded when recording is on.
#[derive(Debug, Clone, PartialEq)]
pub struct InstrRecord {
    /// Mnemonic (`TLOAD`, `TMATMUL`, …).
    pub mnemonic: &'static str,
    /// Pipe it executes on.
    pub pipe: Pipe,
    /// Local-buffer ranges it reads (up to three).
    pub reads: [Option<BufRange>; 3],
    /// Local-buffer range it writes.
    pub write: Option<BufRange>,
    /// Work size: bytes moved (MTE/FIXP), MACs (CUBE), elements (VECTOR),
    /// operations (SCALAR).
    pub size: u64,
    /// GM byte span touched (first byte, length), for loads and stores.
    pub gm: Option<(u64, u64)>,
    /// Kernel source line that issued it.
    pub loc: &'static Location<'static>,
}
