//! Element bits → value, per dtype: the one decoder every crate uses (a
//! scalar's slot bits, a dumped payload's elements, replay verification).
//!
//! Little-endian throughout. 16-bit and 8-bit floats decode exactly (every
//! such value is an f64); integers are exact up to 2^53 in f64. The inverse
//! direction (a JSON value → bits) lives in the file-format crate, which
//! owns how values are written.
//!
//! ```
//! use simpler_core::{decode, DType};
//! assert_eq!(decode::bits_f64(0x3f80, DType::Bfloat16), 1.0);
//! assert_eq!(decode::bits_f64(0xff, DType::Int8), -1.0);
//! assert_eq!(decode::format_element(&0x3f80u16.to_le_bytes(), DType::Bfloat16, 0), "1.0");
//! ```

use half::{bf16, f16};

use crate::DType;

/// The `N` bytes of element `i`, or zeros when `i` is out of range.
fn le<const N: usize>(bytes: &[u8], i: usize) -> [u8; N] {
    let mut out = [0u8; N];
    let range = i.checked_mul(N).and_then(|s| Some(s..s.checked_add(N)?));
    if let Some(s) = range.and_then(|r| bytes.get(r)) {
        out.copy_from_slice(s);
    }
    out
}

/// Element `i` of a little-endian `dtype` buffer as f64; 0 when `i` is out
/// of range (callers bound `i` by the element count). BOOL is 0 or 1 (any
/// nonzero byte is 1).
pub fn element_f64(bytes: &[u8], dtype: DType, i: usize) -> f64 {
    match dtype {
        DType::Float32 => f64::from(f32::from_le_bytes(le(bytes, i))),
        DType::Float16 => f64::from(f16::from_le_bytes(le(bytes, i)).to_f32()),
        DType::Bfloat16 => f64::from(bf16::from_le_bytes(le(bytes, i)).to_f32()),
        DType::Int32 => f64::from(i32::from_le_bytes(le(bytes, i))),
        DType::Uint32 => f64::from(u32::from_le_bytes(le(bytes, i))),
        DType::Int16 => f64::from(i16::from_le_bytes(le(bytes, i))),
        DType::Uint16 => f64::from(u16::from_le_bytes(le(bytes, i))),
        DType::Int64 => i64::from_le_bytes(le(bytes, i)) as f64,
        DType::Uint64 => u64::from_le_bytes(le(bytes, i)) as f64,
        DType::Int8 => f64::from(i8::from_le_bytes(le(bytes, i))),
        DType::Uint8 => f64::from(le::<1>(bytes, i)[0]),
        DType::Bool => f64::from(u8::from(le::<1>(bytes, i)[0] != 0)),
        DType::Fp8E4M3Fn => fp8_e4m3fn_to_f64(le::<1>(bytes, i)[0]),
        DType::Fp8E8M0 => fp8_e8m0_to_f64(le::<1>(bytes, i)[0]),
        DType::Fp4E2M1 => fp4_e2m1_to_f64(le::<1>(bytes, i)[0]),
    }
}

/// Every complete element of a little-endian `dtype` buffer as f64
/// (trailing bytes that do not make a whole element are ignored).
pub fn all_f64(bytes: &[u8], dtype: DType) -> Vec<f64> {
    let n = bytes.len() / dtype.size();
    (0..n).map(|i| element_f64(bytes, dtype, i)).collect()
}

/// A scalar slot's value: its low `dtype.size()` bytes decoded by dtype
/// (the dispatch ABI zero-extends narrow scalars into the 64-bit slot).
pub fn bits_f64(bits: u64, dtype: DType) -> f64 {
    element_f64(&bits.to_le_bytes()[..dtype.size().min(8)], dtype, 0)
}

/// A scalar slot's value as i64: integers sign- or zero-extended from
/// their width (UINT64 above `i64::MAX` wraps), floats truncated toward
/// zero (NaN is 0, ±inf saturate), BOOL 0 or 1.
pub fn bits_i64(bits: u64, dtype: DType) -> i64 {
    let b = bits.to_le_bytes();
    match dtype {
        DType::Int8 => i64::from(b[0] as i8),
        DType::Int16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
        DType::Int32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DType::Int64 | DType::Uint64 => bits as i64,
        DType::Uint8 => i64::from(b[0]),
        DType::Bool => i64::from(b[0] != 0),
        DType::Uint16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
        DType::Uint32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        _ => bits_f64(bits, dtype) as i64,
    }
}

/// OCP FP8 E4M3FN: bias 7, no infinities, `S.1111.111` is NaN.
pub fn fp8_e4m3fn_to_f64(b: u8) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((b >> 3) & 0xf);
    let man = f64::from(b & 0x7);
    if exp == 0xf && b & 0x7 == 0x7 {
        return f64::NAN;
    }
    if exp == 0 {
        sign * man / 8.0 * 2f64.powi(-6)
    } else {
        sign * (1.0 + man / 8.0) * 2f64.powi(exp - 7)
    }
}

