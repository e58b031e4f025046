//! Running a spec: one kernel dispatch alone, on private global memory,
//! with instruction recording on (DESIGN §8 step 6, functional half).
//!
//! [`execute`] builds a fresh [`Gm`] holding one buffer per tensor slot
//! (sized from the descriptor: its `size`, at least `(start_offset +
//! extent_elems) × elem`), places each view's bytes at the view's strided
//! positions ([`Gm::scatter`]) or fills an output's whole buffer with the
//! sentinel, writes one dispatch payload per member in the ABI layout
//! ([`simpler_core::abi::payload`]: 50 slots, fresh contexts, descriptors),
//! runs each member's kernel on its own [`Core`] (AIC, AIV0, AIV1 of the
//! dispatch's cluster, in that order) and gathers every tensor view back.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
    path::Path,
    sync::Arc,
};

use simpler_chip::{Gm, GmArea, GM_ALIGN};
use simpler_core::{
    abi::{self, payload, GlobalContext, LocalContext},
    ChipTensor, DType,
};
use simpler_isa::{kernel::panic_message, Args, Core, InstrRecord, KernelDef};

use crate::{
    spec::{fill_bits, DataSource, Member, Plan, SENTINEL_BYTE},
    ReplayError, SubCore,
};

/// Most global memory one replay reserves (tensor buffers and payloads):
/// a spec asking for more is refused rather than exhausting the host.
pub const MAX_REPLAY_GM: u64 = 4 << 30;

/// A tensor slot's view before and after the kernels ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorState {
    /// Slot.
    pub arg_index: u32,
    /// Row-major bytes of the view as placed before the run.
    pub before: Vec<u8>,
    /// Row-major bytes of the view after the run.
    pub after: Vec<u8>,
}

/// What a replay run produced.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Recorded instruction streams, one per member, in run order.
    pub cores: Vec<SubCore>,
    /// Every tensor slot, in slot order.
    pub tensors: Vec<TensorState>,
}

/// Bytes of a view described by `src` (`dump`, `file`, `zeros`, `fill`;
/// `sentinel` gives the pattern). Relative paths are resolved against
/// `base`; `field` and `spec_file` name the source in messages.
///
/// # Errors
/// A file that cannot be read, is too short for the record's range, or
/// does not hold exactly `view_bytes`.
pub fn load_source(
    src: &DataSource,
    base: &Path,
    dtype: DType,
    view_bytes: u64,
    spec_file: &str,
    field: &str,
) -> Result<Vec<u8>, ReplayError> {
    let bad = |msg: String| ReplayError::Spec {
        file: spec_file.into(),
        field: field.into(),
        msg,
    };
    let n = usize::try_from(view_bytes)
        .map_err(|_| bad(format!("{view_bytes} bytes do not fit in memory")))?;
    match src.resolved(base) {
        DataSource::Zeros {} => Ok(vec![0; n]),
        DataSource::Sentinel {} => Ok(vec![SENTINEL_BYTE; n]),
        f @ DataSource::Fill { .. } => {
            let bits = fill_bits(&f, dtype).map_err(bad)?;
            let elem = &bits.to_le_bytes()[..dtype.size()];
            Ok(elem.repeat(n / dtype.size()))
        }
        DataSource::File { path } => {
            let mut bytes = Vec::with_capacity(n);
            open_data(&path)
                .map_err(bad)?
                .read_to_end(&mut bytes)
                .map_err(|e| bad(format!("{}: cannot read: {e}", path.display())))?;
            if bytes.len() as u64 != view_bytes {
                return Err(bad(format!(
                    "{} is {} bytes, but the view holds {view_bytes} ({} row-major, little-endian)",
                    path.display(),
                    bytes.len(),
                    dtype.name()
                )));
            }
            Ok(bytes)
        }
        DataSource::Dump {
            file,
            bin_offset,
            bin_size,
            ..
        } => {
            if bin_size != view_bytes {
                return Err(bad(format!(
                    "bin_size {bin_size} but the view holds {view_bytes} bytes"
                )));
            }
            let mut f = open_data(&file).map_err(bad)?;
            let len = f
                .metadata()
                .map_err(|e| bad(format!("{}: {e}", file.display())))?
                .len();
            let end = bin_offset.checked_add(bin_size);
            if end.is_none_or(|e| e > len) {
                return Err(bad(format!(
                    "{} is {len} bytes but the record needs bytes {bin_offset}..{}",
                    file.display(),
                    end.map_or_else(|| "overflow".to_string(), |e| e.to_string())
                )));
            }
            let mut out = vec![0u8; n];
            f.seek(SeekFrom::Start(bin_offset))
                .and_then(|_| f.read_exact(&mut out))
                .map_err(|e| bad(format!("{}: cannot read: {e}", file.display())))?;
            Ok(out)
        }
    }
}

