//! `simpler bench dump-overhead`: what a level-2 tensor dump adds to a
//! run's wall time (DESIGN §10), split into the captures and the files,
//! against an in-process memcpy + write and the disk's own floor.

use std::{
    io::Write,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use simpler_dump::DumpConfig;
use simpler_runtime::{Runtime, RuntimeConfig};

use super::{chip_config, dumped_bytes, leak, median, remove, Outcome};
use crate::{cli::BenchArgs, registry::Workloads};

/// `CaseBench` and `CaseLarge` with a level-2 dump vs without, alternated
/// A/B, `--reps` pairs. The wall ratio is the median of the pairs' ratios:
/// each pair runs back to back, so a machine whose speed drifts between
/// minutes (as a shared VM's does) slows both of its runs alike, where the
/// best of each side may come from different phases; the best-of ratio is
/// reported as well. Throughput is dumped bytes over the median time the
/// dump added to a pair, against an in-process memcpy + write of as many
/// bytes into the same folder.
///
/// Both runtimes live across the reps, so both runs reuse warm GM. Each
/// rep's dump goes to the same folder, deleted right before the run: its
/// page-cache pages are dropped unwritten and reused at once. (On a VM
/// that hands freed memory back to its host, pages freed seconds earlier
/// cost a host fault each on reuse, which would time the host instead of
/// the dump; the baseline is measured the same way.)
pub(super) fn dump_overhead(a: &BenchArgs, ws: &Workloads) -> Result<Outcome> {
    let base = a.chip.config()?;
    let w = ws.find("paged_attention")?;
    let tmp = tempfile::tempdir().context("temporary folder for the dumps")?;
    let _scratch = simpler_format::durable::scratch(tmp.path());
    let mut results = Vec::new();
    let mut worst_ratio = 0.0f64;
    let (mut bytes_total, mut extra_total) = (0u64, 0.0f64);
    let (mut floor_total, mut worst_floor) = (0.0f64, 0.0f64);
    for (case, key) in [("CaseBench", "case_bench"), ("CaseLarge", "case_large")] {
        let plain = Runtime::new(base.clone(), w.kernels())?;
        let dir = tmp.path().join(case);
        let dumping = Runtime::new(
            RuntimeConfig {
                dump: Some(DumpConfig::new(dir.join("tensor_dump"))),
                ..base.clone()
            },
            w.kernels(),
        )?;
        let mut pairs = Vec::new();
        let mut bytes = 0;
        for rep in 0..a.reps() {
            crate::progress::status(&format!(
                "{case} plain and dumping, pair {} of {}",
                rep + 1,
                a.reps()
            ));
            let plain = w.run(case, 0, &plain)?.report;
            remove(&dir)?;
            let dumped = w.run(case, 0, &dumping)?.report;
            let d = dumped.dump.as_ref().context("the dump run wrote no dump")?;
            if d.dropped_records != 0 || d.truncated != 0 {
                bail!("{case}: the dump lost records");
            }
            bytes = dumped_bytes(d);
            pairs.push(Pair::of(&plain, &dumped));
        }
        remove(&dir)?;
        let ratio = median(pairs.iter().map(|p| p.dump.0 / p.plain.0));
        worst_ratio = worst_ratio.max(ratio);
        bytes_total += bytes;
        extra_total += median(pairs.iter().map(|p| p.dump.0 - p.plain.0)).max(1e-9);
        crate::progress::status(&format!("{case}: the disk alone"));
        let disk = disk_floor(tmp.path(), bytes, a.reps())?;
        floor_total += disk;
        worst_floor = worst_floor.max(floor_ratio(&pairs, disk));
        results.extend(case_metrics(key, ratio, &pairs, bytes, disk));
    }
    let dump_gib_s = bytes_total as f64 / extra_total / f64::from(1 << 30);
    crate::progress::status("memcpy + write baseline");
    let baseline = memcpy_write_baseline(tmp.path(), bytes_total, a.reps())?;
    let mut all = vec![
        ("wall_ratio", worst_ratio, "x (worst case)"),
        ("dump_gib_per_s", dump_gib_s, "GiB/s"),
        ("baseline_gib_per_s", baseline, "GiB/s"),
        ("throughput_ratio", dump_gib_s / baseline, ""),
        (
            "disk_floor_ratio",
            worst_floor,
            "x (the least wall_ratio this folder's disk allows)",
        ),
        (
            "disk_gib_per_s",
            bytes_total as f64 / floor_total / f64::from(1 << 30),
            "GiB/s (the dump's writer alone, durable)",
        ),
    ];
    all.extend(results);
    Ok(Outcome {
        name: "dump-overhead",
        results: all,
        config: chip_config(a)?,
        target: format!(
            "target: wall_ratio ≤ 1.5, throughput_ratio ≥ 0.5 \
             (this disk allows no less than {worst_floor:.2}x)"
        ),
    })
}

/// Seconds the dump's own writer takes, alone, to make `bytes` durable in
/// `dir` (best of `reps`): no dump of that size there ends sooner.
fn disk_floor(dir: &Path, bytes: u64, reps: u32) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = simpler_dump::durable_write_time(dir, bytes)
            .context("measuring the disk's durable write speed")?;
        best = best.min(t.as_secs_f64());
    }
    Ok(best)
}

