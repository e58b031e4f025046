//! The scheduler overhead summary: pops, loop iterations, phase time,
//! fan-in and fan-out of the graph — the numbers the upstream
//! `sched_overhead_analysis` prints.

use std::collections::{BTreeMap, HashMap};

use crate::model::Timeline;

/// Totals over every scheduler thread and the graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overhead {
    /// Scheduler threads with phases.
    pub threads: usize,
    /// Pops that found work.
    pub pop_hit: u64,
    /// Pops that found an empty queue.
    pub pop_miss: u64,
    /// Loop iterations, summed over threads (each thread's last recorded
    /// `loop_iter`; idle iterations count).
    pub loop_iters: u64,
    /// Iterations that recorded at least one phase.
    pub busy_iters: u64,
    /// Σ phase durations, cycles.
    pub phase_cycles: u64,
    /// Per phase kind: (phases, Σ tasks_processed, Σ cycles).
    pub by_kind: BTreeMap<String, (u64, u64, u64)>,
    /// Dependency edges.
    pub edges: u64,
    /// Tasks in the graph.
    pub tasks: u64,
    /// Largest fan-in (predecessors of one task).
    pub max_fanin: u64,
    /// Largest fan-out (successors of one task).
    pub max_fanout: u64,
}

impl Overhead {
    /// Mean cycles of a loop iteration that did work.
    pub fn avg_iter_cycles(&self) -> f64 {
        self.phase_cycles as f64 / self.busy_iters.max(1) as f64
    }
}

/// The summary of `t`.
pub fn overhead(t: &Timeline) -> Overhead {
    let mut o = Overhead {
        threads: t.sched.iter().filter(|p| !p.is_empty()).count(),
        edges: t.edges.len() as u64,
        tasks: t.tasks.len() as u64,
        ..Default::default()
    };
    for thread in &t.sched {
        o.loop_iters += thread.iter().map(|p| p.loop_iter).max().unwrap_or(0);
        let mut last_iter = None;
        for p in thread {
            let cycles = p.end_cycles.saturating_sub(p.start_cycles);
            o.pop_hit += p.pop_hit.unwrap_or(0);
            o.pop_miss += p.pop_miss.unwrap_or(0);
            o.phase_cycles += cycles;
            if last_iter != Some(p.loop_iter) {
                o.busy_iters += 1;
                last_iter = Some(p.loop_iter);
            }
            let k = o.by_kind.entry(p.kind.to_string()).or_default();
            k.0 += 1;
            k.1 += p.tasks_processed;
            k.2 += cycles;
        }
    }
    let mut fanin: HashMap<u64, u64> = HashMap::new();
    let mut fanout: HashMap<u64, u64> = HashMap::new();
    for e in &t.edges {
        *fanin.entry(e.succ).or_default() += 1;
        *fanout.entry(e.pred).or_default() += 1;
    }
    o.max_fanin = fanin.values().copied().max().unwrap_or(0);
    o.max_fanout = fanout.values().copied().max().unwrap_or(0);
    o
}
