//! The reference runtime's own dumps (tests/fixtures/reference-dumps) open,
//! list and decode to what their workloads compute.

use crate::common;

use crate::common::{ScalarValue, WireValue};
use simpler_core::{ArgRole, DType, TaskId};
use simpler_inspect::view::Seen;
use simpler_inspect::view::{summary, table, Filter};
use simpler_inspect::{Dump, RecordKind, Stage};

#[test]
fn vector_example_opens_with_18_records() {
    let d = Dump::open(common::reference("vector_example")).unwrap();
    assert_eq!(d.records().len(), 18);
    assert!(d.is_reference_format());
    assert_eq!(d.bin_len(), 851_968);
    let h = d.header();
    assert_eq!((h.before_dispatch, h.after_completion), (13, 5));
    assert_eq!(d.records().iter().filter(|r| r.is_scalar()).count(), 5);
    // Record 4: the add-scalar task's f32 1.0, as the raw UINT64 slot.
    let r = &d.records()[4];
    assert_eq!(r.task_id, TaskId(0x0000_0001_0000_0000));
    assert_eq!(
        (r.kind, r.dtype, r.arg_index),
        (RecordKind::Scalar, DType::Uint64, 2)
    );
    assert_eq!(
        r.value,
        Some(WireValue::Number(ScalarValue::UInt(1_065_353_216)))
    );
    assert_eq!(r.bits, Some(0x0000_0000_3f80_0000));
    assert_eq!(r.f32_hint(), Some(1.0));
    assert!(r.func_ids.is_empty() && r.addr.is_none());
    assert_eq!(d.elements_f64(r).unwrap(), vec![1_065_353_216.0]);
    // Record 8: 2.0 for the second add-scalar task.
    assert_eq!(d.records()[8].bits, Some(0x4000_0000));
}

#[test]
fn vector_example_payloads_match_the_workload() {
    // a, b = 2, 3; c = a+b; d = c+1; e = c+2; g = d·e; f = g+c = 47.
    let d = Dump::open(common::reference("vector_example").join("tensor_dump")).unwrap_err();
    // (the fixture folder *is* the dump folder; a missing subfolder is an error)
    assert!(d.to_string().contains("does not exist"), "{d}");
    let d = Dump::open(common::reference("vector_example/tensor_dump.json")).unwrap();
    let all = |task: u64, stage: Stage, arg: u32| -> Vec<f64> {
        let r = d
            .records()
            .iter()
            .find(|r| r.task_id == TaskId(task) && r.stage == stage && r.arg_index == arg)
            .unwrap();
        assert_eq!(r.numel, 16384);
        let v = d.elements_f64(r).unwrap();
        assert_eq!(v.len(), 16384);
        v
    };
    let uniform = |v: Vec<f64>, x: f64| assert!(v.iter().all(|&y| y == x), "expected all {x}");
    uniform(all(0, Stage::BeforeDispatch, 0), 2.0);
    uniform(all(0, Stage::BeforeDispatch, 1), 3.0);
    uniform(all(0, Stage::AfterCompletion, 2), 5.0);
    uniform(all(0x1_0000_0000, Stage::AfterCompletion, 1), 6.0);
    uniform(all(0x1_0000_0001, Stage::AfterCompletion, 1), 7.0);
    uniform(all(0x1_0000_0002, Stage::AfterCompletion, 2), 42.0);
    uniform(all(0x1_0000_0003, Stage::BeforeDispatch, 0), 42.0);
    uniform(all(0x1_0000_0003, Stage::BeforeDispatch, 1), 5.0);
    // The last output: f = 47.
    let last = d.records().last().unwrap();
    assert_eq!(
        (last.stage, last.role, last.arg_index),
        (Stage::AfterCompletion, ArgRole::Output, 2)
    );
    uniform(d.elements_f64(last).unwrap(), 47.0);
}

