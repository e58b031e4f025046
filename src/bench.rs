//! `simpler bench`: ratios measured inside one process (DESIGN §10), so the
//! figures hold on a noisy machine. Each bench alternates its A/B runs and
//! reports the best repetition.

use std::{process::ExitCode, time::Duration};

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use simpler_runtime::Runtime;
use simpler_workloads::flood;

use crate::cli::{BenchArgs, BenchName};

/// One bench's outcome.
struct Outcome {
    name: &'static str,
    results: Vec<(&'static str, f64, &'static str)>,
    config: Map<String, Value>,
    target: String,
}

/// Run the bench and print a table or one JSON object.
pub fn bench(a: &BenchArgs) -> Result<ExitCode> {
    if a.reps == 0 {
        bail!("--reps 0: expected at least one repetition");
    }
    let out = match a.name {
        BenchName::Dispatch => dispatch(a)?,
    };
    if a.json {
        let results: Map<String, Value> = out
            .results
            .iter()
            .map(|(k, v, _)| (k.to_string(), json!(v)))
            .collect();
        println!(
            "{}",
            json!({"bench": out.name, "results": results, "config": out.config})
        );
    } else {
        println!("bench {}  ({})", out.name, out.target);
        for (k, v, unit) in &out.results {
            println!("  {k:<22} {v:>14.3} {unit}");
        }
        let cfg: Vec<String> = out.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("  config: {}", cfg.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-task runtime overhead: a flood of tiny independent AIV tasks through
/// the whole runtime vs the same kernel called in a loop on one core.
fn dispatch(a: &BenchArgs) -> Result<Outcome> {
    let cfg = a.chip.config()?;
    let n = a.tasks;
    if n == 0 {
        bail!("--tasks 0: expected at least one task");
    }
    let rt = Runtime::new(cfg.clone(), flood::kernels())?;
    let mut best_flood = Duration::MAX;
    let mut best_loop = Duration::MAX;
    for rep in 0..a.reps {
        let run = flood::run_n(n, u64::from(rep), &rt).context("flood run")?;
        if !run.golden.passed {
            bail!("flood produced wrong results: {}", run.golden.detail);
        }
        best_flood = best_flood.min(run.report.wall);
        let lp = flood::flood_kernel_loop(u64::from(n)).context("kernel loop baseline")?;
        best_loop = best_loop.min(lp);
    }
    let us_per_task = (best_flood.as_secs_f64() - best_loop.as_secs_f64()) / f64::from(n) * 1e6;
    let mut config = Map::new();
    config.insert("tasks".into(), json!(n));
    config.insert("reps".into(), json!(a.reps));
    config.insert("clusters".into(), json!(cfg.clusters));
    config.insert("sched_threads".into(), json!(cfg.sched_threads));
    config.insert("core_queue_depth".into(), json!(cfg.core_queue_depth));
    config.insert("arch".into(), json!(cfg.arch.name));
    config.insert(
        "cpus".into(),
        json!(std::thread::available_parallelism().map_or(0, |p| p.get())),
    );
    Ok(Outcome {
        name: "dispatch",
        results: vec![
            ("us_per_task", us_per_task, "µs/task overhead"),
            (
                "tasks_per_s",
                f64::from(n) / best_flood.as_secs_f64(),
                "tasks/s",
            ),
            ("flood_wall_s", best_flood.as_secs_f64(), "s"),
            ("loop_wall_s", best_loop.as_secs_f64(), "s"),
        ],
        config,
        target: "target: us_per_task ≤ 2 on 2 CPUs".into(),
    })
}
