//! From dumps to a replay spec (DESIGN §8 steps 2–4).
//!
//! [`select_dispatch`] picks the dispatch out of `kernel_args_dump.json`;
//! [`rebuild`] turns its tensor and scalar slots into a [`ReplaySpec`]:
//!
//! - tensors keep their descriptor (dtype, shape, strides, start_offset,
//!   buffer `size`); their role comes from the tensor dump's records of the
//!   same task and slot;
//! - a tensor whose task has a complete `before_dispatch` payload for that
//!   slot gets those bytes (`data: dump`); an output gets the sentinel; any
//!   other tensor is zero-filled, and its `note` says why (no tensor dump,
//!   a level 1/3 dump without that payload, a truncated record);
//! - the `after_completion` payload of the slot, when complete, becomes
//!   `expected` for verification;
//! - scalars keep their raw bits;
//! - context slots are not copied: the replay synthesizes fresh contexts
//!   from `block_idx`, `block_num` and the member's `sub_block_id`;
//! - a MIX dispatch brings in every member of its cluster: the dispatches
//!   of the same task and block.

use std::collections::BTreeMap;
use std::path::PathBuf;

use simpler_core::{topology, ArgRole, TaskId};
use simpler_format::kernel_args::{ContextKind, Dispatch, Slot};
use simpler_format::vocab::Kind;
use simpler_format::words::count;
use simpler_inspect::{
    kernel_args::KernelArgsFile, stream::DumpInfo, Dump, Record, RecordKind, Stage,
};
use simpler_isa::KernelDef;

use crate::{
    spec::{
        ArgSpec, DataSource, DispatchIdentity, MemberSpec, ReplaySpec, SpecSource, Tolerance,
        SPEC_SCHEMA_VERSION,
    },
    ReplayError,
};

/// The dispatch chosen by [`select_dispatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Its dispatch id.
    pub dispatch_id: u64,
    /// Set when no dispatch id was given and the first of the func id was
    /// taken: says so.
    pub note: Option<String>,
}

/// What [`rebuild`] needs besides the dumps.
#[derive(Debug, Clone, Copy)]
pub struct RebuildOptions<'a> {
    /// Workload name (recorded in the spec).
    pub workload: &'a str,
    /// Case name (recorded in the spec).
    pub case: &'a str,
    /// Arch profile of the run (the dumps do not record it).
    pub arch: &'a str,
    /// Clusters of the run (the dumps do not record it; core ids need it).
    pub clusters: u32,
    /// The workload's kernels, to name the func ids and check core types.
    pub kernels: &'a [KernelDef],
}