/// Open a data file a spec names: a regular file only, opened without
/// blocking (a FIFO would hang the replay, a device never end).
fn open_data(path: &Path) -> Result<File, String> {
    simpler_format::files::open_regular(path).map_err(|e| e.to_string())
}

/// Check, without reading them, that every `dump`/`file` source of
/// `plan` (data and expected) exists and is long enough, so that a bad
/// path is reported against the spec the user gave.
///
/// # Errors
/// As for [`load_source`].
pub fn check_sources(plan: &Plan, base: &Path, spec_file: &str) -> Result<(), ReplayError> {
    for (k, t) in plan.tensors.iter().enumerate() {
        let sources = [("data", Some(&t.data)), ("expected", t.expected.as_ref())];
        for (name, src) in sources {
            let Some(src) = src else { continue };
            let bad = |msg: String| ReplayError::Spec {
                file: spec_file.into(),
                field: format!("args[{k}].{name}"),
                msg,
            };
            let (path, need, exact) = match src.resolved(base) {
                DataSource::Dump {
                    file,
                    bin_offset,
                    bin_size,
                    ..
                } => (file, bin_offset.checked_add(bin_size), false),
                DataSource::File { path } => (path, Some(t.view_bytes()), true),
                _ => continue,
            };
            let len = open_data(&path)
                .and_then(|f| {
                    f.metadata()
                        .map_err(|e| format!("{}: cannot read: {e}", path.display()))
                })
                .map_err(bad)?
                .len();
            match need {
                Some(n) if (exact && len == n) || (!exact && len >= n) => {}
                _ => {
                    return Err(bad(format!(
                        "{} is {len} bytes, but {} {}",
                        path.display(),
                        if exact {
                            "the view holds"
                        } else {
                            "the record needs bytes up to"
                        },
                        need.map_or_else(|| "beyond 2^64".to_string(), |n| n.to_string())
                    )))
                }
            }
        }
    }
    Ok(())
}

fn align(n: u64) -> Option<u64> {
    n.max(1).checked_next_multiple_of(GM_ALIGN)
}

