//! Readers stay safe and honest on hostile files (issue "(1/6) Truth under
//! faults", point 7; DESIGN §7): a FIFO or an outside path as `bin_file`,
//! a payload file truncated while a diff reads it, header counters that
//! contradict the records, duplicate keys, overlapping payload ranges,
//! misspelled fields, 10 MB bad values.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use simpler_inspect::diff::{diff, DiffFailure, DiffOptions};
use simpler_inspect::stream::RecordStream;
use simpler_inspect::{Dump, ErrorKind};

use crate::common::{self, f32_bytes, tensor, Manifest};

/// A native dump of three f32 tensors (bytes 0..16, 16..32, 32..48).
fn three() -> (Manifest, Vec<u8>) {
    common::build(vec![
        tensor(
            1,
            &[0],
            "before_dispatch",
            "input",
            0,
            "FLOAT32",
            &[4],
            f32_bytes(&[1.0; 4]),
        ),
        tensor(
            1,
            &[0],
            "before_dispatch",
            "input",
            1,
            "FLOAT32",
            &[4],
            f32_bytes(&[2.0; 4]),
        ),
        tensor(
            2,
            &[0],
            "after_completion",
            "output",
            0,
            "FLOAT32",
            &[4],
            f32_bytes(&[3.0; 4]),
        ),
    ])
}

/// Open on another thread; `None` if it did not return within a minute
/// (a hang, which is what a FIFO used to cause).
fn open_guarded(p: PathBuf) -> Option<Result<Dump, simpler_inspect::Error>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Dump::open(&p));
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", p.display());
}

#[test]
fn a_fifo_as_bin_file_or_manifest_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut m, bin) = three();
    m.header.bin_file = Some(Some("pipe.bin".into()));
    let dir = common::write(tmp.path(), &m, &bin);
    mkfifo(&dir.join("pipe.bin"));
    let e = open_guarded(dir.clone())
        .expect("reader hung on a FIFO")
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotRegular("a FIFO")), "{e}");
    assert!(
        e.to_string()
            .contains("pipe.bin: not a regular file (a FIFO)"),
        "{e}"
    );

    let other = tmp.path().join("fifo_manifest");
    std::fs::create_dir(&other).unwrap();
    mkfifo(&other.join("tensor_dump.json"));
    let e = open_guarded(other.join("tensor_dump.json"))
        .expect("reader hung")
        .unwrap_err();
    assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
    // A device is refused the same way.
    let (m2, _) = three();
    let mut m2 = m2;
    m2.header.bin_file = Some(Some("null".into()));
    let dir2 = common::write(&tmp.path().join("dev"), &m2, &bin);
    std::os::unix::fs::symlink("/dev/null", dir2.join("null")).unwrap();
    let e = Dump::open(&dir2).unwrap_err().to_string();
    assert!(
        e.contains("a device") || e.contains("outside the dump folder"),
        "{e}"
    );
    // A device node inside the folder itself (mknod needs CAP_MKNOD).
    std::fs::remove_file(dir2.join("null")).unwrap();
    let made = std::process::Command::new("mknod")
        .arg(dir2.join("null"))
        .args(["c", "1", "3"])
        .output()
        .unwrap();
    if !made.status.success() {
        eprintln!(
            "SKIPPED the device node: mknod: {}",
            String::from_utf8_lossy(&made.stderr).trim()
        );
        return;
    }
    let e = open_guarded(dir2.clone())
        .expect("reader hung on a device")
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotRegular("a device")), "{e}");
    assert!(
        e.to_string()
            .contains("null: not a regular file (a device)"),
        "{e}"
    );
}

#[test]
fn bin_file_outside_the_dump_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut m, bin) = three();
    for (name, want) in [
        ("/etc/passwd", "is an absolute path"),
        ("../tensor_dump.bin", "leaves the dump folder"),
        ("sub/../../x.bin", "leaves the dump folder"),
    ] {
        m.header.bin_file = Some(Some(name.into()));
        let dir = common::write(tmp.path(), &m, &bin);
        let e = Dump::open(&dir).unwrap_err().to_string();
        assert!(
            e.contains("header field bin_file") && e.contains(want),
            "{name}: {e}"
        );
    }
    // A symlink inside the folder that leads out.
    let outside = tmp.path().join("elsewhere.bin");
    std::fs::write(&outside, &bin).unwrap();
    m.header.bin_file = Some(Some("link.bin".into()));
    let dir = common::write(tmp.path(), &m, &bin);
    std::os::unix::fs::symlink(&outside, dir.join("link.bin")).unwrap();
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert!(e.contains("outside the dump folder"), "{e}");
    // A symlink that stays inside is fine.
    std::fs::remove_file(dir.join("link.bin")).unwrap();
    std::os::unix::fs::symlink("tensor_dump.bin", dir.join("link.bin")).unwrap();
    assert_eq!(Dump::open(&dir).unwrap().records().len(), 3);
}

