//! `simpler bench`: ratios measured inside one process (DESIGN §10), so the
//! figures hold on a noisy machine. Each bench alternates its A/B runs and
//! reports the best repetition.

use std::{
    path::Path,
    process::ExitCode,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use serde_json::{json, Map, Value};
use simpler_core::{topology::CoreType, DType};
use simpler_dump::{DumpConfig, DumpSummary};
use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs};
use simpler_workloads::{flood, vector_example};

use crate::cli::{BenchArgs, BenchName};
use crate::registry::Workloads;

mod dump_overhead;
mod large;
mod readers;
mod submits;
mod swimlane;

/// One bench's outcome.
struct Outcome {
    name: &'static str,
    results: Vec<(&'static str, f64, &'static str)>,
    config: Map<String, Value>,
    target: String,
}

/// Run the bench and print a table or one JSON object.
pub(crate) fn bench(a: &BenchArgs, ws: &Workloads) -> Result<ExitCode> {
    check_flags(a)?;
    let name = a.name.to_possible_value().map(|v| v.get_name().to_string());
    let status = crate::progress::status_line(&format!("bench {}", name.unwrap_or_default()));
    let out = match a.name {
        BenchName::Dispatch => dispatch(a)?,
        BenchName::DumpOverhead => dump_overhead::dump_overhead(a, ws)?,
        BenchName::DumpMemory => dump_memory(a)?,
        BenchName::Replay => replay(a, ws)?,
        BenchName::Large => large::large(a)?,
        BenchName::Submits => submits::submits(a)?,
        BenchName::SubmitInstructions => submits::submit_instructions(a)?,
        BenchName::Readers => readers(a)?,
        BenchName::Swimlane => swimlane::swimlane(a)?,
    };
    drop(status);
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
        print!("{}", table(&out));
    }
    Ok(ExitCode::SUCCESS)
}

/// The human-readable table: one row per metric, names, values and units
/// each in a column as wide as its widest entry.
fn table(out: &Outcome) -> String {
    let values: Vec<String> = out
        .results
        .iter()
        .map(|(_, v, _)| format!("{v:.3}"))
        .collect();
    let kw = out
        .results
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let vw = values.iter().map(String::len).max().unwrap_or(0);
    let mut s = format!("bench {}  ({})\n", out.name, out.target);
    for ((k, _, unit), v) in out.results.iter().zip(&values) {
        s.push_str(format!("  {k:<kw$}  {v:>vw$}  {unit}").trim_end());
        s.push('\n');
    }
    let cfg: Vec<String> = out.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    s.push_str(&format!("  config: {}\n", cfg.join(" ")));
    s
}

/// Refuse a flag the bench does not use: silently ignoring it would
/// report figures for something other than what was asked.
fn check_flags(a: &BenchArgs) -> Result<()> {
    use BenchName::*;
    let name = a
        .name
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let unused = [
        (
            "--tasks",
            a.tasks.is_some(),
            !matches!(a.name, Dispatch | Swimlane),
            "dispatch and swimlane",
        ),
        (
            "--batches",
            a.batches.is_some(),
            !matches!(a.name, Submits | SubmitInstructions),
            "submits and submit-instructions",
        ),
        (
            "--reps",
            a.reps.is_some(),
            matches!(a.name, DumpMemory | SubmitInstructions),
            "every bench but dump-memory and submit-instructions",
        ),
    ];
    for (flag, given, unused, used_by) in unused {
        if given && unused {
            bail!("{flag} does not apply to bench {name}: it is used by {used_by}");
        }
    }
    Ok(())
}

