//! The manifest's record order: (task, stage, arg index, role), each
//! record one packed `u128` key ([`Kept::sort_key`]: the task id in the
//! top 64 bits, the record's index in the low 32).
//!
//! The export sorts these keys after the graph, on the run's critical path,
//! so the common case gets a linear pass: a run's task ids are mostly one
//! dense range (a ring's local ids count up from 0), and each task has a
//! handful of records. Records are bucketed by task id (a counting pass and
//! a scatter of 4-byte indices), then each task's few are sorted by key.
//! Ids spread wider than [`DENSE`] × the records (tasks in several rings,
//! whose ids are `ring << 32 | local`) take a comparison sort instead.
//!
//! The ordering runs after the graph, before the manifest's first byte can
//! go to the disk, so the collector counts each task's records as they
//! arrive ([`TaskCounts`]): the export then skips two of its passes over
//! every record (the range of ids, the counts).

use crate::kept::Kept;

/// Bucketing is used while the task ids span at most this many ids per
/// record (the counts array costs a word per id in the span).
const DENSE: u64 = 4;

/// Ids a [`TaskCounts`] may span before the records seen justify it (the
/// first batches to arrive need not hold the lowest ids).
const MIN_SPAN: u64 = 1 << 16;

/// Records per task id, counted as the collector keeps them: a dense table
/// from the lowest id seen to the highest. It gives up (and the export
/// counts again) when the ids spread wider than a dense table is worth,
/// or when records are taken out after being counted.
#[derive(Debug, Default)]
pub(crate) struct TaskCounts {
    lo: u64,
    /// `counts[t - lo]`: records of task `t`.
    counts: Vec<u32>,
    /// Records counted.
    total: u64,
    gave_up: bool,
}

impl TaskCounts {
    /// Count one record of `task`.
    #[inline]
    pub fn add(&mut self, task: u64) {
        // The common case: a task inside the table (or a table given up).
        if let Some(n) = self.counts.get_mut(task.wrapping_sub(self.lo) as usize) {
            *n += 1;
            self.total += 1;
        } else if !self.gave_up {
            self.add_outside(task);
        }
    }

    /// Count a record of a task outside the table, growing it.
    fn add_outside(&mut self, task: u64) {
        if self.counts.is_empty() {
            self.lo = task;
        }
        if task < self.lo {
            let extra = self.lo - task;
            if !self.fits(extra.saturating_add(self.counts.len() as u64)) {
                return self.give_up();
            }
            self.counts
                .splice(0..0, std::iter::repeat_n(0, extra as usize));
            self.lo = task;
        }
        let i = task - self.lo;
        if i >= self.counts.len() as u64 {
            if !self.fits(i + 1) {
                return self.give_up();
            }
            self.counts.resize(i as usize + 1, 0);
        }
        self.counts[i as usize] += 1;
        self.total += 1;
    }

    fn fits(&self, span: u64) -> bool {
        span <= self
            .total
            .saturating_add(1)
            .saturating_mul(DENSE)
            .max(MIN_SPAN)
    }

    /// The counts no longer describe the records (some were taken out).
    pub fn give_up(&mut self) {
        self.gave_up = true;
        self.counts = Vec::new();
    }

    /// `(lowest id, counts)` when they describe exactly `n` records.
    fn exact(&self, n: usize) -> Option<(u64, &[u32])> {
        (!self.gave_up && !self.counts.is_empty() && self.total == n as u64)
            .then_some((self.lo, &self.counts))
    }
}

/// Indices into `kept` in the manifest's order (see the module doc), with
/// the collector's counts of its records when it kept them.
pub(crate) fn record_order(
    kept: &[Kept],
    upstream: bool,
    counted: Option<&TaskCounts>,
) -> Vec<u32> {
    let key = |i: u32| kept[i as usize].sort_key(upstream) | u128::from(i);
    let dense = |span: u64| span < (kept.len() as u64).saturating_mul(DENSE);
    let bucketed = match counted.and_then(|c| c.exact(kept.len())) {
        Some((lo, counts)) if dense(counts.len() as u64 - 1) => {
            scatter(kept, lo, counts.iter().map(|&n| n as usize))
        }
        _ => None,
    };
    let bucketed = bucketed.or_else(|| {
        let (lo, hi) = kept.iter().fold(None, |acc, k| match acc {
            None => Some((k.task_id, k.task_id)),
            Some((lo, hi)) => Some((k.task_id.min(lo), k.task_id.max(hi))),
        })?;
        if !dense(hi - lo) {
            return None;
        }
        let mut counts = vec![0usize; (hi - lo) as usize + 1];
        for k in kept {
            counts[(k.task_id - lo) as usize] += 1;
        }
        scatter(kept, lo, counts.into_iter())
    });
    let Some((start, mut out)) = bucketed else {
        let keys = (0..kept.len() as u32).map(key).collect();
        return sort_two_halves(keys)
            .into_iter()
            .map(|k| k as u32)
            .collect();
    };
    // A task's records, in arrival order, are put in order by their key
    // within the task (stable: equal keys keep their arrival order, as the
    // full keys' record index would).
    let keys = crate::kept::task_keys(upstream);
    let mut scratch = Vec::new();
    for w in start.windows(2) {
        let task = &mut out[w[0]..w[1]];
        if task.len() > 1 {
            sort_task(task, kept, &keys, &mut scratch);
        }
    }
    out
}

