//! The race check: GM bytes written by two dispatches that could run at
//! the same time.
//!
//! GM copies are data-race-free (`simpler_chip`), so such writes are not
//! undefined behaviour — but what the bytes end up holding depends on
//! timing, and a run can PASS today and fail tomorrow. Every core logs the
//! runs of bytes it writes (TSTORE, direct writes) in its `WriteLog`; the
//! runtime keeps the logs it needs and compares them:
//!
//! - **Within a task**, every subtask (blocks × members) is runnable at the
//!   same time by definition, so any two of them writing a common byte is
//!   a race — reported whatever the OS happened to do. Checked when the
//!   task's last subtask finishes. Single-subtask tasks keep no log.
//! - **Across tasks**, the dependency analysis orders every pair of
//!   accesses it sees; only `no_dep` tensors escape it. From the first
//!   submission of a task with a `no_dep` tensor, every task still
//!   outstanding and every later one is *tracked*: its execution window
//!   (first dispatch → completion, on a logical clock) and its writes are
//!   kept, and two tracked tasks whose windows overlapped and that wrote a
//!   common byte are reported. Tasks ordered by a dependency never have
//!   overlapping windows (a dependent is dispatched after its producer
//!   completed). Before any `no_dep` submission this costs one relaxed load
//!   per task.
//!
//! [`RaceCheck::Warn`] prints one stderr line per race (the first
//! [`RACE_LIST_CAP`]); [`RaceCheck::Error`] fails the run with the first.
//! Either way every race is counted for the run report and the manifest.

use std::{
    collections::BTreeMap,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use parking_lot::Mutex;
use simpler_chip::WriteRun;
use simpler_core::{RaceWriter, WriteRace};

use crate::task::Task;

/// Races kept in the run report and the manifest (all are counted).
pub const RACE_LIST_CAP: usize = 100;

/// What to do about overlapping writes of concurrently runnable dispatches
/// (`--racecheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RaceCheck {
    /// Do not record writes.
    Off,
    /// Report each race on stderr and count it (the default).
    #[default]
    Warn,
    /// Fail the run at the first race, like a kernel error.
    Error,
}

impl RaceCheck {
    /// Every value, in flag order.
    pub const ALL: [RaceCheck; 3] = [RaceCheck::Off, RaceCheck::Warn, RaceCheck::Error];

    /// The flag value (`off`, `warn`, `error`).
    pub fn name(self) -> &'static str {
        match self {
            RaceCheck::Off => "off",
            RaceCheck::Warn => "warn",
            RaceCheck::Error => "error",
        }
    }

    /// Parse a flag value.
    pub fn from_name(s: &str) -> Option<RaceCheck> {
        RaceCheck::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// What one dispatch wrote: who, and the merged runs (sorted, disjoint).
#[derive(Debug, Clone)]
pub(crate) struct DispatchWrites {
    pub writer: RaceWriter,
    pub runs: Vec<WriteRun>,
}

/// A task's race-check state.
#[derive(Debug)]
pub(crate) struct TaskRace {
    /// Subtasks (blocks × members): more than one means the task is
    /// checked against itself.
    subtasks: u32,
    /// Part of the cross-task check (see the module doc).
    tracked: AtomicBool,
    /// Logical clock at its first dispatch (0: before tracking began).
    start: AtomicU64,
    /// Its key in the ledger's running set (a lower bound of `start`).
    bound: AtomicU64,
    /// It has a `no_dep` tensor argument.
    nodep: bool,
    /// Writes of its finished subtasks, when kept.
    writes: Mutex<Vec<DispatchWrites>>,
}

impl TaskRace {
    pub fn new(subtasks: u32, nodep: bool) -> TaskRace {
        TaskRace {
            subtasks,
            tracked: AtomicBool::new(false),
            start: AtomicU64::new(0),
            bound: AtomicU64::new(0),
            nodep,
            writes: Mutex::new(Vec::new()),
        }
    }

    fn tracked(&self) -> bool {
        self.tracked.load(Ordering::SeqCst)
    }
}

/// A completed tracked task whose writes a still-running task may race.
struct Done {
    end: u64,
    writes: Vec<DispatchWrites>,
}

#[derive(Default)]
struct Ledger {
    /// Bounds of tracked tasks not yet complete: bound → count.
    running: BTreeMap<u64, u32>,
    done: Vec<Done>,
}

impl Ledger {
    fn enter(&mut self, bound: u64) {
        *self.running.entry(bound).or_default() += 1;
    }

    fn leave(&mut self, bound: u64) {
        if let Some(n) = self.running.get_mut(&bound) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&bound);
            }
        }
    }

    /// Forget completed tasks no running task can overlap: those that
    /// completed before every running task was even submitted.
    fn prune(&mut self) {
        match self.running.keys().next() {
            None => self.done.clear(),
            Some(&min) => self.done.retain(|d| d.end >= min),
        }
    }
}