/// The least wall ratio the disk allows a case: its plain run (median of
/// `pairs`), or the disk alone writing the dump's bytes (`disk_s`) if that
/// takes longer, over the plain run.
fn floor_ratio(pairs: &[Pair], disk_s: f64) -> f64 {
    let plain = median(pairs.iter().map(|p| p.plain.0));
    plain.max(disk_s) / plain
}

/// One plain run and one dumping run of a case: (wall, graph) seconds of
/// each (`RunReport::graph`: until the last task completed).
struct Pair {
    plain: (f64, f64),
    dump: (f64, f64),
}

impl Pair {
    fn of(plain: &simpler_runtime::RunReport, dump: &simpler_runtime::RunReport) -> Pair {
        let secs = |r: &simpler_runtime::RunReport| (r.wall.as_secs_f64(), r.graph.as_secs_f64());
        Pair {
            plain: secs(plain),
            dump: secs(dump),
        }
    }
}

/// A case's metrics: its wall ratio (median of pairs), split into what the
/// dump costs during the graph (the captures) and after it (the files),
/// and the least ratio the disk allows ([`floor_ratio`]).
fn case_metrics(
    key: &str,
    ratio: f64,
    pairs: &[Pair],
    bytes: u64,
    disk_s: f64,
) -> Vec<(&'static str, f64, &'static str)> {
    let best = |f: fn(&Pair) -> f64| pairs.iter().map(f).fold(f64::MAX, f64::min);
    let (best_plain, best_dump) = (best(|p| p.plain.0), best(|p| p.dump.0));
    let name = |what: &str| leak(format!("{key}_{what}"));
    vec![
        (name("wall_ratio"), ratio, "x (median of pairs)"),
        (
            name("best_of_ratio"),
            best_dump / best_plain,
            "x (best dump / best plain)",
        ),
        (name("plain_s"), best_plain, "s (best)"),
        (name("dump_s"), best_dump, "s (best)"),
        (
            name("graph_ratio"),
            median(pairs.iter().map(|p| p.dump.1 / p.plain.1)),
            "x the plain graph, dumping (median of pairs): the captures",
        ),
        (
            name("after_graph_s"),
            median(pairs.iter().map(|p| p.dump.0 - p.dump.1)),
            "s after the graph, dumping (median): the files",
        ),
        (name("dumped_mib"), bytes as f64 / f64::from(1 << 20), "MiB"),
        (
            name("disk_floor_s"),
            disk_s,
            "s (the dump's bytes made durable by the writer alone, best)",
        ),
        (
            name("floor_ratio"),
            floor_ratio(pairs, disk_s),
            "x (the least wall_ratio the disk allows)",
        ),
    ]
}

