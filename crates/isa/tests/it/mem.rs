//! TLOAD, TSTORE and TMOV: views, partial tiles, conversions, errors, records.

use crate::common;

use common::*;
use proptest::prelude::*;
use simpler_core::{ChipTensor, DType, KResult, KernelError};
use simpler_isa::{BufKind, Pipe, Tile};

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

/// Element `[i, j]` of a 2-D view, read by the reference: the descriptor's
/// own address formula over the full tensor's values.
fn view_elem(all: &[f64], v: &ChipTensor, i: u32, j: u32) -> f64 {
    all[v.elem_offset(&[i, j]) as usize]
}

#[test]
fn tload_full_tile_every_dtype() {
    for (k, dtype) in NUM_DTYPES.into_iter().enumerate() {
        let gm = gm();
        let mut core = aiv(&gm);
        let vals = if dtype == DType::Int32 {
            rand_i32(&mut rng(k as u64), 48)
        } else {
            rand_vals(&mut rng(k as u64), dtype, 48, -9.0, 9.0)
        };
        let t = gm_tensor(&gm, &[6, 8], dtype, &vals);
        let x = core.alloc_tile(BufKind::Ub, 6, 8, dtype).unwrap();
        core.tload(x, &t).unwrap();
        assert_eq!(get(&core, x), vals, "{dtype}");
    }
    // Non-arithmetic dtypes move as bytes.
    let gm = gm();
    let mut core = aiv(&gm);
    let addr = gm.alloc(24).unwrap();
    let bytes: Vec<u8> = (0..24).map(|i| i * 7).collect();
    gm.write(addr, &bytes).unwrap();
    let t = ChipTensor::contiguous(addr, &[3, 8], DType::Int8);
    let x = core.alloc_tile(BufKind::Ub, 3, 8, DType::Int8).unwrap();
    core.tload(x, &t).unwrap();
    assert_eq!(core.tile_bytes(x), &bytes[..]);
}

#[test]
fn tload_partial_tile_fills_top_left_corner_only() {
    let gm = gm();
    let mut core = aiv(&gm);
    let vals = rand_vals(&mut rng(1), DType::Bfloat16, 15, -1.0, 1.0);
    let t = gm_tensor(&gm, &[3, 5], DType::Bfloat16, &vals);
    let x = core
        .alloc_tile(BufKind::Ub, 8, 16, DType::Bfloat16)
        .unwrap();
    sentinel(&mut core, x);
    let before = core.tile_bytes(x).to_vec();
    core.tload(x, &t).unwrap();
    let after = core.tile_bytes(x);
    for r in 0..8 {
        for c in 0..16 {
            let at = (r * 16 + c) * 2;
            let got = &after[at..at + 2];
            if r < 3 && c < 5 {
                assert_eq!(
                    bf16_val(u16::from_le_bytes([got[0], got[1]])),
                    vals[r * 5 + c]
                );
            } else {
                assert_eq!(got, &before[at..at + 2], "[{r}, {c}] must be untouched");
            }
        }
    }
}

