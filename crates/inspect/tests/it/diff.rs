//! `simpler_inspect::diff` on synthetic dumps whose values the tests
//! control: tolerance rules, NaN/inf, cosine of zero vectors, one-sided
//! records, dtype/shape/kind mismatches, scalars, metadata-only and
//! truncated records, pairing by order, the text and JSON reports (the
//! `simpler dump diff` command and its exit codes are tested in the CLI's
//! tests).

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{Manifest, RecordJson, ScalarValue};
use common::{build, f32_bytes, scalar, tensor};
use simpler_core::{ArgRole, TaskId};
use simpler_inspect::diff::{diff, DiffOptions, DiffReport, Difference, MatchMode};
use simpler_inspect::{Dump, Stage};

const T0: u64 = 0x0000_0002_0000_0000;
const T1: u64 = 0x0000_0002_0000_0001;
const T2: u64 = 0x0000_0002_0000_0002;

type Rec = (RecordJson, Vec<u8>);

/// Write `records` as a dump under `root/name`; returns the run dir.
fn write_dump(root: &Path, name: &str, records: Vec<Rec>) -> PathBuf {
    let (m, bin) = build(records);
    write_manifest(root, name, &m, &bin)
}

fn write_manifest(root: &Path, name: &str, m: &Manifest, bin: &[u8]) -> PathBuf {
    let run = root.join(name);
    common::write(&run, m, bin);
    run
}

fn f32_in(task: u64, arg: u32, v: &[f32]) -> Rec {
    tensor(
        task,
        &[0],
        "before_dispatch",
        "input",
        arg,
        "FLOAT32",
        &[v.len() as u64],
        f32_bytes(v),
    )
}

fn f32_out(task: u64, arg: u32, v: &[f32]) -> Rec {
    tensor(
        task,
        &[0],
        "after_completion",
        "output",
        arg,
        "FLOAT32",
        &[v.len() as u64],
        f32_bytes(v),
    )
}

fn opts(rtol: f64, atol: f64) -> DiffOptions {
    DiffOptions {
        rtol,
        atol,
        ..DiffOptions::default()
    }
}

/// Diff two record lists with `o`.
fn diff_of(a: Vec<Rec>, b: Vec<Rec>, o: DiffOptions) -> DiffReport {
    let tmp = tempfile::tempdir().unwrap();
    let da = Dump::open(write_dump(tmp.path(), "a", a)).unwrap();
    let db = Dump::open(write_dump(tmp.path(), "b", b)).unwrap();
    diff(&da, &db, &o).unwrap()
}

#[test]
fn identical_dumps_are_bit_equal_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = common::varied();
    let a = Dump::open(write_manifest(tmp.path(), "a", &m, &bin)).unwrap();
    let b = Dump::open(write_manifest(tmp.path(), "b", &m, &bin)).unwrap();
    let r = diff(&a, &b, &DiffOptions::default()).unwrap();
    assert!(r.passed());
    let s = r.summary();
    assert_eq!(
        (s.pairs, s.passed, s.failed, s.only_in_a, s.only_in_b),
        (12, 12, 0, 0, 0)
    );
    for p in &r.pairs {
        assert_eq!(p.bit_equal, Some(true), "{p:?}");
        assert_eq!(p.cosine, Some(1.0), "{p:?}");
        assert_eq!(p.max_abs_err, 0.0);
        assert_eq!(p.first_diff, None);
    }
    // Elements compared: bf16 [2,4] has 8, a scalar 1.
    let bf = r.pairs.iter().find(|p| p.shape_a == [2, 4]).unwrap();
    assert_eq!(bf.elements, 8);
    assert_eq!(bf.cosine, Some(1.0));
    let sc = r
        .pairs
        .iter()
        .find(|p| p.arg_index == 2 && p.task_a == TaskId(0x1_0000_0000))
        .unwrap();
    assert_eq!(sc.elements, 1);
    assert!(r.first_difference().is_none());
    assert!(r.first_difference_line().is_none());
}

