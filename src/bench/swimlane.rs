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

/// The smallest of `v`.
fn best(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(f64::MAX, f64::min)
}

/// CPU seconds the whole process has used so far (every thread, the
/// ended ones too): a second view of a recording's cost that time the
/// machine gave other processes does not blur.
fn process_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a live, writable timespec for the call's duration;
    // the clock id is a constant the kernel always knows.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// A graph run's wall and the process's CPU seconds over it.
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

/// What [`pairs`] measured.
struct Pairs {
    /// Median over reps of recorded / plain.
    ratio: f64,
    /// The same for CPU seconds.
    cpu_ratio: f64,
    /// Median over reps of plain (second) / plain (first): what the
    /// machine's drift alone makes of two identical runs, the bench's
    /// resolution.
    null: f64,
    best_plain: f64,
    best_recorded: f64,
}

/// Plain vs level-4 runs of one graph, in the order plain, recorded,
/// recorded, plain per rep: a drift that is linear over the rep cancels
/// in (r1 + r2) / (p1 + p2), and p2 / p1 shows what is left of the noise.
fn pairs(
    reps: u32,
    plain: &Runtime,
    rec: &Runtime,
    run: &dyn Fn(&Runtime) -> Result<f64>,
) -> Result<Pairs> {
    let took = |rt: &Runtime| -> Result<Took> {
        let c = process_cpu_s();
        let wall = run(rt)?;
        Ok(Took {
            wall,
            cpu: process_cpu_s() - c,
        })
    };
    let mut v = Vec::new();
    for _ in 0..reps {
        let p1 = took(plain)?;
        let mut r = [p1; 2];
        for r in &mut r {
            *r = took(rec)?;
            if rec.take_swimlane().is_none() {
                bail!("the recording run recorded nothing");
            }
        }
        let p2 = took(plain)?;
        v.push(([p1, p2], r));
    }
    let ratio = |f: fn(&Took) -> f64| {
        median(
            v.iter()
                .map(|(p, r)| (f(&r[0]) + f(&r[1])) / (f(&p[0]) + f(&p[1]))),
        )
    };
    Ok(Pairs {
        ratio: ratio(|t| t.wall),
        cpu_ratio: ratio(|t| t.cpu),
        null: median(v.iter().map(|(p, _)| p[1].wall / p[0].wall)),
        best_plain: best(v.iter().flat_map(|x| x.0.map(|t| t.wall))),
        best_recorded: best(v.iter().flat_map(|x| x.1.map(|t| t.wall))),
    })
}

/// The bench.
pub fn swimlane(a: &BenchArgs) -> Result<Outcome> {
    let base = a.chip.config()?;
    let mut results = Vec::new();
    let flood = recording_cost(a, &base, "flood", &mut results)?;
    let large = recording_cost(a, &base, "case_large", &mut results)?;
    results.push((
        "case_large_predict_ratio",
        predict_cost(a, &base)?,
        "x (run + timing + placement vs plain run)",
    ));
    results.insert(
        0,
        ("wall_ratio", flood.max(large), "x (worst median, level 4)"),
    );
    let mut config = chip_config(a)?;
    config.insert("tasks".into(), a.tasks().into());
    config.insert("reps".into(), a.reps().into());
    Ok(Outcome {
        name: "swimlane",
        results,
        config,
        target: "target: wall_ratio ≤ 1.10 at level 4; case_large_predict_ratio ≤ 2".into(),
    })
}

fn level4(base: &RuntimeConfig, cost: Option<simpler_runtime::swimlane::CostFn>) -> RuntimeConfig {
    RuntimeConfig {
        swimlane: Some(SwimlaneConfig {
            level: 4,
            cost,
            background: false,
        }),
        ..base.clone()
    }
}

type Results = Vec<(&'static str, f64, &'static str)>;

/// Level 4 against plain on `graph` (`flood`: the dispatch bench's graph;
/// `case_large`); returns the median ratio.
fn recording_cost(
    a: &BenchArgs,
    base: &RuntimeConfig,
    graph: &'static str,
    out: &mut Results,
) -> Result<f64> {
    let w = simpler_workloads::find("paged_attention")?;
    let kernels = match graph {
        "flood" => flood::kernels(),
        _ => w.kernels(),
    };
    let plain = Runtime::new(base.clone(), kernels.clone())?;
    let rec = Runtime::new(level4(base, None), kernels)?;
    let n = a.tasks();
    let run = |rt: &Runtime| -> Result<f64> {
        let r = match graph {
            "flood" => flood::run_n(n, 0, rt)?.report,
            _ => w.run("CaseLarge", 0, rt)?.report,
        };
        Ok(r.wall.as_secs_f64())
    };
    let m = pairs(a.reps(), &plain, &rec, &run)?;
    let key = |k: &str| super::leak(format!("{graph}_{k}"));
    out.extend([
        (key("wall_ratio"), m.ratio, "x (median over reps, ABBA)"),
        (
            key("cpu_ratio"),
            m.cpu_ratio,
            "x (the same for the process's CPU seconds)",
        ),
        (
            key("null_ratio"),
            m.null,
            "x (plain / plain: the machine's noise)",
        ),
        (key("plain_s"), m.best_plain, "s (best)"),
        (key("level4_s"), m.best_recorded, "s (best)"),
        (
            key("best_ratio"),
            m.best_recorded / m.best_plain,
            "x (best / best: what noise on this machine only slows)",
        ),
    ]);
    Ok(m.ratio)
}

/// `--predict` on CaseLarge: the run with every dispatch timed, then the
/// graph and its placement, against a plain run; the median ratio.
fn predict_cost(a: &BenchArgs, base: &RuntimeConfig) -> Result<f64> {
    let w = simpler_workloads::find("paged_attention")?;
    let plain = Runtime::new(base.clone(), w.kernels())?;
    let cost =
        simpler_swimlane::predicted::pipe_cost(simpler_replay::TimingParams::for_arch(&base.arch));
    let pred = Runtime::new(level4(base, Some(cost)), w.kernels())?;
    let shape = ChipShape {
        clusters: base.clusters,
        sched_threads: base.sched_threads,
        clock_hz: u64::from(base.arch.clock_mhz) * 1_000_000,
    };
    let mut v = Vec::new();
    for _ in 0..a.reps() {
        // Like for like: the graph run's wall (the case's input set-up
        // and golden are outside both), plus taking the recording,
        // building the graph and placing it.
        let p = w.run("CaseLarge", 0, &plain)?.report.wall.as_secs_f64();
        let run = w.run("CaseLarge", 0, &pred)?.report.wall.as_secs_f64();
        let t = Instant::now();
        let log = pred.take_swimlane().unwrap_or_default();
        let (g, _) = simpler_swimlane::predicted::graph_of(&log);
        std::hint::black_box(simpler_swimlane::predict::predict(
            &g,
            shape,
            &ChipParams::default(),
        ));
        v.push((run + t.elapsed().as_secs_f64()) / p);
    }
    Ok(median(v.into_iter()))
}
