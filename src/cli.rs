//! The whole command line as a library call ([`main`]), and its grammar
//! (clap derive; [`command`] gives it to tools such as shell completion
//! generators).

use std::{ffi::OsString, process::ExitCode, time::Duration};

use anyhow::{bail, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use simpler_chip::ArchProfile;
use simpler_runtime::{RaceCheck, RuntimeConfig};
use simpler_workloads::Workload;

use crate::registry::Workloads;

/// Run the `simpler` command line over the bundled workloads plus
/// `workloads` (yours; a name that clashes with a bundled one is refused
/// at startup) and return the process's exit code: 0 ok, 1 a check
/// failed, 2 bad input or an I/O error, 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).
///
/// Reads the process's arguments and owns its SIGINT/SIGTERM handling:
/// call it once, from `main`.
pub fn main(workloads: Vec<Box<dyn Workload>>) -> ExitCode {
    quiet_panics();
    // Before anything is created: temporary files never outlive a signal.
    if let Err(e) = crate::signals::install() {
        eprintln!("error: {e:#}");
        return ExitCode::from(2);
    }
    let ws = match Workloads::new(workloads) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let args = match parse(std::env::args_os()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    crate::progress::set_quiet(args.quiet);
    match dispatch(args, &ws) {
        Ok(code) => code,
        // `simpler … | head`: the reader left; stop quietly, as other tools do.
        Err(e) if broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The command-line grammar as clap sees it: every subcommand and flag.
/// Numbers may be negative, so that `--seed -1` is a value the flag
/// refuses in its own words rather than an unknown flag; a flag whose
/// value is optional (`--dump-tensor [LEVEL]`) takes it only as a number,
/// so `--dump-tensor paged_attention` is the bare flag and the workload.
pub fn command() -> clap::Command {
    fn adjust(c: clap::Command) -> clap::Command {
        c.mut_args(|a| {
            if crate::args::optional_value(&a) {
                a.allow_negative_numbers(true).require_equals(true)
            } else if a.get_action().takes_values() && !a.is_positional() {
                a.allow_negative_numbers(true)
            } else {
                a
            }
        })
        .mut_subcommands(adjust)
    }
    adjust(Cli::command())
}

/// Parse `argv`; help and version are printed here (exit 0), a bad
/// command line gets one line on stderr (exit 2).
fn parse(argv: impl IntoIterator<Item = OsString>) -> Result<Cli, ExitCode> {
    let argv: Vec<OsString> = argv.into_iter().collect();
    let name = argv
        .first()
        .map(std::path::Path::new)
        .and_then(|p| p.file_stem());
    let name = name.and_then(|n| n.to_str()).unwrap_or("simpler");
    let name = PROGRAM.get_or_init(|| name.to_string());
    let mut cmd = command().name(name.as_str()).bin_name(name.as_str());
    let joined = crate::args::join_optional_values(&cmd, argv);
    let help = crate::args::command_path(&cmd, &joined.argv);
    let report = |e: clap::Error| {
        let hint = crate::args::left_word_hint(&e, &joined.left);
        crate::args::report(&e, &help, hint)
    };
    let matches = cmd.try_get_matches_from_mut(&joined.argv).map_err(report)?;
    Cli::from_arg_matches(&matches).map_err(report)
}

static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The name this program was started by (`simpler`, or a kernel crate's
/// own binary), for messages that name a command to run next.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or("simpler", String::as_str)
}

/// True when a write to a closed pipe is somewhere in the error chain.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn dispatch(args: Cli, ws: &Workloads) -> Result<ExitCode> {
    match args.command {
        Command::Run(a) => crate::run::run(&a, ws),
        Command::List => crate::list::list(ws),
        Command::Bench(a) => crate::bench::bench(&a, ws),
        Command::Dump(DumpCommand::View(a)) => crate::dump_view::view(&a),
        Command::Dump(DumpCommand::Diff(a)) => crate::dump_diff::diff(&a),
        Command::InsightTrace(a) => crate::insight::insight_trace(&a, ws),
        Command::Swimlane(a) => crate::swimlane_cmd::swimlane(&a),
    }
}

/// Kernel panics are caught by the runtime and reported as errors naming the
/// task; the default hook would also print a "thread panicked" line for them.
/// Keep one line for panics elsewhere (a bug in simpler itself), no backtrace.
/// A closed stdout (`| head`) ends the program quietly.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        // `simpler … | head`: the reader left; stop quietly like other tools.
        if info.to_string().contains("Broken pipe") {
            std::process::exit(0);
        }
        if !simpler_isa::kernel::in_kernel() {
            eprintln!("internal error: {info}");
        }
    }));
}

