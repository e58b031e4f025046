//! What a diff found, collected in bounded memory: counts, the first
//! difference, and at most the rows a report shows (or, for `--json`,
//! every pair spilled to temporary files), then rendered as text.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::{DiffOptions, MatchMode, PairResult, Unpaired};
use crate::stream::DumpInfo;
use simpler_format::tensor_dump::Layout;
use simpler_format::vocab::Status;

/// What a report keeps of the pairs and unpaired records it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// Everything (tests, small dumps).
    All,
    /// At most `rows` per table; passing pairs only when `passing`.
    Limit {
        /// Rows per table.
        rows: usize,
        /// Keep passing pairs too (`--all`).
        passing: bool,
    },
    /// Spill every pair and unpaired record to temporary files as JSON
    /// lines (`--json`), keeping none in memory.
    Spill,
}

/// Counts of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct DiffSummary {
    /// Paired records.
    pub pairs: usize,
    /// Pairs that passed.
    pub passed: usize,
    /// Pairs that failed.
    pub failed: usize,
    /// Records of A without a partner.
    pub only_in_a: usize,
    /// Records of B without a partner.
    pub only_in_b: usize,
}

/// The earliest difference of a diff (by task, stage, arg, role).
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// A pair that failed.
    Pair(Box<PairResult>),
    /// A record only A has.
    OnlyInA(Unpaired),
    /// A record only B has.
    OnlyInB(Unpaired),
}

/// The three JSON-lines spill files of `--json`.
#[derive(Debug)]
pub(crate) struct Spill {
    pub(crate) lists: [std::io::BufWriter<std::fs::File>; 3],
}

/// Everything `dump diff` found.
#[derive(Debug)]
pub struct DiffReport {
    /// A's manifest.
    pub a: PathBuf,
    /// B's manifest.
    pub b: PathBuf,
    /// Pairing and tolerances used.
    pub options: DiffOptions,
    /// The pairs kept ([`Keep`]), in (task order, stage, arg, role) order.
    pub pairs: Vec<PairResult>,
    /// Records only A has (kept), in the same order.
    pub only_in_a: Vec<Unpaired>,
    /// Records only B has (kept), in the same order.
    pub only_in_b: Vec<Unpaired>,
    /// Warnings about the inputs (incomplete dumps, losses, formats).
    pub notes: Vec<String>,
    counts: DiffSummary,
    kept_failing: usize,
    kept_passing: usize,
    first: [Option<Difference>; 3],
    keep: Keep,
    pub(crate) spill: Option<Spill>,
    pub(crate) records: (u64, u64),
    /// A's and B's runs ended abnormally (their dumps stop short).
    pub(crate) incomplete: (bool, bool),
    /// Records both headers announce (for progress).
    pub(crate) expected_records: u64,
}

fn dump_notes(side: &str, d: &DumpInfo) -> Vec<String> {
    let mut notes = Vec::new();
    let h = &d.header;
    if h.status == Some(Status::Incomplete) {
        notes.push(format!(
            "{side} is incomplete (the run ended abnormally: {}); records after the failure are missing",
            h.reason.as_deref().unwrap_or("no reason recorded")
        ));
    }
    let (dropped, truncated, overwritten) =
        (h.dropped_records, h.truncated_tensors, h.dropped_overwrite);
    if dropped + truncated + overwritten > 0 {
        notes.push(format!(
            "{side} lost data under the drop policy: {dropped} records dropped, {truncated} truncated, {overwritten} overwritten"
        ));
    }
    match (d.layout, h.schema_version) {
        (Layout::Native, _) => {}
        (Layout::Upstream, Some(_)) => notes.push(format!(
            "{side} is in the upstream args_dump layout, written by simpler-rs (exact scalar bits kept)"
        )),
        (Layout::Upstream, None) => notes.push(format!(
            "{side} is an upstream-runtime dump: FLOAT32 scalars are 6-digit values (their bits derived), other scalars raw slots; a record repeated per SPMD block is paired with the other side's one record"
        )),
        (Layout::Reference, _) => notes.push(format!(
            "{side} is a reference-runtime dump: scalars are raw UINT64 slots and func ids are not recorded"
        )),
    }
    notes
}

