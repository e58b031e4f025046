//! Checks across records, in bounded memory while streaming (DESIGN §7):
//! header counters against the records (at the end of the stream),
//! duplicate (task, stage, arg, role) keys, payload ranges that overlap.
//!
//! Records are sorted by (task, stage, arg), so duplicates are neighbours
//! and need only the current key group. Payload ranges are kept as merged
//! covered intervals: back-to-back payloads collapse into one, so memory
//! follows the disorder of the payload file, not its record count. When a
//! range overlaps, a second pass finds the earlier record to name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use simpler_core::{ArgRole, TaskId};
use simpler_format::tensor_dump::{Header, Layout};
use simpler_format::vocab::{Kind, Stage};
use simpler_format::{Error, ErrorKind};

use crate::record::Record;

/// Counts of what the records hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Records.
    pub total: u64,
    /// Per stage: before, after, hang snapshot.
    pub stages: [u64; 3],
    /// Tensor records per role: input, output (+ output_existing), inout.
    pub tensor_roles: [u64; 3],
    /// Scalar records.
    pub scalars: u64,
    /// Scalar records with role input.
    pub scalar_inputs: u64,
    /// Records flagged truncated.
    pub truncated: u64,
    /// Records flagged overwritten.
    pub overwritten: u64,
    /// Distinct task ids (exact while the records are sorted).
    pub tasks: u64,
}

impl Counts {
    fn add(&mut self, r: &Record, new_task: bool) {
        self.total += 1;
        self.stages[r.stage as usize] += 1;
        if r.kind == Kind::Scalar {
            self.scalars += 1;
            self.scalar_inputs += u64::from(r.role == ArgRole::Input);
        } else {
            match r.role {
                ArgRole::Input => self.tensor_roles[0] += 1,
                ArgRole::Output | ArgRole::OutputExisting => self.tensor_roles[1] += 1,
                ArgRole::InOut => self.tensor_roles[2] += 1,
                ArgRole::NoDep => {}
            }
        }
        self.truncated += u64::from(r.truncated);
        self.overwritten += u64::from(r.overwritten);
        self.tasks += u64::from(new_task);
    }
}

/// A conflict found while streaming that needs the earlier record named.
#[derive(Debug, Clone)]
pub enum Pending {
    /// Record `index` overlaps an earlier payload range.
    Overlap {
        /// The later record.
        index: usize,
        /// Its label.
        label: String,
        /// Its range.
        range: (u64, u64),
    },
}

/// The running checks of one stream.
#[derive(Debug)]
pub struct Checks {
    manifest: PathBuf,
    layout: Layout,
    /// What the records add up to so far.
    pub counts: Counts,
    group: Option<(TaskId, Stage, u32)>,
    group_roles: Vec<(ArgRole, usize, String)>,
    /// The records so far were sorted by (task, stage, arg).
    pub sorted: bool,
    covered: BTreeMap<u64, u64>,
    last_task: Option<TaskId>,
}

impl Checks {
    /// Checks for a manifest in `layout`.
    pub fn new(manifest: PathBuf, layout: Layout) -> Checks {
        Checks {
            manifest,
            layout,
            counts: Counts::default(),
            group: None,
            group_roles: Vec::new(),
            sorted: true,
            covered: BTreeMap::new(),
            last_task: None,
        }
    }

    /// Account for the next record.
    ///
    /// # Errors
    /// A duplicate key (naming both records). An overlap is returned as
    /// [`Pending`] for the caller to resolve with a second pass.
    pub fn add(&mut self, r: &Record) -> Result<Option<Pending>, Error> {
        let new_task = self.last_task != Some(r.task_id);
        self.last_task = Some(r.task_id);
        self.counts.add(r, new_task);
        self.key(r)?;
        Ok(self.range(r))
    }

    fn key(&mut self, r: &Record) -> Result<(), Error> {
        let g = (r.task_id, r.stage, r.arg_index);
        match self.group {
            Some(prev) if prev == g => {}
            Some(prev) => {
                if g < prev {
                    self.sorted = false;
                }
                self.group = Some(g);
                self.group_roles.clear();
            }
            None => self.group = Some(g),
        }
        // The upstream runtime repeats before_dispatch records per SPMD
        // block; those repeats are the only duplicates a dump may hold.
        let repeats_ok = self.layout != Layout::Native && r.stage == Stage::BeforeDispatch;
        if let Some((_, first, label)) = self.group_roles.iter().find(|(role, ..)| *role == r.role)
        {
            if !repeats_ok {
                return Err(Error::new(
                    &self.manifest,
                    ErrorKind::Conflict {
                        first: (*first, label.clone()),
                        second: (r.index, r.label()),
                        msg: format!(
                            "duplicate key (task {}, stage {}, arg {}, role {}): a dump holds each argument once per stage",
                            r.task_id,
                            r.stage,
                            r.arg_index,
                            r.role.name()
                        ),
                    },
                ));
            }
            return Ok(());
        }
        self.group_roles.push((r.role, r.index, r.label()));
        Ok(())
    }

