//! The run timeline files (DESIGN §12), in the upstream runtime's layout
//! (`UPSTREAM_FORMATS.md` B, E) so its converter, dependency viewer,
//! critical-path and scheduler-overhead tools read our runs unchanged:
//!
//! - [`Records`]: `chip_swimlane_records.json` — raw u64 cycles with
//!   `clock_freq_hz`, 6-column [`AicoreRow`]s, 4-column [`AicpuRow`]s,
//!   scheduler and orchestrator phases;
//! - [`Deps`]: `deps.json` — tasks, tensors and every dependency edge with
//!   its source; every u64 a **decimal string** ([`Dec64`]);
//! - [`NameMap`]: `name_map_<workload>_<case>.json` ([`name_map_file`]);
//! - [`pmu_header`] ([`PMU_LEAD`], [`PMU_COUNTERS`], [`PMU_EVENT_TYPE`]): the
//!   `pmu.csv` header of the predicted timeline.
//!
//! Task ids are decimal here, never `"0x…"`: the upstream tools call
//! `int(v)` and drop hex strings silently. Our own extra key,
//! `schema_version`, is one the upstream readers ignore. Reading is
//! lenient where upstream files may differ (5-column aicore rows, ids as
//! integers or decimal strings, optional fields); writing always emits the
//! full layout.
//!
//! Changing a struct here changes the file format: bump
//! [`SWIMLANE_SCHEMA_VERSION`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

mod deps_json;
mod records_json;

pub use deps_json::write_deps;
pub use records_json::{write_records, write_records_of, RecordsHead};

/// Version of our swimlane files (the `schema_version` key).
pub const SWIMLANE_SCHEMA_VERSION: u32 = 1;
/// The records file, in the run directory (and in [`PREDICTED_DIR`]).
pub const RECORDS_FILE: &str = "chip_swimlane_records.json";
/// The dependency graph file, beside the records.
pub const DEPS_FILE: &str = "deps.json";
/// Our own Perfetto trace of the timeline, beside the records.
pub const PERFETTO_FILE: &str = "swimlane_perfetto.json";
/// Folder of the predicted device timeline inside the run directory.
pub const PREDICTED_DIR: &str = "predicted";
/// Per task and core cycle counters of the predicted timeline.
pub const PMU_FILE: &str = "pmu.csv";
/// Prefix of the name-map file (see [`name_map_file`]).
pub const NAME_MAP_PREFIX: &str = "name_map_";

/// `name_map_<workload>_<case>.json`.
pub fn name_map_file(workload: &str, case: &str) -> String {
    format!("{NAME_MAP_PREFIX}{workload}_{case}.json")
}

/// Whether a file named `name` is a name map as the upstream tools find
/// one beside the records: any `name_map*.json` (theirs is
/// `name_map_<Class>_<case>.json`, a bare `name_map.json` counts too).
pub fn is_name_map_file(name: &str) -> bool {
    name.starts_with(NAME_MAP_PREFIX.trim_end_matches('_')) && name.ends_with(".json")
}

/// A u64 written as a decimal string (`"4294967297"`), read from a decimal
/// string or a JSON integer — the upstream tools call `int(v)` on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dec64(pub u64);

impl fmt::Display for Dec64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Dec64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Formatted on the stack, not through `collect_str`'s `fmt`
        // machinery: CaseLarge's deps.json has ~1.2 M of these.
        s.serialize_str(itoa::Buffer::new().format(self.0))
    }
}

impl<'de> Deserialize<'de> for Dec64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DecVisitor).map(Dec64)
    }
}

struct DecVisitor;

impl de::Visitor<'_> for DecVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a decimal u64 (a JSON integer or a string of digits)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format_args!("{v} is negative")))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
        let ok = !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        ok.then(|| s.parse().ok()).flatten().ok_or_else(|| {
            E::custom(format_args!(
                "bad id {}: expected a decimal u64 (the upstream tools drop \"0x…\" ids)",
                crate::quoted(s)
            ))
        })
    }
}

