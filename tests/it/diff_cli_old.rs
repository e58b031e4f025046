// ---------------------------------------------------------------------------
// The command module

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    diff: dump_diff::DiffArgs,
}

fn run_cli(args: &[&str]) -> Result<(ExitCode, String), String> {
    // `diff` is `diff_with` on stdout; keep it referenced.
    let _ = dump_diff::diff;
    let mut full = vec!["diff"];
    full.extend_from_slice(args);
    let a = Cli::try_parse_from(full).map_err(|e| e.to_string())?.diff;
    let mut out = Vec::new();
    match dump_diff::diff_with(&a, &mut out) {
        Ok(code) => Ok((code, String::from_utf8(out).unwrap())),
        Err(e) => Err(format!("{e:#}")),
    }
}

#[test]
fn command_exit_codes_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_dump(tmp.path(), "a", vec![f32_out(T0, 0, &[1.0, 2.0])]);
    let b = write_dump(tmp.path(), "b", vec![f32_out(T0, 0, &[1.0, 2.5])]);
    let (a, b) = (a.display().to_string(), b.display().to_string());

    let (code, out) = run_cli(&[&a, &a]).unwrap();
    assert_eq!(code, ExitCode::SUCCESS, "{out}");
    assert!(
        out.contains("PASS: 1 pairs, 1 passed, 0 failed, 0 only in A, 0 only in B"),
        "{out}"
    );

    let (code, out) = run_cli(&[&a, &b]).unwrap();
    assert_eq!(code, ExitCode::from(1), "{out}");
    assert!(out.contains("FAIL: 1 pairs, 0 passed, 1 failed"), "{out}");

    let (code, _) = run_cli(&[&a, &b, "--rtol", "0.5"]).unwrap();
    assert_eq!(code, ExitCode::SUCCESS);

    let (code, out) = run_cli(&[&a, &b, "--json"]).unwrap();
    assert_eq!(code, ExitCode::from(1));
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
