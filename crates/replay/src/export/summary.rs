//! What an export produced, and the text the CLI prints (DESIGN §8 step 7).

use std::{fmt::Write as _, path::PathBuf};

use simpler_format::words::count;
use simpler_isa::Pipe;

use crate::timing::PipeCycles;

/// One sub-core's share of an export.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSummary {
    /// Trace name (`core0.veccore0`), also its folder name.
    pub name: String,
    /// `simulator/<name>/`.
    pub dir: PathBuf,
    /// Instructions simulated.
    pub instructions: usize,
    /// Busy cycles per pipe.
    pub busy: PipeCycles,
    /// End of this sub-core's last instruction.
    pub total_cycles: u64,
}

/// The busiest pipe of any sub-core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bottleneck {
    /// Sub-core name.
    pub core: String,
    /// The pipe.
    pub pipe: Pipe,
    /// Its busy cycles.
    pub busy_cycles: u64,
}

/// Summary of an exported trace tree: where it is and what the pipes did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSummary {
    /// `<out>/simulator/`, the directory MindStudio Insight opens.
    pub simulator_dir: PathBuf,
    /// `<out>/<label>_trace_perfetto.json`.
    pub perfetto_path: PathBuf,
    /// Arch profile of the timing parameters.
    pub arch: &'static str,
    /// Clock used for µs.
    pub clock_mhz: u32,
    /// Per sub-core, in input order.
    pub cores: Vec<CoreSummary>,
    /// Busy cycles per pipe summed over sub-cores.
    pub busy: PipeCycles,
    /// End of the last instruction of any sub-core (the common time base).
    pub total_cycles: u64,
    /// Instructions over all sub-cores.
    pub instructions: usize,
    /// Busiest pipe of any single sub-core; `None` when nothing ran.
    pub bottleneck: Option<Bottleneck>,
}

impl ExportSummary {
    /// Total time in µs at the profile's clock.
    pub fn total_us(&self) -> f64 {
        self.total_cycles as f64 / f64::from(self.clock_mhz.max(1))
    }

    fn percent(&self, cycles: u64) -> f64 {
        if self.total_cycles == 0 {
            0.0
        } else {
            100.0 * cycles as f64 / self.total_cycles as f64
        }
    }

    /// The report the CLI prints: the `simulator/` path, busy cycles per
    /// pipe per sub-core (with % of the total) and the bottleneck pipe.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "simulator: {}", self.simulator_dir.display());
        let _ = writeln!(s, "perfetto:  {}", self.perfetto_path.display());
        let _ = writeln!(
            s,
            "total: {} cycles = {:.3} us @ {} MHz ({}), {} instructions on {}",
            self.total_cycles,
            self.total_us(),
            self.clock_mhz,
            self.arch,
            self.instructions,
            count(self.cores.len() as u64, "sub-core", "sub-cores")
        );
        for c in &self.cores {
            let _ = writeln!(
                s,
                "{}: {} instructions, {} cycles",
                c.name, c.instructions, c.total_cycles
            );
            self.pipe_lines(&mut s, &c.busy);
        }
        if self.cores.len() > 1 {
            let _ = writeln!(s, "all sub-cores (busy cycles summed):");
            self.pipe_lines(&mut s, &self.busy);
        }
        match &self.bottleneck {
            Some(b) => {
                let _ = writeln!(
                    s,
                    "bottleneck: {} on {} ({} cycles, {:.1}% of total)",
                    b.pipe.name(),
                    b.core,
                    b.busy_cycles,
                    self.percent(b.busy_cycles)
                );
            }
            None => s.push_str("bottleneck: none (no instructions)\n"),
        }
        s
    }

    fn pipe_lines(&self, s: &mut String, busy: &PipeCycles) {
        for (pipe, cycles) in busy.iter().filter(|&(_, c)| c > 0) {
            let _ = writeln!(
                s,
                "  {:<7} {:>12} cycles  {:>5.1}%",
                pipe.name(),
                cycles,
                self.percent(cycles)
            );
        }
    }
}
