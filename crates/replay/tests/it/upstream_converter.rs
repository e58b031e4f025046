//! Our `simulator/` traces through the upstream Perfetto converter's rules
//! (UPSTREAM_FORMATS C, `core_swimlane._to_perfetto`), implemented here as
//! code: keep X/B/E events only when `str(pid)` starts with `core`, pass
//! every other event through, merge B/E pairs on (pid, tid, id) into X,
//! pack each (pid, tid) track into lanes (tid `"<tid>#<k>"` beyond one),
//! rebuild each `thread_sort_index` as `sort_index * 100 + lane` (which
//! needs an integer `args.sort_index`). Every instruction event must
//! survive, and no two slices of a packed track may overlap.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use simpler_core::topology::Subtask;
use simpler_isa::Pipe;
use simpler_replay::{
    export::write_trace,
    export_trace,
    timing::{CoreTiming, Span, Timeline},
    SubCore, TimingParams,
};

use crate::common::*;

/// What the converter made of a trace.
struct Converted {
    /// X events kept (merged B/E pairs included), with their packed tid.
    slices: Vec<Value>,
    /// Events passed through (metadata).
    passed: Vec<Value>,
    /// X/B/E events dropped for their pid.
    dropped: usize,
}

fn str_pid(e: &Value) -> String {
    match &e["pid"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `_to_perfetto`, rule by rule.
fn convert(trace: &Value) -> Converted {
    let events = trace["traceEvents"]
        .as_array()
        .expect("an object with traceEvents");
    let mut out = Converted {
        slices: Vec::new(),
        passed: Vec::new(),
        dropped: 0,
    };
    let mut open: BTreeMap<(String, String, String), Value> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or("");
        if !matches!(ph, "X" | "B" | "E") {
            out.passed.push(e.clone());
            continue;
        }
        if !str_pid(e).starts_with("core") {
            out.dropped += 1;
            continue;
        }
        let key = (str_pid(e), e["tid"].to_string(), e["id"].to_string());
        match ph {
            "X" => out.slices.push(e.clone()),
            "B" => {
                open.insert(key, e.clone());
            }
            _ => {
                let b = open.remove(&key).expect("an E closes a B");
                let mut x = b.clone();
                x["ph"] = json!("X");
                x["dur"] = json!(e["ts"].as_f64().unwrap() - b["ts"].as_f64().unwrap());
                out.slices.push(x);
            }
        }
    }
    assert!(open.is_empty(), "every B has its E");
    pack(&mut out);
    out
}

/// Greedy lane packing per (pid, tid) track, in start order.
fn pack(c: &mut Converted) {
    let mut tracks: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, e) in c.slices.iter().enumerate() {
        tracks
            .entry((str_pid(e), e["tid"].to_string()))
            .or_default()
            .push(i);
    }
    let mut lanes_of: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (track, mut idx) in tracks {
        idx.sort_by(|&a, &b| {
            let ts = |i: usize| c.slices[i]["ts"].as_f64().unwrap();
            ts(a).total_cmp(&ts(b))
        });
        let mut lane_end: Vec<f64> = Vec::new();
        let mut lane = vec![0; idx.len()];
        for (k, &i) in idx.iter().enumerate() {
            let (ts, dur) = (
                c.slices[i]["ts"].as_f64().unwrap(),
                c.slices[i]["dur"].as_f64().unwrap(),
            );
            let l = match lane_end.iter().position(|&end| end <= ts) {
                Some(l) => l,
                None => {
                    lane_end.push(f64::NEG_INFINITY);
                    lane_end.len() - 1
                }
            };
            lane_end[l] = ts + dur;
            lane[k] = l;
        }
        for (&i, &l) in idx.iter().zip(&lane) {
            if lane_end.len() > 1 {
                c.slices[i]["tid"] = json!(format!("{}#{l}", track.1));
            }
        }
        lanes_of.insert(track, lane_end.len());
    }
    for m in &mut c.passed {
        if m["name"] == "thread_sort_index" {
            let base = m["args"]["sort_index"]
                .as_u64()
                .unwrap_or_else(|| panic!("thread_sort_index needs an integer sort_index: {m}"));
            m["args"]["sort_index"] = json!(base * 100);
        }
    }
}

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every X event survives and no packed track overlaps.
fn check_file(path: &Path) -> usize {
    let trace = load(path);
    let xs = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    let c = convert(&trace);
    assert_eq!(
        c.dropped,
        0,
        "{}: events dropped for their pid",
        path.display()
    );
    assert_eq!(
        c.slices.len(),
        xs,
        "{}: every event survives",
        path.display()
    );
    let mut tracks: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for e in &c.slices {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        tracks
            .entry((str_pid(e), e["tid"].to_string()))
            .or_default()
            .push((ts, ts + dur));
    }
    for (track, mut v) in tracks {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in v.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "{track:?}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
    }
    xs
}

/// Every trace file of a `simulator/` folder.
fn check_simulator(sim: &Path, names: &[String]) -> usize {
    let mut n = check_file(&sim.join("trace.json"));
    for name in names {
        n += check_file(&sim.join(name).join("trace.json"));
    }
    n
}

#[test]
fn the_upstream_converter_keeps_every_event_of_a_mix_cluster() {
    let gm = gm();
    let cores = mix_cluster(&gm);
    let out = tempfile::tempdir().unwrap();
    let s = export_trace(out.path(), "mix", &TimingParams::a2a3(), &cores).unwrap();
    let names: Vec<String> = s.cores.iter().map(|c| c.name.clone()).collect();
    let n = check_simulator(&s.simulator_dir, &names);
    assert_eq!(
        n,
        2 * s.instructions,
        "the run's file and the per-sub-core files"
    );
    assert!(s.instructions > 10);
}

#[test]
fn the_upstream_converter_packs_overlapping_instructions_into_lanes() {
    // A schedule from elsewhere: three VECTOR instructions overlapping.
    let recs = vec![
        record("TADD", Pipe::Vector, &[], Some(ub(0, 64)), 16),
        record("TMUL", Pipe::Vector, &[], Some(ub(64, 64)), 16),
        record("TEXP", Pipe::Vector, &[], Some(ub(128, 64)), 16),
    ];
    let spans = [(0, 100), (50, 150), (60, 70)]
        .map(|(start, end)| Span { start, end })
        .to_vec();
    let timing = CoreTiming::from_spans(&recs, spans);
    let timeline = Timeline {
        total_cycles: timing.total_cycles,
        cores: vec![timing],
    };
    let cores = [SubCore::new(0, Subtask::Aiv0, recs)];
    let out = tempfile::tempdir().unwrap();
    let s = write_trace(
        out.path(),
        "lanes",
        &TimingParams::a2a3(),
        &cores,
        &timeline,
    )
    .unwrap();
    let c = convert(&load(&s.simulator_dir.join("trace.json")));
    let tids: std::collections::BTreeSet<String> = c
        .slices
        .iter()
        .map(|e| e["tid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tids.len(), 3, "three lanes: {tids:?}");
    assert_eq!(
        check_simulator(&s.simulator_dir, &[s.cores[0].name.clone()]),
        6
    );
}
