//! `replay_spec.json`: everything one replay needs, in one file a user can
//! read, edit and re-run (`simpler insight-trace … --arg-spec FILE`).
//!
//! ```json
//! { "schema_version": 1, "workload": "paged_attention", "case": "CaseSmall1",
//!   "arch": "a2a3", "clusters": 8,
//!   "func_id": 1, "kernel": "softmax_prepare", "core_type": "aiv",
//!   "dispatch": {"dispatch_id": 3, "task_id": "0x0000000200000005", "subtask": "aiv0",
//!                "core_id": 12, "block_idx": 0, "block_num": 1, "sub_block_id": 0},
//!   "args": [
//!     {"arg_index": 0, "kind": "tensor", "dtype": "FLOAT32", "shape": [16, 16],
//!      "strides": [16, 1], "start_offset": 0, "size": 1024, "role": "input",
//!      "data": {"source": "dump", "file": "/…/tensor_dump.bin", "bin_offset": 1536, "bin_size": 1024}},
//!     {"arg_index": 1, "kind": "tensor", "dtype": "BFLOAT16", "shape": [16, 16], "role": "output",
//!      "data": {"source": "sentinel"},
//!      "expected": {"source": "dump", "file": "/…/tensor_dump.bin", "bin_offset": 2560, "bin_size": 512}},
//!     {"arg_index": 4, "kind": "scalar", "dtype": "FLOAT32", "bits": "0x000000003e800000", "value": 0.25} ] }
//! ```
//!
//! - `dispatch` is the selected dispatch's identity; a MIX dispatch lists
//!   every member of its cluster in `members` (each with its own func id,
//!   kernel and identity), and all of them run with the same `args`.
//! - `args` are the tensor and scalar slots in slot order (tensors first,
//!   then scalars, as the dispatch ABI lays them out). Context slots 48/49
//!   are never listed: they are synthesized from `block_idx`, `block_num`
//!   and `sub_block_id`.
//! - A tensor's `data` says what its view holds before the kernel runs:
//!   `dump` (bytes of a tensor dump record: `file` + `bin_offset` +
//!   `bin_size`), `zeros`, `fill` (every element `value`, or raw element
//!   `bits`), `file` (a raw little-endian file of the view's bytes, `path`
//!   relative to the spec) or `sentinel` (the byte pattern
//!   [`SENTINEL_BYTE`], for outputs, so the replay can tell which elements
//!   the kernel wrote). `expected` (same forms, `dump` or `file`) holds the
//!   bytes the view should hold afterwards; verification compares them.
//! - A scalar gives its raw 64-bit slot `bits` (hex), its `value` (parsed
//!   by `dtype`), or both (they must agree).
//!
//! Optional fields have defaults so that a hand-written spec stays short:
//! `arch` `a2a3`, `clusters` 8, `strides` row-major, `start_offset` 0,
//! `size` what the view needs, `data` `sentinel` for outputs and `zeros`
//! otherwise, `core_id` the member's core in cluster 0, `sub_block_id` the
//! member's (AIV1 1, else 0). Unknown fields are refused (a typo would
//! otherwise be silently ignored).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use simpler_core::{
    abi::{GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT},
    DType,
};
use simpler_format::hex::{parse_lenient as parse_hex_u64, Hex64};
use simpler_format::scalar::ScalarValue;

use crate::ReplayError;

/// File name of the spec inside a replay workspace.
pub const SPEC_FILE: &str = "replay_spec.json";
/// The `schema_version` this module reads and writes.
pub const SPEC_SCHEMA_VERSION: u32 = 1;
/// Arch profile when a spec does not say.
pub const DEFAULT_ARCH: &str = "a2a3";
/// Clusters when a spec does not say (the runtime's default).
pub const DEFAULT_CLUSTERS: u32 = 8;
/// Byte written over every `sentinel` tensor before the kernel runs.
///
/// An element still holding it afterwards was not written. `0xA5` repeated
/// is an unlikely result for every dtype (f32 −2.9e−16, bf16 −2.9e−16,
/// i32 −1515870811, u8 165); a kernel that happens to write exactly this
/// pattern is counted as not having written the element.
pub const SENTINEL_BYTE: u8 = 0xA5;

