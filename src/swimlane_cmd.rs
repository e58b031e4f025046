//! `simpler swimlane [RUN]`: read a run's swimlane files and print where
//! its time went; `--check` tests them against the upstream tools'
//! requirements.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use simpler_format::swimlane::{DEPS_FILE, PERFETTO_FILE, RECORDS_FILE};
use simpler_format::words::count;

/// `simpler swimlane`.
#[derive(Debug, Args)]
pub struct SwimlaneArgs {
    /// Run directory, or any folder holding `chip_swimlane_records.json`
    /// (such as `RUN/predicted`). Default: the newest `outputs/*` that
    /// has one.
    pub run: Option<PathBuf>,
    /// Critical path links listed.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Check the folder as the upstream tools read it (column counts,
    /// decimal ids, join keys, name map) and the Perfetto trace for
    /// overlapping slices; exit 1 on any problem.
    #[arg(long)]
    pub check: bool,
}

/// The newest `outputs/*/` holding a records file.
fn newest(root: &Path) -> Result<PathBuf> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    let entries = std::fs::read_dir(root)
        .with_context(|| format!("no RUN given and cannot list {}", root.display()))?;
    for e in entries.flatten() {
        let p = e.path().join(RECORDS_FILE);
        if let Ok(m) = std::fs::metadata(&p).and_then(|m| m.modified()) {
            if best.as_ref().is_none_or(|(t, _)| m > *t) {
                best = Some((m, e.path()));
            }
        }
    }
    match best {
        Some((_, p)) => {
            println!("Using latest swimlane directory: {}", p.display());
            Ok(p)
        }
        None => bail!(
            "no RUN given and no {}/*/{RECORDS_FILE}: run with --swimlane first",
            root.display()
        ),
    }
}

/// Print the report (exit 0), or the check's verdict (exit 1 on problems).
pub fn swimlane(a: &SwimlaneArgs) -> Result<ExitCode> {
    let dir = match &a.run {
        Some(d) if d.is_dir() => d.clone(),
        Some(d) if d.file_name().is_some_and(|n| n == RECORDS_FILE) => {
            d.parent().map(Path::to_path_buf).unwrap_or_default()
        }
        Some(d) => bail!(
            "{}: not a directory; expected a run directory holding {RECORDS_FILE}",
            d.display()
        ),
        None => newest(Path::new("outputs"))?,
    };
    if !dir.join(RECORDS_FILE).exists() {
        let predicted = dir.join(simpler_format::swimlane::PREDICTED_DIR);
        let hint = match predicted.join(RECORDS_FILE).is_file() {
            true => format!(
                "; this run has only its predicted timeline: {} swimlane {}",
                crate::cli::program(),
                predicted.display()
            ),
            false => String::new(),
        };
        bail!(
            "{}: no {RECORDS_FILE} (record one with run --swimlane){hint}",
            dir.display()
        );
    }
    if a.check {
        return check(&dir);
    }
    let report = crate::progress::in_steps("swimlane", "reading the files", |steps| {
        let files = simpler_swimlane::RunFiles::load(&dir)?;
        if files.deps.is_none() {
            eprintln!(
                "note: {} has no {DEPS_FILE}: no dependency edges are known, so each task is its own critical path",
                dir.display()
            );
        }
        steps.step("building the report");
        anyhow::Ok(simpler_swimlane::report::render(&files.timeline(), a.top))
    })?;
    print!("{report}");
    Ok(ExitCode::SUCCESS)
}

fn check(dir: &Path) -> Result<ExitCode> {
    let mut bad = 0;
    let checked = crate::progress::in_steps("swimlane --check", "checking the records", |_| {
        simpler_swimlane::check::check_dir(dir)
    });
    match checked {
        Ok(n) => println!(
            "upstream tools: OK ({}, {}, {}; pop hit {} miss {}; {}; {})",
            count(n.dispatches, "dispatch", "dispatches"),
            count(n.tasks, "task", "tasks"),
            count(n.edges, "edge", "edges"),
            n.pop_hit,
            n.pop_miss,
            count(n.loop_iters, "loop iteration", "loop iterations"),
            count(n.submits, "submit", "submits"),
        ),
        Err(errs) => {
            bad += errs.len();
            for e in errs.iter().take(50) {
                println!("FAIL {e}");
            }
        }
    }
    let trace = dir.join(PERFETTO_FILE);
    if !trace.exists() {
        println!("{PERFETTO_FILE}: absent (an upstream run writes none), not checked");
        return Ok(exit(bad));
    }
    let checked = crate::progress::in_steps("swimlane --check", "reading the trace", |steps| {
        let text = simpler_format::files::read_regular(&trace)?;
        steps.step("checking the trace");
        anyhow::Ok(simpler_swimlane::check::check_perfetto(&text))
    })?;
    match checked {
        Ok(s) => println!(
            "{PERFETTO_FILE}: OK ({} on {}, none overlapping; {})",
            count(s.slices, "slice", "slices"),
            count(s.tracks, "track", "tracks"),
            count(s.flows, "flow arrow", "flow arrows")
        ),
        Err(errs) => {
            bad += errs.len();
            for e in errs.iter().take(50) {
                println!("FAIL {PERFETTO_FILE}: {e}");
            }
        }
    }
    Ok(exit(bad))
}

/// 0 without problems, else 1.
fn exit(problems: usize) -> ExitCode {
    match problems {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}
