//! A replay spec from per-task records alone (DESIGN §8 "Without
//! `kernel_args_dump.json`"): every dump the upstream runtime writes, and
//! ours without `--dump-kernel-args`. The slots are rebuilt as the
//! upstream `core_swimlane` rebuilds them (UPSTREAM_FORMATS D), except
//! where that tool loses information:
//!
//! - the task's records are those whose `func_id` list holds the func
//!   (its members in slot order AIC, AIV0, AIV1; a MIX task replays its
//!   whole cluster);
//! - records are keyed by `arg_index`, `before_dispatch` winning for
//!   inouts; `kind == "scalar"` marks a scalar; slots must be `0..n`, tensors
//!   first (the argument ABI), and a missing slot is an error (a level-1
//!   dump records only marked args);
//! - a tensor gets its record's view (dtype, shape, strides, start offset)
//!   in a buffer of `(start_offset + extent) × elem` bytes, its bytes from a
//!   complete `before_dispatch` payload, the sentinel for an output, zeros
//!   otherwise (said why); a complete `after_completion` payload becomes the
//!   expected bytes;
//! - a scalar gets its exact slot bits: `bits` when the file has them, else
//!   decoded from `value` by the one codec — a 6-digit upstream float is
//!   said to be derived, never truncated to an integer (the upstream tool
//!   turns 0.25 into 0);
//! - the context is synthesized from `--block-idx`, `--block-num` (the
//!   records do not say; default 1) and the member's sub-block id.

use std::collections::BTreeMap;
use std::path::Path;

use simpler_core::{topology::Subtask, ArgRole, TaskId};
use simpler_format::scalar::BitsOrigin;
use simpler_inspect::{stream::RecordStream, Record, RecordKind, Stage};
use simpler_isa::KernelDef;

use crate::rebuild::{
    assemble, canonical, complete, kernel_list, missing, role_name, writes, RebuildOptions,
};
use crate::spec::{
    ArgSpec, DataSource, DispatchIdentity, MemberSpec, ReplaySpec, SpecSource, Tolerance,
};
use crate::ReplayError;

/// One task of a dump, as its records describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task.
    pub task_id: TaskId,
    /// Its members' func ids (AIC, AIV0, AIV1 order); empty when the dump
    /// does not record them (reference dumps, upstream `[-1]`).
    pub func_ids: Vec<u32>,
    /// Records of the task.
    pub records: usize,
}

/// Every task of the manifest at `manifest`, in task id order (one
/// streaming pass; no record is kept).
///
/// # Errors
/// The dump cannot be read or is invalid.
pub fn task_index(manifest: &Path) -> Result<Vec<TaskInfo>, ReplayError> {
    let mut tasks: BTreeMap<TaskId, TaskInfo> = BTreeMap::new();
    for r in RecordStream::open_manifest(manifest)? {
        let r = r?;
        let t = tasks.entry(r.task_id).or_insert_with(|| TaskInfo {
            task_id: r.task_id,
            func_ids: r.func_ids.clone(),
            records: 0,
        });
        t.records += 1;
        if t.func_ids.is_empty() {
            t.func_ids.clone_from(&r.func_ids);
        }
    }
    Ok(tasks.into_values().collect())
}

/// How a task is chosen without a kernel args dump.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskChoice {
    /// The kernel (`--func-id`; with `task_id` it may be left out when the
    /// dump names the task's func ids).
    pub func_id: Option<u32>,
    /// The n-th task (from 0, task id order) of `func_id`.
    pub nth: Option<u64>,
    /// Or the task itself.
    pub task_id: Option<TaskId>,
}

