//! Scratch: produce real viewer output for docs (deleted afterwards).
mod common;
#[path = "../../../src/dump_view.rs"]
mod dump_view;
use clap::Parser;
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    view: dump_view::ViewArgs,
}
fn show(args: &[&str], base: &str) {
    let mut full = vec!["view"];
    full.extend_from_slice(args);
    let a = Cli::try_parse_from(full).unwrap().view;
    let mut out = Vec::new();
    let r = dump_view::view_with(&a, std::path::Path::new(base), &mut out);
    println!("$ simpler dump view {}", args.join(" "));
    print!("{}", String::from_utf8(out).unwrap());
    match r {
        Ok(c) => println!("[exit {c:?}]"),
        Err(e) => println!("error: {e:#}\n[exit 2]"),
    }
    println!("=====");
}
#[test]
fn docs() {
    std::env::set_current_dir("/work/main").unwrap();
    let v = "tests/fixtures/reference-dumps/vector_example";
    let p = "tests/fixtures/reference-dumps/paged_attention_CaseSmall1";
    show(&[v], "/work/main");
    show(
        &[p, "--task", "0x0000000200000003", "--stage", "after"],
        "/work/main",
    );
    show(&[p, "--kind", "scalar"], "/work/main");
    show(&[p, "--func", "1"], "/work/main");
    show(&[p, "--task", "0x20", "--role", "inout"], "/work/main");
    show(
        &[
            v,
            "--task",
            "0x0000000100000003",
            "--export",
            "npy",
            "--out",
            "/tmp/vec_npy",
        ],
        "/work/main",
    );
    show(
        &[
            p,
            "--task",
            "0x0000000200000001",
            "--export",
            "txt",
            "--out",
            "/tmp/pa_txt",
        ],
        "/work/main",
    );
    show(
        &[
            p,
            "--task",
            "0x0000000200000001",
            "--export",
            "npy",
            "--out",
            "/tmp/pa_npy",
        ],
        "/work/main",
    );
    show(
        &[
            v,
            "--task",
            "0x0000000100000003",
            "--stage",
            "after",
            "--export",
            "txt",
            "--out",
            "/tmp/vec_txt",
        ],
        "/work/main",
    );
    show(&[], "/tmp/demo");
    show(&["outputs/nope"], "/work/main");
    show(&["/tmp/broken1"], "/work/main");
    show(&["/tmp/broken2"], "/work/main");
    show(&["/tmp/broken3"], "/work/main");
    show(&["/tmp/broken4"], "/work/main");
}
