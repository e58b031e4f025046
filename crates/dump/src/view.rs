//! The viewer's listing side: record filters, the manifest summary, the
//! aligned record table, locating the newest dump and exporting selected
//! records to files (DESIGN §7). The `simpler dump view` command is a thin
//! layer over these functions.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use simpler_core::{ArgRole, DType, TaskId};

use crate::reader::{parse_role, Dump, Record, RecordKind, Stage, DUMP_DIR};

/// Tensor values shown in the table's preview column.
pub const PREVIEW_VALUES: usize = 4;

/// Which records to show or export; `None` fields match everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only this task.
    pub task: Option<TaskId>,
    /// Only tasks whose member list contains this func id.
    pub func: Option<u32>,
    /// Only this stage.
    pub stage: Option<Stage>,
    /// Only this role.
    pub role: Option<ArgRole>,
    /// Only tensors or only scalars.
    pub kind: Option<RecordKind>,
    /// Only this argument slot.
    pub arg: Option<u32>,
}

impl Filter {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    /// True when the record passes every set field.
    pub fn matches(&self, r: &Record) -> bool {
        self.task.is_none_or_eq(r.task_id)
            && self.func.is_none_or(|f| r.func_ids.contains(&f))
            && self.stage.is_none_or_eq(r.stage)
            && self.role.is_none_or_eq(r.role)
            && self.kind.is_none_or_eq(r.kind)
            && self.arg.is_none_or_eq(r.arg_index)
    }

    /// The records of `dump` that pass, in manifest order.
    pub fn select<'d>(&self, dump: &'d Dump) -> Vec<&'d Record> {
        dump.records().iter().filter(|r| self.matches(r)).collect()
    }

    /// The filter as command-line flags (`--task 0x… --stage after_completion`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.task {
            parts.push(format!("--task {t}"));
        }
        if let Some(f) = self.func {
            parts.push(format!("--func {f}"));
        }
        if let Some(s) = self.stage {
            parts.push(format!("--stage {s}"));
        }
        if let Some(r) = self.role {
            parts.push(format!("--role {}", r.name()));
        }
        if let Some(k) = self.kind {
            parts.push(format!("--kind {k}"));
        }
        if let Some(a) = self.arg {
            parts.push(format!("--arg {a}"));
        }
        parts.join(" ")
    }

    /// Why nothing matched, beyond "nothing matched": hints such as "this
    /// dump records no func ids" or the range of task ids present.
    pub fn explain_no_match(&self, dump: &Dump) -> Vec<String> {
        let mut hints = Vec::new();
        let recs = dump.records();
        if self.func.is_some() && recs.iter().all(|r| r.func_ids.is_empty()) {
            hints.push(
                "this dump records no func ids (reference-runtime format), so --func matches nothing"
                    .to_string(),
            );
        }
        if let Some(t) = self.task {
            if !recs.iter().any(|r| r.task_id == t) {
                let mut tasks: Vec<TaskId> = recs.iter().map(|r| r.task_id).collect();
                tasks.sort_unstable();
                tasks.dedup();
                match (tasks.first(), tasks.last()) {
                    (Some(lo), Some(hi)) => hints.push(format!(
                        "task {t} is not in this dump; it has {} tasks, {lo} .. {hi}",
                        tasks.len()
                    )),
                    _ => hints.push("this dump has no records".to_string()),
                }
            }
        }
        if let Some(a) = self.arg {
            if !recs.iter().any(|r| r.arg_index == a) {
                let max = recs.iter().map(|r| r.arg_index).max();
                if let Some(m) = max {
                    hints.push(format!("no record has arg {a}; arg indices go up to {m}"));
                }
            }
        }
        hints
    }
}

trait OptEq<T> {
    fn is_none_or_eq(&self, v: T) -> bool;
}

impl<T: PartialEq> OptEq<T> for Option<T> {
    fn is_none_or_eq(&self, v: T) -> bool {
        self.as_ref().is_none_or(|x| *x == v)
    }
}

