//! flood: independent tiny tasks, the golden, and the kernel-loop baseline.

use crate::common;

use simpler_workloads::{
    flood::{self, flood_kernel_loop, run_n, Flood, Inputs},
    Workload,
};

#[test]
fn small_case_passes() {
    let rt = common::runtime(flood::kernels(), 8, 3, 64);
    for seed in [0, 1] {
        let o = Flood.run("Small", seed, &rt).expect("run");
        assert!(o.golden.passed, "{:?}", o.golden);
        assert_eq!(o.report.tasks, 1000);
        assert_eq!(o.report.dispatches, 1000);
    }
}

#[test]
fn bench_case_passes() {
    let rt = common::runtime(flood::kernels(), 8, 3, 256);
    let o = Flood.run("Bench", 0, &rt).expect("run");
    assert!(o.golden.passed, "{:?}", o.golden);
    assert_eq!(o.report.tasks, 200_000);
}

#[test]
fn one_cluster_one_scheduler() {
    let rt = common::runtime(flood::kernels(), 1, 1, 64);
    let r = run_n(300, 5, &rt).expect("run");
    assert!(r.golden.passed, "{:?}", r.golden);
}

#[test]
fn inputs_are_reproducible_and_perturbation_fails() {
    let a = Inputs::generate(100, 1);
    assert_eq!(a, Inputs::generate(100, 1));
    assert_ne!(a, Inputs::generate(100, 2));
    let rt = common::runtime(flood::kernels(), 2, 1, 64);
    let r = run_n(100, 1, &rt).expect("run");
    assert!(a.check(&r.y).passed);
    // Y[i, j] == X[i, j] + i, bit for bit in f32.
    for (k, (&y, &x)) in r.y.iter().zip(&a.x).enumerate() {
        assert_eq!(y, x + (k / 16) as f32);
    }
    let mut bad = r.y.clone();
    bad[16 * 99 + 15] += 1.0;
    assert!(!a.check(&bad).passed);
}

/// The baseline loop runs the real kernel and checks every row it wrote
/// (`Y[p, j] = j + p`, an error otherwise), with no row written (0), one,
/// and more calls than argument arrays (each array reused). Its time is
/// the bench's business, not a test's.
#[test]
fn kernel_loop_baseline_runs() {
    for n in [0, 1, 5000] {
        flood_kernel_loop(n).unwrap_or_else(|e| panic!("{n} calls: {e}"));
    }
}

/// A window of 4 tasks: every task slot is reused ~250 times, and a
/// completed task nothing else holds gives its allocation to the next
/// (`recycle` in the orchestrator). Every row must still be its own task's
/// result, bit for bit: Y[i, j] == X[i, j] + i.
#[test]
fn a_tiny_task_window_reuses_slots_and_every_row_is_its_tasks() {
    let rt = simpler_runtime::Runtime::new(
        simpler_runtime::RuntimeConfig {
            task_window: 4,
            gm_bytes: 64 << 20,
            ..Default::default()
        },
        flood::kernels(),
    )
    .expect("runtime");
    let n = 1000;
    let r = run_n(n, 3, &rt).expect("run");
    let x = Inputs::generate(n, 3).x;
    for (k, (&y, &x)) in r.y.iter().zip(&x).enumerate() {
        assert_eq!(y, x + (k / 16) as f32, "row {}", k / 16);
    }
}
