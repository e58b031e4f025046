//! `insight-trace` without `kernel_args_dump.json` (DESIGN §8): the args
//! rebuilt from per-task records — of the upstream runtime's own
//! paged_attention CaseSmall1 dump, of ours in the upstream layout, and of
//! ours stripped down to what the upstream runtime writes (6-digit float
//! scalars, no bits) — and `--all` replaying every dispatch of a dump.

use std::{fs, path::Path};

use serde_json::Value;
use simpler_inspect::{Dump, Stage};

use crate::insight_trace::{dumped, load, simpler, workspace};

/// The upstream runtime's CaseSmall1 dump (the reference fixture).
fn reference() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference-dumps/paged_attention_CaseSmall1")
}

/// Every task of the upstream runtime's CaseSmall1 dump, replayed with our
/// kernels on its inputs: QK, SF, PV and the first two UP blocks agree bit
/// for bit; the last UP block's `oi` does not, because the upstream UP
/// kernel skips storing `oi` on the last block (its dumped `oi` after
/// completion is the one it received), while ours stores it.
#[test]
fn the_upstream_runtime_case_small1_replays_func_by_func() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reference();
    let d = dir.to_string_lossy().into_owned();
    for t in 0..12u64 {
        let task = format!("0x{:016x}", 0x2_0000_0000u64 + t);
        let func = (t % 4).to_string();
        let ws = format!("ws{t}");
        let o = simpler(
            tmp.path(),
            &[
                "insight-trace",
                "paged_attention",
                "--case",
                "CaseSmall1",
                "--dump-dir",
                &d,
                "--func-id",
                &func,
                "--task-id",
                &task,
                "--output",
                &ws,
            ],
        );
        assert!(
            o.stdout.contains("args rebuilt from the per-task records"),
            "{}",
            o.stdout
        );
        let spec = load(&tmp.path().join(&ws).join("replay_spec.json"));
        assert!(
            spec["tolerance"].is_object(),
            "a dump of the upstream runtime is held to a tolerance"
        );
        if t == 11 {
            assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
            let line = |slot: &str| {
                o.stdout
                    .lines()
                    .find(|l| l.contains(slot))
                    .unwrap()
                    .to_string()
            };
            assert!(line("slot  5  inout").contains("FAIL"), "{}", o.stdout);
            for slot in ["slot  3", "slot  4", "slot  6"] {
                assert!(line(slot).contains("PASS bit-exact"), "{}", o.stdout);
            }
        } else {
            assert_eq!(o.code, 0, "task {task}: {}\n{}", o.stdout, o.stderr);
            assert!(o.stdout.contains("bit-exact)"), "{}", o.stdout);
        }
    }
    // Why: the dump's oi after the last block is the oi it received.
    let dump = Dump::open(&dir).unwrap();
    let oi = |stage: Stage| {
        let r = dump
            .records()
            .iter()
            .find(|r| r.task_id.0 == 0x2_0000_000b && r.arg_index == 5 && r.stage == stage)
            .unwrap();
        dump.payload(r).unwrap()
    };
    assert_eq!(oi(Stage::BeforeDispatch), oi(Stage::AfterCompletion));
}

#[test]
fn a_dump_without_func_ids_needs_a_task_id() {
    let tmp = tempfile::tempdir().unwrap();
    let d = reference().to_string_lossy().into_owned();
    let o = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            &d,
            "--func-id",
            "1",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("does not record func ids")
            && o.stderr.contains("--task-id")
            && o.stderr
                .contains("0x000000020000000b (func ids not recorded, 13 records)"),
        "{}",
        o.stderr
    );
    let o = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            &d,
            "--all",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("does not record which kernel each task ran"),
        "{}",
        o.stderr
    );
}

