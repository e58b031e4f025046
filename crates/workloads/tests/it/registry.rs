//! The workload registry: names, cases, kernels, and every default case.

use crate::common;

use simpler_workloads::{all, find, WorkloadError};

#[test]
fn names_and_cases() {
    let names: Vec<_> = all().iter().map(|w| w.name()).collect();
    assert_eq!(
        names,
        [
            "vector_example",
            "paged_attention",
            "mixed_example",
            "flood"
        ]
    );
    let pa = find("paged_attention").expect("found");
    let cases: Vec<_> = pa.cases().iter().map(|c| c.name).collect();
    assert_eq!(
        cases,
        ["CaseSmall1", "CaseSmall2", "CaseBench", "CaseLarge"]
    );
    assert_eq!(pa.default_case(), "CaseSmall1");
    assert_eq!(find("flood").unwrap().default_case(), "Small");
    assert_eq!(find("vector_example").unwrap().default_case(), "Default");
    assert_eq!(find("mixed_example").unwrap().default_case(), "Default");
    match find("nope") {
        Err(WorkloadError::UnknownWorkload { known, .. }) => assert!(known.contains("flood")),
        other => panic!("{:?}", other.map(|w| w.name())),
    }
    for w in all() {
        assert!(!w.about().is_empty());
        let mut ids: Vec<u32> = w.kernels().iter().map(|k| k.func_id).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{}: func ids are unique", w.name());
        assert_eq!(ids, (0..n as u32).collect::<Vec<_>>(), "{}", w.name());
        for c in w.cases() {
            assert!(!c.about.is_empty());
            assert!(w.case(c.name).is_ok());
        }
        assert!(matches!(
            w.case("NoSuchCase"),
            Err(WorkloadError::UnknownCase { .. })
        ));
    }
}

#[test]
fn every_default_case_passes_through_the_trait() {
    for w in all() {
        let rt = common::runtime(w.kernels(), 4, 2, 128);
        let o = w.run(w.default_case(), 0, &rt).expect("run");
        assert!(o.golden.passed, "{}: {:?}", w.name(), o.golden);
        assert!(o.report.tasks > 0);
    }
}
