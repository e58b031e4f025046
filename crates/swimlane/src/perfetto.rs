//! `swimlane_perfetto.json`: our own Perfetto-safe trace of a timeline.
//!
//! - process 1 `AICore`: a track per core, one slice per dispatch from
//!   kernel start to end, named `func(rXtY)`;
//! - process 2 `AICPU Scheduler`: a track per scheduler thread, its loop
//!   phases as slices (level ≥ 3);
//! - process 3 `Orchestrator`: one track, a slice per submit (level 4);
//! - dependency edges as flow arrows, from the producer's last dispatch to
//!   the consumer's first.
//!
//! No two slices overlap on a track: each track is packed into lanes (a
//! slice goes to the first lane free at its start), lane k > 0 showing as
//! `NAME #k`. Times are µs from the timeline's first timestamp.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::model::{task_label, Timeline};

mod event;

use event::{Args, Events};
use simpler_format::stream::{plain, str_val};

/// Process ids of the three groups of tracks.
pub const PID_CORES: u32 = 1;
/// See [`PID_CORES`].
pub const PID_SCHED: u32 = 2;
/// See [`PID_CORES`].
pub const PID_ORCH: u32 = 3;

/// Lanes a track may take before its tid would collide with the next
/// track's.
const LANES: u32 = 1000;

/// What a slice shows; its name is formatted as it is written (no
/// string per slice).
#[derive(Debug, Clone, Copy)]
enum Label<'a> {
    /// `func(rXtY)`.
    Dispatch { func: Option<u32>, task: u64 },
    /// The phase's kind.
    Phase(&'a str),
    /// `submit(rXtY)`.
    Submit(u64),
}

/// A slice before lane packing.
struct Slice<'a> {
    label: Label<'a>,
    start: u64,
    end: u64,
    args: Args<'a>,
    /// Index of the dispatch it shows, for flow arrows.
    dispatch: Option<usize>,
}

/// A named track of slices.
struct Track<'a> {
    pid: u32,
    base_tid: u32,
    name: String,
    slices: Vec<Slice<'a>>,
}

