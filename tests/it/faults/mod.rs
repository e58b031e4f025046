//! The fault suite (DESIGN §5 "Abnormal end", "Hang snapshot", "Atomic,
//! durable files", §11; issue 10 points 2–6 and 8): every fault is caused
//! for real — child processes killed with SIGINT/SIGTERM, kernels that
//! never finish, tmpfs mounts that fill up, two processes racing for one
//! `--output`, closed pipes — and what was left is loaded and compared
//! with a complete run of the same seed, payload byte for payload byte.
//!
//! `SIMPLER_TEST_BIN=/path/to/simpler` runs the suite against another build
//! (how it was checked to fail on the code before these fixes).

mod cli_numbers;
mod disk;
mod hang;
mod output;
mod signals;
mod upstream;

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::{mpsc, OnceLock},
    time::{Duration, Instant},
};

pub use crate::common::{assert_no_tmp, files, text};
pub use crate::common::{Manifest, RecordJson, Stage, Status};

/// The binary under test: this build, or `SIMPLER_TEST_BIN`.
pub fn binary() -> PathBuf {
    std::env::var_os("SIMPLER_TEST_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_simpler")),
        PathBuf::from,
    )
}

/// Signals the tests send, which a child must start with at their default
/// disposition to take them (the binary leaves alone what it started
/// with ignored, and the shells of this machine ignore SIGQUIT).
const SENT: [i32; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGALRM,
];

/// The `simpler` binary, test workloads enabled, in `cwd`, started as a
/// terminal's foreground job would be: the [`SENT`] signals at their
/// defaults, whatever the test runner ignores.
pub fn simpler(cwd: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(binary());
    c.current_dir(cwd).env("SIMPLER_TEST_WORKLOADS", "1");
    // SAFETY: runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: signal(2) is one, and the
    // closure touches no memory but the constant list.
    unsafe {
        c.pre_exec(|| {
            for sig in SENT {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c
}

/// A pseudo-terminal: `(master, slave)`.
pub fn pty() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the locals; the null
    // name, termios and window size pointers are allowed ("no value").
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // The master must not leak into a child (openpty does not set
    // close-on-exec): one that holds it keeps the terminal alive.
    // SAFETY: fcntl on a descriptor just opened.
    let r = unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
    assert_eq!(r, 0, "fcntl: {}", std::io::Error::last_os_error());
    // SAFETY: both were just opened and are owned by nothing else.
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// Run to the end.
pub fn run(cwd: &Path, args: &[&str]) -> Output {
    simpler(cwd).args(args).output().expect("run simpler")
}

/// A child whose stderr lines arrive on a channel as they are printed.
pub struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    /// Every stderr line seen so far.
    pub stderr: Vec<String>,
}

impl Running {
    /// Start `simpler args` in `cwd`.
    pub fn start(cwd: &Path, args: &[&str]) -> Running {
        let mut cmd = simpler(cwd);
        cmd.args(args);
        Running::spawn(cmd)
    }

    /// Start `cmd` (from [`simpler`]).
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn simpler");
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        Running {
            child,
            lines,
            stderr: Vec::new(),
        }
    }

    /// Wait (up to a minute) until `n` stderr lines contain `needle`.
    pub fn wait_for_lines(&mut self, needle: &str, n: usize) {
        let end = Instant::now() + Duration::from_secs(60);
        while self.stderr.iter().filter(|l| l.contains(needle)).count() < n {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.stderr.push(l),
                Err(_) => panic!("no {n} lines with {needle:?} on stderr: {:?}", self.stderr),
            }
        }
    }

    /// Send `sig` (`INT`, `TERM`) with kill(1).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args(["-s", sig, &self.child.id().to_string()])
            .status()
            .expect("kill(1)")
            .success();
        assert!(ok, "kill -s {sig} failed");
    }

    /// Wait for the exit; the exit code and every stderr line.
    pub fn finish(self) -> (Option<i32>, String) {
        let (status, err) = self.finish_status();
        (status.code(), err)
    }

    /// Wait for the exit; the exit status and every stderr line.
    pub fn finish_status(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().unwrap();
        // The reader thread ends with the pipe.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.stderr.push(l);
        }
        (status, self.stderr.join("\n"))
    }
}

