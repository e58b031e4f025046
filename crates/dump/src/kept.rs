//! Tensor-dump records as the collector keeps them until export.
//!
//! A large dump holds hundreds of thousands of records. Formatting their
//! JSON while the graph runs would take CPU from the run and hold the whole
//! manifest text (hundreds of MB) in memory until it can be sorted. Instead
//! each record is kept as a fixed 56-byte [`Kept`] whose repeated parts —
//! the layout (dtype, shape, strides, contiguity) and the func-id list —
//! are interned once in the run's [`Tables`] with their JSON fragments
//! pre-formatted. The export then sorts and formats in parallel, after the
//! run, when the CPUs are free; formatting a record is mostly copying those
//! fragments.
//!
//! Producers build the [`Kept`] form themselves, as they capture
//! ([`crate::intern`]: each argument slot's layout cached per producer,
//! the shared tables locked only for one not seen before). What travels
//! to the collector is then 56 bytes a record instead of the whole
//! descriptor, and the collector only moves each record's payload offset
//! into the file's. The export formats them ([`crate::record_json`]).

use std::collections::HashMap;

use simpler_core::{ArgRole, ChipTensor, DType, MAX_DIMS};

use crate::record::{role_name, role_rank, Stage};
#[cfg(test)]
use crate::record::{Subject, TensorRecord};

/// One tensor-dump record, compact.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kept {
    pub task_id: u64,
    /// Tensor: the buffer's GM address; scalar: the slot's raw bits.
    pub addr_or_bits: u64,
    /// Tensor: view offset in elements; scalar: unused.
    pub start_offset: u64,
    /// Offset of the payload in `tensor_dump.bin` (0 without payload).
    pub bin_offset: u64,
    pub bin_size: u64,
    /// Index into [`Tables::layouts`].
    pub layout: u32,
    /// Index into [`Tables::funcs`].
    pub funcs: u32,
    pub arg_index: u8,
    /// [`Flags`] bits.
    pub flags: u8,
}

/// Bits of [`Kept::flags`].
struct Flags;

impl Flags {
    const AFTER: u8 = 1;
    const SCALAR: u8 = 1 << 1;
    const TRUNCATED: u8 = 1 << 2;
    const HANG: u8 = 1 << 3;
    const ROLE_SHIFT: u8 = 4;
}

/// Every role, in the order a kept record's flags number them (the
/// tests draw from it too).
pub(crate) const ROLES: [ArgRole; 5] = [
    ArgRole::Input,
    ArgRole::Output,
    ArgRole::OutputExisting,
    ArgRole::InOut,
    ArgRole::NoDep,
];

impl Kept {
    pub fn stage(&self) -> Stage {
        if self.flags & Flags::HANG != 0 {
            Stage::HangSnapshot
        } else if self.flags & Flags::AFTER != 0 {
            Stage::AfterCompletion
        } else {
            Stage::BeforeDispatch
        }
    }

    /// True when the record's payload lies in the first `len` bytes of the
    /// `.bin` (or it has none).
    pub fn payload_within(&self, len: u64) -> bool {
        self.bin_size == 0 || self.bin_offset + self.bin_size <= len
    }

    pub fn role(&self) -> ArgRole {
        ROLES[self.role_index()]
    }

    /// The role's index in [`ROLES`].
    #[inline]
    pub fn role_index(&self) -> usize {
        usize::from(self.flags >> Flags::ROLE_SHIFT).min(ROLES.len() - 1)
    }

    pub fn is_scalar(&self) -> bool {
        self.flags & Flags::SCALAR != 0
    }

    pub fn truncated(&self) -> bool {
        self.flags & Flags::TRUNCATED != 0
    }

    /// (task_id, stage, arg_index, role) packed above bit 32, leaving the
    /// low 32 bits for the record's index, so one `u128` sort orders them.
    /// Stages in their enum order: a hang snapshot sorts after the task's
    /// completion records. Roles in the layout's order ([`role_rank`]).
    pub fn sort_key(&self, upstream: bool) -> u128 {
        (u128::from(self.task_id) << 64) | (u128::from(self.task_key(upstream)) << 52)
    }

    /// [`Kept::sort_key`] within one task: (stage, arg index, role) in
    /// the 12 bits `sort_key` keeps below the task id.
    #[inline]
    pub fn task_key(&self, upstream: bool) -> u32 {
        (u32::from(self.stage() as u8) << 10)
            | (u32::from(self.arg_index) << 2)
            | u32::from(role_rank(self.role(), upstream))
    }

