//! Validating reader of `tensor_dump.json` + `tensor_dump.bin` (DESIGN §6, §7).
//!
//! [`Dump::open`] accepts a run directory, its `tensor_dump/` folder or the
//! `tensor_dump.json` file itself. It parses the manifest (record list named
//! `tensors` or `args`), turns every record into a typed [`Record`], maps the
//! payload file and checks, before handing anything out, that every record's
//! byte range lies inside it and that the header counters agree with the
//! records. Every problem is a [`ReadError`] naming the file and, for record
//! problems, the record index and field.
//!
//! Dumps written by the reference C++ runtime are accepted too: no
//! `schema_version`, `status`, `func_id`, `addr` or `bits`; scalars carry dtype
//! `UINT64` and the raw slot bits as `value` (so [`Record::bits`] = `value`);
//! `input_tensors` counts scalar records as well.
//!
//! ```no_run
//! use simpler_dump::reader::Dump;
//! let dump = Dump::open("outputs/vector_example_default_20260101_000000")?;
//! for r in dump.records() {
//!     let v = dump.elements_f64(r);
//!     println!("{} {} {:?}", r.label(), r.dtype, v.first());
//! }
//! # Ok::<(), simpler_dump::reader::ReadError>(())
//! ```

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use half::{bf16, f16};
use simpler_core::{ArgRole, DType, TaskId, MAX_DIMS};

use crate::manifest::{Manifest, RecordJson, ScalarValue, SCHEMA_VERSION};

/// File name of the manifest inside a dump folder.
pub const MANIFEST_FILE: &str = "tensor_dump.json";
/// Name of the dump folder inside a run directory.
pub const DUMP_DIR: &str = "tensor_dump";

/// When a record was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Before the task was dispatched: inputs, inouts and scalars.
    BeforeDispatch,
    /// After the task completed: outputs and inouts.
    AfterCompletion,
    /// The run stopped while the task was in flight: outputs and inouts as
    /// they were in GM at that moment.
    HangSnapshot,
}

