//! Hung kernels (the test-only `stall` workload) stopped by `--timeout`
//! or by a signal, and CaseLarge under a short timeout: the dump is
//! incomplete with the exact reason, lists every unfinished task with its
//! state, and holds `hang_snapshot` records with the bytes in GM when the
//! run stopped.

use std::path::Path;

use super::{
    assert_no_tmp, assert_view_loads, case_large, run, text, Loaded, Running, Stage, Status,
};

/// T0..T7 of the stall workload (ring 0).
fn id(local: u64) -> u64 {
    local
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The stall run on one cluster (one AIC core, four workers): T0
/// completed; T1 running on an AIV core after writing rows 0..8 of `b` and
/// `acc += 1`; T2 waiting on T1; T3 running on the AIC core 0; T4–T7 ready,
/// never dispatched (a core runs one dispatch at a time and queues none).
pub(super) fn check_stall_dump(run_dir: &Path, reason: &str) {
    let l = Loaded::open(run_dir);
    l.check_structure();
    assert_eq!(l.m.header.status, Some(Status::Incomplete));
    assert_eq!(l.m.header.reason.as_deref(), Some(reason));
    let u = l.m.header.unfinished_tasks.as_ref().unwrap();
    use simpler_format::tensor_dump::TaskState::{Ready, Running, Waiting};
    let states: Vec<_> = u.iter().map(|t| (t.task_id.0, t.state)).collect();
    let want: Vec<_> = [
        (1, Running),
        (2, Waiting),
        (3, Running),
        (4, Ready),
        (5, Ready),
        (6, Ready),
        (7, Ready),
    ]
    .into_iter()
    .map(|(t, s)| (id(t), s))
    .collect();
    assert_eq!(states, want);
    let aiv = &u[0].cores;
    assert!(
        aiv.len() == 1 && (1..=2).contains(&aiv[0]),
        "T1 on an AIV core: {aiv:?}"
    );
    assert_eq!(u[2].cores, vec![0], "T3 on the AIC core");
    assert_eq!(u[1].waiting_on, vec![simpler_format::hex::Hex64(id(1))]);
    for t in u {
        assert_eq!((t.blocks_done, t.block_num), (0, 1));
    }
    let idx = l.index();
    let rec = |task: u64, stage: &str, arg: u32, role: &str| {
        let stage = match stage {
            "0" => Stage::BeforeDispatch,
            "1" => Stage::AfterCompletion,
            _ => Stage::HangSnapshot,
        };
        let role = simpler_format::vocab::parse_role(role).unwrap();
        let k = (id(task), stage, arg, role);
        *idx.get(&k).unwrap_or_else(|| panic!("no record {k:?}"))
    };
    // T0 completed: a = x + 1, recomputed from its dumped input.
    let x = f32s(l.bytes(rec(0, "0", 0, "input")));
    let a = f32s(l.bytes(rec(0, "1", 1, "output")));
    assert_eq!(a, x.iter().map(|v| v + 1.0).collect::<Vec<_>>());
    // T1 received a and acc = 0; its snapshot holds b rows 0..8 = 2a and
    // rows 8..16 untouched (zero), and acc = 1.
    assert_eq!(f32s(l.bytes(rec(1, "0", 0, "input"))), a);
    assert_eq!(f32s(l.bytes(rec(1, "0", 1, "inout"))), vec![0.0; 256]);
    assert_eq!(f32s(l.bytes(rec(1, "2", 1, "inout"))), vec![1.0; 256]);
    let b = f32s(l.bytes(rec(1, "2", 2, "output")));
    let mut want_b: Vec<f32> = a[..128].iter().map(|v| v * 2.0).collect();
    want_b.extend([0.0; 128]);
    assert_eq!(b, want_b);
    // Dispatched and unfinished: a snapshot of its output; T2 and T4–T7
    // never dispatched: no record at all.
    assert_eq!(f32s(l.bytes(rec(3, "2", 1, "output"))), vec![0.0; 256]);
    for t in [2, 4, 5, 6, 7] {
        assert!(
            l.m.tensors.iter().all(|r| r.task_id.value != id(t)),
            "T{t} has records"
        );
    }
    assert_eq!(l.m.header.hang_snapshot, 3);
    assert_no_tmp(run_dir);
}

/// Two kernels hang at once: four workers, whatever the machine's CPUs.
const STALL: [&str; 11] = [
    "run",
    "stall",
    "--seed",
    "3",
    "--clusters",
    "1",
    "--workers",
    "4",
    "--dump-tensor",
    "--output",
    "run",
];

#[test]
fn a_timeout_snapshots_what_the_hung_kernel_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = STALL.to_vec();
    args.extend(["--timeout", "1"]);
    let o = run(tmp.path(), &args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("error: timeout after 1 s"), "{err}");
    assert!(
        err.contains("unfinished tasks: 2 running, 4 ready, 1 waiting"),
        "{err}"
    );
    assert!(err.contains("(3 hang snapshots)"), "{err}");
    check_stall_dump(&tmp.path().join("run"), "timeout after 1 s");
    let out = assert_view_loads(tmp.path(), Path::new("run"));
    assert!(
        out.contains("INCOMPLETE: the run ended abnormally: timeout after 1 s"),
        "{out}"
    );
    let o = run(
        tmp.path(),
        &["dump", "view", "run", "--stage", "hang_snapshot"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(out.matches(" hang_snapshot ").count(), 3, "{out}");
}

#[test]
fn sigint_and_sigterm_stop_a_hung_run_with_its_snapshot() {
    for (sig, code) in [("INT", 130), ("TERM", 143)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Running::start(tmp.path(), &STALL);
        // Both hung kernels have written what they write, and every task
        // was submitted (a worker may start one before the last submit).
        child.wait_for_lines("stall: hanging", 1);
        child.wait_for_lines("stall_cube: hanging", 1);
        child.wait_for_lines("stall: all 8 tasks submitted", 1);
        child.signal(sig);
        let (status, err) = child.finish();
        assert_eq!(status, Some(code), "SIG{sig}: {err}");
        let reason = format!("interrupted by SIG{sig}");
        assert!(err.contains(&format!("error: {reason}")), "{err}");
        check_stall_dump(&tmp.path().join("run"), &reason);
        assert_view_loads(tmp.path(), Path::new("run"));
    }
}

/// CaseLarge under a 50 ms timeout: every task that completed has its
/// records byte-identical to a complete run; the rest are listed.
#[test]
fn case_large_under_a_short_timeout() {
    let reference = case_large();
    let tmp = tempfile::tempdir().unwrap();
    let mut args = super::CASE_LARGE.to_vec();
    args.extend(["--timeout", "0.05", "--output", "run"]);
    let o = run(tmp.path(), &args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("error: timeout after 0.05 s"), "{err}");
    let l = Loaded::open(&tmp.path().join("run"));
    l.check_structure();
    assert_eq!(l.m.header.reason.as_deref(), Some("timeout after 0.05 s"));
    let u = l.m.header.unfinished_tasks.as_ref().unwrap();
    assert!(!u.is_empty(), "65 536 tasks do not finish in 50 ms");
    let compared = super::assert_records_match(&l, reference, "CaseLarge --timeout 0.05");
    assert!(compared > 0);
    assert_no_tmp(tmp.path());
    assert_view_loads(tmp.path(), Path::new("run"));
}

/// `--dump-all` on a hung run stopped by SIGTERM: the orchestration args
/// dump and the kernel args dump are written beside the incomplete
/// manifest, the CLI names them, and all three describe the same run:
/// one dispatch per dispatched task (T0, T1, T3: the tasks with
/// `before_dispatch` records), each running one on the core the manifest
/// lists it on, every tensor slot at its records' address and shape; the
/// orchestration's `x` and `acc` are T0's input and T1's inout.
#[test]
fn a_signalled_hung_run_also_writes_its_args_and_kernel_args_dumps() {
    use simpler_format::{args_dump::ArgsDump, kernel_args::KernelArgsDump, vocab::Kind};
    let tmp = tempfile::tempdir().unwrap();
    let args: Vec<&str> = STALL
        .iter()
        .map(|&a| {
            if a == "--dump-tensor" {
                "--dump-all"
            } else {
                a
            }
        })
        .collect();
    let mut child = Running::start(tmp.path(), &args);
    child.wait_for_lines("stall: hanging", 1);
    child.wait_for_lines("stall_cube: hanging", 1);
    child.wait_for_lines("stall: all 8 tasks submitted", 1);
    child.signal("TERM");
    let (status, err) = child.finish();
    assert_eq!(status, Some(143), "{err}");
    check_stall_dump(&tmp.path().join("run"), "interrupted by SIGTERM");
    for line in [
        "args dump: run/tensor_dump/args_dump.json",
        "kernel args dump: 3 dispatches -> run/tensor_dump/kernel_args_dump.json",
    ] {
        assert!(err.contains(line), "{line:?} not said: {err}");
    }
    let l = Loaded::open(&tmp.path().join("run"));
    let dir = tmp.path().join("run/tensor_dump");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let k: KernelArgsDump = serde_json::from_slice(&read("kernel_args_dump.json")).unwrap();
    assert_eq!((k.schema_version, k.dropped_dispatches), (1, 0));
    assert_eq!(k.total_dispatches, k.dispatches.len() as u64);
    let slots: usize = k.dispatches.iter().map(|d| d.args.len()).sum();
    assert_eq!(k.total_args, slots as u64);
    assert!(k
        .dispatches
        .windows(2)
        .all(|w| w[0].dispatch_id < w[1].dispatch_id));
    let mut seen: Vec<(u64, u32, &str)> = k
        .dispatches
        .iter()
        .map(|d| (d.task_id.0, d.func_id, d.core_type.as_str()))
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        [(id(0), 0, "aiv"), (id(1), 1, "aiv"), (id(3), 2, "aic")]
    );
    let unfinished = l.m.header.unfinished_tasks.as_ref().unwrap();
    let mut compared = 0;
    for d in &k.dispatches {
        if let Some(t) = unfinished.iter().find(|t| t.task_id.0 == d.task_id.0) {
            assert_eq!(
                t.cores,
                [d.core_id],
                "{}: dispatched on another core",
                d.task_id
            );
        }
        assert_eq!(d.args.len(), if d.func_id == 1 { 3 } else { 2 });
        for s in &d.args {
            assert_eq!(s.kind, Kind::Tensor);
            let recs =
                l.m.tensors
                    .iter()
                    .filter(|r| r.task_id.value == d.task_id.0 && r.arg_index == s.arg_index);
            for r in recs {
                let what = format!("{} {} arg {}", d.task_id, r.stage, r.arg_index);
                assert_eq!(r.addr.map(|a| a.value), s.addr.map(|a| a.0), "{what}");
                assert_eq!(Some(&r.shape), s.shape.as_ref(), "{what}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, l.m.tensors.len(), "every record has its slot");
    let a: ArgsDump = serde_json::from_slice(&read("args_dump.json")).unwrap();
    assert_eq!((a.workload.as_str(), a.case.as_str()), ("stall", "Default"));
    assert_eq!((a.total_args, a.args.len(), a.dropped_args), (2, 2, 0));
    let idx = l.index();
    let before = |task: u64, arg: u32, role: &str| {
        let role = simpler_format::vocab::parse_role(role).unwrap();
        idx[&(id(task), Stage::BeforeDispatch, arg, role)]
    };
    for (o, r) in a
        .args
        .iter()
        .zip([before(0, 0, "input"), before(1, 1, "inout")])
    {
        assert_eq!(o.role, Some(r.role), "arg {}", o.arg_index);
        assert_eq!(
            o.addr.map(|h| h.0),
            r.addr.map(|h| h.value),
            "arg {}",
            o.arg_index
        );
        assert_eq!(
            (o.shape.as_ref(), o.nbytes),
            (Some(&r.shape), Some(r.bin_size))
        );
    }
}

/// A run started with SIGHUP ignored (`nohup simpler run … &`, so that it
/// outlives the terminal) keeps it ignored: the hang-up does not stop the
/// hung run, which ends by its own `--timeout` with the same dump as
/// without the signal.
#[test]
fn a_run_started_under_nohup_is_not_stopped_by_sighup() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = super::simpler(tmp.path());
    cmd.args(STALL).args(["--timeout", "1"]);
    // SAFETY: between fork and exec; signal(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = Running::spawn(cmd);
    child.wait_for_lines("stall: hanging", 1);
    child.wait_for_lines("stall_cube: hanging", 1);
    child.signal("HUP");
    let (code, err) = child.finish();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("error: timeout after 1 s"), "{err}");
    assert!(!err.contains("SIGHUP"), "{err}");
    check_stall_dump(&tmp.path().join("run"), "timeout after 1 s");
}
