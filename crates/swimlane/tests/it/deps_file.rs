//! `deps.json` of a recorded run, against the plain way: a [`Deps`] built
//! from each argument's whole descriptor (tensor ids by address and
//! creator in order of first use, overlap from the TensorMap's `covers`)
//! and serialised by serde_json. The writer reads the log's compact
//! argument table and formats by hand: the bytes must be the same.

use std::borrow::Cow;
use std::collections::HashMap;

use simpler_core::{ArgRole, ChipTensor};
use simpler_format::swimlane::{
    Dec64, DepArg, DepEdge, DepTask, DepTensor, Deps, SWIMLANE_SCHEMA_VERSION,
};
use simpler_runtime::swimlane::{EdgeSource, SwimlaneLog};

use crate::recording::{run, scoped_chain};

fn dims(d: &ChipTensor) -> (Vec<u32>, Vec<u32>) {
    let n = d.ndims as usize;
    (d.shapes[..n].to_vec(), d.strides[..n].to_vec())
}

/// Every task's arguments whole, with their tensor ids; and the tensors.
type Args = HashMap<u64, Vec<(ArgRole, ChipTensor, u64)>>;

fn args_and_tensors(log: &SwimlaneLog) -> (Args, Vec<DepTensor>) {
    let (mut ids, mut tensors, mut args) = (HashMap::new(), Vec::new(), Args::new());
    for t in &log.tasks {
        let mut mine = Vec::new();
        for (role, d) in log.args.descs(&t.args) {
            let id = *ids.entry((d.addr, d.owner_task_id.0)).or_insert_with(|| {
                tensors.push(DepTensor {
                    tensor_id: Dec64(tensors.len() as u64),
                    buffer_addr: Dec64(d.addr),
                    version: i64::from(d.version),
                    dtype: Cow::Owned(d.dtype.name().to_string()),
                    buffer_numel: Dec64(d.size / d.dtype.size() as u64),
                });
                tensors.len() as u64 - 1
            });
            mine.push((role, d, id));
        }
        args.insert(t.task_id.0, mine);
    }
    (args, tensors)
}

fn plain_deps(log: &SwimlaneLog) -> Deps {
    let (args, tensors) = args_and_tensors(log);
    let tasks = log.tasks.iter().map(|t| DepTask {
        task_id: Dec64(t.task_id.0),
        scope: t.scope,
        kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
        block_num: t.block_num,
        args: (args[&t.task_id.0].iter().enumerate())
            .map(|(i, (role, d, id))| DepArg {
                idx: i as u32,
                kind: Cow::Borrowed(simpler_format::swimlane::dep_arg_type(*role)),
                tensor_id: Dec64(*id),
                dtype: Cow::Owned(d.dtype.name().to_string()),
                shape: dims(d).0,
                start_offset: Dec64(d.start_offset),
                strides: dims(d).1,
            })
            .collect(),
    });
    let arg = |task: u64, i: Option<u32>| args.get(&task)?.get(i? as usize).map(|a| (a.1, a.2));
    let edges = log.edges.iter().map(|e| {
        let (c, p) = (arg(e.succ.0, e.arg), arg(e.pred.0, e.pred_arg));
        let overlap = match (e.source, c, p) {
            (EdgeSource::Creator, _, _) => "full",
            (_, Some(c), Some(p)) if simpler_runtime::tensormap::covers(&p.0, &c.0) => "full",
            (_, Some(_), Some(_)) => "partial",
            _ => "",
        };
        let source = match e.source {
            EdgeSource::Creator => "creator",
            EdgeSource::TensorMap => "tensormap",
            EdgeSource::Explicit => "explicit",
        };
        DepEdge {
            pred: Dec64(e.pred.0),
            succ: Dec64(e.succ.0),
            arg: e.arg.map_or(-1, i64::from),
            source: Cow::Owned(source.into()),
            flags: e.flags,
            overlap: Cow::Owned(overlap.into()),
            tensor_id: c.map(|c| Dec64(c.1)),
            consumer_shape: c.map(|c| dims(&c.0).0),
            consumer_start_offset: c.map(|c| Dec64(c.0.start_offset)),
            consumer_strides: c.map(|c| dims(&c.0).1),
            producer_shape: p.map(|p| dims(&p.0).0),
            producer_start_offset: p.map(|p| Dec64(p.0.start_offset)),
            producer_strides: p.map(|p| dims(&p.0).1),
        }
    });
    Deps {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        runtime: Some(simpler_format::swimlane::RUNTIME.into()),
        tasks: tasks.collect(),
        tensors,
        edges: edges.collect(),
    }
}

