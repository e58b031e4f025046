//! The output tree: trace.json structure, per-sub-core files, CSV columns and
//! cycle sums, Perfetto lanes, and the text summary.

use crate::common;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fs,
    path::Path,
};

use common::*;
use serde_json::Value;
use simpler_core::topology::Subtask;
use simpler_isa::Pipe;
use simpler_replay::{
    export::{write_trace, ExportError, CODE_EXE_HEADER, INSTR_EXE_HEADER},
    export_trace, simulate,
    timing::{CoreTiming, Span, Timeline},
    SubCore, TimingParams,
};

const PIPES: [&str; 7] = ["SCALAR", "MTE1", "MTE2", "MTE3", "CUBE", "FIXP", "VECTOR"];

fn load_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("traceEvents array")
}

/// A pid as text: the op simulator files name processes by a string, the
/// Perfetto file by a number.
fn pid_of(e: &Value) -> String {
    match &e["pid"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("pid {other}"),
    }
}

/// Process names by pid and thread names by (pid, tid), from `M` events.
struct Structure {
    processes: BTreeMap<String, String>,
    threads: BTreeMap<(String, u64), String>,
}

fn structure(trace: &Value) -> Structure {
    let mut s = Structure {
        processes: BTreeMap::new(),
        threads: BTreeMap::new(),
    };
    for e in events(trace).iter().filter(|e| e["ph"] == "M") {
        let pid = pid_of(e);
        let name = e["args"]["name"].as_str().map(str::to_string);
        match e["name"].as_str().unwrap() {
            "process_name" => {
                s.processes.insert(pid, name.unwrap());
            }
            "thread_name" => {
                s.threads
                    .insert((pid, e["tid"].as_u64().unwrap()), name.unwrap());
            }
            "process_sort_index" | "thread_sort_index" => {
                assert!(e["args"]["sort_index"].is_u64(), "{e}");
            }
            other => panic!("unexpected metadata event {other}"),
        }
    }
    s
}

fn slices(trace: &Value) -> Vec<&Value> {
    events(trace).iter().filter(|e| e["ph"] == "X").collect()
}

/// Summed `args.cycles` of the X events of each pid.
fn cycles_by_pid(trace: &Value) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in slices(trace) {
        *m.entry(pid_of(e)).or_default() += e["args"]["cycles"].as_u64().unwrap();
    }
    m
}

fn csv_cycles(path: &Path, header: &str, cycles_col: usize) -> (Vec<Vec<String>>, u64) {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(text.lines().next(), Some(header), "{}", path.display());
    let rows = parse_csv(&text);
    let width = header.split(',').count();
    let body: Vec<Vec<String>> = rows[1..].to_vec();
    for r in &body {
        assert_eq!(r.len(), width, "{}: row {r:?}", path.display());
    }
    let sum = body
        .iter()
        .map(|r| r[cycles_col].parse::<u64>().unwrap())
        .sum();
    (body, sum)
}

fn double_buffer_core() -> SubCore {
    let gm = gm();
    let (xs, ys) = stream_io(&gm, 4);
    record_aiv(&gm, Subtask::Aiv0, |c| double_buffered(c, &xs, &ys))
}

