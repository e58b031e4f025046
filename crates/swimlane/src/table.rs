//! The per-func table: what each kernel cost, as the upstream converter
//! prints it (Count, Exec, Latency, Exec %, Head OH, Tail OH) plus each
//! func's share of all kernel execution.

use std::collections::BTreeMap;

use crate::model::Timeline;

/// One func's totals, in cycles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FuncRow {
    /// Func id (`None`: dispatches whose task deps.json does not list).
    pub func: Option<u32>,
    /// Its name.
    pub name: String,
    /// Dispatches.
    pub count: u64,
    /// Σ (end − start).
    pub exec: u64,
    /// Σ (finish − dispatch), over dispatches with both (level ≥ 2).
    pub latency: u64,
    /// Σ (start − dispatch), same dispatches.
    pub head: u64,
    /// Σ (finish − end), same dispatches.
    pub tail: u64,
    /// Dispatches that have dispatch and finish times.
    pub timed: u64,
    /// Σ exec of the timed dispatches (the numerator of `exec_pct`).
    pub timed_exec: u64,
}

impl FuncRow {
    /// Exec share of latency, %, over the timed dispatches (`None` at level 1).
    pub fn exec_pct(&self) -> Option<f64> {
        (self.latency > 0).then(|| 100.0 * self.timed_exec as f64 / self.latency as f64)
    }
}

/// Rows by func id (unknown last), and the total of every column.
pub fn func_table(t: &Timeline) -> (Vec<FuncRow>, FuncRow) {
    let mut rows: BTreeMap<(bool, u32), FuncRow> = BTreeMap::new();
    let mut total = FuncRow {
        name: "TOTAL".into(),
        ..Default::default()
    };
    for d in &t.dispatches {
        let key = (d.func.is_none(), d.func.unwrap_or(0));
        let row = rows.entry(key).or_insert_with(|| FuncRow {
            func: d.func,
            name: t.func_name(d.func),
            ..Default::default()
        });
        for r in [&mut *row, &mut total] {
            r.count += 1;
            r.exec += d.exec();
            if let (Some(disp), Some(fin)) = (d.dispatch, d.finish) {
                r.timed += 1;
                r.timed_exec += d.exec();
                r.latency += fin.saturating_sub(disp);
                r.head += d.start.saturating_sub(disp);
                r.tail += fin.saturating_sub(d.end);
            }
        }
    }
    (rows.into_values().collect(), total)
}
