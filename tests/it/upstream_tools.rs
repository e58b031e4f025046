//! What the upstream runtime's tools require of a dump (UPSTREAM_FORMATS
//! A and D), as code, run on our `--dump-layout upstream` run directories
//! of vector_example, mixed_example and paged_attention CaseSmall1 at
//! dump levels 1, 2 and 3. The files are read as the Python tools read
//! them (plain JSON objects), not through our types:
//!
//! - the dump viewer: auto-detection of the newest `outputs/*/args_dump`,
//!   the record list `args` (falling back to `tensors`), the payload file,
//!   the keys its listing and its txt export use;
//! - the ST validator (`test_args_dump.py`), adapted where it is specific
//!   to its own orchestration: "exactly the marked slots" means our
//!   workloads' `.dump()` marks (our marks are per slot, so there is no
//!   `arg_index_ambiguous`), "at least 5 tasks" means every task of the
//!   run (vector_example has 5), and a MIX task's `func_id` is its members
//!   list (the validator's one-element rule is for single-kernel tasks);
//! - the minimal writer set, in the upstream field order;
//! - `core_swimlane`'s reading rules D.1–D.7, including restoring every
//!   `before_dispatch` payload through its strides into a buffer and
//!   comparing it with our native dump of the same seed — and, where
//!   another task wrote the whole buffer (QK's `sij` under SF's strided
//!   view), with that producer's bytes at the same offsets.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::insight_trace::simpler;

/// Element size of an upstream dtype name, restricted to what
/// `core_swimlane` can build a descriptor for (FLOAT32 … UINT32).
fn elem(dtype: &str) -> usize {
    match dtype {
        "FLOAT32" | "INT32" | "UINT32" => 4,
        "FLOAT16" | "INT16" | "BFLOAT16" | "UINT16" => 2,
        "INT8" | "UINT8" => 1,
        "INT64" | "UINT64" => 8,
        other => panic!("core_swimlane cannot build a descriptor of dtype {other}"),
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned integer"))
}

fn list(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not a list"))
        .iter()
        .map(u)
        .collect()
}

/// (task_id, stage, arg_index) of a record.
type Key = (String, String, u64);

fn key(r: &Value) -> Key {
    (
        r["task_id"].as_str().unwrap().into(),
        r["stage"].as_str().unwrap().into(),
        u(&r["arg_index"]),
    )
}

/// Is the record one of the workload's `.dump()`-marked args?
fn marked(workload: &str, r: &Value, last_task: &str) -> bool {
    let arg = u(&r["arg_index"]);
    match workload {
        "paged_attention" => r["func_id"] == serde_json::json!([3]) && arg == 6,
        "vector_example" => r["task_id"] == last_task && arg == 2,
        "mixed_example" => (4..=6).contains(&arg),
        other => panic!("{other}"),
    }
}

/// One run to check and the native run of the same seed.
struct Case {
    workload: &'static str,
    level: u8,
    dir: PathBuf,
    /// The manifest as written (serde_json's maps do not keep key order).
    text: String,
    doc: Map<String, Value>,
    bin: Vec<u8>,
    native: Vec<Value>,
    native_bin: Vec<u8>,
    kernels: Vec<(u32, bool)>,
}

impl Case {
    fn args(&self) -> &Vec<Value> {
        self.doc["args"].as_array().unwrap()
    }

    fn last_task(&self) -> String {
        self.native
            .iter()
            .map(|r| r["task_id"].as_str().unwrap().to_string())
            .max()
            .unwrap()
    }

    fn what(&self) -> String {
        format!("{} level {}", self.workload, self.level)
    }
}

/// The viewer: record list, payload file, the keys of its listing and of
/// its txt export (file name `task_<id>_<before|after>_<in|out|inout><arg>.txt`).
fn viewer(c: &Case) {
    let what = c.what();
    let recs = c
        .doc
        .get("args")
        .or_else(|| c.doc.get("tensors"))
        .expect("args or tensors");
    assert!(
        !recs.as_array().unwrap().is_empty(),
        "{what}: 0 records: the viewer exits 1"
    );
    let bin = match c.doc.get("bin_file") {
        None => Some("args.bin".to_string()),
        Some(Value::Null) => None,
        Some(v) => Some(v.as_str().unwrap().to_string()),
    };
    if let Some(b) = &bin {
        assert!(c.dir.join(b).is_file(), "{what}: bin_file {b} missing");
    }
    let mut names = BTreeSet::new();
    for r in c.args() {
        for k in [
            "task_id",
            "stage",
            "role",
            "arg_index",
            "dtype",
            "shape",
            "bin_size",
        ] {
            assert!(r.get(k).is_some(), "{what}: the listing needs {k}: {r}");
        }
        for k in ["is_contiguous", "strides", "start_offset"] {
            assert!(r.get(k).is_some(), "{what}: the export needs {k}: {r}");
        }
        if u(&r["bin_size"]) > 0 {
            assert!(r["bin_offset"].is_u64() && bin.is_some(), "{what}: {r}");
        }
        let stage = match r["stage"].as_str().unwrap() {
            "before_dispatch" => "before",
            "after_completion" => "after",
            s => panic!("{what}: stage {s} has no export name"),
        };
        let role = match r["role"].as_str().unwrap() {
            "input" => "in",
            "output" => "out",
            "inout" => "inout",
            s => panic!("{what}: role {s} has no export name"),
        };
        let name = format!(
            "task_{}_{stage}_{role}{}.txt",
            r["task_id"].as_str().unwrap(),
            r["arg_index"]
        );
        assert!(
            names.insert(name.clone()),
            "{what}: two records export to {name}"
        );
    }
}

/// The keys of the object written in `text`, in the order written.
fn key_order(text: &str, obj: &Map<String, Value>) -> Vec<String> {
    let mut at: Vec<(usize, String)> = obj
        .keys()
        .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k.clone()))
        .collect();
    at.sort();
    at.into_iter().map(|(_, k)| k).collect()
}

