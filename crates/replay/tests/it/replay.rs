//! Argument rebuild, replay and verification against real runs of the
//! bundled workloads: every kernel of paged_attention CaseSmall1 and a MIX
//! block of mixed_example replay bit-exact; verification fails when it
//! should; dumps without payload lead to zero fill and "not verifiable".

use std::path::{Path, PathBuf};

use simpler_core::TaskId;
use simpler_dump::{DumpConfig, DumpLevel};
use simpler_inspect::{kernel_args::KernelArgsFile, Dump, Record, RecordKind, Stage};
use simpler_replay::{
    rebuild::{rebuild, select_dispatch, RebuildOptions},
    replay::{execute, Execution},
    replay_into,
    spec::{DataSource, Plan, ReplaySpec, SENTINEL_BYTE},
    verify::{verify, Status, Verification},
    ReplayError, Workspace, WorkspaceTarget,
};
use simpler_runtime::{KernelDef, Runtime, RuntimeConfig};
use tempfile::TempDir;

const CLUSTERS: u32 = 8;

/// A run of `workload`/`case` with the kernel args dump and the tensor dump
/// at `level` (None: kernel args only), read back.
struct Run {
    tmp: TempDir,
    kargs: KernelArgsFile,
    dump: Option<Dump>,
    kernels: Vec<KernelDef>,
    workload: &'static str,
    case: &'static str,
}

fn run(workload: &'static str, case: &'static str, level: Option<DumpLevel>) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tensor_dump");
    let mut d = DumpConfig::new(&dir);
    d.level = level;
    d.kernel_args = true;
    d.args = true;
    d.workload = workload.into();
    d.case = case.into();
    let w = simpler_workloads::find(workload).unwrap();
    let cfg = RuntimeConfig {
        dump: Some(d),
        clusters: CLUSTERS,
        gm_bytes: 1 << 30,
        ..Default::default()
    };
    let rt = Runtime::new(cfg, w.kernels()).unwrap();
    let out = w.run(case, 0, &rt).unwrap();
    assert!(out.golden.passed, "{}", out.golden.detail);
    drop(rt);
    let kargs = KernelArgsFile::open(&dir).unwrap();
    let dump = level.map(|_| Dump::open(&dir).unwrap());
    Run {
        tmp,
        kargs,
        dump,
        kernels: w.kernels(),
        workload,
        case,
    }
}

