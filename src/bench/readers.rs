//! `simpler bench readers` (DESIGN §10): `dump view` and `dump diff` of two
//! CaseLarge dumps, each in a child process: the time until the first
//! table row is printed (read from the child's stdout), the full listing,
//! the diff, and each child's peak RSS (`wait4`'s `ru_maxrss`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cli::BenchArgs;

/// The figures of one bench run.
pub struct ReadersFigures {
    /// Best time to the first table row of `dump view`.
    pub first_page: Duration,
    /// Best time of the whole `dump view` listing.
    pub full_view: Duration,
    /// Highest peak RSS of a `dump view` child, bytes.
    pub view_rss: u64,
    /// Best time of `dump diff A B`.
    pub diff: Duration,
    /// Highest peak RSS of a `dump diff` child, bytes.
    pub diff_rss: u64,
    /// Least CPU time (user + system) of a `dump diff` child: steadier
    /// than its wall time on a shared machine.
    pub diff_cpu: Duration,
    /// Size of one manifest, bytes.
    pub manifest_bytes: u64,
    /// Records in one dump.
    pub records: u64,
}

/// Write the CaseLarge dumps (seeds 0 and 1) under `root`, each by a
/// `simpler run` child: this process stays small, so the children it
/// measures later do not inherit its peak RSS through fork.
fn make_dumps(a: &BenchArgs, exe: &Path, root: &Path) -> Result<[PathBuf; 2]> {
    let mut dirs = Vec::new();
    for seed in ["0", "1"] {
        let run = root.join(format!("seed{seed}"));
        let o = Command::new(exe)
            .args([
                "run",
                "paged_attention",
                "--case",
                "CaseLarge",
                "--seed",
                seed,
            ])
            .args(["--dump-tensor", "2", "--arch", &a.chip.arch])
            .args(["--clusters", &a.chip.clusters.to_string(), "--output"])
            .arg(&run)
            .output()
            .context("running simpler run for a CaseLarge dump")?;
        if !o.status.success() {
            bail!(
                "simpler run CaseLarge seed {seed} exited with {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        dirs.push(run.join("tensor_dump"));
    }
    Ok([dirs[0].clone(), dirs[1].clone()])
}

/// What `wait4` says about a child.
struct Usage {
    code: i32,
    rss: u64,
    cpu: Duration,
}

/// Wait for `child`: its exit code, peak RSS in bytes and CPU time.
fn wait_rusage(child: std::process::Child) -> Result<Usage> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (std only waits in
    // `wait`/`try_wait`, which are not called on it, and dropping a `Child`
    // does not wait); both pointers are to live locals of the right types.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        bail!("wait4({pid}): {}", std::io::Error::last_os_error());
    }
    drop(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Ok(Usage {
        code,
        // Linux reports ru_maxrss in KiB.
        rss: usage.ru_maxrss.max(0) as u64 * 1024,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
    })
}

/// One `dump view`: (time to the first row, whole listing, peak RSS).
fn view_once(exe: &Path, dir: &Path) -> Result<(Duration, Duration, u64)> {
    let t = Instant::now();
    let mut child = Command::new(exe)
        .args(["dump", "view"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("running simpler dump view")?;
    let out = child.stdout.take().context("view stdout")?;
    let (mut header_seen, mut first) = (false, None);
    for line in BufReader::new(out).lines() {
        let line = line.context("reading dump view's output")?;
        if first.is_none() {
            if header_seen {
                first = Some(t.elapsed());
            } else if line.trim_start().starts_with("#  task_id") {
                header_seen = true;
            }
        }
    }
    let full = t.elapsed();
    let u = wait_rusage(child)?;
    if u.code != 0 {
        bail!("simpler dump view exited with {}", u.code);
    }
    Ok((
        first.context("dump view printed no table row")?,
        full,
        u.rss,
    ))
}

/// One `dump diff A B`: (wall time, peak RSS, CPU time).
fn diff_once(exe: &Path, a: &Path, b: &Path) -> Result<(Duration, u64, Duration)> {
    let t = Instant::now();
    let child = Command::new(exe)
        .args(["dump", "diff"])
        .args([a, b])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("running simpler dump diff")?;
    let u = wait_rusage(child)?;
    let took = t.elapsed();
    // Seeds 0 and 1 differ: exit 1 is the expected verdict.
    if u.code != 1 {
        bail!(
            "simpler dump diff exited with {} (expected 1: the seeds differ)",
            u.code
        );
    }
    Ok((took, u.rss, u.cpu))
}

/// Make the dumps, then time `dump view` and `dump diff` `a.reps()` times.
///
/// # Errors
/// A run, a child process or the temporary folder failed.
pub fn measure(a: &BenchArgs) -> Result<ReadersFigures> {
    let tmp = tempfile::tempdir().context("temporary folder for the dumps")?;
    let exe = std::env::current_exe().context("path of the simpler binary")?;
    crate::progress::status("writing two CaseLarge dumps");
    let [da, db] = make_dumps(a, &exe, tmp.path())?;
    let manifest = simpler_inspect::locate::resolve_manifest(&da)?;
    let header = simpler_inspect::stream::RecordStream::open_manifest(&manifest)?;
    let mut f = ReadersFigures {
        first_page: Duration::MAX,
        full_view: Duration::MAX,
        view_rss: 0,
        diff: Duration::MAX,
        diff_rss: 0,
        diff_cpu: Duration::MAX,
        manifest_bytes: std::fs::metadata(&manifest)?.len(),
        records: header.info().header.total_tensors,
    };
    drop(header);
    for rep in 0..a.reps() {
        crate::progress::status(&format!(
            "dump view and dump diff, rep {} of {}",
            rep + 1,
            a.reps()
        ));
        let (first, full, rss) = view_once(&exe, &da)?;
        f.first_page = f.first_page.min(first);
        f.full_view = f.full_view.min(full);
        f.view_rss = f.view_rss.max(rss);
        let (took, rss, cpu) = diff_once(&exe, &da, &db)?;
        f.diff = f.diff.min(took);
        f.diff_rss = f.diff_rss.max(rss);
        f.diff_cpu = f.diff_cpu.min(cpu);
    }
    Ok(f)
}
