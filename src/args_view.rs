//! `simpler dump view …/args_dump.json` (or the upstream layout's
//! `orch_args_dump.json`): the orchestration's own arguments as a table.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use simpler_format::files::{ARGS_FILE, UPSTREAM_ORCH_ARGS_FILE};
use simpler_format::vocab::Kind;
use simpler_inspect::args::ArgsFile;

/// Largest `args_dump.json` tried as an orchestration args dump: the
/// upstream layout's per-task records share the name and can be huge.
const MAX_ORCH_ARGS_BYTES: u64 = 16 << 20;

/// The orchestration args dump at `path`, when `path` names one: a file
/// called `orch_args_dump.json`, or an `args_dump.json` that reads as one
/// (not the upstream layout's per-task records of the same name).
pub(crate) fn open(path: &Path) -> Result<Option<ArgsFile>> {
    let name = path.file_name().and_then(|n| n.to_str());
    if name == Some(UPSTREAM_ORCH_ARGS_FILE) {
        return Ok(Some(ArgsFile::open(path)?));
    }
    let small =
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_ORCH_ARGS_BYTES);
    if name == Some(ARGS_FILE) && small {
        return Ok(ArgsFile::open_if_ours(path)?);
    }
    Ok(None)
}

/// Print the arguments, one row each.
pub(crate) fn view(f: &ArgsFile, out: &mut dyn Write) -> Result<ExitCode> {
    let d = &f.doc;
    writeln!(
        out,
        "orchestration args dump {}  [schema_version {}]\n{} {}: {} args{}\n",
        f.path.display(),
        d.schema_version,
        d.workload,
        d.case,
        d.total_args,
        match d.dropped_args {
            0 => String::new(),
            n => format!(" ({n} lost: drop policy)"),
        }
    )?;
    writeln!(
        out,
        "{:>3}  {:<6}  {:<6}  {:<8}  {:<14}  {:<12}  {:>6}  {:>10}  addr / value",
        "arg", "kind", "role", "dtype", "shape", "strides", "start", "bytes"
    )?;
    for a in &d.args {
        let list = |v: &Option<Vec<u64>>| v.as_ref().map_or_else(String::new, |v| format!("{v:?}"));
        let num = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
        let last = match a.kind {
            Kind::Scalar => match (&a.value, &a.bits) {
                (Some(v), Some(b)) => format!("{v} (bits {b})"),
                (Some(v), None) => v.to_string(),
                (None, Some(b)) => format!("bits {b}"),
                (None, None) => "-".into(),
            },
            Kind::Tensor => a.addr.as_ref().map_or_else(String::new, |x| x.to_string()),
        };
        writeln!(
            out,
            "{:>3}  {:<6}  {:<6}  {:<8}  {:<14}  {:<12}  {:>6}  {:>10}  {last}",
            a.arg_index,
            a.kind.to_string(),
            a.role.map_or("", |r| r.name()),
            a.dtype.to_string(),
            list(&a.shape),
            list(&a.strides),
            num(a.start_offset),
            num(a.nbytes),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