#[test]
fn a_small_perturbation_passes_a_loose_rtol_and_fails_a_tight_one() {
    let base = [1.0f32, -2.0, 3.0, 4.0];
    let mut bumped = base;
    bumped[2] = 3.0003; // relative change ≈ 1e-4
    let mk = |v: &[f32]| vec![f32_in(T0, 0, &[5.0]), f32_out(T0, 1, v)];

    let loose = diff_of(mk(&bumped), mk(&base), opts(1e-3, 0.0));
    assert!(loose.passed(), "{}", loose.render_text(true, usize::MAX));
    let p = &loose.pairs[1];
    assert_eq!(p.bit_equal, Some(false));
    assert!(p.passed);
    assert_eq!(p.mismatched, 0);
    let want_abs = f64::from(3.0003f32) - 3.0;
    assert_eq!(p.max_abs_err, want_abs);
    assert_eq!(p.max_rel_err, want_abs / 3.0);
    let first = p.first_diff.as_ref().unwrap();
    assert_eq!((first.index, first.b), (2, 3.0));
    assert!(p.first_violation.is_none());

    let tight = diff_of(mk(&bumped), mk(&base), opts(1e-5, 1e-8));
    assert!(!tight.passed());
    let s = tight.summary();
    assert_eq!((s.pairs, s.passed, s.failed), (2, 1, 1));
    let p = &tight.pairs[1];
    assert!(!p.passed);
    assert_eq!(p.mismatched, 1);
    let v = p.first_violation.as_ref().unwrap();
    assert_eq!(
        (v.index, v.a_text.as_str(), v.b_text.as_str()),
        (2, "3.0003", "3.0")
    );
    assert_eq!(
        tight.first_difference_line().unwrap(),
        "first difference: task 0x0000000200000000, stage after_completion, arg 1, role output (func 0): \
         1 of 4 elements outside |a-b| <= atol + rtol*|b|; first at [2]: A 3.0003, B 3.0"
    );

    // atol alone can absorb it too: |a-b| ≈ 3e-4 <= 1e-3.
    assert!(diff_of(mk(&bumped), mk(&base), opts(0.0, 1e-3)).passed());
    assert!(!diff_of(mk(&bumped), mk(&base), opts(0.0, 1e-4)).passed());
}

#[test]
fn nan_matches_nan_only_at_the_same_index_and_inf_only_the_same_inf() {
    let nan2 = f32::from_bits(0x7fc0_0001); // another NaN payload
    let r = diff_of(
        vec![f32_out(T0, 0, &[f32::NAN, 1.0, f32::INFINITY, -0.0])],
        vec![f32_out(T0, 0, &[nan2, 1.0, f32::INFINITY, 0.0])],
        opts(0.0, 0.0),
    );
    let p = &r.pairs[0];
    assert!(p.passed, "{p:?}");
    assert_eq!(p.bit_equal, Some(false));
    assert_eq!(p.first_diff.as_ref().unwrap().index, 0);
    assert_eq!(p.max_abs_err, 0.0);

    let r = diff_of(
        vec![f32_out(T0, 0, &[f32::NAN, 1.0])],
        vec![f32_out(T0, 0, &[1.0, f32::NAN])],
        opts(1.0, 1.0),
    );
    let p = &r.pairs[0];
    assert!(!p.passed);
    assert_eq!(p.mismatched, 2);
    assert_eq!(p.max_abs_err, f64::INFINITY);
    assert!(p.first_violation.as_ref().unwrap().a.is_nan());

    for (x, y) in [
        (f32::INFINITY, f32::NEG_INFINITY),
        (f32::INFINITY, f32::MAX),
        (1.0, f32::INFINITY),
    ] {
        let r = diff_of(
            vec![f32_out(T0, 0, &[x])],
            vec![f32_out(T0, 0, &[y])],
            opts(1e3, 1e3),
        );
        assert!(
            !r.passed(),
            "{x} vs {y} must fail even with huge tolerances"
        );
    }
}

