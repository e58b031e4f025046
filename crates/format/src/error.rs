//! The one error type of every reader: the file, where in it (field path,
//! record, line and column) and what was expected. Bad values are echoed
//! cut to [`ECHO_LIMIT`] characters, so a 10 MB string in a file never
//! floods a terminal.

use std::fmt;
use std::path::PathBuf;

/// Longest echo of a bad value, in characters.
pub const ECHO_LIMIT: usize = 80;

/// `s` as is when it has at most [`ECHO_LIMIT`] characters, else its start
/// and the count: `"AAAA…" … (10485762 chars)`, at most [`ECHO_LIMIT`] long.
pub fn echo(s: &str) -> String {
    let n = s.chars().count();
    if n <= ECHO_LIMIT {
        return s.to_string();
    }
    let suffix = format!("… ({n} chars)");
    let keep = ECHO_LIMIT.saturating_sub(suffix.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(&suffix);
    out
}

/// `"s"` with `s` cut by [`echo`]: how messages quote a bad value.
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", echo(s))
}

/// A message from serde with every quoted value (`"…"` or `` `…` ``) cut by
/// [`echo`].
pub fn tame(msg: &str) -> String {
    if msg.chars().count() <= 2 * ECHO_LIMIT {
        return msg.to_string();
    }
    let mut out = String::with_capacity(2 * ECHO_LIMIT);
    let mut rest = msg;
    while let Some(open) = rest.find(['"', '`']) {
        let delim = &rest[open..open + 1];
        out.push_str(&rest[..=open]);
        let inner = &rest[open + 1..];
        // The closing quote: the first one followed by `,`, `)`, space or
        // the end (values may hold quotes themselves).
        let close = inner.match_indices(delim).map(|(i, _)| i).find(|&i| {
            matches!(
                inner[i + 1..].chars().next(),
                None | Some(',' | ')' | ' ' | ':' | ';')
            )
        });
        match close {
            Some(c) => {
                out.push_str(&echo(&inner[..c]));
                out.push_str(delim);
                rest = &inner[c + 1..];
            }
            None => {
                out.push_str(&echo(inner));
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Why a file could not be read.
#[derive(Debug)]
pub struct Error {
    /// The file (or the path given, when nothing was found there).
    pub file: PathBuf,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What is wrong with a file. Messages are lowercase and name the field.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The dump path given does not exist.
    PathMissing,
    /// The expected file is not where it was looked for.
    NotFound {
        /// The file name looked for.
        name: &'static str,
        /// The candidates, comma-separated.
        tried: String,
        /// What to do about it (may be empty).
        hint: &'static str,
    },
    /// Opening or reading failed.
    Io(std::io::Error),
    /// A FIFO, device, socket or directory where a regular file belongs.
    NotRegular(&'static str),
    /// The JSON ends before the document does.
    TruncatedJson {
        /// 1-based line where the input ended.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        msg: String,
    },
    /// Not JSON (or a value of a type serde reads as a syntax error, such
    /// as `false` where a name belongs).
    MalformedJson {
        /// Field path where it was met (empty when at the top level).
        path: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        msg: String,
    },
    /// A field is missing, unknown or of the wrong type.
    Field {
        /// Field path (`tensors[3].dtype`; `.` for the top level).
        path: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// A `schema_version` this reader does not understand.
    SchemaVersion {
        /// The version found, as written (echoed).
        found: String,
        /// What the reader understands.
        understood: &'static str,
    },
    /// A header field has a value the reader refuses.
    Header {
        /// The field.
        field: String,
        /// What is wrong.
        msg: String,
    },
    /// One item of a list (a record, a dispatch, an argument) is wrong.
    Item {
        /// How the list's items are called (`record`, `dispatch`, `args`).
        list: &'static str,
        /// Position in the list.
        index: usize,
        /// How messages name it besides its index (`task 0x…, arg 2`).
        label: String,
        /// The offending field (may be a path inside the item).
        field: String,
        /// What is wrong.
        msg: String,
    },
    /// Two records conflict (same key, overlapping payload, out of order).
    Conflict {
        /// The earlier record: index and label.
        first: (usize, String),
        /// The later record.
        second: (usize, String),
        /// What conflicts.
        msg: String,
    },
    /// A header counter disagrees with the records.
    Counter {
        /// The counter.
        field: &'static str,
        /// Its value in the header.
        header: u64,
        /// What the records add up to.
        actual: u64,
        /// What was counted.
        note: String,
    },
    /// A record's payload range reaches past the end of the payload file
    /// (`file` is the payload file).
    BinTooShort {
        /// Its length.
        len: u64,
        /// Record index.
        index: usize,
        /// Record label.
        label: String,
        /// First byte needed.
        start: u64,
        /// One past the last byte needed (saturated).
        end: u64,
    },
}

impl Error {
    /// An error of `kind` in `file`.
    pub fn new(file: impl Into<PathBuf>, kind: ErrorKind) -> Error {
        Error {
            file: file.into(),
            kind,
        }
    }

    /// An I/O error on `file`.
    pub fn io(file: impl Into<PathBuf>, e: std::io::Error) -> Error {
        Error::new(file, ErrorKind::Io(e))
    }

    /// A header field problem.
    pub fn header(file: impl Into<PathBuf>, field: impl Into<String>, msg: String) -> Error {
        Error::new(
            file,
            ErrorKind::Header {
                field: field.into(),
                msg,
            },
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match &self.kind {
            ErrorKind::PathMissing => write!(f, "dump path {file} does not exist"),
            ErrorKind::NotFound { name, tried, hint } => {
                write!(f, "no {name} at {file} (looked at {tried}){hint}")
            }
            ErrorKind::Io(e) => write!(f, "{file}: cannot read: {e}"),
            ErrorKind::NotRegular(what) => write!(
                f,
                "{file}: not a regular file ({what}); readers open only regular files"
            ),
            ErrorKind::TruncatedJson { line, column, msg } => write!(
                f,
                "{file}: truncated JSON: the file ends at line {line}, column {column} before the document is complete ({})",
                tame(msg)
            ),
            ErrorKind::MalformedJson {
                path,
                line,
                column,
                msg,
            } => {
                let at = match path.as_str() {
                    "" | "." => String::new(),
                    p => format!(" (in field {p})"),
                };
                write!(f, "{file}: malformed JSON at line {line}, column {column}{at}: {}", tame(msg))
            }
            ErrorKind::Field {
                path,
                line,
                column,
                msg,
            } => {
                let at = match line {
                    0 => String::new(),
                    l => format!(" at line {l}, column {column}"),
                };
                match path.as_str() {
                    "." | "" if *line == 0 => write!(f, "{file}: {}", tame(msg)),
                    "." | "" => write!(f, "{file}:{at}: {}", tame(msg)),
                    p => write!(f, "{file}: field {p}{at}: {}", tame(msg)),
                }
            }
            ErrorKind::SchemaVersion { found, understood } => write!(
                f,
                "{file}: unknown schema_version {} (this reader understands {understood})",
                echo(found)
            ),
            ErrorKind::Header { field, msg } => write!(f, "{file}: header field {field}: {msg}"),
            ErrorKind::Item {
                list,
                index,
                label,
                field,
                msg,
            } if *list == "args" => write!(f, "{file}: args[{index}] ({label}): field {field}: {msg}"),
            ErrorKind::Item {
                list,
                index,
                label,
                field,
                msg,
            } => write!(f, "{file}: {list} {index} ({label}): field {field}: {msg}"),
            _ => self.fmt_records(f),
        }
    }
}

impl Error {
    /// The messages of problems across records (conflicts, counters,
    /// payload ranges).
    fn fmt_records(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match &self.kind {
            ErrorKind::Conflict { first, second, msg } => write!(
                f,
                "{file}: records {} ({}) and {} ({}): {msg}",
                first.0, first.1, second.0, second.1
            ),
            ErrorKind::Counter {
                field,
                header,
                actual,
                note,
            } => write!(
                f,
                "{file}: header field {field} is {header} but the records have {actual}{note}"
            ),
            ErrorKind::BinTooShort {
                len,
                index,
                label,
                start,
                end,
            } => {
                let name = self
                    .file
                    .file_name()
                    .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
                write!(
                    f,
                    "{file}: {name} is {len} bytes but record {index} ({label}) needs bytes {start}..{end}"
                )
            }
            _ => Ok(()),
        }
    }
}

/// The OS error of an [`ErrorKind::Io`] is part of the message, so it is
/// not chained as a source (a chain printer would say it twice).
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_are_cut_to_80_characters() {
        assert_eq!(echo("short"), "short");
        let long = "A".repeat(10 << 20);
        let e = echo(&long);
        assert!(e.chars().count() <= ECHO_LIMIT, "{e}");
        assert!(e.ends_with("(10485760 chars)"), "{e}");
        let msg = format!("invalid type: string \"{long}\", expected u64");
        let t = tame(&msg);
        assert!(t.starts_with("invalid type: string \"AAA"), "{t}");
        assert!(t.ends_with("chars)\", expected u64"), "{t}");
        assert!(t.chars().count() < 140, "{t}");
        let msg = format!("unknown field `{long}`, expected one of `a`, `b`");
        assert!(tame(&msg).ends_with("`, expected one of `a`, `b`"));
    }
}
