//! `insight-trace --all` (DESIGN §8 "Replay them all"): every dispatch of
//! a dump replayed and verified — a whole-run determinism check.
//!
//! Each unit of work is one cluster replay: a dispatch (its whole cluster
//! for a MIX task, whose members are counted one dispatch each) from the
//! kernel args dump, or, without one, a task rebuilt from its per-task
//! records ([`crate::records`]). Units run in memory — no workspace, no
//! trace files — on `threads` threads (`std::thread::scope`), each reading
//! its own bytes from the payload file; the result is one
//! [`FuncSummary`] per func: dispatches, bit-exact, within tolerance,
//! differing, not verified, failed, and the member's replay cycles
//! (min / median / max).
//!
//! ```no_run
//! use simpler_replay::{
//!     all::{replay_all, AllOptions},
//!     rebuild::RebuildOptions,
//!     source::{DumpSource, Selector},
//!     spec::Tolerance,
//! };
//! let w = simpler_workloads::find("paged_attention")?;
//! let kernels = w.kernels();
//! let src = DumpSource::open("outputs/run_a".as_ref())?;
//! let rebuild = RebuildOptions {
//!     workload: "paged_attention", case: "CaseSmall1", arch: "a2a3", clusters: 8, kernels: &kernels,
//! };
//! let tolerance = Tolerance { rtol: 1e-5, atol: 1e-8 };
//! let one = src.select(&Selector { func_id: Some(1), ..Selector::default() }, &rebuild, tolerance)?;
//! println!("{}", one.spec.label());
//! let o = AllOptions { rebuild, func_id: None, selector: Selector::default(), tolerance, threads: 2 };
//! let all = replay_all(&src, &o, &mut |_, _| {})?;
//! print!("{}", all.render_text());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use simpler_core::TaskId;
use simpler_inspect::{Dump, Record};
use simpler_isa::KernelDef;

use crate::rebuild::{rebuild_with, DumpRecs, RebuildOptions};
use crate::records::{rebuild_from_records, TaskInfo};
use crate::replay::execute;
use crate::source::{task_records, DumpSource, Selector};
use crate::spec::{ReplaySpec, Tolerance};
use crate::verify::{verify, Status, Verification};
use crate::{simulate, ReplayError, TimingParams};

/// What `--all` replays and how.
#[derive(Debug, Clone, Copy)]
pub struct AllOptions<'a> {
    /// Workload, case, arch, clusters, kernels.
    pub rebuild: RebuildOptions<'a>,
    /// Only this func's dispatches (`--func-id`).
    pub func_id: Option<u32>,
    /// `--block-num` and `--subtask` for dispatches rebuilt from records.
    pub selector: Selector,
    /// Held to for a dump of the upstream runtime.
    pub tolerance: Tolerance,
    /// Worker threads.
    pub threads: usize,
}

/// How one dispatch came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every output bit for bit.
    BitExact,
    /// Every output within the tolerance, not all bit for bit.
    WithinTolerance,
    /// An output differs (outside the tolerance, when there is one).
    Differs(String),
    /// Nothing to compare against.
    NotVerified(String),
    /// The replay could not be built or the kernel failed.
    Failed(String),
}

/// One dispatch's result.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchResult {
    /// Its kernel.
    pub func_id: u32,
    /// Its dispatch id (none when rebuilt from per-task records).
    pub dispatch_id: Option<u64>,
    /// Its task.
    pub task_id: TaskId,
    /// Cycles of its sub-core in the replay (0 when it failed).
    pub cycles: u64,
    /// How it came out.
    pub verdict: Verdict,
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncSummary {
    /// The func.
    pub func_id: u32,
    /// Its kernel's name.
    pub kernel: String,
    /// Dispatches replayed.
    pub dispatches: usize,
    /// Of those, bit for bit.
    pub bit_exact: usize,
    /// Within the tolerance but not bit for bit.
    pub within_tolerance: usize,
    /// Differing.
    pub differing: usize,
    /// Nothing to compare with.
    pub not_verified: usize,
    /// Replay failed.
    pub failed: usize,
    /// Replay cycles: min, median, max.
    pub cycles: [u64; 3],
}

