//! Runs stopped from outside (a cancel token) or by their deadline while a
//! kernel hangs: the run returns without waiting for the kernel, and the
//! dump lists every unfinished task with its state and snapshots what the
//! hung kernel had written so far.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use simpler_core::{topology::CoreType, DType, KernelError, TaskId};
use simpler_dump::DumpConfig;
use simpler_format::hex::Hex64;
use simpler_format::tensor_dump::{Manifest, TaskState};
use simpler_format::vocab::{Kind, Stage, Status};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    CancelToken, KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, RuntimeError, TaskArgs,
};

/// Per test: the held kernel has started / may finish.
static STARTED: [AtomicBool; 4] = [const { AtomicBool::new(false) }; 4];
static RELEASE: [AtomicBool; 4] = [const { AtomicBool::new(false) }; 4];

/// The gate index in the task's last scalar.
fn gate(args: &Args) -> KResult<usize> {
    let n_tensors = (0..32).take_while(|&i| args.tensor(i).is_ok()).count();
    Ok(args.scalar_u64(n_tensors)? as usize)
}

/// Writes 7.0 into element 0 of tensor 0, says it started, then waits for
/// its release (which comes only after the run returned).
fn held(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let g = gate(args)?;
    core.gm().write(t.addr, &7.0f32.to_le_bytes())?;
    STARTED[g].store(true, Ordering::Release);
    while !RELEASE[g].load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Reads its input (a consumer of the held task's output).
fn touch(_core: &mut Core, args: &Args) -> KResult<()> {
    args.tensor(0).map(|_| ())
}

/// Fails once the held kernel of its gate has started.
fn fail_after_start(_core: &mut Core, args: &Args) -> KResult<()> {
    let g = gate(args)?;
    while !STARTED[g].load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(KernelError::msg("failing on purpose"))
}

fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(0, "held", CoreType::Aiv, held),
        KernelDef::new(1, "touch", CoreType::Aiv, touch),
        KernelDef::new(2, "fail_after_start", CoreType::Aiv, fail_after_start),
    ]
}

fn runtime(dir: &std::path::Path, cancel: CancelToken, timeout: Option<Duration>) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters: 1,
            sched_threads: 1,
            // A held kernel keeps its worker: the others must go on.
            workers: 4,
            gm_bytes: 16 << 20,
            timeout,
            dump: Some(DumpConfig::new(dir)),
            cancel,
            ..Default::default()
        },
        kernels(),
    )
    .unwrap()
}

fn manifest(dir: &std::path::Path) -> (Manifest, Vec<u8>) {
    let m = serde_json::from_slice(&std::fs::read(dir.join("tensor_dump.json")).unwrap()).unwrap();
    (m, std::fs::read(dir.join("tensor_dump.bin")).unwrap())
}

/// Held task T0 (inout x), T1 reads x (waits on T0). Returns the ids.
fn held_then_waiting(
    o: &mut simpler_runtime::Orchestrator<'_>,
    a: &OrchArgs,
    g: u64,
) -> Result<(TaskId, TaskId), RuntimeError> {
    let x = a.tensor_at(0)?;
    let t0 = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&x).scalar_u64(g))?;
    let t1 = o.submit(Kernels::Aiv(1), TaskArgs::new().input(&x))?;
    Ok((t0.task_id, t1.task_id))
}

