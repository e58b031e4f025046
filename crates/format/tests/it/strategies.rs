//! proptest strategies for every format's types.

use proptest::collection::vec;
use proptest::prelude::*;
use simpler_core::{ArgRole, DType};
use simpler_format::args_dump::{ArgsDump, OrchArg};
use simpler_format::hex::Hex64;
use simpler_format::kernel_args::{Context, ContextKind, Dispatch, KernelArgsDump, Slot};
use simpler_format::scalar::{encode, encode_upstream, ScalarValue, WireValue};
use simpler_format::tensor_dump::{
    BinFormat, Header, HexField, Manifest, Record, TaskState, UnfinishedTask,
};
use simpler_format::upstream::{ArgsDumpFile, ArgsRecord};
use simpler_format::vocab::{Kind, Stage, Status};

pub fn dtype() -> impl Strategy<Value = DType> {
    (0u8..15).prop_map(|c| DType::from_code(c).unwrap())
}

pub fn role() -> impl Strategy<Value = ArgRole> {
    prop_oneof![
        Just(ArgRole::Input),
        Just(ArgRole::Output),
        Just(ArgRole::InOut),
        Just(ArgRole::NoDep)
    ]
}

pub fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        Just(Stage::BeforeDispatch),
        Just(Stage::AfterCompletion),
        Just(Stage::HangSnapshot)
    ]
}

/// Slot bits of a `dtype` scalar: zero-extended, as the ABI stores them.
pub fn slot_bits(d: DType) -> impl Strategy<Value = u64> {
    any::<u64>().prop_map(move |b| b & simpler_format::scalar::width_mask(d))
}

fn hexf() -> impl Strategy<Value = HexField> {
    any::<u64>().prop_map(HexField::from)
}

pub fn record() -> impl Strategy<Value = Record> {
    let tensor = (
        hexf(),
        vec(0u32..3, 1..4),
        role(),
        stage(),
        0u32..32,
        dtype(),
    )
        .prop_flat_map(|(t, f, r, s, a, d)| {
            (
                vec(1u64..9, 0..6),
                any::<bool>(),
                hexf(),
                0u64..1 << 40,
                any::<bool>(),
            )
                .prop_map(move |(shape, contiguous, addr, off, trunc)| {
                    let mut strides = vec![1u64; shape.len()];
                    for i in (0..shape.len().saturating_sub(1)).rev() {
                        strides[i] = strides[i + 1] * shape[i + 1];
                    }
                    let numel = shape.iter().product::<u64>();
                    Record {
                        task_id: t,
                        func_id: Some(f.iter().map(|&x| i64::from(x)).collect()),
                        role: r,
                        stage: s,
                        arg_index: a,
                        kind: Kind::Tensor,
                        dtype: d,
                        shape,
                        strides,
                        start_offset: 0,
                        is_contiguous: contiguous,
                        numel,
                        addr: Some(addr),
                        bin_offset: off,
                        bin_size: numel * d.size() as u64,
                        truncated: trunc,
                        overwritten: false,
                        value: None,
                        bits: None,
                        arg_index_ambiguous: None,
                        hang_snapshot: None,
                    }
                })
        });
    let scalar = (hexf(), 0u32..48, dtype()).prop_flat_map(|(t, a, d)| {
        slot_bits(d).prop_map(move |bits| Record {
            task_id: t,
            func_id: Some(vec![1]),
            role: ArgRole::Input,
            stage: Stage::BeforeDispatch,
            arg_index: a,
            kind: Kind::Scalar,
            dtype: d,
            shape: vec![],
            strides: vec![],
            start_offset: 0,
            is_contiguous: true,
            numel: 1,
            addr: None,
            bin_offset: 0,
            bin_size: 0,
            truncated: false,
            overwritten: false,
            value: Some(WireValue::Number(encode(d, bits))),
            bits: Some(HexField::from(bits)),
            arg_index_ambiguous: None,
            hang_snapshot: None,
        })
    });
    prop_oneof![tensor, scalar]
}

fn unfinished() -> impl Strategy<Value = UnfinishedTask> {
    (
        any::<u64>(),
        0u64..4,
        prop_oneof![
            Just(TaskState::Running),
            Just(TaskState::Ready),
            Just(TaskState::Waiting)
        ],
    )
        .prop_map(|(t, done, state)| UnfinishedTask {
            task_id: Hex64(t),
            func_id: vec![1, 2],
            state,
            cores: if state == TaskState::Running {
                vec![8, 9]
            } else {
                vec![]
            },
            running_for_ms: (state == TaskState::Running).then_some(12.5),
            blocks_done: done,
            block_num: 4,
            waiting_on: if state == TaskState::Waiting {
                vec![Hex64(t ^ 1)]
            } else {
                vec![]
            },
        })
}

