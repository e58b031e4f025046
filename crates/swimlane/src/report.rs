//! What `simpler swimlane` prints, and the `--predict` summary of `run`.

use std::fmt::Write as _;

use simpler_format::words::count;

use crate::{
    critical::{self, CriticalPath},
    files::PredictSummary,
    model::{task_label, Timeline},
    overhead::overhead,
    table::{func_table, FuncRow},
};

fn pct(a: f64, b: f64) -> String {
    match b > 0.0 {
        true => format!("{:.1}%", 100.0 * a / b),
        false => "-".into(),
    }
}

fn row_line(t: &Timeline, r: &FuncRow, all_exec: u64) -> String {
    let avg = |v: u64, n: u64| match n {
        0 => "-".to_string(),
        n => format!("{:.3}", t.us(v) / n as f64),
    };
    let label = match r.func {
        Some(f) if r.name != "TOTAL" => format!("{}({f})", r.name),
        _ => r.name.clone(),
    };
    format!(
        "{label:<22} {:>7} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}",
        r.count,
        avg(r.exec, r.count),
        avg(r.latency, r.timed),
        r.exec_pct().map_or("-".into(), |p| format!("{p:.1}%")),
        avg(r.head, r.timed),
        avg(r.tail, r.timed),
        pct(r.exec as f64, all_exec as f64),
    )
}

/// The per-func table (µs, averages per dispatch).
pub fn render_table(t: &Timeline) -> String {
    let (rows, total) = func_table(t);
    let mut s = String::from(
        "Per func (µs, average per dispatch; exec% = exec / latency; share = of all kernel time)\n",
    );
    let _ = writeln!(
        s,
        "{:<22} {:>7} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}",
        "func", "count", "exec", "latency", "exec%", "head OH", "tail OH", "share"
    );
    for r in rows.iter().chain(std::iter::once(&total)) {
        let _ = writeln!(s, "{}", row_line(t, r, total.exec));
    }
    s
}

/// The critical path, at most `top` links listed; `observed` adds what
/// held its first task back (a prediction submits every task at cycle 0).
pub fn render_path(t: &Timeline, cp: &CriticalPath, top: usize, observed: bool) -> String {
    let wall = t.wall();
    let mut s = format!(
        "Critical path: {}, {:.3} µs of {:.3} µs wall ({}); {:.3} µs in tasks, {:.3} µs waiting between them\n",
        count(cp.links.len() as u64, "task", "tasks"),
        t.us(cp.length()),
        t.us(wall),
        pct(cp.length() as f64, wall as f64),
        t.us(cp.busy()),
        t.us(cp.waits()),
    );
    // The func of each task listed (its last dispatch's), found in one
    // pass that keeps only those tasks.
    let listed: rustc_hash::FxHashSet<u64> = cp.links.iter().take(top).map(|l| l.task).collect();
    let funcs: rustc_hash::FxHashMap<u64, Option<u32>> = t
        .dispatches
        .iter()
        .filter(|d| listed.contains(&d.task))
        .map(|d| (d.task, d.func))
        .collect();
    let t0 = t.t0();
    let _ = writeln!(
        s,
        "{:>4}  {:<12} {:<22} {:>12} {:>10} {:>10}",
        "#", "task", "func", "start µs", "task µs", "wait µs"
    );
    for (i, l) in cp.links.iter().enumerate().take(top) {
        let f = funcs.get(&l.task).copied().flatten();
        let _ = writeln!(
            s,
            "{:>4}  {:<12} {:<22} {:>12.3} {:>10.3} {:>10.3}",
            i + 1,
            task_label(l.task),
            t.func_name(f),
            t.us(l.span.start.saturating_sub(t0)),
            t.us(l.span.end - l.span.start),
            t.us(l.wait),
        );
    }
    if cp.links.len() > top {
        let _ = writeln!(s, "      … {} more (--top)", cp.links.len() - top);
    }
    match cp.links.first() {
        Some(first) if observed => head_line(&mut s, t, first.task, first.span.start),
        _ => {}
    }
    s
}

/// What held the chain's first task back: its submit (level 4) and the
/// run's first kernel start.
fn head_line(s: &mut String, t: &Timeline, task: u64, start: u64) {
    let t0 = t.t0();
    let first_kernel = t.dispatches.iter().map(|d| d.start).min().unwrap_or(start);
    let at = |c: u64| t.us(c.saturating_sub(t0));
    match t.submits.iter().find(|p| p.task_id.0 == task) {
        Some(p) => {
            let _ = writeln!(
                s,
                "The chain's first task ({}) was submitted at {:.3} µs and started {:.3} µs later; the run's first kernel started at {:.3} µs.",
                task_label(task),
                at(p.end_cycles),
                t.us(start.saturating_sub(p.end_cycles)),
                at(first_kernel)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "The chain's first task ({}) started at {:.3} µs; the run's first kernel at {:.3} µs (submit times need level 4).",
                task_label(task),
                at(start),
                at(first_kernel)
            );
        }
    }
}

