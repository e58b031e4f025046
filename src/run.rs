//! `simpler run`: run a workload case and check its golden.

use std::process::ExitCode;

use anyhow::Result;
use simpler_runtime::Runtime;

use crate::cli::RunArgs;

/// Run, print PASS/FAIL with the error figures; exit 1 on FAIL.
pub fn run(a: &RunArgs) -> Result<ExitCode> {
    let w = simpler_workloads::find(&a.workload)?;
    let case = match &a.case {
        Some(c) => w.case(c)?.name,
        None => w.default_case(),
    };
    let cfg = a.chip.config()?;
    let rt = Runtime::new(cfg.clone(), w.kernels())?;
    let out = w.run(case, a.seed, &rt)?;
    let r = &out.report;
    let g = &out.golden;
    println!(
        "{} {case} (seed {}): {} tasks, {} dispatches on {} clusters / {} schedulers ({}) in {:.2} ms",
        w.name(),
        a.seed,
        r.tasks,
        r.dispatches,
        cfg.clusters,
        cfg.sched_threads,
        cfg.arch.name,
        r.wall.as_secs_f64() * 1e3
    );
    println!(
        "{}  max abs err {:.3e}, max rel err {:.3e} (tolerance {:.0e}, {} elements; {})",
        if g.passed { "PASS" } else { "FAIL" },
        g.max_abs_err,
        g.max_rel_err,
        g.tolerance,
        g.compared,
        g.detail
    );
    Ok(if g.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