/// A dump read back: the manifest and the whole `.bin`.
pub struct Loaded {
    pub m: Manifest,
    pub bin: Vec<u8>,
    /// Written in the upstream layout (`args_dump/`): hang snapshots are
    /// `after_completion` records marked `hang_snapshot: true` (here given
    /// their own stage back) and counted in `after_completion`.
    pub upstream: bool,
}

impl Loaded {
    /// `run_dir/tensor_dump/`, or `run_dir/args_dump/` when the run wrote
    /// the upstream layout.
    pub fn open(run_dir: &Path) -> Loaded {
        let upstream = !run_dir.join("tensor_dump").exists() && run_dir.join("args_dump").exists();
        let (dir, json) = if upstream {
            (run_dir.join("args_dump"), "args_dump.json")
        } else {
            (run_dir.join("tensor_dump"), "tensor_dump.json")
        };
        let text = std::fs::read(dir.join(json))
            .unwrap_or_else(|e| panic!("{}: no manifest: {e}", dir.display()));
        let mut m = if upstream {
            serde_json::from_slice::<Manifest>(&text).unwrap()
        } else {
            crate::common::parse_strict(&text)
        };
        for r in &mut m.tensors {
            if r.hang_snapshot == Some(true) {
                assert!(upstream, "the marker is the upstream layout's");
                assert_eq!(r.stage, Stage::AfterCompletion, "a marked snapshot");
                r.stage = Stage::HangSnapshot;
            }
        }
        let bin = match m.header.bin_file.clone() {
            Some(Some(name)) => std::fs::read(dir.join(name)).unwrap(),
            _ => Vec::new(),
        };
        Loaded { m, bin, upstream }
    }

    /// The payload of `r`, checking its range lies in the `.bin`.
    pub fn bytes(&self, r: &RecordJson) -> &[u8] {
        let (o, s) = (r.bin_offset as usize, r.bin_size as usize);
        assert!(
            o + s <= self.bin.len(),
            "{} {} arg {}: range past the .bin",
            r.task_id,
            r.stage,
            r.arg_index
        );
        &self.bin[o..o + s]
    }

    /// Records by (task id, stage, arg index, role); panics on duplicates.
    pub fn index(&self) -> HashMap<Key, &RecordJson> {
        let mut h = HashMap::with_capacity(self.m.tensors.len());
        for r in &self.m.tensors {
            assert!(
                h.insert(key(r), r).is_none(),
                "duplicate record {:?}",
                key(r)
            );
        }
        h
    }

