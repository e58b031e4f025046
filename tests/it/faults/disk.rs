//! Full disks, for real: runs whose working folder is a small tmpfs. What
//! reached the disk is described by an incomplete manifest with the reason
//! `write failed: No space left on device` (records byte-identical to a
//! run on a roomy disk, the rest counted as dropped), the CLI says the
//! same, and when not even the manifest fits, nothing is left.

use std::path::Path;

use super::{
    assert_no_tmp, assert_records_match, case_large, on_tmpfs, text, Loaded, Reference, Status,
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
/// write failed; files it says were written parse, the others are absent.
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
                let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
                    .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
                assert_eq!(j["schema_version"], 1, "{what}: {name}");
                assert!(
                    err.contains(&format!("/{name}")),
                    "{what}: {name} not reported: {err}"
                );
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
