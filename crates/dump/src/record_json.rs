//! The native manifest's record lines, from kept records, by template.
//!
//! A large dump formats hundreds of thousands of records after the run,
//! on its critical path, and nearly all of a record's text repeats: a
//! task's records share the text up to their role, and a record's text
//! from its role to its address depends only on its role, stage, arg
//! index and layout — a handful of combinations per run. So each
//! combination's text is formatted once into a [`Template`], and a record
//! is its task's prefix, its template (the variant for a zero start
//! offset when it has one), the address, the payload offset, and the
//! template's closing text when the payload size is the one last seen
//! with it. A scalar's value and bits repeat too (a scale, a flag): the
//! template keeps the text of the last ones.
//!
//! Each piece is one fixed-size copy of a padded buffer ([`Piece`]) into
//! a slice sized once for the worst case ([`Tables::record_room`]); only
//! the address and the payload offset are formatted per record (callgrind,
//! CaseLarge: 409 → 341 instructions a record, the per-task prefix
//! included; `docs/performance.md`, "Cheaper capture").

use simpler_core::DType;
use simpler_format::{scalar::ScalarValue, stream::Cursor};

use crate::kept::{role_stage_table, Kept, Tables, VALUE_ROOM};
use crate::record::Stage;

/// Text copied by a fixed-size copy of its zero-padded buffer (a few
/// moves the compiler writes inline, [`Cursor::raw_padded`]), of its
/// first 64 or 128 bytes when it is that short.
#[derive(Debug, Clone, Copy)]
struct Piece<const N: usize> {
    text: [u8; N],
    len: usize,
}

