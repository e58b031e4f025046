//! The fault promises in the upstream layout (`--dump-layout upstream`):
//! a run killed mid-way and a hung run leave an `args_dump/` that says
//! `incomplete` with the reason, lists the unfinished tasks, marks the
//! hang snapshots (`after_completion` records with `hang_snapshot: true`,
//! counted in `after_completion`), holds only records byte-identical to a
//! complete run, and loads in `dump view`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{
    assert_no_tmp, assert_records_match, assert_view_loads, run, text, Loaded, Reference, Running,
    Status, CASE_LARGE,
};

/// CaseLarge in the upstream layout, complete, for comparison.
fn reference(dir: &Path) -> Reference {
    let mut args = CASE_LARGE.to_vec();
    args.extend(["--dump-layout", "upstream"]);
    Reference::make(dir, &args)
}

#[test]
fn a_killed_upstream_layout_run_leaves_a_loadable_matching_dump() {
    let keep = tempfile::tempdir().unwrap();
    let reference = reference(keep.path());
    let mut span = reference.wall.as_secs_f64();
    for attempt in 0..8 {
        let tmp = tempfile::tempdir().unwrap();
        let mut args = CASE_LARGE.to_vec();
        args.extend(["--dump-layout", "upstream", "--output", "run"]);
        let mut child = Running::start(tmp.path(), &args);
        let end = Instant::now() + Duration::from_secs(60);
        while !tmp.path().join("run").exists() {
            assert!(Instant::now() < end, "the run directory never appeared");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_secs_f64(span * 0.4));
        if child.child.try_wait().unwrap().is_some() {
            eprintln!("attempt {attempt}: the run had already ended; sooner");
            span *= 0.6;
            continue;
        }
        child.signal("INT");
        let (status, err) = child.finish();
        if status == Some(0) {
            span *= 0.6;
            continue;
        }
        assert_eq!(status, Some(130), "{err}");
        let l = Loaded::open(&tmp.path().join("run"));
        assert!(l.upstream);
        l.check_structure();
        if l.m.header.status == Some(Status::Complete) {
            // The signal came after the last task completed (the export
            // was under way): a complete dump, and too late for this test.
            assert!(
                err.contains("interrupted after the run had completed"),
                "{err}"
            );
            eprintln!("attempt {attempt}: the run had completed; sooner");
            span *= 0.6;
            continue;
        }
        assert_eq!(l.m.header.status, Some(Status::Incomplete));
        assert_eq!(l.m.header.reason.as_deref(), Some("interrupted by SIGINT"));
        assert!(err.contains("error: interrupted by SIGINT"), "{err}");
        let n = assert_records_match(&l, &reference, "upstream layout, SIGINT");
        assert!(n > 0 && n < reference.records.len(), "{n} records compared");
        // The upstream names: `dump_args_level`, scalars counted as inputs.
        let doc: Value = serde_json::from_slice(
            &std::fs::read(tmp.path().join("run/args_dump/args_dump.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(doc["dump_args_level"], 2);
        assert_eq!(doc["status"], "incomplete");
        assert_no_tmp(tmp.path());
        assert_view_loads(tmp.path(), Path::new("run"));
        return;
    }
    panic!("never caught the run before it ended");
}

#[test]
fn a_hung_upstream_layout_run_marks_its_hang_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &[
            "run",
            "stall",
            "--seed",
            "3",
            "--clusters",
            "1",
            "--workers",
            "4",
            "--dump-tensor",
            "--dump-layout",
            "upstream",
            "--output",
            "run",
            "--timeout",
            "1",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("(3 hang snapshots)"), "{err}");
    assert!(
        err.contains("unfinished tasks: 2 running, 4 ready, 1 waiting"),
        "{err}"
    );
    // The same dump as the native layout's, read back through the marker.
    super::hang::check_stall_dump(&tmp.path().join("run"), "timeout after 1 s");
    let doc: Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("run/args_dump/args_dump.json")).unwrap(),
    )
    .unwrap();
    let marked: Vec<&Value> = doc["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["hang_snapshot"] == true)
        .collect();
    assert_eq!(marked.len(), 3);
    assert!(marked.iter().all(|r| r["stage"] == "after_completion"));
    assert_eq!(doc["hang_snapshot"], 3);
    let after = doc["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["stage"] == "after_completion")
        .count();
    assert_eq!(
        doc["after_completion"], after,
        "hang snapshots counted there"
    );
    assert_eq!(doc["unfinished_tasks"].as_array().unwrap().len(), 7);
    // Our viewer shows them at their own stage.
    let o = run(
        tmp.path(),
        &["dump", "view", "run", "--stage", "hang_snapshot"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(out.matches(" hang_snapshot ").count(), 3, "{out}");
    assert!(
        out.contains("INCOMPLETE: the run ended abnormally: timeout after 1 s"),
        "{out}"
    );
}

/// A full disk in the upstream layout: `args.bin` is cut until
/// `args_dump.json` fits, which says incomplete with the reason; what it
/// describes is byte-identical to a run on a roomy disk.
#[test]
fn an_upstream_layout_dump_on_a_full_disk_keeps_what_reached_it() {
    let keep = tempfile::tempdir().unwrap();
    let reference = reference(keep.path());
    let mut args = CASE_LARGE.to_vec();
    args.extend(["--dump-layout", "upstream", "--output", "run"]);
    let Some((out, left)) = super::on_tmpfs("size=20m", &args) else {
        return;
    };
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let reason = "write failed: No space left on device";
    assert!(err.contains(&format!("error: {reason}")), "{err}");
    let l = Loaded::open(&left.path().join("run"));
    assert!(l.upstream);
    l.check_structure();
    assert_eq!(l.m.header.status, Some(Status::Incomplete));
    assert_eq!(l.m.header.reason.as_deref(), Some(reason));
    assert!(l.m.header.dropped_records > 0, "a 176 MiB dump cannot fit");
    let n = assert_records_match(&l, &reference, "upstream layout on 20 MiB");
    assert!(n > 1000, "only {n} records kept");
    assert_no_tmp(left.path());
    assert_view_loads(left.path(), Path::new("run"));
}
