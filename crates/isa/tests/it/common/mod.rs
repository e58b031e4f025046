//! Shared test helpers: cores, GM, random tiles, and reference numerics that
//! are written independently of the crate (no `half`, no `simpler_isa::numeric`).
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simpler_chip::{ArchProfile, Gm};
use simpler_core::{topology::CoreType, ChipTensor, DType};
use simpler_isa::{BufKind, Core, Tile};

/// The float/int dtypes the arithmetic instructions support.
pub const NUM_DTYPES: [DType; 4] = [
    DType::Float32,
    DType::Bfloat16,
    DType::Float16,
    DType::Int32,
];
/// The float dtypes.
pub const FLOAT_DTYPES: [DType; 3] = [DType::Float32, DType::Bfloat16, DType::Float16];

pub fn gm() -> Arc<Gm> {
    Arc::new(Gm::new(16 << 20).unwrap())
}

pub fn aiv(gm: &Arc<Gm>) -> Core {
    Core::new(8, CoreType::Aiv, &ArchProfile::a2a3(), gm.clone())
}

pub fn aic(gm: &Arc<Gm>) -> Core {
    Core::new(0, CoreType::Aic, &ArchProfile::a2a3(), gm.clone())
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

// ---------------------------------------------------------------------------
// Reference numerics.

/// bf16 bits → value: bf16 is the top half of an f32.
pub fn bf16_val(b: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(b) << 16))
}

/// f16 bits → value, from the IEEE binary16 definition.
pub fn f16_val(b: u16) -> f64 {
    let sign = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 10) & 0x1f);
    let m = f64::from(b & 0x3ff);
    let mag = match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(e - 25),
    };
    sign * mag
}

/// Every non-negative finite value of a 16-bit format, ascending, with bits.
fn table(max_bits: u16, val: fn(u16) -> f64) -> Vec<(f64, u16)> {
    (0..=max_bits).map(|b| (val(b), b)).collect()
}

fn bf16_table() -> &'static [(f64, u16)] {
    static T: OnceLock<Vec<(f64, u16)>> = OnceLock::new();
    T.get_or_init(|| table(0x7f7f, bf16_val))
}

fn f16_table() -> &'static [(f64, u16)] {
    static T: OnceLock<Vec<(f64, u16)>> = OnceLock::new();
    T.get_or_init(|| table(0x7bff, f16_val))
}

/// Round `x` to the nearest entry of `t` (ties to the even bit pattern);
/// beyond the largest finite value by half an ulp or more → inf.
fn round_table(x: f64, t: &[(f64, u16)], inf: u16, nan: u16) -> u16 {
    if x.is_nan() {
        return nan;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    let (max, max_bits) = t[t.len() - 1];
    let ulp_top = max - t[t.len() - 2].0;
    if a >= max + ulp_top / 2.0 {
        return sign | inf;
    }
    // Largest entry <= a.
    let i = t.partition_point(|&(v, _)| v <= a) - 1;
    let (lo, lo_bits) = t[i];
    let bits = if a == lo {
        lo_bits
    } else if i + 1 == t.len() {
        max_bits
    } else {
        let (hi, hi_bits) = t[i + 1];
        let (dl, dh) = (a - lo, hi - a);
        if dl < dh || (dl == dh && lo_bits & 1 == 0) {
            lo_bits
        } else {
            hi_bits
        }
    };
    sign | bits
}

/// Reference round-to-nearest-even of a real value to bf16 bits.
pub fn to_bf16(x: f64) -> u16 {
    round_table(x, bf16_table(), 0x7f80, 0x7fc0)
}

/// Reference round-to-nearest-even of a real value to f16 bits.
pub fn to_f16(x: f64) -> u16 {
    round_table(x, f16_table(), 0x7c00, 0x7e00)
}

/// Reference f64 → i32: nearest, ties to even, saturating, NaN → 0.
pub fn to_i32_rne(x: f64) -> i32 {
    if x.is_nan() {
        return 0;
    }
    let f = x.floor();
    let d = x - f;
    let r = if d > 0.5 || (d == 0.5 && f % 2.0 != 0.0) {
        f + 1.0
    } else {
        f
    };
    r.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}

/// Encode the real value `x` as `dtype` bytes (RNE for the 16-bit floats,
/// `x as f32` for FLOAT32, exact integer for INT32).
pub fn encode(dtype: DType, x: f64) -> Vec<u8> {
    match dtype {
        DType::Float32 => (x as f32).to_le_bytes().to_vec(),
        DType::Bfloat16 => to_bf16(x).to_le_bytes().to_vec(),
        DType::Float16 => to_f16(x).to_le_bytes().to_vec(),
        DType::Int32 => {
            assert_eq!(x, x.trunc());
            (x as i32).to_le_bytes().to_vec()
        }
        _ => unreachable!(),
    }
}

/// Encode many values.
pub fn encode_all(dtype: DType, xs: &[f64]) -> Vec<u8> {
    xs.iter().flat_map(|&x| encode(dtype, x)).collect()
}

/// Decode `dtype` bytes to values.
pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let s = dtype.size();
    bytes
        .chunks_exact(s)
        .map(|b| match dtype {
            DType::Float32 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
            DType::Bfloat16 => bf16_val(u16::from_le_bytes(b.try_into().unwrap())),
            DType::Float16 => f16_val(u16::from_le_bytes(b.try_into().unwrap())),
            DType::Int32 => f64::from(i32::from_le_bytes(b.try_into().unwrap())),
            _ => unreachable!(),
        })
        .collect()
}