/// Everything `--all` found.
#[derive(Debug, Clone)]
pub struct AllReport {
    /// Where the args came from (for the first line).
    pub source: String,
    /// Per dispatch, in task and block order.
    pub results: Vec<DispatchResult>,
    /// Per func, ascending.
    pub funcs: Vec<FuncSummary>,
    /// Wall time of the replays.
    pub wall: Duration,
    /// Threads used.
    pub threads: usize,
    /// The tolerance outputs were held to (a dump of the upstream runtime).
    pub tolerance: Option<Tolerance>,
}

/// A cluster to replay and the dispatches it stands for.
struct Unit {
    /// Kernel args dispatch id, or the task (rebuilt from records).
    what: UnitKind,
    task: TaskId,
}

enum UnitKind {
    Dispatch(u64),
    /// A task rebuilt from its records, as this block.
    Task(TaskInfo, u32),
}

/// Replay every dispatch of `src` (see the module doc), calling `progress`
/// with (done, total) units as they finish.
///
/// # Errors
/// The dumps cannot be read, or `--all` cannot work on them (per-task
/// records that do not name their kernels). A dispatch that cannot be
/// replayed is a [`Verdict::Failed`] result, not an error.
pub fn replay_all(
    src: &DumpSource,
    o: &AllOptions<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<AllReport, ReplayError> {
    let t0 = Instant::now();
    let dump = match &src.files.manifest {
        Some(m) => Some(Dump::open(m)?),
        None => None,
    };
    let mut by_task: HashMap<TaskId, Vec<&Record>> = HashMap::new();
    for r in dump.iter().flat_map(|d| d.records()) {
        by_task.entry(r.task_id).or_default().push(r);
    }
    let (units, source) = units(src, dump.as_ref(), o)?;
    let tol = src.from_upstream_runtime().then_some(o.tolerance);
    let total = units.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let threads = o.threads.clamp(1, total.max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, units, by_task, dump) = (&next, &units, &by_task, dump.as_ref());
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(u) = units.get(i) else { break };
                let recs = by_task.get(&u.task).map_or(&[][..], Vec::as_slice);
                let r = replay_unit(src, dump, recs, u, o, tol);
                if tx.send((i, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done = 0;
        let mut out: Vec<Option<Vec<DispatchResult>>> = vec![None; total];
        for (i, r) in rx {
            out[i] = Some(r);
            done += 1;
            progress(done, total);
        }
        let results: Vec<DispatchResult> = out.into_iter().flatten().flatten().collect();
        Ok(AllReport {
            source,
            funcs: summarize(&results, o.rebuild.kernels),
            results,
            wall: t0.elapsed(),
            threads,
            tolerance: tol,
        })
    })
}

/// The units of work and a line saying where the args come from.
fn units(
    src: &DumpSource,
    dump: Option<&Dump>,
    o: &AllOptions<'_>,
) -> Result<(Vec<Unit>, String), ReplayError> {
    if let Some(k) = &src.kernel_args {
        // One unit per cluster (task, block), for the dispatches of the func.
        let mut seen = BTreeMap::new();
        for d in &k.doc.dispatches {
            if o.func_id.is_none_or(|f| f == d.func_id) {
                seen.entry((d.task_id.0, d.block_idx))
                    .or_insert(d.dispatch_id);
            }
        }
        let units = seen
            .into_iter()
            .map(|((task, _), id)| Unit {
                what: UnitKind::Dispatch(id),
                task: TaskId(task),
            })
            .collect();
        return Ok((units, format!("the kernel args dump {}", k.path.display())));
    }
    let (Some(dump), Some(manifest)) = (dump, &src.files.manifest) else {
        unreachable!("a source has a manifest or a kernel args dump");
    };
    let tasks = crate::records::task_index(manifest)?;
    if tasks.iter().any(|t| t.func_ids.is_empty()) {
        return Err(ReplayError::Selection(format!(
            "{}: the dump does not record which kernel each task ran (no func_id), so --all cannot replay it; replay tasks one at a time with --func-id and --task-id",
            manifest.display()
        )));
    }
    // Every block of each task (the records do not say how many: --block-num).
    let blocks = o.selector.block_num.unwrap_or(1);
    let units = tasks
        .into_iter()
        .filter(|t| o.func_id.is_none_or(|f| t.func_ids.contains(&f)))
        .flat_map(|t| {
            (0..blocks).map(move |b| Unit {
                task: t.task_id,
                what: UnitKind::Task(t.clone(), b),
            })
        })
        .collect();
    Ok((
        units,
        format!(
            "the per-task records of {} (no kernel_args_dump.json)",
            dump.manifest_path().display()
        ),
    ))
}

/// Build, run, time and verify one unit; one result per member dispatch
/// (of `--func-id`, when given).
fn replay_unit(
    src: &DumpSource,
    dump: Option<&Dump>,
    recs: &[&Record],
    u: &Unit,
    o: &AllOptions<'_>,
    tol: Option<Tolerance>,
) -> Vec<DispatchResult> {
    let spec = match &u.what {
        UnitKind::Dispatch(id) => {
            let k = src
                .kernel_args
                .as_ref()
                .expect("units from the kernel args dump");
            let dr = dump.map(|d| DumpRecs {
                info: d.info(),
                records: recs,
            });
            rebuild_with(k, dr, *id, &o.rebuild)
        }
        UnitKind::Task(t, block) => {
            let d = dump.expect("units from the records");
            let ctx = src.context(&Selector {
                block_idx: *block,
                ..o.selector
            });
            let func = o.func_id.unwrap_or(t.func_ids[0]);
            let tr = task_records(d.manifest_path(), d.info(), recs);
            rebuild_from_records(t, func, &tr, &ctx, &o.rebuild, tol)
        }
    };
    // The unit's own func when none was asked for.
    let func = o.func_id.unwrap_or_else(|| match &u.what {
        UnitKind::Dispatch(id) => src
            .kernel_args
            .as_ref()
            .and_then(|k| k.dispatch(*id))
            .map_or(0, |d| d.func_id),
        UnitKind::Task(t, _) => t.func_ids[0],
    });
    let fail = |e: ReplayError| {
        vec![DispatchResult {
            func_id: func,
            dispatch_id: match u.what {
                UnitKind::Dispatch(id) => Some(id),
                UnitKind::Task(..) => None,
            },
            task_id: u.task,
            cycles: 0,
            verdict: Verdict::Failed(e.to_string()),
        }]
    };
    let spec = match spec {
        Ok(mut s) => {
            s.tolerance = tol;
            s
        }
        Err(e) => return fail(e),
    };
    match run(&spec, o.rebuild.kernels) {
        Ok(r) => r
            .into_iter()
            .filter(|r| o.func_id.is_none_or(|f| f == r.func_id))
            .collect(),
        Err(e) => fail(e),
    }
}

/// Run `spec` in memory: its members' results.
fn run(spec: &ReplaySpec, kernels: &[KernelDef]) -> Result<Vec<DispatchResult>, ReplayError> {
    let file = spec.rebuilt_label();
    let plan = spec.plan(&file)?;
    let exec = execute(&plan, Path::new("."), kernels, &file)?;
    let timeline = simulate(&TimingParams::for_arch(&plan.arch), &exec.cores);
    let v = verify(&plan, Path::new("."), &exec, &file)?;
    let verdict = verdict(&v);
    Ok(plan
        .members
        .iter()
        .zip(&timeline.cores)
        .map(|(m, t)| DispatchResult {
            func_id: m.func_id,
            dispatch_id: m.dispatch_id,
            task_id: m.task_id.unwrap_or(TaskId(0)),
            cycles: t.total_cycles,
            verdict: verdict.clone(),
        })
        .collect())
}

fn verdict(v: &Verification) -> Verdict {
    let bad = |s: Status| {
        v.outputs
            .iter()
            .filter(|o| o.status == s)
            .map(|o| match &o.reason {
                Some(r) => format!("slot {}: {r}", o.arg_index),
                None => format!(
                    "slot {}: {} of {} elements differ, max abs diff {:e}",
                    o.arg_index, o.differing, o.compared, o.max_abs_diff
                ),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if v.overall_pass {
        if v.outputs.iter().all(|o| o.bit_exact) {
            Verdict::BitExact
        } else {
            Verdict::WithinTolerance
        }
    } else if v.failed() > 0 {
        Verdict::Differs(bad(Status::Fail))
    } else if v.outputs.is_empty() {
        Verdict::NotVerified("the dispatch has no output".into())
    } else {
        Verdict::NotVerified(bad(Status::NotVerifiable))
    }
}

fn summarize(results: &[DispatchResult], kernels: &[KernelDef]) -> Vec<FuncSummary> {
    let mut by: BTreeMap<u32, Vec<&DispatchResult>> = BTreeMap::new();
    for r in results {
        by.entry(r.func_id).or_default().push(r);
    }
    by.into_iter()
        .map(|(f, rs)| {
            let n = |p: fn(&Verdict) -> bool| rs.iter().filter(|r| p(&r.verdict)).count();
            let mut cycles: Vec<u64> = rs
                .iter()
                .filter(|r| !matches!(r.verdict, Verdict::Failed(_)))
                .map(|r| r.cycles)
                .collect();
            cycles.sort_unstable();
            let pick = |i: usize| cycles.get(i).copied().unwrap_or(0);
            FuncSummary {
                func_id: f,
                kernel: kernels
                    .iter()
                    .find(|k| k.func_id == f)
                    .map_or_else(|| "?".into(), |k| k.name.to_string()),
                dispatches: rs.len(),
                bit_exact: n(|v| *v == Verdict::BitExact),
                within_tolerance: n(|v| *v == Verdict::WithinTolerance),
                differing: n(|v| matches!(v, Verdict::Differs(_))),
                not_verified: n(|v| matches!(v, Verdict::NotVerified(_))),
                failed: n(|v| matches!(v, Verdict::Failed(_))),
                cycles: [
                    pick(0),
                    pick(cycles.len() / 2),
                    pick(cycles.len().saturating_sub(1)),
                ],
            }
        })
        .collect()
}

impl AllReport {
    /// Every dispatch bit-exact (or within the tolerance, for a dump of the
    /// upstream runtime), and at least one.
    pub fn passed(&self) -> bool {
        !self.results.is_empty()
            && self
                .results
                .iter()
                .all(|r| matches!(r.verdict, Verdict::BitExact | Verdict::WithinTolerance))
    }

    /// The summary table, the dispatches that did not pass (at most 20),
    /// and the verdict line.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>4}  {:<18} {:>10} {:>9} {:>10} {:>9} {:>12} {:>6}  cycles min / median / max",
            "func",
            "kernel",
            "dispatches",
            "bit-exact",
            "within tol",
            "differing",
            "not verified",
            "failed"
        );
        for f in &self.funcs {
            let _ = writeln!(
                s,
                "{:>4}  {:<18} {:>10} {:>9} {:>10} {:>9} {:>12} {:>6}  {} / {} / {}",
                f.func_id,
                f.kernel,
                f.dispatches,
                f.bit_exact,
                f.within_tolerance,
                f.differing,
                f.not_verified,
                f.failed,
                f.cycles[0],
                f.cycles[1],
                f.cycles[2]
            );
        }
        let bad: Vec<&DispatchResult> = self
            .results
            .iter()
            .filter(|r| !matches!(r.verdict, Verdict::BitExact | Verdict::WithinTolerance))
            .collect();
        for r in bad.iter().take(20) {
            let id = r
                .dispatch_id
                .map_or_else(String::new, |d| format!("dispatch {d}, "));
            let (what, why) = match &r.verdict {
                Verdict::Differs(w) => ("DIFFERS", w),
                Verdict::NotVerified(w) => ("NOT VERIFIED", w),
                Verdict::Failed(w) => ("FAILED", w),
                _ => continue,
            };
            let _ = writeln!(
                s,
                "  {what}: {id}task {} func {}: {why}",
                r.task_id, r.func_id
            );
        }
        if bad.len() > 20 {
            let _ = writeln!(s, "  … and {} more", bad.len() - 20);
        }
        let n = self.results.len();
        let exact = self
            .results
            .iter()
            .filter(|r| r.verdict == Verdict::BitExact)
            .count();
        let secs = self.wall.as_secs_f64();
        let how = match self.tolerance {
            Some(t) => format!(
                "bit-exact or within rtol {:e}, atol {:e} ({exact} bit-exact)",
                t.rtol, t.atol
            ),
            None => "bit-exact".into(),
        };
        let on = match self.threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        let _ = if self.passed() {
            writeln!(s, "PASS: all {n} dispatches {how} in {secs:.2} s on {on}")
        } else {
            let failed = bad
                .iter()
                .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
                .count();
            let unreplayed = match failed {
                0 => String::new(),
                k => format!(" ({k} could not be replayed)"),
            };
            writeln!(
                s,
                "FAIL: {} of {n} dispatches not {how}{unreplayed} in {secs:.2} s on {on}",
                bad.len()
            )
        };
        s
    }
}
