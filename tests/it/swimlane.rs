//! `run --swimlane / --predict` and `simpler swimlane` (DESIGN §12) on real
//! runs: files the upstream tools read, figures recomputed from the raw
//! records, the prediction against insight-trace, and the files a run
//! leaves when it is stopped or its disk is full.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use simpler_swimlane::check::{check_dir, check_perfetto};

use crate::common::{assert_no_tmp, text};
use crate::faults::{on_tmpfs, run, Running};

fn json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

fn ok_run(cwd: &Path, args: &[&str]) -> String {
    let o = run(cwd, args);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}\nstdout: {out}\nstderr: {err}"
    );
    out
}

/// `simpler run … --swimlane --output DIR`, then every file checked.
fn swimlane_run(workload: &str, case: &str, extra: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        workload,
        "--case",
        case,
        "--swimlane",
        "--output",
        "r",
    ];
    args.extend(extra);
    let out = ok_run(tmp.path(), &args);
    let dir = tmp.path().join("r");
    for f in [
        "chip_swimlane_records.json",
        "deps.json",
        "swimlane_perfetto.json",
        &format!("name_map_{workload}_{case}.json"),
    ] {
        assert!(dir.join(f).is_file(), "{f} missing; stdout {out}");
    }
    let dispatches: u64 = out
        .split(" dispatches on ")
        .next()
        .and_then(|s| s.rsplit(", ").next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let n = check_dir(&dir).unwrap_or_else(|e| panic!("{workload} {case}: {e:#?}"));
    assert_eq!(n.dispatches, dispatches, "{out}");
    assert!(n.submits > 0 && n.pop_hit > 0, "{n:?}");
    let st = check_perfetto(&std::fs::read(dir.join("swimlane_perfetto.json")).unwrap())
        .unwrap_or_else(|e| panic!("{e:#?}"));
    assert!(st.slices >= dispatches, "{st:?}");
    assert_assert_cli_check(tmp.path());
    tmp
}

fn assert_assert_cli_check(cwd: &Path) {
    let out = ok_run(cwd, &["swimlane", "r", "--check"]);
    assert!(
        out.contains("upstream tools: OK") && out.contains("none overlapping"),
        "{out}"
    );
}

#[test]
fn case_small1_mixed_example_and_case_bench_write_files_the_upstream_tools_read() {
    swimlane_run("paged_attention", "CaseSmall1", &[]);
    let mixed = swimlane_run("mixed_example", "Default", &[]);
    // One MIX task, 2 blocks: 6 dispatches, each on its cluster's member.
    let r = json(&mixed.path().join("r/chip_swimlane_records.json"));
    let rows = r["aicore_tasks"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    // A dispatch phase per dispatch, the block's first one the pop that
    // found it, and a completion phase (no pops) per block.
    let phases = all_phases(&r);
    let count = |kind: &str, key: &str| {
        let of_kind = phases.iter().filter(|p| p["kind"] == kind);
        of_kind.map(|p| p[key].as_u64().unwrap_or(0)).sum::<u64>()
    };
    assert_eq!(count("dispatch", "tasks_processed"), 6, "{phases:?}");
    assert_eq!(count("dispatch", "pop_hit"), 2, "{phases:?}");
    assert_eq!(count("complete", "tasks_processed"), 2, "{phases:?}");
    let deps = json(&mixed.path().join("r/deps.json"));
    assert_eq!(
        deps["tasks"][0]["kernel_ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k.as_i64() != Some(-1))
            .count(),
        3
    );
    swimlane_run("paged_attention", "CaseBench", &[]);
}

/// Every scheduler's phases in a records file.
fn all_phases(records: &Value) -> Vec<&Value> {
    let threads = records["aicpu_scheduler_phases"].as_array().unwrap();
    threads.iter().flat_map(|t| t.as_array().unwrap()).collect()
}

/// Per func from the raw files: (count, Σexec, Σlatency, Σhead, Σtail).
fn raw_func_table(dir: &Path) -> HashMap<i64, [u64; 5]> {
    let r = json(&dir.join("chip_swimlane_records.json"));
    let d = json(&dir.join("deps.json"));
    let kernels: HashMap<String, Vec<i64>> = d["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task_id"].as_str().unwrap().to_string(),
                t["kernel_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_i64().unwrap())
                    .collect(),
            )
        })
        .collect();
    let aicpu: HashMap<(u64, u64), (u64, u64)> = r["aicpu_tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                (x[0].as_u64().unwrap(), x[1].as_u64().unwrap()),
                (x[2].as_u64().unwrap(), x[3].as_u64().unwrap()),
            )
        })
        .collect();
    let types = r["metadata"]["core_types"].as_array().unwrap();
    let mut t: HashMap<i64, [u64; 5]> = HashMap::new();
    for row in r["aicore_tasks"].as_array().unwrap() {
        let c: Vec<u64> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let k = &kernels[&c[1].to_string()];
        // CaseSmall1 has no MIX task: one active member per task.
        let func = if types[c[0] as usize] == "aic" {
            k[0]
        } else {
            *k[1..].iter().max().unwrap()
        };
        let (disp, fin) = aicpu[&(c[0], c[2])];
        let e = t.entry(func).or_default();
        e[0] += 1;
        e[1] += c[4] - c[3];
        e[2] += fin - disp;
        e[3] += c[3] - disp;
        e[4] += fin - c[4];
    }
    t
}

