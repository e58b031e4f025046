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
use serde::Serialize;

use crate::model::{task_label, Timeline};

/// Process ids of the three groups of tracks.
pub const PID_CORES: u32 = 1;
/// See [`PID_CORES`].
pub const PID_SCHED: u32 = 2;
/// See [`PID_CORES`].
pub const PID_ORCH: u32 = 3;

/// Lanes a track may take before its tid would collide with the next
/// track's.
const LANES: u32 = 1000;

/// One trace event (the Chrome trace JSON fields we use).
#[derive(Debug, Serialize)]
struct Event<'a> {
    name: &'a str,
    ph: &'a str,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'a str>,
    #[serde(skip_serializing_if = "Args::is_none")]
    args: &'a Args<'a>,
}

/// Slice and metadata arguments, typed (no JSON value per slice).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum Args<'a> {
    None,
    Name {
        name: &'a str,
    },
    Sort {
        sort_index: u32,
    },
    Dispatch {
        #[serde(rename = "taskId")]
        task_id: String,
        core_id: u32,
        reg_task_id: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        dispatch_to_finish_us: Option<f64>,
    },
    Phase {
        loop_iter: u64,
        tasks_processed: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        pop_hit: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pop_miss: Option<u64>,
    },
    Submit {
        submit_idx: u64,
        #[serde(rename = "taskId")]
        task_id: String,
    },
}

impl Args<'_> {
    fn is_none(a: &&Args<'_>) -> bool {
        matches!(a, Args::None)
    }
}

/// A slice before lane packing.
struct Slice {
    name: String,
    start: u64,
    end: u64,
    args: Args<'static>,
    /// Index of the dispatch it shows, for flow arrows.
    dispatch: Option<usize>,
}

/// A named track of slices.
struct Track {
    pid: u32,
    base_tid: u32,
    name: String,
    slices: Vec<Slice>,
}

/// Lane of each slice (by position), packing in start order.
fn pack(slices: &[Slice]) -> Vec<u32> {
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

fn core_tracks(t: &Timeline) -> Vec<Track> {
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
    for (i, d) in t.dispatches.iter().enumerate() {
        let Some(track) = tracks.get_mut(d.core as usize) else {
            continue;
        };
        let args = Args::Dispatch {
            task_id: d.task.to_string(),
            core_id: d.core,
            reg_task_id: d.reg,
            dispatch_to_finish_us: match (d.dispatch, d.finish) {
                (Some(disp), Some(fin)) => Some(t.us(fin.saturating_sub(disp))),
                _ => None,
            },
        };
        track.slices.push(Slice {
            name: format!("{}({})", t.func_name(d.func), task_label(d.task)),
            start: d.start,
            end: d.end,
            args,
            dispatch: Some(i),
        });
    }
    tracks
}

fn aicpu_tracks(t: &Timeline) -> Vec<Track> {
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
                    name: p.kind.to_string(),
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
                    name: format!("submit({})", task_label(s.task_id.0)),
                    start: s.start_cycles,
                    end: s.end_cycles,
                    args: Args::Submit {
                        submit_idx: s.submit_idx,
                        task_id: s.task_id.0.to_string(),
                    },
                    dispatch: None,
                })
                .collect(),
        });
    }
    tracks
}

fn emit(w: &mut impl Write, first: &mut bool, e: &Event<'_>) -> io::Result<()> {
    w.write_all(if *first { b"\n" } else { b",\n" })?;
    *first = false;
    serde_json::to_writer(&mut *w, e).map_err(io::Error::other)
}

fn meta<'a>(name: &'a str, pid: u32, tid: u32, args: &'a Args<'a>) -> Event<'a> {
    Event {
        name,
        ph: "M",
        pid,
        tid,
        ts: None,
        dur: None,
        cat: None,
        id: None,
        bp: None,
        args,
    }
}

