//! `simpler insight-trace`: replay one kernel dispatch alone on the pipe
//! simulator, export a MindStudio Insight / Perfetto trace and verify the
//! outputs against the dump (DESIGN §8). The work is in `simpler_replay`;
//! this module selects, prints and picks the exit code.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::Args;
use simpler_format::args_dump::ArgsDump;
use simpler_format::files::{ARGS_FILE, TENSOR_DUMP_JSON};
use simpler_inspect::{args::ArgsFile, kernel_args::KernelArgsFile, Dump};
use simpler_replay::{
    rebuild::{rebuild, select_dispatch, RebuildOptions},
    replay_into,
    spec::DataSource,
    workspace::zero_filled,
    ReplayOutcome, ReplaySpec, WorkspaceTarget,
};
use simpler_runtime::{KernelDef, Runtime};
use simpler_workloads::Workload;

use crate::cli::{ChipArgs, DumpArgs};

/// `simpler insight-trace`.
#[derive(Debug, Clone, Args)]
pub struct InsightArgs {
    /// Workload name (see `simpler list`).
    pub workload: String,
    /// Case (default: the dump's case when args_dump.json says it, the
    /// spec's with --arg-spec, else the workload's first case).
    #[arg(long)]
    pub case: Option<String>,
    /// Func id of the kernel to replay (required unless --arg-spec).
    #[arg(long, value_name = "ID")]
    pub func_id: Option<u32>,
    /// Run directory or its tensor_dump/ folder holding
    /// kernel_args_dump.json (and ideally the tensor dump). Without it the
    /// case is first run here with --dump-all.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Dispatch to replay (default: the first dispatch of --func-id).
    #[arg(long, value_name = "N")]
    pub dispatch_id: Option<u64>,
    /// Replay from a spec file (a replay_spec.json, or hand-written)
    /// instead of a dump.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dump_dir", "dispatch_id"])]
    pub arg_spec: Option<PathBuf>,
    /// Override one scalar slot (value by its dtype, or 0x… raw bits) or
    /// fill one tensor slot with a value; repeatable.
    #[arg(long = "set-arg", value_name = "SLOT=VALUE")]
    pub set_arg: Vec<String>,
    /// Workspace directory (default
    /// `outputs/insight_trace_<label>_<YYYYmmdd_HHMMSS>/`); an existing one
    /// is never overwritten.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Seed of the case's inputs when the case is run here.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Chip shape: of the run that wrote the dump (the dumps do not record
    /// arch and clusters), or of the run made here.
    #[command(flatten)]
    pub chip: ChipArgs,
}

