//! TMATMUL against a same-order f32 reference (bit-exact) and an f64
//! reference (within 1e-4), plus a GM → L1 → L0 → CUBE → GM pipeline.

use crate::common;

use common::*;
use simpler_core::{DType, KResult, KernelError};
use simpler_isa::{BufKind, Pipe, Tile};

fn expect_bad(r: KResult<()>, needle: &str) {
    match r {
        Err(KernelError::BadOperand { instr, msg }) => {
            assert_eq!(instr, "TMATMUL");
            assert!(
                msg.contains(needle),
                "message {msg:?} should mention {needle:?}"
            );
        }
        other => panic!("expected BadOperand mentioning {needle:?}, got {other:?}"),
    }
}

/// Reference in the contract's order: acc starts at c (or 0), then
/// acc = acc + a·b for k = 0, 1, …, each op rounded to f32.
fn matmul_f32(
    c0: &[f64],
    a: &[f64],
    b: &[f64],
    m: usize,
    k: usize,
    n: usize,
    acc: bool,
) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = if acc { c0[i * n + j] as f32 } else { 0.0f32 };
            for p in 0..k {
                let prod = a[i * k + p] as f32 * b[p * n + j] as f32;
                s += prod;
            }
            out[i * n + j] = s;
        }
    }
    out
}

/// Exact-ish reference in f64.
fn matmul_f64(
    c0: &[f64],
    a: &[f64],
    b: &[f64],
    m: usize,
    k: usize,
    n: usize,
    acc: bool,
) -> Vec<f64> {
    (0..m * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            let base = if acc { c0[idx] } else { 0.0 };
            base + (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f64>()
        })
        .collect()
}

#[test]
fn tmatmul_matches_references() {
    for (di, dtype) in FLOAT_DTYPES.into_iter().enumerate() {
        for (si, &(m, k, n)) in [
            (16usize, 32usize, 24usize),
            (5, 7, 3),
            (1, 1, 1),
            (64, 64, 64),
            (3, 0, 2),
        ]
        .iter()
        .enumerate()
        {
            let gm = gm();
            let mut core = aic(&gm);
            let mut r = rng(100 * di as u64 + si as u64);
            let av = rand_vals(&mut r, dtype, m * k, -1.0, 1.0);
            let bv = rand_vals(&mut r, dtype, k * n, -1.0, 1.0);
            let cv = rand_vals(&mut r, DType::Float32, m * n, -1.0, 1.0);
            let a = tile_with(&mut core, BufKind::L0A, m as u32, k as u32, dtype, &av);
            let b = tile_with(&mut core, BufKind::L0B, k as u32, n as u32, dtype, &bv);
            let c = tile_with(
                &mut core,
                BufKind::L0C,
                m as u32,
                n as u32,
                DType::Float32,
                &cv,
            );
            for accumulate in [true, false] {
                put(&mut core, c, &cv);
                core.tmatmul(c, a, b, accumulate).unwrap();
                let want = matmul_f32(&cv, &av, &bv, m, k, n, accumulate);
                let want_bytes: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
                let what = format!("{dtype} {m}x{k}x{n} acc={accumulate}");
                assert_same(DType::Float32, core.tile_bytes(c), &want_bytes, &what);
                let exact = matmul_f64(&cv, &av, &bv, m, k, n, accumulate);
                for (g, e) in get(&core, c).iter().zip(&exact) {
                    assert!((g - e).abs() < 1e-4, "{what}: {g} vs f64 {e}");
                }
                assert_eq!(get(&core, a), av, "a unchanged");
                assert_eq!(get(&core, b), bv, "b unchanged");
            }
        }
    }
}

