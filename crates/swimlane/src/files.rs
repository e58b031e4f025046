//! Reading a run's swimlane files, and writing a recorded run's files
//! through a caller's durable writer.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use simpler_format::swimlane::{
    is_name_map_file, name_map_file, Deps, NameMap, Records, DEPS_FILE, PERFETTO_FILE, PMU_FILE,
    PREDICTED_DIR, RECORDS_FILE,
};
use simpler_runtime::SwimlaneLog;

use crate::{
    predict::{ChipParams, ChipShape},
    Timeline,
};

/// Why a run's files could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file is missing, unreadable, or not what it should be.
    #[error(transparent)]
    File(#[from] simpler_format::Error),
    /// Several name maps and no way to choose.
    #[error("{dir}: {n} name_map*.json files; expected at most one")]
    NameMaps {
        /// The folder.
        dir: PathBuf,
        /// How many.
        n: usize,
    },
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, simpler_format::Error> {
    let bytes = simpler_format::files::read_regular(path).map_err(|e| match e.kind {
        simpler_format::ErrorKind::Io(io) if io.kind() == io::ErrorKind::NotFound => {
            simpler_format::Error::new(path, simpler_format::ErrorKind::PathMissing)
        }
        _ => e,
    })?;
    simpler_format::json::from_slice(path, &bytes)
}

/// The unique `name_map*.json` of `dir`, if any.
fn name_map_path(dir: &Path) -> Result<Option<PathBuf>, LoadError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_name_map_file)
                })
                .collect()
        })
        .unwrap_or_default();
    match found.len() {
        0 | 1 => Ok(found.pop()),
        n => Err(LoadError::NameMaps {
            dir: dir.to_path_buf(),
            n,
        }),
    }
}

/// The three files of a folder, as read.
#[derive(Debug, Clone)]
pub struct RunFiles {
    /// `chip_swimlane_records.json`.
    pub records: Records,
    /// `deps.json`, when present.
    pub deps: Option<Deps>,
    /// The name map, when present.
    pub names: Option<NameMap>,
}

impl RunFiles {
    /// Read `dir`'s records (required), `deps.json` and name map (optional).
    ///
    /// # Errors
    /// A missing or malformed records file, a malformed deps or name map,
    /// several name maps.
    pub fn load(dir: &Path) -> Result<RunFiles, LoadError> {
        let records = read_json(&dir.join(RECORDS_FILE))?;
        let deps_path = dir.join(DEPS_FILE);
        let deps = match deps_path.exists() {
            true => Some(read_json(&deps_path)?),
            false => None,
        };
        let names = match name_map_path(dir)? {
            Some(p) => Some(read_json(&p)?),
            None => None,
        };
        Ok(RunFiles {
            records,
            deps,
            names,
        })
    }

    /// The timeline these files describe.
    pub fn timeline(&self) -> Timeline {
        Timeline::from_files(&self.records, self.deps.as_ref(), self.names.as_ref())
    }
}

/// Where the files go: a durable writer (the whole file or nothing) and
/// folder creation, so the caller's cleanup on signals knows both. Files
/// are written from two threads at once.
pub trait Sink: Sync {
    /// Write `path` whole through `body`, or leave nothing.
    ///
    /// # Errors
    /// I/O failures, naming the file.
    fn write(
        &self,
        path: &Path,
        body: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()>;

    /// Create the folder `path` (its parent exists).
    ///
    /// # Errors
    /// As `std::fs::create_dir`, naming the folder.
    fn create_dir(&self, path: &Path) -> io::Result<()>;

    /// Make `to` a copy of the finished file `from`: a hard link when the
    /// file system allows, else a durable copy.
    ///
    /// # Errors
    /// I/O failures, naming the file.
    fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
        if std::fs::hard_link(from, to).is_ok() {
            return simpler_format::durable::sync_dir(to.parent().unwrap_or(Path::new(".")));
        }
        let bytes = std::fs::read(from)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", from.display())))?;
        self.write(to, &mut |w| w.write_all(&bytes))
    }
}

/// A [`Sink`] on plain files: `simpler_format`'s atomic writer.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainSink;

