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
//! ([`Interner`]: a few recently used layouts cached per producer, the
//! shared tables locked only for one not seen before). What travels to the
//! collector is then 56 bytes a record instead of the whole descriptor,
//! and the collector only moves each record's payload offset into the
//! file's.

use std::collections::HashMap;

use simpler_core::{ArgRole, DType, MAX_DIMS};
use simpler_format::{scalar::ScalarValue, stream::Cursor};

use crate::record::{role_name, role_rank, Stage, Subject, TensorRecord};

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
        ROLES[usize::from(self.flags >> Flags::ROLE_SHIFT)]
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
        (u128::from(self.task_id) << 64)
            | (u128::from(self.stage() as u8) << 62)
            | (u128::from(self.arg_index) << 54)
            | (u128::from(role_rank(self.role(), upstream)) << 52)
    }
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
    /// Small cache in front of `layout_ids` (records cycle through a few
    /// layouts), replaced round-robin.
    recent: [(Option<LayoutKey>, u32); RECENT],
    next_recent: usize,
    /// The last func-id list and its index (a task's records share it).
    last_funcs: Option<(([u32; 3], u8), u32)>,
}

const RECENT: usize = 8;

impl Kept {
    /// Compact `r`, whose payload starts at `bin_base + r.arena_offset`,
    /// with its layout and func-id list interned as `layout` and `funcs`.
    fn new(r: &TensorRecord, layout: u32, funcs: u32, bin_base: u64) -> Kept {
        let (addr_or_bits, start_offset) = match r.subject {
            Subject::Tensor(t) => (t.addr, t.start_offset),
            Subject::Scalar(s) => (s.bits, 0),
        };
        let role = ROLES.iter().position(|&x| x == r.role).unwrap_or(0) as u8;
        let mut flags = role << Flags::ROLE_SHIFT;
        match r.stage {
            Stage::BeforeDispatch => {}
            Stage::AfterCompletion => flags |= Flags::AFTER,
            Stage::HangSnapshot => flags |= Flags::HANG,
        }
        if matches!(r.subject, Subject::Scalar(_)) {
            flags |= Flags::SCALAR;
        }
        if r.truncated {
            flags |= Flags::TRUNCATED;
        }
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

impl LayoutKey {
    /// What of `subject` repeats from record to record.
    fn of(subject: &Subject) -> LayoutKey {
        match *subject {
            Subject::Tensor(t) => LayoutKey::Tensor {
                dtype: t.dtype,
                ndims: t.ndims.min(MAX_DIMS as u32) as u8,
                shape: t.shapes,
                strides: t.strides,
                contiguous: t.is_contiguous,
            },
            Subject::Scalar(s) => LayoutKey::Scalar(s.dtype),
        }
    }
}

/// One producer's way into the run's shared [`Tables`]: the layouts and
/// func-id list it used last, so that the lock is taken only for one it
/// has not met (a run cycles through a handful).
#[derive(Debug, Default)]
pub(crate) struct Interner {
    recent: [(Option<LayoutKey>, u32); RECENT],
    next_recent: usize,
    last_funcs: Option<(([u32; 3], u8), u32)>,
}

impl Interner {
    /// Compact `r` (payload at `r.arena_offset` of its batch: see
    /// [`Kept::moved_by`]), interning what is new in `tables`.
    pub fn keep(&mut self, r: &TensorRecord, tables: &parking_lot::Mutex<Tables>) -> Kept {
        let key = LayoutKey::of(&r.subject);
        let fkey = (r.func_ids, r.n_funcs.min(3));
        let layout = match self.recent.iter().find(|(k, _)| *k == Some(key)) {
            Some(&(_, id)) => id,
            None => {
                let id = tables.lock().layout(key);
                self.recent[self.next_recent] = (Some(key), id);
                self.next_recent = (self.next_recent + 1) % RECENT;
                id
            }
        };
        let funcs = match self.last_funcs {
            Some((k, id)) if k == fkey => id,
            _ => {
                let id = tables.lock().funcs(r.func_ids, r.n_funcs);
                self.last_funcs = Some((fkey, id));
                id
            }
        };
        Kept::new(r, layout, funcs, 0)
    }
}

impl Tables {
    /// Compact `r`, whose payload starts at `bin_base + r.arena_offset`.
    #[cfg(test)]
    pub fn keep(&mut self, r: &TensorRecord, bin_base: u64) -> Kept {
        let layout = self.layout(LayoutKey::of(&r.subject));
        let funcs = self.funcs(r.func_ids, r.n_funcs);
        Kept::new(r, layout, funcs, bin_base)
    }

    fn layout(&mut self, key: LayoutKey) -> u32 {
        if let Some(&(_, id)) = self.recent.iter().find(|(k, _)| *k == Some(key)) {
            return id;
        }
        let id = match self.layout_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.layouts.len() as u32;
                self.layouts.push(layout_json(&key));
                self.layout_ids.insert(key, id);
                id
            }
        };
        self.recent[self.next_recent] = (Some(key), id);
        self.next_recent = (self.next_recent + 1) % RECENT;
        id
    }

