//! The replay workspace (DESIGN §8 steps 5–8) and the driver that fills it.
//!
//! ```text
//! outputs/insight_trace_<label>_<YYYYmmdd_HHMMSS>/     (never overwritten: _2, _3, …)
//!   replay_spec.json                 re-runnable with --arg-spec
//!   replay_report.json               spec summary, zero-filled slots,
//!                                    verification, timing summary
//!   insight_export/OPPROF_<YYYYmmdd_HHMMSS>/
//!     simulator/trace.json, simulator/core<c>.<member>/…
//!     <label>_trace_perfetto.json
//! ```
//!
//! [`replay_into`] validates a spec, creates the workspace, writes the spec
//! (relative data paths made absolute, so the copy runs from anywhere),
//! runs the kernel ([`crate::replay::execute`]), exports the trace
//! ([`crate::export_trace`]), verifies ([`crate::verify::verify`]) and
//! writes the report.

use std::{
    collections::BTreeMap,
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use serde::Serialize;
use simpler_isa::KernelDef;

use crate::{
    export_trace,
    replay::{check_runnable, check_sources, execute},
    spec::{DataSource, Plan, ReplaySpec, SpecSource, SPEC_FILE},
    timing::PipeCycles,
    verify::{verify, Verification},
    ExportSummary, ReplayError, SubCore, TimingParams,
};

/// File name of the report inside a workspace.
pub const REPORT_FILE: &str = "replay_report.json";
/// `schema_version` of the report.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Where to create the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceTarget {
    /// A fresh `insight_trace_<label>_<ts>` folder under this root
    /// (`outputs/` for the CLI).
    Fresh(PathBuf),
    /// Exactly this folder, which must not exist yet.
    At(PathBuf),
}

/// A created workspace folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The folder.
    pub dir: PathBuf,
    /// `YYYYmmdd_HHMMSS` of its creation (also names `OPPROF_<ts>`).
    pub timestamp: String,
}

/// `label` made safe for a folder or file name (`[A-Za-z0-9._-]`, others
/// `_`; empty or all dots: `replay`): the workspace folder and the trace
/// files inside it.
pub fn safe_label(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        "replay".into()
    } else {
        s
    }
}

impl Workspace {
    /// Create the workspace for `label` at `target`.
    ///
    /// # Errors
    /// [`ReplayError::Io`] when the folder exists (`At`) or cannot be made.
    pub fn create(target: &WorkspaceTarget, label: &str) -> Result<Workspace, ReplayError> {
        let timestamp = chrono::Local::now().format("%Y%m%d_%H%M%S").to_string();
        match target {
            WorkspaceTarget::At(dir) => {
                if dir.exists() {
                    return Err(ReplayError::Io {
                        path: dir.clone(),
                        msg: "the directory already exists and is never overwritten; choose a new one".into(),
                    });
                }
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    fs::create_dir_all(parent).map_err(|e| ReplayError::io(parent, &e))?;
                }
                fs::create_dir(dir).map_err(|e| ReplayError::io(dir, &e))?;
                Ok(Workspace {
                    dir: dir.clone(),
                    timestamp,
                })
            }
            WorkspaceTarget::Fresh(root) => {
                fs::create_dir_all(root).map_err(|e| ReplayError::io(root, &e))?;
                let base = format!("insight_trace_{}_{timestamp}", safe_label(label));
                for n in 1..10_000 {
                    let name = if n == 1 {
                        base.clone()
                    } else {
                        format!("{base}_{n}")
                    };
                    let dir = root.join(name);
                    match fs::create_dir(&dir) {
                        Ok(()) => return Ok(Workspace { dir, timestamp }),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(ReplayError::io(&dir, &e)),
                    }
                }
                Err(ReplayError::Io {
                    path: root.join(base),
                    msg: "no free workspace name (tried _2 … _9999)".into(),
                })
            }
        }
    }

    /// `<dir>/replay_spec.json`.
    pub fn spec_path(&self) -> PathBuf {
        self.dir.join(SPEC_FILE)
    }

    /// `<dir>/replay_report.json`.
    pub fn report_path(&self) -> PathBuf {
        self.dir.join(REPORT_FILE)
    }

    /// `<dir>/insight_export/OPPROF_<ts>/`.
    pub fn opprof_dir(&self) -> PathBuf {
        self.dir
            .join("insight_export")
            .join(format!("OPPROF_{}", self.timestamp))
    }
}

/// Write `text` (and a final newline) to `path` with the dump's durable
/// writer: temporary file, fsync, rename, fsync of the folder.
///
/// # Errors
/// [`ReplayError::Io`] naming the file.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), ReplayError> {
    simpler_format::durable::write_atomic(path, |w| {
        w.write_all(text.as_bytes())?;
        w.write_all(b"\n")
    })
    .map_err(|e| ReplayError::io(&e.path, &e.source))
}

// ---------------------------------------------------------------------------
// Report

