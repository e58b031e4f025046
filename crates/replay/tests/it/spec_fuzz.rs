//! Property tests of the replay spec reader (issue 6 item 2):
//! `ReplaySpec::parse` followed by `ReplaySpec::plan` (what
//! `ReplaySpec::load` and `--arg-spec FILE` do). Arbitrary bytes, every
//! prefix of a valid spec, any field replaced by a value of another type
//! (negative and huge numbers included) or removed, unknown fields, more
//! than 5 dims, shapes whose element count overflows and byte ranges that
//! overflow: never a panic, always `Ok` or an error naming the file, and
//! the field when its type is wrong.

use proptest::prelude::*;
use serde_json::{json, Value};
use simpler_replay::ReplaySpec;

const FILE: &str = "ws/replay_spec.json";

/// A valid AIV spec using every optional field and every data source.
fn aiv_spec() -> Value {
    json!({
        "schema_version": 1, "workload": "paged_attention", "case": "CaseSmall1",
        "arch": "a2a3", "clusters": 8, "func_id": 1, "kernel": "softmax_prepare", "core_type": "aiv",
        "dispatch": {"dispatch_id": 3, "task_id": "0x0000000200000005", "subtask": "aiv0",
                     "core_id": 12, "block_idx": 0, "block_num": 1, "sub_block_id": 0},
        "args": [
            {"arg_index": 0, "kind": "tensor", "dtype": "FLOAT32", "shape": [16, 16],
             "strides": [16, 1], "start_offset": 0, "size": 1024, "role": "input",
             "data": {"source": "dump", "file": "tensor_dump.bin", "bin_offset": 1536, "bin_size": 1024, "record": 3},
             "note": "from the dump"},
            {"arg_index": 1, "kind": "tensor", "dtype": "BFLOAT16", "shape": [16, 16], "role": "output",
             "data": {"source": "sentinel"},
             "expected": {"source": "dump", "file": "tensor_dump.bin", "bin_offset": 2560, "bin_size": 512}},
            {"arg_index": 2, "kind": "tensor", "dtype": "FLOAT32", "shape": [16], "role": "output",
             "data": {"source": "fill", "bits": "0x3f800000"},
             "expected": {"source": "file", "path": "expected_mij.bin"}},
            {"arg_index": 3, "kind": "tensor", "dtype": "FLOAT32", "shape": [16], "role": "output",
             "data": {"source": "zeros"}},
            {"arg_index": 4, "kind": "scalar", "dtype": "FLOAT32", "bits": "0x000000003e800000", "value": 0.25}
        ],
        "source": {"kernel_args_dump": "run/tensor_dump/kernel_args_dump.json",
                   "tensor_dump": "run/tensor_dump/tensor_dump.json"},
        "notes": ["rebuilt from a dump"]
    })
}

/// A valid MIX spec: the whole cluster, one member selected.
fn mix_spec() -> Value {
    let member = |func: u32, kernel: &str, ty: &str, sub: &str, core: u32| {
        json!({"func_id": func, "kernel": kernel, "core_type": ty,
               "dispatch": {"subtask": sub, "core_id": core, "block_idx": 1, "block_num": 2}})
    };
    json!({
        "schema_version": 1, "workload": "mixed_example", "case": "default", "clusters": 2,
        "func_id": 1, "kernel": "add", "core_type": "aiv",
        "dispatch": {"subtask": "aiv0", "core_id": 2, "block_idx": 1, "block_num": 2},
        "members": [member(0, "matmul", "aic", "aic", 0), member(1, "add", "aiv", "aiv0", 2),
                    member(2, "mul", "aiv", "aiv1", 3)],
        "args": [
            {"arg_index": 0, "kind": "tensor", "dtype": "FLOAT32", "shape": [128, 128], "role": "input"},
            {"arg_index": 1, "kind": "scalar", "dtype": "INT32", "value": -3}
        ]
    })
}