#[test]
fn tload_strided_subview_and_transpose() {
    let gm = gm();
    let mut core = aiv(&gm);
    let (h, w) = (10u32, 12u32);
    let all = rand_vals(&mut rng(2), DType::Float32, (h * w) as usize, -100.0, 100.0);
    let t = gm_tensor(&gm, &[h, w], DType::Float32, &all);

    // Sub-view rows 2..6, cols 3..8 into a wider tile.
    let v = t.view(&[2, 3], &[4, 5]).unwrap();
    assert!(!v.is_contiguous);
    let x = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32).unwrap();
    sentinel(&mut core, x);
    core.tload(x, &v).unwrap();
    let got = get(&core, x);
    for i in 0..4 {
        for j in 0..5 {
            assert_eq!(
                got[(i * 8 + j) as usize],
                all[((2 + i) * w + 3 + j) as usize]
            );
        }
    }

    // Transposed view: shape [w, h], strides [1, w].
    let tr = t.transpose(0, 1);
    assert_eq!(tr.strides(), &[1, w]);
    let xt = core.alloc_tile(BufKind::Ub, w, h, DType::Float32).unwrap();
    core.tload(xt, &tr).unwrap();
    let got = get(&core, xt);
    for i in 0..w {
        for j in 0..h {
            assert_eq!(
                got[(i * h + j) as usize],
                all[(j * w + i) as usize],
                "transposed [{i}, {j}]"
            );
        }
    }

    // A sub-view of the transpose, into a tile with the same columns.
    let sv = tr.view(&[1, 2], &[6, 4]).unwrap();
    let xs = core.alloc_tile(BufKind::Ub, 6, 4, DType::Float32).unwrap();
    core.tload(xs, &sv).unwrap();
    let got = get(&core, xs);
    for i in 0..6 {
        for j in 0..4 {
            assert_eq!(got[(i * 4 + j) as usize], view_elem(&all, &sv, i, j));
            assert_eq!(
                got[(i * 4 + j) as usize],
                all[((2 + j) * w + 1 + i) as usize]
            );
        }
    }
}

#[test]
fn tload_ranks() {
    let gm = gm();
    let mut core = aiv(&gm);
    let vals: Vec<f64> = (0..30).map(f64::from).collect();
    // 1-D: one row.
    let t1 = gm_tensor(&gm, &[30], DType::Float32, &vals);
    let row = core.alloc_tile(BufKind::Ub, 2, 32, DType::Float32).unwrap();
    sentinel(&mut core, row);
    core.tload(row, &t1).unwrap();
    assert_eq!(&get(&core, row)[..30], &vals[..]);
    // Rank 3 with a leading 1 collapses to 2-D.
    let t3 = gm_tensor(&gm, &[1, 5, 6], DType::Float32, &vals);
    let x = core.alloc_tile(BufKind::Ub, 5, 6, DType::Float32).unwrap();
    core.tload(x, &t3).unwrap();
    assert_eq!(get(&core, x), vals);
    // Rank 3 with a leading dim that is not 1 is refused.
    let t3b = gm_tensor(&gm, &[2, 3, 5], DType::Float32, &vals);
    expect_bad(core.tload(x, &t3b), "TLOAD", "dims before the last two");
    // Rank 0 (hand-built descriptor) is refused.
    let mut t0 = t1;
    t0.ndims = 0;
    expect_bad(core.tload(x, &t0), "TLOAD", "rank");
}

#[test]
fn tload_errors() {
    let gm = gm();
    let mut core = aiv(&gm);
    let t = gm_tensor(&gm, &[4, 16], DType::Float32, &[1.0; 64]);
    let small = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32).unwrap();
    expect_bad(core.tload(small, &t), "TLOAD", "does not fit");
    let half = core.alloc_tile(BufKind::Ub, 4, 16, DType::Float16).unwrap();
    expect_bad(core.tload(half, &t), "TLOAD", "dtype mismatch");

    // A view reaching past its allocation: GM out of bounds, tile untouched.
    let x = core.alloc_tile(BufKind::Ub, 4, 16, DType::Float32).unwrap();
    sentinel(&mut core, x);
    let before = core.tile_bytes(x).to_vec();
    let mut past = t;
    past.start_offset = 8; // 32 bytes past the 256-byte allocation
    let e = core.tload(x, &past).unwrap_err();
    assert!(matches!(e, KernelError::GmOutOfBounds { .. }), "{e}");
    // Same through a strided (sub-view) path into a wider tile.
    let mut sv = t.view(&[0, 0], &[4, 8]).unwrap();
    sv.start_offset = 9;
    let e = core.tload(x, &sv).unwrap_err();
    assert!(matches!(e, KernelError::GmOutOfBounds { .. }), "{e}");
    assert_eq!(core.tile_bytes(x), &before[..]);
    // Freed memory is not readable either.
    let gone = gm_tensor(&gm, &[4, 16], DType::Float32, &[2.0; 64]);
    gm.free(gone.addr).unwrap();
    assert!(matches!(
        core.tload(x, &gone),
        Err(KernelError::GmOutOfBounds { .. })
    ));

    // Wrong buffer: L0A is not a TLOAD destination; L1 is (on AIC).
    let mut c = aic(&gm);
    let l0a = c.alloc_tile(BufKind::L0A, 4, 16, DType::Float32).unwrap();
    expect_bad(c.tload(l0a, &t), "TLOAD", "must be in L1 or UB");
    let l1 = c.alloc_tile(BufKind::L1, 4, 16, DType::Float32).unwrap();
    c.tload(l1, &t).unwrap();
    assert_eq!(get(&c, l1), vec![1.0; 64]);
    // AIV has no L1: a hand-made L1 tile is not allocated.
    let fake = Tile {
        buf: BufKind::L1,
        ..x
    };
    expect_bad(core.tload(fake, &t), "TLOAD", "not allocated");
}

