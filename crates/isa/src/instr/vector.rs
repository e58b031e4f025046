//! VECTOR-pipe instructions: elementwise, scalar, unary, row reductions,
//! row broadcasts, conversion and fills. All operands live in UB.

use std::panic::Location;

use half::{bf16, f16};
use simpler_chip::BufKind;
use simpler_core::KResult;

use super::{
    bad, byte_range, chunked1, chunked2, convert, describe, map1, map2, map_rows, same_dtype,
    same_shape_dtype, split_operands, FloatElem, Num, CHUNK,
};
use crate::{Core, Tile};

const UB: &[BufKind] = &[BufKind::Ub];

/// Row reductions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reduce {
    Max,
    Sum,
}

/// A float binary op on `E` elements, optionally with `b` broadcast per row.
#[inline(always)]
fn float2<E: FloatElem>(
    d: &mut [u8],
    a: &[u8],
    b: &[u8],
    row_cols: Option<usize>,
    f: impl Fn(f32, f32) -> f32,
) {
    if E::IS_F32 {
        let g = |x: E, y: E| E::from_f32(f(x.to_f32(), y.to_f32()));
        return match row_cols {
            None => map2::<E, E>(d, a, b, g),
            Some(cols) => map_rows::<E, E>(d, a, b, cols, g),
        };
    }
    let d: &mut [E] = bytemuck::cast_slice_mut(d);
    let a: &[E] = bytemuck::cast_slice(a);
    let b: &[E] = bytemuck::cast_slice(b);
    match row_cols {
        None => chunked2(d, a, b, f),
        Some(0) => {}
        Some(cols) => {
            for ((drow, arow), &y) in d.chunks_exact_mut(cols).zip(a.chunks_exact(cols)).zip(b) {
                let y = y.to_f32();
                chunked1(drow, arow, |x| f(x, y));
            }
        }
    }
}

/// A float unary op on `E` elements.
#[inline(always)]
fn float1<E: FloatElem>(d: &mut [u8], s: &[u8], f: impl Fn(f32) -> f32) {
    if E::IS_F32 {
        map1::<E, E>(d, s, |x| E::from_f32(f(x.to_f32())));
    } else {
        chunked1::<E>(bytemuck::cast_slice_mut(d), bytemuck::cast_slice(s), f);
    }
}

/// Row reduction over `E` elements, computed in f32 and rounded once.
fn reduce_float<E: FloatElem>(d: &mut [u8], s: &[u8], cols: usize, op: Reduce) {
    let d: &mut [E] = bytemuck::cast_slice_mut(d);
    let s: &[E] = bytemuck::cast_slice(s);
    if cols == 0 {
        // Only reachable for Sum (Max rejects empty rows): the empty sum.
        d.fill(E::from_f32(0.0));
        return;
    }
    let mut buf = [0f32; CHUNK];
    for (o, row) in d.iter_mut().zip(s.chunks_exact(cols)) {
        let mut acc = match op {
            Reduce::Max => row[0].to_f32(),
            Reduce::Sum => 0.0f32,
        };
        // Left to right over the row, a widened chunk at a time.
        for chunk in row.chunks(CHUNK) {
            let x = &mut buf[..chunk.len()];
            E::widen_slice(chunk, x);
            acc = match op {
                Reduce::Max => x.iter().fold(acc, |m, &v| m.max(v)),
                Reduce::Sum => x.iter().fold(acc, |a, &v| a + v),
            };
        }
        *o = E::from_f32(acc);
    }
}

/// Row reduction over INT32 elements (wrapping sum).
fn reduce_i32(d: &mut [u8], s: &[u8], cols: usize, op: Reduce) {
    let d: &mut [i32] = bytemuck::cast_slice_mut(d);
    let s: &[i32] = bytemuck::cast_slice(s);
    if cols == 0 {
        d.fill(0);
        return;
    }
    for (o, row) in d.iter_mut().zip(s.chunks_exact(cols)) {
        *o = match op {
            Reduce::Max => row.iter().copied().fold(row[0], i32::max),
            Reduce::Sum => row.iter().fold(0i32, |acc, &x| acc.wrapping_add(x)),
        };
    }
}