#[test]
fn a_bin_truncated_under_a_running_diff_is_an_error_not_a_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = three();
    let a = common::write(&tmp.path().join("a"), &m, &bin);
    let b = common::write(&tmp.path().join("b"), &m, &bin);
    let (da, db) = (Dump::open(&a).unwrap(), Dump::open(&b).unwrap());
    // B's payload shrinks after it was opened and validated, as a writer
    // or a full disk could do to it mid-read.
    std::fs::OpenOptions::new()
        .write(true)
        .open(b.join("tensor_dump.bin"))
        .unwrap()
        .set_len(20)
        .unwrap();
    let e = diff(&da, &db, &DiffOptions::default()).unwrap_err();
    let DiffFailure::Read { side, error } = &e else {
        panic!("expected a read error, got {e}");
    };
    assert_eq!(*side, "B");
    assert!(
        matches!(error.kind, ErrorKind::BinTooShort { index: 1, .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "dump B: {}: tensor_dump.bin is 20 bytes but record 1 (task 0x0000000000000001, arg 1) needs bytes 16..32",
            b.join("tensor_dump.bin").display()
        )
    );
    // The streaming path reads by range too.
    let s = RecordStream::open_manifest(&a.join("tensor_dump.json")).unwrap();
    let info = s.info().clone();
    let recs: Vec<_> = s.map(Result::unwrap).collect();
    std::fs::OpenOptions::new()
        .write(true)
        .open(a.join("tensor_dump.bin"))
        .unwrap()
        .set_len(0)
        .unwrap();
    let e = info.payload.read(&recs[2]).unwrap_err();
    assert!(e.to_string().contains("needs bytes 32..48"), "{e}");
}

#[test]
fn a_truncated_record_beside_truncated_tensors_0_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut m, mut bin) = three();
    m.tensors[2].truncated = true;
    m.tensors[2].bin_size = 8;
    bin.truncate(40);
    m.header.truncated_tensors = 0;
    let dir = common::write(tmp.path(), &m, &bin);
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "header field truncated_tensors is 0 but the records have 1 record flagged truncated"
        ),
        "{e}"
    );
}

/// The two other counters a record flags: `dropped_overwrite` (records
/// flagged overwritten) and `hang_snapshot` (records at that stage), each
/// checked both ways — a flagged record the header does not count, and a
/// count no record backs.
#[test]
fn overwritten_and_hang_snapshot_counters_must_agree_with_records() {
    use simpler_format::vocab::{Stage, Status};
    let tmp = tempfile::tempdir().unwrap();
    let open = |name: &str, m: &Manifest, bin: &[u8]| {
        let dir = common::write(&tmp.path().join(name), m, bin);
        Dump::open(&dir).map(|d| d.records().len())
    };
    let (mut m, bin) = three();
    m.tensors[2].overwritten = true;
    m.header.dropped_overwrite = 1;
    assert_eq!(open("overwritten_ok", &m, &bin).unwrap(), 3);
    for (n, want) in [
        (
            0,
            "header field dropped_overwrite is 0 but the records have 1 record flagged overwritten",
        ),
        (
            2,
            "header field dropped_overwrite is 2 but the records have 1 record flagged overwritten",
        ),
    ] {
        m.header.dropped_overwrite = n;
        let e = open(&format!("overwritten_{n}"), &m, &bin).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Counter { .. }), "{e}");
        assert!(e.to_string().ends_with(want), "{e}");
    }

    let (mut m, bin) = three();
    m.tensors[2].stage = Stage::HangSnapshot;
    m.header.after_completion = 0;
    m.header.hang_snapshot = 1;
    m.header.status = Some(Status::Incomplete);
    m.header.reason = Some("interrupted by SIGINT".into());
    assert_eq!(open("hang_ok", &m, &bin).unwrap(), 3);
    for (n, want) in [
        (
            0,
            "header field hang_snapshot is 0 but the records have 1 at that stage",
        ),
        (
            2,
            "header field hang_snapshot is 2 but the records have 1 at that stage",
        ),
    ] {
        m.header.hang_snapshot = n;
        let e = open(&format!("hang_{n}"), &m, &bin).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Counter { .. }), "{e}");
        assert!(e.to_string().ends_with(want), "{e}");
    }
}