/// Parse `--task`: `0x…` hex or decimal.
pub fn parse_task(s: &str) -> Result<TaskId, String> {
    TaskId::parse(s).ok_or_else(|| {
        format!("{s:?}: expected a task id, 0x-prefixed hex (0x0000000200000003) or decimal")
    })
}

/// Parse `--stage`: `before_dispatch` / `before` or `after_completion` / `after`.
pub fn parse_stage(s: &str) -> Result<Stage, String> {
    Stage::from_name(s).ok_or_else(|| {
        format!("{s:?}: expected before_dispatch (or before) or after_completion (or after)")
    })
}

/// Parse `--role`: `input`, `output`, `inout`, `output_existing`, `no_dep`.
pub fn parse_role_arg(s: &str) -> Result<ArgRole, String> {
    parse_role(s)
        .ok_or_else(|| format!("{s:?}: expected input, output, inout, output_existing or no_dep"))
}

/// Parse `--kind`: `tensor` or `scalar`.
pub fn parse_kind(s: &str) -> Result<RecordKind, String> {
    RecordKind::from_name(s).ok_or_else(|| format!("{s:?}: expected tensor or scalar"))
}

/// `[16, 16]`; `[]` for scalars.
pub fn fmt_shape(shape: &[u64]) -> String {
    let inner: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", inner.join(", "))
}

/// `1`, `[0,1,2]` for MIX tasks, `-` when the dump has none.
pub fn fmt_func_ids(ids: &[u32]) -> String {
    match ids {
        [] => "-".to_string(),
        [one] => one.to_string(),
        many => {
            let inner: Vec<String> = many.iter().map(u32::to_string).collect();
            format!("[{}]", inner.join(","))
        }
    }
}

/// A scalar's value for humans: the value decoded by dtype, its raw bits,
/// and for reference dumps (raw `UINT64` slots) the f32 it plausibly is.
pub fn fmt_scalar(r: &Record) -> String {
    let Some(bits) = r.bits else {
        return "-".to_string();
    };
    let shown = r.scalar_display().unwrap_or_default();
    let mut s = format!("{shown} (bits 0x{bits:016x})");
    if let Some(f) = r.f32_hint() {
        let _ = write!(s, " = f32 {f:?}?");
    }
    s
}

/// The first `n` values of a tensor record (`2.0 2.0 2.0 2.0 …`), or the
/// scalar's value, plus flags for damaged or payload-less records.
pub fn preview(dump: &Dump, r: &Record, n: usize) -> String {
    let mut s = if r.is_scalar() {
        fmt_scalar(r)
    } else if r.is_metadata_only() {
        "(metadata only, no payload)".to_string()
    } else {
        let bytes = dump.payload(r);
        let avail = usize::try_from(r.payload_elements()).unwrap_or(usize::MAX);
        let shown = avail.min(n);
        let vals: Vec<String> = (0..shown)
            .map(|i| crate::reader::format_element(bytes, r.dtype, i))
            .collect();
        let mut s = vals.join(" ");
        if (shown as u64) < r.numel {
            s.push_str(" …");
        }
        s
    };
    if r.truncated {
        let _ = write!(
            s,
            "  [TRUNCATED: {} of {} bytes]",
            r.bin_size,
            r.expected_bytes()
        );
    }
    if r.overwritten {
        s.push_str("  [OVERWRITTEN: payload unreliable]");
    }
    s
}

