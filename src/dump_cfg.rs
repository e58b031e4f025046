//! Turning dump flags into a run directory and a dump configuration.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use simpler_dump::{DumpConfig, DumpLayout, DumpLevel, DumpPolicy, DumpSummary, RunStatus};
use simpler_runtime::{Runtime, RuntimeConfig};

use crate::cli::DumpArgs;
use simpler_format::words::count;

/// The run directory of a dumping run. Created atomically and registered
/// as unfinished (a second signal removes it if empty); kept once it holds
/// a file, removed when the run wrote nothing — also on an early error,
/// when this guard is dropped — and with it the folders created to hold
/// it (`--output new/run`'s `new/`, the first run's `outputs/`), when
/// nothing else has come into them.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    /// Parent folders this run created, outermost first.
    parents: Vec<PathBuf>,
    settled: bool,
}

impl RunDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keep the directory if anything was written into it, else remove it.
    /// Returns true when it was kept.
    pub fn settle(mut self) -> bool {
        self.settled = true;
        settle(&self.path, &self.parents)
    }
}

fn settle(path: &Path, parents: &[PathBuf]) -> bool {
    let has_files = std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some());
    for d in std::iter::once(path).chain(parents.iter().rev().map(PathBuf::as_path)) {
        if has_files {
            simpler_format::durable::keep_dir(d);
        } else {
            // A parent another run has since put its folder in stays.
            simpler_format::durable::remove_dir_if_empty(d);
        }
    }
    has_files
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.settled {
            settle(&self.path, &self.parents);
        }
    }
}

/// Validate the flags; when a dump is asked for, create a fresh run
/// directory (`--output`, or a new one under `root`) and put the dump
/// configuration into `cfg`. Returns the run directory.
pub fn configure(
    a: &DumpArgs,
    cfg: &mut RuntimeConfig,
    workload: &str,
    case: &str,
    root: &Path,
) -> Result<Option<RunDir>> {
    let level = match a.dump_tensor {
        None if a.dump_all => Some(DumpLevel::All),
        None => None,
        Some(n) => DumpLevel::from_number(n).map_err(anyhow::Error::msg)?,
    };
    let args = a.dump_args || a.dump_all;
    let kernel_args = a.dump_kernel_args || a.dump_all;
    let policy: DumpPolicy = a.dump_policy.parse().map_err(anyhow::Error::msg)?;
    let layout: DumpLayout = a.dump_layout.parse().map_err(anyhow::Error::msg)?;
    if !(1..=crate::cli::MAX_ARENA_KIB).contains(&a.dump_arena_kib) {
        bail!(
            "--dump-arena-kib {}: expected KiB in 1..={}",
            a.dump_arena_kib,
            crate::cli::MAX_ARENA_KIB
        );
    }
    if level.is_none() && !args && !kernel_args {
        return Ok(None);
    }
    let dir = create_run_dir(a.output.as_deref(), root, workload, case)?;
    let run_dir = dir.path.clone();
    let mut d = DumpConfig::new(run_dir.join(layout.dir_name()));
    d.layout = layout;
    d.level = level;
    d.policy = policy;
    d.arena_bytes = (a.dump_arena_kib << 10) as usize;
    d.args = args;
    d.kernel_args = kernel_args;
    d.workload = workload.into();
    d.case = case.into();
    cfg.dump = Some(d);
    Ok(Some(dir))
}

/// Create the run directory: `--output DIR` (never an existing one), or a
/// fresh one under `root`.
pub fn create_run_dir(
    output: Option<&Path>,
    root: &Path,
    workload: &str,
    case: &str,
) -> Result<RunDir> {
    let (path, parents) = match output {
        Some(dir) => create_output(dir)?,
        None => fresh_run_dir(root, workload, case)?,
    };
    Ok(RunDir {
        path,
        parents,
        settled: false,
    })
}

/// How often a folder is created again when a parent vanished under it
/// (another run that created that parent failed and removed it).
const PARENT_RETRIES: usize = 8;

/// Create `dir`'s missing parents (registered: a signal removes them if
/// empty), then `dir` itself with `create`, again when a parent vanished
/// in between. The parents created here, outermost first.
fn with_parents(
    dir: &Path,
    mut create: impl FnMut() -> std::io::Result<()>,
) -> Result<(Vec<PathBuf>, std::io::Result<()>), std::io::Error> {
    let mut parents = Vec::new();
    for _ in 0..PARENT_RETRIES {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            parents.extend(simpler_format::durable::create_dir_all(parent)?);
        }
        match create() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            r => return Ok((parents, r)),
        }
    }
    Ok((parents, create()))
}

/// Remove the parent folders a failed create made (innermost first), those
/// still empty: another run may have put its folder in one meanwhile.
fn remove_unused(parents: &[PathBuf]) {
    for p in parents.iter().rev() {
        simpler_format::durable::remove_dir_if_empty(p);
    }
}

/// Create `--output DIR` in one step (its parents first): an existing
/// directory or file is refused, and of two runs racing for one name only
/// one gets it.
fn create_output(dir: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    let (parents, created) = with_parents(dir, || simpler_format::durable::create_dir(dir))
        .with_context(|| {
            format!(
                "--output {}: cannot create its parent folder",
                dir.display()
            )
        })?;
    match created {
        Ok(()) => Ok((dir.to_path_buf(), parents)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            remove_unused(&parents);
            if dir.is_dir() {
                bail!(
                    "--output {}: the directory already exists and is never overwritten; choose a new one",
                    dir.display()
                )
            }
            bail!(
                "--output {}: a file of that name exists; expected the path of a new directory",
                dir.display()
            )
        }
        Err(e) => {
            remove_unused(&parents);
            bail!(
                "--output {}: cannot create the directory: {e}",
                dir.display()
            )
        }
    }
}

