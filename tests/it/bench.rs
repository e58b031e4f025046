//! `simpler bench dispatch`, `large`, `submits` and `submit-instructions`
//! as a user runs them: JSON per DESIGN §10, the metrics' arithmetic, the
//! edge bound, the callgrind harness and its skip path (issue 11).

use std::process::{Command, Output};

use serde_json::Value;

fn simpler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(args)
        .output()
        .expect("run simpler")
}

/// The one JSON object a `--json` bench prints.
fn json(o: &Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {out}\nstderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v["results"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number results.{key} in {v}"))
}

/// CaseLarge's graph per batch: 64 key blocks of QK → SF → PV → UP with
/// the UPs chained. The reduced edges: SF←QK, PV←SF, UP←SF, UP←PV and
/// UP←previous UP (none for the first) = 5 per block but 1 per batch.
fn reduced_edges(batches: u64) -> u64 {
    batches * (64 * 5 - 1)
}

#[test]
fn bench_dispatch_metrics_follow_from_its_walls() {
    let v = json(&simpler(&[
        "bench", "dispatch", "--json", "--tasks", "3000", "--reps", "1",
    ]));
    assert_eq!(v["bench"], "dispatch");
    assert_eq!(v["config"]["tasks"], 3000);
    let (flood, lp) = (num(&v, "flood_wall_s"), num(&v, "loop_wall_s"));
    assert!(flood > 0.0 && lp > 0.0, "{v}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    let us = num(&v, "us_per_task");
    assert!(close(us, (flood - lp) / 3000.0 * 1e6), "{v}");
    assert!(close(num(&v, "tasks_per_s"), 3000.0 / flood), "{v}");
    let floor = num(&v, "floor_us_per_task");
    assert!(floor > 0.0, "{v}");
    assert!(close(num(&v, "floor_ratio"), us / floor), "{v}");
    // Busy time is part of the run's wall, which the flood's wall times.
    let busy = num(&v, "orch_busy_share");
    assert!(busy > 0.0 && busy <= 1.0, "{v}");
}

#[test]
fn bench_large_reports_the_design_metrics() {
    let v = json(&simpler(&["bench", "large", "--json", "--reps", "1"]));
    assert_eq!(v["bench"], "large");
    assert_eq!(v["config"]["case"], "CaseLarge");
    let tasks = v["config"]["tasks"].as_f64().expect("config.tasks");
    assert_eq!(tasks, 65_536.0);
    for k in [
        "whole_s",
        "graph_run_s",
        "submit_us",
        "whole_dump_s",
        "setup_s",
        "golden_s",
    ] {
        assert!(num(&v, k) > 0.0, "{k} in {v}");
    }
    assert!(num(&v, "graph_run_s") < num(&v, "whole_s"), "{v}");
    // Finished producers need no edge, so the count may fall short of the
    // reduced graph's, never exceed it.
    let edges = num(&v, "edges");
    assert!(edges > 0.0 && edges <= reduced_edges(256) as f64, "{v}");
    assert_eq!(num(&v, "edges_per_task"), edges / tasks);
    assert!(num(&v, "edges_per_task") <= 1.5, "{v}");
}

#[test]
fn bench_large_table_names_each_metric() {
    let o = simpler(&["bench", "large", "--reps", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.starts_with("bench large  (target: edges_per_task ≤ 1.5"),
        "{out}"
    );
    for k in [
        "whole_s",
        "graph_run_s",
        "edges_per_task",
        "submit_us",
        "whole_dump_s",
    ] {
        assert!(out.contains(&format!("  {k} ")), "{k}: {out}");
    }
}

#[test]
fn bench_submits_counts_the_reduced_edges() {
    let v = json(&simpler(&[
        "bench",
        "submits",
        "--json",
        "--reps",
        "1",
        "--batches",
        "2",
    ]));
    assert_eq!(v["bench"], "submits");
    assert_eq!(num(&v, "tasks"), 512.0);
    let edges = num(&v, "edges");
    assert!(edges > 0.0 && edges <= reduced_edges(2) as f64, "{v}");
    assert!(num(&v, "submit_us") > 0.0, "{v}");
}

#[test]
fn bench_batches_outside_1_to_4096_are_refused() {
    for bad in ["0", "4097", "4294967296", "-1", "x"] {
        let o = simpler(&["bench", "submits", "--batches", bad]);
        assert_eq!(o.status.code(), Some(2), "--batches {bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("'{bad}' for '--batches")), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn valgrind_present() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok()
}

#[test]
fn submit_instructions_without_valgrind_says_skipped() {
    let empty = tempfile::tempdir().expect("temp dir");
    let o = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(["bench", "submit-instructions", "--json", "--batches", "1"])
        .env("PATH", empty.path())
        .output()
        .expect("run simpler");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bench submit-instructions skipped: valgrind not found on PATH"),
        "{err}"
    );
    let v = json(&o);
    assert_eq!(v["results"], serde_json::json!({}));
    assert!(v["config"]["skipped"].is_string(), "{v}");
}

#[test]
fn submit_instructions_counts_under_callgrind() {
    let o = simpler(&["bench", "submit-instructions", "--json", "--batches", "1"]);
    if !valgrind_present() {
        // Then the bench must say so (the skip path has its own test).
        assert!(String::from_utf8_lossy(&o.stderr).contains("skipped"));
        return;
    }
    let v = json(&o);
    assert_eq!(v["bench"], "submit-instructions");
    assert_eq!(num(&v, "tasks"), 256.0);
    let (orch, submit) = (num(&v, "orch_instr_per_task"), num(&v, "submit_instr"));
    // Submit is part of the orchestration; both are real work.
    assert!(submit > 1000.0 && orch > submit, "{v}");
    assert!(num(&v, "edges_per_task") <= 1.25, "{v}");
}

/// `bench swimlane` on a small flood: every figure is there and finite,
/// the best ratio is the two best times' quotient, and the worst-median
/// headline is the larger of the two graphs' medians.
#[test]
fn bench_swimlane_reports_consistent_ratios() {
    let v = json(&simpler(&[
        "bench", "swimlane", "--json", "--reps", "1", "--tasks", "2000",
    ]));
    assert_eq!(v["bench"], "swimlane");
    assert_eq!(v["config"]["tasks"], 2000);
    for g in ["flood", "case_large"] {
        for k in [
            "wall_ratio",
            "cpu_ratio",
            "null_ratio",
            "plain_s",
            "level4_s",
        ] {
            let x = num(&v, &format!("{g}_{k}"));
            assert!(x.is_finite() && x > 0.0, "{g}_{k} in {v}");
        }
        let best = num(&v, &format!("{g}_level4_s")) / num(&v, &format!("{g}_plain_s"));
        // Within an ulp or two: serde_json's default float parsing is not
        // always the nearest double.
        let got = num(&v, &format!("{g}_best_ratio"));
        assert!(
            (got - best).abs() <= 1e-12 * best,
            "{g}: {got} != {best} in {v}"
        );
    }
    let worst = num(&v, "flood_wall_ratio").max(num(&v, "case_large_wall_ratio"));
    assert_eq!(num(&v, "wall_ratio"), worst, "{v}");
    // A ratio of two timings: its size is the bench's finding, not a
    // test's (noise can put a faster `--predict` below a plain run).
    let predict = num(&v, "case_large_predict_ratio");
    assert!(predict.is_finite() && predict > 0.0, "{v}");
}