/// The registry entry of `m`, checked against the spec's name and core type.
fn kernel_of<'k>(
    kernels: &'k [KernelDef],
    m: &Member,
    field: &str,
    spec_file: &str,
) -> Result<&'k KernelDef, ReplayError> {
    let bad = |f: &str, msg: String| ReplayError::Spec {
        file: spec_file.into(),
        field: format!("{field}{f}"),
        msg,
    };
    let list = || {
        kernels
            .iter()
            .map(|k| format!("{} {} [{}]", k.func_id, k.name, k.core_type.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let k = kernels
        .iter()
        .find(|k| k.func_id == m.func_id)
        .ok_or_else(|| {
            bad(
                "func_id",
                format!(
                    "{} is not a kernel of the workload (its kernels: {})",
                    m.func_id,
                    list()
                ),
            )
        })?;
    if k.name != m.kernel {
        return Err(bad(
            "kernel",
            format!(
                "{:?}, but func_id {} is '{}' in the workload's registry",
                m.kernel, m.func_id, k.name
            ),
        ));
    }
    if k.core_type != m.subtask.core_type() {
        return Err(bad(
            "core_type",
            format!(
                "func_id {} '{}' runs on {}, not on {} ({})",
                m.func_id,
                k.name,
                k.core_type.name(),
                m.subtask.core_type().name(),
                m.subtask
            ),
        ));
    }
    Ok(k)
}

fn gm_err(what: &str, e: impl std::fmt::Display) -> ReplayError {
    ReplayError::Gm(format!("{what}: {e}"))
}

/// Run `plan`'s members on private GM with recording on (see the module
/// doc). `base` resolves relative data paths; `spec_file` names the spec
/// in messages.
///
/// # Errors
/// Unreadable data, a func id or kernel name the registry does not have,
/// GM that cannot be reserved, or a kernel that fails or panics
/// ([`ReplayError::Kernel`] naming it, its func id and core).
pub fn execute(
    plan: &Plan,
    base: &Path,
    kernels: &[KernelDef],
    spec_file: &str,
) -> Result<Execution, ReplayError> {
    let defs = member_defs(plan, kernels, spec_file)?;
    let total = gm_bytes(plan, spec_file)?;
    // Initial view bytes (bounded by the GM check above).
    let mut befores = Vec::with_capacity(plan.tensors.len());
    for (k, t) in plan.tensors.iter().enumerate() {
        befores.push(load_source(
            &t.data,
            base,
            t.dtype,
            t.view_bytes(),
            spec_file,
            &format!("args[{k}].data"),
        )?);
    }
    let gm = Arc::new(Gm::new(total).map_err(|e| gm_err(&format!("reserving {total} bytes"), e))?);
    let descs = place_tensors(&gm, plan, &befores)?;
    let areas = write_payloads(&gm, plan, &descs)?;

    // Run the members, AIC first.
    let mut cores = Vec::with_capacity(plan.members.len());
    for ((m, def), &area) in plan.members.iter().zip(&defs).zip(&areas) {
        let records = run_member(&gm, plan, m, def, area)?;
        let sub = SubCore::from_core_id(m.core_id, plan.clusters, records).ok_or_else(|| {
            ReplayError::Gm(format!(
                "core id {} is out of range for {} clusters",
                m.core_id, plan.clusters
            ))
        })?;
        cores.push(sub);
    }

    let mut tensors = Vec::with_capacity(plan.tensors.len());
    for ((t, d), before) in plan.tensors.iter().zip(&descs).zip(befores) {
        let mut after = vec![0u8; before.len()];
        gm.gather(d, &mut after)
            .map_err(|e| gm_err(&format!("reading slot {} back", t.arg_index), e))?;
        tensors.push(TensorState {
            arg_index: t.arg_index,
            before,
            after,
        });
    }
    Ok(Execution { cores, tensors })
}

/// Check, before anything is written, that `plan` can run: every
/// member's func id and kernel name are in `kernels`, and its GM fits a
/// replay — so these errors name the spec the user gave, and leave no
/// workspace behind.
///
/// # Errors
/// As for [`execute`], short of running anything.
pub fn check_runnable(
    plan: &Plan,
    kernels: &[KernelDef],
    spec_file: &str,
) -> Result<(), ReplayError> {
    member_defs(plan, kernels, spec_file)?;
    gm_bytes(plan, spec_file).map(|_| ())
}

/// Each member's kernel, looked up by func id and checked by name.
fn member_defs<'k>(
    plan: &Plan,
    kernels: &'k [KernelDef],
    spec_file: &str,
) -> Result<Vec<&'k KernelDef>, ReplayError> {
    plan.members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let field = if plan.members.len() > 1 {
                format!("members[{i}].")
            } else {
                String::new()
            };
            kernel_of(kernels, m, &field, spec_file)
        })
        .collect()
}

/// GM the replay needs: every buffer and one payload area per member,
/// aligned; refused above [`MAX_REPLAY_GM`], naming the largest buffer.
fn gm_bytes(plan: &Plan, spec_file: &str) -> Result<u64, ReplayError> {
    let overflow = || ReplayError::Gm("the tensor buffers overflow 64 bits".into());
    let mut total = 0u64;
    for t in &plan.tensors {
        total = align(t.buffer_bytes())
            .and_then(|b| total.checked_add(b))
            .ok_or_else(overflow)?;
    }
    let payload_bytes = align(payload::BYTES).unwrap_or(payload::BYTES);
    total = total
        .checked_add(payload_bytes * plan.members.len() as u64 + GM_ALIGN)
        .ok_or_else(overflow)?;
    if total > MAX_REPLAY_GM {
        let (k, big) = plan
            .tensors
            .iter()
            .enumerate()
            .max_by_key(|(_, t)| t.buffer_bytes())
            .map_or((0, 0), |(k, t)| (k, t.buffer_bytes()));
        return Err(ReplayError::Spec {
            file: spec_file.into(),
            field: format!("args[{k}].size"),
            msg: format!(
                "the replay would need {total} bytes of GM (slot {k}'s buffer alone {big}); a replay reserves at most {MAX_REPLAY_GM}"
            ),
        });
    }
    Ok(total)
}

