//! Flag values at their extremes end in one clear error (exit 2, never a
//! panic) in every command that takes them; a closed stdout ends quietly;
//! the dump's files are fsynced before they are renamed into place and
//! their folder after.

use std::{
    io::{BufRead, BufReader},
    process::Stdio,
};

use super::{run, simpler, text};

/// Every command that takes the chip flags, as a prefix to add flags to.
const COMMANDS: [&[&str]; 3] = [
    &["run", "vector_example"],
    &["bench", "replay", "--reps", "1"],
    &["insight-trace", "vector_example", "--func-id", "0"],
];

fn refused(args: &[&str], want: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(tmp.path(), args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {err:?} lacks {w:?}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(super::files(tmp.path()).is_empty(), "{args:?} left files");
}

#[test]
fn timeout_extremes_are_clear_errors_in_every_command() {
    for cmd in COMMANDS {
        for bad in [
            "1e20",
            "1e30",
            "1000000001",
            "0",
            "-1",
            "-0",
            "nan",
            "inf",
            "-inf",
            "x",
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--timeout", bad]);
            refused(
                &args,
                &[
                    &format!("'{bad}' for '--timeout"),
                    "expected seconds in (0, 1e9]",
                ],
            );
        }
    }
    // The largest accepted value runs.
    let tmp = tempfile::tempdir().unwrap();
    let o = run(tmp.path(), &["run", "vector_example", "--timeout", "1e9"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn size_extremes_are_clear_errors() {
    for cmd in COMMANDS {
        for bad in [
            "0",
            "1048577",
            "17592186044416",
            "18446744073709551616",
            "-1",
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--gm-mib", bad]);
            refused(&args, &["--gm-mib", bad]);
        }
    }
    for bad in [
        "0",
        "1048577",
        "18014398509481984",
        "18446744073709551616",
        "-5",
    ] {
        refused(
            &[
                "run",
                "vector_example",
                "--dump-tensor",
                "--dump-arena-kib",
                bad,
            ],
            &["--dump-arena-kib", bad],
        );
    }
    // The largest arena is accepted (it bounds memory; it is not reserved).
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &[
            "run",
            "vector_example",
            "--dump-tensor",
            "--dump-arena-kib",
            "1048576",
            "--output",
            "r",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // The largest GM either reserves or says why not.
    let o = run(
        tmp.path(),
        &["run", "vector_example", "--gm-mib", "1048576"],
    );
    let (_, err) = text(&o);
    match o.status.code() {
        Some(0) => {}
        Some(2) => assert!(err.contains("cannot reserve 1099511627776 bytes"), "{err}"),
        c => panic!("exit {c:?}: {err}"),
    }
}

/// `simpler dump view … | head -2`: the reader leaves after two lines; the
/// viewer ends quietly with 0.
#[test]
fn a_closed_stdout_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    // 1000 tasks: a listing far larger than a pipe's buffer.
    let o = run(tmp.path(), &["run", "flood", "--dump-all", "--output", "r"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    for args in [
        &["dump", "view", "r", "--limit", "100000"][..],
        &["dump", "view", "r", "--dispatches"],
    ] {
        let mut child = simpler(tmp.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..2 {
            lines.next().unwrap().unwrap();
        }
        drop(lines); // like `head -2`
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Under strace: each file is fsynced before its rename (the `.bin` on
/// a thread of its own, through a duplicate of its descriptor, while the
/// manifest is written), the `.bin` is in place before the manifest, and
/// the folder is fsynced after the manifest's rename — the run reports
/// success only then.
#[test]
fn dump_files_are_fsynced_before_their_rename_and_the_folder_after() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("trace");
    let o = std::process::Command::new("strace")
        .args([
            "-ff",
            "-qq",
            "-ttt",
            "-T",
            "-e",
            "trace=openat,fsync,rename,renameat,renameat2,fcntl,dup,dup3",
            "-o",
        ])
        .arg(&log)
        .arg(super::binary())
        .args(["run", "vector_example", "--dump-all", "--output", "r"])
        .current_dir(tmp.path())
        .output();
    match o {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "SKIPPED: strace cannot trace here: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED: no strace(1): {e}");
            return;
        }
    }
    let events = traced_file_events(tmp.path());
    // An fsync counts from its end, a rename from its start.
    let at = |kind: &str, suffix: &str| {
        events
            .iter()
            .find(|e| e.kind == kind && e.path.ends_with(suffix))
            .map(|e| if kind == "fsync" { e.end } else { e.start })
            .unwrap_or_else(|| panic!("no {kind} of *{suffix} in {events:?}"))
    };
    for f in [
        "tensor_dump.bin",
        "tensor_dump.json",
        "args_dump.json",
        "kernel_args_dump.json",
    ] {
        assert!(
            at("fsync", &format!("{f}.tmp")) < at("rename", &format!("/{f}")),
            "{f}: renamed before its fsync ended: {events:?}"
        );
    }
    assert!(
        at("rename", "/tensor_dump.bin") < at("rename", "/tensor_dump.json"),
        "manifest before its payload"
    );
    let json = at("rename", "/tensor_dump.json");
    assert!(
        events
            .iter()
            .any(|e| e.kind == "fsync" && e.start > json && e.path.ends_with("r/tensor_dump")),
        "the folder is not fsynced after the manifest's rename: {events:?}"
    );
}

/// One traced call on a file.
#[derive(Debug)]
struct FileEvent {
    kind: &'static str,
    path: String,
    /// Seconds since the epoch when the call started and ended.
    start: f64,
    end: f64,
}

/// The fsyncs and renames of every thread's trace (`strace -ff -ttt -T`
/// files `trace.<tid>` in `dir`), in time order, each fsync named by the
/// path its descriptor was opened on (duplicates followed).
fn traced_file_events(dir: &std::path::Path) -> Vec<FileEvent> {
    let mut calls: Vec<(f64, f64, String)> = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("trace.") {
            continue;
        }
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let Some((ts, call)) = line.split_once(' ') else {
                continue;
            };
            let dur = call
                .rsplit_once('<')
                .and_then(|(_, d)| d.trim_end_matches('>').parse::<f64>().ok())
                .unwrap_or(0.0);
            if let Ok(ts) = ts.parse::<f64>() {
                calls.push((ts, ts + dur, call.to_string()));
            }
        }
    }
    calls.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut fds: std::collections::HashMap<String, String> = Default::default();
    let mut events = Vec::new();
    for (start, end, call) in calls {
        let quoted: Vec<&str> = call.split('"').skip(1).step_by(2).collect();
        let result = call
            .rsplit(" = ")
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        // The first argument: the descriptor of fsync, fcntl and dup.
        let fd_arg = call
            .split_once('(')
            .and_then(|(_, r)| r.split([',', ')']).next())
            .unwrap_or_default()
            .trim()
            .to_string();
        let dup = call.starts_with("dup") || call.starts_with("fcntl(") && call.contains("F_DUPFD");
        if call.starts_with("openat(") {
            if let (Some(p), Ok(fd)) = (quoted.first(), result.parse::<i32>()) {
                fds.insert(fd.to_string(), p.to_string());
            }
        } else if dup {
            if let (Some(p), Ok(fd)) = (fds.get(&fd_arg).cloned(), result.parse::<i32>()) {
                fds.insert(fd.to_string(), p);
            }
        } else if call.starts_with("fsync(") {
            let path = fds.get(&fd_arg).cloned().unwrap_or_default();
            events.push(FileEvent {
                kind: "fsync",
                path,
                start,
                end,
            });
        } else if call.starts_with("rename") && quoted.len() >= 2 {
            let path = quoted[quoted.len() - 1].to_string();
            events.push(FileEvent {
                kind: "rename",
                path,
                start,
                end,
            });
        }
    }
    events
}