impl Run {
    fn opts(&self) -> RebuildOptions<'_> {
        RebuildOptions {
            workload: self.workload,
            case: self.case,
            arch: "a2a3",
            clusters: CLUSTERS,
            kernels: &self.kernels,
        }
    }

    fn spec(&self, dispatch_id: u64) -> ReplaySpec {
        rebuild(&self.kargs, self.dump.as_ref(), dispatch_id, &self.opts()).unwrap()
    }

    fn base(&self) -> &Path {
        self.tmp.path()
    }

    fn exec(&self, spec: &ReplaySpec) -> (Plan, Execution, Verification) {
        let plan = spec.plan("spec").unwrap();
        let exec = execute(&plan, self.base(), &self.kernels, "spec").unwrap();
        let v = verify(&plan, self.base(), &exec, "spec").unwrap();
        (plan, exec, v)
    }

    /// Tensor records of `task` at `stage`.
    fn records(&self, task: &simpler_format::hex::Hex64, stage: Stage) -> Vec<&Record> {
        let t = TaskId(task.0);
        self.dump
            .as_ref()
            .unwrap()
            .records()
            .iter()
            .filter(|r| r.task_id == t && r.stage == stage && r.kind == RecordKind::Tensor)
            .collect()
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn every_paged_attention_small1_dispatch_replays_bit_exact() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::All));
    let dump = r.dump.as_ref().unwrap();
    let mut funcs = std::collections::BTreeSet::new();
    let (mut strided_sf, mut first_up, mut last_up) = (false, false, false);
    for d in &r.kargs.doc.dispatches {
        let spec = r.spec(d.dispatch_id);
        let (plan, exec, v) = r.exec(&spec);
        funcs.insert(d.func_id);

        // Inputs came from the tensor dump's before_dispatch payload.
        for b in r.records(&d.task_id, Stage::BeforeDispatch) {
            let st = &exec.tensors[b.arg_index as usize];
            assert_eq!(
                st.before,
                dump.payload(b).unwrap(),
                "dispatch {} slot {}",
                d.dispatch_id,
                b.arg_index
            );
            assert!(matches!(
                plan.tensors[b.arg_index as usize].data,
                DataSource::Dump { .. }
            ));
        }
        // Independently of `verify`: every after_completion payload equals
        // the replayed bytes of its slot.
        let afters = r.records(&d.task_id, Stage::AfterCompletion);
        assert!(!afters.is_empty());
        for a in &afters {
            let st = &exec.tensors[a.arg_index as usize];
            assert_eq!(
                st.after,
                dump.payload(a).unwrap(),
                "dispatch {} (func {}) slot {} differs from the dump",
                d.dispatch_id,
                d.func_id,
                a.arg_index
            );
        }
        assert!(
            v.overall_pass,
            "dispatch {}: {}",
            d.dispatch_id,
            v.render_text()
        );
        assert_eq!(v.outputs.len(), afters.len());
        for o in &v.outputs {
            assert_eq!(
                (o.status, o.compared, o.differing),
                (Status::Pass, o.elements, 0)
            );
        }
        assert_eq!(exec.cores.len(), 1);
        assert!(!exec.cores[0].records.is_empty(), "recording was on");
        assert_eq!(
            Some(exec.cores[0].cluster),
            simpler_core::topology::locate(CLUSTERS, d.core_id).map(|(c, _)| c)
        );

        if d.func_id == 1 && !plan.tensors[0].is_contiguous() {
            strided_sf = true;
        }
        if d.func_id == 3 {
            let flag = |slot: usize| {
                plan.scalars
                    .iter()
                    .find(|s| s.arg_index as usize == slot)
                    .unwrap()
                    .bits
            };
            first_up |= flag(7) == 1;
            last_up |= flag(8) == 1;
        }
    }
    assert_eq!(funcs.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert!(
        strided_sf,
        "the last key block's SF reads a non-contiguous sij view"
    );
    assert!(first_up && last_up, "a first and a last UP were replayed");
}

#[test]
fn mixed_example_block_1_replays_the_whole_cluster() {
    let r = run("mixed_example", "Default", Some(DumpLevel::All));
    let dump = r.dump.as_ref().unwrap();
    let block1: Vec<_> = r
        .kargs
        .doc
        .dispatches
        .iter()
        .filter(|d| d.block_idx == 1)
        .collect();
    assert_eq!(block1.len(), 3);
    let aic = block1.iter().find(|d| d.subtask == "aic").unwrap();
    for d in &block1 {
        let spec = r.spec(d.dispatch_id);
        assert_eq!(spec.members.len(), 3, "MIX spec lists the cluster");
        assert_eq!(spec.dispatch.dispatch_id, Some(d.dispatch_id));
        assert_eq!(spec.func_id, d.func_id);
        let (plan, exec, v) = r.exec(&spec);
        let names: Vec<String> = exec.cores.iter().map(|c| c.name()).collect();
        let c = aic.core_id;
        assert_eq!(
            names,
            [
                format!("core{c}.cubecore0"),
                format!("core{c}.veccore0"),
                format!("core{c}.veccore1")
            ]
        );
        assert_eq!(plan.members[1].sub_block_id, 0);
        assert_eq!(plan.members[2].sub_block_id, 1);
        // Rows 64..128 of C, D, E equal the dump; rows 0..64 keep the sentinel.
        for a in r.records(&d.task_id, Stage::AfterCompletion) {
            let st = &exec.tensors[a.arg_index as usize];
            let half = st.after.len() / 2;
            assert_eq!(
                &st.after[half..],
                &dump.payload(a).unwrap()[half..],
                "slot {}",
                a.arg_index
            );
            assert!(st.after[..half].iter().all(|&b| b == SENTINEL_BYTE));
        }
        assert!(v.overall_pass, "{}", v.render_text());
        assert_eq!(v.outputs.len(), 3);
        for o in &v.outputs {
            assert_eq!((o.compared, o.elements), (8192, 16384));
            assert!((o.coverage - 0.5).abs() < 1e-12);
            assert!(o
                .reason
                .as_deref()
                .unwrap()
                .contains("block 1/2 wrote 8192 of 16384"));
        }
    }
}

