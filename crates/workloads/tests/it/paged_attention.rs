//! paged_attention: goldens for every case, reproducible inputs, perturbed
//! outputs fail, task counts, and bit-identical results across configurations.

use crate::common;

use simpler_workloads::{
    paged_attention::{self, run_case, Inputs, PaCase, PagedAttention},
    Workload,
};

fn case(name: &str) -> PaCase {
    PaCase::by_name(name).expect("case exists")
}

fn check_case(name: &str, seeds: &[u64], clusters: u32, gm_mib: u64) {
    let c = case(name);
    let rt = common::runtime(paged_attention::kernels(), clusters, 3, gm_mib);
    for &seed in seeds {
        let r = run_case(&c, seed, &rt).expect("run");
        assert!(r.golden.passed, "{name} seed {seed}: {:?}", r.golden);
        assert_eq!(r.report.tasks, c.kernel_tasks(), "{name}");
        assert_eq!(r.report.dispatches, c.kernel_tasks(), "{name}");
        assert_eq!(
            r.golden.compared,
            u64::from(c.batch * c.num_heads * c.head_dim)
        );
    }
}

#[test]
fn case_small1_passes_with_12_tasks_and_12_dispatches() {
    check_case("CaseSmall1", &[0, 1, 42], 8, 64);
    let rt = common::runtime(paged_attention::kernels(), 8, 3, 64);
    let o = PagedAttention.run("CaseSmall1", 7, &rt).expect("run");
    assert!(o.golden.passed, "{:?}", o.golden);
    assert_eq!(o.report.tasks, 12);
    assert_eq!(o.report.dispatches, 12);
}

#[test]
fn case_small2_passes() {
    check_case("CaseSmall2", &[0, 5], 8, 64);
    assert_eq!(case("CaseSmall2").kernel_tasks(), (2 + 3) * 4);
}

#[test]
fn case_large_passes() {
    let c = case("CaseLarge");
    assert_eq!(c.kernel_tasks(), 65_536);
    check_case("CaseLarge", &[3], 8, 256);
}

#[test]
fn case_bench_passes() {
    let c = case("CaseBench");
    assert_eq!(c.kernel_tasks(), 4096);
    check_case("CaseBench", &[0], 8, 512);
}

#[test]
fn results_are_bit_identical_across_configurations() {
    let c = case("CaseSmall1");
    let one = common::runtime(paged_attention::kernels(), 1, 1, 64);
    let many = common::runtime(paged_attention::kernels(), 8, 3, 64);
    for seed in [0, 9] {
        let a = run_case(&c, seed, &one).expect("1 cluster");
        let b = run_case(&c, seed, &many).expect("8 clusters");
        assert!(a.golden.passed && b.golden.passed);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&a.out), bits(&b.out), "seed {seed}");
    }
    // A case with several batches and a partial last block as well.
    let c = case("CaseSmall2");
    let a = run_case(&c, 1, &one).expect("1 cluster");
    let b = run_case(&c, 1, &many).expect("8 clusters");
    assert_eq!(
        a.out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        b.out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn inputs_are_reproducible() {
    for name in ["CaseSmall1", "CaseSmall2"] {
        let c = case(name);
        let a = Inputs::generate(&c, 11);
        assert_eq!(
            a,
            Inputs::generate(&c, 11),
            "{name}: same seed, same inputs"
        );
        let b = Inputs::generate(&c, 12);
        assert_ne!(a.query, b.query, "{name}: different seed, different query");
        assert_ne!(a.key_cache, b.key_cache);
        assert_ne!(a.value_cache, b.value_cache);
        // The block table is a permutation of the physical blocks.
        let mut t = a.block_table.clone();
        t.sort_unstable();
        assert_eq!(t, (0..c.num_blocks() as i32).collect::<Vec<_>>());
        assert_eq!(a.context_lens, c.context_lens);
        assert!(a
            .query
            .iter()
            .all(|&b| half::bf16::from_bits(b).to_f32().abs() <= 1.0));
    }
}

#[test]
fn golden_fails_on_a_perturbed_output() {
    let c = case("CaseSmall1");
    let rt = common::runtime(paged_attention::kernels(), 2, 1, 64);
    let r = run_case(&c, 4, &rt).expect("run");
    assert!(r.golden.passed);
    let inputs = Inputs::generate(&c, 4);
    assert!(inputs.check(&c, &r.out).passed);
    let mut bad = r.out.clone();
    bad[37] += 0.01;
    let g = inputs.check(&c, &bad);
    assert!(!g.passed, "{g:?}");
    assert!(g.detail.contains("37"), "{}", g.detail);
    let mut nan = r.out.clone();
    nan[0] = f32::NAN;
    assert!(!inputs.check(&c, &nan).passed);
    // The output of another seed does not pass either.
    assert!(!Inputs::generate(&c, 5).check(&c, &r.out).passed);
}

#[test]
fn reference_matches_a_naive_softmax() {
    // Cross-check the reference on CaseSmall1 against a direct formula.
    let c = case("CaseSmall1");
    let inp = Inputs::generate(&c, 2);
    let r = paged_attention::reference(&c, &inp);
    let (h, d, bs) = (16usize, 16usize, 16usize);
    let f = |b: u16| f64::from(half::bf16::from_bits(b).to_f32());
    for head in [0usize, 15] {
        let mut w = vec![];
        for t in 0..33usize {
            let phys = inp.block_table[t / bs] as usize;
            let k = &inp.key_cache[(phys * bs + t % bs) * d..][..d];
            let s: f64 = (0..d).map(|i| f(inp.query[head * d + i]) * f(k[i])).sum();
            w.push((s * f64::from(inp.scale)).exp());
        }
        let z: f64 = w.iter().sum();
        for i in 0..d {
            let mut o = 0.0;
            for (t, wt) in w.iter().enumerate() {
                let phys = inp.block_table[t / bs] as usize;
                o += wt * f(inp.value_cache[(phys * bs + t % bs) * d + i]);
            }
            let want = o / z;
            assert!((r[head * d + i] - want).abs() < 1e-12, "h {head} d {i}");
        }
    }
    assert_eq!(r.len(), h * d);
}

#[test]
fn unknown_case_lists_the_valid_ones() {
    let rt = common::runtime(paged_attention::kernels(), 1, 1, 16);
    let e = PagedAttention
        .run("CaseHuge", 0, &rt)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("CaseHuge") && e.contains("CaseSmall1") && e.contains("CaseLarge"),
        "{e}"
    );
}

#[test]
fn orchestration_rejects_a_context_longer_than_the_block_table() {
    let c = case("CaseSmall1");
    let rt = common::runtime(paged_attention::kernels(), 1, 1, 64);
    let mut inputs = Inputs::generate(&c, 0);
    inputs.context_lens[0] = 49; // 4 blocks, the table has 3
    let (args, _out) = inputs.upload(&c, &rt).expect("upload");
    let e = rt
        .run(&args, paged_attention::orchestrate)
        .unwrap_err()
        .to_string();
    assert!(e.contains("context_lens[0] = 49"), "{e}");
}
