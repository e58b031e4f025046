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
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    buf[0] = b'0';
    buf[1] = b'x';
    for i in 0..16 {
        buf[17 - i] = DIGITS[((v >> (4 * i)) & 0xf) as usize];
    }
    // Only ASCII was written.
    std::str::from_utf8(buf).unwrap_or_default()
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
