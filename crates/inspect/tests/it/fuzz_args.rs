//! Property tests of the two args readers (issue 6 item 2):
//! `ArgsFile::parse` (`args_dump.json`) and `KernelArgsFile::parse`
//! (`kernel_args_dump.json`). Arbitrary bytes, every prefix of a valid file,
//! any field replaced by a value of another type (negative and huge numbers
//! included) or removed, more than 5 dims, and shapes whose element count
//! overflows: never a panic, always `Ok` or an error naming the file, and
//! the field when its type is wrong.

use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};
use simpler_inspect::args::ArgsFile;
use simpler_inspect::kernel_args::KernelArgsFile;

const ARGS_PATH: &str = "run/tensor_dump/args_dump.json";
const KARGS_PATH: &str = "run/tensor_dump/kernel_args_dump.json";

/// A valid `args_dump.json`: two tensors and a scalar.
fn args_doc() -> Value {
    json!({
        "schema_version": 1, "workload": "paged_attention", "case": "CaseSmall1",
        "total_args": 3, "dropped_args": 0,
        "args": [
            {"arg_index": 0, "kind": "tensor", "role": "input", "dtype": "BFLOAT16",
             "shape": [1, 16, 16], "strides": [256, 16, 1], "start_offset": 0,
             "addr": "0x00007fd643000000", "nbytes": 512},
            {"arg_index": 1, "kind": "tensor", "role": "output", "dtype": "FLOAT32",
             "shape": [1, 16, 16], "strides": [256, 16, 1], "start_offset": 0,
             "addr": "0x00007fd643001000", "nbytes": 1024},
            {"arg_index": 2, "kind": "scalar", "dtype": "FLOAT32", "value": 0.25,
             "bits": "0x000000003e800000"}
        ]
    })
}

/// A valid `kernel_args_dump.json`: an AIV dispatch with a tensor and a
/// scalar slot, and an AIC dispatch with two tensors.
fn kargs_doc() -> Value {
    let ctx = |b: u32| {
        json!([
            {"arg_index": 48, "kind": "local_context", "addr": "0x0000000000000030", "block_idx": 0, "block_num": 1},
            {"arg_index": 49, "kind": "global_context", "addr": "0x0000000000000038", "sub_block_id": b}
        ])
    };
    let tensor = |i: u32| {
        json!({"arg_index": i, "kind": "tensor", "desc_addr": "0x0000000000000010",
               "addr": "0x0000000000000020", "dtype": "FLOAT32", "ndims": 2, "shape": [16, 16],
               "strides": [16, 1], "start_offset": 0, "is_contiguous": true, "size": 1024,
               "owner_task_id": "0xffffffffffffffff", "version": 0, "manual_dep": false,
               "address_space": 0, "extent_elems": 256})
    };
    json!({
        "schema_version": 1, "total_dispatches": 2, "total_args": 4, "dropped_dispatches": 0,
        "dispatches": [
            {"dispatch_id": 0, "task_id": "0x0000000200000001", "func_id": 1, "subtask_id": 1,
             "subtask": "aiv0", "core_type": "aiv", "core_id": 9, "block_idx": 0, "block_num": 1,
             "stage": "before_dispatch", "args_addr": "0x0000000000000100",
             "args": [tensor(0), {"arg_index": 1, "kind": "scalar", "dtype": "FLOAT32",
                                  "bits": "0x000000003e800000", "value": 0.25}],
             "context": ctx(0)},
            {"dispatch_id": 1, "task_id": "0x0000000200000000", "func_id": 0, "subtask_id": 0,
             "subtask": "aic", "core_type": "aic", "core_id": 1, "block_idx": 0, "block_num": 1,
             "stage": "before_dispatch", "args": [tensor(0), tensor(1)], "context": ctx(0)}
        ]
    })
}