#[test]
fn cosine_is_defined_for_zero_vectors() {
    let cos = |a: &[f32], b: &[f32]| {
        diff_of(
            vec![f32_out(T0, 0, a)],
            vec![f32_out(T0, 0, b)],
            opts(0.0, 0.0),
        )
        .pairs[0]
            .cosine
            .unwrap()
    };
    assert_eq!(cos(&[0.0, 0.0], &[0.0, 0.0]), 1.0);
    assert_eq!(cos(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    assert_eq!(cos(&[3.0, 4.0], &[0.0, 0.0]), 0.0);
    assert!((cos(&[1.0, 2.0], &[-1.0, -2.0]) + 1.0).abs() < 1e-12);
    assert!((cos(&[1.0, 0.0], &[1.0, 1.0]) - 0.5f64.sqrt()).abs() < 1e-12);
    // Non-finite elements are left out of the cosine.
    assert_eq!(cos(&[f32::NAN, 2.0], &[1.0, 2.0]), 1.0);
}

#[test]
fn records_on_one_side_only_are_listed_and_fail() {
    let a = vec![
        f32_in(T0, 0, &[1.0]),
        f32_out(T0, 1, &[2.0]),
        f32_in(T1, 0, &[3.0]),
    ];
    let b = vec![f32_in(T0, 0, &[1.0]), f32_in(T2, 0, &[3.0])];
    let r = diff_of(a, b, DiffOptions::default());
    assert!(!r.passed());
    let s = r.summary();
    assert_eq!(
        (s.pairs, s.passed, s.failed, s.only_in_a, s.only_in_b),
        (1, 1, 0, 2, 1)
    );
    assert_eq!(r.only_in_a[0].task_id, TaskId(T0));
    assert_eq!(r.only_in_a[0].stage, Stage::AfterCompletion);
    assert_eq!(r.only_in_a[1].task_id, TaskId(T1));
    assert_eq!(r.only_in_b[0].task_id, TaskId(T2));
    assert!(
        matches!(r.first_difference(), Some(Difference::OnlyInA(u)) if u.task_id == TaskId(T0) && u.arg_index == 1)
    );
    assert_eq!(
        r.first_difference_line().unwrap(),
        "first difference: task 0x0000000200000000, stage after_completion, arg 1, role output (func 0): only in A"
    );
    let text = r.render_text(false, usize::MAX);
    assert!(
        text.contains("FAIL: 1 pairs, 1 passed, 0 failed, 2 only in A, 1 only in B"),
        "{text}"
    );
    assert!(text.contains("only in A (2):"), "{text}");
    assert!(text.contains("only in B (1):"), "{text}");
    assert!(!text.contains("failing pairs"), "{text}");
}

#[test]
fn dtype_shape_and_kind_mismatches_fail_with_a_reason() {
    let bf = tensor(
        T0,
        &[0],
        "after_completion",
        "output",
        0,
        "BFLOAT16",
        &[2],
        vec![0; 4],
    );
    let r = diff_of(
        vec![f32_out(T0, 0, &[0.0, 0.0])],
        vec![bf],
        DiffOptions::default(),
    );
    let p = &r.pairs[0];
    assert!(!p.passed);
    assert_eq!(
        p.reason.as_deref(),
        Some("dtype: FLOAT32 in A, BFLOAT16 in B")
    );
    assert_eq!(p.bit_equal, None);

    let sq = tensor(
        T0,
        &[0],
        "after_completion",
        "output",
        0,
        "FLOAT32",
        &[2, 2],
        f32_bytes(&[1.0; 4]),
    );
    let r = diff_of(
        vec![sq],
        vec![f32_out(T0, 0, &[1.0; 4])],
        DiffOptions::default(),
    );
    assert_eq!(
        r.pairs[0].reason.as_deref(),
        Some("shape: [2, 2] in A, [4] in B")
    );
    assert!(!r.passed());
    let text = r.render_text(false, usize::MAX);
    assert!(text.contains("FAIL shape: [2, 2] in A, [4] in B"), "{text}");

    // Same key, one a tensor and one a scalar (arg 0 input before dispatch).
    let sc = scalar(T0, &[0], 0, "FLOAT32", ScalarValue::F64(1.0), 0x3f80_0000);
    let r = diff_of(
        vec![f32_in(T0, 0, &[1.0])],
        vec![sc],
        DiffOptions::default(),
    );
    assert_eq!(
        r.pairs[0].reason.as_deref(),
        Some("kind: tensor in A, scalar in B")
    );

    // Different kernels behind the same task id.
    let mut other = f32_out(T0, 0, &[1.0]);
    other.0.func_id = Some(vec![7]);
    let r = diff_of(
        vec![f32_out(T0, 0, &[1.0])],
        vec![other],
        DiffOptions::default(),
    );
    let p = &r.pairs[0];
    assert!(!p.passed);
    assert_eq!(p.bit_equal, Some(true));
    assert!(
        p.reason
            .as_deref()
            .unwrap()
            .starts_with("func_id: [0] in A, [7] in B"),
        "{p:?}"
    );
}

#[test]
fn scalars_compare_by_bits_and_value() {
    let s = |v: f32| {
        scalar(
            T0,
            &[1],
            4,
            "FLOAT32",
            ScalarValue::F32(v),
            u64::from(v.to_bits()),
        )
    };
    let r = diff_of(vec![s(0.25)], vec![s(0.25)], DiffOptions::default());
    assert_eq!(r.pairs[0].bit_equal, Some(true));
    assert!(r.passed());

    let r = diff_of(vec![s(0.2501)], vec![s(0.25)], DiffOptions::default());
    let p = &r.pairs[0];
    assert!(!p.passed);
    assert_eq!(p.elements, 1);
    assert_eq!(p.first_violation.as_ref().unwrap().b_text, "0.25");
    assert!(diff_of(vec![s(0.2501)], vec![s(0.25)], opts(1e-3, 0.0)).passed());

    let i = |v: i32| {
        scalar(
            T0,
            &[1],
            4,
            "INT32",
            ScalarValue::Int(i64::from(v)),
            u64::from(v as u32),
        )
    };
    assert!(diff_of(vec![i(-3)], vec![i(-3)], DiffOptions::default()).passed());
    let r = diff_of(vec![i(-3)], vec![i(-4)], DiffOptions::default());
    assert_eq!(r.pairs[0].max_abs_err, 1.0);
    assert!(!r.passed());

    // 64-bit integers above 2^53 are differenced exactly.
    let u = |v: u64| scalar(T0, &[1], 4, "UINT64", ScalarValue::UInt(v), v);
    let r = diff_of(vec![u((1 << 60) + 1)], vec![u(1 << 60)], opts(0.0, 0.0));
    assert_eq!(r.pairs[0].max_abs_err, 1.0);
    assert!(!r.passed());
}

#[test]
fn metadata_only_and_truncated_records() {
    let tmp = tempfile::tempdir().unwrap();
    // Level 3: a tensor record without payload.
    let (mut m, bin) = build(vec![f32_in(T0, 0, &[1.0, 2.0])]);
    m.header.dump_level = Some(3);
    let full_a = Dump::open(write_manifest(tmp.path(), "full", &m, &bin)).unwrap();
    m.tensors[0].bin_size = 0;
    let meta_a = Dump::open(write_manifest(tmp.path(), "meta_a", &m, &[])).unwrap();
    let meta_b = Dump::open(write_manifest(tmp.path(), "meta_b", &m, &[])).unwrap();
    let r = diff(&meta_a, &meta_b, &DiffOptions::default()).unwrap();
    assert!(r.passed());
    assert_eq!(r.pairs[0].bit_equal, None);
    assert!(r.pairs[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("metadata only on both sides"));
    let r = diff(&meta_a, &full_a, &DiffOptions::default()).unwrap();
    assert!(!r.passed());
    assert_eq!(
        r.pairs[0].reason.as_deref(),
        Some("A has no payload (metadata-only record, dump level 3)")
    );

    // Drop policy: a truncated record never passes, even when its prefix matches.
    let (mut m, bin) = build(vec![f32_in(T0, 0, &[1.0, 2.0, 3.0])]);
    m.tensors[0].truncated = true;
    m.tensors[0].bin_size = 4;
    m.header.truncated_tensors = 1;
    let cut = Dump::open(write_manifest(tmp.path(), "cut", &m, &bin[..4])).unwrap();
    let (m2, bin2) = build(vec![f32_in(T0, 0, &[1.0, 2.0, 3.0])]);
    let whole = Dump::open(write_manifest(tmp.path(), "whole", &m2, &bin2)).unwrap();
    let r = diff(&cut, &whole, &DiffOptions::default()).unwrap();
    let p = &r.pairs[0];
    assert!(!p.passed);
    assert_eq!(p.elements, 1);
    assert_eq!(p.bit_equal, Some(false));
    assert_eq!(
        p.reason.as_deref(),
        Some("the payload of A is truncated (drop policy): 1 of 3 elements present")
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("A lost data under the drop policy")),
        "{:?}",
        r.notes
    );
}

#[test]
fn match_order_pairs_tasks_by_rank_when_ids_differ() {
    // The same two tasks, submitted at scope depth 0 in A and depth 1 in B.
    let run = |t0: u64, t1: u64, last: f32| {
        vec![
            f32_in(t0, 0, &[1.0, 2.0]),
            f32_out(t0, 1, &[2.0, 3.0]),
            f32_in(t1, 0, &[2.0, 3.0]),
            f32_out(t1, 1, &[4.0, last]),
        ]
    };
    let a = || run(0x0, 0x1, 6.0);
    let b = |last| run(0x1_0000_0000, 0x1_0000_0001, last);

    let by_key = diff_of(a(), b(6.0), DiffOptions::default());
    let s = by_key.summary();
    assert_eq!((s.pairs, s.only_in_a, s.only_in_b), (0, 4, 4));
    assert!(
        by_key.notes.iter().any(|n| n.contains("--match order")),
        "{:?}",
        by_key.notes
    );

    let order = DiffOptions {
        match_mode: MatchMode::Order,
        ..DiffOptions::default()
    };
    let r = diff_of(a(), b(6.0), order);
    assert!(r.passed(), "{}", r.render_text(true, usize::MAX));
    assert_eq!(r.summary().pairs, 4);
    for p in &r.pairs {
        assert_eq!(p.task_b.0, p.task_a.0 + 0x1_0000_0000, "{p:?}");
    }

    let r = diff_of(a(), b(7.0), order);
    assert!(!r.passed());
    let first = r.first_difference_line().unwrap();
    assert!(
        first.starts_with(
            "first difference: task 0x0000000000000001 (A) / 0x0000000100000001 (B), stage after_completion, arg 1"
        ),
        "{first}"
    );
    let text = r.render_text(false, usize::MAX);
    assert!(
        text.contains("0x0000000000000001 / 0x0000000100000001"),
        "{text}"
    );
}

#[test]
fn duplicated_keys_pair_occurrence_by_occurrence() {
    // The upstream runtime repeats before_dispatch records per SPMD block:
    // two dumps that both repeat pair repeat by repeat; a repeated record
    // against one record (ours, or a single-block run) pairs every repeat
    // with that one.
    let tmp = tempfile::tempdir().unwrap();
    let upstream = |name: &str, recs: Vec<Rec>| {
        let (mut m, bin) = build(recs);
        m.header.schema_version = None;
        Dump::open(write_manifest(tmp.path(), name, &m, &bin)).unwrap()
    };
    let a = upstream("a", vec![f32_in(T0, 0, &[1.0]), f32_in(T0, 0, &[2.0])]);
    let a2 = upstream("a2", vec![f32_in(T0, 0, &[1.0]), f32_in(T0, 0, &[2.0])]);
    let r = diff(&a, &a2, &DiffOptions::default()).unwrap();
    assert_eq!((r.summary().pairs, r.summary().passed), (2, 2));
    let b = upstream("b", vec![f32_in(T0, 0, &[1.0])]);
    for r in [
        diff(&a, &b, &DiffOptions::default()).unwrap(),
        simpler_inspect::diff::diff_paths(
            a.manifest_path(),
            b.manifest_path(),
            &DiffOptions::default(),
            simpler_inspect::diff::Keep::All,
        )
        .unwrap(),
    ] {
        let s = r.summary();
        assert_eq!((s.pairs, s.passed, s.only_in_a), (2, 1, 0));
        let failed: Vec<_> = r.failures().map(|p| (p.record_a, p.record_b)).collect();
        assert_eq!(
            failed,
            [(1, 0)],
            "the second block's 2.0 against the one 1.0"
        );
    }
}

#[test]
fn failing_pairs_are_listed_first_sorted_by_task_and_all_adds_passing_ones() {
    let a = vec![
        f32_in(T0, 0, &[1.0]),
        f32_in(T1, 0, &[9.0]),
        f32_in(T2, 0, &[8.0]),
    ];
    let b = vec![
        f32_in(T0, 0, &[1.0]),
        f32_in(T1, 0, &[1.0]),
        f32_in(T2, 0, &[1.0]),
    ];
    let r = diff_of(a, b, DiffOptions::default());
    let text = r.render_text(false, usize::MAX);
    let fail_at = text.find("failing pairs (2):").unwrap();
    let t1 = text.find("0x0000000200000001  0").unwrap();
    let t2 = text.find("0x0000000200000002  0").unwrap();
    assert!(fail_at < t1 && t1 < t2, "{text}");
    assert!(!text.contains("passing pairs"), "{text}");
    assert!(text.contains(
        "first difference: task 0x0000000200000001, stage before_dispatch, arg 0, role input"
    ));
    let all = r.render_text(true, usize::MAX);
    let pass_at = all.find("passing pairs (1):").unwrap();
    assert!(pass_at > fail_at, "{all}");
    assert!(all[pass_at..].contains("0x0000000200000000"), "{all}");
    // --limit caps each table.
    let capped = r.render_text(false, 1);
    assert!(
        capped.contains("... 1 more failing pairs not listed (--limit 1; --limit all lists all)"),
        "{capped}"
    );
}

#[test]
fn json_report_parses_with_summary_and_every_pair() {
    let r = diff_of(
        vec![f32_out(T0, 0, &[f32::NAN, 2.0]), f32_in(T1, 0, &[1.0])],
        vec![f32_out(T0, 0, &[0.0, 2.0])],
        DiffOptions::default(),
    );
    let text = serde_json::to_string(&r.to_json()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["match"], "key");
    assert_eq!(v["passed"], false);
    assert_eq!(v["summary"]["pairs"], 1);
    assert_eq!(v["summary"]["failed"], 1);
    assert_eq!(v["summary"]["only_in_a"], 1);
    assert_eq!(v["summary"]["only_in_b"], 0);
    let p = &v["pairs"][0];
    assert_eq!(p["task_id_a"], "0x0000000200000000");
    assert_eq!(p["stage"], "after_completion");
    assert_eq!(p["bit_equal"], false);
    assert_eq!(p["max_abs_err"], "inf");
    assert_eq!(p["first_violation"]["index"], 0);
    assert_eq!(p["first_violation"]["a"], "nan");
    assert_eq!(p["first_violation"]["b"], 0.0);
    assert_eq!(v["only_in_a"][0]["task_id"], "0x0000000200000001");
    assert_eq!(v["first_difference"]["kind"], "pair");
    assert_eq!(v["first_difference"]["role"], ArgRole::Output.name());

    // The streamed form (what --json prints) is the same document, header
    // first and one list entry per line.
    let mut buf = Vec::new();
    let mut r = r;
    r.write_json(&mut buf).unwrap();
    let streamed: serde_json::Value = serde_json::from_slice(&buf).unwrap();
    assert_eq!(streamed, v);
    let text = String::from_utf8(buf).unwrap();
    assert!(
        text.starts_with("{\n  \"schema_version\": 1,\n  \"a\": "),
        "{text}"
    );
    assert!(text.contains("\n  \"only_in_b\": []\n}"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("    {")).count(), 2);
}

/// A run stopped before some kernels ran names fewer func ids than a
/// whole run of its workload: that alone is no sign of another workload.
/// Ids the other run never names still are, and so are fewer ids in a
/// run that completed.
#[test]
fn a_stopped_runs_missing_func_ids_are_not_another_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = |task, func: u32| {
        let v = f32_bytes(&[1.0, 2.0]);
        tensor(
            task,
            &[func],
            "before_dispatch",
            "input",
            0,
            "FLOAT32",
            &[2],
            v,
        )
    };
    let open = |name: &str, recs: Vec<Rec>, stopped: bool| {
        let (mut m, bin) = build(recs);
        if stopped {
            m.header.status = Some(simpler_format::vocab::Status::Incomplete);
            m.header.reason = Some("timeout after 1 s".into());
        }
        Dump::open(write_manifest(tmp.path(), name, &m, &bin)).unwrap()
    };
    let asks = |a: &Dump, b: &Dump| {
        let r = diff(a, b, &DiffOptions::default()).unwrap();
        r.notes.iter().any(|n| n.contains("one workload?"))
    };
    let whole = open("whole", vec![rec(T0, 0), rec(T1, 1)], false);
    let cut = open("cut", vec![rec(T0, 0)], true);
    assert!(!asks(&cut, &whole) && !asks(&whole, &cut));
    let small = open("small", vec![rec(T0, 0)], false);
    assert!(asks(&small, &whole), "a complete run naming fewer ids");
    let other = open("other", vec![rec(T0, 0), rec(T2, 2)], true);
    assert!(
        asks(&other, &whole),
        "a stopped run naming an id B never does"
    );
}
