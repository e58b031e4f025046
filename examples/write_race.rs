//! The race check: SPMD blocks that all store the whole output.
//!
//! `cargo run --release --example write_race`
//!
//! The kernel forgets to give each block its own rows, so all four blocks
//! store the whole `[8, 64]` output. The result is even right (every block
//! stores the same values) — but which block's bytes land last depends on
//! timing, and the day the blocks compute different values the run will
//! fail now and then. The race check reports every pair of blocks that
//! wrote a common byte, deterministically: blocks of one task may always
//! run at the same time, whether or not they did in this run.

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, RaceCheck, Runtime, RuntimeConfig, RuntimeError, TaskArgs,
};

/// Func id of [`fill_all_rows`].
const FILL: u32 = 3;

/// Stores 1.0 into every row of slot 0 — in every block (the bug: it
/// should store rows `block_idx * 2 .. block_idx * 2 + 2` only).
fn fill_all_rows(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(0)?;
    let (rows, cols) = (out.shape()[0], out.shape()[1]);
    let t = core.alloc_tile(BufKind::Ub, rows, cols, DType::Float32)?;
    core.tfill(t, 1.0)?;
    core.tstore(&out, t)
}

fn run(mode: RaceCheck) -> Result<(), RuntimeError> {
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 2,
            gm_bytes: 16 << 20,
            racecheck: mode,
            ..Default::default()
        },
        vec![KernelDef::new(
            FILL,
            "fill_all_rows",
            CoreType::Aiv,
            fill_all_rows,
        )],
    )?;
    let out = rt.alloc_tensor(&[8, 64], DType::Float32)?;
    let report = rt.run(&OrchArgs::new().tensor(out), |o, a| {
        let args = TaskArgs::new()
            .output_existing(&a.tensor_at(0)?)
            .block_num(4);
        o.submit(Kernels::Aiv(FILL), args)?;
        Ok(())
    })?;
    let ok = rt.download_pod::<f32>(&out)?.iter().all(|&v| v == 1.0);
    println!(
        "--racecheck {}: output correct: {ok}; {} write races",
        mode.name(),
        report.write_races
    );
    Ok(())
}

fn main() {
    for mode in RaceCheck::ALL {
        if let Err(e) = run(mode) {
            println!("--racecheck {}: the run failed: {e}", mode.name());
        }
    }
}
