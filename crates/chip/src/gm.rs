//! Global memory: one host allocation, device address = host address.
//!
//! Every access a kernel can reach is checked against the *requested* size
//! of one live allocation (the 64-byte rounding is padding nobody may
//! touch), and every byte moves through [`crate::shared_mem`], whose
//! word-sized atomics make concurrent access by many cores data-race-free.
//!
//! The allocator's bookkeeping (free list, size classes) is in `gm/heap.rs`.

mod heap;
mod known;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use simpler_core::{ByteSpan, ChipTensor, KResult, KernelError};

use heap::{Alloc, Heap};
pub use known::{Known, KnownArea, MAX_KNOWN};
use thiserror::Error;

use crate::{shared_mem::SharedBytes, GmArea, Reserved, ReservedWords, WriteLog};

/// Alignment of every GM allocation.
pub const GM_ALIGN: u64 = 64;

/// Allocation failures.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GmError {
    /// No free range is large enough.
    #[error("global memory exhausted: {requested} bytes requested, {free} of {capacity} free (largest free block {largest})")]
    OutOfMemory {
        /// Bytes asked for.
        requested: u64,
        /// Bytes free in total.
        free: u64,
        /// Largest single free range.
        largest: u64,
        /// GM size.
        capacity: u64,
    },
    /// `free` of an address that is not the start of a live allocation.
    #[error("free of 0x{0:016x}, which is not a live allocation")]
    BadFree(u64),
    /// The host could not reserve the GM mapping.
    #[error("cannot reserve {size} bytes of global memory: {msg}")]
    Reserve {
        /// Size asked for.
        size: u64,
        /// OS message.
        msg: String,
    },
}

/// The allocation a [`Gm::check_view_near`] last found, and how many
/// allocations had been freed then (`None`: nothing found yet).
#[derive(Debug, Clone, Copy, Default)]
pub struct LastAlloc {
    area: GmArea,
    reserved: bool,
    frees: Option<u64>,
}

impl LastAlloc {
    /// The allocation the last successful [`Gm::check_view_near`] of a
    /// non-empty view found, as a [`KnownArea`] (`None` before any, or
    /// for a reserved one). Read [`Gm::known_epoch`] before that check
    /// for the [`Known`] set it goes into.
    pub fn known(&self) -> Option<KnownArea> {
        (self.frees.is_some() && !self.reserved).then_some(KnownArea(self.area))
    }
}

/// Simulated global memory.
///
/// Device addresses are host addresses of the mapping's bytes, as in the
/// reference system's simulation. Access is through `&self`, so cores on
/// many threads share one `Gm`; concurrent accesses to the same bytes are
/// data-race-free (see the `shared_mem` module) and the runtime's race check
/// reports writers that overlap.
pub struct Gm {
    mem: SharedBytes,
    base: u64,
    size: u64,
    heap: RwLock<Heap>,
    /// Allocations returned so far: a [`LastAlloc`] taken at the same
    /// count still names a live allocation.
    frees: AtomicU64,
    /// Allocations returned by [`Gm::free`] (not [`Gm::free_unheld`]) or
    /// [`Gm::release`]: a [`Known`] set taken at the same count is valid.
    known_epoch: AtomicU64,
}

impl std::fmt::Debug for Gm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gm")
            .field("base", &format_args!("0x{:x}", self.base))
            .field("size", &self.size)
            .finish()
    }
}

/// A view whose last two dims `[rows, cols]` have strides `[1, col_stride]`
/// (a transposed matrix, e.g. `kᵀ`) and every earlier dim is 1: element
/// `(i, j)` is at `i + j·col_stride`, so each column is contiguous.
#[derive(Debug, Clone, Copy)]
struct Columns {
    rows: usize,
    cols: usize,
    col_stride: usize,
}

impl Columns {
    fn of(view: &ChipTensor) -> Option<Columns> {
        let (shape, strides) = (view.shape(), view.strides());
        let nd = shape.len();
        if nd < 2 || shape[..nd - 2].iter().any(|&d| d != 1) {
            return None;
        }
        let (rows, cols) = (shape[nd - 2] as usize, shape[nd - 1] as usize);
        let (rs, cs) = (strides[nd - 2], strides[nd - 1] as usize);
        (rs == 1 && cs > 1 && rows > 1 && cols > 1).then_some(Columns {
            rows,
            cols,
            col_stride: cs,
        })
    }
}

impl Gm {
    /// Reserve `size` bytes of GM (lazily committed by the OS).
    ///
    /// # Errors
    /// When the OS refuses the mapping.
    pub fn new(size: u64) -> Result<Gm, GmError> {
        let size = size
            .max(GM_ALIGN)
            .div_ceil(GM_ALIGN)
            .saturating_mul(GM_ALIGN);
        let reserve_err = |msg: String| GmError::Reserve { size, msg };
        let len = usize::try_from(size).map_err(|e| reserve_err(e.to_string()))?;
        let mem = SharedBytes::new(len).map_err(|e| reserve_err(e.to_string()))?;
        let base = mem.addr();
        Ok(Gm {
            mem,
            base,
            size,
            heap: RwLock::new(Heap::new(base, size)),
            frees: AtomicU64::new(0),
            known_epoch: AtomicU64::new(0),
        })
    }

    /// Device address of the first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Total bytes.
    pub fn capacity(&self) -> u64 {
        self.size
    }

    /// Bytes currently allocated (rounded to [`GM_ALIGN`] each).
    pub fn used(&self) -> u64 {
        self.heap.read().used
    }

