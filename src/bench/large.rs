//! `simpler bench large`: CaseLarge end to end in one process (DESIGN §10).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;
use simpler_dump::DumpConfig;
use simpler_runtime::{RunReport, Runtime, RuntimeConfig};
use simpler_workloads::paged_attention::{self, Inputs, PaCase};

use super::{chip_config, median, remove, Outcome};
use crate::cli::BenchArgs;

/// Phases of one CaseLarge run, as `simpler run` goes through them.
struct Phases {
    /// Runtime creation, input generation and upload.
    setup: Duration,
    /// Orchestration plus the graph run (`RunReport::wall`).
    report: RunReport,
    /// Download and the f64 golden.
    golden: Duration,
    /// All of the above.
    whole: Duration,
}

/// One CaseLarge run on a fresh runtime (fresh GM, as in a new process).
fn run_once(case: &PaCase, cfg: &RuntimeConfig, seed: u64) -> Result<Phases> {
    let t0 = Instant::now();
    let rt = Runtime::new(cfg.clone(), paged_attention::kernels())?;
    let inputs = Inputs::generate(case, seed);
    let (args, out_t) = inputs.upload(case, &rt)?;
    let setup = t0.elapsed();
    let report = rt.run(&args, paged_attention::orchestrate)?;
    let t1 = Instant::now();
    let out: Vec<f32> = rt.download_pod(&out_t)?;
    let golden = inputs.check(case, &out);
    if !golden.passed {
        bail!("CaseLarge failed its golden: {}", golden.detail);
    }
    let golden_s = t1.elapsed();
    drop(rt);
    Ok(Phases {
        setup,
        report,
        golden: golden_s,
        whole: t0.elapsed(),
    })
}

/// CaseLarge, `--reps` times without and with a level-2 tensor dump,
/// alternated. Times are medians; `edges_per_task` is the largest of the
/// reps (edges to producers that already finished are not wired, so the
/// count varies a little with timing; its bound does not).
pub(super) fn large(a: &BenchArgs) -> Result<Outcome> {
    let plain = a.chip.config()?;
    let case = PaCase::by_name("CaseLarge").context("CaseLarge is a bundled case")?;
    let tmp = tempfile::tempdir().context("temporary folder for the dumps")?;
    let _scratch = simpler_format::durable::scratch(tmp.path());
    let dir = tmp.path().join("tensor_dump");
    let dumping = RuntimeConfig {
        dump: Some(DumpConfig::new(&dir)),
        ..plain.clone()
    };
    let (mut runs, mut dump_whole) = (Vec::new(), Vec::new());
    for rep in 0..a.reps() {
        crate::progress::status(&format!(
            "CaseLarge plain and dumping, rep {} of {}",
            rep + 1,
            a.reps()
        ));
        runs.push(run_once(&case, &plain, 0)?);
        remove(&dir)?;
        let d = run_once(&case, &dumping, 0)?;
        let s = d
            .report
            .dump
            .as_ref()
            .context("the dump run wrote no dump")?;
        if s.dropped_records != 0 || s.truncated != 0 {
            bail!("the CaseLarge dump lost records");
        }
        dump_whole.push(d.whole.as_secs_f64());
    }
    remove(&dir)?;
    let mut config = chip_config(a)?;
    config.insert("case".into(), json!(case.name));
    config.insert("tasks".into(), json!(case.kernel_tasks()));
    config.insert("dump_level".into(), json!(2));
    Ok(Outcome {
        name: "large",
        results: results(&runs, &dump_whole, case.kernel_tasks() as f64),
        config,
        target: "target: edges_per_task ≤ 1.5, whole_s ≤ 0.45, whole_dump_s ≤ 0.6".into(),
    })
}

/// The metrics of `runs` (plain) and `dump_whole` (seconds of the dump runs).
fn results(
    runs: &[Phases],
    dump_whole: &[f64],
    tasks: f64,
) -> Vec<(&'static str, f64, &'static str)> {
    let med = |f: &dyn Fn(&Phases) -> f64| median(runs.iter().map(f));
    let edges = runs.iter().map(|r| r.report.edges).max().unwrap_or(0) as f64;
    vec![
        ("whole_s", med(&|r| r.whole.as_secs_f64()), "s (median)"),
        (
            "graph_run_s",
            med(&|r| r.report.wall.as_secs_f64()),
            "s (median)",
        ),
        (
            "edges_per_task",
            edges / tasks,
            "edges/task (most of the reps)",
        ),
        (
            "submit_us",
            med(&|r| r.report.orchestration.as_secs_f64()) / tasks * 1e6,
            "µs orchestrator time per submit (median)",
        ),
        (
            "whole_dump_s",
            median(dump_whole.iter().copied()),
            "s with --dump-tensor 2 (median)",
        ),
        (
            "setup_s",
            med(&|r| r.setup.as_secs_f64()),
            "s runtime + inputs + upload (median)",
        ),
        (
            "golden_s",
            med(&|r| r.golden.as_secs_f64()),
            "s download + f64 golden (median)",
        ),
        ("edges", edges, "dependency edges (most of the reps)"),
    ]
}
