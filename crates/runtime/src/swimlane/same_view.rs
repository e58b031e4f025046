//! Whether two task arguments are one argument but for their start
//! offsets: the argument log's fast path (`arg_log`), run per argument on
//! the worker that bounds a flood with the orchestrator.
//!
//! Field by field that is ~60 instructions (callgrind, stop 24). Compared
//! as the bytes the fields fill — three runs, 85 bytes: two compares
//! inlined and one `memcmp` — it is ~35 (reading them a word at a time
//! instead was no fewer). The runs are worked out at compile time
//! from the fields' offsets and used only when the compared fields fill
//! them exactly, so no padding byte is ever read; with another layout the
//! compare is field by field, and a test says so.

use std::mem::{offset_of, size_of};

use simpler_core::TaskTensor;

/// The size of the field `f` selects (never called: its type is all).
const fn size<T, F>(_f: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// Byte range `(start, end)` of a field of `TaskTensor`.
macro_rules! field {
    ($($f:ident).+) => {{
        let start = offset_of!(TaskTensor, $($f).+);
        (start, start + size(|t: &TaskTensor| &t.$($f).+))
    }};
}

/// Every field compared: all but `desc.start_offset` and `marked`.
const FIELDS: [(usize, usize); 13] = [
    field!(desc.addr),
    field!(desc.size),
    field!(desc.owner_task_id),
    field!(desc.version),
    field!(desc.ndims),
    field!(desc.dtype),
    field!(desc.manual_dep),
    field!(desc.is_contiguous),
    field!(desc.address_space),
    field!(desc.shapes),
    field!(desc.extent_elems),
    field!(desc.strides),
    field!(role),
];

/// The descriptor before its start offset, after it up to its last
/// field's end, and the role.
const RUNS: [(usize, usize); 3] = {
    let offset = field!(desc.start_offset);
    let mut end = 0;
    let mut i = 0;
    // The role is the last field: the descriptor's fields come before.
    while i + 1 < FIELDS.len() {
        if FIELDS[i].1 > end {
            end = FIELDS[i].1;
        }
        i += 1;
    }
    [(0, offset.0), (offset.1, end), FIELDS[12]]
};

/// Whether the fields fill the runs exactly: the runs are in order and
/// apart, every field lies in one of them, and the fields' sizes add up
/// to the runs' lengths (fields never overlap, so they then cover every
/// byte of every run and none else).
const fn fields_fill_the_runs() -> bool {
    let (mut i, mut runs, mut fields) = (0, 0, 0);
    while i < RUNS.len() {
        let (start, end) = RUNS[i];
        if start > end || (i > 0 && RUNS[i - 1].1 > start) {
            return false;
        }
        runs += end - start;
        i += 1;
    }
    i = 0;
    while i < FIELDS.len() {
        let (start, end) = FIELDS[i];
        let mut k = 0;
        let mut inside = false;
        while k < RUNS.len() {
            inside |= RUNS[k].0 <= start && end <= RUNS[k].1;
            k += 1;
        }
        if !inside {
            return false;
        }
        fields += end - start;
        i += 1;
    }
    runs == fields && RUNS[RUNS.len() - 1].1 <= size_of::<TaskTensor>()
}

/// Whether the byte compare is used (the layout is the one expected).
pub(crate) const BYTES: bool = fields_fill_the_runs();

/// The bytes of run `r` of `t`.
#[inline(always)]
fn run(t: &TaskTensor, r: (usize, usize)) -> &[u8] {
    // SAFETY: `BYTES` holds (the only caller checks it): `r` lies inside
    // a `TaskTensor` and is filled by its fields alone
    // (`fields_fill_the_runs`) — integers, bools, fieldless enums and
    // arrays of integers, with no padding inside them — so every byte in
    // it is initialised; the slice is made from `t`'s own reference and
    // lives no longer.
    unsafe { std::slice::from_raw_parts((t as *const TaskTensor).cast::<u8>().add(r.0), r.1 - r.0) }
}

/// Whether `a` and `b` are one argument but for their start offsets (and
/// dump marks): then they view one buffer with one layout.
#[inline(always)]
pub(crate) fn same_but_offset(a: &TaskTensor, b: &TaskTensor) -> bool {
    if BYTES {
        (run(a, RUNS[0]) == run(b, RUNS[0]))
            & (run(a, RUNS[1]) == run(b, RUNS[1]))
            & (run(a, RUNS[2]) == run(b, RUNS[2]))
    } else {
        field_by_field(a, b)
    }
}

/// [`same_but_offset`] a field at a time.
fn field_by_field(a: &TaskTensor, b: &TaskTensor) -> bool {
    let (x, y) = (&a.desc, &b.desc);
    a.role == b.role
        && x.addr == y.addr
        && x.size == y.size
        && x.owner_task_id == y.owner_task_id
        && x.version == y.version
        && x.ndims == y.ndims
        && x.dtype == y.dtype
        && x.manual_dep == y.manual_dep
        && x.is_contiguous == y.is_contiguous
        && x.address_space == y.address_space
        && x.shapes == y.shapes
        && x.extent_elems == y.extent_elems
        && x.strides == y.strides
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use simpler_core::{ArgRole, ChipTensor, DType, TaskId, MAX_DIMS};

    #[test]
    fn the_byte_compare_is_used_on_this_layout() {
        assert!(fields_fill_the_runs(), "runs {RUNS:?}, fields {FIELDS:?}");
        assert_eq!(RUNS.iter().map(|r| r.1 - r.0).sum::<usize>(), 85);
    }

    fn tensor(seed: [u64; 4]) -> TaskTensor {
        let mut shapes = [0; MAX_DIMS];
        let mut strides = [0; MAX_DIMS];
        for k in 0..MAX_DIMS {
            shapes[k] = (seed[1] >> (k * 8)) as u32;
            strides[k] = (seed[2] >> (k * 8)) as u32;
        }
        TaskTensor {
            desc: ChipTensor {
                addr: seed[0],
                size: seed[1],
                owner_task_id: TaskId(seed[2]),
                start_offset: seed[3],
                version: seed[0] as i32,
                ndims: seed[1] as u32,
                dtype: DType::ALL[seed[2] as usize % DType::ALL.len()],
                manual_dep: seed[0] & (1 << 50) != 0,
                is_contiguous: seed[1] & (1 << 50) != 0,
                address_space: (seed[2] >> 50) as u8,
                shapes,
                extent_elems: seed[3] >> 3,
                strides,
            },
            role: [ArgRole::Input, ArgRole::InOut][(seed[3] >> 60) as usize % 2],
            marked: seed[0] & (1 << 60) != 0,
        }
    }

    proptest! {
        /// `b` is `a` with one field changed by one bit (each field in
        /// turn), or its start offset and dump mark only: the bytes say
        /// what the fields say.
        #[test]
        fn the_bytes_say_what_the_fields_say(
            seed in any::<[u64; 4]>(),
            field in 0u8..16,
            x in any::<u32>(),
        ) {
            let a = tensor(seed);
            let mut b = a;
            let (d, k) = (&mut b.desc, x as usize % MAX_DIMS);
            match field {
                0 => d.addr ^= 1 << (x % 64),
                1 => d.size ^= 1 << (x % 64),
                2 => d.owner_task_id.0 ^= 1 << (x % 64),
                3 => d.version ^= 1 << (x % 32),
                4 => d.ndims ^= 1 << (x % 32),
                5 => d.dtype = DType::ALL[(d.dtype as usize + 1 + x as usize % 3) % DType::ALL.len()],
                6 => d.manual_dep = !d.manual_dep,
                7 => d.is_contiguous = !d.is_contiguous,
                8 => d.address_space ^= 1 << (x % 8),
                9 => d.shapes[k] ^= 1 << (x % 32),
                10 => d.extent_elems ^= 1 << (x % 64),
                11 => d.strides[k] ^= 1 << (x % 32),
                12 => b.role = if a.role == ArgRole::Input { ArgRole::Output } else { ArgRole::Input },
                13 => d.start_offset ^= u64::from(x),
                14 => b.marked = !b.marked,
                _ => {}
            }
            let same = same_but_offset(&a, &b);
            prop_assert_eq!(same, field_by_field(&a, &b));
            prop_assert_eq!(same, field >= 13, "field {}", field);
        }
    }
}
