//! The allocator's bookkeeping: first fit over a coalescing free list,
//! with a cache by size class in front of it. A freed block up to 64 KiB
//! waits in the list of its length, and the next allocation of that
//! length takes it back without searching or coalescing (a run allocates
//! and frees the same few output sizes over and over). An allocation
//! whose class is empty first returns every cached block to the free list
//! (coalesced), then searches it, so it finds what it would without the
//! cache, and running out of memory is never an artefact of it.

use std::collections::BTreeMap;

use simpler_core::{GmAlloc, KernelError};

use super::GM_ALIGN;

/// One live allocation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Alloc {
    /// Bytes taken from the free list (a multiple of [`GM_ALIGN`]).
    pub len: u64,
    /// Bytes asked for: the only ones that may be accessed.
    pub requested: u64,
    /// Runtime-reserved ([`crate::Reserved`]): readable, not writable by kernels.
    pub reserved: bool,
}

/// Free ranges, live allocations and the size-class cache.
#[derive(Debug, Default)]
pub(super) struct Heap {
    /// Free ranges: start → len (blocks cached in `quick` aside).
    pub free: BTreeMap<u64, u64>,
    /// Live allocations by start address.
    pub live: BTreeMap<u64, Alloc>,
    /// Bytes in live allocations.
    pub used: u64,
    /// Most bytes ever in live allocations at once.
    pub peak: u64,
    /// Bytes from here to the end were never allocated: still zero from
    /// the OS, so a fresh allocation there needs no zero-fill, only
    /// backing.
    pub clean_from: u64,
    /// Freed blocks not in `free`, by length: `quick[len / GM_ALIGN]`
    /// holds the starts of free blocks of `len` bytes (module doc).
    quick: Vec<Vec<u64>>,
    /// Classes of `quick` that may hold blocks.
    quick_used: Vec<usize>,
}

/// Largest block kept by size class; larger ones coalesce at once.
const QUICK_MAX: u64 = 64 << 10;

impl Heap {
    /// `size` bytes from `base`, all free and never allocated.
    pub fn new(base: u64, size: u64) -> Heap {
        let mut heap = Heap {
            clean_from: base,
            ..Heap::default()
        };
        heap.free.insert(base, size);
        heap
    }

    /// Take a cached block of exactly `len` bytes.
    pub fn take_quick(&mut self, len: u64) -> Option<u64> {
        self.quick.get_mut((len / GM_ALIGN) as usize)?.pop()
    }

    /// Keep a freed block by its length, or coalesce it when too large.
    pub fn put_quick(&mut self, start: u64, len: u64) {
        if len > QUICK_MAX {
            return self.insert_free(start, len);
        }
        let class = (len / GM_ALIGN) as usize;
        if self.quick.len() <= class {
            self.quick.resize_with(class + 1, Vec::new);
        }
        if self.quick[class].is_empty() {
            self.quick_used.push(class);
        }
        self.quick[class].push(start);
    }

    /// Every cached block back to the free list, coalesced.
    pub fn flush_quick(&mut self) {
        for class in std::mem::take(&mut self.quick_used) {
            let len = class as u64 * GM_ALIGN;
            for start in std::mem::take(&mut self.quick[class]) {
                self.insert_free(start, len);
            }
        }
    }

    /// Add `[start, start+len)` to the free list, merged with free
    /// neighbours.
    fn insert_free(&mut self, mut start: u64, len: u64) {
        let mut stop = start + len;
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
            }
        }
        if let Some(nl) = self.free.remove(&stop) {
            stop += nl;
        }
        self.free.insert(start, stop - start);
    }

    /// First fit of `len` bytes in the free list, cached blocks included.
    pub fn take_first_fit(&mut self, len: u64) -> Option<u64> {
        if !self.quick_used.is_empty() {
            self.flush_quick();
        }
        let (start, flen) = self
            .free
            .iter()
            .find(|(_, &l)| l >= len)
            .map(|(&s, &l)| (s, l))?;
        self.free.remove(&start);
        if flen > len {
            self.free.insert(start + len, flen - len);
        }
        Some(start)
    }

    /// The live allocation whose requested bytes hold `[addr, addr+len)`,
    /// or the error naming the allocation the access missed.
    pub fn find(&self, addr: u64, len: u64) -> Result<(u64, Alloc), KernelError> {
        let below = self.live.range(..=addr).next_back();
        if let Some((&base, a)) = below {
            let inside = addr
                .checked_add(len)
                .is_some_and(|end| end <= base + a.requested);
            if inside {
                return Ok((base, *a));
            }
        }
        Err(KernelError::GmOutOfBounds {
            addr,
            len,
            near: below.map(|(&base, a)| GmAlloc {
                base,
                size: a.requested,
                reserved: a.reserved,
            }),
        })
    }
}