    /// Most bytes ever allocated at once.
    pub fn peak(&self) -> u64 {
        self.heap.read().peak
    }

    /// Number of live allocations (reserved regions included).
    pub fn live_allocations(&self) -> usize {
        self.heap.read().live.len()
    }

    /// Allocate `bytes`, zero-filled; first fit, at a multiple of
    /// [`GM_ALIGN`]. Exactly `bytes` are accessible: the rounding is
    /// padding that every access check refuses.
    ///
    /// # Errors
    /// [`GmError::OutOfMemory`] when no free range is large enough.
    pub fn alloc(&self, bytes: u64) -> Result<u64, GmError> {
        self.take(bytes, false)
    }

    /// [`Gm::alloc`], returned as the [`KnownArea`] it is (for the
    /// [`Known`] set of the task it is made for).
    ///
    /// # Errors
    /// As for [`Gm::alloc`].
    pub fn alloc_known(&self, bytes: u64) -> Result<KnownArea, GmError> {
        let start = self.take(bytes, false)?;
        Ok(KnownArea(GmArea {
            start,
            end: start + bytes,
        }))
    }

    /// Allocate a [`Reserved`] region: zero-filled, readable by anyone,
    /// writable only through the returned capability.
    ///
    /// # Errors
    /// As for [`Gm::alloc`].
    pub fn reserve(&self, bytes: u64) -> Result<Reserved, GmError> {
        let base = self.take(bytes, true)?;
        Ok(Reserved { base, len: bytes })
    }

    fn take(&self, bytes: u64, reserved: bool) -> Result<u64, GmError> {
        let mut h = self.heap.write();
        let len = bytes.max(1).div_ceil(GM_ALIGN).checked_mul(GM_ALIGN);
        let found = len.and_then(|len| {
            let start = h.take_quick(len).or_else(|| h.take_first_fit(len));
            start.map(|s| (s, len))
        });
        let Some((start, len)) = found else {
            // The figures count every free byte, cached ones included.
            h.flush_quick();
            return Err(GmError::OutOfMemory {
                requested: bytes,
                free: h.free.values().sum(),
                largest: h.free.values().copied().max().unwrap_or(0),
                capacity: self.size,
            });
        };
        h.live.insert(
            start,
            Alloc {
                len,
                requested: bytes,
                reserved,
            },
        );
        h.used += len;
        h.peak = h.peak.max(h.used);
        // Only bytes some earlier allocation held can be non-zero.
        let dirty = h.clean_from.saturating_sub(start).min(len);
        h.clean_from = h.clean_from.max(start + len);
        drop(h);
        // Fresh allocations read as zero, like calloc.
        self.mem.zero(self.offset(start), dirty as usize);
        // Bytes no allocation held before are backed now, by the thread
        // that allocates, not at a kernel's first write (perf, stop 25: a
        // flood's workers spent ~7 % of their time in page faults on the
        // output tensor allocated before the run).
        self.mem
            .populate(self.offset(start + dirty), (len - dirty) as usize);
        Ok(start)
    }