impl Sink for PlainSink {
    fn write(
        &self,
        path: &Path,
        body: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        simpler_format::durable::write_atomic(path, |w| body(w)).map_err(|e| e.into_io())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

fn json_to(
    v: &(impl serde::Serialize + ?Sized),
) -> impl FnMut(&mut dyn Write) -> io::Result<()> + '_ {
    move |w| {
        let mut b = BufWriter::with_capacity(1 << 16, &mut *w);
        serde_json::to_writer(&mut b, v).map_err(io::Error::other)?;
        b.write_all(b"\n")?;
        b.flush()
    }
}

/// What `--predict` printed and wrote.
#[derive(Debug, Clone)]
pub struct PredictSummary {
    /// Predicted makespan, device cycles.
    pub makespan: u64,
    /// The predicted timeline (for its table).
    pub timeline: Timeline,
    /// Its critical path ([`crate::critical::observed`] of `timeline`).
    pub critical: crate::critical::CriticalPath,
    /// Longest path by kernel cycles alone (a lower bound).
    pub static_path: u64,
    /// Σ kernel cycles.
    pub work: u64,
    /// Busiest pipe per func.
    pub bottlenecks: Vec<(u32, simpler_isa::Pipe, u64, f64)>,
    /// Dispatches without a recorded cost.
    pub missing: u64,
}

/// What to write (see [`write_run`]).
#[derive(Debug, Clone, Copy)]
pub struct Outputs {
    /// The recorded timeline: records, deps, name map, Perfetto trace.
    pub observed: bool,
    /// The predicted timeline in `predicted/`, on this chip with these latencies.
    pub predict: Option<(ChipShape, ChipParams)>,
}

/// Write a recorded run's files into `run_dir` (`observed`), and with
/// `predict` the `predicted/` folder: records at the device clock, deps and
/// name map (linked to the observed ones when written), Perfetto trace and
/// `pmu.csv`. `deps.json` (the largest file) is built and written on a
/// thread of its own while the rest is computed and written here.
///
/// # Errors
/// Write failures, naming the file (from `sink`).
pub fn write_run(
    run_dir: &Path,
    log: &SwimlaneLog,
    workload: &str,
    case: &str,
    out: Outputs,
    sink: &dyn Sink,
) -> io::Result<Option<PredictSummary>> {
    let names = crate::record::name_map(log, workload, case);
    let map_name = name_map_file(workload, case);
    let dir = run_dir.join(PREDICTED_DIR);
    if out.predict.is_some() {
        sink.create_dir(&dir)?;
    }
    // Where deps.json and the name map are written; the predicted folder
    // links to them when both are.
    let home = if out.observed { run_dir } else { dir.as_path() };
    std::thread::scope(|s| {
        let deps = s.spawn(|| -> io::Result<()> {
            // Formatted in 64 KiB pieces: no buffer of its own needed.
            sink.write(&home.join(DEPS_FILE), &mut |mut w| {
                crate::record::write_deps(log, &mut w)?;
                w.write_all(b"\n")
            })?;
            sink.write(&home.join(&map_name), &mut json_to(&names))?;
            if out.observed && out.predict.is_some() {
                for name in [DEPS_FILE, map_name.as_str()] {
                    sink.link(&run_dir.join(name), &dir.join(name))?;
                }
            }
            Ok(())
        });
        let rest = (|| {
            if out.observed {
                let records = crate::record::records(log);
                sink.write(&run_dir.join(RECORDS_FILE), &mut |mut w| {
                    simpler_format::swimlane::write_records_of(&mut w, &records)?;
                    w.write_all(b"\n")
                })?;
                let (tasks, edges) = crate::record::graph(log);
                let t = Timeline::with_graph(&records, tasks, edges, Some(&names));
                sink.write(&run_dir.join(PERFETTO_FILE), &mut |w| {
                    crate::perfetto::write_perfetto(&t, w)
                })?;
            }
            match out.predict {
                Some((shape, params)) => {
                    write_predicted(&dir, log, &names, shape, &params, sink).map(Some)
                }
                None => Ok(None),
            }
        })();
        let d = deps
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the deps.json writer panicked")));
        d.and(rest)
    })
}

/// The `predicted/` files but deps and name map: the records and
/// `pmu.csv` on a thread of their own while the Perfetto trace (the
/// longest to write) is written here.
fn write_predicted(
    dir: &Path,
    log: &SwimlaneLog,
    names: &NameMap,
    shape: ChipShape,
    params: &ChipParams,
    sink: &dyn Sink,
) -> io::Result<PredictSummary> {
    let (g, missing) = crate::predicted::graph_of(log);
    let p = crate::predict::predict(&g, shape, params);
    let pt = crate::predicted::timeline_of(log, &g, &p, shape, Some(names));
    let (side, trace, critical) = std::thread::scope(|s| {
        let side = s.spawn(|| -> io::Result<_> {
            sink.write(&dir.join(RECORDS_FILE), &mut |mut w| {
                crate::predicted::write_records(&g, &p, shape, &pt.sched, &mut w)?;
                w.write_all(b"\n")
            })?;
            sink.write(&dir.join(PMU_FILE), &mut |w| {
                crate::predicted::write_pmu(&g, &p, w)
            })?;
            let figures = (
                crate::predict::static_critical_path(&g),
                crate::predicted::bottlenecks(&p),
            );
            Ok(figures)
        });
        // The critical path meanwhile, off the trace's way.
        let critical = s.spawn(|| crate::critical::observed(&pt));
        let trace = sink.write(&dir.join(PERFETTO_FILE), &mut |w| {
            crate::perfetto::write_perfetto(&pt, w)
        });
        let critical = critical
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let side = side
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the records writer panicked")));
        (side, trace, critical)
    });
    let (static_path, bottlenecks) = side?;
    trace?;
    Ok(PredictSummary {
        makespan: p.makespan,
        timeline: pt,
        critical,
        static_path,
        work: p.dispatches.iter().map(|d| d.member.cost.cycles).sum(),
        bottlenecks,
        missing,
    })
}
