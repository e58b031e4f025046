//! The run timeline of this crate's kernels: `run --swimlane` records
//! what the chip did, `swimlane` reports it and `--check` passes the
//! upstream tools' requirements; `--predict` places the same dispatches
//! on the chip model. The files are read back here: one AIC dispatch of
//! the matmul, four AIV blocks of the SPMD axpy+relu after it.

use std::path::Path;

use serde_json::Value;

use super::{expect, my_kernels, text};

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `(core type, task token)` of every aicore row of a records file.
fn dispatches(records: &Value) -> Vec<(String, u64)> {
    let types = records["metadata"]["core_types"].as_array().unwrap();
    let rows = records["aicore_tasks"].as_array().unwrap();
    rows.iter()
        .map(|r| {
            let core = r[0].as_u64().unwrap() as usize;
            (
                types[core].as_str().unwrap().to_string(),
                r[1].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The matmul once on an AIC core, then the axpy+relu task's four
/// blocks on AIV cores, all four after the matmul ended.
fn assert_matmul_then_four_blocks(records: &Value) {
    let mut d = dispatches(records);
    d.sort_by_key(|(_, token)| *token);
    let kinds: Vec<&str> = d.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(kinds, ["aic", "aiv", "aiv", "aiv", "aiv"], "{d:?}");
    assert_ne!(d[0].1, d[1].1);
    assert!(
        d[1..].iter().all(|(_, t)| *t == d[1].1),
        "four blocks of one task: {d:?}"
    );
    let rows = records["aicore_tasks"].as_array().unwrap();
    let end_of = |token: u64, col: usize| -> Vec<u64> {
        rows.iter()
            .filter(|r| r[1] == token)
            .map(|r| r[col].as_u64().unwrap())
            .collect()
    };
    let matmul_end = end_of(d[0].1, 4)[0];
    for start in end_of(d[1].1, 3) {
        assert!(
            start >= matmul_end,
            "a block started at {start}, before the matmul ended at {matmul_end}"
        );
    }
}

#[test]
fn a_recorded_run_reports_and_passes_the_upstream_check() {
    let tmp = tempfile::tempdir().unwrap();
    let out = expect(
        tmp.path(),
        &["run", "dense_relu", "--swimlane", "--output", "r"],
        0,
    );
    assert!(
        out.contains(
            "swimlane (level 4): 5 dispatches, 2 tasks, 1 graph edge -> r/chip_swimlane_records.json"
        ),
        "{out}"
    );
    let records = json(&tmp.path().join("r/chip_swimlane_records.json"));
    assert_eq!(records["chip_swimlane_level"], 4);
    assert_matmul_then_four_blocks(&records);
    let names = json(&tmp.path().join("r/name_map_dense_relu_Small.json"));
    let names = names.to_string();
    assert!(
        names.contains("matmul") && names.contains("axpy_relu"),
        "{names}"
    );

    let out = expect(tmp.path(), &["swimlane", "r"], 0);
    let row = |func: &str| {
        out.lines()
            .find(|l| l.starts_with(func))
            .unwrap_or_else(|| panic!("no {func} row:\n{out}"))
            .split_whitespace()
            .nth(1)
            .map(String::from)
    };
    assert_eq!(row("matmul(0)").as_deref(), Some("1"), "{out}");
    assert_eq!(row("axpy_relu(1)").as_deref(), Some("4"), "{out}");
    assert!(out.contains("Critical path: 2 tasks"), "{out}");

    let out = expect(tmp.path(), &["swimlane", "r", "--check"], 0);
    assert!(
        out.contains("upstream tools: OK (5 dispatches, 2 tasks, 1 edge;"),
        "{out}"
    );
    assert!(out.contains("swimlane_perfetto.json: OK ("), "{out}");
}

#[test]
fn predict_gives_a_timeline_on_the_chip_model() {
    let tmp = tempfile::tempdir().unwrap();
    let out = expect(
        tmp.path(),
        &["run", "dense_relu", "--predict", "--output", "p"],
        0,
    );
    assert!(
        out.contains("predicted (a2a3 at 1850 MHz, 8 clusters): makespan "),
        "{out}"
    );
    for func in ["  matmul(0) ", "  axpy_relu(1) "] {
        assert!(
            out.lines().any(|l| l.starts_with(func)),
            "no bottleneck row {func:?}:\n{out}"
        );
    }
    assert!(
        out.contains("prediction: ") && out.contains("-> p/predicted"),
        "{out}"
    );
    // --predict alone writes the predicted timeline only, and says so.
    assert!(!out.contains("swimlane (level"), "{out}");
    assert!(!tmp.path().join("p/chip_swimlane_records.json").exists());
    let records = json(&tmp.path().join("p/predicted/chip_swimlane_records.json"));
    assert_eq!(records["metadata"]["clock_freq_hz"], 1_850_000_000u64);
    assert_matmul_then_four_blocks(&records);
    let pmu = std::fs::read_to_string(tmp.path().join("p/predicted/pmu.csv")).unwrap();
    let funcs: Vec<&str> = pmu
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(3))
        .collect();
    assert_eq!(funcs, ["0", "1", "1", "1", "1"], "{pmu}");

    let out = expect(tmp.path(), &["swimlane", "p/predicted", "--check"], 0);
    assert!(
        out.contains("upstream tools: OK (5 dispatches, 2 tasks, 1 edge;"),
        "{out}"
    );
    let o = my_kernels(tmp.path(), &["swimlane", "p"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("this run has only its predicted timeline: my-kernels swimlane p/predicted"),
        "{err}"
    );
}