/// The minimal writer set, in the upstream order.
fn writer_set(c: &Case) {
    let what = c.what();
    let (head, records) = c.text.split_once("\"args\": [").expect("the record list");
    let head = format!("{head}\"args\":");
    let order = key_order(&head, &c.doc);
    let order: Vec<&str> = order.iter().map(String::as_str).collect();
    let upstream = [
        "run_dir",
        "bin_format",
        "dump_args_level",
        "total_args",
        "before_dispatch",
        "after_completion",
        "input_args",
        "output_args",
        "inout_args",
        "truncated_args",
        "dropped_records",
        "dropped_overwrite",
        "bin_file",
        "args",
    ];
    let ours: Vec<&str> = order
        .iter()
        .copied()
        .filter(|k| upstream.contains(k))
        .collect();
    assert_eq!(
        ours, upstream,
        "{what}: header fields in the upstream order"
    );
    assert_eq!(
        c.doc["bin_format"],
        serde_json::json!({"type": "logical_contiguous", "byte_order": "little_endian"})
    );
    let fields = [
        "task_id",
        "func_id",
        "arg_index",
        "role",
        "stage",
        "kind",
        "dtype",
        "value",
        "is_contiguous",
        "shape",
        "strides",
        "start_offset",
        "numel",
        "bin_offset",
        "bin_size",
        "truncated",
        "overwritten",
    ];
    let lines: Vec<&str> = records
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .collect();
    assert_eq!(lines.len(), c.args().len(), "{what}: one record per line");
    for (line, r) in lines.iter().zip(c.args()) {
        let keys = key_order(line.trim_end_matches(','), r.as_object().unwrap());
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let have: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| fields.contains(k))
            .collect();
        let want: Vec<&str> = fields
            .iter()
            .copied()
            .filter(|k| *k != "value" || r["kind"] == "scalar")
            .collect();
        assert_eq!(
            have, want,
            "{what}: record fields in the upstream order: {r}"
        );
        assert!(
            keys.iter()
                .all(|k| fields.contains(k) || ["bits", "addr", "hang_snapshot"].contains(k)),
            "{what}: an unexpected field in {r}"
        );
    }
}

