//! Pairing two dumps' records: a merge of two sorted record streams, one
//! key group `(task, stage, arg)` of each side in memory at a time.

use std::collections::BTreeSet;
use std::iter::Peekable;
use std::path::Path;

use simpler_core::TaskId;
use simpler_format::vocab::Stage;
use simpler_format::Error;

use super::metrics::compare;
use super::report::{DiffReport, Keep};
use super::{DiffError, DiffOptions, MatchMode, Unpaired};
use crate::dump::Dump;
use crate::payload::Payload;
use crate::record::Record;
use crate::stream::{DumpInfo, RecordStream};

/// `(task order, stage, arg)`: the task order is the id, or its rank.
type GroupKey = (u64, Stage, u32);

/// Why a merge stopped.
#[derive(Debug)]
enum Stop {
    /// Dump `A` or `B` could not be read.
    Read(&'static str, Box<Error>),
    /// A dump's records are not sorted (side `A` or `B`): pair in memory.
    Unsorted(&'static str),
    /// The spill file could not be written.
    Spill(std::io::Error),
}

/// Why a diff could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffFailure {
    /// Unusable options.
    #[error(transparent)]
    Options(#[from] DiffError),
    /// Dump `A` or `B` could not be read.
    #[error("dump {side}: {error}")]
    Read {
        /// `A` or `B`.
        side: &'static str,
        /// What is wrong with it.
        error: Box<Error>,
    },
    /// The `--json` spill files could not be written.
    #[error("temporary file for the diff: {0}")]
    Spill(#[from] std::io::Error),
}

/// Key groups of one side, in order.
struct Groups<I: Iterator<Item = Result<Record, Error>>> {
    it: Peekable<I>,
    mode: MatchMode,
    side: &'static str,
    rank: u64,
    task: Option<TaskId>,
    last: Option<GroupKey>,
    records: u64,
    /// Func ids named by the records (the first [`MAX_FUNCS`]).
    funcs: BTreeSet<u32>,
}

/// Func ids a side keeps for the "different workloads?" note.
const MAX_FUNCS: usize = 64;

impl<I: Iterator<Item = Result<Record, Error>>> Groups<I> {
    fn new(it: I, mode: MatchMode, side: &'static str) -> Self {
        Groups {
            it: it.peekable(),
            mode,
            side,
            rank: 0,
            task: None,
            last: None,
            records: 0,
            funcs: BTreeSet::new(),
        }
    }

    fn key(&mut self, r: &Record) -> Result<GroupKey, Stop> {
        match self.task {
            Some(t) if r.task_id < t => return Err(Stop::Unsorted(self.side)),
            Some(t) if r.task_id > t => self.rank += 1,
            _ => {}
        }
        self.task = Some(r.task_id);
        let order = match self.mode {
            MatchMode::Key => r.task_id.0,
            MatchMode::Order => self.rank,
        };
        Ok((order, r.stage, r.arg_index))
    }

    fn next(&mut self) -> Result<Option<(GroupKey, Vec<Record>)>, Stop> {
        let side = self.side;
        let read = |e: Error| Stop::Read(side, Box::new(e));
        let Some(first) = self.it.next().transpose().map_err(read)? else {
            return Ok(None);
        };
        let key = self.key(&first)?;
        if self.last.is_some_and(|l| key <= l) {
            return Err(Stop::Unsorted(self.side));
        }
        self.last = Some(key);
        let mut group = vec![first];
        while let Some(Ok(r)) = self.it.peek() {
            if (r.task_id, r.stage, r.arg_index)
                != (group[0].task_id, group[0].stage, group[0].arg_index)
            {
                break;
            }
            group.extend(self.it.next().transpose().map_err(read)?);
        }
        if let Some(Err(_)) = self.it.peek() {
            self.it.next().transpose().map_err(read)?;
        }
        self.records += group.len() as u64;
        for &f in group.iter().flat_map(|r| &r.func_ids) {
            if self.funcs.len() < MAX_FUNCS {
                self.funcs.insert(f);
            }
        }
        group.sort_by_key(|r| (r.role, r.index));
        Ok(Some((key, group)))
    }
}

fn unpaired(order: u64, r: &Record) -> Unpaired {
    Unpaired {
        order,
        task_id: r.task_id,
        stage: r.stage,
        arg_index: r.arg_index,
        role: r.role,
        kind: r.kind,
        dtype: r.dtype,
        shape: r.shape.clone(),
        func_ids: r.func_ids.clone(),
        record: r.index,
    }
}

/// Pair one key group of each side, role by role, occurrence by occurrence.
fn pair_groups(
    order: u64,
    (pa, ga): (&Payload, &[Record]),
    (pb, gb): (&Payload, &[Record]),
    o: &DiffOptions,
    report: &mut DiffReport,
) -> Result<(), Stop> {
    let mut roles: Vec<_> = ga.iter().chain(gb).map(|r| r.role).collect();
    roles.sort();
    roles.dedup();
    for role in roles {
        let xa: Vec<&Record> = ga.iter().filter(|r| r.role == role).collect();
        let xb: Vec<&Record> = gb.iter().filter(|r| r.role == role).collect();
        // The upstream runtime repeats before_dispatch records per SPMD
        // block; ours (and a single-block run) write one: every repeat is
        // paired with that one record.
        let one = |x: &[&Record]| x.len() == 1 && x[0].stage == Stage::BeforeDispatch;
        let per_block = (one(&xa) && xb.len() > 1) || (one(&xb) && xa.len() > 1);
        for k in 0..xa.len().max(xb.len()) {
            let (a, b) = if per_block {
                (
                    xa.get(k.min(xa.len() - 1)).copied(),
                    xb.get(k.min(xb.len() - 1)).copied(),
                )
            } else {
                (xa.get(k).copied(), xb.get(k).copied())
            };
            match (a, b) {
                (Some(a), Some(b)) => {
                    let p = compare(order, (pa, a), (pb, b), o).map_err(|e| {
                        let side = if e.file == pa.path() { "A" } else { "B" };
                        Stop::Read(side, Box::new(e))
                    })?;
                    report.pair(p).map_err(Stop::Spill)?;
                }
                (Some(a), None) => report.only_a(unpaired(order, a)).map_err(Stop::Spill)?,
                (None, Some(b)) => report.only_b(unpaired(order, b)).map_err(Stop::Spill)?,
                (None, None) => {}
            }
        }
    }
    Ok(())
}

fn merge(
    a: impl Iterator<Item = Result<Record, Error>>,
    pa: &Payload,
    b: impl Iterator<Item = Result<Record, Error>>,
    pb: &Payload,
    o: &DiffOptions,
    (report, progress): (&mut DiffReport, &mut dyn FnMut(u64, u64)),
) -> Result<(), Stop> {
    let mut ga = Groups::new(a, o.match_mode, "A");
    let mut gb = Groups::new(b, o.match_mode, "B");
    let (mut x, mut y) = (ga.next()?, gb.next()?);
    let total = report.expected_records;
    loop {
        progress(ga.records + gb.records, total);
        match (&x, &y) {
            (None, None) => break,
            (Some((ka, ra)), Some((kb, rb))) if ka == kb => {
                pair_groups(ka.0, (pa, ra), (pb, rb), o, report)?;
                x = ga.next()?;
                y = gb.next()?;
            }
            (Some((ka, ra)), Some((kb, _))) if ka < kb => {
                for r in ra {
                    report.only_a(unpaired(ka.0, r)).map_err(Stop::Spill)?;
                }
                x = ga.next()?;
            }
            (Some((ka, ra)), None) => {
                for r in ra {
                    report.only_a(unpaired(ka.0, r)).map_err(Stop::Spill)?;
                }
                x = ga.next()?;
            }
            (_, Some((kb, rb))) => {
                for r in rb {
                    report.only_b(unpaired(kb.0, r)).map_err(Stop::Spill)?;
                }
                y = gb.next()?;
            }
        }
    }
    report.records = (ga.records, gb.records);
    if other_funcs(&ga.funcs, &gb.funcs, report.incomplete) {
        let list = |f: &BTreeSet<u32>| f.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        report.notes.push(format!(
            "A's records name func ids {}, B's {}: are these runs of one workload?",
            list(&ga.funcs),
            list(&gb.funcs)
        ));
    }
    Ok(())
}

/// A's and B's func ids (`incomplete`: whose run stopped short) say the
/// dumps may come from different workloads: the sets differ, and not only
/// because a stopped run never reached some kernels (its ids a subset of
/// the other's).
fn other_funcs(a: &BTreeSet<u32>, b: &BTreeSet<u32>, incomplete: (bool, bool)) -> bool {
    let cut_short = |fewer: &BTreeSet<u32>, more, stopped| stopped && fewer.is_subset(more);
    !a.is_empty()
        && !b.is_empty()
        && a != b
        && !cut_short(a, b, incomplete.0)
        && !cut_short(b, a, incomplete.1)
}

impl From<Stop> for DiffFailure {
    fn from(s: Stop) -> DiffFailure {
        match s {
            Stop::Read(side, error) => DiffFailure::Read { side, error },
            Stop::Spill(e) => DiffFailure::Spill(e),
            Stop::Unsorted(side) => DiffFailure::Read {
                side,
                error: Box::new(Error::io(side, std::io::Error::other("records not sorted"))),
            },
        }
    }
}

fn side(side: &'static str) -> impl Fn(Error) -> DiffFailure {
    move |error| DiffFailure::Read {
        side,
        error: Box::new(error),
    }
}

/// Compare two opened in-memory dumps, keeping every pair in the report.
///
/// # Errors
/// Unusable options, or a payload that cannot be read.
pub fn diff(a: &Dump, b: &Dump, options: &DiffOptions) -> Result<DiffReport, DiffFailure> {
    options.validate()?;
    let mut report = DiffReport::new(a.info(), b.info(), *options, Keep::All)?;
    merge_in_memory(a, b, options, &mut report)?;
    report.finish();
    Ok(report)
}

fn merge_in_memory(
    a: &Dump,
    b: &Dump,
    o: &DiffOptions,
    report: &mut DiffReport,
) -> Result<(), DiffFailure> {
    let sorted = |d: &Dump| {
        let mut v: Vec<Record> = d.records().to_vec();
        v.sort_by_key(|r| (r.task_id, r.stage, r.arg_index, r.role, r.index));
        v
    };
    let (va, vb) = (sorted(a), sorted(b));
    let it = |v: Vec<Record>| v.into_iter().map(Ok);
    let (pa, pb) = (&a.info().payload, &b.info().payload);
    merge(it(va), pa, it(vb), pb, o, (report, &mut |_, _| {})).map_err(DiffFailure::from)
}

/// Compare the dumps at two paths, streaming both: memory holds one key
/// group of each side, and at most `keep` rows per table of the report
/// (`--json` spills every pair to a temporary file instead).
///
/// # Errors
/// Unusable options, a dump that cannot be read (the message names the
/// file), or a spill file that cannot be written.
pub fn diff_paths(
    a: &Path,
    b: &Path,
    options: &DiffOptions,
    keep: Keep,
) -> Result<DiffReport, DiffFailure> {
    diff_paths_with(a, b, options, keep, &mut |_, _| {})
}

/// [`diff_paths`], calling `progress(records read, records announced by
/// both headers)` as the records are read (the CLI draws a bar with it).
///
/// # Errors
/// As for [`diff_paths`].
pub fn diff_paths_with(
    a: &Path,
    b: &Path,
    options: &DiffOptions,
    keep: Keep,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<DiffReport, DiffFailure> {
    options.validate()?;
    let open = |p: &Path| -> Result<RecordStream, Error> {
        RecordStream::open_manifest(&crate::locate::resolve_manifest(p)?)
    };
    let (sa, sb) = (open(a).map_err(side("A"))?, open(b).map_err(side("B"))?);
    let (ia, ib): (std::sync::Arc<DumpInfo>, std::sync::Arc<DumpInfo>) =
        (sa.info().clone(), sb.info().clone());
    let mut report = DiffReport::new(&ia, &ib, *options, keep.clone())?;
    report.expected_records = ia.header.total_tensors + ib.header.total_tensors;
    match merge(
        sa,
        &ia.payload,
        sb,
        &ib.payload,
        options,
        (&mut report, progress),
    ) {
        Ok(()) => {}
        Err(Stop::Unsorted(which)) => {
            // Not written by a writer that sorts: pair in memory.
            let (da, db) = (
                Dump::open(a).map_err(side("A"))?,
                Dump::open(b).map_err(side("B"))?,
            );
            report = DiffReport::new(da.info(), db.info(), *options, keep)?;
            report.notes.push(format!(
                "{which}'s records are not sorted by (task_id, stage, arg_index): paired in memory"
            ));
            merge_in_memory(&da, &db, options, &mut report)?;
        }
        Err(stop) => return Err(stop.into()),
    }
    report.finish();
    Ok(report)
}
