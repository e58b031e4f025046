//! End-to-end checks of the tensor-dump flags of `simpler run` (DESIGN §5,
//! §6): the run directory `outputs/<workload>_<case>_<YYYYmmdd_HHMMSS>/`
//! with `tensor_dump/tensor_dump.{json,bin}`, `--output DIR`, refusal to
//! reuse an existing directory, clear errors (exit 2) for a bad
//! `--dump-tensor` level or `--dump-policy`, the loss warning of the `drop`
//! policy, and no `.json.tmp` left behind. Each test runs the real binary
//! with a fresh temporary folder as its current directory.

use crate::common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use common::{assert_no_tmp, files, full_size, read_dump, text};
use common::{Kind, Manifest, Status};

fn simpler(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run simpler")
}

/// The manifest is self-consistent and covers the `.bin` exactly.
fn check_dump(dir: &Path, level: u8, policy: &str) -> Manifest {
    let (m, bin) = read_dump(dir);
    assert_eq!(m.header.schema_version, Some(1));
    assert_eq!(m.header.status, Some(Status::Complete));
    assert_eq!(m.header.dump_level, Some(level));
    assert_eq!(m.header.dump_policy.as_deref(), Some(policy));
    assert_eq!(m.header.run_dir, "tensor_dump");
    assert_eq!(m.header.total_tensors, m.tensors.len() as u64);
    assert!(m.header.total_tensors > 0);
    assert_eq!(
        m.tensors.iter().map(|r| r.bin_size).sum::<u64>(),
        bin.len() as u64
    );
    m
}

#[test]
fn bare_flag_writes_a_timestamped_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let before = chrono::Local::now().naive_local();
    let o = simpler(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--dump-tensor",
        ],
    );
    let after = chrono::Local::now().naive_local();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    assert!(out.contains("PASS"), "{out}");
    let runs: Vec<_> = std::fs::read_dir(tmp.path().join("outputs"))
        .expect("outputs/ created")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let name = &runs[0];
    let ts = name
        .strip_prefix("paged_attention_CaseSmall1_")
        .unwrap_or_else(|| panic!("run dir {name:?} is not paged_attention_CaseSmall1_<ts>"));
    assert!(
        ts.len() == 15
            && ts.as_bytes()[8] == b'_'
            && ts
                .bytes()
                .enumerate()
                .all(|(i, b)| i == 8 || b.is_ascii_digit()),
        "timestamp {ts:?} is not YYYYmmdd_HHMMSS"
    );
    let t = chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d_%H%M%S")
        .unwrap_or_else(|e| panic!("timestamp {ts:?}: {e}"));
    let slack = chrono::Duration::seconds(2);
    assert!(
        t >= before - slack && t <= after + slack,
        "timestamp {t} is not the local time of the run ({before} .. {after})"
    );
    let run_dir = tmp.path().join("outputs").join(name);
    assert_eq!(
        files(&run_dir),
        [
            PathBuf::from("tensor_dump/tensor_dump.bin"),
            PathBuf::from("tensor_dump/tensor_dump.json")
        ]
    );
    let m = check_dump(&run_dir.join("tensor_dump"), 2, "block");
    assert!(m
        .tensors
        .iter()
        .all(|r| r.kind == Kind::Scalar || r.bin_size == full_size(r)));
    assert!(
        out.contains("tensor dump:") && out.contains("tensor_dump.json"),
        "the run says where the dump is: {out}"
    );
    assert!(!err.contains("warning"), "{err}");
    assert_no_tmp(tmp.path());
}

