//! Reading `args_dump.json` (the orchestration's own arguments) back,
//! validated. A missing, unknown or mistyped field is reported with its
//! path (`args[2].shape[1]`) and position; value problems (shapes, sizes,
//! header totals) name the argument's position, its `arg_index` and the
//! field.

use std::path::{Path, PathBuf};

use simpler_core::MAX_DIMS;
use simpler_format::args_dump::{ArgsDump, OrchArg};
use simpler_format::files::{read_regular, ARGS_FILE};
use simpler_format::scalar::{agrees, disagreement};
use simpler_format::vocab::Kind;
use simpler_format::{Error, ErrorKind};

/// A validated `args_dump.json`.
#[derive(Debug, Clone)]
pub struct ArgsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub doc: ArgsDump,
}

/// The JSON object in `text` names a `workload`, as an orchestration args
/// dump does and the upstream layout's per-task records never do.
fn names_a_workload(text: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        workload: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Head>(text).is_ok_and(|h| h.workload.is_some())
}

/// Find `args_dump.json` given the file, a run directory or its
/// `tensor_dump/` folder.
///
/// # Errors
/// [`ErrorKind::NotFound`] listing where it looked.
pub fn resolve(path: &Path) -> Result<PathBuf, Error> {
    crate::locate::locate(path, ARGS_FILE, "; run with --dump-args or --dump-all")
}

impl ArgsFile {
    /// Read and validate.
    ///
    /// # Errors
    /// Missing file, malformed JSON, a missing, unknown or mistyped field
    /// (named with its path), or a bad value.
    pub fn open(path: impl AsRef<Path>) -> Result<ArgsFile, Error> {
        let path = resolve(path.as_ref())?;
        let text = read_regular(&path)?;
        let doc = Self::parse(&path, &text)?;
        Ok(ArgsFile { path, doc })
    }

    /// [`ArgsFile::open`] for a file only named like ours: `None` when it
    /// is not one (the upstream layout's per-task records share the name
    /// `args_dump.json` but name no `workload`), so the caller tries that
    /// reader; this reader's error when it is one, damaged, so the user
    /// reads what is wrong with it rather than another format's complaint.
    ///
    /// # Errors
    /// As for [`ArgsFile::open`], for a file that names a `workload`.
    pub fn open_if_ours(path: &Path) -> Result<Option<ArgsFile>, Error> {
        let text = read_regular(path)?;
        match Self::parse(path, &text) {
            Ok(doc) => Ok(Some(ArgsFile {
                path: path.to_path_buf(),
                doc,
            })),
            Err(e) if names_a_workload(&text) => Err(e),
            Err(_) => Ok(None),
        }
    }

    /// Validate `text` as the content of `path`: `schema_version` 1;
    /// `total_args` equals the entries; every `arg_index` increasing (and
    /// equal to its position when nothing was dropped); tensors have a
    /// role, `shape` (at most 5 dims, element count within 64 bits), one
    /// stride per dimension, `start_offset`, `addr` and `nbytes` = elements
    /// × element size; scalars have `bits`, and a `value` that agrees
    /// with them.
    ///
    /// # Errors
    /// As for [`ArgsFile::open`].
    pub fn parse(path: &Path, text: &[u8]) -> Result<ArgsDump, Error> {
        let doc: ArgsDump = simpler_format::json::from_slice(path, text)?;
        crate::header::check_side_version(path, doc.schema_version)?;
        if doc.total_args != doc.args.len() as u64 {
            return Err(Error::header(
                path,
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
            let bad = |field: &str, msg: String| {
                Error::new(
                    path,
                    ErrorKind::Item {
                        list: "args",
                        index: i,
                        label: format!("arg_index {}", a.arg_index),
                        field: field.into(),
                        msg,
                    },
                )
            };
            if let Some(p) = prev.filter(|&p| a.arg_index <= p) {
                return Err(bad(
                    "arg_index",
                    format!(
                        "{} after {p}: arguments are listed once each, in increasing order",
                        a.arg_index
                    ),
                ));
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
    pub fn arg(&self, arg_index: u32) -> Option<&OrchArg> {
        self.doc.args.iter().find(|a| a.arg_index == arg_index)
    }
}

/// Value checks of one argument: `(field, message)` on the first problem.
fn check_arg(a: &OrchArg) -> Result<(), (&'static str, String)> {
    let missing = |f: &'static str| (f, "missing (required for tensor arguments)".to_string());
    match a.kind {
        Kind::Tensor => {
            a.role.ok_or_else(|| missing("role"))?;
            let shape = a.shape.as_ref().ok_or_else(|| missing("shape"))?;
            let strides = a.strides.as_ref().ok_or_else(|| missing("strides"))?;
            a.start_offset.ok_or_else(|| missing("start_offset"))?;
            let nbytes = a.nbytes.ok_or_else(|| missing("nbytes"))?;
            a.addr.ok_or_else(|| missing("addr"))?;
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
            let dtype = a.dtype;
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
        Kind::Scalar => {
            let Some(bits) = a.bits else {
                return Err(("bits", "missing (required for scalar arguments)".into()));
            };
            if let Some(v) = a.value {
                if !agrees(v, a.dtype, bits.0) {
                    return Err(("value", disagreement(v, a.dtype, bits.0)));
                }
            }
        }
    }
    Ok(())
}
