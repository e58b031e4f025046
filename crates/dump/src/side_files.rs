//! The orchestration args dump and the kernel args dump (DESIGN §6), built
//! from `simpler-format`'s types: the collector turns each record into its
//! wire entry, the end of the run writes the files where the layout puts
//! them ([`crate::DumpConfig::files`]).

use std::{io::Write, path::PathBuf};

use simpler_core::{
    abi::{GlobalContext, LocalContext, ARG_SLOTS, GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT},
    ChipTensor, Scalar,
};
use simpler_format::{
    args_dump::{ArgsDump, OrchArg},
    hex::Hex64,
    kernel_args::{Context, ContextKind, Dispatch, KernelArgsDump, Slot},
    scalar::encode,
    vocab::{Kind, Stage},
    SCHEMA_VERSION,
};

use crate::{
    collector::Collected,
    durable::write_atomic,
    record::{DispatchRecord, OrchArgRecord, Subject, CAPTURE_HEAD},
    DumpConfig, DumpError,
};

/// The `args_dump.json` entry of an orchestration argument.
pub(crate) fn orch_arg(r: &OrchArgRecord) -> OrchArg {
    let base = OrchArg {
        arg_index: r.arg_index,
        kind: Kind::Tensor,
        role: None,
        dtype: simpler_core::DType::Uint64,
        shape: None,
        strides: None,
        start_offset: None,
        addr: None,
        nbytes: None,
        value: None,
        bits: None,
    };
    match r.subject {
        Subject::Tensor(t) => OrchArg {
            role: Some(r.role),
            dtype: t.dtype,
            shape: Some(t.shape().iter().map(|&x| u64::from(x)).collect()),
            strides: Some(t.strides().iter().map(|&x| u64::from(x)).collect()),
            start_offset: Some(t.start_offset),
            addr: Some(Hex64(t.addr)),
            nbytes: Some(t.nbytes()),
            ..base
        },
        Subject::Scalar(s) => OrchArg {
            kind: Kind::Scalar,
            dtype: s.dtype,
            value: Some(encode(s.dtype, s.bits)),
            bits: Some(Hex64(s.bits)),
            ..base
        },
    }
}

/// A slot with only its index, kind and dtype set.
fn slot(arg_index: usize, kind: Kind, dtype: String) -> Slot {
    Slot {
        arg_index: arg_index as u32,
        kind,
        desc_addr: None,
        addr: None,
        dtype,
        ndims: None,
        shape: None,
        strides: None,
        start_offset: None,
        is_contiguous: None,
        size: None,
        owner_task_id: None,
        version: None,
        manual_dep: None,
        address_space: None,
        extent_elems: None,
        bits: None,
        value: None,
    }
}

/// Tensor slot `i`: the descriptor captured at `o` in `side`, or, when the
/// slot does not point at a valid descriptor, a slot whose dtype says why
/// (never dropped).
fn tensor_slot(i: usize, desc_addr: u64, bytes: &[u8]) -> Slot {
    let base = Slot {
        desc_addr: Some(Hex64(desc_addr)),
        ..slot(i, Kind::Tensor, String::new())
    };
    match ChipTensor::from_bytes(bytes) {
        Ok(t) => Slot {
            addr: Some(Hex64(t.addr)),
            dtype: t.dtype.name().into(),
            ndims: Some(t.ndims),
            shape: Some(t.shape().iter().map(|&x| u64::from(x)).collect()),
            strides: Some(t.strides().iter().map(|&x| u64::from(x)).collect()),
            start_offset: Some(t.start_offset),
            is_contiguous: Some(t.is_contiguous),
            size: Some(t.size),
            owner_task_id: Some(Hex64(t.owner_task_id.0)),
            version: Some(t.version),
            manual_dep: Some(t.manual_dep),
            address_space: Some(t.address_space),
            extent_elems: Some(t.extent_elems),
            ..base
        },
        Err(e) => Slot {
            dtype: format!("INVALID ({e})"),
            ..base
        },
    }
}