    fn funcs(&mut self, ids: [u32; 3], n: u8) -> u32 {
        let key = (ids, n.min(3));
        if let Some((k, id)) = self.last_funcs {
            if k == key {
                return id;
            }
        }
        let id = *self.func_ids.entry(key).or_insert_with(|| {
            let mut s = b"\",\"func_id\":".to_vec();
            push_list(&mut s, &ids[..usize::from(key.1)]);
            s.extend_from_slice(b",\"role\":\"");
            self.funcs.push(Frag::new(s));
            self.func_lists.push(ids[..usize::from(key.1)].to_vec());
            (self.funcs.len() - 1) as u32
        });
        self.last_funcs = Some((key, id));
        id
    }

    /// An upper bound on the bytes of any record's JSON that
    /// [`RecordWriter::write`] writes for these tables: the longest
    /// interned fragments and [`FIXED_ROOM`] for the rest.
    pub fn record_room(&self) -> usize {
        let layout = self.layouts.iter().map(|l| l.head.len + l.mid.len);
        let funcs = self.funcs.iter().map(|f| f.len);
        let role_stage = role_stage_table().iter().map(|f| f.len);
        FIXED_ROOM
            + PAD
            + layout.max().unwrap_or(0)
            + funcs.max().unwrap_or(0)
            + role_stage.max().unwrap_or(0)
    }
}

/// Interned text padded with zeros to 64 or [`PAD`] bytes when it is
/// shorter, so that it is copied whole, inline ([`Cursor::raw_padded`]);
/// longer text is copied by its length.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frag {
    /// The text, then zeros up to its size class.
    padded: Vec<u8>,
    /// Bytes of text.
    pub len: usize,
}

/// The larger padded size of short fragments (a record's pieces are 20
/// to 110 bytes; most under 64). Also the most a padded copy writes
/// beyond a fragment's end, which [`Tables::record_room`] makes room for.
const PAD: usize = 128;

impl Frag {
    fn new(text: Vec<u8>) -> Frag {
        let mut f = Frag::default();
        f.set(&[&text]);
        f
    }

    /// Make this the concatenation of `parts`, reusing its buffer.
    fn set(&mut self, parts: &[&[u8]]) {
        self.padded.clear();
        for p in parts {
            self.padded.extend_from_slice(p);
        }
        self.len = self.padded.len();
        match self.len {
            0..64 => self.padded.resize(64, 0),
            64..PAD => self.padded.resize(PAD, 0),
            _ => {}
        }
    }