/// Runtime for task graphs on a simulated tile accelerator, built for diagnostics.
#[derive(Debug, Parser)]
#[command(name = "simpler", version, about)]
pub(crate) struct Cli {
    /// No progress bars (they are drawn only on a terminal anyway).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a workload and check its golden (exit 1 on FAIL).
    Run(RunArgs),
    /// List workloads, their cases and their kernels (func id, core type).
    List,
    /// Measure the runtime: ratios and counts taken inside one process, so
    /// they hold on a noisy machine (`--json` for one machine-readable
    /// object).
    Bench(BenchArgs),
    /// Read dumps: list, filter and export records.
    #[command(subcommand)]
    Dump(DumpCommand),
    /// Replay one kernel dispatch from a dump on the pipe simulator: trace
    /// for MindStudio Insight / Perfetto, bit-exact check against the dump
    /// (exit 1 on mismatch).
    InsightTrace(crate::insight::InsightArgs),
    /// Where the time of a run went: per-func table, critical path,
    /// scheduler overhead, from its swimlane files (`run --swimlane`);
    /// `--check` tests them against the upstream tools' requirements.
    Swimlane(crate::swimlane_cmd::SwimlaneArgs),
}

/// `simpler dump …`.
#[derive(Debug, Subcommand)]
pub(crate) enum DumpCommand {
    /// List a tensor dump's records (default: the newest
    /// `outputs/*/tensor_dump`), filter them, export them as txt or npy.
    View(crate::dump_view::ViewArgs),
    /// Compare two tensor dumps record by record: bit-equality, max abs/rel
    /// error, cosine similarity; pass/fail by --rtol/--atol (exit 1 on any
    /// failing or unpaired record).
    Diff(crate::dump_diff::DiffArgs),
}

/// Chip and runtime shape, shared by every command that runs something.
#[derive(Debug, Clone, Args)]
pub(crate) struct ChipArgs {
    /// Architecture profile.
    #[arg(long, default_value = "a2a3", value_parser = ["a2a3", "a5"])]
    pub arch: String,
    /// Clusters (1 AIC + 2 AIV each).
    #[arg(long, default_value_t = 8)]
    pub clusters: u32,
    /// Schedulers of the simulated AICPU (logical: a timeline track each).
    #[arg(long, default_value_t = 3)]
    pub sched_threads: u32,
    /// Worker threads that run kernels, 1 to 256 (default: the machine's
    /// available parallelism).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_workers)]
    pub workers: Option<u32>,
    /// Global memory to reserve, in MiB (1 to 1048576, i.e. 1 TiB).
    #[arg(long, default_value_t = 4096, value_name = "MIB", allow_hyphen_values = true, value_parser = parse_gm_mib)]
    pub gm_mib: u64,
    /// Stop the run after this many seconds (more than 0, at most 1e9);
    /// its dump is kept, marked incomplete, with the hang snapshot.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = parse_timeout)]
    pub timeout: Option<f64>,
    /// GM bytes written by two dispatches that may run at the same time
    /// (SPMD blocks of a task, MIX members, `no_dep` tasks): `warn` prints
    /// each race and counts it, `error` fails the run, `off` skips the check.
    #[arg(long, default_value = "warn", value_name = "MODE", value_parser = ["off", "warn", "error"])]
    pub racecheck: String,
}

