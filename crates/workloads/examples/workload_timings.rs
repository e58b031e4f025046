//! Runs every bundled workload case once and prints its wall time, task
//! and dependency-edge counts and golden result (use `--release`).
//!
//! ```text
//! cargo run --release -p simpler-workloads --example workload_timings [workload] [case]
//! ```

use std::time::Instant;

use simpler_runtime::{Runtime, RuntimeConfig};
use simpler_workloads::{all, flood};

fn main() {
    let want: Vec<String> = std::env::args().skip(1).collect();
    for w in all() {
        if want.first().is_some_and(|n| n != w.name()) {
            continue;
        }
        for c in w.cases() {
            if want.get(1).is_some_and(|n| n != c.name) {
                continue;
            }
            let rt = Runtime::new(RuntimeConfig::default(), w.kernels()).expect("runtime");
            let t0 = Instant::now();
            match w.run(c.name, 0, &rt) {
                Ok(o) => println!(
                    "{:16} {:11} total {:8.3} s  run {:8.3} s  tasks {:7}  edges {:7}  dispatches {:7}  golden {} (max abs err {:.2e})",
                    w.name(),
                    c.name,
                    t0.elapsed().as_secs_f64(),
                    o.report.wall.as_secs_f64(),
                    o.report.tasks,
                    o.report.edges,
                    o.report.dispatches,
                    if o.golden.passed { "pass" } else { "FAIL" },
                    o.golden.max_abs_err
                ),
                Err(e) => println!("{:16} {:11} ERROR {e}", w.name(), c.name),
            }
        }
    }
    if want.is_empty() || want[0] == "flood" {
        let n = 200_000;
        let d = flood::flood_kernel_loop(n).expect("kernel loop");
        println!(
            "flood kernel loop: {n} calls in {:.3} s ({:.3} us/call)",
            d.as_secs_f64(),
            d.as_secs_f64() * 1e6 / n as f64
        );
    }
}
