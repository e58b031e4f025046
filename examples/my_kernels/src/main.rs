//! `my-kernels`: every `simpler` command — run with dumps, timelines and
//! predictions, list, dump view/diff, insight-trace, swimlane, bench —
//! for this crate's workload and the bundled ones.

use std::process::ExitCode;

fn main() -> ExitCode {
    simpler::cli::main(vec![Box::new(my_kernels::DenseRelu)])
}
