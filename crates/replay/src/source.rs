//! Where a replay's arguments come from (DESIGN §8 steps 2–4): a run's
//! dumps in either layout, found from what the user names
//! ([`simpler_inspect::locate::run_files`]), and the one dispatch selected
//! out of them — from `kernel_args_dump.json` when the run wrote one
//! ([`crate::rebuild`]), else from the per-task records
//! ([`crate::records`]: every dump of the upstream runtime).
//!
//! ```no_run
//! use simpler_replay::source::{DumpSource, Selector};
//! let src = DumpSource::open("outputs/run_a".as_ref())?;
//! for line in src.describe() {
//!     println!("{line}");
//! }
//! # Ok::<(), simpler_replay::ReplayError>(())
//! ```

use std::path::Path;
use std::sync::Arc;

use simpler_core::{topology::Subtask, TaskId};
use simpler_format::args_dump::ArgsDump;
use simpler_format::tensor_dump::Layout;
use simpler_inspect::{
    args::ArgsFile,
    kernel_args::KernelArgsFile,
    locate::{run_files, RunFiles},
    stream::{DumpInfo, RecordStream},
    Dump, Record,
};

use crate::rebuild::{rebuild, select_dispatch, RebuildOptions};
use crate::records::{
    rebuild_from_records, select_task, task_index, Context, TaskChoice, TaskRecords,
};
use crate::spec::{ReplaySpec, Tolerance};
use crate::ReplayError;

/// The dumps of one run.
#[derive(Debug)]
pub struct DumpSource {
    /// Where each file is.
    pub files: RunFiles,
    /// The kernel args dump, read and validated.
    pub kernel_args: Option<KernelArgsFile>,
    /// The orchestration args dump (workload and case), read and validated.
    pub orch_args: Option<ArgsDump>,
    /// The per-task manifest's header, layout and payload file.
    pub dump: Option<Arc<DumpInfo>>,
}

/// Which dispatch to replay.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selector {
    /// `--func-id`.
    pub func_id: Option<u32>,
    /// `--dispatch-id`: a kernel args dump's dispatch id; without one, the
    /// n-th task of the func (from 0).
    pub dispatch_id: Option<u64>,
    /// `--task-id`.
    pub task_id: Option<TaskId>,
    /// `--block-idx`.
    pub block_idx: u32,
    /// `--block-num` (only without a kernel args dump, which records it).
    pub block_num: Option<u32>,
    /// `--subtask` (`aiv0`/`aiv1` for a single AIV kernel).
    pub subtask: Option<Subtask>,
}

/// A selected dispatch's spec and what the selection found, in lines for
/// the user.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The spec to replay.
    pub spec: ReplaySpec,
    /// What was read and chosen (files, counts, notes).
    pub lines: Vec<String>,
}

impl DumpSource {
    /// Find and read the dumps of the run at `path` (a run directory, its
    /// `tensor_dump/` or `args_dump/` folder, or a file of it).
    ///
    /// # Errors
    /// Nothing to replay from there (the message lists where it looked), or
    /// a file that is not valid.
    pub fn open(path: &Path) -> Result<DumpSource, ReplayError> {
        let files = run_files(path)?;
        if files.manifest.is_none() && files.kernel_args.is_none() {
            return Err(ReplayError::Selection(format!(
                "{}: no tensor dump (tensor_dump/tensor_dump.json or args_dump/args_dump.json) and no kernel_args_dump.json there; run with --dump-tensor or --dump-all, or pass the run directory",
                path.display()
            )));
        }
        let kernel_args = files
            .kernel_args
            .as_ref()
            .map(KernelArgsFile::open)
            .transpose()?;
        let orch_args = files
            .orch_args
            .as_ref()
            .map(|p| ArgsFile::open(p).map(|a| a.doc))
            .transpose()?;
        let dump = match &files.manifest {
            Some(m) => Some(RecordStream::open_manifest(m)?.info().clone()),
            None => None,
        };
        Ok(DumpSource {
            files,
            kernel_args,
            orch_args,
            dump,
        })
    }

