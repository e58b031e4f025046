//! `run --swimlane [LEVEL] --predict`: turning the flags into a recording
//! configuration, and writing the recorded run's files into its run
//! directory (DESIGN §12).

use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use simpler_format::words::count;
use simpler_runtime::{Runtime, RuntimeConfig, SwimlaneConfig};
use simpler_swimlane::predict::{ChipParams, ChipShape};

/// Run timeline flags of `simpler run`.
#[derive(Debug, Clone, Args)]
pub struct TimelineArgs {
    /// Record the run timeline and write the swimlane files into the run
    /// directory: 1 core start/end, 2 + scheduler dispatch/finish, 3 +
    /// scheduler loop phases, 4 (the value when the flag is given bare) +
    /// orchestrator submits.
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "4")]
    pub swimlane: Option<i64>,
    /// Time every dispatch on the pipe model and place it on a model of
    /// the chip: writes `predicted/` (records, Perfetto trace, pmu.csv)
    /// and prints the predicted makespan, critical path and bottleneck
    /// pipe per func. Records at level 2 unless --swimlane says more;
    /// without --swimlane only `predicted/` is written.
    #[arg(long)]
    pub predict: bool,
}

/// Validate the flags and put the recording into `cfg`; `true` when
/// something is recorded.
pub fn configure(a: &TimelineArgs, cfg: &mut RuntimeConfig) -> Result<bool> {
    let level = match (a.swimlane, a.predict) {
        (None, false) => return Ok(false),
        (None, true) => 2,
        (Some(l @ 1..=4), _) => l as u8,
        (Some(l), _) => bail!("--swimlane {l}: expected a level in 1..=4 (bare flag: 4)"),
    };
    let cost = a.predict.then(|| {
        simpler_swimlane::predicted::pipe_cost(simpler_replay::TimingParams::for_arch(&cfg.arch))
    });
    // The CLI always takes the log: start it while the golden is checked.
    cfg.swimlane = Some(SwimlaneConfig {
        level,
        cost,
        background: true,
    });
    Ok(true)
}

/// The dump's durable writer: temporary files and created folders are
/// removed on a signal. Names the file it writes on the progress line.
struct DurableSink<'a>(&'a crate::progress::Steps);

impl simpler_swimlane::Sink for DurableSink<'_> {
    fn write(
        &self,
        path: &Path,
        body: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        self.0.step(&format!("writing {name}"));
        simpler_format::durable::write_atomic(path, |w| body(w)).map_err(|e| e.into_io())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        simpler_format::durable::create_dir(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        simpler_format::durable::keep_dir(path);
        Ok(())
    }
}

/// Write what `rt`'s last run recorded into `run_dir` and say what was
/// written (on stdout, or stderr after a failed run). For `run`'s way out:
/// the recording is not freed.
pub fn write(
    rt: &Runtime,
    cfg: &RuntimeConfig,
    run_dir: &Path,
    workload: &str,
    case: &str,
    (observed, predict): (bool, bool),
    failed: bool,
) -> Result<()> {
    let Some(log) = rt.take_swimlane() else {
        return Ok(());
    };
    let say = |s: String| match failed {
        true => eprint!("{s}"),
        false => print!("{s}"),
    };
    let started = Instant::now();
    let shape = ChipShape {
        clusters: cfg.clusters,
        sched_threads: cfg.sched_threads,
        clock_hz: u64::from(cfg.arch.clock_mhz) * 1_000_000,
    };
    let out = simpler_swimlane::Outputs {
        observed,
        predict: predict.then(|| (shape, ChipParams::default())),
    };
    let first = if predict {
        "predicting"
    } else {
        "building the records"
    };
    let summary = crate::progress::in_steps("swimlane files", first, |steps| {
        simpler_swimlane::write_run(run_dir, &log, workload, case, out, &DurableSink(steps))
    })
    .context("cannot write the swimlane files")?;
    // With --predict alone nothing observed is written: name only what is.
    if observed {
        say(format!(
            "swimlane (level {}): {}, {}, {} -> {}\n",
            log.level,
            count(log.dispatches.len() as u64, "dispatch", "dispatches"),
            count(log.tasks.len() as u64, "task", "tasks"),
            // The graph's, rebuilt off the run's clock (the run line
            // counts the edges the run waited on; see docs/swimlane.md).
            count(log.edges.len() as u64, "graph edge", "graph edges"),
            run_dir
                .join(simpler_format::swimlane::RECORDS_FILE)
                .display()
        ));
    }
    if let Some(p) = summary {
        say(simpler_swimlane::report::render_prediction(
            &p,
            cfg.arch.name,
            cfg.clusters,
            10,
        ));
        say(format!(
            "prediction: {:.3} s (graph, placement, files) -> {}\n",
            started.elapsed().as_secs_f64(),
            run_dir
                .join(simpler_format::swimlane::PREDICTED_DIR)
                .display()
        ));
    }
    // The process ends right after (`run` prints its verdict and exits):
    // freeing the log's many small buffers took 8–12 ms on CaseLarge, for
    // memory the OS takes back at exit anyway.
    std::mem::forget(log);
    Ok(())
}