fn task_list(tasks: &[&TaskInfo]) -> String {
    let shown: Vec<String> = tasks
        .iter()
        .take(12)
        .enumerate()
        .map(|(i, t)| format!("{i}: task {}", t.task_id))
        .collect();
    let more = if tasks.len() > 12 {
        format!(" … ({} in all)", tasks.len())
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn all_tasks(tasks: &[TaskInfo]) -> String {
    let shown: Vec<String> = tasks
        .iter()
        .take(24)
        .map(|t| {
            let f = if t.func_ids.is_empty() {
                "func ids not recorded".to_string()
            } else {
                format!("func {:?}", t.func_ids)
            };
            format!("{} ({f}, {} records)", t.task_id, t.records)
        })
        .collect();
    let more = if tasks.len() > 24 {
        format!(" … ({} tasks in all)", tasks.len())
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// Pick the task to replay; returns it and a note on how it was picked.
///
/// # Errors
/// [`ReplayError::Selection`] naming what exists: no task of that func, an
/// index out of range, an unknown task id, or a dump without func ids and
/// no `--task-id`.
pub fn select_task<'a>(
    tasks: &'a [TaskInfo],
    choice: &TaskChoice,
    manifest: &Path,
) -> Result<(&'a TaskInfo, Option<String>), ReplayError> {
    let path = manifest.display();
    if let Some(id) = choice.task_id {
        let t = tasks.iter().find(|t| t.task_id == id).ok_or_else(|| {
            ReplayError::Selection(format!(
                "{path}: no task {id}; the dump holds {}",
                all_tasks(tasks)
            ))
        })?;
        if let Some(f) = choice.func_id {
            if !t.func_ids.is_empty() && !t.func_ids.contains(&f) {
                return Err(ReplayError::Selection(format!(
                    "{path}: task {id} ran func ids {:?}, not --func-id {f}",
                    t.func_ids
                )));
            }
        }
        return Ok((t, None));
    }
    let Some(f) = choice.func_id else {
        return Err(ReplayError::Selection(format!(
            "{path}: give --func-id (and --dispatch-id N or --task-id 0x…); the dump holds {}",
            all_tasks(tasks)
        )));
    };
    if tasks.iter().all(|t| t.func_ids.is_empty()) {
        return Err(ReplayError::Selection(format!(
            "{path}: the dump does not record func ids, so the tasks of func {f} are not known; name one with --task-id 0x…; the dump holds {}",
            all_tasks(tasks)
        )));
    }
    let of_func: Vec<&TaskInfo> = tasks.iter().filter(|t| t.func_ids.contains(&f)).collect();
    if of_func.is_empty() {
        return Err(ReplayError::Selection(format!(
            "{path}: no task of func {f}; the dump holds {}",
            all_tasks(tasks)
        )));
    }
    let n = choice.nth.unwrap_or(0);
    let t = of_func.get(n as usize).ok_or_else(|| {
        ReplayError::Selection(format!(
            "{path}: func {f} has {} tasks in the dump ({}), no --dispatch-id {n}; without a kernel args dump, --dispatch-id N is the N-th task of the func, from 0",
            of_func.len(),
            task_list(&of_func)
        ))
    })?;
    let note = choice.nth.is_none().then(|| {
        format!(
            "no --dispatch-id or --task-id given: replaying task {}, the first of func {f} ({} of it in the dump)",
            t.task_id,
            of_func.len()
        )
    });
    Ok((t, note))
}

/// The context a rebuilt dispatch runs with.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// `--block-idx`.
    pub block_idx: u32,
    /// `--block-num` (the records do not record it).
    pub block_num: u32,
    /// `--subtask` for a single-kernel AIV task (`aiv0` default).
    pub subtask: Option<Subtask>,
}

/// The cluster members of `task` (AIC first), and which one runs `func`.
fn members(
    task: &TaskInfo,
    func: u32,
    ctx: &Context,
    opts: &RebuildOptions<'_>,
) -> Result<(Vec<MemberSpec>, usize), ReplayError> {
    let funcs = if task.func_ids.is_empty() {
        vec![func]
    } else {
        task.func_ids.clone()
    };
    let mut out: Vec<MemberSpec> = Vec::new();
    for &f in &funcs {
        let kd = opts.kernels.iter().find(|k| k.func_id == f).ok_or_else(|| {
            ReplayError::Rebuild(format!(
                "task {} ran func_id {f}, which workload {} does not have (its kernels: {}); is the dump from another workload?",
                task.task_id,
                opts.workload,
                kernel_list(opts.kernels)
            ))
        })?;
        let taken = |s: Subtask| out.iter().any(|m| m.dispatch.subtask == s.name());
        let subtask = match kd.core_type {
            simpler_core::topology::CoreType::Aic => Subtask::Aic,
            _ if funcs.len() == 1 => ctx.subtask.unwrap_or(Subtask::Aiv0),
            _ if taken(Subtask::Aiv0) => Subtask::Aiv1,
            _ => Subtask::Aiv0,
        };
        if subtask.core_type() != kd.core_type || taken(subtask) {
            return Err(ReplayError::Rebuild(format!(
                "task {}: func {f} '{}' is an {} kernel; it cannot run as {}",
                task.task_id,
                kd.name,
                kd.core_type.name(),
                subtask.name()
            )));
        }
        out.push(member_spec(kd, subtask, task.task_id, ctx));
    }
    out.sort_by_key(|m| Subtask::from_name(&m.dispatch.subtask));
    let sel = out.iter().position(|m| m.func_id == func).unwrap_or(0);
    Ok((out, sel))
}

fn member_spec(kd: &KernelDef, subtask: Subtask, task: TaskId, ctx: &Context) -> MemberSpec {
    MemberSpec {
        func_id: kd.func_id,
        kernel: kd.name.to_string(),
        core_type: kd.core_type.name().to_string(),
        dispatch: DispatchIdentity {
            dispatch_id: None,
            task_id: Some(task.to_string()),
            subtask: subtask.name().to_string(),
            core_id: None,
            block_idx: ctx.block_idx,
            block_num: ctx.block_num,
            sub_block_id: Some(subtask.sub_block_id()),
        },
    }
}

/// What [`rebuild_from_records`] reads: the task's records and the dump
/// they come from.
#[derive(Debug, Clone, Copy)]
pub struct TaskRecords<'a> {
    /// The task's records, in manifest order.
    pub records: &'a [&'a Record],
    /// The manifest.
    pub manifest: &'a Path,
    /// Its payload file.
    pub bin: &'a Path,
    /// Its dump level, when recorded.
    pub dump_level: Option<u8>,
}