impl Stage {
    /// The name used in the manifest (`before_dispatch`, `after_completion`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::BeforeDispatch => "before_dispatch",
            Stage::AfterCompletion => "after_completion",
            Stage::HangSnapshot => "hang_snapshot",
        }
    }

    /// Parse a manifest name; also accepts the short forms `before` / `after`.
    pub fn from_name(s: &str) -> Option<Stage> {
        match s.trim().to_ascii_lowercase().as_str() {
            "before_dispatch" | "before" => Some(Stage::BeforeDispatch),
            "after_completion" | "after" => Some(Stage::AfterCompletion),
            "hang_snapshot" => Some(Stage::HangSnapshot),
            _ => None,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a record holds a tensor view or a scalar argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    /// A tensor view; its payload is in the `.bin` file.
    Tensor,
    /// A scalar argument; its value is in the manifest (`value`, `bits`).
    Scalar,
}

impl RecordKind {
    /// The name used in the manifest (`tensor`, `scalar`).
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Tensor => "tensor",
            RecordKind::Scalar => "scalar",
        }
    }

    /// Parse a manifest name.
    pub fn from_name(s: &str) -> Option<RecordKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tensor" => Some(RecordKind::Tensor),
            "scalar" => Some(RecordKind::Scalar),
            _ => None,
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parse a role name as dumps write it (`input`, `output`, `inout`,
/// `output_existing`, `no_dep`; case-insensitive).
pub fn parse_role(s: &str) -> Option<ArgRole> {
    match s.trim().to_ascii_lowercase().as_str() {
        "input" => Some(ArgRole::Input),
        "output" => Some(ArgRole::Output),
        "inout" => Some(ArgRole::InOut),
        "output_existing" => Some(ArgRole::OutputExisting),
        "no_dep" => Some(ArgRole::NoDep),
        _ => None,
    }
}

/// Parse a 64-bit hex string as the dumps write it: `0x` followed by 1–16
/// hex digits.
pub fn parse_hex_u64(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// One validated record of a tensor dump.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Position in the manifest's record list.
    pub index: usize,
    /// The task the record belongs to.
    pub task_id: TaskId,
    /// Func ids of the task's members (MIX: all); empty for reference dumps.
    pub func_ids: Vec<u32>,
    /// How the task uses the argument.
    pub role: ArgRole,
    /// When it was captured.
    pub stage: Stage,
    /// Argument slot (scalars: tensor count + j).
    pub arg_index: u32,
    /// Tensor or scalar.
    pub kind: RecordKind,
    /// Element type.
    pub dtype: DType,
    /// View shape (empty for scalars).
    pub shape: Vec<u64>,
    /// View strides in elements (empty for scalars).
    pub strides: Vec<u64>,
    /// View offset in elements from the buffer start.
    pub start_offset: u64,
    /// Dense row-major view.
    pub is_contiguous: bool,
    /// Elements of the view (product of `shape`; 1 for scalars).
    pub numel: u64,
    /// GM address of the buffer, when the dump recorded it.
    pub addr: Option<u64>,
    /// Offset of the payload in the `.bin` file.
    pub bin_offset: u64,
    /// Payload bytes in the `.bin` file (0 for scalars and metadata-only records).
    pub bin_size: u64,
    /// The payload is shorter than the view (drop policy).
    pub truncated: bool,
    /// The payload was overwritten before it reached the file (drop policy).
    pub overwritten: bool,
    /// A scalar's value as the manifest wrote it.
    pub value: Option<ScalarValue>,
    /// A scalar's raw 64-bit slot bits: `bits` from the manifest, or derived
    /// from `value` when absent (reference dumps: `value` is the raw slot).
    pub bits: Option<u64>,
}

impl Record {
    /// True for scalar records.
    pub fn is_scalar(&self) -> bool {
        self.kind == RecordKind::Scalar
    }

    /// Bytes the full view occupies (`numel × element size`).
    pub fn expected_bytes(&self) -> u64 {
        // Validated not to overflow in `Dump::open`.
        self.numel.saturating_mul(self.dtype.size() as u64)
    }

    /// A tensor record without payload (dump level 3 records metadata for
    /// every argument but payload only for marked ones).
    pub fn is_metadata_only(&self) -> bool {
        self.kind == RecordKind::Tensor
            && self.bin_size == 0
            && self.expected_bytes() > 0
            && !self.truncated
    }

    /// Complete elements present in the payload.
    pub fn payload_elements(&self) -> u64 {
        self.bin_size / self.dtype.size() as u64
    }

    /// `task 0x…, arg N`: how messages name the record besides its index.
    pub fn label(&self) -> String {
        format!("task {}, arg {}", self.task_id, self.arg_index)
    }

    /// The scalar decoded by its dtype from [`Record::bits`]: f64 for float
    /// dtypes, exact integers up to 2^53 otherwise. `None` for tensors.
    pub fn scalar_f64(&self) -> Option<f64> {
        let bits = self.bits?;
        let width = self.dtype.size().min(8);
        let bytes = bits.to_le_bytes();
        Some(decode_f64(&bytes[..width], self.dtype, 0))
    }

    /// The scalar formatted by its dtype (`1.0`, `-3`, `0x…` never), or
    /// `None` for tensors.
    pub fn scalar_display(&self) -> Option<String> {
        let bits = self.bits?;
        let width = self.dtype.size().min(8);
        let bytes = bits.to_le_bytes();
        Some(format_element(&bytes[..width], self.dtype, 0))
    }

    /// For reference dumps (scalars typed `UINT64` holding the raw slot):
    /// the low 32 bits read as an f32 when they plausibly are one (the upper
    /// half is zero and the f32 is a normal number of moderate magnitude).
    /// A hint for humans; the dump does not say what the slot held.
    pub fn f32_hint(&self) -> Option<f32> {
        if self.kind != RecordKind::Scalar || self.dtype != DType::Uint64 {
            return None;
        }
        let bits = self.bits?;
        if bits >> 32 != 0 || bits < 0x0080_0000 {
            return None;
        }
        let f = f32::from_bits(bits as u32);
        let a = f.abs();
        (f.is_normal() && (1e-8..=1e12).contains(&a)).then_some(f)
    }
}

/// Everything that can be wrong with a dump, each naming the file (and the
/// record and field when one is at fault).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The given path does not exist.
    #[error("dump path {path} does not exist")]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// A directory was given but holds no manifest.
    #[error("no {MANIFEST_FILE} in {dir} (looked at {tried})")]
    NoManifest {
        /// The directory given.
        dir: PathBuf,
        /// The candidate paths, comma-separated.
        tried: String,
    },
    /// The payload file the manifest names is missing.
    #[error("{manifest}: bin_file {name:?} not found (expected {path})")]
    MissingBin {
        /// The manifest.
        manifest: PathBuf,
        /// `bin_file` as written.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Reading or mapping a file failed.
    #[error("{path}: cannot read: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (part of the message, so not chained as a source).
        error: std::io::Error,
    },
    /// Not valid JSON.
    #[error("{path}: malformed JSON at line {line}, column {column}: {msg}")]
    MalformedJson {
        /// The manifest.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's description.
        msg: String,
    },
    /// The JSON ends before the document is complete.
    #[error("{path}: truncated JSON: the file ends at line {line}, column {column} before the document is complete ({msg})")]
    TruncatedJson {
        /// The manifest.
        path: PathBuf,
        /// 1-based line where input ended.
        line: usize,
        /// 1-based column where input ended.
        column: usize,
        /// serde_json's description.
        msg: String,
    },
    /// Valid JSON, but a header field is missing or of the wrong type.
    #[error("{path}: bad manifest at line {line}, column {column}: {msg}")]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's description (names the field).
        msg: String,
    },
    /// A `schema_version` this reader does not know.
    #[error("{path}: unknown schema_version {version} (this reader understands {SCHEMA_VERSION}, or no schema_version for reference-runtime dumps)")]
    SchemaVersion {
        /// The manifest.
        path: PathBuf,
        /// The version found, as written.
        version: String,
    },
    /// A header field other than the counters has a value this reader rejects.
    #[error("{path}: header field {field}: {msg}")]
    Header {
        /// The manifest.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// One record is invalid.
    #[error("{path}: record {index} ({label}): {field}: {msg}")]
    Record {
        /// The manifest.
        path: PathBuf,
        /// Position in the record list.
        index: usize,
        /// `task 0x…, arg N` (the raw task_id when it is the bad field, `?`
        /// for what is unknown).
        label: String,
        /// The offending field (`record` when the record as a whole is).
        field: &'static str,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// A record's payload range reaches past the end of the `.bin` file.
    #[error(
        "{bin}: {name} is {len} bytes but record {index} ({label}) needs bytes {start}..{end}"
    )]
    BinTooShort {
        /// The payload file.
        bin: PathBuf,
        /// Its file name.
        name: String,
        /// Its length.
        len: u64,
        /// Record index.
        index: usize,
        /// `task 0x…, arg N`.
        label: String,
        /// First byte needed.
        start: u64,
        /// One past the last byte needed (saturated at `u64::MAX`).
        end: u64,
    },
    /// A header counter disagrees with the records.
    #[error("{path}: header field {field} is {header} but the records have {actual}{note}")]
    Counter {
        /// The manifest.
        path: PathBuf,
        /// The counter.
        field: &'static str,
        /// Its value in the header.
        header: u64,
        /// What the records add up to.
        actual: u64,
        /// Extra explanation (may be empty).
        note: String,
    },
}

