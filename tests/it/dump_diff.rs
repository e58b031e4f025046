//! `simpler dump diff` on real runs (DESIGN §7): two paged_attention
//! CaseSmall2 runs with different seeds fail with the right first differing
//! task, two runs with the same seed are bit-equal everywhere, `--match
//! order` pairs the same work submitted at another scope depth (other task
//! ids), and the binary's exit codes (0 pass, 1 fail, 2 error) and `--json`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use simpler_core::{topology::CoreType, DType, TaskId};
use simpler_inspect::diff::{diff, DiffOptions, Difference, MatchMode};
use simpler_inspect::{Dump, RecordKind, Stage};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, RuntimeError, TaskArgs, TensorInfo,
};
use simpler_workloads::paged_attention::{Inputs, PaCase};

fn simpler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(args)
        .output()
        .expect("run simpler")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A CaseSmall2 run with the tensor dump on: (temp dir, dump folder).
fn small2(seed: u64) -> (common::Dump, PathBuf) {
    let d = common::run_dumped("paged_attention", "CaseSmall2", seed, common::default_knobs);
    let dir = d.tmp.path().join("tensor_dump");
    (d, dir)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn different_seeds_fail_at_the_first_qk_of_batch_0() {
    let (_a, da) = small2(0);
    let (_b, db) = small2(1);
    let a = Dump::open(&da).unwrap();
    let b = Dump::open(&db).unwrap();
    let r = diff(&a, &b, &DiffOptions::default()).unwrap();
    assert!(!r.passed());
    let sum = r.summary();
    assert_eq!((sum.only_in_a, sum.only_in_b), (0, 0));
    assert_eq!(sum.pairs, a.records().len());
    assert!(sum.failed > 0);

    // The data generation draws query, key cache, value cache and the block
    // table from the seed, so every kernel input differs; the first task
    // submitted is QK (func 0) of batch 0, key block 0, and its first
    // argument (qi = query rows of batch 0) is the first record to differ.
    let first_task = a.records().iter().map(|r| r.task_id).min().unwrap();
    let Some(Difference::Pair(p)) = r.first_difference() else {
        panic!("expected a failing pair first: {:?}", r.first_difference());
    };
    assert_eq!(
        (p.task_a, p.stage, p.arg_index, p.func_ids_a.as_slice()),
        (first_task, Stage::BeforeDispatch, 0, &[0u32][..])
    );
    let case = PaCase::by_name("CaseSmall2").unwrap();
    let qi_len = (case.num_heads * case.head_dim) as usize;
    let qi = a
        .records()
        .iter()
        .find(|x| x.task_id == first_task && x.arg_index == 0)
        .unwrap();
    assert_eq!(
        a.payload(qi).unwrap(),
        common::u16_bytes(&Inputs::generate(&case, 0).query[..qi_len]),
        "the first task's arg 0 is batch 0's query tile"
    );
    let line = r.first_difference_line().unwrap();
    assert!(
        line.starts_with(&format!(
            "first difference: task {first_task}, stage before_dispatch, arg 0, role input (func 0): "
        )),
        "{line}"
    );
    // Every QK input differs; the scalars (scale, is_first, is_last) do not
    // depend on the seed and pass bit-equal.
    for p in &r.pairs {
        if p.func_ids_a == [0] && p.stage == Stage::BeforeDispatch {
            assert!(!p.passed && p.bit_equal == Some(false), "{p:?}");
        }
        if p.kind_a == RecordKind::Scalar {
            assert!(p.passed && p.bit_equal == Some(true), "{p:?}");
        }
    }

    // The binary: exit 1, the same first difference, and parseable JSON.
    let o = simpler(&["dump", "diff", &s(&da), &s(&db)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "FAIL: {} pairs, {} passed, {} failed, 0 only in A, 0 only in B",
            sum.pairs, sum.passed, sum.failed
        )),
        "{out}"
    );
    assert!(out.contains(&format!("first difference: task {first_task}, stage before_dispatch, arg 0, role input (func 0)")), "{out}");
    let o = simpler(&["dump", "diff", &s(&da), &s(&db), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["summary"]["failed"], sum.failed);
    assert_eq!(v["pairs"].as_array().unwrap().len(), sum.pairs);
    assert_eq!(v["first_difference"]["task_id_a"], first_task.to_string());
    assert_eq!(v["first_difference"]["arg_index"], 0);
}

#[test]
fn the_same_seed_twice_is_bit_equal_everywhere() {
    let (_a, da) = small2(3);
    let (_b, db) = small2(3);
    let a = Dump::open(&da).unwrap();
    let b = Dump::open(&db).unwrap();
    let r = diff(&a, &b, &DiffOptions::default()).unwrap();
    assert!(r.passed(), "{}", r.render_text(false, 20));
    assert_eq!(r.summary().pairs, a.records().len());
    assert_eq!(a.records().len(), 120);
    for p in &r.pairs {
        assert_eq!(p.bit_equal, Some(true), "{p:?}");
        assert_eq!(p.task_a, p.task_b);
    }
    // Exact tolerances change nothing for bit-equal dumps.
    let exact = DiffOptions {
        rtol: 0.0,
        atol: 0.0,
        ..DiffOptions::default()
    };
    assert!(diff(&a, &b, &exact).unwrap().passed());

    let o = simpler(&[
        "dump",
        "diff",
        &s(&da),
        &s(&db),
        "--rtol",
        "0",
        "--atol",
        "0",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        out.contains("PASS: 120 pairs, 120 passed, 0 failed, 0 only in A, 0 only in B"),
        "{out}"
    );
    assert!(!out.contains("first difference"), "{out}");
}

// ---------------------------------------------------------------------------
// --match order: the same work at another scope depth

/// out = x + s over one 1×8 f32 tile.
fn add_scalar(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, out, s) = (args.tensor(0)?, args.tensor(1)?, args.scalar_f32(2)?);
    let t = core.alloc_tile(BufKind::Ub, 1, 8, DType::Float32)?;
    core.tload(t, &x)?;
    core.tadds(t, t, s)?;
    core.tstore(&out, t)
}

/// x → +1 → +`second` → +3 into the output argument.
fn chain(o: &mut Orchestrator<'_>, a: &OrchArgs, second: f32) -> Result<(), RuntimeError> {
    let info = TensorInfo::new(&[8], DType::Float32);
    let x = a.tensor_at(0)?;
    let y = o
        .submit(
            Kernels::Aiv(0),
            TaskArgs::new()
                .input(&x)
                .output(info.clone())
                .scalar_f32(1.0),
        )?
        .outputs[0];
    let z = o
        .submit(
            Kernels::Aiv(0),
            TaskArgs::new().input(&y).output(info).scalar_f32(second),
        )?
        .outputs[0];
    o.submit(
        Kernels::Aiv(0),
        TaskArgs::new()
            .input(&z)
            .output_existing(&a.tensor_at(1)?)
            .scalar_f32(3.0),
    )?;
    Ok(())
}

/// Run the chain at scope depth `depth` (0 or 1) with a dump; returns the
/// temp dir holding `tensor_dump/`.
fn chain_run(depth: u32, second: f32) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let rt = common::runtime(
        common::default_knobs(&tmp.path().join("tensor_dump")),
        vec![KernelDef::new(0, "add_scalar", CoreType::Aiv, add_scalar)],
    );
    let x = rt.upload_pod(&[0.5f32; 8], &[8], DType::Float32).unwrap();
    let out = rt.alloc_tensor(&[8], DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x).output(out), |o, a| {
        if depth == 0 {
            chain(o, a, second)
        } else {
            o.scope(|o| chain(o, a, second))
        }
    })
    .unwrap();
    assert_eq!(rt.download_pod::<f32>(&out).unwrap(), vec![4.5 + second; 8]);
    tmp
}