/// The records of each slot: the one the arguments come from
/// (`before_dispatch` winning for inouts; the first of a per-block
/// repeat), and the `after_completion` one.
fn slots<'a>(recs: &[&'a Record]) -> BTreeMap<u32, (&'a Record, Option<&'a Record>)> {
    let mut m: BTreeMap<u32, (&Record, Option<&Record>)> = BTreeMap::new();
    for &r in recs.iter().filter(|r| r.stage == Stage::BeforeDispatch) {
        m.entry(r.arg_index).or_insert((r, None));
    }
    for &r in recs.iter().filter(|r| r.stage == Stage::AfterCompletion) {
        m.entry(r.arg_index)
            .and_modify(|e| e.1 = e.1.or(Some(r)))
            .or_insert((r, Some(r)));
    }
    m
}

/// Build the spec of `task`'s cluster from its records (see the module
/// doc); `func` is the member selected, `tolerance` set for a dump of the
/// upstream runtime.
///
/// # Errors
/// [`ReplayError::Rebuild`]: a missing slot, a scalar before a tensor, a
/// scalar without bits, a func the workload does not have.
pub fn rebuild_from_records(
    task: &TaskInfo,
    func: u32,
    recs: &TaskRecords<'_>,
    ctx: &Context,
    opts: &RebuildOptions<'_>,
    tolerance: Option<Tolerance>,
) -> Result<ReplaySpec, ReplayError> {
    let (members, sel) = members(task, func, ctx, opts)?;
    let top = members[sel].clone();
    let bin = canonical(recs.bin);
    let mut args = Vec::new();
    let slots = slots(recs.records);
    let mut notes = vec![format!(
        "args rebuilt from the per-task records of task {} (no kernel_args_dump.json): block {}/{} and the sub-block id are assumed (--block-idx, --block-num, --subtask), core ids are cluster 0's",
        task.task_id, ctx.block_idx, ctx.block_num
    )];
    for (k, (&arg, &(r, after))) in slots.iter().enumerate() {
        if arg as usize != k {
            return Err(ReplayError::Rebuild(format!(
                "{}: task {} has no record of slot {k} (its slots: {:?}){}; its args cannot be rebuilt",
                recs.manifest.display(),
                task.task_id,
                slots.keys().collect::<Vec<_>>(),
                if recs.dump_level == Some(1) {
                    " — dump level 1 records only .dump()-marked args; use a level 2 or 3 dump, or a kernel args dump"
                } else {
                    ""
                }
            )));
        }
        let a = match r.kind {
            RecordKind::Scalar => scalar_arg(r, task, &mut notes)?,
            RecordKind::Tensor => {
                if args.iter().any(|a: &ArgSpec| a.kind == "scalar") {
                    return Err(ReplayError::Rebuild(format!(
                        "{}: task {} slot {arg} is a tensor after a scalar slot; the argument ABI puts tensors first",
                        recs.manifest.display(),
                        task.task_id
                    )));
                }
                tensor_arg(r, after, &bin, recs, task)
            }
        };
        args.push(a);
    }
    let source = SpecSource {
        kernel_args_dump: None,
        tensor_dump: Some(canonical(recs.manifest)),
    };
    Ok(assemble(
        opts, &top, members, args, source, notes, tolerance,
    ))
}

