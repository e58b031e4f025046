//! `simpler dump view` and `simpler dump diff`, driving the binary: what
//! is printed, exit codes 0 / 1 / 2, and the messages of bad input. (These
//! tests used to compile the command modules into the dump crate's tests
//! through `#[path]`.)

use std::path::Path;
use std::process::Command;

use crate::synth;

/// Run `simpler <args>` in `cwd`: `Ok((exit code, stdout))` for 0 and 1,
/// `Err(message)` (stderr without `error: `) for 2.
fn simpler(args: &[&str], cwd: &Path) -> Result<(u8, String), String> {
    let o = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run simpler");
    let code = o.status.code().expect("exit code") as u8;
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    match code {
        0 | 1 => Ok((code, stdout)),
        _ => Err(stderr
            .trim_end()
            .strip_prefix("error: ")
            .unwrap_or(stderr.trim_end())
            .to_string()),
    }
}

/// `simpler dump view <args>` in `base`.
fn run(args: &[&str], base: &Path) -> Result<(u8, String), String> {
    let mut full = vec!["dump", "view"];
    full.extend_from_slice(args);
    simpler(&full, base)
}

/// `simpler dump diff <args>`.
fn run_cli(args: &[&str]) -> Result<(u8, String), String> {
    let mut full = vec!["dump", "diff"];
    full.extend_from_slice(args);
    simpler(&full, Path::new("/"))
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn lists_the_reference_vector_dump() {
    let dir = path_str(&synth::reference("vector_example"));
    let (code, out) = run(&[&dir], Path::new("/")).unwrap();
    assert_eq!(code, 0);
    println!("{out}");
    assert!(out.contains("18 records from 5 tasks"), "{out}");
    assert!(out.contains("2.0 2.0 2.0 2.0 …"), "{out}");
    assert!(out.contains("47.0 47.0 47.0 47.0 …"), "{out}");
    // One header line + 18 rows after the summary.
    assert!(out.lines().any(|l| l.starts_with(" #  task_id")), "{out}");
}

#[test]
fn filters_by_task_stage_role_kind_arg() {
    let dir = path_str(&synth::reference("paged_attention_CaseSmall1"));
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
    assert_eq!(code, 0);
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
    let dir = path_str(&synth::reference("paged_attention_CaseSmall1"));
    let (code, out) = run(&[&dir, "--task", "0x99"], Path::new("/")).unwrap();
    assert_eq!(code, 1);
    assert!(
        out.contains("no records match --task 0x0000000000000099 (72 records in the dump)"),
        "{out}"
    );
    assert!(
        out.contains("it has 12 tasks, 0x0000000200000000 .. 0x000000020000000b"),
        "{out}"
    );
    let (code, out) = run(&[&dir, "--func", "1"], Path::new("/")).unwrap();
    assert_eq!(code, 1);
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
        let e = run(bad, Path::new("/")).unwrap_err();
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
    assert!(e.contains("outputs/*/args_dump"), "{e}");
    // outputs/ without dumps.
    std::fs::create_dir_all(base.path().join("outputs/run_a")).unwrap();
    let e = run(&[], base.path()).unwrap_err();
    assert!(
        e.contains("none with a tensor_dump/ or args_dump/ folder"),
        "{e}"
    );
    // Two dumps: the newer one wins.
    let (m, bin) = synth::varied();
    let old = synth::write(&base.path().join("outputs/old_run"), &m, &bin);
    let (m2, bin2) = synth::build(vec![synth::tensor(
        5,
        &[9],
        "before_dispatch",
        "input",
        0,
        "FLOAT32",
        &[1],
        synth::f32_bytes(&[1.0]),
    )]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let new = synth::write(&base.path().join("outputs/new_run"), &m2, &bin2);
    assert!(
        std::fs::metadata(&new).unwrap().modified().unwrap()
            > std::fs::metadata(&old).unwrap().modified().unwrap()
    );
    let (_, out) = run(&[], base.path()).unwrap();
    assert!(
        out.contains(&path_str(&new.join("tensor_dump.json"))),
        "{out}"
    );
    assert!(out.contains("1 record from 1 task;"), "{out}");
}

#[test]
fn exports_npy_and_txt_to_the_default_and_given_dirs() {
    let base = tempfile::tempdir().unwrap();
    let (m, bin) = synth::varied();
    let dump_dir = synth::write(&base.path().join("run"), &m, &bin);
    let dir = path_str(&base.path().join("run"));
    let (code, out) = run(&[&dir, "--export", "npy"], Path::new("/")).unwrap();
    assert_eq!(code, 0);
    // Beside the dump folder, never in it (issue 15).
    let export = dump_dir.with_file_name("tensor_dump_export");
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
    let dir = synth::write_raw(base.path(), "{\"total_tensors\": 1,", b"");
    let e = run(&[&path_str(&dir)], Path::new("/")).unwrap_err();
    assert!(e.contains("truncated JSON"), "{e}");
}

const T0: u64 = 0x0000_0002_0000_0000;

fn write_dump(
    root: &Path,
    name: &str,
    records: Vec<(synth::RecordJson, Vec<u8>)>,
) -> std::path::PathBuf {
    let (m, bin) = synth::build(records);
    let run = root.join(name);
    synth::write(&run, &m, &bin);
    run
}

fn f32_out(task: u64, arg: u32, v: &[f32]) -> (synth::RecordJson, Vec<u8>) {
    synth::tensor(
        task,
        &[0],
        "after_completion",
        "output",
        arg,
        "FLOAT32",
        &[v.len() as u64],
        synth::f32_bytes(v),
    )
}

#[test]
fn command_exit_codes_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_dump(tmp.path(), "a", vec![f32_out(T0, 0, &[1.0, 2.0])]);
    let b = write_dump(tmp.path(), "b", vec![f32_out(T0, 0, &[1.0, 2.5])]);
    let (a, b) = (a.display().to_string(), b.display().to_string());

    let (code, out) = run_cli(&[&a, &a]).unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("PASS: 1 pairs, 1 passed, 0 failed, 0 only in A, 0 only in B"),
        "{out}"
    );

    let (code, out) = run_cli(&[&a, &b]).unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL: 1 pairs, 0 passed, 1 failed"), "{out}");

    let (code, _) = run_cli(&[&a, &b, "--rtol", "0.5"]).unwrap();
    assert_eq!(code, 0);

    let (code, out) = run_cli(&[&a, &b, "--json"]).unwrap();
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["summary"]["failed"], 1);
    assert_eq!(v["rtol"], 1e-5);
    assert_eq!(v["atol"], 1e-8);

    let e = run_cli(&[&a, &b, "--rtol", "-1"]).unwrap_err();
    assert_eq!(e, "--rtol -1: expected a finite number >= 0");
    let e = run_cli(&[&a, &b, "--match", "seq"]).unwrap_err();
    assert!(e.contains("\"seq\": expected key or order"), "{e}");
    let missing = tmp.path().join("nope").display().to_string();
    let e = run_cli(&[&a, &missing]).unwrap_err();
    assert_eq!(e, format!("dump B: dump path {missing} does not exist"));
    std::fs::write(tmp.path().join("a/tensor_dump/tensor_dump.json"), "{").unwrap();
    let e = run_cli(&[&a, &b]).unwrap_err();
    assert!(
        e.starts_with("dump A: ") && e.contains("tensor_dump.json: truncated JSON"),
        "{e}"
    );
}

