//! Finding dump files: a run directory, a dump folder or the file itself,
//! in either layout (DESIGN §6b), and the newest dump under `outputs/`.

use std::path::{Path, PathBuf};

use simpler_format::files::{TENSOR_DUMP_DIR, TENSOR_DUMP_JSON, UPSTREAM_DIR, UPSTREAM_JSON};
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
