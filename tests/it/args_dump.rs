//! Orchestrator args dump and per-dispatch kernel args dump: what
//! `args_dump.json` and `kernel_args_dump.json` say matches what the
//! orchestration passed and what every core actually read.

use std::path::Path;

use simpler_core::{
    abi::{GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT},
    topology::{locate, CoreType, Subtask},
    ChipTensor, DType, KernelError,
};
use simpler_dump::DumpConfig;
use simpler_format::{
    args_dump::ArgsDump,
    kernel_args::{Dispatch as DispatchJson, KernelArgsDump},
    scalar::ScalarValue,
    vocab::{Kind, Stage},
};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, Scalar, TaskArgs};

fn dump_config(dir: &Path, workload: &str, case: &str) -> DumpConfig {
    let mut d = DumpConfig::new(dir.join("tensor_dump"));
    d.level = None;
    d.args = true;
    d.kernel_args = true;
    d.workload = workload.into();
    d.case = case.into();
    d
}

fn read_json<T: serde::de::DeserializeOwned>(p: &Path) -> T {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// A value read back from JSON: floats come back as f64, integers as ints.
fn value_f64(v: Option<ScalarValue>) -> f64 {
    match v.expect("a value") {
        ScalarValue::F32(x) => f64::from(x),
        ScalarValue::F64(x) => x,
        ScalarValue::Int(i) => i as f64,
        ScalarValue::UInt(u) => u as f64,
    }
}

fn hex(h: &simpler_format::hex::Hex64) -> u64 {
    h.0
}

fn run_workload(name: &str, case: &str) -> (tempfile::TempDir, KernelArgsDump, ArgsDump) {
    let tmp = tempfile::tempdir().unwrap();
    let w = simpler_workloads::find(name).unwrap();
    let rt = Runtime::new(
        RuntimeConfig {
            gm_bytes: 256 << 20,
            dump: Some(dump_config(tmp.path(), name, case)),
            ..Default::default()
        },
        w.kernels(),
    )
    .unwrap();
    let out = w.run(case, 0, &rt).unwrap();
    assert!(out.golden.passed);
    let d = out.report.dump.unwrap();
    assert!(d.json_path.is_none(), "no tensor dump was asked for");
    assert!(!tmp.path().join("tensor_dump/tensor_dump.json").exists());
    let k = read_json(d.kernel_args_path.as_ref().unwrap());
    let a = read_json(d.args_path.as_ref().unwrap());
    (tmp, k, a)
}

#[test]
fn mixed_example_has_six_dispatches_on_one_cluster_per_block() {
    let (_tmp, k, _) = run_workload("mixed_example", "Default");
    assert_eq!(k.schema_version, 1);
    assert_eq!(k.total_dispatches, 6);
    assert_eq!(k.dispatches.len(), 6);
    let ids: Vec<u64> = k.dispatches.iter().map(|d| d.dispatch_id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "unique, increasing: {ids:?}"
    );
    assert_eq!(
        k.total_args,
        k.dispatches
            .iter()
            .map(|d| d.args.len() as u64)
            .sum::<u64>()
    );
    for block in 0..2u32 {
        let members: Vec<&DispatchJson> = k
            .dispatches
            .iter()
            .filter(|d| d.block_idx == block)
            .collect();
        assert_eq!(members.len(), 3, "block {block}");
        let mut clusters = vec![];
        for d in &members {
            let (cluster, sub) = locate(8, d.core_id).unwrap();
            clusters.push(cluster);
            assert_eq!(d.subtask, sub.name());
            assert_eq!(d.subtask_id, sub.id());
            assert_eq!(d.core_type, sub.core_type().name());
            assert_eq!(d.block_num, 2);
            assert_eq!(d.stage, Stage::BeforeDispatch.name());
            let want_func = match sub {
                Subtask::Aic => 0,
                Subtask::Aiv0 => 1,
                Subtask::Aiv1 => 2,
            };
            assert_eq!(d.func_id, want_func);
            let lc = &d.context[0];
            assert_eq!((lc.arg_index, lc.kind.name()), (48, "local_context"));
            assert_eq!((lc.block_idx, lc.block_num), (Some(block as i32), Some(2)));
            let gc = &d.context[1];
            assert_eq!((gc.arg_index, gc.kind.name()), (49, "global_context"));
            assert_eq!(gc.sub_block_id, Some(sub.sub_block_id()));
        }
        assert!(
            clusters.windows(2).all(|w| w[0] == w[1]),
            "block {block} on one cluster: {clusters:?}"
        );
        // Same arguments for every member (descriptor contents; the
        // descriptors themselves live in each core's own payload area).
        let strip = |d: &DispatchJson| {
            d.args
                .iter()
                .map(|a| (a.arg_index, a.addr, a.shape.clone(), a.start_offset, a.bits))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(members[0]), strip(members[1]));
        assert_eq!(strip(members[0]), strip(members[2]));
        assert_eq!(members[0].args.len(), 7, "A, B, X, Y, C, D, E");
    }
}

#[test]
fn paged_attention_small1_dispatches_follow_qk_sf_pv_up() {
    let (_tmp, k, a) = run_workload("paged_attention", "CaseSmall1");
    assert_eq!(k.total_dispatches, 12);
    // Task ids are submission order: QK, SF, PV, UP for key block 0, then 1, 2.
    let mut by_task: Vec<&DispatchJson> = k.dispatches.iter().collect();
    by_task.sort_by_key(|d| hex(&d.task_id));
    let funcs: Vec<u32> = by_task.iter().map(|d| d.func_id).collect();
    assert_eq!(
        funcs,
        [0, 1, 2, 3].repeat(3),
        "QK, SF, PV, UP per key block"
    );
    for block in by_task.chunks(4) {
        let ids: Vec<u64> = block.iter().map(|d| d.dispatch_id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "dependency order within a block: {ids:?}"
        );
    }
    for d in &k.dispatches {
        let want = if d.func_id % 2 == 0 { "aic" } else { "aiv" };
        assert_eq!(d.core_type, want, "dispatch {}", d.dispatch_id);
    }
    // SF's last slot is the f32 scale; UP ends with is_first, is_last.
    let sf = by_task[1];
    let scale = sf.args.last().unwrap();
    assert_eq!(
        (scale.arg_index, scale.kind, scale.dtype.as_str()),
        (4, Kind::Scalar, "FLOAT32")
    );
    assert_eq!(value_f64(scale.value), 0.25);
    let ups: Vec<&DispatchJson> = by_task.iter().copied().filter(|d| d.func_id == 3).collect();
    let flags = |d: &DispatchJson| {
        let n = d.args.len();
        assert_eq!(
            (d.args[n - 2].dtype.as_str(), d.args[n - 1].dtype.as_str()),
            ("INT32", "INT32")
        );
        (
            value_f64(d.args[n - 2].value),
            value_f64(d.args[n - 1].value),
        )
    };
    assert_eq!(
        flags(ups[0]),
        (1.0, 0.0),
        "is_first, is_last of key block 0"
    );
    assert_eq!(flags(ups[1]), (0.0, 0.0));
    assert_eq!(flags(ups[2]), (0.0, 1.0));
    // The orchestration's own arguments.
    assert_eq!(
        (a.workload.as_str(), a.case.as_str()),
        ("paged_attention", "CaseSmall1")
    );
    assert_eq!(a.total_args, 7);
    let kinds: Vec<(&str, Option<&str>)> = a
        .args
        .iter()
        .map(|x| (x.kind.name(), x.role.map(|r| r.name())))
        .collect();
    assert_eq!(
        kinds,
        [
            ("tensor", Some("input")),
            ("tensor", Some("input")),
            ("tensor", Some("input")),
            ("tensor", Some("input")),
            ("tensor", Some("input")),
            ("tensor", Some("output")),
            ("scalar", None)
        ]
    );
    assert_eq!(a.args[0].dtype, DType::from_name("BFLOAT16").unwrap());
    assert_eq!(a.args[0].shape.as_deref(), Some(&[1u64, 16, 16][..]));
    assert_eq!(a.args[0].nbytes, Some(512));
    assert_eq!(value_f64(a.args[6].value), 0.25);
    assert_eq!(
        a.args[6].bits.map(|b| b.to_string()).as_deref(),
        Some("0x000000003e800000")
    );
}

/// Copies what it can see of its own argument array into row `block` of
/// tensor 0 ([blocks, 1 + 32 + 32·16] u64): n tensors, each slot's content,
/// and the 128 bytes at every tensor slot's address — a GM snapshot taken
/// by the kernel itself.
fn snapshot(core: &mut Core, args: &Args) -> KResult<()> {
    let table = args.tensor(0)?;
    let n = (0..32).take_while(|&i| args.tensor(i).is_ok()).count();
    let mut row = vec![0u64; 1 + 32 + 32 * 16];
    row[0] = n as u64;
    for i in 0..n {
        let at = args.slot(i)?;
        row[1 + i] = at;
        let mut d = [0u8; 128];
        core.gm().read(at, &mut d)?;
        row[33 + 16 * i..33 + 16 * (i + 1)]
            .copy_from_slice(&bytemuck::pod_collect_to_vec::<u8, u64>(&d));
    }
    let row_bytes = row.len() as u64 * 8;
    let addr = table.addr + args.block_idx()? as u64 * row_bytes;
    core.gm().write(addr, bytemuck::cast_slice(&row))?;
    if args.slot(LOCAL_CONTEXT_SLOT)? == 0 || args.slot(GLOBAL_CONTEXT_SLOT)? == 0 {
        return Err(KernelError::msg("context slots empty"));
    }
    Ok(())
}

/// Scalars that a lossy dump would mangle: NaN with payload, −0.0, a
/// negative i32, a u64 above 2^53 (not exact in a double).
fn scalar_probe() -> Vec<Scalar> {
    vec![
        Scalar::f32(f32::from_bits(0x7fc0_1234)),
        Scalar::f32(-0.0),
        Scalar::i32(-123_456),
        Scalar::u64((1 << 53) + 1),
        Scalar::u64(u64::MAX),
    ]
}

#[test]
fn descriptors_at_desc_addr_match_the_log_and_scalars_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 2,
            gm_bytes: 64 << 20,
            dump: Some(dump_config(tmp.path(), "probe", "scalars")),
            ..Default::default()
        },
        vec![KernelDef::new(0, "snapshot", CoreType::Aiv, snapshot)],
    )
    .unwrap();
    let blocks = 3u32;
    let table = rt
        .alloc_tensor(&[blocks, 1 + 32 + 32 * 16], DType::Uint64)
        .unwrap();
    let x = rt.alloc_tensor(&[8, 8], DType::Bfloat16).unwrap();
    let probe = scalar_probe();
    let report = rt
        .run(
            &OrchArgs::new().output(table).tensor(x).scalar(probe[3]),
            |o, a| {
                let (t, x) = (a.tensor_at(0)?, a.tensor_at(1)?);
                let mut args = TaskArgs::new()
                    .output_existing(&t)
                    .input(&x.view(&[2, 1], &[3, 4])?)
                    .no_dep(&x)
                    .block_num(blocks);
                for s in scalar_probe() {
                    args = args.scalar(s);
                }
                o.submit(Kernels::Aiv(0), args)?;
                Ok(())
            },
        )
        .unwrap();
    let k: KernelArgsDump = read_json(
        report
            .dump
            .as_ref()
            .unwrap()
            .kernel_args_path
            .as_ref()
            .unwrap(),
    );
    assert_eq!(k.total_dispatches, u64::from(blocks));
    let snap: Vec<u64> = rt.download_pod(&table).unwrap();
    let row_len = 1 + 32 + 32 * 16;
    for d in &k.dispatches {
        let row = &snap[d.block_idx as usize * row_len..][..row_len];
        assert_eq!(row[0], 3, "three tensor slots");
        for (i, a) in d.args.iter().take(3).enumerate() {
            assert_eq!(a.kind, Kind::Tensor);
            assert_eq!(
                hex(a.desc_addr.as_ref().unwrap()),
                row[1 + i],
                "slot {i} content"
            );
            let bytes: Vec<u8> =
                bytemuck::cast_slice(&row[33 + 16 * i..33 + 16 * (i + 1)]).to_vec();
            let t = ChipTensor::from_bytes(&bytes).unwrap();
            assert_eq!(hex(a.addr.as_ref().unwrap()), t.addr);
            assert_eq!(a.dtype, t.dtype.name());
            assert_eq!(a.ndims, Some(t.ndims));
            assert_eq!(
                a.shape.clone().unwrap(),
                t.shape().iter().map(|&s| u64::from(s)).collect::<Vec<_>>()
            );
            assert_eq!(
                a.strides.clone().unwrap(),
                t.strides()
                    .iter()
                    .map(|&s| u64::from(s))
                    .collect::<Vec<_>>()
            );
            assert_eq!(a.start_offset, Some(t.start_offset));
            assert_eq!(a.is_contiguous, Some(t.is_contiguous));
            assert_eq!(a.size, Some(t.size));
            assert_eq!(a.manual_dep, Some(t.manual_dep));
        }
        assert_eq!(d.args[1].start_offset, Some(2 * 8 + 1), "the view's offset");
        assert_eq!(d.args[1].is_contiguous, Some(false));
        assert_eq!(d.args[2].manual_dep, Some(true), "no_dep sets manual_dep");
        // Scalars: bits exact, value exact, declared dtype.
        for (j, s) in probe.iter().enumerate() {
            let a = &d.args[3 + j];
            assert_eq!(a.arg_index as usize, 3 + j);
            assert_eq!(hex(a.bits.as_ref().unwrap()), s.bits, "scalar {j}");
            assert_eq!(a.dtype, s.dtype.name());
        }
        let v = |j: usize| d.args[3 + j].value.unwrap();
        assert!(value_f64(Some(v(0))).is_nan());
        let z = value_f64(Some(v(1)));
        assert!(z == 0.0 && z.is_sign_negative(), "-0.0 keeps its sign");
        assert_eq!(v(2), ScalarValue::Int(-123_456));
        assert_eq!(v(3), ScalarValue::UInt((1 << 53) + 1));
        assert_eq!(v(4), ScalarValue::UInt(u64::MAX));
    }
    // The raw JSON text carries the exact digits (no double rounding).
    let text = std::fs::read_to_string(report.dump.unwrap().kernel_args_path.unwrap()).unwrap();
    assert!(
        text.contains("\"value\":9007199254740993"),
        "2^53 + 1 written exactly"
    );
    assert!(text.contains("\"value\":-0.0"));
    assert!(text.contains("\"bits\":\"0x000000007fc01234\",\"value\":\"nan\""));
    let a: ArgsDump = read_json(&tmp.path().join("tensor_dump/args_dump.json"));
    assert_eq!(a.args[2].value, Some(ScalarValue::UInt((1 << 53) + 1)));
    assert_eq!(a.args[0].role, Some(simpler_core::ArgRole::Output));
}

