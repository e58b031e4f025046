//! The one scalar codec: a slot's raw bits ↔ the JSON value the files
//! write, per dtype.
//!
//! - [`encode`]: bits → the exact value our files write (integers as JSON
//!   integers, floats as the shortest decimal that round-trips to the same
//!   f32, NaN/±Inf as `"nan"`, `"inf"`, `"-inf"`).
//! - [`decode`]: a value → bits, refusing values the dtype cannot hold.
//! - [`decode_upstream`]: the upstream runtime's `value` forms (raw u64
//!   for most dtypes, 6-digit floats, `null` for NaN, `"$Inf"`), saying
//!   whether the bits are exact or derived from a rounded value.
//!
//! The bits → number direction for display and comparison is
//! [`simpler_core::decode`].
//!
//! ```
//! use simpler_core::DType;
//! use simpler_format::scalar::{decode, encode, ScalarValue};
//! let v = encode(DType::Int32, 0xffff_ffff);
//! assert_eq!(v, ScalarValue::Int(-1));
//! assert_eq!(decode(v, DType::Int32), Ok(0xffff_ffff));
//! ```

use std::fmt;

use half::{bf16, f16};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use simpler_core::DType;

use crate::error::quoted;

/// A scalar's value as our files write it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (also raw slot bits of dtypes without a number form).
    UInt(u64),
    /// An f32, written with the shortest f32 round-trip form.
    F32(f32),
    /// Any other float.
    F64(f64),
}

/// The value of a `dtype` slot holding `bits`, as our files write it.
/// FLOAT16/BFLOAT16 are written as their (exact) f32 value; UINT8/16/32,
/// BOOL and the FP8/FP4 formats as the raw slot.
pub fn encode(dtype: DType, bits: u64) -> ScalarValue {
    match dtype {
        DType::Float32 => ScalarValue::F32(f32::from_bits(bits as u32)),
        DType::Float16 => ScalarValue::F32(f16::from_bits(bits as u16).to_f32()),
        DType::Bfloat16 => ScalarValue::F32(bf16::from_bits(bits as u16).to_f32()),
        DType::Int32 => ScalarValue::Int(i64::from(bits as u32 as i32)),
        DType::Int16 => ScalarValue::Int(i64::from(bits as u16 as i16)),
        DType::Int8 => ScalarValue::Int(i64::from(bits as u8 as i8)),
        DType::Int64 => ScalarValue::Int(bits as i64),
        _ => ScalarValue::UInt(bits),
    }
}

impl ScalarValue {
    fn as_f64(self) -> f64 {
        match self {
            ScalarValue::Int(i) => i as f64,
            ScalarValue::UInt(u) => u as f64,
            ScalarValue::F32(f) => f64::from(f),
            ScalarValue::F64(f) => f,
        }
    }

    fn as_f32(self) -> f32 {
        match self {
            ScalarValue::F32(f) => f,
            other => other.as_f64() as f32,
        }
    }

    /// The value as an exact integer, if it is one.
    fn as_int(self) -> Option<i128> {
        match self {
            ScalarValue::Int(i) => Some(i128::from(i)),
            ScalarValue::UInt(u) => Some(i128::from(u)),
            _ => {
                let f = self.as_f64();
                (f.is_finite() && f.fract() == 0.0 && f.abs() < 1.8e19).then_some(f as i128)
            }
        }
    }
}

impl fmt::Display for ScalarValue {
    /// `0.25`, `-3`, `NaN`, `inf`: the value for humans.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarValue::F32(x) => write!(f, "{x:?}"),
            ScalarValue::F64(x) => write!(f, "{x:?}"),
            ScalarValue::Int(i) => write!(f, "{i}"),
            ScalarValue::UInt(u) => write!(f, "{u}"),
        }
    }
}

/// Bit mask of one `dtype` element inside a 64-bit slot.
pub fn width_mask(dtype: DType) -> u64 {
    match dtype.size() {
        8 => u64::MAX,
        w => (1u64 << (8 * w)) - 1,
    }
}

