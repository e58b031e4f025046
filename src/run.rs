//! `simpler run`: run a workload case and check its golden.

use std::process::ExitCode;

use anyhow::Result;
use simpler_runtime::Runtime;
use simpler_workloads::GoldenCheck;

use crate::cli::RunArgs;

/// Run, print PASS/FAIL with the error figures; exit 1 on FAIL.
pub fn run(a: &RunArgs) -> Result<ExitCode> {
    let w = simpler_workloads::find(&a.workload)?;
    let case = match &a.case {
        Some(c) => w.case(c)?.name,
        None => w.default_case(),
    };
    let mut cfg = a.chip.config()?;
    let run_dir = crate::dump_cfg::configure(&a.dump, &mut cfg, w.name(), case)?;
    let rt = Runtime::new(cfg.clone(), w.kernels())?;
    let out = match w.run(case, a.seed, &rt) {
        Ok(out) => out,
        Err(e) => {
            if let Some(dir) = &run_dir {
                crate::dump_cfg::report_failed(dir);
            }
            return Err(e.into());
        }
    };
    let r = &out.report;
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
    if let Some(d) = &r.dump {
        crate::dump_cfg::report(d);
    }
    println!("{}", verdict(&out.golden));
    Ok(exit_code(&out.golden))
}

/// `PASS`/`FAIL` line with the error figures.
fn verdict(g: &GoldenCheck) -> String {
    format!(
        "{}  max abs err {:.3e}, max rel err {:.3e} (tolerance {:.0e}, {} elements; {})",
        if g.passed { "PASS" } else { "FAIL" },
        g.max_abs_err,
        g.max_rel_err,
        g.tolerance,
        g.compared,
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
    fn a_failed_golden_prints_fail_and_exits_1() {
        let g = GoldenCheck::compare("out", &[1.0, 2.5], &[1.0, 2.0], 1e-3);
        assert!(
            verdict(&g).starts_with("FAIL  max abs err 5.000e-1"),
            "{}",
            verdict(&g)
        );
        assert_eq!(exit_code(&g), ExitCode::from(1));
        let g = GoldenCheck::compare("out", &[1.0, 2.0], &[1.0, 2.0], 1e-3);
        assert!(verdict(&g).starts_with("PASS"));
        assert_eq!(exit_code(&g), ExitCode::SUCCESS);
    }
}
