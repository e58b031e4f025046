//! Properties of the predicted chip model on random graphs.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use simpler_core::topology::Subtask;
use simpler_runtime::swimlane::DispatchCost;
use simpler_swimlane::{
    critical,
    predict::{
        predict, static_critical_path, ChipParams, ChipShape, Graph, Member, Prediction, TaskShape,
    },
};

fn cost(cycles: u64) -> DispatchCost {
    DispatchCost {
        cycles,
        ..Default::default()
    }
}

/// Add task `id`: `blocks` blocks of the members `shape` needs.
fn task(g: &mut Graph, id: u64, shape: TaskShape, blocks: u32, cycles: &mut impl FnMut() -> u64) {
    let members: &[Subtask] = match shape {
        TaskShape::Aic => &[Subtask::Aic],
        TaskShape::Aiv => &[Subtask::Aiv0],
        TaskShape::Mix => &Subtask::ALL,
    };
    let all: Vec<Member> = (0..blocks)
        .flat_map(|_| members)
        .map(|&s| Member {
            subtask: s,
            func: s.id(),
            cost: cost(cycles()),
        })
        .collect();
    g.push_task(id, shape, (blocks, members.len() as u32), all);
}

/// A random DAG: each task depends on up to 3 earlier ones.
fn random_graph(seed: u64, n: usize) -> Graph {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut g = Graph::default();
    for i in 0..n {
        let shape = [TaskShape::Aic, TaskShape::Aiv, TaskShape::Mix][rng.gen_range(0..3)];
        let blocks = rng.gen_range(1..4);
        let mut c = || rng.gen_range(1..5000);
        task(&mut g, i as u64, shape, blocks, &mut c);
        for _ in 0..rng.gen_range(0..4) {
            if i > 0 {
                g.edges.push((rng.gen_range(0..i), i));
            }
        }
    }
    g
}

fn shape(clusters: u32, scheds: u32) -> ChipShape {
    ChipShape {
        clusters,
        sched_threads: scheds,
        clock_hz: 1_850_000_000,
    }
}

