//! `simpler`: the command line over the bundled workloads. A crate with
//! its own kernels has the same `main`, with its workloads in the list
//! (see `examples/my_kernels`).

fn main() -> std::process::ExitCode {
    simpler::cli::main(Vec::new())
}