fn parse_args(text: &[u8]) -> Result<(), String> {
    ArgsFile::parse(Path::new(ARGS_PATH), text)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn parse_kargs(text: &[u8]) -> Result<(), String> {
    KernelArgsFile::parse(Path::new(KARGS_PATH), text)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Every object member of `v`, as paths.
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

fn paths(v: &Value) -> Vec<Vec<Seg>> {
    let mut out = Vec::new();
    member_paths(v, &mut Vec::new(), &mut out);
    out
}

/// The object holding the member at `path`, and the member's key.
fn parent<'v>(v: &'v mut Value, path: &[Seg]) -> (&'v mut serde_json::Map<String, Value>, String) {
    let (last, init) = path.split_last().unwrap();
    let mut cur = v;
    for s in init {
        cur = match s {
            Seg::Key(k) => &mut cur[k.as_str()],
            Seg::Index(i) => &mut cur[*i],
        };
    }
    let Seg::Key(k) = last else {
        unreachable!("member paths end in a key")
    };
    (cur.as_object_mut().unwrap(), k.clone())
}

/// JSON type of a value, numbers split by what unsigned fields accept.
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
        Just(json!(256)),
        Just(json!(0)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        Just(json!("")),
        Just(json!("0x")),
        Just(json!("0xzz")),
        Just(json!("nan")),
        Just(json!("x".repeat(5000))),
        Just(Value::Null),
        Just(json!(false)),
        Just(json!([])),
        Just(json!([-1])),
        Just(json!([u64::MAX, u64::MAX, u64::MAX])),
        Just(json!({})),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
    ]
}

/// Replace (or remove) the member at path `pick` of `doc` and parse; check
/// the outcome.
fn replaced(
    doc: Value,
    parse: fn(&[u8]) -> Result<(), String>,
    file: &str,
    pick: prop::sample::Index,
    value: &Value,
    remove: bool,
) -> Result<(), TestCaseError> {
    let mut v = doc;
    let all = paths(&v);
    let path = &all[pick.index(all.len())];
    let (obj, key) = parent(&mut v, path);
    let original = obj.get(&key).cloned().unwrap_or(Value::Null);
    // The only signed (i32) fields: a descriptor's version and the context
    // values; a negative number there has the right wire type.
    let in_context = path
        .iter()
        .any(|s| matches!(s, Seg::Key(k) if k == "context"));
    let signed = key == "version" || in_context;
    let type_change = !remove
        && !value.is_null()
        && key != "value"
        && category(value) != category(&original)
        && !(signed && category(&original) == "uint" && category(value) == "negative");
    if remove {
        obj.remove(&key);
    } else {
        obj.insert(key.clone(), value.clone());
    }
    let text = serde_json::to_vec(&v).unwrap();
    match parse(&text) {
        Ok(()) => {}
        Err(msg) => {
            prop_assert!(msg.starts_with(file), "{msg}");
            // A value of another type (not null, which optional fields
            // accept; not the polymorphic scalar `value`) names the field.
            if type_change {
                prop_assert!(msg.contains(&key), "{key}: {original} -> {value}: {msg}");
            }
        }
    }
    // Every field's wire type is narrower than "any JSON": a change of type
    // is never accepted.
    if type_change {
        prop_assert!(
            parse(&text).is_err(),
            "{key}: {original} -> {value} accepted"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn args_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Err(msg) = parse_args(&bytes) {
            prop_assert!(msg.starts_with(ARGS_PATH), "{msg}");
        }
    }

    #[test]
    fn kernel_args_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Err(msg) = parse_kargs(&bytes) {
            prop_assert!(msg.starts_with(KARGS_PATH), "{msg}");
        }
    }

    #[test]
    fn args_replaced_fields(pick in any::<prop::sample::Index>(), value in odd_value(),
                            remove in prop::bool::weighted(0.15)) {
        replaced(args_doc(), parse_args, ARGS_PATH, pick, &value, remove)?;
    }

    #[test]
    fn kernel_args_replaced_fields(pick in any::<prop::sample::Index>(), value in odd_value(),
                                   remove in prop::bool::weighted(0.15)) {
        replaced(kargs_doc(), parse_kargs, KARGS_PATH, pick, &value, remove)?;
    }

    #[test]
    fn more_than_five_dims(ndims in 6usize..=255, arg in 0usize..2) {
        let mut a = args_doc();
        a["args"][arg]["shape"] = json!(vec![1; ndims]);
        a["args"][arg]["strides"] = json!(vec![1; ndims]);
        let msg = parse_args(&serde_json::to_vec(&a).unwrap()).unwrap_err();
        prop_assert!(msg.contains(&format!("args[{arg}] (arg_index {arg}): field shape: {ndims} dimensions")), "{msg}");

        let mut k = kargs_doc();
        let slot = &mut k["dispatches"][1]["args"][arg];
        slot["ndims"] = json!(ndims);
        slot["shape"] = json!(vec![1; ndims]);
        slot["strides"] = json!(vec![1; ndims]);
        let msg = parse_kargs(&serde_json::to_vec(&k).unwrap()).unwrap_err();
        prop_assert!(msg.contains(&format!("dispatch 1 (dispatch_id 1): field args[{arg}].ndims: {ndims} is not in 1..=5")), "{msg}");
    }

    #[test]
    fn shapes_whose_product_overflows(
        dims in (2usize..=5).prop_flat_map(|n| {
            prop::collection::vec((1u64 << (64 / n + 1))..=u64::MAX, n)
        }),
        small in (3usize..=5).prop_flat_map(|n| {
            // Each fits the descriptor's u32 but the product does not fit u64.
            prop::collection::vec((1u64 << (64 / n + 1))..=u64::from(u32::MAX), n)
        }),
    ) {
        let mut a = args_doc();
        a["args"][0]["shape"] = json!(dims);
        a["args"][0]["strides"] = json!(vec![1; dims.len()]);
        let msg = parse_args(&serde_json::to_vec(&a).unwrap()).unwrap_err();
        prop_assert!(msg.contains("field shape:") && msg.contains("overflows 64 bits"), "{msg}");

        let mut k = kargs_doc();
        let slot = &mut k["dispatches"][0]["args"][0];
        slot["ndims"] = json!(small.len());
        slot["shape"] = json!(small);
        slot["strides"] = json!(vec![1; small.len()]);
        let msg = parse_kargs(&serde_json::to_vec(&k).unwrap()).unwrap_err();
        prop_assert!(msg.contains("field args[0].shape:") && msg.contains("overflows the element count"), "{msg}");
    }
}