    /// The header counters agree with the records; payload ranges do not
    /// overlap; the hang snapshots belong to listed, dispatched tasks.
    pub fn check_structure(&self) {
        let m = &self.m;
        let n = |f: &dyn Fn(&RecordJson) -> bool| m.tensors.iter().filter(|r| f(r)).count() as u64;
        assert_eq!(m.header.total_tensors, m.tensors.len() as u64);
        assert_eq!(
            m.header.before_dispatch,
            n(&|r| r.stage == Stage::BeforeDispatch)
        );
        let after = n(&|r| r.stage == Stage::AfterCompletion);
        let hang = n(&|r| r.stage == Stage::HangSnapshot);
        let counted_after = if self.upstream { after + hang } else { after };
        assert_eq!(m.header.after_completion, counted_after);
        assert_eq!(
            m.header.hang_snapshot,
            n(&|r| r.stage == Stage::HangSnapshot)
        );
        let mut ranges: Vec<(u64, u64)> = m
            .tensors
            .iter()
            .filter(|r| r.bin_size > 0)
            .map(|r| (r.bin_offset, r.bin_offset + r.bin_size))
            .collect();
        ranges.sort_unstable();
        assert!(
            ranges.windows(2).all(|w| w[0].1 <= w[1].0),
            "payload ranges overlap"
        );
        assert!(ranges.last().is_none_or(|r| r.1 <= self.bin.len() as u64));
        let keys: Vec<Key> = m.tensors.iter().map(key).collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "records sorted, no duplicates"
        );
        match m.header.status {
            Some(Status::Complete) => {
                assert!(m.header.unfinished_tasks.is_none() && m.header.hang_snapshot == 0)
            }
            Some(Status::Incomplete) => self.check_unfinished(),
            None => panic!("no status"),
        }
    }

    fn check_unfinished(&self) {
        use simpler_format::tensor_dump::TaskState;
        let u = self
            .m
            .header
            .unfinished_tasks
            .as_ref()
            .expect("unfinished_tasks when incomplete");
        let listed: HashMap<u64, TaskState> = u.iter().map(|t| (t.task_id.0, t.state)).collect();
        assert_eq!(listed.len(), u.len(), "a task listed twice");
        for t in u {
            match t.state {
                TaskState::Running => {
                    assert!(!t.cores.is_empty() && t.running_for_ms.is_some())
                }
                TaskState::Ready => assert!(t.cores.is_empty() && t.waiting_on.is_empty()),
                TaskState::Waiting => {
                    assert!(!t.waiting_on.is_empty(), "{} waits on nothing", t.task_id);
                    for p in &t.waiting_on {
                        assert!(
                            listed.contains_key(&p.0),
                            "{} waits on {p}, not unfinished",
                            t.task_id
                        );
                    }
                }
            }
            assert!(t.blocks_done < t.block_num || t.state != TaskState::Waiting);
        }
        let before: std::collections::HashSet<u64> = self
            .m
            .tensors
            .iter()
            .filter(|r| r.stage == Stage::BeforeDispatch)
            .map(|r| r.task_id.value)
            .collect();
        for r in self
            .m
            .tensors
            .iter()
            .filter(|r| r.stage == Stage::HangSnapshot)
        {
            assert!(
                listed.contains_key(&r.task_id.value),
                "snapshot of {} which is not unfinished",
                r.task_id
            );
            assert!(
                before.contains(&r.task_id.value),
                "snapshot of {} which was never dispatched",
                r.task_id
            );
            assert!(
                matches!(r.role.name(), "output" | "inout"),
                "{}",
                r.role.name()
            );
        }
        for r in self
            .m
            .tensors
            .iter()
            .filter(|r| r.stage == Stage::AfterCompletion)
        {
            assert!(
                !listed.contains_key(&r.task_id.value),
                "{} completed and is listed unfinished",
                r.task_id
            );
        }
    }
}

/// (task id, stage, arg index, role); stages sort as their order in a
/// task (before < after < hang).
pub type Key = (u64, Stage, u32, simpler_core::ArgRole);

pub fn key(r: &RecordJson) -> Key {
    (r.task_id.value, r.stage, r.arg_index, r.role)
}

/// Every `before_dispatch` / `after_completion` record of `got` equals the
/// same record of `reference` — metadata and payload bytes (the hang
/// snapshots are checked elsewhere). Returns how many were compared.
pub fn assert_records_match(got: &Loaded, reference: &Reference, what: &str) -> usize {
    let mut compared = 0;
    for r in got
        .m
        .tensors
        .iter()
        .filter(|r| r.stage != Stage::HangSnapshot)
    {
        let k = key(r);
        let (w, bytes) = reference
            .records
            .get(&k)
            .unwrap_or_else(|| panic!("{what}: record {k:?} is not in the complete run"));
        assert_eq!(
            (&r.dtype, &r.shape, &r.bits),
            (&w.dtype, &w.shape, &w.bits),
            "{what}: {k:?}"
        );
        assert!(
            got.bytes(r) == &reference.bin[bytes.clone()],
            "{what}: {k:?}: payload differs from the complete run"
        );
        compared += 1;
    }
    compared
}

