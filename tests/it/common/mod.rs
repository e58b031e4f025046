//! Helpers shared by the tensor-dump tests: run a workload with a dump into
//! a temporary folder, read `tensor_dump.json` / `.bin` back, index records.
#![allow(dead_code)]

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Output,
};

use simpler_dump::{DumpConfig, DumpLevel, DumpPolicy};
pub use simpler_format::tensor_dump::{Manifest, Record as RecordJson};
pub use simpler_format::vocab::{Kind, Stage, Status};
use simpler_runtime::{RunReport, Runtime, RuntimeConfig};
use tempfile::TempDir;

/// GM for test runtimes: plenty for every bundled case (reserved lazily).
pub const GM_BYTES: u64 = 1 << 30;

/// A dump written and read back.
pub struct Dump {
    /// Keeps the folder alive.
    pub tmp: TempDir,
    /// The parsed `tensor_dump.json`.
    pub manifest: Manifest,
    /// The whole `tensor_dump.bin`.
    pub bin: Vec<u8>,
    /// What the runtime reported.
    pub report: RunReport,
}

impl Dump {
    /// The payload bytes of `r` (asserting the range lies in the `.bin`).
    pub fn bytes(&self, r: &RecordJson) -> &[u8] {
        let (o, s) = (r.bin_offset as usize, r.bin_size as usize);
        assert!(
            o.checked_add(s).is_some_and(|e| e <= self.bin.len()),
            "record {} arg {} ({}) range {o}+{s} outside the {}-byte .bin",
            r.task_id,
            r.arg_index,
            r.stage,
            self.bin.len()
        );
        &self.bin[o..o + s]
    }

    /// Records by (task id, stage, arg index); panics on duplicates.
    pub fn index(&self) -> HashMap<Key, &RecordJson> {
        index(&self.manifest)
    }
}

/// (task id, stage rank: 0 before_dispatch / 1 after_completion, arg index).
pub type Key = (u64, u8, u32);

/// Stage → rank, panicking on a hang snapshot (a run that completed has none).
pub fn stage_rank(s: Stage) -> u8 {
    match s {
        Stage::BeforeDispatch => 0,
        Stage::AfterCompletion => 1,
        other => panic!("unexpected stage {other}"),
    }
}

/// The key of a record.
pub fn key(r: &RecordJson) -> Key {
    (r.task_id.value, stage_rank(r.stage), r.arg_index)
}

/// Records by key; panics when a key appears twice.
pub fn index(m: &Manifest) -> HashMap<Key, &RecordJson> {
    let mut h = HashMap::with_capacity(m.tensors.len());
    for r in &m.tensors {
        let k = key(r);
        assert!(
            h.insert(k, r).is_none(),
            "record (task {}, {}, arg {}) appears twice",
            r.task_id,
            r.stage,
            r.arg_index
        );
    }
    h
}

/// Full payload size of a tensor record: numel · element size.
pub fn full_size(r: &RecordJson) -> u64 {
    r.numel * r.dtype.size() as u64
}

/// A dump configuration with explicit knobs.
pub fn dump_config(
    dir: &Path,
    level: DumpLevel,
    policy: DumpPolicy,
    arena_bytes: usize,
    queue_buffers: usize,
) -> DumpConfig {
    DumpConfig {
        level: Some(level),
        policy,
        arena_bytes,
        queue_buffers,
        ..DumpConfig::new(dir)
    }
}

/// Default dump knobs (level 2, block, 1 MiB arenas, 8 queued buffers).
pub fn default_knobs(dir: &Path) -> DumpConfig {
    DumpConfig::new(dir)
}

/// Read `dir/tensor_dump.json` and `dir/tensor_dump.bin`.
pub fn read_dump(dir: &Path) -> (Manifest, Vec<u8>) {
    let json = std::fs::read(dir.join("tensor_dump.json")).expect("read tensor_dump.json");
    let m = parse_strict(&json);
    let bin_file = m.header.bin_file.clone().flatten().expect("bin_file");
    let bin = std::fs::read(dir.join(bin_file)).expect("read tensor_dump.bin");
    (m, bin)
}