/// `replay_report.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Workspace label.
    pub label: String,
    /// The workspace folder.
    pub workspace: PathBuf,
    /// The spec that was run (inside the workspace).
    pub spec_file: PathBuf,
    /// What was replayed.
    pub spec: SpecSummary,
    /// Tensor slots that started as zeros, and why.
    pub zero_filled: Vec<SlotNote>,
    /// `--set-arg` changes applied to the spec.
    pub overrides: Vec<String>,
    /// The spec's notes (assumptions of the rebuild).
    pub notes: Vec<String>,
    /// Every output verified bit-exact.
    pub overall_pass: bool,
    /// Per output.
    pub verification: Verification,
    /// Pipe simulator figures.
    pub timing: TimingSummary,
    /// Where the trace files are.
    pub export: ExportPaths,
}

/// What was replayed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecSummary {
    /// Workload.
    pub workload: String,
    /// Case.
    pub case: String,
    /// Arch profile.
    pub arch: String,
    /// Clusters.
    pub clusters: u32,
    /// Selected func id.
    pub func_id: u32,
    /// Its kernel.
    pub kernel: String,
    /// `aic` / `aiv`.
    pub core_type: String,
    /// Selected dispatch id.
    pub dispatch_id: Option<u64>,
    /// Task id.
    pub task_id: Option<String>,
    /// Block index.
    pub block_idx: u32,
    /// Block count.
    pub block_num: u32,
    /// Members run (one unless MIX).
    pub members: Vec<MemberSummary>,
    /// Tensor slots.
    pub tensors: usize,
    /// Scalar slots.
    pub scalars: usize,
    /// Where the spec was rebuilt from.
    pub source: Option<SpecSource>,
}

/// One member that ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberSummary {
    /// Func id.
    pub func_id: u32,
    /// Kernel name.
    pub kernel: String,
    /// `aic`, `aiv0`, `aiv1`.
    pub subtask: String,
    /// Core id.
    pub core_id: u32,
    /// Global context value it saw.
    pub sub_block_id: i32,
    /// Its dispatch id.
    pub dispatch_id: Option<u64>,
    /// Its trace process name (`core3.veccore0`).
    pub trace_name: String,
}

/// A slot and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotNote {
    /// Slot.
    pub arg_index: u32,
    /// Why.
    pub reason: String,
}

/// Pipe simulator figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingSummary {
    /// Arch profile of the timing table.
    pub arch: String,
    /// Clock (cycles per µs).
    pub clock_mhz: u32,
    /// End of the last instruction of any sub-core.
    pub total_cycles: u64,
    /// The same in µs.
    pub total_us: f64,
    /// Instructions over all sub-cores.
    pub instructions: usize,
    /// Busy cycles per pipe, summed over sub-cores (busy pipes only).
    pub busy_cycles: BTreeMap<String, u64>,
    /// Busiest pipe of any sub-core.
    pub bottleneck: Option<BottleneckSummary>,
    /// Per sub-core.
    pub cores: Vec<CoreTimingSummary>,
}

/// The bottleneck pipe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BottleneckSummary {
    /// Sub-core.
    pub core: String,
    /// Pipe.
    pub pipe: String,
    /// Its busy cycles.
    pub busy_cycles: u64,
    /// Busy share of the total, %.
    pub percent_of_total: f64,
}

/// One sub-core's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreTimingSummary {
    /// Trace name.
    pub name: String,
    /// Instructions.
    pub instructions: usize,
    /// End of its last instruction.
    pub total_cycles: u64,
    /// Busy cycles per pipe (busy pipes only).
    pub busy_cycles: BTreeMap<String, u64>,
}

/// Trace locations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportPaths {
    /// `insight_export/OPPROF_<ts>/`.
    pub opprof_dir: PathBuf,
    /// Its `simulator/` (what MindStudio Insight opens).
    pub simulator_dir: PathBuf,
    /// The Perfetto file.
    pub perfetto: PathBuf,
}

fn busy_map(b: &PipeCycles) -> BTreeMap<String, u64> {
    b.iter()
        .filter(|&(_, c)| c > 0)
        .map(|(p, c)| (p.name().to_string(), c))
        .collect()
}

impl TimingSummary {
    /// From an export's summary.
    pub fn from_export(e: &ExportSummary) -> TimingSummary {
        TimingSummary {
            arch: e.arch.into(),
            clock_mhz: e.clock_mhz,
            total_cycles: e.total_cycles,
            total_us: e.total_us(),
            instructions: e.instructions,
            busy_cycles: busy_map(&e.busy),
            bottleneck: e.bottleneck.as_ref().map(|b| BottleneckSummary {
                core: b.core.clone(),
                pipe: b.pipe.name().into(),
                busy_cycles: b.busy_cycles,
                percent_of_total: if e.total_cycles == 0 {
                    0.0
                } else {
                    100.0 * b.busy_cycles as f64 / e.total_cycles as f64
                },
            }),
            cores: e
                .cores
                .iter()
                .map(|c| CoreTimingSummary {
                    name: c.name.clone(),
                    instructions: c.instructions,
                    total_cycles: c.total_cycles,
                    busy_cycles: busy_map(&c.busy),
                })
                .collect(),
        }
    }
}

