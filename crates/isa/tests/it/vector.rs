//! VECTOR-pipe instructions against scalar references written in this file.
//!
//! Float references compute exactly in f64 and round to f32 with `as f32`
//! (correctly rounded for + − × ÷ √, since 53 ≥ 2·24 + 2), then round to the
//! tile dtype with the table-based reference in `common` — independent of the
//! crate's own conversion code.

use crate::common;

use common::*;
use rand::Rng;
use simpler_core::{DType, KResult, KernelError};
use simpler_isa::{numeric, BufKind, Core, Pipe, Tile};

const ROWS: u32 = 7;
const COLS: u32 = 13;
const N: usize = (ROWS * COLS) as usize;

type Bin = fn(&mut Core, Tile, Tile, Tile) -> KResult<()>;
type Un = fn(&mut Core, Tile, Tile) -> KResult<()>;

/// Expected bytes of a float op computed in f32 then rounded to `dtype`.
fn want_float(dtype: DType, xs: impl Iterator<Item = f32>) -> Vec<u8> {
    xs.flat_map(|r| encode(dtype, f64::from(r))).collect()
}

/// Expected bytes of an INT32 op computed exactly in i64 and wrapped.
fn want_int(xs: impl Iterator<Item = i64>) -> Vec<u8> {
    xs.flat_map(|r| (r as i32).to_le_bytes()).collect()
}

/// Inputs for a binary op of `dtype`; for divisions, no zero divisors and
/// (INT32) a few small ones plus the `i32::MIN / -1` overflow case.
fn binary_inputs(
    r: &mut rand_chacha::ChaCha8Rng,
    dtype: DType,
    n: usize,
    div: bool,
) -> (Vec<f64>, Vec<f64>) {
    if dtype == DType::Int32 {
        let a = rand_i32(r, n);
        let mut b = rand_i32(r, n);
        if div {
            for (i, v) in b.iter_mut().enumerate() {
                if i % 2 == 1 {
                    *v = f64::from(r.gen_range(-9..=9));
                }
                if *v == 0.0 {
                    *v = 7.0;
                }
            }
        }
        (a, b)
    } else {
        let a = rand_vals(r, dtype, n, -4.0, 4.0);
        let mut b = rand_vals(r, dtype, n, -4.0, 4.0);
        if div {
            for v in &mut b {
                if *v == 0.0 {
                    *v = 0.5;
                }
            }
        }
        (a, b)
    }
}

fn check_binary(name: &str, op: Bin, fr: fn(f64, f64) -> f64, ir: fn(i64, i64) -> i64, div: bool) {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        let gm = gm();
        let mut core = aiv(&gm);
        let mut r = rng(0x5eed_0000 + k as u64 + name.len() as u64 * 16);
        let (mut av, bv) = binary_inputs(&mut r, dtype, N, div);
        if div && dtype == DType::Int32 {
            av[0] = f64::from(i32::MIN);
        }
        let mut bv = bv;
        if div && dtype == DType::Int32 {
            bv[0] = -1.0;
        }
        let want = |x: &[f64], y: &[f64]| -> Vec<u8> {
            if dtype == DType::Int32 {
                want_int(x.iter().zip(y).map(|(&p, &q)| ir(p as i64, q as i64)))
            } else {
                want_float(dtype, x.iter().zip(y).map(|(&p, &q)| fr(p, q) as f32))
            }
        };
        let a = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &av);
        let b = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &bv);
        let d = core.alloc_tile(BufKind::Ub, ROWS, COLS, dtype).unwrap();
        sentinel(&mut core, d);
        op(&mut core, d, a, b).unwrap();
        let expect = want(&av, &bv);
        assert_same(
            dtype,
            core.tile_bytes(d),
            &expect,
            &format!("{name} {dtype}"),
        );
        assert_eq!(get(&core, a), av, "{name} {dtype}: a unchanged");
        assert_eq!(get(&core, b), bv, "{name} {dtype}: b unchanged");

        // dst aliases a, then b.
        op(&mut core, a, a, b).unwrap();
        assert_same(
            dtype,
            core.tile_bytes(a),
            &expect,
            &format!("{name} {dtype} dst=a"),
        );
        put(&mut core, a, &av);
        op(&mut core, b, a, b).unwrap();
        assert_same(
            dtype,
            core.tile_bytes(b),
            &expect,
            &format!("{name} {dtype} dst=b"),
        );
        // dst aliases both operands.
        let xs = if div { bv.clone() } else { av.clone() };
        put(&mut core, a, &xs);
        op(&mut core, a, a, a).unwrap();
        assert_same(
            dtype,
            core.tile_bytes(a),
            &want(&xs, &xs),
            &format!("{name} {dtype} x∘x"),
        );
    }
}

