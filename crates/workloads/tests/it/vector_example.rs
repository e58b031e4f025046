//! vector_example: f = 47 everywhere, and the golden catches a wrong value.

use crate::common;

use simpler_workloads::{
    vector_example::{self, Inputs, VectorExample},
    Workload,
};

#[test]
fn default_case_gives_47() {
    for seed in [0, 1] {
        let rt = common::runtime(vector_example::kernels(), 8, 3, 64);
        let o = VectorExample.run("Default", seed, &rt).expect("run");
        assert!(o.golden.passed, "{:?}", o.golden);
        assert_eq!(o.golden.max_abs_err, 0.0);
        assert_eq!(o.golden.compared, 16384);
        assert_eq!(o.report.tasks, 5);
        assert_eq!(o.report.dispatches, 5);
    }
}

#[test]
fn runs_on_one_cluster_with_one_scheduler() {
    let rt = common::runtime(vector_example::kernels(), 1, 1, 64);
    let o = VectorExample.run("Default", 0, &rt).expect("run");
    assert!(o.golden.passed, "{:?}", o.golden);
}

#[test]
fn reference_is_47_and_perturbation_fails() {
    let inputs = Inputs::generate(3);
    assert_eq!(inputs, Inputs::generate(3));
    assert!(inputs.reference().iter().all(|&v| v == 47.0));
    let mut f = vec![47.0f32; 16384];
    assert!(inputs.check(&f).passed);
    f[16383] = 47.001;
    let g = inputs.check(&f);
    assert!(!g.passed);
    assert!(g.detail.contains("16383"), "{}", g.detail);
}

#[test]
fn unknown_case_is_an_error() {
    let rt = common::runtime(vector_example::kernels(), 1, 1, 16);
    let e = VectorExample.run("Nope", 0, &rt).unwrap_err().to_string();
    assert!(e.contains("Default"), "{e}");
}
