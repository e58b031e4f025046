//! `simpler insight-trace` as a user runs it: replays of every
//! paged_attention CaseSmall1 kernel and a mixed_example MIX block verify
//! bit-exact; the exported trace tree has the documented structure and
//! consistent numbers; error paths give one clear message.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

pub(crate) struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) fn simpler(cwd: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run simpler");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A temporary folder holding `simpler run <workload> --dump-all` (or
/// other dump flags) in `run/`.
pub(crate) fn dumped(workload: &str, case: &str, flags: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["run", workload, "--case", case, "--output", "run"];
    args.extend_from_slice(flags);
    let o = simpler(tmp.path(), &args);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    tmp
}

pub(crate) fn load(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

/// The `workspace: …` path printed by a run.
pub(crate) fn workspace(cwd: &Path, stdout: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("workspace: "))
        .unwrap_or_else(|| panic!("no workspace line in\n{stdout}"));
    cwd.join(line.trim())
}

fn trace(cwd: &Path, workload: &str, func: u32, dispatch: u64) -> (Out, PathBuf) {
    let (f, d) = (func.to_string(), dispatch.to_string());
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            workload,
            "--func-id",
            &f,
            "--dispatch-id",
            &d,
            "--dump-dir",
            "run",
        ],
    );
    assert_eq!(
        o.code, 0,
        "func {func} dispatch {dispatch}:\n{}\n{}",
        o.stdout, o.stderr
    );
    let ws = workspace(cwd, &o.stdout);
    (o, ws)
}

/// (dispatch id, func id, task id) of every dispatch in the run's kernel args dump.
fn dispatches(cwd: &Path) -> Vec<(u64, u64, String, Value)> {
    let k = load(&cwd.join("run/tensor_dump/kernel_args_dump.json"));
    k["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["dispatch_id"].as_u64().unwrap(),
                d["func_id"].as_u64().unwrap(),
                d["task_id"].as_str().unwrap().to_string(),
                d.clone(),
            )
        })
        .collect()
}

fn opprof(ws: &Path) -> PathBuf {
    let dir = ws.join("insight_export");
    let mut entries: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let p = entries.pop().unwrap();
    let name = p.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("OPPROF_") && name.len() == "OPPROF_YYYYmmdd_HHMMSS".len(),
        "{name}"
    );
    p
}

const PIPES: [&str; 7] = ["SCALAR", "MTE1", "MTE2", "MTE3", "CUBE", "FIXP", "VECTOR"];

