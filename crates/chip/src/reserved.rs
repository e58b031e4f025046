//! Regions of GM with rules of their own: a region the runtime reserved
//! ([`Reserved`]: kernels read it, only its holder writes it), the words
//! of one written in place ([`ReservedWords`]), and a span reads may take
//! without the allocator lock ([`GmArea`]). Made by [`crate::Gm`].

use simpler_core::{GmAlloc, KernelError};

use crate::shared_mem::SharedBytes;

/// A GM region the runtime reserved for itself (dispatch argument arrays).
///
/// The capability to write it: only the holder of this value can
/// ([`crate::Gm::write_reserved`], [`crate::Gm::reserved_words`], checked
/// against this region and nothing else). Kernels may read it
/// ([`crate::Gm::read`], [`GmArea`]) but every kernel write path refuses
/// it. Not `Clone`: returned to GM with [`crate::Gm::release`].
#[derive(Debug)]
pub struct Reserved {
    pub(crate) base: u64,
    pub(crate) len: u64,
}

impl Reserved {
    /// Address of the first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Bytes reserved.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a zero-byte region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// An access of `len` bytes at `addr` that leaves the region.
    pub(crate) fn miss(&self, addr: u64, len: u64) -> KernelError {
        let near = Some(GmAlloc {
            base: self.base,
            size: self.len,
            reserved: true,
        });
        KernelError::GmOutOfBounds { addr, len, near }
    }

    /// The region as a readable [`GmArea`].
    pub fn area(&self) -> GmArea {
        GmArea {
            start: self.base,
            end: self.base + self.len,
        }
    }
}

/// Aligned words of a reserved region, checked once when made
/// ([`crate::Gm::reserved_words`]); borrows the region, which therefore stays
/// reserved while this lives.
#[derive(Clone, Copy)]
pub struct ReservedWords<'a> {
    pub(crate) mem: &'a SharedBytes,
    /// Offset of word 0 in the mapping (a multiple of 8).
    pub(crate) off: usize,
    pub(crate) words: usize,
}

impl std::fmt::Debug for ReservedWords<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReservedWords")
            .field("off", &self.off)
            .field("words", &self.words)
            .finish()
    }
}

impl ReservedWords<'_> {
    /// Store `w` (little-endian) as word `i`: one atomic 8-byte store.
    ///
    /// # Panics
    /// If `i` is not below the number of words checked.
    #[inline]
    pub fn store(&self, i: usize, w: u64) {
        assert!(i < self.words, "word {i} of {}", self.words);
        self.mem.store_word(self.off + 8 * i, w.to_le_bytes());
    }
}

/// Bytes `[start, end)` that were one live allocation when the area was
/// made ([`crate::Gm::area`], [`Reserved::area`]): reads inside it
/// ([`crate::Gm::read_in`]) skip the allocator lock. Whoever makes an area keeps
/// its allocation alive while reading through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GmArea {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl GmArea {
    /// First byte.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// True when `[addr, addr+len)` lies inside the area.
    #[inline]
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.start && addr.checked_add(len).is_some_and(|e| e <= self.end)
    }
}
