//! The four paged-attention kernels. Argument slot orders are part of the
//! workload's interface (DESIGN §9); dumps and replays rely on them.

use simpler_core::{topology::CoreType, DType, KResult, KernelError};
use simpler_isa::{Args, BufKind, Core};
use simpler_runtime::KernelDef;

use crate::common::{as_2d, as_column, rows_cols};

/// Func id of [`qk_matmul`] (AIC).
pub const FUNC_QK: u32 = 0;
/// Func id of [`softmax_prepare`] (AIV).
pub const FUNC_SF: u32 = 1;
/// Func id of [`pv_matmul`] (AIC).
pub const FUNC_PV: u32 = 2;
/// Func id of [`online_update`] (AIV).
pub const FUNC_UP: u32 = 3;

/// The workload's kernels, registered under [`FUNC_QK`], [`FUNC_SF`],
/// [`FUNC_PV`] and [`FUNC_UP`].
pub fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(FUNC_QK, "qk_matmul", CoreType::Aic, qk_matmul),
        KernelDef::new(FUNC_SF, "softmax_prepare", CoreType::Aiv, softmax_prepare),
        KernelDef::new(FUNC_PV, "pv_matmul", CoreType::Aic, pv_matmul),
        KernelDef::new(FUNC_UP, "online_update", CoreType::Aiv, online_update),
    ]
}

fn shape_err(kernel: &str, msg: String) -> KernelError {
    KernelError::msg(format!("{kernel}: {msg}"))
}

/// QK (func 0, AIC): `sij = qi · kjᵀ` with f32 accumulation.
///
/// Slots: 0 `qi [q, D]` bf16 in (rows of the query), 1 `kj [bs, D]` bf16 in
/// (one key block of the cache), 2 `sij [q, bs]` f32 out.
///
/// TLOAD qi → L1 and the transposed (strided) view `kjᵀ [D, bs]` → L1,
/// TMOV to L0A/L0B, TMATMUL into an f32 L0C tile, TSTORE (FIXP) to sij.
///
/// # Errors
/// Shapes that do not chain, tiles beyond L0 capacity, instruction errors.
pub fn qk_matmul(core: &mut Core, args: &Args) -> KResult<()> {
    let qi = as_2d(&args.tensor(0)?)?;
    let kj = as_2d(&args.tensor(1)?)?;
    let sij = args.tensor(2)?;
    let (q, d) = rows_cols(&qi)?;
    let (bs, dk) = rows_cols(&kj)?;
    if d != dk || rows_cols(&sij)? != (q, bs) {
        return Err(shape_err(
            "qk_matmul",
            format!(
                "qi {:?} · kj {:?}ᵀ does not give sij {:?}",
                qi.shape(),
                kj.shape(),
                sij.shape()
            ),
        ));
    }
    let kt = kj.transpose(0, 1);
    let a1 = core.alloc_tile(BufKind::L1, q, d, qi.dtype)?;
    let b1 = core.alloc_tile(BufKind::L1, d, bs, kj.dtype)?;
    let a0 = core.alloc_tile(BufKind::L0A, q, d, qi.dtype)?;
    let b0 = core.alloc_tile(BufKind::L0B, d, bs, kj.dtype)?;
    let c = core.alloc_tile(BufKind::L0C, q, bs, DType::Float32)?;
    core.tload(a1, &qi)?;
    core.tload(b1, &kt)?;
    core.tmov(a0, a1)?;
    core.tmov(b0, b1)?;
    core.tmatmul(c, a0, b0, false)?;
    core.tstore(&sij, c)
}

