//! Helpers shared by the bundled kernels and workloads.
//!
//! Everything here runs inside kernels through tile instructions only
//! (no direct GM access), or on the host for input generation and goldens.

use half::bf16;
use rand::distributions::{Distribution, Uniform};
use rand_chacha::ChaCha8Rng;
use simpler_core::{ChipTensor, DType, KResult, KernelError};
use simpler_isa::{BufKind, Core, Tile};
use simpler_runtime::RuntimeError;

/// Rows and columns of a view as the tile instructions see it: rank 1 is one
/// row; for rank ≥ 2 every dim but the last two must be 1.
pub(crate) fn rows_cols(t: &ChipTensor) -> KResult<(u32, u32)> {
    match *t.shape() {
        [c] => Ok((1, c)),
        [ref lead @ .., r, c] if lead.iter().all(|&d| d == 1) => Ok((r, c)),
        _ => Err(KernelError::msg(format!(
            "tensor of shape {:?} is not a 2-D tile view",
            t.shape()
        ))),
    }
}

/// A 1-D view `[n]` as the `[n, 1]` column view that row-broadcast
/// instructions use (same elements, any stride). 2-D `[n, 1]` views pass
/// through unchanged.
pub(crate) fn as_column(t: &ChipTensor) -> KResult<ChipTensor> {
    match *t.shape() {
        [n] => {
            let mut c = *t;
            c.ndims = 2;
            c.shapes[0] = n;
            c.shapes[1] = 1;
            c.strides[1] = 1;
            Ok(c)
        }
        [_, 1] => Ok(*t),
        _ => Err(KernelError::msg(format!(
            "expected a [n] or [n, 1] tensor, got shape {:?}",
            t.shape()
        ))),
    }
}

/// A sub-view of a kernel argument, as a kernel error on failure.
pub(crate) fn sub_view(t: &ChipTensor, offsets: &[u32], shape: &[u32]) -> KResult<ChipTensor> {
    Ok(t.view(offsets, shape)?)
}

/// A dense reshape of a kernel argument, as a kernel error on failure.
pub(crate) fn reshaped(t: &ChipTensor, shape: &[u32]) -> KResult<ChipTensor> {
    Ok(t.reshape(shape)?)
}

/// A tile handle for the top-left `rows × cols` part of `t`'s storage
/// (same offset; used for the shorter last chunk of a loop). The bytes are
/// inside `t`'s allocation because the new shape is not larger.
pub(crate) fn shrink(t: Tile, rows: u32, cols: u32) -> Tile {
    debug_assert!(rows as usize * cols as usize <= t.numel());
    Tile { rows, cols, ..t }
}

/// Elementwise tile operations used by the row-chunked helpers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Elementwise {
    /// out = x + y.
    Add,
    /// out = x · y.
    Mul,
    /// out = x + s.
    AddScalar(f32),
}

/// Flatten a dense tensor to `[rows, 128]` (or `[1, n]` when `n` is not a
/// multiple of 128), the tile layout of the vector kernels.
pub(crate) fn as_rows_of_128(t: &ChipTensor) -> KResult<ChipTensor> {
    let n = t.numel();
    let n32 = u32::try_from(n).map_err(|_| KernelError::msg(format!("tensor of {n} elements")))?;
    if n32 % 128 == 0 && n32 > 0 {
        reshaped(t, &[n32 / 128, 128])
    } else {
        reshaped(t, &[1, n32])
    }
}