impl DiffReport {
    /// An empty report of dumps `a` and `b`.
    ///
    /// # Errors
    /// [`Keep::Spill`]: the temporary files cannot be created.
    pub fn new(
        a: &DumpInfo,
        b: &DumpInfo,
        options: DiffOptions,
        keep: Keep,
    ) -> std::io::Result<DiffReport> {
        let spill = match keep {
            Keep::Spill => {
                let f =
                    || tempfile::tempfile().map(|f| std::io::BufWriter::with_capacity(1 << 16, f));
                Some(Spill {
                    lists: [f()?, f()?, f()?],
                })
            }
            _ => None,
        };
        let mut notes = dump_notes("A", a);
        notes.extend(dump_notes("B", b));
        Ok(DiffReport {
            a: a.manifest.clone(),
            b: b.manifest.clone(),
            options,
            pairs: Vec::new(),
            only_in_a: Vec::new(),
            only_in_b: Vec::new(),
            notes,
            counts: DiffSummary::default(),
            kept_failing: 0,
            kept_passing: 0,
            first: [None, None, None],
            keep,
            spill: None.or(spill),
            records: (0, 0),
            incomplete: (
                a.header.status == Some(Status::Incomplete),
                b.header.status == Some(Status::Incomplete),
            ),
            expected_records: 0,
        })
    }

    /// Write `v()` to spill list `list` (`--json` only: the value is not
    /// even built otherwise).
    fn spill(&mut self, list: usize, v: impl FnOnce() -> serde_json::Value) -> std::io::Result<()> {
        use std::io::Write;
        if let Some(s) = &mut self.spill {
            serde_json::to_writer(&mut s.lists[list], &v())?;
            s.lists[list].write_all(b"\n")?;
        }
        Ok(())
    }

    fn room(&self, kept: usize, passing: bool) -> bool {
        match self.keep {
            Keep::All => true,
            Keep::Limit { rows, passing: all } => kept < rows && (all || !passing),
            Keep::Spill => false,
        }
    }

    /// Account for a compared pair.
    ///
    /// # Errors
    /// Writing the spill file failed.
    pub fn pair(&mut self, p: PairResult) -> std::io::Result<()> {
        self.counts.pairs += 1;
        if p.passed {
            self.counts.passed += 1;
        } else {
            self.counts.failed += 1;
            if self.first[0].is_none() {
                self.first[0] = Some(Difference::Pair(Box::new(p.clone())));
            }
        }
        self.spill(0, || super::json::pair_json(&p))?;
        let kept = if p.passed {
            self.kept_passing
        } else {
            self.kept_failing
        };
        if self.room(kept, p.passed) {
            *(if p.passed {
                &mut self.kept_passing
            } else {
                &mut self.kept_failing
            }) += 1;
            self.pairs.push(p);
        }
        Ok(())
    }

    /// Account for a record only A has.
    ///
    /// # Errors
    /// Writing the spill file failed.
    pub fn only_a(&mut self, u: Unpaired) -> std::io::Result<()> {
        self.counts.only_in_a += 1;
        self.first[1].get_or_insert_with(|| Difference::OnlyInA(u.clone()));
        self.spill(1, || super::json::unpaired_json(&u))?;
        if self.room(self.only_in_a.len(), false) {
            self.only_in_a.push(u);
        }
        Ok(())
    }

    /// Account for a record only B has.
    ///
    /// # Errors
    /// Writing the spill file failed.
    pub fn only_b(&mut self, u: Unpaired) -> std::io::Result<()> {
        self.counts.only_in_b += 1;
        self.first[2].get_or_insert_with(|| Difference::OnlyInB(u.clone()));
        self.spill(2, || super::json::unpaired_json(&u))?;
        if self.room(self.only_in_b.len(), false) {
            self.only_in_b.push(u);
        }
        Ok(())
    }

    /// Notes that need the whole diff.
    pub(crate) fn finish(&mut self) {
        if self.options.match_mode == MatchMode::Key
            && self.counts.pairs == 0
            && self.records.0 > 0
            && self.records.1 > 0
        {
            self.notes.push(
                "A and B have no (task_id, stage, arg_index, role) in common; if the runs number their tasks differently (other scope depths), pair by submission order with --match order".into(),
            );
        }
    }

    /// Counts of pairs and unpaired records.
    pub fn summary(&self) -> DiffSummary {
        self.counts
    }

    /// True when every pair passed and every record has a partner.
    pub fn passed(&self) -> bool {
        let s = self.counts;
        s.failed == 0 && s.only_in_a == 0 && s.only_in_b == 0
    }

    /// Failing pairs kept, in (task, stage, arg, role) order.
    pub fn failures(&self) -> impl Iterator<Item = &PairResult> {
        self.pairs.iter().filter(|p| !p.passed)
    }

