//! The `simpler` binary as a user runs it.

use std::process::{Command, Output};

fn simpler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(args)
        .output()
        .expect("run simpler")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn run_paged_attention_small1_passes() {
    let o = simpler(&["run", "paged_attention", "--case", "CaseSmall1"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    // CaseSmall1 is 3 blocks of QK → SF → PV → UP with the UPs chained:
    // 14 edges when no producer has finished by the time its consumer is
    // submitted, fewer otherwise (a finished producer needs no edge).
    // "1 edge" is singular.
    let edges: u64 = out
        .split_once("12 tasks, ")
        .and_then(|(_, rest)| rest.split_once(" edge"))
        .filter(|(_, rest)| {
            rest.starts_with(", 12 dispatches") || rest.starts_with("s, 12 dispatches")
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no '12 tasks, N edges, 12 dispatches' in {out}"));
    assert!(edges <= 14, "{edges} edges: {out}");
    assert!(
        out.contains("PASS  all 256 elements within |out - ref| <= 1e-3 + 1e-3*|ref|; max abs err"),
        "{out}"
    );
}

#[test]
fn run_every_workload_default_case() {
    for w in ["vector_example", "mixed_example", "flood"] {
        let o = simpler(&[
            "run",
            w,
            "--seed",
            "3",
            "--clusters",
            "2",
            "--sched-threads",
            "1",
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{w}: {out}\n{err}");
        assert!(out.contains("PASS"), "{w}: {out}");
    }
}

#[test]
fn list_shows_workloads_cases_and_kernels() {
    let o = simpler(&["list"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    for want in [
        "paged_attention",
        "case CaseSmall1 (default)",
        "case CaseLarge",
        "kernel func_id 0 qk_matmul [aic]",
        "kernel func_id 3 online_update [aiv]",
        "mixed_example",
        "vector_example",
        "flood",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn unknown_workload_lists_the_valid_ones() {
    let o = simpler(&["run", "nope"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(out.is_empty());
    assert!(err.contains("unknown workload 'nope'"), "{err}");
    assert!(err.contains("paged_attention"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_case_lists_the_valid_ones() {
    let o = simpler(&["run", "paged_attention", "--case", "CaseHuge"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("no case 'CaseHuge'"), "{err}");
    assert!(
        err.contains("CaseSmall1, CaseSmall2, CaseBench, CaseLarge"),
        "{err}"
    );
}

#[test]
fn bad_chip_flags_are_named() {
    let o = simpler(&["run", "vector_example", "--clusters", "99"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("--clusters 99 is outside 1..=24 for arch a2a3"),
        "{err}"
    );
    let o = simpler(&["run", "vector_example", "--arch", "a9"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("a9"), "{err}");
    let o = simpler(&["run", "vector_example", "--timeout", "0"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--timeout"), "{err}");
}

#[test]
fn workers_run_at_their_extremes_and_a_bad_count_is_named() {
    for n in ["1", "256"] {
        let o = simpler(&["run", "mixed_example", "--workers", n]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "--workers {n}: {out}\n{err}");
        assert!(out.contains(&format!("/ {n} workers")), "{out}");
        assert!(out.contains("PASS"), "{out}");
    }
    for bad in ["0", "257", "-1", "2.5", "many", "99999999999999999999"] {
        let o = simpler(&["run", "mixed_example", "--workers", bad]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "--workers {bad}: {err}");
        assert!(
            err.contains("--workers") && err.contains("1..=256"),
            "--workers {bad}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn racecheck_modes_are_flags_and_a_bad_one_is_named() {
    for mode in ["off", "warn", "error"] {
        let o = simpler(&["run", "mixed_example", "--racecheck", mode]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{mode}: {out}\n{err}");
        assert!(
            !out.contains("write race") && !err.contains("write race"),
            "{out}{err}"
        );
    }
    let o = simpler(&["run", "mixed_example", "--racecheck", "loud"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--racecheck") && err.contains("loud"), "{err}");
    assert!(err.contains("off, warn, error"), "lists the values: {err}");
}

#[test]
fn a5_profile_with_36_clusters_runs() {
    let o = simpler(&["run", "mixed_example", "--arch", "a5", "--clusters", "36"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("36 clusters"), "{out}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("internal error"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A bad value pasted into any argument is echoed cut to 80 characters
/// (`"xxx…" (200 chars)`), never in full, whoever refuses it: clap, the
/// workload registry, the dump flags or `--set-arg`.
#[test]
fn long_bad_values_are_echoed_cut_to_80_characters() {
    let long = "x".repeat(200);
    let eq = format!("4={long}");
    let flag = format!("--{long}");
    let cases: [&[&str]; 10] = [
        &["run", &long],
        &["run", "vector_example", "--case", &long],
        &[
            "run",
            "vector_example",
            "--dump-tensor",
            "--dump-layout",
            &long,
        ],
        &[
            "run",
            "vector_example",
            "--dump-tensor",
            "--dump-policy",
            &long,
        ],
        &["run", "vector_example", "--timeout", &long],
        &["run", "vector_example", &flag],
        &["dump", "view", "--stage", &long],
        &["bench", &long],
        &[&long],
        &[
            "insight-trace",
            "vector_example",
            "--func-id",
            "0",
            "--set-arg",
            &eq,
        ],
    ];
    let tmp = tempfile::tempdir().unwrap();
    for args in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_simpler"))
            .current_dir(tmp.path())
            .args(args)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains("… (20"), "{args:?}: not cut: {err}");
        assert!(
            !err.contains(&"x".repeat(81)),
            "{args:?}: echoed in full: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