#[test]
fn tadd_matches_reference() {
    check_binary("TADD", Core::tadd, |x, y| x + y, |x, y| x + y, false);
}

#[test]
fn tsub_matches_reference() {
    check_binary("TSUB", Core::tsub, |x, y| x - y, |x, y| x - y, false);
}

#[test]
fn tmul_matches_reference() {
    check_binary("TMUL", Core::tmul, |x, y| x * y, |x, y| x * y, false);
}

#[test]
fn tdiv_matches_reference() {
    // i64 division truncates toward zero like i32; MIN / -1 = 2^31 wraps to MIN.
    check_binary("TDIV", Core::tdiv, |x, y| x / y, |x, y| x / y, true);
}

#[test]
fn tmax_matches_reference() {
    check_binary("TMAX", Core::tmax, f64::max, i64::max, false);
}

#[test]
fn tmin_matches_reference() {
    check_binary("TMIN", Core::tmin, f64::min, i64::min, false);
}

#[test]
fn int32_wrapping_by_hand() {
    let gm = gm();
    let mut core = aiv(&gm);
    let m = f64::from(i32::MAX);
    let a = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        4,
        DType::Int32,
        &[m, -m - 1.0, 7.0, -7.0],
    );
    let b = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        4,
        DType::Int32,
        &[1.0, -1.0, 2.0, 2.0],
    );
    let d = core.alloc_tile(BufKind::Ub, 1, 4, DType::Int32).unwrap();
    core.tadd(d, a, b).unwrap();
    // MAX + 1 wraps to MIN; MIN + (-1) wraps to MAX.
    assert_eq!(get(&core, d), vec![-m - 1.0, m, 9.0, -5.0]);
    core.tdiv(d, a, b).unwrap();
    // MIN / -1 wraps to MIN; 7 / 2 = 3 and -7 / 2 = -3 (truncation).
    assert_eq!(get(&core, d), vec![m, -m - 1.0, 3.0, -3.0]);
}

fn check_scalar(
    name: &str,
    op: fn(&mut Core, Tile, Tile, f32) -> KResult<()>,
    fr: fn(f64, f64) -> f64,
    ir: fn(i64, i64) -> i64,
) {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        for s in [0.375f32, -2.75, 3.7] {
            let gm = gm();
            let mut core = aiv(&gm);
            let mut r = rng(77 + k as u64);
            let xv = if dtype == DType::Int32 {
                rand_i32(&mut r, N)
            } else {
                rand_vals(&mut r, dtype, N, -4.0, 4.0)
            };
            let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &xv);
            let d = core.alloc_tile(BufKind::Ub, ROWS, COLS, dtype).unwrap();
            op(&mut core, d, x, s).unwrap();
            let want = if dtype == DType::Int32 {
                // INT32 takes `s as i32`: truncation toward zero.
                let si = f64::from(s).trunc() as i64;
                want_int(xv.iter().map(|&p| ir(p as i64, si)))
            } else {
                want_float(dtype, xv.iter().map(|&p| fr(p, f64::from(s)) as f32))
            };
            assert_same(
                dtype,
                core.tile_bytes(d),
                &want,
                &format!("{name} {dtype} s={s}"),
            );
            op(&mut core, x, x, s).unwrap();
            assert_same(
                dtype,
                core.tile_bytes(x),
                &want,
                &format!("{name} {dtype} s={s} in place"),
            );
        }
    }
}

#[test]
fn tadds_matches_reference() {
    check_scalar("TADDS", Core::tadds, |x, s| x + s, |x, s| x + s);
}

#[test]
fn tmuls_matches_reference() {
    check_scalar("TMULS", Core::tmuls, |x, s| x * s, |x, s| x * s);
}

#[test]
fn tmaxs_matches_reference() {
    check_scalar("TMAXS", Core::tmaxs, f64::max, i64::max);
}

