//! The critical path by observed (or predicted) times: from the task that
//! ended last, step back each time to the predecessor that ended last —
//! the one it really waited for — until a task without predecessors.
//! Each link's wait is the gap from that predecessor's end to the task's
//! start: scheduling and dependency-release overhead on the path.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::BuildHasher;

use rustc_hash::FxHashMap;

/// A task's span on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Earliest start of its dispatches.
    pub start: u64,
    /// Latest end of its dispatches.
    pub end: u64,
}

/// One task of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Task id.
    pub task: u64,
    /// Its span.
    pub span: Span,
    /// Its start minus its predecessor's end on the path (0 for the first).
    pub wait: u64,
}

/// The chain, first task first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// Tasks in order.
    pub links: Vec<Link>,
}

impl CriticalPath {
    /// Last end − first start.
    pub fn length(&self) -> u64 {
        match (self.links.first(), self.links.last()) {
            (Some(a), Some(b)) => b.span.end.saturating_sub(a.span.start),
            _ => 0,
        }
    }

    /// Σ waits.
    pub fn waits(&self) -> u64 {
        self.links.iter().map(|l| l.wait).sum()
    }

    /// Σ task spans (length − waits).
    pub fn busy(&self) -> u64 {
        self.links.iter().map(|l| l.span.end - l.span.start).sum()
    }
}

/// The critical path through `spans` (tasks that ran) along `edges`
/// (`(pred, succ)`; edges to tasks without a span are ignored). Ties go
/// to the lower task id, so the result is deterministic.
pub fn critical_path<S: BuildHasher>(
    spans: &HashMap<u64, Span, S>,
    edges: &[(u64, u64)],
) -> CriticalPath {
    let key = |id: u64| (spans[&id].end, Reverse(id));
    // The predecessor each task waited for: the one that ended last.
    let mut waited: FxHashMap<u64, u64> = FxHashMap::default();
    for &(p, s) in edges {
        if spans.contains_key(&p) && spans.contains_key(&s) {
            let best = waited.entry(s).or_insert(p);
            if key(p) > key(*best) {
                *best = p;
            }
        }
    }
    let Some(mut cur) = spans.keys().copied().max_by_key(|&id| key(id)) else {
        return CriticalPath::default();
    };
    let mut rev = Vec::new();
    loop {
        let span = spans[&cur];
        let pred = waited.get(&cur).copied();
        let wait = pred.map_or(0, |p| span.start.saturating_sub(spans[&p].end));
        rev.push(Link {
            task: cur,
            span,
            wait,
        });
        match pred {
            // Spans of a dependency chain are ordered, so this ends; the
            // length check guards a file whose edges form a cycle.
            Some(p) if rev.len() <= spans.len() => cur = p,
            _ => break,
        }
    }
    rev.reverse();
    CriticalPath { links: rev }
}

/// Task spans of a timeline's dispatches.
pub fn task_spans(t: &crate::Timeline) -> FxHashMap<u64, Span> {
    let mut m: FxHashMap<u64, Span> = FxHashMap::default();
    m.reserve(t.tasks.len());
    for d in &t.dispatches {
        m.entry(d.task)
            .and_modify(|s| {
                s.start = s.start.min(d.start);
                s.end = s.end.max(d.end);
            })
            .or_insert(Span {
                start: d.start,
                end: d.end,
            });
    }
    m
}

/// The observed critical path of a timeline.
pub fn observed(t: &crate::Timeline) -> CriticalPath {
    let edges: Vec<(u64, u64)> = t.edges.iter().map(|e| (e.pred, e.succ)).collect();
    critical_path(&task_spans(t), &edges)
}
