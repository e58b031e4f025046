//! `simpler list`: workloads, cases, kernels.

use std::process::ExitCode;

use anyhow::Result;

/// Print every workload with its cases and kernels.
pub fn list() -> Result<ExitCode> {
    for w in simpler_workloads::all() {
        println!("{}  — {}", w.name(), w.about());
        let cases = w.cases();
        for (i, c) in cases.iter().enumerate() {
            let default = if i == 0 { " (default)" } else { "" };
            println!("  case {}{default}: {}", c.name, c.about);
        }
        for k in w.kernels() {
            println!(
                "  kernel func_id {} {} [{}]",
                k.func_id, k.name, k.core_type
            );
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