/// The critical path from the raw files: from the task that ended last,
/// back through the predecessor that ended last.
fn raw_critical_path(dir: &Path) -> Vec<(u64, u64)> {
    let r = json(&dir.join("chip_swimlane_records.json"));
    let d = json(&dir.join("deps.json"));
    let mut span: HashMap<u64, (u64, u64)> = HashMap::new();
    for row in r["aicore_tasks"].as_array().unwrap() {
        let (task, s, e) = (
            row[1].as_u64().unwrap(),
            row[3].as_u64().unwrap(),
            row[4].as_u64().unwrap(),
        );
        let x = span.entry(task).or_insert((s, e));
        *x = (x.0.min(s), x.1.max(e));
    }
    let id = |v: &Value| v.as_str().unwrap().parse::<u64>().unwrap();
    let edges: Vec<(u64, u64)> = d["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (id(&e["pred"]), id(&e["succ"])))
        .collect();
    let mut cur = *span
        .iter()
        .max_by_key(|(k, v)| (v.1, std::cmp::Reverse(**k)))
        .unwrap()
        .0;
    let mut chain = Vec::new();
    loop {
        let pred = edges
            .iter()
            .filter(|e| e.1 == cur)
            .map(|e| e.0)
            .max_by_key(|p| (span[p].1, std::cmp::Reverse(*p)));
        chain.push((cur, pred.map_or(0, |p| span[&cur].0 - span[&p].1)));
        match pred {
            Some(p) => cur = p,
            None => break,
        }
    }
    chain.reverse();
    chain
}

#[test]
fn the_report_matches_figures_computed_from_the_raw_records() {
    let tmp = swimlane_run("paged_attention", "CaseSmall1", &[]);
    let dir = tmp.path().join("r");
    let out = ok_run(tmp.path(), &["swimlane", "r", "--top", "100"]);
    let us = |cycles: u64, n: u64| format!("{:.3}", cycles as f64 / 1e3 / n as f64);
    let raw = raw_func_table(&dir);
    assert_eq!(raw.len(), 4);
    for (func, [n, exec, lat, head, tail]) in &raw {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("({func}) ")))
            .unwrap_or_else(|| panic!("func {func}: {out}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], n.to_string(), "{line}");
        assert_eq!(cols[2], us(*exec, *n), "exec: {line}");
        assert_eq!(cols[3], us(*lat, *n), "latency: {line}");
        assert_eq!(cols[5], us(*head, *n), "head: {line}");
        assert_eq!(cols[6], us(*tail, *n), "tail: {line}");
        let pct = |a: u64, b: u64| format!("{:.1}%", 100.0 * a as f64 / b as f64);
        assert_eq!(cols[4], pct(*exec, *lat), "exec%: {line}");
        let all: u64 = raw.values().map(|v| v[1]).sum();
        assert_eq!(cols[7], pct(*exec, all), "share: {line}");
    }
    let chain = raw_critical_path(&dir);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.contains("task µs"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), chain.len(), "{out}");
    for (row, (task, wait)) in rows.iter().zip(&chain) {
        assert_eq!(
            row[1],
            format!("r{}t{}", task >> 32, task & 0xffff_ffff),
            "{out}"
        );
        assert_eq!(row[5], us(*wait, 1), "{out}");
    }
    let r = json(&dir.join("chip_swimlane_records.json"));
    let phases = all_phases(&r);
    let sum = |k: &str| phases.iter().filter_map(|p| p[k].as_u64()).sum::<u64>();
    assert!(
        out.contains(&format!(
            "Pop: hit={} miss={}",
            sum("pop_hit"),
            sum("pop_miss")
        )),
        "{out}"
    );
    assert_eq!(sum("pop_hit"), 12, "one hit per block handed out");
    let iters: u64 = r["aicpu_scheduler_phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["loop_iter"].as_u64())
                .max()
                .unwrap_or(0)
        })
        .sum();
    // Threads that logged phases, and a note of those that logged none.
    let threads = r["aicpu_scheduler_phases"].as_array().unwrap();
    let with = threads
        .iter()
        .filter(|t| !t.as_array().unwrap().is_empty())
        .count();
    let idle = match threads.len() - with {
        0 => String::new(),
        n => format!(" ({n} more recorded no phase)"),
    };
    let plural = if with == 1 { "" } else { "s" };
    assert!(
        out.contains(&format!(
            "Scheduler: {with} thread{plural}{idle}, {iters} loop iterations"
        )),
        "{out}"
    );
    let deps = json(&dir.join("deps.json"));
    let mut fan: [HashMap<&str, u64>; 2] = Default::default();
    for e in deps["edges"].as_array().unwrap() {
        *fan[0].entry(e["succ"].as_str().unwrap()).or_default() += 1;
        *fan[1].entry(e["pred"].as_str().unwrap()).or_default() += 1;
    }
    let max = |m: &HashMap<&str, u64>| m.values().copied().max().unwrap();
    assert!(
        out.contains(&format!(
            "max fan-in {}, max fan-out {}",
            max(&fan[0]),
            max(&fan[1])
        )),
        "{out}"
    );
    let edges = deps["edges"].as_array().unwrap().len();
    assert_eq!(
        edges, 14,
        "CaseSmall1's whole graph, finished producers included"
    );
    assert!(out.contains(&format!("total edges={edges} ")), "{out}");
}

