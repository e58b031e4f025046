//! `simpler dump view [DIR]`: list, filter and export the records of a
//! tensor dump (DESIGN §7). The work lives in `simpler_inspect`; this
//! module is the command's grammar and output.
//!
//! The listing streams: the summary (from the header) and the first page
//! of the table are printed before the manifest is read to its end, and
//! memory holds one page. The records are checked against the header when
//! the stream ends (an error then still exits 2).
//!
//! Exit codes: 0 when records were listed (or the dump is empty), 1 when the
//! filters match no record, and an error (exit 2 from `main`) when the dump
//! cannot be found or read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use simpler_core::{ArgRole, TaskId};
use simpler_format::files::KERNEL_ARGS_FILE;
use simpler_inspect::export::{
    parse_export_format, ExportFormat, ExportOutcome, Exporter, TxtOptions,
};
use simpler_inspect::locate::{find_newest_dump, resolve_manifest};
use simpler_inspect::stream::{DumpInfo, RecordStream};
use simpler_inspect::view::table::row;
use simpler_inspect::view::{
    footer, parse_kind, parse_role_arg, parse_stage, parse_task, summary, Filter, Seen, Table,
};
use simpler_inspect::{RecordKind, Stage};

use crate::progress::Progress;

/// `simpler dump view`.
#[derive(Debug, Clone, Default, Args)]
pub struct ViewArgs {
    /// Run directory, its tensor_dump/ (or upstream args_dump/) folder, or
    /// the manifest [default: the newest outputs/*/tensor_dump or
    /// outputs/*/args_dump under the current directory].
    pub dir: Option<PathBuf>,
    /// Only this task (0x-prefixed hex such as 0x0000000200000003, or decimal).
    #[arg(long, value_parser = parse_task)]
    pub task: Option<TaskId>,
    /// Only tasks whose members include this func id.
    #[arg(long)]
    pub func: Option<u32>,
    /// Only this stage: before_dispatch (before), after_completion (after)
    /// or hang_snapshot (hang).
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
    /// Where --export writes its files [default: beside the dump folder,
    /// <dump folder>_export/, e.g. run_a/tensor_dump_export/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --export txt: write every value (no elision of large tensors).
    #[arg(long)]
    pub full: bool,
    /// List at most this many records, or `all` [default: all]; 0 lists
    /// none (the summary only). All are still exported.
    #[arg(long, value_name = "N|all", value_parser = parse_limit)]
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
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = view_with(args, &cwd, &mut out)?;
    out.flush()?;
    Ok(code)
}