/// Checks on one exported tree: process/thread structure, events inside
/// the total time, CSV columns and cycle sums, Perfetto lanes. Returns the
/// process names.
fn check_tree(ws: &Path) -> Vec<String> {
    let out = opprof(ws);
    let sim = out.join("simulator");
    let t = load(&sim.join("trace.json"));
    let events = t["traceEvents"].as_array().unwrap();
    let clock = t["otherData"]["clock_mhz"].as_f64().unwrap();
    let total_cycles = t["otherData"]["total_cycles"].as_u64().unwrap();
    let total_us = total_cycles as f64 / clock;
    let mut procs: BTreeMap<String, String> = BTreeMap::new();
    let mut threads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cycles_by_pid: HashMap<String, u64> = HashMap::new();
    let mut x = 0;
    for e in events {
        // The op simulator's shape: the pid is the sub-core's name.
        let pid = e["pid"].as_str().expect("a pid string").to_string();
        match e["ph"].as_str().unwrap() {
            "M" if e["name"] == "process_name" => {
                procs.insert(pid, e["args"]["name"].as_str().unwrap().into());
            }
            "M" if e["name"] == "thread_name" => {
                threads
                    .entry(pid)
                    .or_default()
                    .insert(e["args"]["name"].as_str().unwrap().into());
            }
            "X" => {
                x += 1;
                let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
                assert!(ts >= 0.0 && dur > 0.0, "{e}");
                assert!(
                    ts + dur <= total_us * (1.0 + 1e-9),
                    "{e} ends after {total_us} us"
                );
                let a = &e["args"];
                let (s, end, c) = (
                    a["start_cycle"].as_u64().unwrap(),
                    a["end_cycle"].as_u64().unwrap(),
                    a["cycles"].as_u64().unwrap(),
                );
                assert!(end <= total_cycles && end - s == c, "{e}");
                assert!(a["source"].as_str().unwrap().contains(".rs:"), "{e}");
                assert!(PIPES.contains(&e["cat"].as_str().unwrap()), "{e}");
                *cycles_by_pid.entry(pid).or_default() += c;
            }
            _ => {}
        }
    }
    assert!(x > 0, "no instruction events");
    assert!(!procs.is_empty());
    for (pid, name) in &procs {
        assert_eq!(pid, name, "the pid names the sub-core");
        assert!(
            name.starts_with("core")
                && [".cubecore0", ".veccore0", ".veccore1"]
                    .iter()
                    .any(|m| name.ends_with(m)),
            "{name}"
        );
        let want: BTreeSet<String> = PIPES.iter().map(|s| s.to_string()).collect();
        assert_eq!(threads[pid], want, "one thread per pipe in {name}");
        // Per-sub-core folder: its trace and CSVs; CSV cycle sums = trace.
        let dir = sim.join(name);
        let own = load(&dir.join("trace.json"));
        let own_cycles: u64 = own["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["args"]["cycles"].as_u64().unwrap())
            .sum();
        assert_eq!(
            own_cycles,
            cycles_by_pid.get(pid).copied().unwrap_or(0),
            "{name}"
        );
        for (file, header, col) in [
            (
                format!("{name}_instr_exe.csv"),
                "instr,addr,pipe,call_count,cycles,running_time(us),detail",
                4,
            ),
            (
                format!("{name}_code_exe.csv"),
                "code,call_count,cycles,running_time(us)",
                2,
            ),
        ] {
            let text = fs::read_to_string(dir.join(&file)).unwrap();
            let mut lines = text.lines();
            assert_eq!(lines.next(), Some(header), "{file}");
            // Fields here hold no commas (file:line, mnemonics, numbers).
            let sum: u64 = lines
                .map(|l| l.split(',').nth(col).unwrap().parse::<u64>().unwrap())
                .sum();
            assert_eq!(sum, own_cycles, "{file} cycles vs trace");
        }
    }
    // Perfetto: no two slices overlap on one track.
    let perfetto: Vec<PathBuf> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("_trace_perfetto.json"))
        .collect();
    assert_eq!(perfetto.len(), 1);
    let p = load(&perfetto[0]);
    let mut tracks: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    for e in p["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
    {
        let a = &e["args"];
        tracks
            .entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .or_default()
            .push((
                a["start_cycle"].as_u64().unwrap(),
                a["end_cycle"].as_u64().unwrap(),
            ));
    }
    assert_eq!(tracks.values().map(Vec::len).sum::<usize>(), x);
    for (k, mut v) in tracks {
        v.sort_unstable();
        for w in v.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap on track {k:?}: {w:?}");
        }
    }
    procs.into_values().collect()
}