/// Parse and plan, as `ReplaySpec::load` does.
fn check(text: &[u8]) -> Result<(), String> {
    ReplaySpec::parse(FILE, text)
        .and_then(|s| s.plan(FILE).map(drop))
        .map_err(|e| e.to_string())
}

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

fn member_paths(v: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(Seg::Key(k.clone()));
                out.push(prefix.clone());
                member_paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                member_paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// Every object member (`paths`) and every object (`objects`) of `v`.
fn paths(v: &Value) -> Vec<Vec<Seg>> {
    let mut out = Vec::new();
    member_paths(v, &mut Vec::new(), &mut out);
    out
}

fn at<'v>(v: &'v mut Value, path: &[Seg]) -> &'v mut Value {
    let mut cur = v;
    for s in path {
        cur = match s {
            Seg::Key(k) => &mut cur[k.as_str()],
            Seg::Index(i) => &mut cur[*i],
        };
    }
    cur
}

fn category(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_u64() => "uint",
        Value::Number(n) if n.is_i64() => "negative",
        Value::Number(_) => "float",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(-1)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(1u64 << 32)),
        Just(json!(0)),
        Just(json!(49)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        Just(json!("")),
        Just(json!("0x")),
        Just(json!("nan")),
        Just(json!("x".repeat(5000))),
        Just(Value::Null),
        Just(json!(true)),
        Just(json!([])),
        Just(json!([-1])),
        Just(json!([u64::MAX, u64::MAX])),
        Just(json!({})),
        Just(json!({"source": "dump"})),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
    ]
}

fn doc(mix: bool) -> Value {
    if mix {
        mix_spec()
    } else {
        aiv_spec()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..800)) {
        if let Err(msg) = check(&bytes) {
            prop_assert!(msg.starts_with(FILE), "{msg}");
        }
    }

    /// A member replaced by another type, a negative or a huge number, or
    /// removed: no panic; an error names the file, and a type change is
    /// refused naming the field (or, inside a `data`/`expected` source,
    /// whose fields serde reads through its `source` tag, that object).
    #[test]
    fn replaced_fields(mix in any::<bool>(), pick in any::<prop::sample::Index>(),
                       value in odd_value(), remove in prop::bool::weighted(0.15)) {
        let mut v = doc(mix);
        let all = paths(&v);
        let path = all[pick.index(all.len())].clone();
        let (last, init) = path.split_last().unwrap();
        let Seg::Key(key) = last else { unreachable!() };
        let obj = at(&mut v, init).as_object_mut().unwrap();
        let original = obj.get(key).cloned().unwrap();
        if remove {
            obj.remove(key);
        } else {
            obj.insert(key.clone(), value.clone());
        }
        // Signed fields: sub_block_id (i32). Polymorphic: `value` (a number
        // or "nan"/"inf"/"-inf"). Optional fields accept null.
        let signed = key == "sub_block_id";
        // serde also reads a struct from a list of its fields in order, so
        // `[]` is a valid `source` (all of its fields are optional).
        let seq_struct = key == "source" && value == json!([]);
        let type_change = !remove
            && !value.is_null()
            && key != "value"
            && !seq_struct
            && category(&value) != category(&original)
            && !(signed && category(&original) == "uint" && category(&value) == "negative");
        let in_source = init.iter().any(|s| matches!(s, Seg::Key(k) if k == "data" || k == "expected"));
        match check(&serde_json::to_vec(&v).unwrap()) {
            Ok(()) => prop_assert!(!type_change, "{key}: {original} -> {value} accepted"),
            Err(msg) => {
                prop_assert!(msg.starts_with(FILE), "{msg}");
                if type_change {
                    let named = msg.contains(key.as_str())
                        || (in_source && (msg.contains(".data") || msg.contains(".expected")));
                    prop_assert!(named, "{key}: {original} -> {value}: {msg}");
                }
            }
        }
    }

    /// An unknown field in any object (a typo) is refused and named.
    #[test]
    fn unknown_fields_are_refused(mix in any::<bool>(), pick in any::<prop::sample::Index>()) {
        let base = doc(mix);
        // The root and every member that is an object, except the unit
        // sources (tested below).
        let mut objects = vec![Vec::new()];
        objects.extend(paths(&base).into_iter().filter(|p| {
            let mut b = base.clone();
            let t = at(&mut b, p);
            t.is_object() && !matches!(t["source"].as_str(), Some("zeros" | "sentinel"))
        }));
        let path = &objects[pick.index(objects.len())];
        let mut v = base;
        at(&mut v, path)["bin_ofset"] = json!(1);
        let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        prop_assert!(msg.starts_with(FILE) && msg.contains("bin_ofset"), "{msg}");
    }

    #[test]
    fn more_than_five_dims(ndims in 6usize..=255, arg in 0usize..4) {
        let mut v = aiv_spec();
        let a = &mut v["args"][arg];
        a["shape"] = json!(vec![1; ndims]);
        a.as_object_mut().unwrap().remove("strides");
        let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        prop_assert!(msg.contains(&format!("field args[{arg}].shape: {ndims} dimensions")), "{msg}");
    }

    /// Dims that fit the descriptor's u32 but whose product overflows u64;
    /// dims beyond u32; offsets and strides whose byte range overflows.
    #[test]
    fn overflowing_shapes_and_ranges(
        dims in (3usize..=5).prop_flat_map(|n| {
            prop::collection::vec((1u64 << (64 / n + 1))..=u64::from(u32::MAX), n)
        }),
        wide in (1u64 << 32)..=u64::MAX,
        offset in (u64::MAX / 4)..=u64::MAX,
    ) {
        let mut v = aiv_spec();
        v["args"][3]["shape"] = json!(dims);
        let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        prop_assert!(msg.contains("field args[3].shape:") && msg.contains("overflows"), "{msg}");

        let mut v = aiv_spec();
        v["args"][3]["shape"] = json!([wide]);
        let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        prop_assert!(msg.contains("field args[3].shape:") && msg.contains("does not fit the descriptor's u32"), "{msg}");

        let mut v = aiv_spec();
        v["args"][3]["start_offset"] = json!(offset);
        let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        prop_assert!(msg.contains("field args[3].start_offset: the view's byte range overflows 64 bits"), "{msg}");
    }
}

