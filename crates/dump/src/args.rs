//! Reading `args_dump.json` (the orchestration's own arguments) back,
//! validated.
//!
//! Mirrors [`crate::kernel_args`]: a missing or mistyped field is reported
//! with its path (`args[2].shape[1]`) and position; value problems (dtype
//! names, hex fields, shapes, header totals) name the argument's position in
//! `args`, its `arg_index` and the field.

use std::path::{Path, PathBuf};

use simpler_core::{DType, MAX_DIMS};
use thiserror::Error;

use crate::{
    export::ARGS_FILE,
    manifest::{ArgsDump, OrchArgJson, SCHEMA_VERSION},
    reader::{parse_hex_u64, parse_role},
};

/// Why an args dump could not be read.
#[derive(Debug, Error)]
pub enum ArgsError {
    /// No file where one was expected.
    #[error("no {ARGS_FILE} at {path} (looked at {tried}); run with --dump-args or --dump-all")]
    NotFound {
        /// The path given.
        path: PathBuf,
        /// Candidates, comma-separated.
        tried: String,
    },
    /// The file could not be read.
    #[error("{path}: cannot read: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// Not JSON, or not the expected structure; names the field path.
    #[error("{path}: {msg}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Field path, position and what was expected.
        msg: String,
    },
    /// Structurally valid, but one argument's value is wrong.
    #[error("{path}: args[{index}] (arg_index {arg_index}): field {field}: {msg}")]
    Arg {
        /// The file.
        path: PathBuf,
        /// Position in `args`.
        index: usize,
        /// Its `arg_index`.
        arg_index: u32,
        /// The field.
        field: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// A header field is wrong or disagrees with the arguments.
    #[error("{path}: header field {field}: {msg}")]
    Header {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong.
        msg: String,
    },
}

/// A validated `args_dump.json`.
#[derive(Debug, Clone)]
pub struct ArgsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub doc: ArgsDump,
}

/// Find `args_dump.json` given the file, a run directory or its
/// `tensor_dump/` folder.
///
/// # Errors
/// [`ArgsError::NotFound`] listing where it looked.
pub fn resolve(path: &Path) -> Result<PathBuf, ArgsError> {
    crate::json_path::locate(path, ARGS_FILE).map_err(|tried| ArgsError::NotFound {
        path: path.to_path_buf(),
        tried,
    })
}

impl ArgsFile {
    /// Read and validate.
    ///
    /// # Errors
    /// Missing file, malformed JSON, a missing or mistyped field (named with
    /// its path), or a bad value.
    pub fn open(path: impl AsRef<Path>) -> Result<ArgsFile, ArgsError> {
        let path = resolve(path.as_ref())?;
        let text = std::fs::read(&path).map_err(|error| ArgsError::Io {
            path: path.clone(),
            error,
        })?;
        let doc = Self::parse(&path, &text)?;
        Ok(ArgsFile { path, doc })
    }

    /// Validate `text` as the content of `path`.
    ///
    /// Checks: `schema_version` 1; `total_args` equals the entries; every
    /// `arg_index` increasing (and equal to its position when nothing was
    /// dropped); `kind` `tensor` or `scalar`; a known dtype; tensors have a
    /// known role, `shape` (at most 5 dims, element count within 64 bits),
    /// one stride per dimension, `start_offset`, hex `addr` and `nbytes` =
    /// elements × element size; scalars have hex `bits`.
    ///
    /// # Errors
    /// As for [`ArgsFile::open`].
    pub fn parse(path: &Path, text: &[u8]) -> Result<ArgsDump, ArgsError> {
        let json_err = |msg: String| ArgsError::Json {
            path: path.to_path_buf(),
            msg,
        };
        let doc: ArgsDump =
            crate::json_path::from_slice(text).map_err(|p| json_err(p.message()))?;
        let header = |field: &'static str, msg: String| ArgsError::Header {
            path: path.to_path_buf(),
            field,
            msg,
        };
        if doc.schema_version != SCHEMA_VERSION {
            return Err(header(
                "schema_version",
                format!(
                    "unknown version {} (this reader understands {SCHEMA_VERSION})",
                    doc.schema_version
                ),
            ));
        }
        if doc.total_args != doc.args.len() as u64 {
            return Err(header(
                "total_args",
                format!(
                    "says {} but the file holds {} args",
                    doc.total_args,
                    doc.args.len()
                ),
            ));
        }
        let mut prev: Option<u32> = None;
        for (i, a) in doc.args.iter().enumerate() {
            let bad = |field: &'static str, msg: String| ArgsError::Arg {
                path: path.to_path_buf(),
                index: i,
                arg_index: a.arg_index,
                field,
                msg,
            };
            if let Some(p) = prev {
                if a.arg_index <= p {
                    return Err(bad(
                        "arg_index",
                        format!(
                            "{} after {p}: arguments are listed once each, in increasing order",
                            a.arg_index
                        ),
                    ));
                }
            }
            if doc.dropped_args == 0 && a.arg_index as usize != i {
                return Err(bad(
                    "arg_index",
                    format!(
                        "{} but no argument was dropped, so the list is 0, 1, 2, … (expected {i})",
                        a.arg_index
                    ),
                ));
            }
            prev = Some(a.arg_index);
            check_arg(a).map_err(|(field, msg)| bad(field, msg))?;
        }
        Ok(doc)
    }

    /// The argument with this `arg_index`.
    pub fn arg(&self, arg_index: u32) -> Option<&OrchArgJson> {
        self.doc.args.iter().find(|a| a.arg_index == arg_index)
    }
}

