//! A simulated core as a kernel sees it.

use std::{panic::Location, sync::Arc};

use simpler_chip::{ArchProfile, BufKind, Gm, Known, LocalBuffers, WriteLog};
use simpler_core::{topology::CoreType, ChipTensor, DType, KResult, KernelError};

use crate::{
    record::{BufRange, InstrRecord, Pipe},
    Tile,
};

/// One AIC or AIV core: its local buffers, a handle to GM, and the
/// instruction recorder. Instructions are methods (see the `instr` modules).
///
/// A `Core` belongs to one thread at a time: the runtime's worker that
/// runs a dispatch on it holds it and lends `&mut Core` to the kernel.
#[derive(Debug)]
pub struct Core {
    id: u32,
    core_type: CoreType,
    gm: Arc<Gm>,
    pub(crate) bufs: LocalBuffers,
    /// GM bytes written since the last `reset` (TSTORE and direct writes).
    writes: WriteLog,
    /// The allocations of this dispatch's tensors, checked when its task
    /// was submitted ([`Core::know`]); empty after a reset.
    known: Known,
    rec: Option<Vec<InstrRecord>>,
    /// A records buffer handed back ([`Core::recycle_records`]): the next
    /// recording starts with its capacity instead of growing from empty
    /// (`--predict` records every dispatch).
    spare: Vec<InstrRecord>,
    /// Scratch space reused by instructions to avoid per-instruction allocation.
    pub(crate) scratch: [Vec<f32>; 3],
}

impl Core {
    /// A core with id `id` of type `core_type`, buffers sized by `arch`.
    pub fn new(id: u32, core_type: CoreType, arch: &ArchProfile, gm: Arc<Gm>) -> Core {
        Core {
            id,
            core_type,
            gm,
            bufs: LocalBuffers::new(arch, core_type),
            writes: WriteLog::new(),
            known: Known::default(),
            rec: None,
            spare: Vec::new(),
            scratch: Default::default(),
        }
    }

    /// Core id (AIC `[0, clusters)`, AIV `[clusters, 3·clusters)`).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// AIC or AIV.
    pub fn core_type(&self) -> CoreType {
        self.core_type
    }