/// Per-task runtime overhead: a flood of tiny independent AIV tasks through
/// the whole runtime vs the same kernel called in a loop on one core; and,
/// in the same reps, the floor: the bare hand-off pipeline of the same
/// thread shape ([`simpler_runtime::floor`]), so `floor_ratio` says how far
/// the runtime is above what its threads alone cost on this machine now.
fn dispatch(a: &BenchArgs) -> Result<Outcome> {
    let cfg = a.chip.config()?;
    let n = a.tasks();
    let rt = Runtime::new(cfg.clone(), flood::kernels())?;
    let mut best_flood = Duration::MAX;
    let mut best_loop = Duration::MAX;
    let mut best_floor = Duration::MAX;
    // The best flood's orchestrator busy time (its orchestration less its
    // waits): near the flood's wall, the orchestrator bounds the flood;
    // well below it, the workers do.
    let mut best_busy = Duration::ZERO;
    let workers = cfg.workers as usize;
    for rep in 0..a.reps() {
        crate::progress::status(&format!(
            "flood, kernel loop and floor, rep {} of {}",
            rep + 1,
            a.reps()
        ));
        let run = flood::run_n(n, u64::from(rep), &rt).context("flood run")?;
        if !run.golden.passed {
            bail!("flood produced wrong results: {}", run.golden.detail);
        }
        if run.report.wall < best_flood {
            (best_flood, best_busy) = (run.report.wall, run.report.orchestration);
        }
        let lp = flood::flood_kernel_loop(u64::from(n)).context("kernel loop baseline")?;
        best_loop = best_loop.min(lp);
        let fl = simpler_runtime::floor::floor_pipeline(
            u64::from(n),
            workers,
            u64::from(cfg.task_window),
        )
        .context("floor pipeline")?;
        best_floor = best_floor.min(fl);
    }
    let us_per_task = (best_flood.as_secs_f64() - best_loop.as_secs_f64()) / f64::from(n) * 1e6;
    let floor_us = best_floor.as_secs_f64() / f64::from(n) * 1e6;
    let mut config = Map::new();
    config.insert("tasks".into(), json!(n));
    config.insert("reps".into(), json!(a.reps()));
    config.insert("clusters".into(), json!(cfg.clusters));
    config.insert("sched_threads".into(), json!(cfg.sched_threads));
    config.insert("workers".into(), json!(cfg.workers));
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
            (
                "floor_us_per_task",
                floor_us,
                "µs/task, bare hand-off pipeline",
            ),
            ("floor_ratio", us_per_task / floor_us, "× the floor"),
            ("flood_wall_s", best_flood.as_secs_f64(), "s"),
            ("loop_wall_s", best_loop.as_secs_f64(), "s"),
            (
                "orch_busy_share",
                best_busy.as_secs_f64() / best_flood.as_secs_f64(),
                "of the flood the orchestrator was busy (near 1: it bounds the flood)",
            ),
        ],
        config,
        target: "target: us_per_task ≤ 1 on 2 CPUs, floor_ratio ≤ 1.5".into(),
    })
}

fn chip_config(a: &BenchArgs) -> Result<Map<String, Value>> {
    let cfg = a.chip.config()?;
    let mut m = Map::new();
    m.insert("reps".into(), json!(a.reps()));
    m.insert("clusters".into(), json!(cfg.clusters));
    m.insert("sched_threads".into(), json!(cfg.sched_threads));
    m.insert("workers".into(), json!(cfg.workers));
    m.insert("arch".into(), json!(cfg.arch.name));
    m.insert(
        "cpus".into(),
        json!(std::thread::available_parallelism().map_or(0, |p| p.get())),
    );
    Ok(m)
}

/// Bytes a dump wrote: payload plus manifest.
fn dumped_bytes(d: &DumpSummary) -> u64 {
    let json = d.json_path.as_ref().and_then(|p| std::fs::metadata(p).ok());
    d.bin_bytes + json.map_or(0, |m| m.len())
}