fn default_arch() -> String {
    DEFAULT_ARCH.into()
}

fn default_clusters() -> u32 {
    DEFAULT_CLUSTERS
}

/// The whole `replay_spec.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// Format version ([`SPEC_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Workload whose kernel registry holds the kernels.
    pub workload: String,
    /// Case of the run the arguments come from (for labels and reports).
    pub case: String,
    /// Arch profile (`a2a3`, `a5`): local buffer sizes and timing table.
    #[serde(default = "default_arch")]
    pub arch: String,
    /// Clusters of the chip the dispatch ran on (core id numbering).
    #[serde(default = "default_clusters")]
    pub clusters: u32,
    /// Func id of the selected kernel.
    pub func_id: u32,
    /// Its name in the workload's registry (checked).
    pub kernel: String,
    /// `aic` or `aiv`.
    pub core_type: String,
    /// Identity of the selected dispatch.
    pub dispatch: DispatchIdentity,
    /// Every member of a MIX cluster (including the selected one), in run
    /// order; empty for a plain AIC or AIV dispatch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberSpec>,
    /// Tensor and scalar slots in slot order.
    pub args: Vec<ArgSpec>,
    /// Where the spec was rebuilt from (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SpecSource>,
    /// What the rebuild had to assume or could not do (informational).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Compare the outputs within this tolerance instead of bit for bit
    /// (a dump of the upstream runtime, whose kernels are other code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
}

pub use crate::plan::{fill_bits, Member, Plan, ScalarArg, TensorArg};
pub use crate::verify::Tolerance;

/// Who ran a dispatch and as which block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchIdentity {
    /// `dispatch_id` in the kernel args dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_id: Option<u64>,
    /// Task id, `0x%016x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// `aic`, `aiv0` or `aiv1`.
    pub subtask: String,
    /// Core id it ran on (default: this member's core in cluster 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_id: Option<u32>,
    /// SPMD block index.
    pub block_idx: u32,
    /// SPMD block count.
    pub block_num: u32,
    /// Global context value (default: 1 for `aiv1`, else 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_block_id: Option<i32>,
}

/// One member of a MIX cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberSpec {
    /// The member's kernel.
    pub func_id: u32,
    /// Its name in the registry.
    pub kernel: String,
    /// `aic` or `aiv`.
    pub core_type: String,
    /// The member's own dispatch identity.
    pub dispatch: DispatchIdentity,
}

/// Where a spec came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecSource {
    /// The kernel args dump the slots were read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_args_dump: Option<PathBuf>,
    /// The tensor dump the bytes were read from (absent: none was found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_dump: Option<PathBuf>,
}

/// One tensor or scalar slot. Fields not listed for a kind are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgSpec {
    /// Slot index (tensors `0..T`, scalars `T..T+S`).
    pub arg_index: u32,
    /// `tensor` or `scalar`.
    pub kind: String,
    /// Element type (UPPERCASE, as in the dumps).
    pub dtype: String,
    /// Tensor: view shape (1–5 dims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Tensor: strides in elements (default row-major).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u64>>,
    /// Tensor: offset of the view's first element in the buffer (elements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset: Option<u64>,
    /// Tensor: bytes of the underlying buffer (descriptor `size`; default
    /// and minimum: what the view needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Tensor: `input`, `output`, `inout` (also `output_existing`,
    /// `no_dep`), from the tensor dump records of the task; absent when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Tensor: what the view holds before the kernel runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataSource>,
    /// Tensor: what the view should hold afterwards (`dump` or `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<DataSource>,
    /// Scalar: raw 64-bit slot, `0x…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
    /// Scalar: the value, by `dtype`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ScalarValue>,
    /// Why the data is what it is (zero fill reasons, overrides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ArgSpec {
    /// A scalar slot of `dtype` (as the dumps name it) holding `bits`:
    /// the bits as `0x%016x`, and beside them the value they encode
    /// ([`scalar_value`]) when the dtype is known, as every rebuilt spec
    /// writes a scalar.
    pub fn scalar(arg_index: u32, dtype: &str, bits: u64, note: Option<String>) -> ArgSpec {
        ArgSpec {
            arg_index,
            kind: "scalar".into(),
            dtype: dtype.into(),
            shape: None,
            strides: None,
            start_offset: None,
            size: None,
            role: None,
            data: None,
            expected: None,
            bits: Some(Hex64(bits).to_string()),
            value: DType::from_name(dtype).and_then(|t| scalar_value(t, bits)),
            note,
        }
    }
}