#[test]
fn an_export_onto_a_full_disk_stops_with_one_error_and_leaves_only_whole_files() {
    let base = tempfile::tempdir().unwrap();
    let (m, bin) = synth::varied();
    synth::write(&base.path().join("run"), &m, &bin);
    let dir = path_str(&base.path().join("run"));
    // The whole export on a roomy disk, to compare with.
    let full = base.path().join("full");
    let (code, _) = run(
        &[&dir, "--export", "npy", "--out", &path_str(&full)],
        Path::new("/"),
    )
    .unwrap();
    assert_eq!(code, 0);
    let args = [
        "dump", "view", &dir, "--export", "npy", "--out", "e", "--limit", "0",
    ];
    let Some((o, left)) = crate::faults::on_tmpfs("size=12k", &args) else {
        return;
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("No space left on device") && err.contains(".npy"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one error line: {err}");
    assert!(!err.contains("panicked") && !err.contains(".tmp"), "{err}");
    crate::common::assert_no_tmp(left.path());
    // What it wrote before the disk filled is whole: byte for byte the
    // files of the full export.
    let written: Vec<_> = std::fs::read_dir(left.path().join("e")).unwrap().collect();
    assert!(written.len() < 12, "the disk should have filled");
    for f in written {
        let f = f.unwrap();
        let want = std::fs::read(full.join(f.file_name())).unwrap();
        assert_eq!(
            std::fs::read(f.path()).unwrap(),
            want,
            "{:?}",
            f.file_name()
        );
    }
}

/// A folder holding `simpler run paged_attention --case CaseSmall1 FLAGS
/// --output OUT`, which passed.
fn small1_dump(flags: &[&str], out: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "paged_attention", "--case", "CaseSmall1"];
    args.extend_from_slice(flags);
    args.extend(["--output", out]);
    let (code, _) = simpler(&args, tmp.path()).unwrap();
    assert_eq!(code, 0);
    tmp
}

/// `path`'s text with the first `"bits"` hex of a scalar changed in its
/// lowest bit (inside every dtype's width, so the value it encodes moves).
fn flip_first_bits(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let at = text.find("\"bits\"").expect("a scalar with bits");
    let hex = at + text[at..].find("\"0x").unwrap() + 1;
    let last = hex + 17;
    let d = u8::from_str_radix(&text[last..=last], 16).unwrap() ^ 1;
    let edited = format!("{}{:x}{}", &text[..last], d, &text[last + 1..]);
    std::fs::write(path, edited).unwrap();
}

/// A scalar whose `value` and `bits` disagree (one of them edited by hand)
/// is refused by every reader of our files, naming the file, the record
/// and the field: shown the value, a user would otherwise read one number
/// while `dump view` and the replay use the other.
#[test]
fn a_scalar_whose_value_and_bits_disagree_is_refused_in_every_dump() {
    let tmp = small1_dump(&["--dump-all"], "r");
    for (file, what) in [
        ("tensor_dump.json", "record "),
        ("args_dump.json", "args["),
        ("kernel_args_dump.json", "dispatch "),
    ] {
        let p = format!("r/tensor_dump/{file}");
        let (code, _) = run(&[&p], tmp.path()).unwrap();
        assert_eq!(code, 0, "{file} as written reads");
        flip_first_bits(&tmp.path().join(&p));
        let e = run(&[&p, "--limit", "all"], tmp.path()).unwrap_err();
        assert!(e.contains(&p) && e.contains(what), "{file}: {e}");
        assert!(
            e.contains("value: ") && e.contains("one of them was edited"),
            "{e}"
        );
    }
}

/// Our upstream-layout files carry `bits` beside the upstream `value`
/// text: an edited value is refused there too (the value is compared as
/// the 6-digit text the writer puts down for those bits), while a file
/// as written reads.
#[test]
fn an_edited_scalar_value_is_refused_in_our_upstream_layout_too() {
    let tmp = small1_dump(&["--dump-tensor", "--dump-layout", "upstream"], "u");
    let (code, _) = run(&["u", "--limit", "all"], tmp.path()).unwrap();
    assert_eq!(code, 0, "as written it reads");
    let path = tmp.path().join("u/args_dump/args_dump.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("\"value\":").expect("a scalar") + "\"value\":".len();
    let end = at + text[at..].find(',').unwrap();
    let old: f64 = text[at..end].trim().parse().unwrap();
    let edited = format!("{}{}{}", &text[..at], old * 2.0 + 1.0, &text[end..]);
    std::fs::write(&path, edited).unwrap();
    let e = run(&["u", "--limit", "all"], tmp.path()).unwrap_err();
    assert!(e.contains("args_dump.json: record "), "{e}");
    assert!(
        e.contains("field value: ") && e.contains("one of them was edited"),
        "{e}"
    );
}