fn check_unary(
    name: &str,
    op: Un,
    inputs: (f64, f64),
    fr: fn(f64) -> f32,
    ir: Option<fn(i64) -> i64>,
) {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        let gm = gm();
        let mut core = aiv(&gm);
        let mut r = rng(99 + k as u64);
        let xv = if dtype == DType::Int32 {
            rand_i32(&mut r, N)
        } else {
            rand_vals(&mut r, dtype, N, inputs.0, inputs.1)
        };
        let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &xv);
        let d = core.alloc_tile(BufKind::Ub, ROWS, COLS, dtype).unwrap();
        match (dtype, ir) {
            (DType::Int32, None) => {
                sentinel(&mut core, d);
                let before = core.tile_bytes(d).to_vec();
                let e = op(&mut core, d, x).unwrap_err();
                assert!(
                    matches!(&e, KernelError::BadOperand { instr, msg } if *instr == name && msg.contains("INT32")),
                    "{e}"
                );
                assert_eq!(
                    core.tile_bytes(d),
                    &before[..],
                    "{name}: dst untouched on error"
                );
            }
            (DType::Int32, Some(ir)) => {
                op(&mut core, d, x).unwrap();
                assert_same(
                    dtype,
                    core.tile_bytes(d),
                    &want_int(xv.iter().map(|&p| ir(p as i64))),
                    name,
                );
            }
            _ => {
                op(&mut core, d, x).unwrap();
                let want = want_float(dtype, xv.iter().map(|&p| fr(p)));
                assert_same(dtype, core.tile_bytes(d), &want, &format!("{name} {dtype}"));
                op(&mut core, x, x).unwrap();
                assert_same(
                    dtype,
                    core.tile_bytes(x),
                    &want,
                    &format!("{name} {dtype} in place"),
                );
            }
        }
    }
}

#[test]
fn texp_matches_reference() {
    // The contract fixes f32::exp; also check it against f64 below.
    check_unary(
        "TEXP",
        Core::texp,
        (-10.0, 10.0),
        |x| (x as f32).exp(),
        None,
    );
}

#[test]
fn tlog_matches_reference() {
    // Negative inputs give NaN, 0 gives -inf.
    check_unary("TLOG", Core::tlog, (-1.0, 100.0), |x| (x as f32).ln(), None);
}

#[test]
fn tsqrt_matches_reference() {
    check_unary(
        "TSQRT",
        Core::tsqrt,
        (-1.0, 100.0),
        |x| x.sqrt() as f32,
        None,
    );
}

#[test]
fn tabs_matches_reference() {
    // i64 abs of i32::MIN is 2^31, which wraps back to MIN.
    check_unary(
        "TABS",
        Core::tabs,
        (-4.0, 4.0),
        |x| x.abs() as f32,
        Some(i64::abs),
    );
}

#[test]
fn texp_tlog_close_to_f64() {
    let gm = gm();
    let mut core = aiv(&gm);
    let xv = rand_vals(&mut rng(5), DType::Float32, N, 0.01, 20.0);
    let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, DType::Float32, &xv);
    let d = core
        .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
        .unwrap();
    core.texp(d, x).unwrap();
    for (g, &v) in get(&core, d).iter().zip(&xv) {
        assert!(((g - v.exp()) / v.exp()).abs() < 1e-6, "exp({v}) = {g}");
    }
    core.tlog(d, x).unwrap();
    for (g, &v) in get(&core, d).iter().zip(&xv) {
        assert!(
            (g - v.ln()).abs() < 1e-6 * v.ln().abs().max(1.0),
            "ln({v}) = {g}"
        );
    }
}

#[test]
fn row_reductions_match_reference() {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        let gm = gm();
        let mut core = aiv(&gm);
        let mut r = rng(1234 + k as u64);
        let xv = if dtype == DType::Int32 {
            rand_i32(&mut r, N)
        } else {
            rand_vals(&mut r, dtype, N, -50.0, 50.0)
        };
        let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &xv);
        let d = core.alloc_tile(BufKind::Ub, ROWS, 1, dtype).unwrap();
        let rows: Vec<&[f64]> = xv.chunks(COLS as usize).collect();

        core.trowmax(d, x).unwrap();
        let maxes: Vec<f64> = rows
            .iter()
            .map(|row| row.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            .collect();
        assert_eq!(get(&core, d), maxes, "TROWMAX {dtype}");

        core.trowsum(d, x).unwrap();
        if dtype == DType::Int32 {
            let want = want_int(
                rows.iter()
                    .map(|row| row.iter().map(|&v| v as i64).sum::<i64>()),
            );
            assert_same(dtype, core.tile_bytes(d), &want, "TROWSUM INT32 (wrapping)");
        } else {
            // Same order as the contract: f32 accumulator from 0.0, left to right.
            let sums: Vec<f32> = rows
                .iter()
                .map(|row| {
                    let mut acc = 0.0f32;
                    for &v in row.iter() {
                        acc += v as f32;
                    }
                    acc
                })
                .collect();
            assert_same(
                dtype,
                core.tile_bytes(d),
                &want_float(dtype, sums.iter().copied()),
                &format!("TROWSUM {dtype}"),
            );
            if dtype == DType::Float32 {
                for (g, row) in get(&core, d).iter().zip(&rows) {
                    let exact: f64 = row.iter().sum();
                    assert!((g - exact).abs() < 1e-4, "TROWSUM {g} vs {exact}");
                }
            }
        }
    }
}