#[test]
fn tensor_dump_is_unchanged_by_the_args_flags() {
    let run = |args: bool| {
        let tmp = tempfile::tempdir().unwrap();
        let w = simpler_workloads::find("paged_attention").unwrap();
        let mut d = dump_config(tmp.path(), "paged_attention", "CaseSmall1");
        d.level = Some(simpler_dump::DumpLevel::All);
        d.args = args;
        d.kernel_args = args;
        let rt = Runtime::new(
            RuntimeConfig {
                dump: Some(d),
                ..Default::default()
            },
            w.kernels(),
        )
        .unwrap();
        w.run("CaseSmall1", 0, &rt).unwrap();
        let mut m: serde_json::Value = read_json(&tmp.path().join("tensor_dump/tensor_dump.json"));
        let bin = std::fs::read(tmp.path().join("tensor_dump/tensor_dump.bin")).unwrap();
        // Where a payload lands in the .bin depends on thread timing, and
        // addresses on the allocator: compare each record's own bytes instead.
        for r in m["tensors"].as_array_mut().unwrap() {
            let r = r.as_object_mut().unwrap();
            let off = r.remove("bin_offset").unwrap().as_u64().unwrap() as usize;
            let len = r["bin_size"].as_u64().unwrap() as usize;
            r.remove("addr");
            r.insert(
                "payload".into(),
                serde_json::json!(bin[off..off + len].to_vec()),
            );
        }
        m
    };
    assert_eq!(run(false), run(true));
}