    /// The flags of a record: its role, stage, kind and truncation.
    #[inline]
    pub fn flags(role: ArgRole, stage: Stage, scalar: bool, truncated: bool) -> u8 {
        let role = match role {
            ArgRole::Input => 0,
            ArgRole::Output => 1,
            ArgRole::OutputExisting => 2,
            ArgRole::InOut => 3,
            ArgRole::NoDep => 4,
        };
        let stage = match stage {
            Stage::BeforeDispatch => 0,
            Stage::AfterCompletion => Flags::AFTER,
            Stage::HangSnapshot => Flags::HANG,
        };
        (role << Flags::ROLE_SHIFT)
            | stage
            | if scalar { Flags::SCALAR } else { 0 }
            | if truncated { Flags::TRUNCATED } else { 0 }
    }

    /// Compact `r`, whose payload starts at `bin_base + r.arena_offset`,
    /// with its layout and func-id list interned as `layout` and `funcs`.
    #[cfg(test)]
    fn new(r: &TensorRecord, layout: u32, funcs: u32, bin_base: u64) -> Kept {
        let (addr_or_bits, start_offset, scalar) = match r.subject {
            Subject::Tensor(t) => (t.addr, t.start_offset, false),
            Subject::Scalar(s) => (s.bits, 0, true),
        };
        Kept {
            task_id: r.task_id.0,
            addr_or_bits,
            start_offset,
            bin_offset: if r.payload_len > 0 {
                bin_base + r.arena_offset
            } else {
                0
            },
            bin_size: r.payload_len,
            layout,
            funcs,
            arg_index: r.arg_index.min(255) as u8,
            flags: Kept::flags(r.role, r.stage, scalar, r.truncated),
        }
    }

    /// A record with these flags and nothing else (for what its flags
    /// say: role, stage, kind, truncation).
    pub fn with_flags(flags: u8) -> Kept {
        Kept {
            task_id: 0,
            addr_or_bits: 0,
            start_offset: 0,
            bin_offset: 0,
            bin_size: 0,
            layout: 0,
            funcs: 0,
            arg_index: 0,
            flags,
        }
    }

    /// The same record with its payload `base` bytes further into the
    /// file (a batch's arena offsets become `.bin` offsets).
    pub fn moved_by(mut self, base: u64) -> Kept {
        if self.bin_size > 0 {
            self.bin_offset += base;
        }
        self
    }
}

/// [`Kept::task_key`] of a record with arg index 0, by its flags: the
/// ordering's per-record key is then a lookup and an or.
pub(crate) fn task_keys(upstream: bool) -> [u32; 256] {
    std::array::from_fn(|flags| Kept::with_flags(flags as u8).task_key(upstream))
}

/// What identifies a layout: everything of a record that repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LayoutKey {
    Tensor {
        dtype: DType,
        ndims: u8,
        shape: [u32; MAX_DIMS],
        strides: [u32; MAX_DIMS],
        contiguous: bool,
    },
    Scalar(DType),
}

impl LayoutKey {
    /// What of `subject` repeats from record to record.
    #[cfg(test)]
    pub fn of(subject: &Subject) -> LayoutKey {
        match *subject {
            Subject::Tensor(t) => LayoutKey::tensor(&t),
            Subject::Scalar(s) => LayoutKey::Scalar(s.dtype),
        }
    }

    /// The layout of a tensor record of `t`.
    pub fn tensor(t: &ChipTensor) -> LayoutKey {
        LayoutKey::Tensor {
            dtype: t.dtype,
            ndims: t.ndims.min(MAX_DIMS as u32) as u8,
            shape: t.shapes,
            strides: t.strides,
            contiguous: t.is_contiguous,
        }
    }
}

/// A layout's JSON around the per-record fields.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Tensor: `,"kind":"tensor","dtype":…,"strides":[…],"start_offset":`;
    /// scalar: everything from `,"kind"` to `"value":`.
    pub head: Frag,
    /// Tensor: `,"is_contiguous":…,"numel":…,"addr":"`; scalar: empty.
    pub mid: Frag,
    /// Scalar dtype (for its value).
    pub dtype: DType,
    /// What the fragments were made from (for the upstream layout's writer).
    pub key: LayoutKey,
}