/// Put one task's record indices in order of their [`Kept::task_key`]s
/// (looked up by flags in `keys`), stably. A task has a handful of
/// records, nearly always in order already (a stage's records are
/// captured in arg order, and the stages one after the other): one
/// insertion pass.
fn sort_task(task: &mut [u32], kept: &[Kept], keys: &[u32; 256], scratch: &mut Vec<(u32, u32)>) {
    scratch.clear();
    scratch.extend(task.iter().map(|&i| {
        let k = &kept[i as usize];
        (keys[usize::from(k.flags)] | u32::from(k.arg_index) << 2, i)
    }));
    if scratch.len() > 64 {
        scratch.sort_by_key(|&(key, _)| key);
    } else {
        for j in 1..scratch.len() {
            let x = scratch[j];
            let mut p = j;
            while p > 0 && scratch[p - 1].0 > x.0 {
                scratch[p] = scratch[p - 1];
                p -= 1;
            }
            scratch[p] = x;
        }
    }
    for (slot, &(_, i)) in task.iter_mut().zip(scratch.iter()) {
        *slot = i;
    }
}

/// Indices into `kept` grouped by task (`start[b]..start[b + 1]`: task
/// `lo + b`'s, in arrival order), from each task's record count; `None`
/// when the counts do not match the records.
fn scatter(
    kept: &[Kept],
    lo: u64,
    counts: impl ExactSizeIterator<Item = usize>,
) -> Option<(Vec<usize>, Vec<u32>)> {
    let mut start = Vec::with_capacity(counts.len() + 1);
    start.push(0usize);
    for n in counts {
        start.push(start.last()? + n);
    }
    if *start.last()? != kept.len() {
        return None;
    }
    let mut next = start.clone();
    let mut out = vec![0u32; kept.len()];
    for (i, k) in kept.iter().enumerate() {
        let b = usize::try_from(k.task_id.checked_sub(lo)?).ok()?;
        let end = *start.get(b + 1)?;
        let at = &mut next[b];
        if *at >= end {
            return None;
        }
        out[*at] = i as u32;
        *at += 1;
    }
    Some((start, out))
}

