//! The TensorMap through the public API: overlap of raw descriptors, and
//! the frontier as `submit` reports it (issue 11).

use std::sync::atomic::Ordering;

use simpler_core::{ChipTensor, DType};
use simpler_runtime::{tensormap, Kernels, OrchArgs, TaskArgs, TaskId};

use crate::runtime::{runtime, GATES};

/// A raw 2-D view: any start, shape and strides (`Tensor::from_desc`
/// accepts such descriptors).
fn raw(start: u64, shape: [u32; 2], strides: [u32; 2]) -> ChipTensor {
    let mut v = ChipTensor::contiguous(0x1000, &[4, 10], DType::Float32);
    v.start_offset = start;
    v.shapes[..2].copy_from_slice(&shape);
    v.strides[..2].copy_from_slice(&strides);
    v
}

#[test]
fn issue_11_a_box_that_runs_past_its_row_still_overlaps() {
    // Elements 7..12 and 17..22 vs 10..13: they share 10 and 11. The box
    // test read the first as columns 7..12 of a 10-wide row and missed it.
    let a = raw(7, [2, 5], [10, 1]);
    let b = raw(10, [1, 3], [10, 1]);
    assert!(tensormap::overlaps(&a, &b));
    assert!(tensormap::overlaps(&b, &a));
    assert!(!tensormap::covers(&a, &b));
    // Within its row, the box test stays exact.
    assert!(!tensormap::overlaps(
        &raw(7, [2, 3], [10, 1]),
        &raw(10, [1, 3], [10, 1])
    ));
}

#[test]
fn issue_11_an_inout_chain_waits_for_its_last_link_only() {
    // Gate 6 stays closed until every task is submitted, so none finishes
    // early and each link's edges are exact.
    let rt = runtime(2, 2);
    let x = rt.alloc_tensor(&[4, 8], DType::Float32).unwrap();
    let mut got: Vec<(TaskId, Vec<TaskId>)> = Vec::new();
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            let top = x.view(&[0, 0], &[2, 8])?;
            for i in 0..40 {
                let v = if i % 4 == 3 { &top } else { &x };
                let s = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(v).scalar_u64(6))?;
                got.push((s.task_id, s.deps));
            }
            GATES[6].store(true, Ordering::Release);
            Ok(())
        })
        .unwrap();
    // Each link waits for the one before; a whole-buffer link after a
    // top-rows link also waits for the whole-buffer link before that,
    // which the partial writer did not cover (kept: conservative).
    for (i, (_, deps)) in got.iter().enumerate() {
        let want: Vec<TaskId> = match i {
            0 => vec![],
            i if i % 4 == 0 => vec![got[i - 2].0, got[i - 1].0],
            i => vec![got[i - 1].0],
        };
        assert_eq!(deps, &want, "task {i}");
    }
    assert_eq!(report.edges, 39 + 9);
    // Every task ran once, in order: rows 0..2 were incremented 40 times,
    // rows 2..4 by the 30 whole-buffer tasks.
    let v: Vec<f32> = rt.download_pod(&x).unwrap();
    assert!(v[..16].iter().all(|&e| e == 40.0), "{v:?}");
    assert!(v[16..].iter().all(|&e| e == 30.0), "{v:?}");
}