/// Assert two byte buffers of `dtype` are equal element by element (floats:
/// same bits, or both NaN).
#[track_caller]
pub fn assert_same(dtype: DType, got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let g = decode(dtype, got);
    let w = decode(dtype, want);
    let s = dtype.size();
    for i in 0..g.len() {
        let same_bits = got[i * s..(i + 1) * s] == want[i * s..(i + 1) * s];
        let both_nan = g[i].is_nan() && w[i].is_nan();
        assert!(
            same_bits || both_nan,
            "{what}: element {i} ({dtype}): got {} ({:02x?}), want {} ({:02x?})",
            g[i],
            &got[i * s..(i + 1) * s],
            w[i],
            &want[i * s..(i + 1) * s]
        );
    }
}

// ---------------------------------------------------------------------------
// Random data.

/// `n` random values exactly representable in `dtype`: floats uniform in
/// `[lo, hi)` then rounded (reference) to the dtype; INT32 uniform in
/// `[lo, hi)` (as integers).
pub fn rand_vals(r: &mut ChaCha8Rng, dtype: DType, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let x = r.gen_range(lo..hi);
            match dtype {
                DType::Float32 => f64::from(x as f32),
                DType::Bfloat16 => bf16_val(to_bf16(f64::from(x as f32))),
                DType::Float16 => f16_val(to_f16(x)),
                DType::Int32 => x.floor(),
                _ => unreachable!(),
            }
        })
        .collect()
}

/// Random full-range INT32 values.
pub fn rand_i32(r: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| f64::from(r.gen::<i32>())).collect()
}

/// Allocate a tile and fill it with `vals` (exactly representable).
pub fn tile_with(
    core: &mut Core,
    buf: BufKind,
    rows: u32,
    cols: u32,
    dtype: DType,
    vals: &[f64],
) -> Tile {
    let t = core.alloc_tile(buf, rows, cols, dtype).unwrap();
    put(core, t, vals);
    t
}

/// Overwrite a tile with `vals`.
pub fn put(core: &mut Core, t: Tile, vals: &[f64]) {
    assert_eq!(vals.len(), t.numel());
    core.tile_bytes_mut(t)
        .copy_from_slice(&encode_all(t.dtype, vals));
}

/// A tile's values.
pub fn get(core: &Core, t: Tile) -> Vec<f64> {
    decode(t.dtype, core.tile_bytes(t))
}

/// Fill a tile with a recognisable byte pattern.
pub fn sentinel(core: &mut Core, t: Tile) {
    for (i, b) in core.tile_bytes_mut(t).iter_mut().enumerate() {
        *b = 0xA5 ^ (i as u8);
    }
}

/// Allocate a dense GM tensor holding `vals` in `dtype`.
pub fn gm_tensor(gm: &Gm, shape: &[u32], dtype: DType, vals: &[f64]) -> ChipTensor {
    let n: usize = shape.iter().map(|&s| s as usize).product();
    assert_eq!(n, vals.len());
    let addr = gm.alloc((n * dtype.size()) as u64).unwrap();
    gm.write(addr, &encode_all(dtype, vals)).unwrap();
    ChipTensor::contiguous(addr, shape, dtype)
}

/// All bytes of a dense tensor's allocation.
pub fn gm_bytes(gm: &Gm, t: &ChipTensor) -> Vec<u8> {
    let mut b = vec![0u8; t.size as usize];
    gm.read(t.addr, &mut b).unwrap();
    b
}
