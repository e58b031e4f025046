//! The tile instructions.
//!
//! Semantics contract (every instruction):
//! - `#[track_caller]`; captures `Location::caller()` and calls `self.record(...)`
//!   with mnemonic, pipe, read ranges, write range, size, GM span, location.
//!   Nothing is recorded for an instruction that fails.
//! - Operand tiles must be allocated (`check_tile`), buffers must fit the
//!   instruction (errors: `KernelError::BadOperand { instr, msg }`). A failing
//!   instruction leaves its destination (tile or GM) untouched.
//! - Float math for FLOAT16/BFLOAT16 tiles is done in f32 and rounded once
//!   (RNE) to the destination dtype; FLOAT32 is plain IEEE f32 (no FMA);
//!   INT32 uses wrapping integer arithmetic.
//!
//! Modules: [`mem`] (TLOAD, TSTORE, TMOV), [`cube`] (TMATMUL), [`vector`]
//! (everything on the VECTOR pipe). This module holds what they share:
//! operand checks, the element-type abstraction and the byte-level operand
//! split that makes `dst` aliasing a source safe.

mod cube;
mod mem;
mod vector;

use std::ops::Range;

use half::{bf16, f16, slice::HalfFloatSliceExt};
use simpler_chip::{BufKind, LocalBuffers};
use simpler_core::{DType, KResult, KernelError};

use crate::{numeric, Core, Tile};

/// A `BadOperand` error for `instr`.
fn bad(instr: &'static str, msg: impl Into<String>) -> KernelError {
    KernelError::BadOperand {
        instr,
        msg: msg.into(),
    }
}

/// `4x8 FLOAT32 in UB`, for error messages.
fn describe(t: Tile) -> String {
    format!("{}x{} {} in {}", t.rows, t.cols, t.dtype, t.buf.name())
}

/// Byte range of a tile inside its buffer.
fn byte_range(t: Tile) -> Range<usize> {
    let start = t.offset as usize;
    start..start + t.bytes()
}

/// True when two tiles share a byte.
fn overlaps(a: Tile, b: Tile) -> bool {
    a.range().overlaps(&b.range())
}

/// View the first `n` bytes of a scratch vector, growing it when needed
/// (capacity is kept across instructions, so steady state never allocates).
fn scratch_bytes(v: &mut Vec<f32>, n: usize) -> &mut [u8] {
    let words = n.div_ceil(4);
    if v.len() < words {
        v.resize(words, 0.0);
    }
    &mut bytemuck::cast_slice_mut::<f32, u8>(v)[..n]
}

/// The first `n` elements of a scratch vector, growing it when needed.
fn scratch_f32(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n {
        v.resize(n, 0.0);
    }
    &mut v[..n]
}

/// Byte views of `dst` (mutable) and `srcs` (shared), all in `dst.buf`.
///
/// A source that overlaps `dst` is first copied into `scratch[i]`, so every
/// source reads as it was before the instruction (`tadd(x, x, y)` works,
/// and so does any partial overlap). Sources must be in `dst.buf`.
fn split_operands<'a, const N: usize>(
    bufs: &'a mut LocalBuffers,
    scratch: &'a mut [Vec<f32>; 3],
    dst: Tile,
    srcs: [Tile; N],
) -> (&'a mut [u8], [&'a [u8]; N]) {
    const { assert!(N <= 3, "three scratch vectors") };
    let bytes = bufs.bytes_mut(dst.buf);
    for (i, &s) in srcs.iter().enumerate() {
        debug_assert_eq!(s.buf, dst.buf);
        if overlaps(s, dst) {
            let r = byte_range(s);
            let n = r.len();
            scratch_bytes(&mut scratch[i], n).copy_from_slice(&bytes[r]);
        }
    }
    let scratch: &'a [Vec<f32>; 3] = scratch;
    let d = byte_range(dst);
    let (lo, rest) = bytes.split_at_mut(d.start);
    let (dbytes, hi) = rest.split_at_mut(d.len());
    let (lo, hi): (&'a [u8], &'a [u8]) = (lo, hi);
    let views = std::array::from_fn(|i| {
        let s = srcs[i];
        let r = byte_range(s);
        if r.is_empty() {
            &lo[..0]
        } else if overlaps(s, dst) {
            &bytemuck::cast_slice::<f32, u8>(&scratch[i])[..r.len()]
        } else if r.end <= d.start {
            &lo[r]
        } else {
            &hi[r.start - d.end..r.end - d.end]
        }
    });
    (dbytes, views)
}

impl Core {
    /// Check that operand `role` of `instr` is allocated, element-aligned and
    /// lives in one of `bufs`.
    fn check_operand(
        &self,
        instr: &'static str,
        role: &str,
        t: Tile,
        bufs: &[BufKind],
    ) -> KResult<()> {
        if !bufs.contains(&t.buf) {
            let names: Vec<&str> = bufs.iter().map(|b| b.name()).collect();
            return Err(bad(
                instr,
                format!(
                    "{role} tile ({}) is in buffer {}, must be in {}",
                    describe(t),
                    t.buf.name(),
                    names.join(" or ")
                ),
            ));
        }
        self.check_tile(instr, t)?;
        if !(t.offset as usize).is_multiple_of(t.dtype.size()) {
            return Err(bad(
                instr,
                format!(
                    "{role} tile ({}) at offset {} is not aligned to its {}-byte elements",
                    describe(t),
                    t.offset,
                    t.dtype.size()
                ),
            ));
        }
        Ok(())
    }
}

