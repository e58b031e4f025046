//! A run that fails midway (DESIGN §5 "abnormal end", §11; issue 6 item 3).
//!
//! paged_attention CaseSmall2 runs with the tensor dump on and its PV kernel
//! (func 2) replaced by a wrapper that returns an error in one task: PV of
//! batch 1, key block 1. The wrapper recognises that task by the descriptor
//! of its output `oi_new` (slot 2): a runtime-allocated output is owned by
//! the task that creates it, so `owner_task_id` is the running task's id.
//!
//! Checked: the run ends with a kernel error naming the task id, func id and
//! core; `tensor_dump.json` opens with the validating reader, has status
//! `incomplete` and a reason naming the task; the failing task's
//! `before_dispatch` records are there; its dependents never ran; every task that completed before the failure (i.e. has
//! `after_completion` records) has all its records, byte-identical to a
//! successful run with the same seed, and at least the failing task's
//! producers completed. A CLI-level check covers the abnormal end through
//! `--timeout` (the product CLI has no way to inject a kernel error, by
//! design).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use simpler_core::{topology::CoreType, KResult, KernelError, TaskId};
use simpler_format::kernel_args::KernelArgsDump;
use simpler_inspect::{Dump, Record, Stage};
use simpler_isa::{Args, Core};
use simpler_runtime::{KernelDef, RuntimeError};
use simpler_workloads::paged_attention::{self, PaCase, FUNC_PV};

/// Task ids of CaseSmall2 (B 2, contexts 130 and 257, bs 128): batch 0 has
/// 2 key blocks, batch 1 has 3; per block QK, SF, PV, UP are submitted in
/// that order at scope depth 2. Batch 1, block 1 is the 4th block: tasks
/// 12 (QK), 13 (SF), 14 (PV), 15 (UP).
const RING: u32 = 2;
const FAILING: TaskId = TaskId((RING as u64) << 32 | 14);
/// The failing PV's producers: SF (pij) ← QK (sij). Both must complete
/// before PV is dispatched.
const PRODUCERS: [u32; 2] = [12, 13];
/// Tasks that depend on the failing one (UP of the same block; UP of the
/// next block through the inout accumulators): never dispatched.
const DEPENDENTS: [u32; 2] = [15, 19];

/// PV, except in task [`FAILING`], where it refuses.
fn pv_failing_in_one_task(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(2)?;
    if out.owner_task_id == FAILING {
        return Err(KernelError::msg(format!(
            "injected failure in task {}",
            out.owner_task_id
        )));
    }
    paged_attention::pv_matmul(core, args)
}

fn kernels_with_failing_pv() -> Vec<KernelDef> {
    paged_attention::kernels()
        .into_iter()
        .map(|k| {
            if k.func_id == FUNC_PV {
                KernelDef::new(FUNC_PV, "pv_matmul", CoreType::Aic, pv_failing_in_one_task)
            } else {
                k
            }
        })
        .collect()
}

/// Records by task, in manifest order.
fn by_task(d: &Dump) -> BTreeMap<TaskId, Vec<&Record>> {
    let mut m: BTreeMap<TaskId, Vec<&Record>> = BTreeMap::new();
    for r in d.records() {
        m.entry(r.task_id).or_default().push(r);
    }
    m
}

