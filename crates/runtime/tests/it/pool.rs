//! The worker pool (DESIGN §2): kernels run on a pool of `workers`
//! threads that bind logical cores per dispatch. Whatever the worker count
//! — one, fewer than the cores, far more than the CPUs — results are the
//! same, no core runs two dispatches at once, and a MIX block holds its
//! whole cluster until its last member finished.

use std::{collections::BTreeSet, sync::Mutex, time::Duration};

use simpler_core::{
    topology::{locate, CoreType, Subtask},
    DType, TaskId,
};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, RuntimeError, SwimlaneConfig, TaskArgs,
};

/// Busy for a while (the scalar's iterations): long enough for dispatches
/// on different workers to overlap in time, so that a broken exclusion
/// would show in the timeline.
fn busy(_core: &mut Core, args: &Args) -> KResult<()> {
    spin(args.scalar_u64(0)?);
    Ok(())
}

/// [`busy`] for a task whose slot 0 is a tensor: the count is in slot 1.
fn busy_after_tensor(_core: &mut Core, args: &Args) -> KResult<()> {
    spin(args.scalar_u64(1)?);
    Ok(())
}

fn spin(n: u64) {
    let mut x = 0u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    std::hint::black_box(x);
}

/// Names of the threads that ran `affine` (per test binary; only the
/// worker-count test reads it, under its own lock).
static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static SEEN_TEST: Mutex<()> = Mutex::new(());

/// Tensor 0 (inout, f32) becomes `x * 2 + s` (scalar 0): order-sensitive,
/// so a chain that ran out of order gives other numbers.
fn affine(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let s = args.scalar_f32(1)?;
    let mut bytes = vec![0u8; t.nbytes() as usize];
    core.gm().gather(&t, &mut bytes)?;
    let mut v: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
    for x in &mut v {
        *x = *x * 2.0 + s;
    }
    if let Some(name) = std::thread::current().name() {
        SEEN.lock().unwrap().insert(name.to_string());
    }
    core.gm().scatter(&t, bytemuck::cast_slice(&v))
}

fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(0, "busy_aiv", CoreType::Aiv, busy),
        KernelDef::new(1, "busy_aic", CoreType::Aic, busy),
        KernelDef::new(2, "affine", CoreType::Aiv, affine),
        KernelDef::new(3, "busy_aiv_t", CoreType::Aiv, busy_after_tensor),
        KernelDef::new(4, "busy_aic_t", CoreType::Aic, busy_after_tensor),
    ]
}

fn runtime(clusters: u32, workers: u32, swimlane: bool) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters,
            sched_threads: 2,
            workers,
            gm_bytes: 16 << 20,
            timeout: Some(Duration::from_secs(120)),
            swimlane: swimlane.then(|| SwimlaneConfig {
                background: false,
                level: 2,
                cost: None,
            }),
            ..Default::default()
        },
        kernels(),
    )
    .unwrap()
}

#[test]
fn a_core_never_runs_two_dispatches_and_a_mix_block_holds_its_cluster() {
    let clusters = 2;
    let rt = runtime(clusters, 6, true);
    let spin = TaskArgs::new;
    rt.run(&OrchArgs::new(), |o, _| {
        for i in 0..240u64 {
            let n = 40_000 + 997 * (i % 11);
            o.submit(Kernels::Aiv(0), spin().scalar_u64(n).block_num(3))?;
            if i % 4 == 0 {
                o.submit(Kernels::Aic(1), spin().scalar_u64(n))?;
            }
            if i % 5 == 0 {
                let mix = Kernels::Mix {
                    aic: Some(1),
                    aiv0: Some(0),
                    aiv1: Some(0),
                };
                o.submit(mix, spin().scalar_u64(n).block_num(2))?;
            }
        }
        Ok(())
    })
    .unwrap();
    let log = rt.take_swimlane().unwrap();
    let d = &log.dispatches;
    assert_eq!(d.len(), 240 * 3 + 60 + 48 * 2 * 3);
    for r in d {
        let (_, sub) = locate(clusters, r.core_id).unwrap();
        assert_eq!(sub.core_type(), r.subtask.core_type(), "{r:?}");
        assert!(r.start >= 1 && r.end >= r.start, "{r:?}");
    }
    // Per core: each dispatch starts after the previous one ended, and the
    // per-core count runs 0, 1, 2, … in time order.
    for core in 0..3 * clusters {
        let mut on: Vec<_> = d.iter().filter(|r| r.core_id == core).collect();
        on.sort_by_key(|r| r.start);
        for (k, w) in on.windows(2).enumerate() {
            assert!(w[1].start >= w[0].end, "core {core} overlaps: {w:?}");
            assert_eq!((w[0].reg, w[1].reg), (k as u64, k as u64 + 1));
        }
    }
    // MIX blocks: all three members on one cluster, and nothing else on
    // that cluster from the first member's start to the last one's end.
    let mix: BTreeSet<(TaskId, u32)> = d
        .iter()
        .filter(|r| r.func_id == 1 && d.iter().any(|x| x.task_id == r.task_id && x.func_id == 0))
        .map(|r| (r.task_id, r.block))
        .collect();
    assert_eq!(mix.len(), 48 * 2);
    for (task, block) in mix {
        let members: Vec<_> = d
            .iter()
            .filter(|r| r.task_id == task && r.block == block)
            .collect();
        let subs: BTreeSet<Subtask> = members.iter().map(|r| r.subtask).collect();
        assert_eq!(subs.len(), 3, "{members:?}");
        let cl = locate(clusters, members[0].core_id).unwrap().0;
        assert!(members
            .iter()
            .all(|r| locate(clusters, r.core_id).unwrap().0 == cl));
        let from = members.iter().map(|r| r.start).min().unwrap();
        let to = members.iter().map(|r| r.end).max().unwrap();
        for other in d.iter().filter(|r| (r.task_id, r.block) != (task, block)) {
            if locate(clusters, other.core_id).unwrap().0 == cl {
                assert!(
                    other.end <= from || other.start >= to,
                    "{other:?} ran on cluster {cl} while MIX block {block} of {task} held it"
                );
            }
        }
    }
}

