//! Turning dump flags into a run directory and a dump configuration.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use simpler_dump::{DumpConfig, DumpLevel, DumpPolicy, DumpSummary, JSON_FILE};
use simpler_runtime::RuntimeConfig;

use crate::cli::DumpArgs;

/// Folder inside the run directory that holds the dumps.
pub const DUMP_DIR: &str = "tensor_dump";

/// Validate the flags; when a dump is asked for, create a fresh run
/// directory and put the dump configuration into `cfg`. Returns the run
/// directory.
pub fn configure(
    a: &DumpArgs,
    cfg: &mut RuntimeConfig,
    workload: &str,
    case: &str,
) -> Result<Option<PathBuf>> {
    let level = match a.dump_tensor {
        None if a.dump_all => Some(DumpLevel::All),
        None => None,
        Some(n) => DumpLevel::from_number(n).map_err(anyhow::Error::msg)?,
    };
    let args = a.dump_args || a.dump_all;
    let kernel_args = a.dump_kernel_args || a.dump_all;
    let policy: DumpPolicy = a.dump_policy.parse().map_err(anyhow::Error::msg)?;
    if a.dump_arena_kib == 0 {
        bail!("--dump-arena-kib 0: expected a positive size in KiB");
    }
    if level.is_none() && !args && !kernel_args {
        return Ok(None);
    }
    let run_dir = match &a.output {
        Some(dir) => {
            if dir.exists() {
                bail!(
                    "--output {}: the directory already exists and is never overwritten; choose a new one",
                    dir.display()
                );
            }
            dir.clone()
        }
        None => fresh_run_dir(Path::new("outputs"), workload, case)?,
    };
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create {}", run_dir.display()))?;
    let mut d = DumpConfig::new(run_dir.join(DUMP_DIR));
    d.level = level;
    d.policy = policy;
    d.arena_bytes = a.dump_arena_kib << 10;
    d.args = args;
    d.kernel_args = kernel_args;
    d.workload = workload.into();
    d.case = case.into();
    cfg.dump = Some(d);
    Ok(Some(run_dir))
}

/// `outputs/<workload>_<case>_<YYYYmmdd_HHMMSS>`, with `_2`, `_3`, … when a
/// run of the same second already took the name.
pub fn fresh_run_dir(root: &Path, workload: &str, case: &str) -> Result<PathBuf> {
    let ts = chrono::Local::now().format("%Y%m%d_%H%M%S");
    let base = format!("{workload}_{case}_{ts}");
    for n in 1..1000 {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}_{n}")
        };
        let p = root.join(name);
        if !p.exists() {
            return Ok(p);
        }
    }
    bail!(
        "cannot find a fresh run directory name under {}",
        root.display()
    )
}

/// One line per file the dump wrote.
pub fn report(d: &DumpSummary) {
    if let Some(p) = &d.json_path {
        report_tensors(d, p);
    }
    if let Some(p) = &d.args_path {
        println!("args dump: {}", p.display());
    }
    if let Some(p) = &d.kernel_args_path {
        println!(
            "kernel args dump: {} dispatches -> {}",
            d.dispatches,
            p.display()
        );
    }
}

fn report_tensors(d: &DumpSummary, json: &Path) {
    let lost = if d.dropped_records > 0 || d.truncated > 0 {
        format!(
            " — LOST: {} records dropped, {} truncated",
            d.dropped_records, d.truncated
        )
    } else {
        String::new()
    };
    println!(
        "tensor dump: {} records, {:.1} MiB payload -> {}{lost}",
        d.records,
        d.bin_bytes as f64 / (1 << 20) as f64,
        json.display()
    );
}

/// After a failed run: say where the incomplete dump is, if one was written.
pub fn report_failed(run_dir: &Path) {
    let json = run_dir.join(DUMP_DIR).join(JSON_FILE);
    if json.exists() {
        eprintln!(
            "tensor dump (status incomplete) with everything collected before the failure: {}",
            json.display()
        );
    } else if run_dir.join(DUMP_DIR).exists() {
        eprintln!(
            "dumps collected before the failure: {}",
            run_dir.join(DUMP_DIR).display()
        );
    }
}
