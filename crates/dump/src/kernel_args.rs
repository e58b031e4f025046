//! Reading `kernel_args_dump.json` back, validated.
//!
//! Every problem is reported with the file, the dispatch's position in
//! `dispatches` and the field path (`dispatches[3].args[1].arg_index`), so a
//! hand-edited or damaged file is easy to fix. Replay builds on this.

use std::path::{Path, PathBuf};

use simpler_core::{DType, TaskId};
use thiserror::Error;

use crate::{
    export::KERNEL_ARGS_FILE,
    manifest::{DispatchJson, KernelArgsDump, SCHEMA_VERSION},
};

/// Why a kernel args dump could not be read.
#[derive(Debug, Error)]
pub enum KernelArgsError {
    /// No file where one was expected.
    #[error("no {KERNEL_ARGS_FILE} at {path} (looked at {tried}); run with --dump-kernel-args or --dump-all")]
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
    /// Structurally valid, but a value is wrong.
    #[error("{path}: dispatch {index} (dispatch_id {dispatch_id}): field {field}: {msg}")]
    Dispatch {
        /// The file.
        path: PathBuf,
        /// Position in `dispatches`.
        index: usize,
        /// Its `dispatch_id`.
        dispatch_id: u64,
        /// Field path within the dispatch.
        field: String,
        /// What is wrong.
        msg: String,
    },
    /// A header field disagrees with the dispatches.
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

/// A validated kernel args dump.
#[derive(Debug, Clone)]
pub struct KernelArgsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub doc: KernelArgsDump,
}

/// Find `kernel_args_dump.json` given the file, a run directory or its
/// `tensor_dump/` folder.
///
/// # Errors
/// [`KernelArgsError::NotFound`] listing where it looked.
pub fn resolve(path: &Path) -> Result<PathBuf, KernelArgsError> {
    crate::json_path::locate(path, KERNEL_ARGS_FILE).map_err(|tried| KernelArgsError::NotFound {
        path: path.to_path_buf(),
        tried,
    })
}

/// Parse a `0x…` hex field (at most 16 digits, no sign): the same parser as
/// the tensor-dump reader's.
pub use crate::reader::parse_hex_u64 as parse_hex;

impl KernelArgsFile {
    /// Read and validate.
    ///
    /// # Errors
    /// Missing file, malformed JSON, a missing or mistyped field (named with
    /// its path), or values that contradict each other.
    pub fn open(path: impl AsRef<Path>) -> Result<KernelArgsFile, KernelArgsError> {
        let path = resolve(path.as_ref())?;
        let text = std::fs::read(&path).map_err(|error| KernelArgsError::Io {
            path: path.clone(),
            error,
        })?;
        let doc = Self::parse(&path, &text)?;
        Ok(KernelArgsFile { path, doc })
    }