#[test]
fn local_buffer_overflow_via_alloc_tile() {
    let gm = gm();
    let mut core = aiv(&gm);
    // UB is 192 KiB on a2a3: 48 KiB f32 tiles fit four times.
    for _ in 0..4 {
        core.alloc_tile(BufKind::Ub, 96, 128, DType::Float32)
            .unwrap();
    }
    let e = core
        .alloc_tile(BufKind::Ub, 1, 1, DType::Float32)
        .unwrap_err();
    assert!(
        matches!(e, KernelError::LocalBufferOverflow { buffer: "UB", .. }),
        "{e}"
    );
    let e = core
        .alloc_tile(BufKind::L1, 1, 1, DType::Float32)
        .unwrap_err();
    assert!(
        matches!(e, KernelError::LocalBufferOverflow { buffer: "L1", .. }),
        "AIV has no L1: {e}"
    );
    core.reset();
    assert_eq!(core.buffer_used(BufKind::Ub), 0);
    core.alloc_tile(BufKind::Ub, 96, 128, DType::Float32)
        .unwrap();
}

#[test]
fn tstore_same_dtype_full_partial_and_strided() {
    let gm = gm();
    let mut core = aiv(&gm);
    let vals = rand_vals(&mut rng(3), DType::Float32, 6 * 8, -5.0, 5.0);
    let x = tile_with(&mut core, BufKind::Ub, 6, 8, DType::Float32, &vals);

    let full = gm_tensor(&gm, &[6, 8], DType::Float32, &[0.0; 48]);
    core.tstore(&full, x).unwrap();
    assert_eq!(decode(DType::Float32, &gm_bytes(&gm, &full)), vals);

    // Partial: the 3x5 corner into a 3x5 tensor.
    let part = gm_tensor(&gm, &[3, 5], DType::Float32, &[0.0; 15]);
    core.tstore(&part, x).unwrap();
    let got = decode(DType::Float32, &gm_bytes(&gm, &part));
    for i in 0..3 {
        for j in 0..5 {
            assert_eq!(got[i * 5 + j], vals[i * 8 + j]);
        }
    }

    // Strided destination: the corner 4x3 into a sub-view of a 9x9 tensor;
    // everything outside the view keeps its value.
    let bg: Vec<f64> = (0..81).map(|i| f64::from(-i)).collect();
    let big = gm_tensor(&gm, &[9, 9], DType::Float32, &bg);
    let v = big.view(&[2, 4], &[4, 3]).unwrap();
    core.tstore(&v, x).unwrap();
    let got = decode(DType::Float32, &gm_bytes(&gm, &big));
    for r in 0..9 {
        for c in 0..9 {
            let want = if (2..6).contains(&r) && (4..7).contains(&c) {
                vals[(r - 2) * 8 + (c - 4)]
            } else {
                bg[r * 9 + c]
            };
            assert_eq!(got[r * 9 + c], want, "[{r}, {c}]");
        }
    }

    // Transposed destination: tile[i][j] lands at T[j][i].
    let sq = gm_tensor(&gm, &[8, 6], DType::Float32, &[0.0; 48]);
    core.tstore(&sq.transpose(0, 1), x).unwrap();
    let got = decode(DType::Float32, &gm_bytes(&gm, &sq));
    for i in 0..6 {
        for j in 0..8 {
            assert_eq!(got[j * 6 + i], vals[i * 8 + j]);
        }
    }
}