/// The manifest summary printed above the table: source, status, level,
/// counts, and — prominently, on their own lines — loss counters and the
/// reason of an incomplete dump.
pub fn summary(dump: &Dump) -> String {
    let h = dump.header();
    let recs = dump.records();
    let mut out = String::new();
    let format = match h.schema_version {
        Some(v) => format!("schema_version {v}"),
        None => "reference-runtime format (no schema_version)".to_string(),
    };
    let _ = writeln!(out, "dump {}  [{format}]", dump.manifest_path().display());
    let status = h.status.as_deref().unwrap_or("not recorded");
    let level = h
        .dump_level
        .map_or_else(|| "not recorded".to_string(), |l| l.to_string());
    let policy = h.dump_policy.as_deref().unwrap_or("not recorded");
    let count = |f: &dyn Fn(&Record) -> bool| recs.iter().filter(|r| f(r)).count();
    let tensor_role = |role: ArgRole| count(&|r| r.kind == RecordKind::Tensor && r.role == role);
    let mut tasks: Vec<TaskId> = recs.iter().map(|r| r.task_id).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let _ = writeln!(
        out,
        "status {status} | dump level {level} | policy {policy}\n{} records from {} tasks: {} before_dispatch, {} after_completion | tensors: {} input, {} output, {} inout | {} scalars | payload {} bytes in {}",
        recs.len(),
        tasks.len(),
        h.before_dispatch,
        h.after_completion,
        tensor_role(ArgRole::Input),
        tensor_role(ArgRole::Output) + tensor_role(ArgRole::OutputExisting),
        tensor_role(ArgRole::InOut),
        count(&|r| r.is_scalar()),
        dump.bin_len(),
        h.bin_file,
    );
    let (dropped, truncated, overwritten) = dump.loss();
    if dropped + truncated + overwritten > 0 {
        let _ = writeln!(
            out,
            "LOSS: {dropped} records dropped, {truncated} truncated, {overwritten} overwritten (dump policy {policy}): this dump does not hold every record the run produced"
        );
    } else {
        let _ = writeln!(out, "loss: none (0 dropped, 0 truncated, 0 overwritten)");
    }
    if h.status.as_deref().is_some_and(|s| s != "complete") {
        let reason = h.reason.as_deref().unwrap_or("no reason recorded");
        let _ = writeln!(out, "INCOMPLETE: the run ended abnormally: {reason}");
    }
    out
}

/// The aligned record table (index, task_id, func ids, stage, role, kind,
/// arg, dtype, shape, bytes, value or preview).
pub fn table(dump: &Dump, records: &[&Record]) -> String {
    let head = [
        "#",
        "task_id",
        "func",
        "stage",
        "role",
        "kind",
        "arg",
        "dtype",
        "shape",
        "bytes",
        "value / preview",
    ];
    let rows: Vec<[String; 11]> = records
        .iter()
        .map(|r| {
            [
                r.index.to_string(),
                r.task_id.to_string(),
                fmt_func_ids(&r.func_ids),
                r.stage.to_string(),
                r.role.name().to_string(),
                r.kind.to_string(),
                r.arg_index.to_string(),
                r.dtype.to_string(),
                fmt_shape(&r.shape),
                r.bin_size.to_string(),
                preview(dump, r, PREVIEW_VALUES),
            ]
        })
        .collect();
    let mut width = head.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Numbers right-aligned, text left-aligned; the last column unpadded.
    let right = [
        true, false, false, false, false, false, true, false, false, true, false,
    ];
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = width[i].saturating_sub(c.chars().count());
            if i + 1 == cells.len() {
                l.push_str(c);
            } else if right[i] {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                l.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&head);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
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

/// The newest `outputs/*/tensor_dump` folder under `base`, by the folder's
/// modification time (ties broken by name).
pub fn find_newest_dump(base: &Path) -> Result<PathBuf, NoDumpFound> {
    let outputs = base.join("outputs");
    let pattern = outputs.join("*").join(DUMP_DIR).display().to_string();
    let entries = match std::fs::read_dir(&outputs) {
        Ok(e) => e,
        Err(e) => {
            return Err(NoDumpFound {
                pattern,
                detail: format!("{}: {e}", outputs.display()),
            })
        }
    };
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut runs = 0usize;
    for entry in entries.flatten() {
        let dir = entry.path().join(DUMP_DIR);
        runs += 1;
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let t = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        let newer = match &best {
            None => true,
            Some((bt, bp)) => (t, &dir) > (*bt, bp),
        };
        if newer {
            best = Some((t, dir));
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| NoDumpFound {
        pattern,
        detail: format!(
            "{} holds {runs} entries, none with a {DUMP_DIR}/ folder",
            outputs.display()
        ),
    })
}

/// Export file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Text: metadata header, row-major overview, indexed detail.
    Txt,
    /// NumPy `.npy`.
    Npy,
}

impl ExportFormat {
    /// File extension (`txt`, `npy`).
    pub fn ext(self) -> &'static str {
        match self {
            ExportFormat::Txt => "txt",
            ExportFormat::Npy => "npy",
        }
    }
}

