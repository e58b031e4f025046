//! `.npy` export of one record, with the record's shape and the numpy dtype
//! matching its element type:
//!
//! | dump dtype | npy dtype |
//! |---|---|
//! | FLOAT32, FLOAT16 | `<f4`, `<f2` |
//! | BFLOAT16 | `<f4` (exact values; numpy has no bfloat16) |
//! | INT8/16/32/64, UINT8/16/32/64 | `i1 i2 i4 i8`, `u1 u2 u4 u8` |
//! | BOOL | `b1` (`u1` if a byte is neither 0 nor 1, with a note) |
//! | FP8E4M3FN, FP8E8M0, FP4E2M1 | raw bytes as `u1` (numpy has no such dtype; view them with `ml_dtypes`) |
//!
//! Scalars are written as 0-d arrays of their declared dtype (reference
//! dumps: `u8`, the raw slot). A truncated payload is written as a 1-D array
//! of the complete elements it holds; a metadata-only record (no payload) is
//! skipped.

use std::io::Write;
use std::path::Path;

use half::bf16;
use simpler_core::DType;

use super::{npy_dtype_note, ExportOutcome};
use crate::record::Record;

/// `.npy` magic and format version 1.0 (a `u16` header length follows).
const MAGIC_V1: &[u8; 8] = b"\x93NUMPY\x01\x00";

/// The header's dictionary, padded with spaces and ended by a newline so
/// that the data starts 64-byte aligned (the format's rule), as numpy
/// writes it.
fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: String = shape.iter().map(|d| format!("{d}, ")).collect();
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    let before = MAGIC_V1.len() + 2;
    let pad = 63 - (h.len() + before) % 64;
    h.extend(std::iter::repeat_n(' ', pad));
    h.push('\n');
    h.into_bytes()
}

/// Write `data` (the little-endian elements, `count` of them) as an `.npy`
/// array of `shape` and numpy type `descr`.
fn write_npy(
    path: &Path,
    descr: &str,
    shape: &[u64],
    count: usize,
    data: &[u8],
) -> std::io::Result<()> {
    let want: u64 = shape.iter().product();
    if want != count as u64 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("shape has {want} item(s), but the payload holds {count}"),
        ));
    }
    let head = header(descr, shape);
    let len = u16::try_from(head.len()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "npy header over 64 KiB")
    })?;
    // Atomic and durable: a full disk or a signal leaves no partial file
    // (the caller names the file in the error).
    simpler_format::durable::write_atomic(path, |w| {
        w.write_all(MAGIC_V1)?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&head)?;
        w.write_all(data)
    })
    .map_err(super::os_error)
}

/// The numpy type of a dump dtype's elements as written, and the bytes one
/// element takes in the dump.
fn npy_type(dtype: DType) -> (&'static str, usize) {
    match dtype {
        DType::Float32 => ("<f4", 4),
        DType::Float16 => ("<f2", 2),
        // Widened to f32 (exact): numpy has no bfloat16.
        DType::Bfloat16 => ("<f4", 2),
        DType::Int32 => ("<i4", 4),
        DType::Uint32 => ("<u4", 4),
        DType::Int16 => ("<i2", 2),
        DType::Uint16 => ("<u2", 2),
        DType::Int64 => ("<i8", 8),
        DType::Uint64 => ("<u8", 8),
        DType::Int8 => ("|i1", 1),
        DType::Bool => ("|b1", 1),
        DType::Uint8 | DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => ("|u1", 1),
    }
}

/// Write the values `bytes` (little-endian `dtype` elements) as an `.npy`
/// array of `shape`. Returns a note when the numpy dtype differs from the
/// dump's. `bytes` must hold exactly the elements of `shape` (a partial
/// last element is ignored).
pub fn write_values(
    path: &Path,
    dtype: DType,
    shape: &[u64],
    bytes: &[u8],
) -> std::io::Result<Option<String>> {
    let (mut descr, size) = npy_type(dtype);
    let count = bytes.len() / size;
    let raw = &bytes[..count * size];
    let mut note = npy_dtype_note(dtype).map(str::to_string);
    if dtype == DType::Bool && raw.iter().any(|&b| b > 1) {
        descr = "|u1";
        note = Some("BOOL payload has bytes other than 0 and 1: exported as raw uint8 (u1)".into());
    }
    if dtype == DType::Bfloat16 {
        let wide: Vec<u8> = raw
            .chunks_exact(2)
            .flat_map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32().to_le_bytes())
            .collect();
        write_npy(path, descr, shape, count, &wide)?;
    } else {
        write_npy(path, descr, shape, count, raw)?;
    }
    Ok(note)
}

/// Export one record (payload `bytes`) to `path` as `.npy` (see the module
/// docs for dtypes, scalars, truncated and metadata-only records).
///
/// # Errors
/// Writing the file failed.
pub fn export_npy(r: &Record, bytes: &[u8], path: &Path) -> std::io::Result<ExportOutcome> {
    let esize = r.dtype.size();
    let mut notes: Vec<String> = Vec::new();
    if r.is_scalar() {
        let Some(bits) = r.bits else {
            return Ok(ExportOutcome::Skipped {
                reason: "scalar without bits or value".into(),
            });
        };
        let raw = bits.to_le_bytes();
        let width = esize.min(8);
        if let Some(n) = write_values(path, r.dtype, &[], &raw[..width])? {
            notes.push(n);
        }
        notes.push(format!("scalar: 0-d array of {}", r.dtype));
        return Ok(ExportOutcome::Written {
            path: path.to_path_buf(),
            note: Some(notes.join("; ")),
        });
    }
    if r.is_metadata_only() {
        return Ok(ExportOutcome::Skipped {
            reason: "metadata-only record: the dump holds no payload for it".into(),
        });
    }
    let (shape, bytes) = if r.truncated || r.payload_elements() != r.numel {
        let n = r.payload_elements();
        notes.push(format!(
            "TRUNCATED payload: written as a 1-D array of the {n} of {} elements present",
            r.numel
        ));
        let len = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_mul(esize);
        (vec![n], bytes.get(..len).unwrap_or(bytes))
    } else {
        (r.shape.clone(), bytes)
    };
    if let Some(n) = write_values(path, r.dtype, &shape, bytes)? {
        notes.insert(0, n);
    }
    if r.overwritten {
        notes.push("OVERWRITTEN payload: values unreliable".into());
    }
    Ok(ExportOutcome::Written {
        path: path.to_path_buf(),
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}
