//! The scalar codec: every dtype, every bit pattern, through JSON text.

use proptest::prelude::*;
use simpler_core::DType;
use simpler_format::scalar::{
    decode, decode_upstream, encode, encode_upstream, BitsOrigin, ScalarValue, WireValue,
};

use crate::strategies::{dtype, slot_bits};

fn is_nan(d: DType, bits: u64) -> bool {
    d.is_float() && simpler_core::decode::bits_f64(bits, d).is_nan()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// What our writer writes reads back to the same bits (NaN payloads
    /// excepted: the files carry `bits` for those).
    #[test]
    fn native_value_round_trips_through_json(d in dtype(), seed in any::<u64>()) {
        let bits = seed & simpler_format::scalar::width_mask(d);
        let text = serde_json::to_string(&encode(d, bits)).unwrap();
        let back: ScalarValue = serde_json::from_str(&text).unwrap();
        let got = decode(back, d);
        if is_nan(d, bits) {
            prop_assert!(is_nan(d, got.clone().unwrap()), "{d} {bits:#x} -> {text} -> {got:?}");
        } else {
            prop_assert_eq!(got, Ok(bits), "{} {:#x} -> {}", d, bits, text);
        }
    }

    /// The upstream forms read back exactly where upstream writes exact
    /// values, and FLOAT32 to 6 significant digits, flagged as rounded.
    #[test]
    fn upstream_value_round_trips(d in dtype(), bits in any::<u64>()) {
        let bits = bits & simpler_format::scalar::width_mask(d);
        let text = serde_json::to_string(&encode_upstream(d, bits)).unwrap();
        let back: WireValue = serde_json::from_str(&text).unwrap();
        let (got, origin) = decode_upstream(&back, d).unwrap();
        if d == DType::Float32 {
            let (a, b) = (f32::from_bits(bits as u32), f32::from_bits(got as u32));
            if a.is_nan() {
                prop_assert!(b.is_nan() && origin == BitsOrigin::Rounded);
            } else if a.is_infinite() || a == 0.0 {
                prop_assert_eq!(a, b);
            } else {
                let rel = ((f64::from(a) - f64::from(b)) / f64::from(a)).abs();
                prop_assert!(rel <= 5e-6, "{} -> {} -> {}", a, text, b);
            }
        } else if d == DType::Bool {
            prop_assert_eq!(got, u64::from(bits != 0));
        } else {
            prop_assert_eq!(got, bits, "{} {:#x} -> {}", d, bits, text);
        }
    }

    /// The upstream `value` text, as UPSTREAM_FORMATS A states it for
    /// each dtype, derived from the slot's bits.
    #[test]
    fn upstream_value_text_is_the_upstream_form(d in dtype(), seed in any::<u64>()) {
        let bits = seed & simpler_format::scalar::width_mask(d);
        let text = serde_json::to_string(&encode_upstream(d, bits)).unwrap();
        prop_assert_eq!(&text, &upstream_text(d, bits), "{} {:#x}", d, bits);
    }

    /// Values a dtype cannot hold are refused, never wrapped.
    #[test]
    fn out_of_range_integers_are_refused(v in any::<i64>()) {
        for (d, lo, hi) in [
            (DType::Int8, -128i64, 127i64),
            (DType::Int16, -32768, 32767),
            (DType::Uint8, 0, 255),
            (DType::Uint16, 0, 65535),
        ] {
            let r = decode(ScalarValue::Int(v), d);
            prop_assert_eq!(r.is_ok(), (lo..=hi).contains(&v), "{} {}", d, v);
        }
    }
}

#[test]
fn every_dtype_has_a_decode_path() {
    for d in DType::ALL {
        for bits in [0u64, 1, 0x7f, slot_bits_max(d)] {
            if !is_nan(d, bits) {
                assert_eq!(decode(encode(d, bits), d), Ok(bits), "{d} {bits:#x}");
            }
        }
    }
}

fn slot_bits_max(d: DType) -> u64 {
    let _ = slot_bits(d);
    simpler_format::scalar::width_mask(d)
}

/// What the upstream runtime writes as `value` for a `d` slot holding
/// `bits` (UPSTREAM_FORMATS A "Scalar value"), or for FLOAT32 finite
/// values a check of the written text: the nearest 6-significant-digit
/// decimal, written so that a JSON reader takes it as a float.
fn upstream_text(d: DType, bits: u64) -> String {
    match d {
        DType::Float32 => {
            let f = f32::from_bits(bits as u32);
            if f.is_nan() {
                "null".into()
            } else if f.is_infinite() {
                if f > 0.0 { "\"$Inf\"" } else { "\"-$Inf\"" }.into()
            } else {
                let text = serde_json::to_string(&encode_upstream(d, bits)).unwrap();
                let v: f64 = text.parse().unwrap();
                let six: f64 = format!("{:.5e}", f64::from(f)).parse().unwrap();
                assert!(
                    v == six && v.is_sign_negative() == f.is_sign_negative(),
                    "{f:e} written {text}, not its 6 significant digits {six:e}"
                );
                assert!(text.contains(['.', 'e', 'E']), "{text}: read as an integer");
                text
            }
        }
        DType::Int32 => (bits as u32 as i32).to_string(),
        DType::Uint32 => (bits as u32).to_string(),
        DType::Int64 => (bits as i64).to_string(),
        DType::Bool => (bits != 0).to_string(),
        // UINT64, INT8/16, UINT8/16, FP16, BF16 and the rest: the raw
        // slot, a JSON number even above 2^53.
        _ => bits.to_string(),
    }
}

#[test]
fn upstream_value_text_edge_cases() {
    let f = |x: f32| u64::from(x.to_bits());
    for (d, bits) in [
        (DType::Float32, f(f32::NAN)),
        (DType::Float32, 0x7fc0_0001),
        (DType::Float32, f(f32::INFINITY)),
        (DType::Float32, f(f32::NEG_INFINITY)),
        (DType::Float32, f(0.0)),
        (DType::Float32, f(-0.0)),
        (DType::Float32, f(1.0)),
        (DType::Float32, f(1.0 / 3.0)),
        (DType::Float32, f(123_456_789.0)),
        (DType::Float32, f(f32::MIN_POSITIVE)),
        (DType::Float32, f(f32::MAX)),
        (DType::Int32, 0xffff_fffb),
        (DType::Int64, u64::MAX),
        (DType::Uint32, 0xffff_ffff),
        (DType::Bool, 1),
        (DType::Bool, 0),
        (DType::Uint64, u64::MAX),
        (DType::Uint64, (1 << 53) + 1),
        (DType::Float16, 0x3c00),
        (DType::Bfloat16, 0x3f80),
        (DType::Int8, 0xff),
    ] {
        let text = serde_json::to_string(&encode_upstream(d, bits)).unwrap();
        assert_eq!(text, upstream_text(d, bits), "{d} {bits:#x}");
    }
}