/// Set every element of `d` (bytes of `num` elements) to `v`.
fn fill(num: Num, d: &mut [u8], v: f32) {
    match num {
        Num::F32 => bytemuck::cast_slice_mut::<u8, f32>(d).fill(v),
        Num::Bf16 => bytemuck::cast_slice_mut::<u8, bf16>(d).fill(bf16::from_f32(v)),
        Num::F16 => bytemuck::cast_slice_mut::<u8, f16>(d).fill(f16::from_f32(v)),
        Num::I32 => bytemuck::cast_slice_mut::<u8, i32>(d).fill(v as i32),
    }
}

impl Core {
    /// Shared body of the tile ∘ tile and tile ∘ per-row instructions.
    ///
    /// `row_bcast`: `b` is a `[rows, 1]` column applied to every column.
    /// `int_div`: INT32 division, rejected when `b` holds a zero.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn binary(
        &mut self,
        instr: &'static str,
        dst: Tile,
        a: Tile,
        b: Tile,
        row_bcast: bool,
        ff: impl Fn(f32, f32) -> f32 + Copy,
        fi: impl Fn(i32, i32) -> i32 + Copy,
        int_div: bool,
        loc: &'static Location<'static>,
    ) -> KResult<()> {
        let (ra, rb) = if row_bcast {
            ("src", "col")
        } else {
            ("a", "b")
        };
        self.check_operand(instr, "dst", dst, UB)?;
        self.check_operand(instr, ra, a, UB)?;
        self.check_operand(instr, rb, b, UB)?;
        same_shape_dtype(instr, ra, dst, a)?;
        if row_bcast {
            if b.rows != dst.rows || b.cols != 1 {
                return Err(bad(
                    instr,
                    format!(
                        "shape mismatch: col is {}x{}, must be {}x1 (one value per dst row)",
                        b.rows, b.cols, dst.rows
                    ),
                ));
            }
            same_dtype(instr, rb, dst, b)?;
        } else {
            same_shape_dtype(instr, rb, dst, b)?;
        }
        let num = Num::get(instr, "dst", dst.dtype)?;
        let cols = dst.cols as usize;
        let row_cols = row_bcast.then_some(cols);
        let (d, [x, y]) = split_operands(&mut self.bufs, &mut self.scratch, dst, [a, b]);
        match num {
            Num::F32 => float2::<f32>(d, x, y, row_cols, ff),
            Num::Bf16 => float2::<bf16>(d, x, y, row_cols, ff),
            Num::F16 => float2::<f16>(d, x, y, row_cols, ff),
            Num::I32 => {
                if int_div {
                    let divisors: &[i32] = bytemuck::cast_slice(y);
                    if let Some(i) = divisors.iter().position(|&v| v == 0) {
                        let (r, c) = if row_bcast {
                            (i, 0)
                        } else {
                            (i / cols, i % cols)
                        };
                        return Err(bad(
                            instr,
                            format!("INT32 division by zero: {rb}[{r}, {c}] is 0"),
                        ));
                    }
                }
                match row_cols {
                    None => map2::<i32, i32>(d, x, y, fi),
                    Some(cols) => map_rows::<i32, i32>(d, x, y, cols, fi),
                }
            }
        }
        self.record_vector(instr, [Some(a.range()), Some(b.range()), None], dst, loc);
        Ok(())
    }

    /// Shared body of the unary and tile ∘ scalar instructions. `fi: None`
    /// means the instruction has no INT32 form.
    #[inline(always)]
    fn unary<FI: Fn(i32) -> i32>(
        &mut self,
        instr: &'static str,
        dst: Tile,
        src: Tile,
        ff: impl Fn(f32) -> f32,
        fi: Option<FI>,
        loc: &'static Location<'static>,
    ) -> KResult<()> {
        self.check_operand(instr, "dst", dst, UB)?;
        self.check_operand(instr, "src", src, UB)?;
        same_shape_dtype(instr, "src", dst, src)?;
        let num = Num::get(instr, "dst", dst.dtype)?;
        if num == Num::I32 && fi.is_none() {
            return Err(bad(
                instr,
                "INT32 tiles are not supported (float only: FLOAT32, FLOAT16, BFLOAT16)",
            ));
        }
        let (d, [s]) = split_operands(&mut self.bufs, &mut self.scratch, dst, [src]);
        match (num, fi) {
            (Num::F32, _) => float1::<f32>(d, s, ff),
            (Num::Bf16, _) => float1::<bf16>(d, s, ff),
            (Num::F16, _) => float1::<f16>(d, s, ff),
            (Num::I32, Some(fi)) => map1::<i32, i32>(d, s, fi),
            (Num::I32, None) => unreachable!("rejected above"),
        }
        self.record_vector(instr, [Some(src.range()), None, None], dst, loc);
        Ok(())
    }

    /// Shared body of TROWMAX and TROWSUM.
    fn row_reduce(
        &mut self,
        instr: &'static str,
        dst: Tile,
        src: Tile,
        op: Reduce,
        loc: &'static Location<'static>,
    ) -> KResult<()> {
        self.check_operand(instr, "dst", dst, UB)?;
        self.check_operand(instr, "src", src, UB)?;
        if dst.rows != src.rows || dst.cols != 1 {
            return Err(bad(
                instr,
                format!(
                    "shape mismatch: dst is {}x{}, must be {}x1 for src {}",
                    dst.rows,
                    dst.cols,
                    src.rows,
                    describe(src)
                ),
            ));
        }
        same_dtype(instr, "src", dst, src)?;
        let num = Num::get(instr, "dst", dst.dtype)?;
        if op == Reduce::Max && src.cols == 0 && src.rows > 0 {
            return Err(bad(
                instr,
                "src has no columns: the max of an empty row is undefined",
            ));
        }
        let cols = src.cols as usize;
        let (d, [s]) = split_operands(&mut self.bufs, &mut self.scratch, dst, [src]);
        match num {
            Num::F32 => reduce_float::<f32>(d, s, cols, op),
            Num::Bf16 => reduce_float::<bf16>(d, s, cols, op),
            Num::F16 => reduce_float::<f16>(d, s, cols, op),
            Num::I32 => reduce_i32(d, s, cols, op),
        }
        self.record_vector(instr, [Some(src.range()), None, None], dst, loc);
        Ok(())
    }

    /// TADD (VECTOR): dst = a + b elementwise, same shape and dtype, UB tiles.
    ///
    /// Like every elementwise instruction: FLOAT32, FLOAT16, BFLOAT16 (in f32,
    /// rounded once) or INT32 (wrapping); `dst` may alias a source. Records
    /// size = elements of dst.
    ///
    /// # Errors
    /// `BadOperand` for tiles outside UB, different shapes or dtypes, or an
    /// unsupported dtype.
    #[track_caller]
    pub fn tadd(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary(
            "TADD",
            dst,
            a,
            b,
            false,
            |x, y| x + y,
            i32::wrapping_add,
            false,
            loc,
        )
    }

    /// TSUB (VECTOR): dst = a − b.
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tsub(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary(
            "TSUB",
            dst,
            a,
            b,
            false,
            |x, y| x - y,
            i32::wrapping_sub,
            false,
            loc,
        )
    }

    /// TMUL (VECTOR): dst = a · b.
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tmul(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary(
            "TMUL",
            dst,
            a,
            b,
            false,
            |x, y| x * y,
            i32::wrapping_mul,
            false,
            loc,
        )
    }

    /// TDIV (VECTOR): dst = a / b (INT32: error on division by zero).
    ///
    /// INT32 division truncates toward zero; `i32::MIN / -1` wraps to
    /// `i32::MIN`. Float division by zero gives ±inf or NaN as IEEE says.
    ///
    /// # Errors
    /// As for [`Core::tadd`], and `BadOperand` when an INT32 `b` holds a 0
    /// (dst is then untouched).
    #[track_caller]
    pub fn tdiv(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary(
            "TDIV",
            dst,
            a,
            b,
            false,
            |x, y| x / y,
            i32::wrapping_div,
            true,
            loc,
        )
    }

    /// TMAX (VECTOR): dst = max(a, b) (floats: `f32::max`, so a NaN operand
    /// yields the other one).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tmax(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary("TMAX", dst, a, b, false, f32::max, i32::max, false, loc)
    }

    /// TMIN (VECTOR): dst = min(a, b) (floats: `f32::min`).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tmin(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.binary("TMIN", dst, a, b, false, f32::min, i32::min, false, loc)
    }

    /// TADDS (VECTOR): dst = src + s (INT32 tiles: `s as i32`, wrapping).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tadds(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        let loc = Location::caller();
        let si = s as i32;
        self.unary(
            "TADDS",
            dst,
            src,
            |x| x + s,
            Some(|x: i32| x.wrapping_add(si)),
            loc,
        )
    }

    /// TMULS (VECTOR): dst = src · s (INT32 tiles: `s as i32`, wrapping).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tmuls(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        let loc = Location::caller();
        let si = s as i32;
        self.unary(
            "TMULS",
            dst,
            src,
            |x| x * s,
            Some(|x: i32| x.wrapping_mul(si)),
            loc,
        )
    }

    /// TMAXS (VECTOR): dst = max(src, s) (floats: `f32::max`; INT32: `s as i32`).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tmaxs(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        let loc = Location::caller();
        let si = s as i32;
        self.unary(
            "TMAXS",
            dst,
            src,
            |x| x.max(s),
            Some(|x: i32| x.max(si)),
            loc,
        )
    }

    /// TEXP (VECTOR): dst = exp(src) (f32 `exp`). Float tiles only.
    ///
    /// # Errors
    /// As for [`Core::tadd`], and `BadOperand` for INT32 tiles.
    #[track_caller]
    pub fn texp(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.unary("TEXP", dst, src, f32::exp, None::<fn(i32) -> i32>, loc)
    }

    /// TLOG (VECTOR): dst = ln(src) (f32 `ln`). Float tiles only.
    ///
    /// # Errors
    /// As for [`Core::texp`].
    #[track_caller]
    pub fn tlog(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.unary("TLOG", dst, src, f32::ln, None::<fn(i32) -> i32>, loc)
    }

    /// TSQRT (VECTOR): dst = sqrt(src) (f32 `sqrt`). Float tiles only.
    ///
    /// # Errors
    /// As for [`Core::texp`].
    #[track_caller]
    pub fn tsqrt(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.unary("TSQRT", dst, src, f32::sqrt, None::<fn(i32) -> i32>, loc)
    }

    /// TABS (VECTOR): dst = |src| (INT32: `wrapping_abs`, so `i32::MIN` stays).
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn tabs(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.unary("TABS", dst, src, f32::abs, Some(i32::wrapping_abs), loc)
    }

    /// TROWMAX (VECTOR): dst[r, 0] = max over columns of src[r, ..]; dst is [rows, 1].
    ///
    /// Starts from column 0 and folds with `f32::max` (INT32: `max`).
    /// Records size = elements of dst.
    ///
    /// # Errors
    /// `BadOperand` for tiles outside UB, a dst that is not `[rows, 1]`, a
    /// dtype mismatch, or a src with no columns.
    #[track_caller]
    pub fn trowmax(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.row_reduce("TROWMAX", dst, src, Reduce::Max, loc)
    }

    /// TROWSUM (VECTOR): dst[r, 0] = Σ src[r, c], summed c = 0.. in order, f32.
    ///
    /// The f32 accumulator starts at 0.0 and is rounded once to dst's dtype
    /// (INT32: wrapping integer sum). Records size = elements of dst.
    ///
    /// # Errors
    /// As for [`Core::trowmax`] (an empty row sums to 0).
    #[track_caller]
    pub fn trowsum(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        self.row_reduce("TROWSUM", dst, src, Reduce::Sum, loc)
    }

    /// TROWEXPANDSUB (VECTOR): dst[r, c] = src[r, c] − col[r, 0].
    ///
    /// `col` is `[rows, 1]` of src's dtype; `dst` may alias `src`.
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn trowexpandsub(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        let loc = Location::caller();
        let fi = i32::wrapping_sub;
        self.binary(
            "TROWEXPANDSUB",
            dst,
            src,
            col,
            true,
            |x, y| x - y,
            fi,
            false,
            loc,
        )
    }

    /// TROWEXPANDMUL (VECTOR): dst[r, c] = src[r, c] · col[r, 0].
    ///
    /// # Errors
    /// As for [`Core::tadd`].
    #[track_caller]
    pub fn trowexpandmul(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        let loc = Location::caller();
        let fi = i32::wrapping_mul;
        self.binary(
            "TROWEXPANDMUL",
            dst,
            src,
            col,
            true,
            |x, y| x * y,
            fi,
            false,
            loc,
        )
    }

    /// TROWEXPANDDIV (VECTOR): dst[r, c] = src[r, c] / col[r, 0].
    ///
    /// # Errors
    /// As for [`Core::tdiv`].
    #[track_caller]
    pub fn trowexpanddiv(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        let loc = Location::caller();
        let fi = i32::wrapping_div;
        self.binary(
            "TROWEXPANDDIV",
            dst,
            src,
            col,
            true,
            |x, y| x / y,
            fi,
            true,
            loc,
        )
    }

    /// TCVT (VECTOR): dtype conversion, same shape (f32↔bf16/f16 RNE, int↔float).
    ///
    /// Among FLOAT32, FLOAT16, BFLOAT16 and INT32: float → float widens
    /// exactly and rounds once (RNE, overflow → ±inf, NaN stays NaN);
    /// INT32 → float rounds the exact integer once (RNE); float → INT32 rounds
    /// to nearest even, saturates, and maps NaN to 0. Same dtype (any) is a
    /// copy. Records size = elements of dst.
    ///
    /// # Errors
    /// `BadOperand` for tiles outside UB, different shapes, or an
    /// unsupported dtype pair.
    #[track_caller]
    pub fn tcvt(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TCVT";
        self.check_operand(I, "dst", dst, UB)?;
        self.check_operand(I, "src", src, UB)?;
        if (src.rows, src.cols) != (dst.rows, dst.cols) {
            return Err(bad(
                I,
                format!(
                    "shape mismatch: src is {}x{} but dst is {}x{}",
                    src.rows, src.cols, dst.rows, dst.cols
                ),
            ));
        }
        if src.dtype != dst.dtype {
            Num::get(I, "src", src.dtype)?;
            Num::get(I, "dst", dst.dtype)?;
        }
        let (d, [s]) = split_operands(&mut self.bufs, &mut self.scratch, dst, [src]);
        convert(src.dtype, dst.dtype, s, d);
        self.record_vector(I, [Some(src.range()), None, None], dst, loc);
        Ok(())
    }

    /// TFILL (VECTOR): every element = v (converted to the tile's dtype:
    /// RNE for FLOAT16/BFLOAT16, `v as i32` for INT32).
    ///
    /// # Errors
    /// `BadOperand` for a tile outside UB or an unsupported dtype.
    #[track_caller]
    pub fn tfill(&mut self, dst: Tile, v: f32) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TFILL";
        self.check_operand(I, "dst", dst, UB)?;
        let num = Num::get(I, "dst", dst.dtype)?;
        fill(num, &mut self.bufs.bytes_mut(dst.buf)[byte_range(dst)], v);
        self.record_vector(I, [None; 3], dst, loc);
        Ok(())
    }

    /// TFILLPAD (VECTOR): columns `>= valid_cols` of every row = v.
    ///
    /// `v` converts as in [`Core::tfill`] (−inf is typical before a row max);
    /// columns below `valid_cols` are untouched. Records size = elements of dst.
    ///
    /// # Errors
    /// `BadOperand` for a tile outside UB, an unsupported dtype, or
    /// `valid_cols > cols`.
    #[track_caller]
    pub fn tfillpad(&mut self, dst: Tile, valid_cols: u32, v: f32) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TFILLPAD";
        self.check_operand(I, "dst", dst, UB)?;
        let num = Num::get(I, "dst", dst.dtype)?;
        if valid_cols > dst.cols {
            return Err(bad(
                I,
                format!(
                    "valid_cols {valid_cols} exceeds the {} columns of dst",
                    dst.cols
                ),
            ));
        }
        let es = dst.dtype.size();
        let pitch = dst.cols as usize * es;
        let skip = valid_cols as usize * es;
        if pitch > skip {
            let bytes = &mut self.bufs.bytes_mut(dst.buf)[byte_range(dst)];
            for row in bytes.chunks_exact_mut(pitch) {
                fill(num, &mut row[skip..], v);
            }
        }
        self.record_vector(I, [None; 3], dst, loc);
        Ok(())
    }
}