/// `other` must have `dst`'s rows, cols and dtype.
fn same_shape_dtype(instr: &'static str, role: &str, dst: Tile, other: Tile) -> KResult<()> {
    if (other.rows, other.cols) != (dst.rows, dst.cols) {
        return Err(bad(
            instr,
            format!(
                "shape mismatch: {role} is {}x{} but dst is {}x{}",
                other.rows, other.cols, dst.rows, dst.cols
            ),
        ));
    }
    same_dtype(instr, role, dst, other)
}

/// `other` must have `dst`'s dtype.
fn same_dtype(instr: &'static str, role: &str, dst: Tile, other: Tile) -> KResult<()> {
    if other.dtype != dst.dtype {
        return Err(bad(
            instr,
            format!(
                "dtype mismatch: {role} is {} but dst is {}",
                other.dtype, dst.dtype
            ),
        ));
    }
    Ok(())
}

/// Element types the arithmetic instructions compute with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    F32,
    Bf16,
    F16,
    I32,
}

impl Num {
    fn of(dtype: DType) -> Option<Num> {
        match dtype {
            DType::Float32 => Some(Num::F32),
            DType::Bfloat16 => Some(Num::Bf16),
            DType::Float16 => Some(Num::F16),
            DType::Int32 => Some(Num::I32),
            _ => None,
        }
    }

    /// The element type of `role`, or an error naming the supported ones.
    fn get(instr: &'static str, role: &str, dtype: DType) -> KResult<Num> {
        Num::of(dtype).ok_or_else(|| {
            bad(
                instr,
                format!(
                    "{role} dtype {dtype} is not supported (FLOAT32, FLOAT16, BFLOAT16, INT32)"
                ),
            )
        })
    }
}

