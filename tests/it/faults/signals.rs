//! `simpler run paged_attention --case CaseLarge --dump-tensor` killed with
//! SIGINT / SIGTERM / SIGHUP at many points of its run: every kill leaves a
//! manifest the viewer loads, whose records are byte-identical to a
//! complete run of the same seed, no temporary file, and the exit code of
//! the signal. A second signal aborts at once and leaves nothing.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use super::{
    assert_no_tmp, assert_records_match, assert_view_loads, case_large, run, Loaded, Running,
    Status, CASE_LARGE,
};

/// Start CaseLarge into `dir/run`; returns once the run directory exists
/// (the signal handlers are installed before it is created).
fn start_case_large(dir: &Path) -> Running {
    let mut args = CASE_LARGE.to_vec();
    args.extend(["--output", "run"]);
    let r = Running::start(dir, &args);
    let end = Instant::now() + Duration::from_secs(60);
    while !dir.join("run").exists() {
        assert!(Instant::now() < end, "the run directory never appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    r
}

#[test]
fn case_large_killed_at_twelve_points_leaves_loadable_matching_dumps() {
    let reference = case_large();
    // Kill points from 2 % to 79 % of a complete run's time (input
    // generation, the graph, the export). The machine's speed drifts: a
    // point that finds the run already over shrinks the span and is tried
    // again.
    let mut span = reference.wall.as_secs_f64();
    let (mut killed, mut tries, mut i) = (0, 0, 0);
    while i < 12 && tries < 30 {
        tries += 1;
        let (sig, code) = [("INT", 130), ("TERM", 143), ("HUP", 129)][i % 3];
        let at = Duration::from_secs_f64(span * (0.02 + 0.07 * i as f64));
        let tmp = tempfile::tempdir().unwrap();
        let mut child = start_case_large(tmp.path());
        std::thread::sleep(at);
        if child.child.try_wait().unwrap().is_some() {
            eprintln!("kill point {i} ({at:?}): the run had already ended; shrinking the span");
            span *= 0.8;
            continue;
        }
        child.signal(sig);
        let (status, err) = child.finish();
        let what = format!("SIG{sig} after {at:?}");
        if status == Some(0) {
            // It exited between the check and the signal.
            span *= 0.8;
            continue;
        }
        assert_eq!(status, Some(code), "{what}: {err}");
        killed += 1;
        let l = Loaded::open(&tmp.path().join("run"));
        l.check_structure();
        match l.m.header.status {
            Some(Status::Incomplete) => {
                let reason = format!("interrupted by SIG{sig}");
                assert_eq!(l.m.header.reason.as_deref(), Some(&*reason), "{what}");
                assert!(err.contains(&format!("error: {reason}")), "{what}: {err}");
            }
            // The signal came after the last task completed.
            _ => assert!(
                err.contains("interrupted after the run had completed"),
                "{what}: {err}"
            ),
        }
        let n = assert_records_match(&l, reference, &what);
        eprintln!(
            "kill point {i}: SIG{sig} after {at:?}: {} records ({n} compared), {} hang snapshots, {} unfinished tasks, status {}",
            l.m.tensors.len(),
            l.m.header.hang_snapshot,
            l.m.header.unfinished_tasks.as_ref().map_or(0, Vec::len),
            l.m.header.status.map_or("?", |s| s.name())
        );
        assert_no_tmp(tmp.path());
        assert_view_loads(tmp.path(), Path::new("run"));
        i += 1;
    }
    assert!(
        killed >= 10 && i == 12,
        "only {killed} kill points of {i} hit a running process in {tries} tries"
    );
}

#[test]
fn a_second_signal_aborts_at_once_and_leaves_nothing() {
    let span = case_large().wall;
    for attempt in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = start_case_large(tmp.path());
        std::thread::sleep(span / 3);
        child.signal("INT");
        // The first one is being handled: the run stops, the export begins.
        child.wait_for_lines("stopping the run", 1);
        child.signal("INT");
        let (status, err) = child.finish();
        assert_eq!(status, Some(130), "{err}");
        if !err.contains("aborting, unfinished files removed") {
            // The graceful stop finished before the second signal arrived.
            eprintln!("attempt {attempt}: the export won the race; again");
            continue;
        }
        assert!(
            !tmp.path().join("run").exists(),
            "left behind: {:?}",
            super::files(tmp.path())
        );
        // The --output name is free again.
        let o = run(
            tmp.path(),
            &["run", "vector_example", "--dump-tensor", "--output", "run"],
        );
        assert_eq!(o.status.code(), Some(0), "{:?}", super::text(&o));
        assert_no_tmp(tmp.path());
        return;
    }
    panic!("the second signal never arrived during the graceful stop");
}

/// An ssh session drops: the run's terminal hangs up (every write to it
/// fails from then on) and SIGHUP arrives. The run still stops gracefully,
/// exports a dump the viewer loads, and exits 129 — printing its summary
/// to the dead terminal is no reason to panic (it was exit 101).
#[test]
fn sighup_after_the_terminal_hung_up_exits_129_with_a_loadable_dump() {
    let reference = case_large();
    let tmp = tempfile::tempdir().unwrap();
    let (master, slave) = super::pty();
    let mut args = CASE_LARGE.to_vec();
    args.extend(["--output", "run"]);
    let mut child = super::simpler(tmp.path())
        .args(&args)
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .expect("spawn simpler");
    let end = Instant::now() + Duration::from_secs(60);
    while !tmp.path().join("run").exists() {
        assert!(Instant::now() < end, "the run directory never appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(reference.wall / 5);
    // The terminal goes away: writes to it now fail with EIO.
    drop(master);
    let hup = std::process::Command::new("kill")
        .args(["-s", "HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(129), "{status:?}");
    let l = Loaded::open(&tmp.path().join("run"));
    l.check_structure();
    assert_records_match(&l, reference, "SIGHUP with the terminal gone");
    assert_no_tmp(tmp.path());
    assert_view_loads(tmp.path(), Path::new("run"));
}