#[test]
fn output_flag_sets_the_run_dir_and_levels_are_honoured() {
    let tmp = tempfile::tempdir().unwrap();
    for (level, dir) in [("2", "run_l2"), ("1", "nested/run_l1"), ("3", "run_l3")] {
        let o = simpler(
            tmp.path(),
            &[
                "run",
                "paged_attention",
                "--case",
                "CaseSmall1",
                "--dump-tensor",
                level,
                "--output",
                dir,
            ],
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
        let d = tmp.path().join(dir);
        assert_eq!(
            files(&d),
            [
                PathBuf::from("tensor_dump/tensor_dump.bin"),
                PathBuf::from("tensor_dump/tensor_dump.json")
            ]
        );
        check_dump(&d.join("tensor_dump"), level.parse().unwrap(), "block");
    }
    assert!(
        !tmp.path().join("outputs").exists(),
        "--output must replace outputs/<...>"
    );
    // Level 0 is off: no run directory at all.
    let o = simpler(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--dump-tensor",
            "0",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(!tmp.path().join("outputs").exists());
    assert_no_tmp(tmp.path());
}

#[test]
fn an_existing_output_dir_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keep");
    std::fs::create_dir_all(dir.join("tensor_dump")).unwrap();
    std::fs::write(dir.join("notes.txt"), b"precious").unwrap();
    std::fs::write(dir.join("tensor_dump/tensor_dump.json"), b"{\"old\": 1}").unwrap();
    let listing = files(&dir);
    let o = simpler(
        tmp.path(),
        &[
            "run",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--dump-tensor",
            "--output",
            "keep",
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("--output") && err.contains("keep") && err.contains("exists"),
        "the error names the flag, the directory and the reason: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(files(&dir), listing, "contents changed");
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"precious");
    assert_eq!(
        std::fs::read(dir.join("tensor_dump/tensor_dump.json")).unwrap(),
        b"{\"old\": 1}"
    );
}

#[test]
fn a_bad_level_or_policy_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let base = ["run", "paged_attention", "--case", "CaseSmall1"];
    let cases: [(&[&str], &[&str]); 4] = [
        (&["--dump-tensor", "7"], &["--dump-tensor", "7"]),
        (
            &["--dump-tensor", "two"],
            &["--dump-tensor", "two", "takes its value as a number"],
        ),
        (
            &["--dump-tensor", "--dump-policy", "sometimes"],
            &["--dump-policy", "sometimes", "block", "drop"],
        ),
        (
            &["--dump-tensor", "1", "--dump-policy", "sometimes"],
            &["--dump-policy", "sometimes"],
        ),
    ];
    for (flags, want) in cases {
        let args: Vec<&str> = base.iter().chain(flags).copied().collect();
        let o = simpler(tmp.path(), &args);
        let (out, err) = text(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{flags:?}: stdout: {out}\nstderr: {err}"
        );
        for w in want {
            assert!(
                err.contains(w),
                "{flags:?}: the error should mention {w:?}: {err}"
            );
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !tmp.path().join("outputs").exists(),
            "{flags:?}: nothing is written on a flag error"
        );
    }
}

/// `warning: dump lost data (drop policy): D tensor record(s) dropped, T
/// truncated, … ; see PATH` → (D, T).
fn loss_line(err: &str) -> Option<(u64, u64)> {
    let line = err
        .lines()
        .find(|l| l.starts_with("warning: dump lost data"))?;
    let num_before = |what: &str| -> u64 {
        let i = line
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} in {line:?}"));
        line[..i]
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap_or_else(|e| panic!("count before {what:?} in {line:?}: {e}"))
    };
    Some((
        // "1 tensor record dropped", "2 tensor records dropped".
        num_before(" tensor record"),
        num_before(" truncated"),
    ))
}

#[test]
fn drop_policy_prints_the_loss_block_policy_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |policy: &str, dir: &str| {
        simpler(
            tmp.path(),
            &[
                "run",
                "paged_attention",
                "--case",
                "CaseSmall2",
                "--dump-tensor",
                "--dump-policy",
                policy,
                "--dump-arena-kib",
                "1",
                "--output",
                dir,
            ],
        )
    };
    // drop: tensors above 1 KiB are cut, so data is lost and said so.
    let o = run("drop", "lossy");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    let m = check_dump(&tmp.path().join("lossy/tensor_dump"), 2, "drop");
    assert!(
        m.header.truncated_tensors > 0,
        "1 KiB arenas must truncate CaseSmall2's tensors"
    );
    let (dropped, truncated) =
        loss_line(&err).unwrap_or_else(|| panic!("no 'warning: dump lost data' line: {err}"));
    assert!(err.contains("drop policy"), "{err}");
    assert_eq!(
        dropped, m.header.dropped_records,
        "stderr vs manifest dropped_records"
    );
    assert_eq!(
        truncated, m.header.truncated_tensors,
        "stderr vs manifest truncated_tensors ({dropped} records dropped)"
    );
    assert!(
        out.contains("LOST"),
        "stdout's dump line says data was lost: {out}"
    );
    // block: same arena, nothing lost, nothing reported.
    let o = run("block", "lossless");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    let m = check_dump(&tmp.path().join("lossless/tensor_dump"), 2, "block");
    assert_eq!(
        (m.header.dropped_records, m.header.truncated_tensors),
        (0, 0)
    );
    assert!(m
        .tensors
        .iter()
        .all(|r| r.kind == Kind::Scalar || r.bin_size == full_size(r)));
    assert!(loss_line(&err).is_none(), "{err}");
    assert!(!out.contains("LOST"), "{out}");
    assert_no_tmp(tmp.path());
}
