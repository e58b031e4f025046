//! Element types. The u8 codes and UPPERCASE names are part of the file formats.

use std::fmt;

/// Element type of a tensor or scalar.
///
/// Codes and names are part of the dump formats (DESIGN §3); changing them
/// changes the format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DType {
    /// IEEE binary32.
    Float32 = 0,
    /// IEEE binary16.
    Float16 = 1,
    /// Signed 32-bit integer.
    Int32 = 2,
    /// Signed 16-bit integer.
    Int16 = 3,
    /// Signed 8-bit integer.
    Int8 = 4,
    /// Unsigned 8-bit integer.
    Uint8 = 5,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    Bfloat16 = 6,
    /// Signed 64-bit integer.
    Int64 = 7,
    /// Unsigned 64-bit integer.
    Uint64 = 8,
    /// Unsigned 16-bit integer.
    Uint16 = 9,
    /// Unsigned 32-bit integer.
    Uint32 = 10,
    /// Boolean stored in one byte.
    Bool = 11,
    /// 8-bit float, 4-bit exponent, 3-bit mantissa, finite-only.
    Fp8E4M3Fn = 12,
    /// 8-bit exponent-only scale format.
    Fp8E8M0 = 13,
    /// 4-bit float; stored one element per byte in this simulator.
    Fp4E2M1 = 14,
}

const ALL: [DType; 15] = [
    DType::Float32,
    DType::Float16,
    DType::Int32,
    DType::Int16,
    DType::Int8,
    DType::Uint8,
    DType::Bfloat16,
    DType::Int64,
    DType::Uint64,
    DType::Uint16,
    DType::Uint32,
    DType::Bool,
    DType::Fp8E4M3Fn,
    DType::Fp8E8M0,
    DType::Fp4E2M1,
];

impl DType {
    /// Every dtype, in code order.
    pub const ALL: [DType; 15] = ALL;

    /// The u8 code used in descriptors and dumps.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Decode a u8 code; `None` for codes no dtype has.
    pub fn from_code(code: u8) -> Option<DType> {
        ALL.get(code as usize).copied()
    }

    /// The UPPERCASE name used in JSON files.
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "FLOAT32",
            DType::Float16 => "FLOAT16",
            DType::Int32 => "INT32",
            DType::Int16 => "INT16",
            DType::Int8 => "INT8",
            DType::Uint8 => "UINT8",
            DType::Bfloat16 => "BFLOAT16",
            DType::Int64 => "INT64",
            DType::Uint64 => "UINT64",
            DType::Uint16 => "UINT16",
            DType::Uint32 => "UINT32",
            DType::Bool => "BOOL",
            DType::Fp8E4M3Fn => "FP8E4M3FN",
            DType::Fp8E8M0 => "FP8E8M0",
            DType::Fp4E2M1 => "FP4E2M1",
        }
    }

    /// Parse an UPPERCASE name (case-insensitive).
    pub fn from_name(name: &str) -> Option<DType> {
        ALL.iter()
            .copied()
            .find(|d| d.name().eq_ignore_ascii_case(name))
    }

    /// Bytes one element occupies in memory.
    pub fn size(self) -> usize {
        match self {
            DType::Float32 | DType::Int32 | DType::Uint32 => 4,
            DType::Float16 | DType::Bfloat16 | DType::Int16 | DType::Uint16 => 2,
            DType::Int64 | DType::Uint64 => 8,
            DType::Int8
            | DType::Uint8
            | DType::Bool
            | DType::Fp8E4M3Fn
            | DType::Fp8E8M0
            | DType::Fp4E2M1 => 1,
        }
    }

    /// True for the floating-point types the tile ISA computes with.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float16 | DType::Bfloat16)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(d.code() as usize, i);
            assert_eq!(DType::from_code(i as u8), Some(*d));
            assert_eq!(DType::from_name(d.name()), Some(*d));
        }
        assert_eq!(DType::from_code(15), None);
        assert_eq!(DType::from_name("float64"), None);
        assert_eq!(DType::Bfloat16.name(), "BFLOAT16");
        assert_eq!(DType::Fp8E4M3Fn.code(), 12);
    }
}
