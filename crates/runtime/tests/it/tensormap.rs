//! The TensorMap through the public API: overlap of raw descriptors, and
//! the frontier as `submit` reports it (issue 11).

use std::{
    collections::BTreeSet,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use proptest::prelude::*;
use simpler_core::{topology::CoreType, ChipTensor, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    tensormap::{self, Access, TensorMap},
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs, TaskId,
};

use crate::runtime::{runtime, GATES};

/// A raw 2-D view: any start, shape and strides (`Tensor::from_desc`
/// accepts such descriptors).
fn raw(start: u64, shape: [u32; 2], strides: [u32; 2]) -> ChipTensor {
    let mut v = ChipTensor::contiguous(0x1000, &[4, 10], DType::Float32);
    v.start_offset = start;
    v.shapes[..2].copy_from_slice(&shape);
    v.strides[..2].copy_from_slice(&strides);
    v
}

#[test]
fn issue_11_a_box_that_runs_past_its_row_still_overlaps() {
    // Elements 7..12 and 17..22 vs 10..13: they share 10 and 11. The box
    // test read the first as columns 7..12 of a 10-wide row and missed it.
    let a = raw(7, [2, 5], [10, 1]);
    let b = raw(10, [1, 3], [10, 1]);
    assert!(tensormap::overlaps(&a, &b));
    assert!(tensormap::overlaps(&b, &a));
    assert!(!tensormap::covers(&a, &b));
    // Within its row, the box test stays exact.
    assert!(!tensormap::overlaps(
        &raw(7, [2, 3], [10, 1]),
        &raw(10, [1, 3], [10, 1])
    ));
}

#[test]
fn issue_11_an_inout_chain_waits_for_its_last_link_only() {
    // Gate 6 stays closed until every task is submitted, so none finishes
    // early and each link's edges are exact.
    let rt = runtime(2, 2);
    let x = rt.alloc_tensor(&[4, 8], DType::Float32).unwrap();
    let mut got: Vec<(TaskId, Vec<TaskId>)> = Vec::new();
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            let top = x.view(&[0, 0], &[2, 8])?;
            for i in 0..40 {
                let v = if i % 4 == 3 { &top } else { &x };
                let s = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(v).scalar_u64(6))?;
                got.push((s.task_id, s.deps));
            }
            GATES[6].store(true, Ordering::Release);
            Ok(())
        })
        .unwrap();
    // Each link waits for the one before; a whole-buffer link after a
    // top-rows link also waits for the whole-buffer link before that,
    // which the partial writer did not cover (kept: conservative).
    for (i, (_, deps)) in got.iter().enumerate() {
        let want: Vec<TaskId> = match i {
            0 => vec![],
            i if i % 4 == 0 => vec![got[i - 2].0, got[i - 1].0],
            i => vec![got[i - 1].0],
        };
        assert_eq!(deps, &want, "task {i}");
    }
    assert_eq!(report.edges, 39 + 9);
    // Every task ran once, in order: rows 0..2 were incremented 40 times,
    // rows 2..4 by the 30 whole-buffer tasks.
    let v: Vec<f32> = rt.download_pod(&x).unwrap();
    assert!(v[..16].iter().all(|&e| e == 40.0), "{v:?}");
    assert!(v[16..].iter().all(|&e| e == 30.0), "{v:?}");
}

/// Holds every task of [`submit_reports_the_general_paths_edges`] until
/// the orchestration has submitted them all.
static HOLD: AtomicBool = AtomicBool::new(false);

fn held(_core: &mut Core, _args: &Args) -> KResult<()> {
    while !HOLD.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}

/// How a task touches a view (`None`: `no_dep`).
fn role_access(role: u8) -> Option<Access> {
    let (read, write) = match role {
        0 => (true, false),
        1 => (true, true),
        2 => (false, true),
        _ => return None,
    };
    Some(Access { read, write })
}

/// One tensor argument: buffer, box (row, column, height, width), role.
fn arg() -> impl Strategy<Value = (usize, [u32; 4], u8)> {
    (0usize..2, [0u32..6, 0u32..6, 1u32..4, 1u32..4], 0u8..4)
        .prop_map(|(b, [r, c, h, w], role)| (b, [r, c, h.min(6 - r), w.min(6 - c)], role))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// `submit`'s edges, with every task still running, are those of the
    /// general path — every edge of a task taken before any of its
    /// entries is made — run on a TensorMap of our own. `submit` takes
    /// each tensor's edges and makes its entry in one pass, tasks with
    /// several tensors in one buffer included.
    #[test]
    fn submit_reports_the_general_paths_edges(
        tasks in prop::collection::vec(prop::collection::vec(arg(), 1..4), 1..30)
    ) {
        HOLD.store(false, Ordering::Release);
        let rt = Runtime::new(
            RuntimeConfig {
                clusters: 2,
                sched_threads: 1,
                workers: 2,
                gm_bytes: 1 << 20,
                timeout: Some(Duration::from_secs(60)),
                ..Default::default()
            },
            vec![KernelDef::new(0, "held", CoreType::Aiv, held)],
        )
        .unwrap();
        let bufs = [
            rt.alloc_tensor(&[6, 6], DType::Float32).unwrap(),
            rt.alloc_tensor(&[6, 6], DType::Float32).unwrap(),
        ];
        let mut got: Vec<(TaskId, Vec<TaskId>)> = Vec::new();
        rt.run(&OrchArgs::new().tensor(bufs[0]).tensor(bufs[1]), |o, _| {
            let mut submit_all = || {
                for task in &tasks {
                    let mut args = TaskArgs::new();
                    for &(b, [r, c, h, w], role) in task {
                        let v = bufs[b].view(&[r, c], &[h, w])?;
                        args = match role {
                            0 => args.input(&v),
                            1 => args.inout(&v),
                            2 => args.output_existing(&v),
                            _ => args.no_dep(&v),
                        };
                    }
                    let s = o.submit(Kernels::Aiv(0), args)?;
                    got.push((s.task_id, s.deps));
                }
                Ok(())
            };
            let r = submit_all();
            HOLD.store(true, Ordering::Release);
            r
        })
        .unwrap();
        let mut model: TensorMap<usize> = TensorMap::new();
        for (j, task) in tasks.iter().enumerate() {
            let tracked: Vec<(ChipTensor, Access)> = task
                .iter()
                .filter_map(|&(b, [r, c, h, w], role)| {
                    let v = *bufs[b].view(&[r, c], &[h, w]).unwrap().desc();
                    Some((v, role_access(role)?))
                })
                .collect();
            let mut want = BTreeSet::new();
            for (v, a) in &tracked {
                model.deps(v, *a, |&i| {
                    want.insert(got[i].0);
                });
            }
            for (v, a) in &tracked {
                model.register(v, *a, j, |_| true);
            }
            let want: Vec<TaskId> = want.into_iter().collect();
            prop_assert_eq!(&got[j].1, &want, "task {} {:?}", j, task);
        }
    }
}