/// The unfinished list and the hang snapshot of a run stopped while T0
/// held its core: T0 running on an AIV core (1 or 2 with one cluster) for
/// a while within the run's `wall`, T1 waiting on T0; T0's inout snapshot
/// holds the 7.0 it wrote, its before_dispatch record the 1.0s it
/// received.
fn check_stopped(dir: &std::path::Path, ids: (TaskId, TaskId), reason: &str, wall: Duration) {
    let (m, bin) = manifest(dir);
    assert_eq!(m.header.status, Some(Status::Incomplete));
    assert_eq!(m.header.reason.as_deref(), Some(reason));
    let u = m.header.unfinished_tasks.expect("unfinished_tasks");
    assert_eq!(u.len(), 2, "{u:?}");
    assert_eq!(u[0].task_id, Hex64(ids.0 .0));
    assert_eq!(u[0].state, TaskState::Running);
    let cores = u[0].cores.clone();
    assert!(cores.len() == 1 && (1..=2).contains(&cores[0]), "{cores:?}");
    let ran = u[0].running_for_ms.unwrap();
    assert!(
        ran > 0.0 && ran <= wall.as_secs_f64() * 1e3,
        "{ran} ms in {wall:?}"
    );
    assert_eq!((u[0].blocks_done, u[0].block_num), (0, 1));
    assert_eq!(u[1].task_id, Hex64(ids.1 .0));
    assert_eq!(u[1].state, TaskState::Waiting);
    assert_eq!(u[1].waiting_on, vec![Hex64(ids.0 .0)]);
    assert!(u[1].cores.is_empty() && u[1].running_for_ms.is_none());
    // T1 never ran: no record. T0: before_dispatch then hang_snapshot.
    assert!(m.tensors.iter().all(|r| r.task_id.value != ids.1 .0));
    let recs: Vec<_> = m
        .tensors
        .iter()
        .filter(|r| r.task_id.value == ids.0 .0)
        .collect();
    assert_eq!(m.header.hang_snapshot, 1);
    assert_eq!(recs.len(), 3, "inout before, scalar, inout snapshot");
    let payload = |stage: Stage| {
        let r = recs
            .iter()
            .find(|r| r.stage == stage && r.kind == Kind::Tensor)
            .unwrap_or_else(|| panic!("no {stage} record"));
        assert_eq!(
            (r.task_id.value, r.role),
            (ids.0 .0, simpler_core::ArgRole::InOut)
        );
        let v: Vec<f32> = bytemuck::pod_collect_to_vec(
            &bin[r.bin_offset as usize..(r.bin_offset + r.bin_size) as usize],
        );
        v
    };
    assert_eq!(payload(Stage::BeforeDispatch), vec![1.0f32; 16]);
    let mut want = vec![1.0f32; 16];
    want[0] = 7.0;
    assert_eq!(payload(Stage::HangSnapshot), want);
    assert_eq!(
        recs.last().unwrap().stage,
        Stage::HangSnapshot,
        "sorted last in its task"
    );
}

#[test]
fn a_cancel_stops_a_run_whose_kernel_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let token = CancelToken::new();
    let rt = runtime(tmp.path(), token.clone(), None);
    let x = rt.upload_pod(&[1.0f32; 16], &[16], DType::Float32).unwrap();
    let canceller = std::thread::spawn(move || {
        while !STARTED[0].load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        token.cancel("stopped by the test");
    });
    let mut ids = None;
    let t0 = Instant::now();
    let err = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            ids = Some(held_then_waiting(o, a, 0)?);
            Ok(())
        })
        .unwrap_err();
    let wall = t0.elapsed();
    canceller.join().unwrap();
    // Returned while the kernel still holds its core.
    assert!(!RELEASE[0].load(Ordering::Acquire));
    assert_eq!(err, RuntimeError::Cancelled("stopped by the test".into()));
    check_stopped(tmp.path(), ids.unwrap(), "stopped by the test", wall);
    let s = rt.last_dump().expect("summary of the failed run");
    assert_eq!(s.hang_snapshots, 1);
    assert_eq!(
        (
            s.unfinished.running,
            s.unfinished.ready,
            s.unfinished.waiting
        ),
        (1, 0, 1)
    );
    RELEASE[0].store(true, Ordering::Release);
}

/// A kernel error while another kernel hangs: the shutdown waits for
/// running kernels, but not past the run's deadline.
#[test]
fn the_deadline_holds_while_the_shutdown_waits_for_a_hung_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(
        tmp.path(),
        CancelToken::new(),
        Some(Duration::from_millis(300)),
    );
    let x = rt.upload_pod(&[1.0f32; 16], &[16], DType::Float32).unwrap();
    let mut ids = None;
    let t0 = Instant::now();
    let err = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            ids = Some(held_then_waiting(o, a, 1)?);
            o.submit(Kernels::Aiv(2), TaskArgs::new().scalar_u64(1))?;
            Ok(())
        })
        .unwrap_err();
    let wall = t0.elapsed();
    assert!(!RELEASE[1].load(Ordering::Acquire));
    assert!(
        matches!(err, RuntimeError::Kernel { func_id: 2, .. }),
        "{err}"
    );
    check_stopped(tmp.path(), ids.unwrap(), &err.to_string(), wall);
    RELEASE[1].store(true, Ordering::Release);
}

#[test]
fn a_run_started_after_a_cancel_stops_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let token = CancelToken::new();
    token.cancel("interrupted by SIGTERM");
    token.cancel("a later reason loses");
    let rt = runtime(tmp.path(), token.clone(), None);
    assert_eq!(token.reason().as_deref(), Some("interrupted by SIGTERM"));
    let err = rt
        .run(&OrchArgs::new(), |o, _| {
            o.submit(Kernels::Aiv(1), TaskArgs::new())?;
            Ok(())
        })
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Cancelled("interrupted by SIGTERM".into())
    );
    let (m, bin) = manifest(tmp.path());
    assert_eq!(m.header.reason.as_deref(), Some("interrupted by SIGTERM"));
    assert_eq!(m.header.unfinished_tasks, Some(vec![]), "written, empty");
    assert!(m.tensors.is_empty() && bin.is_empty());
}