    #[inline]
    fn put(&self, c: &mut Cursor<'_>) {
        if let Ok(padded) = <&[u8; 64]>::try_from(&self.padded[..]) {
            c.raw_padded(padded, self.len);
        } else if let Ok(padded) = <&[u8; PAD]>::try_from(&self.padded[..]) {
            c.raw_padded(padded, self.len);
        } else {
            c.raw(&self.padded[..self.len]);
        }
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
const VALUE_ROOM: usize = 40;

/// Formats kept records one after another, byte for byte what serde
/// writes for the same record as [`simpler_format::tensor_dump::Record`]
/// (tested, `kept_format_check.rs`).
///
/// A large dump formats hundreds of thousands of these after the run, on
/// its critical path, so a record is a handful of copies into a slice
/// sized once for the worst case ([`Tables::record_room`]), numbers
/// written in place: the interned func-id and layout fragments, one
/// fragment per (role, stage) pair ([`role_stage_table`]), and the text up
/// to the role, which a task's records share, formatted once per task.
pub(crate) struct RecordWriter<'t> {
    tables: &'t Tables,
    role_stage: &'static [Frag],
    /// `{"task_id":"0x…","func_id":[…],"role":"` of the task and func-id
    /// list in `prefix_of`.
    prefix: Frag,
    prefix_of: Option<(u64, u32)>,
}

impl<'t> RecordWriter<'t> {
    pub fn new(tables: &'t Tables) -> Self {
        RecordWriter {
            tables,
            role_stage: role_stage_table(),
            prefix: Frag::default(),
            prefix_of: None,
        }
    }

    /// Write the JSON of `k` at the start of `buf` and return its length.
    ///
    /// # Panics
    /// When `buf` is shorter than [`Tables::record_room`].
    pub fn write(&mut self, buf: &mut [u8], k: &Kept) -> usize {
        if self.prefix_of != Some((k.task_id, k.funcs)) {
            self.start_task(k);
        }
        let layout = &self.tables.layouts[k.layout as usize];
        let role = usize::from(k.flags >> Flags::ROLE_SHIFT).min(ROLES.len() - 1);
        let mut c = Cursor::new(buf);
        self.prefix.put(&mut c);
        self.role_stage[role * Stage::ALL.len() + k.stage() as usize].put(&mut c);
        c.u64(u64::from(k.arg_index));
        layout.head.put(&mut c);
        if k.is_scalar() {
            scalar_value(&mut c, layout.dtype, k.addr_or_bits);
            c.raw(b",\"bits\":\"");
            c.hex64(k.addr_or_bits);
            c.raw(b"\"}");
        } else {
            c.u64(k.start_offset);
            layout.mid.put(&mut c);
            c.hex64(k.addr_or_bits);
            c.raw(b"\",\"bin_offset\":");
            c.u64(k.bin_offset);
            c.raw(b",\"bin_size\":");
            c.u64(k.bin_size);
            c.raw(if k.truncated() {
                b",\"truncated\":true,\"overwritten\":false}"
            } else {
                b",\"truncated\":false,\"overwritten\":false}"
            });
        }
        c.len()
    }

    /// Format the text up to the role for `k`'s task and func-id list.
    fn start_task(&mut self, k: &Kept) {
        let funcs = &self.tables.funcs[k.funcs as usize];
        self.prefix.set(&[
            b"{\"task_id\":\"0x",
            &simpler_format::hex::digits16(k.task_id),
            &funcs.padded[..funcs.len],
        ]);
        self.prefix_of = Some((k.task_id, k.funcs));
    }
}

/// A scalar's `value` as serde writes [`simpler_format::scalar::encode`]'s
/// (integers in place; floats need the shortest round-trip form, which
/// serde_json's ryu gives).
fn scalar_value(c: &mut Cursor<'_>, dtype: DType, bits: u64) {
    match simpler_format::scalar::encode(dtype, bits) {
        ScalarValue::Int(v) => c.i64(v),
        ScalarValue::UInt(v) => c.u64(v),
        float => {
            let mut text = [0u8; VALUE_ROOM];
            let mut rest = &mut text[..];
            serde_json::to_writer(&mut rest, &float).expect("a scalar's value fits its room");
            let n = VALUE_ROOM - rest.len();
            c.raw(&text[..n]);
        }
    }
}

/// `input","stage":"before_dispatch","arg_index":` — the text from a
/// record's role to its arg index, one per (role, stage) pair (`role *
/// 3 + stage`), built once from the format's names.
fn role_stage_table() -> &'static [Frag] {
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

fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
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