/// The `.bin` payload: memory-mapped, or nothing for an empty file (which
/// cannot be mapped).
enum Payload {
    Empty,
    Mapped(memmap2::Mmap),
}

impl Payload {
    fn bytes(&self) -> &[u8] {
        match self {
            Payload::Empty => &[],
            Payload::Mapped(m) => m,
        }
    }
}

/// An opened, validated tensor dump.
pub struct Dump {
    dir: PathBuf,
    manifest_path: PathBuf,
    bin_path: PathBuf,
    header: Manifest,
    records: Vec<Record>,
    payload: Payload,
}

impl fmt::Debug for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dump")
            .field("manifest_path", &self.manifest_path)
            .field("bin_path", &self.bin_path)
            .field("records", &self.records.len())
            .field("bin_len", &self.bin_len())
            .finish()
    }
}

/// Find the manifest for a run directory, a dump folder or a manifest file.
pub fn resolve_manifest(path: &Path) -> Result<PathBuf, ReadError> {
    if !path.exists() {
        return Err(ReadError::NotFound {
            path: path.to_path_buf(),
        });
    }
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let candidates = [
        path.join(MANIFEST_FILE),
        path.join(DUMP_DIR).join(MANIFEST_FILE),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(c.clone());
        }
    }
    Err(ReadError::NoManifest {
        dir: path.to_path_buf(),
        tried: candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

impl Dump {
    /// Open and validate a dump. `path` is a run directory, its
    /// `tensor_dump/` folder, or a `tensor_dump.json` file.
    pub fn open(path: impl AsRef<Path>) -> Result<Dump, ReadError> {
        let manifest_path = resolve_manifest(path.as_ref())?;
        let text = std::fs::read(&manifest_path).map_err(|error| ReadError::Io {
            path: manifest_path.clone(),
            error,
        })?;
        let mut header = parse_manifest(&manifest_path, &text)?;
        drop(text);
        check_schema(&manifest_path, header.schema_version.map(u64::from))?;

        let dir = manifest_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if header.bin_file.is_empty() {
            return Err(ReadError::Header {
                path: manifest_path,
                field: "bin_file",
                msg: "empty; expected the payload file name (tensor_dump.bin)".into(),
            });
        }
        if header.bin_format.kind != "logical_contiguous" {
            return Err(ReadError::Header {
                path: manifest_path,
                field: "bin_format.type",
                msg: format!(
                    "{:?} is not supported; expected \"logical_contiguous\"",
                    header.bin_format.kind
                ),
            });
        }
        if header.bin_format.byte_order != "little_endian" {
            return Err(ReadError::Header {
                path: manifest_path,
                field: "bin_format.byte_order",
                msg: format!(
                    "{:?} is not supported; expected \"little_endian\"",
                    header.bin_format.byte_order
                ),
            });
        }
        let bin_path = dir.join(&header.bin_file);
        let payload = map_bin(&manifest_path, &header.bin_file, &bin_path)?;
        let bin_len = payload.bytes().len() as u64;

        let raw = std::mem::take(&mut header.tensors);
        let mut records = Vec::with_capacity(raw.len());
        for (index, r) in raw.into_iter().enumerate() {
            let rec = validate_record(&manifest_path, &header, index, r)?;
            let end = rec.bin_offset.checked_add(rec.bin_size);
            if !matches!(end, Some(e) if e <= bin_len) {
                return Err(ReadError::BinTooShort {
                    bin: bin_path,
                    name: header.bin_file.clone(),
                    len: bin_len,
                    index,
                    label: rec.label(),
                    start: rec.bin_offset,
                    end: end.unwrap_or(u64::MAX),
                });
            }
            records.push(rec);
        }
        check_counters(&manifest_path, &header, &records)?;
        Ok(Dump {
            dir,
            manifest_path,
            bin_path,
            header,
            records,
            payload,
        })
    }

    /// The manifest header. Its `tensors` list is empty: the records live,
    /// validated, in [`Dump::records`].
    pub fn header(&self) -> &Manifest {
        &self.header
    }

    /// All records, in manifest order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The folder holding the manifest.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of `tensor_dump.json`.
    pub fn manifest_path(&self) -> &Path {
        &self.manifest_path
    }

    /// Path of the payload file.
    pub fn bin_path(&self) -> &Path {
        &self.bin_path
    }

    /// Length of the payload file in bytes.
    pub fn bin_len(&self) -> u64 {
        self.payload.bytes().len() as u64
    }

    /// True for dumps written by the reference runtime (no `schema_version`).
    pub fn is_reference_format(&self) -> bool {
        self.header.schema_version.is_none()
    }

    /// Records lost or damaged by the drop policy: `(dropped_records,
    /// truncated_tensors, dropped_overwrite)`.
    pub fn loss(&self) -> (u64, u64, u64) {
        (
            self.header.dropped_records,
            self.header.truncated_tensors,
            self.header.dropped_overwrite,
        )
    }

    /// A record's payload bytes (empty for scalars and metadata-only
    /// records; shorter than the view for truncated ones). A record from
    /// another dump whose range does not fit gives an empty slice.
    pub fn payload(&self, r: &Record) -> &[u8] {
        let (Ok(start), Some(end)) = (
            usize::try_from(r.bin_offset),
            r.bin_offset
                .checked_add(r.bin_size)
                .and_then(|e| usize::try_from(e).ok()),
        ) else {
            return &[];
        };
        self.payload.bytes().get(start..end).unwrap_or(&[])
    }

    /// A record's values as f64, decoded by dtype (row-major, the complete
    /// elements the payload holds). Scalars give their one value. BFLOAT16,
    /// FLOAT16, FP8E4M3FN, FP8E8M0 and FP4E2M1 are decoded exactly;
    /// integers are exact up to 2^53; BOOL gives 0 or 1 (any nonzero byte is 1).
    pub fn elements_f64(&self, r: &Record) -> Vec<f64> {
        if r.kind == RecordKind::Scalar {
            return r.scalar_f64().into_iter().collect();
        }
        decode_all_f64(self.payload(r), r.dtype)
    }
}

/// Decode a little-endian buffer of `dtype` elements to f64 (trailing bytes
/// that do not make a whole element are ignored).
pub fn decode_all_f64(bytes: &[u8], dtype: DType) -> Vec<f64> {
    let n = bytes.len() / dtype.size();
    (0..n).map(|i| decode_f64(bytes, dtype, i)).collect()
}

fn le<const N: usize>(bytes: &[u8], i: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(s) = bytes.get(i * N..(i + 1) * N) {
        out.copy_from_slice(s);
    }
    out
}

/// Element `i` of a little-endian `dtype` buffer as f64; 0 when `i` is out
/// of range (callers bound `i` by the element count).
pub fn decode_f64(bytes: &[u8], dtype: DType, i: usize) -> f64 {
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
/// integers exactly, BOOL as `true`/`false` (`true(7)` for other nonzero bytes).
pub fn format_element(bytes: &[u8], dtype: DType, i: usize) -> String {
    match dtype {
        DType::Float32 => format!("{:?}", f32::from_le_bytes(le(bytes, i))),
        // Through f64, whose shortest round-trip form of a 16-bit float's
        // value is its exact decimal (0.369140625, not f32's 0.36914063).
        DType::Float16 => format!("{:?}", f64::from(f16::from_le_bytes(le(bytes, i)).to_f32())),
        DType::Bfloat16 => format!(
            "{:?}",
            f64::from(bf16::from_le_bytes(le(bytes, i)).to_f32())
        ),
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
            format!("{:?}", decode_f64(bytes, dtype, i))
        }
    }
}

fn json_error(path: &Path, e: &serde_json::Error) -> ReadError {
    let path = path.to_path_buf();
    let (line, column) = (e.line(), e.column());
    // serde_json's Display appends " at line L column C"; we say it ourselves.
    let full = e.to_string();
    let msg = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(m, _)| m)
        .to_string();
    match e.classify() {
        serde_json::error::Category::Eof => ReadError::TruncatedJson {
            path,
            line,
            column,
            msg,
        },
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            ReadError::MalformedJson {
                path,
                line,
                column,
                msg,
            }
        }
        serde_json::error::Category::Data => ReadError::BadManifest {
            path,
            line,
            column,
            msg,
        },
    }
}

