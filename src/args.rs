//! Two things clap does not do the way a user of this tool expects:
//! flags whose value is optional (`--dump-tensor [LEVEL]`) never swallow
//! the next word unless it is a number, and a bad command line is one
//! line on stderr, not a paragraph with a usage block.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::ErrorKind;

/// `--dump-tensor paged_attention` means the bare flag followed by the
/// workload, not the level "paged_attention". [`crate::cli::command`]
/// makes every flag whose value may be left out take it only after `=`;
/// here a next word that reads as a number is joined to the flag
/// (`--dump-tensor 3` → `--dump-tensor=3`), and any other word is left
/// for what follows.
pub(crate) fn join_optional_values(cmd: &clap::Command, argv: Vec<OsString>) -> Joined {
    let mut optional = Vec::new();
    collect_optional(cmd, &mut optional);
    let mut out = Vec::with_capacity(argv.len());
    let mut left = Vec::new();
    let mut it = argv.into_iter().peekable();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a);
            out.extend(it);
            break;
        }
        let flag = optional
            .iter()
            .find(|long| a.to_str() == Some(long.as_str()));
        match flag.and_then(|long| Some((long, it.next_if(looks_numeric)?))) {
            Some((long, value)) => {
                let mut joined = OsString::from(format!("{long}="));
                joined.push(value);
                out.push(joined);
            }
            None => {
                if let (Some(long), Some(next)) = (flag, it.peek().and_then(|n| n.to_str())) {
                    left.push((long.clone(), next.to_string()));
                }
                out.push(a);
            }
        }
    }
    Joined { argv: out, left }
}

/// The command line after [`join_optional_values`].
pub(crate) struct Joined {
    /// What clap parses.
    pub argv: Vec<OsString>,
    /// `(flag, word)`: a word after an optional-value flag that was not
    /// taken as its value, to explain an error about that word.
    pub left: Vec<(String, String)>,
}

/// When clap refused a word that followed an optional-value flag, say
/// why it was not that flag's value.
pub(crate) fn left_word_hint(e: &clap::Error, left: &[(String, String)]) -> Option<String> {
    let word = e.get(clap::error::ContextKind::InvalidArg)?.to_string();
    let (flag, _) = left.iter().find(|(_, w)| *w == word)?;
    Some(format!("{flag} takes its value as a number ('{flag} 2' or '{flag}=2'), so '{word}' is not its value"))
}

/// True for a flag whose value may be left out.
pub(crate) fn optional_value(a: &clap::Arg) -> bool {
    a.get_num_args()
        .is_some_and(|r| r.min_values() == 0 && r.max_values() == 1)
}

/// `--long` of every flag in `cmd`'s tree whose value is optional.
fn collect_optional(cmd: &clap::Command, out: &mut Vec<String>) {
    for a in cmd.get_arguments().filter(|a| optional_value(a)) {
        if let Some(long) = a.get_long() {
            out.push(format!("--{long}"));
        }
    }
    for sub in cmd.get_subcommands() {
        collect_optional(sub, out);
    }
}

/// A word that reads as a number, negative or not (so that `-1` reaches
/// the flag's own check and is refused there in its words).
fn looks_numeric(s: &OsString) -> bool {
    s.to_str().is_some_and(|s| s.trim().parse::<f64>().is_ok())
}

/// Print a clap outcome: help and version as clap renders them (exit 0;
/// 2 for the help shown when a subcommand is missing), an error as one
/// line — its message, a "did you mean" tip if clap has one, and where to
/// find help — exit 2.
pub(crate) fn report(e: &clap::Error, help: &str, hint: Option<String>) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            let line = one_line(e, help);
            match hint {
                Some(h) => eprintln!("{line} ({h})"),
                None => eprintln!("{line}"),
            }
            ExitCode::from(2)
        }
    }
}

/// The error in one line (see [`report`]); `help` is the command whose
/// `--help` to point to.
pub(crate) fn one_line(e: &clap::Error, help: &str) -> String {
    let text = e.render().to_string();
    let mut paragraphs = text.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
    let first = paragraphs.next().unwrap_or("error: bad command line");
    let mut line = first.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    if let Some(reason) = int_reason(e) {
        // "invalid digit found in string" says nothing to a user.
        if let Some(cut) = line.rfind("': ") {
            line = format!("{}': {reason}", &line[..cut]);
        }
    }
    for p in paragraphs {
        if let Some(tip) = p.strip_prefix("tip: ").filter(|t| t.contains("similar")) {
            line.push_str(&format!(" ({tip})"));
        }
    }
    format!("{}; see '{help} --help'", cut_values(e, line))
}

/// `line` with the bad value clap quotes cut to
/// [`simpler_format::ECHO_LIMIT`] characters (a pasted megabyte never
/// floods the terminal).
fn cut_values(e: &clap::Error, mut line: String) -> String {
    use clap::error::{ContextKind, ContextValue};
    for kind in [
        ContextKind::InvalidValue,
        ContextKind::InvalidArg,
        ContextKind::InvalidSubcommand,
    ] {
        if let Some(ContextValue::String(v)) = e.get(kind) {
            if v.chars().count() > simpler_format::ECHO_LIMIT {
                line = line.replace(v.as_str(), &simpler_format::echo(v));
            }
        }
    }
    line
}

/// The subcommand path `argv` names (`simpler dump view`), for the
/// pointer to its help.
pub(crate) fn command_path(cmd: &clap::Command, argv: &[OsString]) -> String {
    let mut path = vec![cmd.get_name().to_string()];
    let mut at = cmd;
    for word in argv.iter().skip(1).filter_map(|w| w.to_str()) {
        if let Some(sub) = at.find_subcommand(word) {
            path.push(sub.get_name().to_string());
            at = sub;
        }
    }
    path.join(" ")
}

/// What a whole-number flag expected, when clap's own reason is Rust's
/// integer parse error.
fn int_reason(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let src = std::error::Error::source(e)?;
    let pie = src.downcast_ref::<std::num::ParseIntError>()?;
    let value = e
        .get(clap::error::ContextKind::InvalidValue)
        .map(|v| v.to_string())
        .unwrap_or_default();
    let negative = value.trim().starts_with('-') && value.trim().parse::<f64>().is_ok();
    Some(match pie.kind() {
        std::num::IntErrorKind::PosOverflow => {
            "expected a whole number, and this one is too large".into()
        }
        _ if negative => "expected a whole number 0 or more, not a negative one".into(),
        _ => "expected a whole number".into(),
    })
}
