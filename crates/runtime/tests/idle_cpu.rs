//! An idle chip uses no CPU. In its own test binary: it measures the CPU
//! time of the whole process, which other tests running alongside would add to.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs};

static OPEN: AtomicBool = AtomicBool::new(false);

/// Blocks (sleeping, not spinning) until the test opens the gate.
fn gated(_core: &mut Core, args: &Args) -> KResult<()> {
    args.tensor(0)?;
    while !OPEN.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// CPU time (user + system) this process has used, from /proc/self/stat.
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ is 100 on Linux
}

#[test]
fn an_idle_chip_uses_no_cpu() {
    // 24 clusters, 16 workers (more than the CPUs), idle while the
    // orchestrator sleeps, then with one task's kernel holding a worker:
    // the other workers sleep, nothing may spin.
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 24,
            sched_threads: 3,
            workers: 16,
            gm_bytes: 16 << 20,
            ..Default::default()
        },
        vec![KernelDef::new(0, "gated", CoreType::Aiv, gated)],
    )
    .unwrap();
    let x = rt.alloc_tensor(&[4], DType::Float32).unwrap();
    let mut used = (0.0, 0.0);
    rt.run(&OrchArgs::new().tensor(x), |o, a| {
        std::thread::sleep(Duration::from_millis(50)); // every thread reaches its wait
        let before = process_cpu_seconds();
        std::thread::sleep(Duration::from_millis(500));
        used.0 = process_cpu_seconds() - before;
        o.submit(Kernels::Aiv(0), TaskArgs::new().input(&a.tensor_at(0)?))?;
        std::thread::sleep(Duration::from_millis(50));
        let before = process_cpu_seconds();
        std::thread::sleep(Duration::from_millis(500));
        used.1 = process_cpu_seconds() - before;
        OPEN.store(true, Ordering::Release);
        Ok(())
    })
    .unwrap();
    assert!(
        used.0 < 0.1,
        "idle chip used {:.3} s of CPU in 0.5 s",
        used.0
    );
    assert!(
        used.1 < 0.1,
        "chip waiting on one task used {:.3} s of CPU in 0.5 s",
        used.1
    );
}