#[test]
fn tmatmul_accumulates_across_calls_in_k_order() {
    // Splitting K into two TMATMULs (second with accumulate) equals one
    // TMATMUL over the full K, bit for bit, because the order is the same.
    let gm = gm();
    let mut core = aic(&gm);
    let (m, k, n) = (8usize, 16usize, 8usize);
    let mut r = rng(9);
    let av = rand_vals(&mut r, DType::Bfloat16, m * k, -1.0, 1.0);
    let bv = rand_vals(&mut r, DType::Bfloat16, k * n, -1.0, 1.0);
    let a = tile_with(
        &mut core,
        BufKind::L0A,
        m as u32,
        k as u32,
        DType::Bfloat16,
        &av,
    );
    let b = tile_with(
        &mut core,
        BufKind::L0B,
        k as u32,
        n as u32,
        DType::Bfloat16,
        &bv,
    );
    let full = core
        .alloc_tile(BufKind::L0C, m as u32, n as u32, DType::Float32)
        .unwrap();
    core.tmatmul(full, a, b, false).unwrap();

    let h = k / 2;
    let a0: Vec<f64> = (0..m).flat_map(|i| av[i * k..i * k + h].to_vec()).collect();
    let a1: Vec<f64> = (0..m)
        .flat_map(|i| av[i * k + h..(i + 1) * k].to_vec())
        .collect();
    let ta0 = tile_with(
        &mut core,
        BufKind::L0A,
        m as u32,
        h as u32,
        DType::Bfloat16,
        &a0,
    );
    let ta1 = tile_with(
        &mut core,
        BufKind::L0A,
        m as u32,
        h as u32,
        DType::Bfloat16,
        &a1,
    );
    let tb0 = tile_with(
        &mut core,
        BufKind::L0B,
        h as u32,
        n as u32,
        DType::Bfloat16,
        &bv[..h * n],
    );
    let tb1 = tile_with(
        &mut core,
        BufKind::L0B,
        h as u32,
        n as u32,
        DType::Bfloat16,
        &bv[h * n..],
    );
    let split = core
        .alloc_tile(BufKind::L0C, m as u32, n as u32, DType::Float32)
        .unwrap();
    sentinel(&mut core, split);
    core.tmatmul(split, ta0, tb0, false).unwrap();
    core.tmatmul(split, ta1, tb1, true).unwrap();
    assert_eq!(core.tile_bytes(split), core.tile_bytes(full));
}

#[test]
fn matmul_pipeline_gm_to_gm() {
    let gm = gm();
    let (m, k, n) = (16u32, 32u32, 16u32);
    let mut r = rng(77);
    let av = rand_vals(&mut r, DType::Float16, (m * k) as usize, -1.0, 1.0);
    let bt = rand_vals(&mut r, DType::Float16, (n * k) as usize, -1.0, 1.0);
    let ta = gm_tensor(&gm, &[m, k], DType::Float16, &av);
    // B is stored transposed ([n, k]) and loaded through a transposed view.
    let tb = gm_tensor(&gm, &[n, k], DType::Float16, &bt);
    let tc = gm_tensor(&gm, &[m, n], DType::Bfloat16, &vec![0.0; (m * n) as usize]);

    let run = |record: bool| -> (Vec<u8>, Vec<simpler_isa::InstrRecord>) {
        let mut core = aic(&gm);
        if record {
            core.start_recording();
        }
        let l1a = core.alloc_tile(BufKind::L1, m, k, DType::Float16).unwrap();
        let l1b = core.alloc_tile(BufKind::L1, k, n, DType::Float16).unwrap();
        let a = core.alloc_tile(BufKind::L0A, m, k, DType::Float16).unwrap();
        let b = core.alloc_tile(BufKind::L0B, k, n, DType::Float16).unwrap();
        let c = core.alloc_tile(BufKind::L0C, m, n, DType::Float32).unwrap();
        core.tload(l1a, &ta).unwrap();
        core.tload(l1b, &tb.transpose(0, 1)).unwrap();
        core.tmov(a, l1a).unwrap();
        core.tmov(b, l1b).unwrap();
        let (line, r) = (line!(), core.tmatmul(c, a, b, false));
        r.unwrap();
        core.tstore(&tc, c).unwrap();
        let recs = core.take_records();
        if record {
            let mm = &recs[4];
            assert_eq!(mm.loc.line(), line);
            assert!(mm.loc.file().ends_with("cube.rs"), "{}", mm.loc.file());
        }
        (gm_bytes(&gm, &tc), recs)
    };
    let (plain, _) = run(false);
    let (rec, recs) = run(true);
    assert_eq!(plain, rec, "recording changed results");

    // Reference: same-order f32 matmul of b = btᵀ, then bf16 RNE.
    let bv: Vec<f64> = (0..(k * n) as usize)
        .map(|idx| {
            let (p, j) = (idx / n as usize, idx % n as usize);
            bt[j * k as usize + p]
        })
        .collect();
    let want = matmul_f32(&[], &av, &bv, m as usize, k as usize, n as usize, false);
    let want: Vec<u8> = want
        .iter()
        .flat_map(|&v| to_bf16(f64::from(v)).to_le_bytes())
        .collect();
    assert_same(DType::Bfloat16, &plain, &want, "pipeline");

    let got: Vec<_> = recs.iter().map(|r| (r.mnemonic, r.pipe)).collect();
    assert_eq!(
        got,
        [
            ("TLOAD", Pipe::Mte2),
            ("TLOAD", Pipe::Mte2),
            ("TMOV", Pipe::Mte1),
            ("TMOV", Pipe::Mte1),
            ("TMATMUL", Pipe::Cube),
            ("TSTORE", Pipe::Fixp),
        ]
    );
    let mm = &recs[4];
    assert_eq!(mm.size, u64::from(m * n * k));
    assert_eq!(mm.reads[2], None, "no accumulate: c is not read");
    assert_eq!(
        recs[5].size,
        u64::from(m * n * 2),
        "TSTORE size is bytes written (bf16)"
    );
}