/// `chip_swimlane_records.json`: raw cycles of one run; 0 means "none".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// Ours ([`SWIMLANE_SCHEMA_VERSION`]); absent in upstream files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// 1 core start/end, 2 + scheduler dispatch/finish, 3 + scheduler
    /// phases, 4 + orchestrator submit phases.
    pub chip_swimlane_level: u8,
    /// Clock and cores.
    pub metadata: Metadata,
    /// One row per dispatch.
    pub aicore_tasks: Vec<AicoreRow>,
    /// Level ≥ 2: the scheduler's side of each dispatch, joined on
    /// `(core_id, reg_task_id)`.
    #[serde(default)]
    pub aicpu_tasks: Vec<AicpuRow>,
    /// Level ≥ 3: one list per scheduler thread.
    #[serde(default)]
    pub aicpu_scheduler_phases: Vec<Vec<SchedPhase>>,
    /// Level 4: one list per orchestrator thread.
    #[serde(default)]
    pub aicpu_orchestrator_phases: Vec<Vec<OrchPhase>>,
}

/// The `metadata` object of [`Records`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Cycles per second: 1e9 for our recorded host nanoseconds, the arch
    /// clock for a predicted timeline.
    pub clock_freq_hz: u64,
    /// Cores of the chip.
    pub num_cores: u32,
    /// `"aic"` or `"aiv"`, by core id.
    pub core_types: Vec<String>,
    /// Scheduler thread of each core (−1 for none); level ≥ 3.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub core_to_thread: Vec<i64>,
}

/// `[core_id, task_token, reg_task_id, start, end, receive_to_start]`:
/// a dispatch as its core saw it. `task_token` is the task id (decimal);
/// `reg_task_id` counts the core's dispatches; `receive_to_start` is the
/// cycles from the core receiving the dispatch to starting the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "[u64; 6]")]
pub struct AicoreRow {
    /// Core id (DESIGN §2 numbering).
    pub core_id: u32,
    /// Task id, `ring << 32 | local`.
    pub task_id: u64,
    /// Per-core dispatch count (0, 1, 2, … on each core).
    pub reg_task_id: u64,
    /// Kernel start, cycles.
    pub start: u64,
    /// Kernel end, cycles.
    pub end: u64,
    /// Receive → start, cycles (0 in upstream 5-column rows).
    pub receive_to_start: u64,
}

impl TryFrom<Vec<u64>> for AicoreRow {
    type Error = String;

    fn try_from(v: Vec<u64>) -> Result<Self, String> {
        if !(5..=6).contains(&v.len()) {
            return Err(format!(
                "an aicore_tasks row has {} columns: expected 6 (core_id, task_token, reg_task_id, start, end, receive_to_start) or 5",
                v.len()
            ));
        }
        let core_id = u32::try_from(v[0]).map_err(|_| format!("core_id {} is too large", v[0]))?;
        Ok(AicoreRow {
            core_id,
            task_id: v[1],
            reg_task_id: v[2],
            start: v[3],
            end: v[4],
            receive_to_start: v.get(5).copied().unwrap_or(0),
        })
    }
}

impl From<AicoreRow> for [u64; 6] {
    fn from(r: AicoreRow) -> Self {
        [
            u64::from(r.core_id),
            r.task_id,
            r.reg_task_id,
            r.start,
            r.end,
            r.receive_to_start,
        ]
    }
}

/// `[core_id, reg_task_id, dispatch, finish]`: when the scheduler handed a
/// dispatch to its core and when it saw it finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "[u64; 4]")]
pub struct AicpuRow {
    /// Core id.
    pub core_id: u32,
    /// Per-core dispatch count, the join key with [`AicoreRow`].
    pub reg_task_id: u64,
    /// Dispatch, cycles.
    pub dispatch: u64,
    /// Finish seen by the scheduler, cycles.
    pub finish: u64,
}

impl TryFrom<Vec<u64>> for AicpuRow {
    type Error = String;

    fn try_from(v: Vec<u64>) -> Result<Self, String> {
        let [core, reg, dispatch, finish] = v[..] else {
            return Err(format!(
                "an aicpu_tasks row has {} columns: expected 4 (core_id, reg_task_id, dispatch, finish)",
                v.len()
            ));
        };
        let core_id = u32::try_from(core).map_err(|_| format!("core_id {core} is too large"))?;
        Ok(AicpuRow {
            core_id,
            reg_task_id: reg,
            dispatch,
            finish,
        })
    }
}