/// The slot bits of `value` as a `dtype` scalar, zero-extended (an INT32
/// −1 is `0x00000000ffffffff`). The inverse of [`encode`] for every bit
/// pattern except NaN payloads.
///
/// # Errors
/// A value the dtype cannot hold: a fraction for an integer dtype, an
/// integer out of range (FP8/FP4 and BOOL take the raw byte, 0..=255).
pub fn decode(value: ScalarValue, dtype: DType) -> Result<u64, String> {
    let int_range = |lo: i128, hi: i128| -> Result<u64, String> {
        let i = value
            .as_int()
            .ok_or_else(|| format!("{} needs an integer, got {value}", dtype.name()))?;
        if i < lo || i > hi {
            return Err(format!("{i} does not fit {} ({lo}..={hi})", dtype.name()));
        }
        Ok((i as i64 as u64) & width_mask(dtype))
    };
    match dtype {
        DType::Float32 => Ok(u64::from(value.as_f32().to_bits())),
        DType::Float16 => Ok(u64::from(f16::from_f32(value.as_f32()).to_bits())),
        DType::Bfloat16 => Ok(u64::from(bf16::from_f32(value.as_f32()).to_bits())),
        DType::Int8 => int_range(i128::from(i8::MIN), i128::from(i8::MAX)),
        DType::Int16 => int_range(i128::from(i16::MIN), i128::from(i16::MAX)),
        DType::Int32 => int_range(i128::from(i32::MIN), i128::from(i32::MAX)),
        DType::Int64 => int_range(i128::from(i64::MIN), i128::from(i64::MAX)),
        DType::Uint8 | DType::Bool | DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => {
            int_range(0, i128::from(u8::MAX))
        }
        DType::Uint16 => int_range(0, i128::from(u16::MAX)),
        DType::Uint32 => int_range(0, i128::from(u32::MAX)),
        DType::Uint64 => int_range(0, i128::from(u64::MAX)).map(|_| match value {
            ScalarValue::UInt(u) => u,
            other => other.as_int().unwrap_or_default() as u64,
        }),
    }
}

/// `a` and `b` are one `dtype` scalar: the same bits, or both a NaN of a
/// float dtype (a NaN's payload does not survive a value written `"nan"`).
pub fn same_scalar(dtype: DType, a: u64, b: u64) -> bool {
    let nan = |x: u64| match dtype {
        DType::Float32 => f32::from_bits(x as u32).is_nan(),
        DType::Float16 => f16::from_bits(x as u16).is_nan(),
        DType::Bfloat16 => bf16::from_bits(x as u16).is_nan(),
        _ => false,
    };
    a == b || (nan(a) && nan(b))
}

/// Whether a record's `value` is what its `bits` say ([`encode`] of them),
/// for a reader to refuse a record one of whose two forms was edited:
/// shown the value, a user would otherwise see one number while `dump
/// view` and the replay use the other.
pub fn agrees(value: ScalarValue, dtype: DType, bits: u64) -> bool {
    match encode(dtype, bits) {
        ScalarValue::F32(f) => {
            let v = value.as_f32();
            v.to_bits() == f.to_bits() || (v.is_nan() && f.is_nan())
        }
        exact => value.as_int().is_some() && value.as_int() == exact.as_int(),
    }
}

/// [`agrees`] for the upstream layout's `value` forms (6-digit floats,
/// `null` for NaN, `"$Inf"`, raw UINT64): the value reads as the one the
/// writer puts down for `bits` ([`encode_upstream`]) reads. Only our own
/// upstream-layout files carry `bits` beside `value`.
pub fn agrees_upstream(value: &WireValue, dtype: DType, bits: u64) -> bool {
    // A raw slot with bits above the dtype's width is written as the whole
    // slot, which `decode_upstream` refuses for the dtype: equal text first.
    if *value == encode_upstream(dtype, bits) {
        return true;
    }
    let written = decode_upstream(value, dtype);
    let canonical = decode_upstream(&encode_upstream(dtype, bits), dtype);
    match (written, canonical) {
        (Ok((a, _)), Ok((b, _))) => same_scalar(dtype, a, b),
        _ => false,
    }
}

