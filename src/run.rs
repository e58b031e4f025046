//! `simpler run`: run a workload case and check its golden.

use std::{path::Path, process::ExitCode};

use anyhow::{bail, Result};
use simpler_format::words::count;
use simpler_runtime::{Runtime, RuntimeError};
use simpler_workloads::{GoldenCheck, Outcome, Workload, WorkloadError};

use crate::{cli::RunArgs, dump_cfg::RunDir, registry::Workloads};

/// Run, print PASS/FAIL with the error figures; exit 1 on FAIL. A first
/// SIGINT/SIGTERM/SIGHUP stops the run and exports its dump as incomplete (exit
/// 130/143/129); a timeout, a kernel error or a failed write exit 2, saying
/// what the dump kept; a write race under `--racecheck error` (a failed
/// check) exits 1.
pub(crate) fn run(a: &RunArgs, ws: &Workloads) -> Result<ExitCode> {
    crate::signals::stop_runs_gracefully();
    let w = ws.find(&a.workload)?;
    let case = match &a.case {
        Some(c) => w.case(c)?.name,
        None => w.default_case(),
    };
    let mut cfg = a.chip.config()?;
    let run_dir = configure(a, &mut cfg, w.name(), case)?;
    let rt = Runtime::new(cfg.clone(), w.kernels())?;
    let result = run_with_progress(w, case, a.seed, &rt);
    let write_timeline = |failed: bool| match &run_dir {
        Some(d) => crate::swimlane_cfg::write(
            &rt,
            &cfg,
            d.path(),
            w.name(),
            case,
            (a.timeline.swimlane.is_some(), a.timeline.predict),
            failed,
        ),
        None => Ok(()),
    };
    let out = match result {
        Ok(out) => out,
        Err(e) => {
            if let Err(we) = write_timeline(true) {
                eprintln!("error: {we:#}");
            }
            return Ok(failed(&e, &rt, run_dir));
        }
    };

    let r = &out.report;
    println!(
        "{} {case} (seed {}): {}, {}, {} on {} clusters / {} schedulers / {} workers ({}) in {:.2} ms{}",
        w.name(),
        a.seed,
        count(r.tasks, "task", "tasks"),
        count(r.edges, "edge", "edges"),
        count(r.dispatches, "dispatch", "dispatches"),
        cfg.clusters,
        cfg.sched_threads,
        cfg.workers,
        cfg.arch.name,
        r.wall.as_secs_f64() * 1e3,
        races_note(r.write_races)
    );
    if let Some(d) = &r.dump {
        crate::dump_cfg::report(d);
    }
    let written = write_timeline(false);
    if let Some(dir) = run_dir {
        dir.settle();
    }
    written?;
    println!("{}", verdict(&out.golden));
    if let Some(code) = crate::signals::interrupted() {
        eprintln!("interrupted after the run had completed (its dump is complete)");
        return Ok(code);
    }
    Ok(exit_code(&out.golden))
}

/// Dumps and timeline into `cfg`; the run directory when anything is
/// written (an `--output` with nothing to write there is refused).
fn configure(
    a: &RunArgs,
    cfg: &mut simpler_runtime::RuntimeConfig,
    workload: &str,
    case: &str,
) -> Result<Option<RunDir>> {
    let timeline = crate::swimlane_cfg::configure(&a.timeline, cfg)?;
    let root = Path::new("outputs");
    let mut run_dir = crate::dump_cfg::configure(&a.dump, cfg, workload, case, root)?;
    if timeline && run_dir.is_none() {
        let out = a.dump.output.as_deref();
        run_dir = Some(crate::dump_cfg::create_run_dir(out, root, workload, case)?);
    }
    if let (Some(o), None) = (&a.dump.output, &run_dir) {
        bail!(
            "--output {}: nothing to write there; add --dump-tensor, --dump-args, --dump-kernel-args, --dump-all, --swimlane or --predict",
            o.display()
        );
    }
    Ok(run_dir)
}

/// `w.run` with a spinner counting finished tasks (on a terminal, once
/// the run has taken a moment).
pub(crate) fn run_with_progress(
    w: &dyn Workload,
    case: &str,
    seed: u64,
    rt: &Runtime,
) -> Result<Outcome, WorkloadError> {
    let token = rt.cancel_token();
    crate::progress::while_running(
        &format!("running {} {case}", w.name()),
        "tasks done",
        || token.run_progress().map_or(0, |(done, _)| done),
        || w.run(case, seed, rt),
    )
}

