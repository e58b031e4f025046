//! The `rust` blocks of the docs pages (the library use of the readers,
//! the diff and the replay) compile and run here against real dumps: each
//! test holds its page's block verbatim between `// docs/<page>: begin` and
//! `// end`, and `every_rust_block_of_the_docs_is_run_here` checks that every
//! block of every page appears in this file.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::doc_check::blocks;

type Res = Result<(), Box<dyn Error>>;

/// `simpler run WORKLOAD --case C --seed S --dump-all` into `dir/name`.
fn dumped_run(dir: &Path, name: &str, workload: &str, case: &str, seed: &str) -> PathBuf {
    let o = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .current_dir(dir)
        .args(["run", workload, "--case", case, "--seed", seed])
        .args(["--dump-all", "--output", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir.join(name)
}

#[test]
#[rustfmt::skip] // the block stays as the page shows it
fn the_dump_diff_block_runs() -> Res {
    let tmp = tempfile::tempdir()?;
    let run_a = dumped_run(tmp.path(), "a", "paged_attention", "CaseSmall1", "0");
    let run_b = dumped_run(tmp.path(), "b", "paged_attention", "CaseSmall1", "1");
    // docs/dump-diff.md: begin
    use simpler_inspect::diff::{diff, diff_paths, DiffOptions, Difference, Keep, MatchMode};
    use simpler_inspect::Dump;

    // run_a, run_b: two run folders (or dump folders, or manifests).
    let o = DiffOptions { match_mode: MatchMode::Key, rtol: 1e-5, atol: 1e-8 };
    // Small dumps in memory: every pair is kept in the report.
    let a = Dump::open(&run_a)?;
    let b = Dump::open(&run_b)?;
    let report = diff(&a, &b, &o)?;
    if let Some(Difference::Pair(p)) = report.first_difference() {
        println!("first difference: task {} arg {} ({:?})", p.task_a, p.arg_index, p.reason);
    }
    print!("{}", report.render_text(false, 50)); // the CLI's text
    // Any size, streamed: keep at most 50 rows per table, or spill for --json.
    let mut big = diff_paths(&run_a, &run_b, &o, Keep::Spill)?;
    big.write_json(&mut std::io::stdout())?;      // the CLI's --json
    // end
    assert!(
        report.first_difference().is_some(),
        "different seeds differ"
    );
    Ok(())
}

#[test]
#[rustfmt::skip] // the block stays as the page shows it
fn the_replay_block_runs() -> Res {
    let tmp = tempfile::tempdir()?;
    let run_dir = dumped_run(tmp.path(), "run", "paged_attention", "CaseSmall1", "0");
    let out = tmp.path().join("outputs");
    std::fs::create_dir(&out)?;
    // docs/insight-trace.md: begin
    use simpler_replay::{
        all::{replay_all, AllOptions},
        rebuild::RebuildOptions,
        replay_into,
        source::{DumpSource, Selector},
        spec::Tolerance,
        WorkspaceTarget,
    };

    let w = simpler_workloads::find("paged_attention")?;
    let kernels = w.kernels();
    // run_dir: a run folder with dumps, either layout; a kernel args dump when
    // there is one, else per-task records. out: where workspaces go.
    let src = DumpSource::open(&run_dir)?;
    let opts = RebuildOptions {
        workload: "paged_attention", case: "CaseSmall1", arch: "a2a3", clusters: 8, kernels: &kernels,
    };
    let tol = Tolerance { rtol: 1e-5, atol: 1e-8 };   // used for upstream-runtime dumps only
    let sel = Selector { func_id: Some(1), ..Selector::default() };
    let mut spec = src.select(&sel, &opts, tol)?.spec;
    spec.set_arg("4=0.5")?;                       // optional
    let o = replay_into(&WorkspaceTarget::Fresh(out), &spec, &run_dir, "spec", &kernels, &[])?;
    print!("{}", o.export.render_text());
    println!("{}", o.report.verification.render_text());
    // Every dispatch, in memory, on two threads:
    let all = replay_all(&src, &AllOptions { rebuild: opts, func_id: None, selector: Selector::default(),
                                             tolerance: tol, threads: 2 }, &mut |_, _| {})?;
    print!("{}", all.render_text());
    // end
    assert!(all.render_text().contains("PASS"), "{}", all.render_text());
    Ok(())
}

#[test]
#[rustfmt::skip] // the block stays as the page shows it
fn the_tensor_dump_block_runs() -> Res {
    let tmp = tempfile::tempdir()?;
    let run_dir = dumped_run(tmp.path(), "run", "vector_example", "Default", "0");
    // docs/tensor-dump.md: begin
    use simpler_inspect::{stream::RecordStream, Dump, Stage};

    let dump = Dump::open(&run_dir)?; // a run folder, its dump folder or the .json
    for r in dump.records() {
        if r.stage == Stage::AfterCompletion {
            let values: Vec<f64> = dump.elements_f64(r)?; // decoded by dtype
            let raw: Vec<u8> = dump.payload(r)?;          // the record's bytes, read by range
            println!("{} {} {:?} {} bytes", r.label(), r.dtype, &values[..4.min(values.len())], raw.len());
        }
    }
    // Any size, bounded memory: stop whenever you like.
    let mut s = RecordStream::open_manifest(&run_dir.join("tensor_dump/tensor_dump.json"))?;
    let first = s.next().transpose()?;
    // end
    assert_eq!(first.map(|r| r.task_id), dump.records().first().map(|r| r.task_id));
    Ok(())
}

/// Lines of `s` with their indentation removed, blank lines dropped.
fn trimmed(s: &str) -> Vec<&str> {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

#[test]
fn every_rust_block_of_the_docs_is_run_here() {
    let here = trimmed(include_str!("doc_api.rs"));
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut checked = 0;
    for e in std::fs::read_dir(&docs).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "md") || path.ends_with("writing-a-kernel.md") {
            continue; // writing-a-kernel.md: checked by my-kernels' tests
        }
        for (lang, body) in blocks(&std::fs::read_to_string(&path).unwrap()) {
            if lang != "rust" {
                continue;
            }
            let want = trimmed(&body);
            assert!(
                here.windows(want.len()).any(|w| w == want.as_slice()),
                "{}: a rust block that tests/it/doc_api.rs does not run:\n{body}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "found only {checked} rust blocks");
}
