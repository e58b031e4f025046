//! The `simpler dump view` CLI module (src/dump_view.rs of the root package),
//! compiled into this test through #[path] and driven through clap.

use crate::common;

use std::path::Path;
use std::process::ExitCode;

use crate::dump_view::{view, view_with, ViewArgs};
use clap::Parser;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    view: ViewArgs,
}

fn parse(args: &[&str]) -> ViewArgs {
    let mut full = vec!["view"];
    full.extend_from_slice(args);
    Cli::try_parse_from(full).unwrap().view
}

/// Run the viewer; returns (exit code, stdout) or the error message.
fn run(args: &[&str], base: &Path) -> Result<(ExitCode, String), String> {
    let a = parse(args);
    let mut out = Vec::new();
    match view_with(&a, base, &mut out) {
        Ok(code) => Ok((code, String::from_utf8(out).unwrap())),
        Err(e) => Err(format!("{e:#}")),
    }
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn lists_the_reference_vector_dump() {
    let dir = path_str(&common::reference("vector_example"));
    let (code, out) = run(&[&dir], Path::new("/")).unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    println!("{out}");
    assert!(out.contains("18 records from 5 tasks"), "{out}");
    assert!(out.contains("2.0 2.0 2.0 2.0 …"), "{out}");
    assert!(out.contains("47.0 47.0 47.0 47.0 …"), "{out}");
    // One header line + 18 rows after the summary.
    assert!(out.lines().any(|l| l.starts_with(" #  task_id")), "{out}");
}

#[test]
fn filters_by_task_stage_role_kind_arg() {
    let dir = path_str(&common::reference("paged_attention_CaseSmall1"));
    let (code, out) = run(
        &[
            &dir,
            "--task",
            "0x0000000200000003",
            "--stage",
            "after",
            "--arg",
            "5",
        ],
        Path::new("/"),
    )
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(
        out.contains(
            "1 of 72 records match --task 0x0000000200000003 --stage after_completion --arg 5"
        ),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("22  0x0000000200000003")),
        "{out}"
    );
    // Decimal task ids work too.
    let (_, out) = run(
        &[&dir, "--task", "8589934595", "--kind", "scalar"],
        Path::new("/"),
    )
    .unwrap();
    assert!(
        out.contains("2 of 72 records match --task 0x0000000200000003 --kind scalar"),
        "{out}"
    );
    let (_, out) = run(
        &[&dir, "--role", "inout", "--stage", "before_dispatch"],
        Path::new("/"),
    )
    .unwrap();
    assert!(out.contains("12 of 72 records match"), "{out}");
}

#[test]
fn no_match_exits_1_with_hints() {
    let dir = path_str(&common::reference("paged_attention_CaseSmall1"));
    let (code, out) = run(&[&dir, "--task", "0x99"], Path::new("/")).unwrap();
    assert_eq!(code, ExitCode::from(1));
    assert!(
        out.contains("no records match --task 0x0000000000000099 (72 records in the dump)"),
        "{out}"
    );
    assert!(
        out.contains("it has 12 tasks, 0x0000000200000000 .. 0x000000020000000b"),
        "{out}"
    );
    let (code, out) = run(&[&dir, "--func", "1"], Path::new("/")).unwrap();
    assert_eq!(code, ExitCode::from(1));
    assert!(out.contains("no func ids"), "{out}");
}

#[test]
fn bad_flags_are_rejected_by_clap() {
    for bad in [
        &["--stage", "during"][..],
        &["--task", "0xzz"],
        &["--role", "reader"],
        &["--kind", "vector"],
        &["--export", "csv"],
        &["--out", "x"],
    ] {
        let mut full = vec!["view"];
        full.extend_from_slice(bad);
        let e = Cli::try_parse_from(full).unwrap_err().to_string();
        assert!(e.contains(bad[0]), "{bad:?}: {e}");
    }
}