/// Row-major strides of `shape` (elements).
fn row_major(shape: &[u64]) -> Vec<u64> {
    let mut st = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * shape[i + 1];
    }
    st
}

/// The header's counters, the record order and each record's own facts
/// (UPSTREAM_FORMATS A), derived from the records as written: the
/// counters are what the records say (scalars counted as inputs, no
/// counter of their own); records sorted by (task_id, stage
/// before<after, arg_index, role input<output<inout); scalars `[]`
/// shape and strides, numel 1, no payload, `input` at `before_dispatch`,
/// slots after the task's tensors; a tensor's numel is its shape's
/// product, `is_contiguous` says whether its strides are row-major, and
/// its payload is the whole view or (level 3, unmarked) nothing.
fn header_counts_order_and_records(c: &Case) {
    let what = c.what();
    let args = c.args();
    let count = |f: &dyn Fn(&Value) -> bool| args.iter().filter(|r| f(r)).count() as u64;
    let counters = [
        ("total_args", args.len() as u64),
        (
            "before_dispatch",
            count(&|r| r["stage"] == "before_dispatch"),
        ),
        (
            "after_completion",
            count(&|r| r["stage"] == "after_completion"),
        ),
        ("input_args", count(&|r| r["role"] == "input")),
        ("output_args", count(&|r| r["role"] == "output")),
        ("inout_args", count(&|r| r["role"] == "inout")),
        ("truncated_args", count(&|r| r["truncated"] == true)),
    ];
    for (k, n) in counters {
        assert_eq!(u(&c.doc[k]), n, "{what}: header {k}");
    }
    let scalars = count(&|r| r["kind"] == "scalar");
    assert!(
        scalars > 0 || c.level == 1 || c.workload == "mixed_example",
        "{what}: no scalar to check"
    );
    let tensor_inputs = count(&|r| r["kind"] == "tensor" && r["role"] == "input");
    assert_eq!(
        u(&c.doc["input_args"]),
        tensor_inputs + scalars,
        "{what}: scalars count as inputs"
    );
    assert!(c.doc.get("scalar_args").is_none(), "{what}: ours only");
    for k in ["dropped_records", "dropped_overwrite"] {
        assert_eq!(u(&c.doc[k]), 0, "{what}: {k} (block policy)");
    }
    // Order.
    let rank = |r: &Value| {
        let stage = match r["stage"].as_str().unwrap() {
            "before_dispatch" => 0,
            "after_completion" => 1,
            s => panic!("{what}: stage {s}"),
        };
        let role = match r["role"].as_str().unwrap() {
            "input" => 0,
            "output" => 1,
            "inout" => 2,
            s => panic!("{what}: role {s}"),
        };
        let task = r["task_id"].as_str().unwrap();
        assert!(
            task.len() == 18 && task.starts_with("0x"),
            "{what}: task id {task} is not 0x%016x"
        );
        let id = u64::from_str_radix(&task[2..], 16).unwrap();
        (id, stage, u(&r["arg_index"]), role)
    };
    let keys: Vec<_> = args.iter().map(rank).collect();
    for (w, r) in keys.windows(2).zip(args.iter().skip(1)) {
        assert!(w[0] < w[1], "{what}: out of order at {r}");
    }
    // Records.
    let mut tensors_of: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for r in args.iter().filter(|r| r["kind"] == "tensor") {
        tensors_of
            .entry(r["task_id"].as_str().unwrap())
            .or_default()
            .insert(u(&r["arg_index"]));
    }
    for r in args {
        if r["kind"] == "scalar" {
            assert_eq!(
                (
                    &r["role"],
                    &r["stage"],
                    &r["shape"],
                    &r["strides"],
                    u(&r["numel"]),
                    u(&r["start_offset"]),
                    u(&r["bin_size"]),
                ),
                (
                    &Value::from("input"),
                    &Value::from("before_dispatch"),
                    &serde_json::json!([]),
                    &serde_json::json!([]),
                    1,
                    0,
                    0
                ),
                "{what}: scalar {r}"
            );
            // Slot `tensor_count + j`: after every tensor slot of its task
            // (at level 1 only the marked ones are there to compare).
            let tensors = tensors_of
                .get(r["task_id"].as_str().unwrap())
                .map_or(0, BTreeSet::len) as u64;
            assert!(u(&r["arg_index"]) >= tensors, "{what}: scalar slot {r}");
            continue;
        }
        assert_eq!(r["kind"], "tensor", "{what}: {r}");
        let (shape, strides) = (list(&r["shape"]), list(&r["strides"]));
        assert!(
            (1..=5).contains(&shape.len()) && strides.len() == shape.len(),
            "{what}: at most 5 dims: {r}"
        );
        let numel: u64 = shape.iter().product();
        assert_eq!(u(&r["numel"]), numel, "{what}: numel {r}");
        assert_eq!(
            r["is_contiguous"],
            strides == row_major(&shape),
            "{what}: is_contiguous {r}"
        );
        let full = numel * elem(r["dtype"].as_str().unwrap()) as u64;
        let size = u(&r["bin_size"]);
        assert!(
            size == full || (c.level == 3 && size == 0),
            "{what}: bin_size {size} of a {full}-byte view: {r}"
        );
    }
    if c.level >= 2 {
        // Every slot of a task, tensors first: scalars are exactly the
        // slots `tensor_count + j`.
        let mut slots: BTreeMap<&str, (BTreeSet<u64>, BTreeSet<u64>)> = BTreeMap::new();
        for r in args {
            let e = slots.entry(r["task_id"].as_str().unwrap()).or_default();
            let set = if r["kind"] == "scalar" {
                &mut e.1
            } else {
                &mut e.0
            };
            set.insert(u(&r["arg_index"]));
        }
        for (task, (t, s)) in slots {
            let n = t.len() as u64;
            assert_eq!(t, (0..n).collect(), "{what}: task {task} tensor slots");
            assert_eq!(
                s,
                (n..n + s.len() as u64).collect(),
                "{what}: task {task} scalar slots"
            );
        }
    }
}

