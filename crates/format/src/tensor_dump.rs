//! `tensor_dump.json` (DESIGN §6) and the upstream `args_dump.json` of
//! §6b, as read: one [`Header`] and one [`Record`] type hold both layouts
//! (upstream names are serde aliases, upstream-only fields optional), in
//! the native layout's field order, which is what our writer writes.
//!
//! Which layout a manifest is in decides how strict a reader is
//! ([`Layout`]): our own files refuse unknown fields and short hex; the
//! upstream runtime's may carry keys we do not know.
//!
//! Changing a field here changes the format: bump [`SCHEMA_VERSION`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use simpler_core::{ArgRole, DType};

use crate::hex::{self, Hex64};
use crate::scalar::WireValue;
use crate::vocab::{dtype, role, Kind, Stage, Status};

/// Version written into every file we produce.
pub const SCHEMA_VERSION: u32 = 1;

/// Which writer a tensor dump manifest comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Ours (§6): `schema_version`, record list `tensors`. Strict.
    Native,
    /// The upstream runtime's current layout (§6b): record list `args`.
    Upstream,
    /// The reference runtime's older dumps: `tensors`, no `schema_version`.
    Reference,
}

impl Layout {
    /// The layout of a manifest with this record-list key and version.
    pub fn detect(list_key: &str, schema_version: Option<u64>) -> Layout {
        match (list_key, schema_version) {
            ("args", _) => Layout::Upstream,
            (_, Some(_)) => Layout::Native,
            (_, None) => Layout::Reference,
        }
    }

    /// Our own contract: unknown fields and non-canonical hex are errors.
    pub fn is_strict(self) -> bool {
        self == Layout::Native
    }

    /// For messages.
    pub fn describe(self) -> &'static str {
        match self {
            Layout::Native => "native layout",
            Layout::Upstream => "upstream args_dump layout",
            Layout::Reference => "reference-runtime layout (no schema_version)",
        }
    }
}

/// `bin_format` of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinFormat {
    /// Always `logical_contiguous`: each record's view gathered row-major.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `little_endian`.
    pub byte_order: String,
}

impl Default for BinFormat {
    fn default() -> Self {
        BinFormat {
            kind: "logical_contiguous".into(),
            byte_order: "little_endian".into(),
        }
    }
}

/// A 64-bit hex field of a file in either layout: the value, and whether
/// it was written canonically (`0x` + 16 digits) as our files must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HexField {
    /// The value.
    pub value: u64,
    /// Written as `0x` and exactly 16 hex digits.
    pub canonical: bool,
}

impl std::fmt::Display for HexField {
    /// `0x%016x`, whatever form the file used.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Hex64(self.value).fmt(f)
    }
}

impl From<u64> for HexField {
    fn from(value: u64) -> HexField {
        HexField {
            value,
            canonical: true,
        }
    }
}

impl Serialize for HexField {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Hex64(self.value).serialize(s)
    }
}

impl<'de> Deserialize<'de> for HexField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(HexFieldVisitor)
    }
}

/// Reads the text in place (no allocation per field).
struct HexFieldVisitor;

impl serde::de::Visitor<'_> for HexFieldVisitor {
    type Value = HexField;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(hex::STRICT_FORM)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<HexField, E> {
        let canonical = hex::parse_strict(s).is_some();
        hex::parse_lenient(s)
            .map(|value| HexField { value, canonical })
            .ok_or_else(|| {
                E::custom(format_args!(
                    "bad hex {}: expected {}",
                    crate::error::quoted(s),
                    hex::STRICT_FORM
                ))
            })
    }
}

/// One write race (`races`): two dispatches that could run at the same
/// time wrote overlapping bytes of one GM allocation (DESIGN §2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceReport {
    /// Task of the first dispatch (of both, for a race within one task).
    pub task_id: Hex64,
    /// Base address of the allocation both wrote.
    pub buffer: Hex64,
    /// First and one-past-last overlapping byte, as offsets into the buffer.
    pub byte_range: [u64; 2],
    /// Bytes both wrote (fewer than the range when the overlap has gaps).
    pub overlap_bytes: u64,
    /// The two dispatches, lower dispatch id first.
    pub dispatches: [RaceDispatch; 2],
}

/// One side of a [`RaceReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceDispatch {
    /// As in `kernel_args_dump.json`.
    pub dispatch_id: u64,
    /// Its task.
    pub task_id: Hex64,
    /// Kernel func id.
    pub func_id: u32,
    /// Kernel name.
    pub kernel: String,
    /// `aic` or `aiv`.
    pub core_type: String,
    /// Core id.
    pub core_id: u32,
    /// SPMD block index.
    pub block_idx: u32,
}