/// Our upstream-layout dump made to look like the upstream runtime's: no
/// `schema_version`, `status`, `bits` or `addr` (FLOAT32 scalars are then
/// 6-digit values only).
fn as_upstream_runtime(run: &Path) {
    let j = run.join("args_dump/args_dump.json");
    let mut doc: Value = serde_json::from_slice(&fs::read(&j).unwrap()).unwrap();
    let h = doc.as_object_mut().unwrap();
    for k in ["schema_version", "status", "dump_policy", "hang_snapshot"] {
        h.remove(k);
    }
    for r in doc["args"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        r.remove("bits");
        r.remove("addr");
    }
    fs::write(&j, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

/// Scalars come from `value` exactly (never truncated to an integer: the
/// upstream tool makes 0.25 a 0), and a 6-digit value is said to be the
/// source of the bits.
#[test]
fn scalars_of_an_upstream_runtime_dump_are_decoded_exactly() {
    let tmp = dumped(
        "paged_attention",
        "CaseSmall2",
        &["--dump-tensor", "2", "--dump-layout", "upstream"],
    );
    as_upstream_runtime(&tmp.path().join("run"));
    let cwd = tmp.path();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--case",
            "CaseSmall2",
            "--dump-dir",
            "run",
            "--func-id",
            "1",
            "--rtol",
            "1e-2",
            "--atol",
            "1e-3",
            "--output",
            "ws",
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let spec = load(&cwd.join("ws/replay_spec.json"));
    let scale = &spec["args"][4];
    // 1/sqrt(128) written with 6 significant digits.
    let six: f32 = "0.0883883".parse().unwrap();
    assert_eq!(scale["bits"], format!("0x{:016x}", six.to_bits()));
    assert!(
        scale["note"]
            .as_str()
            .unwrap()
            .contains("derived from a 6-digit value (0.0883883)"),
        "{scale}"
    );
    assert!(
        o.stdout.contains("bits derived from a 6-digit value"),
        "{}",
        o.stdout
    );
    // The outputs are reported with their errors against the tolerance.
    assert!(
        o.stdout.contains("within rtol 1e-2, atol 1e-3"),
        "{}",
        o.stdout
    );

    // CaseSmall1's scale is 0.25: exact, so the replay is bit-exact.
    let tmp = dumped(
        "paged_attention",
        "CaseSmall1",
        &["--dump-tensor", "2", "--dump-layout", "upstream"],
    );
    as_upstream_runtime(&tmp.path().join("run"));
    let cwd = tmp.path();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--func-id",
            "1",
            "--output",
            "ws",
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let spec = load(&cwd.join("ws/replay_spec.json"));
    assert_eq!(spec["args"][4]["bits"], "0x000000003e800000", "0.25, not 0");
    assert!(o.stdout.contains("(3 bit-exact)"), "{}", o.stdout);
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--all",
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("PASS: all 12 dispatches bit-exact or within rtol"),
        "{}",
        o.stdout
    );
}

/// The summary line of `func` in an `--all` report: (dispatches,
/// bit-exact, differing).
fn func_line(stdout: &str, func: u32) -> (u64, u64, u64) {
    let l = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&func.to_string()))
        .unwrap_or_else(|| panic!("no line of func {func} in\n{stdout}"));
    let n: Vec<u64> = l
        .split_whitespace()
        .skip(2)
        .take(4)
        .map(|x| x.parse().unwrap())
        .collect();
    (n[0], n[1], n[3])
}

/// Dispatches per func in the run's kernel args dump.
fn per_func(run: &Path) -> std::collections::BTreeMap<u32, u64> {
    let k = load(&run.join("tensor_dump/kernel_args_dump.json"));
    let mut m = std::collections::BTreeMap::new();
    for d in k["dispatches"].as_array().unwrap() {
        *m.entry(d["func_id"].as_u64().unwrap() as u32).or_default() += 1;
    }
    m
}

#[test]
fn all_replays_every_dispatch_of_our_dumps_bit_exact() {
    for (w, case) in [
        ("paged_attention", "CaseSmall1"),
        ("paged_attention", "CaseSmall2"),
        ("mixed_example", "Default"),
        ("vector_example", "Default"),
    ] {
        let tmp = dumped(w, case, &["--dump-all"]);
        let cwd = tmp.path();
        let o = simpler(
            cwd,
            &[
                "insight-trace",
                w,
                "--case",
                case,
                "--dump-dir",
                "run",
                "--all",
            ],
        );
        assert_eq!(o.code, 0, "{w} {case}: {}\n{}", o.stdout, o.stderr);
        let want = per_func(&cwd.join("run"));
        let total: u64 = want.values().sum();
        assert!(
            o.stdout
                .contains(&format!("PASS: all {total} dispatches bit-exact")),
            "{}",
            o.stdout
        );
        for (&f, &n) in &want {
            assert_eq!(func_line(&o.stdout, f), (n, n, 0), "{w} {case} func {f}");
        }
    }
}