#[test]
fn block_num_1_counts_unwritten_elements_and_block_num_2_needs_coverage() {
    let r = run("mixed_example", "Default", Some(DumpLevel::All));
    let d = r
        .kargs
        .doc
        .dispatches
        .iter()
        .find(|d| d.block_idx == 1 && d.subtask == "aic")
        .unwrap();
    // Only the AIC member: D and E are never written.
    let mut spec = r.spec(d.dispatch_id);
    spec.members.clear();
    let (_, _, v) = r.exec(&spec);
    assert!(!v.overall_pass);
    assert_eq!(v.outputs[0].status, Status::Pass);
    for o in &v.outputs[1..] {
        assert_eq!(
            o.status,
            Status::NotVerifiable,
            "block 2 of 2 wrote nothing here"
        );
        assert_eq!(o.compared, 0);
    }
    // As a single block (0/1) the AIC member computes every row of C, which
    // matches the dump (it holds both blocks' rows); D and E still hold the
    // sentinel everywhere, and with block_num 1 that is a mismatch on every
    // element.
    spec.dispatch.block_idx = 0;
    spec.dispatch.block_num = 1;
    let (_, _, v) = r.exec(&spec);
    assert_eq!(v.outputs[0].status, Status::Pass, "{}", v.render_text());
    for o in &v.outputs[1..] {
        assert_eq!(o.status, Status::Fail);
        assert_eq!((o.compared, o.differing), (16384, 16384));
        assert_eq!(o.still_sentinel, Some(16384));
        assert_eq!(o.first_diff_index, Some(0));
    }
    assert!(v
        .render_text()
        .contains("never written (still the sentinel)"));
}

#[test]
fn set_arg_scale_makes_verification_fail() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::All));
    // A full key block's SF: on the last block (one valid column) the scale
    // cancels out of pij and lij.
    let id = r
        .kargs
        .doc
        .dispatches
        .iter()
        .find(|d| d.func_id == 1 && d.args[0].is_contiguous == Some(true))
        .unwrap()
        .dispatch_id;
    let sel = select_dispatch(&r.kargs, 1, Some(id), &r.kernels).unwrap();
    let mut spec = r.spec(sel.dispatch_id);
    let msg = spec.set_arg("4=0.5").unwrap();
    assert!(msg.contains("slot 4 (scalar FLOAT32) set to 0.5"), "{msg}");
    let (plan, exec, v) = r.exec(&spec);
    assert_eq!(plan.scalars[0].bits, u64::from(0.5f32.to_bits()));
    assert!(!v.overall_pass);
    let dump = r.dump.as_ref().unwrap();
    let task = &r.kargs.dispatch(sel.dispatch_id).unwrap().task_id;
    for (o, a) in v
        .outputs
        .iter()
        .zip(r.records(task, Stage::AfterCompletion))
    {
        assert_eq!(o.status, Status::Fail);
        // Recount the differing elements from the bytes.
        let es = a.dtype.size();
        let got = &exec.tensors[a.arg_index as usize].after;
        let want = dump.payload(a).unwrap();
        let n = got
            .chunks(es)
            .zip(want.chunks(es))
            .filter(|(x, y)| x != y)
            .count();
        assert_eq!(o.differing, n as u64);
        assert!(n > 0);
    }
}