/// SF (func 1, AIV): softmax numerator of one key block.
///
/// Slots: 0 `sij [q, valid_len]` f32 in (a view of QK's `[q, bs]` output;
/// strided when `valid_len < bs`), 1 `pij [q, bs]` bf16 out, 2 `mij [q]` f32
/// out, 3 `lij [q]` f32 out, 4 `scale` f32 scalar.
///
/// `s = sij · scale`; columns `>= valid_len` are padded with −inf (TFILLPAD);
/// `mij = rowmax(s)`, `pij = bf16(exp(s − mij))` (0 on padded columns),
/// `lij = rowsum(f32(pij))`.
///
/// # Errors
/// `valid_len` of 0 or above `bs`, mismatched rows, instruction errors.
pub fn softmax_prepare(core: &mut Core, args: &Args) -> KResult<()> {
    let sij = as_2d(&args.tensor(0)?)?;
    let pij = args.tensor(1)?;
    let mij = as_column(&args.tensor(2)?)?;
    let lij = as_column(&args.tensor(3)?)?;
    let scale = args.scalar_f32(4)?;
    let (q, valid) = rows_cols(&sij)?;
    let (qp, bs) = rows_cols(&pij)?;
    if qp != q
        || valid == 0
        || valid > bs
        || rows_cols(&mij)? != (q, 1)
        || rows_cols(&lij)? != (q, 1)
    {
        return Err(shape_err(
            "softmax_prepare",
            format!(
                "sij {:?}, pij {:?}, mij {:?}, lij {:?}: need sij [q, valid_len] with 1 <= valid_len <= bs, pij [q, bs], mij/lij [q]",
                sij.shape(),
                pij.shape(),
                mij.shape(),
                lij.shape()
            ),
        ));
    }
    let s = core.alloc_tile(BufKind::Ub, q, bs, DType::Float32)?;
    let p = core.alloc_tile(BufKind::Ub, q, bs, DType::Bfloat16)?;
    let m = core.alloc_tile(BufKind::Ub, q, 1, DType::Float32)?;
    let l = core.alloc_tile(BufKind::Ub, q, 1, DType::Float32)?;
    core.tload(s, &sij)?;
    core.tmuls(s, s, scale)?;
    core.tfillpad(s, valid, f32::NEG_INFINITY)?;
    core.trowmax(m, s)?;
    core.trowexpandsub(s, s, m)?;
    core.texp(s, s)?;
    core.tcvt(p, s)?;
    core.tcvt(s, p)?;
    core.trowsum(l, s)?;
    core.tstore(&pij, p)?;
    core.tstore(&mij, m)?;
    core.tstore(&lij, l)
}

/// PV (func 2, AIC): `oi_new = pij · vj` with f32 accumulation.
///
/// Slots: 0 `pij [q, bs]` bf16 in, 1 `vj [bs, D]` bf16 in (one value block of
/// the cache), 2 `oi_new [q, D]` f32 out.
///
/// # Errors
/// Shapes that do not chain, tiles beyond L0 capacity, instruction errors.
pub fn pv_matmul(core: &mut Core, args: &Args) -> KResult<()> {
    let pij = as_2d(&args.tensor(0)?)?;
    let vj = as_2d(&args.tensor(1)?)?;
    let oi = args.tensor(2)?;
    let (q, bs) = rows_cols(&pij)?;
    let (bv, d) = rows_cols(&vj)?;
    if bs != bv || rows_cols(&oi)? != (q, d) {
        return Err(shape_err(
            "pv_matmul",
            format!(
                "pij {:?} · vj {:?} does not give oi_new {:?}",
                pij.shape(),
                vj.shape(),
                oi.shape()
            ),
        ));
    }
    let a1 = core.alloc_tile(BufKind::L1, q, bs, pij.dtype)?;
    let b1 = core.alloc_tile(BufKind::L1, bs, d, vj.dtype)?;
    let a0 = core.alloc_tile(BufKind::L0A, q, bs, pij.dtype)?;
    let b0 = core.alloc_tile(BufKind::L0B, bs, d, vj.dtype)?;
    let c = core.alloc_tile(BufKind::L0C, q, d, DType::Float32)?;
    core.tload(a1, &pij)?;
    core.tload(b1, &vj)?;
    core.tmov(a0, a1)?;
    core.tmov(b0, b1)?;
    core.tmatmul(c, a0, b0, false)?;
    core.tstore(&oi, c)
}