#[test]
fn all_from_per_task_records_and_a_changed_byte_is_caught() {
    // The upstream layout without the kernel args dump: per-task records.
    let tmp = dumped(
        "paged_attention",
        "CaseSmall1",
        &["--dump-tensor", "2", "--dump-layout", "upstream"],
    );
    let cwd = tmp.path();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run/args_dump",
            "--all",
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("from the per-task records"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("PASS: all 12 dispatches bit-exact"),
        "{}",
        o.stdout
    );
    for f in 0..4 {
        assert_eq!(func_line(&o.stdout, f), (3, 3, 0));
    }
    // One after_completion element changed: that dispatch differs, exit 1.
    let dump = Dump::open(cwd.join("run")).unwrap();
    let r = dump
        .records()
        .iter()
        .find(|r| r.stage == Stage::AfterCompletion && r.func_ids == [2])
        .unwrap()
        .clone();
    let bin = cwd.join("run/args_dump/args.bin");
    let mut bytes = fs::read(&bin).unwrap();
    bytes[r.bin_offset as usize + 3] ^= 0x40;
    fs::write(&bin, bytes).unwrap();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--all",
        ],
    );
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(func_line(&o.stdout, 2), (3, 2, 1), "{}", o.stdout);
    assert!(
        o.stdout
            .contains(&format!("DIFFERS: task {} func 2: slot 2", r.task_id)),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("FAIL: 1 of 12 dispatches not bit-exact in"),
        "{}",
        o.stdout
    );
}

#[test]
fn per_task_selection_errors_name_what_exists() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-tensor", "2"]);
    let cwd = tmp.path();
    let err = |args: &[&str]| {
        let mut a = vec!["insight-trace", "paged_attention", "--dump-dir", "run"];
        a.extend_from_slice(args);
        let o = simpler(cwd, &a);
        assert_eq!(o.code, 2, "{args:?}: {}\n{}", o.stdout, o.stderr);
        assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
        o.stderr
    };
    let e = err(&["--func-id", "1", "--dispatch-id", "9"]);
    assert!(
        e.contains("func 1 has 3 tasks in the dump (0: task 0x0000000200000001")
            && e.contains("no --dispatch-id 9"),
        "{e}"
    );
    let e = err(&["--task-id", "0x77"]);
    assert!(
        e.contains("no task 0x0000000000000077; the dump holds 0x0000000200000000 (func [0]"),
        "{e}"
    );
    let e = err(&["--func-id", "0", "--task-id", "0x0000000200000001"]);
    assert!(e.contains("ran func ids [1], not --func-id 0"), "{e}");
    let e = err(&["--func-id", "1", "--rtol", "-1"]);
    assert!(
        e.contains("--rtol -1: expected a finite number >= 0"),
        "{e}"
    );
    // A bad tolerance is refused before any dump is read (or summarised).
    for all in [&[][..], &["--all"][..]] {
        let mut a = vec!["insight-trace", "paged_attention", "--dump-dir", "run"];
        a.extend_from_slice(&["--func-id", "1", "--atol", "nan"]);
        a.extend_from_slice(all);
        let o = simpler(cwd, &a);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stdout.is_empty(), "{all:?}: {}", o.stdout);
        assert!(
            o.stderr.contains("--atol NaN: expected a finite number"),
            "{}",
            o.stderr
        );
    }
    // By --dispatch-id N: the N-th task of the func.
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--func-id",
            "3",
            "--dispatch-id",
            "2",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("(task 0x000000020000000b, aiv0 on cluster 0, block 0/1)"),
        "{}",
        o.stdout
    );
    let ws = workspace(cwd, &o.stdout);
    assert!(
        ws.to_string_lossy().contains("_f3_t000000020000000b_"),
        "{}",
        ws.display()
    );
    // A level-1 dump lacks the unmarked slots.
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-tensor", "1"]);
    let o = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--func-id",
            "3",
        ],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("has no record of slot 0") && o.stderr.contains("dump level 1"),
        "{}",
        o.stderr
    );
    // The kernel args dump records the block count.
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let o = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--func-id",
            "3",
            "--block-num",
            "2",
        ],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("--block-num")
            && o.stderr.contains("records each dispatch's block count"),
        "{}",
        o.stderr
    );
}