#[test]
fn a_one_element_difference_is_found_with_its_index_and_size() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::All));
    let sel = select_dispatch(&r.kargs, 0, None, &r.kernels).unwrap();
    let mut spec = r.spec(sel.dispatch_id);
    // QK's sij (slot 2): expected = the dump's bytes with element 37 + 0.5.
    let dump = r.dump.as_ref().unwrap();
    let task = &r.kargs.dispatch(sel.dispatch_id).unwrap().task_id;
    let rec = r.records(task, Stage::AfterCompletion)[0];
    let mut bytes = dump.payload(rec).unwrap().to_vec();
    let old = f32s(&bytes)[37];
    bytes[37 * 4..38 * 4].copy_from_slice(&(old + 0.5).to_le_bytes());
    let path = r.base().join("sij_expected.bin");
    std::fs::write(&path, &bytes).unwrap();
    spec.args[2].expected = Some(DataSource::File {
        path: PathBuf::from("sij_expected.bin"),
    });
    let (_, _, v) = r.exec(&spec);
    let o = &v.outputs[0];
    assert_eq!(
        (o.status, o.differing, o.first_diff_index),
        (Status::Fail, 1, Some(37))
    );
    assert_eq!(o.max_abs_diff, f64::from(old + 0.5) - f64::from(old));
    let fd = o.first_diff.as_ref().unwrap();
    assert_eq!(fd.position, [2, 5]);
    assert_eq!(fd.got, format!("{old:?}"));
}

#[test]
fn kernel_args_only_dump_zero_fills_and_cannot_verify() {
    let r = run("paged_attention", "CaseSmall1", None);
    let sel = select_dispatch(&r.kargs, 1, None, &r.kernels).unwrap();
    let spec = r.spec(sel.dispatch_id);
    assert!(spec.notes.iter().any(|n| n.contains("no tensor dump")));
    let (plan, exec, v) = r.exec(&spec);
    for (t, st) in plan.tensors.iter().zip(&exec.tensors) {
        assert_eq!(t.data, DataSource::Zeros {});
        assert!(t.role.is_none());
        assert!(t
            .note
            .as_deref()
            .unwrap()
            .contains("zero-filled: no tensor dump"));
        assert!(st.before.iter().all(|&b| b == 0));
    }
    assert_eq!(simpler_replay::workspace::zero_filled(&plan).len(), 4);
    assert!(!v.overall_pass);
    assert_eq!(v.outputs.len(), 4, "every slot of unknown role is listed");
    assert!(v.outputs.iter().all(|o| o.status == Status::NotVerifiable));
    assert!(v.render_text().contains("NOT VERIFIED"));
}

#[test]
fn level_3_dump_zero_fills_unmarked_inputs_and_says_why() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::MetaAll));
    let up = r
        .kargs
        .doc
        .dispatches
        .iter()
        .rev()
        .find(|d| d.func_id == 3)
        .unwrap();
    let spec = r.spec(up.dispatch_id);
    let plan = spec.plan("spec").unwrap();
    let zf = simpler_replay::workspace::zero_filled(&plan);
    assert!(!zf.is_empty());
    for z in &zf {
        assert!(z.reason.contains("dump level 3"), "{}", z.reason);
    }
}

#[test]
fn the_written_spec_replays_to_the_same_bytes() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::All));
    let sel = select_dispatch(&r.kargs, 3, None, &r.kernels).unwrap();
    let spec = r.spec(sel.dispatch_id);
    let root = r.base().join("outputs");
    let o = replay_into(
        &WorkspaceTarget::Fresh(root.clone()),
        &spec,
        Path::new("."),
        "spec",
        &r.kernels,
        &[],
    )
    .unwrap();
    assert!(o.report.overall_pass);
    let again = ReplaySpec::load(&o.spec_path).unwrap();
    assert_eq!(
        again.to_json(),
        spec.to_json(),
        "the spec file holds exactly the rebuilt spec"
    );
    assert_eq!(again.plan("a").unwrap(), spec.plan("a").unwrap());
    let (_, e1, _) = r.exec(&spec);
    let (_, e2, v2) = r.exec(&again);
    assert_eq!(e1.tensors, e2.tensors);
    assert!(v2.overall_pass);
    // A second replay of the same label never overwrites the first.
    let o2 = replay_into(
        &WorkspaceTarget::Fresh(root),
        &again,
        Path::new("."),
        "spec",
        &r.kernels,
        &[],
    )
    .unwrap();
    assert_ne!(o.workspace.dir, o2.workspace.dir);
    assert!(o.report_path.exists() && o2.report_path.exists());
}

