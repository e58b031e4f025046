//! `Scalar::as_f64` / `as_i64` for every dtype, against a decoder written
//! here from the formats' definitions (sign, exponent, mantissa), not the
//! crate's own code. Regression for issue "(3/6) One typed format layer":
//! BF16 1.0 read as 16256, FP16 1.0 as 15360, INT8 −1 as 1.8e19.

use proptest::prelude::*;
use simpler_core::{DType, Scalar};

/// IEEE-style binary float with `e` exponent and `m` mantissa bits, bias
/// 2^(e−1) − 1, the top exponent meaning inf/NaN when `ieee_special`.
fn binary_float(bits: u64, e: u32, m: u32, ieee_special: bool) -> f64 {
    let sign = if (bits >> (e + m)) & 1 == 1 {
        -1.0
    } else {
        1.0
    };
    let exp = ((bits >> m) & ((1 << e) - 1)) as i32;
    let man = (bits & ((1 << m) - 1)) as f64;
    let bias = (1 << (e - 1)) - 1;
    let top = (1 << e) - 1;
    if ieee_special && exp == top {
        return if man == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if exp == 0 {
        sign * man * 2f64.powi(1 - bias - m as i32)
    } else {
        sign * (1.0 + man * 2f64.powi(-(m as i32))) * 2f64.powi(exp - bias)
    }
}

/// The value a slot holding `bits` has as `dtype`, from first principles.
fn independent(bits: u64, dtype: DType) -> f64 {
    match dtype {
        DType::Float32 => binary_float(bits & 0xffff_ffff, 8, 23, true),
        DType::Float16 => binary_float(bits & 0xffff, 5, 10, true),
        DType::Bfloat16 => binary_float(bits & 0xffff, 8, 7, true),
        DType::Int8 => ((bits & 0xff) as i64 - if bits & 0x80 != 0 { 256 } else { 0 }) as f64,
        DType::Int16 => {
            ((bits & 0xffff) as i64 - if bits & 0x8000 != 0 { 1 << 16 } else { 0 }) as f64
        }
        DType::Int32 => {
            ((bits & 0xffff_ffff) as i64 - if bits & 0x8000_0000 != 0 { 1 << 32 } else { 0 }) as f64
        }
        DType::Int64 => (bits as i128 - if bits >> 63 == 1 { 1i128 << 64 } else { 0 }) as f64,
        DType::Uint8 => (bits & 0xff) as f64,
        DType::Uint16 => (bits & 0xffff) as f64,
        DType::Uint32 => (bits & 0xffff_ffff) as f64,
        DType::Uint64 => bits as f64,
        DType::Bool => f64::from(u8::from(bits & 0xff != 0)),
        // E4M3FN: like binary_float(4, 3) but only S.1111.111 is NaN.
        DType::Fp8E4M3Fn if bits & 0x7f == 0x7f => f64::NAN,
        DType::Fp8E4M3Fn => binary_float(bits & 0xff, 4, 3, false),
        DType::Fp8E8M0 if bits & 0xff == 0xff => f64::NAN,
        DType::Fp8E8M0 => 2f64.powi((bits & 0xff) as i32 - 127),
        DType::Fp4E2M1 => binary_float(bits & 0xf, 2, 1, false),
    }
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn check(bits: u64, dtype: DType) {
    let got = Scalar { bits, dtype }.as_f64();
    let want = independent(bits, dtype);
    assert!(
        same(got, want),
        "{dtype} bits {bits:#x}: as_f64 {got}, expected {want}"
    );
}

#[test]
fn float32() {
    check(0x3f80_0000, DType::Float32);
    assert_eq!(Scalar::f32(0.25).as_f64(), 0.25);
    check(0x7f80_0000, DType::Float32);
}

#[test]
fn float16() {
    assert_eq!(
        Scalar {
            bits: 15360,
            dtype: DType::Float16
        }
        .as_f64(),
        1.0
    );
    for bits in [0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7e00] {
        check(bits, DType::Float16);
    }
}

#[test]
fn bfloat16() {
    assert_eq!(
        Scalar {
            bits: 16256,
            dtype: DType::Bfloat16
        }
        .as_f64(),
        1.0
    );
    for bits in [0x3f80, 0xbf80, 0x0001, 0x7f7f, 0x7f80, 0x7fc0] {
        check(bits, DType::Bfloat16);
    }
}

#[test]
fn int8() {
    assert_eq!(
        Scalar {
            bits: 0xff,
            dtype: DType::Int8
        }
        .as_f64(),
        -1.0
    );
    assert_eq!(
        Scalar {
            bits: 0xff,
            dtype: DType::Int8
        }
        .as_i64(),
        -1
    );
    check(0x80, DType::Int8);
    check(0x7f, DType::Int8);
}

#[test]
fn int16() {
    assert_eq!(
        Scalar {
            bits: 0xffff,
            dtype: DType::Int16
        }
        .as_i64(),
        -1
    );
    check(0x8000, DType::Int16);
}

#[test]
fn int32() {
    assert_eq!(Scalar::i32(-7).as_f64(), -7.0);
    assert_eq!(Scalar::i32(-7).as_i64(), -7);
    check(0x8000_0000, DType::Int32);
}

#[test]
fn int64() {
    assert_eq!(Scalar::i64(-3).as_f64(), -3.0);
    check(u64::MAX, DType::Int64);
}

#[test]
fn unsigned() {
    check(0x1ff, DType::Uint8);
    check(0x1_ffff, DType::Uint16);
    check(0x1_ffff_ffff, DType::Uint32);
    assert_eq!(Scalar::u64(u64::MAX).as_f64(), u64::MAX as f64);
}

#[test]
fn bool_and_small_floats() {
    check(2, DType::Bool);
    check(0, DType::Bool);
    check(0x38, DType::Fp8E4M3Fn);
    check(0x7f, DType::Fp8E4M3Fn);
    check(0x7e, DType::Fp8E4M3Fn);
    check(127, DType::Fp8E8M0);
    check(0xff, DType::Fp8E8M0);
    check(0xa, DType::Fp4E2M1);
}

proptest! {
    #[test]
    fn every_dtype_every_bit_pattern(bits in any::<u64>(), code in 0u8..15) {
        let dtype = DType::from_code(code).unwrap();
        // Narrow scalars are zero-extended in the slot.
        let bits = if dtype.size() < 8 { bits & ((1u64 << (8 * dtype.size())) - 1) } else { bits };
        check(bits, dtype);
        let i = Scalar { bits, dtype }.as_i64();
        let v = independent(bits, dtype);
        if !dtype.is_float() && !matches!(dtype, DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 | DType::Uint64) {
            prop_assert_eq!(i as f64, v);
        }
    }
}
