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

/// The first signal during any command other than `run` aborts at once
/// and removes what that command left unfinished: `dump view --export
/// npy` of CaseLarge's dump, interrupted once its first files are there,
/// exits 130 and leaves no temporary file; every `.npy` it finished is
/// whole — its header names the record's shape, its data are the record's
/// payload or a scalar's bits (bf16 widened to f32, exactly).
#[test]
fn sigint_during_an_export_leaves_only_whole_files() {
    use simpler_core::DType;
    let tmp = tempfile::tempdir().unwrap();
    let mut args = CASE_LARGE.to_vec();
    args.extend(["--output", "run"]);
    let o = run(tmp.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{:?}", super::text(&o));
    let ex = tmp.path().join("ex");
    let child = Running::start(
        tmp.path(),
        &["dump", "view", "run", "--export", "npy", "--out", "ex"],
    );
    let npy = |ex: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(ex).map_or_else(
            |_| Vec::new(),
            |d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "npy"))
                    .collect()
            },
        )
    };
    let end = Instant::now() + Duration::from_secs(60);
    while npy(&ex).is_empty() {
        assert!(Instant::now() < end, "no exported file appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.signal("INT");
    let (status, err) = child.finish();
    assert_eq!(status, Some(130), "{err}");
    assert!(
        err.contains("interrupted by SIGINT: aborting, unfinished files removed"),
        "{err}"
    );
    assert_no_tmp(tmp.path());
    let d = simpler_inspect::Dump::open(tmp.path().join("run")).unwrap();
    let by_name: std::collections::HashMap<String, &simpler_inspect::Record> = d
        .records()
        .iter()
        .map(|r| (simpler_inspect::export::export_file_name(r, "npy"), r))
        .collect();
    let files = npy(&ex);
    assert!(
        files.len() < by_name.len(),
        "the export had finished: nothing was interrupted"
    );
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let r = by_name
            .get(&name)
            .unwrap_or_else(|| panic!("{name}: no such record"));
        let bytes = std::fs::read(f).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{name}");
        let head_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let head = std::str::from_utf8(&bytes[10..10 + head_len]).unwrap();
        let dims: String = r.shape.iter().map(|d| format!("{d}, ")).collect();
        assert!(
            head.contains(&format!("'shape': ({dims})")),
            "{name}: {head}"
        );
        // A scalar is a 0-d array of its slot's low bytes.
        let payload = if r.is_scalar() {
            let bits = r.bits.expect("a scalar of ours has its bits");
            bits.to_le_bytes()[..r.dtype.size().min(8)].to_vec()
        } else {
            d.payload(r).unwrap()
        };
        let want = if r.dtype == DType::Bfloat16 {
            payload
                .chunks_exact(2)
                .flat_map(|c| {
                    (f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                        .to_le_bytes()
                })
                .collect()
        } else {
            payload
        };
        assert!(
            bytes[10 + head_len..] == want[..],
            "{name}: data differ from the record's payload"
        );
    }
    eprintln!(
        "{} of {} records exported before SIGINT",
        files.len(),
        by_name.len()
    );
}

/// Ctrl-\ (SIGQUIT) on a hung run: no graceful stop, but no temporary
/// file either — it used to leave `tensor_dump.bin.tmp` in a run folder
/// with no manifest. Every unfinished file and folder is removed, then the
/// process dies of SIGQUIT as the user asked. So with the other signals
/// whose default ends a process (`kill -USR1`, an `alarm`).
#[test]
fn sigquit_and_the_other_fatal_signals_leave_no_temporary_file_and_kill() {
    use std::os::unix::process::ExitStatusExt;
    for (sig, num, said) in [
        ("QUIT", libc::SIGQUIT, "quit (SIGQUIT)"),
        ("USR1", libc::SIGUSR1, "SIGUSR1"),
        ("ALRM", libc::SIGALRM, "SIGALRM"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Running::start(
            tmp.path(),
            &[
                "run",
                "stall",
                "--clusters",
                "1",
                "--workers",
                "4",
                "--dump-tensor",
                "--output",
                "run",
            ],
        );
        // The payload file is open: T0's records are collected, both hung
        // kernels have written what they write.
        child.wait_for_lines("stall: hanging", 1);
        child.wait_for_lines("stall_cube: hanging", 1);
        child.wait_for_lines("stall: all 8 tasks submitted", 1);
        child.signal(sig);
        let (status, err) = child.finish_status();
        assert_eq!(status.signal(), Some(num), "{sig}: {status:?}: {err}");
        assert!(
            err.contains(&format!("{said}: aborting, unfinished files removed")),
            "{sig}: {err}"
        );
        assert_no_tmp(tmp.path());
        assert!(
            !tmp.path().join("run").exists(),
            "{sig}: left behind: {:?}",
            super::files(tmp.path())
        );
    }
}