impl From<&simpler_core::RaceWriter> for RaceDispatch {
    fn from(w: &simpler_core::RaceWriter) -> RaceDispatch {
        RaceDispatch {
            dispatch_id: w.dispatch_id,
            task_id: Hex64(w.task_id.0),
            func_id: w.func_id,
            kernel: w.kernel.into(),
            core_type: w.core_type.name().into(),
            core_id: w.core_id,
            block_idx: w.block_idx,
        }
    }
}

impl From<&simpler_core::WriteRace> for RaceReport {
    fn from(r: &simpler_core::WriteRace) -> RaceReport {
        RaceReport {
            task_id: Hex64(r.first.task_id.0),
            buffer: Hex64(r.buffer),
            byte_range: [r.start, r.end],
            overlap_bytes: r.overlap_bytes,
            dispatches: [(&r.first).into(), (&r.second).into()],
        }
    }
}

/// A task that had not finished when the run stopped (`unfinished_tasks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnfinishedTask {
    /// The task.
    pub task_id: Hex64,
    /// Func ids of its members.
    pub func_id: Vec<u32>,
    /// Where it was.
    pub state: TaskState,
    /// Cores it was running on (state `running`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<u32>,
    /// Milliseconds since its first block started (state `running`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_for_ms: Option<f64>,
    /// Blocks finished.
    pub blocks_done: u64,
    /// Blocks of the task.
    pub block_num: u64,
    /// Unfinished producers it waits for (state `waiting`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_on: Vec<Hex64>,
}

/// Where an unfinished task was when the run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Dispatched to cores, not finished.
    Running,
    /// Every dependency met, waiting for a core.
    Ready,
    /// Waiting for producer tasks.
    Waiting,
}

/// `Some(x)` for a present field, even when `x` is JSON `null`.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

macro_rules! header_struct {
    ($(#[$attr:meta])* $name:ident) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        $(#[$attr])*
        pub struct $name {
        /// Format version; absent in upstream and reference dumps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub schema_version: Option<u32>,
        /// Folder name (`tensor_dump`, upstream `args_dump`).
        #[serde(default)]
        pub run_dir: String,
        /// `complete`, or `incomplete` when the run ended abnormally.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<Status>,
        /// Why the dump is incomplete (signal, timeout, kernel or write error).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        /// Payload file name, relative to the manifest: `Some(None)` is an
        /// upstream `null` (no payload file), `None` absent (upstream: `args.bin`).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        pub bin_file: Option<Option<String>>,
        /// Payload layout.
        #[serde(default)]
        pub bin_format: BinFormat,
        /// Dump level (1–3; readers refuse others); upstream `dump_args_level`.
        #[serde(
            default,
            alias = "dump_args_level",
            skip_serializing_if = "Option::is_none"
        )]
        pub dump_level: Option<u8>,
        /// `block` or `drop`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub dump_policy: Option<String>,
        /// Records (tensors and scalars); upstream `total_args`.
        #[serde(alias = "total_args")]
        pub total_tensors: u64,
        /// Records at stage `before_dispatch`.
        pub before_dispatch: u64,
        /// Records at stage `after_completion`.
        pub after_completion: u64,
        /// Records at stage `hang_snapshot`.
        #[serde(default)]
        pub hang_snapshot: u64,
        /// Tensor records with role `input` (upstream `input_args` also counts
        /// scalars).
        #[serde(alias = "input_args")]
        pub input_tensors: u64,
        /// Tensor records with role `output`.
        #[serde(alias = "output_args")]
        pub output_tensors: u64,
        /// Tensor records with role `inout`.
        #[serde(alias = "inout_args")]
        pub inout_tensors: u64,
        /// Scalar records; absent upstream.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub scalar_args: Option<u64>,
        /// Records whose payload was cut short; upstream `truncated_args`.
        #[serde(alias = "truncated_args")]
        pub truncated_tensors: u64,
        /// Records lost entirely (drop policy).
        pub dropped_records: u64,
        /// Records whose payload was overwritten before it was written out.
        pub dropped_overwrite: u64,
        /// The run's `--racecheck` mode (`off`, `warn`, `error`); absent
        /// in upstream and reference dumps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub racecheck: Option<String>,
        /// Overlapping writes of dispatches that could run at the same time
        /// (0 when none was found or the mode is `off`).
        #[serde(default)]
        pub write_races: u64,
        /// The first race reports (at most 100; when `write_races` > 0).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub races: Vec<RaceReport>,
        /// Tasks not finished when an incomplete run stopped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub unfinished_tasks: Option<Vec<UnfinishedTask>>,
    }
    };
}

header_struct!(
    /// The manifest header: every field but the record list, in our writer's
    /// order. Upstream names are accepted as aliases.
    Header
);
header_struct!(
    /// [`Header`] as our own files must be: unknown fields are errors.
    #[serde(deny_unknown_fields)]
    StrictHeader
);