fn simpler(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_simpler"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cli_dump_all_then_view_dispatches() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = simpler(
        tmp.path(),
        &["run", "mixed_example", "--dump-all", "--output", "run1"],
    );
    assert_eq!(code, 0, "{out}{err}");
    for f in [
        "tensor_dump.json",
        "tensor_dump.bin",
        "args_dump.json",
        "kernel_args_dump.json",
    ] {
        assert!(tmp.path().join("run1/tensor_dump").join(f).is_file(), "{f}");
    }
    assert!(out.contains("kernel args dump: 6 dispatches"), "{out}");
    // Listing with filters (default directory: the newest run under outputs/ is
    // not used here; name the run explicitly).
    let (code, out, _) = simpler(tmp.path(), &["dump", "view", "run1", "--dispatches"]);
    assert_eq!(code, 0);
    assert!(out.contains("6 dispatches, 42 args"), "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("0x0000000000000000"))
            .count(),
        6,
        "{out}"
    );
    let (_, out, _) = simpler(
        tmp.path(),
        &["dump", "view", "run1", "--dispatches", "--func", "2"],
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(" aiv1 ")).count(),
        2,
        "{out}"
    );
    let (code, out, _) = simpler(tmp.path(), &["dump", "view", "run1", "--dispatch", "4"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("dispatch 4  task 0x0000000000000000  func_id 1  aiv0"),
        "{out}"
    );
    assert!(
        out.contains("local_context") && out.contains("block_idx 1 block_num 2"),
        "{out}"
    );
    assert!(out.contains("sub_block_id 0"), "{out}");
    let (code, _, err) = simpler(tmp.path(), &["dump", "view", "run1", "--core", "3"]);
    assert_eq!(code, 2, "--core filters dispatches only");
    assert!(
        err.contains("--core filters dispatches: use it with --dispatches"),
        "{err}"
    );
    let (code, out, _) = simpler(tmp.path(), &["dump", "view", "run1", "--dispatch", "99"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("available (func_id, dispatch_id): (0, 0) (1, 1)"),
        "{out}"
    );
    // Only --dump-args: no tensor files at all.
    let (code, _, _) = simpler(
        tmp.path(),
        &["run", "vector_example", "--dump-args", "--output", "run2"],
    );
    assert_eq!(code, 0);
    assert!(tmp.path().join("run2/tensor_dump/args_dump.json").is_file());
    assert!(!tmp
        .path()
        .join("run2/tensor_dump/tensor_dump.json")
        .exists());
    assert!(!tmp.path().join("run2/tensor_dump/tensor_dump.bin").exists());
}

#[test]
fn cli_reports_a_damaged_kernel_args_file_by_dispatch_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, _) = simpler(
        tmp.path(),
        &[
            "run",
            "mixed_example",
            "--dump-kernel-args",
            "--output",
            "r",
        ],
    );
    assert_eq!(code, 0);
    let p = tmp.path().join("r/tensor_dump/kernel_args_dump.json");
    let text = std::fs::read_to_string(&p).unwrap();
    // Drop the third dispatch's func_id.
    let third = text.match_indices("{\"dispatch_id\":2,").next().unwrap().0;
    let broken = format!(
        "{}{}",
        &text[..third],
        text[third..].replacen("\"func_id\":2,", "", 1)
    );
    std::fs::write(&p, broken).unwrap();
    let (code, _, err) = simpler(tmp.path(), &["dump", "view", "r", "--dispatches"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kernel_args_dump.json"), "{err}");
    assert!(err.contains("dispatches[2]"), "{err}");
    assert!(err.contains("missing field `func_id`"), "{err}");
    // A wrong type.
    std::fs::write(
        &p,
        text.replacen("\"block_num\":2", "\"block_num\":\"two\"", 1),
    )
    .unwrap();
    let (code, _, err) = simpler(tmp.path(), &["dump", "view", "r", "--dispatches"]);
    assert_eq!(code, 2);
    assert!(err.contains("dispatches[0].block_num"), "{err}");
}

/// A dispatch's contexts or core id that contradict it are named in plain
/// numbers (not Rust's `Some(3)` / `[(48, LocalContext)]`), and a core id
/// no chip has says so instead of "fit --clusters no value".
#[test]
fn cli_names_contradicting_contexts_and_impossible_core_ids_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "vector_example", "--dump-all", "--output", "r"];
    assert_eq!(simpler(tmp.path(), &args).0, 0);
    let p = tmp.path().join("r/tensor_dump/kernel_args_dump.json");
    let good: serde_json::Value = read_json(&p);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut j = good.clone();
        f(&mut j["dispatches"][0]);
        std::fs::write(&p, j.to_string()).unwrap();
        let (code, out, err) = simpler(tmp.path(), &["dump", "view", "r", "--dispatches"]);
        assert_eq!(code, 2, "{out}{err}");
        err
    };
    let err = edit(&|d| d["context"][0]["block_idx"] = 3.into());
    assert!(
        err.contains(
            "field context[0]: block_idx 3 / block_num 1 disagree with the dispatch's 0 / 1"
        ),
        "{err}"
    );
    let err = edit(&|d| {
        let lc = d["context"][0].clone();
        d["context"] = serde_json::json!([lc]);
    });
    assert!(
        err.contains(
            "expected slots 48 local_context and 49 global_context, found [48 local_context]"
        ),
        "{err}"
    );
    let mut j = good.clone();
    j["dispatches"][0]["core_id"] = 1_000_000.into();
    std::fs::write(&p, j.to_string()).unwrap();
    let f = j["dispatches"][0]["func_id"].to_string();
    let d = j["dispatches"][0]["dispatch_id"].to_string();
    let (code, out, err) = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "vector_example",
            "--dump-dir",
            "r",
            "--func-id",
            &f,
            "--dispatch-id",
            &d,
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("on core 1000000")
            && err.contains("no --clusters value (1 to 24 for arch a2a3) fits"),
        "{err}"
    );
    assert!(!err.contains("no value"), "{err}");
}