/// Sort distinct keys: both halves at once on two threads, then one merge
/// (the export runs after the graph, when the CPUs are free).
pub(crate) fn sort_two_halves(mut v: Vec<u128>) -> Vec<u128> {
    let mid = v.len() / 2;
    let (a, b) = v.split_at_mut(mid);
    std::thread::scope(|s| {
        s.spawn(|| a.sort_unstable());
        b.sort_unstable();
    });
    let (a, b) = v.split_at(mid);
    let mut out = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Stage;
    use proptest::prelude::*;
    use simpler_core::{ArgRole, TaskId};

    #[test]
    fn two_half_sort_sorts() {
        for n in [0usize, 1, 2, 3, 10, 1001] {
            let v: Vec<u128> = (0..n as u128)
                .map(|i| (i * 7919) % 1009 + (i << 20))
                .rev()
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            assert_eq!(sort_two_halves(v), want, "n = {n}");
        }
    }

    fn kept(task: u64, stage: Stage, arg: u32, role: ArgRole) -> Kept {
        crate::kept::kept_for_test(TaskId(task), stage, arg, role)
    }

    /// What the order must be: every record's full key, sorted.
    fn by_plain_sort(kept: &[Kept], upstream: bool) -> Vec<u32> {
        let mut keys: Vec<u128> = kept
            .iter()
            .enumerate()
            .map(|(i, k)| k.sort_key(upstream) | i as u128)
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|k| k as u32).collect()
    }

    const STAGES: [Stage; 3] = [
        Stage::BeforeDispatch,
        Stage::AfterCompletion,
        Stage::HangSnapshot,
    ];
    const ROLES: [ArgRole; 4] = [
        ArgRole::Input,
        ArgRole::Output,
        ArgRole::InOut,
        ArgRole::OutputExisting,
    ];

    fn records(tasks: &[u64], rest: &[(usize, u32, usize)]) -> Vec<Kept> {
        tasks
            .iter()
            .zip(rest.iter().cycle())
            .map(|(&t, &(s, a, r))| kept(t, STAGES[s % 3], a, ROLES[r % 4]))
            .collect()
    }

    proptest! {
        /// Dense ids (bucketed), ids in two rings and ids anywhere
        /// (compared), both layouts: the order of a plain sort.
        #[test]
        fn orders_like_a_plain_sort(
            dense in prop::collection::vec(0u64..64, 0..400),
            spread in prop::collection::vec(any::<u64>(), 0..50),
            ring in prop::collection::vec(0u64..2, 0..200),
            rest in prop::collection::vec((0usize..3, 0u32..12, 0usize..4), 1..16),
        ) {
            let rings: Vec<u64> = ring.iter().enumerate().map(|(i, &r)| (r << 32) | (i as u64 % 7)).collect();
            for tasks in [dense, spread, rings] {
                let kept = records(&tasks, &rest);
                let mut counted = TaskCounts::default();
                for k in &kept {
                    counted.add(k.task_id);
                }
                for upstream in [false, true] {
                    let want = by_plain_sort(&kept, upstream);
                    prop_assert_eq!(&record_order(&kept, upstream, None), &want);
                    prop_assert_eq!(&record_order(&kept, upstream, Some(&counted)), &want);
                }
            }
        }
    }

    #[test]
    fn the_extremes_of_the_id_range_sort() {
        let rest = [(1, 3, 0), (0, 1, 2), (2, 0, 1)];
        for tasks in [
            &[u64::MAX, 0, u64::MAX - 1, 5, u64::MAX][..],
            &[u64::MAX, u64::MAX - 2, u64::MAX],
            &[7],
            &[],
        ] {
            let kept = records(tasks, &rest);
            assert_eq!(
                record_order(&kept, false, None),
                by_plain_sort(&kept, false)
            );
        }
    }

    /// Counts that do not describe the records — one record fewer, one
    /// moved to another task, a task outside their range — are not
    /// trusted: the order is still a plain sort's.
    #[test]
    fn counts_that_do_not_match_are_not_used() {
        let rest = [(1, 3, 0), (0, 1, 2), (2, 0, 1)];
        let tasks: Vec<u64> = (0..40).map(|i| 100 + i % 13).collect();
        let kept = records(&tasks, &rest);
        let want = by_plain_sort(&kept, false);
        let count = |ids: &[u64]| {
            let mut c = TaskCounts::default();
            ids.iter().for_each(|&t| c.add(t));
            c
        };
        let mut moved = tasks.clone();
        moved[5] = 101;
        let mut outside = tasks.clone();
        outside[7] = 99;
        for wrong in [count(&tasks[1..]), count(&moved), count(&outside[..39]), {
            let mut c = count(&tasks);
            c.give_up();
            c
        }] {
            assert_eq!(record_order(&kept, false, Some(&wrong)), want, "{wrong:?}");
        }
        assert_eq!(record_order(&kept, false, Some(&count(&tasks))), want);
    }

    /// Ids arriving far below the first ones re-base the table; ids too
    /// spread for a dense table make it give up, and the order holds.
    #[test]
    fn counts_rebase_and_give_up() {
        let mut c = TaskCounts::default();
        for t in [500u64, 502, 3, 501, 3] {
            c.add(t);
        }
        let (lo, counts) = c.exact(5).expect("five records counted");
        assert_eq!((lo, counts.len()), (3, 500), "ids 3..=502");
        assert_eq!(
            (counts[0], counts[497], counts[498], counts[499]),
            (2, 1, 1, 1)
        );
        assert_eq!(counts.iter().sum::<u32>(), 5);
        c.add(u64::MAX);
        assert!(c.exact(6).is_none(), "gave up on a spread id");
        let rest = [(1, 3, 0)];
        let kept = records(&[500, 502, 3, 501, 3, u64::MAX], &rest);
        assert_eq!(
            record_order(&kept, false, Some(&c)),
            by_plain_sort(&kept, false)
        );
    }
}