/// The median (the mean of the middle two for an even count).
fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Delete a previous rep's output (file or folder), if any.
fn remove(path: &Path) -> Result<()> {
    let r = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot delete {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// A metric name built at run time (the table lives as long as the process).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Peak RSS (VmHWM) of this process in MiB.
fn peak_rss_mib() -> Result<f64> {
    let s = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let kb: f64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")?;
    Ok(kb / 1024.0)
}

/// Peak RSS while a run dumps more than 1 GiB: 600 tasks each read a 1 MiB
/// block of one 4 MiB input and write a 1 MiB block (level 2 dumps both),
/// so GM stays small and the peak measures the dump pipeline itself.
fn dump_memory(a: &BenchArgs) -> Result<Outcome> {
    // Forget the peak of anything before (Linux: "5" resets VmHWM).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let tmp = tempfile::tempdir().context("temporary folder for the dump")?;
    let _scratch = simpler_format::durable::scratch(tmp.path());
    let cfg = RuntimeConfig {
        dump: Some(DumpConfig::new(tmp.path().join("tensor_dump"))),
        gm_bytes: 256 << 20,
        ..a.chip.config()?
    };
    let kernel = KernelDef::new(
        vector_example::FUNC_ADD_SCALAR,
        "kernel_add_scalar",
        CoreType::Aiv,
        vector_example::kernel_add_scalar,
    );
    let rt = Runtime::new(cfg, vec![kernel])?;
    let (rows, cols, block_rows, tasks) = (64u32, 16384u32, 16u32, 600u32);
    let xs: Vec<f32> = (0..rows * cols).map(|i| (i % 1000) as f32).collect();
    let x = rt.upload_pod(&xs, &[rows, cols], DType::Float32)?;
    let y = rt.alloc_tensor(&[rows, cols], DType::Float32)?;
    let before = peak_rss_mib()?;
    crate::progress::status(&format!("{tasks} tasks dumping 1 MiB blocks"));
    let report = rt.run(&OrchArgs::new().tensor(x).output(y), |o, args| {
        let (x, y) = (args.tensor_at(0)?, args.tensor_at(1)?);
        for i in 0..tasks {
            let r0 = (i % (rows / block_rows)) * block_rows;
            o.submit(
                Kernels::Aiv(vector_example::FUNC_ADD_SCALAR),
                TaskArgs::new()
                    .input(&x.view(&[r0, 0], &[block_rows, cols])?)
                    .output_existing(&y.view(&[r0, 0], &[block_rows, cols])?)
                    .scalar_f32(i as f32),
            )?;
        }
        Ok(())
    })?;
    let peak = peak_rss_mib()?;
    let d = report.dump.context("no dump written")?;
    let dumped = dumped_bytes(&d) as f64 / f64::from(1 << 30);
    if dumped < 1.0 {
        bail!("dumped only {dumped:.2} GiB; the bench needs at least 1 GiB");
    }
    let mut config = chip_config(a)?;
    config.insert("tasks".into(), json!(tasks));
    config.insert(
        "arena_bytes".into(),
        json!(simpler_dump::DEFAULT_ARENA_BYTES),
    );
    Ok(Outcome {
        name: "dump-memory",
        results: vec![
            ("peak_rss_mib", peak, "MiB"),
            ("dumped_gib", dumped, "GiB"),
            ("rss_before_run_mib", before, "MiB"),
        ],
        config,
        target: "target: peak_rss_mib ≤ 300 while dumping ≥ 1 GiB".into(),
    })
}

/// Run `case` of `w` with the tensor, args and kernel args dumps into
/// `run_dir` (as `--dump-all`).
fn run_with_all_dumps(
    w: &dyn simpler_workloads::Workload,
    case: &str,
    cfg: &RuntimeConfig,
    run_dir: &Path,
) -> Result<()> {
    let mut d = DumpConfig::new(run_dir.join("tensor_dump"));
    d.args = true;
    d.kernel_args = true;
    d.workload = w.name().into();
    d.case = case.into();
    let rt = Runtime::new(
        RuntimeConfig {
            dump: Some(d),
            ..cfg.clone()
        },
        w.kernels(),
    )?;
    w.run(case, 0, &rt).context("CaseSmall1 run with dumps")?;
    Ok(())
}

/// `insight-trace` of a CaseSmall1 SF dispatch (func 1, its first
/// dispatch) from an existing `--dump-all` dump, end to end: `wall_s` runs
/// the `simpler insight-trace` command as a process (reading the dumps,
/// rebuilding, running, exporting, verifying, writing the workspace), best
/// of `--reps`; `inproc_wall_s` is the same work inside this process.
/// `instr_per_s` is the pipe simulator alone on 2 M synthetic
/// instructions ([`simpler_replay::bench::simulator_throughput`]).
fn replay(a: &BenchArgs, ws: &Workloads) -> Result<Outcome> {
    let cfg = a.chip.config()?;
    let tmp = tempfile::tempdir().context("temporary folder for the dump")?;
    let _scratch = simpler_format::durable::scratch(tmp.path());
    let run_dir = tmp.path().join("run");
    let w = ws.find("paged_attention")?;
    let (case, func_id) = ("CaseSmall1", 1u32);
    run_with_all_dumps(w, case, &cfg, &run_dir)?;

    let exe = std::env::current_exe().context("path of the simpler binary")?;
    let args = |out: &Path| {
        crate::insight::InsightArgs::one_dispatch(w.name(), case, func_id, &run_dir, out, &a.chip)
    };
    let (mut best_proc, mut best_inproc) = (Duration::MAX, Duration::MAX);
    let mut instructions = 0;
    for rep in 0..a.reps() {
        crate::progress::status(&format!("replay, rep {} of {}", rep + 1, a.reps()));
        let out = tmp.path().join(format!("ws_proc_{rep}"));
        let t = Instant::now();
        let o = std::process::Command::new(&exe)
            .args(["insight-trace", w.name(), "--case", case, "--func-id", "1"])
            .arg("--dump-dir")
            .arg(&run_dir)
            .arg("--output")
            .arg(&out)
            .args([
                "--arch",
                &a.chip.arch,
                "--clusters",
                &a.chip.clusters.to_string(),
            ])
            .output()
            .context("running simpler insight-trace")?;
        best_proc = best_proc.min(t.elapsed());
        if !o.status.success() {
            bail!(
                "simpler insight-trace exited with {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let out = tmp.path().join(format!("ws_inproc_{rep}"));
        let t = Instant::now();
        let r = crate::insight::run(&args(&out), ws, &mut std::io::sink())?;
        best_inproc = best_inproc.min(t.elapsed());
        if !r.report.overall_pass {
            bail!("the replay of the SF dispatch did not verify bit-exact");
        }
        instructions = r.export.instructions;
    }
    let n = 2_000_000;
    crate::progress::status("pipe simulator on 2 M instructions");
    let params = simpler_replay::TimingParams::for_arch(&cfg.arch);
    let mut best_sim = simpler_replay::bench::simulator_throughput(&params, n);
    for _ in 1..a.reps() {
        let s = simpler_replay::bench::simulator_throughput(&params, n);
        if s.instr_per_s > best_sim.instr_per_s {
            best_sim = s;
        }
    }
    let mut config = chip_config(a)?;
    config.insert("workload".into(), json!(w.name()));
    config.insert("case".into(), json!(case));
    config.insert("func_id".into(), json!(func_id));
    config.insert("sim_instructions".into(), json!(n));
    Ok(Outcome {
        name: "replay",
        results: vec![
            (
                "wall_s",
                best_proc.as_secs_f64(),
                "s (simpler insight-trace process)",
            ),
            (
                "instr_per_s",
                best_sim.instr_per_s,
                "simulated instructions/s",
            ),
            (
                "inproc_wall_s",
                best_inproc.as_secs_f64(),
                "s (same work in-process)",
            ),
            (
                "replay_instructions",
                instructions as f64,
                "instructions in the SF replay",
            ),
        ],
        config,
        target: "target: wall_s ≤ 0.5, instr_per_s ≥ 1e6".into(),
    })
}

/// `dump view` (first page, full listing) and `dump diff` of two CaseLarge
/// dumps, in child processes (`bench/readers.rs`).
fn readers(a: &BenchArgs) -> Result<Outcome> {
    let f = readers::measure(a)?;
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let mut config = chip_config(a)?;
    config.insert("case".into(), json!("CaseLarge"));
    config.insert("reps".into(), json!(a.reps()));
    config.insert("manifest_mib".into(), json!(mib(f.manifest_bytes)));
    config.insert("records".into(), json!(f.records));
    Ok(Outcome {
        name: "readers",
        results: vec![
            ("view_first_page_s", f.first_page.as_secs_f64(), "s"),
            ("view_full_s", f.full_view.as_secs_f64(), "s"),
            ("view_peak_rss_mib", mib(f.view_rss), "MiB"),
            ("diff_s", f.diff.as_secs_f64(), "s"),
            ("diff_peak_rss_mib", mib(f.diff_rss), "MiB"),
            ("diff_cpu_s", f.diff_cpu.as_secs_f64(), "s"),
        ],
        config,
        target: "first page <= 0.2 s; peak RSS <= 100 MiB view, <= 200 MiB diff; diff <= 3 s"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::{median, table, Outcome};

    /// Issue 15: misaligned bench columns (a metric name longer than
    /// the fixed 22 columns pushed its value out of line).
    #[test]
    fn the_table_aligns_names_values_and_units() {
        let out = Outcome {
            name: "x",
            results: vec![
                ("wall_ratio", 1.25, "x (worst case)"),
                ("case_large_best_of_ratio_long_name", 12345.5, "x"),
                ("n", 0.0, ""),
            ],
            config: serde_json::Map::new(),
            target: "t".into(),
        };
        let text = table(&out);
        let rows: Vec<&str> = text.lines().skip(1).take(3).collect();
        // Every value ends in the same column; every unit starts in one.
        let ends: Vec<usize> = rows.iter().map(|r| r.find(".").unwrap() + 4).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{text}");
        assert_eq!(rows[0].find("x (worst").unwrap(), ends[0] + 2, "{text}");
        assert_eq!(
            rows[2],
            format!("  n{}0.000", " ".repeat(ends[0] - 3 - 5)),
            "{text}"
        );
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median([4.0, 1.0, 3.0, 2.0].into_iter()), 2.5);
        assert!(median(std::iter::empty()).is_nan());
    }
}
