//! The validated form of a replay spec: [`ReplaySpec::plan`] checks every
//! field of a `replay_spec.json` (naming the first bad one) and gives the
//! [`Plan`] that [`crate::replay::execute`] runs.

use simpler_chip::ArchProfile;
use simpler_core::{
    abi::{LOCAL_CONTEXT_SLOT, MAX_SCALARS, MAX_TENSORS},
    topology::{self, Subtask},
    ArgRole, ChipTensor, DType, TaskId, MAX_DIMS,
};
use simpler_format::hex::parse_lenient as parse_hex_u64;
use simpler_format::scalar::same_scalar;
use simpler_format::vocab::{parse_role, ROLE_NAMES};

use crate::spec::{
    number_bits, parse_raw, value_text, ArgSpec, DataSource, DispatchIdentity, Number, ReplaySpec,
    Tolerance, SPEC_SCHEMA_VERSION,
};
use crate::ReplayError;

// ---------------------------------------------------------------------------
// Validated form

/// A validated spec: what [`crate::replay::execute`] runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Arch profile (buffer sizes, clock).
    pub arch: ArchProfile,
    /// Clusters of the chip (core id numbering).
    pub clusters: u32,
    /// Members to run, in run order (AIC, AIV0, AIV1); one for AIC/AIV.
    pub members: Vec<Member>,
    /// Index in `members` of the selected dispatch.
    pub selected: usize,
    /// Tensor slots `0..T`.
    pub tensors: Vec<TensorArg>,
    /// Scalar slots `T..T+S`.
    pub scalars: Vec<ScalarArg>,
    /// SPMD block of the dispatch.
    pub block_idx: u32,
    /// SPMD block count.
    pub block_num: u32,
    /// Verification within a tolerance instead of bit for bit.
    pub tolerance: Option<Tolerance>,
}

impl Plan {
    /// The selected member.
    pub fn selected(&self) -> &Member {
        &self.members[self.selected]
    }
}

/// One core to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Kernel func id.
    pub func_id: u32,
    /// Kernel name.
    pub kernel: String,
    /// Cluster member.
    pub subtask: Subtask,
    /// Core id (DESIGN §2 numbering).
    pub core_id: u32,
    /// Cluster index of `core_id`.
    pub cluster: u32,
    /// Global context value.
    pub sub_block_id: i32,
    /// Dispatch id, when known.
    pub dispatch_id: Option<u64>,
    /// Task id, when known.
    pub task_id: Option<TaskId>,
}

/// A validated tensor slot.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorArg {
    /// Slot.
    pub arg_index: u32,
    /// Element type.
    pub dtype: DType,
    /// View shape.
    pub shape: Vec<u32>,
    /// View strides (elements).
    pub strides: Vec<u32>,
    /// View offset (elements).
    pub start_offset: u64,
    /// Descriptor `size`: bytes of the buffer (≥ [`TensorArg::needed_bytes`]).
    pub size: u64,
    /// Role, when known.
    pub role: Option<ArgRole>,
    /// Initial content.
    pub data: DataSource,
    /// Expected content after the kernel, when known.
    pub expected: Option<DataSource>,
    /// Why the data is what it is.
    pub note: Option<String>,
}

