//! Reading `kernel_args_dump.json` back, validated. Every problem names the
//! file, the dispatch's position in `dispatches` and the field path
//! (`dispatches[3].args[1].arg_index`), so a hand-edited or damaged file is
//! easy to fix. Replay builds on this.

use std::path::{Path, PathBuf};

use simpler_core::topology::Subtask;
use simpler_core::DType;
use simpler_format::files::KERNEL_ARGS_FILE;
use simpler_format::kernel_args::{ContextKind, Dispatch, KernelArgsDump, Slot};
use simpler_format::scalar::{agrees, disagreement};
use simpler_format::vocab::Kind;
use simpler_format::{Error, ErrorKind};

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
/// [`ErrorKind::NotFound`] listing where it looked.
pub fn resolve(path: &Path) -> Result<PathBuf, Error> {
    crate::locate::locate(
        path,
        KERNEL_ARGS_FILE,
        "; run with --dump-kernel-args or --dump-all",
    )
}

impl KernelArgsFile {
    /// Read and validate.
    ///
    /// # Errors
    /// Missing file, malformed JSON, a missing, unknown or mistyped field
    /// (named with its path), or values that contradict each other.
    pub fn open(path: impl AsRef<Path>) -> Result<KernelArgsFile, Error> {
        let path = resolve(path.as_ref())?;
        let text = simpler_format::files::read_regular(&path)?;
        let doc = Self::parse(&path, &text)?;
        Ok(KernelArgsFile { path, doc })
    }

    /// Validate `text` as the content of `path`.
    ///
    /// # Errors
    /// As for [`KernelArgsFile::open`].
    pub fn parse(path: &Path, text: &[u8]) -> Result<KernelArgsDump, Error> {
        let doc: KernelArgsDump = simpler_format::json::from_slice(path, text)?;
        crate::header::check_side_version(path, doc.schema_version)?;
        if doc.total_dispatches != doc.dispatches.len() as u64 {
            return Err(Error::header(
                path,
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
            return Err(Error::header(
                path,
                "total_args",
                format!(
                    "says {} but the dispatches hold {args} args",
                    doc.total_args
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, d) in doc.dispatches.iter().enumerate() {
            let bad = |field: String, msg: String| {
                Error::new(
                    path,
                    ErrorKind::Item {
                        list: "dispatch",
                        index: i,
                        label: format!("dispatch_id {}", d.dispatch_id),
                        field,
                        msg,
                    },
                )
            };
            check_dispatch(d).map_err(|(f, m)| bad(f, m))?;
            if !seen.insert(d.dispatch_id) {
                return Err(bad("dispatch_id".into(), "appears twice".into()));
            }
        }
        Ok(doc)
    }

    /// The dispatch with this id.
    pub fn dispatch(&self, dispatch_id: u64) -> Option<&Dispatch> {
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

type Bad = (String, String);

/// Semantic checks of one dispatch: `(field, message)` on the first problem.
fn check_dispatch(d: &Dispatch) -> Result<(), Bad> {
    let bad = |f: &str, m: String| Err((f.to_string(), m));
    let Some(sub) = Subtask::from_id(d.subtask_id) else {
        return bad(
            "subtask_id",
            format!("{} is not 0 (aic), 1 (aiv0) or 2 (aiv1)", d.subtask_id),
        );
    };
    let (want_sub, want_type) = (sub.name(), sub.core_type().name());
    if d.subtask != want_sub {
        return bad(
            "subtask",
            format!(
                "{} contradicts subtask_id {} ({want_sub})",
                simpler_format::quoted(&d.subtask),
                d.subtask_id
            ),
        );
    }
    if d.core_type != want_type {
        return bad(
            "core_type",
            format!(
                "{} contradicts subtask {want_sub} ({want_type})",
                simpler_format::quoted(&d.core_type)
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
        let Some(dtype) = DType::from_name(&a.dtype) else {
            return bad(
                &f("dtype"),
                format!("unknown dtype {}", simpler_format::quoted(&a.dtype)),
            );
        };
        match a.kind {
            Kind::Tensor if tensors_done => {
                return bad(&f("kind"), "a tensor slot after a scalar slot".into())
            }
            Kind::Tensor => check_tensor_slot(a, &f)?,
            Kind::Scalar => {
                tensors_done = true;
                let Some(bits) = a.bits else {
                    return bad(&f("bits"), "missing (required for scalar slots)".into());
                };
                if let Some(v) = a.value.filter(|&v| !agrees(v, dtype, bits.0)) {
                    return bad(&f("value"), disagreement(v, dtype, bits.0));
                }
            }
        }
    }
    check_contexts(d, sub)
}

fn check_tensor_slot(a: &Slot, f: &dyn Fn(&str) -> String) -> Result<(), Bad> {
    let bad = |n: &str, m: String| Err((f(n), m));
    for (name, v) in [("desc_addr", a.desc_addr), ("addr", a.addr)] {
        if v.is_none() {
            return bad(name, "missing (required for tensor slots)".into());
        }
    }
    let (Some(nd), Some(shape), Some(strides)) = (a.ndims, &a.shape, &a.strides) else {
        return bad(
            "shape",
            "ndims, shape and strides are required for tensor slots".into(),
        );
    };
    if nd == 0 || nd > 5 {
        return bad("ndims", format!("{nd} is not in 1..=5"));
    }
    if shape.len() != nd as usize || strides.len() != nd as usize {
        return bad(
            "shape",
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
            "shape",
            format!("entry {i} does not fit the descriptor's u32"),
        );
    }
    if shape
        .iter()
        .try_fold(1u64, |acc, &x| acc.checked_mul(x))
        .is_none()
    {
        return bad("shape", format!("{shape:?} overflows the element count"));
    }
    Ok(())
}

/// The contexts must say what the dispatch identity says (`sub`: the
/// member its `subtask_id` names).
fn check_contexts(d: &Dispatch, sub: Subtask) -> Result<(), Bad> {
    let bad = |f: &str, m: String| Err((f.to_string(), m));
    let kinds: Vec<(u32, ContextKind)> = d.context.iter().map(|c| (c.arg_index, c.kind)).collect();
    let shown = |v: Option<i32>| v.map_or_else(|| "missing".to_string(), |v| v.to_string());
    if kinds
        != [
            (48, ContextKind::LocalContext),
            (49, ContextKind::GlobalContext),
        ]
    {
        return bad(
            "context",
            format!(
                "expected slots 48 local_context and 49 global_context, found [{}]",
                d.context
                    .iter()
                    .map(|c| format!("{} {}", c.arg_index, c.kind.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    let (lc, gc) = (&d.context[0], &d.context[1]);
    if lc.block_idx != Some(d.block_idx as i32) || lc.block_num != Some(d.block_num as i32) {
        return bad(
            "context[0]",
            format!(
                "block_idx {} / block_num {} disagree with the dispatch's {} / {}",
                shown(lc.block_idx),
                shown(lc.block_num),
                d.block_idx,
                d.block_num
            ),
        );
    }
    let want_sub = sub.sub_block_id();
    if gc.sub_block_id != Some(want_sub) {
        return bad(
            "context[1].sub_block_id",
            format!(
                "{} but subtask {} runs with sub_block_id {want_sub}",
                shown(gc.sub_block_id),
                d.subtask
            ),
        );
    }
    Ok(())
}
