//! `simpler dump view --dispatches`: list the dispatches of a kernel args
//! dump, and `--dispatch N`: one dispatch's slot table.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Result};
use simpler_format::files::KERNEL_ARGS_FILE;
use simpler_format::kernel_args::{ContextKind, Dispatch as DispatchJson};
use simpler_format::scalar::ScalarValue;
use simpler_format::vocab::Kind;
use simpler_inspect::kernel_args::KernelArgsFile;

use crate::dump_view::ViewArgs;

/// Newest `outputs/*/tensor_dump/kernel_args_dump.json` (ours) or
/// `outputs/*/kernel_args_dump.json` (beside an upstream-layout
/// `args_dump/`) under `base`.
fn newest(base: &Path) -> Result<PathBuf> {
    let root = base.join("outputs");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            for p in [
                e.path().join("tensor_dump").join(KERNEL_ARGS_FILE),
                e.path().join(KERNEL_ARGS_FILE),
            ] {
                if let Ok(m) = std::fs::metadata(&p).and_then(|m| m.modified()) {
                    if best.as_ref().is_none_or(|(t, _)| m > *t) {
                        best = Some((m, p));
                    }
                }
            }
        }
    }
    match best {
        Some((_, p)) => Ok(p),
        None => bail!(
            "no {KERNEL_ARGS_FILE} under {}/*/tensor_dump or {0}/*; run with --dump-kernel-args or --dump-all, or name a directory",
            root.display()
        ),
    }
}

/// The kernel args dump of the run at `dir` (either layout).
fn of_run(dir: &Path) -> Result<PathBuf> {
    match simpler_inspect::locate::run_files(dir)?.kernel_args {
        Some(p) => Ok(p),
        // The reader's own message lists where it looked.
        None => Ok(simpler_inspect::kernel_args::resolve(dir)?),
    }
}

fn value_text(v: Option<ScalarValue>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn matches(a: &ViewArgs, d: &DispatchJson) -> bool {
    a.func.is_none_or(|f| d.func_id == f)
        && a.core.is_none_or(|c| d.core_id == c)
        && a.task.is_none_or(|t| d.task_id.0 == t.0)
        && a.dispatch.is_none_or(|id| d.dispatch_id == id)
}

/// List dispatches (or print one), reading the kernel args dump in `a.dir`
/// or the newest one under `base`.
pub fn view(a: &ViewArgs, base: &Path, out: &mut dyn Write) -> Result<ExitCode> {
    let path = match &a.dir {
        Some(d) => of_run(d)?,
        None => newest(base)?,
    };
    let f = KernelArgsFile::open(&path)?;
    writeln!(
        out,
        "kernel args dump {}  [schema_version {}]\n{} dispatches, {} args",
        f.path.display(),
        f.doc.schema_version,
        f.doc.total_dispatches,
        f.doc.total_args
    )?;
    let sel: Vec<&DispatchJson> = f.doc.dispatches.iter().filter(|d| matches(a, d)).collect();
    if sel.is_empty() {
        let pairs: Vec<String> = f
            .available()
            .iter()
            .take(40)
            .map(|(func, id)| format!("({func}, {id})"))
            .collect();
        writeln!(
            out,
            "no dispatch matches; available (func_id, dispatch_id): {}{}",
            pairs.join(" "),
            if f.doc.dispatches.len() > 40 {
                " …"
            } else {
                ""
            }
        )?;
        return Ok(ExitCode::from(1));
    }
    if a.dispatch.is_some() {
        for d in sel {
            slot_table(d, out)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "\n{:>8}  {:<18}  {:>4}  {:<7} {:>4}  {:>9}  {:>7}  {:>7}",
        "dispatch", "task_id", "func", "subtask", "core", "block", "tensors", "scalars"
    )?;
    let shown = a.limit.unwrap_or(usize::MAX).min(sel.len());
    for d in &sel[..shown] {
        let nt = d.args.iter().filter(|x| x.kind == Kind::Tensor).count();
        writeln!(
            out,
            "{:>8}  {:<18}  {:>4}  {:<7} {:>4}  {:>9}  {:>7}  {:>7}",
            d.dispatch_id,
            d.task_id,
            d.func_id,
            d.subtask,
            d.core_id,
            format!("{}/{}", d.block_idx, d.block_num),
            nt,
            d.args.len() - nt
        )?;
    }
    if shown < sel.len() {
        writeln!(out, "... {} more (--limit {shown})", sel.len() - shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One dispatch: identity, then every slot as the kernel saw it.
fn slot_table(d: &DispatchJson, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "\ndispatch {}  task {}  func_id {}  {} ({} core {})  block {}/{}{}",
        d.dispatch_id,
        d.task_id,
        d.func_id,
        d.subtask,
        d.core_type,
        d.core_id,
        d.block_idx,
        d.block_num,
        d.args_addr
            .map(|a| format!("  args at {a}"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "{:>4}  {:<14}  {:<9}  {:<16}  value",
        "slot", "kind", "dtype", "shape"
    )?;
    for s in &d.args {
        let shape = s.shape.as_ref().map_or("[]".into(), |v| format!("{v:?}"));
        let value = if s.kind == Kind::Tensor {
            format!(
                "desc {} -> addr {} strides {:?} offset {} {}",
                s.desc_addr.map_or("?".into(), |a| a.to_string()),
                s.addr.map_or("?".into(), |a| a.to_string()),
                s.strides.clone().unwrap_or_default(),
                s.start_offset.unwrap_or(0),
                if s.is_contiguous == Some(false) {
                    "strided"
                } else {
                    "contiguous"
                }
            )
        } else {
            format!(
                "{} (bits {})",
                value_text(s.value),
                s.bits.map_or("?".into(), |b| b.to_string())
            )
        };
        writeln!(
            out,
            "{:>4}  {:<14}  {:<9}  {:<16}  {value}",
            s.arg_index, s.kind, s.dtype, shape
        )?;
    }
    for c in &d.context {
        let v = match c.kind {
            ContextKind::LocalContext => format!(
                "block_idx {} block_num {}",
                c.block_idx.unwrap_or(-1),
                c.block_num.unwrap_or(-1)
            ),
            _ => format!("sub_block_id {}", c.sub_block_id.unwrap_or(-1)),
        };
        writeln!(
            out,
            "{:>4}  {:<14}  {:<9}  {:<16}  {} at {}",
            c.arg_index, c.kind, "", "", v, c.addr
        )?;
    }
    Ok(())
}
