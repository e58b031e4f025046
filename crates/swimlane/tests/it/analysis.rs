//! Table, critical path, overhead and Perfetto on a hand-made timeline.

use simpler_swimlane::{critical, overhead::overhead, table::func_table, Timeline};

use crate::synth::diamond;

fn timeline() -> Timeline {
    let (r, d, n) = diamond();
    Timeline::from_files(&r, Some(&d), Some(&n))
}

#[test]
fn funcs_resolve_by_core_and_the_table_sums_the_rows() {
    let t = timeline();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // Task 1 and 2 are MIX-like (aiv0 1, aiv1 2): core 1 → func 1, core 2 → func 2;
    // task 3 is AIV-only with func 1.
    let funcs: Vec<_> = t.dispatches.iter().map(|d| d.func).collect();
    assert_eq!(funcs, [Some(0), Some(1), Some(2), Some(1)]);
    let (rows, total) = func_table(&t);
    let add = rows.iter().find(|r| r.func == Some(1)).unwrap();
    assert_eq!((add.name.as_str(), add.count), ("add", 2));
    assert_eq!(add.exec, (70 - 50) + (130 - 100));
    assert_eq!(add.latency, (75 - 47) + (140 - 96));
    assert_eq!(add.head, (50 - 47) + (100 - 96));
    assert_eq!(add.tail, (75 - 70) + (140 - 130));
    assert_eq!(total.count, 4);
    assert_eq!(total.exec, 30 + 20 + 38 + 30);
    let pct = add.exec_pct().unwrap();
    assert!((pct - 100.0 * 50.0 / 72.0).abs() < 1e-9, "{pct}");
}

#[test]
fn the_critical_path_follows_the_latest_predecessor() {
    let t = timeline();
    let cp = critical::observed(&t);
    let ids: Vec<u64> = cp.links.iter().map(|l| l.task).collect();
    // Task 3 waited for 2 (ended at 90), not 1 (ended at 70).
    assert_eq!(ids, [0, 2, (1 << 32) | 3]);
    let waits: Vec<u64> = cp.links.iter().map(|l| l.wait).collect();
    assert_eq!(waits, [0, 52 - 40, 100 - 90]);
    assert_eq!(cp.length(), 130 - 10);
    assert_eq!(cp.busy() + cp.waits(), cp.length());
    assert_eq!(t.wall(), 120);
}

#[test]
fn overhead_counts_pops_iterations_and_fan() {
    let o = overhead(&timeline());
    assert_eq!((o.pop_hit, o.pop_miss), (3, 2));
    assert_eq!(o.loop_iters, 4);
    assert_eq!(o.busy_iters, 2, "iterations 1 and 4 recorded phases");
    assert_eq!(o.phase_cycles, 4 + 2 + 8);
    assert_eq!((o.edges, o.tasks, o.max_fanin, o.max_fanout), (4, 4, 2, 2));
    assert_eq!(o.by_kind["dispatch"], (2, 3, 12));
}

/// A logical scheduler whose clusters got no dispatch records no phase:
/// the report counts the threads with phases and says how many had none.
#[test]
fn the_report_says_how_many_schedulers_recorded_no_phase() {
    let mut t = timeline();
    let with = t.sched.iter().filter(|p| !p.is_empty()).count();
    let line = |t: &Timeline| {
        let r = simpler_swimlane::report::render_overhead(t);
        r.lines()
            .find(|l| l.starts_with("Scheduler:"))
            .unwrap()
            .to_owned()
    };
    let all = line(&t);
    assert!(!all.contains("recorded no phase"), "{all}");
    assert!(
        all.starts_with(&format!("Scheduler: {with} thread")),
        "{all}"
    );
    t.sched.push(Vec::new());
    t.sched.push(Vec::new());
    let some = line(&t);
    assert!(
        some.starts_with(&format!("Scheduler: {with} thread"))
            && some.contains(" (2 more recorded no phase), "),
        "{some}"
    );
}

#[test]
fn the_perfetto_trace_packs_overlaps_into_lanes_and_passes_the_check() {
    // Two dispatches overlapping on core 1 (a corrupt or queued record):
    // the writer must still produce non-overlapping tracks.
    let (r, d, n) = crate::synth::files(
        &[
            (1, 0, 10, 50, 5, 55),
            (1, 1, 20, 30, 6, 35),
            (1, 2, 40, 60, 7, 65),
        ],
        &[(0, [-1, 1, -1]), (1, [-1, 1, -1]), (2, [-1, 1, -1])],
        &[(0, 2)],
    );
    let t = simpler_swimlane::Timeline::from_files(&r, Some(&d), Some(&n));
    let mut out = Vec::new();
    simpler_swimlane::perfetto::write_perfetto(&t, &mut out).unwrap();
    let st = simpler_swimlane::check::check_perfetto(&out).unwrap();
    assert_eq!(st.flows, 1);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let names: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"AIV_0") && names.contains(&"AIV_0 #1"),
        "{names:?}"
    );
    let slices: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 1)
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(slices, ["add(r0t0)", "add(r0t1)", "add(r0t2)"]);
    // The checker itself catches an overlap.
    let bad = br#"{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"a"},
        {"ph":"X","pid":1,"tid":1,"ts":5,"dur":10,"name":"b"}]}"#;
    let e = simpler_swimlane::check::check_perfetto(bad).unwrap_err();
    assert!(e[0].contains("overlaps"), "{e:?}");
}