fn check_schema(path: &Path, version: Option<u64>) -> Result<(), ReadError> {
    match version {
        None => Ok(()),
        Some(v) if v == u64::from(SCHEMA_VERSION) => Ok(()),
        Some(v) => Err(ReadError::SchemaVersion {
            path: path.to_path_buf(),
            version: v.to_string(),
        }),
    }
}

/// Parse the manifest; on a type error, find out whether the schema version
/// or a particular record is to blame so the message can say so.
fn parse_manifest(path: &Path, text: &[u8]) -> Result<Manifest, ReadError> {
    let err = match serde_json::from_slice::<Manifest>(text) {
        Ok(m) => return Ok(m),
        Err(e) => e,
    };
    if err.classify() != serde_json::error::Category::Data {
        return Err(json_error(path, &err));
    }
    // Valid JSON of the wrong shape: this is the (rare) error path, so a
    // second, untyped parse to locate the culprit is affordable.
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(text) else {
        return Err(json_error(path, &err));
    };
    let Some(obj) = value.as_object() else {
        return Err(ReadError::BadManifest {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            msg: format!(
                "expected a JSON object at the top level, found {}",
                kind_of(&value)
            ),
        });
    };
    if let Some(v) = obj.get("schema_version") {
        match v.as_u64() {
            Some(n) => check_schema(path, Some(n))?,
            None => {
                return Err(ReadError::SchemaVersion {
                    path: path.to_path_buf(),
                    version: v.to_string(),
                })
            }
        }
    }
    if let Some((field, msg)) = bad_field(&value, HEADER_FIELDS) {
        return Err(ReadError::BadManifest {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            msg: format!("header field {field}: {msg}"),
        });
    }
    let list = obj.get("tensors").or_else(|| obj.get("args"));
    if let Some(serde_json::Value::Array(items)) = list {
        for (index, item) in items.iter().enumerate() {
            if let Err(e) = serde_json::from_value::<RecordJson>(item.clone()) {
                let task = item
                    .get("task_id")
                    .and_then(|t| t.as_str())
                    .map_or_else(|| "task ?".to_string(), |t| format!("task {t}"));
                let arg = item
                    .get("arg_index")
                    .map_or_else(|| "?".to_string(), |a| a.to_string());
                let (field, msg) = match bad_field(item, RECORD_FIELDS) {
                    Some(found) => found,
                    None => {
                        let msg = e.to_string();
                        let missing = msg
                            .strip_prefix("missing field `")
                            .and_then(|m| m.split('`').next());
                        let field = RECORD_FIELDS
                            .iter()
                            .map(|(name, _)| *name)
                            .find(|name| Some(*name) == missing)
                            .unwrap_or("record");
                        (field, msg)
                    }
                };
                return Err(ReadError::Record {
                    path: path.to_path_buf(),
                    index,
                    label: format!("{task}, arg {arg}"),
                    field,
                    msg,
                });
            }
        }
    }
    Err(json_error(path, &err))
}

