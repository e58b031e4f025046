//! Writers for the insight trace output tree (DESIGN §8 step 6).
//!
//! Given an output directory `<out>` (the CLI passes
//! `<workspace>/insight_export/OPPROF_<ts>/`), a label and the simulated
//! sub-cores, [`export_trace`] writes:
//!
//! ```text
//! <out>/
//!   simulator/
//!     trace.json                       all sub-cores: one process each, one thread per pipe
//!     core0.veccore0/
//!       trace.json                     this sub-core only
//!       core0.veccore0_instr_exe.csv   per (instruction, call site)
//!       core0.veccore0_code_exe.csv    per source line
//!     core0.cubecore0/ …               (one folder per sub-core)
//!   <label>_trace_perfetto.json        overlapping slices split into lanes
//! ```
//!
//! The Chrome trace layout is described in the `chrome` module docs
//! (process per sub-core named like `core0.veccore0`, threads `SCALAR`,
//! `MTE1`, `MTE2`, `MTE3`, `CUBE`, `FIXP`, `VECTOR`, `ph:"X"` events with
//! `ts`/`dur` in µs). In the Perfetto file a pipe whose instructions overlap
//! in time gets extra threads `VECTOR#1`, `VECTOR#2`, … ([`assign_lanes`]),
//! because Perfetto requires slices on one track to nest. An in-order pipe
//! never overlaps itself, so with the timing model's schedules every pipe
//! keeps one lane; the split matters for schedules from elsewhere.
//!
//! Every file is written to a temporary name and renamed, so a reader never
//! sees half a file. The label is used in a file name with every character
//! outside `[A-Za-z0-9._-]` replaced by `_`.

mod chrome;
mod csv;
mod summary;

use std::{
    collections::HashSet,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
};

pub use chrome::{assign_lanes, SCHEMA_VERSION};
pub use csv::{escape as csv_escape, CODE_EXE_HEADER, INSTR_EXE_HEADER};
pub use summary::{Bottleneck, CoreSummary, ExportSummary};

use crate::{
    timing::{pipe_index, simulate, Span, Timeline, TimingParams},
    SubCore,
};
use chrome::{Header, Pid, TraceWriter};
use simpler_isa::Pipe;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A file or directory could not be created or written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The timeline does not have one span per record of each sub-core.
    #[error("timeline does not match the sub-cores: {0}")]
    Mismatch(String),
    /// Two sub-cores have the same trace name (they would share a folder).
    #[error("two sub-cores are both named {0}")]
    DuplicateSubCore(String),
}

/// Simulate `cores` with `params` and write the output tree under `out`.
///
/// # Errors
/// [`ExportError::Io`] when a file cannot be written;
/// [`ExportError::DuplicateSubCore`] when two sub-cores share a name.
pub fn export_trace(
    out: &Path,
    label: &str,
    params: &TimingParams,
    cores: &[SubCore],
) -> Result<ExportSummary, ExportError> {
    let timeline = simulate(params, cores);
    write_trace(out, label, params, cores, &timeline)
}

/// Write the output tree under `out` for an already computed `timeline`
/// (one [`crate::timing::CoreTiming`] per sub-core, one span per record).
///
/// # Errors
/// As [`export_trace`], plus [`ExportError::Mismatch`] when `timeline` does
/// not fit `cores`.
pub fn write_trace(
    out: &Path,
    label: &str,
    params: &TimingParams,
    cores: &[SubCore],
    timeline: &Timeline,
) -> Result<ExportSummary, ExportError> {
    check(cores, timeline)?;
    let sim_dir = out.join("simulator");
    let label_file = crate::workspace::safe_label(label);
    let names: Vec<String> = cores.iter().map(SubCore::name).collect();
    let header = |layout| Header {
        schema_version: SCHEMA_VERSION,
        generator: concat!("simpler-rs ", env!("CARGO_PKG_VERSION")),
        label,
        layout,
        arch: params.arch,
        clock_mhz: params.clock_mhz,
        total_cycles: timeline.total_cycles,
    };

    create_dir(&sim_dir)?;
    write_atomic(&sim_dir.join("trace.json"), |w| {
        let mut t = TraceWriter::new(w)?;
        for (i, c) in cores.iter().enumerate() {
            core_events(&mut t, params, i, &names[i], c, &timeline.cores[i].spans)?;
        }
        t.finish(&header("simulator")).map(drop)
    })?;

    let mut summaries = Vec::with_capacity(cores.len());
    for (i, c) in cores.iter().enumerate() {
        let name = &names[i];
        let timing = &timeline.cores[i];
        let dir = sim_dir.join(name);
        create_dir(&dir)?;
        write_atomic(&dir.join("trace.json"), |w| {
            let mut t = TraceWriter::new(w)?;
            core_events(&mut t, params, i, name, c, &timing.spans)?;
            t.finish(&header("simulator")).map(drop)
        })?;
        write_atomic(&dir.join(format!("{name}_instr_exe.csv")), |w| {
            csv::write_instr_exe(w, params, &c.records, timing).map(drop)
        })?;
        write_atomic(&dir.join(format!("{name}_code_exe.csv")), |w| {
            csv::write_code_exe(w, params, &c.records, timing).map(drop)
        })?;
        summaries.push(CoreSummary {
            name: name.clone(),
            dir,
            instructions: c.records.len(),
            busy: timing.busy,
            total_cycles: timing.total_cycles,
        });
    }

    let perfetto_path = out.join(format!("{label_file}_trace_perfetto.json"));
    write_atomic(&perfetto_path, |w| {
        let mut t = TraceWriter::new(w)?;
        for (i, c) in cores.iter().enumerate() {
            perfetto_core_events(&mut t, params, i, &names[i], c, &timeline.cores[i].spans)?;
        }
        t.finish(&header("perfetto")).map(drop)
    })?;

    let bottleneck = timeline
        .bottleneck()
        .map(|(i, pipe, busy_cycles)| Bottleneck {
            core: names[i].clone(),
            pipe,
            busy_cycles,
        });
    Ok(ExportSummary {
        simulator_dir: sim_dir,
        perfetto_path,
        arch: params.arch,
        clock_mhz: params.clock_mhz,
        cores: summaries,
        busy: timeline.busy(),
        total_cycles: timeline.total_cycles,
        instructions: timeline.instructions(),
        bottleneck,
    })
}