#[test]
fn every_paged_attention_kernel_replays_bit_exact_with_a_valid_trace() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    let all = dispatches(cwd);
    let mut picks: Vec<(u64, u64, &str)> = Vec::new();
    for func in 0..4u64 {
        let of: Vec<_> = all.iter().filter(|d| d.1 == func).collect();
        picks.push((func, of[0].0, "first"));
        if func == 1 {
            // SF of the last key block: its sij view is [16, 1] with row stride 16.
            let last = of
                .iter()
                .find(|d| d.3["args"][0]["is_contiguous"] == false)
                .expect("a non-contiguous SF input");
            picks.push((func, last.0, "strided sij"));
        }
        if func == 3 {
            let flag = |d: &Value, slot: usize| d["args"][slot]["bits"] == "0x0000000000000001";
            let first = of.iter().find(|d| flag(&d.3, 7)).unwrap();
            let last = of.iter().find(|d| flag(&d.3, 8)).unwrap();
            picks.push((func, first.0, "is_first"));
            picks.push((func, last.0, "is_last"));
        }
    }
    for (func, dispatch, why) in picks {
        let (o, ws) = trace(cwd, "paged_attention", func as u32, dispatch);
        assert!(o.stdout.contains("PASS: "), "{why}: {}", o.stdout);
        assert!(o.stdout.contains("zero-filled slots: none"), "{}", o.stdout);
        assert!(o.stdout.contains("bottleneck: "), "{}", o.stdout);
        assert!(
            o.stdout.contains("simulator: ") && o.stdout.contains("/simulator"),
            "{}",
            o.stdout
        );
        let report = load(&ws.join("replay_report.json"));
        assert_eq!(report["overall_pass"], true);
        assert_eq!(report["spec"]["dispatch_id"], dispatch);
        for out in report["verification"]["outputs"].as_array().unwrap() {
            assert_eq!(out["status"], "pass");
            assert_eq!(out["bit_exact"], true);
            assert_eq!(out["compared"], out["elements"]);
        }
        // The printed busy cycles and bottleneck are the report's.
        let b = &report["timing"]["bottleneck"];
        let line = format!(
            "bottleneck: {} on {} ({} cycles",
            b["pipe"].as_str().unwrap(),
            b["core"].as_str().unwrap(),
            b["busy_cycles"]
        );
        assert!(o.stdout.contains(&line), "{line}\n{}", o.stdout);
        for (pipe, c) in report["timing"]["busy_cycles"].as_object().unwrap() {
            assert!(
                o.stdout
                    .contains(&format!("  {pipe:<7} {:>12} cycles", c.as_u64().unwrap())),
                "{pipe}\n{}",
                o.stdout
            );
        }
        let procs = check_tree(&ws);
        assert_eq!(procs.len(), 1);
    }
}

#[test]
fn a_mixed_example_mix_block_replays_its_cluster() {
    let tmp = dumped("mixed_example", "Default", &["--dump-all"]);
    let cwd = tmp.path();
    let all = dispatches(cwd);
    let aiv1 = all
        .iter()
        .find(|d| d.3["block_idx"] == 1 && d.3["subtask"] == "aiv1")
        .unwrap();
    let aic = all
        .iter()
        .find(|d| d.3["block_idx"] == 1 && d.3["subtask"] == "aic")
        .unwrap();
    let (o, ws) = trace(cwd, "mixed_example", aiv1.1 as u32, aiv1.0);
    assert!(o.stdout.contains("MIX: replaying the cluster aic func 0 mix_matmul, aiv0 func 1 mix_add, aiv1 func 2 mix_mul"), "{}", o.stdout);
    assert_eq!(
        o.stdout
            .matches("PASS bit-exact on the 8192 elements this block wrote (50.0%)")
            .count(),
        3,
        "{}",
        o.stdout
    );
    let c = aic.3["core_id"].as_u64().unwrap();
    let procs = check_tree(&ws);
    assert_eq!(
        procs,
        [
            format!("core{c}.cubecore0"),
            format!("core{c}.veccore0"),
            format!("core{c}.veccore1")
        ]
    );
    let report = load(&ws.join("replay_report.json"));
    let members = report["spec"]["members"].as_array().unwrap();
    assert_eq!(members.len(), 3);
    assert_eq!(members[2]["sub_block_id"], 1);
    assert_eq!(report["spec"]["func_id"], 2);
}

