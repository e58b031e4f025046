//! `simpler list`: workloads, cases, kernels.

use std::process::ExitCode;

use anyhow::Result;

use crate::registry::Workloads;

/// Print every workload with its cases and kernels, the caller's first.
pub(crate) fn list(ws: &Workloads) -> Result<ExitCode> {
    for w in ws.all() {
        let yours = if ws.is_user(w.name()) { " (yours)" } else { "" };
        println!("{}{yours}  — {}", w.name(), w.about());
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
