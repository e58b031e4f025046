//! `simpler dump diff A B`: compare two tensor dumps record by record
//! (DESIGN §7). Pairing, metrics and the pass rule live in
//! `simpler_inspect::diff`; this module is the command's grammar and output.
//! Both dumps are streamed and merged: memory holds the rows shown (or,
//! with `--json`, nothing: pairs are spilled to a temporary file).
//!
//! Exit codes: 0 when every pair passes and every record has a partner, 1
//! otherwise, and an error (exit 2 from `main`) when a dump cannot be read or
//! an option is unusable.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use simpler_inspect::diff::{
    diff_paths_with, DiffOptions, Keep, MatchMode, DEFAULT_ATOL, DEFAULT_RTOL,
};

use crate::progress::Progress;

/// `simpler dump diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// Dump A: a run directory, its tensor_dump/ folder, or a tensor_dump.json.
    pub a: PathBuf,
    /// Dump B (the reference for relative errors): same forms as A.
    pub b: PathBuf,
    /// How records are paired: `key` = (task_id, stage, arg_index, role);
    /// `order` = the k-th task id of A (sorted) with the k-th of B, then
    /// (stage, arg_index, role), for runs whose task ids differ.
    #[arg(long = "match", value_name = "MODE", default_value = "key", value_parser = parse_match)]
    pub match_mode: MatchMode,
    /// Relative tolerance: an element passes when |a-b| <= atol + rtol*|b|.
    #[arg(long, default_value_t = DEFAULT_RTOL, value_name = "RTOL", allow_hyphen_values = true)]
    pub rtol: f64,
    /// Absolute tolerance (also the floor of the relative error's denominator).
    #[arg(long, default_value_t = DEFAULT_ATOL, value_name = "ATOL", allow_hyphen_values = true)]
    pub atol: f64,
    /// List passing pairs too (after the failing ones).
    #[arg(long)]
    pub all: bool,
    /// Print one JSON object (summary and every pair) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Rows per table: a number (0 lists none: the summary only) or
    /// `all`.
    #[arg(long, default_value = "50", value_name = "N|all", value_parser = crate::dump_view::parse_limit)]
    pub limit: usize,
}

/// The workload and case the run at `path` recorded (in its
/// orchestration args dump), when it did.
fn recorded(path: &std::path::Path) -> Option<(String, String)> {
    let args = simpler_inspect::locate::run_files(path).ok()?.orch_args?;
    let f = simpler_inspect::args::ArgsFile::open(args).ok()?;
    Some((f.doc.workload, f.doc.case))
}

/// A warning when A and B record different workloads or cases: their
/// pairs then compare unrelated tensors.
fn recorded_runs_differ(a: &std::path::Path, b: &std::path::Path) -> Option<String> {
    let (ra, rb) = (recorded(a)?, recorded(b)?);
    (ra != rb).then(|| {
        format!(
            "A is a run of {} {}, B of {} {}: its pairs compare different workloads' tensors",
            ra.0, ra.1, rb.0, rb.1
        )
    })
}

fn parse_match(s: &str) -> Result<MatchMode, String> {
    MatchMode::from_name(s).ok_or_else(|| format!("{s:?}: expected key or order"))
}

/// Run `simpler dump diff`, printing to stdout.
pub fn diff(args: &DiffArgs) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = diff_with(args, &mut out)?;
    out.flush()?;
    Ok(code)
}

/// [`diff`] with an explicit output.
pub fn diff_with(args: &DiffArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let options = DiffOptions {
        match_mode: args.match_mode,
        rtol: args.rtol,
        atol: args.atol,
    };
    options.validate()?;
    let keep = if args.json {
        Keep::Spill
    } else {
        Keep::Limit {
            rows: args.limit,
            passing: args.all,
        }
    };
    // Nothing is printed before the end: a bar on a terminal.
    let progress = Progress::bar("dump diff: reading", 0, "records");
    let mut report = diff_paths_with(&args.a, &args.b, &options, keep, &mut progress.callback())?;
    progress.finish();
    if let Some(note) = recorded_runs_differ(&args.a, &args.b) {
        report.notes.insert(0, note);
    }
    if args.json {
        report.write_json(out)?;
    } else {
        write!(out, "{}", report.render_text(args.all, args.limit))?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