#[test]
fn trowsum_order_is_left_to_right() {
    // 2^24 + 1 + 1 summed left to right in f32: 2^24 + 1 rounds to 2^24
    // (tie to even), twice, so the result is 2^24; summed right to left it
    // would be 2 + 2^24 = 16777218 exactly.
    let gm = gm();
    let mut core = aiv(&gm);
    let big = 16_777_216.0;
    let x = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        3,
        DType::Float32,
        &[big, 1.0, 1.0],
    );
    let d = core.alloc_tile(BufKind::Ub, 1, 1, DType::Float32).unwrap();
    core.trowsum(d, x).unwrap();
    assert_eq!(get(&core, d), vec![big]);
}

fn check_rowexpand(
    name: &str,
    op: Bin,
    fr: fn(f64, f64) -> f64,
    ir: fn(i64, i64) -> i64,
    div: bool,
) {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        let gm = gm();
        let mut core = aiv(&gm);
        let mut r = rng(4321 + k as u64);
        let (xv, _) = binary_inputs(&mut r, dtype, N, div);
        let (cv, _) = binary_inputs(&mut r, dtype, ROWS as usize, div);
        let cv: Vec<f64> = cv
            .into_iter()
            .map(|v| if div && v == 0.0 { 3.0 } else { v })
            .collect();
        let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, dtype, &xv);
        let c = tile_with(&mut core, BufKind::Ub, ROWS, 1, dtype, &cv);
        let d = core.alloc_tile(BufKind::Ub, ROWS, COLS, dtype).unwrap();
        op(&mut core, d, x, c).unwrap();
        let idx = (0..N).map(|i| (xv[i], cv[i / COLS as usize]));
        let want = if dtype == DType::Int32 {
            want_int(idx.map(|(p, q)| ir(p as i64, q as i64)))
        } else {
            want_float(dtype, idx.map(|(p, q)| fr(p, q) as f32))
        };
        assert_same(dtype, core.tile_bytes(d), &want, &format!("{name} {dtype}"));
        op(&mut core, x, x, c).unwrap();
        assert_same(
            dtype,
            core.tile_bytes(x),
            &want,
            &format!("{name} {dtype} in place"),
        );
    }
}

#[test]
fn trowexpandsub_matches_reference() {
    check_rowexpand(
        "TROWEXPANDSUB",
        Core::trowexpandsub,
        |x, y| x - y,
        |x, y| x - y,
        false,
    );
}

#[test]
fn trowexpandmul_matches_reference() {
    check_rowexpand(
        "TROWEXPANDMUL",
        Core::trowexpandmul,
        |x, y| x * y,
        |x, y| x * y,
        false,
    );
}

#[test]
fn trowexpanddiv_matches_reference() {
    check_rowexpand(
        "TROWEXPANDDIV",
        Core::trowexpanddiv,
        |x, y| x / y,
        |x, y| x / y,
        true,
    );
}

#[test]
fn softmax_row_composition() {
    // A realistic composition: x - rowmax, exp, / rowsum, against f64.
    let gm = gm();
    let mut core = aiv(&gm);
    let xv = rand_vals(&mut rng(8), DType::Float32, N, -5.0, 5.0);
    let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, DType::Float32, &xv);
    let m = core
        .alloc_tile(BufKind::Ub, ROWS, 1, DType::Float32)
        .unwrap();
    core.trowmax(m, x).unwrap();
    core.trowexpandsub(x, x, m).unwrap();
    core.texp(x, x).unwrap();
    core.trowsum(m, x).unwrap();
    core.trowexpanddiv(x, x, m).unwrap();
    for (row, got) in xv
        .chunks(COLS as usize)
        .zip(get(&core, x).chunks(COLS as usize))
    {
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for (v, g) in row.iter().zip(got) {
            assert!((g - (v - mx).exp() / s).abs() < 1e-6);
        }
    }
}

// ---------------------------------------------------------------------------
// TCVT.

/// Float test values: random over a wide exponent range (f16 overflow and
/// subnormals included) plus specials.
fn wide_floats(r: &mut rand_chacha::ChaCha8Rng, n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|_| {
            let m: f32 = r.gen_range(-2.0..2.0);
            m * 2f32.powi(r.gen_range(-30..30))
        })
        .collect();
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        2.5,
        -3.5,
        0.5,
        1e10,
        -1e10,
        f32::MAX,
    ]);
    v
}

