//! Global memory: one host allocation, device address = host address.

use std::collections::BTreeMap;

use memmap2::MmapMut;
use parking_lot::RwLock;
use simpler_core::{ChipTensor, KResult, KernelError};
use thiserror::Error;

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

#[derive(Debug, Default)]
struct Heap {
    /// Free ranges: start → len.
    free: BTreeMap<u64, u64>,
    /// Live allocations: start → len.
    live: BTreeMap<u64, u64>,
    used: u64,
    peak: u64,
}

/// Simulated global memory.
///
/// Device addresses are host addresses of the mapping's bytes, as in the
/// reference system's simulation. Every access is checked against the live
/// allocations; access is through `&self` so that cores on many threads share
/// one `Gm`. Which core may write which bytes when is the runtime's business:
/// its dependency analysis orders every writer against every other access of
/// the same bytes.
pub struct Gm {
    map: MmapMut,
    base: u64,
    size: u64,
    heap: RwLock<Heap>,
}

// SAFETY: the mapping is only accessed through raw-pointer copies inside
// checked ranges; concurrent accesses to distinct bytes are fine, and the
// runtime orders accesses to the same bytes (see the type's doc).
unsafe impl Sync for Gm {}
// SAFETY: the mapping is an owned anonymous region; moving it is fine.
unsafe impl Send for Gm {}

impl std::fmt::Debug for Gm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gm")
            .field("base", &format_args!("0x{:x}", self.base))
            .field("size", &self.size)
            .finish()
    }
}