/// Run the command; exit 0 when every output verified bit-exact, 1 on a
/// mismatch or when an output could not be verified.
pub fn insight_trace(a: &InsightArgs) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let o = match run(a, &mut out).and_then(|o| {
        out.flush()?;
        Ok(o)
    }) {
        Ok(o) => o,
        // `simpler insight-trace … | head`: the reader left; stop quietly,
        // as the other commands do.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            return Ok(ExitCode::SUCCESS)
        }
        Err(e) => return Err(e),
    };
    Ok(if o.report.overall_pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn kernel_list(kernels: &[KernelDef]) -> String {
    kernels
        .iter()
        .map(|k| format!("{} {} [{}]", k.func_id, k.name, k.core_type.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Everything the command does, printing to `out`; returns the outcome.
///
/// # Errors
/// Unknown workload/case/func id/dispatch, unreadable dumps or spec, a
/// failing kernel, unwritable workspace.
pub fn run(a: &InsightArgs, out: &mut dyn Write) -> Result<ReplayOutcome> {
    let w = simpler_workloads::find(&a.workload)?;
    let kernels = w.kernels();
    // Refuse bad --arch/--clusters/… before reading anything.
    a.chip.config()?;
    let root = match &a.output {
        Some(dir) => dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => PathBuf::from("outputs"),
    };
    let target = match &a.output {
        Some(dir) => {
            if dir.exists() {
                bail!(
                    "--output {}: the directory already exists and is never overwritten; choose a new one",
                    dir.display()
                );
            }
            WorkspaceTarget::At(dir.clone())
        }
        None => WorkspaceTarget::Fresh(root.clone()),
    };

    let (mut spec, base, spec_file) = match &a.arg_spec {
        Some(path) => {
            let spec = ReplaySpec::load(path)?;
            if spec.workload != w.name() {
                bail!(
                    "{}: the spec is for workload {}, not {}",
                    path.display(),
                    spec.workload,
                    w.name()
                );
            }
            w.case(&spec.case)
                .with_context(|| format!("{}: field case", path.display()))?;
            if let Some(c) = &a.case {
                if *c != spec.case {
                    bail!(
                        "--case {c}: the spec {} is for case {}",
                        path.display(),
                        spec.case
                    );
                }
            }
            if let Some(f) = a.func_id {
                if f != spec.func_id {
                    bail!(
                        "--func-id {f}: the spec {} replays func_id {} ({})",
                        path.display(),
                        spec.func_id,
                        spec.kernel
                    );
                }
            }
            writeln!(
                out,
                "insight-trace {} {}: func {} {} [{}] from spec {}",
                spec.workload,
                spec.case,
                spec.func_id,
                spec.kernel,
                spec.core_type,
                path.display()
            )?;
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (spec, base, path.display().to_string())
        }
        None => {
            let spec = from_dump(a, w.as_ref(), &kernels, &root, out)?;
            (spec, PathBuf::from("."), "replay spec".to_string())
        }
    };

    let mut overrides = Vec::new();
    for s in &a.set_arg {
        let what = spec.set_arg(s)?;
        writeln!(out, "set-arg: {what}")?;
        overrides.push(what);
    }

    let o = replay_into(&target, &spec, &base, &spec_file, &kernels, &overrides)?;
    print_outcome(&o, out)?;
    Ok(o)
}

/// Steps 1–4 from a dump: find the kernel args dump (running the case
/// first when no --dump-dir), select the dispatch, rebuild its spec.
fn from_dump(
    a: &InsightArgs,
    w: &dyn Workload,
    kernels: &[KernelDef],
    root: &Path,
    out: &mut dyn Write,
) -> Result<ReplaySpec> {
    let Some(func_id) = a.func_id else {
        bail!(
            "--func-id is required{}; kernels of {}: {}",
            if a.dump_dir.is_some() {
                " with --dump-dir"
            } else {
                " (the kernel to replay)"
            },
            w.name(),
            kernel_list(kernels)
        );
    };
    if !kernels.iter().any(|k| k.func_id == func_id) {
        bail!(
            "--func-id {func_id}: workload {} has no such kernel; valid func ids: {}",
            w.name(),
            kernel_list(kernels)
        );
    }
    if let Some(c) = &a.case {
        w.case(c)?;
    }
    let (dump_dir, ran_case) = match &a.dump_dir {
        Some(d) => (d.clone(), None),
        None => {
            let case = match &a.case {
                Some(c) => w.case(c)?.name,
                None => w.default_case(),
            };
            (run_case(a, w, case, root, out)?, Some(case.to_string()))
        }
    };
    let kargs = KernelArgsFile::open(&dump_dir)?;
    let folder = kargs
        .path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);

    // The case: as given, as the run made here, or as the dump says.
    // Optional (a kernel-args-only dump has none), but when present it must
    // be valid: a damaged file is reported, not silently ignored.
    let args_path = folder.join(ARGS_FILE);
    let recorded: Option<ArgsDump> = if args_path.is_file() {
        Some(ArgsFile::open(&args_path)?.doc)
    } else {
        None
    };
    if let Some(r) = &recorded {
        if r.workload != w.name() {
            bail!(
                "{}: the dump was written by workload {} (case {}), not {}",
                folder.join(ARGS_FILE).display(),
                r.workload,
                r.case,
                w.name()
            );
        }
        if let Some(c) = &a.case {
            if *c != r.case {
                bail!(
                    "--case {c}: the dump in {} was written by case {}",
                    folder.display(),
                    r.case
                );
            }
        }
    }
    let case = match (&a.case, ran_case, &recorded) {
        (Some(c), _, _) => c.clone(),
        (None, Some(c), _) => c,
        (None, None, Some(r)) => w.case(&r.case)?.name.to_string(),
        (None, None, None) => w.default_case().to_string(),
    };

    // Select first, so that only the selected task's records are kept in
    // memory (every record is still read and validated).
    let sel = select_dispatch(&kargs, func_id, a.dispatch_id, kernels)?;
    let task = kargs
        .dispatch(sel.dispatch_id)
        .map(|d| simpler_core::TaskId(d.task_id.0));
    let dump = if folder.join(TENSOR_DUMP_JSON).is_file() {
        Some(Dump::open_filtered(&folder, |r| Some(r.task_id) == task)?)
    } else {
        None
    };
    writeln!(
        out,
        "kernel args dump: {} ({} dispatches)",
        kargs.path.display(),
        kargs.doc.total_dispatches
    )?;
    match &dump {
        Some(d) => writeln!(
            out,
            "tensor dump: {} ({} records, dump level {})",
            d.manifest_path().display(),
            d.counts().total,
            d.header()
                .dump_level
                .map_or_else(|| "not recorded".into(), |l| l.to_string())
        )?,
        None => writeln!(
            out,
            "tensor dump: none in {} — inputs will be zero-filled and outputs cannot be verified",
            folder.display()
        )?,
    }
    if let Some(n) = &sel.note {
        writeln!(out, "{n}")?;
    }
    let spec = rebuild(
        &kargs,
        dump.as_ref(),
        sel.dispatch_id,
        &RebuildOptions {
            workload: w.name(),
            case: &case,
            arch: &a.chip.arch,
            clusters: a.chip.clusters,
            kernels,
        },
    )?;
    let d = &spec.dispatch;
    writeln!(
        out,
        "insight-trace {} {}: func {} {} [{}], dispatch {} (task {}, {} on core {}, block {}/{}){}",
        spec.workload,
        spec.case,
        spec.func_id,
        spec.kernel,
        spec.core_type,
        sel.dispatch_id,
        d.task_id.as_deref().unwrap_or("?"),
        d.subtask,
        d.core_id.map_or_else(|| "?".into(), |c| c.to_string()),
        d.block_idx,
        d.block_num,
        if spec.members.len() > 1 {
            format!(
                "; MIX: replaying the cluster {}",
                spec.members
                    .iter()
                    .map(|m| format!("{} func {} {}", m.dispatch.subtask, m.func_id, m.kernel))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    )?;
    Ok(spec)
}

/// Run the case with every dump into a fresh run directory under `root`.
fn run_case(
    a: &InsightArgs,
    w: &dyn Workload,
    case: &str,
    root: &Path,
    out: &mut dyn Write,
) -> Result<PathBuf> {
    let dump = DumpArgs {
        dump_tensor: None,
        dump_args: false,
        dump_kernel_args: false,
        dump_all: true,
        dump_policy: "block".into(),
        dump_layout: "native".into(),
        dump_arena_kib: 4096,
        output: None,
    };
    let mut cfg = a.chip.config()?;
    let dir = crate::dump_cfg::configure(&dump, &mut cfg, w.name(), case, root)?
        .context("--dump-all configures a dump")?;
    let run_dir = dir.path().to_path_buf();
    let rt = Runtime::new(cfg.clone(), w.kernels())?;
    let outcome = match w.run(case, a.seed, &rt) {
        Ok(o) => o,
        Err(e) => {
            crate::dump_cfg::report_failed(&rt, dir);
            return Err(e.into());
        }
    };
    drop(rt);
    dir.settle();
    writeln!(
        out,
        "ran {} {case} (seed {}) with --dump-all: {} tasks, {} dispatches on {} clusters ({}) -> {}; golden {}",
        w.name(),
        a.seed,
        outcome.report.tasks,
        outcome.report.dispatches,
        cfg.clusters,
        cfg.arch.name,
        run_dir.display(),
        if outcome.golden.passed { "PASS" } else { "FAIL" }
    )?;
    Ok(run_dir)
}

/// What the command prints after the replay.
fn print_outcome(o: &ReplayOutcome, out: &mut dyn Write) -> Result<()> {
    let zf = zero_filled(&o.plan);
    if zf.is_empty() {
        writeln!(out, "zero-filled slots: none")?;
    } else {
        writeln!(out, "zero-filled slots ({}):", zf.len())?;
        for z in &zf {
            writeln!(out, "  slot {:>2}: {}", z.arg_index, z.reason)?;
        }
    }
    writeln!(out, "workspace: {}", o.workspace.dir.display())?;
    writeln!(out, "spec:      {}", o.spec_path.display())?;
    write!(out, "{}", o.export.render_text())?;
    let expected: Vec<&DataSource> = o
        .plan
        .tensors
        .iter()
        .filter_map(|t| t.expected.as_ref())
        .collect();
    let from_dump = expected
        .iter()
        .all(|e| matches!(e, DataSource::Dump { .. }));
    match o.plan.selected().task_id {
        _ if expected.is_empty() => {
            writeln!(out, "verification (no expected bytes to compare against):")?
        }
        Some(task) if from_dump => writeln!(
            out,
            "verification against the dump's after_completion records of task {task}:"
        )?,
        _ => writeln!(out, "verification against the spec's expected bytes:")?,
    }
    write!(out, "{}", o.report.verification.render_text())?;
    writeln!(out, "report:    {}", o.report_path.display())?;
    Ok(())
}