/// UP (func 3, AIV): online-softmax update of the running state.
///
/// Slots: 0 `mij [q]` in, 1 `lij [q]` in, 2 `oi_new [q, D]` in, 3 `mi [q]`
/// inout, 4 `li [q]` inout, 5 `oi [q, D]` inout, 6 `dst [q, D]` inout (the
/// output rows of this batch and query tile), 7 `is_first` INT32 scalar,
/// 8 `is_last` INT32 scalar. All f32.
///
/// First block: `mi = mij, li = lij, oi = oi_new`. Otherwise
/// `m = max(mi, mij)`, `α = exp(mi − m)`, `β = exp(mij − m)`,
/// `li = α·li + β·lij`, `oi = α·oi + β·oi_new`, `mi = m`. `mi`, `li`, `oi`
/// are always stored; on the last block also `dst = oi / li`. The `[q]`
/// tensors are handled as `[q, 1]` column tiles.
///
/// # Errors
/// Mismatched shapes, instruction errors.
pub fn online_update(core: &mut Core, args: &Args) -> KResult<()> {
    let mij = as_column(&args.tensor(0)?)?;
    let lij = as_column(&args.tensor(1)?)?;
    let oi_new = as_2d(&args.tensor(2)?)?;
    let mi = as_column(&args.tensor(3)?)?;
    let li = as_column(&args.tensor(4)?)?;
    let oi = as_2d(&args.tensor(5)?)?;
    let dst = as_2d(&args.tensor(6)?)?;
    let is_first = args.scalar_i32(7)? != 0;
    let is_last = args.scalar_i32(8)? != 0;
    let (q, d) = rows_cols(&oi_new)?;
    for (name, t, want) in [
        ("mij", &mij, (q, 1)),
        ("lij", &lij, (q, 1)),
        ("mi", &mi, (q, 1)),
        ("li", &li, (q, 1)),
        ("oi", &oi, (q, d)),
        ("dst", &dst, (q, d)),
    ] {
        if rows_cols(t)? != want {
            return Err(shape_err(
                "online_update",
                format!(
                    "{name} has shape {:?}, expected {want:?} for oi_new {:?}",
                    t.shape(),
                    oi_new.shape()
                ),
            ));
        }
    }
    let f32t = DType::Float32;
    let mn = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let ln = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let on = core.alloc_tile(BufKind::Ub, q, d, f32t)?;
    core.tload(mn, &mij)?;
    core.tload(ln, &lij)?;
    core.tload(on, &oi_new)?;
    if is_first {
        core.tstore(&mi, mn)?;
        core.tstore(&li, ln)?;
        core.tstore(&oi, on)?;
        if is_last {
            core.trowexpanddiv(on, on, ln)?;
            core.tstore(&dst, on)?;
        }
        return Ok(());
    }
    let mo = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let lo = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let oo = core.alloc_tile(BufKind::Ub, q, d, f32t)?;
    let m = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let alpha = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    let beta = core.alloc_tile(BufKind::Ub, q, 1, f32t)?;
    core.tload(mo, &mi)?;
    core.tload(lo, &li)?;
    core.tload(oo, &oi)?;
    core.tmax(m, mo, mn)?;
    core.tsub(alpha, mo, m)?;
    core.texp(alpha, alpha)?;
    core.tsub(beta, mn, m)?;
    core.texp(beta, beta)?;
    // li = α·li + β·lij
    core.tmul(lo, alpha, lo)?;
    core.tmul(ln, beta, ln)?;
    core.tadd(lo, lo, ln)?;
    // oi = α·oi + β·oi_new
    core.trowexpandmul(oo, oo, alpha)?;
    core.trowexpandmul(on, on, beta)?;
    core.tadd(oo, oo, on)?;
    core.tstore(&mi, m)?;
    core.tstore(&li, lo)?;
    core.tstore(&oi, oo)?;
    if is_last {
        core.trowexpanddiv(on, oo, lo)?;
        core.tstore(&dst, on)?;
    }
    Ok(())
}