/// The reader's words when [`agrees`] (or [`agrees_upstream`]) says no.
pub fn disagreement(value: impl fmt::Display, dtype: DType, bits: u64) -> String {
    format!(
        "{value} but bits 0x{bits:016x} is {} as {}: one of them was edited (keep one, remove the other)",
        encode(dtype, bits),
        dtype.name()
    )
}

/// How far a scalar's bits can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitsOrigin {
    /// The file wrote the raw slot (`bits`, or an upstream raw-u64 `value`).
    Recorded,
    /// Derived from an exact `value`.
    Exact,
    /// Derived from a rounded `value` (upstream 6-significant-digit floats,
    /// NaN written as `null`): the value is right to the digits shown, the
    /// bits may not be the kernel's.
    Rounded,
}

/// A `value` in any form a file may hold: ours ([`ScalarValue`]) or the
/// upstream runtime's.
#[derive(Debug, Clone, PartialEq)]
pub enum WireValue {
    /// A number.
    Number(ScalarValue),
    /// `null`: a NaN.
    Null,
    /// `true` / `false` (BOOL).
    Bool(bool),
    /// A string: `"$Inf"`, `"-$Inf"`, or our `"nan"`, `"inf"`, `"-inf"`.
    Text(String),
}

/// Bits of an upstream scalar `value` by dtype: FLOAT32 from its 6-digit
/// decimal ([`BitsOrigin::Rounded`] unless integral and exact in f32), INT32/
/// UINT32/INT64 from their integer, everything else as the raw u64 slot.
///
/// # Errors
/// A form the upstream writer does not produce for that dtype.
pub fn decode_upstream(value: &WireValue, dtype: DType) -> Result<(u64, BitsOrigin), String> {
    let inf = |neg: bool| -> u64 {
        let f = if neg {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
        u64::from(f.to_bits())
    };
    match (value, dtype) {
        (WireValue::Null, DType::Float32) => {
            Ok((u64::from(f32::NAN.to_bits()), BitsOrigin::Rounded))
        }
        (WireValue::Text(t), DType::Float32) => match t.as_str() {
            "$Inf" | "inf" => Ok((inf(false), BitsOrigin::Exact)),
            "-$Inf" | "-inf" => Ok((inf(true), BitsOrigin::Exact)),
            "nan" => Ok((u64::from(f32::NAN.to_bits()), BitsOrigin::Rounded)),
            other => Err(format!(
                "{}: expected a number, null (NaN), \"$Inf\" or \"-$Inf\"",
                quoted(other)
            )),
        },
        (WireValue::Number(n), DType::Float32) => {
            let bits = u64::from(n.as_f32().to_bits());
            let exact = matches!(n, ScalarValue::Int(_) | ScalarValue::UInt(_))
                && f64::from(n.as_f32()) == n.as_f64();
            Ok((
                bits,
                if exact {
                    BitsOrigin::Exact
                } else {
                    BitsOrigin::Rounded
                },
            ))
        }
        (WireValue::Bool(b), DType::Bool) => Ok((u64::from(*b), BitsOrigin::Exact)),
        (WireValue::Number(n), DType::Int32 | DType::Uint32 | DType::Int64) => {
            decode(*n, dtype).map(|b| (b, BitsOrigin::Exact))
        }
        (WireValue::Number(ScalarValue::UInt(u)), _) if u & !width_mask(dtype) == 0 => {
            Ok((*u, BitsOrigin::Recorded))
        }
        (WireValue::Number(ScalarValue::UInt(u)), _) => Err(format!(
            "{u} does not fit one {} slot ({} bits)",
            dtype.name(),
            8 * dtype.size()
        )),
        (WireValue::Number(n), _) => decode(*n, dtype).map(|b| (b, BitsOrigin::Exact)),
        (other, _) => Err(format!(
            "{} is not a {} value",
            match other {
                WireValue::Null => "null".to_string(),
                WireValue::Bool(b) => b.to_string(),
                WireValue::Text(t) => quoted(t),
                WireValue::Number(n) => n.to_string(),
            },
            dtype.name()
        )),
    }
}

/// The `value` the upstream runtime writes for a `dtype` slot holding
/// `bits` (UPSTREAM_FORMATS A): FLOAT32 with 6 significant digits (`.0`
/// added when there is no `.` or exponent), NaN as `null`, ±inf as
/// `"$Inf"`/`"-$Inf"`; INT32, UINT32, INT64 as typed integers; BOOL as
/// `true`/`false`; everything else as the raw u64 slot.
pub fn encode_upstream(dtype: DType, bits: u64) -> WireValue {
    match dtype {
        DType::Float32 => {
            let f = f32::from_bits(bits as u32);
            if f.is_nan() {
                WireValue::Null
            } else if f.is_infinite() {
                WireValue::Text(if f > 0.0 { "$Inf" } else { "-$Inf" }.into())
            } else {
                let text = six_digits(f64::from(f));
                WireValue::Number(ScalarValue::F64(text.parse().unwrap_or(f64::NAN)))
            }
        }
        DType::Int32 => WireValue::Number(ScalarValue::Int(i64::from(bits as u32 as i32))),
        DType::Uint32 => WireValue::Number(ScalarValue::UInt(bits & 0xffff_ffff)),
        DType::Int64 => WireValue::Number(ScalarValue::Int(bits as i64)),
        DType::Bool => WireValue::Bool(bits & 0xff != 0),
        _ => WireValue::Number(ScalarValue::UInt(bits)),
    }
}

/// `%g` with 6 significant digits, as C++ streams print a float, plus `.0`
/// when the text has neither `.` nor an exponent.
pub fn six_digits(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{v:.5e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    let text = if (-4..6).contains(&exp) {
        trim(&format!("{v:.*}", (5 - exp) as usize))
    } else {
        format!(
            "{}e{}{:02}",
            trim(mant),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    };
    if text.contains(['.', 'e']) {
        text
    } else {
        text + ".0"
    }
}

impl Serialize for ScalarValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let special = |x: f64| {
            if x.is_nan() {
                Some("nan")
            } else if x == f64::INFINITY {
                Some("inf")
            } else if x == f64::NEG_INFINITY {
                Some("-inf")
            } else {
                None
            }
        };
        match *self {
            ScalarValue::Int(v) => s.serialize_i64(v),
            ScalarValue::UInt(v) => s.serialize_u64(v),
            ScalarValue::F32(v) => match special(f64::from(v)) {
                Some(t) => s.serialize_str(t),
                // serde_json formats f32 with the shortest f32 round-trip digits.
                None => s.serialize_f32(v),
            },
            ScalarValue::F64(v) => match special(v) {
                Some(t) => s.serialize_str(t),
                None => s.serialize_f64(v),
            },
        }
    }
}

/// Accepts every JSON form a `value` may take in either layout; the
/// native reader then refuses what is not its own ([`WireValue::native`]).
struct ValueVisitor;

const VALUE_FORMS: &str = "a number, \"nan\", \"inf\" or \"-inf\"";

impl<'de> de::Visitor<'de> for ValueVisitor {
    type Value = WireValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(VALUE_FORMS)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<WireValue, E> {
        Ok(WireValue::Number(ScalarValue::UInt(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<WireValue, E> {
        Ok(WireValue::Number(ScalarValue::Int(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<WireValue, E> {
        Ok(WireValue::Number(ScalarValue::F64(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<WireValue, E> {
        Ok(WireValue::Text(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<WireValue, E> {
        Ok(WireValue::Bool(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<WireValue, E> {
        Ok(WireValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<WireValue, E> {
        Ok(WireValue::Null)
    }
}

impl<'de> Deserialize<'de> for WireValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl Serialize for WireValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WireValue::Number(n) => n.serialize(s),
            WireValue::Null => s.serialize_unit(),
            WireValue::Bool(b) => s.serialize_bool(*b),
            WireValue::Text(t) => s.serialize_str(t),
        }
    }
}

impl WireValue {
    /// The value in our own forms: a number, or `"nan"`/`"inf"`/`"-inf"`.
    ///
    /// # Errors
    /// Any other form, echoed (cut to 80 characters).
    pub fn native(&self) -> Result<ScalarValue, String> {
        match self {
            WireValue::Number(n) => Ok(*n),
            WireValue::Text(t) => match t.as_str() {
                "nan" => Ok(ScalarValue::F64(f64::NAN)),
                "inf" => Ok(ScalarValue::F64(f64::INFINITY)),
                "-inf" => Ok(ScalarValue::F64(f64::NEG_INFINITY)),
                other => Err(format!("{}: expected {VALUE_FORMS}", quoted(other))),
            },
            WireValue::Null => Err(format!("null: expected {VALUE_FORMS}")),
            WireValue::Bool(b) => Err(format!("{b}: expected {VALUE_FORMS}")),
        }
    }
}

impl<'de> Deserialize<'de> for ScalarValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_any(ValueVisitor)?;
        v.native().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_values_are_exact() {
        let j = |v: ScalarValue| serde_json::to_string(&v).unwrap();
        assert_eq!(j(ScalarValue::F32(0.1)), "0.1");
        assert_eq!(j(ScalarValue::F32(1.0)), "1.0");
        assert_eq!(j(ScalarValue::F32(-0.0)), "-0.0");
        assert_eq!(j(ScalarValue::F32(f32::NAN)), "\"nan\"");
        assert_eq!(j(ScalarValue::F32(f32::NEG_INFINITY)), "\"-inf\"");
        assert_eq!(j(ScalarValue::UInt(u64::MAX)), "18446744073709551615");
        assert_eq!(j(ScalarValue::Int(-7)), "-7");
        let back: ScalarValue = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(back, ScalarValue::UInt(u64::MAX));
        let back: ScalarValue = serde_json::from_str("0.1").unwrap();
        assert_eq!(back, ScalarValue::F64(0.1));
        assert!(serde_json::from_str::<ScalarValue>("\"x\"").is_err());
        assert!(serde_json::from_str::<ScalarValue>("\"$Inf\"").is_err());
    }

    #[test]
    fn upstream_forms() {
        let u = |s: &str| serde_json::from_str::<WireValue>(s).unwrap();
        assert_eq!(
            decode_upstream(&u("1065353216"), DType::Uint64),
            Ok((0x3f80_0000, BitsOrigin::Recorded))
        );
        assert_eq!(
            decode_upstream(&u("0.333333"), DType::Float32).map(|x| x.1),
            Ok(BitsOrigin::Rounded)
        );
        assert_eq!(
            decode_upstream(&u("2.0"), DType::Float32).map(|x| x.0),
            Ok(0x4000_0000)
        );
        let (b, o) = decode_upstream(&u("null"), DType::Float32).unwrap();
        assert!(f32::from_bits(b as u32).is_nan() && o == BitsOrigin::Rounded);
        assert_eq!(
            decode_upstream(&u("\"-$Inf\""), DType::Float32).map(|x| x.0),
            Ok(u64::from(f32::NEG_INFINITY.to_bits()))
        );
        assert_eq!(
            decode_upstream(&u("-5"), DType::Int32),
            Ok((0xffff_fffb, BitsOrigin::Exact))
        );
        assert_eq!(
            decode_upstream(&u("true"), DType::Bool),
            Ok((1, BitsOrigin::Exact))
        );
        assert_eq!(six_digits(1.0), "1.0");
        assert_eq!(six_digits(0.1f32.into()), "0.1");
        assert_eq!(six_digits(123456789.0), "1.23457e+08");
        assert_eq!(six_digits(1e-7), "1e-07");
        assert_eq!(six_digits(-2.5e-5), "-2.5e-05");
        assert_eq!(six_digits(100000.0), "100000.0");
        assert_eq!(six_digits(0.000123456789), "0.000123457");
        assert!(decode_upstream(&u("null"), DType::Int32).is_err());
        let long = format!("\"{}\"", "x".repeat(10_000));
        let e = decode_upstream(&u(&long), DType::Float32).unwrap_err();
        assert!(e.chars().count() < 200, "{e}");
    }

    proptest::proptest! {
        /// What a writer puts down as `value` (through JSON text) agrees
        /// with the bits it came from, for every dtype and any 64-bit slot
        /// (bits above the dtype's width included: a sign-extended INT16).
        #[test]
        fn a_written_value_agrees_with_its_bits(raw in proptest::prelude::any::<u64>(), d in 0..DType::ALL.len(), full in proptest::prelude::any::<bool>()) {
            let dtype = DType::ALL[d];
            let bits = if full { raw } else { raw & width_mask(dtype) };
            let text = serde_json::to_string(&encode(dtype, bits)).unwrap();
            let back: ScalarValue = serde_json::from_str(&text).unwrap();
            proptest::prop_assert!(agrees(back, dtype, bits), "{dtype:?} {bits:#x} {text}");
            let text = serde_json::to_string(&encode_upstream(dtype, bits)).unwrap();
            let back: WireValue = serde_json::from_str(&text).unwrap();
            proptest::prop_assert!(agrees_upstream(&back, dtype, bits), "{dtype:?} {bits:#x} {text}");
        }
    }

    #[test]
    fn an_edited_value_or_bits_disagrees() {
        let f = |x: f32| u64::from(x.to_bits());
        assert!(!agrees(ScalarValue::F64(0.25), DType::Float32, f(2.0)));
        assert!(!agrees(ScalarValue::F64(0.1), DType::Float32, f(0.1) + 1));
        assert!(!agrees(ScalarValue::Int(3), DType::Int32, 4));
        assert!(!agrees(ScalarValue::F64(3.5), DType::Int32, 3));
        // Bits above the dtype's width are the slot's, not the value's.
        assert!(agrees(ScalarValue::Int(-1), DType::Int32, u64::MAX));
        assert!(agrees(ScalarValue::Int(-1), DType::Int32, 0xffff_ffff));
        assert!(!agrees(ScalarValue::F64(f64::NAN), DType::Float32, f(1.0)));
        // Any NaN is a NaN: "nan" keeps no payload.
        assert!(agrees(
            ScalarValue::F64(f64::NAN),
            DType::Float32,
            0x7fc0_0001
        ));
        assert!(!agrees(ScalarValue::F64(-0.0), DType::Float32, f(0.0)));
        let m = disagreement(ScalarValue::F64(0.25), DType::Float32, f(2.0));
        assert_eq!(
            m,
            "0.25 but bits 0x0000000040000000 is 2.0 as FLOAT32: one of them was edited (keep one, remove the other)"
        );
        assert!(same_scalar(DType::Bfloat16, 0x7fc1, 0x7fc0));
        // Upstream text: six digits, so only an edit beyond them shows.
        let u = |t: &str| serde_json::from_str::<WireValue>(t).unwrap();
        assert!(agrees_upstream(&u("0.25"), DType::Float32, f(0.25)));
        assert!(agrees_upstream(&u("0.25"), DType::Float32, f(0.25) + 1));
        assert!(!agrees_upstream(&u("0.5"), DType::Float32, f(0.25)));
        assert!(!agrees_upstream(&u("3"), DType::Int32, 4));
        assert!(!same_scalar(DType::Int16, 0x7fc1, 0x7fc0));
    }

    #[test]
    fn decode_refuses_what_does_not_fit() {
        assert_eq!(decode(ScalarValue::Int(-1), DType::Int8), Ok(0xff));
        assert!(decode(ScalarValue::Int(300), DType::Int8).is_err());
        assert!(decode(ScalarValue::F64(1.5), DType::Int32).is_err());
        assert!(decode(ScalarValue::Int(-1), DType::Uint64).is_err());
        assert_eq!(
            decode(ScalarValue::UInt(u64::MAX), DType::Uint64),
            Ok(u64::MAX)
        );
        assert_eq!(decode(ScalarValue::F64(1.0), DType::Bfloat16), Ok(0x3f80));
    }
}