/// A float element type: exact widening to f32, RNE narrowing from f32.
trait FloatElem: bytemuck::Pod {
    /// Significand bits including the implicit one.
    const SIG_BITS: u32;
    /// True for f32 itself (no conversion needed).
    const IS_F32: bool;
    fn to_f32(self) -> f32;
    fn from_f32(x: f32) -> Self;
    /// `dst[i] = src[i].to_f32()` (vectorised where the `half` crate can).
    fn widen_slice(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = Self::from_f32(src[i])` (vectorised where `half` can).
    fn narrow_slice(src: &[f32], dst: &mut [Self]);
}

impl FloatElem for f32 {
    const SIG_BITS: u32 = 24;
    const IS_F32: bool = true;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(x: f32) -> f32 {
        x
    }
    fn widen_slice(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
    fn narrow_slice(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
}

impl FloatElem for bf16 {
    const SIG_BITS: u32 = 8;
    const IS_F32: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn widen_slice(src: &[bf16], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow_slice(src: &[f32], dst: &mut [bf16]) {
        dst.convert_from_f32_slice(src);
    }
}

impl FloatElem for f16 {
    const SIG_BITS: u32 = 11;
    const IS_F32: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn widen_slice(src: &[f16], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow_slice(src: &[f32], dst: &mut [f16]) {
        dst.convert_from_f32_slice(src);
    }
}

/// Elements per stack chunk when 16-bit floats are processed via f32.
const CHUNK: usize = 256;

/// `d[i] = narrow(f(widen(s[i])))` for 16-bit floats, a stack chunk at a time
/// (no heap, vectorised conversions).
#[inline(always)]
fn chunked1<E: FloatElem>(d: &mut [E], s: &[E], f: impl Fn(f32) -> f32) {
    let mut buf = [0f32; CHUNK];
    for (dc, sc) in d.chunks_mut(CHUNK).zip(s.chunks(CHUNK)) {
        let x = &mut buf[..dc.len()];
        E::widen_slice(sc, x);
        for v in x.iter_mut() {
            *v = f(*v);
        }
        E::narrow_slice(x, dc);
    }
}

/// `d[i] = narrow(f(widen(a[i]), widen(b[i])))`, a stack chunk at a time.
#[inline(always)]
fn chunked2<E: FloatElem>(d: &mut [E], a: &[E], b: &[E], f: impl Fn(f32, f32) -> f32) {
    let mut xa = [0f32; CHUNK];
    let mut xb = [0f32; CHUNK];
    for ((dc, ac), bc) in d
        .chunks_mut(CHUNK)
        .zip(a.chunks(CHUNK))
        .zip(b.chunks(CHUNK))
    {
        let n = dc.len();
        let (x, y) = (&mut xa[..n], &mut xb[..n]);
        E::widen_slice(ac, x);
        E::widen_slice(bc, y);
        for (p, &q) in x.iter_mut().zip(y.iter()) {
            *p = f(*p, q);
        }
        E::narrow_slice(x, dc);
    }
}

/// `dst[i] = f(src[i])` over typed views of byte slices of equal element count.
#[inline(always)]
fn map1<S: bytemuck::Pod, D: bytemuck::Pod>(dst: &mut [u8], src: &[u8], f: impl Fn(S) -> D) {
    let d: &mut [D] = bytemuck::cast_slice_mut(dst);
    let s: &[S] = bytemuck::cast_slice(src);
    debug_assert_eq!(d.len(), s.len());
    for (o, &x) in d.iter_mut().zip(s) {
        *o = f(x);
    }
}

/// `dst[i] = f(a[i], b[i])`.
#[inline(always)]
fn map2<S: bytemuck::Pod, D: bytemuck::Pod>(
    dst: &mut [u8],
    a: &[u8],
    b: &[u8],
    f: impl Fn(S, S) -> D,
) {
    let d: &mut [D] = bytemuck::cast_slice_mut(dst);
    let a: &[S] = bytemuck::cast_slice(a);
    let b: &[S] = bytemuck::cast_slice(b);
    debug_assert!(d.len() == a.len() && d.len() == b.len());
    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

/// `dst[r, c] = f(a[r, c], col[r])` for row-major `a`/`dst` with `cols` columns.
#[inline(always)]
fn map_rows<S: bytemuck::Pod, D: bytemuck::Pod>(
    dst: &mut [u8],
    a: &[u8],
    col: &[u8],
    cols: usize,
    f: impl Fn(S, S) -> D,
) {
    let d: &mut [D] = bytemuck::cast_slice_mut(dst);
    let a: &[S] = bytemuck::cast_slice(a);
    let col: &[S] = bytemuck::cast_slice(col);
    if cols == 0 {
        return;
    }
    for ((drow, arow), &y) in d.chunks_exact_mut(cols).zip(a.chunks_exact(cols)).zip(col) {
        for (o, &x) in drow.iter_mut().zip(arow) {
            *o = f(x, y);
        }
    }
}

/// Convert `n` elements from `sd` to `dd` (both in FLOAT32, FLOAT16,
/// BFLOAT16, INT32, or `sd == dd` of any dtype: a byte copy).
///
/// Float → float: widen exactly, round once (RNE). INT32 → float: one RNE
/// rounding of the exact integer. Float → INT32: RNE, saturating, NaN → 0.
fn convert(sd: DType, dd: DType, src: &[u8], dst: &mut [u8]) {
    if sd == dd {
        dst.copy_from_slice(src);
        return;
    }
    // Whole-slice conversions between f32 and the 16-bit floats.
    fn widen<S: FloatElem>(src: &[u8], dst: &mut [u8]) {
        S::widen_slice(bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst));
    }
    fn narrow<D: FloatElem>(src: &[u8], dst: &mut [u8]) {
        D::narrow_slice(bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst));
    }
    match (sd, dd) {
        (DType::Bfloat16, DType::Float32) => return widen::<bf16>(src, dst),
        (DType::Float16, DType::Float32) => return widen::<f16>(src, dst),
        (DType::Float32, DType::Bfloat16) => return narrow::<bf16>(src, dst),
        (DType::Float32, DType::Float16) => return narrow::<f16>(src, dst),
        _ => {}
    }
    fn from_float<S: FloatElem>(dd: DType, src: &[u8], dst: &mut [u8]) {
        match dd {
            DType::Float32 => map1::<S, f32>(dst, src, |x| x.to_f32()),
            DType::Bfloat16 => map1::<S, bf16>(dst, src, |x| bf16::from_f32(x.to_f32())),
            DType::Float16 => map1::<S, f16>(dst, src, |x| f16::from_f32(x.to_f32())),
            DType::Int32 => map1::<S, i32>(dst, src, |x| numeric::f32_to_i32_rne(x.to_f32())),
            _ => unreachable!("convert to {dd}"),
        }
    }
    fn from_int<D: FloatElem>(src: &[u8], dst: &mut [u8]) {
        map1::<i32, D>(dst, src, |x| {
            D::from_f32(numeric::round_i32_to_sig_bits(x, D::SIG_BITS))
        });
    }
    match sd {
        DType::Float32 => from_float::<f32>(dd, src, dst),
        DType::Bfloat16 => from_float::<bf16>(dd, src, dst),
        DType::Float16 => from_float::<f16>(dd, src, dst),
        DType::Int32 => match dd {
            DType::Float32 => map1::<i32, f32>(dst, src, |x| x as f32),
            DType::Bfloat16 => from_int::<bf16>(src, dst),
            DType::Float16 => from_int::<f16>(src, dst),
            _ => unreachable!("convert to {dd}"),
        },
        _ => unreachable!("convert from {sd}"),
    }
}

/// Widen `n` float elements of `dtype` (FLOAT32, FLOAT16, BFLOAT16) to f32.
fn widen_into(dtype: DType, src: &[u8], out: &mut [f32]) {
    convert(dtype, DType::Float32, src, bytemuck::cast_slice_mut(out));
}