pub fn manifest() -> impl Strategy<Value = Manifest> {
    (
        vec(record(), 0..12),
        any::<bool>(),
        vec(unfinished(), 0..3),
        0u64..3,
    )
        .prop_map(|(records, complete, unfinished, races)| {
            let count =
                |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count() as u64;
            Manifest {
                header: Header {
                    schema_version: Some(1),
                    run_dir: "tensor_dump".into(),
                    status: Some(if complete {
                        Status::Complete
                    } else {
                        Status::Incomplete
                    }),
                    reason: (!complete).then(|| "interrupted by SIGINT".into()),
                    bin_file: Some(Some("tensor_dump.bin".into())),
                    bin_format: BinFormat::default(),
                    dump_level: Some(2),
                    dump_policy: Some("block".into()),
                    total_tensors: records.len() as u64,
                    before_dispatch: count(&|r| r.stage == Stage::BeforeDispatch),
                    after_completion: count(&|r| r.stage == Stage::AfterCompletion),
                    hang_snapshot: count(&|r| r.stage == Stage::HangSnapshot),
                    input_tensors: 1,
                    output_tensors: 2,
                    inout_tensors: 3,
                    scalar_args: Some(count(&|r| r.kind == Kind::Scalar)),
                    truncated_tensors: count(&|r| r.truncated),
                    dropped_records: 0,
                    dropped_overwrite: 0,
                    racecheck: Some("warn".into()),
                    write_races: races,
                    races: (0..races).map(race_report).collect(),
                    unfinished_tasks: (!complete).then_some(unfinished),
                },
                tensors: records,
            }
        })
}

/// The `i`-th race of a synthetic header: blocks `2i` and `2i+1` of one
/// task both wrote the first `8(i+1)` bytes of a buffer.
fn race_report(i: u64) -> simpler_format::tensor_dump::RaceReport {
    use simpler_format::tensor_dump::RaceDispatch;
    let side = |d: u64| RaceDispatch {
        dispatch_id: d,
        task_id: Hex64(i),
        func_id: 3,
        kernel: "fill_all_rows".into(),
        core_type: "aiv".into(),
        core_id: 8 + d as u32,
        block_idx: d as u32,
    };
    simpler_format::tensor_dump::RaceReport {
        task_id: Hex64(i),
        buffer: Hex64(0x7f00_0000_0000 + 0x1000 * i),
        byte_range: [0, 8 * (i + 1)],
        overlap_bytes: 8 * (i + 1),
        dispatches: [side(2 * i), side(2 * i + 1)],
    }
}

/// An upstream record as the upstream writer would write it.
pub fn upstream_record() -> impl Strategy<Value = ArgsRecord> {
    (
        record(),
        prop_oneof![Just(vec![-1i64]), Just(vec![0]), Just(vec![0, 1, 2])],
    )
        .prop_map(|(r, func_id)| ArgsRecord {
            task_id: Hex64(r.task_id.value),
            func_id,
            arg_index: r.arg_index,
            role: r.role,
            stage: r.stage,
            kind: r.kind,
            dtype: r.dtype,
            value: r.bits.map(|b| encode_upstream(r.dtype, b.value)),
            is_contiguous: r.is_contiguous,
            shape: r.shape,
            strides: r.strides,
            start_offset: r.start_offset,
            numel: r.numel,
            arg_index_ambiguous: (r.arg_index == 7).then_some(true),
            hang_snapshot: None,
            bin_offset: r.bin_offset,
            bin_size: r.bin_size,
            truncated: r.truncated,
            overwritten: r.overwritten,
            bits: None,
            addr: None,
        })
}

pub fn upstream_file() -> impl Strategy<Value = ArgsDumpFile> {
    (vec(upstream_record(), 0..8), any::<bool>()).prop_map(|(args, has_bin)| ArgsDumpFile {
        run_dir: "args_dump".into(),
        bin_format: BinFormat::default(),
        dump_args_level: 2,
        total_args: args.len() as u64,
        before_dispatch: 1,
        after_completion: 2,
        input_args: 3,
        output_args: 4,
        inout_args: 5,
        truncated_args: 6,
        dropped_records: 7,
        dropped_overwrite: 8,
        schema_version: None,
        status: None,
        reason: None,
        dump_policy: None,
        hang_snapshot: 0,
        unfinished_tasks: None,
        bin_file: has_bin.then(|| "args.bin".into()),
        args,
    })
}