    /// True for a dump of the upstream runtime (or the reference one):
    /// its kernels are other code, so outputs are verified within a
    /// tolerance, not bit for bit.
    pub fn from_upstream_runtime(&self) -> bool {
        self.dump
            .as_ref()
            .is_some_and(|d| d.layout != Layout::Native && d.header.schema_version.is_none())
    }

    /// The workload and case the run recorded, when it did.
    pub fn recorded(&self) -> Option<(&str, &str)> {
        self.orch_args
            .as_ref()
            .map(|a| (a.workload.as_str(), a.case.as_str()))
    }

    /// The recorded workload must be `workload`; returns the recorded case.
    ///
    /// # Errors
    /// [`ReplayError::Selection`] when the dump was written by another
    /// workload, or another case than `case`.
    pub fn check_run(
        &self,
        workload: &str,
        case: Option<&str>,
    ) -> Result<Option<String>, ReplayError> {
        let Some((w, c)) = self.recorded() else {
            return Ok(None);
        };
        let at = self
            .files
            .orch_args
            .as_deref()
            .unwrap_or(Path::new(""))
            .display();
        if w != workload {
            return Err(ReplayError::Selection(format!(
                "{at}: the dump was written by workload {w} (case {c}), not {workload}"
            )));
        }
        if let Some(given) = case.filter(|g| *g != c) {
            return Err(ReplayError::Selection(format!(
                "--case {given}: the dump in {} was written by case {c}",
                at
            )));
        }
        Ok(Some(c.to_string()))
    }

    /// What was found, one line per file.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(k) = &self.kernel_args {
            lines.push(format!(
                "kernel args dump: {} ({} dispatches)",
                k.path.display(),
                k.doc.total_dispatches
            ));
        }
        match &self.dump {
            Some(d) => lines.push(format!(
                "tensor dump: {} ({} records, dump level {}, {})",
                d.manifest.display(),
                d.header.total_tensors,
                d.header
                    .dump_level
                    .map_or_else(|| "not recorded".into(), |l| l.to_string()),
                layout_name(d)
            )),
            None => lines.push(format!(
                "tensor dump: none in {} — inputs will be zero-filled and outputs cannot be verified",
                self.files
                    .kernel_args
                    .as_deref()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("."))
                    .display()
            )),
        }
        if self.kernel_args.is_none() {
            lines.push(
                "no kernel_args_dump.json: the args are rebuilt from the per-task records".into(),
            );
        }
        lines
    }

    /// Select one dispatch and build its spec.
    ///
    /// # Errors
    /// No such dispatch or task (the message lists what exists), or dumps
    /// that do not allow a rebuild.
    pub fn select(
        &self,
        sel: &Selector,
        opts: &RebuildOptions<'_>,
        tolerance: Tolerance,
    ) -> Result<Selected, ReplayError> {
        let tol = self.from_upstream_runtime().then_some(tolerance);
        match &self.kernel_args {
            Some(k) => self.by_kernel_args(k, sel, opts, tol),
            None => self.by_records(sel, opts, tol),
        }
    }

    fn by_kernel_args(
        &self,
        k: &KernelArgsFile,
        sel: &Selector,
        opts: &RebuildOptions<'_>,
        tol: Option<Tolerance>,
    ) -> Result<Selected, ReplayError> {
        if sel.block_num.is_some() {
            return Err(ReplayError::Selection(format!(
                "--block-num: {} records each dispatch's block count; select the dispatch with --dispatch-id or --task-id/--block-idx",
                k.path.display()
            )));
        }
        let mut lines = Vec::new();
        let id = match sel.task_id {
            Some(task) => dispatch_of_task(k, task, sel)?,
            None => {
                let Some(func) = sel.func_id else {
                    return Err(ReplayError::Selection(
                        "--func-id is required with --dump-dir (or --task-id, or --all)".into(),
                    ));
                };
                let s = select_dispatch(k, func, sel.dispatch_id, opts.kernels)?;
                lines.extend(s.note);
                s.dispatch_id
            }
        };
        let task = k.dispatch(id).map(|d| TaskId(d.task_id.0));
        // Only the selected task's records are kept (all are validated).
        let dump = match &self.files.manifest {
            Some(m) => Some(Dump::open_filtered(m, |r| Some(r.task_id) == task)?),
            None => None,
        };
        let mut spec = rebuild(k, dump.as_ref(), id, opts)?;
        spec.tolerance = tol;
        Ok(Selected { spec, lines })
    }

    fn by_records(
        &self,
        sel: &Selector,
        opts: &RebuildOptions<'_>,
        tol: Option<Tolerance>,
    ) -> Result<Selected, ReplayError> {
        let (Some(manifest), Some(info)) = (&self.files.manifest, &self.dump) else {
            unreachable!("open() requires a manifest or a kernel args dump");
        };
        let tasks = task_index(manifest)?;
        let choice = TaskChoice {
            func_id: sel.func_id,
            nth: sel.dispatch_id,
            task_id: sel.task_id,
        };
        let (task, note) = select_task(&tasks, &choice, manifest)?;
        let func = match (sel.func_id, task.func_ids.first()) {
            (Some(f), _) => f,
            (None, Some(&f)) => f,
            (None, None) => {
                return Err(ReplayError::Selection(format!(
                    "{}: the dump does not record which kernel task {} ran; give --func-id",
                    manifest.display(),
                    task.task_id
                )))
            }
        };
        let dump = Dump::open_filtered(manifest, |r| r.task_id == task.task_id)?;
        let recs: Vec<&Record> = dump.records().iter().collect();
        let spec = rebuild_from_records(
            task,
            func,
            &task_records(manifest, info, &recs),
            &self.context(sel),
            opts,
            tol,
        )?;
        Ok(Selected {
            spec,
            lines: note.into_iter().collect(),
        })
    }

    /// The context of a dispatch rebuilt from records.
    pub(crate) fn context(&self, sel: &Selector) -> Context {
        Context {
            block_idx: sel.block_idx,
            block_num: sel.block_num.unwrap_or(1),
            subtask: sel.subtask,
        }
    }
}