/// Write the trace of `t` to `w`.
///
/// # Errors
/// Write failures.
pub fn write_perfetto(t: &Timeline, w: &mut dyn Write) -> io::Result<()> {
    // Written through the buffer's own type, not `dyn Write`: serde_json
    // makes several small writes per event, and each one through a vtable
    // cost more than the formatting.
    let mut b = io::BufWriter::with_capacity(1 << 16, w);
    write_events(t, &mut b)?;
    b.flush()
}

fn write_events(t: &Timeline, w: &mut impl Write) -> io::Result<()> {
    let t0 = t.t0();
    let us = |c: u64| t.us(c.saturating_sub(t0));
    let mut tracks = core_tracks(t);
    tracks.extend(aicpu_tracks(t));
    w.write_all(b"{\"displayTimeUnit\": \"ns\", \"traceEvents\": [")?;
    let mut first = true;
    for (pid, name) in [
        (PID_CORES, "AICore"),
        (PID_SCHED, "AICPU Scheduler"),
        (PID_ORCH, "Orchestrator"),
    ] {
        emit(
            w,
            &mut first,
            &meta("process_name", pid, 0, &Args::Name { name }),
        )?;
        emit(
            w,
            &mut first,
            &meta(
                "process_sort_index",
                pid,
                0,
                &Args::Sort { sort_index: pid },
            ),
        )?;
    }
    // Where each dispatch's slice landed, for the flows.
    let mut at: Vec<Option<(u32, u32)>> = vec![None; t.dispatches.len()];
    for tr in &tracks {
        write_track(t, w, &mut first, tr, &mut at, &us)?;
    }
    write_flows(t, w, &mut first, &at, &us)?;
    w.write_all(b"\n]}\n")
}

/// A track's thread names (one per lane used) and its slices.
fn write_track(
    t: &Timeline,
    w: &mut impl Write,
    first: &mut bool,
    tr: &Track,
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
        emit(
            w,
            first,
            &meta("thread_name", tr.pid, tid, &Args::Name { name: &name }),
        )?;
        emit(
            w,
            first,
            &meta(
                "thread_sort_index",
                tr.pid,
                tid,
                &Args::Sort { sort_index: tid },
            ),
        )?;
    }
    for (s, &lane) in tr.slices.iter().zip(&lanes) {
        let tid = tr.base_tid + lane.min(LANES - 1);
        if let Some(i) = s.dispatch {
            at[i] = Some((tr.pid, tid));
        }
        let e = Event {
            name: &s.name,
            ph: "X",
            pid: tr.pid,
            tid,
            ts: Some(us(s.start)),
            dur: Some(t.us(s.end.saturating_sub(s.start))),
            cat: None,
            id: None,
            bp: None,
            args: &s.args,
        };
        emit(w, first, &e)?;
    }
    Ok(())
}

/// Flow arrows: producer's last-ending dispatch → consumer's first.
fn write_flows(
    t: &Timeline,
    w: &mut impl Write,
    first: &mut bool,
    at: &[Option<(u32, u32)>],
    us: &dyn Fn(u64) -> f64,
) -> io::Result<()> {
    let mut last: FxHashMap<u64, usize> = FxHashMap::default();
    let mut earliest: FxHashMap<u64, usize> = FxHashMap::default();
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
        let (Some(&(pp, pt)), Some(&(sp, st))) = (at[p].as_ref(), at[s].as_ref()) else {
            continue;
        };
        let (pd, sd) = (&t.dispatches[p], &t.dispatches[s]);
        for (ph, pid, tid, ts, bp) in [
            ("s", pp, pt, us(pd.start), None),
            ("f", sp, st, us(sd.start), Some("e")),
        ] {
            let ev = Event {
                name: "dependency",
                ph,
                pid,
                tid,
                ts: Some(ts),
                dur: None,
                cat: Some(e.source.as_ref()),
                id: Some(n as u64),
                bp,
                args: &Args::None,
            };
            emit(w, first, &ev)?;
        }
    }
    Ok(())
}