#[test]
fn tcvt_all_pairs_match_reference() {
    let mut r = rng(2024);
    let floats = wide_floats(&mut r, 200);
    let mut ints: Vec<i32> = (0..150).map(|_| r.gen()).collect();
    ints.extend((0..50).map(|_| r.gen_range(-70000..70000)));
    ints.extend([
        0,
        1,
        -1,
        i32::MAX,
        i32::MIN,
        65504,
        65520,
        65519,
        1 << 24 | 1,
    ]);
    for sd in NUM_DTYPES {
        // Source values exactly representable in sd.
        let src: Vec<f64> = match sd {
            DType::Int32 => ints.iter().map(|&i| f64::from(i)).collect(),
            _ => decode(
                sd,
                &encode_all(
                    sd,
                    &floats.iter().map(|&f| f64::from(f)).collect::<Vec<_>>(),
                ),
            ),
        };
        let n = src.len() as u32;
        for dd in NUM_DTYPES {
            let gm = gm();
            let mut core = aiv(&gm);
            let s = tile_with(&mut core, BufKind::Ub, 1, n, sd, &src);
            let d = core.alloc_tile(BufKind::Ub, 1, n, dd).unwrap();
            core.tcvt(d, s).unwrap();
            // One rounding of the exact value.
            let want: Vec<u8> = src
                .iter()
                .flat_map(|&x| match dd {
                    DType::Int32 => to_i32_rne(x).to_le_bytes().to_vec(),
                    DType::Float32 => {
                        // f64 → f32 `as` is RNE and saturates nothing (overflow → inf).
                        (x as f32).to_le_bytes().to_vec()
                    }
                    _ => encode(dd, x),
                })
                .collect();
            assert_same(dd, core.tile_bytes(d), &want, &format!("TCVT {sd} -> {dd}"));
        }
    }
}

/// Run one TCVT of a single f32 value to `dd` and return its bits.
fn cvt1(x: f32, dd: DType) -> Vec<u8> {
    let gm = gm();
    let mut core = aiv(&gm);
    let s = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        1,
        DType::Float32,
        &[f64::from(x)],
    );
    let d = core.alloc_tile(BufKind::Ub, 1, 1, dd).unwrap();
    core.tcvt(d, s).unwrap();
    core.tile_bytes(d).to_vec()
}

fn bits16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

#[test]
fn bf16_rounding_ties_and_edges() {
    let bf = |x: f32| bits16(&cvt1(x, DType::Bfloat16));
    // bf16 keeps 7 mantissa bits. 1.0 = 0x3F80; its neighbours are 1 + 2^-7
    // (0x3F81) and 1 + 2^-6 (0x3F82).
    // 1 + 2^-8 is halfway between 0x3F80 (even) and 0x3F81: rounds down.
    assert_eq!(bf(1.0 + 2f32.powi(-8)), 0x3F80);
    // 1 + 3·2^-8 is halfway between 0x3F81 and 0x3F82 (even): rounds up.
    assert_eq!(bf(1.0 + 3.0 * 2f32.powi(-8)), 0x3F82);
    // Just above a tie rounds up: 1 + 2^-8 + 2^-20.
    assert_eq!(bf(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 0x3F81);
    // Negative ties mirror: sign bit 0x8000.
    assert_eq!(bf(-(1.0 + 2f32.powi(-8))), 0xBF80);
    assert_eq!(bf(-(1.0 + 3.0 * 2f32.powi(-8))), 0xBF82);
    // Largest finite bf16 is 0x7F7F; f32 0x7F7F8000 is exactly halfway to
    // 2^128, and 0x7F7F is odd, so it rounds to inf (0x7F80).
    assert_eq!(bf(f32::from_bits(0x7F7F_7FFF)), 0x7F7F);
    assert_eq!(bf(f32::from_bits(0x7F7F_8000)), 0x7F80);
    assert_eq!(bf(f32::MAX), 0x7F80);
    assert_eq!(bf(-f32::MAX), 0xFF80);
    assert_eq!(bf(f32::NEG_INFINITY), 0xFF80);
    // NaN stays NaN (exponent all ones, non-zero mantissa).
    let n = bf(f32::NAN);
    assert_eq!(n & 0x7F80, 0x7F80);
    assert_ne!(n & 0x007F, 0);
    // Also through arithmetic: a bf16 TADD whose f32 sum is a tie.
    let gm = gm();
    let mut core = aiv(&gm);
    let a = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        2,
        DType::Bfloat16,
        &[1.0, 1.0 + 2f64.powi(-7)],
    );
    let b = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        2,
        DType::Bfloat16,
        &[2f64.powi(-8), 2f64.powi(-8)],
    );
    core.tadd(a, a, b).unwrap();
    // 1 + 2^-8 → 0x3F80 (down to even); 1 + 2^-7 + 2^-8 → 0x3F82 (up to even).
    assert_eq!(core.tile_bytes(a), &[0x80, 0x3F, 0x82, 0x3F]);
}

