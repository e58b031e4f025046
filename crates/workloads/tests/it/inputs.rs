//! Generated inputs and the paged_attention golden are pinned: hashes
//! taken from the single-threaded generator and the plain reference
//! before both were made faster (issue 11). A change of the draw order,
//! of the sampler, of the chunking or of the reference's summation order
//! shows up here, not as a silently different workload or golden.

use simpler_workloads::{
    flood, mixed_example,
    paged_attention::{reference, Inputs, PaCase},
};

/// FNV-1a over 64 bits: stable across platforms and releases.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        // The length first, so that moving bytes between parts changes the hash.
        for &b in (p.len() as u64).to_le_bytes().iter().chain(p.iter()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn paged_hash(case: &str, seed: u64) -> u64 {
    let c = PaCase::by_name(case).expect("case");
    let i = Inputs::generate(&c, seed);
    fnv(&[
        bytemuck::cast_slice(&i.query),
        bytemuck::cast_slice(&i.key_cache),
        bytemuck::cast_slice(&i.value_cache),
        bytemuck::cast_slice(&i.block_table),
        bytemuck::cast_slice(&i.context_lens),
        &i.scale.to_le_bytes(),
    ])
}

#[test]
fn paged_attention_inputs_are_pinned() {
    let want = [
        ("CaseSmall1", 0, 0x86e3_7161_089e_472d),
        ("CaseSmall1", 1, 0x4ad4_0ad1_ff75_ecf4),
        ("CaseSmall2", 0, 0x7cf7_27fb_e37b_dfcd),
        ("CaseSmall2", 1, 0xc633_5f68_b1df_0165),
        ("CaseBench", 0, 0x02a5_0f57_3691_51c1),
        ("CaseBench", 1, 0x4bee_b91b_a3c9_700d),
        ("CaseLarge", 0, 0x406a_fd19_df2d_a999),
        ("CaseLarge", 1, 0x3138_a258_fa37_0b75),
    ];
    let mut got = Vec::new();
    for case in ["CaseSmall1", "CaseSmall2", "CaseBench", "CaseLarge"] {
        for seed in [0, 1] {
            got.push((case, seed, paged_hash(case, seed)));
        }
    }
    assert_eq!(got, want);
}

#[test]
fn flood_and_mixed_example_inputs_are_pinned() {
    let mut got = Vec::new();
    for seed in [0, 1] {
        let f = flood::Inputs::generate(1000, seed);
        got.push(("flood", seed, fnv(&[bytemuck::cast_slice(&f.x)])));
        let m = mixed_example::Inputs::generate(seed);
        let parts: [&[u8]; 4] = [
            bytemuck::cast_slice(&m.a),
            bytemuck::cast_slice(&m.b),
            bytemuck::cast_slice(&m.x),
            bytemuck::cast_slice(&m.y),
        ];
        got.push(("mixed_example", seed, fnv(&parts)));
    }
    let want = [
        ("flood", 0, 0x9afc_a428_0fe2_1139),
        ("mixed_example", 0, 0x3087_9d59_8566_3027),
        ("flood", 1, 0x09a7_5afc_8a2d_d096),
        ("mixed_example", 1, 0xf3c3_e208_76ee_e097),
    ];
    assert_eq!(got, want);
}

#[test]
fn paged_attention_reference_is_pinned() {
    let mut got = Vec::new();
    for case in ["CaseSmall1", "CaseSmall2", "CaseLarge"] {
        let c = PaCase::by_name(case).expect("case");
        let r = reference(&c, &Inputs::generate(&c, 0));
        let bits: Vec<u64> = r.iter().map(|x| x.to_bits()).collect();
        got.push((case, fnv(&[bytemuck::cast_slice(&bits)])));
    }
    let want = [
        ("CaseSmall1", 0x4cc5_868d_4cd6_34a2),
        ("CaseSmall2", 0x3d07_96a0_9886_8b97),
        ("CaseLarge", 0x2535_4233_7752_5840),
    ];
    assert_eq!(got, want);
}