#[test]
fn the_valid_specs_plan() {
    check(&serde_json::to_vec(&aiv_spec()).unwrap()).unwrap();
    check(&serde_json::to_vec(&mix_spec()).unwrap()).unwrap();
}

#[test]
fn every_prefix_is_truncated_json() {
    for spec in [aiv_spec(), mix_spec()] {
        let text = serde_json::to_vec_pretty(&spec).unwrap();
        for len in 0..text.len() {
            let msg = check(&text[..len]).unwrap_err();
            assert!(
                msg.starts_with(&format!("{FILE}: truncated JSON: the file ends at line")),
                "prefix of {len} bytes: {msg}"
            );
        }
        check(&text).unwrap();
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(check(deep.as_bytes()).unwrap_err().starts_with(FILE));
    let mut v = aiv_spec();
    let mut nested = json!([]);
    for _ in 0..100 {
        nested = json!([nested]);
    }
    v["args"][0]["shape"] = nested;
    let msg = check(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(msg.contains("args[0].shape"), "{msg}");
}

/// `{"source": "zeros", "value": 1.0}` (a typo for `fill`) must be refused,
/// not silently replayed as zeros.
#[test]
fn unknown_fields_in_unit_sources_are_refused() {
    for source in ["zeros", "sentinel"] {
        let mut v = aiv_spec();
        v["args"][3]["data"] = json!({"source": source, "value": 1.0});
        let r = check(&serde_json::to_vec(&v).unwrap());
        assert!(r.is_err(), "{source} with a stray `value` was accepted");
    }
}