    /// Global memory as a kernel may touch it: every access checked, every
    /// write logged for the race check.
    pub fn gm(&mut self) -> KernelGm<'_> {
        KernelGm {
            gm: &self.gm,
            log: &mut self.writes,
            known: &self.known,
        }
    }

    /// What this core wrote to GM since the last [`Core::reset`].
    pub fn writes(&self) -> &WriteLog {
        &self.writes
    }

    /// Take the write log, leaving an empty one.
    pub fn take_writes(&mut self) -> WriteLog {
        std::mem::take(&mut self.writes)
    }

    /// Reserve a `rows × cols` tile of `dtype` in `buf`.
    ///
    /// # Errors
    /// [`KernelError::LocalBufferOverflow`] when `buf` is full or this core
    /// type has no such buffer; [`KernelError::BadOperand`] when the tile's
    /// byte size overflows.
    pub fn alloc_tile(
        &mut self,
        buf: BufKind,
        rows: u32,
        cols: u32,
        dtype: DType,
    ) -> KResult<Tile> {
        let bytes = (rows as usize)
            .checked_mul(cols as usize)
            .and_then(|n| n.checked_mul(dtype.size()))
            .ok_or_else(|| KernelError::BadOperand {
                instr: "alloc_tile",
                msg: format!(
                    "a {rows}x{cols} {dtype} tile in {}: its size in bytes overflows",
                    buf.name()
                ),
            })?;
        let offset = self.bufs.alloc(buf, bytes)?;
        Ok(Tile {
            buf,
            offset: offset as u32,
            rows,
            cols,
            dtype,
        })
    }

    /// Release every tile and clear the write log (the runtime does this
    /// before each dispatch).
    pub fn reset(&mut self) {
        self.bufs.reset();
        self.writes.clear();
        self.known.clear();
    }

    /// The allocations of the coming dispatch's tensors, checked by the
    /// runtime at submission and kept alive until the task completes
    /// (call after [`Core::reset`]): the dispatch's gathers and scatters
    /// inside them skip the allocator's lookup. Accesses elsewhere, or
    /// after a free that may have ended one of them, are checked in full.
    pub fn know(&mut self, known: &Known) {
        self.known.assign(known);
    }

    /// Bytes in use in `buf`.
    pub fn buffer_used(&self, buf: BufKind) -> usize {
        self.bufs.used(buf)
    }

    /// Start recording instructions (clears earlier records).
    pub fn start_recording(&mut self) {
        let mut v = std::mem::take(&mut self.spare);
        v.clear();
        self.rec = Some(v);
    }

    /// Stop recording and return what was recorded.
    pub fn take_records(&mut self) -> Vec<InstrRecord> {
        self.rec.take().unwrap_or_default()
    }

    /// Give back a buffer [`Core::take_records`] returned, once read: the
    /// next recording reuses its memory (its records are dropped).
    pub fn recycle_records(&mut self, mut v: Vec<InstrRecord>) {
        v.clear();
        self.spare = v;
    }

    /// True while recording.
    pub fn is_recording(&self) -> bool {
        self.rec.is_some()
    }

    /// The bytes of a tile.
    pub fn tile_bytes(&self, t: Tile) -> &[u8] {
        &self.bufs.bytes(t.buf)[t.offset as usize..t.offset as usize + t.bytes()]
    }

    /// The bytes of a tile, mutable (tests and debugging).
    pub fn tile_bytes_mut(&mut self, t: Tile) -> &mut [u8] {
        &mut self.bufs.bytes_mut(t.buf)[t.offset as usize..t.offset as usize + t.bytes()]
    }

    /// Check that a tile lies inside its buffer's allocated part (a tile is
    /// plain data a kernel may build by hand, so its size is checked too).
    pub(crate) fn check_tile(&self, instr: &'static str, t: Tile) -> KResult<()> {
        let end = (t.rows as usize)
            .checked_mul(t.cols as usize)
            .and_then(|n| n.checked_mul(t.dtype.size()))
            .and_then(|n| n.checked_add(t.offset as usize))
            .unwrap_or(usize::MAX);
        if end > self.bufs.used(t.buf) || end > self.bufs.capacity(t.buf) {
            return Err(KernelError::BadOperand {
                instr,
                msg: format!(
                    "tile {}x{} {} at {}+{} is not allocated in {}",
                    t.rows,
                    t.cols,
                    t.dtype,
                    t.buf.name(),
                    t.offset,
                    t.buf.name()
                ),
            });
        }
        Ok(())
    }

    /// Disjoint borrows of GM, the local buffers and the scratch vectors, so
    /// that an instruction can gather from GM straight into a tile.
    pub(crate) fn parts_mut(&mut self) -> (KernelGm<'_>, &mut LocalBuffers, &mut [Vec<f32>; 3]) {
        let gm = KernelGm {
            gm: &self.gm,
            log: &mut self.writes,
            known: &self.known,
        };
        (gm, &mut self.bufs, &mut self.scratch)
    }

    /// Append a record when recording is on. Costs one branch when off.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &mut self,
        mnemonic: &'static str,
        pipe: Pipe,
        reads: [Option<BufRange>; 3],
        write: Option<BufRange>,
        size: u64,
        gm: Option<(u64, u64)>,
        loc: &'static Location<'static>,
    ) {
        if let Some(rec) = &mut self.rec {
            rec.push(InstrRecord {
                mnemonic,
                pipe,
                reads,
                write,
                size,
                gm,
                loc,
            });
        }
    }

    /// Record a VECTOR-pipe instruction writing `dst` (size = its elements).
    #[inline]
    pub(crate) fn record_vector(
        &mut self,
        mnemonic: &'static str,
        reads: [Option<BufRange>; 3],
        dst: Tile,
        loc: &'static Location<'static>,
    ) {
        self.record(
            mnemonic,
            Pipe::Vector,
            reads,
            Some(dst.range()),
            dst.numel() as u64,
            None,
            loc,
        );
    }

    /// Account `n` scalar-unit operations (loop bookkeeping, address math),
    /// so traces show the SCALAR pipe. No functional effect.
    #[track_caller]
    pub fn scalar_ops(&mut self, n: u32) {
        let loc = Location::caller();
        self.record(
            "SCALAR",
            Pipe::Scalar,
            [None; 3],
            None,
            u64::from(n),
            None,
            loc,
        );
    }
}

/// Global memory as a kernel reaches it ([`Core::gm`]).
///
/// Every access is checked against the requested bytes of one live
/// allocation (and writes against the runtime's reserved areas); every
/// write is recorded in the core's [`WriteLog`], which the runtime's race
/// check compares across dispatches that may run at the same time. There
/// is no unchecked path here: the lock-free accessors of [`Gm`] are for
/// the runtime's own, validated views.
#[derive(Debug)]
pub struct KernelGm<'a> {
    gm: &'a Gm,
    log: &'a mut WriteLog,
    known: &'a Known,
}

impl KernelGm<'_> {
    /// Copy bytes out of GM.
    ///
    /// # Errors
    /// [`KernelError::GmOutOfBounds`] naming the address and allocation.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        self.gm.read(addr, dst)
    }

    /// Read one little-endian u64.
    ///
    /// # Errors
    /// As for [`KernelGm::read`].
    pub fn read_u64(&self, addr: u64) -> KResult<u64> {
        self.gm.read_u64(addr)
    }

    /// Gather a view row-major into `dst` (`view.nbytes()` long).
    ///
    /// # Errors
    /// As for [`Gm::gather`].
    pub fn gather(&self, view: &ChipTensor, dst: &mut [u8]) -> KResult<()> {
        self.gm.gather_with(view, dst, self.known)
    }

    /// Copy bytes into GM (logged).
    ///
    /// # Errors
    /// As for [`Gm::write`].
    pub fn write(&mut self, addr: u64, src: &[u8]) -> KResult<()> {
        self.gm.write_logged(addr, src, self.log)
    }

    /// Write one little-endian u64 (logged).
    ///
    /// # Errors
    /// As for [`Gm::write`].
    pub fn write_u64(&mut self, addr: u64, v: u64) -> KResult<()> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Scatter row-major `src` into a view (logged).
    ///
    /// # Errors
    /// As for [`Gm::scatter`].
    pub fn scatter(&mut self, view: &ChipTensor, src: &[u8]) -> KResult<()> {
        self.gm.scatter_with(view, src, self.log, self.known)
    }
}
