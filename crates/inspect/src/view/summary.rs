//! The lines above the table: source, layout, status, level, the header's
//! counts, and — prominently — losses and the reason of an incomplete
//! dump. Built from the header alone, so it prints before any record is
//! read; the records are checked against it when the stream ends.

use std::fmt::Write as _;

use simpler_format::tensor_dump::Layout;
use simpler_format::vocab::Status;

use crate::checks::Counts;
use crate::stream::DumpInfo;

/// The summary of a dump.
pub fn summary(info: &DumpInfo) -> String {
    let h = &info.header;
    let mut out = String::new();
    let format = match (info.layout, h.schema_version) {
        (Layout::Native, Some(v)) => format!("schema_version {v}"),
        (Layout::Upstream, Some(v)) => {
            format!("upstream args_dump layout, written by simpler-rs (schema_version {v})")
        }
        (Layout::Upstream, None) => "upstream args_dump layout (no schema_version)".into(),
        _ => "reference-runtime format (no schema_version)".to_string(),
    };
    let _ = writeln!(out, "dump {}  [{format}]", info.manifest.display());
    let status = h.status.map_or("not recorded", Status::name);
    let level = h
        .dump_level
        .map_or_else(|| "not recorded".to_string(), |l| l.to_string());
    let policy = h.dump_policy.as_deref().unwrap_or("not recorded");
    let hang = if h.hang_snapshot > 0 {
        format!(", {} hang snapshots", h.hang_snapshot)
    } else {
        String::new()
    };
    let inputs = match info.layout {
        Layout::Native => format!("{} input", h.input_tensors),
        Layout::Upstream => format!("{} input", h.input_tensors),
        Layout::Reference => format!("{} input (scalars may be counted too)", h.input_tensors),
    };
    let scalars = match (h.scalar_args, info.layout) {
        (Some(s), _) => format!("{s} scalars"),
        (None, Layout::Upstream) => "scalars counted as inputs".to_string(),
        (None, _) => "? scalars".to_string(),
    };
    let _ = writeln!(
        out,
        "status {status} | dump level {level} | policy {policy}\n{}: {} before_dispatch, {} after_completion{hang} | tensors: {inputs}, {} output, {} inout | {scalars} | payload {} bytes in {}",
        simpler_format::words::count(h.total_tensors, "record", "records"),
        h.before_dispatch,
        h.after_completion,
        h.output_tensors,
        h.inout_tensors,
        info.payload.len(),
        info.bin_name(),
    );
    let (dropped, truncated, overwritten) =
        (h.dropped_records, h.truncated_tensors, h.dropped_overwrite);
    if dropped + truncated + overwritten > 0 {
        let _ = writeln!(
            out,
            "LOSS: {dropped} records dropped, {truncated} truncated, {overwritten} overwritten (dump policy {policy}): this dump does not hold every record the run produced"
        );
    } else {
        let _ = writeln!(out, "loss: none (0 dropped, 0 truncated, 0 overwritten)");
    }
    if h.write_races > 0 {
        let _ = writeln!(out, "RACES: {} overlapping writes of concurrently running dispatches (see the manifest's races)", h.write_races);
    }
    if h.status.is_some_and(|s| s != Status::Complete) {
        let reason = h.reason.as_deref().unwrap_or("no reason recorded");
        let _ = writeln!(out, "INCOMPLETE: the run ended abnormally: {reason}");
        if let Some(u) = &h.unfinished_tasks {
            let _ = writeln!(
                out,
                "{} tasks unfinished when it stopped (unfinished_tasks in the manifest)",
                u.len()
            );
        }
    }
    out
}

/// The line after the table: what the records added up to, checked.
pub fn footer(c: &Counts) -> String {
    format!(
        "{} from {}; checked: header counters agree, no duplicate keys, no overlapping payload ranges\n",
        simpler_format::words::count(c.total, "record", "records"),
        simpler_format::words::count(c.tasks, "task", "tasks"),
    )
}