impl From<StrictHeader> for Header {
    fn from(s: StrictHeader) -> Header {
        Header {
            schema_version: s.schema_version,
            run_dir: s.run_dir,
            status: s.status,
            reason: s.reason,
            bin_file: s.bin_file,
            bin_format: s.bin_format,
            dump_level: s.dump_level,
            dump_policy: s.dump_policy,
            total_tensors: s.total_tensors,
            before_dispatch: s.before_dispatch,
            after_completion: s.after_completion,
            hang_snapshot: s.hang_snapshot,
            input_tensors: s.input_tensors,
            output_tensors: s.output_tensors,
            inout_tensors: s.inout_tensors,
            scalar_args: s.scalar_args,
            truncated_tensors: s.truncated_tensors,
            dropped_records: s.dropped_records,
            dropped_overwrite: s.dropped_overwrite,
            racecheck: s.racecheck,
            write_races: s.write_races,
            races: s.races,
            unfinished_tasks: s.unfinished_tasks,
        }
    }
}

/// The record-list keys of the two layouts.
pub const RECORD_LISTS: [&str; 2] = ["tensors", "args"];

macro_rules! record_struct {
    ($(#[$attr:meta])* $name:ident) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        $(#[$attr])*
        pub struct $name {
        /// Task id, `0x%016x`.
        pub task_id: HexField,
        /// Func ids of the task's members (MIX: all); absent in reference
        /// dumps, `[-1]` (unknown) in upstream ones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub func_id: Option<Vec<i64>>,
        /// How the task uses the argument.
        #[serde(with = "role")]
        pub role: ArgRole,
        /// When it was captured.
        pub stage: Stage,
        /// Argument slot (scalars: tensor count + j).
        pub arg_index: u32,
        /// Tensor or scalar.
        pub kind: Kind,
        /// Element type.
        #[serde(with = "dtype")]
        pub dtype: DType,
        /// View shape (`[]` for scalars).
        pub shape: Vec<u64>,
        /// View strides in elements (`[]` for scalars).
        pub strides: Vec<u64>,
        /// View offset in elements from the buffer start.
        pub start_offset: u64,
        /// Dense row-major view.
        pub is_contiguous: bool,
        /// Elements of the view (1 for scalars).
        pub numel: u64,
        /// GM address of the buffer; absent for scalars and foreign dumps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub addr: Option<HexField>,
        /// Offset of the payload in the payload file.
        pub bin_offset: u64,
        /// Payload bytes (0 for scalars and metadata-only records).
        pub bin_size: u64,
        /// The payload is shorter than the view.
        pub truncated: bool,
        /// The payload was overwritten before it reached the file.
        pub overwritten: bool,
        /// Scalar value (ours: exact; upstream: see [`crate::scalar::decode_upstream`]).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        pub value: Option<WireValue>,
        /// Scalar slot's raw 64 bits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub bits: Option<HexField>,
        /// Upstream: a `dump(lvalue)` matched several scalar slots.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub arg_index_ambiguous: Option<bool>,
        /// Our upstream-layout writer: `true` on a hang snapshot written
        /// with stage `after_completion` (the upstream tools know no other
        /// stage after dispatch); readers take it as stage `hang_snapshot`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub hang_snapshot: Option<bool>,
    }
    };
}

record_struct!(
    /// One record of either layout, in our writer's field order.
    Record
);
record_struct!(
    /// [`Record`] as our own files must be: unknown fields are errors.
    #[serde(deny_unknown_fields)]
    StrictRecord
);

impl From<StrictRecord> for Record {
    fn from(s: StrictRecord) -> Record {
        Record {
            task_id: s.task_id,
            func_id: s.func_id,
            role: s.role,
            stage: s.stage,
            arg_index: s.arg_index,
            kind: s.kind,
            dtype: s.dtype,
            shape: s.shape,
            strides: s.strides,
            start_offset: s.start_offset,
            is_contiguous: s.is_contiguous,
            numel: s.numel,
            addr: s.addr,
            bin_offset: s.bin_offset,
            bin_size: s.bin_size,
            truncated: s.truncated,
            overwritten: s.overwritten,
            value: s.value,
            bits: s.bits,
            arg_index_ambiguous: s.arg_index_ambiguous,
            hang_snapshot: s.hang_snapshot,
        }
    }
}

/// A whole manifest: header and records (tests, small files; readers
/// stream the records instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Every field but the records.
    #[serde(flatten)]
    pub header: Header,
    /// The records, sorted by (task_id, stage, arg_index, role).
    #[serde(alias = "args")]
    pub tensors: Vec<Record>,
}