/// A complete run's records and payload.
pub struct Reference {
    pub records: HashMap<Key, (RecordJson, std::ops::Range<usize>)>,
    pub bin: Vec<u8>,
    /// Spawn to exit of the reference run.
    pub wall: Duration,
}

impl Reference {
    /// Run `args` (a complete dumping run) into `dir/run` and index it.
    pub fn make(dir: &Path, args: &[&str]) -> Reference {
        let t0 = Instant::now();
        let mut all = args.to_vec();
        all.extend(["--output", "run"]);
        let o = run(dir, &all);
        let wall = t0.elapsed();
        assert_eq!(o.status.code(), Some(0), "reference run: {:?}", text(&o));
        let l = Loaded::open(&dir.join("run"));
        assert_eq!(l.m.header.status, Some(Status::Complete));
        let records =
            l.m.tensors
                .iter()
                .map(|r| {
                    let range = r.bin_offset as usize..(r.bin_offset + r.bin_size) as usize;
                    (key(r), (r.clone(), range))
                })
                .collect();
        Reference {
            records,
            bin: l.bin,
            wall,
        }
    }
}

/// One complete CaseLarge dump (seed 7), shared by the tests that compare
/// against it. Held in memory: its folder is removed once read (a static
/// is never dropped, so a folder kept with it would outlive the tests).
pub fn case_large() -> &'static Reference {
    static R: OnceLock<Reference> = OnceLock::new();
    R.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        Reference::make(tmp.path(), &CASE_LARGE)
    })
}

/// The CaseLarge run every kill test makes.
pub const CASE_LARGE: [&str; 7] = [
    "run",
    "paged_attention",
    "--case",
    "CaseLarge",
    "--seed",
    "7",
    "--dump-tensor",
];

/// `simpler dump view DIR --limit 1` loads the dump.
pub fn assert_view_loads(cwd: &Path, run_dir: &Path) -> String {
    let o = run(
        cwd,
        &["dump", "view", &run_dir.to_string_lossy(), "--limit", "1"],
    );
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "dump view {}: {err}",
        run_dir.display()
    );
    out
}

/// Run `simpler args` with its working folder on a fresh tmpfs mounted
/// with `options` (`size=64k`); returns its output and a copy of what it
/// left there (`None`, with the reason printed, where no tmpfs can be
/// mounted). As root the tmpfs is mounted here; otherwise inside
/// `unshare -rm`, the copy taken before the namespace ends.
pub fn on_tmpfs(options: &str, args: &[&str]) -> Option<(Output, tempfile::TempDir)> {
    let mnt = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", options, "tmpfs"])
        .arg(mnt.path())
        .output()
        .is_ok_and(|o| o.status.success());
    if mounted {
        let o = run(mnt.path(), args);
        copy_all(mnt.path(), copy.path());
        let ok = Command::new("umount")
            .arg(mnt.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "umount {}", mnt.path().display());
        return Some((o, copy));
    }
    const SCRIPT: &str = r#"mount -t tmpfs -o "$0" tmpfs "$1" || exit 97
cd "$1" || exit 97
out="$2"; shift 2
"$@"; code=$?
cp -a . "$out/"
exit $code"#;
    let o = Command::new("unshare")
        .args(["-rm", "sh", "-c", SCRIPT, options])
        .arg(mnt.path())
        .arg(copy.path())
        .arg(binary())
        .args(args)
        .env("SIMPLER_TEST_WORKLOADS", "1")
        .output();
    match o {
        Ok(o) if o.status.code() != Some(97) => Some((o, copy)),
        Ok(o) => {
            eprintln!(
                "SKIPPED: cannot mount a tmpfs, neither as root nor in `unshare -rm`: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            eprintln!("SKIPPED: cannot mount a tmpfs (not root) and no unshare(1): {e}");
            None
        }
    }
}

/// `cp -a SRC/. DST/`.
fn copy_all(src: &Path, dst: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(src.join("."))
        .arg(dst)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cp -a {} {}", src.display(), dst.display());
}