/// Interned layouts and func-id lists.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub layouts: Vec<Layout>,
    layout_ids: HashMap<LayoutKey, u32>,
    /// `","func_id":[f0,f1],"role":"` per func-id list: the text
    /// between a record's task id and its role.
    pub funcs: Vec<Frag>,
    /// The same lists as numbers.
    pub func_lists: Vec<Vec<u32>>,
    func_ids: HashMap<([u32; 3], u8), u32>,
}

impl Tables {
    /// Compact `r`, whose payload starts at `bin_base + r.arena_offset`.
    #[cfg(test)]
    pub fn keep(&mut self, r: &TensorRecord, bin_base: u64) -> Kept {
        let layout = self.layout(LayoutKey::of(&r.subject));
        let funcs = self.funcs(r.func_ids, r.n_funcs);
        Kept::new(r, layout, funcs, bin_base)
    }

    /// The index of `key`'s layout, interned when new. Producers call it
    /// only for a layout their own caches have not met
    /// ([`crate::intern::Interner`]).
    pub fn layout(&mut self, key: LayoutKey) -> u32 {
        match self.layout_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.layouts.len() as u32;
                self.layouts.push(layout_json(&key));
                self.layout_ids.insert(key, id);
                id
            }
        }
    }

    /// The index of the func-id list `ids[..n]`, interned when new.
    pub fn funcs(&mut self, ids: [u32; 3], n: u8) -> u32 {
        let key = (ids, n.min(3));
        *self.func_ids.entry(key).or_insert_with(|| {
            let mut s = b"\",\"func_id\":".to_vec();
            push_list(&mut s, &ids[..usize::from(key.1)]);
            s.extend_from_slice(b",\"role\":\"");
            self.funcs.push(Frag::new(s));
            self.func_lists.push(ids[..usize::from(key.1)].to_vec());
            (self.funcs.len() - 1) as u32
        })
    }

    /// An upper bound on the bytes of any record's JSON that
    /// [`crate::record_json::RecordWriter::write`] writes for these
    /// tables: the longest interned fragments and [`FIXED_ROOM`] for the
    /// rest, and [`PAD`] for the padded copies.
    pub fn record_room(&self) -> usize {
        let layout = self.layouts.iter().map(|l| l.head.len() + l.mid.len());
        let funcs = self.funcs.iter().map(Frag::len);
        let role_stage = role_stage_table().iter().map(Frag::len);
        FIXED_ROOM
            + PAD
            + layout.max().unwrap_or(0)
            + funcs.max().unwrap_or(0)
            + role_stage.max().unwrap_or(0)
    }
}

/// `input","stage":"before_dispatch","arg_index":` — the text from a
/// record's role to its arg index, one per (role, stage) pair (`role *
/// 3 + stage`), built once from the format's names.
pub(crate) fn role_stage_table() -> &'static [Frag] {
    static TABLE: std::sync::OnceLock<Vec<Frag>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Vec::with_capacity(ROLES.len() * Stage::ALL.len());
        for role in ROLES {
            // In the enum's order: a stage's discriminant indexes this.
            for stage in Stage::ALL {
                let mut s = role_name(role).as_bytes().to_vec();
                s.extend_from_slice(b"\",\"stage\":\"");
                s.extend_from_slice(stage.name().as_bytes());
                s.extend_from_slice(b"\",\"arg_index\":");
                t.push(Frag::new(s));
            }
        }
        t
    })
}

/// Interned text: a layout's or a func-id list's JSON between a record's
/// per-record fields.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frag(Vec<u8>);

/// The most a padded copy of the record writer writes beyond the text
/// it copies ([`crate::record_json`]), which [`Tables::record_room`]
/// makes room for.
pub(crate) const PAD: usize = 256;

impl Frag {
    pub fn new(text: Vec<u8>) -> Frag {
        Frag(text)
    }

    /// The text.
    pub fn text(&self) -> &[u8] {
        &self.0
    }