fn assert_deps_json_is_plain(log: &SwimlaneLog, what: &str) {
    let mut got = Vec::new();
    simpler_swimlane::record::write_deps(log, &mut got).unwrap();
    let want = serde_json::to_vec(&plain_deps(log)).unwrap();
    assert!(got == want, "{what}: deps.json differs from serde_json's");
}

/// Explicit `after`s, creator and TensorMap edges, an edge to a producer
/// finished before its consumer was submitted; and 3000 scopes whose
/// freed addresses are reused (a tensor id per address and creator, many
/// buffers logged again after falling out of the recorder's cache).
#[test]
fn deps_json_is_serde_json_of_the_plain_graph() {
    let log = run(4, false).2.unwrap();
    assert!(log.edges.iter().any(|e| e.source == EdgeSource::Explicit));
    assert_deps_json_is_plain(&log, "four tasks");
    let log = scoped_chain(2, 3000, false).2.unwrap();
    let tensors = plain_deps(&log).tensors.len();
    let addrs: std::collections::HashSet<u64> = plain_deps(&log)
        .tensors
        .iter()
        .map(|t| t.buffer_addr.0)
        .collect();
    assert!(addrs.len() < tensors, "no address was reused");
    assert_deps_json_is_plain(&log, "3000 scopes");
}

/// With the observed and the predicted timeline, `predicted/deps.json`
/// and the name map are the top-level files, hard-linked (same inode,
/// same bytes, both parse); where a link cannot be made the file is
/// written whole instead (here: the link's name is taken).
#[test]
fn predicted_deps_and_name_map_are_the_observed_ones_linked_or_copied() {
    use simpler_format::swimlane::{Deps, NameMap, DEPS_FILE, PREDICTED_DIR};
    use simpler_swimlane::{predict, Outputs, PlainSink, Sink};
    use std::os::unix::fs::MetadataExt;

    let log = run(4, true).2.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let shape = predict::ChipShape {
        clusters: 2,
        sched_threads: 1,
        clock_hz: 1_850_000_000,
    };
    let out = Outputs {
        observed: true,
        predict: Some((shape, predict::ChipParams::default())),
    };
    simpler_swimlane::write_run(tmp.path(), &log, "w", "c", out, &PlainSink).unwrap();
    let map = simpler_format::swimlane::name_map_file("w", "c");
    for name in [DEPS_FILE, map.as_str()] {
        let (top, pred) = (
            tmp.path().join(name),
            tmp.path().join(PREDICTED_DIR).join(name),
        );
        let (a, b) = (std::fs::read(&top).unwrap(), std::fs::read(&pred).unwrap());
        assert!(a == b && !a.is_empty(), "{name}: the two files differ");
        let ino = |p: &std::path::Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&top), ino(&pred), "{name}: not a hard link");
    }
    let deps = tmp.path().join(PREDICTED_DIR).join(DEPS_FILE);
    let parsed: Deps = serde_json::from_slice(&std::fs::read(&deps).unwrap()).unwrap();
    assert_eq!(parsed.tasks.len(), log.tasks.len());
    let names = tmp.path().join(PREDICTED_DIR).join(&map);
    let _: NameMap = serde_json::from_slice(&std::fs::read(&names).unwrap()).unwrap();

    // The fallback: a name already taken cannot be linked to.
    let copy = tmp.path().join("copy.json");
    std::fs::write(&copy, b"stale").unwrap();
    PlainSink.link(&tmp.path().join(DEPS_FILE), &copy).unwrap();
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&deps).unwrap());
    let ino = |p: &std::path::Path| std::fs::metadata(p).unwrap().ino();
    assert_ne!(ino(&copy), ino(&deps), "written, not linked");
}