/// OCP E8M0 scale: `2^(e − 127)`, `0xff` is NaN.
pub fn fp8_e8m0_to_f64(b: u8) -> f64 {
    if b == 0xff {
        f64::NAN
    } else {
        2f64.powi(i32::from(b) - 127)
    }
}

/// OCP FP4 E2M1 from the low nibble of a byte (one element per byte in this
/// simulator): bias 1, values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
pub fn fp4_e2m1_to_f64(b: u8) -> f64 {
    const MAG: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let m = MAG[usize::from(b & 0x7)];
    if b & 0x8 != 0 {
        -m
    } else {
        m
    }
}

/// Element `i` of a little-endian `dtype` buffer formatted for humans:
/// FLOAT32 in its shortest round-trip form (`2.0`, `1e-30`, `NaN`, `inf`),
/// BFLOAT16/FLOAT16 and the FP8/FP4 formats as their exact decimal value,
/// integers exactly, BOOL as `true`/`false` (`true(7)` for other nonzero
/// bytes). Out of range reads as zero.
pub fn format_element(bytes: &[u8], dtype: DType, i: usize) -> String {
    match dtype {
        DType::Float32 => format!("{:?}", f32::from_le_bytes(le(bytes, i))),
        // Through f64, whose shortest round-trip form of a 16-bit float's
        // value is its exact decimal (0.369140625, not f32's 0.36914063).
        DType::Float16 | DType::Bfloat16 => format!("{:?}", element_f64(bytes, dtype, i)),
        DType::Int32 => i32::from_le_bytes(le(bytes, i)).to_string(),
        DType::Uint32 => u32::from_le_bytes(le(bytes, i)).to_string(),
        DType::Int16 => i16::from_le_bytes(le(bytes, i)).to_string(),
        DType::Uint16 => u16::from_le_bytes(le(bytes, i)).to_string(),
        DType::Int64 => i64::from_le_bytes(le(bytes, i)).to_string(),
        DType::Uint64 => u64::from_le_bytes(le(bytes, i)).to_string(),
        DType::Int8 => i8::from_le_bytes(le(bytes, i)).to_string(),
        DType::Uint8 => le::<1>(bytes, i)[0].to_string(),
        DType::Bool => match le::<1>(bytes, i)[0] {
            0 => "false".into(),
            1 => "true".into(),
            b => format!("true({b})"),
        },
        DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => {
            format!("{:?}", element_f64(bytes, dtype, i))
        }
    }
}

/// A scalar slot formatted by [`format_element`] of its low bytes.
pub fn format_bits(bits: u64, dtype: DType) -> String {
    format_element(&bits.to_le_bytes()[..dtype.size().min(8)], dtype, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_float_formats_decode() {
        assert_eq!(fp8_e4m3fn_to_f64(0x38), 1.0);
        assert_eq!(fp8_e4m3fn_to_f64(0x7e), 448.0);
        assert!(fp8_e4m3fn_to_f64(0x7f).is_nan());
        assert_eq!(fp8_e4m3fn_to_f64(0x01), 2f64.powi(-9));
        assert_eq!(fp8_e8m0_to_f64(127), 1.0);
        assert!(fp8_e8m0_to_f64(255).is_nan());
        assert_eq!(fp4_e2m1_to_f64(0x7), 6.0);
        assert_eq!(fp4_e2m1_to_f64(0xa), -1.0);
    }

    #[test]
    fn elements_format_exactly() {
        let b = bf16::from_bits(0x3ebd).to_le_bytes(); // 0.369140625
        assert_eq!(format_element(&b, DType::Bfloat16, 0), "0.369140625");
        let f = 0.1f32.to_le_bytes();
        assert_eq!(format_element(&f, DType::Float32, 0), "0.1");
        assert_eq!(format_element(&[2], DType::Bool, 0), "true(2)");
        assert_eq!(
            format_element(&(-5i16).to_le_bytes(), DType::Int16, 0),
            "-5"
        );
        assert_eq!(format_element(&[0x38], DType::Fp8E4M3Fn, 0), "1.0");
        // Out of range reads as zero rather than panicking.
        assert_eq!(format_element(&[], DType::Int64, 3), "0");
        assert_eq!(format_element(&[1], DType::Int64, usize::MAX), "0");
        assert_eq!(all_f64(&[0, 0, 128, 63, 1], DType::Float32), vec![1.0]);
    }

    #[test]
    fn integers_extend_by_width() {
        assert_eq!(bits_i64(0xff, DType::Int8), -1);
        assert_eq!(bits_i64(0xff, DType::Uint8), 255);
        assert_eq!(bits_i64(0xffff_ffff, DType::Int32), -1);
        assert_eq!(bits_i64(u64::from(2.75f32.to_bits()), DType::Float32), 2);
        assert_eq!(bits_i64(0xbf80, DType::Bfloat16), -1);
    }
}
