//! Full disks, for real: runs whose working folder is a small tmpfs. What
//! reached the disk is described by an incomplete manifest with the reason
//! `write failed: No space left on device` (records byte-identical to a
//! run on a roomy disk, the rest counted as dropped), the CLI says the
//! same, and when not even the manifest fits, nothing is left.

use std::path::Path;

use super::{
    assert_no_tmp, assert_records_match, case_large, on_tmpfs, text, Loaded, Reference, Stage,
    Status,
};

const REASON: &str = "write failed: No space left on device";

/// The CLI's words for a full disk, and the manifest's.
fn check_full(out: &std::process::Output, left: &Path, what: &str) -> Loaded {
    let (_, err) = text(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(err.contains(&format!("error: {REASON}")), "{what}: {err}");
    assert!(
        err.contains("tensor dump (status incomplete)"),
        "{what}: {err}"
    );
    let l = Loaded::open(&left.join("run"));
    l.check_structure();
    assert_eq!(l.m.header.status, Some(Status::Incomplete), "{what}");
    assert_eq!(l.m.header.reason.as_deref(), Some(REASON), "{what}");
    assert_no_tmp(left);
    l
}

#[test]
fn case_large_on_a_20_mib_disk_keeps_what_reached_it() {
    let reference = case_large();
    let mut args = super::CASE_LARGE.to_vec();
    args.extend(["--output", "run"]);
    let Some((out, left)) = on_tmpfs("size=20m", &args) else {
        return;
    };
    let l = check_full(&out, left.path(), "CaseLarge on 20 MiB");
    let (_, err) = text(&out);
    assert!(l.m.header.dropped_records > 0, "a 176 MiB dump cannot fit");
    assert!(
        err.contains(&format!(
            "LOST: {} records dropped",
            l.m.header.dropped_records
        )),
        "{err}"
    );
    let n = assert_records_match(&l, reference, "CaseLarge on 20 MiB");
    assert!(n > 1000, "only {n} records kept");
    super::assert_view_loads(left.path(), Path::new("run"));
}

/// `--dump-all` on a 64 KiB disk, over workloads whose dumps fill it at
/// different points: the manifest says incomplete whenever the CLI says a
/// write failed; files it says were written parse, the others are absent;
/// the side files that were written agree with the tensor dump and the
/// complete run ([`check_side_files`]).
#[test]
fn dump_all_on_a_64_kib_disk_never_claims_complete() {
    for w in [
        &["vector_example"][..],
        &["paged_attention", "--case", "CaseSmall1"],
        &["paged_attention", "--case", "CaseSmall2"],
        &["mixed_example"],
    ] {
        let what = w.join(" ");
        let room = tempfile::tempdir().unwrap();
        let mut args = vec!["run"];
        args.extend(w);
        args.extend(["--seed", "4", "--dump-all"]);
        let reference = Reference::make(room.path(), &args);
        args.extend(["--output", "run"]);
        let Some((out, left)) = on_tmpfs("size=64k", &args) else {
            return;
        };
        let l = check_full(&out, left.path(), &what);
        assert_records_match(&l, &reference, &what);
        let (_, err) = text(&out);
        for name in ["args_dump.json", "kernel_args_dump.json"] {
            let path = left.path().join("run/tensor_dump").join(name);
            if err.contains(&format!("not written: run/tensor_dump/{name} ({REASON})")) {
                assert!(!path.exists(), "{what}: {name} said not written but exists");
            } else {
                assert!(
                    path.exists(),
                    "{what}: {name} neither written nor said not written"
                );
                assert!(
                    err.contains(&format!("/{name}")),
                    "{what}: {name} not reported: {err}"
                );
            }
        }
        // What the side files say (parsed strictly) agrees with the tensor
        // dump and the complete run.
        check_side_files(
            &l,
            &left.path().join("run/tensor_dump"),
            room.path(),
            w[0],
            &what,
        );
    }
}

/// One GM address of an orchestration argument of the run on the full disk
/// against the same one of the reference run: the two chips' GM sit at
/// different places, but the orchestration allocates its arguments in the
/// same order before any task runs, so every such address of one run is
/// the other's plus one constant, learnt from the first pair. (Task
/// buffers reuse freed GM in an order timing decides: not comparable.)
struct Rebase(Option<u64>);

impl Rebase {
    fn check(&mut self, got: Option<u64>, want: Option<u64>, what: &str) {
        match (got, want) {
            (Some(g), Some(w)) => {
                let d = g.wrapping_sub(w);
                let base = *self.0.get_or_insert(d);
                assert_eq!(
                    d, base,
                    "{what}: address {g:#x} is not the reference's {w:#x} in this run's GM"
                );
            }
            _ => assert_eq!(got.is_some(), want.is_some(), "{what}: address"),
        }
    }
}

/// What `args_dump.json` and `kernel_args_dump.json` of the run on the
/// full disk say, as far as they reached it, agrees with its tensor dump
/// and with the complete run in `room/run`: the orchestration args are the
/// reference's (addresses in this run's GM), every dispatch is one of the
/// reference's with the same slots, every task with records was
/// dispatched with each tensor record's slot at its address and shape, and
/// the records kept plus those counted as dropped are all the records of
/// the tasks dispatched.
fn check_side_files(l: &Loaded, dir: &Path, room: &Path, workload: &str, what: &str) {
    use simpler_format::{args_dump::ArgsDump, kernel_args::KernelArgsDump};
    use std::collections::{BTreeMap, BTreeSet, HashMap};
    let read = |d: &Path, name: &str| -> Option<Vec<u8>> { std::fs::read(d.join(name)).ok() };
    let ref_dir = room.join("run/tensor_dump");
    let mut rebase = Rebase(None);
    let want_ka: KernelArgsDump =
        serde_json::from_slice(&read(&ref_dir, "kernel_args_dump.json").unwrap()).unwrap();
    let want_a: ArgsDump =
        serde_json::from_slice(&read(&ref_dir, "args_dump.json").unwrap()).unwrap();
    let reference = Loaded::open(&room.join("run"));

    if let Some(bytes) = read(dir, "kernel_args_dump.json") {
        let k: KernelArgsDump = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{what}: kernel_args_dump.json: {e}"));
        assert_eq!((k.schema_version, k.dropped_dispatches), (1, 0), "{what}");
        assert_eq!(k.total_dispatches, k.dispatches.len() as u64, "{what}");
        let slots: usize = k.dispatches.iter().map(|d| d.args.len()).sum();
        assert_eq!(k.total_args, slots as u64, "{what}: total_args");
        assert!(
            k.dispatches
                .windows(2)
                .all(|w| w[0].dispatch_id < w[1].dispatch_id),
            "{what}: dispatch ids unique and increasing"
        );
        // Each dispatch is the reference's dispatch of the same task,
        // block and kernel (the core, so which AIV of a cluster, and the
        // dispatch id may differ; a MIX task's members are told apart by
        // their subtask).
        let mut want: HashMap<(u64, u32, u32), Vec<&simpler_format::kernel_args::Dispatch>> =
            HashMap::new();
        for d in &want_ka.dispatches {
            want.entry((d.task_id.0, d.block_idx, d.func_id))
                .or_default()
                .push(d);
        }
        let mut per_task: BTreeMap<u64, usize> = BTreeMap::new();
        for d in &k.dispatches {
            let at = format!(
                "{what}: dispatch {} ({} block {} {})",
                d.dispatch_id, d.task_id, d.block_idx, d.subtask
            );
            let ws = want
                .get(&(d.task_id.0, d.block_idx, d.func_id))
                .unwrap_or_else(|| panic!("{at}: not in the complete run"));
            let w = match ws[..] {
                [w] => w,
                _ => ws
                    .iter()
                    .find(|w| w.subtask == d.subtask)
                    .unwrap_or_else(|| panic!("{at}: no such member in the complete run")),
            };
            assert_eq!(
                (&d.core_type, d.block_num, &d.stage),
                (&w.core_type, w.block_num, &w.stage),
                "{at}"
            );
            assert_eq!(d.args.len(), w.args.len(), "{at}: slots");
            for (s, ws) in d.args.iter().zip(&w.args) {
                let at = format!("{at} slot {}", s.arg_index);
                // A task's buffers come from GM freed by the tasks that
                // finished before it, in an order timing decides: only
                // whether a slot has an address is the reference's.
                assert_eq!(s.addr.is_some(), ws.addr.is_some(), "{at}: address");
                assert_eq!(
                    (s.arg_index, s.kind, &s.dtype, &s.shape, &s.strides),
                    (ws.arg_index, ws.kind, &ws.dtype, &ws.shape, &ws.strides),
                    "{at}"
                );
                assert_eq!(
                    (
                        &s.start_offset,
                        &s.size,
                        &s.owner_task_id,
                        &s.bits,
                        &s.value
                    ),
                    (
                        &ws.start_offset,
                        &ws.size,
                        &ws.owner_task_id,
                        &ws.bits,
                        &ws.value
                    ),
                    "{at}"
                );
            }
            *per_task.entry(d.task_id.0).or_default() += 1;
        }
        // A task that finished had all its dispatches (blocks × members).
        let unfinished: BTreeSet<u64> =
            l.m.header
                .unfinished_tasks
                .iter()
                .flatten()
                .map(|t| t.task_id.0)
                .collect();
        for (&task, &n) in &per_task {
            let want_n = want_ka
                .dispatches
                .iter()
                .filter(|d| d.task_id.0 == task)
                .count();
            if !unfinished.contains(&task) {
                assert_eq!(n, want_n, "{what}: task {task:#x}: dispatches");
            }
        }
        // Every record kept belongs to a dispatched task, at the address
        // and in the shape its dispatches' slot held.
        for r in &l.m.tensors {
            let at = format!(
                "{what}: record {} {} arg {}",
                r.task_id, r.stage, r.arg_index
            );
            let ds: Vec<_> = k
                .dispatches
                .iter()
                .filter(|d| d.task_id.0 == r.task_id.value)
                .collect();
            assert!(!ds.is_empty(), "{at}: its task was never dispatched");
            for d in ds {
                assert!(
                    r.func_id
                        .as_ref()
                        .is_some_and(|f| f.contains(&i64::from(d.func_id))),
                    "{at}: func ids {:?}, dispatched as {}",
                    r.func_id,
                    d.func_id
                );
                let s = d
                    .args
                    .iter()
                    .find(|s| s.arg_index == r.arg_index)
                    .unwrap_or_else(|| panic!("{at}: no such slot in dispatch {}", d.dispatch_id));
                assert_eq!(s.kind, r.kind, "{at}");
                assert_eq!(s.dtype, r.dtype.name(), "{at}");
                if r.kind == simpler_format::vocab::Kind::Tensor {
                    assert_eq!(s.addr.map(|a| a.0), r.addr.map(|a| a.value), "{at}");
                    assert_eq!(s.shape.as_ref(), Some(&r.shape), "{at}");
                    assert_eq!(s.start_offset, Some(r.start_offset), "{at}");
                } else {
                    assert_eq!(s.bits.map(|b| b.0), r.bits.map(|b| b.value), "{at}");
                }
            }
        }
        // Kept and dropped records: every record of the tasks dispatched
        // (after_completion only for those that finished).
        let owed = reference
            .m
            .tensors
            .iter()
            .filter(|r| per_task.contains_key(&r.task_id.value))
            .filter(|r| r.stage == Stage::BeforeDispatch || !unfinished.contains(&r.task_id.value))
            .count() as u64;
        let kept =
            l.m.tensors
                .iter()
                .filter(|r| r.stage != Stage::HangSnapshot)
                .count() as u64;
        assert_eq!(
            kept + l.m.header.dropped_records,
            owed,
            "{what}: records kept ({kept}) and dropped ({}) against those of the {} tasks dispatched",
            l.m.header.dropped_records,
            per_task.len()
        );
    }

    if let Some(bytes) = read(dir, "args_dump.json") {
        let a: ArgsDump = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{what}: args_dump.json: {e}"));
        assert_eq!(a.schema_version, 1, "{what}");
        assert_eq!(a.workload, workload, "{what}");
        assert_eq!(
            (&a.workload, &a.case),
            (&want_a.workload, &want_a.case),
            "{what}"
        );
        assert_eq!(
            (a.total_args, a.dropped_args),
            (a.args.len() as u64, 0),
            "{what}"
        );
        assert_eq!(a.args.len(), want_a.args.len(), "{what}: args");
        // The records that hold an orchestration tensor whole in the
        // reference hold it at this run's address of that arg.
        let kept = l.index();
        for (o, w) in a.args.iter().zip(&want_a.args) {
            let at = format!("{what}: orchestration arg {}", o.arg_index);
            rebase.check(o.addr.map(|h| h.0), w.addr.map(|h| h.0), &at);
            let mut o_rebased = o.clone();
            o_rebased.addr = w.addr;
            assert_eq!(&o_rebased, w, "{at}");
            let Some(addr) = w.addr.map(|h| h.0) else {
                continue;
            };
            for r in reference.m.tensors.iter().filter(|r| {
                r.addr.map(|h| h.value) == Some(addr)
                    && r.start_offset == 0
                    && Some(&r.shape) == w.shape.as_ref()
            }) {
                if let Some(got) = kept.get(&super::key(r)) {
                    assert_eq!(
                        (got.addr.map(|h| h.value), got.dtype, Some(got.bin_size)),
                        (o.addr.map(|h| h.0), o.dtype, o.nbytes),
                        "{at}: record {} {} arg {}",
                        r.task_id,
                        r.stage,
                        r.arg_index
                    );
                }
            }
        }
    }
}

/// A disk too small for the manifest even without payload (level 3 keeps
/// every record's metadata): every file and folder the run created is
/// removed, and the CLI says so.
#[test]
fn when_not_even_the_manifest_fits_nothing_is_left() {
    for (options, args) in [
        // The manifest's text does not fit.
        ("size=16k", &["--dump-tensor", "3"][..]),
        // Not even its temporary file can be created (no inode left).
        ("size=1m,nr_inodes=4", &["--dump-tensor"][..]),
    ] {
        let mut all = vec![
            "run",
            "paged_attention",
            "--case",
            "CaseSmall2",
            "--output",
            "run",
        ];
        all.extend(args);
        let Some((out, left)) = on_tmpfs(options, &all) else {
            return;
        };
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{options}: {err}");
        assert!(
            err.contains("error: dump: write failed: No space left on device"),
            "{err}"
        );
        assert!(err.contains("nothing was kept: removed run"), "{err}");
        assert!(
            super::files(left.path()).is_empty() && !left.path().join("run").exists(),
            "{options}: left {:?}",
            super::files(left.path())
        );
    }
}

/// A file-size limit (`ulimit -f`, RLIMIT_FSIZE) is a full disk that
/// needs no mount: the `.bin` stops growing at 20 MiB. Without SIGXFSZ
/// ignored the kernel killed the run there (exit 153), its
/// `tensor_dump.bin.tmp` left behind and no manifest; now the write fails
/// with EFBIG and the dump keeps what fits, like on a full disk.
#[test]
fn a_file_size_limit_keeps_what_fits_instead_of_killing_the_run() {
    const REASON: &str = "write failed: File too large";
    let reference = case_large();
    let tmp = tempfile::tempdir().unwrap();
    let mut args = super::CASE_LARGE.to_vec();
    args.extend(["--output", "run"]);
    // 20 480 blocks of 1 KiB (bash and dash both count `ulimit -f` so).
    let out = std::process::Command::new("sh")
        .args(["-c", r#"ulimit -f 20480 && exec "$0" "$@""#])
        .arg(super::binary())
        .args(&args)
        .current_dir(tmp.path())
        .env("SIMPLER_TEST_WORKLOADS", "1")
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("error: {REASON}")), "{err}");
    assert!(err.contains("tensor dump (status incomplete)"), "{err}");
    let l = Loaded::open(&tmp.path().join("run"));
    l.check_structure();
    assert_eq!(l.m.header.status, Some(Status::Incomplete));
    assert_eq!(l.m.header.reason.as_deref(), Some(REASON));
    assert!(l.m.header.dropped_records > 0, "a 176 MiB dump cannot fit");
    assert!(
        err.contains(&format!(
            "LOST: {} records dropped",
            l.m.header.dropped_records
        )),
        "{err}"
    );
    assert!(
        l.bin.len() <= 20 << 20,
        "{} bytes past the limit",
        l.bin.len()
    );
    let n = assert_records_match(&l, reference, "CaseLarge under ulimit -f 20480");
    assert!(n > 1000, "only {n} records kept");
    assert_no_tmp(tmp.path());
    super::assert_view_loads(tmp.path(), Path::new("run"));
}