fn orch_arg(i: u32) -> impl Strategy<Value = OrchArg> {
    let tensor =
        (dtype(), role(), vec(1u64..9, 1..4), any::<u64>()).prop_map(move |(d, r, shape, addr)| {
            OrchArg {
                arg_index: i,
                kind: Kind::Tensor,
                role: Some(r),
                dtype: d,
                strides: Some(vec![1; shape.len()]),
                nbytes: Some(shape.iter().product::<u64>() * d.size() as u64),
                shape: Some(shape),
                start_offset: Some(0),
                addr: Some(Hex64(addr)),
                value: None,
                bits: None,
            }
        });
    let scalar = dtype().prop_flat_map(move |d| {
        slot_bits(d).prop_map(move |b| OrchArg {
            arg_index: i,
            kind: Kind::Scalar,
            role: None,
            dtype: d,
            shape: None,
            strides: None,
            start_offset: None,
            addr: None,
            nbytes: None,
            value: Some(encode(d, b)),
            bits: Some(Hex64(b)),
        })
    });
    prop_oneof![tensor, scalar]
}

pub fn args_dump() -> impl Strategy<Value = ArgsDump> {
    (0u32..6)
        .prop_flat_map(|n| (0..n).map(orch_arg).collect::<Vec<_>>())
        .prop_map(|args| ArgsDump {
            schema_version: 1,
            workload: "w".into(),
            case: "c".into(),
            total_args: args.len() as u64,
            dropped_args: 0,
            args,
        })
}

fn dispatch(id: u64) -> impl Strategy<Value = Dispatch> {
    (any::<u64>(), 0u32..3, 0u32..4, dtype(), any::<u64>()).prop_map(
        move |(task, sub, block, d, bits)| Dispatch {
            dispatch_id: id,
            task_id: Hex64(task),
            func_id: sub,
            subtask_id: sub,
            subtask: ["aic", "aiv0", "aiv1"][sub as usize].into(),
            core_type: if sub == 0 { "aic" } else { "aiv" }.into(),
            core_id: 8 + sub,
            block_idx: block,
            block_num: 4,
            stage: "before_dispatch".into(),
            args_addr: Some(Hex64(0x1000)),
            args: vec![
                Slot {
                    arg_index: 0,
                    kind: Kind::Tensor,
                    desc_addr: Some(Hex64(0x2000)),
                    addr: Some(Hex64(0x3000)),
                    dtype: d.name().into(),
                    ndims: Some(2),
                    shape: Some(vec![16, 16]),
                    strides: Some(vec![16, 1]),
                    start_offset: Some(0),
                    is_contiguous: Some(true),
                    size: Some(256 * d.size() as u64),
                    owner_task_id: Some(Hex64(task)),
                    version: Some(0),
                    manual_dep: Some(false),
                    address_space: Some(0),
                    extent_elems: Some(256),
                    bits: None,
                    value: None,
                },
                Slot {
                    arg_index: 1,
                    kind: Kind::Scalar,
                    desc_addr: None,
                    addr: None,
                    dtype: "UINT64".into(),
                    ndims: None,
                    shape: None,
                    strides: None,
                    start_offset: None,
                    is_contiguous: None,
                    size: None,
                    owner_task_id: None,
                    version: None,
                    manual_dep: None,
                    address_space: None,
                    extent_elems: None,
                    bits: Some(Hex64(bits)),
                    value: Some(ScalarValue::UInt(bits)),
                },
            ],
            context: vec![
                Context {
                    arg_index: 48,
                    kind: ContextKind::LocalContext,
                    addr: Hex64(0x4000),
                    block_idx: Some(block as i32),
                    block_num: Some(4),
                    sub_block_id: None,
                },
                Context {
                    arg_index: 49,
                    kind: ContextKind::GlobalContext,
                    addr: Hex64(0x4008),
                    block_idx: None,
                    block_num: None,
                    sub_block_id: Some(i32::from(sub == 2)),
                },
            ],
        },
    )
}

pub fn kernel_args() -> impl Strategy<Value = KernelArgsDump> {
    (0u64..5)
        .prop_flat_map(|n| (0..n).map(dispatch).collect::<Vec<_>>())
        .prop_map(|dispatches| KernelArgsDump {
            schema_version: 1,
            total_dispatches: dispatches.len() as u64,
            total_args: 2 * dispatches.len() as u64,
            dropped_dispatches: 0,
            dispatches,
        })
}
