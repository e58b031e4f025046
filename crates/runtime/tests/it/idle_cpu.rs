//! An idle chip uses no CPU. The measurement reads the CPU time of the
//! whole process, which other tests running alongside would add to, so it
//! runs in a process of its own: the test re-executes this test binary with
//! only the measuring test selected and [`CHILD`] set; without [`CHILD`]
//! that test does nothing.

use std::{
    process::Command,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs};

/// Set in the child process: the measuring test does its work.
const CHILD: &str = "SIMPLER_IDLE_CPU_CHILD";

/// The measuring test's full name, to select it alone in the child.
const MEASURED: &str = "idle_cpu::measured_in_a_process_of_its_own";

/// What the child prints once its measurement passed.
const DONE: &str = "idle chip measured:";

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
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args(["--exact", MEASURED, "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .output()
        .expect("re-run the test binary");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "the measurement failed:\n{stdout}\n{stderr}"
    );
    // A filter that matched nothing would pass too: the child must have
    // run the measurement.
    assert!(
        stdout.contains(DONE) && stdout.contains("1 passed"),
        "the child did not run {MEASURED}:\n{stdout}\n{stderr}"
    );
}

/// The measurement, in the child process [`an_idle_chip_uses_no_cpu`]
/// starts; a no-op anywhere else.
#[test]
fn measured_in_a_process_of_its_own() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
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
    println!(
        "{DONE} {:.3} s idle, {:.3} s waiting on one task",
        used.0, used.1
    );
}