#[test]
fn the_report_matches_what_was_exported() {
    let r = run("paged_attention", "CaseSmall1", Some(DumpLevel::All));
    let spec = r.spec(
        select_dispatch(&r.kargs, 2, None, &r.kernels)
            .unwrap()
            .dispatch_id,
    );
    let o = replay_into(
        &WorkspaceTarget::At(r.base().join("ws")),
        &spec,
        Path::new("."),
        "spec",
        &r.kernels,
        &["note".into()],
    )
    .unwrap();
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&o.report_path).unwrap()).unwrap();
    assert_eq!(rep["schema_version"], 1);
    assert_eq!(rep["overall_pass"], true);
    assert_eq!(rep["timing"]["total_cycles"], o.export.total_cycles);
    assert_eq!(rep["timing"]["instructions"], o.export.instructions);
    let busy: u64 = rep["timing"]["busy_cycles"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(busy, o.export.busy.iter().map(|(_, c)| c).sum::<u64>());
    assert_eq!(
        rep["timing"]["bottleneck"]["pipe"],
        o.export.bottleneck.as_ref().unwrap().pipe.name()
    );
    assert_eq!(rep["overrides"][0], "note");
    assert_eq!(rep["verification"]["outputs"][0]["status"], "pass");
    assert_eq!(rep["spec"]["kernel"], "pv_matmul");
    let opprof = o
        .workspace
        .dir
        .join("insight_export")
        .join(format!("OPPROF_{}", o.workspace.timestamp));
    assert!(opprof.join("simulator").join("trace.json").is_file());
    // `At` refuses an existing folder.
    let e = Workspace::create(&WorkspaceTarget::At(r.base().join("ws")), "x").unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
}

#[test]
fn selection_errors_say_what_exists() {
    let r = run("paged_attention", "CaseSmall1", None);
    let s = select_dispatch(&r.kargs, 2, None, &r.kernels).unwrap();
    let first = r
        .kargs
        .doc
        .dispatches
        .iter()
        .filter(|d| d.func_id == 2)
        .map(|d| d.dispatch_id)
        .min();
    assert_eq!(Some(s.dispatch_id), first);
    assert!(s.note.unwrap().contains("no --dispatch-id given"));
    let qk = r
        .kargs
        .doc
        .dispatches
        .iter()
        .find(|d| d.func_id == 0)
        .unwrap()
        .dispatch_id;
    let e = select_dispatch(&r.kargs, 1, Some(qk), &r.kernels)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "dispatch_id {qk} belongs to func_id 0 (qk_matmul)"
        )),
        "{e}"
    );
    let e = select_dispatch(&r.kargs, 1, Some(999), &r.kernels)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no dispatch with dispatch_id 999"), "{e}");
    assert!(e.contains("func_id 3: dispatch_id"), "{e}");
    let e = select_dispatch(&r.kargs, 7, None, &r.kernels)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no dispatch of func_id 7"), "{e}");
    // Core ids that contradict --clusters: with 1 cluster the AIV cores
    // are 1 and 2, but the run used 8 clusters (AIV ids 8..24).
    let mut o = r.opts();
    o.clusters = 1;
    let sf = r
        .kargs
        .doc
        .dispatches
        .iter()
        .find(|d| d.func_id == 1)
        .unwrap();
    let e = rebuild(&r.kargs, None, sf.dispatch_id, &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("with --clusters 1") && e.contains("fit --clusters") && e.contains(" 8"),
        "{e}"
    );
}

#[test]
fn set_arg_rejects_missing_and_context_slots() {
    let r = run("paged_attention", "CaseSmall1", None);
    let mut spec = r.spec(
        select_dispatch(&r.kargs, 1, None, &r.kernels)
            .unwrap()
            .dispatch_id,
    );
    let e = spec.set_arg("9=1").unwrap_err().to_string();
    assert!(
        e.contains("no slot 9") && e.contains("tensor slots 0-3, scalar slot 4"),
        "{e}"
    );
    let e = spec.set_arg("49=1").unwrap_err().to_string();
    assert!(e.contains("global context slot"), "{e}");
    let e = spec.set_arg("4").unwrap_err().to_string();
    assert!(e.contains("expected SLOT=VALUE"), "{e}");
    let e = spec.set_arg("4=x").unwrap_err().to_string();
    assert!(e.contains("not a FLOAT32 value"), "{e}");
    spec.set_arg("4=0x3f800000").unwrap();
    assert_eq!(spec.args[4].bits.as_deref(), Some("0x000000003f800000"));
    // A tensor fill.
    spec.set_arg("0=2.5").unwrap();
    let plan = spec.plan("spec").unwrap();
    let exec = execute(&plan, r.base(), &r.kernels, "spec").unwrap();
    assert!(f32s(&exec.tensors[0].before).iter().all(|&x| x == 2.5));
    assert_eq!(plan.scalars[0].bits, 0x3f80_0000);
}