/// `func_id 0: dispatch_id 0, 1, 2; func_id 1: …` for "no such dispatch"
/// messages (at most 12 ids per func id are spelled out).
pub fn available_pairs(k: &KernelArgsFile) -> String {
    let mut by_func: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (f, d) in k.available() {
        by_func.entry(f).or_default().push(d);
    }
    if by_func.is_empty() {
        return "none (the dump holds no dispatches)".into();
    }
    by_func
        .iter()
        .map(|(f, ids)| {
            let shown: Vec<String> = ids.iter().take(12).map(u64::to_string).collect();
            let more = if ids.len() > 12 {
                format!(" … ({} in all)", ids.len())
            } else {
                String::new()
            };
            format!("func_id {f}: dispatch_id {}{more}", shown.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn kernel_label(kernels: &[KernelDef], func_id: u32) -> String {
    kernels.iter().find(|k| k.func_id == func_id).map_or_else(
        || format!("func_id {func_id}"),
        |k| format!("func_id {func_id} ({})", k.name),
    )
}

/// Pick the dispatch to replay: `dispatch_id` when given (it must belong to
/// `func_id`), else the first dispatch of `func_id`.
///
/// # Errors
/// [`ReplayError::Selection`]: no dispatch of that func id, an unknown
/// dispatch id (both list the available `(func_id, dispatch_id)` pairs), or
/// a dispatch id that belongs to another func id (says which).
pub fn select_dispatch(
    k: &KernelArgsFile,
    func_id: u32,
    dispatch_id: Option<u64>,
    kernels: &[KernelDef],
) -> Result<Selection, ReplayError> {
    let path = k.path.display();
    let of_func: Vec<u64> = k
        .doc
        .dispatches
        .iter()
        .filter(|d| d.func_id == func_id)
        .map(|d| d.dispatch_id)
        .collect();
    match dispatch_id {
        Some(id) => {
            let Some(d) = k.dispatch(id) else {
                return Err(ReplayError::Selection(format!(
                    "{path}: no dispatch with dispatch_id {id}; available (func_id, dispatch_id) pairs: {}",
                    available_pairs(k)
                )));
            };
            if d.func_id != func_id {
                let mine = if of_func.is_empty() {
                    format!(
                        "{} has no dispatches in this dump",
                        kernel_label(kernels, func_id)
                    )
                } else {
                    format!(
                        "dispatches of {}: {}",
                        kernel_label(kernels, func_id),
                        of_func
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                return Err(ReplayError::Selection(format!(
                    "{path}: dispatch_id {id} belongs to {} (task {}, {}), not to --func-id {func_id}; {mine}",
                    kernel_label(kernels, d.func_id),
                    d.task_id,
                    d.subtask
                )));
            }
            Ok(Selection {
                dispatch_id: id,
                note: None,
            })
        }
        None => {
            let Some(&first) = of_func.iter().min() else {
                return Err(ReplayError::Selection(format!(
                    "{path}: no dispatch of {}; available (func_id, dispatch_id) pairs: {}",
                    kernel_label(kernels, func_id),
                    available_pairs(k)
                )));
            };
            Ok(Selection {
                dispatch_id: first,
                note: Some(format!(
                    "no --dispatch-id given: replaying dispatch {first}, the first of {} ({} of it in the dump)",
                    kernel_label(kernels, func_id),
                    count(of_func.len() as u64, "dispatch", "dispatches")
                )),
            })
        }
    }
}

/// The slot fields that must agree between the members of a MIX cluster
/// (they all get the task's argument array; descriptor addresses differ
/// because every member has its own payload).
fn slot_key(s: &Slot) -> impl PartialEq + '_ {
    (
        s.arg_index,
        &s.kind,
        &s.dtype,
        &s.addr,
        &s.shape,
        &s.strides,
        s.start_offset,
        s.size,
        &s.bits,
    )
}

/// Cluster counts (1..=`max`) under which every dispatch's core id is the
/// member its subtask says.
fn consistent_clusters(k: &KernelArgsFile, max: u32) -> Vec<u32> {
    (1..=max)
        .filter(|&c| {
            k.doc
                .dispatches
                .iter()
                .all(|d| topology::locate(c, d.core_id).is_some_and(|(_, m)| m.name() == d.subtask))
        })
        .collect()
}

fn identity(d: &Dispatch) -> DispatchIdentity {
    DispatchIdentity {
        dispatch_id: Some(d.dispatch_id),
        task_id: Some(d.task_id.to_string()),
        subtask: d.subtask.clone(),
        core_id: Some(d.core_id),
        block_idx: d.block_idx,
        block_num: d.block_num,
        sub_block_id: d
            .context
            .iter()
            .find(|c| c.kind == ContextKind::GlobalContext)
            .and_then(|c| c.sub_block_id),
    }
}

/// The tensor dump records of one task, and the dump they come from.
#[derive(Debug, Clone, Copy)]
pub struct DumpRecs<'a> {
    /// The dump's header, manifest and payload file.
    pub info: &'a DumpInfo,
    /// The task's records (any order).
    pub records: &'a [&'a Record],
}

/// Build the spec of dispatch `dispatch_id` from the kernel args dump `k`
/// and, when there is one, the tensor dump of the same run.
///
/// # Errors
/// [`ReplayError::Selection`] for an unknown dispatch id;
/// [`ReplayError::Rebuild`] when the dispatch ran a func id the workload
/// does not have (or on another core type), when the core ids contradict
/// `clusters`, or when the tensor dump's records contradict the slots.
pub fn rebuild(
    k: &KernelArgsFile,
    dump: Option<&Dump>,
    dispatch_id: u64,
    opts: &RebuildOptions<'_>,
) -> Result<ReplaySpec, ReplayError> {
    let task = k.dispatch(dispatch_id).map(|d| TaskId(d.task_id.0));
    let recs: Vec<&Record> = dump
        .map(|dp| {
            dp.records()
                .iter()
                .filter(|r| Some(r.task_id) == task)
                .collect()
        })
        .unwrap_or_default();
    let dump = dump.map(|dp| DumpRecs {
        info: dp.info(),
        records: &recs,
    });
    rebuild_with(k, dump, dispatch_id, opts)
}

/// [`rebuild`] from the task's records, already picked out of the dump.
///
/// # Errors
/// As for [`rebuild`].
pub fn rebuild_with(
    k: &KernelArgsFile,
    dump: Option<DumpRecs<'_>>,
    dispatch_id: u64,
    opts: &RebuildOptions<'_>,
) -> Result<ReplaySpec, ReplayError> {
    let path = k.path.display().to_string();
    let d = k.dispatch(dispatch_id).ok_or_else(|| {
        ReplayError::Selection(format!(
            "{path}: no dispatch with dispatch_id {dispatch_id}; available (func_id, dispatch_id) pairs: {}",
            available_pairs(k)
        ))
    })?;
    let (member_specs, selected, mut notes) = cluster(k, d, opts)?;
    let top = member_specs[selected].clone();
    let recs = task_tensor_records(dump, d, &mut notes);
    let from = SlotSource {
        dump,
        recs: &recs,
        bin: dump.map(|dp| canonical(dp.info.payload.path())),
        level: dump.and_then(|dp| dp.info.header.dump_level),
        path: &path,
        dispatch: d,
    };
    let args = d
        .args
        .iter()
        .map(|s| match s.kind {
            Kind::Scalar => Ok(scalar_spec(s)),
            Kind::Tensor => from.tensor_spec(s),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let source = SpecSource {
        kernel_args_dump: Some(canonical(&k.path)),
        tensor_dump: dump.map(|dp| canonical(&dp.info.manifest)),
    };
    Ok(assemble(
        opts,
        &top,
        member_specs,
        args,
        source,
        notes,
        None,
    ))
}

/// The spec of one rebuilt dispatch: `top` is its first member (the AIC of
/// a MIX), `members` are listed only when there are several.
pub(crate) fn assemble(
    opts: &RebuildOptions<'_>,
    top: &MemberSpec,
    members: Vec<MemberSpec>,
    args: Vec<ArgSpec>,
    source: SpecSource,
    notes: Vec<String>,
    tolerance: Option<Tolerance>,
) -> ReplaySpec {
    ReplaySpec {
        schema_version: SPEC_SCHEMA_VERSION,
        workload: opts.workload.into(),
        case: opts.case.into(),
        arch: opts.arch.into(),
        clusters: opts.clusters,
        func_id: top.func_id,
        kernel: top.kernel.clone(),
        core_type: top.core_type.clone(),
        dispatch: top.dispatch.clone(),
        members: if members.len() > 1 { members } else { vec![] },
        args,
        source: Some(source),
        notes,
        tolerance,
    }
}

/// The cluster of dispatch `d` (every dispatch of the same task and block,
/// AIC first), each member checked against the workload's kernels and
/// `clusters`; the index of `d` among them and the notes so far.
fn cluster(
    k: &KernelArgsFile,
    d: &Dispatch,
    opts: &RebuildOptions<'_>,
) -> Result<(Vec<MemberSpec>, usize, Vec<String>), ReplayError> {
    let path = k.path.display();
    let mut members: Vec<&Dispatch> = k
        .doc
        .dispatches
        .iter()
        .filter(|m| m.task_id == d.task_id && m.block_idx == d.block_idx)
        .collect();
    members.sort_by_key(|m| m.subtask_id);
    for m in &members {
        if m.args.len() != d.args.len()
            || m.args
                .iter()
                .zip(&d.args)
                .any(|(a, b)| slot_key(a) != slot_key(b))
        {
            return Err(ReplayError::Rebuild(format!(
                "{path}: dispatches {} and {} are members of one MIX block (task {}, block {}) but their argument slots differ",
                d.dispatch_id, m.dispatch_id, d.task_id, d.block_idx
            )));
        }
    }
    let specs = members
        .iter()
        .map(|m| member(k, m, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let selected = members
        .iter()
        .position(|m| m.dispatch_id == d.dispatch_id)
        .unwrap_or(0);
    let mut notes = Vec::new();
    if specs.len() > 1 {
        notes.push(format!(
            "MIX dispatch: the replay runs the whole cluster ({}) with the same arguments",
            specs
                .iter()
                .map(|m| format!(
                    "{} func {} {} dispatch {}",
                    m.dispatch.subtask,
                    m.func_id,
                    m.kernel,
                    m.dispatch.dispatch_id.unwrap_or(0)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    notes.push(format!(
        "arch {} and clusters {} are not recorded in the dumps; they are the values given to insight-trace (--arch, --clusters)",
        opts.arch, opts.clusters
    ));
    Ok((specs, selected, notes))
}

/// One member: its func id must be a kernel of the workload on the core
/// type it ran on, its core id a core of that member with `clusters`.
fn member(
    k: &KernelArgsFile,
    m: &Dispatch,
    opts: &RebuildOptions<'_>,
) -> Result<MemberSpec, ReplayError> {
    let path = k.path.display();
    let Some(kd) = opts.kernels.iter().find(|kd| kd.func_id == m.func_id) else {
        return Err(ReplayError::Rebuild(format!(
            "{path}: dispatch {} ran func_id {}, which workload {} does not have (its kernels: {}); is the dump from another workload?",
            m.dispatch_id,
            m.func_id,
            opts.workload,
            kernel_list(opts.kernels)
        )));
    };
    if kd.core_type.name() != m.core_type {
        return Err(ReplayError::Rebuild(format!(
            "{path}: dispatch {} ran func_id {} on an {} core, but workload {} registers func_id {} '{}' for {}; is the dump from another workload?",
            m.dispatch_id,
            m.func_id,
            m.core_type,
            opts.workload,
            kd.func_id,
            kd.name,
            kd.core_type.name()
        )));
    }
    if topology::locate(opts.clusters, m.core_id).is_none_or(|(_, s)| s.name() != m.subtask) {
        let max = simpler_chip::ArchProfile::by_name(opts.arch).map_or(36, |a| a.max_clusters);
        let fits = consistent_clusters(k, max);
        let advice = if fits.is_empty() {
            format!("no --clusters value (1 to {max} for arch {}) fits the dump's core ids: field core_id is not an {} core of any chip", opts.arch, m.subtask)
        } else {
            format!(
                "the dump's core ids fit --clusters {}; pass the --clusters of the run that wrote the dump",
                fits.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            )
        };
        return Err(ReplayError::Rebuild(format!(
            "{path}: dispatch {} ran as {} on core {}, which is not an {} core with --clusters {}; {advice}",
            m.dispatch_id, m.subtask, m.core_id, m.subtask, opts.clusters,
        )));
    }
    Ok(MemberSpec {
        func_id: m.func_id,
        kernel: kd.name.to_string(),
        core_type: m.core_type.clone(),
        dispatch: identity(m),
    })
}

/// The task's tensor records by (stage, slot); notes what is missing.
fn task_tensor_records<'a>(
    dump: Option<DumpRecs<'a>>,
    d: &Dispatch,
    notes: &mut Vec<String>,
) -> BTreeMap<(Stage, u32), &'a Record> {
    let mut recs: BTreeMap<(Stage, u32), &Record> = BTreeMap::new();
    let Some(dp) = dump else {
        notes.push(
            "no tensor dump next to the kernel args dump: input tensors are zero-filled and outputs cannot be verified"
                .into(),
        );
        return recs;
    };
    let task = TaskId(d.task_id.0);
    for &r in dp
        .records
        .iter()
        .filter(|r| r.task_id == task && r.kind == RecordKind::Tensor)
    {
        recs.entry((r.stage, r.arg_index)).or_insert(r);
    }
    if dp.records.iter().all(|r| r.task_id != task) {
        notes.push(format!(
            "the tensor dump has no record of task {} (dump level {})",
            d.task_id,
            dp.info
                .header
                .dump_level
                .map_or("?".into(), |l| l.to_string())
        ));
    }
    recs
}

/// A scalar slot: its raw bits.
fn scalar_spec(s: &Slot) -> ArgSpec {
    ArgSpec::scalar(s.arg_index, &s.dtype, s.bits.map_or(0, |b| b.0), None)
}

/// What a tensor slot's bytes are taken from.
struct SlotSource<'a> {
    dump: Option<DumpRecs<'a>>,
    recs: &'a BTreeMap<(Stage, u32), &'a Record>,
    bin: Option<PathBuf>,
    level: Option<u8>,
    path: &'a str,
    dispatch: &'a Dispatch,
}

impl SlotSource<'_> {
    /// A tensor slot: its descriptor's view, bytes from the task's
    /// `before_dispatch` record, expected bytes from its `after_completion`
    /// one (see the module doc).
    fn tensor_spec(&self, s: &Slot) -> Result<ArgSpec, ReplayError> {
        let d = self.dispatch;
        let shape = s.shape.clone().unwrap_or_default();
        let before = self
            .recs
            .get(&(Stage::BeforeDispatch, s.arg_index))
            .copied();
        let after = self
            .recs
            .get(&(Stage::AfterCompletion, s.arg_index))
            .copied();
        for r in [before, after].into_iter().flatten() {
            if r.dtype.name() != s.dtype || r.shape != shape {
                return Err(ReplayError::Rebuild(format!(
                    "tensor dump record {} ({}, {}) is {} {:?} but slot {} of dispatch {} in {} is {} {:?}; are the two dumps from different runs?",
                    r.index,
                    r.label(),
                    r.stage,
                    r.dtype.name(),
                    r.shape,
                    s.arg_index,
                    d.dispatch_id,
                    self.path,
                    s.dtype,
                    shape
                )));
            }
        }
        let role = before.or(after).map(|r| r.role);
        let have = self.dump.is_some();
        let task = d.task_id.to_string();
        let from = |r: &Record, b: &PathBuf| DataSource::Dump {
            file: b.clone(),
            bin_offset: r.bin_offset,
            bin_size: r.bin_size,
            record: Some(r.index),
        };
        let mut why = Vec::new();
        let data = match (before, self.bin.as_ref()) {
            (Some(r), Some(b)) if complete(r) => from(r, b),
            _ if matches!(role, Some(ArgRole::Output | ArgRole::OutputExisting)) => {
                DataSource::Sentinel {}
            }
            (r, _) => {
                let m = missing("before_dispatch", r, have, self.level, &task, s.arg_index);
                why.push(format!("zero-filled: {m}"));
                DataSource::Zeros {}
            }
        };
        let expected = match (after, self.bin.as_ref()) {
            (Some(r), Some(b)) if complete(r) => Some(from(r, b)),
            (r, _) => {
                if r.is_some() || role.is_none() || role.is_some_and(writes) {
                    let m = missing("after_completion", r, have, self.level, &task, s.arg_index);
                    why.push(format!("not verifiable: {m}"));
                }
                None
            }
        };
        Ok(ArgSpec {
            arg_index: s.arg_index,
            kind: "tensor".into(),
            dtype: s.dtype.clone(),
            shape: Some(shape),
            strides: s.strides.clone(),
            start_offset: s.start_offset,
            size: s.size,
            role: role.map(|r| role_name(r).to_string()),
            data: Some(data),
            expected,
            bits: None,
            value: None,
            note: (!why.is_empty()).then(|| why.join("; ")),
        })
    }
}

pub(crate) fn canonical(p: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

pub(crate) fn kernel_list(kernels: &[KernelDef]) -> String {
    kernels
        .iter()
        .map(|k| format!("{} {} [{}]", k.func_id, k.name, k.core_type.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Dumps write `output_existing` as `output`; the spec does the same.
pub(crate) fn role_name(r: ArgRole) -> &'static str {
    match r {
        ArgRole::OutputExisting => "output",
        other => other.name(),
    }
}

pub(crate) fn writes(r: ArgRole) -> bool {
    matches!(
        r,
        ArgRole::Output | ArgRole::OutputExisting | ArgRole::InOut
    )
}

/// A record whose payload is the whole view.
pub(crate) fn complete(r: &Record) -> bool {
    !r.truncated && !r.overwritten && r.bin_size == r.expected_bytes() && r.bin_size > 0
}

/// Why a stage's payload is not available.
pub(crate) fn missing(
    stage: &str,
    r: Option<&Record>,
    have_dump: bool,
    level: Option<u8>,
    task: &str,
    slot: u32,
) -> String {
    match r {
        _ if !have_dump => "no tensor dump next to the kernel args dump".into(),
        None => format!(
            "the tensor dump has no {stage} record of task {task} slot {slot}{}",
            match level {
                Some(1) => " (dump level 1 records only .dump()-marked args)",
                _ => "",
            }
        ),
        Some(r) if r.truncated => format!(
            "{stage} record {} is truncated ({} of {} bytes; drop policy)",
            r.index,
            r.bin_size,
            r.expected_bytes()
        ),
        Some(r) if r.overwritten => format!(
            "{stage} record {} was overwritten before it was written out (drop policy)",
            r.index
        ),
        Some(r) if r.is_metadata_only() => format!(
            "{stage} record {} has no payload (dump level 3: metadata only for unmarked args)",
            r.index
        ),
        Some(r) => format!(
            "{stage} record {} holds {} bytes of the view's {}",
            r.index,
            r.bin_size,
            r.expected_bytes()
        ),
    }
}