#[test]
fn predict_times_each_dispatch_as_insight_trace_replays_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok_run(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--predict",
            "--dump-tensor",
            "--dump-kernel-args",
            "--output",
            "r",
        ],
    );
    assert!(
        out.contains("predicted (a2a3 at 1850 MHz, 8 clusters): makespan "),
        "{out}"
    );
    assert!(out.contains("bottleneck pipe per func"), "{out}");
    let dir = tmp.path().join("r");
    assert!(
        !dir.join("chip_swimlane_records.json").exists(),
        "--predict alone writes only predicted/"
    );
    let o = run(tmp.path(), &["swimlane", "r"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("only its predicted timeline: simpler swimlane r/predicted"),
        "{err}"
    );
    check_dir(&dir.join("predicted")).unwrap_or_else(|e| panic!("{e:#?}"));
    check_perfetto(&std::fs::read(dir.join("predicted/swimlane_perfetto.json")).unwrap()).unwrap();
    let pred = json(&dir.join("predicted/chip_swimlane_records.json"));
    assert_eq!(pred["metadata"]["clock_freq_hz"], 1_850_000_000u64);
    // The model's scheduler work: one dispatch phase per block, serial per
    // scheduler.
    let threads = pred["aicpu_scheduler_phases"].as_array().unwrap();
    let mut phases = 0;
    for t in threads {
        let spans: Vec<(u64, u64)> = t
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["start_cycles"].as_u64().unwrap(),
                    p["end_cycles"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
        assert!(
            spans.iter().all(|s| s.0 > 0),
            "0 means none upstream: {spans:?}"
        );
        phases += spans.len();
    }
    assert_eq!(phases, 12);
    check_pmu(&dir.join("predicted"));
    let ka = json(&dir.join("tensor_dump/kernel_args_dump.json"));
    let pmu = std::fs::read_to_string(dir.join("predicted/pmu.csv")).unwrap();
    assert!(
        pmu.starts_with(
            "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,scalar_busy_cycles,"
        ),
        "{pmu}"
    );
    for func in 0..4 {
        let d = ka["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["func_id"] == func)
            .unwrap();
        let hex = d["task_id"].as_str().unwrap();
        let task = u64::from_str_radix(&hex[2..], 16).unwrap();
        let row = pred["aicore_tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r[1] == task)
            .unwrap();
        let predicted = row[4].as_u64().unwrap() - row[3].as_u64().unwrap();
        let id = d["dispatch_id"].to_string();
        let replay = ok_run(
            tmp.path(),
            &[
                "insight-trace",
                "paged_attention",
                "--case",
                "CaseSmall1",
                "--func-id",
                &func.to_string(),
                "--dump-dir",
                "r",
                "--dispatch-id",
                &id,
            ],
        );
        let cycles: u64 = replay
            .split("total: ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{replay}"));
        assert_eq!(
            predicted, cycles,
            "func {func} dispatch {id}: predicted {predicted}, insight-trace {cycles}"
        );
        let pmu_row = pmu.lines().find(|l| l.contains(hex)).unwrap();
        assert_eq!(
            pmu_row.split(',').nth(5),
            Some(cycles.to_string().as_str()),
            "{pmu_row}"
        );
    }
}

/// `pmu.csv` in upstream's layout (UPSTREAM_FORMATS E): `thread_id,
/// core_id, task_id (0x%016x), func_id, core_type (0 AIC / 1 AIV),
/// pmu_total_cycles, <counters>, event_type`, one row per task and core —
/// each figure derived from the predicted records and `deps.json` beside it.
fn check_pmu(dir: &Path) {
    let r = json(&dir.join("chip_swimlane_records.json"));
    let d = json(&dir.join("deps.json"));
    let md = &r["metadata"];
    let types: Vec<&str> = md["core_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let n_aic = types.iter().filter(|t| **t == "aic").count() as u64;
    let threads: Vec<i64> = md["core_to_thread"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    let kernels: HashMap<u64, Vec<i64>> = d["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let k = t["kernel_ids"].as_array().unwrap();
            (
                decimal(&t["task_id"], "task_id"),
                k.iter().map(|x| x.as_i64().unwrap()).collect(),
            )
        })
        .collect();
    // (task, core) → Σ cycles of its aicore rows.
    let mut want: HashMap<(u64, u64), u64> = HashMap::new();
    for row in r["aicore_tasks"].as_array().unwrap() {
        let c = |i: usize| row[i].as_u64().unwrap();
        *want.entry((c(1), c(0))).or_default() += c(4) - c(3);
    }
    let pmu = std::fs::read_to_string(dir.join("pmu.csv")).unwrap();
    let mut lines = pmu.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[..6],
        [
            "thread_id",
            "core_id",
            "task_id",
            "func_id",
            "core_type",
            "pmu_total_cycles"
        ]
    );
    assert_eq!(header.last(), Some(&"event_type"));
    let mut seen = std::collections::HashSet::new();
    for line in lines {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols.len(), header.len(), "{line}");
        let hex = cols[2];
        assert!(
            hex.len() == 18
                && hex.starts_with("0x")
                && hex[2..]
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "task_id {hex:?} is not 0x%016x"
        );
        let task = u64::from_str_radix(&hex[2..], 16).unwrap();
        let num = |i: usize| -> u64 { cols[i].parse().unwrap_or_else(|_| panic!("{line}")) };
        let core = num(1);
        assert!(seen.insert((task, core)), "(task, core) repeats: {line}");
        assert_eq!(
            Some(num(0) as i64),
            threads.get(core as usize).copied(),
            "{line}"
        );
        let aiv = types[core as usize] == "aiv";
        assert_eq!(num(4), u64::from(aiv), "core_type: {line}");
        let k = &kernels[&task];
        let func = match aiv {
            false => k[0],
            true if k[1] >= 0 && k[2] >= 0 => k[1 + ((core - n_aic) % 2) as usize],
            true => k[1].max(k[2]),
        };
        assert_eq!(num(3) as i64, func, "func_id: {line}");
        let total = num(5);
        assert_eq!(
            Some(&total),
            want.get(&(task, core)),
            "total cycles: {line}"
        );
        for i in 6..cols.len() - 1 {
            assert!(num(i) <= total, "a pipe busier than its dispatch: {line}");
        }
        assert!(
            [1, 2, 4, 5, 6, 7, 8].contains(&num(cols.len() - 1)),
            "event_type: {line}"
        );
    }
    assert_eq!(seen.len(), want.len(), "one row per task and core");
}

/// The run line counts the edges the run waited on; the swimlane line the
/// graph's, which do not depend on timing: the same in every run, never
/// fewer than the run's, and the edges `deps.json` holds.
#[test]
fn graph_edges_are_the_same_every_run_and_cover_the_waited_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let after = |out: &str, tail: &str| -> u64 {
        let i = out
            .find(tail)
            .unwrap_or_else(|| panic!("no {tail:?}: {out}"));
        let num = out[..i].rsplit(' ').next().unwrap();
        num.parse()
            .unwrap_or_else(|_| panic!("{num:?} before {tail:?}: {out}"))
    };
    let mut graph = Vec::new();
    for k in 0..3 {
        let dir = format!("r{k}");
        let out = ok_run(
            tmp.path(),
            &[
                "run",
                "paged_attention",
                "--case",
                "CaseSmall2",
                "--swimlane",
                "--output",
                &dir,
            ],
        );
        let (waited, g) = (after(&out, " edges, "), after(&out, " graph edges -> "));
        assert!(waited <= g, "{out}");
        let deps = json(&tmp.path().join(&dir).join("deps.json"));
        assert_eq!(deps["edges"].as_array().unwrap().len() as u64, g, "{out}");
        graph.push(g);
    }
    assert!(graph.windows(2).all(|w| w[0] == w[1]), "{graph:?}");
}