/// A dispatch that cannot be rebuilt is a failed line of the report (with
/// the reason), not the end of `--all`; exit 1.
#[test]
fn all_reports_a_dispatch_that_cannot_be_rebuilt() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    // One record's shape no longer matches its kernel args slot.
    let j = cwd.join("run/tensor_dump/tensor_dump.json");
    let text = fs::read_to_string(&j).unwrap();
    let first = text.find("\"shape\":[16,16]").unwrap();
    let text = format!(
        "{}\"shape\":[256],\"strides\":[1]{}",
        &text[..first],
        &text[first + "\"shape\":[16,16],\"strides\":[16,1]".len()..]
    );
    fs::write(&j, text).unwrap();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--dump-dir",
            "run",
            "--all",
        ],
    );
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    // Task 0's dispatch id: the workers number dispatches as they start
    // them, so another task's may come first.
    let kargs: Value = serde_json::from_slice(
        &fs::read(cwd.join("run/tensor_dump/kernel_args_dump.json")).unwrap(),
    )
    .unwrap();
    let id = kargs["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["task_id"] == "0x0000000200000000")
        .and_then(|d| d["dispatch_id"].as_u64())
        .unwrap();
    let want = format!("FAILED: dispatch {id}, task 0x0000000200000000 func 0:");
    assert!(o.stdout.contains(&want), "{want}\n{}", o.stdout);
    assert!(
        o.stdout.contains("are the two dumps from different runs?"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("FAIL: 1 of 12 dispatches not bit-exact (1 could not be replayed) in"),
        "{}",
        o.stdout
    );
}

/// A MIX task rebuilt from per-task records (UPSTREAM_FORMATS D.2): the
/// stored `func_id` order (AIC, AIV0, AIV1) assigns the lanes, whichever
/// member `--func-id` names; the cluster replays bit-exact. Stripped to
/// what the upstream runtime writes, so nothing but `func_id` says which
/// AIV kernel is which lane.
#[test]
fn a_mix_task_rebuilt_from_per_task_records_takes_its_lanes_from_func_id_order() {
    let tmp = dumped(
        "mixed_example",
        "Default",
        &["--dump-tensor", "2", "--dump-layout", "upstream"],
    );
    let cwd = tmp.path();
    as_upstream_runtime(&cwd.join("run"));
    let doc = load(&cwd.join("run/args_dump/args_dump.json"));
    let ids: Vec<u64> = doc["args"][0]["func_id"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "a MIX task of three members: {ids:?}");
    let lanes = ["aic", "aiv0", "aiv1"];
    for (i, &f) in ids.iter().enumerate() {
        let ws = format!("ws{f}");
        let o = simpler(
            cwd,
            &[
                "insight-trace",
                "mixed_example",
                "--dump-dir",
                "run",
                "--func-id",
                &f.to_string(),
                "--output",
                &ws,
            ],
        );
        assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
        assert!(
            o.stdout.contains("from the per-task records"),
            "{}",
            o.stdout
        );
        assert!(o.stdout.contains("(3 bit-exact)"), "{}", o.stdout);
        let spec = load(&cwd.join(&ws).join("replay_spec.json"));
        let members: Vec<(u64, &str, u64)> = spec["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["func_id"].as_u64().unwrap(),
                    m["dispatch"]["subtask"].as_str().unwrap(),
                    m["dispatch"]["sub_block_id"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(u64, &str, u64)> = ids
            .iter()
            .zip(lanes)
            .map(|(&f, l)| (f, l, u64::from(l == "aiv1")))
            .collect();
        assert_eq!(members, want, "--func-id {f}");
        assert_eq!(
            (
                spec["func_id"].as_u64(),
                spec["dispatch"]["subtask"].as_str()
            ),
            (Some(f), Some(lanes[i])),
            "--func-id {f} selects its own lane"
        );
    }
}
