//! Exact numeric conversions shared by the ISA, the references and the tools.
//!
//! Every narrowing conversion is IEEE round-to-nearest-even.

use half::{bf16, f16};
use simpler_core::DType;

/// f32 → bf16 bits, round-to-nearest-even (NaN stays NaN).
pub fn f32_to_bf16(x: f32) -> u16 {
    bf16::from_f32(x).to_bits()
}

/// bf16 bits → f32 (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    bf16::from_bits(b).to_f32()
}

/// f32 → f16 bits, round-to-nearest-even.
pub fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// f16 bits → f32 (exact).
pub fn f16_to_f32(b: u16) -> f32 {
    f16::from_bits(b).to_f32()
}

/// Read element `i` of a little-endian byte buffer of `dtype` as f64 (for
/// viewers and references; integer types exact up to 2^53).
pub fn load_f64(bytes: &[u8], dtype: DType, i: usize) -> f64 {
    let s = dtype.size();
    let b = &bytes[i * s..(i + 1) * s];
    match dtype {
        DType::Float32 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
        DType::Float16 => f64::from(f16_to_f32(u16::from_le_bytes(b.try_into().unwrap()))),
        DType::Bfloat16 => f64::from(bf16_to_f32(u16::from_le_bytes(b.try_into().unwrap()))),
        DType::Int32 => f64::from(i32::from_le_bytes(b.try_into().unwrap())),
        DType::Uint32 => f64::from(u32::from_le_bytes(b.try_into().unwrap())),
        DType::Int16 => f64::from(i16::from_le_bytes(b.try_into().unwrap())),
        DType::Uint16 => f64::from(u16::from_le_bytes(b.try_into().unwrap())),
        DType::Int8 => f64::from(b[0] as i8),
        DType::Uint8 | DType::Bool | DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => {
            f64::from(b[0])
        }
        DType::Int64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
        DType::Uint64 => u64::from_le_bytes(b.try_into().unwrap()) as f64,
    }
}
