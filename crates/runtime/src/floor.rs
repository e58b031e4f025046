//! The floor of `simpler bench dispatch` (DESIGN §10): the hand-off
//! pipeline of a run with nothing else in it.
//!
//! The same thread shape and the same primitives as a run — one
//! orchestrator thread pushing reference-counted items (one heap
//! allocation each, as a task is) into the same lock-free ready queue,
//! never more than `window` in flight (it parks while the window is full,
//! as a run's orchestrator waits for a task slot), a pool of `workers`
//! threads popping them, spinning, waking and sleeping through the
//! runtime's own idle mechanism (`crate::idle`, with the workers' spin
//! limit), and signalling each completion back through an atomic count
//! that unparks a waiting orchestrator — but no
//! dependency tracking, no GM, no payload, no dump: each item "runs" a
//! trivial function. What a run costs per task above this is the
//! runtime's own work.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use crossbeam::{
    queue::SegQueue,
    sync::{Parker, Unparker},
};

use crate::{idle::Idle, RuntimeError};

/// One item (a task stand-in).
struct Item {
    x: u64,
    done: AtomicBool,
}

struct Pipe {
    ready: SegQueue<Arc<Item>>,
    idle: Idle,
    done: AtomicU64,
    /// Sum of what the items computed (keeps the work from being optimized out).
    sum: AtomicU64,
    stop: AtomicBool,
    orch_waiting: AtomicBool,
    orch: Unparker,
}

/// The trivial "kernel" of one item.
fn trivial(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn worker(p: &Pipe) {
    let mut local = 0u64;
    loop {
        if let Some(item) = p.ready.pop() {
            local = local.wrapping_add(trivial(item.x));
            item.done.store(true, Ordering::Release);
            drop(item);
            p.done.fetch_add(1, Ordering::SeqCst);
            if p.orch_waiting.load(Ordering::SeqCst) {
                p.orch.unpark();
            }
            continue;
        }
        if p.stop.load(Ordering::Acquire) {
            break;
        }
        let has_work = || !p.ready.is_empty() || p.stop.load(Ordering::Acquire);
        if !p.idle.spin(crate::idle::WORKER_SPIN, has_work) {
            p.idle.sleep(has_work, None);
        }
    }
    p.sum.fetch_add(local, Ordering::Relaxed);
}

/// Push `tasks` items through `workers` worker threads, at most `window`
/// in flight, and wait until all completed; the wall time from the first
/// push to the last completion (thread start and join excluded).
///
/// # Errors
/// [`RuntimeError::Config`] when a thread cannot start, or when the items'
/// results do not add up (a lost or doubled item).
pub fn floor_pipeline(tasks: u64, workers: usize, window: u64) -> Result<Duration, RuntimeError> {
    let parker = Parker::new();
    let p = Arc::new(Pipe {
        ready: SegQueue::new(),
        idle: Idle::new(workers.max(1), crate::config::default_workers() as usize),
        done: AtomicU64::new(0),
        sum: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        orch_waiting: AtomicBool::new(false),
        orch: parker.unparker().clone(),
    });
    let mut handles = Vec::new();
    for w in 0..workers.max(1) {
        let p = p.clone();
        let h = std::thread::Builder::new()
            .name(format!("floor{w}"))
            .spawn(move || worker(&p))
            .map_err(|e| RuntimeError::Config(format!("cannot start a floor worker: {e}")))?;
        handles.push(h);
    }
    // Let every worker reach its sleep, as a run's pool does before its
    // first submit.
    std::thread::sleep(Duration::from_millis(5));
    let window = window.max(1);
    let wait_for = |n: u64| {
        while p.done.load(Ordering::Acquire) < n {
            p.orch_waiting.store(true, Ordering::SeqCst);
            if p.done.load(Ordering::SeqCst) < n {
                p.idle.producer_parked(true);
                if !p.ready.is_empty() {
                    p.idle.notify_one(true);
                }
                // The timeout only bounds a missed wake-up.
                parker.park_timeout(Duration::from_millis(20));
                p.idle.producer_parked(false);
            }
            p.orch_waiting.store(false, Ordering::SeqCst);
        }
    };
    let start = Instant::now();
    for i in 0..tasks {
        if i >= window {
            wait_for(i - window + 1);
        }
        let item = Arc::new(Item {
            x: i,
            done: AtomicBool::new(false),
        });
        p.ready.push(item);
        p.idle.notify_one(true);
    }
    wait_for(tasks);
    let wall = start.elapsed();
    p.stop.store(true, Ordering::Release);
    p.idle.notify_all();
    for h in handles {
        let _ = h.join();
    }
    let want = (0..tasks).fold(0u64, |a, x| a.wrapping_add(trivial(x)));
    if p.sum.load(Ordering::Relaxed) != want {
        return Err(RuntimeError::Config(
            "floor pipeline: the items' results do not add up".into(),
        ));
    }
    Ok(wall)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_item_runs_once_whatever_the_worker_count() {
        for (workers, window) in [(1, 4), (2, 4096), (5, 1)] {
            super::floor_pipeline(10_000, workers, window).unwrap();
        }
        super::floor_pipeline(0, 2, 16).unwrap();
    }
}