/// Checks one JSON value against a field's wire type.
type FieldCheck = fn(&serde_json::Value) -> Result<(), serde_json::Error>;

fn is<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Result<(), serde_json::Error> {
    T::deserialize(v).map(|_| ())
}

/// Wire types of a record's fields, to name the one that is wrong.
const RECORD_FIELDS: &[(&str, FieldCheck)] = &[
    ("task_id", is::<String>),
    ("func_id", is::<Option<Vec<u32>>>),
    ("role", is::<String>),
    ("stage", is::<String>),
    ("arg_index", is::<u32>),
    ("kind", is::<String>),
    ("dtype", is::<String>),
    ("shape", is::<Vec<u64>>),
    ("strides", is::<Vec<u64>>),
    ("start_offset", is::<u64>),
    ("is_contiguous", is::<bool>),
    ("numel", is::<u64>),
    ("addr", is::<Option<String>>),
    ("bin_offset", is::<u64>),
    ("bin_size", is::<u64>),
    ("truncated", is::<bool>),
    ("overwritten", is::<bool>),
    ("value", is::<Option<ScalarValue>>),
    ("bits", is::<Option<String>>),
];

/// Wire types of the header's fields (the record list only as a list).
const HEADER_FIELDS: &[(&str, FieldCheck)] = &[
    ("run_dir", is::<String>),
    ("status", is::<Option<String>>),
    ("reason", is::<Option<String>>),
    ("bin_file", is::<String>),
    ("bin_format", is::<crate::manifest::BinFormat>),
    ("dump_level", is::<Option<u8>>),
    ("dump_policy", is::<Option<String>>),
    ("total_tensors", is::<u64>),
    ("before_dispatch", is::<u64>),
    ("after_completion", is::<u64>),
    ("hang_snapshot", is::<u64>),
    (
        "unfinished_tasks",
        is::<Option<Vec<crate::manifest::UnfinishedTaskJson>>>,
    ),
    ("input_tensors", is::<u64>),
    ("output_tensors", is::<u64>),
    ("inout_tensors", is::<u64>),
    ("scalar_args", is::<u64>),
    ("truncated_tensors", is::<u64>),
    ("dropped_records", is::<u64>),
    ("dropped_overwrite", is::<u64>),
    ("tensors", is::<Vec<serde_json::Value>>),
    ("args", is::<Vec<serde_json::Value>>),
];

