//! Your own kernels with every diagnostic: a complete crate that uses
//! simpler-rs as a library.
//!
//! - [`kernels`]: an AIC matmul and an AIV `axpy + relu` that runs as SPMD
//!   blocks, each block on its own rows;
//! - [`orchestration`]: the task graph that chains them inside a scope;
//! - [`workload`]: [`DenseRelu`], its seeded cases and its f64 golden.
//!
//! `src/main.rs` hands [`DenseRelu`] to `simpler::cli::main`, which makes
//! the `my-kernels` binary the whole `simpler` command line for it:
//!
//! ```text
//! cargo run --release -p my-kernels -- run dense_relu --dump-all --output run_a
//! cargo run --release -p my-kernels -- insight-trace dense_relu --dump-dir run_a --all
//! ```
//!
//! `docs/writing-a-kernel.md` walks through this crate.
#![deny(missing_docs)]

pub mod kernels;
pub mod orchestration;
pub mod workload;

pub use workload::DenseRelu;
