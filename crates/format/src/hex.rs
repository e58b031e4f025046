//! 64-bit ids, addresses and raw bits as the files write them: `"0x"` and
//! 16 lowercase hex digits (DESIGN §6).
//!
//! [`Hex64`] is strict where the contract is ours: exactly 16 hex digits
//! after a lowercase `0x`. [`parse_lenient`] is for files we did not write
//! (upstream dumps, hand-edited replay specs): `0x`/`0X` and 1 to 16 digits.

use std::fmt;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use crate::error::quoted;

/// A 64-bit value written as `"0x%016x"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hex64(pub u64);

impl fmt::Display for Hex64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 18];
        f.pad(format_into(self.0, &mut buf))
    }
}

/// What a strict hex field must look like, for messages.
pub const STRICT_FORM: &str = "\"0x\" followed by exactly 16 hex digits";
/// What a lenient hex field may look like, for messages.
pub const LENIENT_FORM: &str = "\"0x\" followed by 1 to 16 hex digits";

/// `"0x"` + exactly 16 hex digits (either case).
pub fn parse_strict(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("0x")?;
    (hex.len() == 16).then_some(())?;
    digits(hex)
}

/// `"0x"` or `"0X"` + 1 to 16 hex digits, no sign, no spaces.
pub fn parse_lenient(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    (1..=16).contains(&hex.len()).then_some(())?;
    digits(hex)
}

fn digits(hex: &str) -> Option<u64> {
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

impl Serialize for Hex64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 18];
        s.serialize_str(format_into(self.0, &mut buf))
    }
}

/// `0x%016x` into `buf` without allocating.
pub fn format_into(v: u64, buf: &mut [u8; 18]) -> &str {
    buf[..2].copy_from_slice(b"0x");
    buf[2..].copy_from_slice(&digits16(v));
    // Only ASCII was written.
    std::str::from_utf8(buf).unwrap_or_default()
}

/// The 16 lowercase hex digits of `v`, most significant first.
///
/// Each half is spread a nibble per byte of a `u64` and turned into ASCII
/// with a few word-wide operations (no table, no loop, ~25 instructions):
/// a large dump's manifest writes two of these per record.
#[inline]
pub fn digits16(v: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&digits8((v >> 32) as u32));
    out[8..].copy_from_slice(&digits8(v as u32));
    out
}

/// The 8 lowercase hex digits of `x`, most significant first (half of
/// [`digits16`], for a writer that keeps the other half of a run of
/// addresses that share it).
#[inline]
pub fn digits8(x: u32) -> [u8; 8] {
    ascii_nibbles(x).to_be_bytes()
}

/// Byte `i` of the result is nibble `i` of `x` as a lowercase hex digit.
#[inline]
fn ascii_nibbles(x: u32) -> u64 {
    let x = u64::from(x);
    let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Per byte n: b'0' + n, and 39 more (b'a' - b'0' - 10) when n ≥ 10,
    // which is when n + 6 carries into bit 4. No byte overflows into the
    // next: n + 6 ≤ 21 and b'0' + 15 + 39 = b'f'.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * 39
}

impl<'de> Deserialize<'de> for Hex64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(HexVisitor { strict: true }).map(Hex64)
    }
}

/// A hex field of a file we did not write: see [`parse_lenient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LenientHex64(pub u64);

impl<'de> Deserialize<'de> for LenientHex64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(HexVisitor { strict: false })
            .map(LenientHex64)
    }
}

impl Serialize for LenientHex64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Hex64(self.0).serialize(s)
    }
}

struct HexVisitor {
    strict: bool,
}

impl de::Visitor<'_> for HexVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.strict {
            STRICT_FORM
        } else {
            LENIENT_FORM
        })
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
        let parsed = if self.strict {
            parse_strict(s)
        } else {
            parse_lenient(s)
        };
        parsed.ok_or_else(|| {
            E::custom(format_args!(
                "bad hex {}: expected {}",
                quoted(s),
                if self.strict {
                    STRICT_FORM
                } else {
                    LENIENT_FORM
                }
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_and_lenient() {
        assert_eq!(parse_strict("0x0000000200000003"), Some(0x2_0000_0003));
        assert_eq!(parse_strict("0x00000002000000"), None);
        assert_eq!(parse_strict("0X0000000200000003"), None);
        assert_eq!(parse_lenient("0X10"), Some(16));
        assert_eq!(parse_lenient("0x"), None);
        assert_eq!(parse_lenient("12"), None);
        assert_eq!(parse_lenient("0x00000000000000000"), None);
        assert_eq!(parse_lenient("0x+1"), None);
        let mut b = [0; 18];
        assert_eq!(format_into(0xdead, &mut b), "0x000000000000dead");
        assert_eq!(Hex64(u64::MAX).to_string(), "0xffffffffffffffff");
    }

    #[test]
    fn digits_are_format_s_lowercase_hex() {
        let mut v = 0x0123_4567_89ab_cdefu64;
        for i in 0..20_000u64 {
            for x in [v, i, u64::MAX - i, 1 << (i % 64), 0xa << (4 * (i % 16))] {
                assert_eq!(digits16(x), *format!("{x:016x}").as_bytes(), "{x:#x}");
                let low = x as u32;
                assert_eq!(digits8(low), *format!("{low:08x}").as_bytes(), "{low:#x}");
            }
            // A xorshift walk over the rest.
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
        }
    }

    #[test]
    fn serde_forms() {
        let h: Hex64 = serde_json::from_str("\"0x00000000000000ff\"").unwrap();
        assert_eq!(h, Hex64(255));
        let e = serde_json::from_str::<Hex64>("\"0xff\"").unwrap_err();
        assert!(e.to_string().contains("exactly 16 hex digits"), "{e}");
        let l: LenientHex64 = serde_json::from_str("\"0xff\"").unwrap();
        assert_eq!(l.0, 255);
        assert_eq!(serde_json::to_string(&l).unwrap(), "\"0x00000000000000ff\"");
    }
}