impl Gm {
    /// Reserve `size` bytes of GM (lazily committed by the OS).
    ///
    /// # Errors
    /// When the OS refuses the mapping.
    pub fn new(size: u64) -> Result<Gm, GmError> {
        let size = size.max(GM_ALIGN).div_ceil(GM_ALIGN) * GM_ALIGN;
        let mut map = MmapMut::map_anon(size as usize).map_err(|e| GmError::Reserve {
            size,
            msg: e.to_string(),
        })?;
        let base = map.as_mut_ptr() as u64;
        let mut heap = Heap::default();
        heap.free.insert(base, size);
        Ok(Gm {
            map,
            base,
            size,
            heap: RwLock::new(heap),
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

    /// Bytes currently allocated.
    pub fn used(&self) -> u64 {
        self.heap.read().used
    }

    /// Most bytes ever allocated at once.
    pub fn peak(&self) -> u64 {
        self.heap.read().peak
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.heap.read().live.len()
    }

    /// Allocate `bytes` (rounded up to [`GM_ALIGN`]), zero-filled. First fit.
    ///
    /// # Errors
    /// [`GmError::OutOfMemory`] when no free range is large enough.
    pub fn alloc(&self, bytes: u64) -> Result<u64, GmError> {
        let len = bytes.max(1).div_ceil(GM_ALIGN) * GM_ALIGN;
        let mut h = self.heap.write();
        let found = h
            .free
            .iter()
            .find(|(_, &l)| l >= len)
            .map(|(&s, &l)| (s, l));
        let Some((start, flen)) = found else {
            let free = h.free.values().sum();
            let largest = h.free.values().copied().max().unwrap_or(0);
            return Err(GmError::OutOfMemory {
                requested: bytes,
                free,
                largest,
                capacity: self.size,
            });
        };
        h.free.remove(&start);
        if flen > len {
            h.free.insert(start + len, flen - len);
        }
        h.live.insert(start, len);
        h.used += len;
        h.peak = h.peak.max(h.used);
        drop(h);
        // Fresh allocations read as zero, like calloc.
        // SAFETY: [start, start+len) was just taken from the free list, so it
        // lies inside the mapping and no one else holds it.
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, len as usize) };
        Ok(start)
    }

    /// Return an allocation to the free list (coalescing neighbours).
    ///
    /// # Errors
    /// [`GmError::BadFree`] when `addr` is not the start of a live allocation.
    pub fn free(&self, addr: u64) -> Result<(), GmError> {
        let mut h = self.heap.write();
        let len = h.live.remove(&addr).ok_or(GmError::BadFree(addr))?;
        h.used -= len;
        let end = addr + len;
        let mut start = addr;
        if let Some((&ps, &pl)) = h.free.range(..addr).next_back() {
            if ps + pl == addr {
                h.free.remove(&ps);
                start = ps;
            }
        }
        let mut stop = end;
        if let Some(nl) = h.free.remove(&end) {
            stop += nl;
        }
        let len = stop - start;
        h.free.insert(start, len);
        Ok(())
    }

    /// Check that `[addr, addr+len)` lies inside one live allocation.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] naming the address.
    pub fn check(&self, addr: u64, len: u64) -> KResult<()> {
        let oob = || KernelError::GmOutOfBounds { addr, len };
        let end = addr.checked_add(len).ok_or_else(oob)?;
        let h = self.heap.read();
        match h.live.range(..=addr).next_back() {
            Some((&s, &l)) if end <= s + l => Ok(()),
            _ => Err(oob()),
        }
    }

    /// Check that `[addr, addr+len)` lies inside the GM mapping (not
    /// necessarily a live allocation). Lock-free: for the runtime's own
    /// accesses to ranges it validated and keeps alive (payload areas,
    /// views of live tasks), where only memory safety is at stake.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] outside the mapping.
    pub fn check_mapped(&self, addr: u64, len: u64) -> KResult<()> {
        let end = addr.checked_add(len);
        match end {
            Some(end) if addr >= self.base && end <= self.base + self.size => Ok(()),
            _ => Err(KernelError::GmOutOfBounds { addr, len }),
        }
    }

    /// [`Gm::write`] checked only against the mapping ([`Gm::check_mapped`]).
    ///
    /// # Errors
    /// When the range leaves the mapping.
    pub fn write_mapped(&self, addr: u64, src: &[u8]) -> KResult<()> {
        self.check_mapped(addr, src.len() as u64)?;
        // SAFETY: the range is inside the mapping; the caller owns these
        // bytes (see `check_mapped`).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) };
        Ok(())
    }

    /// [`Gm::read`] checked only against the mapping ([`Gm::check_mapped`]).
    ///
    /// # Errors
    /// When the range leaves the mapping.
    pub fn read_mapped(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        self.check_mapped(addr, dst.len() as u64)?;
        // SAFETY: the range is inside the mapping; `dst` is a distinct host buffer.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copy bytes out of GM.
    ///
    /// # Errors
    /// When the range is not inside a live allocation.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        self.check(addr, dst.len() as u64)?;
        // SAFETY: `check` proved the range is inside a live allocation of the
        // mapping; `dst` is a distinct host buffer.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copy bytes into GM.
    ///
    /// # Errors
    /// When the range is not inside a live allocation.
    pub fn write(&self, addr: u64, src: &[u8]) -> KResult<()> {
        self.check(addr, src.len() as u64)?;
        // SAFETY: as in `read`; the runtime orders writers of the same bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) };
        Ok(())
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
    /// When the 8 bytes are not inside a live allocation.
    pub fn write_u64(&self, addr: u64, v: u64) -> KResult<()> {
        self.write(addr, &v.to_le_bytes())
    }

    /// The byte range a view touches: `(first byte, length)`.
    fn view_span(view: &ChipTensor) -> (u64, u64) {
        let es = view.dtype.size() as u64;
        (view.first_byte(), view.extent_elems * es)
    }

    /// Check a view against live allocations and a host buffer of `len`
    /// bytes, then call `f(gm_address, host_offset, bytes)` for each
    /// contiguous run, in row-major order.
    fn view_runs(
        &self,
        view: &ChipTensor,
        len: usize,
        what: &str,
        mut f: impl FnMut(u64, usize, usize),
    ) -> KResult<()> {
        let (first, span) = Self::view_span(view);
        if len as u64 != view.nbytes() {
            return Err(KernelError::msg(format!(
                "{what} of a {}-byte view with a {len}-byte buffer",
                view.nbytes()
            )));
        }
        self.check(first, span)?;
        let es = view.dtype.size() as u64;
        let mut pos = 0usize;
        view.for_each_run(|off, n| {
            let bytes = (n * es) as usize;
            f(view.addr + off * es, pos, bytes);
            pos += bytes;
        });
        Ok(())
    }

    /// Gather a view row-major into `dst` (`dst.len()` must be `view.nbytes()`).
    ///
    /// # Errors
    /// When the view's span is not inside a live allocation, or `dst` has the
    /// wrong length.
    pub fn gather(&self, view: &ChipTensor, dst: &mut [u8]) -> KResult<()> {
        let len = dst.len();
        self.view_runs(view, len, "gather", |addr, pos, bytes| {
            // SAFETY: `view_runs` checked that every run lies inside a live
            // allocation and that the runs exactly cover `dst`.
            unsafe {
                std::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr().add(pos), bytes)
            };
        })
    }

    /// Append a view's bytes, gathered row-major, to `out` (one copy, no
    /// zero-fill first: the dump's hot path). Checked against the mapping
    /// only ([`Gm::check_mapped`]): for views the runtime validated at
    /// submission and whose buffers it keeps alive.
    ///
    /// # Errors
    /// When the view's span leaves the mapping (`out` unchanged).
    pub fn gather_append(&self, view: &ChipTensor, out: &mut Vec<u8>) -> KResult<()> {
        let (first, span) = Self::view_span(view);
        self.check_mapped(first, span)?;
        let es = view.dtype.size() as u64;
        out.reserve(view.nbytes() as usize);
        view.for_each_run(|off, n| {
            // SAFETY: every run lies inside the view's span, which
            // `check_mapped` proved is inside the mapping.
            let run = unsafe {
                std::slice::from_raw_parts((view.addr + off * es) as *const u8, (n * es) as usize)
            };
            out.extend_from_slice(run);
        });
        Ok(())
    }

    /// Scatter row-major `src` into a view (inverse of [`Gm::gather`]).
    ///
    /// # Errors
    /// As for [`Gm::gather`].
    pub fn scatter(&self, view: &ChipTensor, src: &[u8]) -> KResult<()> {
        self.view_runs(view, src.len(), "scatter", |addr, pos, bytes| {
            // SAFETY: as in `gather`, with the roles of the buffers swapped.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(pos), addr as *mut u8, bytes) };
        })
    }
}

impl Drop for Gm {
    fn drop(&mut self) {
        // Keep `map` alive until here; nothing else to release.
        let _ = self.map.len();
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
        gm.scatter(&v, bytemuck::cast_slice(&[0f32; 6])).unwrap();
        let mut all = vec![0u8; 96];
        gm.read(a, &mut all).unwrap();
        let all: &[f32] = bytemuck::cast_slice(&all);
        assert_eq!(all[8], 0.0);
        assert_eq!(all[11], 11.0);
        let mut appended = vec![7u8];
        gm.gather_append(&v, &mut appended).unwrap();
        let mut direct = vec![0u8; 24];
        gm.gather(&v, &mut direct).unwrap();
        assert_eq!(appended[0], 7);
        assert_eq!(&appended[1..], &direct[..]);
        let past = t.view(&[0, 0], &[4, 6]).unwrap();
        let mut bad = past;
        bad.start_offset = 16; // 64 bytes past: beyond the 128-byte (rounded) allocation
        assert!(gm.gather(&bad, &mut [0u8; 96]).is_err());
        let mut outside = past;
        outside.start_offset = 1 << 20; // beyond the whole mapping
        let mut out = vec![1u8];
        assert!(gm.gather_append(&outside, &mut out).is_err());
        assert_eq!(out, [1], "a failed gather leaves the buffer as it was");
        assert!(gm.check_mapped(gm.base() + 65535, 1).is_ok());
        assert!(gm.check_mapped(gm.base() + 65535, 2).is_err());
        assert!(gm.check_mapped(gm.base() - 1, 1).is_err());
        assert!(gm.write_mapped(u64::MAX - 1, &[0, 0, 0]).is_err());
    }
}