/// A native manifest parsed by the strict (our own) types: an unknown or
/// misspelled field fails the test. The records go straight into
/// `StrictRecord`s (a detour through `serde_json::Value` costs several
/// seconds on a CaseLarge manifest); the header, a few keys, through a map.
pub fn parse_strict(json: &[u8]) -> Manifest {
    let StrictManifest(m) = serde_json::from_slice(json).expect("strict manifest");
    m
}

/// [`Manifest`] read with the strict header and record types.
struct StrictManifest(Manifest);

impl<'de> serde::Deserialize<'de> for StrictManifest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = StrictManifest;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a tensor_dump.json object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<StrictManifest, A::Error> {
        use serde::de::Error;
        use simpler_format::tensor_dump::{StrictHeader, StrictRecord};
        let mut head = serde_json::Map::new();
        let mut records: Option<Vec<StrictRecord>> = None;
        while let Some(k) = a.next_key::<String>()? {
            if k == "tensors" {
                if records.replace(a.next_value()?).is_some() {
                    return Err(A::Error::duplicate_field("tensors"));
                }
            } else if head.insert(k.clone(), a.next_value()?).is_some() {
                return Err(A::Error::custom(format!("duplicate field `{k}`")));
            }
        }
        let records = records.ok_or_else(|| A::Error::missing_field("tensors"))?;
        let header: StrictHeader =
            serde_json::from_value(serde_json::Value::Object(head)).map_err(A::Error::custom)?;
        Ok(StrictManifest(Manifest {
            header: header.into(),
            tensors: records.into_iter().map(Into::into).collect(),
        }))
    }
}

/// A runtime for `kernels` that dumps as `cfg` says.
pub fn runtime(cfg: DumpConfig, kernels: Vec<simpler_runtime::KernelDef>) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            gm_bytes: GM_BYTES,
            dump: Some(cfg),
            ..Default::default()
        },
        kernels,
    )
    .expect("runtime")
}

/// Run `workload`'s `case` with `seed`, dumping into a fresh temporary
/// folder with the knobs `knobs(dir)` returns; check the golden passed and
/// read the dump back.
pub fn run_dumped(
    workload: &str,
    case: &str,
    seed: u64,
    knobs: impl FnOnce(&Path) -> DumpConfig,
) -> Dump {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("tensor_dump");
    let w = simpler_workloads::find(workload).expect("workload");
    let rt = runtime(knobs(&dir), w.kernels());
    let out = w.run(case, seed, &rt).expect("run");
    assert!(
        out.golden.passed,
        "{workload} {case} seed {seed}: golden failed: {:?}",
        out.golden
    );
    let (manifest, bin) = read_dump(&dir);
    Dump {
        tmp,
        manifest,
        bin,
        report: out.report,
    }
}

/// f32 → bf16 bits, round to nearest even (written here, independent of the
/// runtime's conversion). NaN stays a quiet NaN.
pub fn bf16_rne(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x0040;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// bf16 bits → f32 (exact).
pub fn bf16_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// Little-endian f32s.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    assert_eq!(b.len() % 4, 0, "{} bytes are not f32s", b.len());
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Little-endian bf16 values widened to f32.
pub fn bf16s(b: &[u8]) -> Vec<f32> {
    assert_eq!(b.len() % 2, 0, "{} bytes are not bf16s", b.len());
    b.chunks_exact(2)
        .map(|c| bf16_f32(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// f32s as little-endian bytes.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// bf16 bit patterns as little-endian bytes.
pub fn u16_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Index and value of the first differing f32 between two byte strings of
/// equal length, for readable failures.
pub fn first_f32_diff(got: &[u8], want: &[u8]) -> Option<(usize, f32, f32)> {
    f32s(got)
        .into_iter()
        .zip(f32s(want))
        .enumerate()
        .find(|(_, (g, w))| g.to_bits() != w.to_bits())
        .map(|(i, (g, w))| (i, g, w))
}

/// stdout and stderr of a finished command, as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every file under `dir`, relative, sorted (none when it does not exist).
pub fn files(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut v = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut v);
    }
    v.sort();
    v
}

/// No temporary file anywhere under `dir`.
pub fn assert_no_tmp(dir: &Path) {
    for f in files(dir) {
        assert!(
            !f.to_string_lossy().ends_with(".tmp"),
            "temporary file left behind: {}",
            f.display()
        );
    }
}
