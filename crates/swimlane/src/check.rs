//! A checker of what the upstream tools require of a swimlane folder
//! (`UPSTREAM_FORMATS.md` B), written against the raw JSON — not our
//! typed readers — so it catches what those would forgive:
//!
//! - `swimlane_converter`: `clock_freq_hz`; 6-column integer aicore rows
//!   (the 5-column form is not enough for `critical_path`); at level ≥ 2
//!   every aicore row joins one aicpu row on `(core_id, reg_task_id)`
//!   (unmatched rows are dropped); a non-zero timestamp to convert µs
//!   from; every func id resolves through `deps.json` `kernel_ids` (`[0]`
//!   on an AIC core, `[1]` or `[2]` on an AIV core);
//! - `deps_viewer` / `critical_path`: records, `deps.json` and one
//!   `name_map*.json` in one folder; ids compared as `str(int(v))`, so
//!   every id must be an integer or a decimal string (never `"0x…"`);
//!   every task token and edge end is a task of `deps.json`; every func
//!   has a name;
//! - `sched_overhead_analysis`: phases with their keys, `pop_hit` /
//!   `pop_miss` on dispatch phases, `core_to_thread` per core, submits
//!   naming tasks — and it recomputes that tool's numbers
//!   ([`CheckedNumbers`]) from the raw files.
//!
//! [`check_perfetto`] checks our own trace: no two slices overlap on a
//! track, every flow has both ends on a slice.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

/// Numbers recomputed from the raw files, as `sched_overhead_analysis`
/// and the converter would print them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedNumbers {
    /// Aicore rows.
    pub dispatches: u64,
    /// Tasks in deps.json.
    pub tasks: u64,
    /// Edges in deps.json.
    pub edges: u64,
    /// Σ pop_hit.
    pub pop_hit: u64,
    /// Σ pop_miss.
    pub pop_miss: u64,
    /// Σ over threads of the largest loop_iter.
    pub loop_iters: u64,
    /// Submits recorded.
    pub submits: u64,
    /// Dispatches per func id.
    pub per_func: HashMap<u32, u64>,
}

/// `int(v)` as the tools do it: an integer, or a string of decimal digits.
fn int(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

fn read(path: &Path, errs: &mut Vec<String>) -> Option<Value> {
    let text = match simpler_format::files::read_regular(path) {
        Ok(t) => t,
        Err(e) => {
            errs.push(e.to_string());
            return None;
        }
    };
    serde_json::from_slice(&text)
        .map_err(|e| errs.push(format!("{}: not JSON: {e}", path.display())))
        .ok()
}

fn rows(v: &Value, key: &str, cols: usize, errs: &mut Vec<String>) -> Vec<Vec<u64>> {
    let Some(list) = v.get(key).and_then(Value::as_array) else {
        errs.push(format!("{key}: missing or not a list"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let cells: Option<Vec<u64>> = r
            .as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<_>>());
        match cells {
            Some(c) if c.len() == cols => out.push(c),
            _ => errs.push(format!(
                "{key}[{i}]: expected {cols} non-negative integers, found {r}"
            )),
        }
    }
    out
}

/// Check the swimlane folder `dir`; returns the recomputed numbers, or
/// every problem found.
///
/// # Errors
/// The list of requirements the folder breaks.
pub fn check_dir(dir: &Path) -> Result<CheckedNumbers, Vec<String>> {
    let mut errs = Vec::new();
    let rec = read(&dir.join(simpler_format::swimlane::RECORDS_FILE), &mut errs);
    let deps = read(&dir.join(simpler_format::swimlane::DEPS_FILE), &mut errs);
    let maps: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(simpler_format::swimlane::is_name_map_file)
                })
                .collect()
        })
        .unwrap_or_default();
    if maps.len() != 1 {
        errs.push(format!(
            "expected exactly one name_map*.json beside the records, found {}",
            maps.len()
        ));
    }
    let names = maps.first().and_then(|p| read(p, &mut errs));
    let (Some(rec), Some(deps)) = (rec, deps) else {
        return Err(errs);
    };
    let mut n = CheckedNumbers::default();
    let tasks = check_deps(&deps, &mut n, &mut errs);
    check_records(&rec, &tasks, names.as_ref(), &mut n, &mut errs);
    match errs.is_empty() {
        true => Ok(n),
        false => Err(errs),
    }
}

