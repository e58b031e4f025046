//! `docs/writing-a-kernel.md` is true: every `rust` block is a verbatim
//! excerpt of this crate's sources (so it compiles and runs with them),
//! and every `console` block's commands run here, in order, in one
//! folder, exit as the page says and print the lines it shows — numbers,
//! addresses, core ids and timestamps aside, which change from run to run.

use std::path::{Path, PathBuf};

use super::{my_kernels, text};

fn page() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/writing-a-kernel.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `(language, body)` of every fenced block.
fn blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in md.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_string(), String::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    out
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
    let rust: Vec<String> = blocks(&page())
        .into_iter()
        .filter(|(lang, _)| lang == "rust")
        .map(|(_, b)| b)
        .collect();
    assert!(rust.len() >= 5, "the page shows the kernels, orchestration, workload and main");
    for b in rust {
        assert!(
            sources.iter().any(|(_, s)| s.contains(&b)),
            "this block of docs/writing-a-kernel.md is not in examples/my_kernels/src:\n{b}"
        );
    }
}

/// A line with what varies between runs masked: hex and decimal numbers
/// become `#`, signs and runs of blanks (column padding) collapse.
fn mask(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.next_if(char::is_ascii_hexdigit).is_some() {}
            out.push_str("0x#");
        } else if c.is_ascii_digit() {
            while chars
                .next_if(|n| n.is_ascii_digit() || *n == '.' || *n == 'e' || *n == '-')
                .is_some()
            {}
            if out.ends_with('-') {
                out.pop();
            }
            out.push('#');
        } else if c.is_whitespace() {
            while chars.next_if(|n| n.is_whitespace()).is_some() {}
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// One `$ my-kernels …` line: its arguments and the exit code it states
/// (`# exits N`; 0 without one).
fn command(line: &str) -> Option<(Vec<String>, i32)> {
    let rest = line.strip_prefix("$ my-kernels ")?;
    let (cmd, note) = rest.split_once("  # ").unwrap_or((rest, ""));
    let code = note
        .strip_prefix("exits ")
        .and_then(|n| n.split(':').next()?.trim().parse().ok())
        .unwrap_or(0);
    Some((cmd.split_whitespace().map(String::from).collect(), code))
}

#[test]
fn every_console_block_runs_as_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for (_, body) in blocks(&page()).into_iter().filter(|(l, _)| l == "console") {
        let mut steps: Vec<(Vec<String>, i32, Vec<String>)> = Vec::new();
        for line in body.lines() {
            if let Some((args, code)) = command(line) {
                steps.push((args, code, Vec::new()));
            } else if let Some(step) = steps.last_mut() {
                step.2.push(line.to_string());
            } else {
                panic!("output before any command: {line}");
            }
        }
        for (args, code, shown) in steps {
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = my_kernels(tmp.path(), &argv);
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(code), "$ my-kernels {argv:?}\n{out}{err}");
            let got: Vec<String> = out.lines().chain(err.lines()).map(mask).collect();
            // The shown lines appear in this order (`…` stands for lines
            // left out).
            let mut at = 0;
            for want in shown.iter().filter(|l| !l.trim().is_empty() && !l.contains('…')) {
                let m = mask(want);
                match got[at..].iter().position(|g| *g == m) {
                    Some(i) => at += i + 1,
                    None => panic!(
                        "$ my-kernels {}: the page shows\n  {want}\nwhich the command did not print (after line {at}):\n{out}{err}",
                        argv.join(" ")
                    ),
                }
            }
            ran += 1;
        }
    }
    assert!(ran >= 9, "only {ran} commands on the page");
}

#[test]
fn the_mask_keeps_words_and_hides_numbers() {
    assert_eq!(
        mask("core0.veccore1: 6 instructions,  572 cycles"),
        mask("core5.veccore0: 6 instructions, 1572 cycles")
    );
    assert_eq!(mask("A -0.25, addr 0x00007fba50800000"), "A #, addr 0x#");
    assert_eq!(mask("max abs err 2.089e-7"), mask("max abs err 4.581e-7"));
    assert_ne!(mask("PASS 3 outputs"), mask("FAIL 3 outputs"));
}