/// The scheduler overhead summary.
pub fn render_overhead(t: &Timeline) -> String {
    let o = overhead(t);
    let mut s = String::new();
    let per = o.edges as f64 / o.tasks.max(1) as f64;
    let _ = writeln!(
        s,
        "Graph: {} tasks, Fanout/Fanin total edges={} ({per:.2} per task), max fan-in {}, max fan-out {}",
        o.tasks, o.edges, o.max_fanin, o.max_fanout
    );
    if t.level < 3 {
        let _ = writeln!(s, "Scheduler phases: not recorded (level {} < 3)", t.level);
        return s;
    }
    // Schedulers are logical: one whose clusters got no dispatch records
    // no phase, and the count says so rather than hide it.
    let idle = match t.sched.len().saturating_sub(o.threads) {
        0 => String::new(),
        n => format!(" ({n} more recorded no phase)"),
    };
    let _ = writeln!(
        s,
        "Scheduler: {}{idle}, {} loop iterations ({} with work); Avg scheduler loop iteration {:.3} µs (with work)",
        count(o.threads as u64, "thread", "threads"),
        o.loop_iters,
        o.busy_iters,
        t.us(1) * o.avg_iter_cycles()
    );
    let _ = writeln!(
        s,
        "Pop: hit={} miss={} ({} hit)",
        o.pop_hit,
        o.pop_miss,
        pct(o.pop_hit as f64, (o.pop_hit + o.pop_miss) as f64)
    );
    for (k, (n, processed, cycles)) in &o.by_kind {
        let _ = writeln!(
            s,
            "  {k:<10} {n} phases, {processed} processed, {:.3} µs",
            t.us(*cycles)
        );
    }
    s
}

/// Everything `simpler swimlane RUN` prints.
pub fn render(t: &Timeline, top: usize) -> String {
    let tasks: std::collections::HashSet<u64> = t.dispatches.iter().map(|d| d.task).collect();
    let mut s = format!(
        "level {}, clock {} Hz, {}: {} of {}, {}; wall {:.3} µs (first start → last end)\n",
        t.level,
        t.clock_hz,
        count(t.core_types.len() as u64, "core", "cores"),
        count(t.dispatches.len() as u64, "dispatch", "dispatches"),
        count(tasks.len() as u64, "task", "tasks"),
        count(t.edges.len() as u64, "edge", "edges"),
        t.us(t.wall())
    );
    for w in &t.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s.push('\n');
    s.push_str(&render_table(t));
    s.push('\n');
    s.push_str(&render_path(t, &critical::observed(t), top, true));
    s.push('\n');
    s.push_str(&render_overhead(t));
    s
}

/// The `--predict` lines of `run`.
pub fn render_prediction(p: &PredictSummary, arch: &str, clusters: u32, top: usize) -> String {
    let t = &p.timeline;
    let cp = &p.critical;
    let cores = 3 * clusters as u64;
    let mut s = format!(
        "predicted ({arch} at {} MHz, {clusters} clusters): makespan {} cycles ({:.3} µs); critical path {} tasks, {} cycles; kernel work {} cycles ({} per core of {cores}); longest chain of kernels alone {} cycles\n",
        t.clock_hz / 1_000_000,
        p.makespan,
        t.us(p.makespan),
        cp.links.len(),
        cp.length(),
        p.work,
        p.work / cores.max(1),
        p.static_path,
    );
    if p.missing > 0 {
        let _ = writeln!(s, "warning: {} dispatches had no recorded cost (the run did not finish them); counted as 0 cycles", p.missing);
    }
    let _ = writeln!(
        s,
        "bottleneck pipe per func (busy cycles, share of the func's kernel cycles):"
    );
    for (f, pipe, busy, share) in &p.bottlenecks {
        let _ = writeln!(
            s,
            "  {:<22} {:<7} {busy:>12} {:>6.1}%",
            format!("{}({f})", t.func_name(Some(*f))),
            pipe.name(),
            100.0 * share
        );
    }
    s.push_str(&render_path(t, cp, top, false));
    s
}