/// Four rows, each a chain of 12 order-sensitive updates, run at several
/// worker counts (one; fewer than the cores; far more than the CPUs).
#[test]
fn results_do_not_depend_on_the_worker_count() {
    let _g = SEEN_TEST.lock().unwrap();
    let mut want = vec![0f32; 4];
    for i in 0..48 {
        want[i % 4] = want[i % 4] * 2.0 + i as f32;
    }
    for workers in [1, 2, 5, 64] {
        SEEN.lock().unwrap().clear();
        let rt = runtime(1, workers, false);
        let x = rt.alloc_tensor(&[4, 1], DType::Float32).unwrap();
        let report = rt
            .run(&OrchArgs::new().tensor(x), |o, a| {
                let x = a.tensor_at(0)?;
                for i in 0..48u32 {
                    let row = x.view(&[i % 4, 0], &[1, 1])?;
                    o.submit(
                        Kernels::Aiv(2),
                        TaskArgs::new().inout(&row).scalar_f32(i as f32),
                    )?;
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(report.dispatches, 48);
        assert_eq!(
            rt.download_pod::<f32>(&x).unwrap(),
            want,
            "{workers} workers"
        );
        // Kernels ran on the pool's threads, and on no more than it has.
        let seen = SEEN.lock().unwrap().clone();
        let pool: BTreeSet<String> = (0..workers).map(|w| format!("worker{w}")).collect();
        assert!(!seen.is_empty() && seen.is_subset(&pool), "{seen:?}");
    }
}

#[test]
fn a_worker_count_outside_1_to_256_is_refused() {
    for workers in [0, 257] {
        let e = Runtime::new(
            RuntimeConfig {
                workers,
                gm_bytes: 1 << 20,
                ..Default::default()
            },
            vec![],
        )
        .unwrap_err();
        assert_eq!(
            e,
            RuntimeError::Config(format!("--workers {workers} is outside 1..=256"))
        );
    }
}

/// Stop 26: a worker keeps the core of a one-core block for its next
/// block of that kind. It must put it back when a MIX block waits and
/// before it idles: here two AIV blocks run on the one cluster's two AIV
/// cores, and only then is the MIX block that reads their output ready —
/// it needs the whole cluster, so a kept core never given back stalls the
/// run until its timeout (checked: without both give-backs in
/// `Worker::next_job` one worker times out).
#[test]
fn a_kept_core_goes_back_before_its_worker_idles() {
    for workers in [1, 2, 3] {
        let rt = Runtime::new(
            RuntimeConfig {
                clusters: 1,
                workers,
                gm_bytes: 1 << 20,
                timeout: Some(Duration::from_secs(30)),
                ..Default::default()
            },
            kernels(),
        )
        .unwrap();
        let x = rt.alloc_tensor(&[2, 16], DType::Float32).unwrap();
        let report = rt
            .run(&OrchArgs::new().tensor(x), |o, a| {
                let x = a.tensor_at(0)?;
                for rep in 0..4u64 {
                    for r in 0..2 {
                        let half = x.view(&[r, 0], &[1, 16])?;
                        let args = TaskArgs::new().output_existing(&half);
                        o.submit(Kernels::Aiv(3), args.scalar_u64(2_000_000 + rep))?;
                    }
                    let mix = Kernels::Mix {
                        aic: Some(4),
                        aiv0: Some(3),
                        aiv1: Some(3),
                    };
                    o.submit(mix, TaskArgs::new().input(&x).scalar_u64(1_000))?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{workers} workers: {e}"));
        assert_eq!(report.dispatches, 4 * (2 + 3), "{workers} workers");
    }
}