/// GiB/s of copying `bytes` through a 1 MiB arena (the dump's default) and
/// writing each arena to a file in `dir` — the least a dump of that many
/// bytes must do. Like the dump runs, each rep replaces the previous
/// rep's file right before it starts. A first, untimed rep fills the page
/// cache the timed ones reuse: timed, it reads a fraction of the speed on
/// a VM whose fresh pages cost a host fault each (`--reps 1` read 0.67
/// GiB/s against 4.3 for the best of 5), which would flatter the dump.
fn memcpy_write_baseline(dir: &Path, bytes: u64, reps: u32) -> Result<f64> {
    let src: Vec<u8> = (0..64u32 << 20).map(|i| i as u8).collect();
    let mut arena = vec![0u8; simpler_dump::DEFAULT_ARENA_BYTES];
    let mut best = Duration::MAX;
    let path = dir.join("baseline.bin");
    for rep in 0..=reps {
        remove(&path)?;
        let mut f = std::fs::File::create(&path).context("baseline file")?;
        let t = Instant::now();
        let mut left = bytes;
        let mut pos = 0usize;
        while left > 0 {
            let n = (arena.len() as u64).min(left) as usize;
            if pos + n > src.len() {
                pos = 0;
            }
            arena[..n].copy_from_slice(&src[pos..pos + n]);
            f.write_all(&arena[..n]).context("baseline write")?;
            pos += n;
            left -= n as u64;
        }
        f.flush()?;
        if rep > 0 {
            best = best.min(t.elapsed());
        }
    }
    remove(&path)?;
    Ok(bytes as f64 / best.as_secs_f64() / f64::from(1 << 30))
}

#[cfg(test)]
mod tests {
    use super::{case_metrics, Pair};

    /// A case's split follows from its pairs' walls and graph times: the
    /// graph ratio of dump over plain, the dumping run's time after its
    /// graph, both medians; best-of from the walls.
    #[test]
    fn a_cases_metrics_split_its_pairs() {
        let pair = |plain: (f64, f64), dump: (f64, f64)| Pair { plain, dump };
        let pairs = [
            pair((1.0, 0.9), (1.5, 1.0)),
            pair((2.0, 1.8), (2.6, 2.7)),
            pair((1.2, 1.0), (2.0, 1.5)),
        ];
        let m = case_metrics("k", 1.5, &pairs, 3 << 20, 1.8);
        let get_in = |m: &[(&str, f64, &str)], name: &str| {
            m.iter().find(|r| r.0 == name).map(|r| r.1).unwrap()
        };
        let get = |name: &str| get_in(&m, name);
        assert_eq!(get("k_wall_ratio"), 1.5);
        assert_eq!(get("k_plain_s"), 1.0);
        assert_eq!(get("k_dump_s"), 1.5);
        assert_eq!(get("k_best_of_ratio"), 1.5);
        assert_eq!(get("k_graph_ratio"), 1.5, "median of 1.11, 1.5, 1.5");
        assert!(
            (get("k_after_graph_s") - 0.5).abs() < 1e-12,
            "median of 0.5, -0.1, 0.5"
        );
        assert_eq!(get("k_dumped_mib"), 3.0);
        assert_eq!(get("k_disk_floor_s"), 1.8);
        assert!(
            (get("k_floor_ratio") - 1.5).abs() < 1e-12,
            "1.8 s of disk over a median plain 1.2 s"
        );
        // A disk faster than the plain run allows the plain run's time.
        let fast = case_metrics("k", 1.5, &pairs, 3 << 20, 0.3);
        assert_eq!(get_in(&fast, "k_floor_ratio"), 1.0);
    }
}