fn parse_err(text: &str) -> String {
    match ReplaySpec::parse("s.json", text.as_bytes()).and_then(|s| s.plan("s.json").map(|_| s)) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

const HAND: &str = r#"{"schema_version": 1, "workload": "paged_attention", "case": "CaseSmall1",
  "func_id": 1, "kernel": "softmax_prepare", "core_type": "aiv",
  "dispatch": {"subtask": "aiv0", "block_idx": 0, "block_num": 1},
  "args": [
    {"arg_index": 0, "kind": "tensor", "dtype": "FLOAT32", "shape": [16, 16], "role": "input", "data": {"source": "fill", "value": 1.0}},
    {"arg_index": 1, "kind": "tensor", "dtype": "BFLOAT16", "shape": [16, 16], "role": "output"},
    {"arg_index": 2, "kind": "tensor", "dtype": "FLOAT32", "shape": [16], "role": "output"},
    {"arg_index": 3, "kind": "tensor", "dtype": "FLOAT32", "shape": [16], "role": "output"},
    {"arg_index": 4, "kind": "scalar", "dtype": "FLOAT32", "value": 0.25}]}"#;

#[test]
fn a_hand_written_spec_runs_with_defaults() {
    let spec = ReplaySpec::parse("hand.json", HAND.as_bytes()).unwrap();
    let plan = spec.plan("hand.json").unwrap();
    assert_eq!(
        plan.members[0].core_id, 8,
        "aiv0 of cluster 0 with 8 clusters"
    );
    assert_eq!(plan.tensors[0].strides, [16, 1]);
    assert_eq!(plan.tensors[1].data, DataSource::Sentinel {});
    assert_eq!(plan.tensors[1].size, 512);
    assert_eq!(plan.scalars[0].bits, 0x3e80_0000);
    let w = simpler_workloads::find("paged_attention").unwrap();
    let exec = execute(&plan, Path::new("."), &w.kernels(), "hand.json").unwrap();
    // All-ones scores: every row's max is 0.25 and exp(0) = 1 in every column.
    let lij = f32s(&exec.tensors[3].after);
    assert!(lij.iter().all(|&x| x == 16.0), "{lij:?}");
    let v = verify(&plan, Path::new("."), &exec, "hand.json").unwrap();
    assert!(v.outputs.iter().all(|o| o.status == Status::NotVerifiable));
    // JSON round trip.
    let back = ReplaySpec::parse("x", spec.to_json().as_bytes()).unwrap();
    assert_eq!(back, spec);
}

