//! Finding dump files: a run directory, a dump folder or the file itself,
//! in either layout (DESIGN §6b), and the newest dump under `outputs/`.

use std::path::{Path, PathBuf};

use simpler_format::files::{
    ARGS_FILE, KERNEL_ARGS_FILE, TENSOR_DUMP_DIR, TENSOR_DUMP_JSON, UPSTREAM_DIR, UPSTREAM_JSON,
    UPSTREAM_ORCH_ARGS_FILE,
};
use simpler_format::{Error, ErrorKind};

/// The tensor dump manifest for `path`: the file itself, or in a run
/// directory or dump folder `tensor_dump.json`, `tensor_dump/tensor_dump.json`,
/// `args_dump/args_dump.json`, or `args_dump.json` in a folder named
/// `args_dump` (elsewhere that name is our orchestration args dump).
///
/// # Errors
/// The path does not exist, or holds no manifest (listing where it looked).
pub fn resolve_manifest(path: &Path) -> Result<PathBuf, Error> {
    if !path.exists() {
        return Err(Error::new(path, ErrorKind::PathMissing));
    }
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let mut candidates = vec![
        path.join(TENSOR_DUMP_JSON),
        path.join(TENSOR_DUMP_DIR).join(TENSOR_DUMP_JSON),
        path.join(UPSTREAM_DIR).join(UPSTREAM_JSON),
    ];
    if path.file_name().is_some_and(|n| n == UPSTREAM_DIR) {
        candidates.push(path.join(UPSTREAM_JSON));
    }
    if let Some(c) = candidates.iter().find(|c| c.is_file()) {
        return Ok(c.clone());
    }
    Err(Error::new(
        path,
        ErrorKind::NotFound {
            name: TENSOR_DUMP_JSON,
            tried: join(&candidates),
            hint: "; run a workload with --dump-tensor, or pass the dump's folder",
        },
    ))
}

/// The dump files of one run, in either layout (DESIGN §6, §6b): ours keeps
/// everything in `tensor_dump/`; the upstream layout has `args_dump/` with
/// `kernel_args_dump.json` and `orch_args_dump.json` beside it; the
/// upstream runtime itself writes `args_dump/` only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFiles {
    /// The per-task manifest (`tensor_dump.json` / `args_dump.json`).
    pub manifest: Option<PathBuf>,
    /// `kernel_args_dump.json` of the same run.
    pub kernel_args: Option<PathBuf>,
    /// The orchestration args dump of the same run (`args_dump.json` in
    /// our folder, `orch_args_dump.json` beside an `args_dump/` one).
    pub orch_args: Option<PathBuf>,
}

/// True for the upstream layout's manifest: `args_dump.json` in a folder
/// named `args_dump` (elsewhere that name is our orchestration args dump).
fn is_upstream_manifest(m: &Path) -> bool {
    m.file_name().is_some_and(|n| n == UPSTREAM_JSON)
        && m.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == UPSTREAM_DIR)
}