impl TensorArg {
    /// Elements of the view.
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&s| u64::from(s)).product()
    }

    /// Bytes of the view, gathered densely.
    pub fn view_bytes(&self) -> u64 {
        self.numel() * self.dtype.size() as u64
    }

    /// Elements from the view's first to its last element, inclusive (the
    /// descriptor's `extent_elems`, as [`ChipTensor::refresh`] derives it).
    pub fn extent_elems(&self) -> u64 {
        self.descriptor(0).extent_elems
    }

    /// Dense row-major view (the descriptor's `is_contiguous`, as
    /// [`ChipTensor::refresh`] derives it).
    pub fn is_contiguous(&self) -> bool {
        self.descriptor(0).is_contiguous
    }

    /// Bytes the buffer needs to hold the view: `(start_offset + extent) × elem`.
    pub fn needed_bytes(&self) -> u64 {
        (self.start_offset + self.extent_elems()) * self.dtype.size() as u64
    }

    /// Bytes the replay allocates: the descriptor's `size`, at least what
    /// the view needs.
    pub fn buffer_bytes(&self) -> u64 {
        self.size.max(self.needed_bytes())
    }

    /// True when the kernel writes it (output, output_existing, inout).
    pub fn is_written(&self) -> bool {
        matches!(
            self.role,
            Some(ArgRole::Output | ArgRole::OutputExisting | ArgRole::InOut)
        )
    }

    /// The 128-byte descriptor for a buffer at `addr`; `is_contiguous` and
    /// `extent_elems` derived from shape and strides by the descriptor
    /// itself.
    pub fn descriptor(&self, addr: u64) -> ChipTensor {
        let mut shapes = [0u32; MAX_DIMS];
        let mut strides = [0u32; MAX_DIMS];
        shapes[..self.shape.len()].copy_from_slice(&self.shape);
        strides[..self.strides.len()].copy_from_slice(&self.strides);
        let mut t = ChipTensor {
            addr,
            size: self.size,
            owner_task_id: TaskId::NONE,
            start_offset: self.start_offset,
            version: 0,
            ndims: self.shape.len() as u32,
            dtype: self.dtype,
            manual_dep: false,
            is_contiguous: false,
            address_space: 0,
            shapes,
            extent_elems: 0,
            strides,
        };
        t.refresh();
        t
    }
}

/// A validated scalar slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalarArg {
    /// Slot.
    pub arg_index: u32,
    /// Declared dtype.
    pub dtype: DType,
    /// Raw slot bits.
    pub bits: u64,
}

impl ReplaySpec {
    /// Validate every value; `file` names the spec in messages.
    ///
    /// # Errors
    /// [`ReplayError::Spec`] naming the first bad field.
    pub fn plan(&self, file: &str) -> Result<Plan, ReplayError> {
        let bad = |field: &str, msg: String| ReplayError::Spec {
            file: file.into(),
            field: field.into(),
            msg,
        };
        if self.schema_version != SPEC_SCHEMA_VERSION {
            return Err(bad(
                "schema_version",
                format!(
                    "{} is not a version this reader understands ({SPEC_SCHEMA_VERSION})",
                    self.schema_version
                ),
            ));
        }
        let arch = ArchProfile::by_name(&self.arch).ok_or_else(|| {
            bad(
                "arch",
                format!(
                    "unknown arch {:?}: expected one of {:?}",
                    self.arch,
                    ArchProfile::NAMES
                ),
            )
        })?;
        if self.clusters == 0 || self.clusters > arch.max_clusters {
            return Err(bad(
                "clusters",
                format!(
                    "{} is outside 1..={} for arch {}",
                    self.clusters, arch.max_clusters, arch.name
                ),
            ));
        }
        let top = member(
            &bad,
            "",
            self.clusters,
            self.func_id,
            &self.kernel,
            &self.core_type,
            &self.dispatch,
        )?;
        let (members, selected) = self.members(&bad, top)?;
        let (tensors, scalars) = self.slots(&bad)?;
        Ok(Plan {
            arch,
            clusters: self.clusters,
            members,
            selected,
            tensors,
            scalars,
            block_idx: self.dispatch.block_idx,
            block_num: self.dispatch.block_num,
            tolerance: match self.tolerance {
                Some(t) => Some(t.checked().map_err(|m| bad("tolerance", m))?),
                None => None,
            },
        })
    }