/// The ST validator, adapted (see the module doc).
fn validator(c: &Case) {
    let what = c.what();
    assert_eq!(u(&c.doc["dump_args_level"]), u64::from(c.level), "{what}");
    assert!(c.doc.get("payload_filter").is_none());
    let files: BTreeSet<String> = std::fs::read_dir(&c.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let want: BTreeSet<String> = ["args_dump.json", "args.bin"].map(String::from).into();
    assert_eq!(files, want, "{what}: no other file in args_dump/");
    let bin = c.dir.join(
        c.doc["bin_file"]
            .as_str()
            .expect("a payload file (marked args)"),
    );
    assert!(
        std::fs::metadata(bin).unwrap().len() > 0,
        "{what}: an empty payload file"
    );
    let declared: BTreeSet<u64> = c.kernels.iter().map(|&(f, _)| u64::from(f)).collect();
    let mut by_task: HashMap<&str, &Value> = HashMap::new();
    let mut covered = BTreeSet::new();
    for r in c.args() {
        assert!(r["kind"].is_string(), "{what}: {r}");
        if r["kind"] == "scalar" {
            assert_eq!(
                (r["stage"].as_str(), u(&r["bin_size"])),
                (Some("before_dispatch"), 0),
                "{what}: {r}"
            );
            assert!(r.get("value").is_some(), "{what}: {r}");
        }
        let f = &r["func_id"];
        let ids = list(f);
        assert!(
            !ids.is_empty() && ids.iter().all(|i| declared.contains(i)),
            "{what}: func_id {f}"
        );
        assert!(
            ids.len() == 1 || c.workload == "mixed_example",
            "{what}: one-element func_id {f}"
        );
        covered.extend(ids);
        let first = by_task.entry(r["task_id"].as_str().unwrap()).or_insert(f);
        assert_eq!(*first, f, "{what}: one func_id per task");
    }
    let last = c.last_task();
    let marked_native: BTreeSet<Key> = c
        .native
        .iter()
        .filter(|r| marked(c.workload, r, &last))
        .map(key)
        .collect();
    let native_funcs: BTreeSet<u64> = c
        .native
        .iter()
        .filter(|r| c.level != 1 || marked(c.workload, r, &last))
        .flat_map(|r| list(&r["func_id"]))
        .collect();
    assert_eq!(
        covered, native_funcs,
        "{what}: the func ids cover the kernels that ran"
    );
    let got: BTreeSet<Key> = c.args().iter().map(key).collect();
    match c.level {
        1 => assert_eq!(got, marked_native, "{what}: exactly the marked slots"),
        _ => {
            let all: BTreeSet<Key> = c.native.iter().map(key).collect();
            assert_eq!(got, all, "{what}: every record of the run");
            let tasks: BTreeSet<&str> = c
                .args()
                .iter()
                .map(|r| r["task_id"].as_str().unwrap())
                .collect();
            assert!(tasks.len() >= 5 || c.workload != "vector_example", "{what}");
        }
    }
    if c.level == 3 {
        let with_payload: BTreeSet<Key> = c
            .args()
            .iter()
            .filter(|r| u(&r["bin_size"]) > 0)
            .map(key)
            .collect();
        assert_eq!(
            with_payload, marked_native,
            "{what}: payload exactly for marked slots"
        );
    }
    if c.level == 1 && c.workload == "vector_example" {
        assert_eq!(c.args().len(), 1);
    }
}

/// `core_swimlane` D.1–D.7 on every task; returns the tensors restored.
fn core_swimlane(c: &Case) -> (usize, usize) {
    let what = c.what();
    // D.1: `args`, no fallback.
    let args = c
        .doc
        .get("args")
        .and_then(Value::as_array)
        .expect("D.1 args");
    let mut tasks: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for r in args {
        tasks
            .entry(r["task_id"].as_str().unwrap())
            .or_default()
            .push(r);
    }
    let native: HashMap<Key, &Value> = c.native.iter().map(|r| (key(r), r)).collect();
    let (mut restored, mut by_writer) = (0, 0);
    for (task, recs) in &tasks {
        // D.2: the lanes in the stored order: AIC first, then AIV members.
        let ids = list(&recs[0]["func_id"]);
        let aic: Vec<bool> = ids
            .iter()
            .map(|&f| c.kernels.iter().any(|&(k, a)| u64::from(k) == f && a))
            .collect();
        assert!(
            aic.iter().skip(1).all(|a| !a),
            "{what}: task {task}: AIC first in {ids:?}"
        );
        // D.3: keyed by arg_index, before_dispatch winning; unique slots.
        let mut slots: BTreeMap<u64, &Value> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for r in recs {
            assert!(
                seen.insert(key(r)),
                "{what}: task {task}: a slot twice at one stage"
            );
            let e = slots.entry(u(&r["arg_index"])).or_insert(r);
            if r["stage"] == "before_dispatch" {
                *e = r;
            }
        }
        for (&arg, r) in &slots {
            if r["kind"] == "scalar" {
                // D.5: `int(value)` must work: a number, never null or "$Inf".
                assert!(
                    r["value"].is_number(),
                    "{what}: task {task} slot {arg}: {r}"
                );
                continue;
            }
            // D.4: a shape, a dtype it can describe, a buffer size.
            let shape = list(&r["shape"]);
            assert!(!shape.is_empty() && shape.len() <= 5, "{what}: {r}");
            let _ = elem(r["dtype"].as_str().unwrap());
            if r["stage"] == "before_dispatch" && u(&r["bin_size"]) > 0 {
                by_writer += usize::from(restore(c, r, &native));
                restored += 1;
            }
        }
    }
    (restored, by_writer)
}

/// D.7: scatter a `before_dispatch` payload through its strides into a
/// zeroed buffer of `(start_offset + extent) × elem` bytes, as
/// `--restore-arg` does; the view read back must be our native dump's
/// bytes, and where another task's record covers the same buffer whole,
/// the restored elements must be its bytes at the same offsets (true when
/// there was such a record).
fn restore(c: &Case, r: &Value, native: &HashMap<Key, &Value>) -> bool {
    let what = c.what();
    let es = elem(r["dtype"].as_str().unwrap());
    let (shape, strides, off) = (
        list(&r["shape"]),
        list(&r["strides"]),
        u(&r["start_offset"]),
    );
    let numel: u64 = shape.iter().product();
    assert!(
        r["truncated"] == false && r["overwritten"] == false,
        "{what}: {r}"
    );
    assert_eq!(
        u(&r["bin_size"]),
        numel * es as u64,
        "{what}: bin_size = numel × elem: {r}"
    );
    let extent = 1 + shape
        .iter()
        .zip(&strides)
        .map(|(s, st)| (s - 1) * st)
        .sum::<u64>();
    let mut buf = vec![0u8; ((off + extent) as usize) * es];
    let payload = &c.bin[u(&r["bin_offset"]) as usize..][..numel as usize * es];
    let offsets = element_offsets(&shape, &strides, off);
    for (i, &o) in offsets.iter().enumerate() {
        buf[o as usize * es..][..es].copy_from_slice(&payload[i * es..][..es]);
    }
    let n = native
        .get(&key(r))
        .unwrap_or_else(|| panic!("{what}: {r} not in the native dump"));
    let nb = &c.native_bin[u(&n["bin_offset"]) as usize..][..u(&n["bin_size"]) as usize];
    let gathered: Vec<u8> = offsets
        .iter()
        .flat_map(|&o| buf[o as usize * es..][..es].to_vec())
        .collect();
    assert_eq!(
        gathered, nb,
        "{what}: {r} restored differs from the native dump"
    );
    // The latest earlier task that wrote the whole buffer (same address, a
    // contiguous view from 0): the restored elements are its bytes.
    let whole = c
        .args()
        .iter()
        .filter(|w| {
            w["addr"] == r["addr"]
                && w["stage"] == "after_completion"
                && w["task_id"].as_str() < r["task_id"].as_str()
                && w["dtype"] == r["dtype"]
                && w["start_offset"] == 0
                && w["is_contiguous"] == true
                && u(&w["bin_size"]) >= buf.len() as u64
        })
        .max_by_key(|w| w["task_id"].as_str().unwrap().to_string());
    let Some(w) = whole else { return false };
    let wb = &c.bin[u(&w["bin_offset"]) as usize..][..u(&w["bin_size"]) as usize];
    for &o in &offsets {
        let at = o as usize * es;
        assert_eq!(
            &buf[at..at + es],
            &wb[at..at + es],
            "{what}: {r} vs its buffer's writer {w}"
        );
    }
    true
}

/// Element offsets of a view, row-major order.
fn element_offsets(shape: &[u64], strides: &[u64], start: u64) -> Vec<u64> {
    let mut out = vec![start];
    for (&s, &st) in shape.iter().zip(strides) {
        out = out
            .iter()
            .flat_map(|&b| (0..s).map(move |i| b + i * st))
            .collect();
    }
    out
}

fn read_json(p: &Path) -> Map<String, Value> {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

fn run(cwd: &Path, w: &str, case: &str, out: &str, flags: &[&str]) {
    let mut a = vec!["run", w, "--case", case, "--seed", "3", "--output", out];
    a.extend_from_slice(flags);
    let o = simpler(cwd, &a);
    assert_eq!(o.code, 0, "{a:?}: {}\n{}", o.stdout, o.stderr);
}

#[test]
fn upstream_layout_runs_meet_the_upstream_tools_requirements() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let mut restored = BTreeMap::new();
    for (w, case) in [
        ("vector_example", "Default"),
        ("mixed_example", "Default"),
        ("paged_attention", "CaseSmall1"),
    ] {
        let nat = format!("outputs/{w}_native");
        run(cwd, w, case, &nat, &["--dump-tensor", "2"]);
        let ndoc = read_json(&cwd.join(&nat).join("tensor_dump/tensor_dump.json"));
        let native_bin = std::fs::read(cwd.join(&nat).join("tensor_dump/tensor_dump.bin")).unwrap();
        let kernels: Vec<(u32, bool)> = simpler_workloads::find(w)
            .unwrap()
            .kernels()
            .iter()
            .map(|k| {
                (
                    k.func_id,
                    k.core_type == simpler_core::topology::CoreType::Aic,
                )
            })
            .collect();
        for level in [1u8, 2, 3] {
            let out = format!("outputs/{w}_l{level}");
            run(
                cwd,
                w,
                case,
                &out,
                &[
                    "--dump-all",
                    "--dump-tensor",
                    &level.to_string(),
                    "--dump-layout",
                    "upstream",
                ],
            );
            let dir = cwd.join(&out).join("args_dump");
            let text = std::fs::read_to_string(dir.join("args_dump.json")).unwrap();
            let doc = serde_json::from_str(&text).unwrap();
            let bin = std::fs::read(dir.join("args.bin")).unwrap();
            // Beside the folder, not in it.
            for f in ["orch_args_dump.json", "kernel_args_dump.json"] {
                assert!(cwd.join(&out).join(f).is_file(), "{out}/{f}");
            }
            let c = Case {
                workload: w,
                level,
                dir,
                text,
                doc,
                bin,
                native: ndoc["tensors"].as_array().unwrap().clone(),
                native_bin: native_bin.clone(),
                kernels: kernels.clone(),
            };
            viewer(&c);
            writer_set(&c);
            header_counts_order_and_records(&c);
            validator(&c);
            let want = c
                .native
                .iter()
                .filter(|r| r["stage"] == "before_dispatch" && r["kind"] == "tensor")
                .filter(|r| level == 2 || marked(w, r, &c.last_task()))
                .count();
            let (n, by_writer) = core_swimlane(&c);
            assert_eq!(
                n,
                want,
                "{}: every before_dispatch payload restored",
                c.what()
            );
            restored.insert(c.what(), (n, by_writer));
        }
    }
    // The strided SF views (of QK's sij) checked against QK's bytes, and
    // every other input that some earlier task wrote whole.
    eprintln!("restored (payloads, checked against their buffer's writer): {restored:?}");
    let (n, by_writer) = restored["paged_attention level 2"];
    assert!(n > 0 && by_writer >= 6, "{restored:?}");
    // The viewer's auto-detection: the newest outputs/*/args_dump.
    let newest = std::fs::read_dir(cwd.join("outputs"))
        .unwrap()
        .map(|e| e.unwrap().path().join("args_dump"))
        .filter(|p| p.is_dir())
        .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
        .unwrap();
    assert!(
        newest.ends_with("paged_attention_l3/args_dump"),
        "{}",
        newest.display()
    );
    // Ours finds the same one (native folders are older).
    let o = simpler(cwd, &["dump", "view", "--limit", "1"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("paged_attention_l3/args_dump/args_dump.json"),
        "{}",
        o.stdout
    );
}

/// Adds 1.0 to the `[1, 16]` f32 inout in slot 0.
fn add_one(core: &mut simpler_isa::Core, args: &simpler_isa::Args) -> simpler_isa::KResult<()> {
    let t = args.tensor(0)?;
    let tile = core.alloc_tile(
        simpler_isa::BufKind::Ub,
        1,
        16,
        simpler_core::DType::Float32,
    )?;
    core.tload(tile, &t)?;
    core.tadds(tile, tile, 1.0)?;
    core.tstore(&t, tile)
}

/// Which files an upstream-layout dump leaves in `<run>/args_dump/`
/// (UPSTREAM_FORMATS A "Files"): no `args_dump.json` without a record;
/// `args.bin` always at levels 1 and 2 (even with no payload byte); at
/// level 3 `args.bin` only when a byte was written, else `bin_file: null`.
/// One task (tensor slot 0, a scalar slot 1), marked as `marks` says.
#[test]
fn upstream_layout_files_exist_as_the_upstream_runtime_writes_them() {
    use simpler_dump::{DumpConfig, DumpLayout, DumpLevel};
    use simpler_runtime::{KernelDef, Kernels, OrchArgs, TaskArgs};
    #[derive(Clone, Copy, Debug)]
    enum Marks {
        /// No task at all.
        NoTask,
        None,
        Scalar,
        Tensor,
    }
    let run = |level: DumpLevel, marks: Marks| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run").join("args_dump");
        let rt = crate::common::runtime(
            DumpConfig {
                level: Some(level),
                layout: DumpLayout::Upstream,
                ..DumpConfig::new(&dir)
            },
            vec![KernelDef::new(
                5,
                "add_one",
                simpler_core::topology::CoreType::Aiv,
                add_one,
            )],
        );
        let t = rt
            .upload_pod(&[0f32; 16], &[1, 16], simpler_core::DType::Float32)
            .unwrap();
        rt.run(&OrchArgs::new().tensor(t), |o, args| {
            let t = args.tensor_at(0)?;
            let a = match marks {
                Marks::NoTask => return Ok(()),
                Marks::None => TaskArgs::new().inout(&t).scalar_f32(0.5),
                Marks::Scalar => TaskArgs::new().inout(&t).scalar_f32(0.5).dump(),
                Marks::Tensor => TaskArgs::new().inout(&t).dump().scalar_f32(0.5),
            };
            o.submit(Kernels::Aiv(5), a)?;
            Ok(())
        })
        .unwrap();
        let json = dir.join("args_dump.json");
        let doc: Option<Map<String, Value>> = json.is_file().then(|| read_json(&json));
        let bin = dir.join("args.bin");
        let bin_len = bin
            .is_file()
            .then(|| std::fs::metadata(&bin).unwrap().len());
        (doc, bin_len)
    };
    let what = |level: DumpLevel, marks: Marks| format!("level {} marks {marks:?}", level.number());
    for level in [DumpLevel::Marked, DumpLevel::All, DumpLevel::MetaAll] {
        for marks in [Marks::NoTask, Marks::None, Marks::Scalar, Marks::Tensor] {
            let w = what(level, marks);
            let (doc, bin_len) = run(level, marks);
            let Some(doc) = doc else {
                // No record: no manifest (and nothing else in the folder).
                let records = match (level, marks) {
                    (_, Marks::NoTask) => 0,
                    (DumpLevel::Marked, Marks::None) => 0,
                    _ => 1,
                };
                assert_eq!(records, 0, "{w}: records but no args_dump.json");
                assert_eq!(bin_len, None, "{w}: args.bin without args_dump.json");
                continue;
            };
            let args = doc["args"].as_array().unwrap();
            assert!(!args.is_empty(), "{w}: args_dump.json with 0 records");
            let payload: u64 = args.iter().map(|r| u(&r["bin_size"])).sum();
            match level {
                DumpLevel::MetaAll if payload == 0 => {
                    assert_eq!(doc["bin_file"], Value::Null, "{w}");
                    assert_eq!(bin_len, None, "{w}: args.bin with no byte");
                }
                _ => {
                    assert_eq!(doc["bin_file"], "args.bin", "{w}");
                    assert_eq!(bin_len, Some(payload), "{w}: args.bin holds the payloads");
                }
            }
            // The cases meant: a marked tensor gives a payload at levels
            // 1 and 3, a marked scalar alone none.
            let marked_tensor = matches!(marks, Marks::Tensor);
            if level != DumpLevel::All {
                assert_eq!(payload > 0, marked_tensor, "{w}");
            }
        }
    }
}
