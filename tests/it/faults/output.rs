//! `--output`: created in one atomic step, so two runs racing for one name
//! never both succeed; a file of that name is refused with its own
//! message; a run that fails before writing anything leaves no directory.

use std::process::Stdio;

use super::{run, simpler, text};

/// A tiny dumping run into `out`.
fn racer(cwd: &std::path::Path, out: &str) -> std::process::Child {
    simpler(cwd)
        .args([
            "run",
            "vector_example",
            "--dump-args",
            "--clusters",
            "1",
            "--sched-threads",
            "1",
            "--gm-mib",
            "16",
            "--output",
            out,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_runs_racing_for_one_output_never_both_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut doubles, mut other) = (0, Vec::new());
    for i in 0..200 {
        let out = format!("race{i}");
        let (a, b) = (racer(tmp.path(), &out), racer(tmp.path(), &out));
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let codes = (a.status.code(), b.status.code());
        let loser = match codes {
            (Some(0), Some(0)) => {
                doubles += 1;
                continue;
            }
            (Some(0), Some(2)) => &b,
            (Some(2), Some(0)) => &a,
            c => {
                other.push(format!(
                    "race {i}: exit codes {c:?}: {} / {}",
                    String::from_utf8_lossy(&a.stderr).trim(),
                    String::from_utf8_lossy(&b.stderr).trim()
                ));
                continue;
            }
        };
        let err = String::from_utf8_lossy(&loser.stderr);
        let refused =
            format!("--output {out}: the directory already exists and is never overwritten");
        if !err.contains(&refused) {
            other.push(format!("race {i}: the loser said {err:?}"));
        }
        // The winner's dump is whole.
        let j: serde_json::Value = serde_json::from_slice(
            &std::fs::read(tmp.path().join(&out).join("tensor_dump/args_dump.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(j["workload"], "vector_example");
    }
    assert!(
        doubles == 0 && other.is_empty(),
        "{doubles} of 200 races let both runs succeed; {} other anomalies: {other:#?}",
        other.len()
    );
}

#[test]
fn an_output_that_is_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f"), b"mine").unwrap();
    let o = run(
        tmp.path(),
        &["run", "vector_example", "--dump-tensor", "--output", "f"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--output f: a file of that name exists; expected the path of a new directory"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(tmp.path().join("f")).unwrap(), b"mine");
}

/// CaseBench's inputs do not fit in 1 MiB of GM: the run fails while
/// uploading, before its dump starts.
#[test]
fn a_run_that_fails_before_writing_anything_leaves_no_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "paged_attention",
        "--case",
        "CaseBench",
        "--dump-tensor",
        "--output",
        "out/run",
    ];
    let mut small = args.to_vec();
    small.extend(["--gm-mib", "1"]);
    let o = run(tmp.path(), &small);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("global memory exhausted"), "{err}");
    assert!(err.contains("nothing was kept: removed out/run"), "{err}");
    // `out/` too: the run created it (it was left behind).
    assert!(
        super::files(tmp.path()).is_empty() && !tmp.path().join("out").exists(),
        "left behind: {:?}",
        super::files(tmp.path())
    );
    // Without --output: the run directory, and the `outputs/` it created.
    let o = run(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseBench",
            "--dump-tensor",
            "--gm-mib",
            "1",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nothing was kept: removed outputs/paged_attention_CaseBench_"),
        "{err}"
    );
    assert!(!tmp.path().join("outputs").exists(), "outputs/ left behind");
    // The retry is not blocked.
    let o = run(
        tmp.path(),
        &[
            "run",
            "vector_example",
            "--dump-tensor",
            "--output",
            "out/run",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}
