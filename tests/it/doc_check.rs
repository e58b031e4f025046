//! Checking a markdown page against the program it documents: its
//! `console` blocks are run, in order, in one folder, and must exit as the
//! page says (`  # exits N` after a command; 0 otherwise) and print the
//! lines shown — numbers, addresses, core ids and timestamps aside, which
//! change from run to run. `…` in a shown line stands for lines left out.
//! Shared by this crate's tests (README) and `examples/my_kernels`'s
//! (`docs/writing-a-kernel.md`), which includes this file by path.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// `(language, body)` of every fenced block of `md`.
pub fn blocks(md: &str) -> Vec<(String, String)> {
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

/// A line with what varies between runs masked: hex and decimal numbers
/// become `#` (and `edges` after one, `edge`), signs and runs of blanks
/// (column padding) collapse.
pub fn mask(line: &str) -> String {
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
    // The word after a count follows it ("1 edge", "0 edges"); edge counts
    // depend on timing (a producer that already finished needs no edge).
    out.replace("# edges", "# edge")
}

/// A command's arguments and the exit code the page states for it.
type Cmd = (Vec<String>, i32);

/// One `$ <program> …` line: its arguments and the exit code it states.
fn command(line: &str, program: &str) -> Option<Cmd> {
    let rest = line
        .strip_prefix("$ ")?
        .strip_prefix(program)?
        .strip_prefix(' ')?;
    let (cmd, note) = rest.split_once("  # ").unwrap_or((rest, ""));
    let code = note
        .strip_prefix("exits ")
        .and_then(|n| n.split(':').next()?.trim().parse().ok())
        .unwrap_or(0);
    Some((cmd.split_whitespace().map(String::from).collect(), code))
}

/// Run every `$ program …` command of `md`'s console blocks with `bin` in
/// `cwd` (env `env` added) and compare; returns how many ran. Commands of
/// other programs in a block are skipped with their output.
pub fn check_console_blocks(
    md: &str,
    program: &str,
    bin: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
) -> usize {
    let mut ran = 0;
    for (_, body) in blocks(md).into_iter().filter(|(l, _)| l == "console") {
        let mut steps: Vec<(Option<Cmd>, Vec<String>)> = Vec::new();
        for line in body.lines() {
            if line.starts_with("$ ") {
                steps.push((command(line, program), Vec::new()));
            } else if let Some(step) = steps.last_mut() {
                step.1.push(line.to_string());
            } else {
                panic!("output before any command: {line}");
            }
        }
        for (cmd, shown) in steps {
            let Some((args, code)) = cmd else { continue };
            let o = Command::new(bin)
                .args(&args)
                .current_dir(cwd)
                .envs(env.iter().copied())
                .output()
                .unwrap();
            let (out, err) = (
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr),
            );
            let line = format!("$ {program} {}", args.join(" "));
            assert_eq!(o.status.code(), Some(code), "{line}\n{out}{err}");
            let got: Vec<String> = out.lines().chain(err.lines()).map(mask).collect();
            let mut at = 0;
            for want in shown
                .iter()
                .filter(|l| !l.trim().is_empty() && !l.contains('…'))
            {
                let m = mask(want);
                match got[at..].iter().position(|g| *g == m) {
                    Some(i) => at += i + 1,
                    None => panic!(
                        "{line}: the page shows\n  {want}\nwhich the command did not print (after line {at}):\n{out}{err}"
                    ),
                }
            }
            ran += 1;
        }
    }
    ran
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