#[test]
fn a_timed_out_run_still_writes_its_timeline() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &[
            "run",
            "stall",
            "--clusters",
            "1",
            "--timeout",
            "1",
            "--swimlane",
            "--output",
            "r",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("swimlane (level 4): 1 dispatch, 8 tasks"),
        "{err}"
    );
    let n = check_dir(&tmp.path().join("r")).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(
        (n.dispatches, n.tasks, n.submits),
        (1, 8, 8),
        "only T0 finished"
    );
    assert_no_tmp(tmp.path());
}

#[test]
fn an_interrupted_run_writes_its_timeline_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Running::start(
        tmp.path(),
        &[
            "run",
            "stall",
            "--clusters",
            "1",
            "--swimlane",
            "3",
            "--output",
            "r",
        ],
    );
    r.wait_for_lines("hanging", 2);
    r.signal("INT");
    let (code, err) = r.finish();
    assert_eq!(code, Some(130), "{err}");
    let n = check_dir(&tmp.path().join("r")).unwrap_or_else(|e| panic!("{e:#?}\n{err}"));
    assert_eq!((n.dispatches, n.tasks, n.submits), (1, 8, 0));
    assert_no_tmp(tmp.path());
}

#[test]
fn a_full_disk_is_one_clear_error_and_leaves_no_temporary_file() {
    let Some((o, left)) = on_tmpfs(
        "size=12k",
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--swimlane",
            "--output",
            "r",
        ],
    ) else {
        return;
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("cannot write the swimlane files") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_no_tmp(left.path());
}