/// Tasks of deps.json by id: their kernel_ids.
fn check_deps(
    deps: &Value,
    n: &mut CheckedNumbers,
    errs: &mut Vec<String>,
) -> HashMap<u64, [i64; 3]> {
    let mut tasks = HashMap::new();
    for (i, t) in deps
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let id = t.get("task_id").and_then(int);
        let k: Option<Vec<i64>> = t
            .get("kernel_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect());
        match (id, k) {
            (Some(id), Some(k)) if k.len() == 3 => {
                tasks.insert(id, [k[0], k[1], k[2]]);
            }
            _ => errs.push(format!(
                "deps.json tasks[{i}]: task_id must be int()-able and kernel_ids 3 integers: {t}"
            )),
        }
    }
    n.tasks = tasks.len() as u64;
    let edges = deps.get("edges").and_then(Value::as_array);
    if edges.is_none() {
        errs.push("deps.json: edges missing".into());
    }
    for (i, e) in edges.into_iter().flatten().enumerate() {
        let ends = [e.get("pred"), e.get("succ")].map(|v| v.and_then(int));
        if ends
            .iter()
            .any(|x| x.is_none_or(|id| !tasks.contains_key(&id)))
        {
            errs.push(format!(
                "deps.json edges[{i}]: pred/succ must be decimal ids of listed tasks: {e}"
            ));
        }
        let src = e.get("source").and_then(Value::as_str);
        if !matches!(src, Some("creator" | "tensormap" | "explicit")) {
            errs.push(format!(
                "deps.json edges[{i}]: source {src:?} is not creator, tensormap or explicit"
            ));
        }
        n.edges += 1;
    }
    tasks
}

/// The level and the core types, checking the metadata.
fn metadata(rec: &Value, errs: &mut Vec<String>) -> (u64, Vec<String>) {
    let level = rec
        .get("chip_swimlane_level")
        .and_then(Value::as_u64)
        .unwrap_or(99);
    if !(1..=4).contains(&level) {
        errs.push(format!("chip_swimlane_level {level}: expected 1..=4"));
    }
    let md = rec.get("metadata");
    if md
        .and_then(|m| m.get("clock_freq_hz"))
        .and_then(Value::as_u64)
        .is_none_or(|f| f == 0)
    {
        errs.push("metadata.clock_freq_hz: required, a positive integer".into());
    }
    let types: Vec<String> = md
        .and_then(|m| m.get("core_types"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    if md.and_then(|m| m.get("num_cores")).and_then(Value::as_u64) != Some(types.len() as u64) {
        errs.push("metadata.num_cores must equal the length of core_types".into());
    }
    (level, types)
}

/// What every aicore row is checked against.
struct Rows<'a> {
    level: u64,
    types: Vec<String>,
    n_aic: u64,
    /// `(core_id, reg_task_id)` of the aicpu rows.
    joined: HashSet<(u64, u64)>,
    tasks: &'a HashMap<u64, [i64; 3]>,
    names: Option<&'a serde_json::Map<String, Value>>,
}

impl Rows<'_> {
    /// Check row `i`; returns its func id when it resolves.
    fn check(&self, i: usize, r: &[u64], errs: &mut Vec<String>) -> Option<u32> {
        let (core, task, reg, start, end) = (r[0], r[1], r[2], r[3], r[4]);
        if self.level >= 2 && !self.joined.contains(&(core, reg)) {
            errs.push(format!(
                "aicore_tasks[{i}]: no aicpu_tasks row for (core_id {core}, reg_task_id {reg})"
            ));
        }
        if start == 0 || end < start {
            errs.push(format!(
                "aicore_tasks[{i}]: start {start} / end {end}: need 0 < start <= end"
            ));
        }
        let Some(k) = self.tasks.get(&task) else {
            errs.push(format!(
                "aicore_tasks[{i}]: task_token {task} is not a task of deps.json"
            ));
            return None;
        };
        let func = match self.types.get(core as usize).map(String::as_str) {
            Some("aic") => k[0],
            Some("aiv") if k[1] >= 0 && k[2] >= 0 => k[1 + ((core - self.n_aic) % 2) as usize],
            Some("aiv") => k[1].max(k[2]),
            _ => -1,
        };
        let func = u32::try_from(func).ok();
        if func.is_none() {
            errs.push(format!(
                "aicore_tasks[{i}]: core {core} resolves no func id from kernel_ids {k:?}"
            ));
        }
        func
    }
}