    /// Bytes of text.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Room for every part of a record that is not an interned fragment
/// (beyond them, [`PAD`] for the padded copies):
/// `{"task_id":"` and the id (30), the arg index (20), then for a tensor
/// its start offset (20), address (3 + 18), `","bin_offset":` and the
/// offset (15 + 20), `,"bin_size":` and the size (12 + 20) and the
/// closing flags (38): 196; for a scalar its value ([`VALUE_ROOM`]),
/// `,"bits":"`, the bits and `"}` (69).
const FIXED_ROOM: usize = 256;

/// Room for a scalar's value: an i64 or u64 (20), serde's shortest f32
/// or f64 (at most 24) or a quoted `"-inf"` (6).
pub(crate) const VALUE_ROOM: usize = 40;

fn layout_json(key: &LayoutKey) -> Layout {
    let mut head = Vec::new();
    let mut mid = Vec::new();
    let key_copy = *key;
    match *key {
        LayoutKey::Tensor {
            dtype,
            ndims,
            shape,
            strides,
            contiguous,
        } => {
            let n = usize::from(ndims);
            head.extend_from_slice(b",\"kind\":\"tensor\",\"dtype\":\"");
            head.extend_from_slice(dtype.name().as_bytes());
            head.extend_from_slice(b"\",\"shape\":");
            push_list(&mut head, &shape[..n]);
            head.extend_from_slice(b",\"strides\":");
            push_list(&mut head, &strides[..n]);
            head.extend_from_slice(b",\"start_offset\":");
            mid.extend_from_slice(b",\"is_contiguous\":");
            mid.extend_from_slice(if contiguous { b"true" } else { b"false" });
            mid.extend_from_slice(b",\"numel\":");
            // Saturating, as `ChipTensor::numel` (the format's `numel`).
            let numel = shape[..n]
                .iter()
                .fold(1u64, |p, &x| p.saturating_mul(u64::from(x)));
            push_int(&mut mid, numel);
            mid.extend_from_slice(b",\"addr\":\"");
            Layout {
                head: Frag::new(head),
                mid: Frag::new(mid),
                dtype,
                key: key_copy,
            }
        }
        LayoutKey::Scalar(dtype) => {
            head.extend_from_slice(b",\"kind\":\"scalar\",\"dtype\":\"");
            head.extend_from_slice(dtype.name().as_bytes());
            head.extend_from_slice(
                b"\",\"shape\":[],\"strides\":[],\"start_offset\":0,\"is_contiguous\":true,\"numel\":1,\"bin_offset\":0,\"bin_size\":0,\"truncated\":false,\"overwritten\":false,\"value\":",
            );
            Layout {
                head: Frag::new(head),
                mid: Frag::new(mid),
                dtype,
                key: key_copy,
            }
        }
    }
}

pub(crate) fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_list(out: &mut Vec<u8>, v: &[u32]) {
    out.push(b'[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_int(out, x);
    }
    out.push(b']');
}

/// A kept record of a 16-byte f32 tensor (tests of the record order).
#[cfg(test)]
pub(crate) fn kept_for_test(
    task_id: simpler_core::TaskId,
    stage: crate::record::Stage,
    arg: u32,
    role: simpler_core::ArgRole,
) -> Kept {
    use crate::record::{Subject, TensorRecord};
    use simpler_core::{ChipTensor, DType};
    let r = TensorRecord {
        task_id,
        func_ids: [0; 3],
        n_funcs: 1,
        stage,
        role,
        arg_index: arg,
        subject: Subject::Tensor(ChipTensor::contiguous(0x1000, &[4], DType::Float32)),
        arena_offset: 0,
        payload_len: 16,
        truncated: false,
    };
    Tables::default().keep(&r, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_core::TaskId;

    fn kept(task: u32, stage: Stage, arg: u32, role: ArgRole) -> Kept {
        super::kept_for_test(TaskId::new(1, task), stage, arg, role)
    }

    /// Within a task: every stage in order (a hang snapshot after the
    /// completion records whatever the arg), then arg, then role.
    #[test]
    fn sort_keys_order_task_stage_arg_role() {
        let order = [
            kept(0, Stage::HangSnapshot, 255, ArgRole::Output),
            kept(1, Stage::BeforeDispatch, 0, ArgRole::Input),
            kept(1, Stage::BeforeDispatch, 255, ArgRole::InOut),
            kept(1, Stage::AfterCompletion, 0, ArgRole::InOut),
            kept(1, Stage::AfterCompletion, 0, ArgRole::Output),
            kept(1, Stage::AfterCompletion, 255, ArgRole::Output),
            kept(1, Stage::HangSnapshot, 0, ArgRole::InOut),
            kept(1, Stage::HangSnapshot, 7, ArgRole::OutputExisting),
            kept(2, Stage::BeforeDispatch, 0, ArgRole::Input),
        ];
        for w in order.windows(2) {
            assert!(w[0].sort_key(false) < w[1].sort_key(false), "{w:?}");
        }
        for k in &order {
            assert_eq!(k.sort_key(false) as u32, 0, "the low 32 bits stay free");
        }
        assert_eq!(order[6].stage(), Stage::HangSnapshot);
        assert_eq!(order[6].role(), ArgRole::InOut);
    }
}
