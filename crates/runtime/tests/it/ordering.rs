//! Conflicting accesses run in submission order, end to end: random reads
//! and writes of one buffer through a task window of four slots, so slots
//! are reused and the TensorMap meets entries of tasks whose slot another
//! task took. Each kernel stamps when it started and when it ended; every
//! pair of tasks whose views share an element, one of them writing, must
//! not overlap in time, the earlier submitted first. The model is a brute
//! force over element ranges, not the TensorMap.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use proptest::prelude::*;
use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs};

/// One clock for every kernel's stamps.
static CLOCK: AtomicU64 = AtomicU64::new(0);
/// `(start, end)` stamps by task index (its scalar).
static STAMPS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// Stamps its start, works for a while (so that tasks free to overlap
/// do), stamps its end.
fn stamp(_core: &mut Core, args: &Args) -> KResult<()> {
    let i = args.scalar_u64(1)? as usize;
    let start = CLOCK.fetch_add(1, Ordering::SeqCst);
    let until = Instant::now() + Duration::from_micros(30);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    let end = CLOCK.fetch_add(1, Ordering::SeqCst);
    STAMPS.lock().unwrap()[i] = (start, end);
    Ok(())
}

/// How a task touches its view.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    Input,
    Inout,
    OutputExisting,
}

impl Role {
    fn writes(self) -> bool {
        self != Role::Input
    }
}

/// One task: elements `start .. start + len` of the 32-element buffer.
fn access() -> impl Strategy<Value = (u32, u32, Role)> {
    let role = prop_oneof![
        Just(Role::Input),
        Just(Role::Inout),
        Just(Role::OutputExisting)
    ];
    (0u32..32, 1u32..9, role).prop_map(|(start, len, role)| (start.min(32 - len), len, role))
}

fn runtime() -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters: 2,
            sched_threads: 1,
            workers: 2,
            task_window: 4,
            gm_bytes: 1 << 20,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        vec![KernelDef::new(0, "stamp", CoreType::Aiv, stamp)],
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn conflicting_accesses_run_in_submission_order(
        tasks in prop::collection::vec(access(), 2..40)
    ) {
        let rt = runtime();
        *STAMPS.lock().unwrap() = vec![(0, 0); tasks.len()];
        let buf = rt.alloc_tensor(&[32], DType::Float32).unwrap();
        rt.run(&OrchArgs::new().tensor(buf), |o, a| {
            let x = a.tensor_at(0)?;
            for (i, &(start, len, role)) in tasks.iter().enumerate() {
                let v = x.view(&[start], &[len])?;
                let args = match role {
                    Role::Input => TaskArgs::new().input(&v),
                    Role::Inout => TaskArgs::new().inout(&v),
                    Role::OutputExisting => TaskArgs::new().output_existing(&v),
                };
                o.submit(Kernels::Aiv(0), args.scalar_u64(i as u64))?;
            }
            Ok(())
        })
        .unwrap();
        let stamps = STAMPS.lock().unwrap().clone();
        for (j, &(sj, lj, rj)) in tasks.iter().enumerate() {
            for (i, &(si, li, ri)) in tasks[..j].iter().enumerate() {
                let share = si < sj + lj && sj < si + li;
                if share && (ri.writes() || rj.writes()) {
                    prop_assert!(
                        stamps[i].1 < stamps[j].0,
                        "task {} {:?} and task {} {:?} overlapped in time: {:?} / {:?}",
                        i, tasks[i], j, tasks[j], stamps[i], stamps[j]
                    );
                }
            }
        }
    }
}