/// The first present field of `obj` whose value has the wrong type, with
/// serde's description of the problem.
fn bad_field(
    obj: &serde_json::Value,
    fields: &[(&'static str, FieldCheck)],
) -> Option<(&'static str, String)> {
    let obj = obj.as_object()?;
    fields.iter().find_map(|(name, check)| {
        let v = obj.get(*name)?;
        check(v).err().map(|e| (*name, e.to_string()))
    })
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn map_bin(manifest: &Path, name: &str, bin_path: &Path) -> Result<Payload, ReadError> {
    let file = match File::open(bin_path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReadError::MissingBin {
                manifest: manifest.to_path_buf(),
                name: name.to_string(),
                path: bin_path.to_path_buf(),
            })
        }
        Err(error) => {
            return Err(ReadError::Io {
                path: bin_path.to_path_buf(),
                error,
            })
        }
    };
    let io = |error| ReadError::Io {
        path: bin_path.to_path_buf(),
        error,
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::Io {
            path: bin_path.to_path_buf(),
            error: std::io::Error::other("not a regular file"),
        });
    }
    if meta.len() == 0 {
        return Ok(Payload::Empty);
    }
    // SAFETY: the map is read-only and private to this process. Dump files
    // are written once (temp name + rename) and never modified in place; a
    // concurrent writer truncating the file is outside the contract, as for
    // every mmap-based reader.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    Ok(Payload::Mapped(map))
}

/// Derive a scalar's raw slot bits from its JSON value when `bits` is
/// absent: the value in its dtype's representation, zero-extended (as the
/// dispatch ABI stores narrow scalars); signed 64-bit as two's complement.
fn bits_from_value(v: ScalarValue, dtype: DType) -> Option<u64> {
    let as_f64 = match v {
        ScalarValue::Int(i) => i as f64,
        ScalarValue::UInt(u) => u as f64,
        ScalarValue::F32(f) => f64::from(f),
        ScalarValue::F64(f) => f,
    };
    let int = || -> Option<i128> {
        match v {
            ScalarValue::Int(i) => Some(i128::from(i)),
            ScalarValue::UInt(u) => Some(i128::from(u)),
            _ => None,
        }
    };
    Some(match dtype {
        DType::Float32 => u64::from((as_f64 as f32).to_bits()),
        DType::Float16 => u64::from(f16::from_f64(as_f64).to_bits()),
        DType::Bfloat16 => u64::from(bf16::from_f64(as_f64).to_bits()),
        DType::Uint64 => u64::try_from(int()?).ok()?,
        DType::Int64 => i64::try_from(int()?).ok()? as u64,
        DType::Int32 => u64::from(i32::try_from(int()?).ok()? as u32),
        DType::Uint32 => u64::from(u32::try_from(int()?).ok()?),
        DType::Int16 => u64::from(i16::try_from(int()?).ok()? as u16),
        DType::Uint16 => u64::from(u16::try_from(int()?).ok()?),
        DType::Int8 => u64::from(i8::try_from(int()?).ok()? as u8),
        DType::Uint8 | DType::Bool | DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => {
            u64::from(u8::try_from(int()?).ok()?)
        }
    })
}