#[test]
fn f16_rounding_ties_and_edges() {
    let h = |x: f32| bits16(&cvt1(x, DType::Float16));
    // f16 keeps 10 mantissa bits; 1.0 = 0x3C00.
    assert_eq!(h(1.0 + 2f32.powi(-11)), 0x3C00); // tie, down to even
    assert_eq!(h(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02); // tie, up to even
    assert_eq!(h(-(1.0 + 3.0 * 2f32.powi(-11))), 0xBC02);
    // Max finite 65504 = 0x7BFF, ulp 32 there: 65519 rounds to it, the tie
    // 65520 rounds to inf (0x7BFF is odd).
    assert_eq!(h(65519.0), 0x7BFF);
    assert_eq!(h(65520.0), 0x7C00);
    assert_eq!(h(-65520.0), 0xFC00);
    // Subnormals: the smallest is 2^-24 (0x0001). 2^-25 is a tie between 0
    // and 0x0001 → 0; 3·2^-25 is a tie between 0x0001 and 0x0002 → 0x0002.
    assert_eq!(h(2f32.powi(-25)), 0x0000);
    assert_eq!(h(3.0 * 2f32.powi(-25)), 0x0002);
    let n = h(f32::NAN);
    assert_eq!(n & 0x7C00, 0x7C00);
    assert_ne!(n & 0x03FF, 0);
}

#[test]
fn int_float_conversions_by_hand() {
    let i = |x: f32| i32::from_le_bytes(cvt1(x, DType::Int32).try_into().unwrap());
    assert_eq!(i(2.5), 2);
    assert_eq!(i(3.5), 4);
    assert_eq!(i(-2.5), -2);
    assert_eq!(i(-0.5), 0);
    assert_eq!(i(2.500_000_2), 3);
    assert_eq!(i(2_147_483_520.0), 2_147_483_520); // largest f32 below 2^31
    assert_eq!(i(2_147_483_648.0), i32::MAX);
    assert_eq!(i(f32::NEG_INFINITY), i32::MIN);
    assert_eq!(i(f32::NAN), 0);

    // i32 → bf16 rounds the exact integer once. x = 2^30 + 2^22 + 1: bf16
    // keeps bits 30..23, bit 22 is set and bit 0 is a sticky 1, so x rounds
    // up to 2^30 + 2^23 = 0x4E81 (exponent 127+30 = 0x9D, mantissa 1).
    // Going through f32 first would give 2^30 + 2^22 (a tie) and then 0x4E80.
    let x = (1 << 30) + (1 << 22) + 1;
    assert_eq!(numeric::i32_to_bf16(x), 0x4E81);
    let gm = gm();
    let mut core = aiv(&gm);
    let s = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        3,
        DType::Int32,
        &[f64::from(x), 65519.0, 65520.0],
    );
    let d = core.alloc_tile(BufKind::Ub, 1, 3, DType::Bfloat16).unwrap();
    core.tcvt(d, s).unwrap();
    assert_eq!(bits16(&core.tile_bytes(d)[..2]), 0x4E81);
    let h = core.alloc_tile(BufKind::Ub, 1, 3, DType::Float16).unwrap();
    core.tcvt(h, s).unwrap();
    assert_eq!(bits16(&core.tile_bytes(h)[2..4]), 0x7BFF);
    assert_eq!(bits16(&core.tile_bytes(h)[4..6]), 0x7C00);
    assert_eq!(numeric::i32_to_f16(65520), 0x7C00);
    assert_eq!(numeric::f32_to_i32_rne(-1.5), -2);
}