/// Bytes for a tensor view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum DataSource {
    /// A tensor dump record's payload: the view's bytes, row-major.
    Dump {
        /// The `.bin` file (relative paths are relative to the spec).
        file: PathBuf,
        /// First byte.
        bin_offset: u64,
        /// Bytes (must equal the view's).
        bin_size: u64,
        /// The record's index in `tensor_dump.json` (informational).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<usize>,
    },
    /// All elements zero. (An empty struct variant rather than a unit one:
    /// serde applies `deny_unknown_fields` only to struct variants, and a
    /// stray field such as `value` must be refused, not ignored.)
    Zeros {},
    /// Every element `value` (by the tensor's dtype) or raw `bits` (hex).
    Fill {
        /// The value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<ScalarValue>,
        /// Raw element bits, `0x…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bits: Option<String>,
    },
    /// A raw little-endian file of the view's bytes, row-major.
    File {
        /// Relative paths are relative to the spec.
        path: PathBuf,
    },
    /// The [`SENTINEL_BYTE`] pattern over the whole buffer (outputs).
    Sentinel {},
}

impl DataSource {
    /// `dump`, `zeros`, `fill`, `file` or `sentinel`.
    pub fn name(&self) -> &'static str {
        match self {
            DataSource::Dump { .. } => "dump",
            DataSource::Zeros {} => "zeros",
            DataSource::Fill { .. } => "fill",
            DataSource::File { .. } => "file",
            DataSource::Sentinel {} => "sentinel",
        }
    }

    /// Relative paths made absolute against `base` (so that a spec copied
    /// into a workspace still finds its files).
    pub fn resolved(&self, base: &Path) -> DataSource {
        let abs = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                base.join(p)
            }
        };
        match self {
            DataSource::Dump {
                file,
                bin_offset,
                bin_size,
                record,
            } => DataSource::Dump {
                file: abs(file),
                bin_offset: *bin_offset,
                bin_size: *bin_size,
                record: *record,
            },
            DataSource::File { path } => DataSource::File { path: abs(path) },
            other => other.clone(),
        }
    }
}

// ---------------------------------------------------------------------------
// Reading, writing, validating

/// `p` as the user named it: a source path is stored absolute (a spec
/// file must work from anywhere), shown relative to the working folder
/// when it lies below it, as the other messages show paths.
fn shown(p: &Path) -> &Path {
    match std::env::current_dir() {
        Ok(d) => p.strip_prefix(d).unwrap_or(p),
        Err(_) => p,
    }
}

impl ReplaySpec {
    /// What an error about a spec rebuilt from dumps names as its file: the
    /// dump and dispatch its slots came from, so a bad field (`args[0].size`)
    /// can be found where it was read.
    pub fn rebuilt_label(&self) -> String {
        let from = self
            .source
            .as_ref()
            .and_then(|s| s.kernel_args_dump.as_deref().or(s.tensor_dump.as_deref()));
        let what = match (self.dispatch.dispatch_id, &self.dispatch.task_id) {
            (Some(id), _) => format!("dispatch {id}"),
            (None, Some(task)) => format!("task {task}"),
            (None, None) => "its dispatch".to_string(),
        };
        match from {
            Some(p) => format!("the spec rebuilt from {}, {what}", shown(p).display()),
            None => format!("the spec rebuilt for {what}"),
        }
    }