fn validate_record(
    path: &Path,
    header: &Manifest,
    index: usize,
    r: RecordJson,
) -> Result<Record, ReadError> {
    let task_id = parse_hex_u64(&r.task_id).map(TaskId);
    let err = |field: &'static str, msg: String| ReadError::Record {
        path: path.to_path_buf(),
        index,
        label: match task_id {
            Some(t) => format!("task {t}, arg {}", r.arg_index),
            None => format!("task {:?}, arg {}", r.task_id, r.arg_index),
        },
        field,
        msg,
    };
    let Some(task_id) = task_id else {
        return Err(err(
            "task_id",
            format!(
                "bad hex {:?}: expected \"0x\" followed by up to 16 hex digits",
                r.task_id
            ),
        ));
    };
    let role = parse_role(&r.role).ok_or_else(|| {
        err(
            "role",
            format!(
                "unknown role {:?}: expected input, output, inout, output_existing or no_dep",
                r.role
            ),
        )
    })?;
    let stage = Stage::from_name(&r.stage).ok_or_else(|| {
        err(
            "stage",
            format!(
                "unknown stage {:?}: expected before_dispatch or after_completion",
                r.stage
            ),
        )
    })?;
    let kind = RecordKind::from_name(&r.kind).ok_or_else(|| {
        err(
            "kind",
            format!("unknown kind {:?}: expected tensor or scalar", r.kind),
        )
    })?;
    let dtype = DType::from_name(&r.dtype).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        err(
            "dtype",
            format!(
                "unknown dtype {:?}: expected one of {}",
                r.dtype,
                names.join(", ")
            ),
        )
    })?;
    if r.shape.len() > MAX_DIMS {
        return Err(err(
            "shape",
            format!(
                "{} dimensions {:?}: at most {MAX_DIMS} are supported",
                r.shape.len(),
                r.shape
            ),
        ));
    }
    if kind == RecordKind::Tensor && r.strides.len() != r.shape.len() {
        return Err(err(
            "strides",
            format!(
                "{} strides {:?} for {} dimensions {:?}: expected one stride per dimension",
                r.strides.len(),
                r.strides,
                r.shape.len(),
                r.shape
            ),
        ));
    }
    let product = r
        .shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            err(
                "shape",
                format!("{:?}: the element count overflows 64 bits", r.shape),
            )
        })?;
    if r.numel != product {
        return Err(err(
            "numel",
            format!("{} but shape {:?} has {product} elements", r.numel, r.shape),
        ));
    }
    let expected = r.numel.checked_mul(dtype.size() as u64).ok_or_else(|| {
        err(
            "numel",
            format!(
                "{} elements of {dtype}: the byte size overflows 64 bits",
                r.numel
            ),
        )
    })?;
    let metadata_only_ok = kind == RecordKind::Scalar || header.dump_level == Some(3);
    if r.truncated {
        if r.bin_size > expected {
            return Err(err(
                "bin_size",
                format!(
                    "{} for a truncated record, but the full view is only {expected} bytes ({} × {dtype})",
                    r.bin_size, r.numel
                ),
            ));
        }
    } else if kind == RecordKind::Tensor
        && r.bin_size != expected
        && !(r.bin_size == 0 && metadata_only_ok)
    {
        let level3 = if r.bin_size == 0 {
            " (a tensor record without payload is only valid at dump_level 3)"
        } else {
            ""
        };
        return Err(err(
            "bin_size",
            format!(
                "{} but numel {} × {} bytes ({dtype}) = {expected}{level3}",
                r.bin_size,
                r.numel,
                dtype.size()
            ),
        ));
    }
    let addr = match &r.addr {
        None => None,
        Some(a) => Some(parse_hex_u64(a).ok_or_else(|| {
            err(
                "addr",
                format!("bad hex {a:?}: expected \"0x\" followed by up to 16 hex digits"),
            )
        })?),
    };
    let mut bits = match &r.bits {
        None => None,
        Some(b) => Some(parse_hex_u64(b).ok_or_else(|| {
            err(
                "bits",
                format!("bad hex {b:?}: expected \"0x\" followed by up to 16 hex digits"),
            )
        })?),
    };
    if kind == RecordKind::Scalar && bits.is_none() {
        let Some(v) = r.value else {
            return Err(err(
                "value",
                "a scalar record needs `value` or `bits`; it has neither".into(),
            ));
        };
        bits = Some(bits_from_value(v, dtype).ok_or_else(|| {
            err(
                "value",
                format!(
                    "{} does not fit dtype {dtype} (and no `bits` to fall back on)",
                    serde_json::to_string(&v).unwrap_or_default()
                ),
            )
        })?);
    }
    Ok(Record {
        index,
        task_id,
        func_ids: r.func_id.unwrap_or_default(),
        role,
        stage,
        arg_index: r.arg_index,
        kind,
        dtype,
        shape: r.shape,
        strides: r.strides,
        start_offset: r.start_offset,
        is_contiguous: r.is_contiguous,
        numel: r.numel,
        addr,
        bin_offset: r.bin_offset,
        bin_size: r.bin_size,
        truncated: r.truncated,
        overwritten: r.overwritten,
        value: r.value,
        bits,
    })
}