impl From<AicpuRow> for [u64; 4] {
    fn from(r: AicpuRow) -> Self {
        [u64::from(r.core_id), r.reg_task_id, r.dispatch, r.finish]
    }
}

/// Phase kinds of a scheduler loop that we record (upstream has more).
pub mod phase {
    /// Draining finished dispatches and releasing dependents.
    pub const COMPLETE: &str = "complete";
    /// Popping ready work and handing it to cores.
    pub const DISPATCH: &str = "dispatch";
}

/// One phase of a scheduler loop iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedPhase {
    /// `dispatch`, `complete`, … (see [`phase`]); borrowed when written,
    /// so a phase costs no allocation.
    pub kind: Cow<'static, str>,
    /// Start, cycles.
    pub start_cycles: u64,
    /// End, cycles.
    pub end_cycles: u64,
    /// The loop iteration it belongs to (counts every iteration, idle ones too).
    pub loop_iter: u64,
    /// Dispatches finished (complete) or handed out (dispatch) in it.
    pub tasks_processed: u64,
    /// Ready queue lengths `[aic, aiv, mix]` at its start.
    #[serde(default)]
    pub shared_at_start: [u64; 3],
    /// Ready queue lengths `[aic, aiv, mix]` at its end.
    #[serde(default)]
    pub shared_at_end: [u64; 3],
    /// `dispatch` phases: pops that found work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pop_hit: Option<u64>,
    /// `dispatch` phases: pops that found an empty queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pop_miss: Option<u64>,
    /// `dummy_task`, `predicated_skip`, `graph_prepare` (upstream only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Dec64>,
}

/// One `submit` of the orchestrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrchPhase {
    /// 0, 1, 2, … in submission order.
    pub submit_idx: u64,
    /// The submitted task.
    pub task_id: Dec64,
    /// Start, cycles.
    pub start_cycles: u64,
    /// End, cycles.
    pub end_cycles: u64,
}

/// `deps.json`: the task graph of a run (written by [`write_deps`]
/// without building one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deps {
    /// Ours ([`SWIMLANE_SCHEMA_VERSION`]); absent in upstream files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// Which runtime's task-id layout the ids carry ([`RUNTIME`] for ours);
    /// the upstream dependency viewer refuses a file that names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Cow<'static, str>>,
    /// Every submitted task, in submission order.
    pub tasks: Vec<DepTask>,
    /// Every tensor a task argument names.
    #[serde(default)]
    pub tensors: Vec<DepTensor>,
    /// Every dependency edge, with its source.
    pub edges: Vec<DepEdge>,
}

/// The `runtime` a `deps.json` of ours names: the upstream runtime whose
/// design ours follows (TensorMap and task rings) and whose task ids are
/// ours, `ring << 32 | local` ([`simpler_core::TaskId`]), so the upstream
/// viewer decodes them as it decodes its own.
pub const RUNTIME: &str = "tensormap_and_ringbuffer";

/// A tensor argument's `type` in `deps.json`, in the upstream runtime's
/// words (its `TensorArgType` names: `INPUT`, `OUTPUT_EXISTING`, …), which
/// its dependency viewer matches; the dump files' lowercase roles are
/// another vocabulary ([`crate::vocab::role_name`]).
pub fn dep_arg_type(role: simpler_core::ArgRole) -> &'static str {
    use simpler_core::ArgRole;
    match role {
        ArgRole::Input => "INPUT",
        ArgRole::Output => "OUTPUT",
        ArgRole::OutputExisting => "OUTPUT_EXISTING",
        ArgRole::InOut => "INOUT",
        ArgRole::NoDep => "NO_DEP",
    }
}

/// A task of [`Deps`]; its argument list a type parameter, so that
/// [`write_deps`] takes it from an iterator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepTask<A = Vec<DepArg>> {
    /// Task id.
    pub task_id: Dec64,
    /// Scope depth it was submitted at (0 = top level). Upstream writes
    /// `"auto"` or `"manual"` here (no depth): read as 0.
    #[serde(default, deserialize_with = "lenient_u32")]
    pub scope: u32,
    /// Func id of the `[aic, aiv0, aiv1]` members, −1 when inactive.
    pub kernel_ids: [i64; 3],
    /// SPMD blocks.
    #[serde(default = "one")]
    pub block_num: u32,
    /// Its tensor arguments ([`DepArg`]), in slot order.
    #[serde(default)]
    pub args: A,
}