    /// Read and validate a spec file.
    ///
    /// # Errors
    /// [`ReplayError::Io`] when it cannot be read, [`ReplayError::SpecJson`]
    /// for malformed JSON, [`ReplayError::Spec`] naming the field otherwise.
    pub fn load(path: &Path) -> Result<ReplaySpec, ReplayError> {
        let text = simpler_format::files::read_regular(path).map_err(|e| ReplayError::Io {
            path: path.to_path_buf(),
            msg: match &e.kind {
                simpler_format::ErrorKind::NotRegular(what) => {
                    format!("cannot read the replay spec: it is {what}, not a regular file")
                }
                simpler_format::ErrorKind::Io(io) => format!("cannot read the replay spec: {io}"),
                // read_regular fails only in the two ways above.
                _ => format!("cannot read the replay spec: {e}"),
            },
        })?;
        let spec = ReplaySpec::parse(&path.display().to_string(), &text)?;
        spec.plan(&path.display().to_string())?;
        Ok(spec)
    }

    /// Parse `text` (structure only; [`ReplaySpec::plan`] checks values).
    /// `file` names the source in messages.
    ///
    /// # Errors
    /// As for [`ReplaySpec::load`].
    pub fn parse(file: &str, text: &[u8]) -> Result<ReplaySpec, ReplayError> {
        use simpler_format::ErrorKind;
        simpler_format::json::from_slice(std::path::Path::new(file), text).map_err(|e| {
            match e.kind {
                ErrorKind::Field {
                    path,
                    line,
                    column,
                    msg,
                } => ReplayError::Spec {
                    file: file.into(),
                    field: if path == "." {
                        "(top level)".into()
                    } else {
                        path
                    },
                    msg: format!(
                        "{} (at line {line}, column {column})",
                        simpler_format::tame(&msg)
                    ),
                },
                ErrorKind::TruncatedJson { line, column, msg } => ReplayError::SpecJson {
                    file: file.into(),
                    msg: format!(
                        "truncated JSON: the file ends at line {line}, column {column} ({})",
                        simpler_format::tame(&msg)
                    ),
                },
                _ => ReplayError::SpecJson {
                    file: file.into(),
                    msg: e
                        .to_string()
                        .trim_start_matches(&format!("{file}: "))
                        .to_string(),
                },
            }
        })
    }