/// The run's race check.
pub(crate) struct Races {
    mode: RaceCheck,
    /// A task with a `no_dep` tensor was submitted: cross-task tracking on.
    nodep_seen: AtomicBool,
    /// Logical clock: bumped at each tracked completion.
    clock: AtomicU64,
    ledger: Mutex<Ledger>,
    count: AtomicU64,
    list: Mutex<Vec<WriteRace>>,
}

impl Races {
    pub fn new(mode: RaceCheck) -> Races {
        Races {
            mode,
            nodep_seen: AtomicBool::new(false),
            clock: AtomicU64::new(1),
            ledger: Mutex::new(Ledger::default()),
            count: AtomicU64::new(0),
            list: Mutex::new(Vec::new()),
        }
    }

    /// A task was created (orchestrator thread, before it can be
    /// dispatched). `outstanding` lists the tasks submitted and not yet
    /// complete; it is called once, at the first `no_dep` task.
    ///
    /// The test is inlined and the rest is not: most runs never see a
    /// `no_dep` task, and the call alone cost ~20 instructions a submit
    /// (callgrind, stop 26).
    #[inline]
    pub fn on_submit<'t>(&self, task: &TaskRace, outstanding: impl FnOnce() -> Vec<&'t Task>) {
        if self.mode == RaceCheck::Off || (!task.nodep && !self.nodep_seen.load(Ordering::Relaxed))
        {
            return;
        }
        self.enter_tracked(task, outstanding);
    }

    #[inline(never)]
    fn enter_tracked<'t>(&self, task: &TaskRace, outstanding: impl FnOnce() -> Vec<&'t Task>) {
        let mut ledger = self.ledger.lock();
        if !self.nodep_seen.swap(true, Ordering::SeqCst) {
            // They may be running already: their windows start at 0. One
            // whose last subtask is finishing either sees `nodep_seen` in
            // `on_complete` (and leaves the ledger) or is seen `finishing`
            // here and skipped: `nodep_seen` is stored and `remaining`
            // decremented with SeqCst, and each side then loads the
            // other's, so one of them sees the other.
            for t in outstanding() {
                if !t.finishing() && !t.race.tracked.swap(true, Ordering::SeqCst) {
                    ledger.enter(0);
                }
            }
        }
        let bound = self.clock.load(Ordering::SeqCst);
        task.bound.store(bound, Ordering::Relaxed);
        task.start.store(bound, Ordering::Relaxed);
        task.tracked.store(true, Ordering::SeqCst);
        ledger.enter(bound);
    }

    /// Block 0 of a task is being dispatched: its window starts.
    pub fn on_first_dispatch(&self, task: &TaskRace) {
        if task.tracked() {
            task.start
                .store(self.clock.load(Ordering::SeqCst), Ordering::Relaxed);
        }
    }

    /// True when a finished subtask's writes must be kept.
    pub fn wants_writes(&self, task: &TaskRace) -> bool {
        self.mode != RaceCheck::Off && (task.subtasks > 1 || task.tracked())
    }

    /// Keep one finished subtask's writes.
    pub fn record(&self, task: &TaskRace, writes: DispatchWrites) {
        task.writes.lock().push(writes);
    }

    /// The task's last subtask finished (before its dependents are
    /// released): find its races.
    pub fn on_complete(&self, task: &TaskRace) -> Vec<WriteRace> {
        if self.mode == RaceCheck::Off {
            return Vec::new();
        }
        let tracking = task.tracked() || self.nodep_seen.load(Ordering::SeqCst);
        if task.subtasks == 1 && !tracking {
            // Nothing was kept and nothing to compare: the common case.
            return Vec::new();
        }
        let mine = std::mem::take(&mut *task.writes.lock());
        let mut races = Vec::new();
        if task.subtasks > 1 {
            pair_overlaps(&[&mine], &mut races);
        }
        if !tracking {
            return races;
        }
        let mut ledger = self.ledger.lock();
        if task.tracked() {
            let end = self.clock.fetch_add(1, Ordering::SeqCst);
            let start = task.start.load(Ordering::Relaxed);
            for d in ledger.done.iter().filter(|d| d.end >= start) {
                pair_overlaps(&[&d.writes, &mine], &mut races);
            }
            ledger.leave(task.bound.load(Ordering::Relaxed));
            if !mine.is_empty() {
                ledger.done.push(Done { end, writes: mine });
            }
            ledger.prune();
        }
        races
    }

    /// Count and keep `races`; print them (`warn`). Returns the race to
    /// fail the run with (`error`).
    pub fn report(&self, races: Vec<WriteRace>) -> Option<WriteRace> {
        let first = *races.first()?;
        let before = self.count.fetch_add(races.len() as u64, Ordering::Relaxed) as usize;
        let mut list = self.list.lock();
        for (i, r) in races.iter().enumerate() {
            if list.len() < RACE_LIST_CAP {
                list.push(*r);
            }
            if self.mode == RaceCheck::Warn {
                match before + i {
                    n if n < RACE_LIST_CAP => eprintln!("warning: {r}"),
                    n if n == RACE_LIST_CAP => eprintln!(
                        "warning: more than {RACE_LIST_CAP} write races; the rest are counted, not printed"
                    ),
                    _ => {}
                }
            }
        }
        (self.mode == RaceCheck::Error).then_some(first)
    }

    /// Races found so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The first [`RACE_LIST_CAP`] races, in the order they were found.
    pub fn list(&self) -> Vec<WriteRace> {
        self.list.lock().clone()
    }
}

