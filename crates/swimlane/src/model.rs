//! The in-memory timeline: dispatches with their four times, tasks, edges,
//! scheduler phases and submits, built from the swimlane files exactly as
//! the upstream converter reads them (rows joined on `(core_id,
//! reg_task_id)`, func ids resolved from `deps.json` `kernel_ids`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use simpler_format::swimlane::{source, AicoreRow, Deps, NameMap, OrchPhase, Records, SchedPhase};

/// One dispatch. Times are raw cycles of the file's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    /// Core id.
    pub core: u32,
    /// Task id.
    pub task: u64,
    /// The core's dispatch count.
    pub reg: u64,
    /// The core received it (`start − receive_to_start`).
    pub receive: u64,
    /// Kernel start.
    pub start: u64,
    /// Kernel end.
    pub end: u64,
    /// Scheduler dispatch (level ≥ 2, when the row joined).
    pub dispatch: Option<u64>,
    /// Scheduler saw it finish (level ≥ 2, when the row joined).
    pub finish: Option<u64>,
    /// Func id, resolved from the task's `kernel_ids` (`None`: unknown).
    pub func: Option<u32>,
}

impl Dispatch {
    /// The dispatch of aicore row `r`, with the scheduler's `dispatch` and
    /// `finish` times when known and the func it ran: how a row becomes a
    /// dispatch, for a recorded timeline and a predicted one alike.
    pub(crate) fn of_row(
        r: &AicoreRow,
        dispatch: Option<u64>,
        finish: Option<u64>,
        func: Option<u32>,
    ) -> Dispatch {
        Dispatch {
            core: r.core_id,
            task: r.task_id,
            reg: r.reg_task_id,
            receive: r.start.saturating_sub(r.receive_to_start),
            start: r.start,
            end: r.end,
            dispatch,
            finish,
            func,
        }
    }

    /// Kernel execution, cycles.
    pub fn exec(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// A task of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Id.
    pub id: u64,
    /// `[aic, aiv0, aiv1]` func ids, −1 inactive.
    pub kernel_ids: [i64; 3],
    /// SPMD blocks.
    pub block_num: u32,
}

/// An edge of the graph: `succ` waits for `pred`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Producer.
    pub pred: u64,
    /// Consumer.
    pub succ: u64,
    /// `creator`, `tensormap`, `explicit` (borrowed when one of these).
    pub source: Cow<'static, str>,
}

/// A whole run's timeline.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Recording level (1–4).
    pub level: u8,
    /// Cycles per second.
    pub clock_hz: u64,
    /// `aic`/`aiv` by core id.
    pub core_types: Vec<String>,
    /// Dispatches in file order.
    pub dispatches: Vec<Dispatch>,
    /// Tasks in submission order (empty without `deps.json`).
    pub tasks: Vec<Task>,
    /// Edges.
    pub edges: Vec<Edge>,
    /// Scheduler phases per thread (level ≥ 3).
    pub sched: Vec<Vec<SchedPhase>>,
    /// Orchestrator submits (level 4), all threads.
    pub submits: Vec<OrchPhase>,
    /// Func id → name.
    pub names: BTreeMap<u32, String>,
    /// What did not join or resolve, as the converter would warn.
    pub warnings: Vec<String>,
}

/// The AIC cores are `[0, n_aic)`; the AIV of cluster c are
/// `n_aic + 2c` (aiv0) and `+ 1` (aiv1).
pub(crate) fn resolve_func(core: u32, core_types: &[String], kernel_ids: &[i64; 3]) -> Option<u32> {
    let pick = |i: usize| u32::try_from(kernel_ids[i]).ok();
    match core_types.get(core as usize).map(String::as_str) {
        Some("aic") => pick(0),
        Some("aiv") => {
            // A MIX task names both vector members; an AIV-only task names
            // one, whichever vector core ran it.
            match (pick(1), pick(2)) {
                (Some(_), Some(_)) => {
                    let n_aic = core_types.iter().filter(|t| *t == "aic").count() as u32;
                    pick(1 + (core.saturating_sub(n_aic) % 2) as usize)
                }
                (a, b) => a.or(b),
            }
        }
        _ => None,
    }
}