/// Allocate each slot's buffer and fill it: the view's initial bytes, or
/// the sentinel over the whole buffer. Returns the descriptors.
fn place_tensors(
    gm: &Gm,
    plan: &Plan,
    befores: &[Vec<u8>],
) -> Result<Vec<ChipTensor>, ReplayError> {
    let mut descs: Vec<ChipTensor> = Vec::with_capacity(plan.tensors.len());
    for (t, before) in plan.tensors.iter().zip(befores) {
        let bytes = t.buffer_bytes();
        let addr = gm
            .alloc(bytes)
            .map_err(|e| gm_err(&format!("slot {} buffer of {bytes} bytes", t.arg_index), e))?;
        let desc = t.descriptor(addr);
        if matches!(t.data, DataSource::Sentinel {}) {
            // In chunks: the buffer may be much larger than the view.
            let chunk = vec![SENTINEL_BYTE; 1 << 20];
            let mut off = 0u64;
            while off < bytes {
                let n = (bytes - off).min(chunk.len() as u64) as usize;
                gm.write(addr + off, &chunk[..n])
                    .map_err(|e| gm_err("sentinel fill", e))?;
                off += n as u64;
            }
        } else {
            gm.scatter(&desc, before)
                .map_err(|e| gm_err(&format!("placing slot {}", t.arg_index), e))?;
        }
        descs.push(desc);
    }
    Ok(descs)
}

/// One payload per member: same slots, its own contexts; in a reserved
/// region, as the runtime's (kernels read it, none can write it).
fn write_payloads(gm: &Gm, plan: &Plan, descs: &[ChipTensor]) -> Result<Vec<GmArea>, ReplayError> {
    let mut areas = Vec::with_capacity(plan.members.len());
    let mut staged = Vec::new();
    for m in &plan.members {
        let region = gm
            .reserve(payload::BYTES)
            .map_err(|e| gm_err("dispatch payload", e))?;
        let base = region.base();
        let local = LocalContext {
            block_idx: plan.block_idx as i32,
            block_num: plan.block_num as i32,
        };
        let global = GlobalContext {
            sub_block_id: m.sub_block_id,
        };
        let scalars = plan.scalars.iter().map(|s| s.bits);
        abi::encode_payload(base, descs, scalars, local, global, &mut staged)
            .map_err(|e| gm_err("dispatch payload", e))?;
        gm.write_reserved(&region, base, &staged)
            .map_err(|e| gm_err("payload", e))?;
        areas.push(region.area());
    }
    Ok(areas)
}

/// Run one member on a fresh core of its own thread, through
/// `simpler_isa::kernel::run` (a kernel panic is reported as an error
/// naming the kernel, not printed by the process's panic hook).
fn run_member(
    gm: &Arc<Gm>,
    plan: &Plan,
    m: &Member,
    def: &KernelDef,
    payload: GmArea,
) -> Result<Vec<InstrRecord>, ReplayError> {
    let kernel_err = |msg: String| ReplayError::Kernel {
        kernel: def.name.to_string(),
        func_id: def.func_id,
        member: m.subtask.name(),
        core_id: m.core_id,
        msg,
    };
    let func = def.func;
    let core_type = m.subtask.core_type();
    let out = std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name(format!("core{}-replay", m.core_id))
            .spawn_scoped(s, || {
                let mut core = Core::new(m.core_id, core_type, &plan.arch, gm.clone());
                core.start_recording();
                let args = Args::in_area(gm, payload, payload.start());
                let r = match simpler_isa::kernel::run(func, &mut core, &args) {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(p) => Err(format!("kernel panicked: {}", panic_message(p.as_ref()))),
                };
                (r, core.take_records())
            })
            .map_err(|e| kernel_err(format!("cannot start a core thread: {e}")))?;
        h.join().map_err(|p| {
            kernel_err(format!(
                "replay thread panicked: {}",
                panic_message(p.as_ref())
            ))
        })
    })?;
    match out {
        (Ok(()), records) => Ok(records),
        (Err(e), _) => Err(kernel_err(e)),
    }
}