    /// The earliest failing pair or unpaired record by (task order, stage,
    /// arg, role); pairs win ties.
    pub fn first_difference(&self) -> Option<Difference> {
        let key = |d: &Difference| match d {
            Difference::Pair(p) => (p.order, p.stage, p.arg_index, p.role),
            Difference::OnlyInA(u) | Difference::OnlyInB(u) => {
                (u.order, u.stage, u.arg_index, u.role)
            }
        };
        self.first
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.as_ref().map(|d| ((key(d), i), d)))
            .min_by_key(|(k, _)| *k)
            .map(|(_, d)| d.clone())
    }

    /// The one line naming the first difference, or `None` when there is none.
    pub fn first_difference_line(&self) -> Option<String> {
        let order_mode = self.options.match_mode == MatchMode::Order;
        Some(match self.first_difference()? {
            Difference::Pair(p) => {
                let p = &p;
                let task = if order_mode {
                    format!("{} (A) / {} (B)", p.task_a, p.task_b)
                } else {
                    p.task_a.to_string()
                };
                format!(
                    "first difference: task {task}, stage {}, arg {}, role {}{}: {}",
                    p.stage,
                    p.arg_index,
                    p.role.name(),
                    func_note(&p.func_ids_a),
                    pair_detail(p)
                )
            }
            Difference::OnlyInA(u) => unpaired_line(&u, "A"),
            Difference::OnlyInB(u) => unpaired_line(&u, "B"),
        })
    }

    /// The human-readable report: header, summary line, first difference,
    /// notes, the failing pairs (all pairs with `all`), then the unpaired
    /// records. `limit` caps the rows of each table (0: no rows, the
    /// counts only; `usize::MAX`: every row).
    pub fn render_text(&self, all: bool, limit: usize) -> String {
        let mut s = String::new();
        let o = &self.options;
        let _ = writeln!(s, "A: {}", self.a.display());
        let _ = writeln!(s, "B: {}", self.b.display());
        let _ = writeln!(
            s,
            "pairing by {}; pass when bit-equal or every element has |a-b| <= atol + rtol*|b| (B is the reference; rtol {:e}, atol {:e})",
            match o.match_mode {
                MatchMode::Key => "(task_id, stage, arg_index, role)",
                MatchMode::Order => "task order (k-th task id of A with k-th of B), then (stage, arg_index, role)",
            },
            o.rtol,
            o.atol
        );
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        let sum = self.counts;
        let _ = writeln!(
            s,
            "{}: {} pairs, {} passed, {} failed, {} only in A, {} only in B",
            if self.passed() { "PASS" } else { "FAIL" },
            sum.pairs,
            sum.passed,
            sum.failed,
            sum.only_in_a,
            sum.only_in_b
        );
        if let Some(line) = self.first_difference_line() {
            let _ = writeln!(s, "{line}");
        }
        let cap = |n: usize| n.min(limit);
        let failing: Vec<&PairResult> = self.failures().collect();
        if sum.failed > 0 {
            let _ = writeln!(s, "\nfailing pairs ({}):", sum.failed);
            if cap(failing.len()) > 0 {
                s.push_str(&self.pair_table(&failing[..cap(failing.len())]));
            }
            more(&mut s, sum.failed, cap(failing.len()), "failing pairs");
        }
        if all {
            let passing: Vec<&PairResult> = self.pairs.iter().filter(|p| p.passed).collect();
            if sum.passed > 0 {
                let _ = writeln!(s, "\npassing pairs ({}):", sum.passed);
                if cap(passing.len()) > 0 {
                    s.push_str(&self.pair_table(&passing[..cap(passing.len())]));
                }
                more(&mut s, sum.passed, cap(passing.len()), "passing pairs");
            }
        }
        for (side, list, total) in [
            ("A", &self.only_in_a, sum.only_in_a),
            ("B", &self.only_in_b, sum.only_in_b),
        ] {
            if total == 0 {
                continue;
            }
            let _ = writeln!(s, "\nonly in {side} ({total}):");
            if cap(list.len()) > 0 {
                s.push_str(&unpaired_table(&list[..cap(list.len())]));
            }
            more(&mut s, total, cap(list.len()), "records");
        }
        s
    }

    fn pair_table(&self, pairs: &[&PairResult]) -> String {
        let order_mode = self.options.match_mode == MatchMode::Order;
        let mut rows: Vec<Vec<String>> = vec![vec![
            if order_mode {
                "task A / task B"
            } else {
                "task_id"
            }
            .into(),
            "func".into(),
            "stage".into(),
            "arg".into(),
            "role".into(),
            "dtype".into(),
            "shape".into(),
            "elems".into(),
            "bit_eq".into(),
            "max_abs".into(),
            "max_rel".into(),
            "cosine".into(),
            "result".into(),
        ]];
        for p in pairs {
            let task = if order_mode {
                format!("{} / {}", p.task_a, p.task_b)
            } else {
                p.task_a.to_string()
            };
            let dtype = if p.dtype_a == p.dtype_b {
                p.dtype_a.to_string()
            } else {
                format!("{}/{}", p.dtype_a, p.dtype_b)
            };
            let shape = if p.shape_a == p.shape_b {
                crate::view::fmt_shape(&p.shape_a)
            } else {
                format!(
                    "{}/{}",
                    crate::view::fmt_shape(&p.shape_a),
                    crate::view::fmt_shape(&p.shape_b)
                )
            };
            let compared = p.bit_equal.is_some();
            rows.push(vec![
                task,
                func_cell(&p.func_ids_a),
                p.stage.to_string(),
                p.arg_index.to_string(),
                p.role.name().into(),
                dtype,
                shape,
                p.elements.to_string(),
                match p.bit_equal {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
                if compared {
                    sci(p.max_abs_err)
                } else {
                    "-".into()
                },
                if compared {
                    sci(p.max_rel_err)
                } else {
                    "-".into()
                },
                p.cosine.map_or_else(|| "-".into(), |c| format!("{c:.6}")),
                if p.passed {
                    match &p.reason {
                        Some(r) => format!("PASS ({r})"),
                        None => "PASS".into(),
                    }
                } else {
                    format!("FAIL {}", short_detail(p))
                },
            ]);
        }
        align(&rows, &[3, 7])
    }
}