#[test]
fn bad_flags_and_bad_files_are_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["run", "vector_example", "--swimlane", "5"][..],
            "--swimlane 5: expected a level in 1..=4",
        ),
        (
            &["run", "vector_example", "--swimlane", "0"][..],
            "--swimlane 0: expected a level in 1..=4",
        ),
        (&["swimlane", "nope"][..], "nope: not a directory"),
        (&["swimlane"][..], "no RUN given"),
    ] {
        let o = run(tmp.path(), args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}\n{err}");
        assert!(
            err.contains(want) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    assert!(
        !tmp.path().join("outputs").exists(),
        "a refused flag creates no run directory"
    );
    let dir = tmp.path().join("bad");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("chip_swimlane_records.json"), br#"{"chip_swimlane_level": 2, "metadata": {"clock_freq_hz": 1000, "num_cores": 3, "core_types": []}, "aicore_tasks": [[0, 1, 0, 5]]}"#).unwrap();
    let o = run(tmp.path(), &["swimlane", "bad"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("chip_swimlane_records.json")
            && err.contains("aicore_tasks[0]")
            && err.contains("4 columns: expected 6"),
        "{err}"
    );
    std::fs::write(dir.join("chip_swimlane_records.json"), br#"{"chip_swimlane_level": 1, "metadata": {"clock_freq_hz": 1000, "num_cores": 1, "core_types": ["aic"]}, "aicore_tasks": [[0, 1, 0, 5, 9, 0]]}"#).unwrap();
    std::fs::write(
        dir.join("deps.json"),
        br#"{"tasks": [{"task_id": "0x1", "kernel_ids": [0, -1, -1]}], "edges": []}"#,
    )
    .unwrap();
    let o = run(tmp.path(), &["swimlane", "bad", "--check"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("FAIL deps.json tasks[0]: task_id must be int()-able"),
        "{out}"
    );
}

/// A FIFO in place of any file the report or `--check` reads is refused
/// by name (`deps.json`, the name map and the trace used to hang a read).
#[test]
fn a_fifo_in_place_of_a_swimlane_file_is_refused_not_waited_on() {
    use crate::insight_trace::{mkfifo, simpler_within_20s};
    let tmp = swimlane_run("vector_example", "Default", &[]);
    let run = tmp.path().join("r");
    for (file, check) in [
        ("chip_swimlane_records.json", false),
        ("deps.json", false),
        ("name_map_vector_example_Default.json", false),
        ("deps.json", true),
        ("swimlane_perfetto.json", true),
    ] {
        let dir = tmp.path().join("copy");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        for e in std::fs::read_dir(&run).unwrap().flatten() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        std::fs::remove_file(dir.join(file)).unwrap();
        mkfifo(&dir.join(file));
        let args: &[&str] = if check {
            &["swimlane", "copy", "--check"]
        } else {
            &["swimlane", "copy"]
        };
        let o = simpler_within_20s(tmp.path(), args);
        let all = format!("{}{}", o.stdout, o.stderr);
        assert_ne!(o.code, 0, "{args:?} {file}: {all}");
        let want = format!("copy/{file}: not a regular file (a FIFO)");
        assert!(
            all.contains(&want),
            "{args:?} {file}: {all:?} lacks {want:?}"
        );
        assert!(!all.contains("panicked"), "{all}");
    }
}

/// A folder without `deps.json` still gets its report, and is told that
/// its critical path knows no edges (it used to print a one-task path as
/// if that were the run's).
#[test]
fn a_report_without_deps_json_says_it_knows_no_edges() {
    let tmp = tempfile::tempdir().unwrap();
    ok_run(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--swimlane",
            "--output",
            "r",
        ],
    );
    let note = "has no deps.json: no dependency edges are known";
    let o = run(tmp.path(), &["swimlane", "r"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains(note), "{err}");
    assert!(out.contains("Critical path"), "{out}");
    std::fs::remove_file(tmp.path().join("r/deps.json")).unwrap();
    let o = run(tmp.path(), &["swimlane", "r"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("note: r {note}")), "{err}");
    assert!(out.contains("Critical path"), "{out}");
}

/// A string of decimal digits, as the upstream tools' `int(v)` reads it
/// (never `"0x…"`).
fn decimal(v: &Value, what: &str) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {v} is not a string"));
    assert!(
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
        "{what}: {s:?} is not decimal"
    );
    s.parse()
        .unwrap_or_else(|_| panic!("{what}: {s:?} overflows u64"))
}

/// Each level writes what upstream's level holds (UPSTREAM_FORMATS B):
/// 1 core rows only, 2 + the scheduler's rows joined on (core_id,
/// reg_task_id), 3 + scheduler phases and `core_to_thread`, 4 +
/// orchestrator submits; the level in the records and the name map is the
/// flag's; the clock is host ns as 1 GHz; `reg_task_id` counts each
/// core's dispatches; every u64 of `deps.json` and every submit's task id
/// is a decimal string naming a task of `deps.json`.
#[test]
fn each_swimlane_level_writes_what_the_upstream_level_holds() {
    let tmp = tempfile::tempdir().unwrap();
    for level in 1..=4u64 {
        let dir = format!("l{level}");
        let l = level.to_string();
        ok_run(
            tmp.path(),
            &["run", "vector_example", "--swimlane", &l, "--output", &dir],
        );
        let dir = tmp.path().join(&dir);
        check_dir(&dir).unwrap_or_else(|e| panic!("level {level}: {e:#?}"));
        let r = json(&dir.join("chip_swimlane_records.json"));
        let names = json(&dir.join("name_map_vector_example_Default.json"));
        assert_eq!(r["chip_swimlane_level"], level);
        assert_eq!(names["level"], level);
        assert_eq!(names["orchestrator_name"], "vector_example_Default");
        let md = &r["metadata"];
        assert_eq!(md["clock_freq_hz"], simpler_swimlane::record::HOST_CLOCK_HZ);
        let cores = md["core_types"].as_array().unwrap();
        assert_eq!(md["num_cores"], cores.len() as u64);
        assert!(cores.iter().all(|t| t == "aic" || t == "aiv"), "{md}");
        let len = |k: &str| r[k].as_array().map_or(0, Vec::len);
        let rows = r["aicore_tasks"].as_array().unwrap();
        assert_eq!(len("aicpu_tasks"), if level >= 2 { rows.len() } else { 0 });
        let phases: usize = r["aicpu_scheduler_phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_array().unwrap().len())
            .sum();
        assert_eq!(phases > 0, level >= 3, "level {level}: {phases} phases");
        let ctt = md.get("core_to_thread").and_then(Value::as_array);
        assert_eq!(ctt.map(Vec::len), (level >= 3).then_some(cores.len()));
        assert_eq!(len("aicpu_orchestrator_phases") > 0, level == 4);
        // reg_task_id: 0, 1, 2, … on each core, in the order it ran them.
        let mut per_core: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        for row in rows {
            let c = |i: usize| row[i].as_u64().unwrap();
            per_core.entry(c(0)).or_default().push((c(3), c(2)));
        }
        for (core, mut v) in per_core {
            v.sort_unstable();
            let regs: Vec<u64> = v.iter().map(|x| x.1).collect();
            let want: Vec<u64> = (0..regs.len() as u64).collect();
            assert_eq!(regs, want, "level {level} core {core}");
        }
        // deps.json: every u64 a decimal string.
        let d = json(&dir.join("deps.json"));
        let mut tasks = std::collections::HashSet::new();
        for t in d["tasks"].as_array().unwrap() {
            tasks.insert(decimal(&t["task_id"], "tasks[].task_id"));
            for a in t["args"].as_array().unwrap() {
                decimal(&a["tensor_id"], "args[].tensor_id");
                decimal(&a["start_offset"], "args[].start_offset");
            }
        }
        for t in d["tensors"].as_array().unwrap() {
            for k in ["tensor_id", "buffer_addr", "buffer_numel"] {
                decimal(&t[k], k);
            }
        }
        let edges = d["edges"].as_array().unwrap();
        assert!(!edges.is_empty());
        for e in edges {
            for k in ["pred", "succ"] {
                assert!(tasks.contains(&decimal(&e[k], k)), "{e}");
            }
            for k in [
                "tensor_id",
                "consumer_start_offset",
                "producer_start_offset",
            ] {
                if let Some(v) = e.get(k) {
                    decimal(v, k);
                }
            }
        }
        for row in rows {
            assert!(tasks.contains(&row[1].as_u64().unwrap()), "{row}");
        }
        for t in r["aicpu_orchestrator_phases"].as_array().unwrap() {
            for p in t.as_array().unwrap() {
                assert!(tasks.contains(&decimal(&p["task_id"], "submit task_id")));
            }
        }
    }
}

/// `simpler swimlane` reads a folder as the upstream runtime writes it:
/// our run's files rewritten into upstream's forms (no `schema_version`,
/// a `runtime` key, `scope` words, `flags` as lists of words or absent,
/// `overlap` words, uppercase arg types, a `name_map_<Class>_<case>.json`
/// of another name) give the same report, and `--check` passes.
#[test]
fn a_folder_in_the_upstream_runtimes_forms_gives_the_same_report() {
    let tmp = swimlane_run("paged_attention", "CaseSmall1", &[]);
    let want = ok_run(tmp.path(), &["swimlane", "r", "--top", "100"]);
    let up = tmp.path().join("up");
    std::fs::create_dir(&up).unwrap();
    let mut r = json(&tmp.path().join("r/chip_swimlane_records.json"));
    r.as_object_mut().unwrap().remove("schema_version");
    let mut d = json(&tmp.path().join("r/deps.json"));
    let o = d.as_object_mut().unwrap();
    o.remove("schema_version");
    o.insert("runtime".into(), "tensormap_and_ringbuffer".into());
    for t in d["tasks"].as_array_mut().unwrap() {
        t["scope"] = "auto".into();
        for a in t["args"].as_array_mut().unwrap() {
            let ty = a["type"].as_str().unwrap().to_ascii_uppercase();
            a["type"] = ty.into();
        }
    }
    for (i, e) in d["edges"].as_array_mut().unwrap().iter_mut().enumerate() {
        let o = e.as_object_mut().unwrap();
        match o["source"].as_str() {
            Some("creator") => o.insert("flags".into(), serde_json::json!(["wait", "retain"])),
            _ if i % 2 == 0 => o.remove("flags"),
            _ => o.insert("flags".into(), serde_json::json!(["wait"])),
        };
        if let Some(ov) = o.get_mut("overlap") {
            *ov = if *ov == "full" { "covered" } else { "other" }.into();
        }
    }
    let mut n = json(
        &tmp.path()
            .join("r/name_map_paged_attention_CaseSmall1.json"),
    );
    n.as_object_mut().unwrap().remove("schema_version");
    std::fs::write(up.join("chip_swimlane_records.json"), r.to_string()).unwrap();
    std::fs::write(up.join("deps.json"), d.to_string()).unwrap();
    std::fs::write(
        up.join("name_map_TestPagedAttention_Case1.json"),
        n.to_string(),
    )
    .unwrap();
    let got = ok_run(tmp.path(), &["swimlane", "up", "--top", "100"]);
    assert_eq!(got, want);
    let out = ok_run(tmp.path(), &["swimlane", "up", "--check"]);
    assert!(out.contains("upstream tools: OK"), "{out}");
    // A bare name_map.json is one the tools find too.
    std::fs::rename(
        up.join("name_map_TestPagedAttention_Case1.json"),
        up.join("name_map.json"),
    )
    .unwrap();
    assert_eq!(
        ok_run(tmp.path(), &["swimlane", "up", "--top", "100"]),
        want
    );
}

/// `deps.json` names its runtime, as the upstream dependency viewer
/// requires (it refuses a file that names none), and speaks its words: the
/// task ids decode by that runtime's layout (ring in bits 39:32, local id
/// below) without losing a bit, and argument types are the upstream
/// `TensorArgType` names the viewer matches (`INOUT`, `OUTPUT_EXISTING`, …).
#[test]
fn deps_json_names_its_runtime_and_uses_the_upstream_arg_types() {
    let tmp = swimlane_run("paged_attention", "CaseSmall1", &[]);
    let d = json(&tmp.path().join("r/deps.json"));
    assert_eq!(d["runtime"], simpler_format::swimlane::RUNTIME);
    let mut types = std::collections::BTreeSet::new();
    for t in d["tasks"].as_array().unwrap() {
        let raw: u64 = t["task_id"].as_str().unwrap().parse().unwrap();
        let (ring, local) = ((raw >> 32) & 0xff, raw & 0xffff_ffff);
        assert_eq!(
            (ring << 32) | local,
            raw,
            "{raw:#x} does not fit the layout"
        );
        for a in t["args"].as_array().unwrap() {
            types.insert(a["type"].as_str().unwrap().to_string());
        }
    }
    let upstream = ["INPUT", "OUTPUT", "INOUT", "OUTPUT_EXISTING", "NO_DEP"];
    assert!(
        types.iter().all(|t| upstream.contains(&t.as_str())),
        "{types:?}"
    );
    // paged_attention reads inputs, makes outputs and updates its
    // accumulators in place.
    for t in ["INPUT", "OUTPUT", "INOUT"] {
        assert!(types.contains(t), "no {t} in {types:?}");
    }
}