fn scalar_arg(
    r: &Record,
    task: &TaskInfo,
    notes: &mut Vec<String>,
) -> Result<ArgSpec, ReplayError> {
    let bits = r.bits.ok_or_else(|| {
        ReplayError::Rebuild(format!(
            "task {} slot {}: a scalar record without bits or value",
            task.task_id, r.arg_index
        ))
    })?;
    let note = match r.bits_origin {
        Some(BitsOrigin::Rounded) => {
            let n = format!(
                "slot {}: bits derived from a 6-digit value ({}), not recorded",
                r.arg_index,
                r.value.as_ref().map_or_else(
                    || "null".into(),
                    |v| serde_json::to_string(v).unwrap_or_default()
                )
            );
            notes.push(n.clone());
            Some(n)
        }
        _ => None,
    };
    Ok(ArgSpec::scalar(r.arg_index, r.dtype.name(), bits, note))
}

fn tensor_arg(
    r: &Record,
    after: Option<&Record>,
    bin: &Path,
    recs: &TaskRecords<'_>,
    task: &TaskInfo,
) -> ArgSpec {
    let before = (r.stage == Stage::BeforeDispatch).then_some(r);
    let dump = |r: &Record| DataSource::Dump {
        file: bin.to_path_buf(),
        bin_offset: r.bin_offset,
        bin_size: r.bin_size,
        record: Some(r.index),
    };
    fn have(r: Option<&Record>) -> Option<&Record> {
        r.filter(|r| complete(r))
    }
    let task_s = task.task_id.to_string();
    let mut why = Vec::new();
    let data = match have(before) {
        Some(b) => dump(b),
        None if matches!(r.role, ArgRole::Output | ArgRole::OutputExisting) => {
            DataSource::Sentinel {}
        }
        None => {
            let m = missing(
                "before_dispatch",
                before,
                true,
                recs.dump_level,
                &task_s,
                r.arg_index,
            );
            why.push(format!("zero-filled: {m}"));
            DataSource::Zeros {}
        }
    };
    let expected = have(after).map(dump);
    if expected.is_none() && writes(r.role) {
        let m = missing(
            "after_completion",
            after,
            true,
            recs.dump_level,
            &task_s,
            r.arg_index,
        );
        why.push(format!("not verifiable: {m}"));
    }
    ArgSpec {
        arg_index: r.arg_index,
        kind: "tensor".into(),
        dtype: r.dtype.name().into(),
        shape: Some(r.shape.clone()),
        strides: Some(r.strides.clone()),
        start_offset: Some(r.start_offset),
        size: None,
        role: Some(role_name(r.role).to_string()),
        data: Some(data),
        expected,
        bits: None,
        value: None,
        note: (!why.is_empty()).then(|| why.join("; ")),
    }
}