    /// Pretty JSON, as written to `replay_spec.json`.
    pub fn to_json(&self) -> String {
        // A spec holds strings, numbers, lists and maps only.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A copy whose relative `file`/`path` references are made absolute
    /// against `base` (the folder of the spec they were relative to).
    pub fn with_absolute_paths(&self, base: &Path) -> ReplaySpec {
        let mut s = self.clone();
        for a in &mut s.args {
            a.data = a.data.as_ref().map(|d| d.resolved(base));
            a.expected = a.expected.as_ref().map(|d| d.resolved(base));
        }
        s
    }

    /// `<workload>_<case>_f<func>[_d<dispatch> | _t<task>]`: the workspace
    /// label (the task's hex digits when there is no dispatch id: a spec
    /// rebuilt from per-task records).
    pub fn label(&self) -> String {
        let base = format!("{}_{}_f{}", self.workload, self.case, self.func_id);
        match (self.dispatch.dispatch_id, &self.dispatch.task_id) {
            (Some(d), _) => format!("{base}_d{d}"),
            (None, Some(t)) => format!("{base}_t{}", t.trim_start_matches("0x")),
            (None, None) => base,
        }
    }

    /// Apply one `--set-arg SLOT=VALUE`: a scalar slot gets the value
    /// parsed by its dtype (or `0x…` raw slot bits); a tensor slot is filled
    /// with the value in every element (or `0x…` raw element bits).
    /// Returns a line describing the change.
    ///
    /// # Errors
    /// [`ReplayError::SetArg`]: no `=`, a slot that does not exist or is a
    /// context slot, or a value the dtype cannot hold.
    pub fn set_arg(&mut self, text: &str) -> Result<String, ReplayError> {
        let err = |msg: String| ReplayError::SetArg {
            arg: text.into(),
            msg,
        };
        let Some((slot, value)) = text.split_once('=') else {
            return Err(err(
                "expected SLOT=VALUE (e.g. 4=0.5, or 4=0x3f000000 for raw bits)".into(),
            ));
        };
        let slot: u32 = slot.trim().parse().map_err(|_| {
            err(format!(
                "slot {} is not a slot number (0..{LOCAL_CONTEXT_SLOT})",
                simpler_format::quoted(slot.trim())
            ))
        })?;
        let value = value.trim();
        if slot as usize == LOCAL_CONTEXT_SLOT || slot as usize == GLOBAL_CONTEXT_SLOT {
            return Err(err(format!(
                "slot {slot} is the {} context slot: the replay synthesizes it from the dispatch's block_idx/block_num/sub_block_id and it cannot be set",
                if slot as usize == LOCAL_CONTEXT_SLOT {
                    "local"
                } else {
                    "global"
                }
            )));
        }
        let slots = self.slot_summary();
        let Some(a) = self.args.iter_mut().find(|a| a.arg_index == slot) else {
            return Err(err(format!(
                "this dispatch has no slot {slot}; it has {slots}"
            )));
        };
        let dtype = DType::from_name(&a.dtype)
            .ok_or_else(|| err(format!("slot {slot} has unknown dtype {:?}", a.dtype)))?;
        match a.kind.as_str() {
            "scalar" => {
                let bits = parse_bits(dtype, value, true).map_err(&err)?;
                let before = a.bits.clone().unwrap_or_else(|| "-".into());
                a.bits = Some(Hex64(bits).to_string());
                a.value = scalar_value(dtype, bits);
                a.note = Some(format!("set by --set-arg {slot}={value}"));
                Ok(format!(
                    "slot {slot} (scalar {}) set to {} (bits 0x{bits:016x}; was {before})",
                    dtype.name(),
                    a.value.map_or_else(|| value.to_string(), value_text)
                ))
            }
            _ => {
                let bits = parse_bits(dtype, value, false).map_err(&err)?;
                let raw = value.starts_with("0x") || value.starts_with("0X");
                a.data = Some(DataSource::Fill {
                    value: if raw { None } else { scalar_value(dtype, bits) },
                    bits: raw.then(|| format!("0x{bits:0w$x}", w = 2 * dtype.size())),
                });
                a.note = Some(format!("filled by --set-arg {slot}={value}"));
                Ok(format!(
                    "slot {slot} (tensor {} {:?}) filled with {value} in every element",
                    dtype.name(),
                    a.shape.clone().unwrap_or_default()
                ))
            }
        }
    }

    /// `slots 0-3 (tensors), 4 (scalar)`-style summary for messages.
    pub fn slot_summary(&self) -> String {
        let t: Vec<u32> = self
            .args
            .iter()
            .filter(|a| a.kind == "tensor")
            .map(|a| a.arg_index)
            .collect();
        let s: Vec<u32> = self
            .args
            .iter()
            .filter(|a| a.kind != "tensor")
            .map(|a| a.arg_index)
            .collect();
        let list = |what: &str, v: &[u32]| match v {
            [] => format!("no {what} slots"),
            [a] => format!("{what} slot {a}"),
            [a, .., b] => format!("{what} slots {a}-{b}"),
        };
        format!(
            "{}, {} (48/49 are contexts)",
            list("tensor", &t),
            list("scalar", &s)
        )
    }
}

// ---------------------------------------------------------------------------
// Values

/// A number as parsed from text or JSON, before it is encoded by a dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i128),
    F32(f32),
    Float(f64),
}