#[test]
fn spec_errors_name_the_field() {
    let e = parse_err(&HAND.replace(r#""case": "CaseSmall1","#, ""));
    assert!(
        e.contains("s.json: field (top level): missing field `case`"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""shape": [16], "role""#, r#""shape": "16", "role""#));
    assert!(
        e.contains("field args[2].shape") && e.contains("invalid type"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""dtype": "BFLOAT16""#, r#""dtype": "BF16""#));
    assert!(
        e.contains("field args[1].dtype: unknown dtype \"BF16\""),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""kind": "scalar""#, r#""kind": "scalar", "shapes": [1]"#));
    assert!(
        e.contains("field args[4].shapes") && e.contains("unknown field"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""source": "fill""#, r#""source": "fil""#));
    assert!(
        e.contains("field args[0].data.source: unknown variant `fil`"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""arg_index": 3"#, r#""arg_index": 7"#));
    assert!(
        e.contains("field args[3].arg_index: 7 but slots are listed in order"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""value": 0.25"#, r#""value": 0.25, "bits": "0x3f800000""#));
    assert!(
        e.contains("field args[4].value") && e.contains("remove the other"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(
        r#""shape": [16], "role": "output"}"#,
        r#""shape": [16], "size": 8, "role": "output"}"#,
    ));
    assert!(
        e.contains("field args[2].size: 8 bytes is smaller than the view needs"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""block_num": 1}"#, r#""block_num": 1, "core_id": 9}"#));
    assert!(
        e.contains("field dispatch.core_id: core 9 is aiv1 of cluster 0"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""role": "input""#, r#""role": "reader""#));
    assert!(e.contains("field args[0].role"), "{e}");
    let e = parse_err(&HAND.replace(r#""subtask": "aiv0""#, r#""subtask": "aic""#));
    assert!(
        e.contains("field core_type") && e.contains("contradicts subtask aic"),
        "{e}"
    );
    let e = parse_err(&HAND.replace(r#""schema_version": 1"#, r#""schema_version": 2"#));
    assert!(e.contains("field schema_version"), "{e}");
    let e = parse_err(&HAND[..HAND.len() - 10]);
    assert!(e.contains("truncated JSON"), "{e}");
    let e = parse_err(&HAND.replace(r#""value": 1.0}"#, r#""value": 1.0, "bits": "0x1"}"#));
    assert!(e.contains("field args[0].data"), "{e}");
    let e = parse_err(&HAND.replace(
        r#""kind": "scalar", "dtype": "FLOAT32", "value": 0.25"#,
        r#""kind": "scalar", "dtype": "INT8", "value": 300"#,
    ));
    assert!(
        e.contains("field args[4].value: 300 does not fit INT8"),
        "{e}"
    );
}

#[test]
fn data_files_are_checked_against_the_view() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("short.bin"), [0u8; 100]).unwrap();
    let text = HAND.replace(
        r#""source": "fill", "value": 1.0"#,
        r#""source": "file", "path": "short.bin""#,
    );
    let spec = ReplaySpec::parse("hand.json", text.as_bytes()).unwrap();
    let w = simpler_workloads::find("paged_attention").unwrap();
    let e = replay_into(
        &WorkspaceTarget::Fresh(tmp.path().join("o")),
        &spec,
        tmp.path(),
        "hand.json",
        &w.kernels(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("hand.json: field args[0].data")
            && e.contains("is 100 bytes, but the view holds 1024"),
        "{e}"
    );
    assert!(
        !tmp.path().join("o").exists(),
        "no workspace for a bad spec"
    );
    // A kernel error names the kernel and core.
    let text = HAND.replace(
        r#""shape": [16], "role": "output"}"#,
        r#""shape": [15], "role": "output"}"#,
    );
    let spec = ReplaySpec::parse("hand.json", text.as_bytes()).unwrap();
    let plan = spec.plan("hand.json").unwrap();
    let e = execute(&plan, tmp.path(), &w.kernels(), "hand.json").unwrap_err();
    assert!(matches!(e, ReplayError::Kernel { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("kernel 'softmax_prepare' (func id 1, aiv0 on core 8)"),
        "{e}"
    );
    // A buffer far larger than a replay may reserve is refused, not allocated.
    let text = HAND.replacen(
        r#""shape": [16], "role": "output"}"#,
        r#""shape": [16], "size": 1099511627776, "role": "output"}"#,
        1,
    );
    let spec = ReplaySpec::parse("hand.json", text.as_bytes()).unwrap();
    let e = execute(
        &spec.plan("hand.json").unwrap(),
        tmp.path(),
        &w.kernels(),
        "hand.json",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("field args[2].size")
            && e.to_string().contains("a replay reserves at most"),
        "{e}"
    );
    // A kernel name the registry does not have.
    let spec = ReplaySpec::parse(
        "hand.json",
        HAND.replace("softmax_prepare", "softmax").as_bytes(),
    )
    .unwrap();
    let e = execute(
        &spec.plan("hand.json").unwrap(),
        tmp.path(),
        &w.kernels(),
        "hand.json",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("field kernel: \"softmax\", but func_id 1 is 'softmax_prepare'"),
        "{e}"
    );
}