fn check_records(
    rec: &Value,
    tasks: &HashMap<u64, [i64; 3]>,
    names: Option<&Value>,
    n: &mut CheckedNumbers,
    errs: &mut Vec<String>,
) {
    let (level, types) = metadata(rec, errs);
    let aicore = rows(rec, "aicore_tasks", 6, errs);
    n.dispatches = aicore.len() as u64;
    let map = names
        .and_then(|m| m.get("callable_id_to_name"))
        .and_then(Value::as_object);
    if names.is_some() && map.is_none() {
        errs.push("name map: callable_id_to_name missing".into());
    }
    let ctx = Rows {
        level,
        n_aic: types.iter().filter(|t| *t == "aic").count() as u64,
        types,
        joined: match level >= 2 {
            true => rows(rec, "aicpu_tasks", 4, errs)
                .iter()
                .map(|r| (r[0], r[1]))
                .collect(),
            false => HashSet::new(),
        },
        tasks,
        names: map,
    };
    let mut seen = HashSet::new();
    for (i, r) in aicore.iter().enumerate() {
        if !seen.insert((r[0], r[2])) {
            errs.push(format!(
                "aicore_tasks[{i}]: (core_id {}, reg_task_id {}) repeats",
                r[0], r[2]
            ));
        }
        if let Some(func) = ctx.check(i, r, errs) {
            *n.per_func.entry(func).or_default() += 1;
        }
    }
    let mut unnamed: Vec<u32> = n
        .per_func
        .keys()
        .copied()
        .filter(|f| ctx.names.is_some_and(|m| !m.contains_key(&f.to_string())))
        .collect();
    unnamed.sort_unstable();
    for f in unnamed {
        errs.push(format!("name map has no name for func {f}"));
    }
    if level >= 3 {
        check_phases(rec, ctx.types.len(), n, errs);
    }
    if level >= 4 {
        check_submits(rec, tasks, n, errs);
    }
}

fn check_phases(rec: &Value, cores: usize, n: &mut CheckedNumbers, errs: &mut Vec<String>) {
    let ctt = rec
        .pointer("/metadata/core_to_thread")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if ctt != cores {
        errs.push(format!(
            "metadata.core_to_thread has {ctt} entries for {cores} cores"
        ));
    }
    let Some(threads) = rec.get("aicpu_scheduler_phases").and_then(Value::as_array) else {
        errs.push("aicpu_scheduler_phases: missing at level >= 3".into());
        return;
    };
    for (t, list) in threads.iter().enumerate() {
        let mut max_iter = 0;
        for (i, p) in list.as_array().into_iter().flatten().enumerate() {
            let num = |k: &str| p.get(k).and_then(Value::as_u64);
            let ok = p.get("kind").and_then(Value::as_str).is_some()
                && ["start_cycles", "end_cycles", "loop_iter", "tasks_processed"]
                    .iter()
                    .all(|k| num(k).is_some());
            if !ok {
                errs.push(format!("aicpu_scheduler_phases[{t}][{i}]: needs kind, start_cycles, end_cycles, loop_iter, tasks_processed"));
                continue;
            }
            max_iter = max_iter.max(num("loop_iter").unwrap_or(0));
            if p["kind"] == "dispatch" {
                match (num("pop_hit"), num("pop_miss")) {
                    (Some(h), Some(m)) => {
                        n.pop_hit += h;
                        n.pop_miss += m;
                    }
                    _ => errs.push(format!("aicpu_scheduler_phases[{t}][{i}]: a dispatch phase needs pop_hit and pop_miss")),
                }
            }
        }
        n.loop_iters += max_iter;
    }
}

fn check_submits(
    rec: &Value,
    tasks: &HashMap<u64, [i64; 3]>,
    n: &mut CheckedNumbers,
    errs: &mut Vec<String>,
) {
    let Some(threads) = rec
        .get("aicpu_orchestrator_phases")
        .and_then(Value::as_array)
    else {
        errs.push("aicpu_orchestrator_phases: missing at level 4".into());
        return;
    };
    for p in threads.iter().filter_map(Value::as_array).flatten() {
        let id = p.get("task_id").and_then(int);
        let ok = id.is_some_and(|id| tasks.contains_key(&id))
            && ["submit_idx", "start_cycles", "end_cycles"]
                .iter()
                .all(|k| p.get(*k).and_then(Value::as_u64).is_some());
        if !ok {
            errs.push(format!("aicpu_orchestrator_phases: bad submit {p}"));
        }
        n.submits += 1;
    }
}