#[test]
fn tstore_converts_f32_to_bf16_bit_for_bit() {
    let gm = gm();
    let mut core = aiv(&gm);
    let mut vals = rand_vals(&mut rng(4), DType::Float32, 60, -1e4, 1e4);
    // Explicit ties and edges (see the vector tests for the derivations).
    vals.extend([
        1.0 + 2f64.powi(-8),
        1.0 + 3.0 * 2f64.powi(-8),
        -(1.0 + 2f64.powi(-8)),
        f64::from(f32::from_bits(0x7F7F_8000)),
        f64::from(f32::MAX),
        f64::NAN,
        -0.0,
        f64::NEG_INFINITY,
        f64::from(f32::from_bits(1)),
    ]);
    vals.resize(72, 0.25);
    let x = tile_with(&mut core, BufKind::Ub, 8, 9, DType::Float32, &vals);
    let out = gm_tensor(&gm, &[8, 9], DType::Bfloat16, &[0.0; 72]);
    core.tstore(&out, x).unwrap();
    let want: Vec<u8> = vals
        .iter()
        .flat_map(|&v| to_bf16(v).to_le_bytes())
        .collect();
    assert_same(
        DType::Bfloat16,
        &gm_bytes(&gm, &out)[..144],
        &want,
        "f32 -> bf16",
    );
    let g = gm_bytes(&gm, &out);
    let bits = |i: usize| u16::from_le_bytes([g[2 * i], g[2 * i + 1]]);
    assert_eq!(bits(60), 0x3F80, "tie rounds down to even");
    assert_eq!(bits(61), 0x3F82, "tie rounds up to even");
    assert_eq!(bits(63), 0x7F80, "halfway past max → inf");
    assert_eq!(bits(64), 0x7F80, "f32::MAX → inf");
    assert_eq!(bits(66), 0x8000, "-0 keeps its sign");

    // f32 → f16 of a partial corner, and bf16 → f32 / bf16 → f16.
    let out16 = gm_tensor(&gm, &[4, 9], DType::Float16, &[0.0; 36]);
    core.tstore(&out16, x).unwrap();
    let want: Vec<u8> = vals[..36]
        .iter()
        .flat_map(|&v| to_f16(v).to_le_bytes())
        .collect();
    assert_same(
        DType::Float16,
        &gm_bytes(&gm, &out16)[..72],
        &want,
        "f32 -> f16",
    );

    let bvals = rand_vals(&mut rng(5), DType::Bfloat16, 16, -70000.0, 70000.0);
    let b = tile_with(&mut core, BufKind::Ub, 2, 8, DType::Bfloat16, &bvals);
    let o32 = gm_tensor(&gm, &[2, 8], DType::Float32, &[0.0; 16]);
    core.tstore(&o32, b).unwrap();
    assert_eq!(
        decode(DType::Float32, &gm_bytes(&gm, &o32)),
        bvals,
        "bf16 -> f32 is exact"
    );
    let oh = gm_tensor(&gm, &[2, 8], DType::Float16, &[0.0; 16]);
    core.tstore(&oh, b).unwrap();
    let want: Vec<u8> = bvals
        .iter()
        .flat_map(|&v| to_f16(v).to_le_bytes())
        .collect();
    assert_same(
        DType::Float16,
        &gm_bytes(&gm, &oh),
        &want,
        "bf16 -> f16 (overflow to inf)",
    );
}

