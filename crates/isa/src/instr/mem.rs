//! Data movement: TLOAD (GM → L1/UB), TSTORE (UB/L0C → GM), TMOV (L1 → L0A/L0B).

use std::panic::Location;

use simpler_chip::BufKind;
use simpler_core::{ChipTensor, KResult, MAX_DIMS};

use super::{bad, byte_range, convert, describe, same_shape_dtype, scratch_bytes};
use crate::{record::Pipe, Core, Tile};

/// The view as `rows × cols`: rank 1 is one row; for rank ≥ 2 every dim but
/// the last two must be 1.
fn view_rows_cols(instr: &'static str, v: &ChipTensor) -> KResult<(usize, usize)> {
    if v.ndims == 0 || v.ndims as usize > MAX_DIMS {
        return Err(bad(
            instr,
            format!("view has rank {}, must be 1..={MAX_DIMS}", v.ndims),
        ));
    }
    let s = v.shape();
    match *s {
        [c] => Ok((1, c as usize)),
        [ref lead @ .., r, c] => {
            if lead.iter().any(|&d| d != 1) {
                return Err(bad(
                    instr,
                    format!("view shape {s:?}: dims before the last two must be 1"),
                ));
            }
            Ok((r as usize, c as usize))
        }
        [] => unreachable!("rank checked above"),
    }
}

/// The view's `rows × cols` must fit in the tile.
fn check_fits(instr: &'static str, v: &ChipTensor, t: Tile) -> KResult<(usize, usize)> {
    let (vr, vc) = view_rows_cols(instr, v)?;
    if vr > t.rows as usize || vc > t.cols as usize {
        return Err(bad(
            instr,
            format!(
                "view {vr}x{vc} (shape {:?}) does not fit in the {} tile",
                v.shape(),
                describe(t)
            ),
        ));
    }
    Ok((vr, vc))
}

/// GM span of a view, as recorded: (first byte, bytes spanned), computed
/// from its shape and strides (the view was just accessed, so it is valid).
/// Only computed while recording.
fn gm_span(core: &Core, v: &ChipTensor) -> Option<(u64, u64)> {
    if !core.is_recording() {
        return None;
    }
    v.byte_span().ok().map(|s| (s.start, s.len()))
}