/// Lane of each slice (by position), packing in start order.
fn pack(slices: &[Slice<'_>]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&i| (slices[i].start, slices[i].end));
    let mut lane_end: Vec<u64> = Vec::new();
    let mut lanes = vec![0; slices.len()];
    for i in order {
        let s = &slices[i];
        let lane = match lane_end.iter().position(|&e| e <= s.start) {
            Some(l) => l,
            None => {
                lane_end.push(0);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = s.end.max(s.start);
        lanes[i] = lane as u32;
    }
    lanes
}

fn core_tracks(t: &Timeline) -> Vec<Track<'_>> {
    let n_aic = t.core_types.iter().filter(|c| *c == "aic").count() as u32;
    let mut tracks: Vec<Track> = (0..t.core_types.len() as u32)
        .map(|c| Track {
            pid: PID_CORES,
            base_tid: c * LANES,
            name: match t.core_types[c as usize].as_str() {
                "aic" => format!("AIC_{c}"),
                _ => format!("AIV_{}", c.saturating_sub(n_aic)),
            },
            slices: Vec::new(),
        })
        .collect();
    // Each track's slices reserved whole: grown by doubling, they were
    // copied into memory not touched before.
    let mut n = vec![0usize; tracks.len()];
    for d in &t.dispatches {
        if let Some(k) = n.get_mut(d.core as usize) {
            *k += 1;
        }
    }
    for (track, n) in tracks.iter_mut().zip(n) {
        track.slices.reserve_exact(n);
    }
    for (i, d) in t.dispatches.iter().enumerate() {
        let Some(track) = tracks.get_mut(d.core as usize) else {
            continue;
        };
        let args = Args::Dispatch {
            task_id: d.task,
            core_id: d.core,
            reg_task_id: d.reg,
            dispatch_to_finish_us: match (d.dispatch, d.finish) {
                (Some(disp), Some(fin)) => Some(t.us(fin.saturating_sub(disp))),
                _ => None,
            },
        };
        track.slices.push(Slice {
            label: Label::Dispatch {
                func: d.func,
                task: d.task,
            },
            start: d.start,
            end: d.end,
            args,
            dispatch: Some(i),
        });
    }
    tracks
}

fn aicpu_tracks(t: &Timeline) -> Vec<Track<'_>> {
    let mut tracks: Vec<Track> = t
        .sched
        .iter()
        .enumerate()
        .map(|(i, phases)| Track {
            pid: PID_SCHED,
            base_tid: i as u32 * LANES,
            name: format!("Sched_{i}"),
            slices: phases
                .iter()
                .map(|p| Slice {
                    label: Label::Phase(&p.kind),
                    start: p.start_cycles,
                    end: p.end_cycles,
                    args: Args::Phase {
                        loop_iter: p.loop_iter,
                        tasks_processed: p.tasks_processed,
                        pop_hit: p.pop_hit,
                        pop_miss: p.pop_miss,
                    },
                    dispatch: None,
                })
                .collect(),
        })
        .collect();
    if !t.submits.is_empty() {
        tracks.push(Track {
            pid: PID_ORCH,
            base_tid: 0,
            name: "Orchestrator".into(),
            slices: t
                .submits
                .iter()
                .map(|s| Slice {
                    label: Label::Submit(s.task_id.0),
                    start: s.start_cycles,
                    end: s.end_cycles,
                    args: Args::Submit {
                        submit_idx: s.submit_idx,
                        task_id: s.task_id.0,
                    },
                    dispatch: None,
                })
                .collect(),
        });
    }
    tracks
}

/// Write the trace of `t` to `w`.
///
/// # Errors
/// Write failures.
pub fn write_perfetto(t: &Timeline, w: &mut dyn Write) -> io::Result<()> {
    // Written through the buffer's own type, not `dyn Write`: a write
    // through a vtable per event cost more than the formatting. It writes
    // out when the next event does not fit: with room for an event more
    // than the durable writer's buffer, its pieces are at least that long
    // and pass through it uncopied (42 MB copied, 41 M instructions).
    let room = simpler_format::durable::BUFFER_BYTES + (64 << 10);
    let mut b = io::BufWriter::with_capacity(room, w);
    write_events(t, &mut b)?;
    b.flush()
}

fn write_events(t: &Timeline, w: &mut impl Write) -> io::Result<()> {
    let t0 = t.t0();
    let us = |c: u64| t.us(c.saturating_sub(t0));
    let mut tracks = core_tracks(t);
    tracks.extend(aicpu_tracks(t));
    w.write_all(b"{\"displayTimeUnit\": \"ns\", \"traceEvents\": [")?;
    let mut ev = Events::new(w);
    for (pid, name) in [
        (PID_CORES, "AICore"),
        (PID_SCHED, "AICPU Scheduler"),
        (PID_ORCH, "Orchestrator"),
    ] {
        ev.meta("process_name", pid, 0, Args::Name(name))?;
        ev.meta("process_sort_index", pid, 0, Args::Sort(pid))?;
    }
    // Where each dispatch's slice landed, for the flows.
    let mut at: Vec<Option<(u32, u32)>> = vec![None; t.dispatches.len()];
    let names = FuncNames::of(t);
    for tr in &tracks {
        write_track(t, &mut ev, tr, &names, &mut at, &us)?;
    }
    write_flows(t, &mut ev, &at, &us)?;
    ev.into_inner().write_all(b"\n]}\n")
}

/// Func names as the trace shows them ([`Timeline::func_name`]), looked
/// up once per func, not once per slice.
struct FuncNames(FxHashMap<Option<u32>, String>);

impl FuncNames {
    fn of(t: &Timeline) -> FuncNames {
        let mut m = FxHashMap::default();
        for d in &t.dispatches {
            m.entry(d.func).or_insert_with(|| t.func_name(d.func));
        }
        FuncNames(m)
    }

    /// `name(rXtY)` of a slice, as a JSON string.
    fn write(&self, b: &mut Vec<u8>, label: Label<'_>) {
        let (prefix, task) = match label {
            Label::Phase(kind) => return str_val(b, kind),
            Label::Dispatch { func, task } => {
                (self.0.get(&func).map_or("task", String::as_str), task)
            }
            Label::Submit(task) => ("submit", task),
        };
        if !plain(prefix) {
            return str_val(b, &format!("{prefix}({})", task_label(task)));
        }
        let mut num = itoa::Buffer::new();
        b.push(b'"');
        b.extend_from_slice(prefix.as_bytes());
        b.extend_from_slice(b"(r");
        b.extend_from_slice(num.format(task >> 32).as_bytes());
        b.push(b't');
        b.extend_from_slice(num.format(task & 0xffff_ffff).as_bytes());
        b.extend_from_slice(b")\"");
    }
}

/// A track's thread names (one per lane used) and its slices.
fn write_track(
    t: &Timeline,
    ev: &mut Events<impl Write>,
    tr: &Track<'_>,
    names: &FuncNames,
    at: &mut [Option<(u32, u32)>],
    us: &dyn Fn(u64) -> f64,
) -> io::Result<()> {
    let lanes = pack(&tr.slices);
    let used = lanes.iter().copied().max().map_or(1, |m| m + 1);
    for lane in 0..used.min(LANES) {
        let tid = tr.base_tid + lane;
        let name = match lane {
            0 => tr.name.clone(),
            k => format!("{} #{k}", tr.name),
        };
        ev.meta("thread_name", tr.pid, tid, Args::Name(&name))?;
        ev.meta("thread_sort_index", tr.pid, tid, Args::Sort(tid))?;
    }
    for (s, &lane) in tr.slices.iter().zip(&lanes) {
        let tid = tr.base_tid + lane.min(LANES - 1);
        if let Some(i) = s.dispatch {
            at[i] = Some((tr.pid, tid));
        }
        ev.slice(
            |b| names.write(b, s.label),
            (tr.pid, tid),
            us(s.start),
            t.us(s.end.saturating_sub(s.start)),
            s.args,
        )?;
    }
    Ok(())
}

/// Flow arrows: producer's last-ending dispatch → consumer's first.
fn write_flows(
    t: &Timeline,
    ev: &mut Events<impl Write>,
    at: &[Option<(u32, u32)>],
    us: &dyn Fn(u64) -> f64,
) -> io::Result<()> {
    // Sized once: each rehash as they grew copied them into memory not
    // touched before.
    let n = t.tasks.len().max(t.dispatches.len().min(1 << 20));
    let mut last: FxHashMap<u64, usize> = FxHashMap::default();
    let mut earliest: FxHashMap<u64, usize> = FxHashMap::default();
    last.reserve(n);
    earliest.reserve(n);
    for (i, d) in t.dispatches.iter().enumerate() {
        let l = last.entry(d.task).or_insert(i);
        if t.dispatches[*l].end < d.end {
            *l = i;
        }
        let e = earliest.entry(d.task).or_insert(i);
        if t.dispatches[*e].start > d.start {
            *e = i;
        }
    }
    for (n, e) in t.edges.iter().enumerate() {
        let (Some(&p), Some(&s)) = (last.get(&e.pred), earliest.get(&e.succ)) else {
            continue;
        };
        let (Some(&from), Some(&to)) = (at[p].as_ref(), at[s].as_ref()) else {
            continue;
        };
        let (pd, sd) = (&t.dispatches[p], &t.dispatches[s]);
        ev.flow(false, from, us(pd.start), &e.source, n as u64)?;
        ev.flow(true, to, us(sd.start), &e.source, n as u64)?;
    }
    Ok(())
}