/// Value checks of one argument: `(field, message)` on the first problem.
fn check_arg(a: &OrchArgJson) -> Result<(), (&'static str, String)> {
    let dtype = DType::from_name(&a.dtype).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        (
            "dtype",
            format!(
                "unknown dtype {:?}: expected one of {}",
                a.dtype,
                names.join(", ")
            ),
        )
    })?;
    let hex = |field: &'static str, v: &Option<String>| -> Result<(), (&'static str, String)> {
        match v {
            Some(s) if parse_hex_u64(s).is_some() => Ok(()),
            Some(s) => Err((
                field,
                format!("{s:?} is not \"0x\" followed by 1 to 16 hex digits"),
            )),
            None => Err((field, "missing".into())),
        }
    };
    match a.kind.as_str() {
        "tensor" => {
            let missing = |f: &'static str| (f, "missing (required for tensor arguments)".into());
            let role = a.role.as_deref().ok_or_else(|| missing("role"))?;
            if parse_role(role).is_none() {
                return Err((
                    "role",
                    format!("unknown role {role:?}: expected input, output or inout"),
                ));
            }
            let shape = a.shape.as_ref().ok_or_else(|| missing("shape"))?;
            let strides = a.strides.as_ref().ok_or_else(|| missing("strides"))?;
            a.start_offset.ok_or_else(|| missing("start_offset"))?;
            let nbytes = a.nbytes.ok_or_else(|| missing("nbytes"))?;
            if a.addr.is_none() {
                return Err(missing("addr"));
            }
            hex("addr", &a.addr)?;
            if shape.len() > MAX_DIMS {
                return Err((
                    "shape",
                    format!(
                        "{} dimensions: at most {MAX_DIMS} are supported",
                        shape.len()
                    ),
                ));
            }
            if strides.len() != shape.len() {
                return Err((
                    "strides",
                    format!(
                        "{} strides for {} dimensions: expected one per dimension",
                        strides.len(),
                        shape.len()
                    ),
                ));
            }
            let numel = shape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .ok_or_else(|| {
                    (
                        "shape",
                        format!("{shape:?}: the element count overflows 64 bits"),
                    )
                })?;
            let want = numel.checked_mul(dtype.size() as u64).ok_or_else(|| {
                (
                    "shape",
                    format!("{shape:?} of {dtype}: the byte size overflows 64 bits"),
                )
            })?;
            if nbytes != want {
                return Err((
                    "nbytes",
                    format!(
                        "{nbytes} but shape {shape:?} of {dtype} ({} bytes each) is {want} bytes",
                        dtype.size()
                    ),
                ));
            }
        }
        "scalar" => hex("bits", &a.bits)?,
        other => {
            return Err((
                "kind",
                format!("unknown kind {other:?}: expected tensor or scalar"),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"schema_version":1,"workload":"w","case":"c","total_args":2,"args":[
      {"arg_index":0,"kind":"tensor","role":"input","dtype":"BFLOAT16","shape":[2,16],"strides":[16,1],
       "start_offset":0,"addr":"0x00007fd643000000","nbytes":64},
      {"arg_index":1,"kind":"scalar","dtype":"FLOAT32","value":0.25,"bits":"0x000000003e800000"}]}"#;

    fn err(text: &str) -> String {
        ArgsFile::parse(Path::new("a.json"), text.as_bytes())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn good_file_parses() {
        let d = ArgsFile::parse(Path::new("a.json"), GOOD.as_bytes()).unwrap();
        assert_eq!(d.args.len(), 2);
        assert_eq!(d.args[1].bits.as_deref(), Some("0x000000003e800000"));
    }

    #[test]
    fn errors_name_file_argument_and_field() {
        let e = err(&GOOD.replace("\"nbytes\":64", "\"nbytes\":\"64\""));
        assert!(e.starts_with("a.json: field args[0].nbytes at line"), "{e}");
        let e = err(&GOOD.replace("\"workload\":\"w\",", ""));
        assert!(e.contains("missing field `workload`"), "{e}");
        let e = err(&GOOD.replace("\"nbytes\":64", "\"nbytes\":63"));
        assert!(
            e.starts_with("a.json: args[0] (arg_index 0): field nbytes: 63 but shape [2, 16]"),
            "{e}"
        );
        let e = err(&GOOD.replace("BFLOAT16", "FLOAT64"));
        assert!(e.contains("field dtype: unknown dtype \"FLOAT64\""), "{e}");
        let e = err(&GOOD.replace("0x000000003e800000", "0xzz"));
        assert!(e.contains("args[1] (arg_index 1): field bits"), "{e}");
        let e = err(&GOOD.replace("\"total_args\":2", "\"total_args\":3"));
        assert!(e.contains("header field total_args: says 3"), "{e}");
        let e = err(&GOOD.replace("\"arg_index\":1", "\"arg_index\":0"));
        assert!(e.contains("field arg_index: 0 after 0"), "{e}");
        let e = err(&GOOD.replace(
            "[2,16],\"strides\":[16,1]",
            "[1,1,1,1,1,2,16],\"strides\":[16,1]",
        ));
        assert!(e.contains("field shape: 7 dimensions"), "{e}");
        let e = err(&GOOD.replace("[2,16]", "[4294967296,4294967296]"));
        assert!(e.contains("overflows 64 bits"), "{e}");
        let e = err(&GOOD[..GOOD.len() / 2]);
        assert!(e.contains("truncated JSON"), "{e}");
        let e = err("{\"schema_version\":1,]");
        assert!(e.contains("malformed JSON"), "{e}");
        let e = err(&GOOD.replace("\"schema_version\":1", "\"schema_version\":-1"));
        assert!(e.contains("field schema_version"), "{e}");
    }
}