#[test]
fn default_dir_is_the_newest_dump_under_outputs() {
    let base = tempfile::tempdir().unwrap();
    // No outputs/ at all.
    let e = run(&[], base.path()).unwrap_err();
    assert!(e.contains("no tensor dump found: looked for"), "{e}");
    assert!(
        e.contains(&path_str(&base.path().join("outputs/*/tensor_dump"))),
        "{e}"
    );
    // outputs/ without dumps.
    std::fs::create_dir_all(base.path().join("outputs/run_a")).unwrap();
    let e = run(&[], base.path()).unwrap_err();
    assert!(e.contains("none with a tensor_dump/ folder"), "{e}");
    // Two dumps: the newer one wins.
    let (m, bin) = common::varied();
    let old = common::write(&base.path().join("outputs/old_run"), &m, &bin);
    let (m2, bin2) = common::build(vec![common::tensor(
        5,
        &[9],
        "before_dispatch",
        "input",
        0,
        "FLOAT32",
        &[1],
        common::f32_bytes(&[1.0]),
    )]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let new = common::write(&base.path().join("outputs/new_run"), &m2, &bin2);
    assert!(
        std::fs::metadata(&new).unwrap().modified().unwrap()
            > std::fs::metadata(&old).unwrap().modified().unwrap()
    );
    let (_, out) = run(&[], base.path()).unwrap();
    assert!(
        out.contains(&path_str(&new.join("tensor_dump.json"))),
        "{out}"
    );
    assert!(out.contains("1 records from 1 tasks"), "{out}");
}

#[test]
fn exports_npy_and_txt_to_the_default_and_given_dirs() {
    let base = tempfile::tempdir().unwrap();
    let (m, bin) = common::varied();
    let dump_dir = common::write(&base.path().join("run"), &m, &bin);
    let dir = path_str(&base.path().join("run"));
    let (code, out) = run(&[&dir, "--export", "npy"], Path::new("/")).unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let export = dump_dir.join("export");
    assert!(
        out.contains(&format!(
            "exported 12 of 12 records as npy to {}",
            export.display()
        )),
        "{out}"
    );
    assert!(out.contains("wrote task0x0000000100000000_after_completion_arg1_output.npy  (record 3; note: BFLOAT16 exported as FLOAT32"), "{out}");
    assert!(out.contains("raw uint8"), "{out}");
    assert!(export
        .join("task0x0000000100000001_before_dispatch_arg6_inout.npy")
        .is_file());
    assert!(export
        .join("task0x0000000100000001_after_completion_arg6_inout.npy")
        .is_file());

    let out_dir = base.path().join("txt");
    let (_, out) = run(
        &[
            &dir,
            "--export",
            "txt",
            "--out",
            &path_str(&out_dir),
            "--kind",
            "tensor",
            "--limit",
            "2",
        ],
        Path::new("/"),
    )
    .unwrap();
    assert!(
        out.contains("... 8 more records not listed (--limit 2)"),
        "{out}"
    );
    assert!(out.contains("exported 10 of 10 records as txt"), "{out}");
    let n = std::fs::read_dir(&out_dir).unwrap().count();
    assert_eq!(n, 10);
}

#[test]
fn read_errors_surface_as_messages() {
    let base = tempfile::tempdir().unwrap();
    let e = run(&[&path_str(&base.path().join("nope"))], Path::new("/")).unwrap_err();
    assert!(e.contains("does not exist"), "{e}");
    let dir = common::write_raw(base.path(), "{\"total_tensors\": 1,", b"");
    let e = run(&[&path_str(&dir)], Path::new("/")).unwrap_err();
    assert!(e.contains("truncated JSON"), "{e}");
}

#[test]
fn view_prints_to_stdout() {
    let a = ViewArgs {
        dir: Some(common::reference("vector_example")),
        kind: Some(simpler_dump::reader::RecordKind::Scalar),
        ..ViewArgs::default()
    };
    assert_eq!(view(&a).unwrap(), ExitCode::SUCCESS);
}