/// The `kernel_args_dump.json` entry of a dispatch, decoded from the bytes
/// captured in `side` (slots, contexts, descriptors).
pub(crate) fn dispatch(d: &DispatchRecord, side: &[u8]) -> Dispatch {
    let word = |i: usize| u64::from_le_bytes(side[8 * i..8 * i + 8].try_into().unwrap());
    let nt = usize::from(d.n_tensors);
    let mut args = Vec::with_capacity(nt + usize::from(d.n_scalars));
    for i in 0..nt {
        let o = CAPTURE_HEAD + i * ChipTensor::BYTES;
        args.push(tensor_slot(i, word(i), &side[o..o + ChipTensor::BYTES]));
    }
    for j in 0..usize::from(d.n_scalars) {
        let i = nt + j;
        let s = Scalar {
            bits: word(i),
            dtype: d.scalar_dtypes[j],
        };
        args.push(Slot {
            bits: Some(Hex64(s.bits)),
            value: Some(encode(s.dtype, s.bits)),
            ..slot(i, Kind::Scalar, s.dtype.name().into())
        });
    }
    let ctx8 = |o: usize| -> [u8; 8] { side[o..o + 8].try_into().unwrap() };
    let lc = LocalContext::from_bytes(ctx8(ARG_SLOTS * 8));
    let gc = GlobalContext::from_bytes(ctx8(ARG_SLOTS * 8 + 8));
    let context = |i: usize, kind| Context {
        arg_index: i as u32,
        kind,
        addr: Hex64(word(i)),
        block_idx: None,
        block_num: None,
        sub_block_id: None,
    };
    Dispatch {
        dispatch_id: d.dispatch_id,
        task_id: Hex64(d.task_id.0),
        func_id: d.func_id,
        subtask_id: d.subtask.id(),
        subtask: d.subtask.name().into(),
        core_type: d.subtask.core_type().name().into(),
        core_id: d.core_id,
        block_idx: d.block_idx,
        block_num: d.block_num,
        stage: Stage::BeforeDispatch.name().into(),
        args_addr: Some(Hex64(d.args_addr)),
        args,
        context: vec![
            Context {
                block_idx: Some(lc.block_idx),
                block_num: Some(lc.block_num),
                ..context(LOCAL_CONTEXT_SLOT, ContextKind::LocalContext)
            },
            Context {
                sub_block_id: Some(gc.sub_block_id),
                ..context(GLOBAL_CONTEXT_SLOT, ContextKind::GlobalContext)
            },
        ],
    }
}

/// Write the orchestration args dump.
pub(crate) fn write_args_dump(
    cfg: &DumpConfig,
    args: &[OrchArg],
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    let mut args = args.to_vec();
    args.sort_by_key(|a| a.arg_index);
    let doc = ArgsDump {
        schema_version: SCHEMA_VERSION,
        workload: cfg.workload.clone(),
        case: cfg.case.clone(),
        total_args: args.len() as u64,
        dropped_args: dropped,
        args,
    };
    let path = cfg.files().args;
    write_atomic(&path, |w| {
        serde_json::to_writer_pretty(&mut *w, &doc).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })?;
    Ok(path)
}

/// Write the kernel args dump from pre-formatted dispatch entries.
pub(crate) fn write_kernel_args_dump(
    cfg: &DumpConfig,
    c: &mut Collected,
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    c.dispatches.sort_unstable_by_key(|d| d.0);
    let head = KernelArgsDump {
        schema_version: SCHEMA_VERSION,
        total_dispatches: c.dispatches.len() as u64,
        total_args: c.dispatch_args,
        dropped_dispatches: dropped,
        dispatches: vec![],
    };
    let head = serde_json::to_string_pretty(&head).expect("header serializes");
    let head = head
        .strip_suffix("\"dispatches\": []\n}")
        .expect("dispatches is the last field");
    let path = cfg.files().kernel_args;
    write_atomic(&path, |w| {
        w.write_all(head.as_bytes())?;
        w.write_all(b"\"dispatches\": [")?;
        for (i, (_, r)) in c.dispatches.iter().enumerate() {
            w.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            w.write_all(&c.dispatch_json[r.clone()])?;
        }
        w.write_all(b"\n  ]\n}\n")
    })?;
    Ok(path)
}
