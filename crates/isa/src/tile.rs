//! Tiles: rectangular regions of a local buffer.

use simpler_chip::BufKind;
use simpler_core::DType;

use crate::record::BufRange;

/// A `rows × cols` tile of `dtype` at a byte offset in a local buffer.
///
/// A tile is a handle (copyable); its bytes live in the core's buffer. Data
/// is row-major and dense.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    /// Buffer the tile lives in.
    pub buf: BufKind,
    /// Byte offset inside the buffer (64-byte aligned).
    pub offset: u32,
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
    /// Element type.
    pub dtype: DType,
}

impl Tile {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    /// Bytes the tile occupies.
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    /// The byte range, as the hazard model sees it.
    pub fn range(&self) -> BufRange {
        BufRange {
            buf: self.buf,
            start: self.offset,
            len: self.bytes() as u32,
        }
    }
}