fn one() -> u32 {
    1
}

/// Our integer, or what upstream writes in its place (a word such as
/// `"auto"`, a list of words such as `["wait","retain"]`, `null`): 0.
/// Only for fields nothing we compute reads from an upstream file.
fn lenient_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    struct V;
    impl<'de> de::Visitor<'de> for V {
        type Value = u32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a u32, or upstream's word or list of words")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
            u32::try_from(v).map_err(|_| E::custom(format_args!("{v} is too large")))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
            u32::try_from(v).map_err(|_| E::custom(format_args!("{v} is not a u32")))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<u32, E> {
            Ok(0)
        }
        fn visit_unit<E: de::Error>(self) -> Result<u32, E> {
            Ok(0)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<u32, A::Error> {
            while a.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(0)
        }
    }
    d.deserialize_any(V)
}

/// A tensor argument of a [`DepTask`]. Read leniently (every field but
/// `idx` may be missing): nothing we compute needs it. `D`, the dims, is
/// a `Vec` read and may be a borrowed slice written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepArg<D = Vec<u32>> {
    /// Argument slot.
    pub idx: u32,
    /// Role, in the upstream words ([`dep_arg_type`]: `INPUT`, `OUTPUT`,
    /// `INOUT`, `OUTPUT_EXISTING`, `NO_DEP`); older files of ours wrote
    /// the dump files' lowercase roles.
    #[serde(rename = "type", default)]
    pub kind: Cow<'static, str>,
    /// The [`DepTensor`] it views.
    #[serde(default)]
    pub tensor_id: Dec64,
    /// UPPERCASE dtype name.
    #[serde(default)]
    pub dtype: Cow<'static, str>,
    /// Shape of the view.
    #[serde(default)]
    pub shape: D,
    /// First element of the view inside the buffer.
    #[serde(default)]
    pub start_offset: Dec64,
    /// Strides of the view, in elements.
    #[serde(default)]
    pub strides: D,
}

/// A buffer of [`Deps`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepTensor {
    /// Id referenced by [`DepArg::tensor_id`] and [`DepEdge::tensor_id`].
    pub tensor_id: Dec64,
    /// GM address of the buffer.
    #[serde(default)]
    pub buffer_addr: Dec64,
    /// Descriptor version.
    #[serde(default)]
    pub version: i64,
    /// UPPERCASE dtype name.
    #[serde(default)]
    pub dtype: Cow<'static, str>,
    /// Elements the buffer spans.
    #[serde(default)]
    pub buffer_numel: Dec64,
}

/// Where a dependency edge came from.
pub mod source {
    /// The consumer reads a tensor the producer's `output` allocated.
    pub const CREATOR: &str = "creator";
    /// The TensorMap found overlapping accesses (RAW, WAW or WAR).
    pub const TENSORMAP: &str = "tensormap";
    /// An explicit `after` dependency.
    pub const EXPLICIT: &str = "explicit";
}

/// An edge of [`Deps`]: `succ` waits for `pred`. `D` as in [`DepArg`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepEdge<D = Vec<u32>> {
    /// Producer task id.
    pub pred: Dec64,
    /// Consumer task id.
    pub succ: Dec64,
    /// The consumer's argument slot that found it; −1 for explicit edges.
    #[serde(default)]
    pub arg: i64,
    /// `creator`, `tensormap` or `explicit` (see [`source`]).
    pub source: Cow<'static, str>,
    /// Bit 0: read-after-write, bit 1: write-after-write, bit 2:
    /// write-after-read (see [`flag`]). Upstream writes its `DepFlags`
    /// here instead, a list of `"wait"`/`"retain"` (not hazard kinds):
    /// read as 0.
    #[serde(default, deserialize_with = "lenient_u32")]
    pub flags: u32,
    /// `full` when the producer's view covers the consumer's, else `partial`.
    #[serde(default)]
    pub overlap: Cow<'static, str>,
    /// The tensor the edge is about (absent for explicit edges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_id: Option<Dec64>,
    /// The consumer's view: shape, start offset, strides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_shape: Option<D>,
    /// See `consumer_shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_start_offset: Option<Dec64>,
    /// See `consumer_shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_strides: Option<D>,
    /// The producer's view: shape, start offset, strides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_shape: Option<D>,
    /// See `producer_shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_start_offset: Option<Dec64>,
    /// See `producer_shape`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_strides: Option<D>,
}