impl Core {
    /// TLOAD (MTE2): GM view → tile in L1 or UB. The view (rank ≥ 1; leading
    /// dims of 1 collapse; 1-D = one row) must fit in the tile; it fills the
    /// top-left `vr × vc` corner, the rest is untouched. Same dtype required.
    /// Strided views (sub-views, transposes) are gathered element by element.
    ///
    /// Records size = bytes loaded, GM span = the bytes from the view's first
    /// to its last element (computed from shape and strides).
    ///
    /// # Errors
    /// `BadOperand` for a tile outside L1/UB, a dtype mismatch or a view that
    /// does not fit; `View` for a view whose span overflows; `GmOutOfBounds`
    /// when its span leaves the requested bytes of its allocation.
    #[track_caller]
    pub fn tload(&mut self, dst: Tile, src: &ChipTensor) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TLOAD";
        self.check_operand(I, "dst", dst, &[BufKind::L1, BufKind::Ub])?;
        if src.dtype != dst.dtype {
            return Err(bad(
                I,
                format!(
                    "dtype mismatch: view is {} but dst is {}",
                    src.dtype, dst.dtype
                ),
            ));
        }
        let (vr, vc) = check_fits(I, src, dst)?;
        let es = dst.dtype.size();
        let row = vc * es;
        let nbytes = vr * row;
        let off = dst.offset as usize;
        let (gm, bufs, scratch) = self.parts_mut();
        let tb = bufs.bytes_mut(dst.buf);
        if vr <= 1 || vc == dst.cols as usize || vc == 0 {
            // The corner is contiguous in the tile: gather straight into it.
            gm.gather(src, &mut tb[off..off + nbytes])?;
        } else {
            let tmp = scratch_bytes(&mut scratch[0], nbytes);
            gm.gather(src, tmp)?;
            let pitch = dst.cols as usize * es;
            for (r, chunk) in tmp.chunks_exact(row).enumerate() {
                let at = off + r * pitch;
                tb[at..at + row].copy_from_slice(chunk);
            }
        }
        self.record(
            I,
            Pipe::Mte2,
            [None; 3],
            Some(dst.range()),
            nbytes as u64,
            gm_span(self, src),
            loc,
        );
        Ok(())
    }

    /// TSTORE: tile (UB → MTE3, L0C → FIXP) → GM view, converting to the
    /// view's dtype (RNE). Stores the top-left corner the view's shape covers.
    ///
    /// Conversions: same dtype (any) is a copy; among FLOAT32, FLOAT16 and
    /// BFLOAT16 values are widened exactly and rounded once. Records size =
    /// bytes written to GM, GM span = the bytes from the view's first to its
    /// last element. Every run written goes into the core's write log (the
    /// race check).
    ///
    /// # Errors
    /// `BadOperand` for a tile outside UB/L0C, an unsupported conversion or a
    /// view larger than the tile; `View` for a view whose span overflows;
    /// `GmOutOfBounds` when its span leaves the requested bytes of its
    /// allocation; `GmReserved` for the runtime's argument areas.
    #[track_caller]
    pub fn tstore(&mut self, dst: &ChipTensor, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TSTORE";
        self.check_operand(I, "src", src, &[BufKind::Ub, BufKind::L0C])?;
        let pipe = if src.buf == BufKind::L0C {
            Pipe::Fixp
        } else {
            Pipe::Mte3
        };
        if src.dtype != dst.dtype && !(src.dtype.is_float() && dst.dtype.is_float()) {
            return Err(bad(
                I,
                format!(
                    "cannot convert {} to {}: TSTORE converts only among FLOAT32, FLOAT16 and BFLOAT16",
                    src.dtype, dst.dtype
                ),
            ));
        }
        let (vr, vc) = check_fits(I, dst, src)?;
        let (ses, des) = (src.dtype.size(), dst.dtype.size());
        let off = src.offset as usize;
        let pitch = src.cols as usize * ses;
        let nbytes = vr * vc * des;
        let (mut gm, bufs, scratch) = self.parts_mut();
        let tb = bufs.bytes(src.buf);
        if src.dtype == dst.dtype && (vr <= 1 || vc == src.cols as usize || vc == 0) {
            gm.scatter(dst, &tb[off..off + nbytes])?;
        } else {
            let tmp = scratch_bytes(&mut scratch[0], nbytes);
            if vc > 0 {
                for (r, out) in tmp.chunks_exact_mut(vc * des).enumerate() {
                    let at = off + r * pitch;
                    convert(src.dtype, dst.dtype, &tb[at..at + vc * ses], out);
                }
            }
            gm.scatter(dst, tmp)?;
        }
        self.record(
            I,
            pipe,
            [Some(src.range()), None, None],
            None,
            nbytes as u64,
            gm_span(self, dst),
            loc,
        );
        Ok(())
    }

    /// TMOV (MTE1): L1 tile → L0A/L0B tile of the same shape and dtype.
    ///
    /// Records size = bytes moved.
    ///
    /// # Errors
    /// `BadOperand` for tiles in other buffers or of different shape/dtype.
    #[track_caller]
    pub fn tmov(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TMOV";
        self.check_operand(I, "src", src, &[BufKind::L1])?;
        self.check_operand(I, "dst", dst, &[BufKind::L0A, BufKind::L0B])?;
        same_shape_dtype(I, "src", dst, src)?;
        let (l1, l0) = self.bufs.pair_mut(src.buf, dst.buf);
        l0[byte_range(dst)].copy_from_slice(&l1[byte_range(src)]);
        self.record(
            I,
            Pipe::Mte1,
            [Some(src.range()), None, None],
            Some(dst.range()),
            src.bytes() as u64,
            None,
            loc,
        );
        Ok(())
    }
}