#[test]
fn tmatmul_operand_errors() {
    let gm = gm();
    let mut core = aic(&gm);
    let a = core
        .alloc_tile(BufKind::L0A, 4, 8, DType::Bfloat16)
        .unwrap();
    let b = core
        .alloc_tile(BufKind::L0B, 8, 4, DType::Bfloat16)
        .unwrap();
    let b16 = core.alloc_tile(BufKind::L0B, 8, 4, DType::Float16).unwrap();
    let bk = core
        .alloc_tile(BufKind::L0B, 6, 4, DType::Bfloat16)
        .unwrap();
    let c = core.alloc_tile(BufKind::L0C, 4, 4, DType::Float32).unwrap();
    let cw = core.alloc_tile(BufKind::L0C, 4, 5, DType::Float32).unwrap();
    let ch = core
        .alloc_tile(BufKind::L0C, 4, 4, DType::Bfloat16)
        .unwrap();
    let ai = core.alloc_tile(BufKind::L0A, 4, 8, DType::Int32).unwrap();
    let bi = core.alloc_tile(BufKind::L0B, 8, 4, DType::Int32).unwrap();
    let l1 = core.alloc_tile(BufKind::L1, 4, 8, DType::Bfloat16).unwrap();
    core.start_recording();
    expect_bad(core.tmatmul(c, a, b16, false), "dtype mismatch");
    expect_bad(core.tmatmul(c, a, bk, false), "shape mismatch");
    expect_bad(core.tmatmul(cw, a, b, false), "shape mismatch");
    expect_bad(core.tmatmul(ch, a, b, true), "must be FLOAT32");
    expect_bad(core.tmatmul(c, ai, bi, false), "INT32");
    expect_bad(core.tmatmul(c, l1, b, false), "must be in L0A");
    let b_in_a = Tile {
        buf: BufKind::L0A,
        ..a
    };
    expect_bad(core.tmatmul(c, a, b_in_a, false), "must be in L0B");
    expect_bad(core.tmatmul(a, a, b, false), "must be in L0C");
    assert!(core.take_records().is_empty());

    // L0A is 64 KiB: a 128x128 f32 tile fills it, one more byte overflows.
    let mut fresh = aic(&gm);
    fresh
        .alloc_tile(BufKind::L0A, 128, 128, DType::Float32)
        .unwrap();
    let e = fresh
        .alloc_tile(BufKind::L0A, 1, 1, DType::Float32)
        .unwrap_err();
    assert!(
        matches!(e, KernelError::LocalBufferOverflow { buffer: "L0A", .. }),
        "{e}"
    );
    // An AIV core has no L0 buffers at all.
    let mut v = aiv(&gm);
    assert!(v.alloc_tile(BufKind::L0C, 1, 1, DType::Float32).is_err());
}