/// Parse `--export`: `txt` or `npy`.
pub fn parse_export_format(s: &str) -> Result<ExportFormat, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "txt" | "text" => Ok(ExportFormat::Txt),
        "npy" => Ok(ExportFormat::Npy),
        _ => Err(format!("{s:?}: expected txt or npy")),
    }
}

/// What exporting one record did.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportOutcome {
    /// A file was written; `note` says how it differs from the dump (bf16
    /// as f32, raw bytes, truncated payload …).
    Written {
        /// The file.
        path: PathBuf,
        /// A remark for the user, if any.
        note: Option<String>,
    },
    /// Nothing was written, and why.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// Text-export options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxtOptions {
    /// Write every value; no elision of large tensors.
    pub full: bool,
}

/// `task0x0000000200000003_before_dispatch_arg2_input.<ext>`.
pub fn export_file_name(r: &Record, ext: &str) -> String {
    format!(
        "task{}_{}_arg{}_{}.{ext}",
        r.task_id,
        r.stage,
        r.arg_index,
        r.role.name()
    )
}

/// Export `records` of `dump` into `out_dir` (created if needed), one file
/// per record named by [`export_file_name`]; a name that repeats (the same
/// task, stage, arg and role twice) gets `_rec<index>` appended.
pub fn export_records(
    dump: &Dump,
    records: &[&Record],
    format: ExportFormat,
    out_dir: &Path,
    txt: TxtOptions,
) -> std::io::Result<Vec<(usize, ExportOutcome)>> {
    std::fs::create_dir_all(out_dir).map_err(|e| annotate(out_dir, e))?;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let mut name = export_file_name(r, format.ext());
        let n = seen.entry(name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            name = format!(
                "{}_rec{}.{}",
                name.trim_end_matches(&format!(".{}", format.ext())),
                r.index,
                format.ext()
            );
        }
        let path = out_dir.join(name);
        let outcome = match format {
            ExportFormat::Txt => crate::export_txt::export_txt(dump, r, &path, txt),
            ExportFormat::Npy => crate::export_npy::export_npy(dump, r, &path),
        }
        .map_err(|e| annotate(&path, e))?;
        out.push((r.index, outcome));
    }
    Ok(out)
}

fn annotate(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// A short note on how a dtype is exported to `.npy`, if it is not exported
/// as itself.
pub fn npy_dtype_note(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::Bfloat16 => Some("BFLOAT16 exported as FLOAT32 (<f4) values (exact: every bf16 is an f32)"),
        DType::Fp8E4M3Fn => Some("FP8E4M3FN has no numpy dtype: exported as raw uint8 bytes (view with ml_dtypes.float8_e4m3fn)"),
        DType::Fp8E8M0 => Some("FP8E8M0 has no numpy dtype: exported as raw uint8 bytes (view with ml_dtypes.float8_e8m0fnu)"),
        DType::Fp4E2M1 => Some("FP4E2M1 has no numpy dtype: exported as raw uint8 bytes, one element per byte in the low nibble (ml_dtypes.float4_e2m1fn)"),
        _ => None,
    }
}
