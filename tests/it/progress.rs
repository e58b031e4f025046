//! Progress bars (issue 15: "no progress indication anywhere"): drawn on
//! stderr when it is a terminal — here a real pseudo-terminal — and
//! never when stderr is piped or `--quiet` is given.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use crate::faults::simpler;

/// Run `simpler args` with stderr on a fresh pseudo-terminal; returns
/// (exit code, stdout, everything the terminal received).
fn on_a_terminal(args: &[&str]) -> (Option<i32>, String, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    on_a_terminal_in(tmp.path(), args, &[])
}

/// [`on_a_terminal`] in `cwd` with `env` added.
fn on_a_terminal_in(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, Vec<u8>) {
    let (master, slave) = crate::faults::pty();
    let mut child = simpler(cwd)
        .args(args)
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child (the last holder of the slave) exits.
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    let mut out = String::new();
    stdout.read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    (status.code(), out, reader.join().unwrap())
}

const BENCH: [&str; 4] = ["bench", "replay", "--reps", "1"];

#[test]
fn a_long_command_draws_a_bar_on_a_terminal_and_clears_it() {
    let (code, out, tty) = on_a_terminal(&BENCH);
    let tty = String::from_utf8_lossy(&tty);
    assert_eq!(code, Some(0), "{out}\n{tty}");
    assert!(
        tty.contains("bench replay: "),
        "no status line on the terminal: {tty:?}"
    );
    assert!(
        tty.contains("\x1b["),
        "no terminal control sequence: {tty:?}"
    );
    assert!(out.contains("bench replay  ("), "{out}");
    assert!(
        !out.contains('\x1b') && !out.contains('\r'),
        "progress leaked into stdout: {out:?}"
    );
}

#[test]
fn quiet_draws_nothing_even_on_a_terminal() {
    let mut args = BENCH.to_vec();
    args.push("--quiet");
    let (code, out, tty) = on_a_terminal(&args);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        tty.is_empty(),
        "--quiet still drew: {:?}",
        String::from_utf8_lossy(&tty)
    );
}

#[test]
fn piped_output_carries_no_progress_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = simpler(tmp.path())
        .args(BENCH)
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert!(
            !bytes.contains(&b'\r') && !bytes.contains(&0x1b),
            "{name} carries progress bytes: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// True when `s` has text other than CSI sequences (`ESC [ digits letter`).
fn visible(s: &str) -> bool {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                chars.next();
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            c if c.is_whitespace() => {}
            _ => return true,
        }
    }
    false
}

#[test]
fn every_long_operation_draws_its_progress_on_a_terminal() {
    // Bars of quick operations drawn at once (else only after 400 ms).
    let now = [("SIMPLER_PROGRESS_AFTER_MS", "0")];
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str, &str, i32); 9] = [
        (
            &["run", "vector_example", "--dump-all", "--output", "a"],
            "running vector_example Default: ",
            "PASS",
            0,
        ),
        (
            &[
                "run",
                "vector_example",
                "--dump-tensor",
                "--seed",
                "1",
                "--output",
                "b",
            ],
            "running vector_example",
            "PASS",
            0,
        ),
        (
            &["dump", "view", "a", "--export", "npy", "--limit", "0"],
            "dump view: exporting",
            "exported 15 of 15",
            0,
        ),
        (
            &["dump", "view", "a", "--limit", "3"],
            "dump view: reading",
            "15 records",
            0,
        ),
        (
            &["dump", "diff", "a", "b", "--limit", "0"],
            "dump diff: reading",
            "PASS: ",
            0,
        ),
        (
            &[
                "insight-trace",
                "vector_example",
                "--dump-dir",
                "a",
                "--all",
            ],
            "insight-trace --all: replaying",
            "PASS: all 5 dispatches",
            0,
        ),
        (
            &[
                "run",
                "vector_example",
                "--predict",
                "--swimlane",
                "--output",
                "r",
            ],
            "swimlane files: ",
            "prediction: ",
            0,
        ),
        (&["swimlane", "r"], "swimlane: ", "Critical path: ", 0),
        (
            &["swimlane", "r", "--check"],
            "swimlane --check: ",
            "upstream tools: OK",
            0,
        ),
    ];
    for (args, bar, printed, exit) in cases {
        let (code, out, tty) = on_a_terminal_in(tmp.path(), args, &now);
        let tty = String::from_utf8_lossy(&tty);
        assert_eq!(code, Some(exit), "{args:?}: {out}\n{tty}");
        assert!(
            tty.contains(bar),
            "{args:?}: no {bar:?} on the terminal: {tty:?}"
        );
        assert!(out.contains(printed), "{args:?}: {out}");
        assert!(
            !out.contains('\x1b') && !out.contains('\r'),
            "{args:?}: progress leaked into stdout: {out:?}"
        );
        // Cleared: the terminal's last line is not left holding the bar.
        let after_last_erase = tty.rsplit("\x1b[2K").next().unwrap_or_default();
        assert!(!visible(after_last_erase), "{args:?}: not cleared: {tty:?}");
    }
    // Piped, even at 0 ms, or --quiet on a terminal: nothing.
    let o = simpler(tmp.path())
        .args(["swimlane", "r", "--check"])
        .envs(now)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (code, _, tty) = on_a_terminal_in(tmp.path(), &["dump", "diff", "a", "b", "--quiet"], &now);
    assert_eq!(code, Some(0));
    assert!(
        tty.is_empty(),
        "--quiet drew: {:?}",
        String::from_utf8_lossy(&tty)
    );
}