/// The run ended abnormally: the error in the words the dump's `reason`
/// uses, what the dump kept; then [`failure_code`].
fn failed(e: &WorkloadError, rt: &Runtime, run_dir: Option<RunDir>) -> ExitCode {
    eprintln!("error: {e}");
    if let Some(dir) = run_dir {
        crate::dump_cfg::report_failed(rt, dir);
    }
    failure_code(e)
}

/// 130/143/129 when a signal stopped the run, 1 for a write race under
/// `--racecheck error` (a check failed), else 2.
fn failure_code(e: &WorkloadError) -> ExitCode {
    match e {
        WorkloadError::Runtime(RuntimeError::Cancelled(_)) => {
            crate::signals::interrupted().unwrap_or(ExitCode::from(130))
        }
        WorkloadError::Runtime(RuntimeError::WriteRace(_)) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

/// The run summary's mention of write races: nothing when there was none.
fn races_note(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => ", 1 write race (see the warning above)".into(),
        n => format!(", {n} write races (see the warnings above)"),
    }
}

/// `PASS`/`FAIL` line: the rule an element is checked by first (a max
/// relative error above the tolerance is no failure where the absolute
/// part covers it, near zero), then the error figures.
fn verdict(g: &GoldenCheck) -> String {
    let rule = format!("|out - ref| <= {0:.0e} + {0:.0e}*|ref|", g.tolerance);
    let count = if g.passed {
        format!("all {} elements within {rule}", g.compared)
    } else {
        format!("{} of {} elements outside {rule}", g.failed, g.compared)
    };
    format!(
        "{}  {count}; max abs err {:.3e}, max rel err {:.3e} ({})",
        if g.passed { "PASS" } else { "FAIL" },
        g.max_abs_err,
        g.max_rel_err,
        g.detail
    )
}

/// 0 on PASS, 1 on FAIL.
fn exit_code(g: &GoldenCheck) -> ExitCode {
    if g.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_race_under_racecheck_error_is_a_failed_check() {
        use simpler_core::{topology::CoreType, RaceWriter, TaskId, WriteRace};
        let w = RaceWriter {
            dispatch_id: 0,
            task_id: TaskId::new(0, 0),
            func_id: 0,
            kernel: "k",
            core_type: CoreType::Aiv,
            core_id: 8,
            block_idx: 0,
        };
        let race = WriteRace {
            first: w,
            second: RaceWriter {
                dispatch_id: 1,
                ..w
            },
            buffer: 0x1000,
            start: 0,
            end: 8,
            overlap_bytes: 8,
        };
        let e = WorkloadError::Runtime(RuntimeError::WriteRace(Box::new(race)));
        assert_eq!(failure_code(&e), ExitCode::from(1));
        let e = WorkloadError::Runtime(RuntimeError::Timeout(1.0));
        assert_eq!(
            failure_code(&e),
            ExitCode::from(2),
            "other failures keep exit 2"
        );
    }

    #[test]
    fn the_summary_names_write_races_only_when_there_are_some() {
        assert_eq!(races_note(0), "");
        assert_eq!(races_note(1), ", 1 write race (see the warning above)");
        assert_eq!(races_note(6), ", 6 write races (see the warnings above)");
    }

    #[test]
    fn a_failed_golden_prints_fail_and_exits_1() {
        let g = GoldenCheck::compare("out", &[1.0, 2.5], &[1.0, 2.0], 1e-3);
        assert_eq!(
            verdict(&g),
            "FAIL  1 of 2 elements outside |out - ref| <= 1e-3 + 1e-3*|ref|; max abs err 5.000e-1, max rel err 2.500e-1 (out: worst element at flat index 1)"
        );
        assert_eq!(exit_code(&g), ExitCode::from(1));
        // Issue 15: a max rel err above the tolerance on a passing run
        // reads as the rule it passed by.
        let g = GoldenCheck::compare("out", &[1.0, 2.0, 4.0e-4], &[1.0, 2.0, 2.0e-4], 1e-3);
        assert_eq!(
            verdict(&g),
            "PASS  all 3 elements within |out - ref| <= 1e-3 + 1e-3*|ref|; max abs err 2.000e-4, max rel err 2.000e-1 (out: worst element at flat index 2)"
        );
        assert_eq!(exit_code(&g), ExitCode::SUCCESS);
    }
}