fn check_counters(path: &Path, h: &Manifest, records: &[Record]) -> Result<(), ReadError> {
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count() as u64;
    let fail = |field: &'static str, header: u64, actual: u64, note: &str| {
        Err(ReadError::Counter {
            path: path.to_path_buf(),
            field,
            header,
            actual,
            note: note.to_string(),
        })
    };
    let total = records.len() as u64;
    if h.total_tensors != total {
        return fail(
            "total_tensors",
            h.total_tensors,
            total,
            " records in the list",
        );
    }
    let before = count(&|r| r.stage == Stage::BeforeDispatch);
    if h.before_dispatch != before {
        return fail(
            "before_dispatch",
            h.before_dispatch,
            before,
            " at that stage",
        );
    }
    let after = count(&|r| r.stage == Stage::AfterCompletion);
    if h.after_completion != after {
        return fail(
            "after_completion",
            h.after_completion,
            after,
            " at that stage",
        );
    }
    let hang = count(&|r| r.stage == Stage::HangSnapshot);
    if h.hang_snapshot != hang {
        return fail("hang_snapshot", h.hang_snapshot, hang, " at that stage");
    }
    // Our writer counts tensor records per role; the reference runtime also
    // counts scalar records (always role input) in `input_tensors`. Accept
    // either convention.
    let tensor_role = |role: ArgRole| count(&|r| r.kind == RecordKind::Tensor && r.role == role);
    let scalars = count(&|r| r.kind == RecordKind::Scalar);
    let scalar_inputs = count(&|r| r.kind == RecordKind::Scalar && r.role == ArgRole::Input);
    let inputs = tensor_role(ArgRole::Input);
    if h.input_tensors != inputs && h.input_tensors != inputs + scalar_inputs {
        let note = if scalar_inputs > 0 {
            format!(
                " input tensor records ({} counting the {scalar_inputs} scalar records too)",
                inputs + scalar_inputs
            )
        } else {
            " input tensor records".to_string()
        };
        return fail("input_tensors", h.input_tensors, inputs, &note);
    }
    let outputs = tensor_role(ArgRole::Output) + tensor_role(ArgRole::OutputExisting);
    if h.output_tensors != outputs {
        return fail(
            "output_tensors",
            h.output_tensors,
            outputs,
            " output tensor records (output + output_existing)",
        );
    }
    let inouts = tensor_role(ArgRole::InOut);
    if h.inout_tensors != inouts {
        return fail(
            "inout_tensors",
            h.inout_tensors,
            inouts,
            " inout tensor records",
        );
    }
    // Reference dumps have no `scalar_args` (it reads as 0); check it when
    // the dump is ours or when it is present and nonzero.
    if (h.schema_version.is_some() || h.scalar_args != 0) && h.scalar_args != scalars {
        return fail("scalar_args", h.scalar_args, scalars, " scalar records");
    }
    Ok(())
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
        assert_eq!(
            decode_all_f64(&[0, 0, 128, 63, 1], DType::Float32),
            vec![1.0]
        );
    }

    #[test]
    fn hex_parsing_is_strict() {
        assert_eq!(parse_hex_u64("0x0000000200000003"), Some(0x2_0000_0003));
        assert_eq!(parse_hex_u64("0x"), None);
        assert_eq!(parse_hex_u64("12"), None);
        assert_eq!(parse_hex_u64("0x00000000000000000"), None);
        assert_eq!(parse_hex_u64("0x+1"), None);
    }

    #[test]
    fn bits_from_values() {
        assert_eq!(
            bits_from_value(ScalarValue::F64(1.0), DType::Float32),
            Some(0x3f80_0000)
        );
        assert_eq!(
            bits_from_value(ScalarValue::Int(-1), DType::Int32),
            Some(0xffff_ffff)
        );
        assert_eq!(
            bits_from_value(ScalarValue::UInt(1_065_353_216), DType::Uint64),
            Some(0x3f80_0000)
        );
        assert_eq!(bits_from_value(ScalarValue::Int(-1), DType::Uint64), None);
    }
}