/// Largest `--gm-mib`: 1 TiB.
pub(crate) const MAX_GM_MIB: u64 = 1 << 20;
/// Largest `--timeout`, in seconds (about 31 years).
pub(crate) const MAX_TIMEOUT_S: f64 = 1e9;
/// Largest `--dump-arena-kib`: 1 GiB per producer buffer.
pub(crate) const MAX_ARENA_KIB: u64 = 1 << 20;

/// `--timeout`: positive, finite seconds up to [`MAX_TIMEOUT_S`].
fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t <= MAX_TIMEOUT_S => Ok(t),
        _ => Err("expected seconds in (0, 1e9]".into()),
    }
}

/// `--workers`: a whole number in `1..=MAX_WORKERS`.
fn parse_workers(s: &str) -> Result<u32, String> {
    let max = simpler_runtime::MAX_WORKERS;
    parse_count(s, u64::from(max), "worker threads").map(|n| n as u32)
}

/// A whole number in `1..=max` (of `unit`s).
fn parse_count(s: &str, max: u64, unit: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number of {unit} in 1..={max}")),
    }
}

/// `--gm-mib`: 1 MiB to [`MAX_GM_MIB`].
fn parse_gm_mib(s: &str) -> Result<u64, String> {
    parse_count(s, MAX_GM_MIB, "MiB")
}

/// `--dump-arena-kib`: 1 KiB to [`MAX_ARENA_KIB`].
fn parse_arena_kib(s: &str) -> Result<u64, String> {
    parse_count(s, MAX_ARENA_KIB, "KiB")
}

impl ChipArgs {
    /// The runtime configuration these flags describe.
    pub(crate) fn config(&self) -> Result<RuntimeConfig> {
        let Some(arch) = ArchProfile::by_name(&self.arch) else {
            bail!(
                "--arch {}: expected one of {:?}",
                self.arch,
                ArchProfile::NAMES
            );
        };
        let timeout = match self.timeout {
            None => None,
            Some(t) if t > 0.0 && t <= MAX_TIMEOUT_S => Some(Duration::from_secs_f64(t)),
            Some(t) => bail!("--timeout {t}: expected seconds in (0, 1e9]"),
        };
        if !(1..=MAX_GM_MIB).contains(&self.gm_mib) {
            bail!("--gm-mib {}: expected MiB in 1..={MAX_GM_MIB}", self.gm_mib);
        }
        let Some(racecheck) = RaceCheck::from_name(&self.racecheck) else {
            bail!(
                "--racecheck {}: expected off, warn or error",
                self.racecheck
            );
        };
        Ok(RuntimeConfig {
            arch,
            clusters: self.clusters,
            sched_threads: self.sched_threads,
            workers: self
                .workers
                .unwrap_or_else(simpler_runtime::default_workers),
            gm_bytes: self.gm_mib << 20,
            timeout,
            cancel: crate::signals::token(),
            racecheck,
            ..Default::default()
        })
    }
}

/// `simpler run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Workload name (see `simpler list`).
    pub workload: String,
    /// Case (default: the workload's first case).
    #[arg(long)]
    pub case: Option<String>,
    /// Seed for the generated inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Chip shape.
    #[command(flatten)]
    pub chip: ChipArgs,
    /// Dumps.
    #[command(flatten)]
    pub dump: DumpArgs,
    /// Run timeline.
    #[command(flatten)]
    pub timeline: crate::swimlane_cfg::TimelineArgs,
}