impl Timeline {
    /// Build from the three files (`deps` and `names` may be missing).
    pub fn from_files(records: &Records, deps: Option<&Deps>, names: Option<&NameMap>) -> Timeline {
        let (tasks, edges) = match deps {
            Some(d) => (
                d.tasks
                    .iter()
                    .map(|x| Task {
                        id: x.task_id.0,
                        kernel_ids: x.kernel_ids,
                        block_num: x.block_num,
                    })
                    .collect(),
                d.edges
                    .iter()
                    .map(|e| Edge {
                        pred: e.pred.0,
                        succ: e.succ.0,
                        source: known_source(&e.source),
                    })
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        Timeline::with_graph(records, tasks, edges, names)
    }

    /// Build from a records file and the graph as `deps.json` would give
    /// it (tasks in submission order), without the file.
    pub fn with_graph(
        records: &Records,
        tasks: Vec<Task>,
        edges: Vec<Edge>,
        names: Option<&NameMap>,
    ) -> Timeline {
        let mut t = Timeline {
            level: records.chip_swimlane_level,
            clock_hz: records.metadata.clock_freq_hz,
            core_types: records.metadata.core_types.clone(),
            sched: records.aicpu_scheduler_phases.clone(),
            submits: records.aicpu_orchestrator_phases.concat(),
            tasks,
            edges,
            ..Default::default()
        };
        if let Some(n) = names {
            t.names = names_of(n);
        }
        t.join(records);
        t
    }

    fn join(&mut self, records: &Records) {
        let aicpu: HashMap<(u32, u64), (u64, u64)> = records
            .aicpu_tasks
            .iter()
            .map(|r| ((r.core_id, r.reg_task_id), (r.dispatch, r.finish)))
            .collect();
        let kernels: HashMap<u64, [i64; 3]> =
            self.tasks.iter().map(|t| (t.id, t.kernel_ids)).collect();
        let mut unmatched = 0;
        self.dispatches.reserve(records.aicore_tasks.len());
        for r in &records.aicore_tasks {
            let joined = aicpu.get(&(r.core_id, r.reg_task_id));
            if joined.is_none() && self.level >= 2 {
                unmatched += 1;
            }
            let func = kernels
                .get(&r.task_id)
                .and_then(|k| resolve_func(r.core_id, &self.core_types, k));
            self.dispatches.push(Dispatch::of_row(
                r,
                joined.map(|j| j.0).filter(|&c| c != 0),
                joined.map(|j| j.1).filter(|&c| c != 0),
                func,
            ));
        }
        if unmatched > 0 {
            self.warnings.push(format!(
                "{unmatched} aicore_tasks rows have no aicpu_tasks row with the same (core_id, reg_task_id)"
            ));
        }
        self.warn_unknown_funcs();
    }

    /// Say how many dispatches have no func (their task is not listed).
    pub(crate) fn warn_unknown_funcs(&mut self) {
        let unknown = self.dispatches.iter().filter(|d| d.func.is_none()).count();
        if unknown > 0 && !self.tasks.is_empty() {
            self.warnings.push(format!(
                "{unknown} dispatches have a task_token that deps.json does not list"
            ));
        }
    }

    /// The smallest non-zero timestamp of the file: the zero of µs.
    pub fn t0(&self) -> u64 {
        let d = self.dispatches.iter().flat_map(|d| {
            [
                Some(d.receive),
                Some(d.start),
                Some(d.end),
                d.dispatch,
                d.finish,
            ]
            .into_iter()
            .flatten()
        });
        let s = self.sched.iter().flatten().map(|p| p.start_cycles);
        let o = self.submits.iter().map(|p| p.start_cycles);
        d.chain(s).chain(o).filter(|&c| c != 0).min().unwrap_or(0)
    }

    /// Microseconds of `cycles` (a duration) at this clock.
    pub fn us(&self, cycles: u64) -> f64 {
        cycles as f64 * 1e6 / self.clock_hz.max(1) as f64
    }

    /// Name of `func` (`func_<id>` when the name map lacks it).
    pub fn func_name(&self, func: Option<u32>) -> String {
        match func {
            Some(f) => self
                .names
                .get(&f)
                .cloned()
                .unwrap_or_else(|| format!("func_{f}")),
            None => "task".into(),
        }
    }

    /// Wall time of the recorded dispatches: last end − first start.
    pub fn wall(&self) -> u64 {
        let first = self.dispatches.iter().map(|d| d.start).min().unwrap_or(0);
        let last = self.dispatches.iter().map(|d| d.end).max().unwrap_or(0);
        last.saturating_sub(first)
    }
}

/// Func id → name, from a name map.
pub(crate) fn names_of(n: &NameMap) -> BTreeMap<u32, String> {
    n.callable_id_to_name
        .iter()
        .filter_map(|(k, v)| Some((k.parse().ok()?, v.clone())))
        .collect()
}

/// An edge source as read: one of ours borrowed (no allocation per edge),
/// anything else copied.
fn known_source(s: &str) -> Cow<'static, str> {
    match s {
        source::CREATOR => Cow::Borrowed(source::CREATOR),
        source::TENSORMAP => Cow::Borrowed(source::TENSORMAP),
        source::EXPLICIT => Cow::Borrowed(source::EXPLICIT),
        other => Cow::Owned(other.to_string()),
    }
}

/// `rXtY` of a task id: ring and local index, the converter's label.
pub fn task_label(id: u64) -> String {
    format!("r{}t{}", id >> 32, id & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn funcs_resolve_by_core_type_and_member() {
        let types: Vec<String> = ["aic", "aiv", "aiv"].map(String::from).to_vec();
        assert_eq!(resolve_func(0, &types, &[4, -1, -1]), Some(4));
        assert_eq!(resolve_func(1, &types, &[0, 1, 2]), Some(1));
        assert_eq!(resolve_func(2, &types, &[0, 1, 2]), Some(2));
        // AIV-only on the second vector core.
        assert_eq!(resolve_func(2, &types, &[-1, 7, -1]), Some(7));
        assert_eq!(resolve_func(5, &types, &[-1, 7, -1]), None);
        assert_eq!(task_label((1 << 32) | 5), "r1t5");
    }
}