#[test]
fn the_valid_documents_parse() {
    parse_args(&serde_json::to_vec(&args_doc()).unwrap()).unwrap();
    parse_kargs(&serde_json::to_vec(&kargs_doc()).unwrap()).unwrap();
    // Pretty and compact alike.
    parse_args(&serde_json::to_vec_pretty(&args_doc()).unwrap()).unwrap();
}

/// Every strict prefix of a valid file is a truncated-JSON error naming the
/// file.
#[test]
fn every_prefix_is_truncated_json() {
    for (doc, parse, file) in [
        (
            args_doc(),
            parse_args as fn(&[u8]) -> Result<(), String>,
            ARGS_PATH,
        ),
        (kargs_doc(), parse_kargs, KARGS_PATH),
    ] {
        let text = serde_json::to_vec_pretty(&doc).unwrap();
        for len in 0..text.len() {
            let msg = parse(&text[..len]).unwrap_err();
            assert!(
                msg.starts_with(&format!("{file}: truncated JSON: the file ends at line")),
                "prefix of {len} bytes: {msg}"
            );
        }
        parse(&text).unwrap();
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_args(deep.as_bytes())
        .unwrap_err()
        .starts_with(ARGS_PATH));
    assert!(parse_kargs(deep.as_bytes())
        .unwrap_err()
        .starts_with(KARGS_PATH));
}

#[test]
fn open_finds_the_file_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let e = ArgsFile::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("no args_dump.json at {}", tmp.path().display())),
        "{e}"
    );
    assert!(e.contains("run with --dump-args or --dump-all"), "{e}");
    let dir = tmp.path().join("tensor_dump");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("args_dump.json"),
        serde_json::to_vec(&args_doc()).unwrap(),
    )
    .unwrap();
    let f = ArgsFile::open(tmp.path()).unwrap();
    assert_eq!(f.path, dir.join("args_dump.json"));
    assert_eq!(
        f.arg(2).unwrap().bits.map(|b| b.to_string()).as_deref(),
        Some("0x000000003e800000")
    );
    assert!(f.arg(3).is_none());
}