/// What [`check_perfetto`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    /// `X` slices.
    pub slices: u64,
    /// Tracks (pid, tid) with slices.
    pub tracks: u64,
    /// Flow arrows (matched `s`/`f` pairs).
    pub flows: u64,
}

/// Check a Perfetto trace: slices per (pid, tid) never overlap, each flow
/// id has one `s` and one `f`, each on a slice of its track.
///
/// # Errors
/// Every problem found.
pub fn check_perfetto(text: &[u8]) -> Result<PerfettoStats, Vec<String>> {
    let v: Value = serde_json::from_slice(text).map_err(|e| vec![format!("not JSON: {e}")])?;
    let Some(events) = v.get("traceEvents").and_then(Value::as_array) else {
        return Err(vec!["traceEvents: missing".into()]);
    };
    let key = |e: &Value| (e["pid"].to_string(), e["tid"].to_string());
    let mut tracks: HashMap<(String, String), Vec<(f64, f64)>> = HashMap::new();
    let mut flows: HashMap<u64, Vec<&Value>> = HashMap::new();
    for e in events {
        match e["ph"].as_str() {
            Some("X") => {
                let (ts, dur) = (
                    e["ts"].as_f64().unwrap_or(-1.0),
                    e["dur"].as_f64().unwrap_or(-1.0),
                );
                tracks.entry(key(e)).or_default().push((ts, ts + dur));
            }
            Some("s" | "f") => flows
                .entry(e["id"].as_u64().unwrap_or(u64::MAX))
                .or_default()
                .push(e),
            _ => {}
        }
    }
    let mut errs = Vec::new();
    let mut st = PerfettoStats {
        tracks: tracks.len() as u64,
        ..Default::default()
    };
    st.slices = no_overlaps(&mut tracks, &mut errs);
    st.flows = flows_on_slices(&flows, &tracks, &key, &mut errs);
    match errs.is_empty() {
        true => Ok(st),
        false => Err(errs),
    }
}

/// Float µs of integer cycles: a rounding error is allowed, never a real
/// overlap.
const EPS: f64 = 1e-6;

type Tracks = HashMap<(String, String), Vec<(f64, f64)>>;

/// Sort each track; report overlapping neighbours. Returns the slices.
fn no_overlaps(tracks: &mut Tracks, errs: &mut Vec<String>) -> u64 {
    let mut slices = 0;
    for (k, spans) in tracks.iter_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        slices += spans.len() as u64;
        for w in spans.windows(2) {
            if w[0].1 > w[1].0 + EPS || w[0].0 < 0.0 {
                errs.push(format!(
                    "track pid {} tid {}: slice [{}, {}] overlaps one starting at {}",
                    k.0, k.1, w[0].0, w[0].1, w[1].0
                ));
            }
        }
    }
    slices
}

/// Each flow id: one `s` then one `f`, both on a slice of their track.
/// Returns the flows.
fn flows_on_slices(
    flows: &HashMap<u64, Vec<&Value>>,
    tracks: &Tracks,
    key: &dyn Fn(&Value) -> (String, String),
    errs: &mut Vec<String>,
) -> u64 {
    let mut n = 0;
    for (id, ends) in flows {
        let phs: Vec<&str> = ends.iter().filter_map(|e| e["ph"].as_str()).collect();
        if phs != ["s", "f"] {
            errs.push(format!(
                "flow {id}: expected one s then one f, found {phs:?}"
            ));
            continue;
        }
        for e in ends {
            let ts = e["ts"].as_f64().unwrap_or(-1.0);
            let on = tracks
                .get(&key(e))
                .is_some_and(|s| s.iter().any(|&(a, b)| a - EPS <= ts && ts <= b + EPS));
            if !on {
                errs.push(format!(
                    "flow {id}: its {} end at {ts} is on no slice of its track",
                    e["ph"]
                ));
            }
        }
        n += 1;
    }
    n
}
