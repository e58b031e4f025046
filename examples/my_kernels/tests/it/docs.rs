//! `docs/writing-a-kernel.md` is true: every `rust` block is a verbatim
//! excerpt of this crate's sources (so it compiles, and runs in these
//! tests), and every `console` block runs as shown ([`doc_check`]).

use std::path::{Path, PathBuf};

#[path = "../../../../tests/it/doc_check.rs"]
mod doc_check;

fn page() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/writing-a-kernel.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect()
}

#[test]
fn every_rust_block_is_an_excerpt_of_the_crate() {
    let sources = sources();
    let rust: Vec<String> = doc_check::blocks(&page())
        .into_iter()
        .filter(|(lang, _)| lang == "rust")
        .map(|(_, b)| b)
        .collect();
    assert!(
        rust.len() >= 5,
        "the page shows the kernels, orchestration, workload and main"
    );
    for b in rust {
        assert!(
            sources.iter().any(|(_, s)| s.contains(&b)),
            "this block of docs/writing-a-kernel.md is not in examples/my_kernels/src:\n{b}"
        );
    }
}

#[test]
fn every_console_block_runs_as_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_my-kernels"));
    let ran = doc_check::check_console_blocks(&page(), "my-kernels", bin, tmp.path(), &[]);
    assert!(ran >= 9, "only {ran} commands on the page");
}
