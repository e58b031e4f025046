//! The `my-kernels` binary end to end, as its user runs it, and the
//! kernel-writing guide checked against this crate (one test binary).

mod docs;
mod end_to_end;
mod swimlane;

use std::path::Path;
use std::process::{Command, Output};

/// Run `my-kernels args…` in `dir`.
pub fn my_kernels(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_my-kernels"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run my-kernels")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Run and require exit code `code`; returns stdout.
pub fn expect(dir: &Path, args: &[&str], code: i32) -> String {
    let o = my_kernels(dir, args);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}
