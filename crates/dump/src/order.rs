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

use crate::kept::Kept;

/// Bucketing is used while the task ids span at most this many ids per
/// record (the counts array costs a word per id in the span).
const DENSE: u64 = 4;

/// Indices into `kept` in the manifest's order (see the module doc).
pub(crate) fn record_order(kept: &[Kept], upstream: bool) -> Vec<u32> {
    let key = |i: u32| kept[i as usize].sort_key(upstream) | u128::from(i);
    let Some((lo, hi)) = kept.iter().fold(None, |acc, k| match acc {
        None => Some((k.task_id, k.task_id)),
        Some((lo, hi)) => Some((k.task_id.min(lo), k.task_id.max(hi))),
    }) else {
        return Vec::new();
    };
    let span = hi - lo;
    if span >= (kept.len() as u64).saturating_mul(DENSE) {
        let keys = (0..kept.len() as u32).map(key).collect();
        return sort_two_halves(keys)
            .into_iter()
            .map(|k| k as u32)
            .collect();
    }
    let bucket = |k: &Kept| (k.task_id - lo) as usize;
    // start[b]..start[b + 1]: where task `lo + b`'s records go.
    let mut start = vec![0usize; span as usize + 2];
    for k in kept {
        start[bucket(k) + 1] += 1;
    }
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    let mut next = start.clone();
    let mut out = vec![0u32; kept.len()];
    for (i, k) in kept.iter().enumerate() {
        let b = bucket(k);
        out[next[b]] = i as u32;
        next[b] += 1;
    }
    // Each key computed once: a task's keys are sorted in a scratch list.
    let mut keys = Vec::new();
    for w in start.windows(2) {
        let task = &mut out[w[0]..w[1]];
        if task.len() > 1 {
            keys.clear();
            keys.extend(task.iter().map(|&i| key(i)));
            keys.sort_unstable();
            for (slot, k) in task.iter_mut().zip(&keys) {
                *slot = *k as u32;
            }
        }
    }
    out
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
                for upstream in [false, true] {
                    prop_assert_eq!(record_order(&kept, upstream), by_plain_sort(&kept, upstream));
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
            assert_eq!(record_order(&kept, false), by_plain_sort(&kept, false));
        }
    }
}