/// Tensor slots that start as zeros, with the spec's reason.
pub fn zero_filled(plan: &Plan) -> Vec<SlotNote> {
    plan.tensors
        .iter()
        .filter(|t| matches!(t.data, DataSource::Zeros {}))
        .map(|t| SlotNote {
            arg_index: t.arg_index,
            reason: t
                .note
                .as_deref()
                .and_then(|n| n.split("; ").find(|p| p.starts_with("zero-filled")))
                .map_or_else(
                    || "the spec asks for zeros".to_string(),
                    |p| p.trim_start_matches("zero-filled: ").to_string(),
                ),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Driver

/// Everything one replay produced.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// The workspace.
    pub workspace: Workspace,
    /// `replay_spec.json` in it.
    pub spec_path: PathBuf,
    /// `replay_report.json` in it.
    pub report_path: PathBuf,
    /// The validated spec.
    pub plan: Plan,
    /// Trace export summary (its `render_text` is what the CLI prints).
    pub export: ExportSummary,
    /// The report as written.
    pub report: ReplayReport,
}

/// Validate `spec` (relative paths relative to `spec_base`; `spec_file`
/// names it in messages), create the workspace at `target`, write the
/// spec, run, export, verify and write the report. `overrides` are listed
/// in the report.
///
/// # Errors
/// Any [`ReplayError`]. A bad spec or a missing data file is reported
/// before the workspace is created; a kernel failure leaves the workspace
/// with its `replay_spec.json`, to re-run.
pub fn replay_into(
    target: &WorkspaceTarget,
    spec: &ReplaySpec,
    spec_base: &Path,
    spec_file: &str,
    kernels: &[KernelDef],
    overrides: &[String],
) -> Result<ReplayOutcome, ReplayError> {
    let base = std::path::absolute(spec_base).map_err(|e| ReplayError::io(spec_base, &e))?;
    let plan = spec.plan(spec_file)?;
    check_sources(&plan, &base, spec_file)?;
    check_runnable(&plan, kernels, spec_file)?;
    let spec = spec.with_absolute_paths(&base);
    let label = spec.label();
    let ws = Workspace::create(target, &label)?;
    let spec_path = ws.spec_path();
    write_atomic(&spec_path, &spec.to_json())?;
    let file = spec_path.display().to_string();
    let plan = spec.plan(&file)?;

    let exec = execute(&plan, &ws.dir, kernels, &file)?;
    let params = TimingParams::for_arch(&plan.arch);
    let export = export_trace(&ws.opprof_dir(), &safe_label(&label), &params, &exec.cores)?;
    let verification = verify(&plan, &ws.dir, &exec, &file)?;

    let sel = plan.selected();
    let report = ReplayReport {
        schema_version: REPORT_SCHEMA_VERSION,
        label: label.clone(),
        workspace: ws.dir.clone(),
        spec_file: spec_path.clone(),
        spec: SpecSummary {
            workload: spec.workload.clone(),
            case: spec.case.clone(),
            arch: plan.arch.name.into(),
            clusters: plan.clusters,
            func_id: sel.func_id,
            kernel: sel.kernel.clone(),
            core_type: sel.subtask.core_type().name().into(),
            dispatch_id: sel.dispatch_id,
            task_id: sel.task_id.map(|t| t.to_string()),
            block_idx: plan.block_idx,
            block_num: plan.block_num,
            members: plan
                .members
                .iter()
                .zip(&exec.cores)
                .map(|(m, c): (_, &SubCore)| MemberSummary {
                    func_id: m.func_id,
                    kernel: m.kernel.clone(),
                    subtask: m.subtask.name().into(),
                    core_id: m.core_id,
                    sub_block_id: m.sub_block_id,
                    dispatch_id: m.dispatch_id,
                    trace_name: c.name(),
                })
                .collect(),
            tensors: plan.tensors.len(),
            scalars: plan.scalars.len(),
            source: spec.source.clone(),
        },
        zero_filled: zero_filled(&plan),
        overrides: overrides.to_vec(),
        notes: spec.notes.clone(),
        overall_pass: verification.overall_pass,
        verification,
        timing: TimingSummary::from_export(&export),
        export: ExportPaths {
            opprof_dir: ws.opprof_dir(),
            simulator_dir: export.simulator_dir.clone(),
            perfetto: export.perfetto_path.clone(),
        },
    };
    let report_path = ws.report_path();
    let text = serde_json::to_string_pretty(&report).map_err(|e| ReplayError::Io {
        path: report_path.clone(),
        msg: format!("cannot serialize the report: {e}"),
    })?;
    write_atomic(&report_path, &text)?;
    Ok(ReplayOutcome {
        workspace: ws,
        spec_path,
        report_path,
        plan,
        export,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::safe_label;

    #[test]
    fn labels_become_safe_file_names() {
        assert_eq!(safe_label("paged_attention-1.sf"), "paged_attention-1.sf");
        assert_eq!(safe_label("a/b c"), "a_b_c");
        assert_eq!(safe_label(""), "replay");
        assert_eq!(safe_label(".."), "replay");
    }
}
