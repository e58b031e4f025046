//! mixed_example: one MIX task of two blocks; all three outputs checked.

use crate::common;

use simpler_workloads::{
    mixed_example::{self, run_seed, Inputs, MixedExample},
    Workload,
};

#[test]
fn default_case_passes_for_several_seeds() {
    let rt = common::runtime(mixed_example::kernels(), 8, 3, 64);
    for seed in [0, 1, 2] {
        let r = run_seed(seed, &rt).expect("run");
        assert!(r.golden.passed, "seed {seed}: {:?}", r.golden);
        assert_eq!(r.golden.compared, 3 * 128 * 128);
        assert_eq!(r.report.tasks, 1);
        assert_eq!(r.report.dispatches, 6, "2 blocks x 3 members");
    }
    let o = MixedExample.run("Default", 9, &rt).expect("run");
    assert!(o.golden.passed);
}

#[test]
fn one_cluster_gives_the_same_bits_as_eight() {
    let one = common::runtime(mixed_example::kernels(), 1, 1, 64);
    let many = common::runtime(mixed_example::kernels(), 8, 3, 64);
    let a = run_seed(4, &one).expect("one");
    let b = run_seed(4, &many).expect("many");
    assert!(a.golden.passed);
    assert_eq!(a.outputs, b.outputs);
}

#[test]
fn inputs_are_reproducible_and_perturbation_fails() {
    let a = Inputs::generate(1);
    assert_eq!(a, Inputs::generate(1));
    let b = Inputs::generate(2);
    assert_ne!(a.a, b.a);
    assert_ne!(a.y, b.y);
    assert!(a.x.iter().all(|v| (-1.0..=1.0).contains(v)));

    let rt = common::runtime(mixed_example::kernels(), 2, 1, 64);
    let r = run_seed(1, &rt).expect("run");
    assert!(a.check(&r.outputs).passed);
    for which in 0..3 {
        let mut o = r.outputs.clone();
        let v = match which {
            0 => &mut o.c,
            1 => &mut o.d,
            _ => &mut o.e,
        };
        v[128 * 100 + 3] += 0.05; // a row of block 1
        let g = a.check(&o);
        assert!(!g.passed, "output {which}: {g:?}");
    }
}
