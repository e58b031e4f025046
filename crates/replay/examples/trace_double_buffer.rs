//! Record the double-buffered test kernel (`y = exp(x) + x` over 4 tiles of
//! 32×64 f32, TLOAD of tile k+1 overlapping the vector work on tile k), export
//! its trace tree, print the summary, then time the simulator.
//!
//! ```text
//! cargo run --release -p simpler-replay --example trace_double_buffer -- OUT_DIR
//! ```

#[path = "../tests/it/common/mod.rs"]
mod common;

use simpler_core::topology::Subtask;
use simpler_replay::{bench::simulator_throughput, export_trace, TimingParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: trace_double_buffer OUT_DIR")?;
    let gm = common::gm();
    let (xs, ys) = common::stream_io(&gm, 4);
    let core = common::record_aiv(&gm, Subtask::Aiv0, |c| common::double_buffered(c, &xs, &ys));
    let params = TimingParams::a2a3();
    let summary = export_trace(out.as_ref(), "double_buffer", &params, &[core])?;
    print!("{}", summary.render_text());

    let n = 2_000_000;
    let t = simulator_throughput(&params, n);
    println!(
        "throughput: {} instructions in {:.3} s = {:.2} M instructions/s",
        t.instructions,
        t.seconds,
        t.instr_per_s / 1e6
    );
    Ok(())
}