#[test]
fn paged_attention_opens_with_72_records() {
    let d = Dump::open(common::reference("paged_attention_CaseSmall1")).unwrap();
    let recs = d.records();
    assert_eq!(recs.len(), 72);
    assert_eq!(
        recs.first().unwrap().task_id.to_string(),
        "0x0000000200000000"
    );
    assert_eq!(recs.last().unwrap().task_id, TaskId::new(2, 11));
    // Record 51: the SF input of the last key block, a [16, 1] view with row stride 16.
    let r = &recs[51];
    assert_eq!(
        (r.shape.clone(), r.strides.clone()),
        (vec![16, 1], vec![16, 1])
    );
    assert!(!r.is_contiguous);
    assert_eq!((r.numel, r.bin_offset, r.bin_size), (16, 6144, 64));
    // Record 49: a key block at start_offset 256.
    assert_eq!(recs[49].start_offset, 256);
    assert_eq!(recs[49].dtype, DType::Bfloat16);
    // SF's scale scalar: 1065353216 = f32 1.0 bits.
    let sf_scale = &recs[4];
    assert_eq!(sf_scale.bits, Some(0x0000_0000_3f80_0000));
    assert_eq!(sf_scale.arg_index, 4);
    // UP's is_first / is_last of the first block: 1, 0.
    assert_eq!((recs[18].bits, recs[19].bits), (Some(1), Some(0)));
    assert_eq!(recs.iter().filter(|r| r.role == ArgRole::InOut).count(), 24);
}

#[test]
fn paged_attention_payloads_are_consistent() {
    let d = Dump::open(common::reference("paged_attention_CaseSmall1")).unwrap();
    let recs = d.records();
    // QK's sij output is SF's sij input, byte for byte.
    assert_eq!(d.payload(&recs[2]).unwrap(), d.payload(&recs[3]).unwrap());
    // SF: lij = rowsum(f32(pij)) over the 16 valid columns of block 0.
    let pij = d.elements_f64(&recs[5]).unwrap();
    let lij = d.elements_f64(&recs[7]).unwrap();
    assert_eq!((pij.len(), lij.len()), (256, 16));
    for row in 0..16 {
        let s: f64 = pij[row * 16..(row + 1) * 16].iter().sum();
        assert!(
            (s - lij[row]).abs() <= 1e-5 * s.abs(),
            "row {row}: {s} vs {}",
            lij[row]
        );
    }
    // pij = exp(s - rowmax) ≤ 1 with a 1 in every row (bf16).
    for row in 0..16 {
        let r = &pij[row * 16..(row + 1) * 16];
        assert!(r.iter().all(|&x| (0.0..=1.0).contains(&x)));
        assert!(r.contains(&1.0));
    }
    // UP of the first block stores mi = mij: its after_completion inout
    // equals SF's mij output.
    assert_eq!(d.payload(&recs[6]).unwrap(), d.payload(&recs[20]).unwrap());
}

#[test]
fn reference_dumps_list_and_filter() {
    let d = Dump::open(common::reference("paged_attention_CaseSmall1")).unwrap();
    let s = summary(d.info());
    assert!(s.contains("reference-runtime format"), "{s}");
    assert!(s.contains("72 records: "), "{s}");
    assert!(s.contains("loss: none"), "{s}");
    assert_eq!((d.counts().total, d.counts().tasks), (72, 12));
    let all: Vec<_> = d.records().iter().collect();
    let t = table(&d.info().payload, &all).unwrap();
    // Two pages of 64 rows: one header line, then the rows.
    assert_eq!(t.lines().count(), 73);
    assert!(
        t.lines()
            .nth(5)
            .unwrap()
            .contains("1065353216 (bits 0x000000003f800000) = f32 1.0?"),
        "{t}"
    );
    let f = Filter {
        kind: Some(RecordKind::Scalar),
        ..Filter::default()
    };
    assert_eq!(f.select(d.records()).len(), 9);
    let f = Filter {
        task: Some(TaskId::new(2, 3)),
        stage: Some(Stage::AfterCompletion),
        ..Filter::default()
    };
    let sel = f.select(d.records());
    assert_eq!(
        sel.iter().map(|r| r.index).collect::<Vec<_>>(),
        vec![20, 21, 22, 23]
    );
    let f = Filter {
        func: Some(1),
        ..Filter::default()
    };
    assert!(f.select(d.records()).is_empty());
    let mut seen = Seen::default();
    for r in d.records() {
        seen.add(&f, r);
    }
    assert!(seen.explain_no_match(&f)[0].contains("no func ids"));
}
