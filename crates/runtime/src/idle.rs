//! Where idle worker threads wait, and which of them work wakes.
//!
//! A worker that finds nothing to do first *spins* a little (up to the
//! limit it is given — the pool's workers 50 µs — counted in `spinning`), then announces a sleep (`sleeping += 1`),
//! re-checks for work, and only then blocks on a condition variable.
//!
//! A thread that publishes work wakes **one** sleeper, and only when the
//! work needs it:
//! - nobody is spinning (a spinner takes the work without a wake-up);
//! - and, for work the running producer (the orchestrator) published,
//!   fewer workers are awake than CPUs are left beside it. While it runs it
//!   occupies a CPU itself; once it parks, that CPU is free. Work a worker
//!   published (a released dependent) wakes a sleeper whatever the count.
//! - With no worker awake, one is always woken.
//!
//! Both sides put a `SeqCst` fence between their write and their read, so
//! at least one of them sees the other: either the publisher sees the
//! spinner or sleeper (and leaves the work to an awake worker, or wakes a
//! sleeper under the lock it holds until it waits), or the worker's
//! re-check — after it stopped spinning, and again after it announced its
//! sleep — sees the work. So work is never left queued with every worker
//! asleep, and work left to a busy worker reaches a sleeper at the latest
//! when the producer parks. While work is queued nobody sleeps, so
//! publishing costs one fence and a few loads: no system call per task.
//!
//! Why the limit (measured, stop 22): on a 2-CPU machine a run has three
//! threads (the orchestrator and two workers). When every submit woke a
//! sleeper, the woken worker took the orchestrator's CPU (the only one not
//! busy with a kernel), found little to do, spun on it and slept again —
//! thousands of times a run — which made the `flood` take 0.2–0.3 s
//! instead of 0.13 s in about half the runs. Limiting released
//! dependents as well cost `CaseLarge` about 5 %, so they are not limited.