    fn range(&mut self, r: &Record) -> Option<Pending> {
        if r.bin_size == 0 {
            return None;
        }
        let (s, e) = (r.bin_offset, r.bin_offset + r.bin_size);
        let pending = || {
            Some(Pending::Overlap {
                index: r.index,
                label: r.label(),
                range: (s, e),
            })
        };
        let before = self.covered.range(..=s).next_back().map(|(&a, &b)| (a, b));
        if before.is_some_and(|(_, b)| b > s) {
            return pending();
        }
        let after = self.covered.range(s..).next().map(|(&a, &b)| (a, b));
        if after.is_some_and(|(a, _)| a < e) {
            return pending();
        }
        let mut start = s;
        let mut end = e;
        if let Some((a, b)) = before.filter(|&(_, b)| b == s) {
            self.covered.remove(&a);
            start = a;
            let _ = b;
        }
        if let Some((a, b)) = after.filter(|&(a, _)| a == e) {
            self.covered.remove(&a);
            end = b;
        }
        self.covered.insert(start, end);
        None
    }

    /// Intervals held now (for tests of the memory bound).
    pub fn intervals(&self) -> usize {
        self.covered.len()
    }

    /// The error of header counter `field` (`header`) that disagrees with
    /// the `actual` count of the records; `note` follows the count and
    /// names what was counted, its first "records" in the singular for 1.
    fn counter(&self, field: &'static str, header: u64, actual: u64, note: String) -> Error {
        let note = match actual {
            1 => note.replacen("records", "record", 1),
            _ => note,
        };
        Error::new(
            &self.manifest,
            ErrorKind::Counter {
                field,
                header,
                actual,
                note,
            },
        )
    }

    /// Compare the header's counters with what the records added up to.
    ///
    /// # Errors
    /// The first counter that disagrees.
    pub fn finish(&self, h: &Header) -> Result<(), Error> {
        let c = &self.counts;
        let fail = |field, header, actual, note| Err(self.counter(field, header, actual, note));
        let stage = |i: usize| c.stages[i];
        // The upstream layout counts hang snapshots (marked after_completion
        // records) in after_completion; upstream's own dumps have none marked.
        let after = match self.layout {
            Layout::Upstream => stage(1) + stage(2),
            _ => stage(1),
        };
        let plain = [
            (
                "total_tensors",
                h.total_tensors,
                c.total,
                " records in the list",
            ),
            (
                "before_dispatch",
                h.before_dispatch,
                stage(0),
                " at that stage",
            ),
            (
                "after_completion",
                h.after_completion,
                after,
                " at that stage",
            ),
            ("hang_snapshot", h.hang_snapshot, stage(2), " at that stage"),
            (
                "output_tensors",
                h.output_tensors,
                c.tensor_roles[1],
                " output tensor records (output + output_existing)",
            ),
            (
                "inout_tensors",
                h.inout_tensors,
                c.tensor_roles[2],
                " inout tensor records",
            ),
            (
                "truncated_tensors",
                h.truncated_tensors,
                c.truncated,
                " records flagged truncated",
            ),
        ];
        for (field, header, actual, note) in plain {
            if header != actual {
                return fail(field, header, actual, note.into());
            }
        }
        self.finish_conventions(h)
    }

    /// The counters whose meaning differs between writers: scalar records
    /// (absent upstream), inputs (upstream counts scalars too), overwritten
    /// records.
    fn finish_conventions(&self, h: &Header) -> Result<(), Error> {
        let c = &self.counts;
        let fail = |field, header, actual, note| Err(self.counter(field, header, actual, note));
        // Ours always has scalar_args; the upstream runtime writes none.
        let scalar_args = h
            .scalar_args
            .or((self.layout == Layout::Native).then_some(0));
        if let Some(s) = scalar_args {
            if s != c.scalars {
                return fail("scalar_args", s, c.scalars, " scalar records".into());
            }
        }
        // Ours counts tensor records per role; the upstream and reference
        // runtimes also count scalar records (role input) as inputs.
        let inputs = c.tensor_roles[0];
        let with_scalars = inputs + c.scalar_inputs;
        let ok = match self.layout {
            Layout::Native => h.input_tensors == inputs,
            _ => h.input_tensors == inputs || h.input_tensors == with_scalars,
        };
        if !ok {
            let note = match self.layout {
                Layout::Native => " input tensor records".to_string(),
                _ => format!(
                    " input tensor records ({with_scalars} counting the {} scalar records too)",
                    c.scalar_inputs
                ),
            };
            return fail("input_tensors", h.input_tensors, inputs, note);
        }
        let overwritten_ok = match self.layout {
            Layout::Native => h.dropped_overwrite == c.overwritten,
            _ => c.overwritten == 0 || h.dropped_overwrite >= c.overwritten,
        };
        if !overwritten_ok {
            return fail(
                "dropped_overwrite",
                h.dropped_overwrite,
                c.overwritten,
                " records flagged overwritten".into(),
            );
        }
        Ok(())
    }
}
