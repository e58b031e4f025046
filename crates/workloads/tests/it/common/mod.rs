//! Shared test helpers (included with `mod common;`).
#![allow(dead_code)]

use simpler_runtime::{KernelDef, Runtime, RuntimeConfig};

/// A runtime with `clusters` clusters, `sched` scheduler threads and a GM
/// of `gm_mib` MiB.
pub fn runtime(kernels: Vec<KernelDef>, clusters: u32, sched: u32, gm_mib: u64) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters,
            sched_threads: sched,
            gm_bytes: gm_mib << 20,
            ..Default::default()
        },
        kernels,
    )
    .expect("runtime")
}