/// Create `outputs/<workload>_<case>_<YYYYmmdd_HHMMSS>`, with `_2`, `_3`, …
/// when a run of the same second already took the name (each name is
/// claimed by one atomic create); and `outputs/` first when missing. The
/// directory and the parents created for it.
pub fn fresh_run_dir(root: &Path, workload: &str, case: &str) -> Result<(PathBuf, Vec<PathBuf>)> {
    let ts = chrono::Local::now().format("%Y%m%d_%H%M%S");
    let base = format!("{workload}_{case}_{ts}");
    let mut found = None;
    let (parents, created) = with_parents(&root.join(&base), || {
        for n in 1..1000 {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{base}_{n}")
            };
            let p = root.join(name);
            match simpler_format::durable::create_dir(&p) {
                Ok(()) => {
                    found = Some(p);
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })
    .with_context(|| format!("cannot create {}", root.display()))?;
    if let Err(e) = created {
        remove_unused(&parents);
        bail!(
            "cannot create a run directory under {}: {e}",
            root.display()
        );
    }
    match found {
        Some(p) => Ok((p, parents)),
        None => bail!(
            "cannot find a fresh run directory name under {}",
            root.display()
        ),
    }
}

/// One line per file the dump wrote.
pub fn report(d: &DumpSummary) {
    if let Some(p) = &d.json_path {
        report_tensors(d, p);
    }
    if d.skipped_empty {
        println!(
            "tensor dump: no records, so no manifest was written (the upstream layout does as the upstream runtime)"
        );
    }
    report_side_files(d);
}

fn report_side_files(d: &DumpSummary) {
    for line in side_file_lines(d) {
        println!("{line}");
    }
}

/// One line per side file (args dump, kernel args dump) the dump wrote: the
/// same words after a run that passed (stdout) and one that failed (stderr).
fn side_file_lines(d: &DumpSummary) -> impl Iterator<Item = String> + '_ {
    let args = d
        .args_path
        .iter()
        .map(|p| format!("args dump: {}", p.display()));
    let kernel = d.kernel_args_path.iter().map(|p| {
        format!(
            "kernel args dump: {} -> {}",
            count(d.dispatches, "dispatch", "dispatches"),
            p.display()
        )
    });
    args.chain(kernel)
}

fn report_tensors(d: &DumpSummary, json: &Path) {
    let lost = if d.dropped_records > 0 || d.truncated > 0 {
        format!(
            " — LOST: {} dropped, {} truncated",
            count(d.dropped_records, "record", "records"),
            d.truncated
        )
    } else {
        String::new()
    };
    println!(
        "tensor dump: {}, {} payload -> {}{lost}",
        count(d.records, "record", "records"),
        human_bytes(d.bin_bytes),
        json.display()
    );
}

/// After a failed run: what its dump kept, in the words its manifest uses
/// (on stderr), then keep the run directory — or remove it when nothing
/// was written.
pub fn report_failed(rt: &Runtime, dir: RunDir) {
    let path = dir.path().to_path_buf();
    let Some(d) = rt.last_dump() else {
        if dir.settle() {
            eprintln!("dumps collected before the failure: {}", path.display());
        } else {
            eprintln!("nothing was kept: removed {}", path.display());
        }
        return;
    };
    if let Some(json) = &d.json_path {
        let status = match &d.status {
            RunStatus::Complete => "complete".to_string(),
            RunStatus::Incomplete(_) => "incomplete".to_string(),
        };
        let lost = match d.dropped_records {
            0 => String::new(),
            n => format!(
                " — LOST: {} dropped (their payload is not in the file)",
                count(n, "record", "records")
            ),
        };
        eprintln!(
            "tensor dump (status {status}) with everything collected before the run stopped: {} ({}), {} payload -> {}{lost}",
            count(d.records, "record", "records"),
            count(d.hang_snapshots, "hang snapshot", "hang snapshots"),
            human_bytes(d.bin_bytes),
            json.display()
        );
        let u = &d.unfinished;
        if u.running + u.ready + u.waiting > 0 {
            eprintln!(
                "unfinished tasks: {} running, {} ready, {} waiting (listed in its unfinished_tasks)",
                u.running, u.ready, u.waiting
            );
        }
    }
    for (file, why) in &d.not_written {
        eprintln!("not written: {} ({why})", file.display());
    }
    for line in side_file_lines(&d) {
        eprintln!("{line}");
    }
    dir.settle();
}

/// A byte count as people read it: `512 bytes`, `32.0 KiB`, `1.2 MiB`,
/// `3.4 GiB` (never "0.0 MiB" for a payload that exists).
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1023.95 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    /// Issue 15: "0.0 MiB payload" for 32 KB.
    #[test]
    fn sizes_read_in_their_own_unit() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1023), "1023 bytes");
        assert_eq!(human_bytes(32 << 10), "32.0 KiB");
        assert_eq!(human_bytes((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_bytes(1_500_000), "1.4 MiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
    }
}