/// A dispatch in [`pair_overlaps`]: (group, index in the group).
type Who = (usize, usize);

/// Overlap of two dispatches in one buffer, accumulated over their runs.
struct PairOverlap {
    lo: u64,
    hi: u64,
    bytes: u64,
}

/// Every pair of dispatches that wrote a common byte, one race per pair
/// and buffer, in dispatch-id order. With one group, pairs within it; with two, pairs across
/// them. Runs of one dispatch are disjoint (merged), so byte counts are
/// exact. A sweep over the runs sorted by address keeps only the runs
/// still open, so it costs O(runs · log runs + overlaps).
fn pair_overlaps(groups: &[&Vec<DispatchWrites>], out: &mut Vec<WriteRace>) {
    // (run, group, dispatch index within group)
    let mut runs: Vec<(WriteRun, usize, usize)> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for (i, d) in group.iter().enumerate() {
            runs.extend(d.runs.iter().map(|r| (*r, g, i)));
        }
    }
    if runs.len() < 2 {
        return;
    }
    runs.sort_unstable_by_key(|(r, _, _)| (r.buffer, r.start));
    let mut open: Vec<(WriteRun, usize, usize)> = Vec::new();
    let mut pairs: BTreeMap<(u64, Who, Who), PairOverlap> = BTreeMap::new();
    for (r, g, i) in runs {
        open.retain(|(o, _, _)| o.buffer == r.buffer && o.end > r.start);
        for &(o, og, oi) in &open {
            let counts = if groups.len() == 1 { oi != i } else { og != g };
            if !counts {
                continue;
            }
            let (lo, hi) = (r.start.max(o.start), r.end.min(o.end));
            let key = (r.buffer, (og, oi).min((g, i)), (og, oi).max((g, i)));
            let p = pairs.entry(key).or_insert(PairOverlap { lo, hi, bytes: 0 });
            p.lo = p.lo.min(lo);
            p.hi = p.hi.max(hi);
            p.bytes += hi - lo;
        }
        open.push((r, g, i));
    }
    let from = out.len();
    for ((buffer, (ga, ia), (gb, ib)), p) in pairs {
        let (a, b) = (groups[ga][ia].writer, groups[gb][ib].writer);
        let (first, second) = if a.dispatch_id <= b.dispatch_id {
            (a, b)
        } else {
            (b, a)
        };
        out.push(WriteRace {
            first,
            second,
            buffer,
            start: p.lo - buffer,
            end: p.hi - buffer,
            overlap_bytes: p.bytes,
        });
    }
    // Reports in dispatch order, whatever order the subtasks finished in.
    out[from..].sort_by_key(|r| (r.first.dispatch_id, r.second.dispatch_id, r.buffer));
}

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_core::{topology::CoreType, TaskId};

    fn writes(id: u64, task: u32, runs: &[(u64, u64, u64)]) -> DispatchWrites {
        DispatchWrites {
            writer: RaceWriter {
                dispatch_id: id,
                task_id: TaskId::new(0, task),
                func_id: 1,
                kernel: "k",
                core_type: CoreType::Aiv,
                core_id: 8 + id as u32,
                block_idx: id as u32,
            },
            runs: runs
                .iter()
                .map(|&(buffer, start, end)| WriteRun { buffer, start, end })
                .collect(),
        }
    }

    #[test]
    fn disjoint_rows_are_not_races_overlapping_ones_are_one_per_pair_and_buffer() {
        // Blocks 0 and 1 write disjoint rows; block 2 overlaps both and,
        // in a strided pattern, block 0 twice in one buffer.
        let set = vec![
            writes(0, 1, &[(1000, 1000, 1064), (1000, 1128, 1192)]),
            writes(1, 1, &[(1000, 1064, 1128)]),
            writes(2, 1, &[(1000, 1032, 1160), (5000, 5000, 5008)]),
            writes(3, 1, &[(5000, 5004, 5012)]),
        ];
        let mut out = Vec::new();
        pair_overlaps(&[&set], &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|r| {
                (
                    r.first.dispatch_id,
                    r.second.dispatch_id,
                    r.buffer,
                    r.start,
                    r.end,
                    r.overlap_bytes,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 2, 1000, 32, 160, 32 + 32),
                (1, 2, 1000, 64, 128, 64),
                (2, 3, 5000, 4, 8, 4),
            ]
        );
    }

    #[test]
    fn across_groups_only_pairs_from_different_groups_count() {
        let a = vec![writes(0, 1, &[(0, 0, 16)]), writes(1, 1, &[(0, 0, 16)])];
        let b = vec![writes(7, 2, &[(0, 8, 24)])];
        let mut out = Vec::new();
        pair_overlaps(&[&a, &b], &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out
            .iter()
            .all(|r| !r.within_task() && r.second.dispatch_id == 7));
        assert!(out
            .iter()
            .all(|r| (r.start, r.end, r.overlap_bytes) == (8, 16, 8)));
    }

    #[test]
    fn racecheck_names_round_trip() {
        for m in RaceCheck::ALL {
            assert_eq!(RaceCheck::from_name(m.name()), Some(m));
        }
        assert_eq!(RaceCheck::from_name("loud"), None);
        assert_eq!(RaceCheck::default(), RaceCheck::Warn);
    }
}
