//! `simpler bench` (placeholder until the flood workload lands).
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::BenchArgs;

/// Run a benchmark.
pub fn bench(_a: &BenchArgs) -> Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