impl<const N: usize> Default for Piece<N> {
    fn default() -> Self {
        Piece {
            text: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> Piece<N> {
    /// `parts` one after the other; `None` when they are longer than `N`.
    fn of(parts: &[&[u8]]) -> Option<Self> {
        let mut p = Piece::default();
        for part in parts {
            p.text
                .get_mut(p.len..p.len + part.len())?
                .copy_from_slice(part);
            p.len += part.len();
        }
        Some(p)
    }

    /// The text is copied by the smallest of 64 or 128 bytes that holds
    /// it, or in two copies: up to 128 bytes are moves the compiler writes
    /// inline, a longer copy would be a call to `memcpy` (~30
    /// instructions).
    #[inline(always)]
    fn put(&self, c: &mut Cursor<'_>) {
        if N <= 64 {
            c.raw_padded(&self.text, self.len);
        } else if self.len <= 64 {
            c.raw_padded(part::<N, 64>(&self.text, 0), self.len);
        } else if N <= 128 || self.len <= 128 {
            c.raw_padded(part::<N, 128>(&self.text, 0), self.len);
        } else if self.len <= 192 {
            c.raw_padded(part::<N, 128>(&self.text, 0), 128);
            c.raw_padded(part::<N, 64>(&self.text, 128), self.len - 128);
        } else {
            c.raw_padded(part::<N, 128>(&self.text, 0), 128);
            c.raw_padded(part::<N, 128>(&self.text, 128), self.len - 128);
        }
    }
}

/// Bytes `at..at + M` of `a` (inside it).
#[inline(always)]
fn part<const N: usize, const M: usize>(a: &[u8; N], at: usize) -> &[u8; M] {
    a[at..at + M].try_into().expect("inside the piece")
}

/// One (role, stage, arg index, layout) combination's text.
#[derive(Debug, Default)]
struct Template {
    /// Tensor: from the role to `"start_offset":`; scalar: to `"value":`.
    head_text: Vec<u8>,
    /// `head_text`, when it fits (a layout of five long dims does not:
    /// its records are written from the text).
    head: Option<Piece<256>>,
    /// Tensor: `head_text`, `0` and `mid` (no start offset), when it fits.
    zero: Option<Piece<256>>,
    /// Tensor: from `,"is_contiguous":` to the address's `"0x` (at most
    /// 62 bytes).
    mid: Piece<64>,
    /// Tensor: the payload size `tail` was made for; scalar: the bits.
    tail_for: Option<u64>,
    /// Tensor: `,"bin_size":…` to the record's end, for `tail_for`;
    /// scalar: the value, `,"bits":"…"` and the end.
    tail: Piece<128>,
}

/// Formats kept records one after another, byte for byte what serde
/// writes for the same record as [`simpler_format::tensor_dump::Record`]
/// (tested, `kept_format_check.rs`). One per export thread.
pub(crate) struct RecordWriter<'t> {
    tables: &'t Tables,
    /// `{"task_id":"0x…","func_id":[…],"role":"` of the task and func-id
    /// list in `prefix_of` (at most 85 bytes: three 10-digit func ids).
    prefix: Piece<128>,
    prefix_of: Option<(u64, u32)>,
    /// Per layout index: its templates' keys ((arg index << 8) | flags)
    /// and their indices in `templates`.
    by_layout: Vec<Vec<(u16, u32)>>,
    templates: Vec<Template>,
    /// In front of `by_layout`: ((layout << 16) | key, template index) by
    /// a hash of the two, replaced when another pair takes the entry.
    recent: Box<[(u64, u32); RECENT]>,
    /// The upper half of the last address written, and its hex digits: a
    /// run's GM is one mapping, so nearly every address shares them.
    high: (u32, [u8; 8]),
}

/// Entries of [`RecordWriter::recent`] (a power of two).
const RECENT: usize = 256;

impl<'t> RecordWriter<'t> {
    pub fn new(tables: &'t Tables) -> Self {
        RecordWriter {
            tables,
            prefix: Piece::default(),
            prefix_of: None,
            by_layout: Vec::new(),
            templates: Vec::new(),
            recent: Box::new([(u64::MAX, 0); RECENT]),
            high: (0, simpler_format::hex::digits8(0)),
        }
    }

    /// Write the JSON of `k` at the start of `buf` and return its length.
    ///
    /// # Panics
    /// When `buf` is shorter than [`Tables::record_room`].
    #[inline]
    pub fn write(&mut self, buf: &mut [u8], k: &Kept) -> usize {
        if self.prefix_of != Some((k.task_id, k.funcs)) {
            self.start_task(k);
        }
        let t = self.template(k);
        let t = &mut self.templates[t];
        let mut c = Cursor::new(buf);
        self.prefix.put(&mut c);
        if k.is_scalar() {
            t.put_head(&mut c);
            if t.tail_for != Some(k.addr_or_bits) {
                let dtype = self.tables.layouts[k.layout as usize].dtype;
                scalar_tail(t, dtype, k.addr_or_bits);
            }
            t.tail.put(&mut c);
            return c.len();
        }
        match &t.zero {
            Some(zero) if k.start_offset == 0 => zero.put(&mut c),
            _ => {
                t.put_head(&mut c);
                c.u64(k.start_offset);
                t.mid.put(&mut c);
            }
        }
        let high = (k.addr_or_bits >> 32) as u32;
        if self.high.0 != high {
            self.high = (high, simpler_format::hex::digits8(high));
        }
        let mut digits = [0u8; 16];
        digits[..8].copy_from_slice(&self.high.1);
        digits[8..].copy_from_slice(&simpler_format::hex::digits8(k.addr_or_bits as u32));
        c.raw(&digits);
        c.raw(b"\",\"bin_offset\":");
        c.u64(k.bin_offset);
        if t.tail_for != Some(k.bin_size) {
            tensor_tail(t, k);
        }
        t.tail.put(&mut c);
        c.len()
    }

    /// Format the text up to the role for `k`'s task and func-id list.
    #[cold]
    #[inline(never)]
    fn start_task(&mut self, k: &Kept) {
        let funcs = &self.tables.funcs[k.funcs as usize];
        self.prefix = Piece::of(&[
            b"{\"task_id\":\"0x",
            &simpler_format::hex::digits16(k.task_id),
            funcs.text(),
        ])
        .expect("a task's prefix is at most 85 bytes");
        self.prefix_of = Some((k.task_id, k.funcs));
    }

    /// The index of `k`'s template, made when new.
    #[inline]
    fn template(&mut self, k: &Kept) -> usize {
        let key = u16::from(k.arg_index) << 8 | u16::from(k.flags);
        let full = u64::from(k.layout) << 16 | u64::from(key);
        let slot =
            (full.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.trailing_zeros())) as usize;
        match self.recent[slot] {
            (f, t) if f == full => t as usize,
            _ => {
                let t = self.look_up(k, key);
                self.recent[slot] = (full, t as u32);
                t
            }
        }
    }

    /// [`RecordWriter::template`] past its cache.
    #[cold]
    #[inline(never)]
    fn look_up(&mut self, k: &Kept, key: u16) -> usize {
        let found = self
            .by_layout
            .get(k.layout as usize)
            .and_then(|ts| ts.iter().find(|(x, _)| *x == key));
        match found {
            Some(&(_, t)) => t as usize,
            None => self.new_template(k, key),
        }
    }

    fn new_template(&mut self, k: &Kept, key: u16) -> usize {
        let layout = &self.tables.layouts[k.layout as usize];
        let role = k.role_index();
        let role_stage = &role_stage_table()[role * Stage::ALL.len() + k.stage() as usize];
        let mut arg = Vec::new();
        crate::kept::push_int(&mut arg, k.arg_index);
        let head_text = [role_stage.text(), &arg, layout.head.text()].concat();
        let mid = [layout.mid.text(), b"0x"].concat();
        let t = Template {
            head: Piece::of(&[&head_text]),
            zero: (!k.is_scalar())
                .then(|| Piece::of(&[&head_text, b"0", &mid]))
                .flatten(),
            mid: Piece::of(&[&mid]).expect("at most 62 bytes"),
            head_text,
            ..Template::default()
        };
        let at = self.templates.len();
        self.templates.push(t);
        if self.by_layout.len() <= k.layout as usize {
            self.by_layout.resize_with(k.layout as usize + 1, Vec::new);
        }
        self.by_layout[k.layout as usize].push((key, at as u32));
        at
    }
}

impl Template {
    /// The text from the role to the start offset (tensor) or the value
    /// (scalar).
    #[inline]
    fn put_head(&self, c: &mut Cursor<'_>) {
        match &self.head {
            Some(head) => head.put(c),
            None => c.raw(&self.head_text),
        }
    }
}

/// Make `t`'s closing text for `k`'s payload size (the template's flags
/// say whether it is truncated).
fn tensor_tail(t: &mut Template, k: &Kept) {
    let mut size = Vec::new();
    crate::kept::push_int(&mut size, k.bin_size);
    let flags: &[u8] = if k.truncated() {
        b",\"truncated\":true,\"overwritten\":false}"
    } else {
        b",\"truncated\":false,\"overwritten\":false}"
    };
    t.tail = Piece::of(&[b",\"bin_size\":", &size, flags]).expect("at most 70 bytes");
    t.tail_for = Some(k.bin_size);
}

/// Make `t`'s closing text for a scalar of `dtype` with raw `bits`: its
/// value as serde writes [`simpler_format::scalar::encode`]'s (floats in
/// their shortest round-trip form, which serde_json's writer gives), its
/// bits, the record's end.
fn scalar_tail(t: &mut Template, dtype: DType, bits: u64) {
    let mut text = [0u8; VALUE_ROOM];
    let n = match simpler_format::scalar::encode(dtype, bits) {
        ScalarValue::Int(v) => {
            let mut c = Cursor::new(&mut text);
            c.i64(v);
            c.len()
        }
        ScalarValue::UInt(v) => {
            let mut c = Cursor::new(&mut text);
            c.u64(v);
            c.len()
        }
        float => {
            let mut rest = &mut text[..];
            serde_json::to_writer(&mut rest, &float).expect("a scalar's value fits its room");
            VALUE_ROOM - rest.len()
        }
    };
    t.tail = Piece::of(&[
        &text[..n],
        b",\"bits\":\"0x",
        &simpler_format::hex::digits16(bits),
        b"\"}",
    ])
    .expect("at most 69 bytes");
    t.tail_for = Some(bits);
}
