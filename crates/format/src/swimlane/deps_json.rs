//! `deps.json` written by hand ([`write_deps`]): the bytes serde_json
//! writes for a [`Deps`], from iterators over the caller's records.
//!
//! The field names are the ones of the types in [`super`] (serde derive
//! reads them); a test writes random graphs both ways and compares the
//! bytes. Why by hand: through serde (derived `Serialize`, lists
//! serialized from iterators) CaseLarge's 60 MB took 115–130 ms of CPU on
//! its thread, a quarter of it escaping keys that never need it; by hand
//! 82–85 ms, of which ~35 ms is the kernel taking the bytes (per-thread
//! CPU, three `--predict` runs each, docs/swimlane.md).

use std::io::{self, Write};

use super::{Dec64, DepArg, DepEdge, DepTask, DepTensor};
use crate::stream::{list, str_val, JsonBuf};

/// Write `deps.json` (without a final newline) from its three lists, in
/// the layout `serde_json::to_writer(&Deps { .. })` gives.
///
/// # Errors
/// Write failures.
pub fn write_deps<A, D>(
    w: &mut impl Write,
    schema_version: Option<u32>,
    runtime: Option<&str>,
    tasks: impl IntoIterator<Item = DepTask<A>>,
    tensors: impl IntoIterator<Item = DepTensor>,
    edges: impl IntoIterator<Item = DepEdge<D>>,
) -> io::Result<()>
where
    A: IntoIterator<Item = DepArg<D>>,
    D: AsRef<[u32]>,
{
    let mut b = JsonBuf::default();
    b.raw(b"{");
    if let Some(v) = schema_version {
        b.raw(b"\"schema_version\":");
        b.u64(u64::from(v));
        b.raw(b",");
    }
    if let Some(r) = runtime {
        b.raw(b"\"runtime\":");
        str_val(b.vec(), r);
        b.raw(b",");
    }
    b.raw(b"\"tasks\":[");
    list(w, &mut b, tasks, task)?;
    b.raw(b"],\"tensors\":[");
    list(w, &mut b, tensors, tensor)?;
    b.raw(b"],\"edges\":[");
    list(w, &mut b, edges, edge)?;
    b.raw(b"]}");
    w.write_all(b.bytes())
}

// Inlined: the key is then a constant, copied without a call.
#[inline(always)]
fn dec(b: &mut JsonBuf, key: &[u8], v: Dec64) {
    b.raw(key);
    b.raw(b"\"");
    b.u64(v.0);
    b.raw(b"\"");
}

// Inlined: the key is then a constant, copied without a call.
#[inline(always)]
fn dims(b: &mut JsonBuf, key: &[u8], d: &[u32]) {
    b.raw(key);
    b.raw(b"[");
    for (i, &x) in d.iter().enumerate() {
        if i > 0 {
            b.raw(b",");
        }
        b.u64(u64::from(x));
    }
    b.raw(b"]");
}

fn task<A: IntoIterator<Item = DepArg<D>>, D: AsRef<[u32]>>(b: &mut JsonBuf, t: DepTask<A>) {
    dec(b, b"{\"task_id\":", t.task_id);
    b.raw(b",\"scope\":");
    b.u64(u64::from(t.scope));
    b.raw(b",\"kernel_ids\":[");
    for (i, &k) in t.kernel_ids.iter().enumerate() {
        if i > 0 {
            b.raw(b",");
        }
        b.i64(k);
    }
    b.raw(b"],\"block_num\":");
    b.u64(u64::from(t.block_num));
    b.raw(b",\"args\":[");
    for (i, a) in t.args.into_iter().enumerate() {
        if i > 0 {
            b.raw(b",");
        }
        arg(b, &a);
    }
    b.raw(b"]}");
}

fn arg<D: AsRef<[u32]>>(b: &mut JsonBuf, a: &DepArg<D>) {
    b.raw(b"{\"idx\":");
    b.u64(u64::from(a.idx));
    b.raw(b",\"type\":");
    str_val(b.vec(), &a.kind);
    dec(b, b",\"tensor_id\":", a.tensor_id);
    b.raw(b",\"dtype\":");
    str_val(b.vec(), &a.dtype);
    dims(b, b",\"shape\":", a.shape.as_ref());
    dec(b, b",\"start_offset\":", a.start_offset);
    dims(b, b",\"strides\":", a.strides.as_ref());
    b.raw(b"}");
}

fn tensor(b: &mut JsonBuf, t: DepTensor) {
    dec(b, b"{\"tensor_id\":", t.tensor_id);
    dec(b, b",\"buffer_addr\":", t.buffer_addr);
    b.raw(b",\"version\":");
    b.i64(t.version);
    b.raw(b",\"dtype\":");
    str_val(b.vec(), &t.dtype);
    dec(b, b",\"buffer_numel\":", t.buffer_numel);
    b.raw(b"}");
}

