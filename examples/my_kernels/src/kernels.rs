//! The kernels: plain functions that read their arguments from the
//! 50-slot array a device kernel gets, and move and compute only through
//! tile instructions on [`Core`] (so a replay can time each one).

use simpler::core::{ChipTensor, DType};
use simpler::isa::{Args, BufKind, Core, KResult, KernelError};

/// Func id of [`matmul`]: tasks name kernels by func id.
pub const MATMUL: u32 = 0;
/// Func id of [`axpy_relu`].
pub const AXPY_RELU: u32 = 1;

/// AIC kernel: `h = x · w`, f32 in, f32 accumulation.
///
/// Slots: 0 `x [M, K] f32` in, 1 `w [K, N] f32` in, 2 `h [M, N] f32` out.
///
/// # Errors
/// Shapes that do not chain, or a tile that does not fit its buffer.
pub fn matmul(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, w, h) = (args.tensor(0)?, args.tensor(1)?, args.tensor(2)?);
    let ((m, k), (k2, n)) = (rows_cols(&x)?, rows_cols(&w)?);
    if k2 != k || rows_cols(&h)? != (m, n) {
        return Err(KernelError::msg(format!(
            "matmul: x {:?} · w {:?} does not give h {:?}",
            x.shape(),
            w.shape(),
            h.shape()
        )));
    }
    let x1 = core.alloc_tile(BufKind::L1, m, k, DType::Float32)?;
    let w1 = core.alloc_tile(BufKind::L1, k, n, DType::Float32)?;
    core.tload(x1, &x)?; // MTE2: GM -> L1
    core.tload(w1, &w)?;
    let x0 = core.alloc_tile(BufKind::L0A, m, k, DType::Float32)?;
    let w0 = core.alloc_tile(BufKind::L0B, k, n, DType::Float32)?;
    core.tmov(x0, x1)?; // MTE1: L1 -> L0A / L0B
    core.tmov(w0, w1)?;
    let acc = core.alloc_tile(BufKind::L0C, m, n, DType::Float32)?;
    core.tmatmul(acc, x0, w0, false)?; // CUBE
    core.tstore(&h, acc) // FIXP: L0C -> GM
}

/// AIV kernel, one SPMD block: `out = relu(alpha · h + bias)` on this
/// block's rows.
///
/// Slots: 0 `h [M, N] f32` in, 1 `bias [M, N] f32` in, 2 `out [M, N] f32`
/// out, 3 `alpha` f32 scalar. Block `b` of `block_num` owns rows
/// `b·M/block_num .. (b+1)·M/block_num`.
///
/// # Errors
/// Shapes that differ, rows that do not split evenly over the blocks, or
/// a tile that does not fit in UB.
pub fn axpy_relu(core: &mut Core, args: &Args) -> KResult<()> {
    let (h, bias, out) = (args.tensor(0)?, args.tensor(1)?, args.tensor(2)?);
    let alpha = args.scalar_f32(3)?;
    let (m, n) = rows_cols(&h)?;
    if rows_cols(&bias)? != (m, n) || rows_cols(&out)? != (m, n) {
        return Err(KernelError::msg(
            "axpy_relu: h, bias and out differ in shape",
        ));
    }
    let (block, blocks) = (args.block_idx()?, args.block_num()?);
    let rows = match u32::try_from(blocks) {
        Ok(b) if b > 0 && m % b == 0 && (0..blocks).contains(&block) => m / b,
        _ => {
            return Err(KernelError::msg(format!(
                "axpy_relu: {m} rows over {blocks} blocks"
            )))
        }
    };
    let row0 = block as u32 * rows;
    // This block's rows, as views of the arguments: nothing moves until TLOAD.
    let mine = |t: &ChipTensor| t.view(&[row0, 0], &[rows, n]).map_err(KernelError::msg);
    let t = core.alloc_tile(BufKind::Ub, rows, n, DType::Float32)?;
    let b = core.alloc_tile(BufKind::Ub, rows, n, DType::Float32)?;
    core.tload(t, &mine(&h)?)?; // MTE2: GM -> UB
    core.tload(b, &mine(&bias)?)?;
    core.tmuls(t, t, alpha)?; // VECTOR
    core.tadd(t, t, b)?;
    core.tmaxs(t, t, 0.0)?; // relu
    core.tstore(&mine(&out)?, t) // MTE3: UB -> GM
}

/// `[rows, cols]` of a 2-D tensor, or an error naming its shape.
fn rows_cols(t: &ChipTensor) -> KResult<(u32, u32)> {
    match *t.shape() {
        [r, c] => Ok((r, c)),
        ref s => Err(KernelError::msg(format!(
            "expected a 2-D tensor, got shape {s:?}"
        ))),
    }
}