use std::{
    sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

/// How long a pool worker (and the floor's, `crate::floor`) that found
/// nothing looks for work before it sleeps. A worker that sleeps just
/// before the orchestrator's next submit costs the orchestrator a wake-up
/// (a system call, and on this VM an inter-processor interrupt and often
/// a context switch) for one task. Measured, stop 24, futex calls per
/// 200 000-task flood: 14 000–22 000 with the old 200 rounds (~5 µs),
/// ~3 000 at 50 µs, ~1 100 at 200 µs.
pub(crate) const WORKER_SPIN: Duration = Duration::from_micros(50);

/// Looks for work between two readings of the clock while spinning
/// (~0.4 µs here: a look and a `spin_loop` hint take ~26 ns).
pub(crate) const LOOKS_PER_CLOCK: usize = 16;

/// Pauses between two looks.
const PAUSES_PER_LOOK: usize = 16;

/// Sleeping workers and their wake-up (see the module doc).
pub(crate) struct Idle {
    /// Workers that announced they sleep (some may still be re-checking).
    sleeping: AtomicUsize,
    /// Workers spinning for work: they will take what is published.
    spinning: AtomicUsize,
    /// The producer is parked (its CPU is free for a worker).
    producer_parked: AtomicBool,
    /// Worker threads.
    workers: usize,
    /// Awake workers the CPUs hold while the producer runs: one fewer
    /// than the CPUs, at least one.
    busy_limit: usize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Idle {
    /// The idle state of `workers` worker threads on a machine with `cpus`
    /// CPUs, every worker awake.
    pub fn new(workers: usize, cpus: usize) -> Idle {
        Idle {
            sleeping: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            producer_parked: AtomicBool::new(false),
            workers,
            busy_limit: cpus.saturating_sub(1).max(1),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Work was published (after the write that publishes it), by the
    /// running producer or not: wake one sleeper if the work needs one
    /// (see the module doc).
    pub fn notify_one(&self, by_producer: bool) {
        fence(Ordering::SeqCst);
        if self.may_wake(by_producer) {
            let _g = self.lock.lock();
            self.cv.notify_one();
        }
    }

    /// Whether [`Idle::notify_one`] might wake a sleeper now, looked at
    /// without its fence: for an awake worker passing on work it found
    /// queued, which it takes itself if nobody else does. A sleeper this
    /// misses re-checks for work after announcing its sleep (see
    /// [`Idle::sleep`]). Per flood task, `notify_one` was ~14
    /// instructions and a full barrier (callgrind, stop 25).
    pub fn may_wake(&self, by_producer: bool) -> bool {
        let sleeping = self.sleeping.load(Ordering::Relaxed);
        sleeping != 0
            && self.spinning.load(Ordering::Relaxed) == 0
            && (!by_producer || self.workers.saturating_sub(sleeping) < self.room())
    }

    /// Awake workers the CPUs hold now: every worker while the producer
    /// is parked, else `busy_limit`.
    fn room(&self) -> usize {
        match self.producer_parked.load(Ordering::Relaxed) {
            true => usize::MAX,
            false => self.busy_limit,
        }
    }

    /// The producer parks (`true`) or runs again (`false`). Parking frees
    /// its CPU: call [`Idle::notify_one`] afterwards when work is queued.
    pub fn producer_parked(&self, parked: bool) {
        self.producer_parked.store(parked, Ordering::SeqCst);
    }

    /// Something every worker must see happened (a stop): wake them all.
    pub fn notify_all(&self) {
        let _g = self.lock.lock();
        self.cv.notify_all();
    }

    /// Look for work for up to `limit` (at least [`LOOKS_PER_CLOCK`]
    /// times), counted as spinning (publishers leave their work to this
    /// thread rather than wake a sleeper); true when `has_work()` found
    /// some. A false return must be followed by [`Idle::sleep`], whose
    /// re-check covers work published while this thread was counted as
    /// spinning.
    ///
    /// A worker that is one too many for the CPUs left beside the running
    /// producer looks once and does not spin: spinning would take a CPU
    /// from the producer or from a kernel, and the sleep that follows
    /// brings the awake workers back to what the CPUs hold. (Measured,
    /// stop 22: once a worker outran the orchestrator, both workers found
    /// work within every spin, stayed awake and, three threads on two
    /// CPUs, slowed the orchestrator.)
    ///
    /// Out of line: what a worker spends looking for work stays apart
    /// from what it spends per dispatch in an instruction count
    /// (callgrind, whose thread scheduling makes the spinning vary from
    /// run to run).
    #[inline(never)]
    pub fn spin(&self, limit: Duration, has_work: impl Fn() -> bool) -> bool {
        let awake = self
            .workers
            .saturating_sub(self.sleeping.load(Ordering::Relaxed));
        if awake > self.room() {
            return has_work();
        }
        self.spinning.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        let found = loop {
            let found = (0..LOOKS_PER_CLOCK).any(|_| {
                let found = has_work();
                for _ in 0..PAUSES_PER_LOOK {
                    std::hint::spin_loop();
                }
                found
            });
            if found || start.elapsed() >= limit {
                break found;
            }
        };
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        found
    }

    /// Block until woken, unless `has_work()` — asked after announcing the
    /// sleep — finds work; returns false when `deadline` passed first.
    /// Wake-ups may be spurious: callers loop.
    pub fn sleep(&self, has_work: impl FnOnce() -> bool, deadline: Option<Instant>) -> bool {
        let mut g = self.lock.lock();
        self.sleeping.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut in_time = true;
        if !has_work() {
            match deadline {
                Some(d) => in_time = !self.cv.wait_until(&mut g, d).timed_out(),
                None => self.cv.wait(&mut g),
            }
        }
        self.sleeping.fetch_sub(1, Ordering::Relaxed);
        in_time
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::atomic::{AtomicBool, AtomicUsize, Ordering},
        thread,
        time::{Duration, Instant},
    };

    use crossbeam::queue::SegQueue;

    use super::Idle;

    /// What happened to work queued behind a busy worker.
    struct Held {
        /// Items taken 100 ms after the work was published (1: only the
        /// busy worker's own).
        taken_at_once: Option<usize>,
        /// The other worker took it while the first was still busy.
        reached_sleeper: bool,
    }

    /// Two workers on a 2-CPU machine, both asleep. Item 0 wakes one,
    /// which holds it until item 1 ran elsewhere (or 5 s). Item 1 is then
    /// published by `publish` while the other worker sleeps; after 100 ms
    /// `then` runs (a park, or nothing) and the test waits for item 1.
    fn queued_behind_a_busy_worker(publish: impl Fn(&Idle), then: impl Fn(&Idle)) -> Held {
        let idle = Idle::new(2, 2);
        let queue = SegQueue::new();
        let stop = AtomicBool::new(false);
        let (taken, gate_open) = (AtomicUsize::new(0), AtomicBool::new(false));
        let gave_up = AtomicBool::new(false);
        let worker = || loop {
            if let Some(item) = queue.pop() {
                taken.fetch_add(1, Ordering::SeqCst);
                if item == 0 {
                    let t0 = Instant::now();
                    while !gate_open.load(Ordering::SeqCst) {
                        if t0.elapsed() > Duration::from_secs(5) {
                            gave_up.store(true, Ordering::SeqCst);
                            break;
                        }
                        thread::sleep(Duration::from_millis(1));
                    }
                } else {
                    gate_open.store(true, Ordering::SeqCst);
                }
                continue;
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let has_work = || !queue.is_empty() || stop.load(Ordering::SeqCst);
            if !idle.spin(Duration::from_micros(5), has_work) {
                idle.sleep(has_work, None);
            }
        };
        // Waits for `cond`; false after 20 s.
        let wait = |cond: &dyn Fn() -> bool| {
            let t0 = Instant::now();
            while !cond() {
                if t0.elapsed() > Duration::from_secs(20) {
                    return false;
                }
                thread::sleep(Duration::from_millis(1));
            }
            true
        };
        let mut held = Held {
            taken_at_once: None,
            reached_sleeper: false,
        };
        thread::scope(|s| {
            s.spawn(worker);
            s.spawn(worker);
            let ready = wait(&|| idle.sleeping.load(Ordering::SeqCst) == 2) && {
                queue.push(0);
                idle.notify_one(true);
                wait(&|| taken.load(Ordering::SeqCst) == 1)
                    && wait(&|| idle.sleeping.load(Ordering::SeqCst) == 1)
            };
            if ready {
                queue.push(1);
                publish(&idle);
                thread::sleep(Duration::from_millis(100));
                held.taken_at_once = Some(taken.load(Ordering::SeqCst));
                then(&idle);
                held.reached_sleeper =
                    wait(&|| gate_open.load(Ordering::SeqCst)) && !gave_up.load(Ordering::SeqCst);
            }
            // Stopped whatever happened, so that a failure ends the test.
            gate_open.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
            idle.notify_all();
        });
        held
    }

    /// While the producer runs, its work queued behind one busy worker
    /// wakes nobody; once it parks, that work reaches the sleeper.
    #[test]
    fn a_running_producer_wakes_no_second_worker_and_a_parked_one_does() {
        let held = queued_behind_a_busy_worker(
            |idle| idle.notify_one(true),
            |idle| {
                idle.producer_parked(true);
                idle.notify_one(true);
            },
        );
        let early = "a running producer woke a second worker";
        assert_eq!(held.taken_at_once, Some(1), "{early}");
        let late = "a parked producer's work never reached the sleeper";
        assert!(held.reached_sleeper, "{late}");
    }

    /// Work a worker published (a released dependent) wakes the sleeper
    /// although the producer runs.
    #[test]
    fn a_workers_work_wakes_a_sleeper_while_the_producer_runs() {
        let held = queued_behind_a_busy_worker(|idle| idle.notify_one(false), |_| {});
        assert!(
            held.reached_sleeper,
            "a released dependent waited for the busy worker"
        );
    }

    /// A worker beyond the CPUs left beside a running producer looks once
    /// and does not spin; alone, or once the producer parks, it spins.
    #[test]
    fn a_worker_too_many_for_the_cpus_does_not_spin() {
        let idle = Idle::new(2, 2);
        let looks = |idle: &Idle| {
            let n = AtomicUsize::new(0);
            idle.spin(Duration::ZERO, || {
                n.fetch_add(1, Ordering::Relaxed);
                false
            });
            n.into_inner()
        };
        assert_eq!(looks(&idle), 1, "both workers awake: no spin");
        idle.sleeping.store(1, Ordering::SeqCst); // the other one sleeps
        assert_eq!(looks(&idle), super::LOOKS_PER_CLOCK);
        idle.sleeping.store(0, Ordering::SeqCst);
        idle.producer_parked(true);
        assert_eq!(
            looks(&idle),
            super::LOOKS_PER_CLOCK,
            "the producer's CPU is free"
        );
    }

    /// The fence-free look an awake worker takes before passing work on
    /// answers as the module doc's wake-up rule does, in every state.
    #[test]
    fn may_wake_follows_the_wake_up_rule() {
        for (workers, cpus) in [(2, 2), (2, 8), (3, 2)] {
            let idle = Idle::new(workers, cpus);
            for sleeping in 0..=workers {
                for spinning in 0..=1 {
                    for parked in [false, true] {
                        idle.sleeping.store(sleeping, Ordering::SeqCst);
                        idle.spinning.store(spinning, Ordering::SeqCst);
                        idle.producer_parked(parked);
                        let cpus_beside = if parked {
                            usize::MAX
                        } else {
                            (cpus - 1).max(1)
                        };
                        for by_producer in [false, true] {
                            let awake = workers - sleeping;
                            let want = sleeping > 0
                                && spinning == 0
                                && (!by_producer || awake < cpus_beside);
                            let state = format!(
                                "{workers} workers, {cpus} cpus, {sleeping} asleep, \
                                 {spinning} spinning, parked {parked}, by producer {by_producer}"
                            );
                            assert_eq!(idle.may_wake(by_producer), want, "{state}");
                        }
                    }
                }
            }
        }
    }

    /// With more CPUs than workers, every sleeper is woken for work.
    #[test]
    fn with_cpus_to_spare_a_running_producer_wakes_a_sleeper() {
        let idle = Idle::new(2, 8);
        let (queue, done) = (SegQueue::new(), AtomicUsize::new(0));
        thread::scope(|s| {
            s.spawn(|| {
                while done.load(Ordering::SeqCst) == 0 {
                    match queue.pop() {
                        Some(()) => done.store(1, Ordering::SeqCst),
                        None => {
                            let deadline = Instant::now() + Duration::from_secs(20);
                            if !idle.sleep(|| !queue.is_empty(), Some(deadline)) {
                                done.store(2, Ordering::SeqCst); // never woken
                            }
                        }
                    }
                }
            });
            let t0 = Instant::now();
            while idle.sleeping.load(Ordering::SeqCst) == 0 {
                assert!(t0.elapsed() < Duration::from_secs(20));
                thread::sleep(Duration::from_millis(1));
            }
            // One worker asleep, the other (never started) counts as awake.
            queue.push(());
            idle.notify_one(true);
        });
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