/// What to dump and where.
#[derive(Debug, Clone, Args)]
pub(crate) struct DumpArgs {
    /// Dump task tensors: 1 = args marked with .dump(), 2 = all (the value
    /// when the flag is given bare), 3 = metadata for all + payload for
    /// marked, 0 = off.
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "2")]
    pub dump_tensor: Option<u8>,
    /// Write `args_dump.json`: the orchestration's own arguments.
    #[arg(long)]
    pub dump_args: bool,
    /// Write `kernel_args_dump.json`: every dispatch's 50-slot argument
    /// array as the core saw it, with its identity (for `insight-trace`).
    #[arg(long)]
    pub dump_kernel_args: bool,
    /// All three dumps, the tensor dump at level 2.
    #[arg(long)]
    pub dump_all: bool,
    /// What producers do when the collector falls behind: `block` waits
    /// (loses nothing), `drop` never waits and counts every loss.
    #[arg(long, default_value = "block", value_name = "POLICY")]
    pub dump_policy: String,
    /// File layout: `native` (tensor_dump/) or `upstream` (the
    /// upstream runtime's args_dump/{args_dump.json, args.bin}, its tools
    /// read it; orchestration and kernel args dumps beside the folder as
    /// orch_args_dump.json and kernel_args_dump.json).
    #[arg(long, default_value = "native", value_name = "LAYOUT")]
    pub dump_layout: String,
    /// Payload buffer per worker thread, in KiB (bounds dump memory;
    /// 1 to 1048576).
    #[arg(
        long,
        default_value_t = (simpler_dump::DEFAULT_ARENA_BYTES >> 10) as u64,
        value_name = "KIB",
        allow_hyphen_values = true,
        value_parser = parse_arena_kib
    )]
    pub dump_arena_kib: u64,
    /// Run directory (default `outputs/<workload>_<case>_<YYYYmmdd_HHMMSS>/`),
    /// created atomically: an existing one is never overwritten, and two
    /// runs never share one.
    #[arg(long, value_name = "DIR")]
    pub output: Option<std::path::PathBuf>,
}

/// Benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchName {
    /// Per-task runtime overhead: flood of tiny tasks vs the same kernels in a loop.
    Dispatch,
    /// CaseBench and CaseLarge with `--dump-tensor 2` vs without, alternated.
    DumpOverhead,
    /// Peak RSS while dumping more than 1 GiB.
    DumpMemory,
    /// `insight-trace` of a CaseSmall1 SF dispatch end to end, and the pipe
    /// simulator's instructions per second.
    Replay,
    /// CaseLarge end to end in one process, without and with a tensor
    /// dump: whole and graph-run seconds, edges per task, µs per submit.
    Large,
    /// CaseLarge's orchestration (`--batches` batches) on kernels that do
    /// nothing: what submitting costs the orchestrator.
    Submits,
    /// `submits` under callgrind: instructions per task and per submit
    /// (needs valgrind; skipped with a message without it).
    SubmitInstructions,
    /// `dump view` (first page, full listing) and `dump diff` of two
    /// CaseLarge dumps: times and peak RSS of each child process.
    Readers,
    /// What `--swimlane 4` costs (flood and CaseLarge, plain and recording
    /// runs alternated) and what `--predict` costs on CaseLarge.
    Swimlane,
}

/// `simpler bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Which benchmark.
    pub name: BenchName,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Tasks in the flood [dispatch and swimlane only; default 200000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub tasks: Option<u32>,
    /// Batches of CaseLarge's graph, 256 tasks each [submits and
    /// submit-instructions only; default 32].
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batches: Option<u32>,
    /// Repetitions [default 5; not dump-memory, submit-instructions].
    /// dump-overhead and swimlane run plain and dumping (recording) back to
    /// back and report the
    /// median of the pairs' ratios (a shared machine's drift slows both
    /// runs of a pair alike); large and submits report medians; dispatch,
    /// replay and readers the best repetition.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,
    /// Chip shape.
    #[command(flatten)]
    pub chip: ChipArgs,
}

impl BenchArgs {
    /// `--tasks` or its default.
    pub(crate) fn tasks(&self) -> u32 {
        self.tasks.unwrap_or(200_000)
    }

    /// `--batches` or its default.
    pub(crate) fn batches(&self) -> u32 {
        self.batches.unwrap_or(32)
    }

    /// `--reps` or its default.
    pub(crate) fn reps(&self) -> u32 {
        self.reps.unwrap_or(5)
    }
}