fn edge<D: AsRef<[u32]>>(b: &mut JsonBuf, e: DepEdge<D>) {
    dec(b, b"{\"pred\":", e.pred);
    dec(b, b",\"succ\":", e.succ);
    b.raw(b",\"arg\":");
    b.i64(e.arg);
    b.raw(b",\"source\":");
    str_val(b.vec(), &e.source);
    b.raw(b",\"flags\":");
    b.u64(u64::from(e.flags));
    b.raw(b",\"overlap\":");
    str_val(b.vec(), &e.overlap);
    if let Some(v) = e.tensor_id {
        dec(b, b",\"tensor_id\":", v);
    }
    for (shape, offset, strides, keys) in [
        (
            &e.consumer_shape,
            e.consumer_start_offset,
            &e.consumer_strides,
            VIEW_KEYS[0],
        ),
        (
            &e.producer_shape,
            e.producer_start_offset,
            &e.producer_strides,
            VIEW_KEYS[1],
        ),
    ] {
        if let Some(s) = shape {
            dims(b, keys[0], s.as_ref());
        }
        if let Some(o) = offset {
            dec(b, keys[1], o);
        }
        if let Some(s) = strides {
            dims(b, keys[2], s.as_ref());
        }
    }
    b.raw(b"}");
}

/// The consumer's and the producer's view keys of a [`DepEdge`].
const VIEW_KEYS: [[&[u8]; 3]; 2] = [
    [
        b",\"consumer_shape\":",
        b",\"consumer_start_offset\":",
        b",\"consumer_strides\":",
    ],
    [
        b",\"producer_shape\":",
        b",\"producer_start_offset\":",
        b",\"producer_strides\":",
    ],
];

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::swimlane::Deps;

    fn lcg(s: &mut u64) -> u64 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *s >> 33
    }

    fn text(s: &mut u64) -> Cow<'static, str> {
        const WORDS: [&str; 5] = ["input", "FLOAT32", "q\"uote", "tab\t", "ünï\\"];
        Cow::Owned(WORDS[lcg(s) as usize % WORDS.len()].to_string())
    }

    fn vec(s: &mut u64) -> Vec<u32> {
        (0..lcg(s) % 4).map(|_| lcg(s) as u32).collect()
    }

    fn arg(s: &mut u64) -> DepArg {
        DepArg {
            idx: lcg(s) as u32,
            kind: text(s),
            tensor_id: Dec64(lcg(s) << 20),
            dtype: text(s),
            shape: vec(s),
            start_offset: Dec64(u64::MAX - lcg(s)),
            strides: vec(s),
        }
    }

    fn edge(s: &mut u64) -> DepEdge {
        let some = |s: &mut u64| lcg(s).is_multiple_of(2);
        DepEdge {
            pred: Dec64(lcg(s)),
            succ: Dec64(lcg(s)),
            arg: lcg(s) as i64 - (1 << 30),
            source: text(s),
            flags: lcg(s) as u32,
            overlap: text(s),
            tensor_id: some(s).then(|| Dec64(lcg(s))),
            consumer_shape: some(s).then(|| vec(s)),
            consumer_start_offset: some(s).then(|| Dec64(lcg(s))),
            consumer_strides: some(s).then(|| vec(s)),
            producer_shape: some(s).then(|| vec(s)),
            producer_start_offset: some(s).then(|| Dec64(lcg(s))),
            producer_strides: some(s).then(|| vec(s)),
        }
    }

    fn deps(seed: u64) -> Deps {
        let s = &mut seed.clone();
        Deps {
            schema_version: seed.is_multiple_of(2).then_some(1),
            runtime: seed.is_multiple_of(3).then(|| text(s)),
            tasks: (0..lcg(s) % 5)
                .map(|_| DepTask {
                    task_id: Dec64(lcg(s) << 32),
                    scope: lcg(s) as u32,
                    kernel_ids: [lcg(s) as i64, -1, i64::MIN],
                    block_num: lcg(s) as u32,
                    args: (0..lcg(s) % 4).map(|_| arg(s)).collect(),
                })
                .collect(),
            tensors: (0..lcg(s) % 4)
                .map(|_| DepTensor {
                    tensor_id: Dec64(lcg(s)),
                    buffer_addr: Dec64(lcg(s) << 30),
                    version: -(lcg(s) as i64),
                    dtype: text(s),
                    buffer_numel: Dec64(lcg(s)),
                })
                .collect(),
            edges: (0..lcg(s) % 5).map(|_| edge(s)).collect(),
        }
    }

    #[test]
    fn written_by_hand_as_serde_json_writes_it() {
        for seed in 0..300 {
            let d = deps(seed);
            let mut by_hand = Vec::new();
            write_deps(
                &mut by_hand,
                d.schema_version,
                d.runtime.as_deref(),
                d.tasks.clone(),
                d.tensors.clone(),
                d.edges.clone(),
            )
            .unwrap();
            let want = serde_json::to_string(&d).unwrap();
            assert_eq!(String::from_utf8(by_hand).unwrap(), want, "seed {seed}");
        }
    }
}
