//! `simpler insight-trace`: replay one kernel dispatch alone on the pipe
//! simulator, export a MindStudio Insight / Perfetto trace and verify the
//! outputs against the dump (DESIGN §8); with `--all`, every dispatch. The
//! work is in `simpler_replay` (`source` finds and selects, `all` replays
//! them all); this module parses flags, prints and picks the exit code.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context, Result};
use clap::Args;
use simpler_core::{topology::Subtask, TaskId};
use simpler_replay::{
    all::{replay_all, AllOptions},
    rebuild::RebuildOptions,
    replay_into,
    source::{DumpSource, Selector},
    spec::{DataSource, Tolerance},
    workspace::zero_filled,
    ReplayOutcome, ReplaySpec, WorkspaceTarget,
};
use simpler_runtime::{KernelDef, Runtime};
use simpler_workloads::Workload;

use crate::cli::{ChipArgs, DumpArgs};
use crate::registry::Workloads;

/// `simpler insight-trace`.
#[derive(Debug, Clone, Args)]
pub(crate) struct InsightArgs {
    /// Workload name (see `simpler list`).
    pub workload: String,
    /// Case (default: the dump's case when it records one, the spec's with
    /// --arg-spec, else the workload's first case).
    #[arg(long)]
    pub case: Option<String>,
    /// Func id of the kernel to replay (required unless --arg-spec, --all
    /// or --task-id).
    #[arg(long, value_name = "ID")]
    pub func_id: Option<u32>,
    /// The run to replay from: a run directory, its tensor_dump/ or
    /// args_dump/ folder (either layout, also the upstream runtime's own
    /// dumps). Without it the case is first run here with --dump-all.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Dispatch to replay (default: the first of --func-id); without a
    /// kernel args dump, the N-th task of --func-id (from 0).
    #[arg(long, value_name = "N")]
    pub dispatch_id: Option<u64>,
    /// Task to replay (0x… or decimal), with --block-idx.
    #[arg(long, value_name = "ID", value_parser = parse_task_id, conflicts_with = "dispatch_id")]
    pub task_id: Option<TaskId>,
    /// Block of the task (with --task-id; without a kernel args dump, the
    /// block index the replay runs as).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub block_idx: u32,
    /// Without a kernel args dump: the task's block count (the per-task
    /// records do not say; default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub block_num: Option<u32>,
    /// The cluster member to run a single-kernel AIV task as (aiv0, aiv1),
    /// or to pick with --task-id.
    #[arg(long, value_name = "MEMBER", value_parser = parse_subtask)]
    pub subtask: Option<Subtask>,
    /// Replay every dispatch of the dump (of --func-id, when given) in
    /// parallel, verify each and print one summary line per func.
    #[arg(long, conflicts_with_all = ["arg_spec", "dispatch_id", "task_id", "set_arg", "output"])]
    pub all: bool,
    /// Relative tolerance for a dump of the upstream runtime (its kernels
    /// are other code; ours are checked bit for bit).
    #[arg(long, default_value_t = simpler_inspect::diff::DEFAULT_RTOL, allow_hyphen_values = true)]
    pub rtol: f64,
    /// Absolute tolerance for a dump of the upstream runtime.
    #[arg(long, default_value_t = simpler_inspect::diff::DEFAULT_ATOL, allow_hyphen_values = true)]
    pub atol: f64,
    /// Replay from a spec file (a replay_spec.json, or hand-written)
    /// instead of a dump.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dump_dir", "dispatch_id", "task_id"])]
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

impl InsightArgs {
    /// The arguments of replaying the first dispatch of `func_id` from the
    /// run at `dump_dir` into workspace `output` (the `bench replay` run).
    pub(crate) fn one_dispatch(
        workload: &str,
        case: &str,
        func_id: u32,
        dump_dir: &Path,
        output: &Path,
        chip: &ChipArgs,
    ) -> InsightArgs {
        InsightArgs {
            workload: workload.into(),
            case: Some(case.into()),
            func_id: Some(func_id),
            dump_dir: Some(dump_dir.to_path_buf()),
            dispatch_id: None,
            task_id: None,
            block_idx: 0,
            block_num: None,
            subtask: None,
            all: false,
            rtol: simpler_inspect::diff::DEFAULT_RTOL,
            atol: simpler_inspect::diff::DEFAULT_ATOL,
            arg_spec: None,
            set_arg: Vec::new(),
            output: Some(output.to_path_buf()),
            seed: 0,
            chip: chip.clone(),
        }
    }
}

fn parse_task_id(s: &str) -> Result<TaskId, String> {
    TaskId::parse(s.trim())
        .ok_or_else(|| "expected a task id: 0x followed by hex digits, or a decimal number".into())
}

fn parse_subtask(s: &str) -> Result<Subtask, String> {
    Subtask::from_name(s.trim()).ok_or_else(|| "expected aic, aiv0 or aiv1".into())
}

/// Run the command; exit 0 when every output verified (bit-exact, or
/// within the tolerance for a dump of the upstream runtime), 1 on a
/// mismatch or when an output could not be verified.
pub(crate) fn insight_trace(a: &InsightArgs, ws: &Workloads) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let passed = if a.all {
        run_all(a, ws, &mut out)
    } else {
        run(a, ws, &mut out).map(|o| o.report.overall_pass)
    };
    let passed = match passed.and_then(|p| {
        out.flush()?;
        Ok(p)
    }) {
        Ok(p) => p,
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
    Ok(if passed {
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

/// Where the workspace goes: `--output` (a new directory), or a fresh
/// folder under `outputs/`. A case run here always writes its run
/// directory under `outputs/`, as `simpler run` does, whatever `--output`
/// says (that names the replay workspace only).
fn target(a: &InsightArgs) -> Result<(WorkspaceTarget, PathBuf)> {
    let root = PathBuf::from("outputs");
    match &a.output {
        Some(dir) if dir.is_dir() => bail!(
            "--output {}: the directory already exists and is never overwritten; choose a new one",
            dir.display()
        ),
        Some(dir) if dir.exists() => bail!(
            "--output {}: a file of that name exists; expected the path of a new directory",
            dir.display()
        ),
        Some(dir) => Ok((WorkspaceTarget::At(dir.clone()), root)),
        None => Ok((WorkspaceTarget::Fresh(root.clone()), root)),
    }
}

/// Everything the command does for one dispatch, printing to `out`.
///
/// # Errors
/// Unknown workload/case/func id/dispatch, unreadable dumps or spec, a
/// failing kernel, unwritable workspace.
pub(crate) fn run(a: &InsightArgs, ws: &Workloads, out: &mut dyn Write) -> Result<ReplayOutcome> {
    let w = ws.find(&a.workload)?;
    let kernels = w.kernels();
    // Refuse bad --arch/--clusters/… before reading anything.
    a.chip.config()?;
    let (target, root) = target(a)?;
    let (mut spec, base, spec_file) = match &a.arg_spec {
        Some(path) => {
            let spec = from_spec(a, w, path, out)?;
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (spec, base, path.display().to_string())
        }
        None => {
            let spec = from_dump(a, w, &kernels, &root, out)?;
            let label = spec.rebuilt_label();
            (spec, PathBuf::from("."), label)
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

/// A spec file, checked against the workload and the flags.
fn from_spec(
    a: &InsightArgs,
    w: &dyn Workload,
    path: &Path,
    out: &mut dyn Write,
) -> Result<ReplaySpec> {
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
    if let Some(c) = a.case.as_ref().filter(|c| **c != spec.case) {
        bail!(
            "--case {c}: the spec {} is for case {}",
            path.display(),
            spec.case
        );
    }
    if let Some(f) = a.func_id.filter(|f| *f != spec.func_id) {
        bail!(
            "--func-id {f}: the spec {} replays func_id {} ({})",
            path.display(),
            spec.func_id,
            spec.kernel
        );
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
    Ok(spec)
}

/// The dumps to replay from: `--dump-dir`, or a run of the case made here
/// with `--dump-all`; and the case.
fn open_source(
    a: &InsightArgs,
    w: &dyn Workload,
    root: &Path,
    out: &mut dyn Write,
) -> Result<(DumpSource, String)> {
    if let Some(c) = &a.case {
        w.case(c)?;
    }
    let (dir, ran) = match &a.dump_dir {
        Some(d) => (d.clone(), None),
        None => {
            let case = match &a.case {
                Some(c) => w.case(c)?.name,
                None => w.default_case(),
            };
            (run_case(a, w, case, root, out)?, Some(case.to_string()))
        }
    };
    let src = DumpSource::open(&dir).with_context(|| format!("--dump-dir {}", dir.display()))?;
    let recorded = src.check_run(w.name(), a.case.as_deref())?;
    let case = match (&a.case, ran, recorded) {
        (Some(c), _, _) => c.clone(),
        (None, Some(c), _) => c,
        (None, None, Some(r)) => w.case(&r)?.name.to_string(),
        (None, None, None) => w.default_case().to_string(),
    };
    for line in src.describe() {
        writeln!(out, "{line}")?;
    }
    Ok((src, case))
}

fn selector(a: &InsightArgs) -> Selector {
    Selector {
        func_id: a.func_id,
        dispatch_id: a.dispatch_id,
        task_id: a.task_id,
        block_idx: a.block_idx,
        block_num: a.block_num,
        subtask: a.subtask,
    }
}

/// Steps 1–4 from a dump: find the dumps (running the case first when no
/// --dump-dir), select the dispatch, rebuild its spec.
fn from_dump(
    a: &InsightArgs,
    w: &dyn Workload,
    kernels: &[KernelDef],
    root: &Path,
    out: &mut dyn Write,
) -> Result<ReplaySpec> {
    match a.func_id {
        None if a.task_id.is_none() => bail!(
            "--func-id is required{}; kernels of {}: {}",
            if a.dump_dir.is_some() {
                " with --dump-dir (or --task-id, or --all)"
            } else {
                " (the kernel to replay)"
            },
            w.name(),
            kernel_list(kernels)
        ),
        Some(f) if !kernels.iter().any(|k| k.func_id == f) => bail!(
            "--func-id {f}: workload {} has no such kernel; valid func ids: {}",
            w.name(),
            kernel_list(kernels)
        ),
        _ => {}
    }
    let tol = tolerance(a)?;
    let (src, case) = open_source(a, w, root, out)?;
    let opts = rebuild_options(a, w, &case, kernels);
    let sel = src.select(&selector(a), &opts, tol)?;
    for line in &sel.lines {
        writeln!(out, "{line}")?;
    }
    let spec = sel.spec;
    let d = &spec.dispatch;
    writeln!(
        out,
        "insight-trace {} {}: func {} {} [{}], {} (task {}, {} on {}, block {}/{}){}",
        spec.workload,
        spec.case,
        spec.func_id,
        spec.kernel,
        spec.core_type,
        d.dispatch_id.map_or_else(
            || "rebuilt from per-task records".into(),
            |i| format!("dispatch {i}")
        ),
        d.task_id.as_deref().unwrap_or("?"),
        d.subtask,
        d.core_id
            .map_or_else(|| "cluster 0".into(), |c| format!("core {c}")),
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

fn rebuild_options<'a>(
    a: &'a InsightArgs,
    w: &'a dyn Workload,
    case: &'a str,
    kernels: &'a [KernelDef],
) -> RebuildOptions<'a> {
    RebuildOptions {
        workload: w.name(),
        case,
        arch: &a.chip.arch,
        clusters: a.chip.clusters,
        kernels,
    }
}

fn tolerance(a: &InsightArgs) -> Result<Tolerance> {
    Tolerance {
        rtol: a.rtol,
        atol: a.atol,
    }
    .checked()
    .map_err(|m| anyhow::anyhow!("--{m}"))
}

/// `--all`: every dispatch replayed and verified; true when all passed.
fn run_all(a: &InsightArgs, ws: &Workloads, out: &mut dyn Write) -> Result<bool> {
    let w = ws.find(&a.workload)?;
    let kernels = w.kernels();
    a.chip.config()?;
    if let Some(f) = a
        .func_id
        .filter(|f| !kernels.iter().any(|k| k.func_id == *f))
    {
        bail!(
            "--func-id {f}: workload {} has no such kernel; valid func ids: {}",
            w.name(),
            kernel_list(&kernels)
        );
    }
    let tolerance = tolerance(a)?;
    let (src, case) = open_source(a, w, Path::new("outputs"), out)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let opts = AllOptions {
        rebuild: rebuild_options(a, w, &case, &kernels),
        func_id: a.func_id,
        selector: selector(a),
        tolerance,
        threads,
    };
    let progress =
        crate::progress::Progress::bar("insight-trace --all: replaying", 0, "dispatches");
    let report = replay_all(&src, &opts, &mut |done, total| {
        progress.set(done as u64, Some(total as u64))
    })?;
    progress.finish();
    writeln!(
        out,
        "insight-trace --all {} {case}: {} dispatches from {}",
        w.name(),
        report.results.len(),
        report.source
    )?;
    write!(out, "{}", report.render_text())?;
    Ok(report.passed())
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
    let outcome = match crate::run::run_with_progress(w, case, a.seed, &rt) {
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
    for n in o
        .report
        .notes
        .iter()
        .filter(|n| n.contains("rebuilt from") || n.contains("derived"))
    {
        writeln!(out, "note: {n}")?;
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