impl From<ScalarValue> for Number {
    fn from(v: ScalarValue) -> Number {
        match v {
            ScalarValue::Int(i) => Number::Int(i128::from(i)),
            ScalarValue::UInt(u) => Number::Int(i128::from(u)),
            ScalarValue::F32(f) => Number::F32(f),
            ScalarValue::F64(f) => Number::Float(f),
        }
    }
}

/// Element (or slot) bits of `n` in `dtype`, zero-extended to 64 bits as a
/// scalar slot holds them (an INT32 −1 is `0x00000000ffffffff`): the one
/// codec ([`simpler_format::scalar::decode`]); FP8/FP4 take raw bits only.
pub(crate) fn number_bits(dtype: DType, n: Number) -> Result<u64, String> {
    if matches!(dtype, DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1) {
        return Err(format!(
            "{} values must be given as raw bits (0x…)",
            dtype.name()
        ));
    }
    let v = match n {
        Number::Int(i) => match (i64::try_from(i), u64::try_from(i)) {
            (Ok(x), _) => ScalarValue::Int(x),
            (_, Ok(x)) => ScalarValue::UInt(x),
            _ => return Err(format!("{i} does not fit {}", dtype.name())),
        },
        Number::F32(f) => ScalarValue::F32(f),
        Number::Float(f) => ScalarValue::F64(f),
    };
    simpler_format::scalar::decode(v, dtype)
}

/// `0x…` raw bits; a tensor element must fit the dtype's width, a scalar
/// slot may use all 64 bits.
pub(crate) fn parse_raw(s: &str, dtype: DType, slot: bool) -> Result<u64, String> {
    let v = parse_hex_u64(s.trim()).ok_or_else(|| {
        format!(
            "{} is not 0x followed by 1-16 hex digits",
            simpler_format::quoted(s)
        )
    })?;
    if !slot && v & !simpler_format::scalar::width_mask(dtype) != 0 {
        return Err(format!(
            "{s} does not fit one {} element ({} bits)",
            dtype.name(),
            8 * dtype.size()
        ));
    }
    Ok(v)
}

/// Parse `text` as a value of `dtype` (decimal, `nan`, `inf`, `-inf`,
/// `true`/`false`), or `0x…` raw bits (a whole 64-bit slot when `slot`,
/// else one element). Returns the bits, zero-extended.
///
/// # Errors
/// Text that is not a number, or a value `dtype` cannot hold.
pub fn parse_bits(dtype: DType, text: &str, slot: bool) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with("0x") || t.starts_with("0X") {
        return parse_raw(t, dtype, slot);
    }
    let n = match t.to_ascii_lowercase().as_str() {
        "true" => Number::Int(1),
        "false" => Number::Int(0),
        "nan" => Number::Float(f64::NAN),
        "inf" | "+inf" | "infinity" => Number::Float(f64::INFINITY),
        "-inf" | "-infinity" => Number::Float(f64::NEG_INFINITY),
        _ => {
            if let Ok(i) = t.parse::<i128>() {
                Number::Int(i)
            } else if dtype == DType::Float32 {
                // Parse straight to f32: no double rounding through f64.
                Number::F32(t.parse::<f32>().map_err(|_| not_a_number(dtype, t))?)
            } else {
                Number::Float(t.parse::<f64>().map_err(|_| not_a_number(dtype, t))?)
            }
        }
    };
    let bits = number_bits(dtype, n)?;
    // A finite number too large for the dtype must not turn into an
    // infinity silently (an integer too large is refused too).
    let finite_text = match n {
        Number::Int(_) => true,
        Number::F32(_) | Number::Float(_) => t.parse::<f64>().is_ok_and(f64::is_finite),
    };
    let became_inf = match simpler_format::scalar::encode(dtype, bits) {
        ScalarValue::F32(f) => f.is_infinite(),
        ScalarValue::F64(f) => f.is_infinite(),
        _ => false,
    };
    if finite_text && became_inf {
        return Err(format!(
            "{} is outside the range of {} (it would become an infinity; write inf for one)",
            simpler_format::echo(t),
            dtype.name()
        ));
    }
    Ok(bits)
}

