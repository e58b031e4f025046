//! Every diagnostic on this crate's own kernels: the run's dumps hold
//! what the kernels really computed (recomputed here from the dumped
//! inputs), and the replay of each dispatch reproduces them bit for bit.

use std::path::Path;

use serde_json::Value;

use super::expect;

/// `(manifest, payload)` of the native dump in `run`.
fn read_dump(run: &Path) -> (Value, Vec<u8>) {
    let dir = run.join("tensor_dump");
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("tensor_dump.json")).unwrap()).unwrap();
    let bin = std::fs::read(dir.join("tensor_dump.bin")).unwrap();
    (m, bin)
}

/// The f32 payload of the record of `func`, `stage`, `arg`.
fn f32s(m: &Value, bin: &[u8], func: u64, stage: &str, arg: u64) -> (Vec<f32>, Vec<u64>) {
    let r = m["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["func_id"][0] == func && r["stage"] == stage && r["arg_index"] == arg)
        .unwrap_or_else(|| panic!("no record func {func} {stage} arg {arg}"));
    let (o, n) = (
        r["bin_offset"].as_u64().unwrap() as usize,
        r["bin_size"].as_u64().unwrap() as usize,
    );
    let v = bin[o..o + n]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let shape = r["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect();
    (v, shape)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn list_shows_the_crate_workload_first_then_the_bundled_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = expect(tmp.path(), &["list"], 0);
    assert!(
        out.starts_with("dense_relu (yours)  — out = relu("),
        "{out}"
    );
    for want in [
        "case Small (default)",
        "case Wide",
        "kernel func_id 0 matmul [aic]",
        "kernel func_id 1 axpy_relu [aiv]",
        "\npaged_attention  — ",
    ] {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
}

/// The dumps of a `--dump-all` run hold exactly what the kernels
/// computed: `h` recomputed in f32 from the dumped `x` and `w` (k summed
/// in order), `out = max(alpha·h + bias, 0)` from the dumped `h`, `bias`
/// and `alpha`'s bits — compared bit for bit.
#[test]
fn a_dump_all_run_dumps_what_the_kernels_computed() {
    let tmp = tempfile::tempdir().unwrap();
    for (case, seed) in [("Small", "0"), ("Wide", "7")] {
        let run = format!("run_{case}");
        let out = expect(
            tmp.path(),
            &[
                "run",
                "dense_relu",
                "--case",
                case,
                "--seed",
                seed,
                "--dump-all",
                "--output",
                &run,
            ],
            0,
        );
        // The axpy_relu task's producer may have finished before its
        // submit: then it needs no edge.
        assert!(
            out.contains("2 tasks, 1 edge, 5 dispatches")
                || out.contains("2 tasks, 0 edges, 5 dispatches"),
            "{out}"
        );
        assert!(out.contains("\nPASS  all "), "{out}");
        let (m, bin) = read_dump(&tmp.path().join(&run));
        let (x, xs) = f32s(&m, &bin, 0, "before_dispatch", 0);
        let (w, ws) = f32s(&m, &bin, 0, "before_dispatch", 1);
        let (h, hs) = f32s(&m, &bin, 0, "after_completion", 2);
        let (mm, k, n) = (xs[0] as usize, xs[1] as usize, ws[1] as usize);
        assert_eq!(hs, vec![mm as u64, n as u64]);
        let mut want = vec![0f32; mm * n];
        for i in 0..mm {
            for j in 0..n {
                want[i * n + j] = (0..k).fold(0f32, |acc, p| acc + x[i * k + p] * w[p * n + j]);
            }
        }
        assert_eq!(bits(&h), bits(&want), "{case}: h = x·w");
        let (h_in, _) = f32s(&m, &bin, 1, "before_dispatch", 0);
        assert_eq!(
            bits(&h_in),
            bits(&h),
            "{case}: the consumer read what the producer wrote"
        );
        let (bias, _) = f32s(&m, &bin, 1, "before_dispatch", 1);
        let alpha = m["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "scalar")
            .map(|r| {
                r["bits"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("0x")
                    .to_string()
            })
            .map(|b| f32::from_bits(u64::from_str_radix(&b, 16).unwrap() as u32))
            .unwrap();
        assert_eq!(alpha, 0.5);
        let (got, _) = f32s(&m, &bin, 1, "after_completion", 2);
        let want: Vec<f32> = h_in
            .iter()
            .zip(&bias)
            .map(|(&h, &b)| (h * alpha + b).max(0.0))
            .collect();
        assert_eq!(
            bits(&got),
            bits(&want),
            "{case}: out = relu(alpha·h + bias)"
        );
        assert!(
            got.contains(&0.0) && got.iter().any(|&v| v > 0.0),
            "relu clipped some"
        );
    }
}

/// `--dump-tensor 1` keeps only what the orchestration marked with
/// `.dump()`: the axpy_relu task's `out`.
#[test]
fn dump_level_1_keeps_the_marked_output_only() {
    let tmp = tempfile::tempdir().unwrap();
    expect(
        tmp.path(),
        &["run", "dense_relu", "--dump-tensor", "1", "--output", "r"],
        0,
    );
    let (m, _) = read_dump(&tmp.path().join("r"));
    let recs = m["tensors"].as_array().unwrap();
    assert_eq!(recs.len(), 1, "{m:#}");
    assert_eq!(
        (
            recs[0]["func_id"][0].as_u64(),
            recs[0]["arg_index"].as_u64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(recs[0]["stage"], "after_completion");
}

/// `insight-trace --all` replays the matmul and the four SPMD blocks of
/// axpy_relu from the dump and finds every output bit-exact; one block
/// alone exports a trace whose events name the sub-core.
#[test]
fn every_dispatch_replays_bit_exact_and_exports_a_trace() {
    let tmp = tempfile::tempdir().unwrap();
    expect(
        tmp.path(),
        &[
            "run",
            "dense_relu",
            "--case",
            "Wide",
            "--dump-all",
            "--output",
            "r",
        ],
        0,
    );
    let out = expect(
        tmp.path(),
        &[
            "insight-trace",
            "dense_relu",
            "--case",
            "Wide",
            "--dump-dir",
            "r",
            "--all",
        ],
        0,
    );
    assert!(out.contains("PASS: all 5 dispatches bit-exact"), "{out}");
    for row in [
        "   0  matmul                      1         1",
        "   1  axpy_relu                   4         4",
    ] {
        assert!(out.contains(row), "{row:?} missing:\n{out}");
    }
    let out = expect(
        tmp.path(),
        &[
            "insight-trace",
            "dense_relu",
            "--case",
            "Wide",
            "--dump-dir",
            "r",
            "--func-id",
            "1",
            "--dispatch-id",
            "4",
            "--output",
            "ws",
        ],
        0,
    );
    assert!(out.contains("block 3/4"), "{out}");
    assert!(
        out.contains("PASS bit-exact on the 2048 elements this block wrote (25.0%)"),
        "{out}"
    );
    let sim = walk(&tmp.path().join("ws"))
        .into_iter()
        .find(|p| p.ends_with("simulator/trace.json"))
        .unwrap();
    let trace: Value = serde_json::from_slice(&std::fs::read(sim).unwrap()).unwrap();
    let events = trace["traceEvents"]
        .as_array()
        .or(trace.as_array())
        .unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str())
        .collect();
    for instr in ["TLOAD", "TMULS", "TADD", "TMAXS", "TSTORE"] {
        assert!(
            names.iter().any(|n| n.starts_with(instr)),
            "{instr} not in {names:?}"
        );
    }
    assert!(events
        .iter()
        .filter(|e| e["ph"] == "X")
        .all(|e| e["pid"].is_string()));
}

fn walk(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