/// No core runs two dispatches at once; every dependency is respected.
fn sound(g: &Graph, p: &Prediction, params: &ChipParams) {
    let mut by_core: std::collections::HashMap<u32, Vec<(u64, u64)>> = Default::default();
    for d in &p.dispatches {
        by_core.entry(d.core).or_default().push((d.start, d.end));
    }
    for spans in by_core.values_mut() {
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "core runs two dispatches at once: {w:?}");
        }
    }
    let done = |t: usize| {
        p.dispatches
            .iter()
            .filter(|d| d.task == t)
            .map(|d| d.finish)
            .max()
            .unwrap()
    };
    let start = |t: usize| {
        p.dispatches
            .iter()
            .filter(|d| d.task == t)
            .map(|d| d.start)
            .min()
            .unwrap()
    };
    for &(a, b) in &g.edges {
        let earliest = done(a)
            + params.release_latency_cycles
            + params.sched_dispatch_cycles
            + params.dispatch_latency_cycles;
        assert!(
            start(b) >= earliest,
            "task {b} started at {} before {a} released it ({earliest})",
            start(b)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn makespan_bounds_hold_on_random_graphs(seed in any::<u64>(), n in 1usize..60, clusters in 1u32..6, scheds in 1u32..4) {
        let g = random_graph(seed, n);
        let params = ChipParams::default();
        let p = predict(&g, shape(clusters, scheds), &params);
        sound(&g, &p, &params);
        prop_assert_eq!(p.dispatches.len(), (0..g.tasks.len()).map(|i| g.blocks(i).map(<[Member]>::len).sum::<usize>()).sum::<usize>());
        // At least the longest chain of kernels…
        prop_assert!(p.makespan >= static_critical_path(&g));
        // …at least the predicted critical path…
        let spans = p.dispatches.iter().fold(std::collections::HashMap::new(), |mut m, d| {
            let s = m.entry(g.tasks[d.task].id).or_insert(critical::Span { start: d.start, end: d.end });
            s.start = s.start.min(d.start);
            s.end = s.end.max(d.end);
            m
        });
        let edges: Vec<(u64, u64)> = g.edges.iter().map(|&(a, b)| (g.tasks[a].id, g.tasks[b].id)).collect();
        prop_assert!(p.makespan >= critical::critical_path(&spans, &edges).length());
        // …and at least the work spread over every core (and per core type).
        let work = |f: &dyn Fn(Subtask) -> bool| p.dispatches.iter().filter(|d| f(d.member.subtask)).map(|d| d.member.cost.cycles).sum::<u64>();
        let all = work(&|_| true);
        prop_assert!(p.makespan >= all / (3 * u64::from(clusters)));
        prop_assert!(p.makespan >= work(&|s| s == Subtask::Aic) / u64::from(clusters));
        prop_assert!(p.makespan >= work(&|s| s != Subtask::Aic) / (2 * u64::from(clusters)));
    }

    #[test]
    fn doubling_the_clusters_of_a_parallel_graph_halves_it_and_never_lengthens_it(
        seed in any::<u64>(), clusters in 1u32..6, waves in 4u64..12, shape_i in 0usize..3,
    ) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let sh = [TaskShape::Aic, TaskShape::Aiv, TaskShape::Mix][shape_i];
        let per_wave = match sh { TaskShape::Aiv => 2 * clusters, _ => clusters };
        // Independent tasks of similar length, long next to the latencies.
        let mut g = Graph::default();
        for i in 0..waves * u64::from(2 * per_wave) {
            let mut c = || rng.gen_range(90_000..110_000);
            task(&mut g, i, sh, 1, &mut c);
        }
        let params = ChipParams::default();
        let one = predict(&g, shape(clusters, 3), &params).makespan;
        let two = predict(&g, shape(2 * clusters, 3), &params).makespan;
        prop_assert!(two <= one, "{} clusters: {}, {}: {}", clusters, one, 2 * clusters, two);
        let ratio = two as f64 / one as f64;
        prop_assert!((0.4..=0.65).contains(&ratio), "ratio {}", ratio);
    }
}

#[test]
fn a_mix_block_holds_its_cluster_until_its_slowest_member_ends() {
    let mut n = 0;
    let mut c = || {
        n += 1;
        [100, 5000, 300][(n - 1) % 3]
    };
    let mut g = Graph::default();
    task(&mut g, 0, TaskShape::Mix, 1, &mut c);
    task(&mut g, 1, TaskShape::Aiv, 1, &mut || 10);
    let params = ChipParams::default();
    let p = predict(&g, shape(1, 1), &params);
    let mix_end = p
        .dispatches
        .iter()
        .filter(|d| d.task == 0)
        .map(|d| d.end)
        .max()
        .unwrap();
    let aiv_start = p.dispatches.iter().find(|d| d.task == 1).unwrap().start;
    assert!(
        aiv_start >= mix_end,
        "the AIV task started at {aiv_start}, inside the MIX block (ends {mix_end})"
    );
    let mix_starts: Vec<u64> = p
        .dispatches
        .iter()
        .filter(|d| d.task == 0)
        .map(|d| d.start)
        .collect();
    assert!(
        mix_starts.windows(2).all(|w| w[0] == w[1]),
        "members start together"
    );
}

#[test]
fn a_single_dispatch_takes_its_cycles_plus_the_documented_latencies() {
    let mut g = Graph::default();
    task(&mut g, 7, TaskShape::Aiv, 1, &mut || 12_345);
    let params = ChipParams::default();
    let p = predict(&g, shape(8, 3), &params);
    let d = &p.dispatches[0];
    assert_eq!(d.end - d.start, 12_345);
    assert_eq!(
        d.start,
        params.sched_dispatch_cycles + params.dispatch_latency_cycles
    );
    assert_eq!(p.makespan, d.end);
    assert_eq!(d.finish, d.end + params.finish_latency_cycles);
}