/// The records of a task as [`rebuild_from_records`] reads them.
pub(crate) fn task_records<'a>(
    manifest: &'a Path,
    info: &'a DumpInfo,
    recs: &'a [&'a Record],
) -> TaskRecords<'a> {
    TaskRecords {
        records: recs,
        manifest,
        bin: info.payload.path(),
        dump_level: info.header.dump_level,
    }
}

fn layout_name(d: &DumpInfo) -> String {
    match (d.layout, d.header.schema_version) {
        (Layout::Native, _) => "native layout".into(),
        (Layout::Upstream, Some(_)) => "upstream layout, written by simpler-rs".into(),
        (Layout::Upstream, None) => {
            "upstream layout, from the upstream runtime: outputs are checked within --rtol/--atol"
                .into()
        }
        (Layout::Reference, _) => {
            "reference-runtime dump: outputs are checked within --rtol/--atol".into()
        }
    }
}

/// The dispatch of `task` at `--block-idx` (and `--func-id`, `--subtask`
/// when given) in a kernel args dump.
fn dispatch_of_task(k: &KernelArgsFile, task: TaskId, sel: &Selector) -> Result<u64, ReplayError> {
    let all: Vec<_> = k
        .doc
        .dispatches
        .iter()
        .filter(|d| d.task_id.0 == task.0)
        .collect();
    let found = all.iter().find(|d| {
        d.block_idx == sel.block_idx
            && sel.func_id.is_none_or(|f| d.func_id == f)
            && sel.subtask.is_none_or(|s| d.subtask == s.name())
    });
    match found {
        Some(d) => Ok(d.dispatch_id),
        None => Err(ReplayError::Selection(format!(
            "{}: no dispatch of task {task} with block {}{}{}; its dispatches: {}",
            k.path.display(),
            sel.block_idx,
            sel.func_id
                .map_or_else(String::new, |f| format!(", func {f}")),
            sel.subtask
                .map_or_else(String::new, |s| format!(", {}", s.name())),
            if all.is_empty() {
                "none (no such task in the dump)".to_string()
            } else {
                all.iter()
                    .map(|d| {
                        format!(
                            "{} (func {}, {}, block {})",
                            d.dispatch_id, d.func_id, d.subtask, d.block_idx
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
    }
}