fn not_a_number(dtype: DType, t: &str) -> String {
    format!(
        "{} is not a {} value (give a number, nan, inf, -inf, or raw bits as 0x…)",
        simpler_format::quoted(t),
        dtype.name()
    )
}

/// The value `bits` hold as a `dtype` scalar, as the dumps write it
/// ([`simpler_format::scalar::encode`]); `None` for FP8/FP4, which have no
/// JSON number form in a spec.
pub fn scalar_value(dtype: DType, bits: u64) -> Option<ScalarValue> {
    match dtype {
        DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => None,
        _ => Some(simpler_format::scalar::encode(dtype, bits)),
    }
}

/// A scalar value as text (`0.25`, `-3`, `nan`).
pub fn value_text(v: ScalarValue) -> String {
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15: `--set-arg 4=1e50` on a FLOAT32 slot became inf silently
    /// while an INT32 overflow was refused.
    #[test]
    fn a_finite_value_out_of_a_float_range_is_refused() {
        for (dtype, text) in [
            (DType::Float32, "1e50"),
            (DType::Float32, "-3.5e38"),
            (DType::Float16, "70000"),
            (DType::Bfloat16, "1e39"),
        ] {
            let e = parse_bits(dtype, text, true).unwrap_err();
            assert!(e.contains("outside the range of"), "{dtype:?} {text}: {e}");
        }
        assert_eq!(parse_bits(DType::Float32, "inf", true), Ok(0x7f80_0000));
        assert_eq!(
            parse_bits(DType::Float32, "3.4028235e38", true),
            Ok(0x7f7f_ffff)
        );
        assert_eq!(parse_bits(DType::Float16, "65504", true), Ok(0x7bff));
        assert!(parse_bits(DType::Int32, "3000000000", true).is_err());
    }

    #[test]
    fn values_encode_by_dtype() {
        assert_eq!(parse_bits(DType::Float32, "0.25", true), Ok(0x3e80_0000));
        assert_eq!(
            parse_bits(DType::Float32, "0x3f800000", true),
            Ok(0x3f80_0000)
        );
        assert_eq!(parse_bits(DType::Int32, "-1", true), Ok(0xffff_ffff));
        assert_eq!(parse_bits(DType::Bfloat16, "1.0", false), Ok(0x3f80));
        assert_eq!(
            parse_bits(DType::Uint64, "18446744073709551615", true),
            Ok(u64::MAX)
        );
        assert!(parse_bits(DType::Int8, "300", false)
            .unwrap_err()
            .contains("does not fit"));
        assert!(parse_bits(DType::Int32, "1.5", true)
            .unwrap_err()
            .contains("integer"));
        assert!(parse_bits(DType::Float32, "abc", true)
            .unwrap_err()
            .contains("not a FLOAT32"));
        assert!(parse_bits(DType::Float32, "0x1ffffffff", false).is_err());
        assert_eq!(
            parse_bits(DType::Float32, "0x1ffffffff", true),
            Ok(0x1_ffff_ffff)
        );
        assert!(parse_bits(DType::Fp8E4M3Fn, "1.0", false).is_err());
        assert_eq!(parse_bits(DType::Fp8E4M3Fn, "0x38", false), Ok(0x38));
        assert_eq!(
            scalar_value(DType::Int32, 0xffff_ffff),
            Some(ScalarValue::Int(-1))
        );
    }
}