    /// Validate `text` as the content of `path`.
    ///
    /// # Errors
    /// As for [`KernelArgsFile::open`].
    pub fn parse(path: &Path, text: &[u8]) -> Result<KernelArgsDump, KernelArgsError> {
        let json_err = |msg: String| KernelArgsError::Json {
            path: path.to_path_buf(),
            msg,
        };
        let doc: KernelArgsDump =
            crate::json_path::from_slice(text).map_err(|p| json_err(p.message()))?;
        let header = |field: &'static str, msg: String| KernelArgsError::Header {
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
        if doc.total_dispatches != doc.dispatches.len() as u64 {
            return Err(header(
                "total_dispatches",
                format!(
                    "says {} but the file holds {} dispatches",
                    doc.total_dispatches,
                    doc.dispatches.len()
                ),
            ));
        }
        let args: u64 = doc.dispatches.iter().map(|d| d.args.len() as u64).sum();
        if doc.total_args != args {
            return Err(header(
                "total_args",
                format!(
                    "says {} but the dispatches hold {args} args",
                    doc.total_args
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, d) in doc.dispatches.iter().enumerate() {
            check_dispatch(d).map_err(|(field, msg)| KernelArgsError::Dispatch {
                path: path.to_path_buf(),
                index: i,
                dispatch_id: d.dispatch_id,
                field,
                msg,
            })?;
            if !seen.insert(d.dispatch_id) {
                return Err(KernelArgsError::Dispatch {
                    path: path.to_path_buf(),
                    index: i,
                    dispatch_id: d.dispatch_id,
                    field: "dispatch_id".into(),
                    msg: "appears twice".into(),
                });
            }
        }
        Ok(doc)
    }

    /// The dispatch with this id.
    pub fn dispatch(&self, dispatch_id: u64) -> Option<&DispatchJson> {
        self.doc
            .dispatches
            .iter()
            .find(|d| d.dispatch_id == dispatch_id)
    }

    /// `(func_id, dispatch_id)` of every dispatch, for "no such dispatch" messages.
    pub fn available(&self) -> Vec<(u32, u64)> {
        self.doc
            .dispatches
            .iter()
            .map(|d| (d.func_id, d.dispatch_id))
            .collect()
    }
}

/// Semantic checks of one dispatch: `(field, message)` on the first problem.
fn check_dispatch(d: &DispatchJson) -> Result<(), (String, String)> {
    let bad = |f: &str, m: String| Err((f.to_string(), m));
    if TaskId::parse(&d.task_id).is_none() || !d.task_id.starts_with("0x") {
        return bad(
            "task_id",
            format!("{:?} is not a 0x… hex task id", d.task_id),
        );
    }
    let (want_sub, want_type) = match d.subtask_id {
        0 => ("aic", "aic"),
        1 => ("aiv0", "aiv"),
        2 => ("aiv1", "aiv"),
        n => {
            return bad(
                "subtask_id",
                format!("{n} is not 0 (aic), 1 (aiv0) or 2 (aiv1)"),
            )
        }
    };
    if d.subtask != want_sub {
        return bad(
            "subtask",
            format!(
                "{:?} contradicts subtask_id {} ({want_sub})",
                d.subtask, d.subtask_id
            ),
        );
    }
    if d.core_type != want_type {
        return bad(
            "core_type",
            format!(
                "{:?} contradicts subtask {want_sub} ({want_type})",
                d.core_type
            ),
        );
    }
    if d.block_num == 0 || d.block_idx >= d.block_num {
        return bad(
            "block_idx",
            format!("{} is not below block_num {}", d.block_idx, d.block_num),
        );
    }
    let mut tensors_done = false;
    for (k, a) in d.args.iter().enumerate() {
        let f = |name: &str| format!("args[{k}].{name}");
        if a.arg_index as usize != k {
            return bad(
                &f("arg_index"),
                format!(
                    "{} but slots are listed in order from 0 (expected {k})",
                    a.arg_index
                ),
            );
        }
        if a.arg_index >= 48 {
            return bad(
                &f("arg_index"),
                format!("{} is a context slot or beyond", a.arg_index),
            );
        }
        match a.kind.as_str() {
            "tensor" => {
                if tensors_done {
                    return bad(&f("kind"), "a tensor slot after a scalar slot".into());
                }
                let dtype = DType::from_name(&a.dtype)
                    .ok_or_else(|| (f("dtype"), format!("unknown dtype {:?}", a.dtype)))?;
                let _ = dtype;
                for (name, v) in [("desc_addr", &a.desc_addr), ("addr", &a.addr)] {
                    match v {
                        Some(s) if parse_hex(s).is_some() => {}
                        Some(s) => return bad(&f(name), format!("{s:?} is not 0x… hex")),
                        None => return bad(&f(name), "missing (required for tensor slots)".into()),
                    }
                }
                let (Some(nd), Some(shape), Some(strides)) = (a.ndims, &a.shape, &a.strides) else {
                    return bad(
                        &f("shape"),
                        "ndims, shape and strides are required for tensor slots".into(),
                    );
                };
                if nd == 0 || nd > 5 {
                    return bad(&f("ndims"), format!("{nd} is not in 1..=5"));
                }
                if shape.len() != nd as usize || strides.len() != nd as usize {
                    return bad(
                        &f("shape"),
                        format!(
                            "ndims {nd} but {} shape and {} stride entries",
                            shape.len(),
                            strides.len()
                        ),
                    );
                }
                if let Some((i, _)) = shape
                    .iter()
                    .chain(strides)
                    .enumerate()
                    .find(|(_, &x)| x > u64::from(u32::MAX))
                {
                    return bad(
                        &f("shape"),
                        format!("entry {i} does not fit the descriptor's u32"),
                    );
                }
                if shape
                    .iter()
                    .try_fold(1u64, |acc, &x| acc.checked_mul(x))
                    .is_none()
                {
                    return bad(
                        &f("shape"),
                        format!("{shape:?} overflows the element count"),
                    );
                }
            }
            "scalar" => {
                tensors_done = true;
                if DType::from_name(&a.dtype).is_none() {
                    return bad(&f("dtype"), format!("unknown dtype {:?}", a.dtype));
                }
                match &a.bits {
                    Some(s) if parse_hex(s).is_some() => {}
                    Some(s) => return bad(&f("bits"), format!("{s:?} is not 0x… hex")),
                    None => return bad(&f("bits"), "missing (required for scalar slots)".into()),
                }
            }
            other => return bad(&f("kind"), format!("{other:?} is not tensor or scalar")),
        }
    }
    let kinds: Vec<(u32, &str)> = d
        .context
        .iter()
        .map(|c| (c.arg_index, c.kind.as_str()))
        .collect();
    if kinds != [(48, "local_context"), (49, "global_context")] {
        return bad(
            "context",
            format!("expected slots 48 local_context and 49 global_context, found {kinds:?}"),
        );
    }
    // The contexts must say what the dispatch identity says.
    let (lc, gc) = (&d.context[0], &d.context[1]);
    for (k, c) in d.context.iter().enumerate() {
        if parse_hex(&c.addr).is_none() {
            return bad(
                &format!("context[{k}].addr"),
                format!("{:?} is not 0x… hex", c.addr),
            );
        }
    }
    if lc.block_idx != Some(d.block_idx as i32) || lc.block_num != Some(d.block_num as i32) {
        return bad(
            "context[0]",
            format!(
                "block_idx {:?} / block_num {:?} disagree with the dispatch's {} / {}",
                lc.block_idx, lc.block_num, d.block_idx, d.block_num
            ),
        );
    }
    let want_sub = if d.subtask_id == 2 { 1 } else { 0 };
    if gc.sub_block_id != Some(want_sub) {
        return bad(
            "context[1].sub_block_id",
            format!(
                "{:?} but subtask {} runs with sub_block_id {want_sub}",
                gc.sub_block_id, d.subtask
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"schema_version":1,"total_dispatches":1,"total_args":2,"dispatches":[
      {"dispatch_id":7,"task_id":"0x0000000000000003","func_id":1,"subtask_id":1,"subtask":"aiv0",
       "core_type":"aiv","core_id":9,"block_idx":0,"block_num":1,"stage":"before_dispatch",
       "args":[{"arg_index":0,"kind":"tensor","desc_addr":"0x10","addr":"0x20","dtype":"FLOAT32",
                "ndims":2,"shape":[16,16],"strides":[16,1],"start_offset":0,"is_contiguous":true,"size":1024},
               {"arg_index":1,"kind":"scalar","dtype":"FLOAT32","bits":"0x000000003f800000","value":1.0}],
       "context":[{"arg_index":48,"kind":"local_context","addr":"0x30","block_idx":0,"block_num":1},
                  {"arg_index":49,"kind":"global_context","addr":"0x38","sub_block_id":0}]}]}"#;

    fn err(text: &str) -> String {
        KernelArgsFile::parse(Path::new("k.json"), text.as_bytes())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn good_file_parses() {
        let d = KernelArgsFile::parse(Path::new("k.json"), GOOD.as_bytes()).unwrap();
        assert_eq!(d.dispatches[0].dispatch_id, 7);
    }

    #[test]
    fn missing_field_names_dispatch_and_field() {
        let e = err(&GOOD.replace("\"func_id\":1,", ""));
        assert!(e.contains("k.json"), "{e}");
        assert!(e.contains("dispatches[0]"), "{e}");
        assert!(e.contains("missing field `func_id`"), "{e}");
    }

    #[test]
    fn wrong_type_names_the_field_path() {
        let e = err(&GOOD.replace(
            "\"arg_index\":1,\"kind\":\"scalar\"",
            "\"arg_index\":\"one\",\"kind\":\"scalar\"",
        ));
        assert!(e.contains("dispatches[0].args[1].arg_index"), "{e}");
        assert!(e.contains("invalid type: string \"one\""), "{e}");
    }

    #[test]
    fn semantic_errors_name_dispatch_and_field() {
        let e = err(&GOOD.replace("\"ndims\":2", "\"ndims\":6"));
        assert!(
            e.contains("dispatch 0 (dispatch_id 7): field args[0].ndims: 6 is not in 1..=5"),
            "{e}"
        );
        let e = err(&GOOD.replace("\"subtask\":\"aiv0\"", "\"subtask\":\"aic\""));
        assert!(e.contains("field subtask"), "{e}");
        let e = err(&GOOD.replace("\"bits\":\"0x000000003f800000\"", "\"bits\":\"zz\""));
        assert!(e.contains("field args[1].bits"), "{e}");
        let e = err(&GOOD.replace("\"total_args\":2", "\"total_args\":3"));
        assert!(e.contains("header field total_args"), "{e}");
        let e = err(&GOOD.replace("\"schema_version\":1", "\"schema_version\":9"));
        assert!(e.contains("unknown version 9"), "{e}");
        let e = err(&GOOD[..GOOD.len() / 2]);
        assert!(e.contains("truncated JSON"), "{e}");
        let e = err("{\"schema_version\":1,]");
        assert!(e.contains("malformed JSON"), "{e}");
        let e = err(&GOOD.replace("\"shape\":[16,16]", "\"shape\":[4294967296,16]"));
        assert!(e.contains("args[0].shape"), "{e}");
        let e = err(&GOOD.replace(
            "\"addr\":\"0x30\",\"block_idx\":0",
            "\"addr\":\"0x30\",\"block_idx\":-1",
        ));
        assert!(e.contains("field context[0]: block_idx Some(-1)"), "{e}");
        let e = err(&GOOD.replace("\"sub_block_id\":0", "\"sub_block_id\":1"));
        assert!(e.contains("context[1].sub_block_id"), "{e}");
        let e = err(&GOOD.replace("\"desc_addr\":\"0x10\"", "\"desc_addr\":\"0x+10\""));
        assert!(e.contains("args[0].desc_addr"), "{e}");
        let e = err(&GOOD.replace(
            "\"desc_addr\":\"0x10\"",
            "\"desc_addr\":\"0x00000000000000010\"",
        ));
        assert!(e.contains("args[0].desc_addr"), "{e}");
    }
}