    /// The members of a MIX cluster (the selected dispatch `top` alone
    /// otherwise), and which of them is `top`.
    fn members(&self, bad: &Bad<'_>, top: Member) -> Result<(Vec<Member>, usize), ReplayError> {
        if self.members.is_empty() {
            return Ok((vec![top], 0));
        }
        {
            let mut ms = Vec::with_capacity(self.members.len());
            for (i, m) in self.members.iter().enumerate() {
                let p = format!("members[{i}].");
                let mm = member(
                    bad,
                    &p,
                    self.clusters,
                    m.func_id,
                    &m.kernel,
                    &m.core_type,
                    &m.dispatch,
                )?;
                if ms.iter().any(|o: &Member| o.subtask == mm.subtask) {
                    return Err(bad(
                        &format!("{p}dispatch.subtask"),
                        format!("two members are {}", mm.subtask),
                    ));
                }
                if mm.cluster != top.cluster {
                    return Err(bad(
                        &format!("{p}dispatch.core_id"),
                        format!(
                            "core {} is in cluster {}, but the selected dispatch ran in cluster {}: a MIX block runs on one cluster",
                            mm.core_id, mm.cluster, top.cluster
                        ),
                    ));
                }
                if (m.dispatch.block_idx, m.dispatch.block_num)
                    != (self.dispatch.block_idx, self.dispatch.block_num)
                {
                    return Err(bad(
                        &format!("{p}dispatch.block_idx"),
                        format!(
                            "block {}/{} differs from the selected dispatch's {}/{}",
                            m.dispatch.block_idx,
                            m.dispatch.block_num,
                            self.dispatch.block_idx,
                            self.dispatch.block_num
                        ),
                    ));
                }
                ms.push(mm);
            }
            let Some(sel) = ms
                .iter()
                .position(|m| m.subtask == top.subtask && m.func_id == top.func_id)
            else {
                return Err(bad(
                    "members",
                    format!(
                        "no member is the selected dispatch (func_id {}, {})",
                        top.func_id, top.subtask
                    ),
                ));
            };
            if ms[sel] != top {
                return Err(bad(
                    &format!("members[{sel}]"),
                    "differs from the top-level func_id/kernel/core_type/dispatch it must repeat"
                        .into(),
                ));
            }
            Ok((ms, sel))
        }
    }

