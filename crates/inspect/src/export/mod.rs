//! Exporting records to files: text (metadata header, row-major overview,
//! indexed detail) or `.npy`, one file per record.

pub mod npy;
pub mod txt;

use std::path::{Path, PathBuf};

use simpler_core::DType;
use simpler_format::Error;

use crate::record::Record;
use crate::stream::DumpInfo;

/// Export file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Text: metadata header, row-major overview, indexed detail.
    Txt,
    /// NumPy `.npy`.
    Npy,
}

impl ExportFormat {
    /// File extension (`txt`, `npy`).
    pub fn ext(self) -> &'static str {
        match self {
            ExportFormat::Txt => "txt",
            ExportFormat::Npy => "npy",
        }
    }
}

/// Parse `--export`: `txt` or `npy`.
///
/// # Errors
/// What was expected.
pub fn parse_export_format(s: &str) -> Result<ExportFormat, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "txt" | "text" => Ok(ExportFormat::Txt),
        "npy" => Ok(ExportFormat::Npy),
        _ => Err(format!("{s:?}: expected txt or npy")),
    }
}

/// What exporting one record did.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportOutcome {
    /// A file was written; `note` says how it differs from the dump (bf16
    /// as f32, raw bytes, truncated payload …).
    Written {
        /// The file.
        path: PathBuf,
        /// A remark for the user, if any.
        note: Option<String>,
    },
    /// Nothing was written, and why.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// Text-export options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxtOptions {
    /// Write every value; no elision of large tensors.
    pub full: bool,
}

/// `task0x0000000200000003_before_dispatch_arg2_input.<ext>`.
pub fn export_file_name(r: &Record, ext: &str) -> String {
    format!(
        "task{}_{}_arg{}_{}.{ext}",
        r.task_id,
        r.stage,
        r.arg_index,
        r.role.name()
    )
}

/// Why an export failed: reading the dump or writing the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The dump could not be read.
    #[error(transparent)]
    Read(#[from] Error),
    /// A file could not be written.
    #[error("{path}: {error}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Writes one file per record into a folder. A record whose file name
/// repeats the previous record's (the upstream runtime repeats records per
/// block) gets `_rec<index>` appended.
#[derive(Debug)]
pub struct Exporter {
    out_dir: PathBuf,
    format: ExportFormat,
    txt: TxtOptions,
    last_name: Option<String>,
}

impl Exporter {
    /// Export into `out_dir` (created if needed).
    ///
    /// # Errors
    /// The folder cannot be created.
    pub fn new(
        out_dir: &Path,
        format: ExportFormat,
        txt: TxtOptions,
    ) -> Result<Exporter, ExportError> {
        std::fs::create_dir_all(out_dir).map_err(|error| ExportError::Write {
            path: out_dir.to_path_buf(),
            error,
        })?;
        Ok(Exporter {
            out_dir: out_dir.to_path_buf(),
            format,
            txt,
            last_name: None,
        })
    }

    /// The folder files go to.
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// The format files are written in.
    pub fn format(&self) -> ExportFormat {
        self.format
    }

    /// Export `r` of the dump `info`.
    ///
    /// # Errors
    /// Its payload cannot be read, or the file cannot be written.
    pub fn export(&mut self, info: &DumpInfo, r: &Record) -> Result<ExportOutcome, ExportError> {
        let ext = self.format.ext();
        let base = export_file_name(r, ext);
        let name = if self.last_name.as_deref() == Some(base.as_str()) {
            format!(
                "{}_rec{}.{ext}",
                base.trim_end_matches(&format!(".{ext}")),
                r.index
            )
        } else {
            base.clone()
        };
        self.last_name = Some(base);
        let path = self.out_dir.join(name);
        let bytes = info.payload.read(r)?;
        let written = match self.format {
            ExportFormat::Txt => txt::export_txt(info, r, &bytes, &path, self.txt),
            ExportFormat::Npy => npy::export_npy(r, &bytes, &path),
        };
        written.map_err(|error| ExportError::Write { path, error })
    }
}

/// Export `records` of `info` into `out_dir`: one outcome per record, with
/// the record's index.
///
/// # Errors
/// As for [`Exporter::export`].
pub fn export_records(
    info: &DumpInfo,
    records: &[&Record],
    format: ExportFormat,
    out_dir: &Path,
    txt: TxtOptions,
) -> Result<Vec<(usize, ExportOutcome)>, ExportError> {
    let mut e = Exporter::new(out_dir, format, txt)?;
    records
        .iter()
        .map(|r| Ok((r.index, e.export(info, r)?)))
        .collect()
}

/// A short note on how a dtype is exported to `.npy`, if it is not exported
/// as itself.
pub fn npy_dtype_note(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::Bfloat16 => Some("BFLOAT16 exported as FLOAT32 (<f4) values (exact: every bf16 is an f32)"),
        DType::Fp8E4M3Fn => Some("FP8E4M3FN has no numpy dtype: exported as raw uint8 bytes (view with ml_dtypes.float8_e4m3fn)"),
        DType::Fp8E8M0 => Some("FP8E8M0 has no numpy dtype: exported as raw uint8 bytes (view with ml_dtypes.float8_e8m0fnu)"),
        DType::Fp4E2M1 => Some("FP4E2M1 has no numpy dtype: exported as raw uint8 bytes, one element per byte in the low nibble (ml_dtypes.float4_e2m1fn)"),
        _ => None,
    }
}

/// A failed export write as the OS said it, without the temporary file's
/// name or Rust's `(os error N)`: [`ExportError::Write`] names the file.
pub(crate) fn os_error(e: simpler_format::durable::WriteError) -> std::io::Error {
    let msg = simpler_format::durable::os_message(&e.source);
    std::io::Error::new(e.source.kind(), msg)
}
