//! Exact numeric conversions shared by the ISA, the references and the tools.
//!
//! Every narrowing conversion is IEEE round-to-nearest-even. Reading a
//! buffer's elements as numbers is [`simpler_core::decode`]'s job.

use half::{bf16, f16};

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

/// f32 → i32, round-to-nearest-even, saturating at `i32::MIN`/`i32::MAX`
/// (±inf included); NaN → 0.
pub fn f32_to_i32_rne(x: f32) -> i32 {
    // `as` saturates and maps NaN to 0; the rounding before it is exact.
    x.round_ties_even() as i32
}

/// i32 → bf16 bits with a single round-to-nearest-even of the exact integer
/// (not via f32, which would round twice).
pub fn i32_to_bf16(x: i32) -> u16 {
    f32_to_bf16(round_i32_to_sig_bits(x, 8))
}

/// i32 → f16 bits with a single round-to-nearest-even of the exact integer;
/// magnitudes that round to 65536 or more become ±inf.
pub fn i32_to_f16(x: i32) -> u16 {
    f32_to_f16(round_i32_to_sig_bits(x, 11))
}

/// `x` rounded (RNE) to `bits` significant bits, as an exact f32
/// (`1 <= bits <= 24`). Narrowing the result to a float type with `bits`
/// significand bits is then exact (or overflows to inf as IEEE requires).
pub(crate) fn round_i32_to_sig_bits(x: i32, bits: u32) -> f32 {
    debug_assert!((1..=24).contains(&bits));
    let mut u = u64::from(x.unsigned_abs());
    let n = 64 - u.leading_zeros();
    if n > bits {
        let shift = n - bits;
        let q = u >> shift;
        let rem = u & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = rem > half || (rem == half && q & 1 == 1);
        u = (q + u64::from(up)) << shift;
    }
    // At most `bits` (<= 24) significant bits: exact in f32.
    let m = u as f32;
    if x < 0 {
        -m
    } else {
        m
    }
}