/// `flags` bits of [`DepEdge`].
pub mod flag {
    /// The consumer reads what the producer wrote.
    pub const RAW: u32 = 1;
    /// Both write.
    pub const WAW: u32 = 2;
    /// The consumer writes what the producer read.
    pub const WAR: u32 = 4;
}

/// `name_map_<workload>_<case>.json`: func names for the converter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameMap {
    /// Ours ([`SWIMLANE_SCHEMA_VERSION`]); absent in upstream files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// The swimlane level of the run.
    #[serde(default)]
    pub level: u8,
    /// The orchestration's name (`<workload>_<case>` for ours).
    #[serde(default)]
    pub orchestrator_name: String,
    /// Func id (decimal string) → kernel name.
    pub callable_id_to_name: BTreeMap<String, String>,
}

/// Counters of `pmu.csv` after `pmu_total_cycles`: busy cycles per pipe,
/// in trace order (SCALAR … VECTOR).
pub const PMU_COUNTERS: [&str; 7] = [
    "scalar_busy_cycles",
    "mte1_busy_cycles",
    "mte2_busy_cycles",
    "mte3_busy_cycles",
    "cube_busy_cycles",
    "fixp_busy_cycles",
    "vector_busy_cycles",
];

/// The columns before the counters.
pub const PMU_LEAD: [&str; 6] = [
    "thread_id",
    "core_id",
    "task_id",
    "func_id",
    "core_type",
    "pmu_total_cycles",
];

/// The last column.
pub const PMU_EVENT_TYPE: &str = "event_type";

/// The event set number written in every row. Upstream readers expect one
/// of 1, 2, 4–8; 2 is the default `--enable-pmu` set. Our counters are the
/// ones named in [`PMU_COUNTERS`], not hardware events.
pub const PMU_EVENT_SET: u32 = 2;

