//! `simpler dump view [DIR]`: list, filter and export the records of a
//! tensor dump (DESIGN §7). The work lives in `simpler_dump::{reader, view,
//! export_txt, export_npy}`; this module is the command's grammar and output.
//!
//! Exit codes: 0 when records were listed (or the dump is empty), 1 when the
//! filters match no record, and an error (exit 2 from `main`) when the dump
//! cannot be found or read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use simpler_core::{ArgRole, TaskId};
use simpler_dump::reader::{Dump, RecordKind, Stage};
use simpler_dump::view::{
    export_records, find_newest_dump, parse_export_format, parse_kind, parse_role_arg, parse_stage,
    parse_task, summary, table, ExportFormat, ExportOutcome, Filter, TxtOptions,
};

/// `simpler dump view`.
#[derive(Debug, Clone, Default, Args)]
pub struct ViewArgs {
    /// Run directory, its tensor_dump/ folder, or a tensor_dump.json
    /// [default: the newest outputs/*/tensor_dump under the current directory].
    pub dir: Option<PathBuf>,
    /// Only this task (0x-prefixed hex such as 0x0000000200000003, or decimal).
    #[arg(long, value_parser = parse_task)]
    pub task: Option<TaskId>,
    /// Only tasks whose members include this func id.
    #[arg(long)]
    pub func: Option<u32>,
    /// Only this stage: before_dispatch (before) or after_completion (after).
    #[arg(long, value_parser = parse_stage)]
    pub stage: Option<Stage>,
    /// Only this role: input, output, inout, output_existing, no_dep.
    #[arg(long, value_parser = parse_role_arg)]
    pub role: Option<ArgRole>,
    /// Only tensors or only scalars.
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<RecordKind>,
    /// Only this argument slot.
    #[arg(long)]
    pub arg: Option<u32>,
    /// Also write one file per selected record: txt or npy.
    #[arg(long, value_parser = parse_export_format)]
    pub export: Option<ExportFormat>,
    /// Where to write exported files [default: <dump dir>/export/].
    #[arg(long, requires = "export")]
    pub out: Option<PathBuf>,
    /// Text export: write every value (no elision of large tensors).
    #[arg(long)]
    pub full: bool,
    /// List at most this many records (all are still exported).
    #[arg(long)]
    pub limit: Option<usize>,
    /// List the dispatches of `kernel_args_dump.json` instead of tensor
    /// records (filters: --func, --task, --core).
    #[arg(long)]
    pub dispatches: bool,
    /// Print one dispatch's slot table (implies --dispatches).
    #[arg(long, value_name = "DISPATCH_ID")]
    pub dispatch: Option<u64>,
    /// With --dispatches: only this core id.
    #[arg(long)]
    pub core: Option<u32>,
}

impl ViewArgs {
    /// The record filter these flags describe.
    pub fn filter(&self) -> Filter {
        Filter {
            task: self.task,
            func: self.func,
            stage: self.stage,
            role: self.role,
            kind: self.kind,
            arg: self.arg,
        }
    }
}

/// Run `simpler dump view`, printing to stdout; the default dump is searched
/// under the current directory.
pub fn view(args: &ViewArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    view_with(args, &cwd, &mut out)
}

/// [`view`] with an explicit base directory (for the default dump) and output.
pub fn view_with(args: &ViewArgs, base: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    if args.dispatches || args.dispatch.is_some() {
        return crate::dispatch_view::view(args, base, out);
    }
    if args.core.is_some() {
        anyhow::bail!("--core filters dispatches: use it with --dispatches");
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            let d = find_newest_dump(base)?;
            writeln!(out, "(newest dump under {}/outputs)", base.display())?;
            d
        }
    };
    let dump = Dump::open(&dir)?;
    write!(out, "{}", summary(&dump))?;

    let filter = args.filter();
    let selected = filter.select(&dump);
    let total = dump.records().len();
    if total == 0 {
        writeln!(out, "the dump has no records")?;
        return Ok(ExitCode::SUCCESS);
    }
    if selected.is_empty() {
        writeln!(
            out,
            "no records match {} ({total} records in the dump)",
            filter.describe()
        )?;
        for hint in filter.explain_no_match(&dump) {
            writeln!(out, "  {hint}")?;
        }
        return Ok(ExitCode::from(1));
    }
    if !filter.is_empty() {
        writeln!(
            out,
            "{} of {total} records match {}",
            selected.len(),
            filter.describe()
        )?;
    }
    writeln!(out)?;
    let shown = args.limit.unwrap_or(usize::MAX).min(selected.len());
    write!(out, "{}", table(&dump, &selected[..shown]))?;
    if shown < selected.len() {
        writeln!(
            out,
            "... {} more records not listed (--limit {shown})",
            selected.len() - shown
        )?;
    }

    if let Some(format) = args.export {
        let out_dir = args
            .out
            .clone()
            .unwrap_or_else(|| dump.dir().join("export"));
        let results = export_records(
            &dump,
            &selected,
            format,
            &out_dir,
            TxtOptions { full: args.full },
        )
        .with_context(|| format!("exporting to {}", out_dir.display()))?;
        writeln!(out)?;
        let mut written = 0usize;
        for (index, outcome) in &results {
            match outcome {
                ExportOutcome::Written { path, note } => {
                    written += 1;
                    let name = path.file_name().map_or_else(
                        || path.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    match note {
                        Some(n) => writeln!(out, "wrote {name}  (record {index}; note: {n})")?,
                        None => writeln!(out, "wrote {name}  (record {index})")?,
                    }
                }
                ExportOutcome::Skipped { reason } => {
                    writeln!(out, "skipped record {index}: {reason}")?;
                }
            }
        }
        writeln!(
            out,
            "exported {written} of {} records as {} to {}",
            results.len(),
            format.ext(),
            out_dir.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
