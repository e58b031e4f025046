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