/// The timeline must have one span per record of each sub-core, and
/// sub-core names must be unique.
fn check(cores: &[SubCore], timeline: &Timeline) -> Result<(), ExportError> {
    if cores.len() != timeline.cores.len() {
        return Err(ExportError::Mismatch(format!(
            "{} sub-cores but {} core timings",
            cores.len(),
            timeline.cores.len()
        )));
    }
    let mut seen = HashSet::new();
    for (c, t) in cores.iter().zip(&timeline.cores) {
        let name = c.name();
        if c.records.len() != t.spans.len() {
            return Err(ExportError::Mismatch(format!(
                "{name} has {} records but {} spans",
                c.records.len(),
                t.spans.len()
            )));
        }
        if !seen.insert(name.clone()) {
            return Err(ExportError::DuplicateSubCore(name));
        }
    }
    Ok(())
}

/// Perfetto process id of sub-core `i` (1-based; some viewers treat pid 0
/// specially).
fn pid(i: usize) -> Pid<'static> {
    Pid::Num(i as u32 + 1)
}

/// Thread id of `lane` of `pipe`: lane 0 is the pipe's own track
/// (`pipe index + 1`), further lanes follow in steps of 8.
fn tid(pipe: Pipe, lane: u32) -> u32 {
    pipe_index(pipe) as u32 + 1 + 8 * lane
}

/// Metadata and instruction events of one sub-core as the op simulator
/// writes them: the process id is the sub-core's name, one track per pipe
/// with an integer sort index.
fn core_events<W: Write>(
    t: &mut TraceWriter<W>,
    params: &TimingParams,
    i: usize,
    name: &str,
    core: &SubCore,
    spans: &[Span],
) -> io::Result<()> {
    let pid = Pid::Name(name);
    t.process(pid, name, i as u64)?;
    for (k, pipe) in Pipe::ALL.into_iter().enumerate() {
        t.thread(pid, tid(pipe, 0), pipe.name(), k as u64)?;
    }
    for (rec, &span) in core.records.iter().zip(spans) {
        t.instr(params, pid, tid(rec.pipe, 0), rec, span)?;
    }
    Ok(())
}

/// Like [`core_events`], but a pipe's overlapping instructions go to extra
/// lanes (`VECTOR#1`, …), so no two slices on a track overlap.
fn perfetto_core_events<W: Write>(
    t: &mut TraceWriter<W>,
    params: &TimingParams,
    i: usize,
    name: &str,
    core: &SubCore,
    spans: &[Span],
) -> io::Result<()> {
    t.process(pid(i), name, i as u64)?;
    let mut lanes = vec![0u32; spans.len()];
    for (k, pipe) in Pipe::ALL.into_iter().enumerate() {
        let idx: Vec<usize> = (0..spans.len())
            .filter(|&j| core.records[j].pipe == pipe)
            .collect();
        let pipe_spans: Vec<Span> = idx.iter().map(|&j| spans[j]).collect();
        let pipe_lanes = assign_lanes(&pipe_spans);
        let n_lanes = pipe_lanes.iter().max().map_or(1, |&m| m + 1);
        for (&j, &l) in idx.iter().zip(&pipe_lanes) {
            lanes[j] = l;
        }
        for lane in 0..n_lanes {
            let tname = if lane == 0 {
                pipe.name().to_string()
            } else {
                format!("{}#{lane}", pipe.name())
            };
            // The upstream converter's convention: pipe order × 100 + lane.
            t.thread(
                pid(i),
                tid(pipe, lane),
                &tname,
                k as u64 * 100 + u64::from(lane),
            )?;
        }
    }
    for ((rec, &span), &lane) in core.records.iter().zip(spans).zip(&lanes) {
        t.instr(params, pid(i), tid(rec.pipe, lane), rec, span)?;
    }
    Ok(())
}

fn create_dir(dir: &Path) -> Result<(), ExportError> {
    fs::create_dir_all(dir).map_err(|source| ExportError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Write `path` through `body` with the dump's durable writer (temporary
/// file next to it, fsync, rename, fsync of the folder; the temporary file
/// is removed on error and on a signal).
fn write_atomic(
    path: &Path,
    body: impl FnOnce(&mut simpler_format::durable::AtomicWriter<'_>) -> io::Result<()>,
) -> Result<(), ExportError> {
    simpler_format::durable::write_atomic(path, body).map_err(|e| ExportError::Io {
        path: e.path,
        source: e.source,
    })
}
