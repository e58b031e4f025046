//! Which records to show: the viewer's filters, their command-line forms,
//! and hints when nothing matched (gathered while streaming).

use simpler_core::{ArgRole, TaskId};
use simpler_format::vocab::{parse_role, Kind, Stage};

use crate::record::Record;

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
    pub kind: Option<Kind>,
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
        self.task.is_none_or(|t| t == r.task_id)
            && self.func.is_none_or(|f| r.func_ids.contains(&f))
            && self.stage.is_none_or(|s| s == r.stage)
            && self.role.is_none_or(|x| x == r.role)
            && self.kind.is_none_or(|k| k == r.kind)
            && self.arg.is_none_or(|a| a == r.arg_index)
    }

    /// The records that pass, in order.
    pub fn select<'d>(&self, records: &'d [Record]) -> Vec<&'d Record> {
        records.iter().filter(|r| self.matches(r)).collect()
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
}

/// What the records held, for hints when a filter matched nothing
/// (constant memory, gathered as they stream by).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// Records seen.
    pub records: u64,
    /// Some record names func ids.
    pub any_func_ids: bool,
    /// Lowest and highest task id.
    pub task_range: Option<(TaskId, TaskId)>,
    /// Distinct task ids (counted as they change; exact for sorted dumps).
    pub tasks: u64,
    /// Highest argument slot.
    pub max_arg: Option<u32>,
    /// The filter's task was seen.
    pub task_seen: bool,
    /// The filter's arg was seen.
    pub arg_seen: bool,
    /// Func ids seen (the first [`MAX_FUNCS_SEEN`]).
    pub funcs: std::collections::BTreeSet<u32>,
    last_task: Option<TaskId>,
}

/// Func ids [`Seen`] keeps for its hint (a workload has a handful).
pub const MAX_FUNCS_SEEN: usize = 64;

impl Seen {
    /// Account for `r` (against `f`'s task and arg).
    pub fn add(&mut self, f: &Filter, r: &Record) {
        self.records += 1;
        self.any_func_ids |= !r.func_ids.is_empty();
        for &f in &r.func_ids {
            if self.funcs.len() < MAX_FUNCS_SEEN {
                self.funcs.insert(f);
            }
        }
        self.task_range = Some(match self.task_range {
            None => (r.task_id, r.task_id),
            Some((lo, hi)) => (lo.min(r.task_id), hi.max(r.task_id)),
        });
        if self.last_task != Some(r.task_id) {
            self.tasks += 1;
            self.last_task = Some(r.task_id);
        }
        self.max_arg = self.max_arg.max(Some(r.arg_index));
        self.task_seen |= f.task == Some(r.task_id);
        self.arg_seen |= f.arg == Some(r.arg_index);
    }

    /// Why `f` matched nothing, beyond "nothing matched": hints such as
    /// "this dump records no func ids" or the range of task ids present.
    pub fn explain_no_match(&self, f: &Filter) -> Vec<String> {
        let mut hints = Vec::new();
        if f.func.is_some() && !self.any_func_ids {
            hints.push(
                "this dump records no func ids (reference-runtime format), so --func matches nothing"
                    .to_string(),
            );
        }
        if let Some(func) = f
            .func
            .filter(|f| self.any_func_ids && !self.funcs.contains(f))
        {
            let ids: Vec<String> = self.funcs.iter().map(u32::to_string).collect();
            hints.push(format!(
                "no record has func {func}; func ids in this dump: {}",
                ids.join(", ")
            ));
        }
        if let Some(t) = f.task.filter(|_| !self.task_seen) {
            match self.task_range {
                Some((lo, hi)) => hints.push(format!(
                    "task {t} is not in this dump; it has {} tasks, {lo} .. {hi}",
                    self.tasks
                )),
                None => hints.push("this dump has no records".to_string()),
            }
        }
        if let (Some(a), Some(m)) = (f.arg.filter(|_| !self.arg_seen), self.max_arg) {
            hints.push(format!("no record has arg {a}; arg indices go up to {m}"));
        }
        hints
    }
}

/// Parse `--task`: `0x…` hex or decimal.
///
/// # Errors
/// What was expected.
pub fn parse_task(s: &str) -> Result<TaskId, String> {
    TaskId::parse(s).ok_or_else(|| {
        format!("{s:?}: expected a task id, 0x-prefixed hex (0x0000000200000003) or decimal")
    })
}

/// Parse `--stage`: `before_dispatch` / `before`, `after_completion` /
/// `after`, `hang_snapshot` / `hang`.
///
/// # Errors
/// What was expected.
pub fn parse_stage(s: &str) -> Result<Stage, String> {
    Stage::from_name(s).ok_or_else(|| {
        format!("{s:?}: expected before_dispatch (or before), after_completion (or after) or hang_snapshot (or hang)")
    })
}

/// Parse `--role`. `output_existing` is refused with the reason: dumps
/// write such an argument as `output` (to the kernel it is one), so the
/// filter could never match.
///
/// # Errors
/// What was expected.
pub fn parse_role_arg(s: &str) -> Result<ArgRole, String> {
    match parse_role(s) {
        Some(ArgRole::OutputExisting) => Err(format!(
            "{s:?}: dumps record an output_existing argument as role output (to the kernel it is an output); use --role output"
        )),
        Some(r) => Ok(r),
        None => Err(format!("{s:?}: expected input, output, inout or no_dep")),
    }
}

/// Parse `--kind`: `tensor` or `scalar`.
///
/// # Errors
/// What was expected.
pub fn parse_kind(s: &str) -> Result<Kind, String> {
    Kind::from_name(s).ok_or_else(|| format!("{s:?}: expected tensor or scalar"))
}