#[test]
fn match_order_pairs_the_same_work_at_another_scope_depth() {
    let ta = chain_run(0, 2.0);
    let tb = chain_run(1, 2.0);
    let a = Dump::open(ta.path()).unwrap();
    let b = Dump::open(tb.path()).unwrap();
    let ids = |d: &Dump| {
        let mut v: Vec<TaskId> = d.records().iter().map(|r| r.task_id).collect();
        v.dedup();
        v
    };
    assert_eq!(
        ids(&a),
        [TaskId::new(0, 0), TaskId::new(0, 1), TaskId::new(0, 2)]
    );
    assert_eq!(
        ids(&b),
        [TaskId::new(1, 0), TaskId::new(1, 1), TaskId::new(1, 2)]
    );

    // By key nothing pairs, and the report says what to do.
    let by_key = diff(&a, &b, &DiffOptions::default()).unwrap();
    assert_eq!(by_key.summary().pairs, 0);
    assert_eq!(by_key.summary().only_in_a, a.records().len());
    assert!(by_key.notes.iter().any(|n| n.contains("--match order")));

    let order = DiffOptions {
        match_mode: MatchMode::Order,
        ..DiffOptions::default()
    };
    let r = diff(&a, &b, &order).unwrap();
    assert!(r.passed(), "{}", r.render_text(true, 0));
    assert_eq!(r.summary().pairs, a.records().len());
    assert_eq!(a.records().len(), 9); // per task: input, scalar, output
    for p in &r.pairs {
        assert_eq!(
            (p.task_a.local(), p.task_a.ring(), p.task_b.ring()),
            (p.task_b.local(), 0, 1)
        );
        assert_eq!(p.bit_equal, Some(true));
    }

    // A different scalar in the second task: found at rank 1, by value.
    let tc = chain_run(1, 2.5);
    let c = Dump::open(tc.path()).unwrap();
    let r = diff(&a, &c, &order).unwrap();
    let Some(Difference::Pair(p)) = r.first_difference() else {
        panic!("{:?}", r.first_difference())
    };
    assert_eq!(
        (p.task_a, p.task_b, p.stage, p.arg_index),
        (
            TaskId::new(0, 1),
            TaskId::new(1, 1),
            Stage::BeforeDispatch,
            2
        )
    );
    assert_eq!(p.kind_a, RecordKind::Scalar);
    assert_eq!(p.max_abs_err, 0.5);

    let o = simpler(&[
        "dump",
        "diff",
        &s(ta.path()),
        &s(tb.path()),
        "--match",
        "order",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("PASS: 9 pairs, 9 passed"), "{out}");
    let o = simpler(&["dump", "diff", &s(ta.path()), &s(tb.path())]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL: 0 pairs, 0 passed, 0 failed, 9 only in A, 9 only in B"),
        "{out}"
    );
    let o = simpler(&[
        "dump",
        "diff",
        &s(ta.path()),
        &s(tc.path()),
        "--match",
        "order",
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(
        "first difference: task 0x0000000000000001 (A) / 0x0000000100000001 (B), stage before_dispatch, arg 2, role input (func 0)"
    ), "{out}");
}

#[test]
fn errors_exit_2_and_name_the_dump_or_argument() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference-dumps/vector_example");
    let o = simpler(&["dump", "diff", &s(&fixture), &s(&missing)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: dump B: dump path {} does not exist",
            missing.display()
        )
    );
    let o = simpler(&["dump", "diff", &s(&fixture), &s(&fixture), "--atol", "nan"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: --atol NaN: expected a finite number >= 0"
    );
    // A reference-runtime dump diffed with itself passes, with a note.
    let o = simpler(&["dump", "diff", &s(&fixture), &s(&fixture)]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("note: A is a reference-runtime dump"), "{out}");
    assert!(out.contains("PASS: 18 pairs, 18 passed"), "{out}");
}