    /// Return an allocation made by [`Gm::alloc`] to the free list
    /// (coalescing neighbours).
    ///
    /// # Errors
    /// [`GmError::BadFree`] when `addr` is not the start of a live
    /// allocation (reserved regions go back through [`Gm::release`]).
    pub fn free(&self, addr: u64) -> Result<(), GmError> {
        self.give_back(addr, false)?;
        self.known_epoch.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// [`Gm::free`] by an owner that knows no dispatch holds the
    /// allocation in a [`Known`] set — the runtime, freeing a buffer when
    /// its last holder (the scope or the last task using it) lets go. It
    /// leaves every [`Known`] set valid.
    ///
    /// # Errors
    /// As for [`Gm::free`].
    pub fn free_unheld(&self, addr: u64) -> Result<(), GmError> {
        self.give_back(addr, false)
    }

    /// Counts the frees that may end an allocation a [`Known`] set holds;
    /// read it before checking the set's areas.
    #[inline]
    pub fn known_epoch(&self) -> u64 {
        self.known_epoch.load(Ordering::Acquire)
    }

    /// Return a reserved region.
    ///
    /// # Errors
    /// [`GmError::BadFree`] when the region is not live in this GM.
    pub fn release(&self, region: Reserved) -> Result<(), GmError> {
        self.give_back(region.base, true)?;
        self.known_epoch.fetch_add(1, Ordering::Release);
        Ok(())
    }

    fn give_back(&self, addr: u64, reserved: bool) -> Result<(), GmError> {
        let mut h = self.heap.write();
        // One search of the live map in the usual case (a valid free).
        let len = match h.live.remove(&addr) {
            Some(a) if a.reserved == reserved => a.len,
            Some(a) => {
                h.live.insert(addr, a);
                return Err(GmError::BadFree(addr));
            }
            None => return Err(GmError::BadFree(addr)),
        };
        h.used -= len;
        h.put_quick(addr, len);
        self.frees.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Offset of `addr` in the mapping (`addr` is inside it).
    fn offset(&self, addr: u64) -> usize {
        (addr - self.base) as usize
    }

    /// The allocation holding `[addr, addr+len)` (`len > 0`); for a write,
    /// refused when it is reserved. Returns the allocation's base.
    fn locate(&self, addr: u64, len: u64, write: bool) -> KResult<u64> {
        self.locate_alloc(addr, len, write).map(|(base, _)| base)
    }

    /// [`Gm::locate`], without the lookup when a valid `known` set holds
    /// the bytes (its areas are never reserved).
    #[inline]
    fn locate_known(&self, addr: u64, len: u64, write: bool, known: &Known) -> KResult<u64> {
        match known.base_of(self, addr, len) {
            Some(base) => Ok(base),
            None => self.locate(addr, len, write),
        }
    }

    /// [`Gm::locate`], with the allocation found.
    fn locate_alloc(&self, addr: u64, len: u64, write: bool) -> KResult<(u64, Alloc)> {
        let (base, a) = self.heap.read().find(addr, len)?;
        if write && a.reserved {
            return Err(KernelError::GmReserved {
                addr,
                len,
                area: base,
                area_len: a.requested,
            });
        }
        Ok((base, a))
    }

    /// Check that `[addr, addr+len)` may be read: it lies inside the
    /// requested bytes of one live allocation.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] naming the address and the
    /// allocation the access missed.
    pub fn check(&self, addr: u64, len: u64) -> KResult<()> {
        self.locate(addr, len, false).map(|_| ())
    }

    /// Check that `[addr, addr+len)` may be written: as [`Gm::check`], and
    /// not in a [`Reserved`] region.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] or [`KernelError::GmReserved`].
    pub fn check_write(&self, addr: u64, len: u64) -> KResult<()> {
        self.locate(addr, len, true).map(|_| ())
    }

    /// Check a view: its [`ChipTensor::byte_span`], computed from its own
    /// shape, strides and offset, must lie inside one live allocation
    /// (and outside reserved regions when `write`). An empty view passes.
    ///
    /// # Errors
    /// [`KernelError::View`] for a span that overflows, else as
    /// [`Gm::check_write`].
    pub fn check_view(&self, view: &ChipTensor, write: bool) -> KResult<ByteSpan> {
        let span = view.byte_span()?;
        if !span.is_empty() {
            self.locate(span.start, span.len(), write)?;
        }
        Ok(span)
    }

    /// [`Gm::check_view`] for a caller that checks many views of few
    /// allocations (the orchestrator, twice per submit): a span inside the
    /// allocation `last` found, while no allocation was freed since, needs
    /// no lookup under the allocator lock. Same result as `check_view`
    /// (a unit test compares them); `last` is updated on a lookup.
    ///
    /// Measured (stop 22, `flood`): 139 → ~20 instructions per check.
    ///
    /// # Errors
    /// As for [`Gm::check_view`].
    pub fn check_view_near(
        &self,
        view: &ChipTensor,
        write: bool,
        last: &mut LastAlloc,
    ) -> KResult<ByteSpan> {
        let span = view.byte_span()?;
        if span.is_empty() {
            return Ok(span);
        }
        let frees = self.frees.load(Ordering::Acquire);
        let (start, len) = (span.start, span.len());
        if last.frees == Some(frees) && last.area.contains(start, len) && !(write && last.reserved)
        {
            return Ok(span);
        }
        let (base, a) = self.locate_alloc(start, len, write)?;
        *last = LastAlloc {
            area: GmArea {
                start: base,
                end: base + a.requested,
            },
            reserved: a.reserved,
            frees: Some(frees),
        };
        Ok(span)
    }

    /// The whole live allocation holding `[addr, addr+len)`, as an area
    /// for lock-free reads ([`Gm::read_in`]).
    ///
    /// # Errors
    /// As for [`Gm::check`].
    pub fn area(&self, addr: u64, len: u64) -> KResult<GmArea> {
        let (base, a) = self.heap.read().find(addr, len)?;
        Ok(GmArea {
            start: base,
            end: base + a.requested,
        })
    }

    /// True when `[addr, addr+len)` lies inside the mapping.
    #[inline]
    fn mapped(&self, addr: u64, len: u64) -> bool {
        addr >= self.base
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.base + self.size)
    }

    /// Copy the bytes at `addr` out of GM, checked against the mapping
    /// only: the dump's capture of a dense view, whose span the caller
    /// worked out once per layout, where [`Gm::gather_prefix`] would work
    /// out the span and the runs again for every capture. That the bytes
    /// lie in a live allocation is the caller's promise, as for
    /// `gather_prefix`; kernels cannot reach this.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] when the bytes leave the mapping
    /// (`dst` unchanged).
    #[inline]
    pub fn read_mapped(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        let len = dst.len() as u64;
        if !self.mapped(addr, len) {
            return Err(KernelError::GmOutOfBounds {
                addr,
                len,
                near: None,
            });
        }
        self.mem.load(self.offset(addr), dst);
        Ok(())
    }

    /// Copy bytes out of GM without the allocator lock when they lie in
    /// `area`; otherwise exactly as [`Gm::read`].
    ///
    /// # Errors
    /// As for [`Gm::read`].
    #[inline]
    pub fn read_in(&self, area: &GmArea, addr: u64, dst: &mut [u8]) -> KResult<()> {
        let len = dst.len() as u64;
        if area.contains(addr, len) && self.mapped(addr, len) {
            match <&mut [u8; 8]>::try_from(&mut *dst) {
                Ok(word) if addr.is_multiple_of(8) => *word = self.mem.load_word(self.offset(addr)),
                _ => self.mem.load(self.offset(addr), dst),
            }
            return Ok(());
        }
        self.read(addr, dst)
    }

    /// Write into a reserved region, checked against that region only.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] when the bytes leave the region.
    pub fn write_reserved(&self, region: &Reserved, addr: u64, src: &[u8]) -> KResult<()> {
        let len = src.len() as u64;
        if !region.area().contains(addr, len) || !self.mapped(addr, len) {
            return Err(region.miss(addr, len));
        }
        self.mem.store(self.offset(addr), src);
        Ok(())
    }

    /// Words `[addr, addr + 8·words)` of a reserved region, checked once
    /// against that region only, to be stored one by one
    /// ([`ReservedWords::store`]): a dispatch payload rewritten in place,
    /// where a few words change per dispatch.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] when the words leave the region or
    /// `addr` is not a multiple of 8.
    #[inline]
    pub fn reserved_words<'a>(
        &'a self,
        region: &'a Reserved,
        addr: u64,
        words: usize,
    ) -> KResult<ReservedWords<'a>> {
        let len = (words as u64).checked_mul(8);
        let fits =
            len.is_some_and(|len| region.area().contains(addr, len) && self.mapped(addr, len));
        if !fits || !addr.is_multiple_of(8) {
            return Err(region.miss(addr, len.unwrap_or(u64::MAX)));
        }
        Ok(ReservedWords {
            mem: &self.mem,
            off: self.offset(addr),
            words,
        })
    }

    /// Copy bytes out of GM.
    ///
    /// # Errors
    /// When the range is not inside a live allocation's requested bytes.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        if !dst.is_empty() {
            self.locate(addr, dst.len() as u64, false)?;
            self.mem.load(self.offset(addr), dst);
        }
        Ok(())
    }

    /// Copy bytes into GM.
    ///
    /// # Errors
    /// When the range is not inside a live allocation's requested bytes,
    /// or lies in a reserved region.
    pub fn write(&self, addr: u64, src: &[u8]) -> KResult<()> {
        self.write_to(addr, src).map(|_| ())
    }

    /// [`Gm::write`], recording the run in `log` (for the race check).
    ///
    /// # Errors
    /// As for [`Gm::write`] (nothing is logged).
    pub fn write_logged(&self, addr: u64, src: &[u8], log: &mut WriteLog) -> KResult<()> {
        if let Some(buffer) = self.write_to(addr, src)? {
            log.push(buffer, addr, addr + src.len() as u64);
        }
        Ok(())
    }

    /// Checked write; the allocation written (`None` for no bytes).
    fn write_to(&self, addr: u64, src: &[u8]) -> KResult<Option<u64>> {
        if src.is_empty() {
            return Ok(None);
        }
        let buffer = self.locate(addr, src.len() as u64, true)?;
        self.mem.store(self.offset(addr), src);
        Ok(Some(buffer))
    }

    /// Read one little-endian u64.
    ///
    /// # Errors
    /// When the 8 bytes are not inside a live allocation.
    pub fn read_u64(&self, addr: u64) -> KResult<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Write one little-endian u64.
    ///
    /// # Errors
    /// As for [`Gm::write`].
    pub fn write_u64(&self, addr: u64, v: u64) -> KResult<()> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Check a view for an access with a host buffer of `len` bytes, then
    /// call `f(allocation, mapping_offset, host_offset, bytes)` for each
    /// contiguous run in row-major order (none for an empty view).
    ///
    /// Every run lies inside the checked span by construction: the span and
    /// the runs come from the same shape, strides and offset.
    fn view_runs(
        &self,
        view: &ChipTensor,
        len: usize,
        write: bool,
        known: &Known,
        mut f: impl FnMut(u64, usize, usize, usize),
    ) -> KResult<()> {
        let span = view.byte_span()?;
        if len as u64 != view.nbytes() {
            return Err(KernelError::msg(format!(
                "{} of a {}-byte view with a {len}-byte buffer",
                if write { "scatter" } else { "gather" },
                view.nbytes()
            )));
        }
        if span.is_empty() {
            return Ok(());
        }
        let buffer = self.locate_known(span.start, span.len(), write, known)?;
        let es = view.dtype.size() as u64;
        let at = self.offset(span.start) as u64;
        let mut pos = 0usize;
        view.for_each_run(|off, n| {
            let bytes = (n * es) as usize;
            f(
                buffer,
                (at + (off - view.start_offset) * es) as usize,
                pos,
                bytes,
            );
            pos += bytes;
        });
        Ok(())
    }

    /// Gather a view row-major into `dst` (`dst.len()` must be `view.nbytes()`).
    ///
    /// # Errors
    /// [`KernelError::View`] for a view whose span overflows;
    /// [`KernelError::GmOutOfBounds`] when its span is not inside a live
    /// allocation; a message when `dst` has the wrong length.
    pub fn gather(&self, view: &ChipTensor, dst: &mut [u8]) -> KResult<()> {
        self.gather_with(view, dst, &Known::NONE)
    }

    /// [`Gm::gather`] of a dispatch whose tensors' allocations are `known`.
    ///
    /// # Errors
    /// As for [`Gm::gather`].
    pub fn gather_with(&self, view: &ChipTensor, dst: &mut [u8], known: &Known) -> KResult<()> {
        if let Some(c) = Columns::of(view) {
            return self.gather_columns(view, c, dst, known);
        }
        self.view_runs(view, dst.len(), false, known, |_, off, pos, n| {
            self.mem.load(off, &mut dst[pos..pos + n]);
        })
    }

    /// [`Gm::gather`] of a column-major view ([`Columns`]): each column is
    /// contiguous in GM, so it is read in one copy and spread into the
    /// row-major output on the host, instead of one GM access per element.
    fn gather_columns(
        &self,
        view: &ChipTensor,
        c: Columns,
        dst: &mut [u8],
        known: &Known,
    ) -> KResult<()> {
        let span = view.byte_span()?;
        if dst.len() as u64 != view.nbytes() {
            return Err(KernelError::msg(format!(
                "gather of a {}-byte view with a {}-byte buffer",
                view.nbytes(),
                dst.len()
            )));
        }
        self.locate_known(span.start, span.len(), false, known)?;
        let es = view.dtype.size();
        let first = self.offset(span.start);
        let mut buf = [0u8; 2048];
        let chunk = buf.len() / es;
        for j in 0..c.cols {
            let col = first + j * c.col_stride * es;
            for i0 in (0..c.rows).step_by(chunk) {
                let n = chunk.min(c.rows - i0);
                let part = &mut buf[..n * es];
                self.mem.load(col + i0 * es, part);
                for (i, e) in part.chunks_exact(es).enumerate() {
                    let at = ((i0 + i) * c.cols + j) * es;
                    dst[at..at + es].copy_from_slice(e);
                }
            }
        }
        Ok(())
    }

    /// Scatter row-major `src` into a view (inverse of [`Gm::gather`]).
    ///
    /// # Errors
    /// As for [`Gm::gather`], and [`KernelError::GmReserved`].
    pub fn scatter(&self, view: &ChipTensor, src: &[u8]) -> KResult<()> {
        self.scatter_logged(view, src, &mut WriteLog::new())
    }

    /// [`Gm::scatter`], recording every run written in `log`.
    ///
    /// # Errors
    /// As for [`Gm::scatter`] (nothing written, nothing logged).
    pub fn scatter_logged(&self, view: &ChipTensor, src: &[u8], log: &mut WriteLog) -> KResult<()> {
        self.scatter_with(view, src, log, &Known::NONE)
    }

    /// [`Gm::scatter_logged`] of a dispatch whose tensors' allocations are
    /// `known`.
    ///
    /// # Errors
    /// As for [`Gm::scatter`].
    pub fn scatter_with(
        &self,
        view: &ChipTensor,
        src: &[u8],
        log: &mut WriteLog,
        known: &Known,
    ) -> KResult<()> {
        self.view_runs(view, src.len(), true, known, |buffer, off, pos, n| {
            self.mem.store(off, &src[pos..pos + n]);
            let start = self.base + off as u64;
            log.push(buffer, start, start + n as u64);
        })
    }

    /// Fill `dst` with the first `dst.len()` bytes of a view, gathered
    /// row-major (all of them when `dst.len()` is the view's size): the
    /// dump's hot path, without the allocator lock, straight into the
    /// caller's buffer (a dump arena the disk then reads as it is). Every
    /// byte of `dst` is written — the view's, or zero past a view with no
    /// elements — so a reused buffer never shows an earlier capture. The
    /// view's span (computed from its shape, strides and offset,
    /// overflow-checked) must lie inside the mapping; that it lies in a
    /// live allocation is the caller's promise — the runtime checks every
    /// task's views at submission and keeps their buffers alive until the
    /// dump has read them. Kernels cannot reach this (their GM handle is
    /// checked).
    ///
    /// # Errors
    /// When the span overflows or leaves the mapping, or `dst` is longer
    /// than the view (`dst` unchanged).
    pub fn gather_prefix(&self, view: &ChipTensor, dst: &mut [u8]) -> KResult<()> {
        let span = view.byte_span()?;
        if !span.is_empty() && !self.mapped(span.start, span.len()) {
            return Err(KernelError::GmOutOfBounds {
                addr: span.start,
                len: span.len(),
                near: None,
            });
        }
        if dst.len() as u64 > view.nbytes() {
            return Err(KernelError::msg(format!(
                "gather of {} bytes from a {}-byte view",
                dst.len(),
                view.nbytes()
            )));
        }
        let es = view.dtype.size() as u64;
        let mut pos = 0;
        view.for_each_run(|off, n| {
            let n = ((n * es) as usize).min(dst.len() - pos);
            if n > 0 {
                let at = self.offset(view.addr + off * es);
                self.mem.load(at, &mut dst[pos..pos + n]);
                pos += n;
            }
        });
        dst[pos..].fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_core::DType;

    #[test]
    fn alloc_free_coalesce_and_bounds() {
        let gm = Gm::new(4096).unwrap();
        let a = gm.alloc(100).unwrap();
        let b = gm.alloc(1000).unwrap();
        let c = gm.alloc(64).unwrap();
        assert_eq!(b, a + 128);
        assert!(gm.alloc(4096).is_err());
        gm.free(b).unwrap();
        gm.free(a).unwrap();
        assert_eq!(gm.alloc(1100).unwrap(), a, "a and b coalesced");
        assert_eq!(gm.free(a + 1), Err(GmError::BadFree(a + 1)));
        gm.check(c, 64).unwrap();
        assert!(matches!(
            gm.check(c + 60, 8),
            Err(KernelError::GmOutOfBounds { .. })
        ));
        assert!(
            gm.check(gm.base() + 4000, 1).is_err(),
            "free bytes are not accessible"
        );
        assert!(gm.check(u64::MAX - 2, 8).is_err());
        assert!(
            gm.alloc(u64::MAX).is_err(),
            "rounding overflow is out of memory"
        );
        gm.free(c).unwrap();
        gm.free(a).unwrap();
        assert_eq!(gm.used(), 0);
        assert_eq!(
            gm.alloc(4096).unwrap(),
            gm.base(),
            "everything coalesced back"
        );
    }

    #[test]
    fn only_the_requested_bytes_are_accessible() {
        let gm = Gm::new(4096).unwrap();
        let a = gm.alloc(60).unwrap();
        gm.write(a, &[1; 60]).unwrap();
        let e = gm.read(a, &mut [0u8; 61]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("global memory access out of bounds: 61 bytes at 0x{a:016x} overrun the allocation at 0x{a:016x} (60 bytes requested) by 1 bytes")
        );
        let e = gm.write(a + 60, &[0]).unwrap_err();
        assert!(e.to_string().contains("start 0 bytes past the end"), "{e}");
        let e = gm.read(gm.base() - 8, &mut [0u8; 4]).unwrap_err();
        assert!(
            e.to_string().contains("not inside any live allocation"),
            "{e}"
        );
        assert_eq!(gm.alloc(0).map(|z| gm.check(z, 1).is_err()), Ok(true));
    }

    #[test]
    fn a_freed_block_goes_to_the_next_allocation_of_its_size_class() {
        let gm = Gm::new(1 << 16).unwrap();
        let low = gm.alloc(4096).unwrap();
        let a = gm.alloc(100).unwrap();
        let _b = gm.alloc(64).unwrap();
        gm.free(low).unwrap();
        gm.write(a, &[0xAB; 100]).unwrap();
        gm.free(a).unwrap();
        // 70 and 100 bytes both take 128: the cached block comes back,
        // not the first fit at `low`, and it reads zero.
        let c = gm.alloc(70).unwrap();
        assert_eq!(c, a);
        let mut got = [1u8; 70];
        gm.read(c, &mut got).unwrap();
        assert_eq!(got, [0u8; 70]);
        // Only the 70 requested bytes are accessible, as for any block.
        assert!(gm.check(c + 64, 6).is_ok());
        assert!(matches!(
            gm.check(c + 64, 7),
            Err(KernelError::GmOutOfBounds { .. })
        ));
        assert!(gm.write(c + 70, &[1]).is_err(), "the old size is gone");
        assert!(gm.free(a + 64).is_err());
    }

    #[test]
    fn cached_blocks_are_never_lost_to_a_larger_allocation() {
        let gm = Gm::new(1 << 16).unwrap();
        let blocks: Vec<u64> = (0..(1 << 16) / 256)
            .map(|_| gm.alloc(256).unwrap())
            .collect();
        assert!(gm.alloc(1).is_err(), "full");
        for b in blocks.iter().step_by(2) {
            gm.free(*b).unwrap();
        }
        // Half the memory is free in 256-byte holes: the error says so.
        match gm.alloc(512) {
            Err(GmError::OutOfMemory { free, largest, .. }) => {
                assert_eq!((free, largest), (1 << 15, 256));
            }
            other => panic!("expected out of memory, got {other:?}"),
        }
        for b in blocks.iter().skip(1).step_by(2) {
            gm.free(*b).unwrap();
        }
        assert_eq!(gm.used(), 0);
        assert_eq!(gm.alloc(1 << 16).unwrap(), gm.base(), "all coalesced");
    }

    /// Resident bytes of this process (Linux `/proc/self/statm`).
    fn resident_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    #[test]
    fn a_fresh_allocation_is_backed_before_it_is_written_and_reads_zero() {
        const MIB: u64 = 1 << 20;
        let gm = Gm::new(64 * MIB).unwrap();
        let before = resident_bytes();
        let a = gm.alloc(48 * MIB).unwrap();
        let grew = resident_bytes().saturating_sub(before);
        // Other tests of this binary allocate too: a wide margin.
        assert!(grew >= 32 * MIB, "resident grew by {} MiB", grew / MIB);
        let mut got = vec![1u8; 4096];
        gm.read(a + 40 * MIB, &mut got).unwrap();
        assert!(got.iter().all(|&b| b == 0));
    }

    #[test]
    fn freed_and_reused_memory_reads_zero() {
        let gm = Gm::new(4096).unwrap();
        let a = gm.alloc(256).unwrap();
        gm.write(a, &[0xFF; 256]).unwrap();
        gm.free(a).unwrap();
        let b = gm.alloc(200).unwrap();
        assert_eq!(a, b);
        let mut got = [1u8; 200];
        gm.read(b, &mut got).unwrap();
        assert_eq!(got, [0u8; 200]);
    }

    #[test]
    fn reserved_words_are_checked_once_against_their_region_and_store_little_endian() {
        let gm = Gm::new(4096).unwrap();
        let user = gm.alloc(64).unwrap();
        let r = gm.reserve(100).unwrap();
        // 12 words fit in 100 bytes, 13 do not; unaligned and overflowing
        // spans and another allocation are refused, naming the region.
        let w = gm.reserved_words(&r, r.base(), 12).unwrap();
        for (addr, words) in [
            (r.base(), 13),
            (r.base() + 4, 1),
            (r.base(), usize::MAX),
            (user, 1),
        ] {
            match gm.reserved_words(&r, addr, words) {
                Err(KernelError::GmOutOfBounds { addr: a, near, .. }) => {
                    assert_eq!(a, addr);
                    assert!(near.is_some_and(|n| n.base == r.base() && n.reserved));
                }
                other => panic!("{addr:#x} x {words}: {other:?}"),
            }
        }
        w.store(11, 0x0807_0605_0403_0201);
        w.store(0, u64::MAX);
        let mut b = [0u8; 8];
        gm.read(r.base() + 88, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(gm.read_u64(r.base()).unwrap(), u64::MAX);
        assert_eq!(gm.read_u64(r.base() + 8).unwrap(), 0, "untouched");
        let past = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.store(12, 1)));
        assert!(
            past.is_err(),
            "a word past the span panics, touching nothing"
        );
        gm.read(r.base() + 96, &mut b[..4]).unwrap();
        assert_eq!(b[..4], [0; 4]);
    }

    #[test]
    fn reserved_regions_are_read_only_for_everyone_but_their_holder() {
        let gm = Gm::new(4096).unwrap();
        let user = gm.alloc(64).unwrap();
        let r = gm.reserve(100).unwrap();
        let e = gm.write(r.base(), &[1]).unwrap_err();
        assert!(matches!(e, KernelError::GmReserved { .. }), "{e}");
        gm.write_reserved(&r, r.base() + 96, &[1, 2, 3, 4]).unwrap();
        assert!(gm.write_reserved(&r, r.base() + 97, &[0; 4]).is_err());
        assert!(
            gm.write_reserved(&r, user, &[0; 4]).is_err(),
            "not its region"
        );
        assert_eq!(gm.read_u64(r.base() + 92).unwrap() >> 32, 0x0403_0201);
        let view = ChipTensor::contiguous(r.base(), &[4], DType::Float32);
        assert!(gm.scatter(&view, &[0; 16]).is_err());
        assert!(gm.check_view(&view, false).is_ok());
        assert!(gm.check_view(&view, true).is_err());
        assert_eq!(gm.free(r.base()), Err(GmError::BadFree(r.base())));
        let area = r.area();
        let mut b = [0u8; 4];
        gm.read_in(&area, r.base() + 96, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        gm.release(r).unwrap();
        assert_eq!(gm.live_allocations(), 1);
    }

    #[test]
    fn racing_writers_readers_and_allocator_churn_stay_word_atomic() {
        // Two cores store different patterns into the same view while a
        // third reads it and the allocator churns next to it. Nothing here
        // is ordered, which is the point: every byte read is one some
        // writer wrote, and every aligned word comes whole from one writer.
        let gm = Gm::new(1 << 16).unwrap();
        let a = gm.alloc(4096).unwrap();
        let view = ChipTensor::contiguous(a, &[64, 16], DType::Float32);
        let whole_words = |b: &[u8]| {
            b.chunks_exact(8)
                .all(|w| w.iter().all(|&x| x == w[0]) && [0, 0x11, 0x22].contains(&w[0]))
        };
        std::thread::scope(|s| {
            for v in [0x11u8, 0x22] {
                let (gm, view) = (&gm, &view);
                s.spawn(move || {
                    let src = vec![v; 4096];
                    for _ in 0..300 {
                        gm.scatter(view, &src).unwrap();
                    }
                });
            }
            let (gm, view) = (&gm, &view);
            s.spawn(move || {
                let mut dst = vec![0u8; 4096];
                for _ in 0..300 {
                    gm.gather(view, &mut dst).unwrap();
                    assert!(whole_words(&dst), "a torn word");
                }
            });
            s.spawn(move || {
                for i in 0..300u64 {
                    let b = gm.alloc(64 + i % 1000).unwrap();
                    gm.write(b, &[0xEE; 64]).unwrap();
                    gm.free(b).unwrap();
                }
            });
        });
        let mut end = vec![0u8; 4096];
        gm.read(a, &mut end).unwrap();
        assert!(whole_words(&end) && !end.contains(&0));
    }

    /// One step of [`check_view_near_agrees_with_check_view`].
    #[derive(Debug, Clone)]
    enum Step {
        Alloc(u64),
        Reserve(u64),
        /// Free the live allocation at this index (mod their count).
        Free(usize),
        /// Check a `[1, len]` u8 view at `start` bytes into allocation
        /// `which` (mod count), for a write or not.
        Check(usize, u64, u32, bool),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            (1u64..300).prop_map(Step::Alloc),
            (1u64..300).prop_map(Step::Reserve),
            any::<usize>().prop_map(Step::Free),
            (any::<usize>(), 0u64..320, 1u32..80, any::<bool>())
                .prop_map(|(w, s, l, wr)| Step::Check(w, s, l, wr)),
        ]
    }

    proptest::proptest! {
        /// The cached check gives what the plain one gives, through any
        /// sequence of allocations, reservations and frees (a freed block's
        /// bytes reused by a smaller allocation included).
        #[test]
        fn check_view_near_agrees_with_check_view(steps in proptest::collection::vec(step(), 1..80)) {
            let gm = Gm::new(1 << 16).unwrap();
            let mut live: Vec<(u64, Option<Reserved>)> = Vec::new();
            let mut last = LastAlloc::default();
            for s in steps {
                match s {
                    Step::Alloc(n) => live.extend(gm.alloc(n).ok().map(|a| (a, None))),
                    Step::Reserve(n) => live.extend(gm.reserve(n).ok().map(|r| (r.base, Some(r)))),
                    Step::Free(i) if !live.is_empty() => {
                        let (a, r) = live.swap_remove(i % live.len());
                        match r {
                            Some(r) => gm.release(r).unwrap(),
                            None => gm.free(a).unwrap(),
                        }
                    }
                    Step::Free(_) => {}
                    Step::Check(w, start, len, write) => {
                        let base = live.get(w % live.len().max(1)).map_or(gm.base(), |l| l.0);
                        let v = ChipTensor::contiguous(base + start, &[1, len], DType::Uint8);
                        let plain = gm.check_view(&v, write).map_err(|e| e.to_string());
                        let near = gm.check_view_near(&v, write, &mut last).map_err(|e| e.to_string());
                        proptest::prop_assert_eq!(near, plain);
                    }
                }
            }
        }

        /// Column-major views (transposes) take the column-at-a-time path;
        /// it must gather exactly what element-by-element reads give.
        #[test]
        fn column_views_gather_like_element_reads(
            rows in 2u32..40, cols in 2u32..40, pad in 0u32..5, off in 0u64..7,
            code in proptest::sample::select(vec![0u8, 5, 6, 7]),
        ) {
            let dtype = DType::from_code(code).unwrap();
            let es = dtype.size() as u64;
            let stride = rows + pad;
            let bytes = (off + u64::from(stride) * u64::from(cols)) * es;
            let gm = Gm::new(1 << 20).unwrap();
            let a = gm.alloc(bytes).unwrap();
            let fill: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
            gm.write(a, &fill).unwrap();
            let mut v = ChipTensor::contiguous(a, &[rows, cols], dtype);
            v.strides[..2].copy_from_slice(&[1, stride]);
            v.start_offset = off;
            proptest::prop_assert!(Columns::of(&v).is_some());
            let mut got = vec![0u8; v.nbytes() as usize];
            gm.gather(&v, &mut got).unwrap();
            let mut want = Vec::new();
            for i in 0..u64::from(rows) {
                for j in 0..u64::from(cols) {
                    let at = (off + i + j * u64::from(stride)) * es;
                    want.extend_from_slice(&fill[at as usize..(at + es) as usize]);
                }
            }
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn gather_scatter_strided() {
        let gm = Gm::new(1 << 16).unwrap();
        let a = gm.alloc(4 * 6 * 4).unwrap();
        let t = ChipTensor::contiguous(a, &[4, 6], DType::Float32);
        let vals: Vec<f32> = (0..24).map(|i| i as f32).collect();
        gm.write(a, bytemuck::cast_slice(&vals)).unwrap();
        let v = t.view(&[1, 2], &[2, 3]).unwrap();
        let mut out = vec![0u8; 24];
        gm.gather(&v, &mut out).unwrap();
        let got: &[f32] = bytemuck::cast_slice(&out);
        assert_eq!(got, &[8., 9., 10., 14., 15., 16.]);
        let mut log = WriteLog::new();
        gm.scatter_logged(&v, bytemuck::cast_slice(&[0f32; 6]), &mut log)
            .unwrap();
        assert_eq!(log.runs().len(), 2, "one run per row");
        assert_eq!((log.runs()[0].start, log.runs()[1].end), (a + 32, a + 68));
        assert!(log.runs().iter().all(|r| r.buffer == a));
        let mut all = vec![0u8; 96];
        gm.read(a, &mut all).unwrap();
        let all: &[f32] = bytemuck::cast_slice(&all);
        assert_eq!(all[8], 0.0);
        assert_eq!(all[11], 11.0);
        let mut direct = vec![0u8; 24];
        gm.gather(&v, &mut direct).unwrap();
        for n in [0, 1, 5, 12, 13, 24] {
            let mut prefix = vec![0xEEu8; n];
            gm.gather_prefix(&v, &mut prefix).unwrap();
            assert_eq!(prefix, direct[..n], "the first {n} bytes");
        }
        assert!(
            gm.gather_prefix(&v, &mut [0u8; 25]).is_err(),
            "longer than the view"
        );
        let mut bad = t;
        bad.start_offset = 1; // one element past the 96 requested bytes
        assert!(gm.gather(&bad, &mut [0u8; 96]).is_err());
        let mut wide_cols = t.transpose(0, 1); // [6, 4], strides [1, 6]
        assert!(Columns::of(&wide_cols).is_some());
        wide_cols.strides[1] = 7; // the last column ends past the 96 bytes
        let e = gm.gather(&wide_cols, &mut [0u8; 96]).unwrap_err();
        assert!(matches!(e, KernelError::GmOutOfBounds { .. }), "{e}");
        let mut outside = t;
        outside.start_offset = 1 << 20; // beyond the whole mapping
        let mut out = [1u8; 8];
        assert!(gm.gather_prefix(&outside, &mut out).is_err());
        assert_eq!(out, [1; 8], "a failed gather leaves the buffer as it was");
    }

    /// `read_mapped` reads what a dense view gathers, at any alignment,
    /// and refuses bytes that leave the mapping without touching `dst`.
    #[test]
    fn read_mapped_reads_a_dense_views_bytes_and_stops_at_the_mapping() {
        let gm = Gm::new(4096).unwrap();
        let a = gm.alloc(96).unwrap();
        let bytes: Vec<u8> = (0..96u8).map(|i| i.wrapping_mul(37)).collect();
        gm.write(a, &bytes).unwrap();
        let whole = ChipTensor::contiguous(a, &[4, 6], DType::Float32);
        for (offsets, shape) in [([1u32, 0], [3u32, 6]), ([0, 0], [4, 6]), ([2, 1], [1, 3])] {
            let v = whole.view(&offsets, &shape).unwrap();
            let mut want = vec![0u8; v.nbytes() as usize];
            gm.gather(&v, &mut want).unwrap();
            let mut got = vec![0u8; want.len()];
            gm.read_mapped(v.byte_span().unwrap().start, &mut got)
                .unwrap();
            assert_eq!(got, want, "{shape:?}");
        }
        for (at, n) in [(3u64, 17usize), (1, 1), (0, 96)] {
            let mut got = vec![0u8; n];
            gm.read_mapped(a + at, &mut got).unwrap();
            assert_eq!(got, bytes[at as usize..at as usize + n]);
        }
        let end = gm.base() + 4096;
        let mut out = [1u8; 8];
        assert!(gm.read_mapped(end - 4, &mut out).is_err());
        assert!(gm.read_mapped(u64::MAX - 3, &mut out).is_err());
        assert!(gm.read_mapped(gm.base() - 8, &mut out).is_err());
        assert_eq!(out, [1; 8], "a refused read leaves the buffer as it was");
    }
}
