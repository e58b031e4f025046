//! `simpler bench swimlane`: what recording the run timeline costs
//! (DESIGN §12: ≤ 10 % wall at level 4), and what `--predict` costs, in
//! one process with plain and recording runs alternated.

use std::time::Instant;

use anyhow::{bail, Result};
use simpler_runtime::{Runtime, RuntimeConfig, SwimlaneConfig};
use simpler_swimlane::predict::{ChipParams, ChipShape};
use simpler_workloads::flood;

use super::{chip_config, median, Outcome};
use crate::cli::BenchArgs;

/// Plain vs level-4 pairs of one graph; `(median ratio, best plain, best recorded)`.
fn pairs(
    reps: u32,
    plain: &Runtime,
    rec: &Runtime,
    run: &dyn Fn(&Runtime) -> Result<f64>,
) -> Result<(f64, f64, f64)> {
    let mut v = Vec::new();
    for _ in 0..reps {
        let p = run(plain)?;
        let r = run(rec)?;
        if rec.take_swimlane().is_none() {
            bail!("the recording run recorded nothing");
        }
        v.push((p, r));
    }
    let best = |f: fn(&(f64, f64)) -> f64| v.iter().map(f).fold(f64::MAX, f64::min);
    Ok((
        median(v.iter().map(|(p, r)| r / p)),
        best(|x| x.0),
        best(|x| x.1),
    ))
}

/// The bench.
pub fn swimlane(a: &BenchArgs) -> Result<Outcome> {
    let base = a.chip.config()?;
    let level4 = |cost| RuntimeConfig {
        swimlane: Some(SwimlaneConfig { level: 4, cost }),
        ..base.clone()
    };
    let mut results = Vec::new();
    let mut worst = 0.0f64;
    // The dispatch bench's graph: a flood of tiny independent tasks.
    let (plain, rec) = (
        Runtime::new(base.clone(), flood::kernels())?,
        Runtime::new(level4(None), flood::kernels())?,
    );
    let n = a.tasks;
    let run_flood = |rt: &Runtime| Ok(flood::run_n(n, 0, rt)?.report.wall.as_secs_f64());
    let (r, p, s) = pairs(a.reps, &plain, &rec, &run_flood)?;
    worst = worst.max(r);
    results.extend([
        ("flood_wall_ratio", r, "x (median of pairs)"),
        ("flood_plain_s", p, "s (best)"),
        ("flood_level4_s", s, "s (best)"),
    ]);
    let w = simpler_workloads::find("paged_attention")?;
    let (plain, rec) = (
        Runtime::new(base.clone(), w.kernels())?,
        Runtime::new(level4(None), w.kernels())?,
    );
    let run_large = |rt: &Runtime| Ok(w.run("CaseLarge", 0, rt)?.report.wall.as_secs_f64());
    let (r, p, s) = pairs(a.reps, &plain, &rec, &run_large)?;
    worst = worst.max(r);
    results.extend([
        ("case_large_wall_ratio", r, "x (median of pairs)"),
        ("case_large_plain_s", p, "s (best)"),
        ("case_large_level4_s", s, "s (best)"),
    ]);
    // --predict: the run with every dispatch timed, then the placement.
    let cost =
        simpler_swimlane::predicted::pipe_cost(simpler_replay::TimingParams::for_arch(&base.arch));
    let pred = Runtime::new(level4(Some(cost)), w.kernels())?;
    let shape = ChipShape {
        clusters: base.clusters,
        sched_threads: base.sched_threads,
        clock_hz: u64::from(base.arch.clock_mhz) * 1_000_000,
    };
    let run_pred = |rt: &Runtime| -> Result<f64> {
        let t = Instant::now();
        w.run("CaseLarge", 0, rt)?;
        let log = rt.take_swimlane().unwrap_or_default();
        let (g, _) = simpler_swimlane::predicted::graph_of(&log);
        std::hint::black_box(simpler_swimlane::predict::predict(
            &g,
            shape,
            &ChipParams::default(),
        ));
        Ok(t.elapsed().as_secs_f64())
    };
    let mut v = Vec::new();
    for _ in 0..a.reps {
        v.push((run_large(&plain)?, run_pred(&pred)?));
    }
    results.push((
        "case_large_predict_ratio",
        median(v.iter().map(|(p, r)| r / p)),
        "x (run + timing + placement vs plain run)",
    ));
    results.insert(0, ("wall_ratio", worst, "x (worst median, level 4)"));
    let mut config = chip_config(a)?;
    config.insert("tasks".into(), n.into());
    config.insert("reps".into(), a.reps.into());
    Ok(Outcome {
        name: "swimlane",
        results,
        config,
        target: "target: wall_ratio ≤ 1.10 at level 4; case_large_predict_ratio ≤ 2".into(),
    })
}