#[test]
fn a_kernel_error_in_task_k_leaves_an_incomplete_loadable_dump() {
    let case = PaCase::by_name("CaseSmall2").unwrap();
    let seed = 5;
    // The reference: a successful run with the same seed.
    let good = common::run_dumped("paged_attention", "CaseSmall2", seed, common::default_knobs);
    let good_dir = good.tmp.path().join("tensor_dump");
    let good = Dump::open(&good_dir).unwrap();
    let good_tasks = by_task(&good);
    assert_eq!(good_tasks.len(), 20);
    assert_eq!(*good_tasks.keys().next().unwrap(), TaskId::new(RING, 0));

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tensor_dump");
    let rt = common::runtime(common::default_knobs(&dir), kernels_with_failing_pv());
    let err = paged_attention::run_case(&case, seed, &rt).unwrap_err();

    // The error names the task, the func id and the core.
    let RuntimeError::Kernel {
        task_id,
        func_id,
        core_type,
        core_id,
        ref msg,
        ..
    } = err
    else {
        panic!("expected a kernel error, got {err}");
    };
    assert_eq!(
        (task_id, func_id, core_type),
        (FAILING, FUNC_PV, CoreType::Aic)
    );
    assert!(
        core_id < 8,
        "AIC core ids are below the 8 clusters: {core_id}"
    );
    assert!(
        msg.contains("injected failure in task 0x000000020000000e"),
        "{msg}"
    );
    let text = err.to_string();
    for want in [
        "task 0x000000020000000e".to_string(),
        "func id 2".to_string(),
        format!("aic core {core_id}"),
    ] {
        assert!(text.contains(&want), "{text:?} lacks {want:?}");
    }

    // The dump opens with every check of the validating reader.
    let d = Dump::open(&dir).unwrap();
    let h = d.header();
    assert_eq!(h.status.map(|s| s.name()), Some("incomplete"));
    let reason = h.reason.as_deref().unwrap();
    assert!(reason.contains("0x000000020000000e"), "{reason}");
    assert!(reason.contains("func id 2"), "{reason}");
    assert!(!dir.join("tensor_dump.json.tmp").exists());
    assert_eq!(d.loss(), (0, 0, 0));

    let tasks = by_task(&d);
    // The failing task: its before_dispatch records were captured, and no
    // after_completion record pretends its output buffers are results.
    assert!(
        tasks[&FAILING]
            .iter()
            .all(|r| r.stage == Stage::BeforeDispatch),
        "the failed task has after_completion records"
    );
    let failing_before = |t: &BTreeMap<TaskId, Vec<&Record>>| {
        t[&FAILING]
            .iter()
            .filter(|r| r.stage == Stage::BeforeDispatch)
            .count()
    };
    assert_eq!(failing_before(&tasks), failing_before(&good_tasks));
    assert_eq!(failing_before(&tasks), 2, "PV reads pij and vj");
    // Its dependents never ran.
    for local in DEPENDENTS {
        assert!(
            !tasks.contains_key(&TaskId::new(RING, local)),
            "task {local} ran"
        );
    }
    // Tasks that completed (their after_completion records are there): every
    // record present and byte-identical to the successful run.
    let completed: BTreeSet<TaskId> = d
        .records()
        .iter()
        .filter(|r| r.stage == Stage::AfterCompletion && r.task_id != FAILING)
        .map(|r| r.task_id)
        .collect();
    for local in PRODUCERS {
        assert!(
            completed.contains(&TaskId::new(RING, local)),
            "producer task {local} of the failing PV did not complete"
        );
    }
    let mut compared = 0;
    for (id, recs) in &tasks {
        let want = &good_tasks[id];
        let check: Vec<&&Record> = if completed.contains(id) {
            assert_eq!(recs.len(), want.len(), "task {id}: records missing");
            want.iter().collect()
        } else {
            // Dispatched but not complete: its before_dispatch records.
            if *id != FAILING {
                assert!(
                    recs.iter().all(|r| r.stage == Stage::BeforeDispatch),
                    "task {id}"
                );
            }
            want.iter()
                .filter(|r| r.stage == Stage::BeforeDispatch)
                .collect()
        };
        for w in check {
            let got = recs
                .iter()
                .find(|r| (r.stage, r.arg_index, r.role) == (w.stage, w.arg_index, w.role))
                .unwrap_or_else(|| panic!("task {id}: {} arg {} missing", w.stage, w.arg_index));
            assert_eq!(
                (got.dtype, &got.shape),
                (w.dtype, &w.shape),
                "task {id} arg {}",
                w.arg_index
            );
            assert!(
                d.payload(got).unwrap() == good.payload(w).unwrap() && got.bits == w.bits,
                "task {id} {} arg {}: bytes differ from the successful run",
                w.stage,
                w.arg_index
            );
            compared += 1;
        }
    }
    assert!(compared >= 2 + 8, "{compared} records compared");
    // The diff against the good run agrees: nothing is only in the failed
    // run and every pair passes; what is missing is only in the good run.
    let r = simpler_inspect::diff::diff(&d, &good, &Default::default()).unwrap();
    let s = r.summary();
    assert_eq!(s.only_in_a, 0, "{}", r.render_text(false, 20));
    assert_eq!(r.failures().count(), 0, "{}", r.render_text(false, 20));
    assert_eq!(s.pairs, d.records().len());
    assert_eq!(s.only_in_b, good.records().len() - d.records().len());
    assert!(
        r.notes.iter().any(|n| n.starts_with("A is incomplete")),
        "{:?}",
        r.notes
    );
}

/// At CLI level a run is stopped by `--timeout` (no kernel error can be
/// injected into the product CLI): non-zero exit, the reason on stderr, and
/// an incomplete dump the viewer and the diff read.
#[test]
fn cli_timeout_leaves_an_incomplete_dump_that_view_and_diff_read() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let simpler = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_simpler"))
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    // CaseLarge (65 536 tasks) cannot finish in 1 ms.
    let o = simpler(&[
        "run",
        "paged_attention",
        "--case",
        "CaseLarge",
        "--dump-tensor",
        "--dump-args",
        "--dump-kernel-args",
        "--timeout",
        "0.001",
        "--output",
        "run",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("timeout after 0.001 s"), "{err}");
    assert!(err.contains("tensor dump (status incomplete)"), "{err}");
    // The side files, named on stderr with the count their file holds.
    assert!(
        err.contains("args dump: run/tensor_dump/args_dump.json"),
        "{err}"
    );
    let ka = run.join("tensor_dump/kernel_args_dump.json");
    let ka: KernelArgsDump = serde_json::from_slice(&std::fs::read(ka).unwrap()).unwrap();
    assert_eq!(ka.total_dispatches, ka.dispatches.len() as u64);
    let line = format!(
        "kernel args dump: {} -> run/tensor_dump/kernel_args_dump.json",
        simpler_format::words::count(ka.total_dispatches, "dispatch", "dispatches"),
    );
    assert!(err.contains(&line), "{line:?} not in {err}");
    let d = Dump::open(&run).unwrap();
    assert_eq!(d.header().status.map(|s| s.name()), Some("incomplete"));
    assert_eq!(d.header().reason.as_deref(), Some("timeout after 0.001 s"));

    let o = simpler(&["dump", "view", "run", "--limit", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(matches!(o.status.code(), Some(0)), "{out}");
    assert!(
        out.contains("INCOMPLETE: the run ended abnormally"),
        "{out}"
    );

    let o = simpler(&["dump", "diff", "run", "run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("note: A is incomplete"), "{out}");
    assert!(Path::new(&run).join("tensor_dump/tensor_dump.bin").exists());
}
