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

/// Under strace: each file is fsynced before its rename, the `.bin` is in
/// place before the manifest, and the folder is fsynced after the
/// manifest's rename — the run reports success only then.
#[test]
fn dump_files_are_fsynced_before_their_rename_and_the_folder_after() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("trace");
    let o = std::process::Command::new("strace")
        .args([
            "-ff",
            "-qq",
            "-e",
            "trace=openat,fsync,rename,renameat,renameat2",
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
    // One file per thread (-ff): the main thread opens, syncs and renames.
    let main = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("trace.")?
                .parse::<u32>()
                .ok()
                .map(|pid| (pid, e.path()))
        })
        .min()
        .expect("a trace file per thread")
        .1;
    let trace = std::fs::read_to_string(main).unwrap();
    let mut fds: std::collections::HashMap<String, String> = Default::default();
    let mut events: Vec<(&str, String)> = Vec::new();
    for call in trace.lines() {
        let quoted: Vec<&str> = call.split('"').skip(1).step_by(2).collect();
        let result = call.rsplit(" = ").next().unwrap_or_default().trim();
        if call.starts_with("openat(") {
            if let (Some(p), Ok(fd)) = (quoted.first(), result.parse::<i32>()) {
                fds.insert(fd.to_string(), p.to_string());
            }
        } else if let Some(rest) = call.strip_prefix("fsync(") {
            let fd = rest.split(')').next().unwrap_or_default();
            events.push(("fsync", fds.get(fd).cloned().unwrap_or_default()));
        } else if call.starts_with("rename") && quoted.len() >= 2 {
            events.push(("rename", quoted[quoted.len() - 1].to_string()));
        }
    }
    let at = |kind: &str, suffix: &str| {
        events
            .iter()
            .position(|(k, p)| *k == kind && p.ends_with(suffix))
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
            "{f}: renamed before fsync"
        );
    }
    assert!(
        at("rename", "/tensor_dump.bin") < at("rename", "/tensor_dump.json"),
        "manifest before its payload"
    );
    let json = at("rename", "/tensor_dump.json");
    assert!(
        events[json..]
            .iter()
            .any(|(k, p)| *k == "fsync" && p.ends_with("r/tensor_dump")),
        "the folder is not fsynced after the manifest's rename: {events:?}"
    );
}