    /// The tensor and scalar slots, in order, tensors first.
    fn slots(&self, bad: &Bad<'_>) -> Result<(Vec<TensorArg>, Vec<ScalarArg>), ReplayError> {
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for (k, a) in self.args.iter().enumerate() {
            let p = format!("args[{k}]");
            if a.arg_index as usize != k {
                return Err(bad(
                    &format!("{p}.arg_index"),
                    format!(
                        "{} but slots are listed in order from 0 (expected {k}){}",
                        a.arg_index,
                        if a.arg_index as usize >= LOCAL_CONTEXT_SLOT {
                            "; context slots 48/49 are synthesized, never listed"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            let dtype = DType::from_name(&a.dtype).ok_or_else(|| {
                bad(
                    &format!("{p}.dtype"),
                    format!(
                        "unknown dtype {:?}: expected one of {}",
                        a.dtype,
                        DType::ALL.map(DType::name).join(", ")
                    ),
                )
            })?;
            match a.kind.as_str() {
                "tensor" => {
                    if !scalars.is_empty() {
                        return Err(bad(
                            &format!("{p}.kind"),
                            "a tensor slot after a scalar slot (tensors come first)".into(),
                        ));
                    }
                    tensors.push(tensor_arg(bad, &p, a, dtype)?);
                }
                "scalar" => {
                    scalars.push(scalar_arg(bad, &p, a, dtype)?);
                }
                other => {
                    return Err(bad(
                        &format!("{p}.kind"),
                        format!("{other:?} is not \"tensor\" or \"scalar\""),
                    ))
                }
            }
        }
        if tensors.len() > MAX_TENSORS {
            return Err(bad(
                "args",
                format!("{} tensor slots; at most {MAX_TENSORS}", tensors.len()),
            ));
        }
        if scalars.len() > MAX_SCALARS {
            return Err(bad(
                "args",
                format!("{} scalar slots; at most {MAX_SCALARS}", scalars.len()),
            ));
        }
        Ok((tensors, scalars))
    }
}

type Bad<'a> = dyn Fn(&str, String) -> ReplayError + 'a;

fn member(
    bad: &Bad<'_>,
    p: &str,
    clusters: u32,
    func_id: u32,
    kernel: &str,
    core_type: &str,
    d: &DispatchIdentity,
) -> Result<Member, ReplayError> {
    let subtask = Subtask::from_name(&d.subtask).ok_or_else(|| {
        bad(
            &format!("{p}dispatch.subtask"),
            format!("{:?} is not aic, aiv0 or aiv1", d.subtask),
        )
    })?;
    let want = subtask.core_type();
    if core_type != want.name() {
        return Err(bad(
            &format!("{p}core_type"),
            format!(
                "{core_type:?} contradicts subtask {} (which runs on {})",
                subtask,
                want.name()
            ),
        ));
    }
    if kernel.is_empty() {
        return Err(bad(&format!("{p}kernel"), "empty kernel name".into()));
    }
    if d.block_num == 0 || d.block_idx >= d.block_num || d.block_num > i32::MAX as u32 {
        return Err(bad(
            &format!("{p}dispatch.block_idx"),
            format!(
                "block_idx {} must be below block_num {} (and block_num ≥ 1)",
                d.block_idx, d.block_num
            ),
        ));
    }
    let core_id = d
        .core_id
        .unwrap_or_else(|| topology::core_id(clusters, 0, subtask));
    let cluster = match topology::locate(clusters, core_id) {
        Some((c, m)) if m == subtask => c,
        found => {
            let what = found.map_or_else(
                || {
                    format!(
                        "is beyond the {} cores of {clusters} clusters",
                        3 * clusters
                    )
                },
                |(c, m)| format!("is {m} of cluster {c} with {clusters} clusters"),
            );
            return Err(bad(
                &format!("{p}dispatch.core_id"),
                format!(
                    "core {core_id} {what}, but subtask is {subtask} (is `clusters` the run's --clusters?)"
                ),
            ));
        }
    };
    let task_id = match &d.task_id {
        None => None,
        Some(s) => Some(parse_hex_u64(s).map(TaskId).ok_or_else(|| {
            bad(
                &format!("{p}dispatch.task_id"),
                format!("{s:?} is not 0x… hex"),
            )
        })?),
    };
    Ok(Member {
        func_id,
        kernel: kernel.to_string(),
        subtask,
        core_id,
        cluster,
        sub_block_id: d.sub_block_id.unwrap_or(subtask.sub_block_id()),
        dispatch_id: d.dispatch_id,
        task_id,
    })
}

fn tensor_arg(bad: &Bad<'_>, p: &str, a: &ArgSpec, dtype: DType) -> Result<TensorArg, ReplayError> {
    let f = |name: &str| format!("{p}.{name}");
    if a.bits.is_some() || a.value.is_some() {
        return Err(bad(
            &f(if a.bits.is_some() { "bits" } else { "value" }),
            "only scalar slots have bits/value; fill a tensor with \"data\": {\"source\": \"fill\", \"value\": …}".into(),
        ));
    }
    let Some(shape) = &a.shape else {
        return Err(bad(&f("shape"), "required for a tensor slot".into()));
    };
    if shape.is_empty() || shape.len() > MAX_DIMS {
        return Err(bad(
            &f("shape"),
            format!(
                "{} dimensions {shape:?}: expected 1..={MAX_DIMS}",
                shape.len()
            ),
        ));
    }
    let to_u32 = |field: &str, v: &[u64]| -> Result<Vec<u32>, ReplayError> {
        v.iter()
            .map(|&x| {
                u32::try_from(x).map_err(|_| {
                    bad(
                        &f(field),
                        format!("{x} in {v:?} does not fit the descriptor's u32"),
                    )
                })
            })
            .collect()
    };
    let shape32 = to_u32("shape", shape)?;
    let numel = shape
        .iter()
        .try_fold(1u64, |acc, &x| acc.checked_mul(x))
        .ok_or_else(|| {
            bad(
                &f("shape"),
                format!("{shape:?} overflows the element count"),
            )
        })?;
    let strides32 = strides(bad, p, a, shape)?;
    let mut t = TensorArg {
        arg_index: a.arg_index,
        dtype,
        shape: shape32,
        strides: strides32,
        start_offset: a.start_offset.unwrap_or(0),
        size: 0,
        role: None,
        data: DataSource::Zeros {},
        expected: None,
        note: a.note.clone(),
    };
    let es = dtype.size() as u64;
    let extent = t
        .shape
        .iter()
        .zip(&t.strides)
        .try_fold(1u64, |acc, (&s, &st)| {
            acc.checked_add(u64::from(s.saturating_sub(1)).checked_mul(u64::from(st))?)
        });
    let needed = extent
        .and_then(|e| t.start_offset.checked_add(e))
        .and_then(|e| e.checked_mul(es))
        .filter(|_| numel.checked_mul(es).is_some())
        .ok_or_else(|| {
            bad(
                &f("start_offset"),
                "the view's byte range overflows 64 bits".into(),
            )
        })?;
    let needed = if numel == 0 {
        t.start_offset.checked_mul(es).ok_or_else(|| {
            bad(
                &f("start_offset"),
                "the view's byte range overflows 64 bits".into(),
            )
        })?
    } else {
        needed
    };
    t.size = match a.size {
        Some(s) if s < needed => {
            return Err(bad(
                &f("size"),
                format!(
                    "{s} bytes is smaller than the view needs: (start_offset {} + extent {}) × {es} = {needed}",
                    t.start_offset,
                    t.extent_elems()
                ),
            ))
        }
        Some(s) => s,
        None => needed,
    };
    sources(bad, p, a, &mut t)?;
    Ok(t)
}

/// A tensor slot's strides: as given (one per dimension), or row-major.
fn strides(bad: &Bad<'_>, p: &str, a: &ArgSpec, shape: &[u64]) -> Result<Vec<u32>, ReplayError> {
    let f = |name: &str| format!("{p}.{name}");
    let to_u32 = |field: &str, v: &[u64]| -> Result<Vec<u32>, ReplayError> {
        v.iter()
            .map(|&x| {
                u32::try_from(x).map_err(|_| {
                    bad(
                        &f(field),
                        format!("{x} in {v:?} does not fit the descriptor's u32"),
                    )
                })
            })
            .collect()
    };
    match &a.strides {
        Some(st) => {
            if st.len() != shape.len() {
                return Err(bad(
                    &f("strides"),
                    format!("{} strides {st:?} for {} dimensions", st.len(), shape.len()),
                ));
            }
            to_u32("strides", st)
        }
        None => {
            let mut out = vec![0u32; shape.len()];
            let mut acc = 1u64;
            for i in (0..shape.len()).rev() {
                out[i] = u32::try_from(acc).map_err(|_| {
                    bad(
                        &f("shape"),
                        format!("{shape:?}: row-major strides do not fit u32"),
                    )
                })?;
                acc = acc.saturating_mul(shape[i]);
            }
            Ok(out)
        }
    }
}

/// A tensor slot's role, initial data and expected data.
fn sources(bad: &Bad<'_>, p: &str, a: &ArgSpec, t: &mut TensorArg) -> Result<(), ReplayError> {
    let f = |name: &str| format!("{p}.{name}");
    let dtype = t.dtype;
    t.role = match &a.role {
        None => None,
        Some(r) => Some(
            parse_role(r).ok_or_else(|| bad(&f("role"), format!("{r:?} is not {ROLE_NAMES}")))?,
        ),
    };
    t.data = match &a.data {
        Some(d) => d.clone(),
        None if matches!(t.role, Some(ArgRole::Output | ArgRole::OutputExisting)) => {
            DataSource::Sentinel {}
        }
        None => DataSource::Zeros {},
    };
    check_source(bad, &f("data"), &t.data, dtype, t.view_bytes())?;
    if let Some(e) = &a.expected {
        if !matches!(e, DataSource::Dump { .. } | DataSource::File { .. }) {
            return Err(bad(
                &f("expected"),
                format!(
                    "source {:?}: expected data must come from a dump record or a file",
                    e.name()
                ),
            ));
        }
        check_source(bad, &f("expected"), e, dtype, t.view_bytes())?;
        t.expected = Some(e.clone());
    }
    Ok(())
}

fn check_source(
    bad: &Bad<'_>,
    field: &str,
    d: &DataSource,
    dtype: DType,
    view_bytes: u64,
) -> Result<(), ReplayError> {
    match d {
        DataSource::Dump { bin_size, .. } if *bin_size != view_bytes => Err(bad(
            &format!("{field}.bin_size"),
            format!("{bin_size} bytes, but the view holds {view_bytes}"),
        )),
        DataSource::Fill { .. } => fill_bits(d, dtype).map(drop).map_err(|m| bad(field, m)),
        _ => Ok(()),
    }
}

/// Element bits of a `fill` source (`value` encoded by `dtype`, or `bits`).
///
/// # Errors
/// Neither or contradicting fields, or a value `dtype` cannot hold.
pub fn fill_bits(d: &DataSource, dtype: DType) -> Result<u64, String> {
    let DataSource::Fill { value, bits } = d else {
        return Err(format!("{} is not a fill", d.name()));
    };
    let from_bits = match bits {
        None => None,
        Some(s) => Some(parse_raw(s, dtype, false)?),
    };
    let from_value = match value {
        None => None,
        Some(v) => Some(number_bits(dtype, Number::from(*v))?),
    };
    match (from_value, from_bits) {
        (None, None) => Err("a fill needs \"value\" or \"bits\"".into()),
        (Some(v), Some(b)) if !same_scalar(dtype, v, b) => Err(format!(
            "value encodes to 0x{v:x} but bits is 0x{b:x}: give one of them"
        )),
        (Some(v), _) => Ok(v),
        (None, Some(b)) => Ok(b),
    }
}

fn scalar_arg(bad: &Bad<'_>, p: &str, a: &ArgSpec, dtype: DType) -> Result<ScalarArg, ReplayError> {
    let f = |name: &str| format!("{p}.{name}");
    for (name, present) in [
        ("shape", a.shape.is_some()),
        ("strides", a.strides.is_some()),
        ("start_offset", a.start_offset.is_some()),
        ("size", a.size.is_some()),
        ("role", a.role.is_some()),
        ("data", a.data.is_some()),
        ("expected", a.expected.is_some()),
    ] {
        if present {
            return Err(bad(&f(name), "not allowed on a scalar slot".into()));
        }
    }
    let from_bits = match &a.bits {
        None => None,
        Some(s) => Some(parse_raw(s, dtype, true).map_err(|m| bad(&f("bits"), m))?),
    };
    let from_value = match &a.value {
        None => None,
        Some(v) => Some(number_bits(dtype, Number::from(*v)).map_err(|m| bad(&f("value"), m))?),
    };
    let bits = match (from_value, from_bits) {
        (None, None) => {
            return Err(bad(
                &f("bits"),
                "a scalar slot needs \"bits\" (0x…) or \"value\"".into(),
            ))
        }
        (Some(v), Some(b)) if !same_scalar(dtype, v, b) => {
            return Err(bad(
                &f("value"),
                format!(
                    "{} encodes to bits 0x{v:016x} but bits is 0x{b:016x}: after editing one, remove the other",
                    a.value.map_or_else(String::new, value_text)
                ),
            ))
        }
        (_, Some(b)) => b,
        (Some(v), None) => v,
    };
    Ok(ScalarArg {
        arg_index: a.arg_index,
        dtype,
        bits,
    })
}