#[test]
fn trace_json_has_one_process_per_sub_core_and_one_thread_per_pipe() {
    let gm = gm();
    let cores = mix_cluster(&gm);
    let out = tempfile::tempdir().unwrap();
    let params = TimingParams::a2a3();
    let summary = export_trace(out.path(), "mixed", &params, &cores).unwrap();
    assert_eq!(summary.simulator_dir, out.path().join("simulator"));

    let trace = load_json(&summary.simulator_dir.join("trace.json"));
    assert_eq!(trace["otherData"]["schema_version"], 2);
    assert_eq!(trace["otherData"]["clock_mhz"], 1850);
    let s = structure(&trace);
    let names: Vec<&str> = s.processes.values().map(String::as_str).collect();
    assert_eq!(
        names,
        ["core0.cubecore0", "core0.veccore0", "core0.veccore1"]
    );
    for (pid, name) in &s.processes {
        // The op simulator's shape: the pid is the sub-core's name.
        assert_eq!(pid, name);
        let threads: BTreeSet<&str> = s
            .threads
            .iter()
            .filter(|((p, _), _)| p == pid)
            .map(|(_, n)| n.as_str())
            .collect();
        assert_eq!(threads, PIPES.into_iter().collect(), "pid {pid}");
    }

    let total_us = summary.total_cycles as f64 / 1850.0;
    assert!((summary.total_us() - total_us).abs() < 1e-12);
    let xs = slices(&trace);
    assert_eq!(xs.len(), summary.instructions);
    let mnemonics: BTreeSet<&str> = xs.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(mnemonics.is_superset(&["TLOAD", "TMOV", "TMATMUL", "TSTORE", "TADD", "TMUL"].into()));
    for e in &xs {
        let (pid, tid) = (pid_of(e), e["tid"].as_u64().unwrap());
        let thread = &s.threads[&(pid, tid)];
        assert_eq!(
            e["cat"].as_str(),
            Some(thread.as_str()),
            "event on its pipe's thread"
        );
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur > 0.0, "{e}");
        assert!(ts + dur <= total_us + 1e-9, "{e} ends after {total_us} us");
        let a = &e["args"];
        let (start, end, cycles) = (
            a["start_cycle"].as_u64().unwrap(),
            a["end_cycle"].as_u64().unwrap(),
            a["cycles"].as_u64().unwrap(),
        );
        assert_eq!(end - start, cycles);
        assert!((ts - start as f64 / 1850.0).abs() < 1e-9);
        assert!((dur - cycles as f64 / 1850.0).abs() < 1e-9);
        let src = a["source"].as_str().unwrap();
        assert!(src.contains("common/mod.rs:"), "source {src}");
        assert!(a["size"].as_u64().is_some() && a["size_unit"].is_string());
        let is_gm = matches!(e["name"].as_str(), Some("TLOAD" | "TSTORE"));
        assert_eq!(a["gm_addr"].is_string(), is_gm, "{e}");
        if is_gm {
            assert_eq!(a["gm_addr"].as_str().unwrap().len(), 18);
            assert!(a["gm_bytes"].as_u64().unwrap() > 0);
        }
    }
    // FIXP and CUBE appear on the cube core, VECTOR on the vector cores.
    let pipe_of = |pid: &str, name: &str| {
        xs.iter()
            .filter(|e| e["pid"] == pid && e["name"] == name)
            .map(|e| e["cat"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        pipe_of("core0.cubecore0", "TSTORE"),
        ["FIXP".to_string()].into()
    );
    assert_eq!(
        pipe_of("core0.veccore0", "TSTORE"),
        ["MTE3".to_string()].into()
    );
}

#[test]
fn per_sub_core_files_exist_and_csv_cycles_match_the_traces() {
    let gm = gm();
    let cores = mix_cluster(&gm);
    let out = tempfile::tempdir().unwrap();
    let summary = export_trace(out.path(), "mixed", &TimingParams::a2a3(), &cores).unwrap();
    let all = cycles_by_pid(&load_json(&summary.simulator_dir.join("trace.json")));

    for c in &summary.cores {
        let dir = summary.simulator_dir.join(&c.name);
        assert_eq!(c.dir, dir);
        let own = load_json(&dir.join("trace.json"));
        let s = structure(&own);
        assert_eq!(
            s.processes.values().collect::<Vec<_>>(),
            [&c.name],
            "only this sub-core"
        );
        let own_cycles = cycles_by_pid(&own);
        let pid = s.processes.keys().next().unwrap();
        let trace_sum = own_cycles[pid];
        assert_eq!(all[&c.name], trace_sum);
        assert_eq!(trace_sum, c.busy.iter().map(|(_, b)| b).sum::<u64>());

        let (instr_rows, instr_sum) = csv_cycles(
            &dir.join(format!("{}_instr_exe.csv", c.name)),
            INSTR_EXE_HEADER,
            4,
        );
        let (code_rows, code_sum) = csv_cycles(
            &dir.join(format!("{}_code_exe.csv", c.name)),
            CODE_EXE_HEADER,
            2,
        );
        assert_eq!(instr_sum, trace_sum, "{} instr_exe", c.name);
        assert_eq!(code_sum, trace_sum, "{} code_exe", c.name);
        let calls: u64 = instr_rows
            .iter()
            .map(|r| r[3].parse::<u64>().unwrap())
            .sum();
        assert_eq!(calls as usize, c.instructions);
        let calls: u64 = code_rows.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
        assert_eq!(calls as usize, c.instructions);
        // Synthetic addresses: 0x0, 0x4, 0x8, …
        for (k, r) in instr_rows.iter().enumerate() {
            assert_eq!(r[1], format!("0x{:x}", 4 * k));
            assert!(PIPES.contains(&r[2].as_str()));
            assert!(r[6].contains("common/mod.rs:"), "detail {}", r[6]);
        }
        // Distinct code lines.
        let lines: BTreeSet<&str> = code_rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(lines.len(), code_rows.len());
    }
}

#[test]
fn csv_rows_aggregate_call_sites_of_a_loop() {
    let core = double_buffer_core();
    let out = tempfile::tempdir().unwrap();
    let summary = export_trace(out.path(), "db", &TimingParams::a2a3(), &[core]).unwrap();
    let dir = summary.simulator_dir.join("core0.veccore0");
    let (rows, _) = csv_cycles(
        &dir.join("core0.veccore0_instr_exe.csv"),
        INSTR_EXE_HEADER,
        4,
    );
    let by_instr: HashMap<&str, Vec<u64>> = rows.iter().fold(HashMap::new(), |mut m, r| {
        m.entry(r[0].as_str())
            .or_default()
            .push(r[3].parse().unwrap());
        m
    });
    // 4 tiles: one TLOAD before the loop, three inside; TEXP/TADD/TSTORE 4 each.
    assert_eq!(by_instr["TLOAD"], [1, 3]);
    assert_eq!(by_instr["TEXP"], [4]);
    assert_eq!(by_instr["TSTORE"], [4]);
    assert_eq!(by_instr["SCALAR"], [4]);
}

#[test]
fn csv_fields_with_commas_and_quotes_are_escaped() {
    let recs = vec![
        record("T,ODD\"X", Pipe::Vector, &[ub(0, 64)], Some(ub(64, 64)), 16),
        record("TADD", Pipe::Vector, &[ub(0, 64)], Some(ub(64, 64)), 16),
    ];
    let out = tempfile::tempdir().unwrap();
    let core = SubCore::new(2, Subtask::Aiv1, recs);
    let summary = export_trace(out.path(), "odd", &TimingParams::a2a3(), &[core]).unwrap();
    let dir = summary.simulator_dir.join("core2.veccore1");
    let (rows, sum) = csv_cycles(
        &dir.join("core2.veccore1_instr_exe.csv"),
        INSTR_EXE_HEADER,
        4,
    );
    assert_eq!(rows[0][0], "T,ODD\"X");
    assert_eq!(rows[1][0], "TADD");
    assert_eq!(sum, summary.total_cycles);
}

/// Tracks of a Perfetto file: (pid, tid) → sorted cycle spans.
fn tracks(trace: &Value) -> BTreeMap<(String, u64), Vec<Span>> {
    let mut m: BTreeMap<(String, u64), Vec<Span>> = BTreeMap::new();
    for e in slices(trace) {
        let a = &e["args"];
        m.entry((pid_of(e), e["tid"].as_u64().unwrap()))
            .or_default()
            .push(Span {
                start: a["start_cycle"].as_u64().unwrap(),
                end: a["end_cycle"].as_u64().unwrap(),
            });
    }
    for v in m.values_mut() {
        v.sort_by_key(|s| (s.start, s.end));
    }
    m
}

fn assert_no_track_overlaps(trace: &Value) {
    for (track, spans) in tracks(trace) {
        for w in spans.windows(2) {
            assert!(
                w[0].end <= w[1].start,
                "track {track:?}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
    }
}

#[test]
fn perfetto_file_has_no_overlap_on_any_track() {
    let gm = gm();
    let mut cores = mix_cluster(&gm);
    cores.push(SubCore {
        cluster: 1,
        ..double_buffer_core()
    });
    let out = tempfile::tempdir().unwrap();
    let summary = export_trace(out.path(), "insight mix/1", &TimingParams::a2a3(), &cores).unwrap();
    assert_eq!(
        summary.perfetto_path,
        out.path().join("insight_mix_1_trace_perfetto.json")
    );
    let trace = load_json(&summary.perfetto_path);
    assert_eq!(trace["otherData"]["layout"], "perfetto");
    assert_no_track_overlaps(&trace);
    // In-order pipes need no extra lanes.
    let s = structure(&trace);
    assert!(
        s.threads.values().all(|n| !n.contains('#')),
        "{:?}",
        s.threads
    );
    assert_eq!(slices(&trace).len(), summary.instructions);
}

#[test]
fn perfetto_splits_overlapping_slices_into_lanes() {
    // A schedule that did not come from the in-order model: three VECTOR
    // instructions overlapping each other, two MTE2 ones overlapping.
    let recs = vec![
        record("TADD", Pipe::Vector, &[], Some(ub(0, 64)), 16),
        record("TMUL", Pipe::Vector, &[], Some(ub(64, 64)), 16),
        record("TEXP", Pipe::Vector, &[], Some(ub(128, 64)), 16),
        record("TADD", Pipe::Vector, &[], Some(ub(192, 64)), 16),
        record("TLOAD", Pipe::Mte2, &[], Some(ub(256, 64)), 64),
        record("TLOAD", Pipe::Mte2, &[], Some(ub(320, 64)), 64),
    ];
    let spans = [(0, 100), (50, 150), (60, 70), (100, 120), (0, 40), (39, 80)]
        .map(|(start, end)| Span { start, end })
        .to_vec();
    let timing = CoreTiming::from_spans(&recs, spans);
    assert_eq!(timing.total_cycles, 150);
    let timeline = Timeline {
        total_cycles: timing.total_cycles,
        cores: vec![timing],
    };
    let cores = [SubCore::new(0, Subtask::Aiv0, recs)];
    let out = tempfile::tempdir().unwrap();
    let params = TimingParams::a2a3();
    let summary = write_trace(out.path(), "synthetic", &params, &cores, &timeline).unwrap();

    // The simulator view keeps one track per pipe (and so overlaps) ...
    let sim = load_json(&summary.simulator_dir.join("trace.json"));
    assert_eq!(tracks(&sim).len(), 2);
    // ... the Perfetto view splits them.
    let trace = load_json(&summary.perfetto_path);
    assert_no_track_overlaps(&trace);
    let s = structure(&trace);
    let names: BTreeSet<&str> = s.threads.values().map(String::as_str).collect();
    for lane in ["VECTOR", "VECTOR#1", "VECTOR#2", "MTE2", "MTE2#1"] {
        assert!(names.contains(lane), "{lane} in {names:?}");
    }
    assert!(!names.contains("VECTOR#3"), "three lanes are enough");
    assert_eq!(slices(&trace).len(), 6);
    let used: BTreeSet<(String, u64)> = tracks(&trace).into_keys().collect();
    assert!(
        used.iter().all(|t| s.threads.contains_key(t)),
        "every track is named"
    );
}

#[test]
fn mismatched_timelines_and_duplicate_names_are_rejected() {
    let core = double_buffer_core();
    let out = tempfile::tempdir().unwrap();
    let params = TimingParams::a2a3();
    let err = write_trace(
        out.path(),
        "x",
        &params,
        std::slice::from_ref(&core),
        &Timeline::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ExportError::Mismatch(_)), "{err}");
    let twice = [core.clone(), core];
    let timeline = simulate(&params, &twice);
    let err = write_trace(out.path(), "x", &params, &twice, &timeline).unwrap_err();
    assert_eq!(
        err.to_string(),
        "two sub-cores are both named core0.veccore0"
    );
}

#[test]
fn render_text_names_the_path_busy_pipes_and_bottleneck() {
    let core = double_buffer_core();
    let out = tempfile::tempdir().unwrap();
    let summary = export_trace(out.path(), "db", &TimingParams::a2a3(), &[core]).unwrap();
    let text = summary.render_text();
    eprintln!("{text}");
    assert!(text.starts_with(&format!("simulator: {}\n", summary.simulator_dir.display())));
    let b = summary.bottleneck.clone().unwrap();
    assert_eq!(b.core, "core0.veccore0");
    assert_eq!(b.busy_cycles, summary.busy.get(b.pipe));
    assert!(text.contains(&format!("bottleneck: {} on core0.veccore0", b.pipe.name())));
    for pipe in ["SCALAR", "MTE2", "MTE3", "VECTOR"] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(pipe) && l.ends_with('%')),
            "{pipe}"
        );
    }
    assert!(!text.contains("CUBE"), "idle pipes are not listed");
}

#[test]
fn an_empty_sub_core_exports_an_empty_trace() {
    let out = tempfile::tempdir().unwrap();
    let summary = export_trace(
        out.path(),
        "empty",
        &TimingParams::a5(),
        &[SubCore::new(0, Subtask::Aic, Vec::new())],
    )
    .unwrap();
    assert_eq!(summary.total_cycles, 0);
    assert!(summary.bottleneck.is_none());
    assert!(summary.render_text().contains("bottleneck: none"));
    let trace = load_json(&summary.simulator_dir.join("core0.cubecore0/trace.json"));
    assert!(slices(&trace).is_empty());
    assert_eq!(trace["otherData"]["arch"], "a5");
}