/// `out = x ∘ y` (or `x ∘ s`) over 2-D views of the same `[rows, cols]`,
/// processed in row chunks that fit in UB (at most 128 rows, two tiles of
/// x's dtype). `y` is ignored for [`Elementwise::AddScalar`].
pub(crate) fn elementwise_rows(
    core: &mut Core,
    x: &ChipTensor,
    y: Option<&ChipTensor>,
    out: &ChipTensor,
    op: Elementwise,
) -> KResult<()> {
    let (rows, cols) = rows_cols(x)?;
    if rows_cols(out)? != (rows, cols) {
        return Err(KernelError::msg(format!(
            "output shape {:?} does not match input shape {:?}",
            out.shape(),
            x.shape()
        )));
    }
    if let Some(y) = y {
        if rows_cols(y)? != (rows, cols) {
            return Err(KernelError::msg(format!(
                "second input shape {:?} does not match first input shape {:?}",
                y.shape(),
                x.shape()
            )));
        }
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    // Two tiles of `chunk × cols` must fit in UB; leave headroom.
    let ub = 96 * 1024;
    let row_bytes = cols as usize * x.dtype.size();
    let chunk = (ub / row_bytes.max(1)).clamp(1, 128).min(rows as usize) as u32;
    let tx = core.alloc_tile(BufKind::Ub, chunk, cols, x.dtype)?;
    let ty = core.alloc_tile(BufKind::Ub, chunk, cols, x.dtype)?;
    let x2 = flatten_2d(x, rows, cols)?;
    let y2 = match y {
        Some(y) => Some(flatten_2d(y, rows, cols)?),
        None => None,
    };
    let o2 = flatten_2d(out, rows, cols)?;
    let mut r0 = 0;
    while r0 < rows {
        let n = chunk.min(rows - r0);
        let (a, b) = (shrink(tx, n, cols), shrink(ty, n, cols));
        core.tload(a, &sub_view(&x2, &[r0, 0], &[n, cols])?)?;
        match op {
            Elementwise::Add | Elementwise::Mul => {
                let y2 = y2
                    .as_ref()
                    .ok_or_else(|| KernelError::msg("missing second input"))?;
                core.tload(b, &sub_view(y2, &[r0, 0], &[n, cols])?)?;
                if op == Elementwise::Add {
                    core.tadd(a, a, b)?;
                } else {
                    core.tmul(a, a, b)?;
                }
            }
            Elementwise::AddScalar(s) => core.tadds(a, a, s)?,
        }
        core.tstore(&sub_view(&o2, &[r0, 0], &[n, cols])?, a)?;
        r0 += n;
    }
    Ok(())
}

/// The same view as a rank-2 `[rows, cols]` view (see [`rows_cols`]):
/// leading size-1 dims are dropped, rank 1 becomes one row. Strides are
/// kept, so strided views stay strided.
pub(crate) fn as_2d(t: &ChipTensor) -> KResult<ChipTensor> {
    let (r, c) = rows_cols(t)?;
    flatten_2d(t, r, c)
}

/// [`as_2d`] with the shape already known.
fn flatten_2d(t: &ChipTensor, rows: u32, cols: u32) -> KResult<ChipTensor> {
    let nd = t.ndims as usize;
    let mut v = *t;
    let (rs, cs) = if nd == 1 {
        (t.strides[0] * cols, t.strides[0])
    } else {
        (t.strides[nd - 2], t.strides[nd - 1])
    };
    v.ndims = 2;
    v.shapes = [rows, cols, 0, 0, 0];
    v.strides = [rs, cs, 0, 0, 0];
    Ok(v)
}

/// `n` values uniform in `[-1, 1]` rounded to bf16 (bits), drawn from
/// `rng` as [`fill_uniform`] does.
pub(crate) fn uniform_bf16(rng: &mut ChaCha8Rng, n: usize) -> Vec<u16> {
    let mut out = vec![0u16; n];
    fill_uniform(rng, &mut out, |x| bf16::from_f32(x).to_bits());
    out
}

/// `n` values uniform in `[-1, 1]` as f32, drawn from `rng` as
/// [`fill_uniform`] does.
pub(crate) fn uniform_f32(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    fill_uniform(rng, &mut out, |x| x);
    out
}

/// Elements below which a chunk is not worth a thread.
const GEN_CHUNK: usize = 1 << 16;

/// Fill `out` with `f(x)`, `x` uniform in `[-1, 1]`: exactly the values
/// `rng.gen_range(-1.0f32..=1.0)` gives element after element (one 32-bit
/// word of the stream each; the range sampler is built once instead of
/// per element), leaving `rng` where that loop would. Chunks run on
/// scoped threads, each on a copy of the stream moved to its chunk's word
/// position, so the result does not depend on the chunking.
fn fill_uniform<T: Send>(rng: &mut ChaCha8Rng, out: &mut [T], f: impl Fn(f32) -> T + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(out.len().div_ceil(GEN_CHUNK));
    fill_uniform_on(rng, out, f, threads);
}

/// [`fill_uniform`] on `threads` chunks.
fn fill_uniform_on<T: Send>(
    rng: &mut ChaCha8Rng,
    out: &mut [T],
    f: impl Fn(f32) -> T + Sync,
    threads: usize,
) {
    let dist = Uniform::new_inclusive(-1.0f32, 1.0);
    let start = rng.get_word_pos();
    let per = out.len().div_ceil(threads.max(1)).max(1);
    let fill = |k: usize, chunk: &mut [T]| {
        let mut r = rng.clone();
        r.set_word_pos(start + (k * per) as u128);
        for o in chunk {
            *o = f(dist.sample(&mut r));
        }
    };
    std::thread::scope(|s| {
        let mut chunks = out.chunks_mut(per).enumerate();
        // The first chunk runs here; the others on their own threads.
        let first = chunks.next();
        for (k, chunk) in chunks {
            let fill = &fill;
            s.spawn(move || fill(k, chunk));
        }
        if let Some((k, chunk)) = first {
            fill(k, chunk);
        }
    });
    rng.set_word_pos(start + out.len() as u128);
}

/// A runtime error for a malformed orchestration argument.
pub(crate) fn orch_err(msg: impl Into<String>) -> RuntimeError {
    RuntimeError::Orchestration(msg.into())
}

/// Widen bf16 bits to f64, exactly: a bf16 is the top half of an f32
/// (the golden's inner loops call this per element; a NaN stays a NaN).
#[inline]
pub(crate) fn bf16_f64(b: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(b) << 16))
}

/// Check that an orchestration tensor has the expected rank and dtype.
pub(crate) fn expect_tensor(
    what: &str,
    t: &simpler_runtime::Tensor,
    ndims: usize,
    dtype: DType,
) -> Result<(), RuntimeError> {
    if t.shape().len() != ndims || t.dtype() != dtype {
        return Err(orch_err(format!(
            "argument {what}: expected a {ndims}-D {dtype} tensor, got shape {:?} {}",
            t.shape(),
            t.dtype()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, RngCore, SeedableRng};

    #[test]
    fn bf16_widening_is_exact_for_every_bit_pattern() {
        for b in 0..=u16::MAX {
            let want = f64::from(bf16::from_bits(b).to_f32());
            let got = bf16_f64(b);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "0x{b:04x}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn parallel_draws_equal_the_sequential_loop_for_any_chunking() {
        let n = 3 * GEN_CHUNK + 17;
        let mut seq = ChaCha8Rng::seed_from_u64(5);
        seq.next_u32(); // start off a block boundary
        let want: Vec<f32> = (0..n).map(|_| seq.gen_range(-1.0f32..=1.0)).collect();
        let after = seq.next_u64();
        for threads in [1, 2, 3, 7, 64] {
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            rng.next_u32();
            let mut got = vec![0f32; n];
            fill_uniform_on(&mut rng, &mut got, |x| x, threads);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(bits(&got) == bits(&want), "{threads} threads");
            assert_eq!(rng.next_u64(), after, "{threads} threads: stream position");
        }
    }
}