#[test]
fn tstore_errors() {
    let gm = gm();
    let mut core = aiv(&gm);
    let x = tile_with(&mut core, BufKind::Ub, 4, 4, DType::Float32, &[1.0; 16]);
    let xi = tile_with(&mut core, BufKind::Ub, 4, 4, DType::Int32, &[1.0; 16]);
    let t32 = gm_tensor(&gm, &[4, 4], DType::Float32, &[0.0; 16]);
    let ti = gm_tensor(&gm, &[4, 4], DType::Int32, &[0.0; 16]);
    let big = gm_tensor(&gm, &[4, 8], DType::Float32, &[0.0; 32]);
    expect_bad(
        core.tstore(&ti, x),
        "TSTORE",
        "cannot convert FLOAT32 to INT32",
    );
    expect_bad(
        core.tstore(&t32, xi),
        "TSTORE",
        "cannot convert INT32 to FLOAT32",
    );
    expect_bad(core.tstore(&big, x), "TSTORE", "does not fit");
    let mut past = t32;
    past.start_offset = 1;
    assert!(matches!(
        core.tstore(&past, x),
        Err(KernelError::GmOutOfBounds { .. })
    ));
    assert_eq!(
        decode(DType::Float32, &gm_bytes(&gm, &t32)),
        vec![0.0; 16],
        "nothing written"
    );
    let mut c = aic(&gm);
    let l1 = c.alloc_tile(BufKind::L1, 4, 4, DType::Float32).unwrap();
    expect_bad(c.tstore(&t32, l1), "TSTORE", "must be in UB or L0C");
}

#[test]
fn tmov_copies_and_checks() {
    let gm = gm();
    let mut c = aic(&gm);
    let vals = rand_vals(&mut rng(6), DType::Float16, 64, -2.0, 2.0);
    let l1 = tile_with(&mut c, BufKind::L1, 8, 8, DType::Float16, &vals);
    let a = c.alloc_tile(BufKind::L0A, 8, 8, DType::Float16).unwrap();
    let b = c.alloc_tile(BufKind::L0B, 8, 8, DType::Float16).unwrap();
    c.tmov(a, l1).unwrap();
    c.tmov(b, l1).unwrap();
    assert_eq!(get(&c, a), vals);
    assert_eq!(get(&c, b), vals);
    let cc = c.alloc_tile(BufKind::L0C, 8, 8, DType::Float16).unwrap();
    expect_bad(c.tmov(cc, l1), "TMOV", "must be in L0A or L0B");
    expect_bad(c.tmov(b, a), "TMOV", "must be in L1");
    let l1w = c.alloc_tile(BufKind::L1, 8, 16, DType::Float16).unwrap();
    expect_bad(c.tmov(a, l1w), "TMOV", "shape");
    let l1f = c.alloc_tile(BufKind::L1, 8, 8, DType::Float32).unwrap();
    expect_bad(c.tmov(a, l1f), "TMOV", "dtype");
}