/// The whole `pmu.csv` header line (no newline).
pub fn pmu_header() -> String {
    let mut cols: Vec<&str> = PMU_LEAD.to_vec();
    cols.extend(PMU_COUNTERS);
    cols.push(PMU_EVENT_TYPE);
    cols.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_ids_read_both_forms_and_refuse_hex() {
        let d: Dec64 = serde_json::from_str("\"4294967297\"").unwrap();
        assert_eq!(d, Dec64(4_294_967_297));
        assert_eq!(serde_json::from_str::<Dec64>("17").unwrap(), Dec64(17));
        assert_eq!(serde_json::to_string(&Dec64(17)).unwrap(), "\"17\"");
        let e = serde_json::from_str::<Dec64>("\"0x11\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("bad id \"0x11\": expected a decimal u64"),
            "{e}"
        );
        assert!(serde_json::from_str::<Dec64>("-1").is_err());
        assert!(serde_json::from_str::<Dec64>("\"99999999999999999999\"").is_err());
    }

    #[test]
    fn rows_are_arrays_with_five_or_six_columns() {
        let r: AicoreRow = serde_json::from_str("[3,4294967296,0,10,20,2]").unwrap();
        assert_eq!((r.core_id, r.task_id, r.receive_to_start), (3, 1 << 32, 2));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            "[3,4294967296,0,10,20,2]"
        );
        let r: AicoreRow = serde_json::from_str("[3,1,0,10,20]").unwrap();
        assert_eq!(r.receive_to_start, 0);
        let e = serde_json::from_str::<AicoreRow>("[3,1,0,10]").unwrap_err();
        assert!(e.to_string().contains("4 columns: expected 6"), "{e}");
        let e = serde_json::from_str::<AicpuRow>("[3,1,0]").unwrap_err();
        assert!(e.to_string().contains("3 columns: expected 4"), "{e}");
    }

    /// A `deps.json` as the upstream runtime writes it (its dep-gen doc):
    /// `runtime`, scope words, `flags` as a list of words (or absent),
    /// `overlap` words, uppercase arg types, `consumer_dtype`.
    #[test]
    fn upstream_deps_json_reads() {
        let text = r#"{"runtime":"tensormap_and_ringbuffer",
          "tasks":[{"task_id":"0","scope":"auto","kernel_ids":[0,-1,-1],"block_num":1,"args":[]},
                   {"task_id":4294967296,"scope":"manual","kernel_ids":[-1,1,-1],"block_num":4,"args":[
                     {"idx":0,"type":"INPUT","tensor_id":"13451765318376212391","dtype":"FLOAT32",
                      "shape":[16384],"start_offset":"0","strides":[1]}]}],
          "tensors":[{"tensor_id":"13451765318376212391","buffer_addr":"29204938752","version":0,
                      "dtype":"FLOAT32","buffer_numel":"16384"}],
          "edges":[{"pred":"0","succ":"4294967296","arg":0,"source":"creator","flags":["wait","retain"],
                    "tensor_id":"13451765318376212391","consumer_dtype":"FLOAT32","consumer_shape":[16384],
                    "consumer_start_offset":"0","consumer_strides":[1]},
                   {"pred":"0","succ":"4294967296","arg":0,"source":"tensormap","flags":["wait"],
                    "overlap":"covered","producer_shape":[16384],"producer_start_offset":"0","producer_strides":[1]},
                   {"pred":"0","succ":"4294967296","arg":-1,"source":"explicit"}]}"#;
        let d: Deps = serde_json::from_str(text).unwrap();
        assert_eq!(d.tasks.len(), 2);
        assert_eq!(d.tasks[1].task_id, Dec64(1 << 32));
        assert_eq!(d.tasks[1].block_num, 4);
        assert_eq!((d.tasks[0].scope, d.tasks[1].scope), (0, 0));
        assert_eq!(d.tasks[1].args[0].kind, "INPUT");
        assert_eq!(d.tensors[0].tensor_id, Dec64(13_451_765_318_376_212_391));
        let e: Vec<_> = d
            .edges
            .iter()
            .map(|e| (e.pred.0, e.succ.0, e.source.as_ref(), e.flags, e.arg))
            .collect();
        assert_eq!(
            e,
            [
                (0, 1 << 32, source::CREATOR, 0, 0),
                (0, 1 << 32, source::TENSORMAP, 0, 0),
                (0, 1 << 32, source::EXPLICIT, 0, -1),
            ]
        );
        assert_eq!(d.edges[1].overlap, "covered");
        // Ours still read as written; a wrong type is still refused.
        let ours: DepEdge = serde_json::from_str(
            r#"{"pred":"1","succ":"2","arg":0,"source":"tensormap","flags":5,"overlap":"full"}"#,
        )
        .unwrap();
        assert_eq!(ours.flags, flag::RAW | flag::WAR);
        let bad = r#"{"pred":"1","succ":"2","source":"creator","flags":{"wait":true}}"#;
        assert!(serde_json::from_str::<DepEdge>(bad).is_err());
        let bad = r#"{"pred":"1","succ":"2","source":"creator","flags":-1}"#;
        assert!(serde_json::from_str::<DepEdge>(bad).is_err());
    }

    #[test]
    fn name_maps_are_found_as_the_tools_glob_them() {
        for n in [
            name_map_file("w", "c").as_str(),
            "name_map.json",
            "name_map_TestX_case1.json",
        ] {
            assert!(is_name_map_file(n), "{n}");
        }
        for n in ["name_map_w_c.json.tmp", "my_name_map.json", "deps.json"] {
            assert!(!is_name_map_file(n), "{n}");
        }
    }

    #[test]
    fn pmu_header_names_every_counter() {
        let h = pmu_header();
        assert!(h.starts_with(
            "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,scalar_busy_cycles"
        ));
        assert!(h.ends_with("vector_busy_cycles,event_type"));
        assert_eq!(h.split(',').count(), 14);
        assert_eq!(name_map_file("w", "c"), "name_map_w_c.json");
    }
}
