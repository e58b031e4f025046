//! What submitting costs the orchestrator, without kernel time:
//! `simpler bench submits` runs CaseLarge's orchestration on kernels that
//! do nothing; `simpler bench submit-instructions` runs that under
//! callgrind and counts instructions, a figure that does not move with
//! the machine's load.

use std::{path::Path, process::Command};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{KernelDef, Runtime};
use simpler_workloads::paged_attention::{self, Inputs, PaCase};

use super::{chip_config, median, Outcome};
use crate::cli::BenchArgs;

/// Symbols whose instructions callgrind counts: the whole orchestration
/// function (what the orchestrator thread does per task), and `submit`
/// alone. Callgrind matches demangled names; `*` skips the generic
/// parameters and hashes.
const TOGGLES: [(&str, &str); 2] = [
    ("orch", "simpler_workloads::paged_attention::orchestrate*"),
    (
        "submit",
        "simpler_runtime::orchestrator::Orchestrator::submit*",
    ),
];

/// CaseLarge's graph with `batches` batches instead of 256 (256 tasks per
/// batch: 64 key blocks of QK, SF, PV and an UP chain).
fn large_shape(batches: u32) -> Result<PaCase> {
    let mut c = PaCase::by_name("CaseLarge").context("CaseLarge is a bundled case")?;
    let lens = c.context_lens[0];
    c.batch = batches;
    c.context_lens = vec![lens; batches as usize];
    Ok(c)
}

fn noop(_core: &mut Core, _args: &Args) -> KResult<()> {
    Ok(())
}

/// paged_attention's func ids and core types, with kernels that do nothing.
fn noop_kernels() -> Vec<KernelDef> {
    paged_attention::kernels()
        .into_iter()
        .map(|k| KernelDef::new(k.func_id, k.name, k.core_type, noop))
        .collect()
}

/// CaseLarge's orchestration over `--batches` batches on no-op kernels,
/// `--reps` times on fresh runtimes.
pub(super) fn submits(a: &BenchArgs) -> Result<Outcome> {
    let cfg = a.chip.config()?;
    let case = large_shape(a.batches())?;
    let inputs = Inputs::generate(&case, 0);
    let mut runs = Vec::new();
    for rep in 0..a.reps() {
        crate::progress::status(&format!("rep {} of {}", rep + 1, a.reps()));
        let rt = Runtime::new(cfg.clone(), noop_kernels())?;
        let (args, _out) = inputs.upload(&case, &rt)?;
        runs.push(rt.run(&args, paged_attention::orchestrate)?);
    }
    let tasks = case.kernel_tasks() as f64;
    let edges = runs.iter().map(|r| r.edges).max().unwrap_or(0) as f64;
    let mut config = chip_config(a)?;
    config.insert("batches".into(), json!(a.batches()));
    config.insert("kernels".into(), json!("no-op"));
    Ok(Outcome {
        name: "submits",
        results: vec![
            (
                "submit_us",
                median(runs.iter().map(|r| r.orchestration.as_secs_f64())) / tasks * 1e6,
                "µs orchestrator time per submit (median)",
            ),
            (
                "edges_per_task",
                edges / tasks,
                "edges/task (most of the reps)",
            ),
            (
                "graph_run_s",
                median(runs.iter().map(|r| r.wall.as_secs_f64())),
                "s (median)",
            ),
            ("tasks", tasks, "tasks per run"),
            ("edges", edges, "dependency edges (most of the reps)"),
        ],
        config,
        target: "CaseLarge's graph on no-op kernels".into(),
    })
}

/// `submits` under `valgrind --tool=callgrind`, once per symbol of
/// [`TOGGLES`]: instructions per task in the orchestration function and
/// per `submit` call. Skipped (with a message, exit 0) without valgrind.
pub(super) fn submit_instructions(a: &BenchArgs) -> Result<Outcome> {
    let mut config = chip_config(a)?;
    config.remove("reps"); // each callgrind run is one rep
    config.insert("batches".into(), json!(a.batches()));
    if Command::new("valgrind").arg("--version").output().is_err() {
        let why = "valgrind not found on PATH (install valgrind to count instructions)";
        eprintln!("bench submit-instructions skipped: {why}");
        config.insert("skipped".into(), json!(why));
        return Ok(Outcome {
            name: "submit-instructions",
            results: Vec::new(),
            config,
            target: format!("skipped: {why}"),
        });
    }
    let tmp = tempfile::tempdir().context("temporary folder for callgrind's output")?;
    let _scratch = simpler_format::durable::scratch(tmp.path());
    let mut results = Vec::new();
    let mut tasks = 0.0;
    for (key, symbol) in TOGGLES {
        let (instructions, run) = callgrind(a, symbol, &tmp.path().join(key))?;
        tasks = run["results"]["tasks"]
            .as_f64()
            .context("no task count from the harness")?;
        let per = instructions as f64 / tasks;
        results.push(if key == "orch" {
            (
                "orch_instr_per_task",
                per,
                "instructions/task in the orchestration function",
            )
        } else {
            ("submit_instr", per, "instructions per submit call")
        });
        if key == "orch" {
            let e = run["results"]["edges_per_task"]
                .as_f64()
                .unwrap_or(f64::NAN);
            results.push(("edges_per_task", e, "edges/task under callgrind"));
        }
    }
    results.push(("tasks", tasks, "tasks per run"));
    config.insert("tool".into(), json!("valgrind --tool=callgrind"));
    Ok(Outcome {
        name: "submit-instructions",
        results,
        config,
        target: "instruction counts: compare before/after a change".into(),
    })
}

/// Run `simpler bench submits --reps 1 --json` under callgrind, counting
/// only inside `symbol`. Returns the instructions and the harness's JSON.
fn callgrind(a: &BenchArgs, symbol: &str, out: &Path) -> Result<(u64, Value)> {
    let exe = std::env::current_exe().context("path of the simpler binary")?;
    let o = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--collect-atstart=no")
        .arg(format!("--toggle-collect={symbol}"))
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .args(["bench", "submits", "--json", "--reps", "1"])
        .args(["--batches", &a.batches().to_string()])
        .args([
            "--arch",
            &a.chip.arch,
            "--clusters",
            &a.chip.clusters.to_string(),
        ])
        .args(["--sched-threads", &a.chip.sched_threads.to_string()])
        .args(a.chip.workers.map(|w| format!("--workers={w}")))
        .args(["--gm-mib", &a.chip.gm_mib.to_string()])
        .output()
        .context("running valgrind")?;
    if !o.status.success() {
        bail!(
            "valgrind {} exited with {}: {}",
            exe.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let run: Value = serde_json::from_slice(&o.stdout).with_context(|| {
        format!(
            "the harness under valgrind printed no JSON: {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })?;
    let text = std::fs::read_to_string(out)
        .with_context(|| format!("reading callgrind output {}", out.display()))?;
    let total = totals(&text)
        .with_context(|| format!("no totals line in callgrind output {}", out.display()))?;
    if total == 0 {
        bail!("callgrind counted no instructions in {symbol}: the symbol was not found");
    }
    Ok((total, run))
}

/// The instruction total of a callgrind output file (`totals:` or, in
/// older versions, `summary:`; the first event is Ir).
fn totals(text: &str) -> Option<u64> {
    text.lines()
        .rev()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::totals;

    #[test]
    fn totals_reads_the_first_event() {
        assert_eq!(
            totals("events: Ir\nfl=x\n0 3\ntotals: 1234 5\n"),
            Some(1234)
        );
        assert_eq!(totals("events: Ir\nsummary: 77\n"), Some(77));
        assert_eq!(totals("events: Ir\n"), None);
    }
}