/// Find the dump files of the run at `path`: a run directory, its dump
/// folder (`tensor_dump/` or `args_dump/`), a manifest, or a
/// `kernel_args_dump.json`. Files are taken only from the same run's
/// folders: a native dump folder, or the folder an `args_dump/` sits in.
///
/// # Errors
/// The path does not exist, or a manifest candidate cannot be resolved for
/// another reason than being absent.
pub fn run_files(path: &Path) -> Result<RunFiles, Error> {
    if !path.exists() {
        return Err(Error::new(path, ErrorKind::PathMissing));
    }
    let kernel_file = path.is_file() && path.file_name().is_some_and(|n| n == KERNEL_ARGS_FILE);
    let manifest = match () {
        _ if kernel_file => None,
        _ if path.is_file() => Some(path.to_path_buf()),
        _ => match resolve_manifest(path) {
            Ok(m) => Some(m),
            Err(e) if matches!(e.kind, ErrorKind::NotFound { .. }) => None,
            Err(e) => return Err(e),
        },
    };
    let parent = |p: &Path| p.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    // (folder, orchestration args dump name) pairs to look in, in order.
    let dirs: Vec<(PathBuf, &str)> = match &manifest {
        Some(m) if is_upstream_manifest(m) => {
            vec![(parent(&parent(m)), UPSTREAM_ORCH_ARGS_FILE)]
        }
        Some(m) => vec![(parent(m), ARGS_FILE)],
        None => {
            let base = if path.is_file() {
                parent(path)
            } else {
                path.to_path_buf()
            };
            if base.file_name().is_some_and(|n| n == UPSTREAM_DIR) {
                vec![(parent(&base), UPSTREAM_ORCH_ARGS_FILE)]
            } else {
                vec![
                    (base.join(TENSOR_DUMP_DIR), ARGS_FILE),
                    (base.clone(), UPSTREAM_ORCH_ARGS_FILE),
                    (base, ARGS_FILE),
                ]
            }
        }
    };
    let first = |f: &dyn Fn(&(PathBuf, &str)) -> PathBuf| dirs.iter().map(f).find(|p| p.is_file());
    Ok(RunFiles {
        kernel_args: if kernel_file {
            Some(path.to_path_buf())
        } else {
            first(&|(d, _)| d.join(KERNEL_ARGS_FILE))
        },
        orch_args: first(&|(d, name)| d.join(name)),
        manifest,
    })
}

fn join(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Find `name` given the file itself, a run directory or its dump folder.
///
/// # Errors
/// [`ErrorKind::NotFound`] listing where it looked, with `hint`.
pub fn locate(path: &Path, name: &'static str, hint: &'static str) -> Result<PathBuf, Error> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let tried = [path.join(name), path.join(TENSOR_DUMP_DIR).join(name)];
    match tried.iter().find(|p| p.is_file()) {
        Some(p) => Ok(p.clone()),
        None => Err(Error::new(
            path,
            ErrorKind::NotFound {
                name,
                tried: join(&tried),
                hint,
            },
        )),
    }
}

/// No dump could be found where the viewer looked.
#[derive(Debug, thiserror::Error)]
#[error("no tensor dump found: looked for {pattern} ({detail}); pass the dump directory explicitly, or run a workload with --dump-tensor 2")]
pub struct NoDumpFound {
    /// What was searched (`/cwd/outputs/*/tensor_dump`).
    pub pattern: String,
    /// What was found there instead.
    pub detail: String,
}

/// The newest `outputs/*/tensor_dump` or `outputs/*/args_dump` folder
/// under `base`, by the folder's modification time (ties broken by name).
///
/// # Errors
/// [`NoDumpFound`] saying what was there instead.
pub fn find_newest_dump(base: &Path) -> Result<PathBuf, NoDumpFound> {
    let outputs = base.join("outputs");
    let pattern = format!(
        "{} or {}",
        outputs.join("*").join(TENSOR_DUMP_DIR).display(),
        outputs.join("*").join(UPSTREAM_DIR).display()
    );
    let entries = std::fs::read_dir(&outputs).map_err(|e| NoDumpFound {
        pattern: pattern.clone(),
        detail: format!("{}: {e}", outputs.display()),
    })?;
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut runs = 0usize;
    for entry in entries.flatten() {
        runs += 1;
        for sub in [TENSOR_DUMP_DIR, UPSTREAM_DIR] {
            let dir = entry.path().join(sub);
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let t = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if best.as_ref().is_none_or(|(bt, bp)| (t, &dir) > (*bt, bp)) {
                best = Some((t, dir));
            }
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| NoDumpFound {
        pattern,
        detail: format!(
            "{} holds {runs} entries, none with a {TENSOR_DUMP_DIR}/ or {UPSTREAM_DIR}/ folder",
            outputs.display()
        ),
    })
}
