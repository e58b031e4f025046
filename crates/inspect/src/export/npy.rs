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

use std::path::Path;

use half::{bf16, f16};
use npyz::WriterBuilder;
use simpler_core::DType;

use super::{npy_dtype_note, ExportOutcome};
use crate::record::Record;

fn write_npy<T: npyz::AutoSerialize>(
    path: &Path,
    shape: &[u64],
    items: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    // Atomic and durable: a full disk or a signal leaves no partial file
    // (the caller names the file in the error).
    simpler_format::durable::write_atomic(path, |file| {
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .writer(file)
            .begin_nd()?;
        for x in items {
            w.push(&x)?;
        }
        w.finish()
    })
    .map_err(super::os_error)
}

fn chunks<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// Write the values `bytes` (little-endian `dtype` elements) as an `.npy`
/// array of `shape`. Returns a note when the numpy dtype differs from the
/// dump's. `bytes` must hold exactly the elements of `shape`.
pub fn write_values(
    path: &Path,
    dtype: DType,
    shape: &[u64],
    bytes: &[u8],
) -> std::io::Result<Option<String>> {
    let note = npy_dtype_note(dtype).map(str::to_string);
    match dtype {
        DType::Float32 => write_npy(path, shape, chunks(bytes).map(f32::from_le_bytes))?,
        DType::Float16 => write_npy(path, shape, chunks(bytes).map(f16::from_le_bytes))?,
        DType::Bfloat16 => write_npy(
            path,
            shape,
            chunks(bytes).map(|b| bf16::from_le_bytes(b).to_f32()),
        )?,
        DType::Int32 => write_npy(path, shape, chunks(bytes).map(i32::from_le_bytes))?,
        DType::Uint32 => write_npy(path, shape, chunks(bytes).map(u32::from_le_bytes))?,
        DType::Int16 => write_npy(path, shape, chunks(bytes).map(i16::from_le_bytes))?,
        DType::Uint16 => write_npy(path, shape, chunks(bytes).map(u16::from_le_bytes))?,
        DType::Int64 => write_npy(path, shape, chunks(bytes).map(i64::from_le_bytes))?,
        DType::Uint64 => write_npy(path, shape, chunks(bytes).map(u64::from_le_bytes))?,
        DType::Int8 => write_npy(path, shape, bytes.iter().map(|&b| b as i8))?,
        DType::Uint8 | DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => {
            write_npy(path, shape, bytes.iter().copied())?
        }
        DType::Bool => {
            if bytes.iter().all(|&b| b <= 1) {
                write_npy(path, shape, bytes.iter().map(|&b| b == 1))?
            } else {
                write_npy(path, shape, bytes.iter().copied())?;
                return Ok(Some(
                    "BOOL payload has bytes other than 0 and 1: exported as raw uint8 (u1)".into(),
                ));
            }
        }
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