/// [`view`] with an explicit base directory (for the default dump) and output.
pub fn view_with(args: &ViewArgs, base: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    check_flags(args)?;
    let named = args.dir.as_deref();
    let kernel_args = named.is_some_and(|d| d.file_name().is_some_and(|n| n == KERNEL_ARGS_FILE));
    if args.dispatches || args.dispatch.is_some() || kernel_args {
        return crate::dispatch_view::view(args, base, out);
    }
    if args.core.is_some() {
        bail!("--core filters dispatches: use it with --dispatches");
    }
    if let Some(f) = named.map(crate::args_view::open).transpose()?.flatten() {
        if !args.filter().is_empty() || args.export.is_some() {
            bail!(
                "{}: an orchestration args dump is one short table; the record filters and --export apply to tensor dumps",
                f.path.display()
            );
        }
        return crate::args_view::view(&f, out);
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            let d = find_newest_dump(base)?;
            writeln!(out, "(newest dump under {}/outputs)", base.display())?;
            d
        }
    };
    let manifest = resolve_manifest(&dir)?;
    let mut stream = RecordStream::open_manifest(&manifest)?;
    let info = stream.info().clone();
    // Where exports go is checked before anything is listed: a failing
    // --export fails at once, not after the whole listing.
    let exporter = match args.export {
        Some(format) => {
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| default_export_dir(&info.dir));
            Some(Exporter::new(&dir, format, TxtOptions { full: args.full })?)
        }
        None => None,
    };
    write!(out, "{}", summary(&info))?;
    out.flush()?;
    let filter = args.filter();
    let (seen, selected) = list(&mut stream, &info, &filter, args.limit, out)?;
    let counts = stream.counts().copied().unwrap_or_default();
    if counts.total == 0 {
        writeln!(out, "the dump has no records")?;
        return Ok(ExitCode::SUCCESS);
    }
    if selected == 0 {
        writeln!(
            out,
            "no records match {} ({} records in the dump)",
            filter.describe(),
            counts.total
        )?;
        for hint in seen.explain_no_match(&filter) {
            writeln!(out, "  {hint}")?;
        }
        return Ok(ExitCode::from(1));
    }
    if !filter.is_empty() {
        writeln!(
            out,
            "{selected} of {} records match {}",
            counts.total,
            filter.describe()
        )?;
    }
    write!(out, "{}", footer(&counts))?;
    if let Some(exporter) = exporter {
        drop(stream);
        export(exporter, &manifest, &info, &filter, out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--limit`: a whole number, or `all`.
pub(crate) fn parse_limit(s: &str) -> Result<usize, String> {
    match s.trim() {
        "all" => Ok(usize::MAX),
        n => n
            .parse()
            .map_err(|_| "expected a whole number of rows (0 lists none) or all".to_string()),
    }
}

/// Refuse flags that would be silently ignored.
fn check_flags(a: &ViewArgs) -> Result<()> {
    if let (Some(o), None) = (&a.out, a.export) {
        bail!(
            "--out {}: names where --export writes; add --export txt or --export npy",
            o.display()
        );
    }
    if a.full && a.export != Some(ExportFormat::Txt) {
        bail!("--full applies to --export txt (every value instead of an elided view)");
    }
    Ok(())
}

/// Print the table a page at a time; returns what was seen and how many
/// records matched.
fn list(
    stream: &mut RecordStream,
    info: &DumpInfo,
    filter: &Filter,
    limit: Option<usize>,
    out: &mut dyn Write,
) -> Result<(Seen, usize)> {
    let limit = limit.unwrap_or(usize::MAX);
    let total = info.header.total_tensors;
    let progress = Progress::bar("dump view: reading", total, "records");
    let mut table = Table::default();
    let mut seen = Seen::default();
    let (mut selected, mut shown) = (0usize, 0usize);
    for r in stream.by_ref() {
        let r = r?;
        seen.add(filter, &r);
        progress.set(seen.records, None);
        if !filter.matches(&r) {
            continue;
        }
        selected += 1;
        if shown >= limit {
            continue;
        }
        if shown == 0 {
            writeln!(out)?;
        }
        shown += 1;
        if let Some(page) = table.push(row(&info.payload, &r)?) {
            progress.suspend(|| {
                out.write_all(page.as_bytes())?;
                out.flush()
            })?;
        }
    }
    progress.finish();
    if shown > 0 {
        out.write_all(table.page().as_bytes())?;
    }
    if shown < selected {
        writeln!(
            out,
            "... {} more records not listed (--limit {shown})",
            selected - shown
        )?;
    }
    Ok((seen, selected))
}

/// Default `--out`: `<dump folder>_export/` beside the dump folder, never
/// inside it (the upstream tools' validator refuses extra files there).
fn default_export_dir(dump_dir: &Path) -> PathBuf {
    let name = dump_dir
        .file_name()
        .map_or_else(|| "dump".into(), |n| n.to_string_lossy().into_owned());
    dump_dir.with_file_name(format!("{name}_export"))
}

/// A second pass: one file per selected record, reported as written.
fn export(
    mut exporter: Exporter,
    manifest: &Path,
    info: &DumpInfo,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<()> {
    let (out_dir, format) = (exporter.out_dir().to_path_buf(), exporter.format());
    writeln!(out)?;
    let (mut written, mut total) = (0usize, 0usize);
    let progress = Progress::bar("dump view: exporting", info.header.total_tensors, "records");
    for r in RecordStream::open_manifest(manifest)? {
        let r = r?;
        progress.set(r.index as u64 + 1, None);
        if !filter.matches(&r) {
            continue;
        }
        total += 1;
        let outcome = exporter.export(info, &r)?;
        match outcome {
            ExportOutcome::Written { path, note } => {
                written += 1;
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                match note {
                    Some(n) => writeln!(out, "wrote {name}  (record {}; note: {n})", r.index)?,
                    None => writeln!(out, "wrote {name}  (record {})", r.index)?,
                }
            }
            ExportOutcome::Skipped { reason } => {
                writeln!(out, "skipped record {}: {reason}", r.index)?
            }
        }
    }
    progress.finish();
    writeln!(
        out,
        "exported {written} of {total} records as {} to {}",
        format.ext(),
        out_dir.display()
    )?;
    Ok(())
}