#[test]
fn tcvt_in_place_and_same_dtype() {
    let gm = gm();
    let mut core = aiv(&gm);
    let xv = rand_vals(&mut rng(3), DType::Float32, N, -1000.0, 1000.0);
    let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, DType::Float32, &xv);
    // Reinterpret the same bytes as an INT32 tile: in-place f32 → i32.
    let xi = Tile {
        dtype: DType::Int32,
        ..x
    };
    core.tcvt(xi, x).unwrap();
    let want: Vec<f64> = xv.iter().map(|&v| f64::from(to_i32_rne(v))).collect();
    assert_eq!(get(&core, xi), want);
    let y = core
        .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Int32)
        .unwrap();
    core.tcvt(y, xi).unwrap();
    assert_eq!(core.tile_bytes(y), core.tile_bytes(xi));
}

// ---------------------------------------------------------------------------
// Fills.

#[test]
fn tfill_and_tfillpad() {
    for dtype in NUM_DTYPES {
        for v in [f32::NEG_INFINITY, 1.5, 0.1, -7.9] {
            let gm = gm();
            let mut core = aiv(&gm);
            let t = core.alloc_tile(BufKind::Ub, ROWS, COLS, dtype).unwrap();
            let want_v = match dtype {
                // `v as i32`: -inf saturates to MIN, 1.5 → 1, -7.9 → -7.
                DType::Int32 => (v as f64)
                    .trunc()
                    .clamp(f64::from(i32::MIN), f64::from(i32::MAX)),
                _ => decode(dtype, &encode(dtype, f64::from(v)))[0],
            };
            core.tfill(t, v).unwrap();
            assert!(
                get(&core, t).iter().all(|&x| x == want_v),
                "TFILL {dtype} {v}"
            );

            let orig = rand_vals(&mut rng(11), dtype, N, -4.0, 4.0);
            for valid in [0, 5, COLS] {
                put(&mut core, t, &orig);
                core.tfillpad(t, valid, v).unwrap();
                let got = get(&core, t);
                for (i, (&g, &o)) in got.iter().zip(&orig).enumerate() {
                    let want = if (i as u32 % COLS) < valid { o } else { want_v };
                    assert_eq!(g, want, "TFILLPAD {dtype} v={v} valid={valid} at {i}");
                }
            }
            let e = core.tfillpad(t, COLS + 1, v).unwrap_err();
            assert!(
                matches!(
                    e,
                    KernelError::BadOperand {
                        instr: "TFILLPAD",
                        ..
                    }
                ),
                "{e}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Error paths.

fn expect_bad(r: KResult<()>, instr: &str, needle: &str) {
    match r {
        Err(KernelError::BadOperand { instr: i, msg }) => {
            assert_eq!(i, instr);
            assert!(
                msg.contains(needle),
                "{instr}: message {msg:?} should mention {needle:?}"
            );
        }
        other => panic!("{instr}: expected BadOperand mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn vector_operand_errors() {
    let gm = gm();
    let mut core = aiv(&gm);
    let a = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32).unwrap();
    let b = core.alloc_tile(BufKind::Ub, 8, 4, DType::Float32).unwrap();
    let h = core.alloc_tile(BufKind::Ub, 4, 8, DType::Bfloat16).unwrap();
    let i16t = core.alloc_tile(BufKind::Ub, 4, 8, DType::Int16).unwrap();
    let col = core.alloc_tile(BufKind::Ub, 4, 1, DType::Float32).unwrap();
    let col2 = core.alloc_tile(BufKind::Ub, 4, 2, DType::Float32).unwrap();
    core.start_recording();
    expect_bad(core.tadd(a, a, b), "TADD", "shape");
    expect_bad(core.tsub(a, a, h), "TSUB", "dtype");
    expect_bad(core.tmul(i16t, i16t, i16t), "TMUL", "INT16");
    expect_bad(core.texp(h, a), "TEXP", "dtype");
    expect_bad(core.trowmax(a, a), "TROWMAX", "4x1");
    expect_bad(core.trowsum(col, b), "TROWSUM", "shape");
    expect_bad(core.trowexpandsub(a, a, col2), "TROWEXPANDSUB", "col");
    expect_bad(core.tcvt(b, h), "TCVT", "shape");
    expect_bad(core.tcvt(i16t, a), "TCVT", "INT16");
    expect_bad(core.tfill(i16t, 1.0), "TFILL", "INT16");
    // A tile that was never allocated (past the used part of UB).
    let ghost = Tile {
        offset: 1 << 16,
        ..a
    };
    expect_bad(core.tadd(ghost, a, a), "TADD", "not allocated");
    // Misaligned for its element size.
    let skew = Tile {
        offset: a.offset + 2,
        rows: 1,
        cols: 4,
        ..a
    };
    expect_bad(core.tabs(skew, skew), "TABS", "aligned");
    assert!(
        core.take_records().is_empty(),
        "failed instructions are not recorded"
    );

    // Wrong buffer: an AIC core has no UB; its L1 tiles are refused.
    let mut c = aic(&gm);
    let l1 = c.alloc_tile(BufKind::L1, 4, 8, DType::Float32).unwrap();
    expect_bad(c.tadd(l1, l1, l1), "TADD", "must be in UB");
    expect_bad(c.tfill(l1, 0.0), "TFILL", "UB");
}

#[test]
fn int32_division_by_zero_is_an_error() {
    let gm = gm();
    let mut core = aiv(&gm);
    let a = tile_with(
        &mut core,
        BufKind::Ub,
        2,
        3,
        DType::Int32,
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    );
    let b = tile_with(
        &mut core,
        BufKind::Ub,
        2,
        3,
        DType::Int32,
        &[1.0, 1.0, 1.0, 1.0, 0.0, 1.0],
    );
    let d = core.alloc_tile(BufKind::Ub, 2, 3, DType::Int32).unwrap();
    sentinel(&mut core, d);
    let before = core.tile_bytes(d).to_vec();
    expect_bad(core.tdiv(d, a, b), "TDIV", "b[1, 1]");
    assert_eq!(core.tile_bytes(d), &before[..], "dst untouched");
    let col = tile_with(&mut core, BufKind::Ub, 2, 1, DType::Int32, &[3.0, 0.0]);
    expect_bad(core.trowexpanddiv(a, a, col), "TROWEXPANDDIV", "col[1, 0]");
    assert_eq!(
        get(&core, a),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "src untouched"
    );
    // Float division by zero is IEEE.
    let fa = tile_with(
        &mut core,
        BufKind::Ub,
        1,
        3,
        DType::Float32,
        &[1.0, -1.0, 0.0],
    );
    let fz = tile_with(&mut core, BufKind::Ub, 1, 3, DType::Float32, &[0.0; 3]);
    core.tdiv(fa, fa, fz).unwrap();
    let g = get(&core, fa);
    assert_eq!((g[0], g[1]), (f64::INFINITY, f64::NEG_INFINITY));
    assert!(g[2].is_nan());
}

#[test]
fn recording_does_not_change_results_and_records_vector_ops() {
    let run = |record: bool| -> (Vec<u8>, Vec<simpler_isa::InstrRecord>) {
        let gm = gm();
        let mut core = aiv(&gm);
        if record {
            core.start_recording();
        }
        let xv = rand_vals(&mut rng(42), DType::Bfloat16, N, -3.0, 3.0);
        let x = tile_with(&mut core, BufKind::Ub, ROWS, COLS, DType::Bfloat16, &xv);
        let m = core
            .alloc_tile(BufKind::Ub, ROWS, 1, DType::Bfloat16)
            .unwrap();
        let f = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        core.tfillpad(x, 9, f32::NEG_INFINITY).unwrap();
        core.trowmax(m, x).unwrap();
        core.trowexpandsub(x, x, m).unwrap();
        core.texp(x, x).unwrap();
        core.tcvt(f, x).unwrap();
        core.tmuls(f, f, 0.5).unwrap();
        let mut out = core.tile_bytes(f).to_vec();
        out.extend_from_slice(core.tile_bytes(m));
        (out, core.take_records())
    };
    let (plain, none) = run(false);
    let (rec, recs) = run(true);
    assert!(none.is_empty());
    assert_eq!(plain, rec, "recording changed results");
    let names: Vec<&str> = recs.iter().map(|r| r.mnemonic).collect();
    assert_eq!(
        names,
        [
            "TFILLPAD",
            "TROWMAX",
            "TROWEXPANDSUB",
            "TEXP",
            "TCVT",
            "TMULS"
        ]
    );
    for r in &recs {
        assert_eq!(r.pipe, Pipe::Vector);
        assert!(r.loc.file().ends_with("vector.rs"), "{}", r.loc.file());
        assert_eq!(r.gm, None);
    }
    let n = u64::from(ROWS * COLS);
    let sizes: Vec<u64> = recs.iter().map(|r| r.size).collect();
    assert_eq!(sizes, [n, u64::from(ROWS), n, n, n, n]);
    // TROWEXPANDSUB reads x and m and writes x.
    let r = &recs[2];
    assert_eq!(r.reads[0].unwrap().len, ROWS * COLS * 2);
    assert_eq!(r.reads[1].unwrap().len, ROWS * 2);
    assert_eq!(r.write, r.reads[0]);
    // TCVT writes the f32 tile (4-byte elements).
    assert_eq!(recs[4].write.unwrap().len, ROWS * COLS * 4);
}