#[test]
fn records_of_memory_instructions() {
    let gm = gm();
    let t = gm_tensor(&gm, &[8, 16], DType::Bfloat16, &[0.5; 128]);
    let sv = t.view(&[1, 2], &[4, 8]).unwrap();
    let out = gm_tensor(&gm, &[4, 8], DType::Float32, &[0.0; 32]);

    let mut v = aiv(&gm);
    v.start_recording();
    let x = v.alloc_tile(BufKind::Ub, 4, 8, DType::Bfloat16).unwrap();
    let y = v.alloc_tile(BufKind::Ub, 4, 8, DType::Float32).unwrap();
    let (l_load, r) = (line!(), v.tload(x, &sv));
    r.unwrap();
    v.tcvt(y, x).unwrap();
    let (l_store, r) = (line!(), v.tstore(&out, y));
    r.unwrap();
    let recs = v.take_records();
    assert_eq!(recs.len(), 3);
    let ld = &recs[0];
    assert_eq!(
        (ld.mnemonic, ld.pipe, ld.size),
        ("TLOAD", Pipe::Mte2, 4 * 8 * 2)
    );
    assert_eq!(ld.write, Some(x.range()));
    assert_eq!(ld.reads, [None; 3]);
    // Span from the first element (offset 1*16+2) to the last ((4)*16+9), inclusive.
    assert_eq!(ld.gm, Some((t.addr + 18 * 2, (3 * 16 + 7 + 1) * 2)));
    assert!(ld.loc.file().ends_with("mem.rs"), "{}", ld.loc.file());
    assert_eq!(ld.loc.line(), l_load);
    let st = &recs[2];
    assert_eq!(
        (st.mnemonic, st.pipe, st.size),
        ("TSTORE", Pipe::Mte3, 4 * 8 * 4)
    );
    assert_eq!(st.reads[0], Some(y.range()));
    assert_eq!(st.write, None);
    assert_eq!(st.gm, Some((out.addr, 128)));
    assert_eq!(st.loc.line(), l_store);

    let mut c = aic(&gm);
    c.start_recording();
    let l1 = c.alloc_tile(BufKind::L1, 4, 8, DType::Bfloat16).unwrap();
    let a = c.alloc_tile(BufKind::L0A, 4, 8, DType::Bfloat16).unwrap();
    let acc = c.alloc_tile(BufKind::L0C, 4, 8, DType::Float32).unwrap();
    c.tload(l1, &sv).unwrap();
    c.tmov(a, l1).unwrap();
    c.tstore(&out, acc).unwrap();
    let recs = c.take_records();
    let got: Vec<_> = recs.iter().map(|r| (r.mnemonic, r.pipe, r.size)).collect();
    assert_eq!(
        got,
        [
            ("TLOAD", Pipe::Mte2, 64),
            ("TMOV", Pipe::Mte1, 64),
            ("TSTORE", Pipe::Fixp, 128)
        ]
    );
    assert_eq!(recs[1].reads[0], Some(l1.range()));
    assert_eq!(recs[1].write, Some(a.range()));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    /// Any sub-view (optionally transposed) loads to what the descriptor's
    /// address formula says, and stores back to a fresh tensor unchanged.
    #[test]
    fn tload_tstore_round_trip(h in 1u32..12, w in 1u32..12, r0 in 0u32..12, c0 in 0u32..12,
                               vr in 1u32..12, vc in 1u32..12, transpose: bool, extra in 0u32..3) {
        let gm = gm();
        let mut core = aiv(&gm);
        let all: Vec<f64> = (0..h * w).map(|i| f64::from(i) * 0.5 - 3.0).collect();
        let t = gm_tensor(&gm, &[h, w], DType::Float32, &all);
        let base = if transpose { t.transpose(0, 1) } else { t };
        let (bh, bw) = (base.shape()[0], base.shape()[1]);
        let (r0, c0) = (r0 % bh, c0 % bw);
        let (vr, vc) = (vr.min(bh - r0), vc.min(bw - c0));
        let v = base.view(&[r0, c0], &[vr, vc]).unwrap();
        let x = core.alloc_tile(BufKind::Ub, vr + extra, vc + extra, DType::Float32).unwrap();
        core.tload(x, &v).unwrap();
        let got = get(&core, x);
        for i in 0..vr {
            for j in 0..vc {
                prop_assert_eq!(got[(i * (vc + extra) + j) as usize], view_elem(&all, &v, i, j));
            }
        }
        let out = gm_tensor(&gm, &[vr, vc], DType::Float32, &vec![0.0; (vr * vc) as usize]);
        core.tstore(&out, x).unwrap();
        let back = decode(DType::Float32, &gm_bytes(&gm, &out));
        for i in 0..vr {
            for j in 0..vc {
                prop_assert_eq!(back[(i * vc + j) as usize], view_elem(&all, &v, i, j));
            }
        }
    }
}