fn unpaired_line(u: &Unpaired, side: &str) -> String {
    format!(
        "first difference: task {}, stage {}, arg {}, role {}{}: only in {side}",
        u.task_id,
        u.stage,
        u.arg_index,
        u.role.name(),
        func_note(&u.func_ids)
    )
}

fn func_note(f: &[u32]) -> String {
    match f {
        [] => String::new(),
        [one] => format!(" (func {one})"),
        many => format!(" (func {many:?})"),
    }
}

fn func_cell(f: &[u32]) -> String {
    match f {
        [] => "-".into(),
        [one] => one.to_string(),
        many => format!("{many:?}").replace(' ', ""),
    }
}

/// Why a failing pair failed, with its first offending element.
fn pair_detail(p: &PairResult) -> String {
    let mut s = p.reason.clone().unwrap_or_else(|| "differs".into());
    if let Some(e) = p.first_violation.as_ref().or(p.first_diff.as_ref()) {
        let _ = write!(
            s,
            "; first at [{}]: A {}, B {}",
            e.index, e.a_text, e.b_text
        );
    }
    s
}

/// [`pair_detail`] for a table cell: value failures as `N/M outside
/// tolerance; first [i]: A x, B y`.
fn short_detail(p: &PairResult) -> String {
    match (&p.first_violation, p.mismatched) {
        (Some(e), m) if m > 0 && p.reason.as_deref().is_some_and(|r| r.contains("outside")) => {
            format!(
                "{m}/{} outside tolerance; first [{}]: A {}, B {}",
                p.elements, e.index, e.a_text, e.b_text
            )
        }
        _ => pair_detail(p),
    }
}

fn sci(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3e}")
    } else {
        format!("{x}")
    }
}

fn more(s: &mut String, total: usize, shown: usize, what: &str) {
    if shown < total {
        let _ = writeln!(
            s,
            "... {} more {what} not listed (--limit {shown}; --limit all lists all)",
            total - shown
        );
    }
}

fn unpaired_table(list: &[Unpaired]) -> String {
    let mut rows: Vec<Vec<String>> = vec![[
        "task_id", "func", "stage", "arg", "role", "kind", "dtype", "shape", "record",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for u in list {
        rows.push(vec![
            u.task_id.to_string(),
            func_cell(&u.func_ids),
            u.stage.to_string(),
            u.arg_index.to_string(),
            u.role.name().into(),
            u.kind.to_string(),
            u.dtype.to_string(),
            crate::view::fmt_shape(&u.shape),
            u.record.to_string(),
        ]);
    }
    align(&rows, &[3, 8])
}

/// Columns padded to their widest cell; `right` columns right-aligned; the
/// last column is never padded.
fn align(rows: &[Vec<String>], right: &[usize]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|x| x.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = width[c].saturating_sub(cell.chars().count());
            if right.contains(&c) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}