#[test]
fn duplicate_keys_and_overlapping_ranges_name_both_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut m, bin) = three();
    m.tensors[1].arg_index = 0;
    let dir = common::write(&tmp.path().join("dup"), &m, &bin);
    let e = Dump::open(&dir).unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::Conflict { first, second, .. } if first.0 == 0 && second.0 == 1),
        "{e}"
    );
    assert!(e.to_string().contains("records 0 (task 0x0000000000000001, arg 0) and 1 (task 0x0000000000000001, arg 0): duplicate key"), "{e}");

    // Record 2 reuses bytes of record 0 (not its neighbour).
    let (mut m, bin) = three();
    m.tensors[2].bin_offset = 8;
    let dir = common::write(&tmp.path().join("overlap"), &m, &bin);
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert!(
        e.contains("records 0 (task 0x0000000000000001, arg 0) and 2 (task 0x0000000000000002, arg 0): payload ranges overlap (bytes 0..16 and 8..24)"),
        "{e}"
    );
}

#[test]
fn misspelled_fields_are_errors_in_our_layout_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = three();
    let mut v = serde_json::to_value(&m).unwrap();
    v["tensors"][1]["adr"] = v["tensors"][1]["addr"].take();
    v["tensors"][1].as_object_mut().unwrap().remove("addr");
    let dir = common::write_raw(&tmp.path().join("rec"), &v.to_string(), &bin);
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert!(
        e.contains("field tensors[1]") && e.contains("unknown field `adr`"),
        "{e}"
    );

    let mut v = serde_json::to_value(&m).unwrap();
    v["dump_levle"] = serde_json::json!(2);
    let dir = common::write_raw(&tmp.path().join("head"), &v.to_string(), &bin);
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert!(e.contains("unknown field `dump_levle`"), "{e}");

    // The upstream runtime's files may carry keys we do not know.
    let mut v = serde_json::to_value(&m).unwrap();
    v.as_object_mut().unwrap().remove("schema_version");
    v["payload_note"] = serde_json::json!("x");
    v["tensors"][1]["extra"] = serde_json::json!(1);
    let dir = common::write_raw(&tmp.path().join("up"), &v.to_string(), &bin);
    assert_eq!(Dump::open(&dir).unwrap().records().len(), 3);
}

#[test]
fn a_10_mb_bad_value_is_echoed_cut_to_80_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = three();
    let huge = "Q".repeat(10 << 20);
    for field in ["dtype", "task_id", "stage"] {
        let mut v = serde_json::to_value(&m).unwrap();
        v["tensors"][0][field] = serde_json::json!(huge);
        let dir = common::write_raw(&tmp.path().join(field), &v.to_string(), &bin);
        let e = Dump::open(&dir).unwrap_err().to_string();
        assert!(e.len() < 600, "{field}: a {} byte message", e.len());
        assert!(
            e.contains("QQQQ") && e.contains("(10485760 chars)"),
            "{field}: {e}"
        );
    }
}

/// Records reach the reader while the worker is still parsing: the first
/// ones arrive although the manifest is cut short further on.
#[test]
fn records_stream_before_the_manifest_is_parsed() {
    let tmp = tempfile::tempdir().unwrap();
    let n = 5000u64;
    let recs: Vec<_> = (0..n)
        .map(|t| {
            tensor(
                t,
                &[0],
                "before_dispatch",
                "input",
                0,
                "FLOAT32",
                &[1],
                f32_bytes(&[t as f32]),
            )
        })
        .collect();
    let (m, bin) = common::build(recs);
    let text = serde_json::to_string_pretty(&m).unwrap();
    let dir = common::write_raw(tmp.path(), &text[..text.len() * 9 / 10], &bin);
    let mut s = RecordStream::open_manifest(&dir.join("tensor_dump.json")).unwrap();
    let first = s.next().unwrap().unwrap();
    assert_eq!(first.task_id.0, 0);
    let got: Vec<_> = s.by_ref().collect();
    let ok = got.iter().filter(|r| r.is_ok()).count();
    assert!(ok > 4000, "{ok} records before the cut");
    let e = got.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TruncatedJson { .. }), "{e}");
    // Dropping a stream early stops its worker (this returns).
    let mut s = RecordStream::open_manifest(&dir.join("tensor_dump.json")).unwrap();
    assert!(s.next().unwrap().is_ok());
    drop(s);
}