#[test]
fn arg_spec_round_trip_and_set_arg_failure() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    // A full key block's SF (the last block has one valid column, where
    // the scale cancels out of pij and lij).
    let sf = dispatches(cwd)
        .into_iter()
        .find(|d| d.1 == 1 && d.3["args"][0]["is_contiguous"] == true)
        .unwrap();
    let (_, ws) = trace(cwd, "paged_attention", 1, sf.0);
    let spec = ws.join("replay_spec.json");
    let spec_s = spec.to_str().unwrap();
    let o = simpler(
        cwd,
        &["insight-trace", "paged_attention", "--arg-spec", spec_s],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let ws2 = workspace(cwd, &o.stdout);
    assert_ne!(ws, ws2, "a new workspace, never the same folder");
    assert_eq!(
        fs::read_to_string(&spec).unwrap(),
        fs::read_to_string(ws2.join("replay_spec.json")).unwrap()
    );
    let (r1, r2) = (
        load(&ws.join("replay_report.json")),
        load(&ws2.join("replay_report.json")),
    );
    assert_eq!(r1["verification"], r2["verification"]);
    assert_eq!(r1["timing"]["total_cycles"], r2["timing"]["total_cycles"]);

    // Changing SF's scale changes the outputs: verification fails, exit 1.
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--arg-spec",
            spec_s,
            "--set-arg",
            "4=0.5",
        ],
    );
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("set-arg: slot 4 (scalar FLOAT32) set to 0.5"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("FAIL: 3 of 3 outputs differ from the dump"),
        "{}",
        o.stdout
    );
    let r = load(&workspace(cwd, &o.stdout).join("replay_report.json"));
    assert_eq!(r["overall_pass"], false);
    assert!(
        r["verification"]["outputs"][0]["differing"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(r["overrides"].as_array().unwrap().len(), 1);
}

#[test]
fn a_kernel_args_only_dump_zero_fills_and_is_not_verifiable() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-kernel-args"]);
    let cwd = tmp.path();
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "paged_attention",
            "--func-id",
            "1",
            "--dump-dir",
            "run/tensor_dump",
        ],
    );
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("no --dispatch-id given: replaying dispatch"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("tensor dump: none in run/tensor_dump"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("zero-filled slots (4):"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("NOT VERIFIED: 4 of 4 outputs could not be compared"),
        "{}",
        o.stdout
    );
    let r = load(&workspace(cwd, &o.stdout).join("replay_report.json"));
    assert_eq!(r["zero_filled"].as_array().unwrap().len(), 4);
    assert_eq!(r["overall_pass"], false);
    assert!(r["verification"]["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["status"] == "not_verifiable"));
    check_tree(&workspace(cwd, &o.stdout));
}

#[test]
fn without_dump_dir_the_case_is_run_first() {
    let tmp = tempfile::tempdir().unwrap();
    let o = simpler(
        tmp.path(),
        &[
            "insight-trace",
            "paged_attention",
            "--case",
            "CaseSmall1",
            "--func-id",
            "2",
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .contains("ran paged_attention CaseSmall1 (seed 0) with --dump-all"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("PASS: 1 output bit-exact"),
        "{}",
        o.stdout
    );
    let runs: Vec<_> = fs::read_dir(tmp.path().join("outputs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        runs.iter()
            .any(|n| n.starts_with("paged_attention_CaseSmall1_")),
        "{runs:?}"
    );
    assert!(
        runs.iter()
            .any(|n| n.starts_with("insight_trace_paged_attention_CaseSmall1_f2_d")),
        "{runs:?}"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    let err = |args: &[&str]| {
        let mut a = vec!["insight-trace", "paged_attention"];
        a.extend_from_slice(args);
        let o = simpler(cwd, &a);
        assert_eq!(o.code, 2, "{args:?}: {}\n{}", o.stdout, o.stderr);
        assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
        o.stderr
    };
    let e = err(&["--func-id", "1", "--dump-dir", "nowhere"]);
    assert!(
        e.contains("--dump-dir nowhere") && e.contains("does not exist"),
        "{e}"
    );
    fs::create_dir(cwd.join("empty")).unwrap();
    let e = err(&["--func-id", "1", "--dump-dir", "empty"]);
    assert!(
        e.contains("no tensor dump") && e.contains("no kernel_args_dump.json"),
        "{e}"
    );
    let e = err(&["--func-id", "7", "--dump-dir", "run"]);
    assert!(
        e.contains("--func-id 7")
            && e.contains("valid func ids: 0 qk_matmul [aic], 1 softmax_prepare [aiv]"),
        "{e}"
    );
    let qk = dispatches(cwd)
        .into_iter()
        .find(|d| d.1 == 0)
        .unwrap()
        .0
        .to_string();
    let e = err(&["--func-id", "1", "--dispatch-id", &qk, "--dump-dir", "run"]);
    assert!(
        e.contains(&format!(
            "dispatch_id {qk} belongs to func_id 0 (qk_matmul)"
        )),
        "{e}"
    );
    let e = err(&["--func-id", "1", "--dispatch-id", "77", "--dump-dir", "run"]);
    assert!(
        e.contains("available (func_id, dispatch_id) pairs: func_id 0: dispatch_id"),
        "{e}"
    );
    let e = err(&["--dump-dir", "run"]);
    assert!(e.contains("--func-id is required with --dump-dir"), "{e}");
    let e = err(&["--func-id", "1", "--dump-dir", "run", "--set-arg", "12=1"]);
    assert!(
        e.contains("--set-arg 12=1: this dispatch has no slot 12"),
        "{e}"
    );
    let e = err(&["--func-id", "1", "--dump-dir", "run", "--set-arg", "48=1"]);
    assert!(e.contains("slot 48 is the local context slot"), "{e}");
    let e = err(&["--case", "CaseTiny", "--func-id", "1", "--dump-dir", "run"]);
    assert!(
        e.contains("no case 'CaseTiny'") && e.contains("CaseSmall1"),
        "{e}"
    );
    let e = err(&[
        "--case",
        "CaseSmall2",
        "--func-id",
        "1",
        "--dump-dir",
        "run",
    ]);
    assert!(e.contains("was written by case CaseSmall1"), "{e}");
    let o = simpler(
        cwd,
        &[
            "insight-trace",
            "mixed_example",
            "--func-id",
            "1",
            "--dump-dir",
            "run",
        ],
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("written by workload paged_attention"),
        "{}",
        o.stderr
    );
    fs::create_dir(cwd.join("taken")).unwrap();
    let e = err(&["--func-id", "1", "--dump-dir", "run", "--output", "taken"]);
    assert!(
        e.contains("--output taken: the directory already exists"),
        "{e}"
    );

    // A malformed spec names the field.
    let (_, ws) = trace(
        cwd,
        "paged_attention",
        1,
        dispatches(cwd).into_iter().find(|d| d.1 == 1).unwrap().0,
    );
    let text = fs::read_to_string(ws.join("replay_spec.json")).unwrap();
    fs::write(
        cwd.join("bad.json"),
        text.replacen("\"shape\"", "\"shapes\"", 1),
    )
    .unwrap();
    let e = err(&["--arg-spec", "bad.json"]);
    assert!(
        e.contains("bad.json: field args[0].shapes") && e.contains("unknown field `shapes`"),
        "{e}"
    );
    fs::write(
        cwd.join("bad2.json"),
        text.replacen("\"block_num\": 1", "\"block_num\": 0", 1),
    )
    .unwrap();
    let e = err(&["--arg-spec", "bad2.json"]);
    assert!(e.contains("bad2.json: field dispatch.block_idx"), "{e}");
    let e = err(&["--arg-spec", "missing.json"]);
    assert!(
        e.contains("missing.json: cannot read the replay spec"),
        "{e}"
    );
    // Damaged tensor dump: the reader's message, naming the file.
    let bin = cwd.join("run/tensor_dump/tensor_dump.bin");
    let len = fs::metadata(&bin).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let e = err(&["--func-id", "1", "--dump-dir", "run"]);
    assert!(
        e.contains("tensor_dump.bin") && e.contains("needs bytes"),
        "{e}"
    );
}

/// `simpler <args>` in `cwd`, killed and failed after 20 s (a FIFO read
/// where a regular file was expected used to hang for ever).
pub(crate) fn simpler_within_20s(cwd: &Path, args: &[&str]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_simpler"))
        .current_dir(cwd)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run simpler");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("simpler {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub(crate) fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

/// A spec, or a data file it names, that is a FIFO or a device is refused
/// by name (it used to hang, or read `/dev/zero` until memory ran out);
/// a spec whose func id, kernel name or GM size is wrong names the user's
/// file, not the workspace's copy, and leaves no workspace behind.
#[test]
fn bad_specs_and_data_files_are_refused_before_a_workspace_exists() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    let sf = dispatches(cwd).into_iter().find(|d| d.1 == 1).unwrap().0;
    let (_, ws) = trace(cwd, "paged_attention", 1, sf);
    let spec = load(&ws.join("replay_spec.json"));
    mkfifo(&cwd.join("pipe"));
    let refused = |name: &str, spec: &Value, want: &[&str]| {
        fs::write(cwd.join(name), spec.to_string()).unwrap();
        let o = simpler_within_20s(
            cwd,
            &[
                "insight-trace",
                "paged_attention",
                "--arg-spec",
                name,
                "--output",
                "ws",
            ],
        );
        assert_eq!(o.code, 2, "{name}: {}\n{}", o.stdout, o.stderr);
        for w in want {
            assert!(o.stderr.contains(w), "{name}: {:?} lacks {w:?}", o.stderr);
        }
        assert!(!cwd.join("ws").exists(), "{name}: a workspace was left");
    };
    let pipe = cwd.join("pipe").display().to_string();
    for (file, what) in [(pipe.as_str(), "a FIFO"), ("/dev/zero", "a device")] {
        let e = format!("cannot read the replay spec: it is {what}, not a regular file");
        let o = simpler_within_20s(
            cwd,
            &["insight-trace", "paged_attention", "--arg-spec", file],
        );
        assert_eq!(o.code, 2, "{file}: {}", o.stderr);
        assert!(o.stderr.contains(&e), "{file}: {}", o.stderr);
        // An empty view needs no bytes: the file is still never opened blocking.
        let mut s = spec.clone();
        s["args"][0]["shape"] = serde_json::json!([0, 16]);
        s["args"][0]["data"] = serde_json::json!({"source": "file", "path": file});
        let e = format!("field args[0].data: {file}: not a regular file ({what})");
        refused("data.json", &s, &[&format!("data.json: {e}")]);
    }
    let mut s = spec.clone();
    s["func_id"] = 42.into();
    refused(
        "func.json",
        &s,
        &["func.json: field func_id: 42 is not a kernel of the workload"],
    );
    let mut s = spec.clone();
    s["kernel"] = "qk_matmul".into();
    refused(
        "kernel.json",
        &s,
        &["kernel.json: field kernel: \"qk_matmul\", but func_id 1 is 'softmax_prepare'"],
    );
    let mut s = spec;
    s["args"][0]["size"] = (1u64 << 40).into();
    refused(
        "size.json",
        &s,
        &["size.json: field args[0].size: the replay would need"],
    );
}

/// A bad slot in the kernel args dump is reported against the file and
/// dispatch it was read from (it said `replay spec: field args[0].size`,
/// naming no file): on one dispatch (exit 2) and in `--all`'s FAILED line,
/// whose summary says the dispatch could not be replayed.
#[test]
fn a_bad_slot_is_named_by_its_dump_file_and_dispatch() {
    let tmp = dumped("paged_attention", "CaseSmall1", &["--dump-all"]);
    let cwd = tmp.path();
    let path = cwd.join("run/tensor_dump/kernel_args_dump.json");
    let mut k = load(&path);
    let d = &mut k["dispatches"][0];
    let (id, func) = (
        d["dispatch_id"].as_u64().unwrap(),
        d["func_id"].as_u64().unwrap(),
    );
    d["args"][0]["size"] = Value::from(99_999_999_999u64);
    fs::write(&path, serde_json::to_vec(&k).unwrap()).unwrap();
    let (id, func) = (id.to_string(), func.to_string());
    let one = [
        "insight-trace",
        "paged_attention",
        "--func-id",
        &func,
        "--dispatch-id",
        &id,
        "--dump-dir",
        "run",
    ];
    let o = simpler(cwd, &one);
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    // Shown as the user named the folder (the spec keeps it absolute).
    let named = format!(
        "the spec rebuilt from run/tensor_dump/kernel_args_dump.json, dispatch {id}: field args[0].size: "
    );
    assert!(o.stderr.contains(&named), "{named:?} not in {}", o.stderr);
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
    assert!(o.stdout.contains(&named), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("not bit-exact (1 could not be replayed) in"),
        "{}",
        o.stdout
    );
}
