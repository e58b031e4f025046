//! The critical path by observed (or predicted) times: from the task that
//! ended last, step back each time to the predecessor that ended last —
//! the one it really waited for — until a task without predecessors.
//! Each link's wait is the gap from that predecessor's end to the task's
//! start: scheduling and dependency-release overhead on the path.

use std::collections::HashMap;

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
pub fn critical_path(spans: &HashMap<u64, Span>, edges: &[(u64, u64)]) -> CriticalPath {
    let mut preds: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(p, s) in edges {
        if spans.contains_key(&p) && spans.contains_key(&s) {
            preds.entry(s).or_default().push(p);
        }
    }
    let latest = |ids: &mut dyn Iterator<Item = u64>| {
        ids.max_by_key(|id| (spans[id].end, std::cmp::Reverse(*id)))
    };
    let Some(mut cur) = latest(&mut spans.keys().copied()) else {
        return CriticalPath::default();
    };
    let mut rev = Vec::new();
    loop {
        let span = spans[&cur];
        let pred = preds.get(&cur).and_then(|p| latest(&mut p.iter().copied()));
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
pub fn task_spans(t: &crate::Timeline) -> HashMap<u64, Span> {
    let mut m: HashMap<u64, Span> = HashMap::new();
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
